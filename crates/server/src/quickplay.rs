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

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use protocol::{BotLevel, LobbyMsg, Pace, QueueInfo};
use store::QueueEntry;
use store::rating::Pool;
use tokio::sync::{Notify, watch};

use crate::error::ApiError;
use realtime::lock;

/// How often the matcher looks at the queues when nothing wakes it.
pub const TICK: Duration = Duration::from_millis(500);

/// The rating window of someone who just joined, in starting deviations (≈ 105 Glicko-2
/// points).
pub const WINDOW_START: f64 = 0.3;

/// How much the window widens a second of waiting (≈ 17.5 Glicko-2 points).
pub const WINDOW_WIDENS: f64 = 0.05;

/// Waits remembered per pool for the expected wait.
pub(crate) const RECENT_WAITS: usize = 20;

/// The level of the bots that fill seats.
pub const FILL_BOTS: BotLevel = BotLevel::Normal;

/// The pace of a quick-play table with two people or more: strangers need a clock, or one
/// who walks away holds everybody (with bots only, the player plays untimed).
pub const PACE: Pace = Pace::Live {
    move_s: 30,
    bank_s: 300,
};

/// What a lobby socket needs to be told, keyed by its connection id.
pub(crate) type Waiters = HashMap<String, realtime::outbox::Sender<LobbyMsg>>;

/// The process's side of quick play (in `AppState`).
pub struct QuickPlay {
    /// The sockets of this process that wait in a queue.
    pub(crate) waiters: Mutex<Waiters>,
    /// Wakes the matcher (someone joined or left).
    pub(crate) wake: Notify,
    /// Every queue with its count and expected wait, for the lobby.
    pub(crate) counts: watch::Sender<Vec<QueueInfo>>,
    /// Recent waits (ms) per pool, newest last.
    pub(crate) recent: Mutex<HashMap<(String, u8), VecDeque<u64>>>,
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

    /// About how long someone joining `(game, seats)` now waits, in ms, their rating
    /// unknown (the lobby's counts; a player who joins is told [`seated_in`]'s figure
    /// where it has one).
    pub(crate) fn expected_wait(
        &self,
        game: &str,
        seats: u8,
        waiting: u32,
        bot_fill_ms: u64,
    ) -> u64 {
        if seats <= 1 || waiting + 1 >= u32::from(seats) {
            // Enough people wait already: the next tick seats them (if ratings allow).
            return TICK.as_millis() as u64;
        }
        self.recent_wait(game, seats, bot_fill_ms)
    }

    /// The median of the pool's recent waits, at most the bot fill (the bot fill when
    /// there are none).
    pub(crate) fn recent_wait(&self, game: &str, seats: u8, bot_fill_ms: u64) -> u64 {
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

    pub(crate) fn note_wait(&self, game: &str, seats: u8, ms: u64) {
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
        Pool::Multi | Pool::Bots => (mu - 25.0) / (25.0 / 3.0),
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

/// The most passes [`seated_in`] plays forward (two minutes of [`TICK`]s), and the most
/// others it plays them with: it runs on a join, and `--bot-fill-s` may be an hour.
const ESTIMATE_PASSES: i64 = 240;
const ESTIMATE_OTHERS: usize = 128;

/// How long `me`, who has just joined a pool where `others` wait (oldest first), waits to
/// be seated with people if nobody else comes or goes: the matcher's passes are played
/// forward, each [`TICK`], with the windows widening as they do. `None` if only the bot
/// fill would seat them, or not within [`ESTIMATE_PASSES`], or the pool is larger than
/// [`ESTIMATE_OTHERS`] (the caller then says what others waited lately). Telling everyone
/// "under a second" once enough people waited, whatever their ratings, was the walk's
/// complaint: a player 1.5 apart waited 24 s.
pub fn seated_in(
    others: &[QueueEntry],
    me: &QueueEntry,
    seats: usize,
    now: i64,
    bot_fill_ms: i64,
) -> Option<u64> {
    if others.len() > ESTIMATE_OTHERS {
        return None;
    }
    let step = TICK.as_millis() as i64;
    let mut left: Vec<QueueEntry> = others.to_vec();
    left.push(me.clone());
    let mut t = 0;
    while t < bot_fill_ms.min(ESTIMATE_PASSES * step) {
        let groups = plan(&left, seats, now + t, bot_fill_ms);
        let mine = left.len() - 1;
        if let Some(g) = groups.iter().find(|g| g.contains(&mine)) {
            return (g.len() >= 2).then_some(t.max(step) as u64);
        }
        // Those seated at this pass are gone from the queue; `me` stays last.
        let seated: std::collections::HashSet<usize> = groups.into_iter().flatten().collect();
        left = left
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !seated.contains(i))
            .map(|(_, e)| e)
            .collect();
        t += step;
    }
    None
}

/// The seat counts a game's quick play offers, and the one it picks when none is asked.
pub(crate) fn seats_for(game: &str, asked: Option<u8>) -> Result<u8, Refusal> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    pub(crate) fn e(rating: f64, joined_at: i64) -> QueueEntry {
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

    /// The wait a player is told on joining is the matcher's passes played forward: at
    /// once beside someone of their rating; later the further apart they are (the windows
    /// widen 0.05 a second from 0.3 each, the narrower counts); only bots, `None`.
    #[test]
    fn the_wait_told_on_joining_follows_the_ratings() {
        let fill = 30_000;
        let now = 100_000;
        let near = [e(0.0, now - 1000)];
        assert_eq!(seated_in(&near, &e(0.1, now), 2, now, fill), Some(500));
        // 1.5 apart: 0.3 + 0.05 t ≥ 1.5 for the newcomer (the narrower window): t = 24 s.
        let far = [e(0.0, now - 1000)];
        assert_eq!(seated_in(&far, &e(1.5, now), 2, now, fill), Some(24_000));
        // 2.0 apart would take 34 s: the bot fill comes first.
        assert_eq!(seated_in(&[e(0.0, now)], &e(2.0, now), 2, now, fill), None);
        // The one who waited longest is filled with bots at 30 s, before the newcomer fits.
        let old = [e(0.0, now - 29_000)];
        assert_eq!(seated_in(&old, &e(1.5, now), 2, now, fill), None);
        // Nobody: only bots.
        assert_eq!(seated_in(&[], &e(0.0, now), 2, now, fill), None);
        // A long bot fill is played forward two minutes at most: 8.0 apart would take
        // 154 s.
        assert_eq!(
            seated_in(&[e(0.0, now)], &e(8.0, now), 2, now, 3_600_000),
            None
        );
        assert_eq!(
            seated_in(&[e(0.0, now)], &e(5.0, now), 2, now, 3_600_000),
            Some(94_000)
        );
        // A crowded pool is not played forward at all.
        let crowd: Vec<_> = (0..=ESTIMATE_OTHERS).map(|_| e(0.0, now)).collect();
        assert_eq!(seated_in(&crowd, &e(0.0, now), 2, now, fill), None);
        // Three seats: every two must fit. The two who wait are 0.5 apart, which their
        // windows reach 4 s after they joined, 3.5 s from now.
        let two = [e(0.0, now - 500), e(0.5, now - 500)];
        assert_eq!(seated_in(&two, &e(0.25, now), 3, now, fill), Some(3500));
    }

    #[test]
    pub(crate) fn close_ratings_pair_at_once() {
        let q = [e(0.0, 0), e(0.2, 10)];
        assert_eq!(plan(&q, 2, 10, 30_000), vec![vec![0, 1]]);
    }

    #[test]
    pub(crate) fn far_ratings_wait_until_the_window_widens() {
        // 1.0 apart: windows are 0.3 + 0.05/s, so they meet after 14 s of waiting.
        let q = [e(0.0, 0), e(1.0, 0)];
        assert!(plan(&q, 2, 10_000, 60_000).is_empty());
        assert_eq!(plan(&q, 2, 14_000, 60_000), vec![vec![0, 1]]);
    }

    #[test]
    pub(crate) fn the_narrower_window_counts() {
        // The old-timer's window is wide, the newcomer's is not yet.
        let q = [e(0.0, 0), e(0.9, 19_000)];
        assert!(plan(&q, 2, 20_000, 60_000).is_empty());
    }

    #[test]
    pub(crate) fn the_closest_are_chosen() {
        let q = [e(0.0, 0), e(0.25, 0), e(0.05, 0)];
        assert_eq!(plan(&q, 2, 0, 30_000), vec![vec![0, 2]]);
    }

    #[test]
    pub(crate) fn bots_fill_after_the_wait_with_whoever_fits() {
        let q = [e(0.0, 0), e(0.1, 20_000), e(5.0, 25_000)];
        assert!(plan(&q, 4, 29_999, 30_000).is_empty());
        // At 30 s the first fills with the one in its window; the far one waits on.
        assert_eq!(plan(&q, 4, 30_000, 30_000), vec![vec![0, 1]]);
    }

    #[test]
    pub(crate) fn every_pair_of_a_group_fits() {
        // 0 and 2 both fit the anchor 1 but not each other.
        let q = [e(-0.25, 0), e(0.0, 0), e(0.25, 0)];
        let groups = plan(&q, 3, 0, 30_000);
        assert!(groups.is_empty(), "{groups:?}");
    }

    #[test]
    pub(crate) fn nobody_is_in_two_groups() {
        let q: Vec<QueueEntry> = (0..9).map(|i| e(f64::from(i) * 0.01, 0)).collect();
        let groups = plan(&q, 2, 0, 30_000);
        assert_eq!(groups.len(), 4);
        let mut all: Vec<usize> = groups.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 8);
    }

    #[test]
    pub(crate) fn scales_meet() {
        assert_eq!(scaled(Pool::Duel, 1500.0), 0.0);
        assert_eq!(scaled(Pool::Multi, 25.0), 0.0);
        assert!((scaled(Pool::Duel, 1850.0) - 1.0).abs() < 1e-12);
        assert!((scaled(Pool::Multi, 25.0 + 25.0 / 3.0) - 1.0).abs() < 1e-12);
    }
}
