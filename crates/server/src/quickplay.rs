//! Quick play: "play now" puts a signed-in player in the queue of a game and a number of
//! seats (a pool); a matcher seats players of close rating together, widening the window
//! the longer they wait, and after `--bot-fill-s` (default 30 s) seats whoever waits with
//! bots in the empty seats. "Play bots now" starts such a table at once.
//!
//! The queues live in the database (`queue_entries`, migration 0011), not in this
//! process: the matcher reads them, and takes the entries of a group out in one
//! transaction that removes all of them or none ([`store::Store::queue_take`]). A player
//! has one entry at most (the primary key), and an entry taken cannot be taken again, so
//! no request, however it races others or another matcher, seats a player twice. Several
//! servers on one Postgres can share the queues; what stays per process is the waiting
//! socket (told `matched` through [`QuickPlay::waiters`]) and the estimate of the wait.
//!
//! Ratings compare on one scale across both systems: the distance from the starting
//! rating in starting deviations (Glicko-2: (r − 1500) / 350; Weng-Lin: (μ − 25) / (25/3)).
//! A group is within the window when every two of its people are within the narrower of
//! their two windows; a window is [`WINDOW_START`] plus [`WINDOW_WIDENS`] a second of
//! waiting.
//!
//! A waiting socket leaves the queue when it closes, asks to, or its player is seated.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, Weak};
use std::time::Duration;

use protocol::{BotLevel, LobbyMsg, Pace, QueueInfo};
use store::rating::Pool;
use store::{Occupant, QueueEntry, TableRecord, TableStatus};
use tokio::sync::{Notify, watch};
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::{AppState, Inner, lock, now_ms};
use crate::table::{Cmd, Who};

/// How often the matcher looks at the queues when nothing wakes it.
pub const TICK: Duration = Duration::from_millis(500);
/// The rating window of someone who just joined, in starting deviations (≈ 105 Glicko-2
/// points).
pub const WINDOW_START: f64 = 0.3;
/// How much the window widens a second of waiting (≈ 17.5 Glicko-2 points).
pub const WINDOW_WIDENS: f64 = 0.05;
/// Waits remembered per pool for the expected wait.
const RECENT_WAITS: usize = 20;
/// The level of the bots that fill seats.
pub const FILL_BOTS: BotLevel = BotLevel::Normal;
/// The pace of a quick-play table with two people or more: strangers need a clock, or one
/// who walks away holds everybody (with bots only, the player plays untimed).
pub const PACE: Pace = Pace::Live {
    move_s: 30,
    bank_s: 300,
};

/// What a lobby socket needs to be told, keyed by its connection id.
type Waiters = HashMap<String, crate::outbox::Sender<LobbyMsg>>;

/// The process's side of quick play (in `AppState`).
pub struct QuickPlay {
    /// The sockets of this process that wait in a queue.
    waiters: Mutex<Waiters>,
    /// Wakes the matcher (someone joined or left).
    wake: Notify,
    /// Every queue with its count and expected wait, for the lobby.
    counts: watch::Sender<Vec<QueueInfo>>,
    /// Recent waits (ms) per pool, newest last.
    recent: Mutex<HashMap<(String, u8), VecDeque<u64>>>,
    /// Players seated by quick play, and the matches made (for tests and /metrics).
    pub seated: std::sync::atomic::AtomicU64,
}

impl Default for QuickPlay {
    fn default() -> Self {
        QuickPlay {
            waiters: Mutex::default(),
            wake: Notify::new(),
            counts: watch::channel(Vec::new()).0,
            recent: Mutex::default(),
            seated: Default::default(),
        }
    }
}

impl QuickPlay {
    /// The current queue counts; changes come on the receiver.
    pub fn counts(&self) -> watch::Receiver<Vec<QueueInfo>> {
        self.counts.subscribe()
    }

    /// About how long someone joining `(game, seats)` now waits, in ms.
    fn expected_wait(&self, game: &str, seats: u8, waiting: u32, bot_fill_ms: u64) -> u64 {
        if seats <= 1 || waiting + 1 >= u32::from(seats) {
            // Enough people wait already: the next tick seats them (if ratings allow).
            return TICK.as_millis() as u64;
        }
        let recent = lock(&self.recent);
        match recent.get(&(game.to_string(), seats)) {
            Some(w) if !w.is_empty() => {
                let mut v: Vec<u64> = w.iter().copied().collect();
                v.sort_unstable();
                v[v.len() / 2].min(bot_fill_ms)
            }
            _ => bot_fill_ms,
        }
    }

    fn note_wait(&self, game: &str, seats: u8, ms: u64) {
        let mut recent = lock(&self.recent);
        let w = recent.entry((game.to_string(), seats)).or_default();
        w.push_back(ms);
        if w.len() > RECENT_WAITS {
            w.pop_front();
        }
    }

    /// Tells a waiting socket of this node; `false` if none here has that id.
    pub fn tell(&self, conn: &str, msg: LobbyMsg) -> bool {
        if let Some(tx) = lock(&self.waiters).get(conn) {
            // The socket's queue is bounded; a socket that does not read loses the note
            // (its page still finds the table in "my matches").
            let _ = tx.try_send(msg);
            return true;
        }
        false
    }
}

/// Why a `queue_join` was refused: a lobby `error` with this code.
#[derive(Debug)]
pub struct Refusal(pub &'static str, pub String);

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal(e.code(), e.to_string())
    }
}

impl From<realtime::TableError> for Refusal {
    fn from(e: realtime::TableError) -> Self {
        ApiError::from(e).into()
    }
}

/// A rating on the common scale: distance from the start in starting deviations.
pub fn scaled(pool: Pool, mu: f64) -> f64 {
    match pool {
        Pool::Duel => (mu - 1500.0) / 350.0,
        Pool::Multi => (mu - 25.0) / (25.0 / 3.0),
    }
}

/// The window of someone who has waited `waited_ms`.
pub fn window(waited_ms: i64) -> f64 {
    WINDOW_START + WINDOW_WIDENS * (waited_ms.max(0) as f64 / 1000.0)
}

/// Who waits in one pool, oldest first, and which groups to seat now: each group is
/// indexes into `entries` plus whether bots fill the rest. Pure, for tests.
pub fn plan(entries: &[QueueEntry], seats: usize, now: i64, bot_fill_ms: i64) -> Vec<Vec<usize>> {
    let mut used = vec![false; entries.len()];
    let mut groups = Vec::new();
    let fits = |a: &QueueEntry, b: &QueueEntry| {
        let w = window(now - a.joined_at).min(window(now - b.joined_at));
        (a.rating - b.rating).abs() <= w
    };
    for anchor in 0..entries.len() {
        if used[anchor] {
            continue;
        }
        // Others within the anchor's window, closest rating first, each also within the
        // windows of those already picked.
        let a = &entries[anchor];
        let mut candidates: Vec<usize> = (0..entries.len())
            .filter(|&i| i != anchor && !used[i] && fits(a, &entries[i]))
            .collect();
        candidates.sort_by(|&i, &j| {
            let (di, dj) = (
                (entries[i].rating - a.rating).abs(),
                (entries[j].rating - a.rating).abs(),
            );
            di.total_cmp(&dj).then(i.cmp(&j))
        });
        let mut group = vec![anchor];
        for c in candidates {
            if group.len() == seats {
                break;
            }
            if group.iter().all(|&g| fits(&entries[g], &entries[c])) {
                group.push(c);
            }
        }
        let full = group.len() == seats;
        let fill = now - a.joined_at >= bot_fill_ms;
        if full || fill {
            for &g in &group {
                used[g] = true;
            }
            groups.push(group);
        }
    }
    groups
}

/// The seat counts a game's quick play offers, and the one it picks when none is asked.
fn seats_for(game: &str, asked: Option<u8>) -> Result<u8, Refusal> {
    let info = games::catalogue()
        .into_iter()
        .find(|g| g.kind == game)
        .ok_or_else(|| {
            Refusal(
                "unknown_game",
                format!("there is no game {game:?}; see GET /api/games"),
            )
        })?;
    let seats = asked.map_or(info.min_players, usize::from);
    if !(info.min_players..=info.max_players).contains(&seats) {
        return Err(Refusal(
            "bad_player_count",
            format!(
                "{} is played by {} to {} players, not {seats}",
                info.title, info.min_players, info.max_players
            ),
        ));
    }
    Ok(seats as u8)
}

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
    out: &crate::outbox::Sender<LobbyMsg>,
) -> Result<(LobbyMsg, Option<Waiting>), Refusal> {
    let seats = seats_for(game, seats)?;
    let queued = app
        .store
        .queue_entries()
        .await
        .map_err(ApiError::from)?
        .into_iter()
        .any(|e| e.player_id == who.id);
    if queued {
        return Err(already_queued());
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
    let now_waiting = app
        .quickplay
        .counts
        .borrow()
        .iter()
        .find(|q| q.game == game && q.seats == seats)
        .map_or(0, |q| q.waiting);
    let expected = app
        .quickplay
        .expected_wait(game, seats, now_waiting, bot_fill_ms);
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

fn already_queued() -> Refusal {
    Refusal(
        "already_queued",
        "you are waiting in a quick-play queue already (maybe in another tab): leave it first"
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
        .map_err(|e| Refusal("bad_options", format!("{e:?}")))?;
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
            "this connection is not waiting in a quick-play queue".into(),
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
        app.cluster.tell_elsewhere(crate::cluster::QuickNote {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn e(rating: f64, joined_at: i64) -> QueueEntry {
        QueueEntry {
            player_id: Uuid::new_v4(),
            name: "p".into(),
            game: "trump".into(),
            seats: 2,
            rating,
            conn: "c".into(),
            joined_at,
        }
    }

    #[test]
    fn close_ratings_pair_at_once() {
        let q = [e(0.0, 0), e(0.2, 10)];
        assert_eq!(plan(&q, 2, 10, 30_000), vec![vec![0, 1]]);
    }

    #[test]
    fn far_ratings_wait_until_the_window_widens() {
        // 1.0 apart: windows are 0.3 + 0.05/s, so they meet after 14 s of waiting.
        let q = [e(0.0, 0), e(1.0, 0)];
        assert!(plan(&q, 2, 10_000, 60_000).is_empty());
        assert_eq!(plan(&q, 2, 14_000, 60_000), vec![vec![0, 1]]);
    }

    #[test]
    fn the_narrower_window_counts() {
        // The old-timer's window is wide, the newcomer's is not yet.
        let q = [e(0.0, 0), e(0.9, 19_000)];
        assert!(plan(&q, 2, 20_000, 60_000).is_empty());
    }

    #[test]
    fn the_closest_are_chosen() {
        let q = [e(0.0, 0), e(0.25, 0), e(0.05, 0)];
        assert_eq!(plan(&q, 2, 0, 30_000), vec![vec![0, 2]]);
    }

    #[test]
    fn bots_fill_after_the_wait_with_whoever_fits() {
        let q = [e(0.0, 0), e(0.1, 20_000), e(5.0, 25_000)];
        assert!(plan(&q, 4, 29_999, 30_000).is_empty());
        // At 30 s the first fills with the one in its window; the far one waits on.
        assert_eq!(plan(&q, 4, 30_000, 30_000), vec![vec![0, 1]]);
    }

    #[test]
    fn every_pair_of_a_group_fits() {
        // 0 and 2 both fit the anchor 1 but not each other.
        let q = [e(-0.25, 0), e(0.0, 0), e(0.25, 0)];
        let groups = plan(&q, 3, 0, 30_000);
        assert!(groups.is_empty(), "{groups:?}");
    }

    #[test]
    fn nobody_is_in_two_groups() {
        let q: Vec<QueueEntry> = (0..9).map(|i| e(f64::from(i) * 0.01, 0)).collect();
        let groups = plan(&q, 2, 0, 30_000);
        assert_eq!(groups.len(), 4);
        let mut all: Vec<usize> = groups.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 8);
    }

    #[test]
    fn scales_meet() {
        assert_eq!(scaled(Pool::Duel, 1500.0), 0.0);
        assert_eq!(scaled(Pool::Multi, 25.0), 0.0);
        assert!((scaled(Pool::Duel, 1850.0) - 1.0).abs() < 1e-12);
        assert!((scaled(Pool::Multi, 25.0 + 25.0 / 3.0) - 1.0).abs() < 1e-12);
    }
}
