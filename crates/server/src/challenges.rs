//! Direct challenges between lobby sockets (#31, docs/protocol.md §4.2): which signed-in
//! lobby sockets each player has on this node, and the challenges waiting for an answer.
//! Kept in memory on one node: both sides must reach the same node (a limitation in a
//! cluster, documented there). What the socket does with them is `ws::challenge`.

use std::collections::HashMap;
use std::sync::Mutex;

use protocol::{BotLevel, Challenge, LobbyMsg};
use realtime::lock;
use realtime::outbox::Sender;
use uuid::Uuid;

/// Challenges one lobby socket may have waiting at once.
pub const MAX_SENT: usize = 5;

/// A challenge waiting for an answer.
#[derive(Clone)]
pub struct Pending {
    pub challenge: Challenge,
    /// The challenger's lobby socket (`ws::lobby`'s connection id).
    pub from_conn: String,
    /// The challenged player.
    pub to: Uuid,
    /// The level of the house bots in the seats beyond the two sides.
    pub bots: BotLevel,
}

#[derive(Default)]
pub struct Challenges {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Signed-in lobby sockets by player: connection id and what reaches it.
    sockets: HashMap<Uuid, Vec<(String, Sender<LobbyMsg>)>>,
    pending: HashMap<String, Pending>,
}

impl Challenges {
    /// A signed-in lobby socket opened.
    pub fn register(&self, player: Uuid, conn: &str, tx: Sender<LobbyMsg>) {
        lock(&self.inner)
            .sockets
            .entry(player)
            .or_default()
            .push((conn.to_string(), tx));
    }

    /// Whether `player` has a lobby socket on this node.
    pub fn online(&self, player: Uuid) -> bool {
        lock(&self.inner).sockets.contains_key(&player)
    }

    /// Sends `msg` to every lobby socket of `player` here (a full queue drops it).
    pub fn tell(&self, player: Uuid, msg: &LobbyMsg) {
        if let Some(socks) = lock(&self.inner).sockets.get(&player) {
            for (_, tx) in socks {
                let _ = tx.try_send(msg.clone());
            }
        }
    }

    /// Sends `msg` to one lobby socket of `player`.
    pub fn tell_conn(&self, player: Uuid, conn: &str, msg: LobbyMsg) {
        if let Some(socks) = lock(&self.inner).sockets.get(&player)
            && let Some((_, tx)) = socks.iter().find(|(c, _)| c == conn)
        {
            let _ = tx.try_send(msg);
        }
    }

    /// Adds a challenge, unless its socket has [`MAX_SENT`] waiting already.
    pub fn insert(&self, p: Pending) -> Result<(), usize> {
        let mut inner = lock(&self.inner);
        let sent = inner
            .pending
            .values()
            .filter(|o| o.from_conn == p.from_conn)
            .count();
        if sent >= MAX_SENT {
            return Err(sent);
        }
        inner.pending.insert(p.challenge.id.clone(), p);
        Ok(())
    }

    /// The challenge `id`, still waiting.
    pub fn get(&self, id: &str) -> Option<Pending> {
        lock(&self.inner).pending.get(id).cloned()
    }

    /// Takes the challenge `id` out (once: whoever takes it answers it).
    pub fn take(&self, id: &str) -> Option<Pending> {
        lock(&self.inner).pending.remove(id)
    }

    /// A signed-in lobby socket closed: it is forgotten, and the challenges it sent, and
    /// those to its player if that was the player's last socket here, are taken out.
    pub fn socket_gone(&self, player: Uuid, conn: &str) -> Vec<Pending> {
        let mut inner = lock(&self.inner);
        let mut last = false;
        if let Some(socks) = inner.sockets.get_mut(&player) {
            socks.retain(|(c, _)| c != conn);
            last = socks.is_empty();
        }
        if last {
            inner.sockets.remove(&player);
        }
        let ids: Vec<String> = inner
            .pending
            .iter()
            .filter(|(_, p)| p.from_conn == conn || (last && p.to == player))
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter()
            .filter_map(|id| inner.pending.remove(id))
            .collect()
    }
}
