//! The server's shared state, assembled at the top from parts that do not know it: the
//! real-time core (live tables, the store and its writer, metrics), the lobby, quick play,
//! the cluster, the abuse limits, the client's assets, and the shutdown signals.

use std::sync::Arc;

use store::Store;
use tokio::sync::{broadcast, watch};

use crate::config::Config;
use realtime::{Core, Metrics};

#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

pub struct Inner {
    pub store: Arc<dyn Store>,
    pub metrics: Arc<Metrics>,
    /// The live tables of this node (`realtime`): every table command goes through it.
    pub core: Core,
    pub config: Config,
    /// The browser client's files: versions, the rewritten index page, the CSP.
    pub assets: crate::assets::Assets,
    /// Public tables that are open or playing, as the lobby shows them, and their changes.
    pub lobby: Arc<crate::lobby::Lobby>,
    /// The lobby's chat, in memory.
    pub lobby_chat: realtime::table::chat::LobbyChat,
    /// Quick play: the sockets waiting in a queue, the queue counts, the recent waits.
    pub quickplay: crate::quickplay::QuickPlay,
    /// Direct challenges waiting on this node's lobby sockets.
    pub challenges: crate::challenges::Challenges,
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
    pub cluster: Arc<crate::node::Cluster>,
    /// Wakes this node's idle analysis workers when a job is queued here (`analysis`).
    pub analysis_wake: Arc<tokio::sync::Notify>,
    /// The progress (done, total) of the jobs this node's workers run now, fresher than
    /// the store's copy, which is written only every few seconds (`analysis`).
    pub analysis_live: Arc<std::sync::Mutex<std::collections::HashMap<uuid::Uuid, (i64, i64)>>>,
    /// Wakes this node's tournament director (a step was stored here).
    pub tournament_wake: Arc<tokio::sync::Notify>,
    /// The id of every tournament whose standings or games changed on this node, for
    /// the lobby sockets that follow it.
    pub tournament_feed: broadcast::Sender<uuid::Uuid>,
    /// Finished matches' replays built lately, as sent (`replay::Cache`).
    pub replays: Arc<crate::replay::Cache>,
    /// Open lobby sockets of this node (`/metrics`; `fib_ws_connections` counts them with
    /// the table sockets).
    pub lobby_sockets: std::sync::atomic::AtomicI64,
    /// HTTP answers of this node by status class, 1xx to 5xx (`/metrics`).
    pub http_answers: [std::sync::atomic::AtomicU64; 5],
}

/// The bytes of replays a node keeps built (`replay::Cache`): a long four-seat match's is
/// about 2 MB.
const REPLAY_CACHE_BYTES: usize = 64 << 20;

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
        if !config.web_dir.join("index.html").is_file() {
            // API-only use is allowed; a wrong `--web-dir` (or a binary moved away from
            // the checkout its default names) must not pass for it in silence.
            tracing::warn!(
                dir = %config.web_dir.display(),
                "no index.html in the web directory: the browser client is not served (pages are empty); set --web-dir (FIB_WEB_DIR) to the checkout's web/"
            );
        }
        let cluster = Arc::new(crate::node::Cluster::new(&config, store.backend()));
        let lobby = Arc::new(crate::lobby::Lobby::default());
        let host = crate::lobby::Publisher {
            lobby: lobby.clone(),
            cluster: cluster.clone(),
        };
        let core = Core::new(
            store.clone(),
            metrics.clone(),
            config.core(),
            cluster.node.clone(),
            Arc::new(host),
        );
        AppState(Arc::new(Inner {
            assets,
            core,
            store,
            metrics,
            config,
            lobby,
            lobby_chat: Default::default(),
            quickplay: Default::default(),
            challenges: Default::default(),
            revoked: broadcast::channel(256).0,
            shutdown: watch::channel(false).0,
            background: tokio_util::task::TaskTracker::new(),
            sockets: tokio_util::task::TaskTracker::new(),
            limits,
            cluster,
            analysis_wake: Arc::new(tokio::sync::Notify::new()),
            analysis_live: Arc::default(),
            replays: Arc::new(crate::replay::Cache::new(REPLAY_CACHE_BYTES)),
            tournament_wake: Arc::new(tokio::sync::Notify::new()),
            tournament_feed: broadcast::channel(1024).0,
            lobby_sockets: Default::default(),
            http_answers: Default::default(),
        }))
    }

    pub fn table(&self, id: uuid::Uuid) -> Option<realtime::TableHandle> {
        self.core.table(id)
    }
}

pub use realtime::lock;
pub use realtime::time::{day_start_ms, now_ms, utc_day};
