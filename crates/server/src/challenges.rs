//! Direct challenges between lobby sockets (#31, docs/protocol.md §4.2): which signed-in
//! lobby sockets each player has on this node, the challenges their sockets sent that wait
//! for an answer, and (in a cluster) the challenges of other nodes shown to this node's
//! sockets. A challenge is held by the node of the socket that sent it; the others learn of
//! it and answer it through notes (`node::ChallengeNote`). What the socket does with them
//! is `ws::challenge`.

use std::collections::HashMap;
use std::sync::Mutex;

use protocol::{BotLevel, Challenge, LobbyMsg};
use realtime::lock;
use realtime::outbox::Sender;
use tokio::sync::oneshot;
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
    /// Other nodes that show it to the challenged player's sockets there.
    pub remote: Vec<String>,
}

/// A challenge of another node shown to sockets of this one.
#[derive(Clone)]
pub struct Shown {
    /// The node that holds it (its challenger's).
    pub origin: String,
    /// The challenged player.
    pub to: Uuid,
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
    /// Other nodes' challenges shown here, by id.
    shown: HashMap<String, Shown>,
    /// What waits for another node's note: a challenge's first delivery (by its id) or the
    /// reply to an answer (by the request's id).
    waiters: HashMap<String, oneshot::Sender<Option<LobbyMsg>>>,
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

    /// Sends `msg` to every lobby socket of `player` but `conn` (the one that answered, and
    /// got its own reply).
    pub fn tell_others(&self, player: Uuid, conn: &str, msg: &LobbyMsg) {
        if let Some(socks) = lock(&self.inner).sockets.get(&player) {
            for (_, tx) in socks.iter().filter(|(c, _)| c != conn) {
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

    /// Another node delivered the challenge `id` held here: it is told there from now on.
    pub fn delivered(&self, id: &str, node: &str) {
        let mut inner = lock(&self.inner);
        if let Some(p) = inner.pending.get_mut(id)
            && !p.remote.iter().any(|n| n == node)
        {
            p.remote.push(node.to_string());
        }
        if let Some(w) = inner.waiters.remove(id) {
            let _ = w.send(None);
        }
    }

    /// `node` shows the challenge `id` no more (the player's last socket there closed):
    /// whether no node shows it now, nor has the challenged player a socket here.
    pub fn undelivered(&self, id: &str, node: &str) -> bool {
        let mut inner = lock(&self.inner);
        let Some(p) = inner.pending.get_mut(id) else {
            return false;
        };
        p.remote.retain(|n| n != node);
        let to = p.to;
        p.remote.is_empty() && !inner.sockets.contains_key(&to)
    }

    /// Waits for a note of another node keyed `key` (see [`Challenges::answer`]).
    pub fn wait(&self, key: &str) -> oneshot::Receiver<Option<LobbyMsg>> {
        let (tx, rx) = oneshot::channel();
        lock(&self.inner).waiters.insert(key.to_string(), tx);
        rx
    }

    /// Answers what waits for `key`, if anything still does.
    pub fn answer(&self, key: &str, msg: Option<LobbyMsg>) {
        if let Some(w) = lock(&self.inner).waiters.remove(key) {
            let _ = w.send(msg);
        }
    }

    /// Stops waiting for `key` (it timed out).
    pub fn unwait(&self, key: &str) {
        lock(&self.inner).waiters.remove(key);
    }

    /// Shows another node's challenge here, if its player has a lobby socket here.
    pub fn show(&self, id: &str, shown: Shown) -> bool {
        let mut inner = lock(&self.inner);
        if !inner.sockets.contains_key(&shown.to) {
            return false;
        }
        inner.shown.insert(id.to_string(), shown);
        true
    }

    /// Another node's challenge shown here.
    pub fn shown(&self, id: &str) -> Option<Shown> {
        lock(&self.inner).shown.get(id).cloned()
    }

    /// Forgets another node's challenge shown here.
    pub fn unshow(&self, id: &str) -> Option<Shown> {
        lock(&self.inner).shown.remove(id)
    }

    /// A signed-in lobby socket closed: it is forgotten, and the challenges it sent, and
    /// those to its player if that was the player's last socket here, are taken out; and
    /// the other nodes' challenges to its player shown here, if that was the last socket,
    /// are forgotten and returned too.
    pub fn socket_gone(&self, player: Uuid, conn: &str) -> (Vec<Pending>, Vec<(String, Shown)>) {
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
            .filter(|(_, p)| {
                // A challenge shown on another node still reaches its player there.
                p.from_conn == conn || (last && p.to == player && p.remote.is_empty())
            })
            .map(|(id, _)| id.clone())
            .collect();
        let taken = ids
            .iter()
            .filter_map(|id| inner.pending.remove(id))
            .collect();
        let mut shown = Vec::new();
        if last {
            let gone: Vec<String> = inner
                .shown
                .iter()
                .filter(|(_, s)| s.to == player)
                .map(|(id, _)| id.clone())
                .collect();
            for id in gone {
                if let Some(s) = inner.shown.remove(&id) {
                    shown.push((id, s));
                }
            }
        }
        (taken, shown)
    }
}
