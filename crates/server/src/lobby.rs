//! The lobby's list of public tables that are open or playing, on this node and (through
//! the cluster's notes) on the others, and the stream of its changes that lobby sockets
//! follow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use protocol::TableInfo;
use tokio::sync::broadcast;
use uuid::Uuid;

use crate::node::Cluster;
use realtime::lock;

/// Lobby changes a socket may fall behind by before it is sent the whole list instead.
const LOBBY_BACKLOG: usize = 4096;

pub struct Lobby {
    entries: Mutex<HashMap<Uuid, TableInfo>>,
    /// The id of every table whose lobby entry changed (or went away); lobby sockets
    /// follow it and send the changes.
    changes: broadcast::Sender<Uuid>,
}

impl Default for Lobby {
    fn default() -> Self {
        Lobby {
            entries: Mutex::new(HashMap::new()),
            changes: broadcast::channel(LOBBY_BACKLOG).0,
        }
    }
}

impl Lobby {
    /// Sets (or removes) a lobby entry in this node's list; whether it changed.
    pub fn apply(&self, id: Uuid, info: Option<TableInfo>) -> bool {
        let changed = {
            let mut l = lock(&self.entries);
            match info {
                // Compared with what it replaced once in place (a table's entry is set
                // after every move): no copy of it for the comparison.
                Some(i) => {
                    let old = l.insert(id, i);
                    old.as_ref() != l.get(&id)
                }
                None => l.remove(&id).is_some(),
            }
        };
        if changed {
            // No lobby socket listening is fine.
            let _ = self.changes.send(id);
        }
        changed
    }

    /// The lobby entry of one table, if it is listed.
    pub fn table(&self, id: Uuid) -> Option<TableInfo> {
        lock(&self.entries).get(&id).cloned()
    }

    /// The lobby's tables, newest first.
    pub fn tables(&self) -> Vec<TableInfo> {
        let mut v: Vec<TableInfo> = lock(&self.entries).values().cloned().collect();
        v.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        v
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
