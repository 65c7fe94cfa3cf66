//! Strict decoding of a game action: an action that names a field its type does not have
//! is refused with `unknown_field`, at any depth, like an unknown field of the message
//! envelope (`protocol::ClientMsg`).
//!
//! Serde's `deny_unknown_fields` on the rules crates' types is not enough on its own: a
//! unit variant of an internally tagged enum (`{"type":"draw"}`) ignores every other key,
//! so `{"type":"draw","x":1}` used to be accepted and applied. The check here walks the
//! action against the game's own JSON Schema (the one `docs/protocol.schema.json`
//! publishes, so what is refused is exactly what the published schema forbids with
//! `additionalProperties: false`), before serde decodes it.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

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
/// readable path and the fields allowed there (`Err("`x` in `action.card`: expected one of
/// `colour`, `number`, `symbol`")`). `Ok` also when the action is malformed in another
/// way (a wrong type, an unknown `type`): serde reports those.
pub(crate) fn unknown_field(kind: &str, action: &Value) -> Result<(), String> {
    let Some(schema) = action_schemas().get(kind) else {
        return Ok(());
    };
    let defs = schema.get("$defs").and_then(Value::as_object);
    walk(action, schema, defs, &Path::Root("action"), 0)
}

/// Where the walk is, written out only for an error: formatting it at every field cost
/// more than the rest of the walk (a move goes through here).
enum Path<'a> {
    Root(&'a str),
    Field(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root(name) => f.write_str(name),
            Path::Field(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// Deeper than any action of ours; a hostile action nested deeper is malformed anyway and
/// left to serde (which has its own recursion limit).
const MAX_DEPTH: usize = 32;

fn walk(
    value: &Value,
    schema: &Value,
    defs: Option<&Map<String, Value>>,
    path: &Path<'_>,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let schema = resolve(schema, defs);
    // Internally tagged enum: the branch whose `type` constant the value names.
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        let tag = value.get("type").and_then(Value::as_str);
        let branch = branches.iter().map(|b| resolve(b, defs)).find(|b| {
            b.pointer("/properties/type/const").and_then(Value::as_str) == tag && tag.is_some()
        });
        return match branch {
            Some(b) => walk(value, b, defs, path, depth + 1),
            None => Ok(()),
        };
    }
    // `Option<T>` and similar: fine if any branch of the value's JSON type finds nothing
    // unknown (an object is never checked against the `null` branch).
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        let mut first_err = None;
        for b in branches.iter().filter(|b| admits(resolve(b, defs), value)) {
            match walk(value, b, defs, path, depth + 1) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        return first_err.map_or(Ok(()), Err);
    }
    match value {
        Value::Object(fields) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return Ok(());
            };
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, v) in fields {
                match props.get(key) {
                    Some(sub) => walk(v, sub, defs, &Path::Field(path, key), depth + 1)?,
                    None if closed => {
                        let mut known: Vec<&str> = props
                            .keys()
                            .map(String::as_str)
                            .filter(|k| *k != "type")
                            .collect();
                        known.sort_unstable();
                        let expected = if known.is_empty() {
                            "it takes no other field".to_string()
                        } else {
                            let list: Vec<String> =
                                known.iter().map(|k| format!("`{k}`")).collect();
                            format!("expected {}", list.join(", "))
                        };
                        return Err(format!("unknown field `{key}` in `{path}`: {expected}"));
                    }
                    None => {}
                }
            }
            Ok(())
        }
        Value::Array(items) => match schema.get("items") {
            Some(sub) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, v)| walk(v, sub, defs, &Path::Index(path, i), depth + 1)),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Whether `schema`'s `type` (absent: anything) admits the JSON type of `value`.
fn admits(schema: &Value, value: &Value) -> bool {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let fits = |t: &Value| t == kind || (kind == "integer" && t == "number");
    match schema.get("type") {
        None => true,
        Some(Value::Array(ts)) => ts.iter().any(fits),
        Some(t) => fits(t),
    }
}

/// Follows a local `$ref` (`#/$defs/Name`), the only kind schemars writes here.
fn resolve<'a>(schema: &'a Value, defs: Option<&'a Map<String, Value>>) -> &'a Value {
    let mut s = schema;
    // A chain of references is short; the bound only guards against a cycle.
    for _ in 0..8 {
        match s
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .and_then(|name| defs?.get(name))
        {
            Some(next) => s = next,
            None => break,
        }
    }
    s
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
            ("trump", json!([1, 2])),
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
        for (kind, a, msg) in bad {
            assert_eq!(unknown_field(kind, &a), Err(msg.to_string()), "{kind} {a}");
        }
    }
}
