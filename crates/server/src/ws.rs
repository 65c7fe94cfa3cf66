//! WebSocket endpoints: `/ws/table/{id}` (play or watch one table) and `/ws/lobby` (the
//! live list of public tables). A socket only parses and forwards; the table task decides.
//!
//! The upgrade checks the `Origin` header, and the socket refuses messages over
//! [`protocol::MAX_WS_MESSAGE`] bytes (closing with 1009). A table socket takes at most
//! `--ws-messages-per-second` messages a second (bursts of twice that): beyond, each
//! message is answered `rate_limited` and dropped, so one flooding client cannot hold up
//! its table's task for everybody else. A move the game waited for is not a flood,
//! however fast the table plays (bots answering at once): once the table accepts it, it
//! gives its message back (`outbox::Sender::refund`). What stays counted is what a flood
//! is made of: pings, syncs, presence and chat, refused and repeated moves, and moves out
//! of turn.
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
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use protocol::{
    ChatBody, ClientMsg, LobbyClientMsg, LobbyMsg, MAX_WS_MESSAGE, ServerMsg, check_chat_text,
};
use tokio_util::task::task_tracker::TaskTrackerToken;
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::outbox;
use crate::state::AppState;
use crate::table::chat::{ChatCmd, ChatError};
use crate::table::{Cmd, TableHandle, Updates, Who};
use crate::wire;

/// How long one write to a client's socket may take before the client counts as gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Messages written to the network before one flush: a burst of patches goes out in one
/// system call, and the batch stays small enough not to grow the write buffer much.
const FLUSH_EVERY: usize = 16;

pub(crate) fn limits(ws: WebSocketUpgrade) -> WebSocketUpgrade {
    ws.max_message_size(MAX_WS_MESSAGE)
        .max_frame_size(MAX_WS_MESSAGE)
        // Small buffers keep idle sockets cheap (tungstenite's defaults are 128 KiB): client
        // messages are small (a move is about 100 bytes), and the read buffer grows for the
        // rare larger one. 256 rather than 1024 bytes took an idle socket from 8.7 to 7.9
        // KiB on the server (`loadgen run --mode idle`).
        .read_buffer_size(256)
        // Frames are collected up to this size before a write; we flush each batch anyway.
        .write_buffer_size(4 * 1024)
}

/// `?since=V&updates=full|patch` (and a private table's `invite`) on a table socket.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TableQuery {
    /// A private table's invite code (not needed by a player seated there).
    pub invite: Option<String>,
    /// The version of the state document the client holds: if the table still has it, the
    /// socket starts with one patch from it instead of a full state.
    pub since: Option<u64>,
    /// `patch` (default): patches after the first state; `full`: a whole state each time.
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
}

impl From<UpdatesParam> for Updates {
    fn from(u: UpdatesParam) -> Updates {
        match u {
            UpdatesParam::Patch => Updates::Patch,
            UpdatesParam::Full => Updates::Full,
        }
    }
}

/// A text of the core as the socket library's text (the core only makes UTF-8).
fn frame(text: realtime::Text) -> Utf8Bytes {
    Utf8Bytes::try_from(text.into_bytes()).unwrap_or_default()
}

#[utoipa::path(
    get,
    path = "/ws/table/{id}",
    tag = "sockets",
    summary = "WebSocket upgrade: play or watch a table",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the table's id (a UUID)"), TableQuery),
    responses(
        (status = 101, description = "switching protocols; then `ClientMsg` and `ServerMsg` frames (docs/protocol.md, docs/protocol.schema.json)"),
        (status = 400, description = "`code`: malformed (not a WebSocket upgrade, or a bad query)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required, forbidden_origin", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 429, description = "`code`: too_many_sockets (WebSockets per address)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
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

    /// Takes a token if there is one, after putting back `refunded` (messages that
    /// carried moves the game waited for).
    fn take(&mut self, refunded: u32) -> bool {
        let now = std::time::Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate + f64::from(refunded);
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

/// The shutdown's hold on a socket about to be opened (`AppState::sockets`); refused
/// (`server_draining`) once the shutdown has begun, as `serve` may have stopped waiting.
pub(crate) fn socket_token(app: &AppState) -> Result<TaskTrackerToken, ApiError> {
    if *app.shutdown.borrow() {
        return Err(ApiError::Unavailable(
            "server_draining",
            "this server is shutting down: connect again in a moment".into(),
        ));
    }
    Ok(app.sockets.token())
}

/// The socket's own replies (errors it finds itself, `pong`), through the connection's
/// queue while the table still holds the connection. A reply that finds the queue full is
/// not dropped silently: the socket then closes with 1013, as when the table finds it
/// full, so a client never goes on without an answer it was owed.
struct Local {
    out: outbox::WeakSender,
    overflowed: std::sync::atomic::AtomicBool,
}

impl Local {
    fn new(out: outbox::WeakSender) -> Local {
        Local {
            out,
            overflowed: false.into(),
        }
    }

    fn send(&self, text: String) {
        if let Some(tx) = self.out.upgrade()
            && tx.try_send(text.into()) == Err(outbox::Refused::Full)
        {
            self.overflowed.store(true, Relaxed);
        }
    }

    /// A reply was lost to a full queue: the client fell behind.
    fn overflowed(&self) -> bool {
        self.overflowed.load(Relaxed)
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
    queue: &mut outbox::Receiver,
) -> bool {
    let write = async {
        sink.feed(Message::Text(first)).await?;
        for _ in 1..FLUSH_EVERY {
            match queue.try_recv() {
                Some(text) => sink.feed(Message::Text(frame(text))).await?,
                None => break,
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

/// A table socket's life, from the table taking the connection to its close.
///
/// Not an `async fn` itself: the socket is split here, before the future is made, so the
/// future holds the two halves and not the `WebSocket` (368 bytes), which an argument of
/// an `async fn` keeps inline for the future's whole life although it is moved out at
/// once. The task is memory held per open socket (`loadgen run --mode idle`).
fn run_table_socket(
    socket: WebSocket,
    app: AppState,
    table: TableHandle,
    who: Option<Who>,
    start: (Option<u64>, Updates, Option<String>),
    held: (
        crate::table::Opening,
        crate::limits::SocketSlot,
        TaskTrackerToken,
    ),
) -> impl Future<Output = ()> + Send {
    let (sink, stream) = socket.split();
    table_socket_loop(sink, stream, app, table, who, start, held)
}

async fn table_socket_loop(
    mut sink: SplitSink<WebSocket, Message>,
    mut stream: SplitStream<WebSocket>,
    app: AppState,
    table: TableHandle,
    who: Option<Who>,
    (since, updates, session): (Option<u64>, Updates, Option<String>),
    // The table is not handed over until it has the connection; the address's place,
    // and the shutdown's wait for this socket, are held as long as the socket runs.
    (opening, _slot, _token): (
        crate::table::Opening,
        crate::limits::SocketSlot,
        TaskTrackerToken,
    ),
) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let mut revoked = app.revoked.subscribe();
    let (out_tx, mut out_rx) = outbox::outbox(crate::table::CONN_QUEUE);
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
    let mut limit = RateLimit::new(app.config.ws_messages_per_second);
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
                            "too many messages: at most {} a second on one connection; this one was dropped",
                            app.config.ws_messages_per_second
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

/// A refused chat message, as the socket sends it (`version` 0: the table never saw it).
fn chat_error_text(app: &AppState, e: &ChatError) -> String {
    app.metrics.rejected(e.code());
    serde_json::to_string(&e.server_msg(0)).expect("serializes")
}

/// A chat text checked for sending as `who`: the sender's name and the line.
fn chat_text(who: Option<&Who>, text: &str) -> Result<(String, ChatBody), ChatError> {
    let who = who.ok_or(ChatError::NotSignedIn)?;
    let text = check_chat_text(text)?.to_string();
    Ok((who.name.clone(), ChatBody::Text { text }))
}

/// The players `who` muted (none for an anonymous socket).
async fn mutes_of(app: &AppState, who: Option<&Who>) -> Result<Vec<Uuid>, ChatError> {
    let Some(who) = who else {
        return Ok(Vec::new());
    };
    app.store.mutes_of(who.id).await.map_err(|e| {
        tracing::error!(error = %e, "could not read a player's mutes");
        ChatError::Internal
    })
}

/// Stores a mute (`on`) or unmute of `target` by `who`; the whole new list of their mutes.
async fn set_mute(
    app: &AppState,
    who: Option<&Who>,
    target: Uuid,
    on: bool,
) -> Result<Vec<Uuid>, ChatError> {
    let who = who.ok_or(ChatError::NotSignedIn)?;
    if who.id == target {
        return Err(ChatError::MuteSelf);
    }
    match app
        .store
        .set_muted(who.id, target, on, crate::state::now_ms())
        .await
    {
        Ok(()) => {}
        Err(store::StoreError::NotFound(_)) => return Err(ChatError::UnknownPlayer(target)),
        Err(e) => {
            tracing::error!(error = %e, "could not store a mute");
            return Err(ChatError::Internal);
        }
    }
    let mut players = mutes_of(app, Some(who)).await?;
    players.sort_unstable();
    Ok(players)
}

/// A mute or unmute on a table socket: stored, then the table is told (it filters the
/// lines it sends, and answers `muted`). `false`: the table is gone.
async fn mute_at_table(
    app: &AppState,
    table: &TableHandle,
    conn: u64,
    who: Option<&Who>,
    target: Uuid,
    on: bool,
    local: &Local,
) -> bool {
    match set_mute(app, who, target, on).await {
        Ok(players) => {
            let cmd = ChatCmd::Muted { players };
            table.send(Cmd::Chat { conn, cmd }).await.is_ok()
        }
        Err(e) => {
            local.send(chat_error_text(app, &e));
            true
        }
    }
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

#[utoipa::path(
    get,
    path = "/ws/lobby",
    tag = "sockets",
    summary = "WebSocket upgrade: the live lobby",
    security((), ("cookie" = []), ("bearer" = [])),
    responses(
        (status = 101, description = "switching protocols; then `LobbyMsg` frames (docs/protocol.md, docs/protocol.schema.json)"),
        (status = 400, description = "`code`: malformed (not a WebSocket upgrade)", body = wire::ErrorBody),
        (status = 403, description = "`code`: forbidden_origin (another site's page)", body = wire::ErrorBody),
        (status = 429, description = "`code`: too_many_sockets (WebSockets per address)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 503, description = "`code`: server_draining (this server is shutting down)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn lobby_socket(
    ws: WebSocketUpgrade,
    State(app): State<AppState>,
    crate::extract::ClientAddr(client): crate::extract::ClientAddr,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    auth::origin_allowed(&headers, &app.config.allowed_origins)?;
    // Before any database work, as on the table socket.
    let token = socket_token(&app)?;
    let slot = crate::extract::socket_slot(&app, client)?;
    // Reading the lobby needs nothing; chatting and quick play need a player.
    let authed = crate::extract::authed(&headers, &app).await?;
    Ok(limits(ws).on_upgrade(move |socket| async move {
        let (_slot, _token) = (slot, token);
        run_lobby_socket(socket, app, authed).await
    }))
}

/// The close code of a socket whose device was signed out (`DELETE
/// /api/account/devices/{id}`, or signing out): the client should not reconnect as before.
pub const SIGNED_OUT: u16 = 4001;

/// Resolves when `session` is signed out; never without a session. A receiver that fell
/// behind the broadcast asks the store whether the session still exists.
async fn signed_out(
    app: &AppState,
    revoked: &mut tokio::sync::broadcast::Receiver<String>,
    session: Option<(Uuid, &str)>,
) {
    let Some((player, session)) = session else {
        return std::future::pending().await;
    };
    loop {
        match revoked.recv().await {
            Ok(id) if id == session => return,
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                // Missed some: look the session up in its player's list.
                match app.store.sessions_of(player).await {
                    Ok(list) if !list.iter().any(|s| s.id == session) => return,
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "could not check a session"),
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                return std::future::pending().await;
            }
        }
    }
}

/// How long lobby changes are collected before they are sent together.
const LOBBY_COALESCE: Duration = Duration::from_millis(50);

fn lobby_text(msg: &LobbyMsg) -> Utf8Bytes {
    serde_json::to_string(msg).expect("serializes").into()
}

/// Writes one lobby message within [`WRITE_TIMEOUT`]; `false`: the client is gone or
/// stopped reading.
async fn lobby_send(sink: &mut SplitSink<WebSocket, Message>, msg: &LobbyMsg) -> bool {
    let send = sink.send(Message::Text(lobby_text(msg)));
    matches!(tokio::time::timeout(WRITE_TIMEOUT, send).await, Ok(Ok(())))
}

fn lobby_error(app: &AppState, code: &str, message: String, retry: Option<u64>) -> LobbyMsg {
    app.metrics.rejected(code);
    LobbyMsg::Error {
        code: code.into(),
        message,
        retry_after_ms: retry,
    }
}

fn lobby_chat_error(app: &AppState, e: &ChatError) -> LobbyMsg {
    lobby_error(app, e.code(), e.message(), e.retry_after_ms())
}

/// What a lobby socket holds for quick play.
struct Quick {
    /// This socket's id in the queues.
    conn: String,
    /// Set while this socket waits in a queue.
    waiting: Option<crate::quickplay::Waiting>,
    /// What the matcher tells this socket.
    tx: outbox::Sender<LobbyMsg>,
}

/// One message from a lobby client: what to answer, if anything.
async fn lobby_message(
    app: &AppState,
    who: Option<&Who>,
    muted: &mut Vec<Uuid>,
    quick: &mut Quick,
    text: &str,
) -> Option<LobbyMsg> {
    let msg = match LobbyClientMsg::decode(text) {
        Ok(msg) => msg,
        Err(e) => {
            return Some(lobby_error(
                app,
                "malformed",
                format!("not a valid message: {e}"),
                None,
            ));
        }
    };
    let (target, on) = match msg {
        LobbyClientMsg::Chat { text } => {
            // The line comes back through the feed, like everybody's.
            let said = match who {
                Some(w) => chat_text(Some(w), &text)
                    .and_then(|(name, body)| app.lobby_chat.say(w.id, &name, body)),
                None => Err(ChatError::NotSignedIn),
            };
            return said.err().map(|e| lobby_chat_error(app, &e));
        }
        LobbyClientMsg::Mute { player } => (player, true),
        LobbyClientMsg::Unmute { player } => (player, false),
        LobbyClientMsg::QueueJoin {
            game,
            seats,
            bots_now,
        } => {
            let Some(who) = who else {
                return Some(lobby_error(
                    app,
                    "not_signed_in",
                    "become a guest or sign in to play".into(),
                    None,
                ));
            };
            if quick.waiting.is_some() {
                return Some(lobby_error(
                    app,
                    "already_queued",
                    "this connection is waiting in a queue already: leave it first".into(),
                    None,
                ));
            }
            let joined =
                crate::quickplay::join(app, who, &quick.conn, &game, seats, bots_now, &quick.tx)
                    .await;
            return Some(match joined {
                Ok((msg, waiting)) => {
                    quick.waiting = waiting;
                    msg
                }
                Err(crate::quickplay::Refusal(code, message)) => {
                    lobby_error(app, code, message, None)
                }
            });
        }
        LobbyClientMsg::QueueLeave {} => {
            return Some(
                match crate::quickplay::leave(app, quick.waiting.take()).await {
                    Ok(msg) => msg,
                    Err(crate::quickplay::Refusal(code, message)) => {
                        lobby_error(app, code, message, None)
                    }
                },
            );
        }
    };
    Some(match set_mute(app, who, target, on).await {
        Ok(players) => {
            *muted = players.clone();
            LobbyMsg::Muted { players }
        }
        Err(e) => lobby_chat_error(app, &e),
    })
}

/// The lobby: the whole list on connect, then only what changed (coalesced over
/// [`LOBBY_COALESCE`]); the whole list again if this socket fell behind the changes. And
/// the lobby's chat: its latest lines on connect, then each new one, without the lines of
/// players this socket's player muted.
async fn run_lobby_socket(socket: WebSocket, app: AppState, authed: Option<(Who, String)>) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let (who, session) = match authed {
        Some((w, s)) => (Some(w), Some(s)),
        None => (None, None),
    };
    let mut revoked = app.revoked.subscribe();
    let (quick_tx, mut quick_rx) = outbox::outbox::<LobbyMsg>(16);
    let mut quick = Quick {
        // The node's id first: the queue entries of a node that died are known by it.
        conn: format!("{}/{}", app.cluster.node, auth::random_hex(16)),
        waiting: None,
        tx: quick_tx,
    };
    let mut counts = app.quickplay.counts();
    counts.mark_changed();
    let (mut sink, mut stream) = socket.split();
    let mut changes = app.lobby.subscribe();
    let mut shutdown = app.shutdown.subscribe();
    let mut changed: std::collections::BTreeSet<uuid::Uuid> = Default::default();
    let mut resend_all = true;
    let mut window: Option<tokio::time::Instant> = None;
    let mut limit = RateLimit::new(app.config.ws_messages_per_second);
    let feed = app.lobby_chat.subscribe();
    let mut chat = feed.lines;
    let mut chat_history = Some(feed.history);
    // Without its mutes a socket would show lines its player asked not to see: it then
    // says so and shows no chat (the tables still work).
    let mut muted = match mutes_of(&app, who.as_ref()).await {
        Ok(m) => m,
        Err(e) => {
            chat_history = None;
            let _ = lobby_send(&mut sink, &lobby_chat_error(&app, &e)).await;
            Vec::new()
        }
    };
    let chat_on = chat_history.is_some();
    loop {
        if resend_all {
            resend_all = false;
            changed.clear();
            window = None;
            let msg = LobbyMsg::Tables {
                tables: app.lobby.tables(),
            };
            if !lobby_send(&mut sink, &msg).await {
                app.metrics.closed("write_timeout");
                break;
            }
        }
        if let Some(lines) = chat_history.take() {
            let lines = lines
                .into_iter()
                .filter(|l| !muted.contains(&l.player))
                .collect();
            let msg = LobbyMsg::ChatHistory {
                lines,
                muted: muted.clone(),
            };
            if !lobby_send(&mut sink, &msg).await {
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
            line = chat.recv(), if chat_on => match line {
                Ok(line) => {
                    if !muted.contains(&line.player) && !lobby_send(&mut sink, &LobbyMsg::Chat { line }).await {
                        app.metrics.closed("write_timeout");
                        break;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    chat_history = Some(app.lobby_chat.history());
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            },
            Ok(()) = counts.changed() => {
                let queues = counts.borrow_and_update().clone();
                if !lobby_send(&mut sink, &LobbyMsg::Queues { queues }).await {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            Some(msg) = quick_rx.recv() => {
                if matches!(msg, LobbyMsg::Matched { .. } | LobbyMsg::QueueLeft {}) {
                    // Out of the queue already (taken by the matcher).
                    quick.waiting = None;
                }
                if !lobby_send(&mut sink, &msg).await {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            _ = signed_out(&app, &mut revoked, who.as_ref().map(|w| w.id).zip(session.as_deref())) => {
                close_with(&mut sink, SIGNED_OUT, "signed out").await;
                break;
            }
            _ = async { tokio::time::sleep_until(window.expect("guarded")).await }, if window.is_some() => {
                window = None;
                let (mut tables, mut removed) = (Vec::new(), Vec::new());
                for id in std::mem::take(&mut changed) {
                    match app.lobby.table(id) {
                        Some(t) => tables.push(t),
                        None => removed.push(id),
                    }
                }
                let msg = LobbyMsg::Changes { tables, removed };
                if !lobby_send(&mut sink, &msg).await {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            _ = crate::state::stopping(&mut shutdown) => {
                close_with(&mut sink, close_code::AWAY, "server restarting").await;
                break;
            }
            // Chat and mutes; anything else is answered `malformed`. As on a table
            // socket, a flood is answered `rate_limited` and dropped, and oversized frames
            // close the socket.
            incoming = stream.next() => match incoming {
                Some(Ok(Message::Close(_))) | None => break,
                Some(Err(e)) => {
                    if let Some((code, reason)) = read_error(&app, &e) {
                        close_with(&mut sink, code, reason).await;
                    }
                    break;
                }
                Some(Ok(Message::Text(_) | Message::Binary(_))) if !limit.take(0) => {
                    let msg = lobby_error(
                        &app,
                        "rate_limited",
                        format!(
                            "too many messages: at most {} a second on one connection; this one was dropped",
                            app.config.ws_messages_per_second
                        ),
                        None,
                    );
                    if !lobby_send(&mut sink, &msg).await {
                        break;
                    }
                }
                Some(Ok(Message::Text(text))) => {
                    let answer = lobby_message(&app, who.as_ref(), &mut muted, &mut quick, &text).await;
                    if let Some(msg) = answer
                        && !lobby_send(&mut sink, &msg).await
                    {
                        break;
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    let msg = lobby_error(&app, "binary_not_supported", "send JSON text messages".into(), None);
                    if !lobby_send(&mut sink, &msg).await {
                        break;
                    }
                }
                Some(Ok(_)) => {}
            },
        }
    }
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
        let app = crate::build(crate::Config::for_tests("sqlite::memory:"))
            .await
            .expect("a server on an in-memory database");
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

    /// Issue #33, item 6: a socket whose command finds its table's task ended (here a hand-
    /// over, as at a drain: the task takes no more commands, and still holds the
    /// connection's queue while it releases the table, stuck behind SQLite's write lock)
    /// closes with 1013, as when the queue closes. It used to leave its loop with no close
    /// frame at all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_socket_whose_command_finds_its_table_ended_closes_with_1013() {
        use futures_util::{SinkExt, StreamExt};
        use sqlx::Connection;
        use tokio_tungstenite::tungstenite::Message as Client;
        let dir = std::env::temp_dir().join(format!("fib-ws-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/fib.db", dir.display());
        let app = crate::build(crate::Config::for_tests(&url))
            .await
            .expect("a server on a SQLite file");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(crate::serve(listener, app.clone(), async move {
            let _ = stopped.await;
        }));
        // Answered once the node has joined its cluster (taking its tables back): a table
        // made before would be claimed again under its feet.
        let health = reqwest::get(format!("http://{addr}/healthz"))
            .await
            .unwrap();
        assert!(health.status().is_success());
        let now = crate::state::now_ms();
        let record = store::TableRecord {
            id: uuid::Uuid::new_v4(),
            game: "trump".into(),
            options: games::check_options("trump", &serde_json::json!({}), 2).unwrap(),
            rules_version: 0,
            seat_count: 2,
            private: false,
            invite_code: None,
            created_by: uuid::Uuid::new_v4(),
            created_at: now,
            status: store::TableStatus::Open,
            bots: None,
            daily: None,
            pace: serde_json::json!({}),
            clock: None,
            updated_at: now,
        };
        let table = app
            .core
            .create(record, vec![store::Occupant::Empty; 2])
            .await
            .expect("a new table");
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("ws://{addr}/ws/table/{}", table.id))
                .await
                .unwrap();
        let first = ws.next().await.expect("a message").expect("no error");
        assert!(
            first.to_text().unwrap().starts_with(r#"{"type":"state""#),
            "{first:?}"
        );
        // The task is told to hand the table over, and cannot release it while another
        // connection holds SQLite's write lock: it takes no more commands meanwhile.
        let mut lock = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::raw_sql("BEGIN IMMEDIATE")
            .execute(&mut lock)
            .await
            .unwrap();
        let (reply, answer) = tokio::sync::oneshot::channel();
        table.send(Cmd::HandOver { reply }).await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while !table.ending() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the task begins to end");

        ws.send(Client::text(r#"{"type":"sync"}"#)).await.unwrap();
        let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
            loop {
                match ws.next().await {
                    Some(Ok(Client::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                    Some(Ok(_)) => continue,
                    _ => return None,
                }
            }
        })
        .await
        .expect("the socket closes at once");
        assert_eq!(closed, Some(1013), "a close frame: reconnect");

        sqlx::raw_sql("COMMIT").execute(&mut lock).await.unwrap();
        lock.close().await.unwrap();
        answer.await.expect("the hand-over is answered");
        let _ = stop.send(());
        served.await.unwrap().unwrap();
        app.store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
}
