//! JSON Patch (RFC 6902), the subset the server sends: `add`, `remove` and `replace`, with
//! JSON Pointer paths (RFC 6901). After its first full `state`, a table socket receives
//! each change as a list of these operations against the state document it holds, so a
//! move costs a few hundred bytes instead of the whole state.
//!
//! [`diff`] makes the operations, [`apply`] applies them. Any RFC 6902 library applies what
//! [`diff`] makes; [`apply`] (and [`PatchMessage::read`], the patch message read in one pass)
//! exists so that Rust clients (the load generator, the tests) need nothing else.
//!
//! Arrays are compared after trimming their common head and tail, so taking one card out
//! of a hand is one `remove`, not a rewrite of every later position; and where
//! a container's changes would take more of the patch than its new value, it is replaced
//! whole (`or_replace`): a Trump move's patches became 37 % smaller (`view_diff_bench`).

use schemars::JsonSchema;
use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

mod doc;
mod text;
pub use doc::{Doc, diff_docs_at};
pub use text::{Node, TextDoc, TextOp, TextPatchMessage};

/// One operation of a patch. Written (`Serialize`) as RFC 6902 writes it; read in that form
/// or in the compact form of `patch` messages (protocol.md §3.4): `[path]` removes,
/// `[path, value]` replaces, `["+" path, value]` adds, and a path that does not start with
/// `/` is under `/view/` (`"turn"` is `/view/turn`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum PatchOp {
    /// Sets an object member, or inserts into an array at `path`'s index (`-` or the
    /// length appends).
    Add { path: String, value: Value },
    /// Removes an object member, or an array element (later elements shift down).
    Remove { path: String },
    /// Replaces the value at `path` (`""` is the whole document).
    Replace { path: String, value: Value },
}

/// [`PatchOp`] as RFC 6902 writes it: its schema, and the object form read.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "JsonPatchOp")]
#[allow(dead_code)] // read through `WireOp`; here for its schema
enum RfcOp {
    /// Sets an object member, or inserts into an array at `path`'s index (`-` or the
    /// length appends).
    Add { path: String, value: Value },
    /// Removes an object member, or an array element (later elements shift down).
    Remove { path: String },
    /// Replaces the value at `path` (`""` is the whole document).
    Replace { path: String, value: Value },
}

impl<'de> Deserialize<'de> for PatchOp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let WireOp(kind, path, value) = WireOp::<Value>::deserialize(d)?;
        match (kind, value) {
            (WireKind::Add, Some(value)) => Ok(PatchOp::Add { path, value }),
            (WireKind::Replace, Some(value)) => Ok(PatchOp::Replace { path, value }),
            (WireKind::Remove, None) => Ok(PatchOp::Remove { path }),
            (WireKind::Remove, Some(_)) => Err(serde::de::Error::custom(
                "a remove operation takes no value",
            )),
            _ => Err(serde::de::Error::missing_field("value")),
        }
    }
}

impl JsonSchema for PatchOp {
    fn schema_name() -> Cow<'static, str> {
        "PatchOp".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let rfc = generator.subschema_for::<RfcOp>();
        schemars::json_schema!({
            "description": "A patch operation: RFC 6902 (`{\"op\":\"replace\",\"path\":\"/view/turn\",\"value\":1}`, what `updates=json_patch` and replays send), or its compact form (the default of `patch` messages, protocol.md §3.4): `[path]` removes, `[path, value]` replaces, `[\"+\" + path, value]` adds; a path that does not start with `/` is under `/view/` (`[\"turn\",1]` replaces `/view/turn`).",
            "anyOf": [
                rfc,
                {
                    "type": "array",
                    "prefixItems": [{"type": "string"}, true],
                    "items": false,
                    "minItems": 1,
                    "maxItems": 2
                }
            ]
        })
    }
}

/// The path a compact operation's path text stands for: itself if it starts with `/`,
/// else the same under `/view/`.
fn full_path(path: String) -> String {
    if path.starts_with('/') {
        path
    } else {
        let mut full = String::with_capacity(path.len() + 6);
        full.push_str("/view/");
        full.push_str(&path);
        full
    }
}

/// How a compact operation writes `path`: under `/view/` without that prefix (when what
/// is left cannot be read otherwise: not empty, no leading `/` or `+`).
fn compact_path(path: &str) -> &str {
    match path.strip_prefix("/view/") {
        Some(rest) if !rest.is_empty() && !rest.starts_with(['/', '+']) => rest,
        _ => path,
    }
}

/// Why a patch does not apply: the document is not the one the patch was made against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchError(pub String);

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "patch does not apply: {}", self.0)
    }
}

impl std::error::Error for PatchError {}

/// The operations that turn `old` into `new` (empty when they are equal).
pub fn diff(old: &Value, new: &Value) -> Vec<PatchOp> {
    let mut ops = Vec::new();
    diff_at("", old, new, &mut ops);
    ops
}

/// Appends to `ops` the operations that turn `old`, found at `path` (a JSON Pointer, `""`
/// for the root) of a larger document, into `new`.
pub fn diff_at(path: &str, old: &Value, new: &Value, ops: &mut Vec<PatchOp>) {
    let mut path = path.to_string();
    let mut made = Vec::new();
    diff_into(old, new, &mut path, &mut made);
    ops.extend(made.into_iter().map(PatchOp::from));
}

fn push_token(path: &mut String, token: &str) {
    path.push('/');
    if !token.contains(['~', '/']) {
        path.push_str(token);
        return;
    }
    for c in token.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// An operation being made. Its value is a [`Value`] (the value diff) or the value's JSON
/// text (the text diff), which is parsed, or copied as it is, only once the operation is
/// sure to be kept ([`or_replace`] may drop it).
#[derive(Clone)]
enum Op<V> {
    Add { path: String, value: V },
    Remove { path: String },
    Replace { path: String, value: V },
}

impl<V> Op<V> {
    fn finish<W>(self, value: impl FnOnce(V) -> W) -> Op<W> {
        match self {
            Op::Add { path, value: v } => Op::Add {
                path,
                value: value(v),
            },
            Op::Remove { path } => Op::Remove { path },
            Op::Replace { path, value: v } => Op::Replace {
                path,
                value: value(v),
            },
        }
    }

    fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Remove { path } | Op::Replace { path, .. } => path,
        }
    }
}

impl From<Op<Value>> for PatchOp {
    fn from(op: Op<Value>) -> Self {
        match op {
            Op::Add { path, value } => PatchOp::Add { path, value },
            Op::Remove { path } => PatchOp::Remove { path },
            Op::Replace { path, value } => PatchOp::Replace { path, value },
        }
    }
}

/// An operation's value as the patch carries it: its length written compactly.
trait Written {
    fn written_len(&self) -> usize;
}

impl Written for Value {
    fn written_len(&self) -> usize {
        serde_json::to_string(self).map_or(0, |t| t.len())
    }
}

impl Written for Cow<'_, str> {
    fn written_len(&self) -> usize {
        self.len()
    }
}

/// What an operation adds to a patch besides its path and value, in the compact form that
/// sockets get by default (protocol.md §3.4): `["+",],` for an add, `[""],` for a remove,
/// `["",],` for a replace (escapes in paths, and the `/view/` a compact path leaves out,
/// are not counted). The choices below are made for that form: in RFC 6902's
/// (`{"op":"add","path":"","value":},`, 26 to 36 bytes a frame) the same patch is exact,
/// if at times longer than a replace would have been. While they were made for RFC 6902's
/// frames, a Trump view's sorted `played` cards were replaced whole at every trick (up to
/// 48 codes); now each trick adds its two cards.
fn frame<V>(op: &Op<V>) -> usize {
    match op {
        Op::Add { .. } => 7,
        Op::Remove { .. } => 5,
        Op::Replace { .. } => 6,
    }
}

/// The frame of the one `replace` that could stand for a container's operations.
const REPLACE_FRAME: usize = 6;

/// When the operations appended after `start` (a container's changes) would make the
/// patch longer than one `replace` of the whole container, whose new text is `new_len`
/// bytes (as far as an estimate that leaves out escapes can tell), puts that replace
/// instead: a hand emptied at the end of a trick is one `[]`, not
/// a `remove` per card, and a record whose every field changed is one value, not a path
/// per field. Both diffs measure alike (values as their compact text), so they choose
/// alike. Whether it replaced them.
fn or_replace<V: Written>(
    ops: &mut Vec<Op<V>>,
    start: usize,
    path: &str,
    new_len: usize,
    new: impl FnOnce() -> V,
) -> bool {
    if ops.len() - start < 2 {
        return false;
    }
    let whole = REPLACE_FRAME + path.len() + new_len;
    // The paths alone are a lower bound, found without measuring any value.
    let bare: usize = ops[start..]
        .iter()
        .map(|op| frame(op) + op.path().len())
        .sum();
    let longer = bare > whole || {
        let values: usize = ops[start..]
            .iter()
            .map(|op| match op {
                Op::Add { value, .. } | Op::Replace { value, .. } => value.written_len(),
                Op::Remove { .. } => 0,
            })
            .sum();
        bare + values > whole
    };
    if longer {
        ops.truncate(start);
        ops.push(Op::Replace {
            path: path.to_string(),
            value: new(),
        });
    }
    longer
}

fn diff_into(old: &Value, new: &Value, path: &mut String, ops: &mut Vec<Op<Value>>) {
    let start = ops.len();
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let len = path.len();
            for (k, va) in a {
                let vb = b.get(k);
                // Most members of a view are unchanged by a move: comparing is cheaper than
                // walking them with a path.
                if vb == Some(va) {
                    continue;
                }
                push_token(path, k);
                match vb {
                    Some(vb) => diff_into(va, vb, path, ops),
                    None => ops.push(Op::Remove { path: path.clone() }),
                }
                path.truncate(len);
            }
            for (k, vb) in b {
                if !a.contains_key(k) {
                    push_token(path, k);
                    ops.push(Op::Add {
                        path: path.clone(),
                        value: vb.clone(),
                    });
                    path.truncate(len);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            diff_seq(a, b, |x, y| x == y, diff_into, Value::clone, path, ops);
        }
        _ if old == new => {}
        _ => ops.push(Op::Replace {
            path: path.clone(),
            value: new.clone(),
        }),
    }
    if ops.len() - start > 1 {
        or_replace(ops, start, path, new.written_len(), || new.clone());
    }
}

/// The patch between two arrays, elements compared by `same`, changed elements diffed by
/// `inner`, new ones written by `value`. Their common head and tail are trimmed; if what is
/// left of one is the other's with elements taken out (a card played from a hand) or put
/// in (a card into a sorted list of cards seen), the patch removes or adds just those;
/// otherwise the elements are diffed position by position and the surplus removed or
/// added at the end.
fn diff_seq<T, V>(
    a: &[T],
    b: &[T],
    same: impl Fn(&T, &T) -> bool,
    mut inner: impl FnMut(&T, &T, &mut String, &mut Vec<Op<V>>),
    value: impl Fn(&T) -> V,
    path: &mut String,
    ops: &mut Vec<Op<V>>,
) {
    let shortest = a.len().min(b.len());
    let head = a.iter().zip(b).take_while(|(x, y)| same(x, y)).count();
    let tail = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(shortest - head)
        .take_while(|(x, y)| same(x, y))
        .count();
    let (mid_a, mid_b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let len = path.len();
    let at = |path: &mut String, i: usize| push_token(path, &i.to_string());
    if mid_a.len() > mid_b.len() && is_subsequence(mid_b, mid_a, &same) {
        // Only removals: each at the place of the elements kept so far.
        let mut kept = 0;
        for x in mid_a {
            if kept < mid_b.len() && same(x, &mid_b[kept]) {
                kept += 1;
            } else {
                at(path, head + kept);
                ops.push(Op::Remove { path: path.clone() });
                path.truncate(len);
            }
        }
        return;
    }
    if mid_b.len() > mid_a.len() && is_subsequence(mid_a, mid_b, &same) {
        // Only additions, at their final places.
        let mut kept = 0;
        for (j, y) in mid_b.iter().enumerate() {
            if kept < mid_a.len() && same(&mid_a[kept], y) {
                kept += 1;
            } else {
                at(path, head + j);
                ops.push(Op::Add {
                    path: path.clone(),
                    value: value(y),
                });
                path.truncate(len);
            }
        }
        return;
    }
    let both = mid_a.len().min(mid_b.len());
    for i in 0..both {
        if same(&mid_a[i], &mid_b[i]) {
            continue;
        }
        at(path, head + i);
        inner(&mid_a[i], &mid_b[i], path, ops);
        path.truncate(len);
    }
    // Surplus old elements all sit at the same index as each removal shifts the rest.
    for _ in both..mid_a.len() {
        at(path, head + both);
        ops.push(Op::Remove { path: path.clone() });
        path.truncate(len);
    }
    for (i, v) in mid_b.iter().enumerate().skip(both) {
        at(path, head + i);
        ops.push(Op::Add {
            path: path.clone(),
            value: value(v),
        });
        path.truncate(len);
    }
}

/// Whether `short`'s elements appear in `long` in the same order (a greedy walk finds
/// them if anything does).
fn is_subsequence<T>(short: &[T], long: &[T], same: impl Fn(&T, &T) -> bool) -> bool {
    let mut k = 0;
    for y in long {
        if k < short.len() && same(&short[k], y) {
            k += 1;
        }
    }
    k == short.len()
}

/// The operations that turn the JSON text `old`, found at `path` of a larger document,
/// into the JSON text `new`: a patch that does what [`diff_at`]'s does on the parsed
/// values. Equal parts are found by comparing their text, and only the parts that differ
/// are split (one level at a time, by a scanner that only counts brackets and quotes) or,
/// where the patch carries them, parsed. A viewer's document need not be held, built or
/// compared as a tree of values: what the server does for each viewer after each change.
///
/// Equal values must be equal texts, as one serializer writes them (`serde_json`: members
/// in a fixed order). Where keys come in another order, the members pair up by name; a
/// key written with escapes makes that object compared as values: the patch does the
/// same either way. For compact texts the patch is the very one [`diff_at`] makes.
pub fn diff_raw_at(path: &str, old: &RawValue, new: &RawValue, ops: &mut Vec<PatchOp>) {
    let mut path = path.to_string();
    let mut made = Vec::new();
    diff_text(old.get().trim(), new.get().trim(), &mut path, &mut made);
    ops.extend(made.into_iter().map(|op| op.finish(|t| parsed(&t)).into()));
}

/// [`diff_raw_at`] with the values left as the text they were found as: what a server
/// writes straight into its messages ([`write_ops`]). Nothing is built as a tree of values,
/// written again or checked again: each value is a part of `new`, valid JSON.
pub fn diff_raw_text_at(path: &str, old: &RawValue, new: &RawValue, ops: &mut Vec<RawPatchOp>) {
    let mut path = path.to_string();
    let mut made = Vec::new();
    diff_text(old.get().trim(), new.get().trim(), &mut path, &mut made);
    ops.extend(made.into_iter().map(RawPatchOp::from));
}

/// A [`PatchOp`] whose value is JSON text (a part of a valid document), written as it is by
/// [`write_ops`]: the same message on the wire. It has no `Serialize`: serde would write
/// the text as a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawPatchOp {
    Add { path: String, value: String },
    Remove { path: String },
    Replace { path: String, value: String },
}

impl RawPatchOp {
    /// The JSON Pointer the operation changes.
    pub fn path(&self) -> &str {
        match self {
            RawPatchOp::Add { path, .. }
            | RawPatchOp::Remove { path }
            | RawPatchOp::Replace { path, .. } => path,
        }
    }
}

impl From<Op<Cow<'_, str>>> for RawPatchOp {
    fn from(op: Op<Cow<'_, str>>) -> Self {
        match op {
            Op::Add { path, value } => RawPatchOp::Add {
                path,
                value: value.into_owned(),
            },
            Op::Remove { path } => RawPatchOp::Remove { path },
            Op::Replace { path, value } => RawPatchOp::Replace {
                path,
                value: value.into_owned(),
            },
        }
    }
}

/// Appends `ops` as a JSON array, byte for byte what serde writes for the same
/// [`PatchOp`]s (`{"op":"add","path":…,"value":…}`, compact).
pub fn write_ops(out: &mut String, ops: &[RawPatchOp]) {
    out.push('[');
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (kind, path, value) = match op {
            RawPatchOp::Add { path, value } => ("add", path, Some(value)),
            RawPatchOp::Remove { path } => ("remove", path, None),
            RawPatchOp::Replace { path, value } => ("replace", path, Some(value)),
        };
        out.push_str("{\"op\":\"");
        out.push_str(kind);
        out.push_str("\",\"path\":");
        push_json_str(out, path);
        if let Some(value) = value {
            out.push_str(",\"value\":");
            out.push_str(value);
        }
        out.push('}');
    }
    out.push(']');
}

/// Appends `ops` as a JSON array of compact operations (protocol.md §3.4): `[path]` for a
/// remove, `[path,value]` for a replace, `["+path",value]` for an add, paths under `/view/`
/// written without that prefix. The same patch as [`write_ops`]'s, in a third of the
/// bytes. No operation may be at the root (`""`): the server sends a state instead.
pub fn write_ops_compact(out: &mut String, ops: &[RawPatchOp]) {
    out.push('[');
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (add, path, value) = match op {
            RawPatchOp::Add { path, value } => (true, path, Some(value)),
            RawPatchOp::Remove { path } => (false, path, None),
            RawPatchOp::Replace { path, value } => (false, path, Some(value)),
        };
        debug_assert!(!path.is_empty(), "no compact operation at the root");
        let path = compact_path(path);
        out.push('[');
        if path.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            let mut p = String::with_capacity(path.len() + 1);
            if add {
                p.push('+');
            }
            p.push_str(path);
            out.push_str(&serde_json::to_string(&p).expect("a string serializes"));
        } else {
            out.push('"');
            if add {
                out.push('+');
            }
            out.push_str(path);
            out.push('"');
        }
        if let Some(value) = value {
            out.push(',');
            out.push_str(value);
        }
        out.push(']');
    }
    out.push(']');
}

/// Appends `s` as a JSON string, escaped as serde_json escapes it.
fn push_json_str(out: &mut String, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(&serde_json::to_string(s).expect("a string serializes"));
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

/// The value of a part of a [`RawValue`]: valid JSON.
fn parsed(text: &str) -> Value {
    serde_json::from_str(text).expect("a part of a RawValue is valid JSON")
}

fn diff_text<'t>(a: &'t str, b: &'t str, path: &mut String, ops: &mut Vec<Op<Cow<'t, str>>>) {
    if a == b {
        return;
    }
    #[cfg(test)]
    TEXT_DIFFS.with(|n| n.set(n.get() + 1));
    let start = ops.len();
    match (a.as_bytes().first(), b.as_bytes().first()) {
        (Some(b'{'), Some(b'{')) => {
            let (Some(ma), Some(mb)) = (members(a), members(b)) else {
                // A key with escapes: this part is compared as values, and the values of
                // its operations written back as text.
                let mut made = Vec::new();
                diff_into(&parsed(a), &parsed(b), path, &mut made);
                ops.extend(made.into_iter().map(|op| {
                    op.finish(|v| Cow::Owned(serde_json::to_string(&v).expect("serializes")))
                }));
                return;
            };
            let len = path.len();
            // One serializer writes a struct's members in one order: then they pair up by
            // position; otherwise (a map's keys came and went) by name.
            let aligned = ma.len() == mb.len() && ma.iter().zip(&mb).all(|(x, y)| x.0 == y.0);
            for (i, (k, va)) in ma.iter().enumerate() {
                let vb = if aligned {
                    Some(mb[i].1)
                } else {
                    mb.iter().find(|(kb, _)| kb == k).map(|(_, v)| *v)
                };
                match vb {
                    Some(vb) if *va == vb => {}
                    Some(vb) => {
                        push_token(path, k);
                        diff_text(va, vb, path, ops);
                        path.truncate(len);
                    }
                    None => {
                        push_token(path, k);
                        ops.push(Op::Remove { path: path.clone() });
                        path.truncate(len);
                    }
                }
            }
            if !aligned {
                for (k, vb) in &mb {
                    if !ma.iter().any(|(ka, _)| ka == k) {
                        push_token(path, k);
                        ops.push(Op::Add {
                            path: path.clone(),
                            value: Cow::Borrowed(*vb),
                        });
                        path.truncate(len);
                    }
                }
            }
        }
        // Emptied, or filled from empty, with two or more elements: what `or_replace`
        // below would choose over a `remove` or an `add` per element (each costs more than
        // the replace's frame), found without splitting the other side. A seat's playable
        // cards and legal actions do this every time the turn comes or goes.
        (Some(b'['), Some(b'['))
            if (a == "[]" && two_or_more(b)) || (b == "[]" && two_or_more(a)) =>
        {
            ops.push(Op::Replace {
                path: path.clone(),
                value: Cow::Borrowed(b),
            })
        }
        (Some(b'['), Some(b'[')) => diff_seq(
            &elements(a),
            &elements(b),
            |x, y| x == y,
            |x, y, path, ops| diff_text(x, y, path, ops),
            |x| Cow::Borrowed(*x),
            path,
            ops,
        ),
        // Different texts of anything else are different values.
        _ => ops.push(Op::Replace {
            path: path.clone(),
            value: Cow::Borrowed(b),
        }),
    }
    if ops.len() - start > 1 {
        or_replace(ops, start, path, b.len(), || Cow::Borrowed(b));
    }
}

#[cfg(test)]
thread_local! {
    /// How many times [`diff_text`] compared two different texts on this thread: lets a
    /// test tell work done from work copied ([`doc::diff_docs_at`]).
    static TEXT_DIFFS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn skip_ws(t: &[u8], mut i: usize) -> usize {
    while i < t.len() && matches!(t[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// Where the value starting at `i` of valid JSON text `t` ends (the index after it).
fn value_end(t: &[u8], i: usize) -> usize {
    match t[i] {
        b'"' => string_end(t, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                // Straight to the next byte that matters (most are letters and digits).
                while !STRUCTURAL[t[j] as usize] {
                    j += 1;
                }
                match t[j] {
                    b'"' => {
                        j = string_end(t, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < t.len() && !matches!(t[j], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                j += 1;
            }
            j
        }
    }
}

/// The bytes [`value_end`] stops at inside an object or array.
static STRUCTURAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// Where the string starting at `i` (its opening quote) ends, after its closing quote.
fn string_end(t: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    loop {
        while !matches!(t[j], b'"' | b'\\') {
            j += 1;
        }
        match t[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
}

/// The members of a JSON object's valid text, as (key, value text), in the order written;
/// `None` if a key has escapes (it cannot be used as written).
fn members(text: &str) -> Option<Vec<(&str, &str)>> {
    let t = text.as_bytes();
    let mut out = Vec::with_capacity(16);
    let mut i = skip_ws(t, 1);
    while t[i] != b'}' {
        let key_end = string_end(t, i);
        let key = &text[i + 1..key_end - 1];
        if key.contains('\\') {
            return None;
        }
        let v = skip_ws(t, skip_ws(t, key_end) + 1); // past the colon
        let end = value_end(t, v);
        out.push((key, &text[v..end]));
        i = skip_ws(t, end);
        if t[i] == b',' {
            i = skip_ws(t, i + 1);
        }
    }
    Some(out)
}

/// Whether the array `text` (valid JSON) has at least two elements: only its first is
/// scanned.
fn two_or_more(text: &str) -> bool {
    let t = text.as_bytes();
    let i = skip_ws(t, 1);
    t[i] != b']' && t[skip_ws(t, value_end(t, i))] == b','
}

/// The elements of a JSON array's valid text, as text.
fn elements(text: &str) -> Vec<&str> {
    let t = text.as_bytes();
    let mut out = Vec::with_capacity(16);
    let mut i = skip_ws(t, 1);
    while t[i] != b']' {
        let end = value_end(t, i);
        out.push(&text[i..end]);
        i = skip_ws(t, end);
        if t[i] == b',' {
            i = skip_ws(t, i + 1);
        }
    }
    out
}

/// A `patch` message (`ServerMsg::Patch`) as a client reads it after every move: in one
/// pass, into owned parts. Read as a [`crate::ServerMsg`], which is tagged by `type`, serde
/// must first buffer the whole message in a generic form, and each operation (tagged by
/// `op`) again: about a tenth of the load generator's CPU under the flat load (perf).
#[derive(Clone, Debug, PartialEq)]
pub struct PatchMessage {
    pub from: u64,
    pub version: u64,
    pub ops: Vec<PatchOp>,
    pub events: Vec<Value>,
}

impl PatchMessage {
    /// The patch message `text`, as the server writes it (`type` first); `None` for any
    /// other message, and for a patch of the wrong shape: read those as a `ServerMsg`,
    /// which says what is wrong.
    pub fn read(text: &str) -> Option<PatchMessage> {
        let m = read_wire::<Value, Value>(text)?;
        let ops = m
            .ops
            .into_iter()
            .map(|(kind, path, value)| match (kind, value) {
                (WireKind::Add, Some(value)) => Some(PatchOp::Add { path, value }),
                (WireKind::Replace, Some(value)) => Some(PatchOp::Replace { path, value }),
                (WireKind::Remove, None) => Some(PatchOp::Remove { path }),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PatchMessage {
            from: m.from,
            version: m.version,
            ops,
            events: m.events,
        })
    }
}

/// A `patch` message's parts as the server writes it (`type` first), each operation's
/// value read as a `V` and each event as an `E`: trees of values ([`PatchMessage`]) or text
/// ([`TextPatchMessage`]). `None` for any other message or shape.
fn read_wire<'a, V: Deserialize<'a>, E: Deserialize<'a>>(
    text: &'a str,
) -> Option<WireMessage<V, E>> {
    #[derive(Deserialize)]
    #[serde(bound(deserialize = "V: Deserialize<'de>, E: Deserialize<'de>"))]
    struct Message<V, E> {
        from: Option<u64>,
        version: u64,
        ops: Vec<WireOp<V>>,
        #[serde(default = "Vec::new")]
        events: Vec<E>,
    }

    if !text.starts_with(r#"{"type":"patch","#) {
        return None;
    }
    let m: Message<V, E> = serde_json::from_str(text).ok()?;
    Some(WireMessage {
        from: patch_from(m.from, m.version)?,
        version: m.version,
        ops: m.ops.into_iter().map(|o| (o.0, o.1, o.2)).collect(),
        events: m.events,
    })
}

/// The version a `patch` message applies to: its `from`, or when it has none (the compact
/// form leaves it out when it is one less), `version - 1`. `None` for a version 0 without
/// `from`, which no server sends.
pub fn patch_from(from: Option<u64>, version: u64) -> Option<u64> {
    from.or_else(|| version.checked_sub(1))
}

/// A patch operation as a message carries it, in either form (see [`PatchOp`]): its kind,
/// its full path, and its value (a member that may be `null`, told apart from none).
struct WireOp<V>(WireKind, String, Option<V>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for WireOp<V> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct Visit<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
            type Value = WireOp<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a patch operation: [path], [path, value] or {\"op\":…,\"path\":…}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireOp<V>, A::Error> {
                let path: String = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let value: Option<V> = seq.next_element()?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(3, &self));
                }
                Ok(match (value, path.strip_prefix('+')) {
                    (None, _) => WireOp(WireKind::Remove, full_path(path), None),
                    (Some(v), Some(rest)) => {
                        WireOp(WireKind::Add, full_path(rest.to_string()), Some(v))
                    }
                    (Some(v), None) => WireOp(WireKind::Replace, full_path(path), Some(v)),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireOp<V>, A::Error> {
                let (mut op, mut path, mut value) = (None, None, None);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match key.as_ref() {
                        "op" if op.is_none() => op = Some(map.next_value::<WireKind>()?),
                        "path" if path.is_none() => path = Some(map.next_value::<String>()?),
                        "value" if value.is_none() => value = Some(map.next_value::<V>()?),
                        "op" | "path" | "value" => {
                            return Err(de::Error::custom(format!("duplicate field `{key}`")));
                        }
                        other => {
                            return Err(de::Error::unknown_field(other, &["op", "path", "value"]));
                        }
                    }
                }
                let op = op.ok_or_else(|| de::Error::missing_field("op"))?;
                let path = path.ok_or_else(|| de::Error::missing_field("path"))?;
                Ok(WireOp(op, path, value))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

struct WireMessage<V, E> {
    from: u64,
    version: u64,
    ops: Vec<(WireKind, String, Option<V>)>,
    events: Vec<E>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireKind {
    Add,
    Remove,
    Replace,
}

/// Applies `ops` to `doc` in order. On error `doc` may be partly patched: a client then
/// asks for a full state (`sync`).
pub fn apply(doc: &mut Value, ops: &[PatchOp]) -> Result<(), PatchError> {
    apply_owned(doc, ops.iter().cloned())
}

/// [`apply`] for operations the caller owns: their values move into `doc` instead of
/// being copied (what a client that has just parsed a patch wants).
pub fn apply_owned(
    doc: &mut Value,
    ops: impl IntoIterator<Item = PatchOp>,
) -> Result<(), PatchError> {
    for op in ops {
        match op {
            PatchOp::Replace { path, value } if path.is_empty() => *doc = value,
            PatchOp::Replace { path, value } => {
                *pointer_mut(doc, &path)? = value;
            }
            PatchOp::Add { path, value } => {
                let (parent, last) = split(doc, &path, pointer_mut)?;
                match parent {
                    Value::Object(m) => {
                        m.insert(last.into_owned(), value);
                    }
                    Value::Array(v) => {
                        let i = if last == "-" {
                            v.len()
                        } else {
                            index(&last, v.len() + 1, &path)?
                        };
                        v.insert(i, value);
                    }
                    _ => return Err(PatchError(format!("{path}: parent is not a container"))),
                }
            }
            PatchOp::Remove { path } => {
                let (parent, last) = split(doc, &path, pointer_mut)?;
                match parent {
                    Value::Object(m) => {
                        m.remove(last.as_ref())
                            .ok_or_else(|| PatchError(format!("{path}: no such member")))?;
                    }
                    Value::Array(v) => {
                        let i = index(&last, v.len(), &path)?;
                        v.remove(i);
                    }
                    _ => return Err(PatchError(format!("{path}: parent is not a container"))),
                }
            }
        }
    }
    Ok(())
}

/// A pointer's token as a key: `~1` is `/` and `~0` is `~`. Borrowed when it has no
/// escapes, which is nearly always: while every token was copied, resolving paths took
/// about a fifth of the load generator's CPU under the flat load (perf).
fn unescape(token: &str) -> Cow<'_, str> {
    if token.contains('~') {
        Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
    } else {
        Cow::Borrowed(token)
    }
}

fn index(token: &str, bound: usize, path: &str) -> Result<usize, PatchError> {
    array_index(token)
        .filter(|&i| i < bound)
        .ok_or_else(|| PatchError(format!("{path}: index out of range")))
}

/// What `path` points at in `doc`, resolved as [`Value::pointer_mut`] does (an array index
/// is digits without a sign or leading zeros), without copying the tokens.
fn pointer_mut<'a>(doc: &'a mut Value, path: &str) -> Result<&'a mut Value, PatchError> {
    walk(doc, path, |at, token| {
        Ok(match at {
            Value::Object(m) => m.get_mut(unescape(token).as_ref()),
            Value::Array(v) => array_index(token).and_then(|i| v.get_mut(i)),
            _ => None,
        })
    })
}

/// Follows `path` (a JSON Pointer, `""` for `root` itself) down from `root`, one token at a
/// time by `step`, which gives what the token names in a container (`None`: nothing); the
/// same for a tree of values and for a document held as text ([`TextDoc`]).
fn walk<'a, T>(
    root: &'a mut T,
    path: &str,
    mut step: impl FnMut(&'a mut T, &str) -> Result<Option<&'a mut T>, PatchError>,
) -> Result<&'a mut T, PatchError> {
    if path.is_empty() {
        return Ok(root);
    }
    let missing = || PatchError(format!("{path}: no such location"));
    let rest = path.strip_prefix('/').ok_or_else(missing)?;
    let mut at = root;
    for token in rest.split('/') {
        at = step(at, token)?.ok_or_else(missing)?;
    }
    Ok(at)
}

/// An array index as JSON Pointer writes it (RFC 6901: `0`, or digits not starting with 0).
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

/// The container holding `path`'s last token, found by `pointer`, and that token unescaped.
fn split<'a, 'p, T>(
    doc: &'a mut T,
    path: &'p str,
    pointer: impl FnOnce(&'a mut T, &str) -> Result<&'a mut T, PatchError>,
) -> Result<(&'a mut T, Cow<'p, str>), PatchError> {
    let cut = path
        .rfind('/')
        .ok_or_else(|| PatchError(format!("{path:?} is not a JSON pointer")))?;
    Ok((pointer(doc, &path[..cut])?, unescape(&path[cut + 1..])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Small JSON documents whose keys and values collide often, so that diffs meet
    /// shared prefixes and suffixes, members that come and go, and changes of type.
    fn doc() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0i64..4).prop_map(Value::from),
            // Brackets, quotes and escapes inside strings, for the text scanner.
            prop::sample::select(vec!["a", "b", "~", "/", "]\\\"}{,", " "]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    // `q"` is written with an escape: the text diff compares it as values.
                    prop::sample::select(vec!["x", "y", "a/b", "t~", "", "q\"", "+p"]),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        /// Whatever the two documents, the patch from one turns it into the other, and
        /// reads back from its wire form unchanged.
        #[test]
        fn any_diff_applies(a in doc(), b in doc()) {
            let ops = diff(&a, &b);
            let mut c = a.clone();
            apply(&mut c, &ops).unwrap();
            prop_assert_eq!(&c, &b);
            let wire = serde_json::to_string(&ops).unwrap();
            prop_assert_eq!(serde_json::from_str::<Vec<PatchOp>>(&wire).unwrap(), ops.clone());
            prop_assert!(diff(&b, &b).is_empty());
            // The same patch from the documents' text.
            let (ra, rb) = (
                serde_json::value::to_raw_value(&a).unwrap(),
                serde_json::value::to_raw_value(&b).unwrap(),
            );
            let mut raw_ops = Vec::new();
            diff_raw_at("", &ra, &rb, &mut raw_ops);
            let mut d = a.clone();
            apply(&mut d, &raw_ops).unwrap();
            prop_assert_eq!(&d, &b);
            prop_assert_eq!(&raw_ops, &ops);
            // And with the values left as text: the same message on the wire.
            let mut text_ops = Vec::new();
            diff_raw_text_at("", &ra, &rb, &mut text_ops);
            let mut written = String::new();
            write_ops(&mut written, &text_ops);
            prop_assert_eq!(written, wire);
            // And from text with whitespace between its tokens.
            let pretty = |v: &Value| RawValue::from_string(serde_json::to_string_pretty(v).unwrap()).unwrap();
            let mut pretty_ops = Vec::new();
            diff_raw_at("", &pretty(&a), &pretty(&b), &mut pretty_ops);
            let mut e = a.clone();
            apply(&mut e, &pretty_ops).unwrap();
            prop_assert_eq!(&e, &b);
            // And in the compact form, under `/view` (whose paths it writes without that
            // prefix), read as operations and as a message a text document takes.
            let mut view_ops = Vec::new();
            diff_raw_text_at("/view", &ra, &rb, &mut view_ops);
            let mut compact = String::new();
            write_ops_compact(&mut compact, &view_ops);
            let read: Vec<PatchOp> = serde_json::from_str(&compact).unwrap();
            let mut f = json!({"view": a.clone()});
            apply(&mut f, &read).unwrap();
            prop_assert_eq!(&f, &json!({"view": b.clone()}));
            let m = TextPatchMessage::read(&format!(r#"{{"type":"patch","version":2,"ops":{compact}}}"#))
                .expect("a compact patch message");
            prop_assert_eq!(m.from, 1);
            let mut held = TextDoc::from_members(vec![("view".into(), ra.clone())]);
            held.apply(m.ops).unwrap();
            prop_assert_eq!(held.to_value(), Some(json!({"view": b.clone()})));
        }

        /// A document held as text takes the patches a client reads off the wire to the
        /// same result as a tree does, patch after patch (the second reaches into the parts
        /// the first opened, or replaced with text), and reads back unchanged.
        #[test]
        fn text_doc_applies_as_a_tree_does(a in doc(), b in doc(), c in doc()) {
            let mut held = TextDoc::new(serde_json::value::to_raw_value(&a).unwrap());
            prop_assert_eq!(held.to_value(), Some(a.clone()));
            for (from, to) in [(&a, &b), (&b, &c)] {
                let ops = diff(from, to);
                let wire = format!(
                    r#"{{"type":"patch","from":1,"version":2,"ops":{},"events":[{{"seat":0}}]}}"#,
                    serde_json::to_string(&ops).unwrap()
                );
                let m = TextPatchMessage::read(&wire).expect("a patch message");
                prop_assert_eq!(m.events.len(), 1);
                held.apply(m.ops).unwrap();
                prop_assert_eq!(held.to_value(), Some(to.clone()));
            }
        }
    }

    /// Where a patch does not fit, a text document refuses it as a tree does.
    #[test]
    fn text_doc_refuses_what_a_tree_refuses() {
        let doc =
            json!({"a": [10, {"b/c": 1, "d~e": [2, 3], "": 4}], "01": 5, "x": null, "s": "t"});
        let bad = [
            r#"[{"op":"replace","path":"/nope","value":1}]"#,
            r#"[{"op":"remove","path":"/a/2"}]"#,
            r#"[{"op":"add","path":"/a/3","value":1}]"#,
            r#"[{"op":"add","path":"/a/01","value":1}]"#,
            r#"[{"op":"add","path":"/s/0","value":1}]"#,
            r#"[{"op":"remove","path":"/a/1/zz"}]"#,
            r#"[{"op":"replace","path":"/x/y","value":1}]"#,
            r#"[{"op":"add","path":"a","value":1}]"#,
        ];
        let good = [
            r#"[{"op":"add","path":"/a/-","value":{"k":[1]}},{"op":"add","path":"/a/2/k/0","value":0}]"#,
            r#"[{"op":"replace","path":"/a/1/b~1c","value":null},{"op":"remove","path":"/a/1/d~0e/0"}]"#,
            r#"[{"op":"add","path":"/a/1/","value":"e"},{"op":"add","path":"/01","value":[]}]"#,
            r#"[{"op":"replace","path":"","value":{"z":1}},{"op":"add","path":"/z","value":2}]"#,
        ];
        for (ops, fits) in bad
            .iter()
            .map(|o| (o, false))
            .chain(good.iter().map(|o| (o, true)))
        {
            let wire =
                format!(r#"{{"type":"patch","from":1,"version":2,"ops":{ops},"events":[]}}"#);
            let text_ops = TextPatchMessage::read(&wire).expect("a patch message").ops;
            let tree_ops = PatchMessage::read(&wire).expect("a patch message").ops;
            let mut tree = doc.clone();
            let mut held = TextDoc::new(serde_json::value::to_raw_value(&doc).unwrap());
            let (t, h) = (apply(&mut tree, &tree_ops), held.apply(text_ops));
            assert_eq!(t.is_ok(), fits, "{ops}: {t:?}");
            assert_eq!(h.is_ok(), fits, "{ops}: {h:?}");
            if fits {
                assert_eq!(held.to_value(), Some(tree), "{ops}");
            }
        }
        // JSON by its syntax but not a value serde_json holds: the tree reader refuses the
        // message; the text one takes it, and it fails where it is opened or converted.
        for (ops, through) in [
            (r#"[{"op":"add","path":"/n","value":1e400}]"#, None),
            (
                r#"[{"op":"add","path":"/n","value":{"k":"\ud800"}}]"#,
                Some("/n/k"),
            ),
            (
                r#"[{"op":"add","path":"/n","value":{"\ud800":1}}]"#,
                Some("/n/x"),
            ),
        ] {
            let wire =
                format!(r#"{{"type":"patch","from":1,"version":2,"ops":{ops},"events":[]}}"#);
            assert!(PatchMessage::read(&wire).is_none(), "{ops}");
            let mut held = TextDoc::new(serde_json::value::to_raw_value(&doc).unwrap());
            held.apply(
                TextPatchMessage::read(&wire)
                    .expect("syntax checked only")
                    .ops,
            )
            .unwrap();
            assert_eq!(held.to_value(), None, "{ops}");
            assert_eq!(held.get("/n").and_then(|n| n.to_value()), None, "{ops}");
            if let Some(path) = through {
                // A path into it: refused or found, never a panic; the rest still reads.
                let _ = held.get(path).map(|n| n.to_value());
                let add = format!(r#"[{{"op":"add","path":"{path}","value":2}}]"#);
                let wire =
                    format!(r#"{{"type":"patch","from":2,"version":3,"ops":{add},"events":[]}}"#);
                let _ = held.apply(TextPatchMessage::read(&wire).unwrap().ops);
            }
            assert_eq!(held.get("/x").and_then(|n| n.to_value()), Some(json!(null)));
        }
        // A document of named parts: a name given twice counts once, the last.
        let part = |t: &str| RawValue::from_string(t.to_string()).unwrap();
        let mut parts = TextDoc::from_members(vec![
            ("table".into(), part(r#"{"status":"a"}"#)),
            ("legal".into(), part(r#"[ 1, {"a" : 2} ]"#)),
            ("table".into(), part(r#"{"status":"b"}"#)),
        ]);
        assert_eq!(
            parts
                .get("/table/status")
                .and_then(|n| n.as_text().map(str::to_string))
                .as_deref(),
            Some(r#""b""#)
        );
        assert_eq!(parts.get("/legal").and_then(Node::array_len), Some(2));
        assert_eq!(
            parts.get("/legal/1/a").and_then(|n| n.to_value()),
            Some(json!(2))
        );
        assert_eq!(
            parts.to_value(),
            Some(json!({"table": {"status": "b"}, "legal": [1, {"a": 2}]}))
        );
    }

    /// Paths resolve exactly as serde_json's own pointers do, escapes and odd indexes
    /// included.
    #[test]
    fn pointers_resolve_as_serde_json_does() {
        let doc = json!({"a": [10, {"b/c": 1, "d~e": [2, 3], "": 4}], "01": 5, "x": null});
        let paths = [
            "",
            "/a",
            "/a/0",
            "/a/1",
            "/a/1/b~1c",
            "/a/1/d~0e/1",
            "/a/1/",
            "/01",
            "/a/01",
            "/a/+1",
            "/a/-",
            "/a/2",
            "/a/1/b/c",
            "/x",
            "/x/0",
            "/nope",
            "a",
            "/a/1/d~0e/0/z",
        ];
        for p in paths {
            let (mut ours, mut theirs) = (doc.clone(), doc.clone());
            let got = pointer_mut(&mut ours, p).ok().map(|v| v.clone());
            assert_eq!(got, theirs.pointer_mut(p).map(|v| v.clone()), "{p:?}");
        }
    }

    /// A patch message read the quick way is the protocol's own message, `null` values
    /// included; anything else, or an operation of the wrong shape, is left to `ServerMsg`.
    #[test]
    fn patch_messages_read_as_server_messages_do() {
        let written = r#"{"type":"patch","from":6,"version":7,"ops":[{"op":"add","path":"/view/hand/-","value":3},{"op":"remove","path":"/legal/0"},{"op":"replace","path":"/table/status","value":"playing"},{"op":"replace","path":"/table/winners","value":null}],"events":[{"seat":0}]}"#;
        // The same in the compact form, `from` and `events` left out where they may be.
        let compact = r#"{"type":"patch","version":7,"ops":[["+hand/-",3],["/legal/0"],["/table/status","playing"],["/table/winners",null]],"events":[{"seat":0}]}"#;
        let bare = r#"{"type":"patch","version":7,"ops":[["/view/hand/0"]]}"#;
        for written in [written, compact] {
            let typed: crate::ServerMsg = serde_json::from_str(written).unwrap();
            let PatchMessage {
                from,
                version,
                ops,
                events,
            } = PatchMessage::read(written).expect("a patch message");
            assert_eq!((from, version), (6, 7));
            let crate::ServerMsg::Patch {
                from: typed_from,
                version: typed_version,
                ops: typed_ops,
                events: typed_events,
            } = typed
            else {
                panic!("a patch")
            };
            assert_eq!(patch_from(typed_from, typed_version), Some(from));
            assert_eq!(
                (typed_version, &typed_ops, &typed_events),
                (version, &ops, &events)
            );
            assert_eq!(
                ops[0],
                PatchOp::Add {
                    path: "/view/hand/-".into(),
                    value: json!(3)
                }
            );
            assert_eq!(
                ops[1],
                PatchOp::Remove {
                    path: "/legal/0".into()
                }
            );
        }
        let m = PatchMessage::read(bare).expect("a patch message");
        assert_eq!((m.from, m.version, m.events.len()), (6, 7, 0));
        assert_eq!(
            m.ops,
            [PatchOp::Remove {
                path: "/view/hand/0".into()
            }]
        );
        for other in [
            r#"{"type":"patch","from":7,"version":8,"ops":[{"op":"add","path":"/x"}],"events":[]}"#,
            r#"{"type":"patch","from":7,"version":8,"ops":[{"op":"remove","path":"/x","value":1}],"events":[]}"#,
            r#"{"type":"patch","version":8,"ops":[["/x",1,2]]}"#,
            r#"{"type":"patch","version":8,"ops":[[]]}"#,
            r#"{"type":"patch","version":0,"ops":[]}"#,
            r#"{"type":"pong"}"#,
            r#"{"from":7,"type":"patch","version":8,"ops":[],"events":[]}"#,
        ] {
            assert_eq!(PatchMessage::read(other), None, "{other}");
        }
    }

    fn round_trip(a: Value, b: Value) -> Vec<PatchOp> {
        let ops = diff(&a, &b);
        let mut c = a.clone();
        apply(&mut c, &ops).unwrap();
        assert_eq!(c, b, "ops {ops:?}");
        // The wire form is RFC 6902 and reads back the same.
        let wire = serde_json::to_value(&ops).unwrap();
        assert_eq!(serde_json::from_value::<Vec<PatchOp>>(wire).unwrap(), ops);
        ops
    }

    #[test]
    fn equal_documents_need_nothing() {
        assert!(round_trip(json!({"a": [1, 2]}), json!({"a": [1, 2]})).is_empty());
    }

    #[test]
    fn one_card_out_of_a_hand_is_one_remove() {
        let ops = round_trip(
            json!({"hand": ["ace of cups", "two of coins", "three of swords", "four of wands"], "turn": 1}),
            json!({"hand": ["ace of cups", "three of swords", "four of wands"], "turn": 2}),
        );
        assert_eq!(
            ops,
            vec![
                PatchOp::Remove {
                    path: "/hand/1".into()
                },
                PatchOp::Replace {
                    path: "/turn".into(),
                    value: json!(2)
                },
            ]
        );
    }

    /// Cards put into a sorted list, or taken out of its middle, are just those adds or
    /// removes (not a rewrite of every later position), from values and from text alike.
    #[test]
    fn insertions_and_removals_in_the_middle_are_just_those() {
        let card = |n: u64| json!({"n": n, "colour": "purple", "symbol": "circled_plus"});
        let before = json!([card(1), card(3), card(5), card(7)]);
        let after = json!([card(1), card(2), card(3), card(5), card(6), card(7)]);
        let adds = vec![
            PatchOp::Add {
                path: "/1".into(),
                value: card(2),
            },
            PatchOp::Add {
                path: "/4".into(),
                value: card(6),
            },
        ];
        assert_eq!(round_trip(before.clone(), after.clone()), adds);
        let removes = vec![
            PatchOp::Remove { path: "/1".into() },
            PatchOp::Remove { path: "/3".into() },
        ];
        assert_eq!(round_trip(after.clone(), before.clone()), removes);
        let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap();
        let mut ops = Vec::new();
        diff_raw_at("", &raw(&before), &raw(&after), &mut ops);
        assert_eq!(ops, adds);
        ops.clear();
        diff_raw_at("", &raw(&after), &raw(&before), &mut ops);
        assert_eq!(ops, removes);
    }

    /// Where the changes of a container would take more of the patch than its new value,
    /// the container is replaced whole, from values and from text alike.
    #[test]
    fn a_container_is_replaced_when_that_is_shorter() {
        let cards: Vec<Value> = (1..=12)
            .map(|n| json!({"n": n, "colour": "blue", "symbol": "star"}))
            .collect();
        let rules = "a long text that neither document changes, as most of a view is";
        let before = json!({"hand": cards, "rules": rules,
            "last": {"leader": 0, "winner": 1, "cards": [3, 4]}});
        let after = json!({"hand": [], "rules": rules,
            "last": {"leader": 1, "winner": 0, "cards": [5, 6]}});
        let whole = vec![
            PatchOp::Replace {
                path: "/hand".into(),
                value: json!([]),
            },
            PatchOp::Replace {
                path: "/last".into(),
                value: json!({"leader": 1, "winner": 0, "cards": [5, 6]}),
            },
        ];
        assert_eq!(round_trip(before.clone(), after.clone()), whole);
        let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap();
        let mut ops = Vec::new();
        diff_raw_at("", &raw(&before), &raw(&after), &mut ops);
        assert_eq!(ops, whole);
        // One card less is still one remove.
        let mut fewer = before.clone();
        fewer["hand"].as_array_mut().unwrap().remove(4);
        assert_eq!(
            round_trip(before, fewer),
            vec![PatchOp::Remove {
                path: "/hand/4".into()
            }]
        );
    }

    #[test]
    fn arrays_grow_shrink_and_change_in_the_middle() {
        round_trip(json!([1, 2, 3]), json!([1, 9, 8, 7, 3]));
        round_trip(json!([1, 2, 3, 4, 5]), json!([1, 5]));
        round_trip(json!([]), json!([{"x": 1}]));
        round_trip(json!([1, 1, 1]), json!([1, 1]));
        round_trip(json!([[1, 2], [3]]), json!([[1], [3, 4]]));
    }

    #[test]
    fn members_are_added_removed_and_escaped() {
        let rules = "a long text that neither document changes, as most of a view is";
        let ops = round_trip(
            json!({"a/b": 1, "t~": {"x": null, "rules": rules}, "more": rules}),
            json!({"t~": {"x": 2, "y": true, "rules": rules}, "new": [], "more": rules}),
        );
        assert!(ops.contains(&PatchOp::Remove {
            path: "/a~1b".into()
        }));
        assert!(ops.contains(&PatchOp::Replace {
            path: "/t~0/x".into(),
            value: json!(2)
        }));
    }

    #[test]
    fn a_change_of_type_replaces() {
        round_trip(json!({"v": null}), json!({"v": {"hand": [1]}}));
        round_trip(json!(1), json!("one"));
    }

    #[test]
    fn a_patch_for_another_document_is_an_error() {
        let mut doc = json!({"a": [1]});
        for bad in [
            PatchOp::Remove { path: "/b".into() },
            PatchOp::Remove {
                path: "/a/1".into(),
            },
            PatchOp::Add {
                path: "/a/5".into(),
                value: json!(0),
            },
            PatchOp::Replace {
                path: "/x/y".into(),
                value: json!(0),
            },
            PatchOp::Add {
                path: "nope".into(),
                value: json!(0),
            },
        ] {
            assert!(
                apply(&mut doc, std::slice::from_ref(&bad)).is_err(),
                "{bad:?}"
            );
        }
        let mut doc = json!({"a": [1]});
        apply(
            &mut doc,
            &[PatchOp::Add {
                path: "/a/-".into(),
                value: json!(2),
            }],
        )
        .unwrap();
        assert_eq!(doc, json!({"a": [1, 2]}));
    }

    /// A list emptied or filled from empty: one `replace` from two elements on (found
    /// without splitting the other side), a single `remove` or `add` for one.
    #[test]
    fn lists_emptied_or_filled_from_empty() {
        let text_diff = |a: &str, b: &str| {
            let (a, b) = (
                RawValue::from_string(a.into()).unwrap(),
                RawValue::from_string(b.into()).unwrap(),
            );
            let mut ops = Vec::new();
            diff_raw_text_at("/legal", &a, &b, &mut ops);
            let mut out = String::new();
            write_ops(&mut out, &ops);
            out
        };
        assert_eq!(
            text_diff("[]", r#"[{"c":1}, {"c":2}]"#),
            r#"[{"op":"replace","path":"/legal","value":[{"c":1}, {"c":2}]}]"#
        );
        assert_eq!(
            text_diff("[[1,2],3]", "[]"),
            r#"[{"op":"replace","path":"/legal","value":[]}]"#
        );
        assert_eq!(
            text_diff("[[1,2]]", "[]"),
            r#"[{"op":"remove","path":"/legal/0"}]"#
        );
        assert_eq!(
            text_diff("[]", "[[1,2]]"),
            r#"[{"op":"add","path":"/legal/0","value":[1,2]}]"#
        );
    }
}
