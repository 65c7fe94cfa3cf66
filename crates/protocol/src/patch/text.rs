//! A client's state document held as the JSON text it arrived in, opened one level at a
//! time only where a patch reaches inside ([`TextDoc`]), and the patch message read with
//! its values left as text ([`TextPatchMessage`]).
//!
//! Why: a client that parses every patch's values into [`Value`] trees and applies them
//! ([`super::PatchMessage`], [`super::apply_owned`]) spends most of its time building maps
//! for cards and legal actions that no later patch looks inside, and dropping those a
//! later patch replaces whole. Under the flat load that was 60 % of the load generator's
//! CPU (perf), on the same two cores as the server it measures. Here a value is kept as
//! one string until a path goes through it; the patches apply exactly as
//! [`super::apply_owned`] applies them (a property test holds the two to the same result).

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{PatchError, RawPatchOp, array_index, elements, members, unescape};

/// A part of a [`TextDoc`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// Valid JSON text not looked into: a scalar, or a container no path went through.
    Text(Box<str>),
    /// An object opened by a path: its members in the order written, keys unescaped.
    Object(Vec<(String, Node)>),
    /// An array opened by a path.
    Array(Vec<Node>),
}

impl Node {
    /// Opens a container held as text (one level: its members stay text); a scalar, or a
    /// container already open, stays as it is.
    fn open(&mut self) -> &mut Node {
        let Node::Text(t) = self else {
            return self;
        };
        let t = t.trim();
        let opened = match t.as_bytes().first() {
            Some(b'{') => Node::Object(match members(t) {
                Some(ms) => {
                    let mut out: Vec<(String, Node)> = Vec::with_capacity(ms.len());
                    for (k, v) in ms {
                        let v = Node::Text(v.into());
                        // A key written twice: the last one counts, as for serde_json.
                        match out.iter_mut().find(|(have, _)| have == k) {
                            Some(m) => m.1 = v,
                            None => out.push((k.to_string(), v)),
                        }
                    }
                    out
                }
                // A key written with escapes: serde reads the keys, values stay text.
                None => {
                    serde_json::from_str::<std::collections::BTreeMap<String, Box<RawValue>>>(t)
                        .expect("a node's text is valid JSON")
                        .into_iter()
                        .map(|(k, v)| (k, Node::Text(v.into())))
                        .collect()
                }
            }),
            Some(b'[') => Node::Array(
                elements(t)
                    .into_iter()
                    .map(|e| Node::Text(e.into()))
                    .collect(),
            ),
            _ => return self,
        };
        *self = opened;
        self
    }

    /// The value this node stands for, as a tree.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Text(t) => serde_json::from_str(t).expect("a node's text is valid JSON"),
            Node::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_value())).collect())
            }
            Node::Array(v) => Value::Array(v.iter().map(Node::to_value).collect()),
        }
    }

    /// The number of elements, if this is an array (opening it).
    pub fn array_len(&mut self) -> Option<usize> {
        match self.open() {
            Node::Array(v) => Some(v.len()),
            _ => None,
        }
    }

    /// The `i`-th element, if this is an array that long (opening it).
    pub fn index(&mut self, i: usize) -> Option<&mut Node> {
        match self.open() {
            Node::Array(v) => v.get_mut(i),
            _ => None,
        }
    }

    /// The text of a node not opened (a scalar's is its JSON: `"playing"`, `3`, `null`).
    pub fn text(&self) -> Option<&str> {
        match self {
            Node::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// A state document that [`RawPatchOp`]s apply to, held as text where nothing looked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextDoc {
    root: Node,
}

impl TextDoc {
    /// The document `raw` (checked JSON, as serde reads a message's member).
    pub fn new(raw: Box<RawValue>) -> TextDoc {
        TextDoc {
            root: Node::Text(raw.into()),
        }
    }

    /// A document made of `members`, each checked JSON (a `state` message's parts).
    pub fn from_members(members: Vec<(String, Box<RawValue>)>) -> TextDoc {
        TextDoc {
            root: Node::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k, Node::Text(v.into())))
                    .collect(),
            ),
        }
    }

    /// What `path` (a JSON Pointer, `""` for the root) points at, opening the containers
    /// on the way; `None` if nothing is there.
    pub fn get(&mut self, path: &str) -> Option<&mut Node> {
        pointer_mut(&mut self.root, path).ok()
    }

    /// The whole document as a tree.
    pub fn to_value(&self) -> Value {
        self.root.to_value()
    }

    /// Applies `ops` in order, as [`super::apply_owned`] does; their values must be valid
    /// JSON text (as [`TextPatchMessage::read`] gives them). On error the document may be
    /// partly patched: a client then asks for a full state (`sync`).
    pub fn apply(&mut self, ops: impl IntoIterator<Item = RawPatchOp>) -> Result<(), PatchError> {
        for op in ops {
            match op {
                RawPatchOp::Replace { path, value } if path.is_empty() => {
                    self.root = Node::Text(value.into())
                }
                RawPatchOp::Replace { path, value } => {
                    *pointer_mut(&mut self.root, &path)? = Node::Text(value.into());
                }
                RawPatchOp::Add { path, value } => {
                    let (parent, last) = split(&mut self.root, &path)?;
                    let value = Node::Text(value.into());
                    match parent.open() {
                        Node::Object(m) => match m.iter_mut().find(|(k, _)| *k == last) {
                            Some(member) => member.1 = value,
                            None => m.push((last, value)),
                        },
                        Node::Array(v) => {
                            let i = if last == "-" {
                                v.len()
                            } else {
                                index(&last, v.len() + 1, &path)?
                            };
                            v.insert(i, value);
                        }
                        Node::Text(_) => {
                            return Err(PatchError(format!("{path}: parent is not a container")));
                        }
                    }
                }
                RawPatchOp::Remove { path } => {
                    let (parent, last) = split(&mut self.root, &path)?;
                    match parent.open() {
                        Node::Object(m) => {
                            let at = m
                                .iter()
                                .position(|(k, _)| *k == last)
                                .ok_or_else(|| PatchError(format!("{path}: no such member")))?;
                            m.remove(at);
                        }
                        Node::Array(v) => {
                            let i = index(&last, v.len(), &path)?;
                            v.remove(i);
                        }
                        Node::Text(_) => {
                            return Err(PatchError(format!("{path}: parent is not a container")));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn index(token: &str, bound: usize, path: &str) -> Result<usize, PatchError> {
    array_index(token)
        .filter(|&i| i < bound)
        .ok_or_else(|| PatchError(format!("{path}: index out of range")))
}

/// What `path` points at under `at`, resolved as [`Value::pointer_mut`] does.
fn pointer_mut<'a>(mut at: &'a mut Node, path: &str) -> Result<&'a mut Node, PatchError> {
    if path.is_empty() {
        return Ok(at);
    }
    let missing = || PatchError(format!("{path}: no such location"));
    let rest = path.strip_prefix('/').ok_or_else(missing)?;
    for token in rest.split('/') {
        at = match at.open() {
            Node::Object(m) => {
                let key = unescape(token);
                m.iter_mut()
                    .find(|(k, _)| *k == key.as_ref())
                    .map(|(_, v)| v)
            }
            Node::Array(v) => array_index(token).and_then(|i| v.get_mut(i)),
            Node::Text(_) => None,
        }
        .ok_or_else(missing)?;
    }
    Ok(at)
}

/// The node holding `path`'s last token, and that token unescaped.
fn split<'a>(root: &'a mut Node, path: &str) -> Result<(&'a mut Node, String), PatchError> {
    let cut = path
        .rfind('/')
        .ok_or_else(|| PatchError(format!("{path:?} is not a JSON pointer")))?;
    let parent = pointer_mut(root, &path[..cut])?;
    Ok((parent, unescape(&path[cut + 1..]).into_owned()))
}

/// A `patch` message read in one pass with its values (and events) left as checked JSON
/// text: what a [`TextDoc`] takes.
#[derive(Clone, Debug)]
pub struct TextPatchMessage {
    pub from: u64,
    pub version: u64,
    pub ops: Vec<RawPatchOp>,
    pub events: Vec<Box<RawValue>>,
}

impl TextPatchMessage {
    /// The patch message `text`, as the server writes it (`type` first); `None` for any
    /// other message, and for a patch of the wrong shape: read those as a `ServerMsg`,
    /// which says what is wrong.
    pub fn read(text: &str) -> Option<TextPatchMessage> {
        #[derive(Deserialize)]
        struct Message<'a> {
            from: u64,
            version: u64,
            #[serde(borrow)]
            ops: Vec<WireOp<'a>>,
            #[serde(borrow)]
            events: Vec<&'a RawValue>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct WireOp<'a> {
            op: Kind,
            path: String,
            #[serde(default, borrow)]
            value: Given<'a>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Kind {
            Add,
            Remove,
            Replace,
        }
        /// A member that may be missing, told apart from one given as `null` (which an
        /// `Option<&RawValue>` reads as missing).
        #[derive(Default)]
        struct Given<'a>(Option<&'a RawValue>);
        impl<'de: 'a, 'a> Deserialize<'de> for Given<'a> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <&'a RawValue>::deserialize(d).map(|v| Given(Some(v)))
            }
        }

        if !text.starts_with(r#"{"type":"patch","#) {
            return None;
        }
        let m: Message = serde_json::from_str(text).ok()?;
        let ops = m
            .ops
            .into_iter()
            .map(|WireOp { op, path, value }| {
                let value = value.0.map(|v| v.get().to_string());
                match (op, value) {
                    (Kind::Add, Some(value)) => Some(RawPatchOp::Add { path, value }),
                    (Kind::Replace, Some(value)) => Some(RawPatchOp::Replace { path, value }),
                    (Kind::Remove, None) => Some(RawPatchOp::Remove { path }),
                    _ => None,
                }
            })
            .collect::<Option<Vec<_>>>()?;
        Some(TextPatchMessage {
            from: m.from,
            version: m.version,
            ops,
            events: m.events.into_iter().map(ToOwned::to_owned).collect(),
        })
    }
}

/// A `state` message's members, each left as checked JSON text: `version`, the document
/// (`table`, `you`, `view`, `legal`, `fairness`, in a [`TextDoc`]) and the `events`.
#[derive(Debug)]
pub struct TextStateMessage {
    pub version: u64,
    pub doc: TextDoc,
    pub events: Vec<Box<RawValue>>,
}

impl TextStateMessage {
    /// The state message `text` (`type` first, as the server writes it); `None` for any
    /// other message or shape.
    pub fn read(text: &str) -> Option<TextStateMessage> {
        if !text.starts_with(r#"{"type":"state","#) {
            return None;
        }
        struct Members(Vec<(String, Box<RawValue>)>);
        impl<'de> Deserialize<'de> for Members {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Members;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a state message")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Members, A::Error> {
                        let mut out = Vec::with_capacity(8);
                        while let Some((k, v)) = a.next_entry::<String, Box<RawValue>>()? {
                            out.push((k, v));
                        }
                        Ok(Members(out))
                    }
                }
                d.deserialize_map(V)
            }
        }
        let Members(all) = serde_json::from_str(text).ok()?;
        let (mut version, mut events, mut doc) = (None, None, Vec::with_capacity(5));
        for (k, v) in all {
            match k.as_str() {
                "type" => {}
                "version" => version = Some(serde_json::from_str::<u64>(v.get()).ok()?),
                "events" => {
                    events = Some(serde_json::from_str::<Vec<Box<RawValue>>>(v.get()).ok()?)
                }
                "table" | "you" | "view" | "legal" | "fairness" => doc.push((k, v)),
                _ => return None,
            }
        }
        (doc.len() == 5).then_some(())?;
        Some(TextStateMessage {
            version: version?,
            doc: TextDoc::from_members(doc),
            events: events?,
        })
    }
}
