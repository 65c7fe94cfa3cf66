//! Property tests over random fields, table sizes 2 to 5, results, absences, late joins
//! and withdrawals: the pairing invariants of every Swiss round (checked by
//! `common::check_round`: exactly the active players seated or given the bye, planned
//! table sizes, fair byes, the fewest repeats against a brute force on small fields),
//! standings equal to an independent recomputation, determinism from the seed and
//! through JSON, and the arena's invariants (nobody paired twice at once, nor after the
//! cutoff, nor once withdrawn or paused; points as the streak rule gives them).

mod common;

use std::collections::BTreeMap;

use common::*;
use game_core::Outcome;
use proptest::prelude::*;
use tournament::{Effect, Phase, PlayerId, PlayerStatus, TableId, TableState, Tournament};

/// `(table_size, min_table_size)` with 2 ≤ min ≤ size ≤ 5.
fn sizes() -> impl Strategy<Value = (usize, usize)> {
    (2usize..=5).prop_flat_map(|k| (Just(k), 2..=k))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Small fields: every round's invariants, repeats checked against the brute force.
    #[test]
    fn swiss_small_fields(
        (k, min) in sizes(),
        extra in 0u64..8,
        rounds in 1u32..=6,
        seed in any::<u64>(),
        results in any::<u64>(),
        absent_pct in 0u64..25,
        churn_pct in 0u64..15,
    ) {
        let players = min as u64 + extra;
        let mut g = Gen(results);
        let (t, log) = run_swiss(swiss(rounds, k, min, seed), players, &mut g, absent_pct, churn_pct);
        prop_assert_eq!(t.phase(), Phase::Finished);
        check_standings(&t, &log);
    }

    /// Larger fields: the same invariants (the brute force only where few are seated).
    #[test]
    fn swiss_larger_fields(
        (k, min) in sizes(),
        players in 9u64..40,
        rounds in 1u32..=7,
        seed in any::<u64>(),
        results in any::<u64>(),
        absent_pct in 0u64..10,
        churn_pct in 0u64..10,
    ) {
        let mut g = Gen(results);
        let (t, log) = run_swiss(swiss(rounds, k, min, seed), players, &mut g, absent_pct, churn_pct);
        prop_assert_eq!(t.phase(), Phase::Finished);
        check_standings(&t, &log);
    }

    /// Same config, seed and inputs: the same tournament, whether or not it went through
    /// JSON on the way.
    #[test]
    fn swiss_is_deterministic(
        (k, min) in sizes(),
        extra in 0u64..20,
        seed in any::<u64>(),
        results in any::<u64>(),
    ) {
        let players = min as u64 + extra;
        let (a, _) = run_swiss(swiss(5, k, min, seed), players, &mut Gen(results), 5, 5);
        let (b, _) = run_swiss(swiss(5, k, min, seed), players, &mut Gen(results), 5, 5);
        prop_assert_eq!(&a, &b);
        let c: Tournament = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        prop_assert_eq!(&a, &c);
    }

    /// The arena: simulated second by second with random game lengths, absences,
    /// rejoins, withdrawals and late joins.
    #[test]
    fn arena_invariants(
        (k, min) in sizes(),
        players in 2u64..16,
        minutes in 2u64..12,
        stop_s in 10u64..120,
        seed in any::<u64>(),
        results in any::<u64>(),
    ) {
        let a = run_arena(k, min, players, minutes, stop_s, seed, results);
        let b = run_arena(k, min, players, minutes, stop_s, seed, results);
        prop_assert_eq!(a, b);
    }
}

/// Runs an arena and checks its invariants after every input; returns it, finished.
fn run_arena(
    k: usize,
    min: usize,
    players: u64,
    minutes: u64,
    stop_s: u64,
    seed: u64,
    results: u64,
) -> Tournament {
    let duration = minutes * 60_000;
    let stop = stop_s * 1000;
    let mut config = arena(duration, stop, k, seed);
    config.min_table_size = min;
    let mut t = Tournament::new(config, (2, 5)).unwrap();
    let mut g = Gen(results);
    let mut next = 0;
    for _ in 0..players {
        t.join(pid(next), 1200.0 + g.below(600) as f64, 0).unwrap();
        next += 1;
    }
    let mut ends: BTreeMap<TableId, u64> = BTreeMap::new();
    // The tests' own account of arena points: per player, (points, wins in a row).
    let mut account: BTreeMap<PlayerId, (u32, u32)> = BTreeMap::new();
    let mut outcomes: BTreeMap<TableId, Outcome> = BTreeMap::new();
    let mut before = t.clone();
    let fx = t.start(0).unwrap();
    let mut now = 0;
    check_arena(
        &before,
        &t,
        &fx,
        now,
        &mut ends,
        &mut g,
        &mut account,
        &outcomes,
    );
    while t.phase() == Phase::Running {
        now += 1000;
        let due: Vec<TableId> = ends.iter().filter(|e| *e.1 <= now).map(|e| *e.0).collect();
        for table in due {
            ends.remove(&table);
            before = t.clone();
            let seats = t.table(table).unwrap().players.clone();
            let present: Vec<PlayerId> = {
                let x = t.table(table).unwrap();
                (0..seats.len())
                    .filter(|&i| !x.absent[i])
                    .map(|i| seats[i])
                    .collect()
            };
            let fx = if g.chance(10) {
                let who = present[g.below(present.len() as u64) as usize];
                let fx = t.absent(who, table, now).unwrap();
                if t.table(table).unwrap().state == TableState::Playing {
                    ends.insert(table, now + 1000);
                }
                fx
            } else {
                let o = random_outcome(&mut g, seats.len());
                outcomes.insert(table, o.clone());
                t.report_result(table, &o, now).unwrap()
            };
            check_arena(
                &before,
                &t,
                &fx,
                now,
                &mut ends,
                &mut g,
                &mut account,
                &outcomes,
            );
        }
        if g.chance(3) {
            before = t.clone();
            let who = pid(g.below(next + 1));
            let fx = if g.chance(60) {
                let r = t.join(who, 1500.0, now);
                if r.is_ok() && who == pid(next) {
                    next += 1;
                }
                r
            } else {
                t.withdraw(who, now)
            };
            match fx {
                Ok(fx) => check_arena(
                    &before,
                    &t,
                    &fx,
                    now,
                    &mut ends,
                    &mut g,
                    &mut account,
                    &outcomes,
                ),
                Err(_) => assert_eq!(t, before, "a refusal changed the arena"),
            }
        }
        before = t.clone();
        let fx = t.tick(now);
        check_arena(
            &before,
            &t,
            &fx,
            now,
            &mut ends,
            &mut g,
            &mut account,
            &outcomes,
        );
    }
    assert!(now >= duration && now < duration + 1000);
    // Points as the tests counted them, and the leaderboard in its order.
    for p in t.players() {
        assert_eq!(
            p.points,
            account.get(&p.id).map_or(0, |a| a.0),
            "points of {}",
            p.id
        );
    }
    let board = t.standings();
    for w in board.windows(2) {
        assert!(
            (w[0].points, w[0].performance, w[0].games)
                >= (w[1].points, w[1].performance, w[1].games)
        );
    }
    t
}

/// Checks one arena input's effects against the state before and after it.
#[allow(clippy::too_many_arguments)]
fn check_arena(
    before: &Tournament,
    after: &Tournament,
    fx: &[Effect],
    now: u64,
    ends: &mut BTreeMap<TableId, u64>,
    g: &mut Gen,
    account: &mut BTreeMap<PlayerId, (u32, u32)>,
    outcomes: &BTreeMap<TableId, Outcome>,
) {
    let cfg = after.config();
    let cutoff = after.pairing_stops_at().unwrap();
    for e in fx {
        match e {
            Effect::CreateTable { table, players, .. } => {
                assert!(now < cutoff, "paired at {now}, pairing stops at {cutoff}");
                assert!((cfg.min_table_size..=cfg.table_size).contains(&players.len()));
                for p in players {
                    // Free before this input, or freed by it (its table just finished).
                    let was = before.player(*p).and_then(|x| x.table);
                    let freed = fx.iter().any(
                        |f| matches!(f, Effect::TableFinished { table: t, .. } if Some(*t) == was),
                    );
                    assert!(was.is_none() || freed, "{p} paired while at {was:?}");
                    assert_eq!(after.player(*p).unwrap().status, PlayerStatus::Active);
                }
                ends.insert(*table, now + 20_000 + g.below(100_000));
            }
            Effect::TableFinished {
                table,
                players,
                points,
            } => {
                let x = after.table(*table).unwrap();
                let s = players.len();
                for (i, p) in players.iter().enumerate() {
                    // Win: present, nobody better, someone worse (or absent); loss:
                    // absent, or someone better and nobody worse; else a draw.
                    let better = |a: usize, b: usize| -> bool {
                        if x.absent[a] {
                            return false;
                        }
                        if x.absent[b] {
                            return true;
                        }
                        match outcomes.get(table) {
                            Some(o) => {
                                (o.winners.contains(&a), o.scores[a])
                                    > (o.winners.contains(&b), o.scores[b])
                            }
                            None => false,
                        }
                    };
                    let above = (0..s).any(|j| j != i && better(j, i));
                    let below = (0..s).any(|j| j != i && better(i, j));
                    let base = if x.absent[i] || above && !below {
                        0
                    } else if below && !above {
                        2
                    } else {
                        1
                    };
                    let a = account.entry(*p).or_default();
                    let gained = if a.1 >= 2 { base * 2 } else { base };
                    a.0 += gained;
                    a.1 = if base == 2 { a.1 + 1 } else { 0 };
                    assert_eq!(points[i], gained, "{p} at {table}");
                }
            }
            _ => {}
        }
    }
    // Nobody at two tables; withdrawn and paused players at none they were not at
    // before.
    for p in after.players() {
        let n = after
            .tables()
            .iter()
            .filter(|x| x.state == TableState::Playing && x.players.contains(&p.id))
            .count();
        assert!(n <= 1, "{} at {n} tables", p.id);
        assert_eq!(n == 1, p.table.is_some());
    }
}
