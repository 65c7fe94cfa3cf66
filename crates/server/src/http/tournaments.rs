//! Tournaments (#31, docs/tournaments.md): create, list, read, join, withdraw. The
//! director that runs them is `crate::tournaments`; these handlers only store steps
//! (joins and withdrawals), which any node may do.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use protocol::{CreateTournamentRequest, JoinTournamentRequest, TournamentInfo, TournamentList};
use serde::Deserialize;
use store::TournamentStatus;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::*;
use crate::state::{AppState, now_ms};
use crate::tournaments as t;
use crate::wire;

fn tournament_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| ApiError::TournamentNotFound(id.to_string()))
}

#[utoipa::path(
    post,
    path = "/api/tournaments",
    tag = "tournaments",
    summary = "Create a tournament (Swiss or arena)",
    security(("cookie" = []), ("bearer" = [])),
    request_body = wire::CreateTournamentRequest,
    responses(
        (status = 201, description = "created; the creator of a private one sees its invite code", body = wire::TournamentInfo),
        (status = 400, description = "`code`: malformed, bad_tournament (the message names the field and its bounds), unknown_game, bad_options", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized", body = wire::ErrorBody),
        (status = 403, description = "`code`: not_claimed (a guest: only a claimed account creates tournaments)", body = wire::ErrorBody),
        (status = 409, description = "`code`: too_many_tournaments (the creator has as many tournaments in registration or running as the server allows, `--max-tournaments-per-player`, 3 by default)", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (too many tables, daily games and tournaments created from this address: one allowance, `--tables-per-minute`)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn create_tournament(
    State(app): State<AppState>,
    Me(who): Me,
    Body(req): Body<CreateTournamentRequest>,
) -> Result<(StatusCode, Json<TournamentInfo>), ApiError> {
    let record = t::plan(&req, Some(who.id), now_ms())?;
    if app.store.account_of(who.id).await?.is_none() {
        return Err(ApiError::Forbidden(
            "not_claimed",
            "only a signed-in account creates tournaments: claim an account first".into(),
        ));
    }
    let cap = app.config.max_tournaments_per_player;
    if cap > 0 && app.store.open_tournaments_created_by(who.id).await? >= i64::from(cap) {
        return Err(ApiError::Conflict(
            "too_many_tournaments",
            format!(
                "you have {cap} tournaments in registration or running, the most one player \
                 may create: wait for one to end, or cancel one"
            ),
        ));
    }
    app.store.create_tournament(&record).await?;
    tracing::info!(tournament = %record.id, game = %record.game, "tournament created");
    app.tournament_wake.notify_one();
    let l = t::Loaded::from_record(record)?;
    Ok((
        StatusCode::CREATED,
        Json(t::info(&app, &l, Some(who.id)).await?),
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `registration`, `running`, `finished` or `cancelled` (default, or empty: all).
    #[param(schema_with = crate::extract::params::tournament_status)]
    pub status: Option<String>,
}

/// Most tournaments in one list, newest first.
const LIST_LIMIT: i64 = 200;

#[utoipa::path(
    get,
    path = "/api/tournaments",
    tag = "tournaments",
    summary = "Public tournaments, newest first (and the caller's private ones)",
    security((), ("cookie" = []), ("bearer" = [])),
    params(ListQuery),
    responses(
        (status = 200, description = "the tournaments", body = wire::TournamentList),
        (status = 400, description = "`code`: bad_tournament (an unknown status)", body = wire::ErrorBody),
    ),
)]
pub async fn list_tournaments(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Result<Json<TournamentList>, ApiError> {
    // A cancelled tournament is stored as finished, with its reason.
    let (status, cancelled) = match q.status.as_deref() {
        None | Some("") => (None, None),
        Some("cancelled") => (Some(TournamentStatus::Finished), Some(true)),
        Some(s) => {
            let st = TournamentStatus::parse(s).ok_or_else(|| {
                ApiError::BadTournament(
                    "bad_tournament",
                    format!("status {s:?}: registration, running, finished or cancelled"),
                )
            })?;
            (Some(st), Some(false))
        }
    };
    let me = player_from(&headers, &app).await?.map(|w| w.id);
    let mut out = Vec::new();
    // Filtered in the query, before its limit: a crowd of private or cancelled
    // tournaments must not push the public ones out of the list.
    for r in app
        .store
        .listed_tournaments(status, cancelled, me, LIST_LIMIT)
        .await?
    {
        let l = t::Loaded::from_record(r)?;
        let mine = me.is_some()
            && (l.record.created_by == me || l.engine.player(me.unwrap_or_default()).is_some());
        if l.record.private && !mine {
            continue;
        }
        out.push(t::summary(&l, me));
    }
    Ok(Json(TournamentList { tournaments: out }))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TournamentInvite {
    /// A private tournament's invite code (not needed by its members and its creator).
    pub invite: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/tournaments/{id}",
    tag = "tournaments",
    summary = "A tournament: settings, standings, every game with its table",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the tournament's id (a UUID)"), TournamentInvite),
    responses(
        (status = 200, description = "the tournament", body = wire::TournamentInfo),
        (status = 403, description = "`code`: invite_required", body = wire::ErrorBody),
        (status = 404, description = "`code`: tournament_not_found", body = wire::ErrorBody),
    ),
)]
pub async fn get_tournament(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TournamentInvite>,
    headers: HeaderMap,
) -> Result<Json<TournamentInfo>, ApiError> {
    let l = t::load(&app, tournament_id(&id)?).await?;
    let me = player_from(&headers, &app).await?.map(|w| w.id);
    t::may_see(&l, me, q.invite.as_deref())?;
    Ok(Json(t::info(&app, &l, me).await?))
}

#[utoipa::path(
    post,
    path = "/api/tournaments/{id}/join",
    tag = "tournaments",
    summary = "Join a tournament (a private one with its invite code)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the tournament's id (a UUID)")),
    request_body = wire::JoinTournamentRequest,
    responses(
        (status = 200, description = "joined", body = wire::TournamentInfo),
        (status = 400, description = "`code`: malformed (the id is not a UUID, or the body is not a `JoinTournamentRequest`)", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized", body = wire::ErrorBody),
        (status = 403, description = "`code`: invite_required, bots_not_allowed", body = wire::ErrorBody),
        (status = 404, description = "`code`: tournament_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: already_joined, closed (over, last Swiss round started, arena pairing stopped), tournament_cancelled", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (seat requests from this address, counted with table joins)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
        (status = 503, description = "`code`: busy (many steps of the tournament at once: try again)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn join_tournament(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
    Body(req): Body<JoinTournamentRequest>,
) -> Result<Json<TournamentInfo>, ApiError> {
    let id = tournament_id(&id)?;
    let l = t::load(&app, id).await?;
    if l.record.private && req.invite.as_deref() != l.record.invite_code.as_deref() {
        return Err(ApiError::Forbidden(
            "invite_required",
            "this tournament is private: join it through its invite link".into(),
        ));
    }
    let bot = app.store.player(who.id).await?.is_some_and(|p| p.bot);
    if bot && !l.settings.bots_allowed {
        return Err(ApiError::Forbidden(
            "bots_not_allowed",
            "bot accounts may not join this tournament".into(),
        ));
    }
    let rating = t::rating_of(
        &app,
        who.id,
        &l.record.game,
        l.settings.engine.table_size,
        bot,
    )
    .await;
    let (l, _) = t::step(&app, id, None, |t, _, now| t.join(who.id, rating, now)).await?;
    Ok(Json(t::info(&app, &l, Some(who.id)).await?))
}

#[utoipa::path(
    post,
    path = "/api/tournaments/{id}/withdraw",
    tag = "tournaments",
    summary = "Withdraw from a tournament (past games stand)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the tournament's id (a UUID)")),
    responses(
        (status = 200, description = "withdrawn", body = wire::TournamentInfo),
        (status = 401, description = "`code`: unauthorized", body = wire::ErrorBody),
        (status = 404, description = "`code`: tournament_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: not_a_member, not_active, tournament_over, tournament_cancelled", body = wire::ErrorBody),
        (status = 503, description = "`code`: busy (many steps of the tournament at once: try again)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn withdraw_tournament(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
) -> Result<Json<TournamentInfo>, ApiError> {
    let id = tournament_id(&id)?;
    let (l, _) = t::step(&app, id, None, |t, _, now| t.withdraw(who.id, now)).await?;
    Ok(Json(t::info(&app, &l, Some(who.id)).await?))
}

#[utoipa::path(
    post,
    path = "/api/tournaments/{id}/cancel",
    tag = "tournaments",
    summary = "Cancel a tournament that has not started (its creator only)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, format = Uuid, description = "the tournament's id (a UUID)")),
    responses(
        (status = 200, description = "cancelled: `status` is `cancelled`, `cancelled` is `creator`; its followers are told", body = wire::TournamentInfo),
        (status = 401, description = "`code`: unauthorized", body = wire::ErrorBody),
        (status = 403, description = "`code`: not_creator (only the player who created it may cancel it; the operator's scheduled ones are cancelled by the server, docs/tournaments.md)", body = wire::ErrorBody),
        (status = 404, description = "`code`: tournament_not_found", body = wire::ErrorBody),
        (status = 409, description = "`code`: already_started (running), tournament_over (finished), tournament_cancelled (cancelled already)", body = wire::ErrorBody),
    ),
)]
pub async fn cancel_tournament(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Me(who): Me,
) -> Result<Json<TournamentInfo>, ApiError> {
    let id = tournament_id(&id)?;
    let l = t::load(&app, id).await?;
    if l.record.created_by != Some(who.id) {
        return Err(ApiError::Forbidden(
            "not_creator",
            "only the player who created this tournament may cancel it".into(),
        ));
    }
    if !t::cancel(&app, id, "creator").await? {
        // Not in registration (now: the director may have just started it).
        let l = t::load(&app, id).await?;
        return Err(if l.record.cancelled.is_some() {
            t::cancelled_error()
        } else if l.record.status == TournamentStatus::Running {
            ApiError::Conflict(
                "already_started",
                "this tournament has started: it can no longer be cancelled".into(),
            )
        } else {
            ApiError::Conflict(
                "tournament_over",
                "this tournament is over: it can no longer be cancelled".into(),
            )
        });
    }
    let l = t::load(&app, id).await?;
    Ok(Json(t::info(&app, &l, Some(who.id)).await?))
}
