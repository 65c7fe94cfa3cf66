//! The single writer of a process: one task that commits every table's [`TableWrite`]s
//! in groups.
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

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::{Result, Store, StoreError, TableWrite};

/// What a [`Writer`] reports, for metrics and logs. Called from the writer task: keep it
/// quick and never block.
pub trait WriteObserver: Send + Sync + 'static {
    /// One group made durable: `units` units, `took` from its first attempt to its
    /// commit (retries included, time in the queue not).
    fn committed(&self, units: usize, took: Duration);
    /// A transient failure; the same units are tried again after a pause.
    fn retried(&self, error: &StoreError);
    /// `units` units answered with `error`.
    fn failed(&self, units: usize, error: &StoreError);
}

/// Observes nothing.
impl WriteObserver for () {
    fn committed(&self, _: usize, _: Duration) {}
    fn retried(&self, _: &StoreError) {}
    fn failed(&self, _: usize, _: &StoreError) {}
}

/// Most units in one group: bounds a transaction's size and the work redone when a
/// broken rule makes the writer go one by one.
pub const MAX_GROUP: usize = 512;
/// Units waiting for the writer before [`Writer::write`] waits for room.
pub const QUEUE_CAPACITY: usize = 8192;

/// The writer's timing, shortened by tests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_group: usize,
    pub queue: usize,
    /// First pause after a transient failure; doubles up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// How long after its first attempt a group (or, one by one, its units) may still be
    /// retried.
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
    /// Starts the writer task on the current tokio runtime (panics outside one).
    pub fn spawn(store: Arc<dyn Store>, observer: Arc<dyn WriteObserver>) -> Writer {
        Self::spawn_with(store, observer, Limits::DEFAULT).0
    }

    pub(crate) fn spawn_with(
        store: Arc<dyn Store>,
        observer: Arc<dyn WriteObserver>,
        limits: Limits,
    ) -> (Writer, JoinHandle<()>) {
        let (queue, jobs) = mpsc::channel(limits.queue);
        let task = tokio::spawn(run(store, observer, limits, jobs));
        (Writer { queue }, task)
    }

    /// Resolves once `unit` is durable (or failed for good). Never waits forever: at most
    /// for room in the queue, then about the retry deadline (30 s) plus one attempt.
    ///
    /// Errors: those of [`Store::write_group`] for this unit alone;
    /// [`StoreError::Unavailable`] when transient failures outlasted the deadline;
    /// [`StoreError::WriterGone`] when the task is gone; a `Conflict` when an earlier unit
    /// of the same table, in the same group, failed (this one is then not written, so a
    /// log never has a gap). Dropping the future once the unit is queued does not
    /// withdraw it.
    pub async fn write(&self, unit: TableWrite) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Job { unit, reply })
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
        let (units, replies): (Vec<TableWrite>, Vec<_>) =
            jobs.drain(..).map(|j| (j.unit, j.reply)).unzip();
        commit(&*store, &*observer, &limits, units, replies).await;
    }
}

/// Commits one group and answers its waiters (a waiter gone meanwhile is no error).
async fn commit(
    store: &dyn Store,
    observer: &dyn WriteObserver,
    limits: &Limits,
    units: Vec<TableWrite>,
    mut replies: Vec<oneshot::Sender<Result<()>>>,
) {
    let start = Instant::now();
    let deadline = start + limits.deadline;
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
        let result =
            match tokio::time::timeout(limits.attempt_timeout, store.write_group(units)).await {
                Ok(result) => result,
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
        e => format!("still failing after {:?} of retries: {e}", limits.deadline),
    }
}
