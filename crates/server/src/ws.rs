//! WebSocket endpoints: `/ws/table/{id}` (play or watch one table) and `/ws/lobby` (the
//! live list of public tables). A socket only parses and forwards; the table task decides.
//!
//! The upgrade checks the `Origin` header, and the socket refuses messages over
//! [`protocol::MAX_WS_MESSAGE`] bytes (closing with 1009). A table socket takes at most
//! `--ws-messages-per-second` messages a second (bursts of twice that): beyond, each
//! message is answered `rate_limited` and dropped, so one flooding client cannot hold up
//! its table's task for everybody else.

use std::sync::atomic::Ordering::Relaxed;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::{SinkExt, StreamExt};
use protocol::{ClientMsg, LobbyMsg, MAX_WS_MESSAGE, ServerMsg};
use tokio::sync::mpsc;

use crate::auth;
use crate::error::ApiError;
use crate::http::{InviteQuery, player_from};
use crate::state::AppState;
use crate::table::{Cmd, TableHandle, Who};

fn limits(ws: WebSocketUpgrade) -> WebSocketUpgrade {
    ws.max_message_size(MAX_WS_MESSAGE)
        .max_frame_size(MAX_WS_MESSAGE)
        // A small read buffer keeps idle sockets cheap (tungstenite's default is 128 KiB).
        .read_buffer_size(4 * 1024)
}

pub async fn table_socket(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Err(e) = auth::origin_allowed(&headers, &app.config.allowed_origins) {
        app.metrics.rejected(e.code());
        return Err(e);
    }
    let who = player_from(&headers, &app).await?;
    let handle = crate::http::reach_table(&app, &id, q.invite.as_deref(), who.as_ref()).await?;
    Ok(limits(ws).on_upgrade(move |socket| run_table_socket(socket, app, handle, who)))
}

/// A token bucket: `rate` messages a second, bursts of `2 × rate`.
struct RateLimit {
    rate: f64,
    tokens: f64,
    last: std::time::Instant,
}

impl RateLimit {
    fn new(rate: u32) -> Self {
        let rate = f64::from(rate);
        RateLimit {
            rate,
            tokens: 2.0 * rate,
            last: std::time::Instant::now(),
        }
    }

    /// Takes a token if there is one.
    fn take(&mut self) -> bool {
        let now = std::time::Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(2.0 * self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The socket's own replies (errors it finds itself, `pong`), through the connection's
/// queue while the table still holds the connection.
struct Local(mpsc::WeakSender<String>);

impl Local {
    fn send(&self, text: String) {
        if let Some(tx) = self.0.upgrade() {
            let _ = tx.try_send(text);
        }
    }
}

fn error_text(code: &str, message: String) -> String {
    let msg = ServerMsg::Error {
        code: code.into(),
        message,
        version: 0,
    };
    serde_json::to_string(&msg).expect("serializes")
}

async fn run_table_socket(socket: WebSocket, app: AppState, table: TableHandle, who: Option<Who>) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let (mut sink, mut stream) = socket.split();
    let (out_tx, mut out_rx) = mpsc::channel::<String>(crate::table::CONN_QUEUE);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let connected = table
        .send(Cmd::Connect {
            who,
            out: out_tx.clone(),
            reply: tx,
        })
        .await;
    let conn = match (connected, rx.await) {
        (Ok(()), Ok(conn)) => conn,
        _ => {
            let _ = sink
                .send(Message::Text(
                    error_text("table_closed", "this table has closed".into()).into(),
                ))
                .await;
            app.metrics.ws_connections.fetch_sub(1, Relaxed);
            return;
        }
    };
    // Errors this socket produces itself (bad JSON) go out through the same queue.
    // Held weakly: when the table drops this connection (it fell behind), the queue must
    // close so that the socket is told to resync (1013); a strong sender here would keep
    // it open forever, with nothing more coming.
    let local = Local(out_tx.downgrade());
    drop(out_tx);
    let mut shutdown = app.shutdown.subscribe();
    let mut limit = RateLimit::new(app.config.ws_messages_per_second);
    let close = |code, reason: &'static str| {
        Message::Close(Some(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        }))
    };
    loop {
        tokio::select! {
            out = out_rx.recv() => match out {
                Some(text) => {
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                // The table dropped us (too slow, or it ended).
                None => {
                    let _ = sink.send(close(close_code::AGAIN, "reconnect to resync")).await;
                    break;
                }
            },
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Text(_) | Message::Binary(_))) if !limit.take() => {
                    app.metrics.rejected("rate_limited");
                    local.send(error_text(
                        "rate_limited",
                        format!(
                            "too many messages: at most {} a second on one connection; this one was dropped",
                            app.config.ws_messages_per_second
                        ),
                    ));
                }
                Some(Ok(Message::Text(text))) => {
                    match serde_json::from_str::<ClientMsg>(&text) {
                        Ok(ClientMsg::Act { version, action }) => {
                            if table.send(Cmd::Act { conn, version, action }).await.is_err() { break; }
                        }
                        Ok(ClientMsg::Sync {}) => {
                            if table.send(Cmd::Sync { conn }).await.is_err() { break; }
                        }
                        Ok(ClientMsg::Ping {}) => {
                            local.send(serde_json::to_string(&ServerMsg::Pong).expect("serializes"));
                        }
                        Err(e) => {
                            app.metrics.rejected("malformed");
                            local.send(error_text("malformed", format!("not a valid message: {e}")));
                        }
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    app.metrics.rejected("binary_not_supported");
                    local.send(error_text("binary_not_supported", "send JSON text messages".into()));
                }
                Some(Ok(Message::Close(_))) | None => break,
                Some(Ok(_)) => {} // ping/pong frames are answered by the library
                Some(Err(e)) => {
                    // Oversized and broken frames end here: tungstenite refuses them before
                    // we see them. A client that simply went away (reset, no close
                    // handshake) is not a refusal and has no socket left to tell.
                    let text = e.to_string();
                    tracing::debug!(error = %text, "socket read error");
                    if text.contains("Space limit exceeded") {
                        app.metrics.rejected("frame_too_large");
                        let _ = sink.send(close(close_code::SIZE, "message too big")).await;
                    } else if !text.contains("without closing handshake") && !text.starts_with("IO error") {
                        app.metrics.rejected("frame_broken");
                        let _ = sink.send(close(close_code::PROTOCOL, "broken frame")).await;
                    }
                    break;
                }
            },
            _ = shutdown.changed() => {
                let _ = sink.send(close(close_code::AWAY, "server restarting")).await;
                break;
            }
        }
    }
    let _ = table.send(Cmd::Disconnect { conn }).await;
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}

pub async fn lobby_socket(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    auth::origin_allowed(&headers, &app.config.allowed_origins)?;
    Ok(limits(ws).on_upgrade(move |socket| run_lobby_socket(socket, app)))
}

async fn run_lobby_socket(mut socket: WebSocket, app: AppState) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let mut tick = app.lobby_tick.subscribe();
    let mut shutdown = app.shutdown.subscribe();
    'send: loop {
        let msg = LobbyMsg::Tables {
            tables: app.lobby_tables(),
        };
        let text = serde_json::to_string(&msg).expect("serializes");
        if socket.send(Message::Text(text.into())).await.is_err() {
            break;
        }
        // Wait for a change of the list; whatever the client sends is ignored without
        // sending anything back (no reply a client could multiply by flooding).
        loop {
            tokio::select! {
                changed = tick.changed() => if changed.is_err() { break 'send } else { break },
                _ = shutdown.changed() => {
                    let frame = CloseFrame { code: close_code::AWAY, reason: Utf8Bytes::from_static("server restarting") };
                    let _ = socket.send(Message::Close(Some(frame))).await;
                    break 'send;
                }
                incoming = socket.recv() => match incoming {
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break 'send,
                    Some(Ok(_)) => continue,
                },
            }
        }
        // Coalesce bursts of lobby changes into one message.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        tick.borrow_and_update();
    }
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}
