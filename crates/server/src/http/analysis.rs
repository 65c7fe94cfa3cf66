//! The analysis of a finished match (docs/analysis.md): asked for by anyone who may see
//! its replay, worked as a job by any node's analysis workers (`crate::analysis`), and
//! served from the store once done.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use protocol::{AnalysisState, AnalysisStatus};
use store::{AnalysisJob, AnalysisRequested};

use crate::analysis::ENGINE_VERSION;
use crate::error::ApiError;
use crate::extract::*;
use crate::http::tables::replayable;
use crate::state::{AppState, now_ms};
use crate::wire;

/// What the client is told of a job. A failed job's reason is logged, not shown.
async fn status(app: &AppState, job: AnalysisJob) -> Result<AnalysisStatus, ApiError> {
    let state = match job.state {
        store::AnalysisState::Queued => AnalysisState::Queued,
        store::AnalysisState::Running => AnalysisState::Running,
        store::AnalysisState::Done => AnalysisState::Done,
        store::AnalysisState::Failed => AnalysisState::Failed,
    };
    let ahead = match state {
        AnalysisState::Queued => Some(app.store.analysis_ahead(job.id).await?),
        _ => None,
    };
    let analysis = match job.result.as_deref() {
        Some(text) => Some(serde_json::from_str(text).map_err(|e| {
            tracing::error!(job = %job.id, error = %e, "a stored analysis does not parse");
            ApiError::Internal
        })?),
        None => None,
    };
    // A job run on this node: its progress from memory, fresher than the store's.
    let (done, total) = match state {
        AnalysisState::Running => {
            crate::analysis::live_progress(app, job.id).unwrap_or((job.done, job.total))
        }
        _ => (job.done, job.total),
    };
    Ok(AnalysisStatus {
        table_id: job.table_id,
        state,
        done,
        total,
        ahead,
        requested_at: Some(job.created_at),
        finished_at: job.finished_at,
        analysis,
    })
}

/// Asks for a finished match's analysis.
#[utoipa::path(
    post,
    path = "/api/tables/{id}/analysis",
    tag = "tables",
    summary = "Ask for the analysis of a finished match (queued; served again once done)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), InviteQuery),
    responses(
        (status = 200, description = "the match already has an analysis, done or under way", body = wire::AnalysisStatus),
        (status = 202, description = "queued (a failed analysis asked for again is queued afresh)", body = wire::AnalysisStatus),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: replay_not_finished, daily_in_progress", body = wire::ErrorBody),
        (status = 429, description = "`code`: analysis_pending (this player's analyses waiting or running are at the limit), analysis_pending_address (the analyses asked from this client address, waiting or running, are at the limit), analysis_daily (this player's analyses of the last 24 hours are at the limit)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 503, description = "`code`: analysis_queue_full (every player's waiting analyses are at the limit)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn request_analysis(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
    ClientAddr(from): ClientAddr,
    Me(who): Me,
) -> Result<(StatusCode, Json<AnalysisStatus>), ApiError> {
    let st = replayable(&app, &id, q.invite.as_deref(), &headers).await?;
    let limits = crate::analysis::limits(&app);
    let asked = app
        .store
        .request_analysis(
            st.record.id,
            ENGINE_VERSION,
            who.id,
            &from.to_string(),
            now_ms(),
            limits,
        )
        .await?;
    match asked {
        AnalysisRequested::Existing(job) => Ok((StatusCode::OK, Json(status(&app, job).await?))),
        AnalysisRequested::Queued(job) => {
            app.analysis_wake.notify_one();
            Ok((StatusCode::ACCEPTED, Json(status(&app, job).await?)))
        }
        AnalysisRequested::PlayerPending => Err(ApiError::RateLimited {
            code: "analysis_pending",
            message: format!(
                "you have {} analyses waiting or under way: ask again when one is done",
                limits.pending_per_player
            ),
            retry_after: 30,
            limit: "analysis_pending",
        }),
        AnalysisRequested::AddressPending => Err(ApiError::RateLimited {
            code: "analysis_pending_address",
            message: format!(
                "{} analyses asked from your address are waiting or under way: ask again when one is done",
                limits.pending_per_address
            ),
            retry_after: 30,
            limit: "analysis_pending_address",
        }),
        AnalysisRequested::PlayerDaily => Err(ApiError::RateLimited {
            code: "analysis_daily",
            message: format!(
                "you have asked for {} analyses in the last 24 hours, the most allowed",
                limits.per_player_day
            ),
            retry_after: 3600,
            limit: "analysis_daily",
        }),
        AnalysisRequested::QueueFull => Err(ApiError::Unavailable(
            "analysis_queue_full",
            format!(
                "{} analyses are waiting already: ask again in a while",
                limits.queue
            ),
        )),
    }
}

/// A match's analysis: where it is, and the analysis once done.
#[utoipa::path(
    get,
    path = "/api/tables/{id}/analysis",
    tag = "tables",
    summary = "A finished match's analysis and its progress",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), InviteQuery),
    responses(
        (status = 200, description = "the analysis's state (`not_requested` until someone asks) and progress, with the analysis once done", body = wire::AnalysisStatus),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: replay_not_finished, daily_in_progress", body = wire::ErrorBody),
    ),
)]
pub async fn get_analysis(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<Json<AnalysisStatus>, ApiError> {
    let st = replayable(&app, &id, q.invite.as_deref(), &headers).await?;
    match app.store.analysis_job(st.record.id, ENGINE_VERSION).await? {
        Some(job) => Ok(Json(status(&app, job).await?)),
        // Not an error: a state the page shows (with a button to ask).
        None => Ok(Json(AnalysisStatus {
            table_id: st.record.id,
            state: AnalysisState::NotRequested,
            done: 0,
            total: 0,
            ahead: None,
            requested_at: None,
            finished_at: None,
            analysis: None,
        })),
    }
}
