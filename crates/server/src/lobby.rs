//! The lobby's list of public tables that are open or playing, on this node and (through
//! the cluster's notes) on the others, and the stream of its changes that lobby sockets
//! follow.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use protocol::{TableInfo, TableStatus};
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::node::Cluster;
use realtime::lock;

/// Lobby changes a socket may fall behind by before it is sent the whole list instead.
const LOBBY_BACKLOG: usize = 4096;

/// A table's place in the list: open tables first (those can be joined), then the
/// matches being played; newest first within each.
type Key = (bool, Reverse<i64>, Uuid);

fn key(t: &TableInfo) -> Key {
    (t.status != TableStatus::Open, Reverse(t.created_at), t.id)
}

pub struct Lobby {
    entries: Mutex<Entries>,
    /// The id of every table whose lobby entry changed (or went away); lobby sockets
    /// follow it and send the changes of the tables they show.
    changes: broadcast::Sender<Uuid>,
}

/// The entries, and their order over all games and per game: a socket shows the first
/// few of one of those, however many tables are listed (a walk's 10,000 public tables
/// made the whole list a 5.4 MB message to every visitor).
#[derive(Default)]
struct Entries {
    by_id: HashMap<Uuid, TableInfo>,
    order: BTreeSet<Key>,
    by_game: HashMap<String, BTreeSet<Key>>,
}

impl Entries {
    fn take_out(&mut self, old: &TableInfo) {
        let k = key(old);
        self.order.remove(&k);
        if let Some(g) = self.by_game.get_mut(&old.game) {
            g.remove(&k);
            if g.is_empty() {
                self.by_game.remove(&old.game);
            }
        }
    }

    fn ordered(&self, game: Option<&str>) -> Option<&BTreeSet<Key>> {
        match game {
            None => Some(&self.order),
            Some(g) => self.by_game.get(g),
        }
    }
}

impl Default for Lobby {
    fn default() -> Self {
        Lobby {
            entries: Mutex::new(Entries::default()),
            changes: broadcast::channel(LOBBY_BACKLOG).0,
        }
    }
}

impl Lobby {
    /// Sets (or removes) a lobby entry in this node's list; whether it changed.
    pub fn apply(&self, id: Uuid, info: Option<TableInfo>) -> bool {
        let changed = {
            let mut e = lock(&self.entries);
            let old = e.by_id.remove(&id);
            let changed = old.as_ref() != info.as_ref();
            if let Some(old) = &old {
                e.take_out(old);
            }
            if let Some(i) = info {
                let k = key(&i);
                e.order.insert(k);
                e.by_game.entry(i.game.clone()).or_default().insert(k);
                e.by_id.insert(id, i);
            }
            changed
        };
        if changed {
            // No lobby socket listening is fine.
            let _ = self.changes.send(id);
        }
        changed
    }

    /// The lobby entry of one table, if it is listed.
    pub fn table(&self, id: Uuid) -> Option<TableInfo> {
        lock(&self.entries).by_id.get(&id).cloned()
    }

    /// The first `n` tables of the list (of `game`'s tables only, if given), in its order
    /// (open first, newest first), and how many it holds in all.
    pub fn first(&self, game: Option<&str>, n: usize) -> (Vec<TableInfo>, usize) {
        let e = lock(&self.entries);
        let Some(ordered) = e.ordered(game) else {
            return (Vec::new(), 0);
        };
        let tables = ordered
            .iter()
            .take(n)
            .filter_map(|(_, _, id)| e.by_id.get(id).cloned())
            .collect();
        (tables, ordered.len())
    }

    /// The ids of [`Self::first`], without copying the entries (each lobby socket asks
    /// after every change it hears of).
    pub fn first_ids(&self, game: Option<&str>, n: usize) -> (Vec<Uuid>, usize) {
        let e = lock(&self.entries);
        let Some(ordered) = e.ordered(game) else {
            return (Vec::new(), 0);
        };
        (
            ordered.iter().take(n).map(|(_, _, id)| *id).collect(),
            ordered.len(),
        )
    }

    /// The ids of entries as they change, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Uuid> {
        self.changes.subscribe()
    }
}

/// What the real-time core tells the server: a table of this node changed its lobby
/// entry. It goes into this node's list and, on Postgres, to the other nodes.
pub struct Publisher {
    pub lobby: Arc<Lobby>,
    pub cluster: Arc<Cluster>,
}

impl realtime::Host for Publisher {
    fn publish_lobby(&self, id: Uuid, epoch: i64, info: Option<TableInfo>) {
        if info.is_none() && self.cluster.shown_elsewhere(id) {
            // A task that stepped down: the new owner's entry stays.
            return;
        }
        if self.lobby.apply(id, info.clone()) {
            self.cluster.publish(epoch, id, info.as_ref());
        }
    }
}
