//! A client's side of the table socket: [`TableDoc`], one socket's state document kept up
//! to date from `state` and `patch` messages, as any client must keep it, and what a
//! message did to it ([`Incoming`]). Used by the load generator and the core's benchmark,
//! which play through the same messages a browser gets.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::ServerMsg;
use crate::patch::{self, Node, TextDoc, TextOp};

/// What one server message did to a [`TableDoc`].
#[derive(Debug)]
pub enum Incoming {
    /// The document changed (a `state`, or a `patch` that applied): now at this version.
    /// `actor`: the seat the change's first event names, if any (see [`actor`]).
    Updated {
        version: u64,
        full: bool,
        actor: Option<usize>,
    },
    /// A patch that did not fit what we hold: send `sync` and wait for the state.
    Mismatch,
    Error {
        code: String,
        message: String,
    },
    Pong,
    /// Chat (a line, the history, a mute list): beside the document, not in it.
    Chat,
    /// Not a `ServerMsg` at all.
    Undecodable(String),
}

/// Who made a change, as far as its public events say: the `seat` of the first event that
/// has one (`drew`, `card_played` in Fibonachos, … name the acting seat first; a round's
/// start or end that follows comes after it). `None` when no event names a seat: presence
/// changes have no events at all, and a Trump move none (its patch's card says it,
/// protocol.md §6.4). Games are free to shape their events, so this is a heuristic the
/// players use only to tell their own move's result from another seat's move in games
/// where several seats may act at once (rummy's off-turn moves); `None` is taken as
/// anybody's.
pub fn actor(events: &[Box<RawValue>]) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Event {
        seat: Option<u64>,
    }
    // Objects only: serde would read `[3]` as an `Event` too.
    events
        .iter()
        .filter(|e| e.get().starts_with('{'))
        .find_map(|e| serde_json::from_str::<Event>(e.get()).ok()?.seat)
        .map(|s| s as usize)
}

/// Which parts of a [`TableDoc`] to read again after a patch.
struct Reread {
    legal: bool,
    status: bool,
    seat: bool,
}

/// Whether a change at `path` may change what is at `prefix` (a JSON Pointer): it is at or
/// inside it, or replaces a container of it.
fn touches(path: &str, prefix: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => prefix.starts_with(path) && prefix[path.len()..].starts_with('/'),
    }
}

/// The state document of one table socket (the `state` message minus `type`, `version`
/// and `events`), kept by applying patches as any client must. It is held as the text it
/// came in (`protocol::patch::TextDoc`), opened only where a patch reaches inside: parsing
/// every card and legal action of every patch into a tree of values, and dropping them
/// again, was 60 % of the clients' CPU under the flat load, on the cores the server
/// runs on. What the players read after each message (the legal actions' count, the
/// status, the seat) is kept beside it.
#[derive(Debug, Default)]
pub struct TableDoc {
    pub doc: Option<TextDoc>,
    pub version: u64,
    legal: usize,
    status: String,
    seat: Option<usize>,
}

impl TableDoc {
    pub fn take(&mut self, text: &str) -> Incoming {
        // The message sent after every move, read without the tagged enum's detour.
        if let Some(p) = patch::TextPatchMessage::read(text) {
            return self.apply(p.from, p.version, p.ops, &p.events);
        }
        // Anything else, or a patch of the wrong shape (reported as undecodable below). A
        // `state` (on connecting, or after a `sync`) is read as the typed message, which
        // checks the whole of its shape.
        let msg = match serde_json::from_str::<ServerMsg>(text) {
            Ok(m) => m,
            Err(e) => {
                return Incoming::Undecodable(format!(
                    "{e}: {}",
                    text.chars().take(200).collect::<String>()
                ));
            }
        };
        match msg {
            ServerMsg::State {
                version,
                table,
                you,
                view,
                legal,
                events,
                fairness,
            } => {
                let doc = TextDoc::from_members(vec![
                    ("table".into(), raw(&table)),
                    ("you".into(), raw(&you)),
                    ("view".into(), raw(&view)),
                    ("legal".into(), raw(&legal)),
                    ("fairness".into(), raw(&fairness)),
                ]);
                let events: Vec<_> = events.iter().map(raw).collect();
                self.hold(version, doc, &events)
            }
            ServerMsg::Patch {
                from,
                version,
                ops,
                events,
            } => {
                let Some(from) = patch::patch_from(from, version) else {
                    return Incoming::Undecodable("a patch to version 0 without `from`".into());
                };
                let ops = ops.into_iter().map(TextOp::from).collect();
                let events: Vec<_> = events.iter().map(raw).collect();
                self.apply(from, version, ops, &events)
            }
            ServerMsg::Error { code, message, .. } => Incoming::Error { code, message },
            ServerMsg::Pong => Incoming::Pong,
            ServerMsg::Chat { .. } | ServerMsg::ChatHistory { .. } | ServerMsg::Muted { .. } => {
                Incoming::Chat
            }
        }
    }

    /// Takes a full state.
    fn hold(&mut self, version: u64, doc: TextDoc, events: &[Box<RawValue>]) -> Incoming {
        self.doc = Some(doc);
        self.version = version;
        if !self.read_back() {
            self.doc = None;
            return Incoming::Undecodable(format!(
                "state {version}: no list of legal actions or no status where expected"
            ));
        }
        Incoming::Updated {
            version,
            full: true,
            actor: actor(events),
        }
    }

    /// Applies a patch from `from` to `version`.
    fn apply(
        &mut self,
        from: u64,
        version: u64,
        ops: Vec<TextOp>,
        events: &[Box<RawValue>],
    ) -> Incoming {
        let Some(doc) = self.doc.as_mut().filter(|_| from == self.version) else {
            self.doc = None;
            return Incoming::Mismatch;
        };
        // Only what an operation reached is read again: `/table/status` and `/you` change a
        // few times a match, `/legal` about every other move.
        let touched = |prefix: &str| ops.iter().any(|op| touches(op.path(), prefix));
        let reread = Reread {
            legal: touched("/legal"),
            status: touched("/table/status"),
            seat: touched("/you"),
        };
        // Partly patched, or patched into a shape without what we read: worthless until
        // the next full state.
        if doc.apply(ops).is_err() || !self.read(reread) {
            self.doc = None;
            return Incoming::Mismatch;
        }
        self.version = version;
        Incoming::Updated {
            version,
            full: false,
            actor: actor(events),
        }
    }

    /// Reads the legal actions' count, the status and the seat from the document; `false`
    /// if one is missing or of the wrong type.
    fn read_back(&mut self) -> bool {
        self.read(Reread {
            legal: true,
            status: true,
            seat: true,
        })
    }

    /// [`Self::read_back`] of the parts `what` names; the others are kept.
    fn read(&mut self, what: Reread) -> bool {
        let Some(doc) = self.doc.as_mut() else {
            return false;
        };
        let scalar = |doc: &mut TextDoc, path: &str| -> Option<Value> { doc.get(path)?.to_value() };
        if what.legal {
            let Some(legal) = doc.get("/legal").and_then(Node::array_len) else {
                return false;
            };
            self.legal = legal;
        }
        if what.status {
            let Some(Value::String(status)) = scalar(doc, "/table/status") else {
                return false;
            };
            self.status = status;
        }
        if what.seat {
            self.seat = match scalar(doc, "/you/kind") {
                Some(k) if k == "player" => scalar(doc, "/you/seat")
                    .and_then(|s| s.as_u64())
                    .map(|s| s as usize),
                _ => None,
            };
        }
        true
    }

    /// How many legal actions the document's viewer has (none while no document is held).
    pub fn legal_count(&self) -> usize {
        if self.doc.is_some() { self.legal } else { 0 }
    }

    /// The `act` message that sends back the `i`-th legal action against the version held,
    /// as text: the action's own text as it came, when nothing opened it. `None` if there
    /// is no such action, or it is not a value (which the server never sends).
    pub fn act_text(&mut self, i: usize) -> Option<String> {
        let version = self.version;
        let node = self.doc.as_mut()?.get("/legal")?.index(i)?;
        let action = match node.as_text() {
            Some(text) => text.to_string(),
            None => node.to_value()?.to_string(),
        };
        Some(format!(
            r#"{{"type":"act","version":{version},"action":{action}}}"#
        ))
    }

    /// `"open"`, `"playing"`, `"finished"`, `"abandoned"` (empty without a document).
    pub fn status(&self) -> &str {
        if self.doc.is_some() { &self.status } else { "" }
    }

    /// Whether the match is over (or the table gone for good).
    pub fn over(&self) -> bool {
        matches!(self.status(), "finished" | "abandoned")
    }

    /// The seat this socket plays, if any.
    pub fn seat(&self) -> Option<usize> {
        self.doc.as_ref().and(self.seat)
    }
}

/// A part of a typed message, written as checked JSON text.
fn raw<T: Serialize>(v: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).expect("a typed message part serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PatchOp;
    use serde_json::json;

    #[test]
    fn the_actor_is_the_first_event_object_naming_a_seat() {
        let events = |t: &str| serde_json::from_str::<Vec<Box<RawValue>>>(t).unwrap();
        assert_eq!(
            actor(&events(r#"[[3], {"type":"x"}, {"seat":2}, {"seat":1}]"#)),
            Some(2)
        );
        assert_eq!(actor(&events(r#"[{"seat":null}, 4]"#)), None);
        assert_eq!(actor(&[]), None);
    }

    #[test]
    fn what_a_path_touches() {
        assert!(touches("/legal", "/legal"));
        assert!(touches("/legal/3", "/legal"));
        assert!(!touches("/legalx", "/legal"));
        assert!(touches("/table", "/table/status"));
        assert!(touches("", "/table/status"));
        assert!(!touches("/tab", "/table/status"));
        assert!(!touches("/table/seats/0", "/table/status"));
        assert!(!touches("/view/legal", "/legal"));
    }

    #[test]
    fn doc_follows_state_and_patches() {
        let mut d = TableDoc::default();
        let state = json!({
            "type": "state", "version": 5,
            "table": {"id": uuid::Uuid::nil(), "game": "trump", "options": null, "private": false,
                "status": "playing", "bots": null, "seats": [{"kind": "empty"}], "spectators": 0,
                "round": 1, "to_act": [0], "scores": [0], "winners": null, "created_at": 0,
                "pace": {"kind": "untimed"}, "clocks": [], "parked": false},
            "you": {"kind": "player", "seat": 0}, "view": {"hand": [1, 2]},
            "legal": [{"play": 1}, {"play": 2}], "events": [], "fairness": []
        });
        assert!(matches!(
            d.take(&state.to_string()),
            Incoming::Updated {
                version: 5,
                full: true,
                actor: None
            }
        ));
        assert_eq!(d.legal_count(), 2);
        let act = d.act_text(1).unwrap();
        assert_eq!(act, r#"{"type":"act","version":5,"action":{"play":2}}"#);
        assert!(matches!(
            serde_json::from_str::<crate::ClientMsg>(&act).unwrap(),
            crate::ClientMsg::Act { version: 5, action } if action == json!({"play": 2})
        ));
        assert_eq!(d.act_text(2), None);
        assert_eq!(d.seat(), Some(0));
        // A patch that reaches none of the parts read leaves them as they were.
        let p = json!({"type": "patch", "from": 5, "version": 6, "events": [],
            "ops": [{"op": "remove", "path": "/view/hand/1"}]});
        assert!(matches!(
            d.take(&p.to_string()),
            Incoming::Updated { version: 6, .. }
        ));
        assert_eq!(
            (d.legal_count(), d.status(), d.seat()),
            (2, "playing", Some(0))
        );
        // Replacing a container of a part reads it again: the seat goes with `/you`.
        let p = json!({"type": "patch", "from": 6, "version": 7, "events": [],
            "ops": [{"op": "replace", "path": "/you", "value": {"kind": "spectator"}}]});
        assert!(matches!(
            d.take(&p.to_string()),
            Incoming::Updated { version: 7, .. }
        ));
        assert_eq!((d.legal_count(), d.seat()), (2, None));
        d.doc
            .as_mut()
            .unwrap()
            .apply([TextOp::from(PatchOp::Replace {
                path: "/you".into(),
                value: json!({"kind": "player", "seat": 0}),
            })])
            .unwrap();
        d.read_back();
        assert_eq!(d.seat(), Some(0));
        // Back to the state, for what follows.
        assert!(matches!(
            d.take(&state.to_string()),
            Incoming::Updated { version: 5, .. }
        ));
        let p = json!({"type": "patch", "from": 5, "version": 6,
            "events": [{"type": "card_played", "seat": 1}, {"type": "trick_won", "winner": 0}], "ops": [
            {"op": "remove", "path": "/view/hand/0"},
            {"op": "replace", "path": "/legal", "value": []},
            {"op": "replace", "path": "/table/status", "value": "finished"}]});
        assert!(matches!(
            d.take(&p.to_string()),
            Incoming::Updated {
                version: 6,
                actor: Some(1),
                ..
            }
        ));
        assert_eq!(d.legal_count(), 0);
        assert!(d.over());
        // Written as the server writes it (read the quick way, `patch::TextPatchMessage`).
        let written = r#"{"type":"patch","from":6,"version":7,"ops":[{"op":"add","path":"/view/hand/-","value":3},{"op":"remove","path":"/legal/0"},{"op":"replace","path":"/table/status","value":"playing"},{"op":"replace","path":"/table/winners","value":null}],"events":[{"seat":0}]}"#;
        let legal = r#"[{"play":9}]"#.to_string();
        let set = PatchOp::Replace {
            path: "/legal".into(),
            value: serde_json::from_str(&legal).unwrap(),
        };
        d.doc.as_mut().unwrap().apply([TextOp::from(set)]).unwrap();
        assert!(matches!(
            d.take(written),
            Incoming::Updated {
                version: 7,
                actor: Some(0),
                ..
            }
        ));
        let held = d.doc.as_ref().unwrap().to_value().unwrap();
        assert_eq!(held["view"]["hand"], json!([2, 3]));
        assert_eq!(d.legal_count(), 0);
        assert_eq!(d.status(), "playing");
        assert_eq!(held["table"]["winners"], Value::Null);
        // The compact form, as the server writes it by default: `from` and `events` left
        // out, paths under `/view/` without that prefix.
        let compact = r#"{"type":"patch","version":8,"ops":[["hand/0"],["/legal",[{"play":4}]]]}"#;
        assert!(matches!(
            d.take(compact),
            Incoming::Updated {
                version: 8,
                actor: None,
                ..
            }
        ));
        assert_eq!(d.legal_count(), 1);
        let held = d.doc.as_ref().unwrap().to_value().unwrap();
        assert_eq!(held["view"]["hand"], json!([3]));
        // An operation of the wrong shape is not taken the quick way, and is undecodable.
        let bad =
            r#"{"type":"patch","from":7,"version":8,"ops":[{"op":"add","path":"/x"}],"events":[]}"#;
        assert!(matches!(d.take(bad), Incoming::Undecodable(_)));
        // A patch from a version we do not hold.
        let p = json!({"type": "patch", "from": 9, "version": 10, "events": [], "ops": []});
        assert!(matches!(d.take(&p.to_string()), Incoming::Mismatch));
        assert!(d.doc.is_none());
        assert!(matches!(
            d.take("{\"type\":\"dance\"}"),
            Incoming::Undecodable(_)
        ));
    }
}
