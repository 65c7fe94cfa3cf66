//! Shared server state: the store, metrics, configuration, the registry of live tables and
//! the lobby's list of public tables.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use protocol::TableInfo;
use store::{Store, Writer};
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::table::TableHandle;

/// Lobby changes a socket may fall behind by before it is sent the whole list instead.
const LOBBY_BACKLOG: usize = 4096;

#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

pub struct Inner {
    pub store: Arc<dyn Store>,
    /// The process's single writer: every change of a live table is stored through it,
    /// grouped with other tables' changes into one transaction.
    pub writer: Writer,
    pub metrics: Arc<Metrics>,
    pub config: Config,
    /// The browser client's files: versions, the rewritten index page, the CSP.
    pub assets: crate::assets::Assets,
    /// Live tables by id. A table task removes itself when it ends.
    pub tables: Mutex<HashMap<Uuid, TableHandle>>,
    /// Public tables that are open or playing, as the lobby shows them.
    pub lobby: Mutex<HashMap<Uuid, TableInfo>>,
    /// The id of every table whose lobby entry changed (or went away); lobby sockets
    /// follow it and send the changes.
    pub lobby_changes: broadcast::Sender<Uuid>,
    /// The lobby's chat, in memory (`table::chat::LobbyChat`).
    pub lobby_chat: crate::table::chat::LobbyChat,
    /// Quick play: the sockets waiting in a queue, the queue counts, the recent waits.
    pub quickplay: crate::quickplay::QuickPlay,
    /// The id of every session (device) just signed out: its open sockets close (4001).
    pub revoked: broadcast::Sender<String>,
    /// Set to true when the server is shutting down; sockets close on it. Set with
    /// `send_replace`: `send` leaves the value as it was when nobody is subscribed, and
    /// new sockets and tasks read it.
    pub shutdown: watch::Sender<bool>,
    /// The background tasks that use the store (lease beats, housekeeping, the quick-play
    /// matcher, queue clean-ups): each ends on `shutdown`, and `serve` waits for them
    /// before the store may close, so none is caught half-way by a closed pool.
    pub background: tokio_util::task::TaskTracker,
    /// Every WebSocket's task (table, lobby, forwarded): `serve` waits for them at
    /// shutdown, each ending within its write timeouts.
    pub sockets: tokio_util::task::TaskTracker,
    /// Request rates and open sockets per client address.
    pub limits: Arc<crate::limits::Limits>,
    /// This node among the servers on one database: its id, address, the lobby entries
    /// of the others (`cluster`).
    pub cluster: crate::cluster::Cluster,
}

/// Resolves once the server is shutting down, at once if it already is: a receiver that
/// subscribed after the signal was sent would wait for ever on `changed`.
pub async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|down| *down).await;
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// The shared state, and the store's writer task (so: inside a tokio runtime).
    pub fn new(store: Arc<dyn Store>, config: Config) -> Self {
        let metrics = Arc::new(Metrics::default());
        let limits = Arc::new(crate::limits::Limits::new(&config));
        // Addresses whose allowance is whole again are forgotten every minute.
        let weak = Arc::downgrade(&limits);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                every.tick().await;
                match weak.upgrade() {
                    Some(l) => l.prune(),
                    None => break,
                }
            }
        });
        let assets = crate::assets::Assets::load(&config.web_dir).unwrap_or_else(|e| {
            tracing::warn!(error = %e, dir = %config.web_dir.display(), "cannot read the web client");
            crate::assets::Assets::default()
        });
        let config_for_cluster = config.clone();
        let backend = store.backend();
        AppState(Arc::new(Inner {
            assets,
            writer: Writer::spawn(store.clone(), metrics.clone()),
            store,
            metrics,
            config,
            tables: Mutex::new(HashMap::new()),
            lobby: Mutex::new(HashMap::new()),
            lobby_changes: broadcast::channel(LOBBY_BACKLOG).0,
            lobby_chat: Default::default(),
            quickplay: Default::default(),
            revoked: broadcast::channel(256).0,
            shutdown: watch::channel(false).0,
            background: tokio_util::task::TaskTracker::new(),
            sockets: tokio_util::task::TaskTracker::new(),
            limits,
            cluster: crate::cluster::Cluster::new(&config_for_cluster, backend),
        }))
    }

    pub fn table(&self, id: Uuid) -> Option<TableHandle> {
        lock(&self.tables).get(&id).cloned()
    }

    /// Publishes (or withdraws, with `None`) the lobby entry of a table this node runs
    /// at `epoch`, here and to the other nodes.
    pub fn publish_lobby(&self, id: Uuid, epoch: i64, info: Option<TableInfo>) {
        if info.is_none() && self.cluster.shown_elsewhere(id) {
            // A task that stepped down: the new owner's entry stays.
            return;
        }
        if self.lobby_apply(id, info.clone()) {
            self.cluster.publish(epoch, id, info.as_ref());
        }
    }

    /// Sets (or removes) a lobby entry in this node's list; whether it changed.
    pub fn lobby_apply(&self, id: Uuid, info: Option<TableInfo>) -> bool {
        let changed = {
            let mut l = lock(&self.lobby);
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
            let _ = self.lobby_changes.send(id);
        }
        changed
    }

    /// The lobby entry of one table, if it is listed.
    pub fn lobby_table(&self, id: Uuid) -> Option<TableInfo> {
        lock(&self.lobby).get(&id).cloned()
    }

    /// The lobby's tables, newest first.
    pub fn lobby_tables(&self) -> Vec<TableInfo> {
        let mut v: Vec<TableInfo> = lock(&self.lobby).values().cloned().collect();
        v.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        v
    }
}

/// Locks a mutex, recovering from poisoning: the data behind our locks stays consistent
/// even if a holder panicked (plain inserts and removes).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The UTC calendar day of a Unix-milliseconds time, as `YYYY-MM-DD` (proleptic
/// Gregorian; Howard Hinnant's civil-from-days).
pub fn utc_day(ms: i64) -> String {
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The first millisecond (Unix) of a UTC day written `YYYY-MM-DD`, or `None` if that is
/// not a real calendar day. (Days-from-civil, the inverse of [`utc_day`].)
pub fn day_start_ms(day: &str) -> Option<i64> {
    let b = day.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| day.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let ms = (era * 146_097 + doe - 719_468) * 86_400_000;
    // Month 13 or day 31 of a short month land on another day: refuse them.
    (utc_day(ms) == day).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::{day_start_ms, utc_day};

    #[test]
    fn day_starts() {
        assert_eq!(day_start_ms("1970-01-01"), Some(0));
        assert_eq!(day_start_ms("2000-02-29"), Some(951_782_400_000));
        assert_eq!(
            day_start_ms("2026-11-22").map(utc_day).as_deref(),
            Some("2026-11-22")
        );
        for bad in [
            "2026-13-01",
            "2026-02-30",
            "2025-02-29",
            "2026-11-2",
            "2026/11/22",
            "x",
        ] {
            assert_eq!(day_start_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn utc_days() {
        assert_eq!(utc_day(0), "1970-01-01");
        assert_eq!(utc_day(86_399_999), "1970-01-01");
        assert_eq!(utc_day(86_400_000), "1970-01-02");
        assert_eq!(utc_day(951_782_400_000), "2000-02-29");
        assert_eq!(utc_day(1_795_322_425_202), "2026-11-22");
        assert_eq!(utc_day(-1), "1969-12-31");
    }
}
