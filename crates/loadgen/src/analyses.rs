//! Match analyses beside the play (`--analyses N`): before the window, N guests each have
//! bots play a Trump match to its end (bots-only tables, through the public API) and ask
//! for its analysis; the server's analysis workers then keep its cores busy while the
//! players play. Read at the window's start and end, the jobs' progress says how much
//! analysing ran during the window (it should not stop before the window ends, or the
//! play was measured beside less than it claims).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use protocol::{AnalysisState, AnalysisStatus, BotLevel};
use serde::Serialize;

use crate::conn::Connector;

/// The analyses' side of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnalysisLoad {
    /// Jobs asked for before the window.
    pub jobs: usize,
    /// Jobs queued or running when the window opened, and when it closed.
    pub busy_at_start: usize,
    pub busy_at_end: usize,
    /// Of those, running (a worker on them) at each end.
    pub running_at_start: usize,
    pub running_at_end: usize,
    /// Decisions analysed during the window, over every job.
    pub decisions_in_window: i64,
    /// Jobs done by the window's end.
    pub done_at_end: usize,
}

/// The jobs of a run.
pub struct Jobs {
    tables: Vec<String>,
}

/// Has `n` bots-only Trump matches played to their end and their analyses asked for.
pub async fn prepare(conn: &Arc<Connector>, n: usize) -> Result<Jobs, String> {
    let made: Vec<Result<String, String>> = futures_util::stream::iter(0..n)
        .map(|i| {
            let conn = conn.clone();
            async move {
                let g = conn
                    .guest(&format!("an{i}"))
                    .await
                    .map_err(|e| e.to_string())?;
                let t = conn
                    .create_table(&g.token, "trump", 2, Some(BotLevel::Easy), false)
                    .await
                    .map_err(|e| e.to_string())?;
                let id = t.id.to_string();
                conn.start(&g.token, &id).await.map_err(|e| e.to_string())?;
                let started = Instant::now();
                loop {
                    let t = conn.table(&id).await.map_err(|e| e.to_string())?;
                    if t.status == protocol::TableStatus::Finished {
                        break;
                    }
                    if started.elapsed() > Duration::from_secs(300) {
                        return Err(format!("the bots of table {id} did not finish"));
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                conn.request_analysis(&g.token, &id)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(id)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    Ok(Jobs {
        tables: made.into_iter().collect::<Result<_, _>>()?,
    })
}

impl Jobs {
    /// Every job's state now.
    pub async fn read(&self, conn: &Connector) -> Vec<AnalysisStatus> {
        let mut out = Vec::with_capacity(self.tables.len());
        for t in &self.tables {
            if let Ok(s) = conn.analysis(t).await {
                out.push(s);
            }
        }
        out
    }

    /// The figures from the states at the window's two ends.
    pub fn summary(&self, start: &[AnalysisStatus], end: &[AnalysisStatus]) -> AnalysisLoad {
        let busy = |v: &[AnalysisStatus]| {
            v.iter()
                .filter(|s| matches!(s.state, AnalysisState::Queued | AnalysisState::Running))
                .count()
        };
        let running = |v: &[AnalysisStatus]| {
            v.iter()
                .filter(|s| s.state == AnalysisState::Running)
                .count()
        };
        let done = |v: &[AnalysisStatus]| -> i64 { v.iter().map(|s| s.done).sum() };
        AnalysisLoad {
            jobs: self.tables.len(),
            busy_at_start: busy(start),
            busy_at_end: busy(end),
            running_at_start: running(start),
            running_at_end: running(end),
            decisions_in_window: done(end) - done(start),
            done_at_end: end
                .iter()
                .filter(|s| s.state == AnalysisState::Done)
                .count(),
        }
    }
}
