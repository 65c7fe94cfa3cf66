//! The simulator: plays seeded matches between bot levels and sums them up. A match is
//! fully determined by its number (deal seeds and bot seeds derive from it) as long as the
//! hard bot's budget has no time limit, so a list of match numbers gives the same table
//! on any machine with any number of threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use game_core::{Phase, Seed, Viewer};

use crate::{BotGame, Budget, Level, decide, decide_off_turn};

/// What one match came to.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchResult {
    /// Level of each seat.
    pub levels: Vec<Level>,
    pub winners: Vec<usize>,
    pub scores: Vec<i64>,
    /// Actions applied in the whole match.
    pub actions: u64,
    /// Of those, moves made by a bot while another seat was on turn.
    pub off_turn: u64,
    pub rounds: u32,
}

/// The deal seed of round `round` of match `game`.
pub fn deal_seed(game: u64, round: u32) -> Seed {
    let mut b = [0u8; 32];
    b[..8].copy_from_slice(&game.to_le_bytes());
    b[8..12].copy_from_slice(&round.to_le_bytes());
    b[12..16].copy_from_slice(b"deal");
    Seed(b)
}

/// Plays one match with `levels[s]` in seat `s`. An illegal bot move is an error (it
/// would be a bug: bots only choose among the view's legal actions).
pub fn play_match<G: BotGame>(
    options: &G::Options,
    levels: &[Level],
    game: u64,
    budget: Budget,
) -> Result<MatchResult, String> {
    let mut g = G::new_match(options, levels.len()).map_err(|e| e.to_string())?;
    let mut actions = 0u64;
    let mut off_turn = 0u64;
    loop {
        match g.phase() {
            Phase::Finished => break,
            Phase::AwaitingRound => {
                g.start_round(&deal_seed(game, g.round() + 1))
                    .map_err(|e| e.to_string())?;
            }
            Phase::Playing => {
                let seat = *g.to_act().first().ok_or("nobody to act while playing")?;
                let view = g.view_for(Viewer::Player(seat));
                let seed = game
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add(actions);
                let a = decide::<G>(&view, levels[seat], seed, budget)
                    .ok_or_else(|| format!("seat {seat} has no legal move"))?;
                g.apply(seat, &a)
                    .map_err(|e| format!("game {game}: illegal bot move {a:?}: {e}"))?;
                actions += 1;
                // The turn has passed: the bot may rearrange off turn before the
                // next seat acts, as it would on the server.
                while g.phase() == Phase::Playing && !g.to_act().contains(&seat) {
                    let view = g.view_for(Viewer::Player(seat));
                    let Some(a) = decide_off_turn::<G>(&view, levels[seat]) else {
                        break;
                    };
                    g.apply(seat, &a).map_err(|e| {
                        format!("game {game}: illegal off-turn bot move {a:?}: {e}")
                    })?;
                    actions += 1;
                    off_turn += 1;
                    if off_turn > 100_000 {
                        return Err(format!("game {game}: off-turn moves do not stop"));
                    }
                }
                if actions > 2_000_000 {
                    return Err(format!("game {game} does not end"));
                }
            }
        }
    }
    let o = g.outcome().ok_or("finished without an outcome")?;
    Ok(MatchResult {
        levels: levels.to_vec(),
        winners: o.winners,
        scores: o.scores,
        actions,
        off_turn,
        rounds: g.round(),
    })
}

/// Plays matches `games` on `threads` threads; match `i` seats the lineup rotated by `i`
/// (so every level plays every seat equally often). Results come back in match order.
pub fn run<G: BotGame>(
    options: &G::Options,
    lineup: &[Level],
    games: &[u64],
    budget: Budget,
    threads: usize,
) -> Result<Vec<MatchResult>, String> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<MatchResult, String>>>> = Mutex::new(vec![None; games.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= games.len() {
                        break;
                    }
                    let n = lineup.len();
                    let levels: Vec<Level> = (0..n).map(|s| lineup[(s + i) % n]).collect();
                    let r = play_match::<G>(options, &levels, games[i], budget);
                    out.lock().expect("no panics while holding it")[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .expect("threads done")
        .into_iter()
        .map(|r| r.expect("every match ran"))
        .collect()
}

/// Totals of one level (or one seat and level) over many matches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub seats: u64,
    /// A shared win counts as a fraction (R-54 ties).
    pub wins: f64,
    pub score_sum: i64,
}

impl Tally {
    pub fn add(&mut self, r: &MatchResult, seat: usize) {
        self.seats += 1;
        if r.winners.contains(&seat) {
            self.wins += 1.0 / r.winners.len() as f64;
        }
        self.score_sum += r.scores[seat];
    }
    pub fn win_rate(&self) -> f64 {
        self.wins / self.seats.max(1) as f64
    }
    /// Half-width of the 95% confidence interval of the win rate (normal approximation).
    pub fn ci95(&self) -> f64 {
        let p = self.win_rate();
        1.96 * (p * (1.0 - p) / self.seats.max(1) as f64).sqrt()
    }
    pub fn avg_score(&self) -> f64 {
        self.score_sum as f64 / self.seats.max(1) as f64
    }
}

/// Per-level tallies, in `Level` order.
pub fn by_level(results: &[MatchResult]) -> Vec<(Level, Tally)> {
    let mut out: Vec<(Level, Tally)> = Vec::new();
    for r in results {
        for (seat, &l) in r.levels.iter().enumerate() {
            match out.iter_mut().find(|(k, _)| *k == l) {
                Some((_, t)) => t.add(r, seat),
                None => {
                    let mut t = Tally::default();
                    t.add(r, seat);
                    out.push((l, t));
                }
            }
        }
    }
    out.sort_by_key(|(l, _)| *l);
    out
}

/// Per seat and level tallies.
pub fn by_seat(results: &[MatchResult]) -> Vec<((usize, Level), Tally)> {
    let mut out: Vec<((usize, Level), Tally)> = Vec::new();
    for r in results {
        for (seat, &l) in r.levels.iter().enumerate() {
            match out.iter_mut().find(|(k, _)| *k == (seat, l)) {
                Some((_, t)) => t.add(r, seat),
                None => {
                    let mut t = Tally::default();
                    t.add(r, seat);
                    out.push(((seat, l), t));
                }
            }
        }
    }
    out.sort_by_key(|(k, _)| *k);
    out
}
