//! Who runs which table: the node's lease, claiming orphaned tables (failover) and the
//! tables this node owns but does not run, and stepping down from tables another node
//! claimed.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::state::AppState;

use super::*;

/// Orphaned tables claimed in one statement.
pub(super) const CLAIM_BATCH: i64 = 64;

/// Claims the tables no live node runs and starts them here; how many. `all` at
/// start-up: this node's own tables from before a restart too, and every orphan (the lease
/// is renewed by its own task meanwhile); at a beat, one batch, so that a node taking over
/// a big node's tables shares them with the others' next beats.
pub async fn take_orphans(app: &AppState, all: bool) -> usize {
    let mut taken = 0;
    // At start-up, one claim of everything. In batches, each batch after the first found
    // the tables the one before had just claimed (this node's own by then) and claimed
    // them again: with a full first batch (64 unfinished tables) the start-up never ended,
    // stepping its own tables down and up again (a soak walk saw epochs pass 14,000).
    let (mine_too, limit) = if all {
        (true, i64::MAX)
    } else {
        (false, CLAIM_BATCH)
    };
    // Claims and starts happen under `opening`, like `table::open`: a table is never
    // claimed twice here, and never claimed while it is being started here.
    let _one = app.core.opening.lock().await;
    let claimed = match app
        .store
        .claim_orphans(&app.cluster.node, limit, mine_too)
        .await
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "could not claim orphaned tables");
            return 0;
        }
    };
    for (id, epoch) in claimed {
        if run_claimed(app, id, epoch).await {
            taken += 1;
            app.metrics.cluster("claimed");
        }
    }
    taken
}

/// Restores a table this node just claimed at `epoch` and starts its task (the caller
/// holds `opening`). A table that cannot be restored stays claimed by this node and is not
/// tried again by the beat (a visit tries it again, `table::open`), so that a table that
/// does not replay is not claimed around the nodes every second.
pub(super) async fn run_claimed(app: &AppState, id: Uuid, epoch: i64) -> bool {
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
    match realtime::table::restore(app.core.clone(), st, epoch) {
        Ok(t) => {
            let h = realtime::table::spawn(t);
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
pub(super) fn step_down(h: realtime::table::TableHandle) {
    tokio::spawn(async move { h.step_down().await });
}

/// How long one lease renewal may take: a connection that hangs must not outlast the lease.
pub(super) const RENEW_TIMEOUT: Duration = Duration::from_secs(2);

/// Every [`BEAT`]: renew the lease. Nothing else runs here, so that no slow claim or
/// restore delays a renewal. A node that could not renew for longer than a lease steps
/// down from every table (on Postgres: other nodes may run them by now).
pub(super) async fn renew(app: AppState) {
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
pub(super) async fn housekeeping(app: AppState) {
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
pub(super) async fn check_owned(app: &AppState, restart: bool) {
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
pub(super) fn step_down_all(app: &AppState) {
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
