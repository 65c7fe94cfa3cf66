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
//!
//! One difference in what is refused: a value is checked as JSON text when it is read
//! (`RawValue`), and text can be JSON by its syntax without being a value serde_json
//! holds (a number beyond `f64`, a lone surrogate escape). [`super::PatchMessage::read`]
//! refuses such a message; here it is found only where the value is opened or converted
//! ([`Node::to_value`] gives `None`, a path through it fails), never as a panic.

use serde_json::Value;
use serde_json::value::RawValue;

use super::{
    PatchError, PatchOp, RawPatchOp, WireKind, array_index, elements, index, members, read_wire,
    split, unescape, walk,
};

/// A part of a [`TextDoc`]: JSON text not looked into yet, or an object or array a path
/// opened. Opaque, so that only checked JSON text gets in.
#[derive(Clone, Debug)]
pub struct Node(Part);

#[derive(Clone, Debug)]
enum Part {
    /// JSON text, checked as such: a scalar, or a container no path went through.
    Text(Box<str>),
    /// An object opened by a path: its members in the order written, keys unescaped.
    Object(Vec<(String, Node)>),
    /// An array opened by a path.
    Array(Vec<Node>),
}

impl Node {
    fn text(t: impl Into<Box<str>>) -> Node {
        Node(Part::Text(t.into()))
    }

    /// Opens a container held as text (one level: its members stay text); a scalar, or a
    /// container already open, stays as it is. Fails only for text that is JSON by its
    /// syntax but not a value (a key with a lone surrogate escape).
    fn open(&mut self) -> Result<&mut Part, PatchError> {
        let Part::Text(t) = &self.0 else {
            return Ok(&mut self.0);
        };
        let t = t.trim();
        let opened = match t.as_bytes().first() {
            Some(b'{') => Part::Object(match members(t) {
                Some(ms) => {
                    let mut out: Vec<(String, Node)> = Vec::with_capacity(ms.len());
                    for (k, v) in ms {
                        // A key written twice: the last one counts, as for serde_json.
                        match out.iter_mut().find(|(have, _)| have == k) {
                            Some(m) => m.1 = Node::text(v),
                            None => out.push((k.to_string(), Node::text(v))),
                        }
                    }
                    out
                }
                // A key written with escapes: serde reads the keys, values stay text.
                None => {
                    serde_json::from_str::<std::collections::BTreeMap<String, Box<RawValue>>>(t)
                        .map_err(|e| PatchError(format!("an object that is not a value: {e}")))?
                        .into_iter()
                        .map(|(k, v)| (k, Node::text(v)))
                        .collect()
                }
            }),
            Some(b'[') => Part::Array(elements(t).into_iter().map(Node::text).collect()),
            _ => return Ok(&mut self.0),
        };
        self.0 = opened;
        Ok(&mut self.0)
    }

    /// The value this node stands for, as a tree; `None` if its text is JSON by its syntax
    /// but not a value serde_json holds (a number out of range, a lone surrogate escape).
    pub fn to_value(&self) -> Option<Value> {
        Some(match &self.0 {
            Part::Text(t) => serde_json::from_str(t).ok()?,
            Part::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| Some((k.clone(), v.to_value()?)))
                    .collect::<Option<_>>()?,
            ),
            Part::Array(v) => Value::Array(v.iter().map(Node::to_value).collect::<Option<_>>()?),
        })
    }

    /// The number of elements, if this is an array (opening it).
    pub fn array_len(&mut self) -> Option<usize> {
        match self.open().ok()? {
            Part::Array(v) => Some(v.len()),
            _ => None,
        }
    }

    /// The `i`-th element, if this is an array that long (opening it).
    pub fn index(&mut self, i: usize) -> Option<&mut Node> {
        match self.open().ok()? {
            Part::Array(v) => v.get_mut(i),
            _ => None,
        }
    }

    /// The JSON text of a node not opened (a scalar's: `"playing"`, `3`, `null`).
    pub fn as_text(&self) -> Option<&str> {
        match &self.0 {
            Part::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// A patch operation whose value is checked JSON text, as [`TextPatchMessage::read`] gives
/// them (or made from a [`PatchOp`]): what [`TextDoc::apply`] takes.
#[derive(Clone, Debug)]
pub struct TextOp(RawPatchOp);

impl From<PatchOp> for TextOp {
    fn from(op: PatchOp) -> TextOp {
        TextOp(match op {
            PatchOp::Add { path, value } => RawPatchOp::Add {
                path,
                value: value.to_string(),
            },
            PatchOp::Remove { path } => RawPatchOp::Remove { path },
            PatchOp::Replace { path, value } => RawPatchOp::Replace {
                path,
                value: value.to_string(),
            },
        })
    }
}

impl TextOp {
    /// The JSON Pointer the operation changes: a client can tell from it what it must read
    /// again after applying.
    pub fn path(&self) -> &str {
        self.0.path()
    }
}

/// A state document that patches apply to, held as text where nothing looked.
#[derive(Clone, Debug)]
pub struct TextDoc {
    root: Node,
}

impl TextDoc {
    /// The document `raw` (checked JSON, as serde reads a message's member).
    pub fn new(raw: Box<RawValue>) -> TextDoc {
        TextDoc {
            root: Node::text(raw),
        }
    }

    /// A document made of `members`, each checked JSON (a `state` message's parts). A name
    /// given twice: the last one counts, as when a JSON object is read.
    pub fn from_members(members: Vec<(String, Box<RawValue>)>) -> TextDoc {
        let mut out: Vec<(String, Node)> = Vec::with_capacity(members.len());
        for (k, v) in members {
            match out.iter_mut().find(|(have, _)| *have == k) {
                Some(m) => m.1 = Node::text(v),
                None => out.push((k, Node::text(v))),
            }
        }
        TextDoc {
            root: Node(Part::Object(out)),
        }
    }

    /// What `path` (a JSON Pointer, `""` for the root) points at, opening the containers
    /// on the way; `None` if nothing is there.
    pub fn get(&mut self, path: &str) -> Option<&mut Node> {
        pointer_mut(&mut self.root, path).ok()
    }

    /// The whole document as a tree (`None` as for [`Node::to_value`]).
    pub fn to_value(&self) -> Option<Value> {
        self.root.to_value()
    }

    /// Applies `ops` in order, as [`super::apply_owned`] does. On error the document may be
    /// partly patched: a client then asks for a full state (`sync`).
    pub fn apply(&mut self, ops: impl IntoIterator<Item = TextOp>) -> Result<(), PatchError> {
        for TextOp(op) in ops {
            match op {
                RawPatchOp::Replace { path, value } if path.is_empty() => {
                    self.root = Node::text(value)
                }
                RawPatchOp::Replace { path, value } => {
                    *pointer_mut(&mut self.root, &path)? = Node::text(value);
                }
                RawPatchOp::Add { path, value } => {
                    let (parent, last) = split(&mut self.root, &path, pointer_mut)?;
                    let value = Node::text(value);
                    match parent.open()? {
                        Part::Object(m) => match m.iter_mut().find(|(k, _)| k == last.as_ref()) {
                            Some(member) => member.1 = value,
                            None => m.push((last.into_owned(), value)),
                        },
                        Part::Array(v) => {
                            let i = if last == "-" {
                                v.len()
                            } else {
                                index(&last, v.len() + 1, &path)?
                            };
                            v.insert(i, value);
                        }
                        Part::Text(_) => {
                            return Err(PatchError(format!("{path}: parent is not a container")));
                        }
                    }
                }
                RawPatchOp::Remove { path } => {
                    let (parent, last) = split(&mut self.root, &path, pointer_mut)?;
                    match parent.open()? {
                        Part::Object(m) => {
                            let at = m
                                .iter()
                                .position(|(k, _)| k == last.as_ref())
                                .ok_or_else(|| PatchError(format!("{path}: no such member")))?;
                            m.remove(at);
                        }
                        Part::Array(v) => {
                            let i = index(&last, v.len(), &path)?;
                            v.remove(i);
                        }
                        Part::Text(_) => {
                            return Err(PatchError(format!("{path}: parent is not a container")));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// What `path` points at under `at`, resolved as [`Value::pointer_mut`] does.
fn pointer_mut<'a>(at: &'a mut Node, path: &str) -> Result<&'a mut Node, PatchError> {
    walk(at, path, |at, token| {
        Ok(match at.open()? {
            Part::Object(m) => {
                let key = unescape(token);
                m.iter_mut()
                    .find(|(k, _)| *k == key.as_ref())
                    .map(|(_, v)| v)
            }
            Part::Array(v) => array_index(token).and_then(|i| v.get_mut(i)),
            Part::Text(_) => None,
        })
    })
}

/// A `patch` message read in one pass with its values (and events) left as checked JSON
/// text: what a [`TextDoc`] takes.
#[derive(Clone, Debug)]
pub struct TextPatchMessage {
    pub from: u64,
    pub version: u64,
    pub ops: Vec<TextOp>,
    pub events: Vec<Box<RawValue>>,
}

impl TextPatchMessage {
    /// The patch message `text`, as the server writes it (`type` first); `None` for any
    /// other message, and for a patch of the wrong shape: read those as a `ServerMsg`,
    /// which says what is wrong.
    pub fn read(text: &str) -> Option<TextPatchMessage> {
        let m = read_wire::<&RawValue, &RawValue>(text)?;
        let ops = m
            .ops
            .into_iter()
            .map(|(kind, path, value)| {
                let value = value.map(|v| v.get().to_string());
                match (kind, value) {
                    (WireKind::Add, Some(value)) => Some(RawPatchOp::Add { path, value }),
                    (WireKind::Replace, Some(value)) => Some(RawPatchOp::Replace { path, value }),
                    (WireKind::Remove, None) => Some(RawPatchOp::Remove { path }),
                    _ => None,
                }
                .map(TextOp)
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
