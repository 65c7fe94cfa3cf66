//! Strict decoding of a game action: an action that names a field its type does not have
//! is refused with `unknown_field`, at any depth, like an unknown field of the message
//! envelope (`protocol::ClientMsg`).
//!
//! Serde's `deny_unknown_fields` on the rules crates' types is not enough on its own: a
//! unit variant of an internally tagged enum (`{"type":"draw"}`) ignores every other key,
//! so `{"type":"draw","x":1}` used to be accepted and applied. The check here walks the
//! action against the game's own JSON Schema (the one `docs/protocol.schema.json`
//! publishes, so what is refused is exactly what the published schema forbids with
//! `additionalProperties: false`), before serde decodes it: `protocol::strict`'s walk, the
//! one the server's HTTP bodies and lobby messages go through too.

use std::collections::HashMap;
use std::sync::OnceLock;

use protocol::strict::Refusal;
use serde_json::Value;

/// Each game's action schema, built once (schemars is not cheap enough to run per move).
fn action_schemas() -> &'static HashMap<&'static str, Value> {
    static SCHEMAS: OnceLock<HashMap<&'static str, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut map = HashMap::new();
        macro_rules! add {
            ($t:ty, $title:expr) => {
                map.insert(
                    <$t as game_core::Game>::KIND,
                    serde_json::to_value(schemars::schema_for!(<$t as game_core::Game>::Action))
                        .expect("a schema is JSON"),
                );
            };
        }
        crate::for_each_game!(add);
        map
    })
}

/// The first field of `action` that the action schema of game `kind` does not know, as a
/// readable path and the fields allowed there (``unknown field `x` in `action.card`:
/// expected `colour`, `number`, `symbol` ``), or the first array where the schema has an
/// object (`protocol::strict`). `Ok` also when the action is malformed in another way (a
/// wrong type, an unknown `type`): serde reports those.
pub(crate) fn unknown_field(kind: &str, action: &Value) -> Result<(), Refusal> {
    match action_schemas().get(kind) {
        Some(schema) => protocol::strict::check(action, schema, "action"),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_game_has_an_action_schema() {
        for info in crate::catalogue() {
            assert!(action_schemas().contains_key(info.kind), "{}", info.kind);
        }
    }

    #[test]
    fn known_actions_pass_and_unknown_fields_are_named_with_their_path() {
        let ok = [
            ("fibfib", json!({"type": "draw"})),
            (
                "fibfib",
                json!({"type": "play_joker", "card": {"id": 0, "rank": "joker"}, "bonus": null}),
            ),
            (
                "rummy",
                json!({"type": "open", "sets": [[{"card": 20, "number": null}]]}),
            ),
            (
                "trump",
                json!({"type": "play", "card": {"colour": "red", "number": 7, "symbol": "star"}}),
            ),
            (
                "nachos",
                json!({"type": "play", "card": {"suit": "red", "number": 1}}),
            ),
            // Not an unknown field: serde refuses these as `bad_action`.
            ("trump", json!({"type": "fly", "x": 1})),
            ("trump", json!("play")),
        ];
        for (kind, a) in ok {
            assert_eq!(unknown_field(kind, &a), Ok(()), "{kind} {a}");
        }
        let bad = [
            (
                "fibfib",
                json!({"type": "draw", "x": 1}),
                "unknown field `x` in `action`: it takes no other field",
            ),
            (
                "fibfib",
                json!({"type": "pass", "card": null}),
                "unknown field `card` in `action`: it takes no other field",
            ),
            (
                "fibfib",
                json!({"type": "play_joker", "card": {"id": 0, "rank": "joker"}, "bonus": {"card": {"id": 2, "rank": "two", "x": 0}, "side": 1}}),
                "unknown field `x` in `action.bonus.card`: expected `id`, `rank`, `suit`",
            ),
            (
                "rummy",
                json!({"type": "open", "sets": [[{"card": 20}], [{"card": 1, "wild": 3}]]}),
                "unknown field `wild` in `action.sets[1][0]`: expected `card`, `number`",
            ),
            (
                "rummy",
                json!({"type": "draw_stock", "n": 2}),
                "unknown field `n` in `action`: it takes no other field",
            ),
            (
                "trump",
                json!({"type": "play", "card": {"colour": "red", "number": 7}, "seat": 1}),
                "unknown field `seat` in `action`: expected `card`",
            ),
            (
                "nachos",
                json!({"type": "play", "card": {"suit": "red", "number": 1, "fibonacho": true}}),
                "unknown field `fibonacho` in `action.card`: expected `copy`, `number`, `suit`",
            ),
        ];
        // An array where the action or a part of it is an object: serde would have taken
        // it for the object's fields in order.
        for (kind, a, msg) in [
            (
                "trump",
                json!([1, 2]),
                "`action` must be a JSON object, not an array",
            ),
            (
                "trump",
                json!({"type": "play", "card": ["red", 7, "star"]}),
                "`action.card` must be a JSON object, not an array",
            ),
        ] {
            assert_eq!(
                unknown_field(kind, &a),
                Err(Refusal::NotAnObject(msg.to_string())),
                "{kind} {a}"
            );
        }
        for (kind, a, msg) in bad {
            assert_eq!(
                unknown_field(kind, &a),
                Err(Refusal::UnknownField(msg.to_string())),
                "{kind} {a}"
            );
        }
    }
}
