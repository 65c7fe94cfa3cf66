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
//!   goes through NOTIFY ([`QUICKPLAY`]). Direct challenges between lobby sockets on
//!   different nodes travel as notes too ([`CHALLENGES`], `ws::challenge`), and so does a
//!   message for a player's lobby sockets on every node ([`PLAYERS`]: a tournament's
//!   `tournament_game`).
//!
//! On SQLite there is one node: the same code runs, with nobody to forward to.

mod forward;
mod ownership;
mod sync;

pub use forward::{forward, remote_info};
pub use ownership::take_orphans;
use ownership::*;
pub use sync::flush_notes;
use sync::*;

use std::net::SocketAddr;
use std::time::Duration;

use crate::error::ApiError;
use crate::node::*;
use crate::state::{AppState, lock};

/// How often a node renews its lease, claims orphaned tables and checks its own.
pub const BEAT: Duration = Duration::from_secs(1);

/// How long a node's lease runs after its last renewal.
pub const LEASE: Duration = Duration::from_secs(5);

/// The address the other nodes reach this one at, when not configured: this machine's
/// address on the route to the database (a connected UDP socket sends nothing), or the
/// listener's own address when it is bound to one.
pub(super) async fn default_address(database_url: &str, local: SocketAddr) -> String {
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
/// How far this node's clock may be off the database's before the start says so.
const CLOCK_SKEW_WARN_MS: i64 = 2_000;

pub async fn start(app: &AppState, local: SocketAddr) -> Result<(), store::StoreError> {
    let c = &app.cluster;
    let address = match &app.config.advertise_url {
        Some(a) => a.trim_end_matches('/').to_string(),
        None => default_address(&app.config.database_url, local).await,
    };
    *c.address.write().unwrap_or_else(|p| p.into_inner()) = address.clone();
    // Leases are measured on the database's clock, but a few things still read this node's
    // own: a table's clocks when it is taken over after a failover, quick play's waits, an
    // open table's expiry across restarts. A node whose clock is off charges or spares
    // players that much (a walk ran a node 30 minutes ahead: a correspondence clock lost
    // half an hour at a failover). Said at start, where an operator looks.
    match app.store.database_now_ms().await {
        Ok(db) => {
            let off = crate::state::now_ms() - db;
            if off.abs() > CLOCK_SKEW_WARN_MS {
                tracing::warn!(
                    off_ms = off,
                    "this node's clock is off the database's: keep the nodes' clocks in sync \
                     (NTP), or players' clocks after a failover and quick play's waits are off \
                     by as much"
                );
            }
        }
        Err(e) => tracing::debug!(error = %e, "could not read the database's clock"),
    }
    let secret = app.store.cluster_secret().await?;
    let _ = app.limits.node_secret.set(secret.clone());
    let _ = c.secret.set(secret);
    // Two processes under one id would take the tables from each other every second (a
    // walk ran two with FIB_NODE_ID=alpha: nobody could play). A live row under this id is
    // watched for two beats: renewed meanwhile, another process holds it, and this one
    // stops. (A process of this id that crashed renews nothing: it is taken over below.)
    if let Some(other) = app
        .store
        .live_nodes()
        .await?
        .into_iter()
        .find(|n| n.id == c.node && !n.draining)
    {
        tokio::time::sleep(BEAT * 2 + BEAT / 2).await;
        let renewed = app
            .store
            .live_nodes()
            .await?
            .into_iter()
            .any(|n| n.id == c.node && n.expires_at > other.expires_at);
        if renewed {
            return Err(store::StoreError::Conflict(format!(
                "another process is running as node {:?} (at {}, its lease renewed \
                 meanwhile): give each node its own --node-id",
                c.node, other.address
            )));
        }
    }
    // A process that starts under an id is not the one that ran under it before: the
    // queue entries of that one's sockets go (SQLite: every entry, as there is one node).
    app.store.node_gone(&c.node).await?;
    // So is a node that advertised the very address this process now listens on: that
    // process no longer holds the port (typically this server restarted after a crash
    // under a new random id). Waiting for its lease to run out kept its tables from
    // everyone, and out of the lobby, for up to `LEASE` (a walk saw a restarted single
    // node list an empty lobby for 5 s); they are taken at once below instead. A draining
    // node hands its tables over by itself. Two live nodes never share an address unless
    // misconfigured, and even then fencing keeps the one that lost its tables from writing.
    for n in app.store.live_nodes().await? {
        if n.id != c.node && n.address == address && !n.draining {
            tracing::info!(
                node = %n.id,
                %address,
                "the node that listened on this address before is gone: its tables are taken now"
            );
            app.store.node_gone(&n.id).await?;
        }
    }
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
        match app
            .store
            .listen(&[LOBBY, HELLO, QUICKPLAY, CHALLENGES, PLAYERS])
            .await?
        {
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
    crate::matcher::match_once(app).await?;
    crate::matcher::spawn_matcher(app);
    crate::tournaments::spawn_director(app);
    Ok(())
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
    // Each bounded like a renewal: a database that does not answer must not hold the
    // shutdown for a pool's 10 s each time (a walk saw 37 s, past compose's 30 s grace).
    let address = c.address();
    let beat = app
        .store
        .node_beat(&c.node, &address, LEASE.as_millis() as i64, true);
    let _ = tokio::time::timeout(ownership::RENEW_TIMEOUT, beat).await;
    let n = stop_tables(app).await;
    match tokio::time::timeout(ownership::RENEW_TIMEOUT, app.store.node_gone(&c.node)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "could not leave the cluster"),
        Err(_) => tracing::warn!(
            "could not leave the cluster: no answer from the database in time (the others see its lease run out)"
        ),
    }
    tracing::info!(tables = n, "drained: table tasks stopped");
}

/// Ends every table task of this process and waits for each (`realtime::table::stop_tables`).
pub async fn stop_tables(app: &AppState) -> usize {
    realtime::table::stop_tables(&app.core).await
}

#[cfg(test)]
mod tests {
    use super::forward::table_of;
    use super::*;
    use uuid::Uuid;

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
