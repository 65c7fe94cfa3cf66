//! Rollout estimates: the rest of a round played out many times from an all-open state
//! (the real state, every hand and the stock as they are), each seat moving by a policy,
//! and the mean round score per seat with its standard error. Seeded: the same state,
//! count and seed give the same estimate.

use bots::{BotGame, BotRng};
use game_core::{Phase, Viewer};

/// How seats move in a rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The normal bot of each game (`BotGame::rollout_move`), as the hard bot rolls out.
    Normal,
    /// The normal bot, except that each move is, with probability [`NOISE`], a uniformly
    /// random legal move instead: what the analysis rolls out. The normal bots of Trump,
    /// Fibonachos and the rummy family never draw on their streams, so with every card
    /// known all their rollouts would be the one playout, whose value swings on any
    /// change of line; the noise makes the mean a smoother estimate of a position, with
    /// a standard error that says how far it can be trusted.
    Noisy,
    /// A uniformly random legal move (the tests check the estimator against an exhaustive
    /// enumeration of this policy's randomness).
    Random,
}

/// The chance of a random move in a [`Policy::Noisy`] rollout: one in ten.
pub const NOISE: (usize, usize) = (1, 10);

/// Longest rollout in actions; a rollout cut there is scored as the round stands.
pub const ROLLOUT_CAP: usize = 5_000;

/// Per seat: the mean round score over the rollouts and its standard error.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub mean: Vec<f64>,
    pub se: Vec<f64>,
    pub samples: u32,
}

/// Whether `g` is still in the round numbered `round`.
pub fn in_round<G: BotGame>(g: &G, round: u32) -> bool {
    g.phase() == Phase::Playing && g.round() == round
}

/// Each seat's round score: its match score now less its match score when the round began.
pub fn round_scores<G: BotGame>(g: &G, start: &[i64]) -> Vec<f64> {
    g.scores()
        .iter()
        .zip(start)
        .map(|(now, then)| (now - then) as f64)
        .collect()
}

/// Plays `g` on to the end of its round with `policy`.
pub fn play_out<G: BotGame>(g: &mut G, policy: Policy, rng: &mut BotRng) {
    let round = g.round();
    for _ in 0..ROLLOUT_CAP {
        if !in_round(g, round) {
            return;
        }
        let Some(&seat) = g.to_act().first() else {
            return;
        };
        let random = match policy {
            Policy::Normal => false,
            Policy::Noisy => rng.below(NOISE.1) < NOISE.0,
            Policy::Random => true,
        };
        let action = match random {
            false => G::rollout_move(g, seat, rng),
            true => {
                let mut legal = G::legal_actions(&g.view_for(Viewer::Player(seat)));
                if legal.is_empty() {
                    None
                } else {
                    let i = rng.below(legal.len());
                    Some(legal.swap_remove(i))
                }
            }
        };
        let Some(a) = action else { return };
        if g.apply(seat, &a).is_err() {
            return;
        }
    }
}

/// `samples` rollouts of `g` (whose round began with match scores `start`), the i-th with
/// its own stream from `seed` and `i`.
pub fn estimate<G: BotGame>(
    g: &G,
    start: &[i64],
    samples: u32,
    seed: u64,
    policy: Policy,
) -> Estimate {
    let n = start.len();
    let samples = samples.max(1);
    let (mut sum, mut sq) = (vec![0f64; n], vec![0f64; n]);
    for i in 0..samples {
        let mut c = g.clone();
        let mut rng = BotRng::new(seed ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        play_out(&mut c, policy, &mut rng);
        for (s, v) in round_scores(&c, start).into_iter().enumerate() {
            sum[s] += v;
            sq[s] += v * v;
        }
    }
    let k = f64::from(samples);
    let mean: Vec<f64> = sum.iter().map(|s| s / k).collect();
    let se = (0..n)
        .map(|s| {
            if samples < 2 {
                return 0.0;
            }
            // Sample variance (n − 1), then the standard error of the mean.
            let var = ((sq[s] - k * mean[s] * mean[s]) / (k - 1.0)).max(0.0);
            (var / k).sqrt()
        })
        .collect();
    Estimate { mean, se, samples }
}
