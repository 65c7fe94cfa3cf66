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

pub(crate) mod challenge;
pub mod lobby;
pub mod table;

pub use lobby::lobby_socket;
pub use table::{TableQuery, UpdatesParam, table_socket};

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use futures_util::SinkExt;
use futures_util::stream::SplitSink;
use protocol::{ChatBody, LobbyMsg, MAX_WS_MESSAGE, ServerMsg, check_chat_text};
use tokio_util::task::task_tracker::TaskTrackerToken;
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::AppState;
use realtime::outbox;
use realtime::table::chat::{ChatCmd, ChatError};
use realtime::table::{Cmd, TableHandle, Who};

/// How long one write to a client's socket may take before the client counts as gone.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Messages written to the network before one flush: a burst of patches goes out in one
/// system call, and the batch stays small enough not to grow the write buffer much.
pub(super) const FLUSH_EVERY: usize = 16;

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

/// A text of the core as the socket library's text. The core only makes UTF-8, but axum
/// takes bytes as text only after checking them: one pass over each frame per socket, the
/// price of a core that knows no socket library (and under `unsafe_code = "forbid"`, the
/// only way across). Measured with the rest of the carve: no loss in `loadgen` against the
/// build before (docs/performance.md, 2026-11-27).
pub(super) fn frame(text: realtime::Text) -> Utf8Bytes {
    Utf8Bytes::try_from(text.into_bytes()).unwrap_or_default()
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

pub(super) fn error_text(code: &str, message: String) -> String {
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
pub(super) async fn write_batch(
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
pub(super) async fn close_with(
    sink: &mut SplitSink<WebSocket, Message>,
    code: u16,
    reason: &'static str,
) {
    let frame = Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }));
    let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.send(frame)).await;
}

/// What a read error means: oversized and broken frames end here (tungstenite refuses them
/// before we see them) and get a close code; a client that simply went away (reset, no
/// close handshake) is not a refusal and has no socket left to tell.
pub(super) fn read_error(app: &AppState, e: &axum::Error) -> Option<(u16, &'static str)> {
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

/// The messages a second a socket of `who` may send besides accepted moves: the bot
/// accounts' allowance for them (`--bot-ws-messages-per-second`), everyone else's
/// (`--ws-messages-per-second`).
pub(super) fn message_rate(app: &AppState, who: Option<&Who>) -> u32 {
    match who {
        Some(w) if app.core.is_bot_account(w.id) => app.config.bot_ws_messages_per_second,
        _ => app.config.ws_messages_per_second,
    }
}

/// A token bucket: `rate` messages a second, bursts of `2 × rate`.
pub(super) struct RateLimit {
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

/// A refused chat message, as the socket sends it (`version` 0: the table never saw it).
pub(super) fn chat_error_text(app: &AppState, e: &ChatError) -> String {
    app.metrics.rejected(e.code());
    serde_json::to_string(&e.server_msg(0)).expect("serializes")
}

/// A chat text checked for sending as `who`: the sender's name and the line.
pub(super) fn chat_text(who: Option<&Who>, text: &str) -> Result<(String, ChatBody), ChatError> {
    let who = who.ok_or(ChatError::NotSignedIn)?;
    let text = check_chat_text(text)?.to_string();
    Ok((who.name.clone(), ChatBody::Text { text }))
}

/// The players `who` muted (none for an anonymous socket).
pub(super) async fn mutes_of(app: &AppState, who: Option<&Who>) -> Result<Vec<Uuid>, ChatError> {
    let Some(who) = who else {
        return Ok(Vec::new());
    };
    app.store.mutes_of(who.id).await.map_err(|e| {
        tracing::error!(error = %e, "could not read a player's mutes");
        ChatError::Internal
    })
}

/// Stores a mute (`on`) or unmute of `target` by `who`; the whole new list of their mutes.
pub(super) async fn set_mute(
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
pub(super) async fn mute_at_table(
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

/// The close code of a socket whose device was signed out (`DELETE
/// /api/account/devices/{id}`, or signing out): the client should not reconnect as before.
pub const SIGNED_OUT: u16 = 4001;

/// Resolves when `session` is signed out; never without a session. A receiver that fell
/// behind the broadcast asks the store whether the session still exists.
pub(super) async fn signed_out(
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

/// The socket's own replies (errors it finds itself, `pong`), through the connection's
/// queue while the table still holds the connection. A reply that finds the queue full is
/// not dropped silently: the socket then closes with 1013, as when the table finds it
/// full, so a client never goes on without an answer it was owed.
pub(super) struct Local {
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

/// An error for a lobby socket (`LobbyMsg::Error`), counted by code in `/metrics`. Here,
/// not in `lobby`, because challenges answer with it too.
pub(crate) fn lobby_error(
    app: &AppState,
    code: &str,
    message: String,
    retry: Option<u64>,
) -> LobbyMsg {
    app.metrics.rejected(code);
    LobbyMsg::Error {
        code: code.into(),
        message,
        retry_after_ms: retry,
    }
}

/// A lobby answer, or the lobby error of its refusal.
pub(crate) fn refused(app: &AppState, r: Result<LobbyMsg, crate::quickplay::Refusal>) -> LobbyMsg {
    r.unwrap_or_else(|crate::quickplay::Refusal(code, message)| {
        lobby_error(app, code, message, None)
    })
}
