//! Analyses of finished matches as jobs (#32, docs/analysis.md).
//!
//! A request (`POST /api/tables/{id}/analysis`) queues a row in the store; each node runs
//! `--analysis-workers` workers that take jobs from that queue (on Postgres with `SKIP
//! LOCKED`, so any node may work any job), rebuild the match from its stored seeds and
//! action log, and hand it to the pure `analysis` crate on a thread of their own. That
//! thread runs at the idle scheduling class (`SCHED_IDLE` on Linux): the kernel gives it a
//! core only when no table task, socket or store thread wants one, so play never waits for
//! an analysis, however many workers run. The worker reports progress to the store at
//! most twice a second, which renews its lease; a worker that dies leaves a lease that runs
//! out, and the job goes to the next worker that asks. The result is stored once and
//! served from the store from then on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use store::{AnalysisJob, StoredTable};

use crate::state::{AppState, stopping};

/// The engine version jobs are stored under: a new version of the analysis (another
/// method or output) is computed afresh instead of serving the old one.
pub const ENGINE_VERSION: i64 = analysis::VERSION as i64;

/// How long a job stays a worker's without a progress report.
const LEASE_MS: i64 = 60_000;
/// How often a running job's progress is written to the store (and its lease renewed).
/// Each write is a durable commit on the store's one write connection (SQLite), where the
/// tables' moves commit too: written twice a second by every worker, they showed in the
/// moves' p99. This node's own pages read the fresher copy in memory (`analysis_live`).
const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// How often the in-memory copy of a running job's progress is refreshed.
const LIVE_EVERY: Duration = Duration::from_millis(250);
/// How often an idle worker looks for jobs queued by other nodes (a job queued on this
/// node wakes it at once).
const IDLE_POLL: Duration = Duration::from_secs(2);

/// Starts this node's analysis workers (none with `--analysis-workers 0`).
pub fn start(app: &AppState) {
    // One core is left to play by default: even at the idle scheduling class, a worker on
    // every core doubled the moves' p99 on the 2-core machine (shared caches and memory),
    // where one worker added about 2 ms (docs/analysis.md).
    let n = app.config.analysis_workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get().saturating_sub(1).max(1))
            .unwrap_or(1)
    });
    for i in 0..n {
        app.background.spawn(worker(app.clone(), i));
    }
    if n > 0 {
        tracing::info!(workers = n, "analysis workers started");
    }
}

/// The store's limits for a request, from the configuration.
pub fn limits(app: &AppState) -> store::AnalysisLimits {
    let c = &app.config;
    store::AnalysisLimits {
        queue: c.analysis_queue.into(),
        pending_per_player: c.analysis_pending_per_player.into(),
        pending_per_address: c.analysis_pending_per_address.into(),
        per_player_day: c.analysis_per_day.into(),
    }
}

async fn worker(app: AppState, i: usize) {
    let name = format!("{}/{i}", app.cluster.node);
    let mut shutdown = app.shutdown.subscribe();
    loop {
        if *shutdown.borrow() {
            return;
        }
        match app
            .store
            .claim_analysis(&name, realtime::time::now_ms(), LEASE_MS)
            .await
        {
            Ok(Some(job)) => run(&app, &name, job, &mut shutdown).await,
            Ok(None) => {
                tokio::select! {
                    _ = stopping(&mut shutdown) => return,
                    _ = app.analysis_wake.notified() => {}
                    _ = tokio::time::sleep(IDLE_POLL) => {}
                }
            }
            Err(e) => {
                tracing::warn!(worker = %name, error = %e, "cannot take an analysis job");
                tokio::select! {
                    _ = stopping(&mut shutdown) => return,
                    _ = tokio::time::sleep(IDLE_POLL) => {}
                }
            }
        }
    }
}

/// The match as the analysis engine takes it: options, seats, seeds and actions.
fn input_of(st: &StoredTable) -> Result<analysis::MatchInput, String> {
    let seeds = st
        .rounds
        .iter()
        .map(|r| {
            game_core::Seed::from_hex(&r.seed_hex)
                .ok_or_else(|| format!("round {}: a stored seed is not 64 hex digits", r.round_no))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let actions = st
        .actions
        .iter()
        .map(|a| Ok((round_no(a.round_no)?, a.seat as usize, a.action.clone())))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(analysis::MatchInput {
        game: st.record.game.clone(),
        options: st.record.options.clone(),
        players: st.seats.len(),
        seeds,
        actions,
    })
}

fn round_no(n: i32) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("a stored round number {n} is negative"))
}

/// Works one job to its end: done, failed, given back at shutdown, or lost to another
/// worker after this one's lease ran out.
async fn run(
    app: &AppState,
    name: &str,
    job: AnalysisJob,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) {
    let store = &app.store;
    let now = realtime::time::now_ms;
    let input = match store.load_table(job.table_id).await {
        Ok(Some(st)) => input_of(&st),
        Ok(None) => Err(format!("table {} is gone", job.table_id)),
        Err(e) => {
            tracing::warn!(job = %job.id, error = %e, "cannot load an analysis job's match");
            let _ = store.release_analysis(job.id, name).await;
            return;
        }
    };
    let input = match input {
        Ok(input) => input,
        Err(why) => {
            tracing::error!(job = %job.id, table = %job.table_id, error = %why, "a match cannot be analysed");
            let _ = store
                .finish_analysis(job.id, name, Err(&why), (0, 0), now())
                .await;
            return;
        }
    };
    tracing::info!(job = %job.id, table = %job.table_id, worker = name, "analysing a match");
    let cancel = Arc::new(AtomicBool::new(false));
    let (progress_tx, progress_rx) = tokio::sync::watch::channel((0usize, 0usize));
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel();
    let stop = cancel.clone();
    let started = std::time::Instant::now();
    let spawned = std::thread::Builder::new()
        .name("analysis".into())
        .spawn(move || {
            idle_priority();
            let settings = analysis::Settings::default();
            let result = analysis::analyse(&input, &settings, &mut |done, total| {
                let _ = progress_tx.send((done, total));
                !stop.load(Ordering::Relaxed)
            });
            let _ = done_tx.send(result);
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start an analysis thread");
        let _ = store.release_analysis(job.id, name).await;
        return;
    }
    let mut tick = tokio::time::interval(PROGRESS_EVERY);
    let mut live = tokio::time::interval(LIVE_EVERY);
    let mut lost = false;
    let mut stopping_now = false;
    let result = loop {
        tokio::select! {
            r = &mut done_rx => break r,
            _ = live.tick() => {
                let (done, total) = *progress_rx.borrow();
                set_live(app, job.id, Some((done as i64, total as i64)));
            }
            _ = tick.tick(), if !lost => {
                let (done, total) = *progress_rx.borrow();
                match store.analysis_progress(job.id, name, done as i64, total as i64, now(), LEASE_MS).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(job = %job.id, "an analysis job was taken by another worker (lease ran out)");
                        lost = true;
                        cancel.store(true, Ordering::Relaxed);
                    }
                    Err(e) => tracing::warn!(job = %job.id, error = %e, "cannot record analysis progress"),
                }
            }
            _ = stopping(shutdown), if !stopping_now => {
                stopping_now = true;
                cancel.store(true, Ordering::Relaxed);
            }
        }
    };
    set_live(app, job.id, None);
    // Stored with the outcome: a match analysed within the first progress report's
    // interval would otherwise show 0 of 0 decisions.
    let progress = {
        let (done, total) = *progress_rx.borrow();
        (done as i64, total as i64)
    };
    let Ok(result) = result else {
        // The thread ended without answering: it panicked.
        tracing::error!(job = %job.id, table = %job.table_id, "the analysis panicked");
        let _ = store
            .finish_analysis(job.id, name, Err("the analysis panicked"), progress, now())
            .await;
        return;
    };
    match result {
        Ok(analysis) => {
            let json = match serde_json::to_string(&analysis) {
                Ok(json) => json,
                Err(e) => {
                    tracing::error!(job = %job.id, error = %e, "an analysis does not serialize");
                    return;
                }
            };
            match store
                .finish_analysis(job.id, name, Ok(&json), progress, now())
                .await
            {
                Ok(true) => tracing::info!(
                    job = %job.id,
                    table = %job.table_id,
                    seconds = started.elapsed().as_secs_f64(),
                    bytes = json.len(),
                    "match analysed"
                ),
                Ok(false) => {
                    tracing::warn!(job = %job.id, "an analysis finished after another worker took its job")
                }
                Err(e) => tracing::warn!(job = %job.id, error = %e, "cannot store an analysis"),
            }
        }
        Err(analysis::AnalysisError::Cancelled) => {
            if !lost {
                // Shutting down: the job waits for the next worker, here or elsewhere.
                let _ = store.release_analysis(job.id, name).await;
            }
        }
        Err(e) => {
            let why = e.to_string();
            tracing::error!(job = %job.id, table = %job.table_id, error = %why, "a match cannot be analysed");
            let _ = store
                .finish_analysis(job.id, name, Err(&why), progress, now())
                .await;
        }
    }
}

/// Records (or forgets) a running job's progress in this node's memory.
fn set_live(app: &AppState, job: uuid::Uuid, progress: Option<(i64, i64)>) {
    let mut live = app.analysis_live.lock().unwrap_or_else(|p| p.into_inner());
    match progress {
        Some(p) => live.insert(job, p),
        None => live.remove(&job),
    };
}

/// A running job's progress as this node knows it now, if one of its workers runs it.
pub fn live_progress(app: &AppState, job: uuid::Uuid) -> Option<(i64, i64)> {
    app.analysis_live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&job)
        .copied()
}

/// Puts the calling thread in the idle scheduling class, below every normal thread.
#[cfg(target_os = "linux")]
fn idle_priority() {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
        thread_native_id,
    };
    if let Err(e) = set_thread_priority_and_policy(
        thread_native_id(),
        thread_priority::ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    ) {
        tracing::warn!(error = ?e, "an analysis thread keeps the normal scheduling class");
    }
}

#[cfg(not(target_os = "linux"))]
fn idle_priority() {
    let _ = thread_priority::set_current_thread_priority(thread_priority::ThreadPriority::Min);
}
