//! Strict JSON: what a value may hold beyond what serde's derives check, walked against
//! the JSON Schema of the type it is decoded into (the schema `docs/protocol.schema.json`
//! publishes, so what is refused is exactly what the published schema forbids).
//!
//! Serde alone lets two things through that the schemas forbid:
//! - an unknown field beside a unit variant of an internally tagged enum: `deny_unknown_fields`
//!   does not reach it, so `{"type":"draw","x":1}` or `{"kind":"untimed","x":1}` decoded;
//! - an array where an object is expected: a derived struct also decodes from a sequence of
//!   its fields in order, so `["Ada"]` made a guest named Ada and `{"pace":["live",30,60]}`
//!   a live pace. A client sending that is wrong, and must hear so rather than get a guess.
//!
//! The walk reports the first of those, with a readable path; anything else malformed (a
//! wrong type, a missing field, an unknown tag) is left to serde, which names it.
//!
//! A third thing happens before any walk: serde_json's `Value` keeps the last of two equal
//! keys of an object (`{"game":"trump","game":"nachos"}` made a Fibonachos table), where
//! another reader (a proxy, a validator) may keep the first. [`Unique`] parses like
//! `Value` and refuses such an object instead (a derived struct refuses a repeated field by
//! itself).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// Why a value does not fit its schema, as a message for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A field the type does not have: ``unknown field `x` in `action.card`: expected
    /// `colour`, `number`, `symbol` ``.
    UnknownField(String),
    /// An array where the type is an object: `` `body` must be a JSON object, not an array``.
    NotAnObject(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::UnknownField(m) | Refusal::NotAnObject(m) => f.write_str(m),
        }
    }
}

/// The JSON Schema of `T`, made once per type (schemars is not cheap enough to run per
/// request).
pub fn schema_of<T: JsonSchema + 'static>() -> Arc<Value> {
    static SCHEMAS: OnceLock<Mutex<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = SCHEMAS.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    if let Some(s) = cache.lock().expect("the schema cache").get(&id) {
        return s.clone();
    }
    // Made outside the lock: two threads may both make it the first time, alike.
    let schema =
        Arc::new(serde_json::to_value(schemars::schema_for!(T)).expect("a JSON Schema is JSON"));
    cache
        .lock()
        .expect("the schema cache")
        .entry(id)
        .or_insert(schema)
        .clone()
}

/// Checks `value` against `schema` (a whole schema, its `$defs` at the top), `root` naming
/// the value in messages (`action`, `body`, `options`).
pub fn check(value: &Value, schema: &Value, root: &str) -> Result<(), Refusal> {
    let defs = schema.get("$defs").and_then(Value::as_object);
    walk(value, schema, defs, &Path::Root(root), 0)
}

/// Decodes `value` as a `T` after checking it against `T`'s schema; serde's own refusal
/// otherwise, as its message, led by where in the value it was (`pace.kind: unknown variant
/// …`; nothing at the top).
pub fn decode<T>(value: &Value, root: &str) -> Result<T, String>
where
    T: serde::de::DeserializeOwned + JsonSchema + 'static,
{
    check(value, &schema_of::<T>(), root).map_err(|r| r.to_string())?;
    serde_path_to_error::deserialize(value).map_err(|e| e.to_string())
}

/// A JSON value, parsed as [`Value`] is but refusing an object that has a key twice:
/// ``duplicate key `game` `` (serde_json adds where).
#[derive(Clone, Debug, PartialEq)]
pub struct Unique(pub Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

/// [`Unique`] for a field of type [`Value`] (`#[serde(deserialize_with = …)]`).
pub fn unique<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    d.deserialize_any(UniqueVisitor)
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        unique(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(Unique(e)) = seq.next_element()? {
            v.push(e);
        }
        Ok(Value::Array(v))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        use serde::de::Error as _;
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(A::Error::custom(format_args!("duplicate key `{k}`")));
            }
            let Unique(v) = map.next_value()?;
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

/// Where the walk is, written out only for a refusal: formatting it at every field cost
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

/// Deeper than any type of ours; a hostile value nested deeper is malformed anyway and
/// left to serde (which has its own recursion limit).
const MAX_DEPTH: usize = 32;

fn not_an_object(path: &Path<'_>) -> Refusal {
    Refusal::NotAnObject(format!("`{path}` must be a JSON object, not an array"))
}

fn walk(
    value: &Value,
    schema: &Value,
    defs: Option<&Map<String, Value>>,
    path: &Path<'_>,
    depth: usize,
) -> Result<(), Refusal> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let schema = resolve(schema, defs);
    // An internally tagged enum: the branch whose tag constant the value names.
    if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
        let branches: Vec<&Value> = branches.iter().map(|b| resolve(b, defs)).collect();
        if value.is_array() && branches.iter().all(|b| is_object(b)) {
            return Err(not_an_object(path));
        }
        return match branches.iter().find(|b| names_branch(value, b)) {
            Some(b) => walk(value, b, defs, path, depth + 1),
            None => Ok(()),
        };
    }
    // `Option<T>` and similar: fine if any branch of the value's JSON type finds nothing
    // unknown (an object is never checked against the `null` branch).
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        let mut first_err = None;
        let mut admitted = false;
        for b in branches.iter().filter(|b| admits(resolve(b, defs), value)) {
            admitted = true;
            match walk(value, b, defs, path, depth + 1) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if !admitted && value.is_array() && branches.iter().any(|b| is_object(resolve(b, defs))) {
            return Err(not_an_object(path));
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
                            .iter()
                            .filter(|(_, s)| tag_of(s).is_none())
                            .map(|(k, _)| k.as_str())
                            .collect();
                        known.sort_unstable();
                        let expected = if known.is_empty() {
                            "it takes no other field".to_string()
                        } else {
                            let list: Vec<String> =
                                known.iter().map(|k| format!("`{k}`")).collect();
                            format!("expected {}", list.join(", "))
                        };
                        return Err(Refusal::UnknownField(format!(
                            "unknown field `{key}` in `{path}`: {expected}"
                        )));
                    }
                    None => {}
                }
            }
            Ok(())
        }
        Value::Array(_) if is_object(schema) => Err(not_an_object(path)),
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

/// The constant a property's schema pins its value to (an enum's tag): `const`, or an
/// `enum` of one value.
fn tag_of(property: &Value) -> Option<&Value> {
    property.get("const").or_else(|| {
        property
            .get("enum")
            .and_then(Value::as_array)
            .filter(|e| e.len() == 1)
            .and_then(|e| e.first())
    })
}

/// Whether `value` names `branch` of a tagged enum: some property the branch pins to a
/// constant (its tag, whatever the tag's name: `type`, `kind`) has that value.
fn names_branch(value: &Value, branch: &Value) -> bool {
    let (Some(fields), Some(props)) = (
        value.as_object(),
        branch.get("properties").and_then(Value::as_object),
    ) else {
        return false;
    };
    props
        .iter()
        .any(|(k, s)| tag_of(s).is_some_and(|tag| fields.get(k) == Some(tag)))
}

/// Whether `schema` takes an object and no array (`"object"`, or a list of types with
/// `"object"` and without `"array"`, as `["object", "null"]`).
fn is_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => {
            ts.iter().any(|t| t == "object") && !ts.iter().any(|t| t == "array")
        }
        _ => false,
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
    #[test]
    fn an_object_with_a_key_twice_is_refused_at_any_depth() {
        let parse = |t: &str| serde_json::from_str::<super::Unique>(t).map(|u| u.0);
        let e = parse(r#"{"game":"trump","seats":2,"game":"nachos"}"#).unwrap_err();
        assert!(e.to_string().starts_with("duplicate key `game`"), "{e}");
        let e = parse(r#"{"pace":{"kind":"live","move_s":5,"move_s":9}}"#).unwrap_err();
        assert!(e.to_string().starts_with("duplicate key `move_s`"), "{e}");
        let e = parse(r#"[1,{"a":1,"a":1}]"#).unwrap_err();
        assert!(e.to_string().starts_with("duplicate key `a`"), "{e}");
        // Anything else parses exactly as a `Value` does.
        for t in [
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":18446744073709551615}"#,
            "null",
            "[]",
            r#""é\u00e9""#,
        ] {
            assert_eq!(
                parse(t).unwrap(),
                serde_json::from_str::<serde_json::Value>(t).unwrap(),
                "{t}"
            );
        }
    }

    use super::*;
    use crate::{CreateTableRequest, GuestRequest, Pace};
    use serde_json::json;

    fn create(body: Value) -> Result<CreateTableRequest, String> {
        decode::<CreateTableRequest>(&body, "body")
    }

    #[test]
    fn a_unit_variant_of_a_tagged_enum_takes_no_other_field() {
        assert_eq!(
            decode::<Pace>(&json!({"kind": "untimed"}), "pace"),
            Ok(Pace::Untimed)
        );
        assert_eq!(
            decode::<Pace>(&json!({"kind": "untimed", "bogus": 3}), "pace"),
            Err("unknown field `bogus` in `pace`: it takes no other field".into())
        );
        assert_eq!(
            create(json!({"game": "trump", "seats": 2, "pace": {"kind": "untimed", "x": 1}}))
                .unwrap_err(),
            "unknown field `x` in `body.pace`: it takes no other field"
        );
        // A struct variant's unknown field is named the same way, with what it takes.
        assert_eq!(
            decode::<Pace>(
                &json!({"kind": "live", "move_s": 30, "bank_s": 0, "y": 1}),
                "pace"
            )
            .unwrap_err(),
            "unknown field `y` in `pace`: expected `bank_s`, `move_s`"
        );
    }

    #[test]
    fn an_array_is_no_object() {
        // Each of these decodes with serde alone (a struct from a sequence of its fields,
        // an internally tagged enum from a sequence starting with its tag).
        assert_eq!(
            decode::<GuestRequest>(&json!(["Zed"]), "body").unwrap_err(),
            "`body` must be a JSON object, not an array"
        );
        assert_eq!(
            create(json!(["trump", 2])).unwrap_err(),
            "`body` must be a JSON object, not an array"
        );
        assert_eq!(
            create(json!({"game": "trump", "seats": 2, "pace": ["live", 30, 60]})).unwrap_err(),
            "`body.pace` must be a JSON object, not an array"
        );
        assert!(decode::<GuestRequest>(&json!({"name": "Zed"}), "body").is_ok());
    }

    #[test]
    fn what_serde_refuses_is_left_to_serde() {
        // A wrong type, a missing field, an unknown tag: serde's messages name them.
        let e = create(json!({"game": 3, "seats": 2})).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let e = create(json!({"seats": 2})).unwrap_err();
        assert!(e.contains("missing field `game`"), "{e}");
        let e =
            create(json!({"game": "trump", "seats": 2, "pace": {"kind": "blitz"}})).unwrap_err();
        assert!(e.starts_with("pace.kind: unknown variant `blitz`"), "{e}");
        // A body's own unknown field: serde's `deny_unknown_fields` would say so too, the
        // walk says it first, with the path.
        assert_eq!(
            create(json!({"game": "trump", "seats": 2, "colour": "red"})).unwrap_err(),
            "unknown field `colour` in `body`: expected `bots`, `game`, `join`, `options`, \
             `pace`, `private`, `seats`"
        );
    }

    /// Both sockets' decoders: an internally tagged enum reads a sequence as its tag and
    /// fields, which no client of ours sends.
    #[test]
    fn a_socket_message_written_as_an_array_is_refused() {
        assert!(
            serde_json::from_str::<crate::ClientMsg>(r#"["ping"]"#).is_ok(),
            "serde's way"
        );
        let e = crate::ClientMsg::decode(r#" ["ping"]"#).unwrap_err();
        assert_eq!(e.to_string(), "a message is a JSON object, not an array");
        assert!(crate::ClientMsg::decode(r#"{"type":"ping"}"#).is_ok());
        let e = crate::LobbyClientMsg::decode(r#"["queue_leave"]"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`message` must be a JSON object, not an array"
        );
        assert!(crate::LobbyClientMsg::decode(r#"{"type":"queue_leave"}"#).is_ok());
    }

    #[test]
    fn an_object_is_known_by_its_type_alone_or_in_a_list() {
        assert!(is_object(&json!({"type": "object"})));
        assert!(is_object(&json!({"type": ["object", "null"]})));
        assert!(!is_object(&json!({"type": ["object", "array"]})));
        assert!(!is_object(&json!({"type": "array"})));
        assert!(!is_object(&json!({})));
    }

    #[test]
    fn a_schema_is_made_once_per_type() {
        assert!(Arc::ptr_eq(&schema_of::<Pace>(), &schema_of::<Pace>()));
        assert!(!Arc::ptr_eq(
            &schema_of::<Pace>(),
            &schema_of::<GuestRequest>()
        ));
    }
}
