//! Quick play at work (see `quickplay` for its rules): a socket joins and leaves the queue,
//! and the matcher seats the groups it finds and tells their sockets.

use std::collections::BTreeMap;
use std::sync::Weak;

use protocol::{LobbyMsg, Pace, QueueInfo};
use store::rating::Pool;
use store::{Occupant, QueueEntry, TableRecord, TableStatus};
use uuid::Uuid;

use crate::error::ApiError;
use crate::quickplay::*;
use crate::state::{AppState, Inner, lock, now_ms};
use realtime::table::{Cmd, Who};

/// One waiting socket: registered on join, removed (and its entry with it) on drop.
pub struct Waiting {
    app: AppState,
    pub player: Uuid,
    pub conn: String,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        lock(&self.app.quickplay.waiters).remove(&self.conn);
        let app = self.app.clone();
        let (player, conn) = (self.player, std::mem::take(&mut self.conn));
        // Tracked: a socket that closes as the server stops must not find the store closed.
        let background = app.background.clone();
        background.spawn(async move {
            match app.store.queue_leave(player, &conn).await {
                Ok(_) => app.quickplay.wake.notify_one(),
                Err(e) => tracing::error!(error = %e, "could not take a player out of the queue"),
            }
        });
    }
}

/// `queue_join` from a lobby socket: seats at once (Solitaire, or `bots_now`) and answers
/// `matched`, or puts the player in the queue and answers `queued`. `out` receives what
/// the matcher later has to say to this socket.
pub async fn join(
    app: &AppState,
    who: &Who,
    conn: &str,
    game: &str,
    seats: Option<u8>,
    bots_now: bool,
    out: &realtime::outbox::Sender<LobbyMsg>,
) -> Result<(LobbyMsg, Option<Waiting>), Refusal> {
    let seats = seats_for(game, seats)?;
    // Each join its own key, `SOCKET/n`: the entry a socket's earlier join left behind is
    // deleted in the background (`Waiting`'s drop), and keyed by the socket alone that
    // delete could take the entry of a join sent right after it (a walk's client left and
    // joined again without waiting: told `queued`, it was in no queue).
    let key = format!("{conn}/{}", crate::auth::random_hex(4));
    let conn = key.as_str();
    let entries = app.store.queue_entries().await.map_err(ApiError::from)?;
    if entries.iter().any(|e| e.player_id == who.id) {
        return Err(already_queued());
    }
    // People waiting for people are promised someone who plays: not someone already on
    // a live clock elsewhere (a walk found a player seated at two live matches at once).
    if seats >= 2
        && !bots_now
        && let Some(table) = live_match_of(app, who.id).await?
    {
        return Err(Refusal(
            "in_live_match",
            format!(
                "you are playing a live match (table {table}): finish it before you look for another"
            ),
        ));
    }
    if seats == 1 || bots_now {
        let entry = entry(app, who, conn, game, seats).await?;
        let (table, seat) = seat_group(app, &[entry], seats).await?;
        return Ok((LobbyMsg::Matched { table, seat }, None));
    }
    let e = entry(app, who, conn, game, seats).await?;
    match app.store.queue_join(&e).await {
        Ok(()) => {}
        Err(store::StoreError::Conflict(_)) => return Err(already_queued()),
        Err(e) => return Err(ApiError::from(e).into()),
    }
    lock(&app.quickplay.waiters).insert(conn.to_string(), out.clone());
    let waiting = Waiting {
        app: app.clone(),
        player: who.id,
        conn: conn.to_string(),
    };
    app.quickplay.wake.notify_one();
    let bot_fill_ms = app.config.bot_fill_s * 1000;
    let others: Vec<QueueEntry> = entries
        .into_iter()
        .filter(|o| o.game == game && o.seats == i32::from(seats))
        .collect();
    let expected = seated_in(
        &others,
        &e,
        usize::from(seats),
        e.joined_at,
        bot_fill_ms as i64,
    )
    // Nobody waiting fits them before the bot fill: what others waited lately.
    .unwrap_or_else(|| app.quickplay.recent_wait(game, seats, bot_fill_ms));
    Ok((
        LobbyMsg::Queued {
            game: game.to_string(),
            seats,
            joined_at: e.joined_at,
            expected_wait_ms: expected,
            bot_fill_ms,
        },
        Some(waiting),
    ))
}

/// A table being played with a live clock where `player` holds a seat they have not
/// abandoned, if any.
async fn live_match_of(app: &AppState, player: Uuid) -> Result<Option<Uuid>, Refusal> {
    let tables = app
        .store
        .playing_tables_of(player)
        .await
        .map_err(ApiError::from)?;
    Ok(tables.into_iter().find_map(|(id, pace)| {
        matches!(serde_json::from_value::<Pace>(pace), Ok(Pace::Live { .. })).then_some(id)
    }))
}

/// A live match of `player`'s has started (a challenge accepted): they leave every
/// quick-play queue they wait in, and each of those sockets is told why. A matcher that
/// took them a moment before seats them all the same (its take and this leave are each
/// one statement: whichever comes first wins).
pub async fn out_of_queues(app: &AppState, player: Uuid, table: Uuid) {
    let entries = match app.store.queue_entries().await {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the queues for a player whose match started");
            return;
        }
    };
    for e in entries.into_iter().filter(|e| e.player_id == player) {
        match app.store.queue_leave(player, &e.conn).await {
            Ok(true) => {
                tell(
                    app,
                    &e.conn,
                    LobbyMsg::Error {
                        code: "in_live_match".into(),
                        message: format!(
                            "you left the quick-play queue: your live match at table {table} has started"
                        ),
                        retry_after_ms: None,
                    },
                );
                tell(app, &e.conn, LobbyMsg::QueueLeft {});
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not take a player whose match started out of the queue")
            }
        }
    }
    app.quickplay.wake.notify_one();
}

fn already_queued() -> Refusal {
    Refusal(
        "already_queued",
        "you are waiting in a quick-play queue already, from another tab or device: leave it there (or close that tab) first"
            .into(),
    )
}

/// A queue entry for `who` now, with their rating in the pool.
async fn entry(
    app: &AppState,
    who: &Who,
    conn: &str,
    game: &str,
    seats: u8,
) -> Result<QueueEntry, Refusal> {
    let rating = match Pool::for_people(usize::from(seats)) {
        Some(pool) => app
            .store
            .player_ratings(who.id)
            .await
            .map_err(ApiError::from)?
            .into_iter()
            .find(|r| r.game == game && r.pool == pool)
            .map_or(0.0, |r| scaled(pool, r.rating.mu)),
        None => 0.0,
    };
    Ok(QueueEntry {
        player_id: who.id,
        name: who.name.clone(),
        game: game.to_string(),
        seats: i32::from(seats),
        rating,
        conn: conn.to_string(),
        joined_at: now_ms(),
    })
}

/// Creates and starts a table of `group`'s game with its people in the first seats and
/// bots in the rest; the table's id and each person's seat is their index.
async fn seat_group(
    app: &AppState,
    group: &[QueueEntry],
    seats: u8,
) -> Result<(Uuid, u8), Refusal> {
    let first = &group[0];
    let options = games::check_options(&first.game, &serde_json::Value::Null, usize::from(seats))
        .map_err(|e| Refusal(e.code(), e.to_string()))?;
    let now = now_ms();
    let pace = if group.len() >= 2 {
        PACE
    } else {
        Pace::Untimed
    };
    let record = TableRecord {
        id: Uuid::new_v4(),
        game: first.game.clone(),
        options,
        rules_version: 0,
        seat_count: i32::from(seats),
        private: false,
        invite_code: None,
        created_by: first.player_id,
        created_at: now,
        status: TableStatus::Open,
        bots: Some(FILL_BOTS.as_str().to_string()),
        daily: None,
        pace: serde_json::to_value(pace).expect("a pace serializes"),
        clock: None,
        updated_at: now,
    };
    let mut occupants: Vec<Occupant> = group
        .iter()
        .map(|e| Occupant::Player {
            id: e.player_id,
            name: e.name.clone(),
        })
        .collect();
    occupants.resize(
        usize::from(seats),
        Occupant::Bot {
            level: FILL_BOTS.as_str().to_string(),
        },
    );
    let handle = app.core.create(record, occupants).await?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    handle
        .send(Cmd::Start {
            who: Who {
                id: first.player_id,
                name: first.name.clone(),
            },
            reply: tx,
        })
        .await?;
    let info = rx.await.map_err(|_| ApiError::Internal)??;
    app.quickplay
        .seated
        .fetch_add(group.len() as u64, std::sync::atomic::Ordering::Relaxed);
    tracing::info!(table = %info.id, people = group.len(), "quick play seated");
    Ok((info.id, 0))
}

/// `queue_leave` from the socket that holds `waiting`.
pub async fn leave(app: &AppState, waiting: Option<Waiting>) -> Result<LobbyMsg, Refusal> {
    let Some(w) = waiting else {
        return Err(Refusal(
            "not_queued",
            "this connection is not waiting in a quick-play queue (a queue joined from another tab is left from that tab)".into(),
        ));
    };
    // Dropping it takes the entry out; do it now so the answer is true when sent.
    let gone = app
        .store
        .queue_leave(w.player, &w.conn)
        .await
        .map_err(ApiError::from)?;
    drop(w);
    if !gone {
        // Seated a moment ago: the `matched` note is on its way.
        return Err(Refusal(
            "not_queued",
            "you are no longer in the queue: a table was just found".into(),
        ));
    }
    Ok(LobbyMsg::QueueLeft {})
}

/// Starts the matcher: every [`TICK`], or when woken, it reads the queues, publishes their
/// counts and seats the groups [`plan`] finds. It ends with the server.
pub fn spawn_matcher(app: &AppState) {
    let weak: Weak<Inner> = std::sync::Arc::downgrade(&app.0);
    let mut shutdown = app.shutdown.subscribe();
    app.background.spawn(async move {
        loop {
            let Some(inner) = weak.upgrade() else { break };
            let app = AppState(inner);
            if let Err(e) = match_once(&app).await {
                tracing::error!(error = %e, "quick-play matcher");
            }
            tokio::select! {
                _ = app.quickplay.wake.notified() => {}
                _ = tokio::time::sleep(TICK) => {}
                _ = crate::state::stopping(&mut shutdown) => break,
            }
        }
    });
}

/// The key of the matcher's cluster-wide lock (an advisory lock on Postgres): one node's
/// matcher makes a pass at a time, and when its node dies the lock goes with its
/// connection, so another node's next pass takes over.
const MATCHER_LOCK: i64 = 0x0F1B_0001;

/// Tells a waiting socket, on this node or (through the database) on the one it is on.
fn tell(app: &AppState, conn: &str, msg: LobbyMsg) {
    if !app.quickplay.tell(conn, msg.clone()) {
        app.cluster.tell_elsewhere(crate::node::QuickNote {
            conn: conn.to_string(),
            msg,
        });
    }
}

/// One pass of the matcher: every node publishes the queue counts to its own lobby
/// sockets; the node holding the matcher's lock also seats groups.
pub async fn match_once(app: &AppState) -> Result<(), store::StoreError> {
    // A draining node seats nobody (its tables are being handed over).
    let lock = if app.core.draining() {
        None
    } else {
        app.store.try_exclusive(MATCHER_LOCK).await?
    };
    let Some(_matcher) = lock else {
        let entries = app.store.queue_entries().await?;
        publish_counts(app, &entries);
        return Ok(());
    };
    let entries = app.store.queue_entries().await?;
    let now = now_ms();
    let bot_fill_ms = (app.config.bot_fill_s * 1000) as i64;
    let mut pools: BTreeMap<(String, u8), Vec<QueueEntry>> = BTreeMap::new();
    for e in entries {
        let seats = u8::try_from(e.seats).unwrap_or(u8::MAX);
        pools.entry((e.game.clone(), seats)).or_default().push(e);
    }
    let mut seated_any = false;
    for ((game, seats), list) in &pools {
        for group in plan(list, usize::from(*seats), now, bot_fill_ms) {
            let group: Vec<QueueEntry> = group.iter().map(|&i| list[i].clone()).collect();
            let keys: Vec<(Uuid, String)> = group
                .iter()
                .map(|e| (e.player_id, e.conn.clone()))
                .collect();
            // Someone left, or another matcher took them: the next pass sees the rest.
            if !app.store.queue_take(&keys).await? {
                continue;
            }
            seated_any = true;
            match seat_group(app, &group, *seats).await {
                Ok((table, _)) => {
                    for (seat, e) in group.iter().enumerate() {
                        app.quickplay
                            .note_wait(game, *seats, (now - e.joined_at).max(0) as u64);
                        tell(
                            app,
                            &e.conn,
                            LobbyMsg::Matched {
                                table,
                                seat: seat as u8,
                            },
                        );
                    }
                }
                Err(Refusal(code, message)) => {
                    tracing::error!(code, message, "quick play could not start a table");
                    for e in &group {
                        tell(
                            app,
                            &e.conn,
                            LobbyMsg::Error {
                                code: "internal".into(),
                                message: "the table could not start; you left the queue: \
                                          try again"
                                    .into(),
                                retry_after_ms: None,
                            },
                        );
                        tell(app, &e.conn, LobbyMsg::QueueLeft {});
                    }
                }
            }
        }
    }
    let entries = if seated_any {
        app.store.queue_entries().await?
    } else {
        pools.into_values().flatten().collect()
    };
    publish_counts(app, &entries);
    Ok(())
}

/// Every pool that quick play offers, with how many wait in it now.
fn publish_counts(app: &AppState, entries: &[QueueEntry]) {
    let bot_fill_ms = app.config.bot_fill_s * 1000;
    let mut out = Vec::new();
    for g in games::catalogue() {
        for seats in g.min_players.max(2)..=g.max_players {
            let seats = seats as u8;
            let waiting = entries
                .iter()
                .filter(|e| e.game == g.kind && e.seats == i32::from(seats))
                .count() as u32;
            out.push(QueueInfo {
                game: g.kind.to_string(),
                seats,
                waiting,
                expected_wait_ms: app
                    .quickplay
                    .expected_wait(g.kind, seats, waiting, bot_fill_ms),
            });
        }
    }
    app.quickplay.counts.send_if_modified(|old| {
        if *old == out {
            false
        } else {
            *old = out;
            true
        }
    });
}
