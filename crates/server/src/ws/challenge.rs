//! Direct challenges on the lobby socket (docs/protocol.md §4.2): a signed-in socket
//! challenges a player online in the lobby (a person or a bot account), or a house bot
//! (`house:easy|normal|hard`, accepted at once). The challenged player's sockets are told;
//! one of them accepts or declines; the challenger may cancel; it expires after
//! `--challenge-expiry-s` (60 s) or when either side's socket closes. On accept a table is
//! created with the challenger in seat 0, the challenged in seat 1 (house bots in any
//! further seat), and started; both sides are told its id.
//!
//! Across nodes (Postgres): the challenge is held by the challenger's node (its origin),
//! which alone takes it out. It is offered to the other nodes by a note; each node with a
//! lobby socket of the challenged player shows it there and says so (`delivered`); an
//! answer there goes to the origin as a note and comes back as its reply; the origin tells
//! the nodes that show it when it ends (`node::ChallengeWhat`).

use protocol::{BotLevel, Challenge, LobbyMsg, Pace, PlayerInfo};
use realtime::table::{Cmd, Who};
use store::{Occupant, TableRecord, TableStatus};
use uuid::Uuid;

use crate::challenges::{MAX_SENT, Pending, Shown};
use crate::error::ApiError;
use crate::node::{ChallengeNote, ChallengeWhat};
use crate::quickplay::Refusal;
use crate::state::{AppState, now_ms};

/// What a `challenge` message asks.
pub(super) struct Ask {
    pub to: String,
    pub game: String,
    pub seats: Option<u8>,
    pub options: serde_json::Value,
    pub pace: Pace,
    pub rated: bool,
    pub bots: Option<BotLevel>,
}

/// How long a challenge to a player with no lobby socket on this node waits for another
/// node to show it before it is refused `player_offline`.
const DELIVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long an answer given on another node than the challenge's waits for that node.
const REPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn refuse<T>(code: &'static str, message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(code, message.into()))
}

/// `challenge`: checks everything, then sends it (or, to a house bot, starts the match).
pub(super) async fn challenge(
    app: &AppState,
    who: &Who,
    conn: &str,
    ask: Ask,
) -> Result<LobbyMsg, Refusal> {
    let Some(info) = games::catalogue().into_iter().find(|g| g.kind == ask.game) else {
        return refuse(
            "unknown_game",
            format!("there is no game {:?}; see GET /api/games", ask.game),
        );
    };
    let house = match ask.to.strip_prefix("house:") {
        Some(level) => match BotLevel::parse(level) {
            Some(l) if l.as_str() == level => Some(l),
            _ => {
                return refuse(
                    "unknown_player",
                    format!("there is no house bot {level:?}: easy, normal or hard"),
                );
            }
        },
        None => None,
    };
    // Two sides; a game for one (Solitaire) only against the house, alone at its table.
    let lowest = if house.is_some() { 1 } else { 2 };
    let seats = usize::from(ask.seats.unwrap_or(info.min_players.max(2) as u8));
    if seats < lowest.max(info.min_players) || seats > info.max_players {
        return refuse(
            "bad_player_count",
            format!(
                "{} is played by {} to {} players, and a challenge between two players needs \
                 two seats; not {seats}",
                info.title, info.min_players, info.max_players
            ),
        );
    }
    let options = games::check_options(&ask.game, &ask.options, seats)
        .map_err(|e| Refusal(e.code(), e.to_string()))?;
    ask.pace
        .validate()
        .map_err(|e| Refusal("bad_pace", e.to_string()))?;
    let bots = ask.bots.unwrap_or(BotLevel::Normal);
    let id = crate::auth::random_hex(16);
    if let Some(level) = house {
        let players = [who.clone()];
        let table = start_match(
            app, &ask.game, options, seats, ask.pace, ask.rated, &players, level,
        )
        .await?;
        tracing::info!(%table, "house challenge started");
        return Ok(LobbyMsg::ChallengeStarted { id, table, seat: 0 });
    }
    let Ok(to) = Uuid::parse_str(&ask.to) else {
        return refuse(
            "unknown_player",
            format!(
                "`to` is a player id (a UUID) or house:easy, house:normal, house:hard; not {:?}",
                ask.to
            ),
        );
    };
    if to == who.id {
        return refuse("self_challenge", "you cannot challenge yourself");
    }
    if app
        .store
        .player(to)
        .await
        .map_err(ApiError::from)?
        .is_none()
    {
        return refuse("unknown_player", format!("there is no player {to}"));
    }
    let here = app.challenges.online(to);
    let offline = || {
        refuse(
            "player_offline",
            format!(
                "player {to} has no signed-in lobby socket on this server: challenges reach \
                 only players in the lobby"
            ),
        )
    };
    if !here && !app.cluster.multi {
        return offline();
    }
    let challenge = Challenge {
        id: id.clone(),
        from: PlayerInfo {
            id: who.id,
            name: who.name.clone(),
        },
        to: to.to_string(),
        from_bot: app.core.is_bot_account(who.id),
        game: ask.game,
        seats: seats as u8,
        options,
        pace: ask.pace,
        rated: ask.rated,
        expires_at: now_ms() + 1000 * app.config.challenge_expiry_s as i64,
    };
    let pending = Pending {
        challenge: challenge.clone(),
        from_conn: conn.to_string(),
        to,
        bots,
        remote: Vec::new(),
    };
    // Delivered to another node: the first `delivered` note wakes this.
    let delivery = (!here).then(|| app.challenges.wait(&id));
    if app.challenges.insert(pending).is_err() {
        app.challenges.unwait(&id);
        return refuse(
            "too_many_challenges",
            format!("at most {MAX_SENT} challenges of one connection wait at once"),
        );
    }
    app.challenges.tell(
        to,
        &LobbyMsg::ChallengeReceived {
            challenge: challenge.clone(),
        },
    );
    // The player's sockets on other nodes see it too.
    app.cluster.tell_challenge(ChallengeWhat::Offer {
        challenge: challenge.clone(),
        to,
    });
    if let Some(rx) = delivery {
        let shown = matches!(tokio::time::timeout(DELIVERY_WAIT, rx).await, Ok(Ok(_)));
        if !shown {
            app.challenges.unwait(&id);
            // Nobody showed it (a late one forgets it again, silently).
            if let Some(p) = app.challenges.take(&id) {
                app.cluster.tell_challenge(ChallengeWhat::Ended {
                    id: p.challenge.id,
                    to,
                    reason: "gone".into(),
                    tell: false,
                    told_on: None,
                });
                return offline();
            }
            // Taken meanwhile (cancelled by a socket that closed): nothing to answer.
            return Err(gone(&id));
        }
    }
    // It expires unless answered first (whoever takes it out answers it).
    let app2 = app.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(
            app2.config.challenge_expiry_s,
        ))
        .await;
        if let Some(p) = app2.challenges.take(&id) {
            ended(&app2, &p, "expired", None, None);
        }
    });
    Ok(LobbyMsg::ChallengeSent { challenge })
}

/// Where the challenged player answered a challenge.
#[derive(Clone, Copy)]
pub(super) enum Via<'a> {
    /// Their lobby socket of this id, on this node.
    Socket(&'a str),
    /// A lobby socket on the node of this name, which relayed the answer.
    Node(&'a str),
}

impl Via<'_> {
    fn node(self) -> Option<String> {
        match self {
            Via::Socket(_) => None,
            Via::Node(node) => Some(node.to_string()),
        }
    }
}

/// Tells both sides (but `except` the one answering, here) that `p` ended for `reason`.
/// The challenged player's sockets on the other nodes are told in any case, but on the
/// node through which they answered (`answer`), which tells its own ([`answered`]).
fn ended(app: &AppState, p: &Pending, reason: &str, except: Option<Uuid>, answer: Option<Via<'_>>) {
    let msg = LobbyMsg::ChallengeEnded {
        id: p.challenge.id.clone(),
        reason: reason.into(),
    };
    if except != Some(p.challenge.from.id) {
        app.challenges
            .tell_conn(p.challenge.from.id, &p.from_conn, msg.clone());
    }
    if except != Some(p.to) {
        app.challenges.tell(p.to, &msg);
    }
    // Every other node hears it, not only those known to show it: a node's `delivered`
    // note may still be on its way (a node that does not show it ignores this).
    app.cluster.tell_challenge(ChallengeWhat::Ended {
        id: p.challenge.id.clone(),
        to: p.to,
        reason: reason.into(),
        // The player's sockets there are other sockets than any here: always told (but
        // on the node that relayed an answer, which tells its own).
        tell: true,
        told_on: answer.and_then(Via::node),
    });
}

/// Every challenge that ended because a socket closed: the other side is told `gone`.
/// Another node's challenges to the player, shown here on their last socket, are shown
/// here no more: their origin learns it.
pub(super) fn socket_gone(app: &AppState, player: Uuid, conn: &str) {
    let (taken, shown) = app.challenges.socket_gone(player, conn);
    for p in taken {
        ended(app, &p, "gone", Some(player), None);
    }
    for (id, s) in shown {
        app.cluster.tell_challenge(ChallengeWhat::Gone {
            origin: s.origin,
            id,
        });
    }
}

/// A challenge note of another node.
pub(crate) fn note(app: &AppState, note: ChallengeNote) {
    let me = &app.cluster.node;
    match note.what {
        ChallengeWhat::Offer { challenge, to } => {
            let id = challenge.id.clone();
            let shown = Shown {
                origin: note.node.clone(),
                to,
            };
            if !app.challenges.show(&id, shown) {
                return;
            }
            app.challenges.tell(
                to,
                &LobbyMsg::ChallengeReceived {
                    challenge: challenge.clone(),
                },
            );
            app.cluster.tell_challenge(ChallengeWhat::Delivered {
                origin: note.node,
                id: id.clone(),
            });
            // Forgotten a while after it expires, should its origin never say (it died).
            let app = app.clone();
            let left = (challenge.expires_at - now_ms()).max(0) as u64 + 5_000;
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(left)).await;
                if app.challenges.unshow(&id).is_some() {
                    app.challenges.tell(
                        to,
                        &LobbyMsg::ChallengeEnded {
                            id,
                            reason: "expired".into(),
                        },
                    );
                }
            });
        }
        ChallengeWhat::Delivered { origin, id } if origin == *me => {
            app.challenges.delivered(&id, &note.node);
        }
        ChallengeWhat::Answer {
            origin,
            req,
            id,
            who,
            name,
            accept: yes,
        } if origin == *me => {
            let app = app.clone();
            tokio::spawn(async move {
                let who = Who { id: who, name };
                let via = Via::Node(&note.node);
                let result = if yes {
                    accept(&app, &who, &id, via).await
                } else {
                    decline(&app, &who, &id, via)
                };
                let msg = super::refused(&app, result);
                app.cluster.tell_challenge(ChallengeWhat::Reply {
                    to_node: note.node,
                    req,
                    msg,
                });
            });
        }
        ChallengeWhat::Reply { to_node, req, msg } if to_node == *me => {
            app.challenges.answer(&req, Some(msg));
        }
        ChallengeWhat::Gone { origin, id } if origin == *me => {
            if app.challenges.undelivered(&id, &note.node)
                && let Some(p) = app.challenges.take(&id)
            {
                let to = p.to;
                ended(app, &p, "gone", Some(to), None);
            }
        }
        // Forgotten here in any case (the guard takes it out first), and its player told
        // when the origin says so.
        ChallengeWhat::Ended {
            id,
            to,
            reason,
            tell,
            told_on,
        } if app.challenges.unshow(&id).is_some() && tell && told_on.as_ref() != Some(me) => {
            app.challenges
                .tell(to, &LobbyMsg::ChallengeEnded { id, reason });
        }
        _ => {}
    }
}

/// An answer to another node's challenge shown here: it goes to that node, and its reply
/// is the answer.
async fn answer_elsewhere(
    app: &AppState,
    who: &Who,
    id: &str,
    shown: Shown,
    yes: bool,
) -> Result<LobbyMsg, Refusal> {
    if shown.to != who.id {
        return refuse(
            "not_your_challenge",
            "this challenge is not addressed to you",
        );
    }
    let req = crate::auth::random_hex(16);
    let rx = app.challenges.wait(&req);
    app.cluster.tell_challenge(ChallengeWhat::Answer {
        origin: shown.origin,
        req: req.clone(),
        id: id.to_string(),
        who: who.id,
        name: who.name.clone(),
        accept: yes,
    });
    match tokio::time::timeout(REPLY_WAIT, rx).await {
        Ok(Ok(Some(msg))) => {
            app.challenges.unshow(id);
            Ok(msg)
        }
        _ => {
            app.challenges.unwait(&req);
            app.challenges.unshow(id);
            refuse(
                "challenge_not_found",
                format!(
                    "challenge {id:?}: the challenger's server did not answer within {} s \
                     (it may have stopped)",
                    REPLY_WAIT.as_secs()
                ),
            )
        }
    }
}

/// The challenge `id` if it is addressed to `who`.
fn addressed(app: &AppState, who: &Who, id: &str) -> Result<Pending, Refusal> {
    let Some(p) = app.challenges.get(id) else {
        return refuse(
            "challenge_not_found",
            format!("no challenge {id:?} is waiting (answered, cancelled or expired)"),
        );
    };
    if p.to != who.id {
        return refuse(
            "not_your_challenge",
            "this challenge is not addressed to you",
        );
    }
    Ok(p)
}

fn gone(id: &str) -> Refusal {
    Refusal(
        "challenge_not_found",
        format!("challenge {id:?} was answered, cancelled or expired a moment ago"),
    )
}

/// The challenged player's other lobby sockets here, which showed challenge `id` too,
/// learn that it was answered (`accepted` or `declined`) through `via`: it is no longer
/// waiting. The socket that answered got its own answer; when another node relayed the
/// answer, every socket here learns it.
fn answered(app: &AppState, who: &Who, via: Via<'_>, id: &str, reason: &str) {
    let msg = LobbyMsg::ChallengeEnded {
        id: id.to_string(),
        reason: reason.into(),
    };
    match via {
        Via::Socket(conn) => app.challenges.tell_others(who.id, conn, &msg),
        Via::Node(_) => app.challenges.tell(who.id, &msg),
    }
}

/// `challenge_accept` through `via` (a lobby socket here, or relayed by another node): the
/// match starts.
pub(super) async fn accept(
    app: &AppState,
    who: &Who,
    id: &str,
    via: Via<'_>,
) -> Result<LobbyMsg, Refusal> {
    if app.challenges.get(id).is_none()
        && let Some(shown) = app.challenges.shown(id)
    {
        let answer = answer_elsewhere(app, who, id, shown, true).await;
        // The origin's reply may be its refusal, passed on as a message.
        if matches!(answer, Ok(LobbyMsg::ChallengeStarted { .. })) {
            answered(app, who, via, id, "accepted");
        }
        return answer;
    }
    addressed(app, who, id)?;
    let p = app.challenges.take(id).ok_or_else(|| gone(id))?;
    let c = &p.challenge;
    let players = [
        Who {
            id: c.from.id,
            name: c.from.name.clone(),
        },
        who.clone(),
    ];
    let started = start_match(
        app,
        &c.game,
        c.options.clone(),
        usize::from(c.seats),
        c.pace,
        c.rated,
        &players,
        p.bots,
    )
    .await;
    let table = match started {
        Ok(t) => t,
        Err(e) => {
            // Everyone hears it, the answering socket too (beside its error), on every
            // node: a relaying node hears only an error from here.
            ended(app, &p, "failed", None, None);
            return Err(e);
        }
    };
    tracing::info!(%table, "challenge accepted");
    answered(app, who, via, id, "accepted");
    // The other nodes that show it (whether or not their `delivered` note came in yet)
    // forget it, and tell the player's sockets there, but the node that relayed the
    // answer, which tells its own.
    app.cluster.tell_challenge(ChallengeWhat::Ended {
        id: id.to_string(),
        to: p.to,
        reason: "accepted".into(),
        tell: true,
        told_on: via.node(),
    });
    app.challenges.tell_conn(
        c.from.id,
        &p.from_conn,
        LobbyMsg::ChallengeStarted {
            id: id.to_string(),
            table,
            seat: 0,
        },
    );
    Ok(LobbyMsg::ChallengeStarted {
        id: id.to_string(),
        table,
        seat: 1,
    })
}

/// `challenge_decline` from the lobby socket `conn`, of a challenge of this node's or
/// another's shown here.
pub(super) async fn decline_here_or_there(
    app: &AppState,
    who: &Who,
    id: &str,
    conn: &str,
) -> Result<LobbyMsg, Refusal> {
    if app.challenges.get(id).is_none()
        && let Some(shown) = app.challenges.shown(id)
    {
        let answer = answer_elsewhere(app, who, id, shown, false).await;
        if matches!(answer, Ok(LobbyMsg::ChallengeEnded { .. })) {
            answered(app, who, Via::Socket(conn), id, "declined");
        }
        return answer;
    }
    decline(app, who, id, Via::Socket(conn))
}

/// `challenge_decline` through `via` (a lobby socket here, or relayed by another node).
pub(super) fn decline(
    app: &AppState,
    who: &Who,
    id: &str,
    via: Via<'_>,
) -> Result<LobbyMsg, Refusal> {
    addressed(app, who, id)?;
    let p = app.challenges.take(id).ok_or_else(|| gone(id))?;
    ended(app, &p, "declined", Some(who.id), Some(via));
    answered(app, who, via, id, "declined");
    Ok(LobbyMsg::ChallengeEnded {
        id: id.to_string(),
        reason: "declined".into(),
    })
}

/// `challenge_cancel`, from the socket that sent it.
pub(super) fn cancel(app: &AppState, who: &Who, conn: &str, id: &str) -> Result<LobbyMsg, Refusal> {
    let Some(p) = app.challenges.get(id) else {
        return Err(gone(id));
    };
    if p.challenge.from.id != who.id || p.from_conn != conn {
        return refuse(
            "not_your_challenge",
            "only the connection that sent a challenge may cancel it",
        );
    }
    let p = app.challenges.take(id).ok_or_else(|| gone(id))?;
    ended(app, &p, "cancelled", Some(who.id), None);
    Ok(LobbyMsg::ChallengeEnded {
        id: id.to_string(),
        reason: "cancelled".into(),
    })
}

/// Creates and starts a table of `game`: `players` in the first seats, house bots of
/// `level` in the rest; unless `rated`, marked unrated first (its match changes no rating).
#[allow(clippy::too_many_arguments)]
async fn start_match(
    app: &AppState,
    game: &str,
    options: serde_json::Value,
    seats: usize,
    pace: Pace,
    rated: bool,
    players: &[Who],
    level: BotLevel,
) -> Result<Uuid, Refusal> {
    let now = now_ms();
    let first = &players[0];
    let record = TableRecord {
        id: Uuid::new_v4(),
        game: game.to_string(),
        options,
        rules_version: 0,
        seat_count: seats as i32,
        private: false,
        invite_code: None,
        created_by: first.id,
        created_at: now,
        status: TableStatus::Open,
        bots: Some(level.as_str().to_string()),
        daily: None,
        pace: serde_json::to_value(pace).expect("a pace serializes"),
        clock: None,
        updated_at: now,
    };
    let mut occupants: Vec<Occupant> = players
        .iter()
        .map(|w| Occupant::Player {
            id: w.id,
            name: w.name.clone(),
        })
        .collect();
    occupants.resize(
        seats,
        Occupant::Bot {
            level: level.as_str().to_string(),
        },
    );
    if !rated {
        app.store
            .mark_unrated(record.id, now)
            .await
            .map_err(ApiError::from)?;
    }
    let handle = app.core.create(record, occupants).await?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    handle
        .send(Cmd::Start {
            who: first.clone(),
            reply: tx,
        })
        .await?;
    let info = rx.await.map_err(|_| ApiError::Internal)??;
    if matches!(pace, Pace::Live { .. }) {
        for w in players {
            crate::matcher::out_of_queues(app, w.id, info.id).await;
        }
    }
    Ok(info.id)
}
