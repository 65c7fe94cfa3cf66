//! This node among the servers on one database: its id and address, the cluster's shared
//! secret, the lobby entries of the other nodes' tables, and the queue of notes (lobby
//! changes, quick-play messages) it sends them. The state only: what the node does with it
//! (leases, claims, forwarding, the lobby's sync) is `cluster`.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::Duration;

use axum::http::HeaderMap;
use protocol::TableInfo;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use realtime::lock;

/// A request forwarded by a node carries the cluster's secret in this header…
pub const NODE_HEADER: &str = "x-fib-node";

/// …and a release request ([`adopt`]) the asking node's id in this one.
pub(crate) const NODE_ID_HEADER: &str = "x-fib-node-id";

/// …and the client's address in this one.
pub const CLIENT_HEADER: &str = "x-fib-client";

/// How long a forwarded HTTP request may take.
pub(crate) const FORWARD_TIMEOUT: Duration = Duration::from_secs(15);

/// NOTIFY channel of lobby entries (JSON [`LobbyNote`]).
pub const LOBBY: &str = "fib_lobby";

/// NOTIFY channel: a node asks every node to publish its lobby entries again.
pub const HELLO: &str = "fib_lobby_hello";

/// NOTIFY channel of quick-play notes for sockets on other nodes (JSON [`QuickNote`]).
pub const QUICKPLAY: &str = "fib_quickplay";

/// NOTIFY channel of direct challenges between lobby sockets on different nodes (JSON
/// [`ChallengeNote`], docs/protocol.md §4.2).
pub const CHALLENGES: &str = "fib_challenge";

/// NOTIFY channel of messages for a player's lobby sockets on every node (JSON
/// [`PlayerNote`]): a tournament's `tournament_game` (docs/protocol.md §4.3).
pub const PLAYERS: &str = "fib_player";

/// A lobby message for every lobby socket of `player`, from `node` (which told its own).
#[derive(Serialize, Deserialize)]
pub struct PlayerNote {
    pub node: String,
    pub player: Uuid,
    pub msg: protocol::LobbyMsg,
}

/// A challenge note: from `node`, what happened. A challenge is held by the node of the
/// socket that sent it (its "origin"), which alone takes it out (answers, cancels,
/// expires); the nodes holding the challenged player's lobby sockets show it and pass the
/// answers on.
#[derive(Serialize, Deserialize)]
pub struct ChallengeNote {
    pub node: String,
    #[serde(flatten)]
    pub what: ChallengeWhat,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum ChallengeWhat {
    /// A challenge of a socket on `node` to `to`: each node with a lobby socket of `to`
    /// shows it there and answers [`ChallengeWhat::Delivered`].
    Offer {
        challenge: protocol::Challenge,
        to: Uuid,
    },
    /// The challenge `id` (held by `origin`) is shown on `node`.
    Delivered { origin: String, id: String },
    /// The challenged player `who` answered on `node`: `origin` replies with `req`.
    Answer {
        origin: String,
        req: String,
        id: String,
        who: Uuid,
        name: String,
        accept: bool,
    },
    /// The origin's answer to [`ChallengeWhat::Answer`] `req`, for the node `to_node`.
    Reply {
        to_node: String,
        req: String,
        msg: protocol::LobbyMsg,
    },
    /// The challenged player's last lobby socket on `node` closed.
    Gone { origin: String, id: String },
    /// The challenge ended: the nodes showing it forget it and, if `tell`, tell `to`'s
    /// lobby sockets `challenge_ended` with `reason`, but for `told_on`, the node through
    /// which `to` answered it, which told its own sockets itself.
    Ended {
        id: String,
        to: Uuid,
        reason: String,
        tell: bool,
        #[serde(default)]
        told_on: Option<String>,
    },
}

/// A lobby entry as one node tells the others.
#[derive(Serialize, Deserialize)]
pub(crate) struct LobbyNote {
    pub(crate) node: String,
    pub(crate) epoch: i64,
    pub(crate) id: Uuid,
    /// `None`: the table left the lobby.
    pub(crate) info: Option<TableInfo>,
}

/// A quick-play note for a waiting socket, by its connection id.
#[derive(Serialize, Deserialize)]
pub struct QuickNote {
    pub conn: String,
    pub msg: protocol::LobbyMsg,
}

/// This node's side of the cluster (in `AppState`).
pub struct Cluster {
    /// This node's id.
    pub node: String,
    /// Whether other nodes may share the database (Postgres).
    pub multi: bool,
    pub(crate) address: RwLock<String>,
    pub(crate) secret: OnceLock<String>,
    pub(crate) http: reqwest::Client,
    /// Lobby entries of other nodes' tables: table id → (node, epoch).
    pub(crate) remote: Mutex<HashMap<Uuid, (String, i64)>>,
    /// Tables this node is asking their owners for ([`adopt`]).
    pub(crate) adopting: Mutex<HashSet<Uuid>>,
    /// Notes to send to the other nodes, in order, by one task ([`send_notes`]).
    pub(crate) notes: tokio::sync::mpsc::Sender<Note>,
    pub(crate) notes_rx: Mutex<Option<tokio::sync::mpsc::Receiver<Note>>>,
    /// The addresses of the other live nodes (of those that advertise an IP address),
    /// refreshed every beat: what they forward to this node is their clients' traffic, and
    /// is not limited as one client's (`conns`).
    pub(crate) peer_ips: std::sync::RwLock<HashSet<std::net::IpAddr>>,
}

impl Cluster {
    /// Whether `ip` is another live node's address.
    pub fn is_peer(&self, ip: std::net::IpAddr) -> bool {
        self.peer_ips
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&ip)
    }
}

impl Cluster {
    pub fn new(config: &crate::config::Config, backend: &str) -> Cluster {
        let multi = backend == "postgres";
        let node = config.node_id.clone().unwrap_or_else(|| {
            if multi {
                Uuid::new_v4().to_string()
            } else {
                "local".to_string()
            }
        });
        let (notes, notes_rx) = tokio::sync::mpsc::channel(4096);
        Cluster {
            node,
            multi,
            address: RwLock::new(String::new()),
            secret: OnceLock::new(),
            http: reqwest::Client::builder()
                .timeout(FORWARD_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .tcp_nodelay(true)
                .build()
                .expect("an HTTP client builds"),
            remote: Mutex::new(HashMap::new()),
            adopting: Mutex::new(HashSet::new()),
            notes,
            notes_rx: Mutex::new(Some(notes_rx)),
            peer_ips: std::sync::RwLock::default(),
        }
    }

    pub fn address(&self) -> String {
        self.address
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether `headers` come from another node of this cluster (they carry its secret).
    pub fn from_node(&self, headers: &HeaderMap) -> bool {
        match (self.secret.get(), headers.get(NODE_HEADER)) {
            (Some(secret), Some(v)) => same_secret(v.as_bytes(), secret.as_bytes()),
            _ => false,
        }
    }

    /// Sends a lobby change of a table of this node to the other nodes.
    pub fn publish(&self, epoch: i64, id: Uuid, info: Option<&TableInfo>) {
        if !self.multi {
            return;
        }
        lock(&self.remote).remove(&id);
        let note = LobbyNote {
            node: self.node.clone(),
            epoch,
            id,
            info: info.cloned(),
        };
        // Bounded: a database too slow to take lobby notes loses some (the next hello or
        // change of that table repairs it), never the table's time. Serialized by the
        // sender, and only if it is the table's latest.
        let _ = self.notes.try_send(Note::Lobby(Box::new(note)));
    }

    /// Whether the lobby shows another node's entry for this table.
    pub fn shown_elsewhere(&self, id: Uuid) -> bool {
        lock(&self.remote).contains_key(&id)
    }

    /// Sends a challenge note to the other nodes (nothing on a single node).
    pub fn tell_challenge(&self, what: ChallengeWhat) {
        if !self.multi {
            return;
        }
        let note = ChallengeNote {
            node: self.node.clone(),
            what,
        };
        let text = serde_json::to_string(&note).expect("a challenge note serializes");
        let _ = self.notes.try_send(Note::Plain(CHALLENGES, text));
    }

    /// Tells `player`'s lobby sockets on the other nodes (nothing on a single node).
    pub fn tell_player(&self, player: Uuid, msg: &protocol::LobbyMsg) {
        if !self.multi {
            return;
        }
        let note = PlayerNote {
            node: self.node.clone(),
            player,
            msg: msg.clone(),
        };
        let text = serde_json::to_string(&note).expect("a player note serializes");
        let _ = self.notes.try_send(Note::Plain(PLAYERS, text));
    }

    /// Tells a waiting socket on another node (quick play).
    pub fn tell_elsewhere(&self, note: QuickNote) {
        if !self.multi {
            return;
        }
        let text = serde_json::to_string(&note).expect("a quick-play note serializes");
        let _ = self.notes.try_send(Note::Plain(QUICKPLAY, text));
    }
}

/// Compares a presented secret with the cluster's in time that depends only on the
/// length, so that timing tells an outsider nothing of its bytes.
pub fn same_secret(given: &[u8], secret: &[u8]) -> bool {
    given.len() == secret.len() && given.iter().zip(secret).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
}

/// A note for the other nodes.
pub(crate) enum Note {
    /// A table's lobby entry: only the latest of a batch is sent.
    Lobby(Box<LobbyNote>),
    Plain(&'static str, String),
    /// Send what is gathered now, then answer: the last notes of a stopping node go out
    /// before its store closes.
    Flush(tokio::sync::oneshot::Sender<()>),
}
