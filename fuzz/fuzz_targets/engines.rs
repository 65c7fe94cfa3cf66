//! Fuzz target `engines`: every game, through the JSON face the server drives
//! (`games::DynGame`), built from fuzzed options, player count and seed, then driven by
//! fuzzer-chosen steps: mostly legal actions (picked from the seat's `legal` list), and
//! actions from the wrong seat, with unknown fields, with values replaced by arbitrary
//! JSON, with keys dropped, arbitrary JSON, and old actions sent again.
//! `games::conformance::Session` checks after every step what the stable property test
//! checks (`crates/games/tests/state_machine.rs`): no panic, a refusal changes nothing,
//! only legal actions are accepted, no view shows another seat's hand, a finished match
//! accepts nothing, and the replay of the seeds and accepted actions is identical.

#![no_main]

use games::conformance::{Session, Step};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

const KEYS: &[&str] = &[
    "type",
    "card",
    "colour",
    "number",
    "symbol",
    "suit",
    "copy",
    "id",
    "rank",
    "set",
    "sets",
    "bonus",
    "side",
    "column",
    "value",
    "replace",
    "from",
    "to",
    "target",
    "match_length",
    "kind",
    "points",
    "count",
    "non_rabbit",
    "x",
];
const WORDS: &[&str] = &[
    "play",
    "draw",
    "pass",
    "draw_stock",
    "draw_discard",
    "open",
    "start_set",
    "add_to_set",
    "discard",
    "play_joker",
    "play_run_card",
    "play_small_wild",
    "red",
    "purple",
    "joker",
    "six",
    "spades",
    "star",
    "rounds",
    "first_to",
    "",
];

/// Arbitrary JSON, biased towards what actions and options are made of.
fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let pick = if depth >= 3 {
        u.int_in_range(0..=5)?
    } else {
        u.int_in_range(0..=7)?
    };
    Ok(match pick {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.int_in_range(-2i64..=300)?),
        3 => json!(u.arbitrary::<i64>()?),
        4 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        5 => Value::String(if u.arbitrary()? {
            (*u.choose(WORDS)?).to_string()
        } else {
            u.arbitrary::<String>()?
        }),
        6 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array((0..n).map(|_| value(u, depth + 1)).collect::<Result<_>>()?)
        }
        _ => {
            let n = u.int_in_range(0..=3)?;
            let mut m = Map::new();
            for _ in 0..n {
                let k = if u.ratio(7, 8)? {
                    (*u.choose(KEYS)?).to_string()
                } else {
                    u.arbitrary::<String>()?
                };
                m.insert(k, value(u, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

fn step(u: &mut Unstructured) -> Result<Step> {
    Ok(match u.int_in_range(0..=19)? {
        0..=7 => Step::Legal {
            pick: u.arbitrary()?,
        },
        8..=10 => Step::Burst {
            count: u.int_in_range(1..=60)?,
            salt: u.arbitrary()?,
        },
        11 | 12 => Step::AsSeat {
            pick: u.arbitrary()?,
            seat: u.int_in_range(0..=6)?,
        },
        13 | 14 => Step::UnknownField {
            pick: u.arbitrary()?,
            deep: u.arbitrary()?,
            value: value(u, 1)?,
        },
        15 | 16 => Step::Replace {
            pick: u.arbitrary()?,
            at: u.arbitrary()?,
            with: value(u, 1)?,
        },
        17 => Step::Drop {
            pick: u.arbitrary()?,
            at: u.arbitrary()?,
        },
        18 => {
            // Either structured JSON or the raw bytes as JSON text.
            let action = if u.arbitrary()? {
                value(u, 0)?
            } else {
                let len = u.int_in_range(0..=64)?;
                serde_json::from_slice(u.bytes(len)?).unwrap_or(Value::Null)
            };
            Step::Raw {
                seat: u.int_in_range(0..=6)?,
                action,
            }
        }
        _ => Step::Again {
            pick: u.arbitrary()?,
        },
    })
}

/// Options for `kind`: mostly valid ones (short matches, so that ends are reached), and
/// sometimes arbitrary JSON (which must be refused without a panic, or accepted).
fn options(u: &mut Unstructured, kind: &str) -> Result<Value> {
    if u.ratio(1, 8)? {
        return value(u, 0);
    }
    Ok(match kind {
        "trump" => json!({"target": u.int_in_range(0u32..=160)?}),
        "rummy" => {
            let match_length = if u.arbitrary()? {
                json!({"kind": "rounds", "count": u.int_in_range(0u32..=3)?})
            } else {
                json!({"kind": "first_to", "points": u.int_in_range(-5i64..=80)?})
            };
            json!({
                "target": *u.choose(&[21u8, 13, 8, 0, 34])?,
                "match_length": match_length,
                "non_rabbit": u.arbitrary::<bool>()?,
            })
        }
        _ => Value::Null,
    })
}

fn run(u: &mut Unstructured) -> Result<()> {
    let kinds = games::catalogue();
    let kind = u.choose(&kinds)?.kind;
    let opts = options(u, kind)?;
    let players = u.int_in_range(0..=6)?;
    let seed = u.arbitrary()?;
    let Ok(mut session) = Session::new(kind, &opts, players, seed) else {
        return Ok(());
    };
    for _ in 0..200 {
        if u.is_empty() {
            break;
        }
        session.step(&step(u)?);
    }
    session.check_finished_refuses();
    session.check_replay();
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
