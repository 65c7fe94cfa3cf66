//! Tables and seats: the game catalogue, the lobby's list, creating a table, its info and
//! state, joining, leaving, starting, bots per seat, and its fairness records (round
//! commitments and seeds, a recomputed deal, the step replay of a finished match).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use protocol::{
    CreateTableRequest, CreateTableResponse, DealRecord, JoinRequest, RoundFairness, TableInfo,
};
use store::{Occupant, TableRecord, TableStatus};
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::extract::*;
use crate::state::{AppState, now_ms};
use crate::wire;
use realtime::table::{self, Cmd};

#[utoipa::path(
    get,
    path = "/api/games",
    tag = "tables",
    summary = "The games the server offers",
    responses(
        (status = 200, description = "each game with its player range and default options", body = Vec<wire::GameInfo>),
    ),
)]
pub async fn list_games() -> Json<Vec<games::GameInfo>> {
    Json(games::catalogue())
}

#[utoipa::path(
    get,
    path = "/api/tables",
    tag = "tables",
    summary = "The lobby: public tables that are open or in play, a page at a time",
    params(LobbyQuery),
    responses(
        (status = 200, description = "a page of the public tables, of `game` if given: open ones first, newest first, from `offset` (default 0), `limit` of them (1 to `--lobby-shown`, default `--lobby-shown`, 200; outside, the nearest); the header `X-Total-Count` says how many are listed in all", body = Vec<wire::TableInfo>, headers(("X-Total-Count" = u64, description = "how many public tables (of `game`) the lobby lists in all"))),
        (status = 400, description = "`code`: unknown_game", body = wire::ErrorBody),
    ),
)]
pub async fn list_tables(
    State(app): State<AppState>,
    Query(q): Query<LobbyQuery>,
) -> Result<([(&'static str, String); 1], Json<Vec<TableInfo>>), ApiError> {
    if let Some(g) = &q.game
        && !games::catalogue().iter().any(|c| c.kind == *g)
    {
        return Err(ApiError::BadTable(
            "unknown_game",
            format!("there is no game {g:?}; see GET /api/games"),
        ));
    }
    // Clamped like the leaderboard's `limit`, not refused.
    let shown = app.config.lobby_shown;
    let limit = q.limit.unwrap_or(shown).clamp(1, shown.max(1));
    let (tables, total) = app
        .lobby
        .page(q.game.as_deref(), q.offset.unwrap_or(0), limit);
    Ok(([("x-total-count", total.to_string())], Json(tables)))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LobbyQuery {
    /// Only this game's tables (a `kind` of `GET /api/games`).
    pub game: Option<String>,
    /// Tables to skip, in the lobby's order (default 0): the next page is `offset` plus
    /// the number of tables just read, until `X-Total-Count`.
    pub offset: Option<usize>,
    /// Tables per page, 1 to `--lobby-shown` (default `--lobby-shown`, 200); a value
    /// outside is taken as the nearest.
    pub limit: Option<usize>,
}

#[utoipa::path(
    post,
    path = "/api/tables",
    tag = "tables",
    summary = "Create a table (and sit at it unless `join` is false)",
    security(("cookie" = []), ("bearer" = [])),
    request_body = wire::CreateTableRequest,
    responses(
        (status = 201, description = "the new table, with its invite code when private", body = wire::CreateTableResponse),
        (status = 400, description = "`code`: malformed, unknown_game, bad_options, bad_player_count, bad_pace", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (too many tables created from this address), too_many_open_tables (the player has too many open tables)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn create_table(
    State(app): State<AppState>,
    Me(who): Me,
    Body(req): Body<CreateTableRequest>,
) -> Result<(StatusCode, Json<CreateTableResponse>), ApiError> {
    let options = games::check_options(&req.game, &req.options, req.seats)
        .map_err(|e| ApiError::BadTable(e.code(), e.to_string()))?;
    req.pace
        .validate()
        .map_err(|m| ApiError::BadTable("bad_pace", m))?;
    // Held until the table is stored (`limits`: simultaneous requests count each other).
    let _cap = app
        .limits
        .open_tables(app.store.as_ref(), &app.metrics, who.id)
        .await?;
    let now = now_ms();
    let invite_code = req.private.then(|| auth::random_hex(12));
    let record = TableRecord {
        id: Uuid::new_v4(),
        game: req.game.clone(),
        options,
        rules_version: 0,
        seat_count: req.seats as i32,
        private: req.private,
        invite_code: invite_code.clone(),
        created_by: who.id,
        created_at: now,
        status: TableStatus::Open,
        bots: req.bots.map(|b| b.as_str().to_string()),
        daily: None,
        pace: serde_json::to_value(req.pace).expect("a pace serializes"),
        clock: None,
        updated_at: now,
    };
    let mut seats = vec![Occupant::Empty; req.seats];
    if req.join {
        seats[0] = Occupant::Player {
            id: who.id,
            name: who.name.clone(),
        };
    }
    let handle = app.core.create(record, seats).await?;
    tracing::info!(table = %handle.id, game = %req.game, "table created");
    let info = handle.info().await?;
    Ok((
        StatusCode::CREATED,
        Json(CreateTableResponse {
            table: info,
            invite_code,
        }),
    ))
}

#[utoipa::path(
    get,
    path = "/api/tables/{id}",
    tag = "tables",
    summary = "One table's public information",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), InviteQuery),
    responses(
        (status = 200, description = "the table", body = wire::TableInfo),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: table_closed", body = wire::ErrorBody),
    ),
)]
pub async fn get_table(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<Json<TableInfo>, ApiError> {
    let who = player_from(&headers, &app).await?;
    let h = reach_table(&app, &id, q.invite.as_deref(), who.as_ref()).await?;
    Ok(Json(h.info().await?))
}

#[utoipa::path(
    get,
    path = "/api/tables/{id}/state",
    tag = "tables",
    summary = "A table's full state, as this viewer's socket would get it first",
    description = "The same JSON as the table socket's first `state` message (docs/protocol.md \
        §3.4): the table, whose eyes (`you`), the game's view for them (a seated player sees \
        their own hand), their legal actions and the fairness records. A page can draw the \
        table from it at once, then open the socket with `since=<version>` and receive only \
        what changed since.",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), InviteQuery),
    responses(
        (status = 200, description = "the `state` message", body = wire::ServerMsg),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: table_closed", body = wire::ErrorBody),
    ),
)]
pub async fn get_table_state(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = player_from(&headers, &app).await?;
    let h = reach_table(&app, &id, q.invite.as_deref(), who.as_ref()).await?;
    let text = h.state_for(who.map(|w| w.id)).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        axum::body::Body::from(text.into_bytes()),
    )
        .into_response())
}

#[utoipa::path(
    post,
    path = "/api/tables/{id}/join",
    tag = "tables",
    summary = "Take a seat (a given one, or the first free)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)")),
    request_body = wire::JoinRequest,
    responses(
        (status = 200, description = "the table after joining", body = wire::TableInfo),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: already_seated, already_started, table_closed, bad_seat, seat_taken, table_full", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (too many requests of this kind from this address)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn join_table(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<TableInfo>, ApiError> {
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge,
        _ => ApiError::Malformed(e.body_text()),
    })?;
    // The body is optional: empty means "any free seat, no invite code".
    let req: JoinRequest = if body.iter().all(u8::is_ascii_whitespace) {
        JoinRequest::default()
    } else {
        let protocol::strict::Unique(value) =
            serde_json::from_slice(&body).map_err(|e| ApiError::Malformed(e.to_string()))?;
        protocol::strict::decode(&value, "body").map_err(ApiError::Malformed)?
    };
    let h = reach_table(&app, &id, req.invite_code.as_deref(), Some(&who)).await?;
    let info = h
        .ask(|reply| Cmd::Join {
            who,
            seat: req.seat,
            reply,
        })
        .await?;
    Ok(Json(info))
}

#[utoipa::path(
    post,
    path = "/api/tables/{id}/leave",
    tag = "tables",
    summary = "Leave an open table's seat",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)")),
    responses(
        (status = 200, description = "the table after leaving", body = wire::TableInfo),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_seated, already_started", body = wire::ErrorBody),
    ),
)]
pub async fn leave_table(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
) -> Result<Json<TableInfo>, ApiError> {
    let h = reach_table(&app, &id, None, Some(&who)).await?;
    Ok(Json(h.ask(|reply| Cmd::Leave { who, reply }).await?))
}

#[utoipa::path(
    post,
    path = "/api/tables/{id}/start",
    tag = "tables",
    summary = "Start the match (empty seats get the table's bots)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)")),
    responses(
        (status = 200, description = "the started table", body = wire::TableInfo),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_seated, already_started, seats_not_full", body = wire::ErrorBody),
    ),
)]
pub async fn start_table(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
) -> Result<Json<TableInfo>, ApiError> {
    let h = reach_table(&app, &id, None, Some(&who)).await?;
    Ok(Json(h.ask(|reply| Cmd::Start { who, reply }).await?))
}

/// A seated player chooses a bot for an empty seat, or takes one out, before the start.
#[utoipa::path(
    post,
    path = "/api/tables/{id}/bots",
    tag = "tables",
    summary = "Seat a bot at an open table's empty seat, or take one out",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)")),
    request_body = wire::SeatBotRequest,
    responses(
        (status = 200, description = "the table", body = wire::TableInfo),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_seated, already_started, bad_seat, seat_taken, not_a_bot", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
    ),
)]
pub async fn seat_bot(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
    Body(req): Body<protocol::SeatBotRequest>,
) -> Result<Json<TableInfo>, ApiError> {
    let h = reach_table(&app, &id, None, Some(&who)).await?;
    Ok(Json(
        h.ask(|reply| Cmd::SetBot {
            who,
            seat: req.seat,
            level: req.level,
            reply,
        })
        .await?,
    ))
}

/// A stored table, with a private table's invite rule applied as for live ones: its
/// invite code, or a seat at it.
async fn stored(
    app: &AppState,
    id: &str,
    invite: Option<&str>,
    headers: &HeaderMap,
) -> Result<store::StoredTable, ApiError> {
    let tid = Uuid::parse_str(id).map_err(|_| ApiError::TableNotFound(id.to_string()))?;
    let st = app
        .store
        .load_table(tid)
        .await?
        .ok_or_else(|| ApiError::TableNotFound(id.to_string()))?;
    may_see(app, headers, &crate::replay::Access::of(&st), invite).await?;
    Ok(st)
}

/// The rule of a private table's stored records: its invite code, or a seat at it.
async fn may_see(
    app: &AppState,
    headers: &HeaderMap,
    access: &crate::replay::Access,
    invite: Option<&str>,
) -> Result<(), ApiError> {
    if access.private && access.invite_code.as_deref() != invite {
        let who = player_from(headers, app).await?;
        if !who.is_some_and(|w| access.players.contains(&w.id)) {
            return Err(ApiError::InviteRequired);
        }
    }
    Ok(())
}

/// A finished match that whoever sent `headers` may replay (and so have analysed): the
/// table's visibility as for its other records, and over, and not a daily deal whose day
/// is still on (its deal is still being played by others).
pub(crate) async fn replayable(
    app: &AppState,
    id: &str,
    invite: Option<&str>,
    headers: &HeaderMap,
) -> Result<store::StoredTable, ApiError> {
    let st = stored(app, id, invite, headers).await?;
    if st.record.status != TableStatus::Finished {
        return Err(ApiError::conflict(
            "replay_not_finished",
            "a match can be replayed once it is over (its hidden cards are still in play)",
        ));
    }
    if !table::seed_public(true, st.record.daily.as_deref()) {
        return Err(ApiError::conflict(
            "daily_in_progress",
            "a daily deal's seed and deal are published when its day (UTC) is over",
        ));
    }
    Ok(st)
}

/// Seed commitments for every round, and the seeds of ended rounds.
#[utoipa::path(
    get,
    path = "/api/tables/{id}/rounds",
    tag = "tables",
    summary = "Every round's seed commitment, and the seeds of ended rounds (R-0)",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), InviteQuery),
    responses(
        (status = 200, description = "one entry per dealt round", body = Vec<wire::RoundFairness>),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
    ),
)]
pub async fn table_rounds(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<Json<Vec<RoundFairness>>, ApiError> {
    let st = stored(&app, &id, q.invite.as_deref(), &headers).await?;
    Ok(Json(
        st.rounds
            .iter()
            .map(|r| RoundFairness {
                round: r.round_no as u32,
                seed_sha256: r.commitment.clone(),
                seed: table::seed_public(r.ended_at.is_some(), st.record.daily.as_deref())
                    .then(|| r.seed_hex.clone()),
            })
            .collect(),
    ))
}

/// The deal of an ended round, recomputed from its seed by replaying the stored log.
#[utoipa::path(
    get,
    path = "/api/tables/{id}/rounds/{round}/deal",
    tag = "tables",
    summary = "An ended round's seed and its deal, recomputed from the log (docs/deals.md)",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), ("round" = u32, Path, description = "the round number, from 1"), InviteQuery),
    responses(
        (status = 200, description = "the deal record", body = wire::DealRecord),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found, not_found (no such round)", body = wire::ErrorBody),
        (status = 409, description = "`code`: round_in_progress, daily_in_progress", body = wire::ErrorBody),
    ),
)]
pub async fn round_deal(
    State(app): State<AppState>,
    Path((id, round)): Path<(String, u32)>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<Json<DealRecord>, ApiError> {
    let st = stored(&app, &id, q.invite.as_deref(), &headers).await?;
    let r = st
        .rounds
        .iter()
        .find(|r| r.round_no as u32 == round)
        .ok_or_else(|| ApiError::NotFound(format!("table {id} has no round {round}")))?;
    if r.ended_at.is_none() {
        return Err(ApiError::conflict(
            "round_in_progress",
            "the seed and deal of a round are published when the round ends",
        ));
    }
    if !table::seed_public(true, st.record.daily.as_deref()) {
        return Err(ApiError::conflict(
            "daily_in_progress",
            "a daily deal's seed and deal are published when its day (UTC) is over",
        ));
    }
    let deal = table::deal_of_round(&st, round).map_err(|e| {
        tracing::error!(table = %id, round, error = %e, "replay for a deal record failed");
        ApiError::Internal
    })?;
    Ok(Json(DealRecord {
        round,
        seed: r.seed_hex.clone(),
        seed_sha256: r.commitment.clone(),
        deal,
    }))
}

/// A finished match, step by step with every hand (`table::replay`). Anyone who can see the
/// table may replay it once it is over; a daily deal only once its day is over too.
#[utoipa::path(
    get,
    path = "/api/tables/{id}/replay",
    tag = "tables",
    summary = "A finished match step by step, every hand revealed (docs/protocol.md)",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"), InviteQuery),
    responses(
        (status = 200, description = "the replay", body = wire::Replay),
        (status = 403, description = "`code`: invite_required (a private table without its invite code)", body = wire::ErrorBody),
        (status = 404, description = "`code`: table_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: replay_not_finished, daily_in_progress", body = wire::ErrorBody),
    ),
)]
pub async fn table_replay(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<InviteQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let cached = Uuid::parse_str(&id).ok().and_then(|t| app.replays.get(t));
    let json = match cached {
        // A finished match's replay, and who may see it, no longer change: the table (its
        // whole action log) is not loaded again to check the invite rule.
        Some((json, access)) => {
            may_see(&app, &headers, &access, q.invite.as_deref()).await?;
            json
        }
        None => {
            let st = replayable(&app, &id, q.invite.as_deref(), &headers).await?;
            let table = st.record.id;
            let access = crate::replay::Access::of(&st);
            // Built off the async workers: a long match takes a few hundred milliseconds,
            // which the tables' tasks must not wait for.
            let built = tokio::task::spawn_blocking(move || {
                crate::replay::build(&st)
                    .and_then(|r| serde_json::to_vec(&r).map_err(|e| e.to_string()))
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|e| {
                tracing::error!(table = %id, error = %e, "replaying a finished match failed");
                ApiError::Internal
            })?;
            let json = axum::body::Bytes::from(built);
            app.replays.put(table, json.clone(), access);
            json
        }
    };
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json,
    )
        .into_response())
}
