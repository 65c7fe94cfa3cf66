//! The lobby across nodes: this node's notes to the others (in order, by one task) and the
//! others' notes applied here, a node's entries dropped when it dies.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use uuid::Uuid;

use crate::node::*;
use crate::state::{AppState, lock};

/// How long the notes sender gathers notes before it sends them: a table's lobby entry
/// changes at every move, and the other nodes' lobbies need only its latest state, so a
/// busy node sends one round trip of notes every [`NOTE_BATCH`] rather than one a move.
pub(super) const NOTE_BATCH: Duration = Duration::from_millis(100);

/// Sends the queued notes, gathered for [`NOTE_BATCH`]: each channel's in order, one round
/// trip per channel, a table's lobby entry only as it is last.
pub(super) async fn send_notes(app: AppState, mut rx: tokio::sync::mpsc::Receiver<Note>) {
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

/// Lobby entries of nodes that are not alive any more go.
pub(super) async fn drop_dead_entries(app: &AppState) {
    let Ok(nodes) = app.store.live_nodes().await else {
        return;
    };
    // The other nodes' addresses, for the connection limit (`conns`): an advertised
    // `http://10.0.0.2:8080` names its IP; a host name is not looked up (such nodes sit
    // behind a proxy, whose network `--trusted-proxies` names).
    let peers: HashSet<std::net::IpAddr> = nodes
        .iter()
        .filter(|n| n.id != app.cluster.node)
        .filter_map(|n| {
            let host = n.address.split("://").nth(1)?.rsplit_once(':')?.0;
            host.trim_matches(['[', ']']).parse().ok()
        })
        .collect();
    *app.cluster
        .peer_ips
        .write()
        .unwrap_or_else(|p| p.into_inner()) = peers;
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
pub(super) async fn listen(app: AppState, mut rx: tokio::sync::mpsc::Receiver<store::Notice>) {
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
                CHALLENGES => {
                    if let Ok(note) = serde_json::from_str::<ChallengeNote>(&payload)
                        && note.node != app.cluster.node
                    {
                        crate::ws::challenge::note(&app, note);
                    }
                }
                PLAYERS => {
                    if let Ok(note) = serde_json::from_str::<PlayerNote>(&payload)
                        && note.node != app.cluster.node
                    {
                        app.challenges.tell(note.player, &note.msg);
                    }
                }
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
pub(super) fn hello(app: &AppState) {
    let _ = app
        .cluster
        .notes
        .try_send(Note::Plain(HELLO, app.cluster.node.clone()));
}

/// Publishes every lobby entry of this node's tables again.
pub(super) fn republish(app: &AppState) {
    let local: Vec<(Uuid, i64)> = app.core.tables().iter().map(|h| (h.id, h.epoch)).collect();
    for (id, epoch) in local {
        if let Some(info) = app.lobby.table(id) {
            app.cluster.publish(epoch, id, Some(&info));
        }
    }
}

pub(super) fn lobby_note(app: &AppState, note: LobbyNote) {
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
