//! SQLite backend: the embedded default, one file next to the server.
//!
//! Durability comes first: an action acknowledged to a player must survive a SIGKILL of
//! the server (and a power cut), so every commit is fsynced (`synchronous=FULL`).
//!
//! A file database has one write connection, in a pool of its own, through which every
//! write of the store goes, and every write transaction starts with `BEGIN IMMEDIATE`.
//! SQLite lets one connection write at a time; when several pooled connections wrote, a
//! transaction that began with a read (`finish_match`) could not upgrade to a write while
//! another held the lock and failed at once with `SQLITE_BUSY`, since the busy timeout
//! does not apply to an upgrade. Writes queue in the pool for the one connection
//! instead, and `BEGIN IMMEDIATE` takes the lock up front, where the busy timeout does
//! apply (another process, such as a second server by mistake, still just waits). Reads
//! use a pool of read-only connections, which WAL lets run while the writer commits.
//! One more connection only copies the WAL into the database file ([`checkpoints`]), so
//! that no commit does it on its players' time.
//!
//! An in-memory database lives in one connection, which serves reads and writes alike.
//!
//! Accepted actions are appended to a journal (migration 0014) and folded into the log
//! clustered by table (in chunks, migration 0020) once the journal is long ([`folds`]): a
//! commit then writes a few pages at the journal's end instead of one page per table of
//! its group. A fold is short steps in turn with the groups (migration 0021, [`fold`]).
//! Groups of plain actions, groups with other ops (a round's start or end, a seat, …; all
//! but a match's finish, whose ratings go through sqlx) and folds are written by the
//! store's own thread, through a connection of its own to the file, while the write pool's
//! connection is held ([`raw`]); the process's writer task runs on that thread too
//! ([`crate::Store::writer_runtime`]).

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};

use crate::Result;
use crate::common::{self, Plan};

mod raw;

/// How long a write waits for another process's write transaction to finish (and a read
/// for a WAL recovery).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write waits in line for the write connection. Each transaction holds it for
/// milliseconds; the [`Writer`](crate::Writer) retries a timeout like any transient error.
const WRITE_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);
/// A wait for the write connection that sqlx logs as a warning (2 s by default). Writes
/// queue for it by design (a burst of 5,000 new tables waits seconds at its end, and each
/// wait logged a warning); a wait this long is worth a look.
const WRITE_ACQUIRE_SLOW: Duration = Duration::from_secs(10);
/// Read-only connections of a file database.
const READ_CONNECTIONS: u32 = 8;

/// How often the checkpointer copies the WAL into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);
/// The WAL's size (pages) at which the writer checkpoints by itself.
const CHECKPOINT_FALLBACK_PAGES: &str = "8000";

/// Copies the WAL into the database file every [`CHECKPOINT_EVERY`], on a connection of its
/// own (`PRAGMA wal_checkpoint(PASSIVE)`, which never waits for the writer or readers), so
/// that no commit pays for a checkpoint: with SQLite's default, the commit that takes the
/// WAL past 1000 pages copies them all before its players hear of their moves. Stops once
/// the store is gone.
async fn checkpoints(conn: SqlitePool, alive: std::sync::Weak<()>) {
    let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if alive.upgrade().is_none() || conn.is_closed() {
            break;
        }
        let started = std::time::Instant::now();
        let done: std::result::Result<(i64, i64, i64), sqlx::Error> =
            sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                .fetch_one(&conn)
                .await;
        match done {
            // (busy, the WAL's frames, those copied so far)
            Ok((_, frames, copied)) => {
                tracing::debug!(frames, copied, took = ?started.elapsed(), "WAL checkpoint")
            }
            Err(e) => tracing::warn!("WAL checkpoint: {e}"),
        }
    }
    conn.close().await;
}

/// How often the folder looks at the journal's length (a read, no lock).
const FOLD_CHECK: Duration = Duration::from_millis(100);
/// The journal's length at which it is folded. The more actions of each table a fold
/// moves, the fewer pages of the clustered log it writes per action, and the rarer the
/// fold that holds the write lock while groups wait. A fold's time grows with the tables
/// it touches more than with its rows: at 5,000 tables moving once a second, a fold of 16k
/// rows held the lock 35-52 ms every 3.3 s, and the moves queued behind it were more than
/// one in a hundred; 64k rows come every 13 s. At a human pace (500 tables, a move a second
/// each) the journal is folded by age ([`FOLD_AFTER`]), every half minute.
const FOLD_AT: i64 = 65_536;
/// A journal row older than this is folded whatever the journal's length, so that a quiet
/// server's journal (which reads of a table scan) does not stay long.
const FOLD_AFTER: Duration = Duration::from_secs(30);
/// Most journal rows one fold transaction moves: bounds how long a fold holds the write
/// lock (under a µs a row since migration 0020) if the journal grew faster than it was
/// folded.
const FOLD_ROWS: i64 = 65_536;

/// Folds the journal when it is [`FOLD_AT`] rows long or its oldest row is [`FOLD_AFTER`]
/// old, through the write connection, in turn with the writer's groups (the length is
/// read on `read`, which needs no lock). Stops once the store is gone.
async fn folds(
    lane: raw::Lane,
    read: SqlitePool,
    write: SqlitePool,
    kept: std::sync::Arc<Kept>,
    file: Option<std::path::PathBuf>,
    alive: std::sync::Weak<()>,
) {
    let mut tick = tokio::time::interval(FOLD_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // Closing the store closes the pools one after the other: stop at the first.
        let closed = || alive.upgrade().is_none() || read.is_closed() || write.is_closed();
        if closed() {
            break;
        }
        let due = journal_span(&read).await;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        match due {
            Ok(Some((rows, oldest)))
                if rows >= FOLD_AT || now - oldest >= FOLD_AFTER.as_millis() as i64 => {}
            Ok(_) => continue,
            Err(_) if closed() => break,
            Err(e) => {
                tracing::warn!("reading the action journal's length: {e}");
                continue;
            }
        }
        match fold(&lane, &write, &kept, file.as_deref(), false).await {
            Ok(_) => {}
            Err(_) if closed() => break,
            Err(e) => tracing::warn!("folding the action journal: {e}"),
        }
    }
}

/// The visible journal's length (its last id less its first visible one, plus one: rows
/// are only removed from its start) and its oldest visible row's time; `None` when no row
/// is visible (rows a fold hid and has not removed yet are not counted: they are folded).
/// Two seeks (the first row and the last), not a count of every row: the folder asks ten
/// times a second, however long the journal is.
async fn journal_span(read: &SqlitePool) -> std::result::Result<Option<(i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT (SELECT id FROM action_journal ORDER BY id DESC LIMIT 1) - j.id + 1, \
                j.created_at \
         FROM action_journal j WHERE j.id > (SELECT journal_upto FROM fold_state) \
         ORDER BY j.id LIMIT 1",
    )
    .fetch_optional(read)
    .await
}

/// How long one slice of a fold holds the write lock, about: the writer's groups go on
/// between two slices. One transaction for the whole fold held it 55-70 ms at 5,000
/// tables, every 13 s, while about 300 moves waited behind it (docs/performance.md).
const FOLD_SLICE: Duration = Duration::from_millis(3);
/// Most hidden journal rows one transaction removes (about 2 ms at 5,000 tables).
const TRIM_ROWS: i64 = 8_192;
/// The longest pause of the folder after a step of a fold (it pauses as long as the step
/// took): the lane is the writer's meanwhile. With the steps back to back (one group
/// between two), a fold at 5,000 tables kept the moves of its 140 ms waiting a step each,
/// 982 of them over 5 ms in one half second.
const FOLD_PAUSE: Duration = Duration::from_millis(10);

/// Moves the journal's rows into the clustered log (`action_chunks`, migrations 0020 and
/// 0021), at most [`FOLD_ROWS`] at a time, again while [`FOLD_AT`] rows or more are left
/// (or, with `all`, until none is). Returns the rows moved.
///
/// A database file's fold is a few steps, each a short transaction of its own on the
/// lane, in turn with the writer's groups: the rows are read (and made chunks) outside
/// the write lock, on a blocking thread; the chunks go in, invisible, about
/// [`FOLD_SLICE`] at a time; one small transaction shows them and hides their rows; the
/// hidden rows leave the journal [`TRIM_ROWS`] at a time. A crash between two steps
/// leaves every action seen once: invisible chunks are removed by the next fold, hidden
/// rows by its trim. In memory, a fold is one transaction.
async fn fold(
    lane: &raw::Lane,
    write: &SqlitePool,
    kept: &Kept,
    file: Option<&std::path::Path>,
    all: bool,
) -> Result<u64> {
    /// What a failed step names.
    fn what() -> String {
        "a round of the journal's actions".to_string()
    }
    let _one = kept.folding.lock().await;
    let until = if all { 1 } else { FOLD_AT };
    let mut moved = 0;
    let Some(file) = file else {
        // In memory the one connection is the database: read and write on it.
        loop {
            let conn = write.acquire().await?;
            let (done, _) = raw::fold_some(lane, conn, FOLD_ROWS).await;
            let (rows, left) = done.map_err(|e| e.into_store(what))?;
            moved += rows;
            if rows == 0 || left < until {
                return Ok(moved);
            }
        }
    };
    // Each step: the write connection in its turn, back to its pool after.
    async fn step<T>(
        write: &SqlitePool,
        kept: &Kept,
        pause: bool,
        longest: &mut Duration,
        run: impl AsyncFnOnce(
            sqlx::pool::PoolConnection<Sqlite>,
        ) -> (
            std::result::Result<T, raw::Refused>,
            Option<sqlx::pool::PoolConnection<Sqlite>>,
        ),
    ) -> Result<T> {
        let conn = kept.take_turn(write).await?;
        let started = std::time::Instant::now();
        let (done, conn) = run(conn).await;
        let took = started.elapsed();
        *longest = (*longest).max(took);
        drop(conn);
        if pause {
            // As long as the step, at most FOLD_PAUSE: the lane is the writer's at least
            // half the time, and a fold keeps up with a journal that grows fast.
            tokio::time::sleep(took.min(FOLD_PAUSE)).await;
        }
        done.map_err(|e| e.into_store(what))
    }
    // At open and at close nobody plays: no pause.
    let pause = !all;
    let mut longest = Duration::ZERO;
    loop {
        let started = std::time::Instant::now();
        let path = file.to_path_buf();
        let read = tokio::task::spawn_blocking(move || raw::read_journal(&path, FOLD_ROWS))
            .await
            .map_err(|e| {
                crate::StoreError::Unavailable(format!("reading the journal to fold it: {e}"))
            })?
            .map_err(|e| e.into_store(what))?;
        if read.hidden {
            // Rows an earlier fold hid and did not remove (a crash between its steps).
            while step(write, kept, pause, &mut longest, async |c| {
                raw::fold_trim(lane, c, TRIM_ROWS).await
            })
            .await?
            {}
        }
        let Some(chunks) = read.chunks else {
            return Ok(moved);
        };
        let read = started.elapsed();
        let chunks = std::sync::Arc::new(chunks);
        let (mut next, mut slices) = (0, 0);
        loop {
            let (c, from) = (chunks.clone(), next);
            next = step(write, kept, pause, &mut longest, async move |conn| {
                raw::fold_slice(lane, conn, c, from, FOLD_SLICE).await
            })
            .await?;
            slices += 1;
            if next >= chunks.len() {
                break;
            }
        }
        let c = chunks.clone();
        step(write, kept, pause, &mut longest, async move |conn| {
            raw::fold_flip(lane, conn, c).await
        })
        .await?;
        let mut trims = 0;
        while step(write, kept, pause, &mut longest, async |c| {
            raw::fold_trim(lane, c, TRIM_ROWS).await
        })
        .await?
        {
            trims += 1;
        }
        tracing::debug!(
            rows = chunks.moved,
            chunks = chunks.len(),
            slices,
            trims = trims + 1,
            ?read,
            ?longest,
            took = ?started.elapsed(),
            "folded the action journal"
        );
        moved += chunks.moved;
        if chunks.left < until {
            return Ok(moved);
        }
    }
}

/// How long the kept write connection ([`Kept`]) may sit unused before it goes back to
/// its pool anyway: only a use of the write pool that does not say so first
/// ([`Kept::want`]; a test's, say) waits for this.
const KEEP_UNUSED: Duration = Duration::from_millis(20);

/// The write pool's one connection, kept between the groups of the store's own thread
/// ([`raw::Lane`]). Handing it back to its pool after every group made the next group
/// wait for it: sqlx tests a connection as it comes back (a hand-off to the connection's
/// thread and back, in a task of its own): at 5,000 moves a second, 70-230 ms of every
/// second of the writer's time, up to 30 waits a second over 1 ms (docs/performance.md).
/// The lane's groups take it from here and put it back; a fold's steps ask for it in
/// turn ([`Kept::take_turn`]). Every other write of the store (through sqlx) says first that it wants
/// the connection ([`Kept::want`]): a kept connection then goes back to the pool at once,
/// and one in use at the end of its group, so that the pool's queue decides who is next.
/// Not used in memory, where the connection is also the readers'.
#[derive(Debug, Default)]
struct Kept {
    slot: std::sync::Mutex<Slot>,
    /// Held through a fold, its reading and its writing: one fold at a time (the folder's
    /// and the one at close), so that no rows leave the journal between the two.
    folding: tokio::sync::Mutex<()>,
    /// Told when the connection is put back, for [`release_unused`].
    put: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Slot {
    held: Option<Held>,
    /// Writes through sqlx waiting for the pool's connection: while there are any, none
    /// is kept.
    wanted: usize,
}

#[derive(Debug)]
struct Held {
    conn: sqlx::pool::PoolConnection<Sqlite>,
    /// Put back after its last group at.
    used: std::time::Instant,
}

/// A write through sqlx waiting for the write connection ([`Kept::want`]); dropped once it
/// has it (or gave up).
struct Wanted<'a>(&'a Kept);

impl Drop for Wanted<'_> {
    fn drop(&mut self) {
        self.0.slot().wanted -= 1;
    }
}

impl Kept {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The kept connection, or the pool's (waiting in line for it) when none is kept or a
    /// write through sqlx waits for it.
    async fn take(
        &self,
        pool: &SqlitePool,
    ) -> std::result::Result<sqlx::pool::PoolConnection<Sqlite>, sqlx::Error> {
        let held = self.slot().held.take();
        if let Some(h) = held {
            return Ok(h.conn);
        }
        pool.acquire().await
    }

    /// The pool's connection for one step of a fold: asked for as a write through sqlx
    /// asks ([`Kept::want`]), so that the lane's group in progress gives it up at its end.
    /// The step then drops it (back to its pool), and the groups that waited meanwhile
    /// have it before the fold's next step.
    async fn take_turn(
        &self,
        pool: &SqlitePool,
    ) -> std::result::Result<sqlx::pool::PoolConnection<Sqlite>, sqlx::Error> {
        let _wanted = self.want();
        pool.acquire().await
    }

    /// Keeps `conn` for the next group, unless a write through sqlx waits for it: then it
    /// goes back to its pool.
    fn put(&self, conn: sqlx::pool::PoolConnection<Sqlite>) {
        let mut slot = self.slot();
        if slot.wanted > 0 {
            drop(slot);
            drop(conn);
            return;
        }
        let before = slot.held.replace(Held {
            conn,
            used: std::time::Instant::now(),
        });
        drop(slot);
        drop(before);
        self.put.notify_one();
    }

    /// Says that a write through sqlx is about to wait for the pool's connection: the
    /// kept one goes back to the pool now, and none is kept until the returned guard is
    /// dropped (once the write has its connection).
    fn want(&self) -> Wanted<'_> {
        let mut slot = self.slot();
        slot.wanted += 1;
        let held = slot.held.take();
        drop(slot);
        drop(held);
        Wanted(self)
    }

    /// The kept connection goes back to its pool now.
    fn release(&self) {
        let held = self.slot().held.take();
        drop(held);
    }
}

/// Hands the kept connection back to its pool once it has sat unused for [`KEEP_UNUSED`].
/// Stops once the store is gone or its write pool closed.
async fn release_unused(kept: std::sync::Arc<Kept>, write: SqlitePool, alive: std::sync::Weak<()>) {
    loop {
        tokio::select! {
            _ = kept.put.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                if alive.upgrade().is_none() || write.is_closed() {
                    kept.release();
                    return;
                }
                continue;
            }
        }
        loop {
            tokio::time::sleep(KEEP_UNUSED).await;
            let mut slot = kept.slot();
            match &slot.held {
                None => break,
                Some(h) if h.used.elapsed() >= KEEP_UNUSED => {
                    let held = slot.held.take();
                    drop(slot);
                    drop(held);
                    break;
                }
                Some(_) => {}
            }
        }
    }
}

/// The [`Store`](crate::Store) on SQLite.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    /// Reads: read-only connections (a file), or the one connection (in memory).
    pool: SqlitePool,
    /// Every write: one connection.
    write: SqlitePool,
    /// The thread on which groups (all but a match's finish) and folds use that connection's handle.
    lane: raw::Lane,
    /// `write`'s connection between the lane's groups (a file only).
    kept: std::sync::Arc<Kept>,
    /// The database file, which folds read outside the write lock; `None` for
    /// `sqlite::memory:`, where `pool` and `write` are the one connection that holds the
    /// data.
    file: Option<std::path::PathBuf>,
    /// The connection of the checkpointer task ([`checkpoints`]), closed first by
    /// [`Self::close`] (a file database only).
    checkpointer: Option<SqlitePool>,
    /// Held by every clone: the checkpointer task stops once the last clone is gone, if
    /// the store was never closed.
    _alive: std::sync::Arc<()>,
}

/// Pool options for every pool of the store. sqlx pings a connection before handing it
/// out, by default: for a SQLite file that checks nothing a query would not (the
/// connection's thread is alive), and costs a hand-off to that thread and back before
/// every write group and every read. Without it, 500 tables at a human pace: the move
/// acknowledged in 0.70 ms instead of 0.80-0.86 ms on average, 500 µs of server CPU per
/// move instead of 560-590 (docs/performance.md).
fn pool_options() -> SqlitePoolOptions {
    SqlitePoolOptions::new().test_before_acquire(false)
}

/// The database file a `sqlite:` URL names, read as [`SqliteStore::connect`] reads it;
/// `None` for an in-memory database, another backend, or a URL that does not parse.
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    if !url.starts_with("sqlite:") || in_memory(url) {
        return None;
    }
    let options = SqliteConnectOptions::from_str(url).ok()?;
    Some(options.get_filename().to_path_buf())
}

/// Whether a `sqlite:` URL names an in-memory database.
fn in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

impl SqliteStore {
    /// Opens `sqlite://PATH` (creating the file and its parent directory if missing) or
    /// `sqlite::memory:`, and applies the migrations in `migrations/sqlite`.
    pub async fn connect(url: &str) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        if in_memory(url) {
            // An in-memory database lives as long as one connection to it: keep exactly
            // one, forever, so every query sees the same database.
            let pool = pool_options()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .acquire_timeout(WRITE_ACQUIRE_TIMEOUT)
                .connect_with(options)
                .await?;
            sqlx::migrate!("../../migrations/sqlite")
                .set_ignore_missing(true)
                .run(&pool)
                .await?;
            let alive = std::sync::Arc::new(());
            let lane = raw::Lane::start(None).map_err(sqlx::Error::Io)?;
            let kept = std::sync::Arc::new(Kept::default());
            tokio::spawn(folds(
                lane.clone(),
                pool.clone(),
                pool.clone(),
                kept.clone(),
                None,
                std::sync::Arc::downgrade(&alive),
            ));
            let store = Self {
                pool: pool.clone(),
                write: pool,
                lane,
                kept,
                file: None,
                checkpointer: None,
                _alive: alive,
            };
            crate::Store::rerate(&store, false).await?;
            return Ok(store);
        }
        let write_options = options
            .clone()
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            // A statement of many rows inside a transaction keeps an undo journal of its
            // own (in case it fails half-way): in memory, not in a temporary file.
            .pragma("temp_store", "memory")
            // 64 MiB of page cache (2 MiB by default): the pages a fold writes, one or a few
            // per table, are then found in memory rather than read back from the file.
            .pragma("cache_size", "-65536")
            // The WAL is copied into the database by another connection ([`checkpoints`]),
            // not by whichever commit crosses the threshold; this only bounds the WAL
            // should that task ever stop.
            .pragma("wal_autocheckpoint", CHECKPOINT_FALLBACK_PAGES);
        // The lane's own connection opens the same file ([`raw::Lane`]).
        let file = write_options.get_filename().to_path_buf();
        if let Some(dir) = file.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(sqlx::Error::Io)?;
        }
        // The write connection stays open for the store's life: it also keeps the WAL's
        // shared-memory file in place, which read-only connections cannot create.
        let write = pool_options()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(WRITE_ACQUIRE_TIMEOUT)
            .acquire_slow_threshold(WRITE_ACQUIRE_SLOW)
            .connect_with(write_options)
            .await?;
        // A file a newer version already migrated is fine (see `postgres::connect`).
        sqlx::migrate!("../../migrations/sqlite")
            .set_ignore_missing(true)
            .run(&write)
            .await?;
        // The journal mode is a property of the file, set by the writer above.
        let pool = pool_options()
            .max_connections(READ_CONNECTIONS)
            .connect_with(options.clone().read_only(true))
            .await?;
        let alive = std::sync::Arc::new(());
        let checkpointer = pool_options()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
            .await?;
        tokio::spawn(checkpoints(
            checkpointer.clone(),
            std::sync::Arc::downgrade(&alive),
        ));
        // What a crash left in the journal goes to the clustered log before anything else.
        let lane = raw::Lane::start(Some(file.clone())).map_err(sqlx::Error::Io)?;
        let kept = std::sync::Arc::new(Kept::default());
        fold(&lane, &write, &kept, Some(&file), true).await?;
        // The folder runs on the write thread's runtime, where the writer's task runs: a
        // step of a fold holds the write connection from its turn until its task drops it,
        // and on the caller's runtime each of those hand-offs waited behind the tables'
        // tasks while the writer's groups waited for the connection (docs/performance.md).
        lane.spawn(folds(
            lane.clone(),
            pool.clone(),
            write.clone(),
            kept.clone(),
            Some(file.clone()),
            std::sync::Arc::downgrade(&alive),
        ));
        tokio::spawn(release_unused(
            kept.clone(),
            write.clone(),
            std::sync::Arc::downgrade(&alive),
        ));
        let store = Self {
            pool,
            write,
            lane,
            kept,
            file: Some(file),
            checkpointer: Some(checkpointer),
            _alive: alive,
        };
        // Ratings computed under other rules are rebuilt from the history.
        crate::Store::rerate(&store, false).await?;
        Ok(store)
    }

    /// Closes the pools, waiting for connections in use (the checkpointer's task ends with
    /// its pool); the writer closes last, so that it checkpoints the WAL into the database
    /// file and removes it (SQLite does that when the file's last connection closes).
    pub async fn close(&self) {
        if let Some(c) = &self.checkpointer {
            c.close().await;
        }
        // The journal into the clustered log, so that the file a tool opens next has it all
        // in one place (the `actions` view would show it anyway).
        if let Err(e) = fold(
            &self.lane,
            &self.write,
            &self.kept,
            self.file.as_deref(),
            true,
        )
        .await
        {
            tracing::warn!("folding the action journal at close: {e}");
        }
        // Back to its pool, which waits for it as it closes.
        self.kept.release();
        self.pool.close().await;
        // The lane's connection before the pool's, which is then the file's last.
        self.lane.close().await;
        self.write.close().await;
    }

    /// The clock leases are measured on, in Unix ms (one node, so its own).
    const NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";

    /// [`common::SELECT_TABLE`] with `updated_at` as migration 0014 defines it: the later of
    /// the column and the table's newest action (a group of plain actions writes only the latter).
    const SELECT_TABLE: &str = "SELECT id, game, options, rules_version, seat_count, \
         private, invite_code, created_by, created_at, status, bots, daily, pace, clock, \
         MAX(updated_at, COALESCE((SELECT h.at FROM action_heads h \
                                   WHERE h.table_id = game_tables.id), updated_at)) \
         FROM game_tables WHERE id = $1";

    /// [`common::PLAYER_MATCHES`] with `updated_at` as in [`Self::SELECT_TABLE`].
    const PLAYER_MATCHES: &str = "\
        SELECT id, game, status, seat, score, won, created_at, updated_at, private FROM ( \
          SELECT t.id, t.game, t.status, s.seat, s.score, s.won, t.created_at, \
                 MAX(t.updated_at, COALESCE((SELECT h.at FROM action_heads h \
                                             WHERE h.table_id = t.id), t.updated_at)) \
                   AS updated_at, \
                 t.private \
          FROM table_seats s \
          JOIN game_tables t ON t.id = s.table_id \
          WHERE s.player_id = $1 AND s.kind = 'player') \
        ORDER BY CASE WHEN status IN ('open', 'playing') THEN 0 ELSE 1 END, \
                 updated_at DESC, id ASC \
        LIMIT $2";

    const MATCH_SEATS: &str = common::MATCH_SEATS;

    /// No row locks in SQLite: the write lock is the whole database's.
    const SKIP_LOCKED: &str = "";

    /// One node: nobody else to tell.
    async fn notify_on(&self, _channel: &str, _payloads: &[String]) -> Result<()> {
        Ok(())
    }

    async fn listen_on(
        &self,
        _channels: &[&str],
    ) -> Result<Option<tokio::sync::mpsc::Receiver<crate::Notice>>> {
        Ok(None)
    }

    /// One node: it always holds every lock.
    async fn exclusive_on(&self, _key: i64) -> Result<Option<crate::Exclusive>> {
        Ok(Some(crate::Exclusive(None)))
    }

    /// Refuses the group ([`crate::StoreError::Fenced`]) if one of its tables moved to
    /// another epoch. The transaction holds the write lock since its BEGIN, so no claim
    /// can come between this check and the commit.
    async fn write_fence(conn: &mut SqliteConnection, plan: &Plan<'_>) -> Result<()> {
        if plan.fences.is_empty() {
            return Ok(());
        }
        let stale: Option<(String, i64, i64)> = sqlx::query_as(FENCE)
            .bind(json(&plan.fences)?)
            .fetch_optional(&mut *conn)
            .await?;
        match stale {
            Some((table, at, held)) => Err(crate::StoreError::Fenced(format!(
                "table {table} is at epoch {at}, the write holds epoch {held}"
            ))),
            None => Ok(()),
        }
    }

    /// See `impl_store!`: the whole transaction in one visit to the write connection's
    /// thread, as prepared statements with bound values ([`raw`]), instead of calls
    /// through sqlx, each a hand-off to that thread and back, or a script whose rows SQLite
    /// parses from JSON arrays (docs/performance.md).
    ///
    /// The group runs on a blocking thread that the caller cannot cancel (the writer gives
    /// up on an attempt after a while), so that its transaction always ends, committed or
    /// rolled back, before the connection serves anything else; a connection that cannot
    /// roll back is closed (a file's pool opens another).
    async fn write_plain(&self, plan: &Plan<'_>) -> Result<()> {
        let (rows, heads) = Self::rows_and_heads(plan)?;
        let conn = self.take_write().await?;
        // In memory, the connection is the database: closing it would lose everything.
        let (done, conn) = raw::write_group(
            &self.lane,
            conn,
            rows,
            heads,
            plan.fences.clone(),
            self.file.is_some(),
        )
        .await;
        self.keep_write(conn);
        done.map_err(|e| e.into_store(|| plan.missing_round()))
    }

    /// Runs `write`, a write through sqlx of the store's own (`impl_store!`), on the write
    /// thread's runtime (a file), where the writer's task runs. Such a write takes the one
    /// write connection from the writer's groups ([`Kept::want`]) for all its statements,
    /// each a hand-off to sqlx's thread and back to the task: on the caller's runtime the
    /// task waited for its turn behind the tables' tasks at each of them, while the groups
    /// waited for the connection. At 256 tables flat out, the table each finished match
    /// opens cost the writer 12-18 % of its time that way (docs/performance.md). The write
    /// runs to its end even if the caller stops waiting for it.
    async fn serially<T, W>(&self, write: impl FnOnce(Self) -> W) -> Result<T, crate::StoreError>
    where
        T: Send + 'static,
        W: std::future::Future<Output = Result<T, crate::StoreError>> + Send + 'static,
    {
        let store = self.clone();
        let home = match self.lane.writer_home() {
            Some(home) if !self.lane.here() => home,
            _ => return write(store).await,
        };
        match home.spawn(write(store)).await {
            Ok(done) => done,
            Err(e) if e.is_panic() => Err(crate::StoreError::Panicked(format!("{e}"))),
            Err(_) => Err(raw::thread_gone()),
        }
    }

    /// See [`crate::Store::writer_runtime`]: a file's lane ([`raw::Lane::writer_home`]).
    fn writer_runtime(&self) -> Option<tokio::runtime::Handle> {
        self.lane.writer_home()
    }

    /// See [`crate::Store::apart`]: a unit that finishes a match. Its ratings are written
    /// through sqlx ([`Self::write_mixed`] gives such a group up), a hand-off to sqlx's
    /// thread and back per statement, and the group's actions with them through the
    /// `actions` view's trigger; at 256 tables flat out, the 1 % of groups holding one
    /// took 15 % of the writer's time (docs/performance.md). Apart, the rest of the group
    /// goes the direct way.
    fn apart(&self, unit: &crate::TableWrite) -> bool {
        unit.ops
            .iter()
            .any(|op| matches!(op, crate::WriteOp::FinishMatch { .. }))
    }

    /// The write connection for a group of the lane's: the one kept since the last group
    /// ([`Kept`]), or the pool's.
    async fn take_write(&self) -> Result<sqlx::pool::PoolConnection<Sqlite>> {
        if self.file.is_none() {
            return Ok(self.write.acquire().await?);
        }
        Ok(self.kept.take(&self.write).await?)
    }

    /// The write connection for one write through sqlx (`impl_store!`), once the lane
    /// lets go of it ([`Kept::want`]).
    async fn write_conn(&self) -> Result<sqlx::pool::PoolConnection<Sqlite>> {
        let _wanted = self.kept.want();
        Ok(self.write.acquire().await?)
    }

    /// After a group of the lane's: its connection kept for the next (a file), or back to
    /// its pool (in memory; or none, closed after a failed rollback).
    fn keep_write(&self, conn: Option<sqlx::pool::PoolConnection<Sqlite>>) {
        if let Some(conn) = conn
            && self.file.is_some()
        {
            self.kept.put(conn);
        }
    }

    /// A group's actions as the journal's rows, and each table's first and last action of
    /// the group: the first must come after the table's head, the last becomes it. Within
    /// the group, each table's actions must follow one another, which is checked here.
    fn rows_and_heads(plan: &Plan<'_>) -> Result<(Vec<raw::Row>, Vec<raw::Head>)> {
        let mut heads: std::collections::BTreeMap<&str, raw::Head> =
            std::collections::BTreeMap::new();
        let mut rows = Vec::with_capacity(plan.appends.len());
        for a in &plan.appends {
            let at = (a.action.round_no, a.action.seq);
            match heads.get_mut(a.key.as_str()) {
                None => {
                    let head = raw::Head {
                        table: a.key.clone(),
                        first: at,
                        last: at,
                        at: a.now,
                    };
                    heads.insert(&a.key, head);
                }
                Some(h) if h.last < at => (h.last, h.at) = (at, a.now),
                Some(h) => {
                    return Err(crate::StoreError::Conflict(format!(
                        "duplicate action of table {}: round {} seq {} after round {} seq {}",
                        a.key, at.0, at.1, h.last.0, h.last.1
                    )));
                }
            }
            rows.push(raw::Row {
                table: a.key.clone(),
                round_no: a.action.round_no,
                seq: a.action.seq,
                seat: a.action.seat,
                action: a.action.action.to_string(),
                at: a.now,
            });
        }
        Ok((rows, heads.into_values().collect()))
    }

    /// See `impl_store!`: a group with steps (a round's end or start, a seat, the status,
    /// the clock, an abandon, a chat line) in one visit to the write connection's handle,
    /// like a group of plain actions ([`raw::write_mixed`]), instead of a hand-off to sqlx's
    /// thread and back per statement and its actions through the `actions` view's trigger.
    /// `None` for a group that finishes a match: its ratings are written through sqlx
    /// (`rate`), so that group goes that way whole.
    async fn write_mixed(&self, plan: &Plan<'_>) -> Option<Result<()>> {
        let steps: Vec<raw::Step> = plan
            .steps
            .iter()
            .map(|s| match s.op {
                crate::WriteOp::FinishMatch { .. } | crate::WriteOp::AppendAction(_) => None,
                op => Some(raw::Step {
                    table: s.table,
                    key: s.key.clone(),
                    now: s.now,
                    op: op.clone(),
                }),
            })
            .collect::<Option<_>>()?;
        Some(self.write_steps(plan, steps).await)
    }

    async fn write_steps(&self, plan: &Plan<'_>, steps: Vec<raw::Step>) -> Result<()> {
        let (rows, heads) = Self::rows_and_heads(plan)?;
        // The tables a step touched (a chat line touches none); a table's actions alone
        // move its head, which reads take for its time.
        let mut stepped: Vec<&str> = steps
            .iter()
            .filter(|s| !matches!(s.op, crate::WriteOp::Chat(_)))
            .map(|s| s.key.as_str())
            .collect();
        stepped.sort_unstable();
        stepped.dedup();
        let touches = plan
            .touches
            .iter()
            .filter(|(t, _)| stepped.binary_search(&t.as_str()).is_ok())
            .cloned()
            .collect();
        let group = raw::Mixed {
            steps,
            rows,
            heads,
            fences: plan.fences.clone(),
            touches,
            ended: plan.ended().map(str::to_string).collect(),
        };
        let conn = self.take_write().await?;
        let (done, conn) = raw::write_mixed(&self.lane, conn, group, self.file.is_some()).await;
        self.keep_write(conn);
        done.map_err(|e| e.into_store(|| plan.missing_round()))
    }

    /// What `impl_store!` appends to a read it must keep until its commit: nothing, since
    /// every write transaction holds SQLite's one write lock from its start.
    const LOCK: &str = "";

    /// What `impl_store!` runs (`$1`: the table) where a table ends, finished or abandoned:
    /// its head's time folded into `updated_at`, and its head deleted (migration 0022), so
    /// that `action_heads` holds the tables in play only. [`raw`] runs the same.
    const RETIRE_HEAD: &[&str] = RETIRE_HEAD;

    /// The next number of the order of finishes (migration 0013): the largest so far plus
    /// one, which no other transaction can take meanwhile, as this one holds the write lock.
    const NEXT_FINISH_SEQ: &str = "SELECT COALESCE(MAX(finish_seq), 0) + 1 FROM game_tables";

    /// A write transaction on the write connection, holding SQLite's write lock from its
    /// first statement.
    async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>> {
        let _wanted = self.kept.want();
        match self.write.begin_with("BEGIN IMMEDIATE").await {
            // A transaction SQLite ended by itself (a full disk, an I/O error: it rolls
            // back on its own) leaves sqlx counting one open transaction on the connection,
            // as its own rollback then fails; every later begin on it is refused, and the
            // store wrote nothing more until a restart (a walk filled the disk once). The
            // write connection is closed and a fresh one opened in its place.
            Err(sqlx::Error::InvalidSavePointStatement) => {
                tracing::warn!(
                    "the SQLite write connection was left inside a transaction SQLite had \
                     already rolled back (a failed write): opening a fresh one"
                );
                if let Ok(conn) = self.write.acquire().await {
                    let _ = conn.close().await;
                }
                Ok(self.write.begin_with("BEGIN IMMEDIATE").await?)
            }
            tx => Ok(tx?),
        }
    }

    /// A group's actions, then its touched tables, each in one statement that reads its
    /// rows from a JSON array ([`APPEND`], [`TOUCH`]). A statement costs no network round
    /// trip here, but each is a message to sqlx's connection thread and back: one per row
    /// made a group of 500 actions take ten times longer.
    async fn write_tail(conn: &mut SqliteConnection, plan: &Plan<'_>) -> Result<()> {
        if !plan.appends.is_empty() {
            sqlx::query(APPEND)
                .bind(json(&Self::append_rows(plan))?)
                .execute(&mut *conn)
                .await
                .map_err(|e| common::fk_as_not_found(e, || plan.missing_round()))?;
        }
        sqlx::query(TOUCH)
            .bind(json(&plan.touches)?)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}

impl SqliteStore {
    /// The rows [`APPEND`] reads.
    #[allow(clippy::type_complexity)]
    fn append_rows<'p>(plan: &'p Plan<'_>) -> Vec<(&'p String, i32, i64, i32, String, i64)> {
        plan.appends
            .iter()
            .map(|a| {
                let action = a.action.action.to_string();
                (
                    &a.key,
                    a.action.round_no,
                    a.action.seq,
                    a.action.seat,
                    action,
                    a.now,
                )
            })
            .collect()
    }
}

/// Appends (through `actions`' trigger, into the journal) the actions of `$1`, a JSON array of `[table, round, seq, seat, action text,
/// Unix ms]` rows, in order. `->>` gives SQL values: integers stay integers, and a JSON
/// string gives back exactly the text that was put in.
const APPEND: &str = "INSERT INTO actions (table_id, round_no, seq, seat, action, created_at) \
     SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 \
     FROM json_each($1)";

/// See `SqliteStore::RETIRE_HEAD`. `MAX` of SQLite is NULL where an argument is: a table
/// without a head keeps its `updated_at`.
pub(crate) const RETIRE_HEAD: &[&str] = &[
    "UPDATE game_tables SET updated_at = MAX(updated_at, COALESCE((SELECT h.at \
     FROM action_heads h WHERE h.table_id = $1), updated_at)) WHERE id = $1",
    "DELETE FROM action_heads WHERE table_id = $1",
];

/// Sets `updated_at` of the tables of `$1`, a JSON array of `[table, Unix ms]` rows; the
/// plan reads the array once and finds each table by its key.
const TOUCH: &str = "UPDATE game_tables SET updated_at = touched.value ->> 1 \
     FROM json_each($1) AS touched WHERE game_tables.id = touched.value ->> 0";

/// The first table of `$1` (a JSON array of `[table, epoch]`) whose epoch is not the one
/// the group holds.
const FENCE: &str = "SELECT g.id, g.lease_epoch, f.value ->> 1 FROM json_each($1) AS f \
     JOIN game_tables g ON g.id = f.value ->> 0 WHERE g.lease_epoch <> f.value ->> 1 LIMIT 1";

fn json(rows: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(rows).map_err(|e| crate::StoreError::Corrupt(format!("group rows: {e}")))
}

crate::common::impl_store!(SqliteStore, SqliteConnection, "sqlite");

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings durability depends on, as the write connection sees them, and reads
    /// that cannot write.
    #[tokio::test]
    async fn file_database_is_wal_fsynced_with_foreign_keys() {
        let dir = std::env::temp_dir().join(format!("fib-store-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/new/fib.db", dir.display());
        let store = SqliteStore::connect(&url).await.unwrap();
        let (journal,): (String,) = sqlx::query_as("PRAGMA journal_mode")
            .fetch_one(&store.write)
            .await
            .unwrap();
        let (sync, fk): (i64, i64) = sqlx::query_as(
            "SELECT synchronous, foreign_keys FROM pragma_synchronous, pragma_foreign_keys",
        )
        .fetch_one(&store.write)
        .await
        .unwrap();
        assert_eq!(journal, "wal");
        assert_eq!(sync, 2, "synchronous=FULL");
        assert_eq!(fk, 1, "foreign_keys=ON");
        assert_eq!(store.write.options().get_max_connections(), 1, "one writer");
        let (journal,): (String,) = sqlx::query_as("PRAGMA journal_mode")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(journal, "wal");
        let refused = sqlx::query("DELETE FROM players")
            .execute(&store.pool)
            .await
            .expect_err("the read pool is read-only");
        assert!(refused.to_string().contains("readonly"), "{refused}");
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The store's write thread writes a file through a connection of its own, with the
    /// settings durability depends on; in memory it borrows the one connection. Closing
    /// the store closes both, the pool's last: the WAL is then checkpointed and removed.
    #[tokio::test]
    async fn the_write_thread_has_its_own_durable_connection_to_a_file() {
        /// The write thread's connection's settings, `probe` made on the pool's first.
        async fn lane_settings(store: &SqliteStore) -> (String, i64, i64, i64, bool) {
            let mut conn = store.write.acquire().await.unwrap();
            sqlx::query("CREATE TEMP TABLE probe (x)")
                .execute(&mut *conn)
                .await
                .unwrap();
            raw::settings(&store.lane, conn)
                .await
                .unwrap_or_else(|_| panic!("the lane answers"))
        }
        let (store, _url, dir) = file_store().await;
        let got = lane_settings(&store).await;
        assert_eq!(got, ("wal".into(), 2, 1, 10_000, false));
        // What it writes is there for every other connection.
        let table = playing_table(&store, 1).await;
        use crate::Store;
        store.write_group(&[act(table, 0, 0, 5)]).await.unwrap();
        assert_eq!(log_of(&store, table).await.0, vec![(0, 0)]);
        store.close().await;
        assert!(
            !dir.join("fib.db-wal").exists(),
            "the WAL is removed at close"
        );
        std::fs::remove_dir_all(dir).unwrap();

        let memory = SqliteStore::connect("sqlite::memory:").await.unwrap();
        let got = lane_settings(&memory).await;
        assert!(got.4, "in memory, the pool's one connection is borrowed");
    }

    /// A write SQLite ends by itself (a full disk: it rolls the transaction back on its
    /// own) must not leave the write connection refusing every later transaction (sqlx
    /// then still counts the transaction as open): once there is room again, writes go on.
    /// The disk is "full" here by `max_page_count`, which is the connection's own setting.
    #[tokio::test]
    async fn a_full_disk_does_not_stop_the_writes_after_it() {
        use crate::Store;
        let (store, _url, dir) = file_store().await;
        let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count")
            .fetch_one(&store.write)
            .await
            .unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "PRAGMA max_page_count = {pages}"
        )))
        .execute(&store.write)
        .await
        .unwrap();
        let mut full = None;
        for _ in 0..500 {
            let mut table = trump_table();
            table.options = serde_json::json!({"padding": "x".repeat(2000)});
            if let Err(e) = store.create_table(&table, &two_bots()).await {
                full = Some(e);
                break;
            }
        }
        let full = full.expect("the database filled up");
        assert!(full.to_string().contains("full"), "{full}");
        // Room again (on the connection that failed, should it still be the one).
        sqlx::query("PRAGMA max_page_count = 1073741823")
            .execute(&store.write)
            .await
            .unwrap();
        let table = trump_table();
        store
            .create_table(&table, &two_bots())
            .await
            .expect("a write after the full disk");
        assert!(store.load_table(table.id).await.unwrap().is_some());
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The write connection stays with the lane from one group to the next, gives way at
    /// once to a write through sqlx (which would otherwise wait on a busy server for as
    /// long as groups keep coming), and goes back to its pool once unused.
    #[tokio::test]
    async fn the_lane_keeps_the_write_connection_and_gives_way_to_sqlx() {
        use crate::Store;
        let (store, _url, dir) = file_store().await;
        let table = playing_table(&store, 1).await;
        store.write_group(&[act(table, 0, 0, 1)]).await.unwrap();
        assert!(store.kept.slot().held.is_some(), "kept after a group");
        // Taken again by the next group, and put back.
        store.write_group(&[act(table, 0, 1, 2)]).await.unwrap();
        assert!(store.kept.slot().held.is_some());
        assert_eq!(store.write.num_idle(), 0, "not in its pool meanwhile");

        // Groups back to back on one task, a write through sqlx on another: the sqlx
        // write is served between two groups (the pool's queue), not after all of them.
        let groups = {
            let store = store.clone();
            tokio::spawn(async move {
                for seq in 2..400 {
                    store
                        .write_group(&[act(table, 0, seq, 10 + seq)])
                        .await
                        .unwrap();
                }
            })
        };
        let started = std::time::Instant::now();
        while store.kept.slot().held.is_none() && started.elapsed() < Duration::from_secs(5) {
            tokio::task::yield_now().await;
        }
        let id = uuid::Uuid::new_v4();
        let wrote = tokio::time::timeout(
            Duration::from_secs(20),
            store.create_player(id, "sqlx-write", "hash", "guest", 0),
        )
        .await
        .expect("a write through sqlx is served while groups keep coming");
        wrote.unwrap();
        assert!(
            !groups.is_finished(),
            "the sqlx write got the connection before the groups were done"
        );
        groups.await.unwrap();
        assert_eq!(log_of(&store, table).await.0.len(), 400);
        assert_eq!(store.kept.slot().wanted, 0, "nothing waits any more");

        // Unused, it goes back to its pool: a plain acquire gets it.
        let conn = tokio::time::timeout(Duration::from_secs(5), store.write.acquire())
            .await
            .expect("the kept connection went back to its pool")
            .unwrap();
        drop(conn);
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A fold reads the journal outside the write lock, then writes what it read in steps:
    /// if another fold went through meanwhile, every later step of this one is refused and
    /// changes nothing.
    #[tokio::test]
    async fn a_fold_of_rows_folded_meanwhile_changes_nothing() {
        use crate::Store;
        let (store, _url, dir) = file_store().await;
        let table = playing_table(&store, 1).await;
        for seq in 0..3 {
            store
                .write_group(&[act(table, 0, seq, 10 + seq)])
                .await
                .unwrap();
        }
        let file = store.file.clone().unwrap();
        let Ok(raw::Journal {
            chunks: Some(stale),
            ..
        }) = raw::read_journal(&file, FOLD_ROWS)
        else {
            panic!("the journal is read")
        };
        let stale = std::sync::Arc::new(stale);
        assert_eq!(
            fold(&store.lane, &store.write, &store.kept, Some(&file), true)
                .await
                .unwrap(),
            3
        );
        for seq in 3..6 {
            store
                .write_group(&[act(table, 0, seq, 10 + seq)])
                .await
                .unwrap();
        }
        assert_eq!(parts(&store).await, (3, 3));
        let conn = store.kept.take_turn(&store.write).await.unwrap();
        let (done, conn) =
            raw::fold_slice(&store.lane, conn, stale.clone(), 0, Duration::from_secs(1)).await;
        assert!(done.is_err(), "stale chunks are refused");
        let (done, conn) = raw::fold_flip(&store.lane, conn.unwrap(), stale).await;
        assert!(done.is_err(), "a stale flip is refused");
        drop(conn);
        assert_eq!(
            parts(&store).await,
            (3, 3),
            "the new rows are still in the journal, no chunk was added"
        );
        let want: Vec<(i32, i64)> = (0..6).map(|seq| (0, seq)).collect();
        assert_eq!(log_of(&store, table).await.0, want, "each action once");
        assert_eq!(
            fold(&store.lane, &store.write, &store.kept, Some(&file), true)
                .await
                .unwrap(),
            3
        );
        assert_eq!(log_of(&store, table).await.0, want);
        assert_eq!(
            parts(&store).await,
            (0, 6),
            "two chunks, six actions in all"
        );
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A file store's own writes through sqlx that a match's life makes (opening its
    /// table) run on the store's write thread ([`SqliteStore::serially`]), where the
    /// writer's task runs, and to their end even if the caller stops waiting; in memory,
    /// on the caller's task.
    #[tokio::test]
    async fn a_file_stores_table_opens_on_its_write_thread() {
        use crate::Store;
        let (store, _url, dir) = file_store().await;
        let memory = SqliteStore::connect("sqlite::memory:").await.unwrap();
        let thread =
            |_: SqliteStore| async { Ok(std::thread::current().name().map(str::to_string)) };
        let write_thread = Some("fib-sqlite-write".to_string());
        assert_eq!(store.serially(thread).await.unwrap(), write_thread);
        assert_ne!(memory.serially(thread).await.unwrap(), write_thread);
        // The caller gives up after the first poll (polled once, then dropped; a timeout
        // would poll it again as long as its timer has not fired, and the write may end
        // meanwhile): the table is opened all the same.
        let (table, seats) = (trump_table(), two_bots());
        let _ =
            futures_util::FutureExt::now_or_never(store.create_owned_table(&table, &seats, None));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while store.load_table(table.id).await.unwrap().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the table was never opened"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let opened = store.load_table(table.id).await.unwrap().unwrap();
        assert_eq!(opened.seats.len(), 2);
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A file store's writer task runs on the store's own write thread
    /// ([`crate::Store::writer_runtime`]), where its groups are written, in the batch
    /// scheduling class at nice 0 (`raw::batch_class`); in memory, on the caller's runtime.
    #[tokio::test]
    async fn a_file_stores_writer_runs_on_its_write_thread_in_the_batch_class() {
        use crate::{WriteObserver, Writer};
        /// The name of each thread that committed a group, and on Linux its nice value
        /// and scheduling policy.
        #[derive(Default)]
        #[allow(clippy::type_complexity)]
        struct Threads(std::sync::Mutex<Vec<(Option<String>, Option<Vec<i64>>)>>);
        impl WriteObserver for Threads {
            fn taken(&self, _: Duration) {}
            fn committed(&self, _: usize, _: Duration) {
                let name = std::thread::current().name().map(str::to_string);
                let class = raw::thread_stat(&[raw::NICE, raw::POLICY]);
                self.0.lock().unwrap().push((name, class));
            }
            fn retried(&self, _: &crate::StoreError) {}
            fn failed(&self, _: usize, _: &crate::StoreError) {}
        }
        let (store, _url, dir) = file_store().await;
        let memory = SqliteStore::connect("sqlite::memory:").await.unwrap();
        for (store, thread) in [(&store, Some("fib-sqlite-write")), (&memory, None)] {
            assert_eq!(store.writer_runtime().is_some(), thread.is_some());
            let table = playing_table(store, 1).await;
            let threads = std::sync::Arc::new(Threads::default());
            let writer = Writer::spawn(std::sync::Arc::new(store.clone()), threads.clone());
            writer.write(act(table, 0, 0, 10)).await.unwrap();
            let seen = threads.0.lock().unwrap().clone();
            let names: Vec<_> = seen.iter().map(|(name, _)| name.clone()).collect();
            match thread {
                Some(name) => {
                    assert_eq!(names, vec![Some(name.to_string())]);
                    // The write thread is in the batch class (3, `SCHED_BATCH`) unless the
                    // process runs at another nice value than 0 (then the normal one, 0).
                    if cfg!(target_os = "linux") {
                        let class = seen[0].1.clone().expect("the thread's stat");
                        let (nice, policy) = (class[0], class[1]);
                        assert_eq!(policy, if nice == 0 { 3 } else { 0 }, "nice {nice}");
                    }
                }
                None => assert_ne!(names, vec![Some("fib-sqlite-write".to_string())]),
            }
        }
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Migration 0021: a fold is steps in turn with the writer's groups (chunks in,
    /// invisible, a slice at a time; shown with their rows hidden, at once; the rows
    /// removed). After each step every action is read exactly once, a crash between any two
    /// leaves it so, and the next fold finishes the job.
    #[tokio::test]
    async fn every_step_of_a_fold_shows_each_action_once() {
        use crate::Store;
        let (store, url, dir) = file_store().await;
        let tables = [
            playing_table(&store, 1).await,
            playing_table(&store, 1).await,
            playing_table(&store, 1).await,
        ];
        for seq in 0..4 {
            for t in tables {
                store
                    .write_group(&[act(t, 0, seq, 10 + seq)])
                    .await
                    .unwrap();
            }
        }
        let want: Vec<(i32, i64)> = (0..4).map(|seq| (0, seq)).collect();
        let each_once = async |store: &SqliteStore, step: &str| {
            for t in tables {
                assert_eq!(log_of(store, t).await.0, want, "{step}: table {t}");
            }
        };
        let file = store.file.clone().unwrap();
        let chunks =
            std::sync::Arc::new(raw::read_journal(&file, FOLD_ROWS).unwrap().chunks.unwrap());
        assert_eq!((chunks.len(), chunks.moved, chunks.left), (3, 12, 0));
        // A slice of no time at all writes at least one chunk: three slices.
        let mut next = 0;
        for slice in 1..=3 {
            let conn = store.kept.take_turn(&store.write).await.unwrap();
            let (done, _) =
                raw::fold_slice(&store.lane, conn, chunks.clone(), next, Duration::ZERO).await;
            next = done.unwrap();
            assert_eq!(next, slice);
            assert_eq!(parts(&store).await, (12, 4 * slice as i64), "slice {slice}");
            each_once(&store, "invisible chunks").await;
        }
        let conn = store.kept.take_turn(&store.write).await.unwrap();
        raw::fold_flip(&store.lane, conn, chunks.clone())
            .await
            .0
            .unwrap();
        assert_eq!(
            parts(&store).await,
            (12, 12),
            "rows hidden, not removed yet"
        );
        each_once(&store, "shown and hidden").await;
        let conn = store.kept.take_turn(&store.write).await.unwrap();
        assert!(
            raw::fold_trim(&store.lane, conn, 5).await.0.unwrap(),
            "rows left"
        );
        assert_eq!(parts(&store).await, (7, 12));
        each_once(&store, "partly removed").await;
        // A "crash" here, with another fold half written: its chunks are invisible.
        store
            .write_group(&[act(tables[0], 0, 4, 20)])
            .await
            .unwrap();
        let half =
            std::sync::Arc::new(raw::read_journal(&file, FOLD_ROWS).unwrap().chunks.unwrap());
        assert_eq!((half.len(), half.moved), (1, 1));
        let conn = store.kept.take_turn(&store.write).await.unwrap();
        raw::fold_slice(&store.lane, conn, half, 0, Duration::ZERO)
            .await
            .0
            .unwrap();
        assert_eq!(parts(&store).await, (8, 13));
        drop(store);
        let store = SqliteStore::connect(&url).await.unwrap();
        assert_eq!(
            parts(&store).await,
            (0, 13),
            "the start folds it all: the hidden rows removed, the half fold's chunk replaced"
        );
        let mut first = want.clone();
        first.push((0, 4));
        assert_eq!(log_of(&store, tables[0]).await.0, first);
        for t in &tables[1..] {
            assert_eq!(log_of(&store, *t).await.0, want);
        }
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The folder's look at the journal: nothing when it is empty, else its length and its
    /// oldest row's time, also once its first rows were folded.
    #[tokio::test]
    async fn the_journals_span_is_its_length_and_oldest_time() {
        use crate::Store;
        let (store, _url, dir) = file_store().await;
        assert_eq!(journal_span(&store.pool).await.unwrap(), None);
        let table = playing_table(&store, 1).await;
        for seq in 0..3 {
            store
                .write_group(&[act(table, 0, seq, 100 + seq)])
                .await
                .unwrap();
        }
        assert_eq!(journal_span(&store.pool).await.unwrap(), Some((3, 100)));
        fold(
            &store.lane,
            &store.write,
            &store.kept,
            store.file.as_deref(),
            true,
        )
        .await
        .unwrap();
        assert_eq!(journal_span(&store.pool).await.unwrap(), None);
        store.write_group(&[act(table, 0, 3, 200)]).await.unwrap();
        store.write_group(&[act(table, 0, 4, 201)]).await.unwrap();
        assert_eq!(journal_span(&store.pool).await.unwrap(), Some((2, 200)));
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Commits do not checkpoint the WAL themselves (below the fallback size): the
    /// checkpointer task copies it into the database file on its own connection.
    #[tokio::test]
    async fn the_wal_is_checkpointed_by_its_own_task() {
        let dir = std::env::temp_dir().join(format!("fib-store-unit-{}", uuid::Uuid::new_v4()));
        let file = dir.join("fib.db");
        let store = SqliteStore::connect(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        let (pages,): (i64,) = sqlx::query_as("PRAGMA wal_autocheckpoint")
            .fetch_one(&store.write)
            .await
            .unwrap();
        assert_eq!(pages.to_string(), CHECKPOINT_FALLBACK_PAGES);
        // Let a checkpoint of the migrations pass, then write about 100 pages.
        tokio::time::sleep(CHECKPOINT_EVERY * 2).await;
        let before = std::fs::metadata(&file).unwrap().len();
        sqlx::raw_sql(
            "CREATE TABLE filler (x BLOB); \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) \
             INSERT INTO filler SELECT randomblob(4000) FROM n",
        )
        .execute(&store.write)
        .await
        .unwrap();
        let grown = async {
            while std::fs::metadata(&file).unwrap().len() < before + 100 * 4000 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(CHECKPOINT_EVERY * 25, grown)
            .await
            .expect("the rows reach the database file without a commit checkpointing");
        // Closed, the writer is the file's last connection: the WAL is folded in and gone.
        let wal = dir.join("fib.db-wal");
        assert!(wal.exists());
        store.close().await;
        assert!(!wal.exists(), "close leaves no WAL behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A group of plain actions whose caller stops waiting (the writer's attempt timed
    /// out) still ends its transaction: here the group is made to wait for the write lock
    /// another connection holds, its caller gives up meanwhile, and the lock is released.
    /// The group then commits whole, and later writes are not caught inside a transaction
    /// nobody commits (their rows are seen by the read pool).
    #[tokio::test]
    async fn a_plain_group_whose_caller_gives_up_still_ends_its_transaction() {
        use crate::{Store, TableStatus};
        use sqlx::Connection;
        let dir = std::env::temp_dir().join(format!("fib-store-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/fib.db", dir.display());
        let store = SqliteStore::connect(&url).await.unwrap();
        let table = playing_table(&store, 1).await;
        let act = |seq: i64| act(table, 0, seq, 10 + seq);
        // Another connection holds the write lock, as another process could.
        let mut other = SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut other)
            .await
            .unwrap();
        let gave_up =
            tokio::time::timeout(Duration::from_millis(300), store.write_group(&[act(0)])).await;
        assert!(gave_up.is_err(), "the group waits for the lock");
        sqlx::query("COMMIT").execute(&mut other).await.unwrap();
        // Later writes, through the same one write connection: committed and seen.
        store.write_group(&[act(1)]).await.unwrap();
        store
            .set_status(table, TableStatus::Finished, 20)
            .await
            .unwrap();
        let stored = store.load_table(table).await.unwrap().unwrap();
        assert_eq!(
            stored.actions.iter().map(|a| a.seq).collect::<Vec<_>>(),
            [0, 1],
            "the abandoned group committed whole, and the next one after it"
        );
        assert_eq!(stored.record.status, TableStatus::Finished);
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A write transaction holds the write lock from its start: another connection (as
    /// another process would) cannot write until it ends, however it begins.
    #[tokio::test]
    async fn write_transactions_begin_immediate() {
        use sqlx::Connection;
        let dir = std::env::temp_dir().join(format!("fib-store-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/fib.db", dir.display());
        let store = SqliteStore::connect(&url).await.unwrap();
        let tx = store.begin_write().await.unwrap();
        let options = SqliteConnectOptions::from_str(&url)
            .unwrap()
            .busy_timeout(Duration::ZERO);
        let mut other = SqliteConnection::connect_with(&options).await.unwrap();
        let busy = sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut other)
            .await
            .expect_err("the write lock is taken");
        assert!(crate::StoreError::from(busy).is_transient());
        tx.rollback().await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut other)
            .await
            .unwrap();
        sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
        other.close().await.unwrap();
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A playing table of two bots with rounds `0..rounds` started, for the tests here.
    async fn playing_table(store: &SqliteStore, rounds: i32) -> uuid::Uuid {
        use crate::{RoundRecord, Store};
        let table = trump_table();
        store.create_table(&table, &two_bots()).await.unwrap();
        for round_no in 0..rounds {
            let round = RoundRecord {
                round_no,
                seed_hex: format!("{:064x}", 0),
                commitment: format!("{:064x}", 1),
                started_at: 1,
                ended_at: None,
                result: None,
            };
            store.start_round(table.id, &round).await.unwrap();
        }
        table.id
    }

    /// A new table of Trump for two, playing.
    fn trump_table() -> crate::TableRecord {
        use crate::{TableRecord, TableStatus};
        TableRecord {
            id: uuid::Uuid::new_v4(),
            game: "trump".into(),
            options: serde_json::json!({}),
            rules_version: 1,
            seat_count: 2,
            private: false,
            invite_code: None,
            created_by: uuid::Uuid::new_v4(),
            created_at: 1,
            status: TableStatus::Playing,
            bots: None,
            daily: None,
            pace: serde_json::json!({"kind": "untimed"}),
            clock: None,
            updated_at: 1,
        }
    }

    /// Two seats of easy bots.
    fn two_bots() -> [crate::Occupant; 2] {
        let bot = || crate::Occupant::Bot {
            level: "easy".into(),
        };
        [bot(), bot()]
    }

    /// `seq`'s action in round `round_no` of `table`, as a unit of its own at `at` (ms).
    fn act(table: uuid::Uuid, round_no: i32, seq: i64, at: i64) -> crate::TableWrite {
        crate::TableWrite::one(
            table,
            at,
            crate::WriteOp::AppendAction(crate::ActionRecord {
                round_no,
                seq,
                seat: (seq % 2) as i32,
                action: serde_json::json!({"play": seq}),
            }),
        )
    }

    /// A fresh file store and its folder.
    async fn file_store() -> (SqliteStore, String, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("fib-store-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/fib.db", dir.display());
        (SqliteStore::connect(&url).await.unwrap(), url, dir)
    }

    /// Each table's actions as (round, seq), in log order, and its `updated_at`.
    async fn log_of(store: &SqliteStore, table: uuid::Uuid) -> (Vec<(i32, i64)>, i64) {
        use crate::Store;
        let stored = store.load_table(table).await.unwrap().unwrap();
        let got = stored.actions.iter().map(|a| (a.round_no, a.seq)).collect();
        (got, stored.record.updated_at)
    }

    /// Rows in (the journal, the clustered log).
    async fn parts(store: &SqliteStore) -> (i64, i64) {
        let count = |sql| async move {
            let (n,): (i64,) = sqlx::query_as(sql).fetch_one(&store.pool).await.unwrap();
            n
        };
        (
            count("SELECT COUNT(*) FROM action_journal").await,
            count(
                "SELECT (SELECT COUNT(*) FROM action_log) + \
                        (SELECT COUNT(*) FROM action_chunks, json_each(actions))",
            )
            .await,
        )
    }

    /// Migration 0022: the heads are those of the tables in play. A table that ends
    /// (finished, through the ratings' path or a status on the write thread's) leaves
    /// `action_heads` in the transaction that ends it, its head's time kept in
    /// `updated_at`; a table still playing keeps its head.
    #[tokio::test]
    async fn only_tables_in_play_keep_a_head() {
        use crate::{Store, TableStatus, WriteOp};
        let (store, _url, dir) = file_store().await;
        let heads = || async {
            let rows: Vec<(String,)> = sqlx::query_as("SELECT table_id FROM action_heads")
                .fetch_all(&store.pool)
                .await
                .unwrap();
            let mut ids: Vec<uuid::Uuid> = rows.iter().map(|(t,)| t.parse().unwrap()).collect();
            ids.sort();
            ids
        };
        let (finished, ended, playing) = (
            playing_table(&store, 1).await,
            playing_table(&store, 1).await,
            playing_table(&store, 1).await,
        );
        for t in [finished, ended, playing] {
            store.write_group(&[act(t, 0, 0, 10)]).await.unwrap();
        }
        let mut all = vec![finished, ended, playing];
        all.sort();
        assert_eq!(heads().await, all);
        let mut finish = act(finished, 0, 1, 20);
        finish.ops.push(WriteOp::FinishMatch {
            totals: vec![1, 0],
            winners: vec![0],
        });
        let mut end = act(ended, 0, 1, 30);
        end.ops.push(WriteOp::SetStatus(TableStatus::Finished));
        // Through sqlx whole (a finish), and on the write thread (a status with actions).
        store.write_group(&[finish]).await.unwrap();
        store
            .write_group(&[end, act(playing, 0, 1, 40)])
            .await
            .unwrap();
        assert_eq!(heads().await, vec![playing]);
        assert_eq!(log_of(&store, finished).await, (vec![(0, 0), (0, 1)], 20));
        assert_eq!(log_of(&store, ended).await, (vec![(0, 0), (0, 1)], 30));
        assert_eq!(log_of(&store, playing).await, (vec![(0, 0), (0, 1)], 40));
        // An action of an ended table is refused as a conflict that says so: on the write
        // thread's statements, and through the `actions` view's trigger (with a finish).
        let mut again = act(finished, 0, 1, 50);
        again.ops.push(WriteOp::FinishMatch {
            totals: vec![1, 0],
            winners: vec![0],
        });
        for (unit, says) in [
            (act(ended, 0, 2, 50), "has ended"),
            (again, "the table has ended"),
        ] {
            match store.write_group(&[unit]).await {
                Err(crate::StoreError::Conflict(e)) => assert!(e.contains(says), "{e}"),
                other => panic!("expected a conflict, got {other:?}"),
            }
        }
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Migration 0014: accepted actions land in the journal, every read sees them, the fold
    /// moves them into the clustered log without changing what is read, and what a crash
    /// leaves in the journal is read (and folded) by the next start.
    #[tokio::test]
    async fn the_action_journal_folds_into_the_log_and_survives_a_crash() {
        use crate::Store;
        let (store, url, dir) = file_store().await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(playing_table(&store, 2).await);
        }
        let at = |round_no: i32, seq: i64| 100 * round_no as i64 + seq;
        let a = |t: usize, round_no: i32, seq: i64| act(ids[t], round_no, seq, at(round_no, seq));
        // Two groups: the tables' actions interleaved, round 0 then round 1.
        let first: Vec<_> = (0..5)
            .flat_map(|q| (0..3).map(move |t| a(t, 0, q)))
            .collect();
        store.write_group(&first).await.unwrap();
        store
            .write_group(&[a(0, 1, 0), a(1, 1, 0), a(0, 1, 1)])
            .await
            .unwrap();
        // (The folder may have moved some already, if this test was slow.)
        let (journal, log) = parts(&store).await;
        assert_eq!(journal + log, 18, "the actions are stored once");
        let want = |t: usize| {
            let mut w: Vec<(i32, i64)> = (0..5).map(|q| (0, q)).collect();
            w.extend(match t {
                0 => vec![(1, 0), (1, 1)],
                1 => vec![(1, 0)],
                _ => vec![],
            });
            w
        };
        assert_eq!(
            log_of(&store, ids[0]).await,
            (want(0), 101),
            "read from the journal"
        );
        assert_eq!(log_of(&store, ids[2]).await, (want(2), 4));

        fold(
            &store.lane,
            &store.write,
            &store.kept,
            store.file.as_deref(),
            true,
        )
        .await
        .unwrap();
        assert_eq!(parts(&store).await, (0, 18), "all folded");
        for (t, &id) in ids.iter().enumerate() {
            assert_eq!(
                log_of(&store, id).await.0,
                want(t),
                "table {t} after the fold"
            );
        }
        assert_eq!(
            log_of(&store, ids[0]).await.1,
            101,
            "updated_at from the heads"
        );
        store.write_group(&[a(0, 1, 2)]).await.unwrap();

        // A "crash": the store is dropped without closing, its journal not folded.
        let (journal, log) = parts(&store).await;
        assert_eq!(journal + log, 19);
        drop(store);
        let store = SqliteStore::connect(&url).await.unwrap();
        assert_eq!(parts(&store).await, (0, 19), "folded at the start");
        let mut w = want(0);
        w.push((1, 2));
        assert_eq!(log_of(&store, ids[0]).await, (w, 102));
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Migration 0020: the fold's chunks give back every action as it was stored, whatever
    /// its JSON (a string, a number, an array, an object with a float), in order, across
    /// rounds, and in between folds alongside the journal's.
    #[tokio::test]
    async fn chunks_give_back_every_action_as_stored() {
        use crate::Store;
        let (store, _, dir) = file_store().await;
        let table = playing_table(&store, 2).await;
        // Now, so that the folder's task (which folds a journal row 30 s old) leaves the
        // journal to this test.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let values = [
            serde_json::json!("pass"),
            serde_json::json!(7),
            serde_json::json!([1, "r7", null, true]),
            serde_json::json!({"play": {"card": "g12", "at": 2.5}, "note": "a \"quoted\" é"}),
        ];
        let unit = |round_no: i32, seq: i64| {
            crate::TableWrite::one(
                table,
                now + seq,
                crate::WriteOp::AppendAction(crate::ActionRecord {
                    round_no,
                    seq,
                    seat: (seq % 2) as i32,
                    action: values[seq as usize % values.len()].clone(),
                }),
            )
        };
        let mut want = Vec::new();
        for (round_no, seqs) in [(0, 0..6), (1, 0..3)] {
            for seq in seqs {
                store.write_group(&[unit(round_no, seq)]).await.unwrap();
                want.push(unit(round_no, seq));
            }
            fold(
                &store.lane,
                &store.write,
                &store.kept,
                store.file.as_deref(),
                true,
            )
            .await
            .unwrap();
        }
        store.write_group(&[unit(1, 3)]).await.unwrap();
        want.push(unit(1, 3));
        assert_eq!(
            parts(&store).await,
            (1, 9),
            "one in the journal, the rest in chunks"
        );
        let stored = store.load_table(table).await.unwrap().unwrap().actions;
        let want: Vec<_> = want
            .into_iter()
            .map(|u| match u.ops.into_iter().next() {
                Some(crate::WriteOp::AppendAction(a)) => a,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(stored, want);
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Migration 0014's rule: a table's actions are appended in order, so an action at or
    /// before its table's head (a duplicate, or out of order) is refused, alone or in a
    /// group (where each table's actions must also follow one another), whether the head's
    /// action is still in the journal or folded; nothing of a refused group is stored.
    #[tokio::test]
    async fn an_action_at_or_before_its_tables_head_is_refused() {
        use crate::{Store, StoreError};
        let (store, _, dir) = file_store().await;
        let (t, u) = (
            playing_table(&store, 2).await,
            playing_table(&store, 2).await,
        );
        let group: Vec<_> = (0..5).map(|q| act(t, 0, q, q)).collect();
        store.write_group(&group).await.unwrap();
        store.write_group(&[act(u, 1, 0, 10)]).await.unwrap();
        for folded in [false, true] {
            for bad in [
                vec![act(t, 0, 4, 20)],
                vec![act(u, 0, 9, 20)],
                vec![act(t, 0, 5, 20), act(u, 1, 0, 20)],
                vec![act(t, 0, 6, 20), act(t, 0, 5, 20)],
            ] {
                match store.write_group(&bad).await {
                    Err(StoreError::Conflict(_)) => {}
                    other => panic!("folded {folded}: {bad:?}: {other:?}"),
                }
            }
            assert_eq!(
                log_of(&store, t).await.0,
                (0..5).map(|q| (0, q)).collect::<Vec<_>>()
            );
            assert_eq!(log_of(&store, u).await.0, [(1, 0)]);
            fold(
                &store.lane,
                &store.write,
                &store.kept,
                store.file.as_deref(),
                true,
            )
            .await
            .unwrap();
        }
        store.write_group(&[act(t, 1, 0, 30)]).await.unwrap();
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
}
