//! Direct challenges on the lobby socket (docs/protocol.md §4.2): a signed-in socket
//! challenges a player online in this node's lobby (a person or a bot account), or a
//! house bot (`house:easy|normal|hard`, accepted at once). The challenged player's sockets
//! are told; one of them accepts or declines; the challenger may cancel; it expires after
//! `--challenge-expiry-s` (60 s) or when either side's socket closes. On accept a table is created with
//! the challenger in seat 0, the challenged in seat 1 (house bots in any further seat),
//! and started; both sides are told its id.

use protocol::{BotLevel, Challenge, LobbyMsg, Pace, PlayerInfo};
use realtime::table::{Cmd, Who};
use store::{Occupant, TableRecord, TableStatus};
use uuid::Uuid;

use crate::challenges::{MAX_SENT, Pending};
use crate::error::ApiError;
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
    if !ask.rated {
        return refuse(
            "unrated_not_supported",
            "every match here is rated by its seats (docs/ratings.md): send rated true or \
             leave it out",
        );
    }
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
        .map_err(|e| Refusal("bad_options", format!("{e:?}")))?;
    ask.pace
        .validate()
        .map_err(|e| Refusal("bad_pace", e.to_string()))?;
    let bots = ask.bots.unwrap_or(BotLevel::Normal);
    let id = crate::auth::random_hex(16);
    if let Some(level) = house {
        let players = [who.clone()];
        let table = start_match(app, &ask.game, options, seats, ask.pace, &players, level).await?;
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
    if !app.challenges.online(to) {
        return refuse(
            "player_offline",
            format!(
                "player {to} has no signed-in lobby socket on this server: challenges reach \
                 only players in the lobby"
            ),
        );
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
        rated: true,
        expires_at: now_ms() + 1000 * app.config.challenge_expiry_s as i64,
    };
    let pending = Pending {
        challenge: challenge.clone(),
        from_conn: conn.to_string(),
        to,
        bots,
    };
    if app.challenges.insert(pending).is_err() {
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
    // It expires unless answered first (whoever takes it out answers it).
    let app2 = app.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(
            app2.config.challenge_expiry_s,
        ))
        .await;
        if let Some(p) = app2.challenges.take(&id) {
            ended(&app2, &p, "expired", None);
        }
    });
    Ok(LobbyMsg::ChallengeSent { challenge })
}

/// Tells both sides (but `except` the one answering) that `p` ended for `reason`.
fn ended(app: &AppState, p: &Pending, reason: &str, except: Option<Uuid>) {
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
}

/// Every challenge that ended because a socket closed: the other side is told `gone`.
pub(super) fn socket_gone(app: &AppState, player: Uuid, conn: &str) {
    for p in app.challenges.socket_gone(player, conn) {
        ended(app, &p, "gone", Some(player));
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

/// `challenge_accept`: the match starts.
pub(super) async fn accept(app: &AppState, who: &Who, id: &str) -> Result<LobbyMsg, Refusal> {
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
        &players,
        p.bots,
    )
    .await;
    let table = match started {
        Ok(t) => t,
        Err(e) => {
            ended(app, &p, "failed", Some(who.id));
            return Err(e);
        }
    };
    tracing::info!(%table, "challenge accepted");
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

/// `challenge_decline`.
pub(super) fn decline(app: &AppState, who: &Who, id: &str) -> Result<LobbyMsg, Refusal> {
    addressed(app, who, id)?;
    let p = app.challenges.take(id).ok_or_else(|| gone(id))?;
    ended(app, &p, "declined", Some(who.id));
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
    ended(app, &p, "cancelled", Some(who.id));
    Ok(LobbyMsg::ChallengeEnded {
        id: id.to_string(),
        reason: "cancelled".into(),
    })
}

/// Creates and starts a table of `game`: `players` in the first seats, house bots of
/// `level` in the rest.
async fn start_match(
    app: &AppState,
    game: &str,
    options: serde_json::Value,
    seats: usize,
    pace: Pace,
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
    let handle = app.core.create(record, occupants).await?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    handle
        .send(Cmd::Start {
            who: first.clone(),
            reply: tx,
        })
        .await?;
    let info = rx.await.map_err(|_| ApiError::Internal)??;
    Ok(info.id)
}
