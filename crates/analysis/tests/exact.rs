//! The exact search against plain exhaustive search, on thousands of small end positions
//! of both trick-taking games reached by random play from seeded deals; and the compact
//! positions against the rules crates themselves.

use analysis::exact::{Position, Solver, brute_force};
use analysis::trick::{NachosPos, TrumpPos};
use bots::BotRng;
use game_core::{Game, Phase, Seed, Viewer};
use nachos::NachosMatch;
use trump::Trump;

/// A round of `G` played at random from seeded deal `seed` until at most `left` cards
/// remain in hands (possibly mid-trick).
fn end_position<G: Game>(g: &mut G, seed: u64, left: usize, count: impl Fn(&G) -> usize) {
    let mut rng = BotRng::new(seed);
    g.start_round(&Seed::from_u64(seed)).unwrap();
    // Stop a little past `left` at random so positions start mid-trick too.
    let stop = left.saturating_sub(rng.below(3));
    while g.phase() == Phase::Playing && count(g) > stop {
        let seat = g.to_act()[0];
        let legal = g.legal_actions_for(seat);
        let a = &legal[rng.below(legal.len())];
        g.apply(seat, a).unwrap();
    }
}

fn trump_left(g: &Trump) -> usize {
    (0..g.players())
        .map(|s| g.view_for(Viewer::Player(s)).hand.unwrap().len())
        .sum()
}

fn nachos_left(g: &NachosMatch) -> usize {
    (0..g.players())
        .map(|s| g.view_for(Viewer::Player(s)).hand.unwrap().len())
        .sum()
}

/// The paranoid value of the real game (the rules crate's moves and scores), every line.
fn rules_minimax<G: Game>(g: &G, persp: usize, start: &[i64]) -> i64 {
    if g.phase() != Phase::Playing {
        return g.scores()[persp] - start[persp];
    }
    let seat = g.to_act()[0];
    let vals = g.legal_actions_for(seat).into_iter().map(|a| {
        let mut c = g.clone();
        c.apply(seat, &a).unwrap();
        rules_minimax(&c, persp, start)
    });
    if seat == persp {
        vals.max().unwrap()
    } else {
        vals.min().unwrap()
    }
}

/// Checks one position: the solver's value for every seat equals brute force, and the
/// best move it reports (for the seat to move) achieves that value.
fn check<P: Position + std::fmt::Debug>(p: &P, players: usize, solver: &mut Solver) {
    for persp in 0..players {
        solver.budget(u64::MAX);
        let v = solver.value(p, persp).unwrap();
        assert_eq!(v, brute_force(p, persp), "{p:?} persp {persp}");
    }
    let me = p.to_move();
    solver.budget(u64::MAX);
    let v = solver.value(p, me).unwrap();
    let mv = solver.move_values(p, me).unwrap();
    let (best, bv) = *mv.iter().max_by_key(|(_, v)| *v).unwrap();
    assert_eq!(bv, v, "{p:?}");
    let mut c = p.clone();
    c.play(best);
    assert_eq!(brute_force(&c, me), v, "the reported best move of {p:?}");
    // Every move's reported value is exact too.
    for (m, x) in mv {
        let mut c = p.clone();
        c.play(m);
        assert_eq!(brute_force(&c, me), x);
    }
}

#[test]
fn trump_alpha_beta_equals_brute_force() {
    let mut positions = 0;
    for players in 2..=4 {
        let mut solver = Solver::new();
        for seed in 0..700u64 {
            let mut g = Trump::new_match(&trump::Options::default(), players).unwrap();
            // Two to four tricks, at most 12 cards.
            let left = (players * (2 + (seed as usize % 3))).min(12);
            end_position(&mut g, seed * 10 + players as u64, left, trump_left);
            let Some(p) = TrumpPos::from_game(&g) else {
                continue;
            };
            solver.clear();
            check(&p, players, &mut solver);
            positions += 1;
        }
    }
    assert!(positions >= 2_000, "{positions}");
}

#[test]
fn nachos_alpha_beta_equals_brute_force() {
    let mut positions = 0;
    for players in 2..=5 {
        let mut solver = Solver::new();
        for seed in 0..550u64 {
            let mut g = NachosMatch::new_match(&Default::default(), players).unwrap();
            let left = (players * (2 + (seed as usize % 3)))
                .min(12)
                .max(players * 2);
            end_position(&mut g, seed * 10 + players as u64, left, nachos_left);
            let Some(p) = NachosPos::from_game(&g) else {
                continue;
            };
            solver.clear();
            check(&p, players, &mut solver);
            positions += 1;
        }
    }
    assert!(positions >= 2_000, "{positions}");
}

/// The compact positions play by the rules crates' rules: their paranoid values equal the
/// rules crates' own (moves from `legal_actions`, scores from `scores`), and a node budget
/// that is too small aborts instead of answering.
#[test]
fn compact_positions_agree_with_the_rules_crates() {
    let mut solver = Solver::new();
    for players in 2..=4 {
        for seed in 0..40u64 {
            let mut g = Trump::new_match(&trump::Options::default(), players).unwrap();
            end_position(
                &mut g,
                7_000 + seed * 10 + players as u64,
                players * 2,
                trump_left,
            );
            let Some(p) = TrumpPos::from_game(&g) else {
                continue;
            };
            let start: Vec<i64> = g.scores();
            for persp in 0..players {
                solver.budget(u64::MAX);
                assert_eq!(
                    i64::from(solver.value(&p, persp).unwrap()),
                    rules_minimax(&g, persp, &start),
                    "trump {players} seed {seed} persp {persp}"
                );
            }
        }
    }
    for players in 2..=5 {
        for seed in 0..40u64 {
            let mut g = NachosMatch::new_match(&Default::default(), players).unwrap();
            end_position(
                &mut g,
                9_000 + seed * 10 + players as u64,
                players * 2,
                nachos_left,
            );
            let Some(p) = NachosPos::from_game(&g) else {
                continue;
            };
            let start: Vec<i64> = g.scores();
            for persp in 0..players {
                solver.budget(u64::MAX);
                assert_eq!(
                    i64::from(solver.value(&p, persp).unwrap()),
                    rules_minimax(&g, persp, &start),
                    "nachos {players} seed {seed} persp {persp}"
                );
            }
        }
    }
    // A budget too small for the position aborts.
    let mut g = Trump::new_match(&trump::Options::default(), 3).unwrap();
    end_position(&mut g, 5, 15, trump_left);
    let p = TrumpPos::from_game(&g).unwrap();
    solver.clear();
    solver.budget(10);
    assert!(solver.value(&p, 0).is_err());
}
