//! The rollout estimator against positions whose value is known: the expectation of the
//! random policy by exhaustive enumeration of its choices (each legal move equally
//! likely), and the normal policy's single deterministic playout.

use analysis::rollout::{Policy, estimate, play_out, round_scores};
use bots::{BotGame, BotRng};
use game_core::{Game, Phase, Seed, Viewer};
use nachos::NachosMatch;
use trump::Trump;

fn left<G: Game>(g: &G) -> usize
where
    G::View: serde::Serialize,
{
    // Cards in hands, read from every seat's view as JSON (both games name it `hand`).
    (0..g.players())
        .map(|s| {
            serde_json::to_value(g.view_for(Viewer::Player(s))).unwrap()["hand"]
                .as_array()
                .map_or(0, Vec::len)
        })
        .sum()
}

fn near_end<G: Game>(g: &mut G, seed: u64, cards: usize) {
    let mut rng = BotRng::new(seed);
    g.start_round(&Seed::from_u64(seed)).unwrap();
    while g.phase() == Phase::Playing && left(g) > cards {
        let seat = g.to_act()[0];
        let legal = g.legal_actions_for(seat);
        g.apply(seat, &legal[rng.below(legal.len())]).unwrap();
    }
}

/// Expected round scores when every seat plays a uniformly random legal move.
fn expectation<G: Game>(g: &G, start: &[i64]) -> Vec<f64> {
    if g.phase() != Phase::Playing {
        return g
            .scores()
            .iter()
            .zip(start)
            .map(|(a, b)| (a - b) as f64)
            .collect();
    }
    let seat = g.to_act()[0];
    let legal = g.legal_actions_for(seat);
    let mut sum = vec![0.0; start.len()];
    for a in &legal {
        let mut c = g.clone();
        c.apply(seat, a).unwrap();
        for (s, v) in expectation(&c, start).into_iter().enumerate() {
            sum[s] += v;
        }
    }
    sum.iter().map(|v| v / legal.len() as f64).collect()
}

/// Over many positions, each seat's rollout mean lies within 4 standard errors of the
/// exact expectation, and the standard errors are honest: the squared z-scores average
/// about 1 (too small an error would push it up, too large pull it down).
fn check_many<G: BotGame>(make: impl Fn() -> G, players: usize, cards: usize, seeds: u64) {
    let (mut checks, mut outside, mut z2, mut spread) = (0u32, 0u32, 0.0, 0u32);
    for seed in 0..seeds {
        let mut g = make();
        near_end(&mut g, 500 + seed, cards);
        if g.phase() != Phase::Playing {
            continue;
        }
        let start = g.scores();
        let exact = expectation(&g, &start);
        let e = estimate(&g, &start, 200, seed, Policy::Random);
        for ((mean, se), want) in e.mean.iter().zip(&e.se).zip(&exact).take(players) {
            let d = (mean - want).abs();
            checks += 1;
            if *se == 0.0 {
                // Every rollout agreed: then so must the expectation (a rare other outcome
                // missed 200 times in a row counts as a miss).
                outside += u32::from(d > 1e-9);
                continue;
            }
            let z = d / se;
            z2 += z * z;
            spread += 1;
            outside += u32::from(z > 4.0);
        }
    }
    assert!(checks >= 200, "{checks}");
    assert!(
        outside * 100 <= checks,
        "{outside} of {checks} outside 4 standard errors"
    );
    assert!(spread >= 100, "{spread}");
    let mean_z2 = z2 / f64::from(spread);
    assert!((0.4..1.6).contains(&mean_z2), "mean squared z {mean_z2}");
}

#[test]
fn trump_rollouts_agree_with_the_enumerated_expectation() {
    check_many(
        || Trump::new_match(&trump::Options::default(), 3).unwrap(),
        3,
        6,
        120,
    );
}

#[test]
fn nachos_rollouts_agree_with_the_enumerated_expectation() {
    check_many(
        || NachosMatch::new_match(&Default::default(), 3).unwrap(),
        3,
        6,
        120,
    );
}

/// Trump's normal policy draws nothing from its stream: every rollout is the one playout,
/// with no error; the noisy policy the analysis uses does vary.
#[test]
fn deterministic_policy_has_no_error() {
    let mut varied = false;
    for seed in 0..20 {
        let mut g = Trump::new_match(&trump::Options::default(), 2).unwrap();
        near_end(&mut g, 900 + seed, 16);
        let start = g.scores();
        let e = estimate(&g, &start, 8, seed, Policy::Normal);
        let mut one = g.clone();
        play_out(&mut one, Policy::Normal, &mut BotRng::new(1));
        assert_eq!(e.mean, round_scores(&one, &start));
        assert!(e.se.iter().all(|&x| x == 0.0));
        varied |= estimate(&g, &start, 8, seed, Policy::Noisy)
            .se
            .iter()
            .any(|&x| x > 0.0);
    }
    assert!(varied);
}
