//! Several server nodes on one database: who owns which table, and how a request for a
//! table reaches its owner.
//!
//! - **Nodes.** Each process is a node with an id (`--node-id`, by default a random one on
//!   Postgres and `local` on SQLite) and an address the others reach it at
//!   (`--advertise-url`, by default the address this machine uses to reach the database and
//!   the port it listens on). It renews its lease in the `nodes` table every [`BEAT`]; a
//!   node whose lease ([`LEASE`]) ran out is dead to the others. Leases are measured on the
//!   database's clock, so the nodes' clocks need not agree.
//! - **One owner per live table.** A table is claimed (`Store::claim_table`) before its
//!   task runs, which raises its fencing epoch; every write of the table's task carries that
//!   epoch and the database refuses it once another node has claimed the table since
//!   (`StoreError::Fenced`). A paused or cut-off owner can therefore never write over the
//!   new owner: its first write fails and its task steps down. Versions sent to clients are
//!   `epoch × 2^32 + n`, so they only grow across hand-overs.
//! - **Failover.** Every beat, each node claims the open and playing tables that no live
//!   node owns and restores them from their logs ([`take_orphans`]): the tables of a dead
//!   node continue elsewhere within about `LEASE + BEAT` (6 s), with their bots and clocks.
//!   Each beat also compares the tables a node runs with those the database says it owns,
//!   and tables it lost step down at once, without waiting for a write to be refused.
//! - **Routing.** Any node answers any request: a request or WebSocket for a table owned by
//!   another live node is forwarded to it ([`forward`]): HTTP through a client request, a
//!   WebSocket by opening one to the owner and passing the frames through, so a socket held
//!   on any node gets every move. A forwarded request carries the cluster's shared secret
//!   (from the database) and the client's address, so the owner applies its limits to the
//!   real client; a forwarded request is never forwarded again. A table nobody is
//!   connected to moves to the node its first socket reaches ([`adopt`]): behind a load
//!   balancer hashing the table id, its sockets then need no forwarding at all.
//! - **Draining.** A node that is asked to stop (SIGTERM) marks itself draining, hands
//!   every table over (its task finishes what it is doing, releases the table and closes
//!   its sockets with 1013, so clients reconnect and land on the next owner), and leaves.
//!   No failover wait: the others claim released tables at their next beat.
//! - **The lobby across nodes.** A node publishes each change of its tables' lobby
//!   entries with Postgres NOTIFY ([`LOBBY`]) and applies the others' (`lobby_listener`);
//!   a node that starts or loses its listening connection asks everyone to publish theirs
//!   again ([`HELLO`]). Entries of a node that died are dropped at the next beat.
//!   Quick play shares its queues through the database; its matcher runs on one node at a
//!   time (an advisory lock per pass), and a `matched` note for a socket on another node
//!   goes through NOTIFY ([`QUICKPLAY`]).
//!
//! On SQLite there is one node: the same code runs, with nobody to forward to.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use protocol::TableInfo;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::{AppState, lock};

/// How often a node renews its lease, claims orphaned tables and checks its own.
pub const BEAT: Duration = Duration::from_secs(1);
/// How long a node's lease runs after its last renewal.
pub const LEASE: Duration = Duration::from_secs(5);
/// Orphaned tables claimed in one statement.
const CLAIM_BATCH: i64 = 64;
/// A request forwarded by a node carries the cluster's secret in this header…
pub const NODE_HEADER: &str = "x-fib-node";
/// …and a release request ([`adopt`]) the asking node's id in this one.
const NODE_ID_HEADER: &str = "x-fib-node-id";
/// …and the client's address in this one.
pub const CLIENT_HEADER: &str = "x-fib-client";
/// How long a forwarded HTTP request may take.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(15);

/// NOTIFY channel of lobby entries (JSON [`LobbyNote`]).
pub const LOBBY: &str = "fib_lobby";
/// NOTIFY channel: a node asks every node to publish its lobby entries again.
pub const HELLO: &str = "fib_lobby_hello";
/// NOTIFY channel of quick-play notes for sockets on other nodes (JSON [`QuickNote`]).
pub const QUICKPLAY: &str = "fib_quickplay";

/// A lobby entry as one node tells the others.
#[derive(Serialize, Deserialize)]
struct LobbyNote {
    node: String,
    epoch: i64,
    id: Uuid,
    /// `None`: the table left the lobby.
    info: Option<TableInfo>,
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
    address: RwLock<String>,
    secret: OnceLock<String>,
    http: reqwest::Client,
    /// Lobby entries of other nodes' tables: table id → (node, epoch).
    remote: Mutex<HashMap<Uuid, (String, i64)>>,
    /// Tables this node is asking their owners for ([`adopt`]).
    adopting: Mutex<HashSet<Uuid>>,
    /// Notes to send to the other nodes, in order, by one task ([`send_notes`]).
    notes: tokio::sync::mpsc::Sender<Note>,
    notes_rx: Mutex<Option<tokio::sync::mpsc::Receiver<Note>>>,
}

impl Cluster {
    pub fn new(config: &crate::Config, backend: &str) -> Cluster {
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

/// The address the other nodes reach this one at, when not configured: this machine's
/// address on the route to the database (a connected UDP socket sends nothing), or the
/// listener's own address when it is bound to one.
async fn default_address(database_url: &str, local: SocketAddr) -> String {
    let port = local.port();
    if !local.ip().is_unspecified() {
        return format!("http://{}", SocketAddr::new(local.ip(), port));
    }
    let host = database_url
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split(['/', '?']).next())
        .map(|auth| auth.rsplit_once('@').map_or(auth, |(_, h)| h))
        .unwrap_or("127.0.0.1");
    let (name, db_port) = match host.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || host.starts_with('[') => {
            (h.trim_matches(['[', ']']), p.parse().unwrap_or(5432))
        }
        _ => (host.trim_matches(['[', ']']), 5432),
    };
    let ip = async {
        let target = tokio::net::lookup_host((name, db_port))
            .await
            .ok()?
            .next()?;
        let bind: SocketAddr = if target.is_ipv4() {
            "0.0.0.0:0".parse().ok()?
        } else {
            "[::]:0".parse().ok()?
        };
        let udp = tokio::net::UdpSocket::bind(bind).await.ok()?;
        udp.connect(target).await.ok()?;
        Some(udp.local_addr().ok()?.ip())
    }
    .await
    .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
    format!("http://{}", SocketAddr::new(ip, port))
}

/// Joins the cluster once the node listens on `local`: announces the node, takes the
/// tables nobody runs (its own from before a restart included) and starts the beat, the
/// lobby listener and the notes sender.
pub async fn start(app: &AppState, local: SocketAddr) -> Result<(), store::StoreError> {
    let c = &app.cluster;
    let address = match &app.config.advertise_url {
        Some(a) => a.trim_end_matches('/').to_string(),
        None => default_address(&app.config.database_url, local).await,
    };
    *c.address.write().unwrap_or_else(|p| p.into_inner()) = address.clone();
    let secret = app.store.cluster_secret().await?;
    let _ = app.limits.node_secret.set(secret.clone());
    let _ = c.secret.set(secret);
    // A process that starts under an id is not the one that ran under it before: the
    // queue entries of that one's sockets go (SQLite: every entry, as there is one node).
    app.store.node_gone(&c.node).await?;
    let cleared = app.store.queue_clear_dead().await?;
    if cleared > 0 {
        tracing::info!(
            entries = cleared,
            "quick-play entries of gone sockets removed"
        );
    }
    app.store
        .node_beat(&c.node, &address, LEASE.as_millis() as i64, false)
        .await?;
    app.background.spawn(renew(app.clone()));
    let taken = take_orphans(app, true).await;
    tracing::info!(node = %c.node, %address, tables = taken, "joined the cluster");
    let rx = lock(&c.notes_rx).take();
    if let Some(rx) = rx {
        tokio::spawn(send_notes(app.clone(), rx));
    }
    if c.multi {
        match app.store.listen(&[LOBBY, HELLO, QUICKPLAY]).await? {
            Some(rx) => {
                tokio::spawn(listen(app.clone(), rx));
            }
            None => tracing::warn!(
                "the database takes no notifications: the lobby shows this node's tables only"
            ),
        }
    }
    app.background.spawn(housekeeping(app.clone()));
    // Quick play starts once this node's tables run (a table the matcher makes now cannot
    // be claimed again as one of them) and the entries of gone sockets are out.
    crate::quickplay::match_once(app).await?;
    crate::quickplay::spawn_matcher(app);
    Ok(())
}

/// A note for the other nodes.
enum Note {
    /// A table's lobby entry: only the latest of a batch is sent.
    Lobby(Box<LobbyNote>),
    Plain(&'static str, String),
    /// Send what is gathered now, then answer: the last notes of a stopping node go out
    /// before its store closes.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// How long the notes sender gathers notes before it sends them: a table's lobby entry
/// changes at every move, and the other nodes' lobbies need only its latest state, so a
/// busy node sends one round trip of notes every [`NOTE_BATCH`] rather than one a move.
const NOTE_BATCH: Duration = Duration::from_millis(100);

/// Sends the queued notes, gathered for [`NOTE_BATCH`]: each channel's in order, one round
/// trip per channel, a table's lobby entry only as it is last.
async fn send_notes(app: AppState, mut rx: tokio::sync::mpsc::Receiver<Note>) {
    let mut batch = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut flushed = Vec::new();
        let until = tokio::time::Instant::now() + NOTE_BATCH;
        let mut next = Some(first);
        while let Some(n) = next.take() {
            match n {
                Note::Flush(reply) => {
                    flushed.push(reply);
                    break;
                }
                n => batch.push(n),
            }
            if let Ok(Some(n)) = tokio::time::timeout_at(until, rx.recv()).await {
                next = Some(n);
            }
        }
        let mut latest: HashMap<Uuid, usize> = HashMap::new();
        for (i, n) in batch.iter().enumerate() {
            if let Note::Lobby(note) = n {
                latest.insert(note.id, i);
            }
        }
        let mut by_channel: Vec<(&'static str, Vec<String>)> = Vec::new();
        for (i, n) in batch.drain(..).enumerate() {
            let (channel, text) = match n {
                Note::Lobby(note) if latest.get(&note.id) != Some(&i) => continue,
                Note::Lobby(note) => (
                    LOBBY,
                    serde_json::to_string(&note).expect("a lobby note serializes"),
                ),
                Note::Plain(channel, text) => (channel, text),
                Note::Flush(_) => continue,
            };
            match by_channel.iter_mut().find(|(c, _)| *c == channel) {
                Some((_, v)) => v.push(text),
                None => by_channel.push((channel, vec![text])),
            }
        }
        for (channel, texts) in by_channel {
            if let Err(e) = app.store.notify(channel, &texts).await {
                tracing::warn!(error = %e, channel, "could not notify the other nodes");
            }
        }
        for reply in flushed {
            let _ = reply.send(());
        }
    }
}

/// Waits (a few seconds at most) until the notes queued so far are sent: called once the
/// tables have stopped, before the store closes.
pub async fn flush_notes(app: &AppState) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let wait = async {
        if app.cluster.notes.send(Note::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(5), wait)
        .await
        .is_err()
    {
        tracing::warn!("the last notes to the other nodes were not sent within 5 s");
    }
}

/// Claims the tables no live node runs and starts them here; how many. `all` at
/// start-up: this node's own tables from before a restart too, and every batch until none
/// is left (the lease is renewed by its own task meanwhile); at a beat, one batch, so that
/// a node taking over a big node's tables shares them with the others' next beats.
pub async fn take_orphans(app: &AppState, all: bool) -> usize {
    let mut taken = 0;
    loop {
        // Claims and starts happen under `opening`, like `table::open`: a table is never
        // claimed twice here, and never claimed while it is being started here.
        let _one = app.core.opening.lock().await;
        let claimed = match app
            .store
            .claim_orphans(&app.cluster.node, CLAIM_BATCH, all)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "could not claim orphaned tables");
                break;
            }
        };
        let n = claimed.len();
        for (id, epoch) in claimed {
            if run_claimed(app, id, epoch).await {
                taken += 1;
                app.metrics.cluster("claimed");
            }
        }
        if !all || (n as i64) < CLAIM_BATCH {
            break;
        }
    }
    taken
}

/// Restores a table this node just claimed at `epoch` and starts its task (the caller
/// holds `opening`). A table that cannot be restored stays claimed by this node and is not
/// tried again by the beat (a visit tries it again, `table::open`), so that a table that
/// does not replay is not claimed around the nodes every second.
async fn run_claimed(app: &AppState, id: Uuid, epoch: i64) -> bool {
    let st = match app.store.load_table(id).await {
        Ok(Some(st)) => st,
        Ok(None) => return false,
        Err(e) => {
            tracing::error!(table = %id, error = %e, "could not load a claimed table");
            let _ = app.store.release_table(id, &app.cluster.node, epoch).await;
            return false;
        }
    };
    if let Some(live) = app.table(id) {
        // Running here under an older claim: that task's writes are refused now.
        tracing::error!(table = %id, running = live.epoch, claimed = epoch, "claimed a table already running here");
        step_down(live);
    }
    match crate::table::restore(app.core.clone(), st, epoch) {
        Ok(t) => {
            let h = crate::table::spawn(t);
            app.core.mark_broken(id, false);
            if h.epoch != epoch {
                // The stepping-down task still holds the registry: the next beat starts
                // the table (`check_owned`).
                tracing::warn!(table = %id, "a claimed table waits for its old task to end");
            }
            true
        }
        Err(e) => {
            tracing::error!(table = %id, error = %e, "could not restore a table");
            app.core.mark_broken(id, true);
            false
        }
    }
}

/// Tells a table's task to step down, without waiting for room in its queue.
fn step_down(h: crate::table::TableHandle) {
    tokio::spawn(async move {
        let _ = h.send(crate::table::Cmd::StepDown).await;
    });
}

/// How long one lease renewal may take: a connection that hangs must not outlast the lease.
const RENEW_TIMEOUT: Duration = Duration::from_secs(2);

/// Every [`BEAT`]: renew the lease. Nothing else runs here, so that no slow claim or
/// restore delays a renewal. A node that could not renew for longer than a lease steps
/// down from every table (on Postgres: other nodes may run them by now).
async fn renew(app: AppState) {
    let c = &app.cluster;
    let mut every = tokio::time::interval(BEAT);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renewed = Instant::now();
    let mut shutdown = app.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = crate::state::stopping(&mut shutdown) => break,
        }
        let asked = Instant::now();
        let lease = LEASE.as_millis() as i64;
        let address = c.address();
        let beat = app
            .store
            .node_beat(&c.node, &address, lease, app.core.draining());
        match tokio::time::timeout(RENEW_TIMEOUT, beat).await {
            Ok(Ok(())) => {
                app.metrics.cluster("lease_renewals");
                renewed = asked;
            }
            failed => {
                app.metrics.cluster("lease_renewal_failures");
                match failed {
                    Ok(Err(e)) => tracing::warn!(error = %e, "could not renew the node's lease"),
                    _ => tracing::warn!("the node's lease renewal got no answer in time"),
                }
                if c.multi && renewed.elapsed() > LEASE {
                    // Cut off from the database for longer than a lease: other nodes may
                    // run these tables now. Serving them from here would show players a
                    // copy that no longer moves; their sockets close and find the owner.
                    step_down_all(&app);
                }
            }
        }
    }
}

/// Every [`BEAT`]: step down from tables lost, start the tables this node owns but does
/// not run, take a batch of orphans, drop the queue entries and lobby entries of dead
/// nodes.
async fn housekeeping(app: AppState) {
    let mut every = tokio::time::interval(BEAT);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = app.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = crate::state::stopping(&mut shutdown) => break,
        }
        let draining = app.core.draining();
        check_owned(&app, !draining).await;
        if !draining {
            take_orphans(&app, false).await;
        }
        if let Err(e) = app.store.queue_clear_dead().await {
            tracing::warn!(error = %e, "could not clear the queue entries of dead nodes");
        }
        if app.cluster.multi {
            drop_dead_entries(&app).await;
        }
    }
}

/// Compares the tables running here with those the database says this node owns: a table
/// another node owns now steps down; an open or playing table this node owns but does not
/// run (its task stepped down while the node was cut off, or gave up) is claimed again and
/// started, when `restart`.
async fn check_owned(app: &AppState, restart: bool) {
    let asked = Instant::now();
    let owned = match app.store.owned_tables(&app.cluster.node).await {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the tables this node owns");
            return;
        }
    };
    let held: HashSet<(Uuid, i64)> = owned.iter().map(|(id, epoch, _)| (*id, *epoch)).collect();
    let lost: Vec<_> = app
        .core
        .tables()
        .into_iter()
        // A table claimed after the question was asked is not in the answer, and one whose
        // task is ending may have released it already.
        .filter(|h| h.claimed_at < asked && !h.ending() && !held.contains(&(h.id, h.epoch)))
        .collect();
    for h in lost {
        tracing::warn!(table = %h.id, epoch = h.epoch, "another node owns this table now: stepping down");
        step_down(h);
    }
    if !restart {
        return;
    }
    let idle: Vec<Uuid> = owned
        .into_iter()
        .filter(|(id, _, live)| *live && app.table(*id).is_none() && !app.core.is_broken(*id))
        .map(|(id, _, _)| id)
        .collect();
    for id in idle {
        let _one = app.core.opening.lock().await;
        if app.table(id).is_some() {
            continue;
        }
        match app.store.claim_table(id, &app.cluster.node).await {
            Ok(Some(epoch)) => {
                tracing::info!(table = %id, epoch, "starting a table this node owns again");
                run_claimed(app, id, epoch).await;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(table = %id, error = %e, "could not claim a table again"),
        }
    }
}

/// Every table running here steps down (the node lost its lease).
fn step_down_all(app: &AppState) {
    let all = app.core.tables();
    if !all.is_empty() {
        tracing::warn!(
            tables = all.len(),
            "the node's lease ran out: stepping down from every table"
        );
    }
    for h in all {
        step_down(h);
    }
}

/// Lobby entries of nodes that are not alive any more go.
async fn drop_dead_entries(app: &AppState) {
    let Ok(nodes) = app.store.live_nodes().await else {
        return;
    };
    let live: HashSet<String> = nodes.into_iter().map(|n| n.id).collect();
    let gone: Vec<Uuid> = {
        let mut remote = lock(&app.cluster.remote);
        let gone: Vec<Uuid> = remote
            .iter()
            .filter(|(_, (node, _))| !live.contains(node))
            .map(|(id, _)| *id)
            .collect();
        for id in &gone {
            remote.remove(id);
        }
        gone
    };
    for id in gone {
        app.lobby.apply(id, None);
    }
}

/// Applies the other nodes' notes.
async fn listen(app: AppState, mut rx: tokio::sync::mpsc::Receiver<store::Notice>) {
    // How a note of this node begins (`LobbyNote` serializes `node` first).
    let own = format!(
        "{{\"node\":{}",
        serde_json::Value::from(app.cluster.node.clone())
    );
    hello(&app);
    while let Some(notice) = rx.recv().await {
        match notice {
            store::Notice::Reconnected => {
                // Removals may have been missed too: forget the others' entries, and ask
                // for them again.
                let gone: Vec<Uuid> = lock(&app.cluster.remote)
                    .drain()
                    .map(|(id, _)| id)
                    .collect();
                for id in gone {
                    app.lobby.apply(id, None);
                }
                hello(&app);
            }
            store::Notice::Message { channel, payload } => match channel.as_str() {
                // This node's own notes come back too: skipped before they are parsed.
                LOBBY if !payload.starts_with(&own) => {
                    if let Ok(note) = serde_json::from_str::<LobbyNote>(&payload) {
                        lobby_note(&app, note);
                    }
                }
                HELLO if payload != app.cluster.node => republish(&app),
                QUICKPLAY => {
                    if let Ok(note) = serde_json::from_str::<QuickNote>(&payload) {
                        app.quickplay.tell(&note.conn, note.msg);
                    }
                }
                _ => {}
            },
        }
    }
}

/// Asks every node to publish its lobby entries again (this one missed some).
fn hello(app: &AppState) {
    let _ = app
        .cluster
        .notes
        .try_send(Note::Plain(HELLO, app.cluster.node.clone()));
}

/// Publishes every lobby entry of this node's tables again.
fn republish(app: &AppState) {
    let local: Vec<(Uuid, i64)> = app.core.tables().iter().map(|h| (h.id, h.epoch)).collect();
    for (id, epoch) in local {
        if let Some(info) = app.lobby.table(id) {
            app.cluster.publish(epoch, id, Some(&info));
        }
    }
}

fn lobby_note(app: &AppState, note: LobbyNote) {
    let c = &app.cluster;
    if note.node == c.node {
        return;
    }
    if let Some(h) = app.table(note.id)
        && h.epoch >= note.epoch
    {
        // Ours: this node's own entry is the truth (a note of a newer owner is taken: this
        // node's task is stepping down).
        return;
    }
    {
        let mut remote = lock(&c.remote);
        match (remote.get(&note.id), &note.info) {
            // An older owner's note, late.
            (Some((_, epoch)), _) if *epoch > note.epoch => return,
            // A removal from another node than the one whose entry is shown.
            (Some((node, epoch)), None) if *node != note.node || *epoch != note.epoch => return,
            (None, None) => {}
            (_, Some(_)) => {
                remote.insert(note.id, (note.node.clone(), note.epoch));
            }
            (Some(_), None) => {
                remote.remove(&note.id);
            }
        }
    }
    app.lobby.apply(note.id, note.info);
}

/// Marks this node draining and hands every table over: each finishes what it is doing,
/// releases its table and closes its sockets (1013). Then the node leaves the cluster.
/// On SQLite there is nobody to hand over to: the sockets close with the server (1001),
/// then [`stop_tables`] ends the tasks, and the node takes its tables back when it
/// starts again.
pub async fn drain(app: &AppState) {
    let c = &app.cluster;
    if !c.multi {
        return;
    }
    app.core.start_draining();
    let _ = app
        .store
        .node_beat(&c.node, &c.address(), LEASE.as_millis() as i64, true)
        .await;
    let n = stop_tables(app).await;
    if let Err(e) = app.store.node_gone(&c.node).await {
        tracing::warn!(error = %e, "could not leave the cluster");
    }
    tracing::info!(tables = n, "drained: table tasks stopped");
}

/// Ends every table task of this process and waits for each (`realtime::table::stop_tables`).
pub async fn stop_tables(app: &AppState) -> usize {
    crate::table::stop_tables(&app.core).await
}

/// Where a table is served from.
enum Place {
    Here,
    There(String),
}

async fn locate(app: &AppState, id: Uuid) -> Place {
    if !app.cluster.multi || app.table(id).is_some() {
        return Place::Here;
    }
    match app.store.table_owner(id).await {
        Ok(Some(store::TableOwner {
            node: Some(node),
            live_address: Some(address),
            ..
        })) if node != app.cluster.node => Place::There(address),
        _ => Place::Here,
    }
}

/// A table's info from its owner on another node, asked with the client's own
/// credentials (`headers`): for a request that names no table and so is not forwarded.
pub async fn remote_info(app: &AppState, id: Uuid, headers: &HeaderMap) -> Option<TableInfo> {
    let Place::There(address) = locate(app, id).await else {
        return None;
    };
    let client = std::net::IpAddr::from([0, 0, 0, 0]);
    let res = app
        .cluster
        .http
        .get(format!("{address}/api/tables/{id}"))
        .headers(forwarded_headers(app, headers, client))
        .send()
        .await
        .ok()?;
    if !res.status().is_success() {
        return None;
    }
    app.metrics.cluster("forwarded_http");
    res.json::<TableInfo>().await.ok()
}

/// The table id in a path that names one (`/api/tables/{id}/…`, `/table/{id}…`,
/// `/ws/table/{id}`).
fn table_of(path: &str) -> Option<Uuid> {
    let rest = path
        .strip_prefix("/api/tables/")
        .or_else(|| path.strip_prefix("/table/"))
        .or_else(|| path.strip_prefix("/ws/table/"))?;
    Uuid::parse_str(rest.split('/').next()?).ok()
}

/// The path of the nodes' own request "release this table to me" ([`adopt`]): answered by
/// [`forward`] itself for a request that carries the cluster's secret, and by nobody else
/// (it is no route of the API, and a client gets the API's 404).
const RELEASE_PATH: &str = "/internal/release/";

/// Middleware on every request: a table owned by another live node is served by
/// forwarding the request (or the WebSocket) to it, unless its socket can take the table
/// over ([`adopt`]); and the nodes' release requests are answered here.
pub async fn forward(State(app): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(id) = req.uri().path().strip_prefix(RELEASE_PATH) {
        return release(&app, id, req.headers()).await;
    }
    let Some(id) = table_of(req.uri().path()) else {
        return next.run(req).await;
    };
    let address = match locate(&app, id).await {
        Place::Here => return next.run(req).await,
        Place::There(address) => address,
    };
    if app.cluster.from_node(req.headers()) {
        // Forwarded once already: whoever sent it believed this node the owner. Handling it
        // here claims nothing a live owner holds (`table::open`), and forwarding again could
        // go round in circles.
        return next.run(req).await;
    }
    if let Err(e) = crate::auth::origin_allowed(req.headers(), &app.config.allowed_origins) {
        return e.into_response();
    }
    let client = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let client = app.limits.client(client, req.headers());
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let mut req = req;
    if is_ws && let Some(opening) = adopt(&app, &address, id).await {
        req.extensions_mut().insert(std::sync::Arc::new(opening));
        return next.run(req).await;
    }
    let result = if is_ws {
        forward_ws(&app, &address, client, req).await
    } else {
        forward_http(&app, &address, client, req).await
    };
    result.unwrap_or_else(|e| {
        app.metrics.cluster("forward_failures");
        tracing::warn!(table = %id, owner = %address, error = %e, "could not reach a table's owner: table_moving");
        moving().into_response()
    })
}

/// Takes a table over from its owner when a socket for it reaches this node and nobody is
/// connected to it on the owner: the first socket of a new table (created on whichever
/// node the request reached) moves the table to the node the load balancer sends its
/// sockets to, so that they need no forwarding. With nginx's consistent hash on the table
/// id, that is the node every later socket reaches too. The owner's task ends and releases
/// the table (nothing in flight: it answers between two commands), then this node claims
/// it at a new epoch and restores it. `false`: forward as usual.
async fn adopt(app: &AppState, address: &str, id: Uuid) -> Option<crate::table::Opening> {
    if app.core.draining() {
        return None;
    }
    let secret = app.cluster.secret.get()?;
    // One request for a table at a time from this node; another socket meanwhile is
    // forwarded. No lock is held while the owner is asked.
    if !lock(&app.cluster.adopting).insert(id) {
        return None;
    }
    struct Asking<'a>(&'a AppState, Uuid);
    impl Drop for Asking<'_> {
        fn drop(&mut self) {
            lock(&self.0.cluster.adopting).remove(&self.1);
        }
    }
    let _asking = Asking(app, id);
    let asked = app
        .cluster
        .http
        .post(format!("{address}{RELEASE_PATH}{id}"))
        .header(NODE_HEADER, secret.as_str())
        .header(NODE_ID_HEADER, app.cluster.node.as_str())
        // The owner refuses a request older than RELEASE_WITHIN; this waits a little more,
        // so that a hand-over it did not hear of is rare (and the beat starts such a table,
        // `check_owned`).
        .timeout(RELEASE_WITHIN + Duration::from_secs(1))
        .send()
        .await;
    let epoch = match asked {
        Ok(res) if res.status().is_success() => {
            res.text().await.ok().and_then(|t| t.parse::<i64>().ok())
        }
        _ => None,
    }?;
    // The table is this node's at `epoch` now; it is started under `opening`, like every
    // table this node starts.
    let _one = app.core.opening.lock().await;
    let restored = match app.store.load_table(id).await {
        Ok(Some(st)) => crate::table::restore(app.core.clone(), st, epoch).ok(),
        _ => None,
    };
    match restored {
        Some(t) => {
            let h = crate::table::spawn(t);
            app.core.mark_broken(id, false);
            app.metrics.cluster("adopted");
            // Held by the request until its socket reaches the table: no third node takes
            // the table in between.
            Some(h.opening())
        }
        None => {
            tracing::error!(table = %id, "could not start a table handed over to this node");
            // Any node may take it now.
            let _ = app.store.release_table(id, &app.cluster.node, epoch).await;
            None
        }
    }
}

/// How long after a node asked for a table its owner still hands it over.
const RELEASE_WITHIN: Duration = Duration::from_secs(2);

/// The owner's side of [`adopt`]: the new epoch once the table is the asking node's, or
/// `none`.
async fn release(app: &AppState, id: &str, headers: &HeaderMap) -> Response {
    if !app.cluster.from_node(headers) {
        return crate::extract::not_found_api().await.into_response();
    }
    let to = headers
        .get(NODE_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let table = Uuid::parse_str(id).ok().and_then(|id| app.table(id));
    let handed = match (table, to) {
        (Some(h), Some(to)) if !app.core.draining() => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let sent = h
                .send(crate::table::Cmd::Release {
                    to: to.clone(),
                    before: Instant::now() + RELEASE_WITHIN,
                    reply: tx,
                })
                .await;
            match sent {
                Ok(()) => rx.await.ok().flatten(),
                Err(_) => None,
            }
            .inspect(|_| tracing::info!(table = %id, to, "table handed to the node its first socket reached"))
        }
        _ => None,
    };
    handed
        .map_or_else(|| "none".to_string(), |e| e.to_string())
        .into_response()
}

/// The answer when a table's owner cannot be reached or the table is changing owners
/// (`table::open`): the client tries again in a moment.
pub fn moving() -> ApiError {
    ApiError::Unavailable(
        "table_moving",
        "this table is moving to another server: try again in a moment".into(),
    )
}

/// Headers a forwarded request keeps: what the owner needs to know who asks (the cookie,
/// the bearer token), what the body is, and what the client takes back.
const KEPT: [HeaderName; 6] = [
    header::COOKIE,
    header::AUTHORIZATION,
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::USER_AGENT,
    header::ACCEPT_LANGUAGE,
];

/// The headers of a forwarded request: the kept ones, the node's secret and the client's
/// address. No `Origin`: this node checked it, and the owner believes a node.
fn forwarded_headers(app: &AppState, from: &HeaderMap, client: std::net::IpAddr) -> HeaderMap {
    let mut h = HeaderMap::new();
    for name in KEPT {
        for v in from.get_all(&name) {
            h.append(name.clone(), v.clone());
        }
    }
    if let Some(secret) = app.cluster.secret.get()
        && let Ok(v) = HeaderValue::from_str(secret)
    {
        h.insert(NODE_HEADER, v);
    }
    if let Ok(v) = HeaderValue::from_str(&client.to_string()) {
        h.insert(CLIENT_HEADER, v);
    }
    h
}

/// Headers of an answer that belong to the hop, not to the answer: the length and codings
/// are this connection's own (the compression layer compresses again for this client),
/// and the connection's own headers (RFC 9110 §7.6.1).
fn hop_by_hop(name: &HeaderName) -> bool {
    [
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::CONTENT_ENCODING,
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
}

async fn forward_http(
    app: &AppState,
    address: &str,
    client: std::net::IpAddr,
    req: Request,
) -> Result<Response, String> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let body = axum::body::to_bytes(body, protocol::MAX_HTTP_BODY)
        .await
        .map_err(|e| format!("the request's body: {e}"))?;
    let res = app
        .cluster
        .http
        .request(parts.method.clone(), format!("{address}{path}"))
        .headers(forwarded_headers(app, &parts.headers, client))
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    app.metrics.cluster("forwarded_http");
    let status = res.status();
    let mut out = Response::builder().status(status);
    for (name, v) in res.headers() {
        if !hop_by_hop(name) {
            out = out.header(name, v);
        }
    }
    let bytes = res.bytes().await.map_err(|e| e.to_string())?;
    out.body(Body::from(bytes)).map_err(|e| e.to_string())
}

async fn forward_ws(
    app: &AppState,
    address: &str,
    client: std::net::IpAddr,
    req: Request,
) -> Result<Response, String> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let (mut parts, _body) = req.into_parts();
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, app).await {
        Ok(u) => u,
        Err(rejection) => return Ok(rejection.into_response()),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let ws_base = address
        .strip_prefix("https://")
        .map(|a| format!("wss://{a}"))
        .or_else(|| address.strip_prefix("http://").map(|a| format!("ws://{a}")))
        .ok_or_else(|| format!("the owner's address {address:?} is not http(s)"))?;
    let mut up = format!("{ws_base}{path}")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    for (name, v) in &forwarded_headers(app, &parts.headers, client) {
        up.headers_mut().append(name.clone(), v.clone());
    }
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(protocol::MAX_WS_MESSAGE))
        .max_frame_size(Some(protocol::MAX_WS_MESSAGE));
    let upstream = match tokio::time::timeout(
        FORWARD_TIMEOUT,
        tokio_tungstenite::connect_async_with_config(up, Some(config), true),
    )
    .await
    {
        Err(_) => return Err("no answer from the owner".into()),
        Ok(Ok((ws, _))) => ws,
        // The owner refused the socket (no such table, an invite needed, a limit): its
        // answer is the client's.
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(res))) => {
            let (parts, body) = res.into_parts();
            let mut out = Response::builder().status(parts.status);
            for (name, v) in &parts.headers {
                if !hop_by_hop(name) {
                    out = out.header(name, v);
                }
            }
            return out
                .body(Body::from(body.unwrap_or_default()))
                .map_err(|e| e.to_string());
        }
        Ok(Err(e)) => return Err(e.to_string()),
    };
    app.metrics.cluster("forwarded_ws");
    let app = app.clone();
    let token = match crate::ws::socket_token(&app) {
        Ok(t) => t,
        // Shutting down: refused as any socket is then (`server_draining`).
        Err(e) => return Ok(e.into_response()),
    };
    Ok(crate::ws::limits(upgrade)
        .on_upgrade(move |socket| async move {
            let _token = token;
            pipe(app, socket, upstream).await
        })
        .into_response())
}

/// Passes frames both ways between a client's socket and the owner's, until either ends.
/// The owner's close frame reaches the client as it is; an owner that vanished without one
/// (it died) closes the client with 1013, so it reconnects and finds the next owner.
async fn pipe(
    app: AppState,
    client: WebSocket,
    upstream: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) {
    use tokio_tungstenite::tungstenite::Message as Up;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame as UpClose;
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let (mut c_tx, mut c_rx) = client.split();
    let (mut u_tx, mut u_rx) = upstream.split();
    let mut shutdown = app.shutdown.subscribe();
    let write = crate::ws::WRITE_TIMEOUT;
    let close = |code: u16, reason: &str| {
        Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_string().into(),
        }))
    };
    loop {
        tokio::select! {
            m = u_rx.next() => {
                let out = match m {
                    Some(Ok(Up::Text(t))) => Message::Text(t.as_str().into()),
                    Some(Ok(Up::Binary(b))) => Message::Binary(b),
                    Some(Ok(Up::Close(f))) => {
                        let f = f.map(|f| CloseFrame { code: f.code.into(), reason: f.reason.as_str().into() });
                        let _ = tokio::time::timeout(write, c_tx.send(Message::Close(f))).await;
                        break;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => {
                        let _ = tokio::time::timeout(write, c_tx.send(close(close_code::AGAIN, "reconnect to resync"))).await;
                        break;
                    }
                };
                if !matches!(tokio::time::timeout(write, c_tx.send(out)).await, Ok(Ok(()))) {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            m = c_rx.next() => {
                let out = match m {
                    Some(Ok(Message::Text(t))) => Up::Text(t.as_str().into()),
                    Some(Ok(Message::Binary(b))) => Up::Binary(b),
                    Some(Ok(Message::Close(f))) => {
                        let f = f.map(|f| UpClose { code: f.code.into(), reason: f.reason.as_str().into() });
                        let _ = tokio::time::timeout(write, u_tx.send(Up::Close(f))).await;
                        break;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => {
                        let _ = tokio::time::timeout(write, u_tx.send(Up::Close(None))).await;
                        break;
                    }
                };
                if !matches!(tokio::time::timeout(write, u_tx.send(out)).await, Ok(Ok(()))) {
                    let _ = tokio::time::timeout(write, c_tx.send(close(close_code::AGAIN, "reconnect to resync"))).await;
                    break;
                }
            }
            _ = crate::state::stopping(&mut shutdown) => {
                let _ = tokio::time::timeout(write, c_tx.send(close(close_code::AWAY, "server restarting"))).await;
                let _ = tokio::time::timeout(write, u_tx.send(Up::Close(None))).await;
                break;
            }
        }
    }
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_paths() {
        let id = Uuid::new_v4();
        for p in [
            format!("/api/tables/{id}"),
            format!("/api/tables/{id}/join"),
            format!("/table/{id}"),
            format!("/table/{id}/INVITE"),
            format!("/ws/table/{id}"),
        ] {
            assert_eq!(table_of(&p), Some(id), "{p}");
        }
        for p in ["/api/tables", "/api/tables/x", "/ws/lobby", "/"] {
            assert_eq!(table_of(p), None, "{p}");
        }
    }

    #[tokio::test]
    async fn default_addresses() {
        let bound: SocketAddr = "10.1.2.3:8080".parse().unwrap();
        assert_eq!(
            default_address("postgres://u:p@db:5432/x", bound).await,
            "http://10.1.2.3:8080"
        );
        let any: SocketAddr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(
            default_address("postgres://u:p@127.0.0.1:5432/x", any).await,
            "http://127.0.0.1:9000"
        );
    }
}
