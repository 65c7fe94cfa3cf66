//! Bots for every game, at three levels, and the simulator that measures them.
//!
//! A bot decides from the seat's view alone: [`decide`] takes `&G::View` (plus its own
//! seeded random stream and a thinking budget) and nothing else, so reading the game state
//! (other hands, the stock) is impossible by construction, not by habit.
//!
//! * [`Level::Easy`]: a uniformly random legal move.
//! * [`Level::Normal`]: a hand-written heuristic per game ([`BotGame::normal`]).
//! * [`Level::Hard`]: determinized Monte Carlo: sample full states consistent with the view
//!   ([`BotGame::determinize`]: the unseen cards dealt at random with the right counts),
//!   play each legal move followed by a rollout to the end of the round with the normal
//!   policy for every seat, and keep the move with the best average result for the bot's
//!   seat. Games without a determinization fall back to the normal policy.
//!
//! Everything here is pure and synchronous (no tokio): the server runs it on a blocking
//! worker pool; the simulator on plain threads.

pub mod fibfib;
pub mod nachos;
pub mod rummy;
pub mod sim;
pub mod trump;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use game_core::{DeckRng, Game, Phase, Seat, Seed, Viewer};

/// How strong a bot is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Easy,
    Normal,
    Hard,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Easy, Level::Normal, Level::Hard];
    pub fn name(self) -> &'static str {
        match self {
            Level::Easy => "easy",
            Level::Normal => "normal",
            Level::Hard => "hard",
        }
    }
    pub fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// How long a hard bot may think about one move. Whichever limit is hit first ends the
/// search; a search always makes at least one sample. A time limit makes the decision
/// depend on the machine's speed, so the simulator uses a sample limit alone (then the
/// same seed gives the same move).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub time: Option<Duration>,
    /// Determinizations (each plays every legal move once).
    pub samples: Option<u32>,
}

impl Budget {
    /// The server's default: 100 ms per move.
    pub const DEFAULT: Budget = Budget {
        time: Some(Duration::from_millis(100)),
        samples: None,
    };
    /// A fixed number of samples, no clock: deterministic.
    pub fn samples(n: u32) -> Budget {
        Budget {
            time: None,
            samples: Some(n),
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::DEFAULT
    }
}

/// The bots' own random stream (never the round's: a bot must not be able to predict the
/// deal). Built on the documented deck stream so bots need no further dependency.
pub struct BotRng(DeckRng);

impl BotRng {
    pub fn new(seed: u64) -> Self {
        // Domain-separate from `Seed::from_u64`, which tests and simulations use for deals.
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&seed.to_le_bytes());
        b[8..16].copy_from_slice(b"bot-rng!");
        BotRng(Seed(b).rng())
    }
    /// Uniform in `0..n` (n ≥ 1).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        self.0.shuffle(items)
    }
    /// A fresh 64-bit value (for seeding things a sample needs, like a refill stream).
    pub fn next_u64(&mut self) -> u64 {
        (self.0.below(1 << 32) as u64) << 32 | self.0.below(1 << 32) as u64
    }
}

/// What a game must provide for its bots. Every function sees a view, never a state; only
/// [`BotGame::determinize`] makes a state, and that state is a guess built from the view.
pub trait BotGame: Game {
    /// The seat a view belongs to (`None` for a spectator's view).
    fn view_seat(view: &Self::View) -> Option<Seat>;

    /// The normal bot: a heuristic choice among `legal` (never empty). Returns an index.
    fn normal(view: &Self::View, legal: &[Self::Action], rng: &mut BotRng) -> usize;

    /// A full state consistent with `view`: what the viewer sees is as it is, what it
    /// cannot see is sampled from `rng`. `None` if the game has no sampler (the hard bot
    /// then plays the normal policy).
    fn determinize(_view: &Self::View, _rng: &mut BotRng) -> Option<Self> {
        None
    }

    /// How good `state` (a rollout's end: the round over, or the step limit hit) is for
    /// `seat`, higher is better. Default: own score minus the best other score.
    fn value(state: &Self, seat: Seat) -> f64 {
        let s = state.scores();
        let best_other = s
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != seat)
            .map(|(_, &v)| v)
            .max()
            .unwrap_or(0);
        (s[seat] - best_other) as f64
    }

    /// A move worth making while another seat is on turn (`legal` holds the moves the
    /// rules allow off turn: R-18 in the rummy family), or `None` to wait. The default
    /// waits: in most games nothing is legal off turn.
    fn off_turn(_view: &Self::View, _legal: &[Self::Action]) -> Option<usize> {
        None
    }

    /// Whether the hard bot tries `action` at all (default: every legal move). A game
    /// whose moves can undo each other without end prunes those here.
    fn worth_trying(_view: &Self::View, _action: &Self::Action) -> bool {
        true
    }

    /// The moves `seat` considers in a rollout, and which one it plays. Defaults to the
    /// normal policy on that seat's view of the sample.
    fn rollout_move(state: &Self, seat: Seat, rng: &mut BotRng) -> Option<Self::Action> {
        let view = state.view_for(Viewer::Player(seat));
        let mut legal = Self::legal_actions(&view);
        if legal.is_empty() {
            return None;
        }
        let i = Self::normal(&view, &legal, rng);
        Some(legal.swap_remove(i))
    }

    /// Longest rollout, in actions, before it is scored as it stands.
    const ROLLOUT_LIMIT: usize = 400;
}

/// A bot's move for the seat whose view this is, or `None` if it has nothing legal to do.
/// Deterministic for a given `(view, level, seed)` when `budget` has no time limit.
pub fn decide<G: BotGame>(
    view: &G::View,
    level: Level,
    seed: u64,
    budget: Budget,
) -> Option<G::Action> {
    let mut legal = G::legal_actions(view);
    if legal.is_empty() {
        return None;
    }
    let mut rng = BotRng::new(seed);
    let i = match level {
        Level::Easy => rng.below(legal.len()),
        Level::Normal => G::normal(view, &legal, &mut rng),
        Level::Hard => hard::<G>(view, &legal, &mut rng, budget),
    };
    Some(legal.swap_remove(i))
}

/// Counts over every hard decision made by this process that had a choice: decisions and
/// the determinizations they sampled. The simulator prints the average, which tells how
/// many samples a time budget buys on this machine.
static HARD_DECISIONS: AtomicU64 = AtomicU64::new(0);
static HARD_SAMPLES: AtomicU64 = AtomicU64::new(0);

/// `(decisions, samples)` made by hard bots so far in this process.
pub fn hard_stats() -> (u64, u64) {
    (
        HARD_DECISIONS.load(Ordering::Relaxed),
        HARD_SAMPLES.load(Ordering::Relaxed),
    )
}

/// A move for a bot whose seat is *not* on turn, or `None` to wait: the moves a game
/// allows off turn (the rummy family's R-18 rearrangements) when the game's policy wants
/// one ([`BotGame::off_turn`]). Easy bots never act off turn. Deterministic (no search:
/// these are the rearrangements normal makes on its own turn; doing them as soon as they
/// are possible leaves the bot's own turn for drawing, laying down and closing).
///
/// A bot's own sets change only in its own turn, so the caller asks right after the
/// bot's turn has passed, and again after each off-turn move it made, until `None`.
pub fn decide_off_turn<G: BotGame>(view: &G::View, level: Level) -> Option<G::Action> {
    if level == Level::Easy {
        return None;
    }
    let mut legal = G::legal_actions(view);
    if legal.is_empty() {
        return None;
    }
    let i = G::off_turn(view, &legal)?;
    Some(legal.swap_remove(i))
}

/// Determinized Monte Carlo (see the crate header). Every legal move is tried on the same
/// sample, so the comparison between moves is not drowned by the luck of the sample.
fn hard<G: BotGame>(
    view: &G::View,
    legal: &[G::Action],
    rng: &mut BotRng,
    budget: Budget,
) -> usize {
    let Some(me) = G::view_seat(view) else {
        return rng.below(legal.len());
    };
    if legal.len() == 1 {
        return 0;
    }
    let start = Instant::now();
    let mut totals = vec![0f64; legal.len()];
    let mut samples = 0u32;
    loop {
        if samples > 0 {
            if budget.samples.is_some_and(|n| samples >= n)
                || budget.time.is_some_and(|t| start.elapsed() >= t)
            {
                break;
            }
            if budget.samples.is_none() && budget.time.is_none() {
                break;
            }
        }
        let Some(world) = G::determinize(view, rng) else {
            return G::normal(view, legal, rng);
        };
        for (i, action) in legal.iter().enumerate() {
            if !G::worth_trying(view, action) {
                totals[i] = f64::NEG_INFINITY;
                continue;
            }
            let mut g = world.clone();
            if g.apply(me, action).is_err() {
                // The sample disagrees with the view about this move: never expected, but
                // a move that cannot be judged must not win.
                totals[i] = f64::NEG_INFINITY;
                continue;
            }
            rollout(&mut g, rng);
            totals[i] += G::value(&g, me);
        }
        samples += 1;
    }
    HARD_DECISIONS.fetch_add(1, Ordering::Relaxed);
    HARD_SAMPLES.fetch_add(u64::from(samples), Ordering::Relaxed);
    let mut best = 0;
    for i in 1..legal.len() {
        if totals[i] > totals[best] {
            best = i;
        }
    }
    best
}

/// Plays the sample on to the end of its round (or the step limit).
fn rollout<G: BotGame>(g: &mut G, rng: &mut BotRng) {
    for _ in 0..G::ROLLOUT_LIMIT {
        if g.phase() != Phase::Playing {
            return;
        }
        let Some(&seat) = g.to_act().first() else {
            return;
        };
        let Some(a) = G::rollout_move(g, seat, rng) else {
            return;
        };
        if g.apply(seat, &a).is_err() {
            return;
        }
    }
}

/// Index of the best item by `key` (first on ties), for the heuristics.
pub(crate) fn argmax<T>(items: &[T], mut key: impl FnMut(&T) -> i64) -> usize {
    let mut best = 0;
    let mut best_key = i64::MIN;
    for (i, it) in items.iter().enumerate() {
        let k = key(it);
        if k > best_key {
            best = i;
            best_key = k;
        }
    }
    best
}
