//! The lobby socket, `/ws/lobby`: the live list of public tables, quick play, and the
//! lobby's chat.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use protocol::{LobbyClientMsg, LobbyMsg};
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::state::AppState;
use crate::wire;
use realtime::outbox;
use realtime::table::Who;
use realtime::table::chat::ChatError;

use super::*;

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
        (status = 429, description = "`code`: too_many_sockets (WebSockets held open per address) or rate_limited (WebSockets opened per address and minute)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
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

/// How long lobby changes are collected before they are sent together.
pub(super) const LOBBY_COALESCE: Duration = Duration::from_millis(50);

pub(super) fn lobby_text(msg: &LobbyMsg) -> Utf8Bytes {
    serde_json::to_string(msg).expect("serializes").into()
}

/// Writes one lobby message within [`WRITE_TIMEOUT`]; `false`: the client is gone or
/// stopped reading.
pub(super) async fn lobby_send(sink: &mut SplitSink<WebSocket, Message>, msg: &LobbyMsg) -> bool {
    let send = sink.send(Message::Text(lobby_text(msg)));
    matches!(tokio::time::timeout(WRITE_TIMEOUT, send).await, Ok(Ok(())))
}

pub(super) fn lobby_chat_error(app: &AppState, e: &ChatError) -> LobbyMsg {
    lobby_error(app, e.code(), e.message(), e.retry_after_ms())
}

/// Tournaments a lobby socket may follow at once.
pub(super) const FOLLOW_MAX: usize = 8;

/// What a lobby socket holds for quick play.
pub(super) struct Quick {
    /// This socket's id in the queues.
    conn: String,
    /// Set while this socket waits in a queue.
    waiting: Option<crate::matcher::Waiting>,
    /// What the matcher tells this socket.
    tx: outbox::Sender<LobbyMsg>,
    /// The tournaments this socket follows, with the version last sent.
    following: std::collections::HashMap<Uuid, i64>,
    /// The game whose tables this socket shows (`None`: every game's), and whether it
    /// just changed (the whole list is sent again).
    game: Option<String>,
    refilter: bool,
}

fn not_signed_in(app: &AppState) -> LobbyMsg {
    lobby_error(
        app,
        "not_signed_in",
        "become a guest or sign in to play".into(),
        None,
    )
}

/// One message from a lobby client: what to answer, if anything.
pub(super) async fn lobby_message(
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
                crate::matcher::join(app, who, &quick.conn, &game, seats, bots_now, &quick.tx)
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
        LobbyClientMsg::Challenge {
            to,
            game,
            seats,
            options,
            pace,
            rated,
            bots,
        } => {
            let Some(who) = who else {
                return Some(not_signed_in(app));
            };
            let ask = super::challenge::Ask {
                to,
                game,
                seats,
                options,
                pace,
                rated,
                bots,
            };
            return Some(refused(
                app,
                super::challenge::challenge(app, who, &quick.conn, ask).await,
            ));
        }
        LobbyClientMsg::ChallengeAccept { id } => {
            let Some(who) = who else {
                return Some(not_signed_in(app));
            };
            return Some(refused(
                app,
                super::challenge::accept(app, who, &id, super::challenge::Via::Socket(&quick.conn))
                    .await,
            ));
        }
        LobbyClientMsg::ChallengeDecline { id } => {
            let Some(who) = who else {
                return Some(not_signed_in(app));
            };
            return Some(refused(
                app,
                super::challenge::decline_here_or_there(app, who, &id, &quick.conn).await,
            ));
        }
        LobbyClientMsg::ChallengeCancel { id } => {
            let Some(who) = who else {
                return Some(not_signed_in(app));
            };
            return Some(refused(
                app,
                super::challenge::cancel(app, who, &quick.conn, &id),
            ));
        }
        LobbyClientMsg::TournamentFollow { id, invite } => {
            if !quick.following.contains_key(&id) && quick.following.len() >= FOLLOW_MAX {
                return Some(lobby_error(
                    app,
                    "too_many_follows",
                    format!("a connection follows at most {FOLLOW_MAX} tournaments"),
                    None,
                ));
            }
            let shown = async {
                let l = crate::tournaments::load(app, id).await?;
                crate::tournaments::may_see(&l, who.map(|w| w.id), invite.as_deref())?;
                let info = crate::tournaments::info(app, &l, who.map(|w| w.id)).await?;
                Ok::<_, ApiError>((l.record.version, info))
            };
            return Some(match shown.await {
                Ok((version, info)) => {
                    quick.following.insert(id, version);
                    LobbyMsg::Tournament {
                        tournament: Box::new(info),
                    }
                }
                Err(e) => lobby_error(app, e.code(), e.to_string(), None),
            });
        }
        LobbyClientMsg::TournamentUnfollow { id } => {
            quick.following.remove(&id);
            return None;
        }
        LobbyClientMsg::LobbyFilter { game } => {
            if let Some(g) = &game
                && !games::catalogue().iter().any(|c| c.kind == *g)
            {
                return Some(lobby_error(
                    app,
                    "unknown_game",
                    format!("there is no game {g:?}; see GET /api/games"),
                    None,
                ));
            }
            quick.game = game;
            quick.refilter = true;
            return None;
        }
        LobbyClientMsg::QueueLeave {} => {
            return Some(
                match crate::matcher::leave(app, quick.waiting.take()).await {
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

/// Sends each of `ids` that changed since it was last sent to this socket; `false`: the
/// client is gone.
async fn send_tournaments(
    app: &AppState,
    who: Option<&Who>,
    quick: &mut Quick,
    ids: &[Uuid],
    sink: &mut SplitSink<WebSocket, Message>,
) -> bool {
    for id in ids {
        let Ok(l) = crate::tournaments::load(app, *id).await else {
            continue;
        };
        if quick.following.get(id) == Some(&l.record.version) {
            continue;
        }
        let Ok(info) = crate::tournaments::info(app, &l, who.map(|w| w.id)).await else {
            continue;
        };
        quick.following.insert(*id, l.record.version);
        let msg = LobbyMsg::Tournament {
            tournament: Box::new(info),
        };
        if !lobby_send(sink, &msg).await {
            return false;
        }
    }
    true
}

/// The lobby: the whole list on connect, then only what changed (coalesced over
/// [`LOBBY_COALESCE`]); the whole list again if this socket fell behind the changes. And
/// the lobby's chat: its latest lines on connect, then each new one, without the lines of
/// players this socket's player muted.
pub(super) async fn run_lobby_socket(
    socket: WebSocket,
    app: AppState,
    authed: Option<(Who, String)>,
) {
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    app.lobby_sockets.fetch_add(1, Relaxed);
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
        following: Default::default(),
        game: None,
        refilter: false,
    };
    let mut tournaments = app.tournament_feed.subscribe();
    // Another node's steps reach this one's followers by this look every 2 s (several
    // nodes only: one node's own steps come through `tournament_feed`).
    let mut tournament_look = tokio::time::interval(Duration::from_secs(2));
    let mut counts = app.quickplay.counts();
    counts.mark_changed();
    let (mut sink, mut stream) = socket.split();
    let mut changes = app.lobby.subscribe();
    let mut shutdown = app.shutdown.subscribe();
    let mut changed: std::collections::BTreeSet<uuid::Uuid> = Default::default();
    let mut resend_all = true;
    let mut window: Option<tokio::time::Instant> = None;
    let rate = message_rate(&app, who.as_ref());
    let mut limit = RateLimit::new(rate);
    if let Some(w) = &who {
        app.challenges.register(w.id, &quick.conn, quick.tx.clone());
    }
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
    // The tables this socket shows: the first `--lobby-shown` of its list.
    let shown_most = app.config.lobby_shown;
    let mut shown: std::collections::HashSet<Uuid> = Default::default();
    let mut last_total = 0;
    loop {
        if std::mem::take(&mut quick.refilter) {
            resend_all = true;
        }
        if resend_all {
            resend_all = false;
            changed.clear();
            window = None;
            let (tables, total) = app.lobby.first(quick.game.as_deref(), shown_most);
            shown = tables.iter().map(|t| t.id).collect();
            last_total = total;
            let msg = LobbyMsg::Tables { tables, total };
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
                // The list's first tables now: those new to it are sent, those that left
                // it (gone, or moved past its end) are removed, those still in it are
                // sent if they changed. A change to a table it does not show costs this
                // socket nothing more.
                let (first, total) = app.lobby.first_ids(quick.game.as_deref(), shown_most);
                let changed = std::mem::take(&mut changed);
                let now: std::collections::HashSet<Uuid> = first.iter().copied().collect();
                let removed: Vec<Uuid> = shown.difference(&now).copied().collect();
                let tables = app.lobby.tables(
                    first
                        .iter()
                        .copied()
                        .filter(|id| !shown.contains(id) || changed.contains(id)),
                );
                shown = now;
                if tables.is_empty() && removed.is_empty() && total == last_total {
                    continue;
                }
                last_total = total;
                let msg = LobbyMsg::Changes { tables, removed, total };
                if !lobby_send(&mut sink, &msg).await {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            t = tournaments.recv(), if !quick.following.is_empty() => {
                let ids: Vec<Uuid> = match t {
                    Ok(id) if quick.following.contains_key(&id) => vec![id],
                    Ok(_) => vec![],
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        quick.following.keys().copied().collect()
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                };
                if !send_tournaments(&app, who.as_ref(), &mut quick, &ids, &mut sink).await {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            _ = tournament_look.tick(), if app.cluster.multi && !quick.following.is_empty() => {
                let ids: Vec<Uuid> = quick.following.keys().copied().collect();
                if !send_tournaments(&app, who.as_ref(), &mut quick, &ids, &mut sink).await {
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
                            "too many messages: at most {rate} a second on one connection; this one was dropped",
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
    if let Some(w) = &who {
        super::challenge::socket_gone(&app, w.id, &quick.conn);
    }
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
    app.lobby_sockets.fetch_sub(1, Relaxed);
}
