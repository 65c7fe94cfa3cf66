//! Property-based state-machine test of every engine, through the JSON face the server
//! drives (`DynGame`): random options and seeds, random sequences mixing legal actions,
//! bursts of them, actions from the wrong seat or out of turn, actions with unknown
//! fields, with values replaced by arbitrary JSON or keys dropped, arbitrary JSON, and
//! actions replayed. After every step `games::conformance::Session` checks the invariants
//! (see its header); at the end, a finished match refuses everything and the replay of the
//! same seeds and accepted actions gives the same state.
//!
//! Stable Rust, in the normal suite; `fuzz/` drives the same checker coverage-guided.

use games::conformance::{Session, Step};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Arbitrary JSON, biased towards what actions are made of.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..300).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "play",
            "draw",
            "pass",
            "draw_stock",
            "open",
            "red",
            "joker",
            "six",
            "spades",
            "star",
            "r7",
            "p10",
            "g11",
            "",
            "🂡",
        ])
        .prop_map(Value::from),
        "[a-z_]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "type", "card", "colour", "number", "symbol", "suit", "copy", "id", "rank",
                    "set", "sets", "bonus", "side", "column", "value", "replace", "from", "to",
                    "x",
                ])
                .prop_map(String::from),
                inner,
                0..4,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => any::<usize>().prop_map(|pick| Step::Legal { pick }),
        3 => (1u8..60, any::<u64>()).prop_map(|(count, salt)| Step::Burst { count, salt }),
        2 => (any::<usize>(), 0usize..7).prop_map(|(pick, seat)| Step::AsSeat { pick, seat }),
        2 => (any::<usize>(), any::<bool>(), json_value())
            .prop_map(|(pick, deep, value)| Step::UnknownField { pick, deep, value }),
        2 => (any::<usize>(), any::<usize>(), json_value())
            .prop_map(|(pick, at, with)| Step::Replace { pick, at, with }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(pick, at)| Step::Drop { pick, at }),
        1 => (0usize..7, json_value()).prop_map(|(seat, action)| Step::Raw { seat, action }),
        1 => any::<usize>().prop_map(|pick| Step::Again { pick }),
    ]
}

/// Runs one case: a match of `kind` with `options` (refused options must be refused as
/// `bad_options`/`bad_player_count` and are not played), then `steps`, then the end checks.
fn run(kind: &str, options: &Value, players: usize, seed: u64, steps: &[Step]) {
    let mut s = match Session::new(kind, options, players, seed) {
        Ok(s) => s,
        Err(e) => {
            // Only options or counts outside what the generator knows to be valid.
            assert!(
                !matches!(e, games::SetupError::UnknownGame(_)),
                "{kind}: {e:?}"
            );
            return;
        }
    };
    for st in steps {
        s.step(st);
    }
    s.check_finished_refuses();
    s.check_replay();
}

/// Some runs end: a match is played out by legal moves to its end, then poked.
fn run_to_the_end(kind: &str, options: &Value, players: usize, seed: u64, steps: &[Step]) {
    let mut s = Session::new(kind, options, players, seed).expect("valid options");
    for st in steps {
        s.step(st);
    }
    let mut guard = 0u64;
    while s.game().phase() != game_core::Phase::Finished {
        s.step(&Step::Burst {
            count: 50,
            salt: seed.wrapping_add(guard),
        });
        guard += 1;
        assert!(guard < 2_000, "{kind} does not end");
    }
    for st in steps {
        s.step(st);
    }
    s.check_finished_refuses();
    s.check_replay();
}

/// 24 cases per engine in the normal suite; `PROPTEST_CASES=N` for a longer hunt.
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            24
        },
        // Shrinking a failing sequence is what makes a failure readable.
        max_shrink_iters: 2_000,
        ..default
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn trump_state_machine(
        players in 2usize..=4,
        target in prop_oneof![1u32..40, Just(144), Just(0)],
        seed in any::<u64>(),
        steps in prop::collection::vec(step(), 0..60),
    ) {
        run("trump", &json!({"target": target}), players, seed, &steps);
    }

    #[test]
    fn trump_to_the_end(players in 2usize..=4, target in 1u32..30, seed in any::<u64>(),
                        steps in prop::collection::vec(step(), 0..12)) {
        run_to_the_end("trump", &json!({"target": target}), players, seed, &steps);
    }

    #[test]
    fn nachos_state_machine(
        players in 1usize..=6,
        seed in any::<u64>(),
        steps in prop::collection::vec(step(), 0..60),
    ) {
        run("nachos", &json!({}), players, seed, &steps);
    }

    #[test]
    fn nachos_to_the_end(players in 2usize..=5, seed in any::<u64>(),
                         steps in prop::collection::vec(step(), 0..12)) {
        run_to_the_end("nachos", &Value::Null, players, seed, &steps);
    }

    #[test]
    fn fibfib_state_machine(
        players in 1usize..=3,
        seed in any::<u64>(),
        steps in prop::collection::vec(step(), 0..60),
    ) {
        run("fibfib", &Value::Null, players, seed, &steps);
    }

    #[test]
    fn fibfib_to_the_end(seed in any::<u64>(), steps in prop::collection::vec(step(), 0..12)) {
        run_to_the_end("fibfib", &json!({}), 2, seed, &steps);
    }

    #[test]
    fn rummy_state_machine(
        players in 0usize..=5,
        target in prop::sample::select(vec![21u8, 13, 8, 20]),
        rounds in 0u32..3,
        first_to in prop::option::of(1i64..60),
        non_rabbit in any::<bool>(),
        seed in any::<u64>(),
        steps in prop::collection::vec(step(), 0..60),
    ) {
        let match_length = match first_to {
            Some(points) => json!({"kind": "first_to", "points": points}),
            None => json!({"kind": "rounds", "count": rounds}),
        };
        let options = json!({"target": target, "match_length": match_length, "non_rabbit": non_rabbit});
        run("rummy", &options, players, seed, &steps);
    }

    #[test]
    fn rummy_to_the_end(players in 1usize..=4, target in prop::sample::select(vec![21u8, 13, 8]),
                        non_rabbit in any::<bool>(), seed in any::<u64>(),
                        steps in prop::collection::vec(step(), 0..12)) {
        let options = json!({"target": target, "non_rabbit": non_rabbit});
        run_to_the_end("rummy", &options, players, seed, &steps);
    }
}
