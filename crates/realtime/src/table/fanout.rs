//! Telling connections about changes: each connection's bounded queue, and per viewer (a
//! seat, or the spectators) the state document its connections hold.
//!
//! After a connection's first full `state`, every change reaches it as a `patch` against
//! that document (`protocol::patch`): the view and legal actions are rebuilt only when the
//! game moved (presence changes touch `/table` alone), and the fairness records only
//! travel when a round starts or ends. Connections of one viewer share one serialized
//! message. A viewer's document is kept after its last connection leaves, so a client that
//! reconnects with `since` = the version it holds gets one patch instead of a full state.
//!
//! A queue is bounded ([`super::CONN_QUEUE`]): a connection that cannot take its next
//! message is dropped, and its socket closes with 1013 (reconnect to resync).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::patch::{Doc, RawPatchOp};
use protocol::{RoundFairness, Viewer, patch};
use serde_json::Value;
use uuid::Uuid;

use super::{Table, seed_public};
use crate::Text;

/// How many rounds' fairness records a state document holds: the latest ones (§3.4).
pub(super) const FAIRNESS_ROUNDS: usize = 2;

/// What a connection is sent after each change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Updates {
    /// A `patch` against the document it holds, in the compact form (the default,
    /// protocol.md §3.4).
    #[default]
    Patch,
    /// A whole `state` every time, for simple clients.
    Full,
    /// A `patch` as RFC 6902 writes it, `from` and `events` always written: for clients
    /// with a JSON Patch library and nothing more.
    JsonPatch,
}

impl Updates {
    /// Whether this connection takes patches (in either form).
    fn patches(self) -> bool {
        matches!(self, Updates::Patch | Updates::JsonPatch)
    }
}

struct Conn {
    who: Option<Uuid>,
    out: crate::outbox::Sender<Text>,
    updates: Updates,
    /// The viewer and version of the document this connection holds (what it was last
    /// sent, or on connect what it says it has).
    holds: Option<(Viewer, u64)>,
    /// Its page said it is hidden (`presence` with `away: true`) and not since that it is
    /// back in view. A player is away only while every page of theirs is.
    hidden: bool,
    /// The table part of that document, when it is not the viewer's held one: the table
    /// part changes between versions too (the clocks' `left_ms` count down), so a full
    /// state made later at the same version (`sync`, HTTP) has another one
    /// ([`Table::refresh_now`]). Its next patch is diffed from what it holds.
    table: Option<Arc<Doc>>,
}

/// A viewer's state document, as its connections hold it.
struct Held {
    version: u64,
    /// The table version whose game the view and legal actions show.
    game_at: u64,
    /// Shared between viewers brought up to date by the same broadcast, so that the table's
    /// part is diffed once per change, not once per viewer.
    table: Arc<Doc>,
    /// Held as JSON text, not as a tree of values: building, comparing and dropping trees
    /// was most of the server's work per move; text is made in one buffer, with the places
    /// of the view's members, and diffed by comparing text (`patch::diff_docs_at`).
    view: Doc,
    legal: Doc,
    fairness: Arc<Doc>,
}

#[derive(Default)]
pub(super) struct Fanout {
    conns: HashMap<u64, Conn>,
    next: u64,
    held: HashMap<Viewer, Held>,
    /// The table's part as of the latest broadcast, and the patch from the one before it.
    table: Option<Arc<Doc>>,
    /// The fairness records, rebuilt only when a round starts or ends: (rounds, rounds
    /// ended) they were made for.
    fairness: Option<((usize, usize), Arc<Doc>)>,
    /// The spectator count in `table`, and when that broadcast was.
    sent_spectators: usize,
    sent_at: Option<Instant>,
    /// When the spectators come or gone since `sent_at` are told (a broadcast of their
    /// count alone), unless a broadcast tells them first ([`SPECTATORS_EVERY`]).
    pub(super) spectators_due: Option<Instant>,
}

/// A broadcast of the spectator count alone comes at most this often: sockets opened and
/// closed in a loop by one client must not make a patch to everyone at the table each
/// time. A count that changed since rides along with the next broadcast anyway.
pub(super) const SPECTATORS_EVERY: Duration = Duration::from_secs(1);

/// What a socket's coming or going changed of the table's part of the documents, against
/// the latest broadcast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Seen {
    /// Nothing (the player has another socket open).
    Nothing,
    /// The spectator count alone.
    Spectators,
    /// More (a player's presence, a clock's time left).
    More,
}

impl Fanout {
    pub fn add(
        &mut self,
        who: Option<Uuid>,
        out: crate::outbox::Sender<Text>,
        since: Option<(Viewer, u64)>,
        updates: Updates,
    ) -> u64 {
        let id = self.next;
        self.next += 1;
        self.conns.insert(
            id,
            Conn {
                who,
                out,
                updates,
                holds: since,
                hidden: false,
                table: None,
            },
        );
        id
    }

    /// Notes what connection `id`'s page said of itself (`presence`).
    pub fn set_hidden(&mut self, id: u64, hidden: bool) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.hidden = hidden;
        }
    }

    /// Whether `player` has connections and every one of them is hidden: one page in view
    /// (another tab, another device) is the player there.
    pub fn all_hidden(&self, player: Uuid) -> bool {
        let mut theirs = self.conns.values().filter(|c| c.who == Some(player));
        let first = theirs.next();
        first.is_some_and(|c| c.hidden) && theirs.all(|c| c.hidden)
    }

    pub fn remove(&mut self, id: u64) -> bool {
        self.conns.remove(&id).is_some()
    }

    pub fn who(&self, id: u64) -> Option<Option<Uuid>> {
        self.conns.get(&id).map(|c| c.who)
    }

    pub fn updates(&self, id: u64) -> Updates {
        self.conns.get(&id).map_or(Updates::Patch, |c| c.updates)
    }

    /// Gives connection `id` back the message of its rate limit that carried a move.
    pub fn refund(&self, id: u64) {
        if let Some(c) = self.conns.get(&id) {
            c.out.refund();
        }
    }

    pub fn connected(&self, player: Uuid) -> bool {
        self.conns.values().any(|c| c.who == Some(player))
    }

    /// Connections that `seated` says hold no seat (anonymous ones included).
    pub fn spectators(&self, seated_elsewhere: impl Fn(Uuid) -> bool) -> usize {
        self.conns
            .values()
            .filter(|c| c.who.is_none_or(&seated_elsewhere))
            .count()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Drops every held document, so that every connection's next message is a full state.
    pub fn forget_documents(&mut self) {
        self.held.clear();
        self.table = None;
        self.fairness = None;
    }

    pub fn has_people(&self) -> bool {
        self.conns.values().any(|c| c.who.is_some())
    }
}

/// A `patch` message (`ServerMsg::Patch`), written as text: its operations' values are
/// parts of held documents, valid JSON that need not be parsed or checked again. In the
/// compact form (`json_patch` false, the default) its operations are arrays, `from` is left
/// out when it is `version - 1` and `events` when there are none (protocol.md §3.4).
fn patch_text_of(
    from: u64,
    version: u64,
    ops: &[RawPatchOp],
    events: &str,
    json_patch: bool,
) -> Text {
    let per_op = if json_patch { 40 } else { 8 };
    let mut out = String::with_capacity(
        64 + events.len()
            + ops
                .iter()
                .map(|op| match op {
                    RawPatchOp::Add { path, value } | RawPatchOp::Replace { path, value } => {
                        path.len() + value.len() + per_op
                    }
                    RawPatchOp::Remove { path } => path.len() + per_op,
                })
                .sum::<usize>(),
    );
    if json_patch {
        let _ = write!(
            out,
            "{{\"type\":\"patch\",\"from\":{from},\"version\":{version},\"ops\":"
        );
        patch::write_ops(&mut out, ops);
        out.push_str(",\"events\":");
        out.push_str(events);
    } else {
        if from + 1 == version {
            let _ = write!(out, "{{\"type\":\"patch\",\"version\":{version},\"ops\":");
        } else {
            let _ = write!(
                out,
                "{{\"type\":\"patch\",\"from\":{from},\"version\":{version},\"ops\":"
            );
        }
        patch::write_ops_compact(&mut out, ops);
        if events != "[]" {
            out.push_str(",\"events\":");
            out.push_str(events);
        }
    }
    out.push('}');
    out.into()
}

/// Whether `op` changes the table's part of a document (`/table`).
fn of_table(op: &RawPatchOp) -> bool {
    let path = op.path();
    path == "/table" || path.starts_with("/table/")
}

/// A `state` message (`ServerMsg::State`) written from a held document's text.
fn state_text(h: &Held, you: Viewer, events: &str) -> Text {
    let you = serde_json::to_string(&you).expect("a viewer serializes");
    let mut out = String::with_capacity(
        128 + h.table.text().len()
            + h.view.text().len()
            + h.legal.text().len()
            + h.fairness.text().len()
            + events.len(),
    );
    let _ = write!(
        out,
        "{{\"type\":\"state\",\"version\":{},\"table\":",
        h.version
    );
    for (part, key) in [
        (h.table.text(), ",\"you\":"),
        (&you, ",\"view\":"),
        (h.view.text(), ",\"legal\":"),
        (h.legal.text(), ",\"events\":"),
        (events, ",\"fairness\":"),
        (h.fairness.text(), "}"),
    ] {
        out.push_str(part);
        out.push_str(key);
    }
    out.into()
}

impl Table {
    pub(super) fn viewer_for(&self, who: Option<Uuid>) -> Viewer {
        match self.seat_of(who) {
            Some(s) => Viewer::Player(s),
            None => Viewer::Spectator,
        }
    }

    /// The fairness records (R-0) a state document holds: those of the latest two rounds
    /// dealt (the round in play, with its commitment, and the one before it, revealed;
    /// every round's record is at `GET /api/tables/{id}/rounds`), so that a state does not
    /// grow with every round a match has played. Rebuilt when a round started or ended
    /// since the last time (a daily deal's every time: its seed is published when the day
    /// ends).
    fn fairness(&mut self) -> Arc<Doc> {
        let key = (
            self.rounds.len(),
            self.rounds.iter().filter(|r| r.ended).count(),
        );
        if let Some((k, f)) = &self.fan.fairness
            && *k == key
            && self.record.daily.is_none()
        {
            return f.clone();
        }
        let rounds: Vec<RoundFairness> = self
            .rounds
            .iter()
            .skip(self.rounds.len().saturating_sub(FAIRNESS_ROUNDS))
            .map(|r| RoundFairness {
                round: r.round,
                seed_sha256: r.commitment.clone(),
                // R-0: the seed is published only once its round is over (and a daily
                // deal's only once its day is over: others are still playing it).
                seed: seed_public(r.ended, self.record.daily.as_deref()).then(|| r.seed.to_hex()),
            })
            .collect();
        let f = Arc::new(Doc::of(&rounds));
        self.fan.fairness = Some((key, f.clone()));
        f
    }

    /// The game's part of a viewer's document: its view and legal actions.
    fn game_part(&self, viewer: Viewer) -> (Doc, Doc) {
        let none = || Doc::of(&[0u8; 0]);
        if self.rounds.is_empty() {
            return (Doc::of(&()), none());
        }
        match viewer {
            Viewer::Player(s) => {
                let (view, legal) = self.game.seat_doc(s);
                let playing = self.record.status == store::TableStatus::Playing;
                (view, if playing { legal } else { none() })
            }
            Viewer::Spectator => (self.game.view_doc(game_core::Viewer::Spectator), none()),
        }
    }

    /// Brings `viewer`'s held document to the current version (see [`Self::refresh_all`]).
    fn refresh(
        &mut self,
        viewer: Viewer,
        table: &Arc<Doc>,
        table_ops: Option<(&Arc<Doc>, &[RawPatchOp])>,
    ) -> Option<(u64, Vec<RawPatchOp>)> {
        self.refresh_all(&[viewer], table, table_ops)
            .pop()
            .expect("one per viewer")
    }

    /// Brings the held documents of `viewers` (each named once) to the current version,
    /// whose table part is `table` (`table_ops`: the patch from the previous broadcast's
    /// table part, shared by every viewer that held it). Returns, per viewer, the patch
    /// from the version it was at, or `None` when its document was made afresh. The views
    /// are diffed together: what changed alike for several viewers (the trick, the cards
    /// played, the scores) is diffed once.
    fn refresh_all(
        &mut self,
        viewers: &[Viewer],
        table: &Arc<Doc>,
        table_ops: Option<(&Arc<Doc>, &[RawPatchOp])>,
    ) -> Vec<Option<(u64, Vec<RawPatchOp>)>> {
        let mut out = Vec::with_capacity(viewers.len());
        // (index in `viewers`, new view, new legal actions) of those whose game moved.
        let mut moved: Vec<(usize, Doc, Doc)> = Vec::new();
        for (i, &viewer) in viewers.iter().enumerate() {
            let held = self.fan.held.get(&viewer).map(|h| (h.version, h.game_at));
            let Some((from, game_at)) = held else {
                let (view, legal) = self.game_part(viewer);
                let fairness = self.fairness();
                self.fan.held.insert(
                    viewer,
                    Held {
                        version: self.version,
                        game_at: self.moved,
                        table: table.clone(),
                        view,
                        legal,
                        fairness,
                    },
                );
                out.push(None);
                continue;
            };
            if from == self.version {
                out.push(Some((from, vec![])));
                continue;
            }
            let h = self.fan.held.get_mut(&viewer).expect("checked above");
            let mut ops = Vec::new();
            match table_ops {
                Some((prev, shared)) if Arc::ptr_eq(prev, &h.table) => {
                    ops.extend_from_slice(shared)
                }
                _ => patch::diff_docs_at(
                    "/table",
                    &[(&h.table, table)],
                    std::slice::from_mut(&mut ops),
                ),
            }
            h.table = table.clone();
            h.version = self.version;
            out.push(Some((from, ops)));
            if game_at != self.moved {
                let (view, legal) = self.game_part(viewer);
                moved.push((i, view, legal));
            }
        }
        if moved.is_empty() {
            return out;
        }
        let fairness = self.fairness();
        let mut view_ops = vec![Vec::new(); moved.len()];
        let pairs: Vec<(&Doc, &Doc)> = moved
            .iter()
            .map(|(i, view, _)| (&self.fan.held[&viewers[*i]].view, view))
            .collect();
        patch::diff_docs_at("/view", &pairs, &mut view_ops);
        for ((i, view, legal), view_ops) in moved.into_iter().zip(view_ops) {
            let h = self.fan.held.get_mut(&viewers[i]).expect("refreshed above");
            let (_, ops) = out[i].as_mut().expect("a held document");
            ops.extend(view_ops);
            patch::diff_docs_at("/legal", &[(&h.legal, &legal)], std::slice::from_mut(ops));
            if !Arc::ptr_eq(&h.fairness, &fairness) {
                patch::diff_docs_at(
                    "/fairness",
                    &[(&h.fairness, &fairness)],
                    std::slice::from_mut(ops),
                );
            }
            (h.view, h.legal, h.fairness) = (view, legal, fairness.clone());
            h.game_at = self.moved;
        }
        out
    }

    /// Sends every connection what changed (a patch, or its full state when it holds
    /// nothing usable or asked for full states), and refreshes the lobby entry. `events`
    /// are the game's public events of the change.
    pub(super) fn broadcast(&mut self, events: &[Value]) {
        let info = self.info();
        // Whatever the spectators did is in this one.
        self.fan.spectators_due = None;
        if self.fan.conns.is_empty() {
            // Nobody to tell (a table of bots nobody watches): only the lobby. Held
            // documents keep their own table part, so a later patch is still exact. The
            // latest broadcast's table part is no longer what the lobby was told: the next
            // socket's coming is compared with nothing, and makes a version.
            self.fan.table = None;
            return self.publish(info);
        }
        let table = Arc::new(Doc::of(&info));
        self.fan.sent_spectators = info.spectators;
        self.fan.sent_at = Some(Instant::now());
        // The table's part is the same for every viewer: diffed once.
        let prev = self.fan.table.replace(table.clone());
        let shared_ops: Option<(Arc<Doc>, Vec<RawPatchOp>)> = prev.map(|p| {
            let mut ops = vec![Vec::new()];
            patch::diff_docs_at("/table", &[(&p, &table)], &mut ops);
            (p, ops.pop().expect("one"))
        });
        // The same events for every viewer: written once.
        let events = serde_json::to_string(events).expect("events serialize");
        let mut viewers: Vec<(u64, Viewer)> = self
            .fan
            .conns
            .iter()
            .map(|(id, c)| (*id, self.viewer_for(c.who)))
            .collect();
        viewers.sort_unstable_by_key(|(_, v)| *v);
        let groups: Vec<&[(u64, Viewer)]> = viewers.chunk_by(|a, b| a.1 == b.1).collect();
        let distinct: Vec<Viewer> = groups.iter().map(|g| g[0].1).collect();
        let changes = self.refresh_all(
            &distinct,
            &table,
            shared_ops.as_ref().map(|(p, o)| (p, o.as_slice())),
        );
        let mut slow = Vec::new();
        for (group, change) in groups.into_iter().zip(changes) {
            let viewer = group[0].1;
            let h = &self.fan.held[&viewer];
            // The patch in each form, written once for the group: [compact, json_patch].
            let mut patch_text: [Option<Text>; 2] = [None, None];
            let mut full_text: Option<Text> = None;
            for &(id, _) in group {
                let c = self.fan.conns.get_mut(&id).expect("listed above");
                let text = match (&change, c.updates, c.holds) {
                    (Some((from, ops)), updates, Some((held_viewer, at)))
                        if updates.patches() && held_viewer == viewer && at == *from =>
                    {
                        let json_patch = updates == Updates::JsonPatch;
                        match &c.table {
                            // A table part of its own: so is the table's part of its patch.
                            Some(own) => {
                                let mut mine = vec![Vec::new()];
                                patch::diff_docs_at("/table", &[(own, &table)], &mut mine);
                                let mut mine = mine.pop().expect("one");
                                mine.extend(ops.iter().filter(|op| !of_table(op)).cloned());
                                patch_text_of(*from, h.version, &mine, &events, json_patch)
                            }
                            None => patch_text[usize::from(json_patch)]
                                .get_or_insert_with(|| {
                                    patch_text_of(*from, h.version, ops, &events, json_patch)
                                })
                                .clone(),
                        }
                    }
                    _ => full_text
                        .get_or_insert_with(|| state_text(h, viewer, &events))
                        .clone(),
                };
                c.holds = Some((viewer, h.version));
                c.table = None;
                if let Err(refused) = c.out.try_send(text) {
                    slow.push((id, refused));
                }
            }
        }
        self.publish(info);
        if !slow.is_empty() {
            for (id, refused) in slow {
                self.drop_behind(id, refused);
            }
            // Their leaving is a presence change everyone must see (it may be a player).
            self.version += 1;
            self.broadcast(&[]);
        }
    }

    /// How the table's part of the documents (seats, presence, spectators, clocks)
    /// differs from what the latest broadcast sent: the only part a socket's coming or
    /// going can change. Clocks count down, so a timed table's differs while one runs.
    pub(super) fn seen_change(&self) -> Seen {
        let Some(sent) = &self.fan.table else {
            return Seen::More;
        };
        let mut info = self.info();
        if sent.text() == Doc::of(&info).text() {
            return Seen::Nothing;
        }
        info.spectators = self.fan.sent_spectators;
        if sent.text() == Doc::of(&info).text() {
            Seen::Spectators
        } else {
            Seen::More
        }
    }

    /// After a socket came (`new`, its connection) or went: everyone is told what they
    /// can see of it, at a new version. A player's second socket changes nothing anyone
    /// sees: no new version, and only the newcomer hears (its state, or the patch from
    /// what it holds). A spectator's count is told at most every [`SPECTATORS_EVERY`]
    /// (meanwhile the newcomer alone hears, as above).
    pub(super) fn socket_seen(&mut self, new: Option<u64>) {
        let seen = self.seen_change();
        let later = self
            .fan
            .sent_at
            .map(|t| t + SPECTATORS_EVERY)
            .filter(|&at| at > Instant::now());
        match (seen, later) {
            (Seen::Nothing, _) => {}
            (Seen::Spectators, Some(at)) => {
                self.fan.spectators_due.get_or_insert(at);
            }
            _ => {
                self.version += 1;
                return self.broadcast(&[]);
            }
        }
        if let Some(id) = new {
            self.greet(id);
        }
    }

    /// The spectator count's broadcast is due ([`Self::socket_seen`]): made unless the
    /// count is back to what everyone holds.
    pub(super) fn spectators_due(&mut self) {
        self.fan.spectators_due = None;
        if self.seen_change() != Seen::Nothing {
            self.version += 1;
            self.broadcast(&[]);
        }
    }

    /// Drops a connection that could not take its next message: its socket closes with
    /// 1013 and the client reconnects and resyncs. A connection is never left open after a
    /// message to it was lost, so what it holds is always what it was sent. A socket that
    /// had already closed (its `Disconnect` not yet here) did not fall behind: it goes
    /// without counting as a slow reader.
    fn drop_behind(&mut self, id: u64, refused: crate::outbox::Refused) {
        if let Some(c) = self.fan.conns.remove(&id) {
            if refused == crate::outbox::Refused::Full {
                tracing::info!(table = %self.record.id, conn = id, "dropping a connection that fell behind");
                self.core.metrics.closed("fell_behind");
            }
            // Its socket's own `Disconnect` will find it gone: the player's absence (grace,
            // desertion) counts from here.
            match c.who {
                Some(who) => self.person_disconnected(who),
                None => self.watchers_changed(),
            }
        }
    }

    /// Puts the table's entry in the lobby (or takes it out, once it is over or private).
    pub(super) fn publish(&self, info: protocol::TableInfo) {
        let listed = !self.record.private
            && matches!(
                self.record.status,
                store::TableStatus::Open | store::TableStatus::Playing
            );
        self.core
            .publish_lobby(self.record.id, self.epoch, listed.then_some(info));
    }

    /// Sends one connection a message of its own (an error); one it cannot take drops it.
    pub(super) fn send_to(&mut self, conn: u64, text: String) {
        let lost = self
            .fan
            .conns
            .get(&conn)
            .and_then(|c| c.out.try_send(text.into()).err());
        if let Some(refused) = lost {
            self.drop_behind(conn, refused);
            self.version += 1;
            self.broadcast(&[]);
        }
    }

    /// Brings `viewer`'s held document to now, for a full state sent at once: to the
    /// current version, with its table part made afresh. The table part changes between
    /// versions too (the clocks' `left_ms` are "as of the message", protocol.md §1.6), so
    /// the latest broadcast's may be seconds old. Connections that hold the document as it
    /// was keep that table part as their own, so that their next patch is still diffed
    /// from exactly what they hold.
    fn refresh_now(&mut self, viewer: Viewer) {
        let mut info = self.info();
        if self.fan.spectators_due.is_some() {
            // The spectators' count is told with its own version, soon: until then this
            // version's documents keep the count they were sent with (a sync or an HTTP
            // state at the same version must not differ from what the sockets hold).
            info.spectators = self.fan.sent_spectators;
        }
        let table = Arc::new(Doc::of(&info));
        self.refresh(viewer, &table, None);
        let version = self.version;
        let h = self.fan.held.get_mut(&viewer).expect("refreshed above");
        if h.table.text() == table.text() {
            return;
        }
        let was = std::mem::replace(&mut h.table, table);
        for c in self.fan.conns.values_mut() {
            if c.holds == Some((viewer, version)) && c.table.is_none() {
                c.table = Some(was.clone());
            }
        }
    }

    /// The full state of `who`'s viewer as text, for HTTP, as of now ([`Self::refresh_now`]).
    /// The viewer's document is kept at this version: a socket that connects next with
    /// `since` gets a patch.
    pub(super) fn state_for(&mut self, who: Option<Uuid>) -> Text {
        let viewer = self.viewer_for(who);
        self.refresh_now(viewer);
        state_text(&self.fan.held[&viewer], viewer, "[]")
    }

    /// Brings a new connection up to the current version without making a new one (its
    /// coming changed nothing anyone sees, [`Self::socket_seen`]): the patch from
    /// the version it holds when that is its viewer's, else its full state. Nobody else
    /// hears anything.
    pub(super) fn greet(&mut self, conn: u64) {
        let Some(who) = self.fan.who(conn) else {
            return;
        };
        let Some(table) = self.fan.table.clone() else {
            // No broadcast yet: nothing to be "unchanged" from.
            return self.send_state(conn);
        };
        let viewer = self.viewer_for(who);
        if self
            .fan
            .held
            .get(&viewer)
            .is_some_and(|h| h.version == self.version && !Arc::ptr_eq(&h.table, &table))
        {
            // The viewer's document at this version was made afresh since the broadcast
            // (`refresh_now`: a sync, an HTTP state) with another table part: a `since`
            // of this version may name either, so the socket gets the whole state.
            return self.send_state(conn);
        }
        let change = self.refresh(viewer, &table, None);
        let version = self.version;
        let h = &self.fan.held[&viewer];
        let Some(c) = self.fan.conns.get_mut(&conn) else {
            return;
        };
        let text = match (change, c.updates, c.holds) {
            (Some((from, ops)), updates, Some((held_viewer, at)))
                if updates.patches() && held_viewer == viewer && at == from =>
            {
                patch_text_of(from, h.version, &ops, "[]", updates == Updates::JsonPatch)
            }
            _ => state_text(h, viewer, "[]"),
        };
        c.holds = Some((viewer, version));
        c.table = None;
        if let Err(refused) = c.out.try_send(text) {
            // Gone already (closed before its coming was handled): its leaving is told as
            // any socket's.
            self.drop_behind(conn, refused);
            self.socket_seen(None);
        }
    }

    /// Sends one connection its full state as of now (on `sync`, after a stale action).
    pub(super) fn send_state(&mut self, conn: u64) {
        let Some(who) = self.fan.who(conn) else {
            return;
        };
        let viewer = self.viewer_for(who);
        self.refresh_now(viewer);
        let text = state_text(&self.fan.held[&viewer], viewer, "[]");
        let version = self.version;
        let lost = match self.fan.conns.get_mut(&conn) {
            Some(c) => {
                let lost = c.out.try_send(text).err();
                c.holds = Some((viewer, version));
                c.table = None;
                lost
            }
            None => None,
        };
        if let Some(refused) = lost {
            self.drop_behind(conn, refused);
            self.version += 1;
            self.broadcast(&[]);
        }
    }

    pub(super) fn humans_watching(&self) -> bool {
        self.fan.has_people()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::ServerMsg;
    use serde_json::json;

    /// The messages written from borrowed parts are the protocol's own messages.
    #[test]
    fn borrowed_messages_are_server_messages() {
        let ops = vec![
            RawPatchOp::Remove {
                path: "/view/hand/0".into(),
            },
            RawPatchOp::Add {
                path: "/view/trick/-".into(),
                value: json!({"card": 3, "seat": 1}).to_string(),
            },
        ];
        let events = vec![json!({"type": "card_played"})];
        let expected_ops = vec![
            protocol::PatchOp::Remove {
                path: "/view/hand/0".into(),
            },
            protocol::PatchOp::Add {
                path: "/view/trick/-".into(),
                value: json!({"card": 3, "seat": 1}),
            },
        ];
        let events_text = serde_json::to_string(&events).unwrap();
        // RFC 6902, `from` and `events` always written.
        let text = patch_text_of(4, 5, &ops, &events_text, true);
        let msg: ServerMsg = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(
            msg,
            ServerMsg::Patch {
                from: Some(4),
                version: 5,
                ops: expected_ops.clone(),
                events: events.clone()
            }
        );
        // The compact form: the same patch; `from` left out when it is one less, and
        // `events` when there are none.
        let text = patch_text_of(4, 5, &ops, &events_text, false);
        assert_eq!(
            text.as_str(),
            r#"{"type":"patch","version":5,"ops":[["hand/0"],["+trick/-",{"card":3,"seat":1}]],"events":[{"type":"card_played"}]}"#
        );
        let msg: ServerMsg = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(
            msg,
            ServerMsg::Patch {
                from: None,
                version: 5,
                ops: expected_ops.clone(),
                events: events.clone()
            }
        );
        let text = patch_text_of(3, 5, &ops, "[]", false);
        assert_eq!(
            serde_json::from_str::<ServerMsg>(text.as_str()).unwrap(),
            ServerMsg::Patch {
                from: Some(3),
                version: 5,
                ops: expected_ops,
                events: vec![]
            }
        );
        assert!(!text.as_str().contains("events"));
        let held = Held {
            version: 7,
            game_at: 6,
            table: Arc::new(Doc::of(&json!({"id": "x"}))),
            view: Doc::of(&json!({"hand": [1, 2]})),
            legal: Doc::of(&json!([])),
            fairness: Arc::new(Doc::of(&json!([]))),
        };
        let text = state_text(
            &held,
            Viewer::Spectator,
            &serde_json::to_string(&events).unwrap(),
        );
        let v: Value = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(v["type"], "state");
        assert_eq!(v["version"], 7);
        assert_eq!(v["you"], json!({"kind": "spectator"}));
        assert_eq!(v["events"], json!(events));
        assert_eq!(v["view"], json!({"hand": [1, 2]}));
        assert_eq!(v["table"], json!({"id": "x"}));
        assert_eq!(v["fairness"], json!([]));
        assert_eq!(v["legal"], json!([]));
        // The members of the protocol's state message, none other.
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = [
            "type", "version", "table", "you", "view", "legal", "events", "fairness",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
    }
}
