//! The single writer of a process: one task that commits every table's [`TableWrite`]s
//! in groups. It runs where the store writes when the store says so (a SQLite file's
//! write thread, [`Store::writer_runtime`]), else on the runtime that starts it.
//!
//! One transaction per action made commits the bottleneck: on SQLite each paid its own
//! fsync while the others queued for the write lock, on Postgres each paid several round
//! trips. The writer commits whatever has queued up while it was busy as one group
//! ([`Store::write_group`]): no timer, so a lone action is committed at once, and under
//! load the groups grow by themselves, one commit serving many actions.
//!
//! Failures are handled here so that table tasks need not: a transient error (busy, I/O,
//! lost connection, no answer in time) retries the same group with growing pauses until
//! a deadline; a broken rule (a duplicate action, an unknown round) would fail the whole
//! group, so the writer then commits its units one at a time and only the bad unit fails.
//!
//! A connection that breaks during a commit leaves its outcome unknown. Retrying such a
//! group that did commit fails on its own rows (a duplicate action, a round already
//! started or ended), so those units are answered `Conflict` although stored: a false
//! failure, never a write lost or applied twice (finishing a match twice rates nothing).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::{Result, Store, StoreError, TableWrite};

/// What a [`Writer`] reports, for metrics and logs. Called from the writer task: keep it
/// quick and never block.
pub trait WriteObserver: Send + Sync + 'static {
    /// A unit taken into a group, `waited` after it was queued: the part of a table's
    /// wait for its write spent behind the commit before.
    fn taken(&self, waited: Duration);
    /// One group made durable: `units` units, `took` from its first attempt to its
    /// commit (retries included, time in the queue not).
    fn committed(&self, units: usize, took: Duration);
    /// A transient failure; the same units are tried again after a pause.
    fn retried(&self, error: &StoreError);
    /// `units` units answered with `error`.
    fn failed(&self, units: usize, error: &StoreError);
    /// An attempt to commit begins (`true`) or has its answer (`false`). Between the two
    /// the writer may be stuck where no timeout of its own can end it: a SQLite file's
    /// writes run on the write thread itself, and a disk that stops answering (frozen,
    /// failing) holds that thread, timers included. Whoever observes can see from outside
    /// how long the commit in progress has taken (`/healthz`).
    fn attempting(&self, _now: bool) {}
}

/// Observes nothing.
impl WriteObserver for () {
    fn taken(&self, _: Duration) {}
    fn committed(&self, _: usize, _: Duration) {}
    fn retried(&self, _: &StoreError) {}
    fn failed(&self, _: usize, _: &StoreError) {}
}

/// Most units in one group: bounds a transaction's size and the work redone when a
/// broken rule makes the writer go one by one.
const MAX_GROUP: usize = 2048;
/// Units waiting for the writer before [`Writer::write`] waits for room.
const QUEUE_CAPACITY: usize = 8192;

/// The writer's timing, shortened by tests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_group: usize,
    pub queue: usize,
    /// First pause after a transient failure; doubles up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// How long after its oldest unit was queued a group (or, one by one, its units) may
    /// still be retried. Counted from the queue, not the first attempt, so that in an
    /// outage the units queued behind a group do not each wait a whole deadline more.
    pub deadline: Duration,
    /// How long one attempt may take before it counts as a transient failure: what makes
    /// a hung connection end in an answer.
    pub attempt_timeout: Duration,
}

impl Limits {
    const DEFAULT: Limits = Limits {
        max_group: MAX_GROUP,
        queue: QUEUE_CAPACITY,
        first_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(500),
        deadline: Duration::from_secs(30),
        // Above SQLite's busy timeout (10 s), which an attempt may spend waiting for
        // another process's write lock.
        attempt_timeout: Duration::from_secs(15),
    };
}

/// A unit and who waits for it.
struct Job {
    unit: TableWrite,
    reply: oneshot::Sender<Result<()>>,
    queued: Instant,
}

/// A handle on the process's writer task; clones share the task. The task ends once
/// every handle is dropped and the units already queued are answered.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::Sender<Job>,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("queued", &self.queued())
            .finish()
    }
}

impl Writer {
    /// Starts the writer task: on the store's own runtime if it has one
    /// ([`Store::writer_runtime`]), else on the current tokio runtime (panics outside one).
    pub fn spawn(store: Arc<dyn Store>, observer: Arc<dyn WriteObserver>) -> Writer {
        Self::spawn_with(store, observer, Limits::DEFAULT).0
    }

    pub(crate) fn spawn_with(
        store: Arc<dyn Store>,
        observer: Arc<dyn WriteObserver>,
        limits: Limits,
    ) -> (Writer, JoinHandle<()>) {
        let (queue, jobs) = mpsc::channel(limits.queue);
        // Where the store writes, if it has a thread of its own (a SQLite file): no
        // hand-off per group, and no wait behind the tables' tasks.
        let task = match store.writer_runtime() {
            Some(home) => home.spawn(run(store, observer, limits, jobs)),
            None => tokio::spawn(run(store, observer, limits, jobs)),
        };
        (Writer { queue }, task)
    }

    /// Resolves once `unit` is durable (or failed for good). Never waits forever: for room
    /// in the queue, then at most about the retry deadline (30 s from being queued) plus
    /// an attempt or two (15 s each at most).
    ///
    /// Errors: those of [`Store::write_group`] for this unit alone;
    /// [`StoreError::Unavailable`] when transient failures outlasted the deadline;
    /// [`StoreError::WriterGone`] when the task is gone; a `Conflict` when an earlier unit
    /// of the same table, in the same group, failed (this one is then not written, so a
    /// log never has a gap). Dropping the future once the unit is queued does not
    /// withdraw it.
    pub async fn write(&self, unit: TableWrite) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        let queued = Instant::now();
        self.queue
            .send(Job {
                unit,
                reply,
                queued,
            })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Units queued and not yet taken by the task, for a gauge.
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }
}

/// The task: take what is queued (waiting only when nothing is), commit it, answer.
async fn run(
    store: Arc<dyn Store>,
    observer: Arc<dyn WriteObserver>,
    limits: Limits,
    mut queue: mpsc::Receiver<Job>,
) {
    let mut jobs = Vec::with_capacity(limits.max_group);
    // `recv_many` returns 0 only once every sender is gone and the queue is empty.
    while queue.recv_many(&mut jobs, limits.max_group).await > 0 {
        let taken = Instant::now();
        for job in &jobs {
            observer.taken(taken.saturating_duration_since(job.queued));
        }
        let oldest = jobs
            .iter()
            .map(|j| j.queued)
            .min()
            .unwrap_or_else(Instant::now);
        let deadline = oldest + limits.deadline;
        let (group, apart) = split(&*store, jobs.drain(..));
        for (units, replies) in [group, apart] {
            if !units.is_empty() {
                commit(&*store, &*observer, &limits, units, replies, deadline).await;
            }
        }
    }
}

/// Units, and the senders of their answers in the same order.
type Parts = (Vec<TableWrite>, Vec<oneshot::Sender<Result<()>>>);

/// The group taken, as the units committed first and those the store wants apart
/// ([`Store::apart`]), committed after them: a table's units after one of its own that
/// goes apart go apart too, so that each table's units still commit in their order.
fn split(store: &dyn Store, jobs: impl Iterator<Item = Job>) -> (Parts, Parts) {
    let (mut group, mut apart): (Parts, Parts) = Default::default();
    let mut later: Vec<Uuid> = Vec::new();
    for job in jobs {
        let side = if later.contains(&job.unit.table) || store.apart(&job.unit) {
            later.push(job.unit.table);
            &mut apart
        } else {
            &mut group
        };
        side.0.push(job.unit);
        side.1.push(job.reply);
    }
    (group, apart)
}

/// Commits one group and answers its waiters (a waiter gone meanwhile is no error).
async fn commit(
    store: &dyn Store,
    observer: &dyn WriteObserver,
    limits: &Limits,
    units: Vec<TableWrite>,
    mut replies: Vec<oneshot::Sender<Result<()>>>,
    deadline: Instant,
) {
    let start = Instant::now();
    match attempt(store, observer, limits, &units, deadline).await {
        Ok(()) => {
            observer.committed(units.len(), start.elapsed());
            for reply in replies {
                let _ = reply.send(Ok(()));
            }
        }
        Err(e) if e.is_transient() => {
            let message = unavailable(&e, limits);
            observer.failed(units.len(), &StoreError::Unavailable(message.clone()));
            for reply in replies {
                let _ = reply.send(Err(StoreError::Unavailable(message.clone())));
            }
        }
        Err(e) if units.len() == 1 => {
            observer.failed(1, &e);
            if let Some(reply) = replies.pop() {
                let _ = reply.send(Err(e));
            }
        }
        // One of the units broke a rule: find which, committing one at a time.
        Err(_) => one_by_one(store, observer, limits, units, replies, deadline).await,
    }
}

/// Commits each unit alone, so that only units breaking a rule fail.
async fn one_by_one(
    store: &dyn Store,
    observer: &dyn WriteObserver,
    limits: &Limits,
    units: Vec<TableWrite>,
    replies: Vec<oneshot::Sender<Result<()>>>,
    deadline: Instant,
) {
    // Tables with a failed unit: their later units are not tried (no gap in a log).
    let mut failed: HashSet<Uuid> = HashSet::new();
    // Once the database is unavailable, it is for the rest of the group too.
    let mut down: Option<String> = None;
    for (unit, reply) in units.into_iter().zip(replies) {
        let start = Instant::now();
        let result = if let Some(message) = &down {
            Err(StoreError::Unavailable(message.clone()))
        } else if failed.contains(&unit.table) {
            Err(StoreError::Conflict(format!(
                "not written: an earlier write of table {} in the same group failed",
                unit.table
            )))
        } else {
            let one = std::slice::from_ref(&unit);
            match attempt(store, observer, limits, one, deadline).await {
                Err(e) if e.is_transient() => {
                    let message = unavailable(&e, limits);
                    down = Some(message.clone());
                    Err(StoreError::Unavailable(message))
                }
                other => other,
            }
        };
        match &result {
            Ok(()) => observer.committed(1, start.elapsed()),
            Err(e) => {
                failed.insert(unit.table);
                observer.failed(1, e);
            }
        }
        let _ = reply.send(result);
    }
}

/// Commits `units` as one group, retrying transient failures with backoff while the
/// deadline allows; the last error otherwise.
async fn attempt(
    store: &dyn Store,
    observer: &dyn WriteObserver,
    limits: &Limits,
    units: &[TableWrite],
    deadline: Instant,
) -> Result<()> {
    let mut pause = limits.first_backoff;
    loop {
        // A panic inside the store must not take the process's only writer with it.
        let guarded = std::panic::AssertUnwindSafe(store.write_group(units)).catch_unwind();
        observer.attempting(true);
        let answered = tokio::time::timeout(limits.attempt_timeout, guarded).await;
        observer.attempting(false);
        let result = match answered {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => Err(StoreError::Panicked(
                panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default(),
            )),
            Err(_) => Err(StoreError::Unavailable(format!(
                "no answer from the database within {:?}",
                limits.attempt_timeout
            ))),
        };
        match result {
            Err(e) if e.is_transient() && Instant::now() + pause < deadline => {
                observer.retried(&e);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(limits.max_backoff);
            }
            other => return other,
        }
    }
}

/// The message of the [`StoreError::Unavailable`] that the waiters of a group hear when
/// transient failures outlasted the deadline (`e`, the last one).
fn unavailable(e: &StoreError, limits: &Limits) -> String {
    match e {
        StoreError::Unavailable(message) => message.clone(),
        e => format!(
            "still failing {:?} after being queued: {e}",
            limits.deadline
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::{
        ActionRecord, ChatRecord, DailyRow, MatchRow, Occupant, Player, RoundRecord, SqliteStore,
        StoredTable, TableRecord, TableStatus, WriteOp,
    };

    /// An in-memory store whose `write_group` can be made to fail transiently, hang or
    /// panic; everything else goes straight through.
    struct Faulty {
        inner: SqliteStore,
        /// Transient failures still to report before letting groups through.
        failures: AtomicU32,
        hang: AtomicBool,
        panic: AtomicBool,
        /// Size of every group attempted.
        groups: Mutex<Vec<usize>>,
    }

    #[async_trait]
    impl Store for Faulty {
        fn backend(&self) -> &'static str {
            "faulty"
        }
        async fn ping(&self) -> Result<()> {
            self.inner.ping().await
        }
        async fn close(&self) {
            self.inner.close().await
        }
        async fn create_player(
            &self,
            id: Uuid,
            name: &str,
            hash: &str,
            label: &str,
            now: i64,
        ) -> Result<Player> {
            self.inner.create_player(id, name, hash, label, now).await
        }
        async fn player_by_token_hash(&self, hash: &str) -> Result<Option<crate::Authed>> {
            self.inner.player_by_token_hash(hash).await
        }
        async fn player(&self, id: Uuid) -> Result<Option<Player>> {
            self.inner.player(id).await
        }
        async fn make_bot(&self, player: Uuid, now: i64) -> Result<crate::BotConversion> {
            self.inner.make_bot(player, now).await
        }
        async fn bot_accounts(&self) -> Result<Vec<Uuid>> {
            self.inner.bot_accounts().await
        }
        async fn create_session(
            &self,
            player: Uuid,
            hash: &str,
            label: &str,
            now: i64,
        ) -> Result<crate::SessionRecord> {
            self.inner.create_session(player, hash, label, now).await
        }
        async fn touch_session(&self, id: &str, now: i64) -> Result<()> {
            self.inner.touch_session(id, now).await
        }
        async fn sessions_of(&self, player: Uuid) -> Result<Vec<crate::SessionRecord>> {
            self.inner.sessions_of(player).await
        }
        async fn revoke_session(&self, player: Uuid, id: &str) -> Result<bool> {
            self.inner.revoke_session(player, id).await
        }
        async fn create_account(&self, a: &crate::AccountRecord) -> Result<crate::Claim> {
            self.inner.create_account(a).await
        }
        async fn account_of(&self, player: Uuid) -> Result<Option<crate::AccountRecord>> {
            self.inner.account_of(player).await
        }
        async fn account_by_key(&self, key: &str) -> Result<Option<crate::AccountRecord>> {
            self.inner.account_by_key(key).await
        }
        async fn queue_join(&self, e: &crate::QueueEntry) -> Result<()> {
            self.inner.queue_join(e).await
        }
        async fn queue_leave(&self, player: Uuid, conn: &str) -> Result<bool> {
            self.inner.queue_leave(player, conn).await
        }
        async fn queue_entries(&self) -> Result<Vec<crate::QueueEntry>> {
            self.inner.queue_entries().await
        }
        async fn analysis_counts(&self) -> Result<(i64, i64)> {
            self.inner.analysis_counts().await
        }
        async fn playing_tables_of(&self, player: Uuid) -> Result<Vec<(Uuid, serde_json::Value)>> {
            self.inner.playing_tables_of(player).await
        }
        async fn queue_take(&self, entries: &[(Uuid, String)]) -> Result<bool> {
            self.inner.queue_take(entries).await
        }
        async fn queue_clear(&self) -> Result<u64> {
            self.inner.queue_clear().await
        }
        async fn queue_clear_dead(&self) -> Result<u64> {
            self.inner.queue_clear_dead().await
        }
        async fn node_beat(
            &self,
            id: &str,
            address: &str,
            lease: i64,
            draining: bool,
        ) -> Result<()> {
            self.inner.node_beat(id, address, lease, draining).await
        }
        async fn node_gone(&self, id: &str) -> Result<()> {
            self.inner.node_gone(id).await
        }
        async fn live_nodes(&self) -> Result<Vec<crate::NodeRecord>> {
            self.inner.live_nodes().await
        }
        async fn database_now_ms(&self) -> Result<i64> {
            self.inner.database_now_ms().await
        }
        async fn claim_table(&self, table: Uuid, node: &str) -> Result<Option<i64>> {
            self.inner.claim_table(table, node).await
        }
        async fn release_table(&self, table: Uuid, node: &str, epoch: i64) -> Result<bool> {
            self.inner.release_table(table, node, epoch).await
        }
        async fn transfer_table(
            &self,
            table: Uuid,
            from: &str,
            epoch: i64,
            to: &str,
        ) -> Result<Option<i64>> {
            self.inner.transfer_table(table, from, epoch, to).await
        }
        async fn table_owner(&self, table: Uuid) -> Result<Option<crate::TableOwner>> {
            self.inner.table_owner(table).await
        }
        async fn claim_orphans(
            &self,
            node: &str,
            limit: i64,
            mine: bool,
        ) -> Result<Vec<(Uuid, i64)>> {
            self.inner.claim_orphans(node, limit, mine).await
        }
        async fn owned_tables(&self, node: &str) -> Result<Vec<(Uuid, i64, bool)>> {
            self.inner.owned_tables(node).await
        }
        async fn cluster_secret(&self) -> Result<String> {
            self.inner.cluster_secret().await
        }
        async fn notify(&self, channel: &str, payloads: &[String]) -> Result<()> {
            self.inner.notify(channel, payloads).await
        }
        async fn listen(
            &self,
            channels: &[&str],
        ) -> Result<Option<tokio::sync::mpsc::Receiver<crate::Notice>>> {
            self.inner.listen(channels).await
        }
        async fn try_exclusive(&self, key: i64) -> Result<Option<crate::Exclusive>> {
            self.inner.try_exclusive(key).await
        }
        async fn request_analysis(
            &self,
            table: Uuid,
            version: i64,
            player: Uuid,
            from: &str,
            now: i64,
            limits: crate::AnalysisLimits,
        ) -> Result<crate::AnalysisRequested> {
            self.inner
                .request_analysis(table, version, player, from, now, limits)
                .await
        }
        async fn analysis_job(
            &self,
            table: Uuid,
            version: i64,
        ) -> Result<Option<crate::AnalysisJob>> {
            self.inner.analysis_job(table, version).await
        }
        async fn analysis_ahead(&self, job: Uuid) -> Result<i64> {
            self.inner.analysis_ahead(job).await
        }
        async fn claim_analysis(
            &self,
            worker: &str,
            now: i64,
            lease_ms: i64,
        ) -> Result<Option<crate::AnalysisJob>> {
            self.inner.claim_analysis(worker, now, lease_ms).await
        }
        async fn analysis_progress(
            &self,
            job: Uuid,
            worker: &str,
            done: i64,
            total: i64,
            now: i64,
            lease_ms: i64,
        ) -> Result<bool> {
            self.inner
                .analysis_progress(job, worker, done, total, now, lease_ms)
                .await
        }
        async fn finish_analysis(
            &self,
            job: Uuid,
            worker: &str,
            result: std::result::Result<&str, &str>,
            progress: (i64, i64),
            now: i64,
        ) -> Result<bool> {
            self.inner
                .finish_analysis(job, worker, result, progress, now)
                .await
        }
        async fn release_analysis(&self, job: Uuid, worker: &str) -> Result<bool> {
            self.inner.release_analysis(job, worker).await
        }
        async fn rename_player(&self, id: Uuid, name: &str) -> Result<()> {
            self.inner.rename_player(id, name).await
        }
        async fn create_owned_table(
            &self,
            record: &TableRecord,
            seats: &[Occupant],
            owner: Option<&str>,
        ) -> Result<i64> {
            self.inner.create_owned_table(record, seats, owner).await
        }
        async fn load_table(&self, table: Uuid) -> Result<Option<StoredTable>> {
            self.inner.load_table(table).await
        }
        async fn unfinished_tables(&self) -> Result<Vec<StoredTable>> {
            self.inner.unfinished_tables().await
        }
        async fn open_tables_created_by(&self, player: Uuid) -> Result<i64> {
            self.inner.open_tables_created_by(player).await
        }
        fn apart(&self, unit: &TableWrite) -> bool {
            self.inner.apart(unit)
        }
        async fn write_group(&self, group: &[TableWrite]) -> Result<()> {
            self.groups.lock().unwrap().push(group.len());
            if self.panic.load(Ordering::SeqCst) {
                panic!("injected panic in write_group");
            }
            if self.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let left = self.failures.load(Ordering::SeqCst);
            if left > 0 {
                self.failures.store(left - 1, Ordering::SeqCst);
                let io = std::io::Error::other("injected I/O failure");
                return Err(StoreError::Db(sqlx::Error::Io(io)));
            }
            self.inner.write_group(group).await
        }
        async fn rounds(&self, table: Uuid) -> Result<Vec<RoundRecord>> {
            self.inner.rounds(table).await
        }
        async fn leaderboard(
            &self,
            game: &str,
            pool: crate::rating::Pool,
            offset: i64,
            limit: i64,
        ) -> Result<crate::LeaderPage> {
            self.inner.leaderboard(game, pool, offset, limit).await
        }
        async fn player_ratings(&self, player: Uuid) -> Result<Vec<crate::PlayerRating>> {
            self.inner.player_ratings(player).await
        }
        async fn best_totals(&self, game: &str, limit: i64) -> Result<Vec<crate::ScoreRecord>> {
            self.inner.best_totals(game, limit).await
        }
        async fn solitaire_best(
            &self,
            target: u32,
            daily: Option<&str>,
            before: i64,
            limit: i64,
        ) -> Result<Vec<crate::ScoreRecord>> {
            self.inner
                .solitaire_best(target, daily, before, limit)
                .await
        }
        async fn rerate(&self, force: bool) -> Result<Option<u64>> {
            self.inner.rerate(force).await
        }
        async fn rating_history(
            &self,
            player: Uuid,
            game: &str,
            pool: crate::rating::Pool,
            limit: i64,
        ) -> Result<Vec<crate::RatingPoint>> {
            self.inner.rating_history(player, game, pool, limit).await
        }
        async fn player_matches(&self, player: Uuid, limit: i64) -> Result<Vec<MatchRow>> {
            self.inner.player_matches(player, limit).await
        }
        async fn public_matches(&self, player: Uuid, limit: i64) -> Result<Vec<MatchRow>> {
            self.inner.public_matches(player, limit).await
        }
        async fn daily_seed(
            &self,
            key: &str,
            fresh: Option<&str>,
            now: i64,
        ) -> Result<Option<String>> {
            self.inner.daily_seed(key, fresh, now).await
        }
        async fn daily_table_of(&self, key: &str, player: Uuid) -> Result<Option<Uuid>> {
            self.inner.daily_table_of(key, player).await
        }
        async fn create_tournament(&self, t: &crate::TournamentRecord) -> Result<()> {
            self.inner.create_tournament(t).await
        }
        async fn tournament(&self, id: Uuid) -> Result<Option<crate::TournamentRecord>> {
            self.inner.tournament(id).await
        }
        async fn tournaments(
            &self,
            status: Option<crate::TournamentStatus>,
            limit: i64,
        ) -> Result<Vec<crate::TournamentRecord>> {
            self.inner.tournaments(status, limit).await
        }
        async fn listed_tournaments(
            &self,
            status: Option<crate::TournamentStatus>,
            cancelled: Option<bool>,
            viewer: Option<Uuid>,
            limit: i64,
        ) -> Result<Vec<crate::TournamentRecord>> {
            self.inner
                .listed_tournaments(status, cancelled, viewer, limit)
                .await
        }
        async fn save_tournament(&self, step: &crate::TournamentStep) -> Result<bool> {
            self.inner.save_tournament(step).await
        }
        async fn claim_tournaments(
            &self,
            node: &str,
            limit: i64,
            mine_too: bool,
        ) -> Result<Vec<(Uuid, i64)>> {
            self.inner.claim_tournaments(node, limit, mine_too).await
        }
        async fn cancel_tournament(&self, id: Uuid, reason: &str, now: i64) -> Result<bool> {
            self.inner.cancel_tournament(id, reason, now).await
        }
        async fn mark_unrated(&self, table: Uuid, now: i64) -> Result<()> {
            self.inner.mark_unrated(table, now).await
        }
        async fn is_unrated(&self, table: Uuid) -> Result<bool> {
            self.inner.is_unrated(table).await
        }
        async fn open_tournaments_created_by(&self, player: Uuid) -> Result<i64> {
            self.inner.open_tournaments_created_by(player).await
        }
        async fn tournament_owner(&self, id: Uuid) -> Result<Option<(Option<String>, i64)>> {
            self.inner.tournament_owner(id).await
        }
        async fn tournament_tables(&self, id: Uuid) -> Result<Vec<crate::TournamentTable>> {
            self.inner.tournament_tables(id).await
        }
        async fn daily_board(&self, key: &str, before: i64, limit: i64) -> Result<Vec<DailyRow>> {
            self.inner.daily_board(key, before, limit).await
        }
        async fn chat_history(&self, table: Uuid, limit: i64) -> Result<Vec<ChatRecord>> {
            self.inner.chat_history(table, limit).await
        }
        async fn mutes_of(&self, player: Uuid) -> Result<Vec<Uuid>> {
            self.inner.mutes_of(player).await
        }
        async fn set_muted(&self, player: Uuid, target: Uuid, muted: bool, now: i64) -> Result<()> {
            self.inner.set_muted(player, target, muted, now).await
        }
    }

    #[derive(Debug, PartialEq)]
    enum Event {
        Committed(usize),
        Retried,
        Failed(usize, String),
    }

    /// The events in order, and each unit's wait in the queue as it was taken.
    #[derive(Default)]
    struct Log(Mutex<Vec<Event>>, Mutex<Vec<Duration>>);

    impl WriteObserver for Log {
        fn taken(&self, waited: Duration) {
            self.1.lock().unwrap().push(waited);
        }
        fn committed(&self, units: usize, _: Duration) {
            self.0.lock().unwrap().push(Event::Committed(units));
        }
        fn retried(&self, error: &StoreError) {
            assert!(error.is_transient(), "{error}");
            self.0.lock().unwrap().push(Event::Retried);
        }
        fn failed(&self, units: usize, error: &StoreError) {
            let kind = format!("{error:?}");
            let kind = kind.split('(').next().unwrap_or_default().to_string();
            self.0.lock().unwrap().push(Event::Failed(units, kind));
        }
    }

    const FAST: Limits = Limits {
        max_group: 8,
        queue: 16,
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(8),
        deadline: Duration::from_millis(300),
        attempt_timeout: Duration::from_millis(100),
    };

    /// A store with one table whose round 0 has started.
    async fn faulty() -> (Arc<Faulty>, Uuid) {
        let inner = SqliteStore::connect("sqlite::memory:").await.unwrap();
        let table = playing(&inner).await;
        let store = Faulty {
            inner,
            failures: AtomicU32::new(0),
            hang: AtomicBool::new(false),
            panic: AtomicBool::new(false),
            groups: Mutex::new(Vec::new()),
        };
        (Arc::new(store), table)
    }

    /// A new table of one empty seat in `store`, its round 0 started.
    async fn playing(store: &SqliteStore) -> Uuid {
        let table = TableRecord {
            id: Uuid::new_v4(),
            game: "trump".into(),
            options: json!({}),
            rules_version: 1,
            seat_count: 1,
            private: false,
            invite_code: None,
            created_by: Uuid::new_v4(),
            created_at: 0,
            status: TableStatus::Playing,
            bots: None,
            daily: None,
            pace: serde_json::json!({"kind": "untimed"}),
            clock: None,
            updated_at: 0,
        };
        store
            .create_table(&table, &[Occupant::Empty])
            .await
            .unwrap();
        let round = RoundRecord {
            round_no: 0,
            seed_hex: "00".into(),
            commitment: "11".into(),
            started_at: 0,
            ended_at: None,
            result: None,
        };
        store.start_round(table.id, &round).await.unwrap();
        table.id
    }

    /// A writer on `store` with the test limits, and the log its observer keeps.
    fn logged(store: &Arc<Faulty>) -> (Writer, Arc<Log>) {
        let log = Arc::new(Log::default());
        let (writer, _) = Writer::spawn_with(store.clone(), log.clone(), FAST);
        (writer, log)
    }

    /// Writes `table`'s action 0 in a task, as a group whose commit is retried four times
    /// (pauses of 1 + 2 + 4 + 8 ms at least); returns once the first retry is seen, the
    /// group still being retried.
    async fn retried(
        store: &Faulty,
        writer: &Writer,
        log: &Log,
        table: Uuid,
    ) -> tokio::task::JoinHandle<Result<()>> {
        store.failures.store(4, Ordering::SeqCst);
        let first = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(action(table, 0)).await }
        });
        while !log.0.lock().unwrap().contains(&Event::Retried) {
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
        first
    }

    fn action(table: Uuid, seq: i64) -> TableWrite {
        let action = ActionRecord {
            round_no: 0,
            seq,
            seat: 0,
            action: json!({ "seq": seq }),
        };
        TableWrite::one(table, seq, WriteOp::AppendAction(action))
    }

    async fn stored_actions(store: &Faulty, table: Uuid) -> usize {
        store
            .load_table(table)
            .await
            .unwrap()
            .unwrap()
            .actions
            .len()
    }

    #[tokio::test]
    async fn transient_failures_are_retried_until_the_group_commits() {
        let (store, table) = faulty().await;
        store.failures.store(3, Ordering::SeqCst);
        let (writer, log) = logged(&store);
        writer.write(action(table, 0)).await.unwrap();
        use Event::*;
        assert_eq!(
            *log.0.lock().unwrap(),
            [Retried, Retried, Retried, Committed(1)]
        );
        assert_eq!(stored_actions(&store, table).await, 1);
    }

    /// A unit queued while a group is being committed waits for that commit, and the
    /// observer is told how long (a move's wait for its write, split: docs/performance.md).
    #[tokio::test]
    async fn each_unit_reports_its_wait_in_the_queue() {
        let (store, table) = faulty().await;
        let (writer, log) = logged(&store);
        let first = retried(&store, &writer, &log, table).await;
        // Queued once the first group is being retried, so never in the same group.
        writer.write(action(table, 1)).await.unwrap();
        first.await.unwrap().unwrap();
        let waits = log.1.lock().unwrap().clone();
        assert_eq!(waits.len(), 2, "{waits:?}");
        // The second waited behind the later pauses (14 ms once the first retry is seen; a
        // slow machine may see it late, hence the margin).
        assert!(waits[1] >= Duration::from_millis(3), "{waits:?}");
        assert!(waits[0] < waits[1], "{waits:?}");
        assert_eq!(stored_actions(&store, table).await, 2);
    }

    /// A unit the store wants apart (SQLite: one that finishes a match) is committed after
    /// the rest of its group, in a transaction of its own, with the later units of its
    /// table; every unit is answered and stored.
    #[tokio::test]
    async fn a_unit_the_store_wants_apart_commits_after_its_group() {
        let (store, a) = faulty().await;
        let b = playing(&store.inner).await;
        let (writer, log) = logged(&store);
        // The next units queue while the first group is retried, and are taken as one.
        let first = retried(&store, &writer, &log, b).await;
        let mut finish = action(a, 0);
        finish.ops.push(WriteOp::FinishMatch {
            totals: vec![5],
            winners: vec![0],
        });
        assert!(store.apart(&finish) && !store.apart(&action(a, 1)));
        // In this order in the queue: a's finish, b's next action, then a's action after
        // its finish (which must not pass it).
        let (x, y, z) = tokio::join!(
            writer.write(finish),
            async {
                tokio::task::yield_now().await;
                writer.write(action(b, 1)).await
            },
            async {
                for _ in 0..2 {
                    tokio::task::yield_now().await;
                }
                writer.write(action(a, 1)).await
            },
        );
        first.await.unwrap().unwrap();
        for r in [x, y, z] {
            r.unwrap();
        }
        use Event::*;
        assert_eq!(
            *log.0.lock().unwrap(),
            [
                Retried,
                Retried,
                Retried,
                Retried,
                Committed(1),
                Committed(1),
                Committed(2)
            ],
            "b's first action, then b's second alone, then a's two units apart"
        );
        assert_eq!(*store.groups.lock().unwrap(), [1, 1, 1, 1, 1, 1, 2]);
        assert_eq!(stored_actions(&store, a).await, 2);
        assert_eq!(stored_actions(&store, b).await, 2);
        let finished = store.load_table(a).await.unwrap().unwrap();
        assert_eq!(finished.record.status, TableStatus::Finished);
    }

    #[tokio::test]
    async fn transient_failures_past_the_deadline_fail_every_unit() {
        let (store, table) = faulty().await;
        store.failures.store(u32::MAX, Ordering::SeqCst);
        let (writer, log) = logged(&store);
        let started = Instant::now();
        let (a, b) = tokio::join!(
            writer.write(action(table, 0)),
            writer.write(action(table, 1))
        );
        for r in [a, b] {
            assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
        }
        assert!(started.elapsed() < Duration::from_secs(5));
        {
            let log = log.0.lock().unwrap();
            assert!(log.iter().filter(|e| **e == Event::Retried).count() >= 5);
            let failed: usize = log
                .iter()
                .map(|e| match e {
                    Event::Failed(n, kind) if kind == "Unavailable" => *n,
                    Event::Failed(..) | Event::Committed(_) => panic!("{e:?}"),
                    Event::Retried => 0,
                })
                .sum();
            assert_eq!(failed, 2);
        }
        store.failures.store(0, Ordering::SeqCst);
        assert_eq!(stored_actions(&store, table).await, 0);
    }

    /// In an outage, the deadline runs from when a unit was queued: groups queued behind a
    /// group that gave up get one attempt each, not a deadline each.
    #[tokio::test]
    async fn the_deadline_counts_from_the_queue() {
        let (store, table) = faulty().await;
        store.failures.store(u32::MAX, Ordering::SeqCst);
        let limits = Limits {
            max_group: 2,
            ..FAST
        };
        let (writer, _) = Writer::spawn_with(store.clone(), Arc::new(()), limits);
        let started = Instant::now();
        let writes: Vec<_> = (0..10)
            .map(|seq| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(action(table, seq)).await })
            })
            .collect();
        for w in writes {
            let r = w.await.unwrap();
            assert!(matches!(r, Err(StoreError::Unavailable(_))), "{r:?}");
        }
        // Five groups of two: a deadline each would take 5 × 300 ms.
        assert!(
            started.elapsed() < 3 * FAST.deadline,
            "{:?}",
            started.elapsed()
        );
        assert!(store.groups.lock().unwrap().len() >= 5);
    }

    /// An attempt that never ends counts as a transient failure: `write` still answers.
    #[tokio::test]
    async fn a_hung_attempt_ends_in_an_answer() {
        let (store, table) = faulty().await;
        store.hang.store(true, Ordering::SeqCst);
        let (writer, _) = logged(&store);
        let r = writer.write(action(table, 0)).await;
        assert!(
            matches!(&r, Err(StoreError::Unavailable(m)) if m.contains("no answer")),
            "{r:?}"
        );
        assert!(store.groups.lock().unwrap().len() >= 2, "retried");
        // The database is back: the next unit goes through.
        store.hang.store(false, Ordering::SeqCst);
        writer.write(action(table, 1)).await.unwrap();
        assert_eq!(stored_actions(&store, table).await, 1);
    }

    /// Dropping the handles ends the task, but only after the queued units are answered.
    #[tokio::test]
    async fn the_task_ends_after_the_last_handle_and_queued_units() {
        let (store, table) = faulty().await;
        let (writer, task) = Writer::spawn_with(store.clone(), Arc::new(()), FAST);
        let writes: Vec<_> = (0..40)
            .map(|seq| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(action(table, seq)).await })
            })
            .collect();
        drop(writer);
        for w in writes {
            w.await.unwrap().unwrap();
        }
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the task ended")
            .unwrap();
        assert_eq!(stored_actions(&store, table).await, 40);
        let groups = store.groups.lock().unwrap();
        assert!(groups.iter().all(|&n| n <= FAST.max_group), "{groups:?}");
        assert_eq!(groups.iter().sum::<usize>(), 40, "each unit once");
    }

    #[tokio::test]
    async fn a_panic_in_the_store_fails_the_unit_and_the_writer_lives_on() {
        let (store, table) = faulty().await;
        store.panic.store(true, Ordering::SeqCst);
        let (writer, task) = Writer::spawn_with(store.clone(), Arc::new(()), FAST);
        let r = writer.write(action(table, 0)).await;
        assert!(
            matches!(r, Err(StoreError::Panicked(ref m)) if m.contains("injected")),
            "{r:?}"
        );
        store.panic.store(false, Ordering::SeqCst);
        writer.write(action(table, 0)).await.unwrap();
        assert_eq!(stored_actions(&store, table).await, 1);
        // A task that is really gone answers WriterGone.
        task.abort();
        let _ = task.await;
        let r = writer.write(action(table, 1)).await;
        assert!(matches!(r, Err(StoreError::WriterGone)), "{r:?}");
    }

    #[test]
    fn transient_or_not() {
        let io = || sqlx::Error::Io(std::io::Error::other("x"));
        assert!(StoreError::Db(io()).is_transient());
        assert!(StoreError::Db(sqlx::Error::PoolTimedOut).is_transient());
        assert!(StoreError::Unavailable("x".into()).is_transient());
        assert!(!StoreError::Db(sqlx::Error::PoolClosed).is_transient());
        assert!(!StoreError::Db(sqlx::Error::RowNotFound).is_transient());
        assert!(!StoreError::Conflict("x".into()).is_transient());
        assert!(!StoreError::NotFound("x".into()).is_transient());
        assert!(!StoreError::Corrupt("x".into()).is_transient());
        assert!(!StoreError::WriterGone.is_transient());
    }
}
