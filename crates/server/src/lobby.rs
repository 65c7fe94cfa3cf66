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

    fn put_in(&mut self, new: &TableInfo) {
        let k = key(new);
        self.order.insert(k);
        match self.by_game.get_mut(&new.game) {
            Some(g) => {
                g.insert(k);
            }
            None => {
                self.by_game.insert(new.game.clone(), BTreeSet::from([k]));
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
            // A move changes a table's entry (whose turn, the scores), rarely its place in
            // the order: the order is left alone then (this runs after every move).
            let same_place =
                matches!((&old, &info), (Some(o), Some(n)) if key(o) == key(n) && o.game == n.game);
            if !same_place {
                if let Some(old) = &old {
                    e.take_out(old);
                }
                if let Some(new) = &info {
                    e.put_in(new);
                }
            }
            if let Some(i) = info {
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

    /// The entries of `ids` still listed, in that order, under one lock (a lobby socket's
    /// changes of a window).
    pub fn tables(&self, ids: impl IntoIterator<Item = Uuid>) -> Vec<TableInfo> {
        let e = lock(&self.entries);
        ids.into_iter()
            .filter_map(|id| e.by_id.get(&id).cloned())
            .collect()
    }

    /// The first `n` tables of the list (of `game`'s tables only, if given), in its order
    /// (open first, newest first), and how many it holds in all.
    pub fn first(&self, game: Option<&str>, n: usize) -> (Vec<TableInfo>, usize) {
        self.page(game, 0, n)
    }

    /// The `n` tables after the first `skip` in the lobby's order, and how many there are
    /// in all (`GET /api/tables?offset=`).
    pub fn page(&self, game: Option<&str>, skip: usize, n: usize) -> (Vec<TableInfo>, usize) {
        let e = lock(&self.entries);
        let Some(ordered) = e.ordered(game) else {
            return (Vec::new(), 0);
        };
        let tables = ordered
            .iter()
            .skip(skip)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table(game: &str, status: TableStatus, created_at: i64) -> TableInfo {
        TableInfo {
            id: Uuid::new_v4(),
            game: game.into(),
            options: serde_json::Value::Null,
            private: false,
            status,
            bots: None,
            seats: vec![],
            spectators: 0,
            round: 0,
            to_act: vec![],
            scores: vec![],
            winners: None,
            created_at,
            pace: Default::default(),
            clocks: vec![],
            parked: false,
            rematch: None,
        }
    }

    /// Open tables first, newest first within each; per game; a table that changes place
    /// (it starts) moves, one that changes in place stays; a table gone leaves both orders.
    #[test]
    fn the_list_keeps_its_order_over_all_games_and_per_game() {
        let l = Lobby::default();
        let old_open = table("trump", TableStatus::Open, 1);
        let new_open = table("nachos", TableStatus::Open, 3);
        let mut playing = table("trump", TableStatus::Playing, 5);
        for t in [&old_open, &new_open, &playing] {
            assert!(l.apply(t.id, Some(t.clone())));
        }
        assert_eq!(
            l.first_ids(None, 10),
            (vec![new_open.id, old_open.id, playing.id], 3)
        );
        assert_eq!(l.first_ids(Some("trump"), 1), (vec![old_open.id], 2));
        assert_eq!(l.first_ids(Some("rummy"), 5), (vec![], 0));
        // A move: same place; unchanged: no change told.
        playing.round = 2;
        assert!(l.apply(playing.id, Some(playing.clone())));
        assert!(!l.apply(playing.id, Some(playing.clone())));
        // The old open table starts: it goes after the open ones, by its age.
        let mut started = old_open.clone();
        started.status = TableStatus::Playing;
        assert!(l.apply(started.id, Some(started.clone())));
        assert_eq!(
            l.first_ids(None, 10).0,
            vec![new_open.id, playing.id, started.id]
        );
        let (first, total) = l.first(Some("trump"), 10);
        assert_eq!(
            (first.iter().map(|t| t.id).collect::<Vec<_>>(), total),
            (vec![playing.id, started.id], 2)
        );
        assert_eq!(first[0].round, 2);
        assert!(l.apply(new_open.id, None));
        assert!(!l.apply(new_open.id, None));
        assert_eq!(l.first_ids(Some("nachos"), 5), (vec![], 0));
        assert_eq!(l.first_ids(None, 10).1, 2);
    }
}
