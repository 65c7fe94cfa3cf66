//! The real-time core: the live tables of one node.
//!
//! Each live table is one tokio task ([`table`]) that owns the table's state. Whoever wants
//! something of a table (a socket, an HTTP handler, the cluster) sends its task a command
//! ([`table::Cmd`]) through its [`table::TableHandle`]; the task applies it to the game's
//! pure state machine, hands the writes to the store's single writer, and only once they
//! are durable tells each viewer what changed, as JSON text queued on that viewer's
//! [`outbox`]. A socket does nothing but carry those texts; a test or a benchmark can read
//! them straight off the outbox, with no socket at all (`benches/core.rs`).
//!
//! [`Core`] is what every table task shares: the store and its writer, the node's
//! [`metrics::Metrics`], the tables' settings ([`CoreConfig`]), the registry of live tables,
//! and the node's gate for claiming tables (one claim at a time; none while draining). What
//! the core must tell the rest of the server (a table's lobby entry changed) goes through
//! the [`Host`] trait, which the server implements: the core knows nothing of HTTP,
//! WebSockets, accounts, quick play, the cluster's forwarding or the abuse limits.

pub mod metrics;
pub mod outbox;
pub mod table;
pub mod time;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use protocol::TableInfo;
use store::{Occupant, Store, TableRecord, Writer};
use uuid::Uuid;

pub use metrics::Metrics;
pub use table::{Cmd, TableHandle, Updates, Who};

/// The capacity of a connection's queue ([`outbox`]): messages it may have waiting before
/// it counts as too slow and is dropped (closed with 1013; it reconnects and resyncs).
pub use table::CONN_QUEUE;

/// One message for one socket: JSON text, shared without a copy between the viewers that
/// get the same bytes. Always valid UTF-8 (it is only ever made from a `String`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text(bytes::Bytes);

impl Text {
    /// The bytes, for a socket library's own text type.
    pub fn into_bytes(self) -> bytes::Bytes {
        self.0
    }

    /// The text as a `&str`, checked again (a `Text` holds UTF-8 by construction, so this
    /// never fails; it is for tests and logs, not the hot path).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(bytes::Bytes::from(s))
    }
}

/// Why a table refused a command, and what the client sees. The server maps each variant to
/// its HTTP status and error body (the code and message are shown as they are).
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// 409: the table's state refuses it. Codes: `seat_taken`, `table_full`,
    /// `already_seated`, `not_seated`, `already_started`, `seats_not_full`, `bad_seat`,
    /// `not_a_bot`, `round_in_progress`, `daily_in_progress`, `table_closed`.
    #[error("{1}")]
    Conflict(&'static str, String),
    /// 400 `bad_options` (or another setup code): a table that cannot be set up.
    #[error("{1}")]
    BadTable(&'static str, String),
    /// 503 `table_moving`: another node owns the table (or is about to).
    #[error("this table is moving to another server: try again in a moment")]
    Moving,
    /// 503 `server_draining`: this node is stopping and makes no new table.
    #[error("this server is shutting down: try again in a moment")]
    Draining,
    /// 409 `table_exists`: a new table that the store holds already under its unique key
    /// (a player's daily deal: another request of theirs made it first).
    #[error("this table exists already")]
    Exists,
    /// 500 `table_broken`: the table's stored record does not replay (or its task gave
    /// up after repeated panics and it does not restore). Nothing of it is changed; the log
    /// names the table and why, and `/healthz` counts it, for an operator to look at.
    #[error(
        "this table's record could not be loaded; it is kept unchanged for the server's operators to look at"
    )]
    Broken,
    /// 500 `internal`: logged where it happened, never explained.
    #[error("internal error")]
    Internal,
}

impl TableError {
    pub fn conflict(code: &'static str, msg: impl Into<String>) -> Self {
        TableError::Conflict(code, msg.into())
    }

    pub fn code(&self) -> &'static str {
        match self {
            TableError::Conflict(c, _) | TableError::BadTable(c, _) => c,
            TableError::Moving => "table_moving",
            TableError::Draining => "server_draining",
            TableError::Exists => "table_exists",
            TableError::Broken => "table_broken",
            TableError::Internal => "internal",
        }
    }

    /// The answer of a table whose task has ended.
    pub fn closed() -> Self {
        TableError::conflict("table_closed", "this table has closed")
    }
}

impl From<store::StoreError> for TableError {
    fn from(e: store::StoreError) -> Self {
        tracing::error!(error = %e, "store error");
        TableError::Internal
    }
}

/// What the core tells the server it runs in.
pub trait Host: Send + Sync + 'static {
    /// A table this node runs at `epoch` changed its lobby entry (`Some`), or left the
    /// lobby (`None`: over, private, or its task ended).
    fn publish_lobby(&self, id: Uuid, epoch: i64, info: Option<TableInfo>);
}

/// A host with no lobby: for tests and benchmarks of the core alone.
#[derive(Debug, Default)]
pub struct NoLobby;

impl Host for NoLobby {
    fn publish_lobby(&self, _: Uuid, _: i64, _: Option<TableInfo>) {}
}

/// The settings a table task reads (from the server's command line).
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// Pause before a bot moves while people watch.
    pub bot_delay_ms: u64,
    /// How long a hard bot thinks per move.
    pub bot_budget_ms: u64,
    /// How long a disconnected player keeps their seat before a bot stands in.
    pub disconnect_grace_s: u64,
    /// How long a match goes on with none of its people connected.
    pub abandon_after_s: u64,
    /// How long a game of one waits for its player.
    pub solo_abandon_after_s: u64,
    /// How long an open table waits for players.
    pub open_table_ttl_s: u64,
    /// Test only: `Cmd::TestPanic` makes a table panic.
    pub test_hooks: bool,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            bot_delay_ms: 600,
            bot_budget_ms: 100,
            disconnect_grace_s: 60,
            abandon_after_s: 300,
            solo_abandon_after_s: 86_400,
            open_table_ttl_s: 1800,
            test_hooks: false,
        }
    }
}

/// The live tables of one node and what they share. Cheap to clone.
#[derive(Clone)]
pub struct Core(Arc<Inner>);

pub struct Inner {
    pub store: Arc<dyn Store>,
    /// The process's single writer: every change of a live table is stored through it,
    /// grouped with other tables' changes into one transaction.
    pub writer: Writer,
    pub metrics: Arc<Metrics>,
    pub config: CoreConfig,
    /// This node's id among the nodes on one database: the owner written on its claims.
    pub node: String,
    /// Live tables by id. A table task removes itself when it ends.
    tables: Mutex<HashMap<Uuid, TableHandle>>,
    /// Held while a table is claimed or created, and started here ([`table::open`],
    /// [`Core::create`], the cluster's failover): a table is never claimed here while it is
    /// being started here.
    pub opening: tokio::sync::Mutex<()>,
    /// Set once the node is stopping: no table is claimed or created here any more.
    draining: AtomicBool,
    /// Tables claimed here whose task gave up, or whose restore failed: the cluster's
    /// failover leaves them (a visit retries).
    broken: Mutex<HashSet<Uuid>>,
    /// The bot accounts this node knows of (loaded at start-up, and each one that signs
    /// in or is made here): what marks their seats `bot_account` in tables' documents.
    bot_accounts: Mutex<HashSet<Uuid>>,
    host: Arc<dyn Host>,
}

impl std::ops::Deref for Core {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Core {
    /// The core of a node `node` on `store`, with the store's writer task (so: inside a
    /// tokio runtime).
    pub fn new(
        store: Arc<dyn Store>,
        metrics: Arc<Metrics>,
        config: CoreConfig,
        node: String,
        host: Arc<dyn Host>,
    ) -> Core {
        Core(Arc::new(Inner {
            writer: Writer::spawn(store.clone(), metrics.clone()),
            store,
            metrics,
            config,
            node,
            tables: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
            draining: AtomicBool::new(false),
            broken: Mutex::new(HashSet::new()),
            bot_accounts: Mutex::new(HashSet::new()),
            host,
        }))
    }

    /// Notes that `player` is a bot account (irreversible).
    pub fn mark_bot_account(&self, player: Uuid) {
        lock(&self.bot_accounts).insert(player);
    }

    /// Whether `player` is a bot account this node knows of.
    pub fn is_bot_account(&self, player: Uuid) -> bool {
        lock(&self.bot_accounts).contains(&player)
    }

    /// The live table `id`, if its task runs here.
    pub fn table(&self, id: Uuid) -> Option<TableHandle> {
        lock(&self.tables).get(&id).cloned()
    }

    /// Every live table's handle.
    pub fn tables(&self) -> Vec<TableHandle> {
        lock(&self.tables).values().cloned().collect()
    }

    /// How many tables run here.
    pub fn live(&self) -> usize {
        lock(&self.tables).len()
    }

    /// The node is stopping: from now on no table is claimed or created here.
    pub fn start_draining(&self) {
        self.draining.store(true, Relaxed);
    }

    pub fn draining(&self) -> bool {
        self.draining.load(Relaxed)
    }

    /// A table whose task gave up or that does not restore: failover leaves it to visits.
    pub fn mark_broken(&self, id: Uuid, broken: bool) {
        let mut set = lock(&self.broken);
        if broken {
            set.insert(id);
        } else {
            set.remove(&id);
        }
    }

    pub fn is_broken(&self, id: Uuid) -> bool {
        lock(&self.broken).contains(&id)
    }

    /// How many tables are broken now (`/healthz` says degraded: someone's match cannot
    /// be played, and an operator must look).
    pub fn broken_count(&self) -> usize {
        lock(&self.broken).len()
    }

    /// Publishes a table's lobby entry through the host.
    pub(crate) fn publish_lobby(&self, id: Uuid, epoch: i64, info: Option<TableInfo>) {
        self.host.publish_lobby(id, epoch, info);
    }

    /// The node's `opening` lock, held from a new table's first row until its task runs (so
    /// a request that finds the row meanwhile waits and then finds the task), unless the
    /// node is draining: then new tables are refused, to be made on another node.
    async fn creating(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, TableError> {
        let one = self.opening.lock().await;
        if self.draining() {
            return Err(TableError::Draining);
        }
        Ok(one)
    }

    /// Stores a new table (under the rules version of its game), owned by this node from
    /// its first row, and starts its task.
    pub async fn create(
        &self,
        record: TableRecord,
        seats: Vec<Occupant>,
    ) -> Result<TableHandle, TableError> {
        let mut t = table::Table::new(self.clone(), record, seats.clone())?;
        let record = t.set_rules_version();
        let _one = self.creating().await?;
        // Owned by this node from its first row: no other node takes it for an orphan.
        let epoch = match self
            .store
            .create_owned_table(&record, &seats, Some(&self.node))
            .await
        {
            Ok(epoch) => epoch,
            Err(store::StoreError::Conflict(_)) => return Err(TableError::Exists),
            Err(e) => return Err(e.into()),
        };
        Ok(table::spawn(t.claimed(epoch)))
    }

    /// Takes a table out of the registry (its task ends).
    pub(crate) fn forget(&self, id: Uuid) {
        lock(&self.tables).remove(&id);
    }
}

/// Locks a mutex, recovering from poisoning: the data behind the core's locks stays
/// consistent even if a holder panicked (plain inserts and removes).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A random hex string of `bytes` bytes from the OS's source (invite codes).
pub fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).expect("the OS random source is available");
    hex::encode(b)
}

#[cfg(test)]
mod testing {
    use std::sync::Arc;

    /// A core on `url` (a store of its own), with no lobby: for the unit tests.
    pub async fn core(url: &str) -> super::Core {
        let store = store::connect(url).await.expect("a store");
        super::Core::new(
            store,
            Arc::new(super::Metrics::default()),
            super::CoreConfig {
                test_hooks: true,
                ..Default::default()
            },
            "local".into(),
            Arc::new(super::NoLobby),
        )
    }
}
