//! The table socket, `/ws/table/{id}`: play or watch one table.

use std::sync::atomic::Ordering::Relaxed;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use protocol::{ChatBody, ClientMsg, ServerMsg};
use tokio_util::task::task_tracker::TaskTrackerToken;

use crate::auth;
use crate::error::ApiError;
use crate::state::AppState;
use crate::wire;
use realtime::outbox;
use realtime::table::chat::{ChatCmd, ChatError};
use realtime::table::{Cmd, TableHandle, Updates, Who};

use super::*;

/// `?since=V&updates=patch|json_patch|full` (and a private table's `invite`) on a table socket.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TableQuery {
    /// A private table's invite code (not needed by a player seated there).
    pub invite: Option<String>,
    /// The version of the state document the client holds: if the table still has it, the
    /// socket starts with one patch from it instead of a full state.
    pub since: Option<u64>,
    /// `patch` (default): compact patches after the first state; `json_patch`: patches as
    /// RFC 6902 writes them; `full`: a whole state each time.
    #[serde(default)]
    #[param(inline)]
    pub updates: UpdatesParam,
}

/// What a connection is sent after each change.
// The `updates` query parameter with its schema for the OpenAPI document; the core's
// `Updates` is the same choice without one.
#[derive(Clone, Copy, Debug, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpdatesParam {
    /// A `patch` against the document it holds (the default).
    #[default]
    Patch,
    /// A whole `state` every time, for simple clients.
    Full,
    /// A `patch` as RFC 6902 writes it (`{"op":…,"path":…,"value":…}`), with `from` and
    /// `events` always written: for clients with a JSON Patch library and nothing more.
    JsonPatch,
}

impl From<UpdatesParam> for Updates {
    fn from(u: UpdatesParam) -> Updates {
        match u {
            UpdatesParam::Patch => Updates::Patch,
            UpdatesParam::Full => Updates::Full,
            UpdatesParam::JsonPatch => Updates::JsonPatch,
        }
    }
}

#[utoipa::path(
    get,
    path = "/ws/table/{id}",
    tag = "sockets",
    summary = "WebSocket upgrade: play or watch a table",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), TableQuery),
    responses(
        (status = 101, description = "switching protocols; then `ClientMsg` and `ServerMsg` frames (docs/protocol.md, docs/protocol.schema.json)"),
        (status = 400, description = "`code`: malformed (not a WebSocket upgrade, or a bad query)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required, forbidden_origin", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 429, description = "`code`: too_many_sockets (WebSockets held open per address) or rate_limited (WebSockets opened per address and minute)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 503, description = "`code`: server_draining (this server is shutting down), table_moving", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn table_socket(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TableQuery>,
    crate::extract::ClientAddr(client): crate::extract::ClientAddr,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    // A socket another node forwards was checked there (`cluster::forward`).
    if !app.cluster.from_node(&headers)
        && let Err(e) = auth::origin_allowed(&headers, &app.config.allowed_origins)
    {
        app.metrics.rejected(e.code());
        return Err(e);
    }
    // Taken before the upgrade is answered, so that a shutdown from here on waits for
    // this socket (`serve`), or refused once one has begun.
    let token = socket_token(&app)?;
    // The address's place first: one over its cap costs no table lookup.
    let slot = crate::extract::socket_slot(&app, client)?;
    let (who, session) = match crate::extract::authed(&headers, &app).await? {
        Some((w, s)) => (Some(w), Some(s)),
        None => (None, None),
    };
    let handle = crate::extract::reach_table(&app, &id, q.invite.as_deref(), who.as_ref()).await?;
    let start = (q.since, q.updates.into(), session);
    // From before the client hears the upgrade until the table has the connection: the
    // table is not handed to another node meanwhile (`cluster::adopt`).
    let opening = handle.opening();
    // The future is handed over as it is, not awaited inside an `async` block: a block
    // would keep it twice (once captured, once being awaited).
    Ok(limits(ws).on_upgrade(move |socket| {
        run_table_socket(socket, app, handle, who, start, (opening, slot, token))
    }))
}

/// A table socket's life, from the table taking the connection to its close.
///
/// Not an `async fn` itself: the socket is split here, before the future is made, so the
/// future holds the two halves and not the `WebSocket` (368 bytes), which an argument of
/// an `async fn` keeps inline for the future's whole life although it is moved out at
/// once. The task is memory held per open socket (`loadgen run --mode idle`).
pub(super) fn run_table_socket(
    socket: WebSocket,
    app: AppState,
    table: TableHandle,
    who: Option<Who>,
    start: (Option<u64>, Updates, Option<String>),
    held: (
        realtime::table::Opening,
        crate::limits::SocketSlot,
        TaskTrackerToken,
    ),
) -> impl Future<Output = ()> + Send {
    let (sink, stream) = socket.split();
    table_socket_loop(sink, stream, app, table, who, start, held)
}

pub(super) async fn table_socket_loop(
    mut sink: SplitSink<WebSocket, Message>,
    mut stream: SplitStream<WebSocket>,
    app: AppState,
    table: TableHandle,
    who: Option<Who>,
    (since, updates, session): (Option<u64>, Updates, Option<String>),
    // The table is not handed over until it has the connection; the address's place,
    // and the shutdown's wait for this socket, are held as long as the socket runs.
    (opening, _slot, _token): (
        realtime::table::Opening,
        crate::limits::SocketSlot,
        TaskTrackerToken,
    ),
) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let mut revoked = app.revoked.subscribe();
    let (out_tx, mut out_rx) = outbox::outbox(realtime::table::CONN_QUEUE);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let me = who.clone();
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
        (Ok(()), Ok(conn)) => {
            drop(opening);
            conn
        }
        _ => {
            let text = error_text("table_closed", "this table has closed".into());
            let _ =
                tokio::time::timeout(WRITE_TIMEOUT, sink.send(Message::Text(text.into()))).await;
            // Its task ended (a hand-over, a table over and unwatched): the next socket
            // finds the table wherever it is served now.
            close_with(&mut sink, close_code::AGAIN, "reconnect to resync").await;
            app.metrics.ws_connections.fetch_sub(1, Relaxed);
            return;
        }
    };
    // Errors this socket produces itself (bad JSON) go out through the same queue.
    // Held weakly: when the table drops this connection (it fell behind), the queue must
    // close so that the socket is told to resync (1013); a strong sender here would keep
    // it open forever, with nothing more coming.
    let local = Local::new(out_tx.downgrade());
    drop(out_tx);
    // Chat starts after the first state: the history this connection may see, without
    // the lines of the players its player muted.
    match mutes_of(&app, me.as_ref()).await {
        Ok(muted) => {
            let _ = table
                .send(Cmd::Chat {
                    conn,
                    cmd: ChatCmd::Hello { muted },
                })
                .await;
        }
        Err(e) => local.send(chat_error_text(&app, &e)),
    }
    let mut shutdown = app.shutdown.subscribe();
    let rate = message_rate(&app, me.as_ref());
    let mut limit = RateLimit::new(rate);
    loop {
        if local.overflowed() {
            app.metrics.closed("fell_behind");
            // Closed first, so that the table, finding it so, does not count it again.
            out_rx.close();
            close_with(&mut sink, close_code::AGAIN, "reconnect to resync").await;
            break;
        }
        tokio::select! {
            out = out_rx.recv() => match out {
                Some(text) => {
                    if !write_batch(&mut sink, frame(text), &mut out_rx).await {
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
                Some(Ok(Message::Text(_) | Message::Binary(_))) if !limit.take(out_rx.refunds()) => {
                    app.metrics.rejected("rate_limited");
                    local.send(error_text(
                        "rate_limited",
                        format!(
                            "too many messages: at most {rate} a second on one connection; this one was dropped",
                        ),
                    ));
                }
                Some(Ok(Message::Text(text))) => {
                    // `false`: the table's task has ended and takes no more commands.
                    let taken = match ClientMsg::decode(&text) {
                        Ok(ClientMsg::Act { version, action }) => {
                            let received = std::time::Instant::now();
                            table.send(Cmd::Act { conn, version, action, received }).await.is_ok()
                        }
                        Ok(ClientMsg::Sync {}) => table.send(Cmd::Sync { conn }).await.is_ok(),
                        Ok(ClientMsg::Presence { away }) => {
                            table.send(Cmd::Presence { conn, away }).await.is_ok()
                        }
                        Ok(ClientMsg::Rematch { accept }) => {
                            table.send(Cmd::Rematch { conn, accept }).await.is_ok()
                        }
                        Ok(ClientMsg::Ping {}) => {
                            local.send(serde_json::to_string(&ServerMsg::Pong).expect("serializes"));
                            true
                        }
                        Ok(ClientMsg::Chat { text }) => {
                            match chat_text(me.as_ref(), &text) {
                                Ok((name, body)) => {
                                    let cmd = ChatCmd::Say { name, body };
                                    table.send(Cmd::Chat { conn, cmd }).await.is_ok()
                                }
                                Err(e) => {
                                    local.send(chat_error_text(&app, &e));
                                    true
                                }
                            }
                        }
                        Ok(ClientMsg::React { emote }) => match &me {
                            Some(w) => {
                                let cmd = ChatCmd::Say { name: w.name.clone(), body: ChatBody::Emote { emote } };
                                table.send(Cmd::Chat { conn, cmd }).await.is_ok()
                            }
                            None => {
                                local.send(chat_error_text(&app, &ChatError::NotSignedIn));
                                true
                            }
                        },
                        Ok(ClientMsg::Mute { player }) => {
                            mute_at_table(&app, &table, conn, me.as_ref(), player, true, &local).await
                        }
                        Ok(ClientMsg::Unmute { player }) => {
                            mute_at_table(&app, &table, conn, me.as_ref(), player, false, &local).await
                        }
                        Err(e) => {
                            app.metrics.rejected("malformed");
                            local.send(error_text("malformed", format!("not a valid message: {e}")));
                            true
                        }
                    };
                    if !taken {
                        // As when the table lets go of the queue: the task ended (the table
                        // handed over at a drain, stepped down, or over), perhaps before
                        // the queue's close reached this loop. Never without a close frame.
                        close_with(&mut sink, close_code::AGAIN, "reconnect to resync").await;
                        break;
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
            _ = crate::state::stopping(&mut shutdown) => {
                close_with(&mut sink, close_code::AWAY, "server restarting").await;
                break;
            }
            _ = signed_out(&app, &mut revoked, me.as_ref().map(|w| w.id).zip(session.as_deref())) => {
                close_with(&mut sink, SIGNED_OUT, "signed out").await;
                break;
            }
        }
    }
    let _ = table.send(Cmd::Disconnect { conn }).await;
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A socket's hold on the shutdown is given while the server runs, and refused with
    /// `server_draining` once its shutdown has begun; a hold given before keeps the
    /// shutdown's wait open until it is let go.
    #[tokio::test]
    async fn no_socket_opens_once_the_shutdown_has_begun() {
        let url = "sqlite::memory:";
        let store = store::connect(url).await.expect("an in-memory database");
        let app = AppState::new(store, crate::config::Config::for_tests(url));
        let held = socket_token(&app).expect("running: a socket may open");
        app.shutdown.send_replace(true);
        let refused = socket_token(&app).expect_err("shutting down: no new socket");
        assert_eq!(refused.code(), "server_draining");
        app.sockets.close();
        assert_eq!(
            app.sockets.len(),
            1,
            "the socket given before is waited for"
        );
        drop(held);
        assert!(app.sockets.is_empty());
        app.sockets.wait().await;
    }

    /// A socket's own reply is queued while there is room, marks the socket as fallen
    /// behind when the queue is full (it then closes with 1013), and is nothing to worry
    /// about once the table has let go of the queue (the socket is closing anyway).
    #[test]
    fn a_local_reply_that_finds_the_queue_full_marks_the_socket_behind() {
        let (tx, mut rx) = outbox::outbox(1);
        let local = Local::new(tx.downgrade());
        local.send("a".into());
        assert!(!local.overflowed(), "room for one");
        local.send("b".into());
        assert!(local.overflowed(), "the second found the queue full");
        assert_eq!(
            rx.try_recv().as_ref().map(realtime::Text::as_str),
            Some("a")
        );

        let (tx, _rx) = outbox::outbox(1);
        let local = Local::new(tx.downgrade());
        drop(tx);
        local.send("a".into());
        local.send("b".into());
        assert!(!local.overflowed(), "no queue left to overflow");
    }
}
