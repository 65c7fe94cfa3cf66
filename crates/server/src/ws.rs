//! WebSocket endpoints: `/ws/table/{id}` (play or watch one table) and `/ws/lobby` (the
//! live list of public tables). A socket only parses and forwards; the table task decides.
//!
//! The upgrade checks the `Origin` header, and the socket refuses messages over
//! [`protocol::MAX_WS_MESSAGE`] bytes (closing with 1009). A table socket takes at most
//! `--ws-messages-per-second` messages a second (bursts of twice that): beyond, each
//! message is answered `rate_limited` and dropped, so one flooding client cannot hold up
//! its table's task for everybody else.
//!
//! What a socket is sent waits in a bounded queue (`table::CONN_QUEUE` messages); each
//! write to the network must finish within [`WRITE_TIMEOUT`]. A client that stops reading
//! is therefore closed within seconds (1013 when its queue overflowed; the connection is
//! simply dropped when a write times out, as no close frame could reach it), and
//! everything it held is freed.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use protocol::{ClientMsg, LobbyMsg, MAX_WS_MESSAGE, ServerMsg};
use tokio::sync::mpsc;

use crate::auth;
use crate::error::ApiError;
use crate::http::player_from;
use crate::state::AppState;
use crate::table::{Cmd, TableHandle, Updates, Who};

/// How long one write to a client's socket may take before the client counts as gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Messages written to the network before one flush: a burst of patches goes out in one
/// system call, and the batch stays small enough not to grow the write buffer much.
const FLUSH_EVERY: usize = 16;

fn limits(ws: WebSocketUpgrade) -> WebSocketUpgrade {
    ws.max_message_size(MAX_WS_MESSAGE)
        .max_frame_size(MAX_WS_MESSAGE)
        // Small buffers keep idle sockets cheap (tungstenite's defaults are 128 KiB): client
        // messages are small, and the read buffer grows for the rare larger one.
        .read_buffer_size(1024)
        // Frames are collected up to this size before a write; we flush each batch anyway.
        .write_buffer_size(4 * 1024)
}

/// `?since=V&updates=full|patch` (and a private table's `invite`) on a table socket.
#[derive(serde::Deserialize)]
pub struct TableQuery {
    pub invite: Option<String>,
    /// The version of the state document the client holds: if the table still has it, the
    /// socket starts with one patch from it instead of a full state.
    pub since: Option<u64>,
    #[serde(default)]
    pub updates: Updates,
}

pub async fn table_socket(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TableQuery>,
    crate::limits::ClientAddr(client): crate::limits::ClientAddr,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if let Err(e) = auth::origin_allowed(&headers, &app.config.allowed_origins) {
        app.metrics.rejected(e.code());
        return Err(e);
    }
    let who = player_from(&headers, &app).await?;
    let handle = crate::http::reach_table(&app, &id, q.invite.as_deref(), who.as_ref()).await?;
    let slot = crate::limits::socket_slot(&app, client)?;
    let start = (q.since, q.updates);
    Ok(limits(ws).on_upgrade(move |socket| async move {
        // The address's place is held as long as the socket runs.
        let _slot = slot;
        run_table_socket(socket, app, handle, who, start).await
    }))
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
struct Local(mpsc::WeakSender<Utf8Bytes>);

impl Local {
    fn send(&self, text: String) {
        if let Some(tx) = self.0.upgrade() {
            let _ = tx.try_send(text.into());
        }
    }
}

fn error_text(code: &str, message: String) -> String {
    let msg = ServerMsg::Error {
        code: code.into(),
        message,
        version: 0,
        retry_after_ms: None,
    };
    serde_json::to_string(&msg).expect("serializes")
}

/// Writes one message and then whatever else is already queued (up to [`FLUSH_EVERY`]),
/// and flushes, all within [`WRITE_TIMEOUT`]. `false`: the client is gone or stopped reading.
async fn write_batch(
    sink: &mut SplitSink<WebSocket, Message>,
    first: Utf8Bytes,
    queue: &mut mpsc::Receiver<Utf8Bytes>,
) -> bool {
    let write = async {
        sink.feed(Message::Text(first)).await?;
        for _ in 1..FLUSH_EVERY {
            match queue.try_recv() {
                Ok(text) => sink.feed(Message::Text(text)).await?,
                Err(_) => break,
            }
        }
        sink.flush().await
    };
    matches!(tokio::time::timeout(WRITE_TIMEOUT, write).await, Ok(Ok(())))
}

/// Sends a close frame, if the client takes it in time.
async fn close_with(sink: &mut SplitSink<WebSocket, Message>, code: u16, reason: &'static str) {
    let frame = Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }));
    let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.send(frame)).await;
}

async fn run_table_socket(
    socket: WebSocket,
    app: AppState,
    table: TableHandle,
    who: Option<Who>,
    (since, updates): (Option<u64>, Updates),
) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let (mut sink, mut stream) = socket.split();
    let (out_tx, mut out_rx) = mpsc::channel::<Utf8Bytes>(crate::table::CONN_QUEUE);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let connected = table
        .send(Cmd::Connect {
            who,
            out: out_tx.clone(),
            since,
            updates,
            reply: tx,
        })
        .await;
    let conn = match (connected, rx.await) {
        (Ok(()), Ok(conn)) => conn,
        _ => {
            let text = error_text("table_closed", "this table has closed".into());
            let _ =
                tokio::time::timeout(WRITE_TIMEOUT, sink.send(Message::Text(text.into()))).await;
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
    loop {
        tokio::select! {
            out = out_rx.recv() => match out {
                Some(text) => {
                    if !write_batch(&mut sink, text, &mut out_rx).await {
                        app.metrics.closed("write_timeout");
                        break;
                    }
                }
                // The table dropped us (too slow, or it ended).
                None => {
                    close_with(&mut sink, close_code::AGAIN, "reconnect to resync").await;
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
                            let received = std::time::Instant::now();
                            if table.send(Cmd::Act { conn, version, action, received }).await.is_err() { break; }
                        }
                        Ok(ClientMsg::Sync {}) => {
                            if table.send(Cmd::Sync { conn }).await.is_err() { break; }
                        }
                        Ok(ClientMsg::Presence { away }) => {
                            if table.send(Cmd::Presence { conn, away }).await.is_err() { break; }
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
                    if let Some((code, reason)) = read_error(&app, &e) {
                        close_with(&mut sink, code, reason).await;
                    }
                    break;
                }
            },
            _ = shutdown.changed() => {
                close_with(&mut sink, close_code::AWAY, "server restarting").await;
                break;
            }
        }
    }
    let _ = table.send(Cmd::Disconnect { conn }).await;
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}

/// What a read error means: oversized and broken frames end here (tungstenite refuses them
/// before we see them) and get a close code; a client that simply went away (reset, no
/// close handshake) is not a refusal and has no socket left to tell.
fn read_error(app: &AppState, e: &axum::Error) -> Option<(u16, &'static str)> {
    let text = e.to_string();
    tracing::debug!(error = %text, "socket read error");
    if text.contains("Space limit exceeded") {
        app.metrics.rejected("frame_too_large");
        app.metrics.closed("frame_too_large");
        Some((close_code::SIZE, "message too big"))
    } else if !text.contains("without closing handshake") && !text.starts_with("IO error") {
        app.metrics.rejected("frame_broken");
        app.metrics.closed("frame_broken");
        Some((close_code::PROTOCOL, "broken frame"))
    } else {
        None
    }
}

pub async fn lobby_socket(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    crate::limits::ClientAddr(client): crate::limits::ClientAddr,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    auth::origin_allowed(&headers, &app.config.allowed_origins)?;
    let slot = crate::limits::socket_slot(&app, client)?;
    Ok(limits(ws).on_upgrade(move |socket| async move {
        let _slot = slot;
        run_lobby_socket(socket, app).await
    }))
}

/// How long lobby changes are collected before they are sent together.
const LOBBY_COALESCE: Duration = Duration::from_millis(50);

fn lobby_text(msg: &LobbyMsg) -> Utf8Bytes {
    serde_json::to_string(msg).expect("serializes").into()
}

/// The lobby: the whole list on connect, then only what changed (coalesced over
/// [`LOBBY_COALESCE`]); the whole list again if this socket fell behind the changes.
async fn run_lobby_socket(socket: WebSocket, app: AppState) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let (mut sink, mut stream) = socket.split();
    let mut changes = app.lobby_changes.subscribe();
    let mut shutdown = app.shutdown.subscribe();
    let mut changed: std::collections::BTreeSet<uuid::Uuid> = Default::default();
    let mut resend_all = true;
    let mut window: Option<tokio::time::Instant> = None;
    loop {
        if resend_all {
            resend_all = false;
            changed.clear();
            window = None;
            let msg = LobbyMsg::Tables {
                tables: app.lobby_tables(),
            };
            let send = sink.send(Message::Text(lobby_text(&msg)));
            if !matches!(tokio::time::timeout(WRITE_TIMEOUT, send).await, Ok(Ok(()))) {
                app.metrics.closed("write_timeout");
                break;
            }
        }
        tokio::select! {
            c = changes.recv() => match c {
                Ok(id) => {
                    changed.insert(id);
                    window.get_or_insert_with(|| tokio::time::Instant::now() + LOBBY_COALESCE);
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => resend_all = true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            },
            _ = async { tokio::time::sleep_until(window.expect("guarded")).await }, if window.is_some() => {
                window = None;
                let (mut tables, mut removed) = (Vec::new(), Vec::new());
                for id in std::mem::take(&mut changed) {
                    match app.lobby_table(id) {
                        Some(t) => tables.push(t),
                        None => removed.push(id),
                    }
                }
                let msg = LobbyMsg::Changes { tables, removed };
                let send = sink.send(Message::Text(lobby_text(&msg)));
                if !matches!(tokio::time::timeout(WRITE_TIMEOUT, send).await, Ok(Ok(()))) {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            _ = shutdown.changed() => {
                close_with(&mut sink, close_code::AWAY, "server restarting").await;
                break;
            }
            // Whatever the client sends is ignored without sending anything back (no
            // reply a client could multiply by flooding); oversized frames close as on
            // the table socket.
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Close(_))) | None => break,
                Some(Err(e)) => {
                    if let Some((code, reason)) = read_error(&app, &e) {
                        close_with(&mut sink, code, reason).await;
                    }
                    break;
                }
                Some(Ok(_)) => {}
            },
        }
    }
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}
