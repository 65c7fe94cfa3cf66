//! Operations: `/healthz`, `/metrics`, and the test hook that makes a table panic.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::extract::*;
use crate::state::AppState;
use crate::wire;
use realtime::table::Cmd;

/// How long `/healthz` waits for the database's answer.
const HEALTH_PING: std::time::Duration = std::time::Duration::from_secs(2);
/// A commit of the store writer in progress for longer is a stalled write: a healthy disk
/// commits a group in milliseconds, a busy one in well under a second.
const WRITE_STALL: std::time::Duration = std::time::Duration::from_secs(5);

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "service",
    summary = "Health",
    responses(
        (status = 200, description = "`{\"status\": \"ok\"}`, or `degraded` while tables are parked, the store writer retries a failed write, or its commit in progress has taken 5 s or more (a disk that stopped answering: reads still work, moves wait), or a table is broken (its stored log does not replay, or its task gave up after repeated panics: the log names it); with `database`, `parked_tables`, `broken_tables`, `writes_retrying` and `write_in_flight_ms` (how long the commit in progress has taken, 0 when none)", content_type = "application/json", example = json!({"status": "ok", "database": "sqlite", "parked_tables": 0, "broken_tables": 0, "writes_retrying": false, "write_in_flight_ms": 0})),
        (status = 503, description = "`{\"status\": \"unavailable\"}`: the database does not answer (within 2 s)", content_type = "application/json"),
    ),
)]
pub async fn healthz(State(app): State<AppState>) -> Response {
    let parked = app.metrics.parked_now();
    // Tables whose stored log does not replay, or whose task gave up after panics: their
    // matches cannot be played until an operator looks (the log names each).
    let broken = app.core.broken_count();
    let retrying = app.metrics.writes_retrying();
    // The read the ping makes still works on a disk that stopped writing: only the
    // writer's commit shows it (a SQLite file's write thread is held where no timeout of
    // the writer's own can end the commit).
    let in_flight = app.metrics.write_in_flight().unwrap_or_default();
    let stalled = in_flight >= WRITE_STALL;
    // A database that does not answer is unavailable now, not in the 10 s a connection
    // may take to time out: a health checker's own timeout is often shorter.
    let ping = match tokio::time::timeout(HEALTH_PING, app.store.ping()).await {
        Ok(answer) => answer,
        Err(_) => Err(store::StoreError::Unavailable(format!(
            "no answer from the database within {HEALTH_PING:?}"
        ))),
    };
    match ping {
        // Parked tables cannot save moves, and while the writer retries a failed write
        // every move waits: the server is up but degraded.
        Ok(()) => {
            if stalled {
                tracing::warn!(
                    seconds = in_flight.as_secs(),
                    "health check: the store writer's commit has taken {in_flight:?} so far"
                );
            }
            Json(serde_json::json!({
                "status": if parked > 0 || retrying || stalled || broken > 0 { "degraded" } else { "ok" },
                "database": app.store.backend(),
                "parked_tables": parked,
                "broken_tables": broken,
                "writes_retrying": retrying,
                "write_in_flight_ms": in_flight.as_millis() as u64,
            }))
            .into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "health check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({"status": "unavailable", "database": app.store.backend()})),
            )
                .into_response()
        }
    }
}

#[utoipa::path(
    get,
    path = "/metrics",
    tag = "service",
    summary = "Prometheus metrics",
    responses(
        (status = 200, description = "the metrics in the text exposition format", body = String, content_type = "text/plain; version=0.0.4"),
    ),
)]
pub async fn metrics(State(app): State<AppState>) -> Response {
    let mut text = app.metrics.render();
    server_metrics(&app, &mut text).await;
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// Counts each HTTP answer by its status class (`fib_http_responses_total`).
pub async fn count_answer(State(app): State<AppState>, res: Response) -> Response {
    let class = usize::from(res.status().as_u16() / 100).clamp(1, 5) - 1;
    app.http_answers[class].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    res
}

/// The server's own series, beside the core's: lobby sockets, quick play, analysis jobs,
/// HTTP answers. The analysis counts are read from the store; a store that does not
/// answer leaves them out (read a missing series as unknown), not the whole page.
async fn server_metrics(app: &AppState, s: &mut String) {
    use realtime::metrics::{counter, family, gauge};
    use std::sync::atomic::Ordering::Relaxed;
    gauge(
        s,
        "fib_lobby_sockets",
        "Open lobby sockets on this node (counted in fib_ws_connections too).",
        app.lobby_sockets.load(Relaxed),
    );
    let waiting: u32 = app
        .quickplay
        .counts
        .borrow()
        .iter()
        .map(|q| q.waiting)
        .sum();
    gauge(
        s,
        "fib_quickplay_waiting",
        "Players waiting in quick-play queues, every node's.",
        i64::from(waiting),
    );
    let analysis = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        app.store.analysis_counts(),
    )
    .await;
    if let Ok(Ok((queued, running))) = analysis {
        family(
            s,
            "fib_analysis_jobs",
            "gauge",
            "Match analyses by state, every node's.",
            "state",
            [("queued", queued), ("running", running)],
        );
    }
    counter(
        s,
        "fib_quickplay_seated_total",
        "Players seated by quick play on this node.",
        app.quickplay.seated.load(Relaxed),
    );
    family(
        s,
        "fib_http_responses_total",
        "counter",
        "HTTP answers of this node by status class.",
        "class",
        app.http_answers
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("{}xx", i + 1), n.load(Relaxed))),
    );
}

/// Test hook (`FIB_TEST_HOOKS` only): makes the table's task panic, to test supervision.
#[utoipa::path(
    post,
    path = "/api/tables/{id}/test/panic",
    tag = "tables",
    summary = "Test hook: make the table task panic once",
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)")),
    responses(
        (status = 202, description = "the panic was requested (only registered with FIB_TEST_HOOKS, never on a real server)"),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
    ),
)]
pub async fn test_panic(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let h = reach_table(&app, &id, None, None).await?;
    h.send(Cmd::TestPanic).await?;
    Ok(StatusCode::ACCEPTED)
}
