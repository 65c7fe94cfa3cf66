//! The daily Solitaire deal: a player's game of today's deal, and a day's board.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use protocol::{PlayerInfo, TableInfo};
use serde::Deserialize;
use store::{Occupant, TableRecord, TableStatus};
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::extract::*;
use crate::state::{AppState, now_ms};
use crate::wire;
use realtime::TableError;
use realtime::table::{self, Cmd};

/// The info of a player's daily table, wherever it runs: this path names no table, so the
/// request is not forwarded to another node that runs it; that node is asked instead.
async fn daily_info(
    app: &AppState,
    id: Uuid,
    headers: &HeaderMap,
) -> Result<Option<TableInfo>, ApiError> {
    match table::open(&app.core, id).await {
        Ok(Some(h)) => Ok(Some(h.info().await?)),
        Ok(None) => Ok(None),
        Err(e @ (TableError::Moving | TableError::Draining)) => {
            match crate::cluster::remote_info(app, id, headers).await {
                Some(info) => Ok(Some(info)),
                None => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The daily Solitaire deal of `target` on `day`: its key in the store.
pub(super) fn daily_key(target: u32, day: &str) -> String {
    format!("solitaire-{target}/{day}")
}

pub(super) fn daily_target(target: u32) -> Result<u32, ApiError> {
    match target {
        21 | 13 | 8 => Ok(target),
        _ => Err(ApiError::BadTable(
            "bad_options",
            format!("daily Solitaire is played to 21, 13 or 8, not {target}"),
        )),
    }
}

/// Starts the caller's game of today's daily Solitaire deal, or returns the one they
/// already have: one game per player per deal, everyone dealt from the same seed.
#[utoipa::path(
    post,
    path = "/api/daily/solitaire",
    tag = "daily",
    summary = "Play (or resume) today's daily Solitaire deal",
    security(("cookie" = []), ("bearer" = [])),
    request_body = wire::DailyRequest,
    responses(
        (status = 200, description = "the caller's daily table, started", body = wire::TableInfo),
        (status = 400, description = "`code`: malformed, bad_options", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 409, description = "`code`: table_closed", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (too many tables created from this address)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn start_daily(
    State(app): State<AppState>,
    Me(who): Me,
    headers: HeaderMap,
    Body(req): Body<protocol::DailyRequest>,
) -> Result<Json<TableInfo>, ApiError> {
    let target = daily_target(req.target)?;
    let now = now_ms();
    let key = daily_key(target, &crate::state::utc_day(now));
    // The common case, a player coming back to their game, needs no insert.
    if let Some(existing) = app.store.daily_table_of(&key, who.id).await?
        && let Some(info) = daily_info(&app, existing, &headers).await?
    {
        return Ok(Json(info));
    }
    let options = games::check_options("rummy", &serde_json::json!({ "target": target }), 1)
        .map_err(|e| ApiError::BadTable(e.code(), e.to_string()))?;
    let record = TableRecord {
        id: Uuid::new_v4(),
        game: "rummy".into(),
        options,
        rules_version: 0,
        seat_count: 1,
        // Private, with a code nobody is given: watching someone else's daily game would
        // show the day's deal to players who have not played it yet.
        private: true,
        invite_code: Some(auth::random_hex(12)),
        created_by: who.id,
        created_at: now,
        status: TableStatus::Open,
        bots: None,
        daily: Some(key.clone()),
        pace: serde_json::to_value(protocol::Pace::Untimed).expect("a pace serializes"),
        clock: None,
        updated_at: now,
    };
    let seats = vec![Occupant::Player {
        id: who.id,
        name: who.name.clone(),
    }];
    // A second daily table of the same player and deal is refused by the store (a unique
    // index): another request of this player created it in between, so that one is handed
    // back (R-25: one game per player and deal).
    let handle = match app.core.create(record, seats).await {
        Ok(handle) => handle,
        Err(TableError::Exists) => {
            // The other request's table runs (or failed to start).
            let existing = app
                .store
                .daily_table_of(&key, who.id)
                .await?
                .ok_or_else(|| {
                    tracing::error!(key, "a daily table conflicted but none is stored");
                    ApiError::Internal
                })?;
            let info = daily_info(&app, existing, &headers)
                .await?
                .ok_or_else(|| ApiError::conflict("table_closed", "this table has closed"))?;
            return Ok(Json(info));
        }
        Err(e) => return Err(e.into()),
    };
    let info = handle.ask(|reply| Cmd::Start { who, reply }).await?;
    Ok(Json(info))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DailyQuery {
    /// The target: 21 (default), 13 or 8.
    #[param(schema_with = crate::extract::params::solitaire_target)]
    pub target: Option<u32>,
    /// A past or current UTC day, `YYYY-MM-DD` (default today).
    pub day: Option<String>,
}

/// A day's daily Solitaire deal: its commitment (and seed once the day is over) and board.
#[utoipa::path(
    get,
    path = "/api/daily/solitaire",
    tag = "daily",
    summary = "A day's daily Solitaire deal: its commitment (the seed once the day is over) and board",
    params(DailyQuery),
    responses(
        (status = 200, description = "the deal's board and results", body = wire::DailyBoard),
        (status = 400, description = "`code`: bad_options, malformed", body = wire::ErrorBody),
        (status = 404, description = "`code`: not_found (nobody played that deal)", body = wire::ErrorBody),
    ),
)]
pub async fn daily_board(
    State(app): State<AppState>,
    Query(q): Query<DailyQuery>,
) -> Result<Json<protocol::DailyBoard>, ApiError> {
    let target = daily_target(q.target.unwrap_or(21))?;
    let now = now_ms();
    let today = crate::state::utc_day(now);
    let day = q.day.unwrap_or_else(|| today.clone());
    let start = crate::state::day_start_ms(&day)
        .filter(|_| day <= today)
        .ok_or_else(|| {
            ApiError::Malformed(format!(
                "day must be a past or current YYYY-MM-DD, not {day:?}"
            ))
        })?;
    let key = daily_key(target, &day);
    // Today's deal is fixed by whoever asks first; a past day has one only if it was played.
    let fresh = (day == today).then(|| auth::random_hex(32));
    let seed_hex = app
        .store
        .daily_seed(&key, fresh.as_deref(), now)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!("nobody played daily Solitaire {target} on {day}"))
        })?;
    let seed = game_core::Seed::from_hex(&seed_hex).ok_or_else(|| {
        tracing::error!(key, "a stored daily seed is not 64 hex digits");
        ApiError::Internal
    })?;
    let results = app
        .store
        // Only games finished within the deal's day rank: after it, its seed is public.
        .daily_board(&key, start + 86_400_000, 100)
        .await?
        .into_iter()
        .map(|r| protocol::DailyResult {
            player: PlayerInfo {
                id: r.player_id,
                name: r.name,
            },
            discards: r.score,
            finished: r.finished,
            table_id: r.table_id,
        })
        .collect();
    Ok(Json(protocol::DailyBoard {
        seed: table::seed_public(true, Some(&key)).then(|| seed.to_hex()),
        seed_sha256: seed.commitment(),
        day,
        target,
        results,
    }))
}
