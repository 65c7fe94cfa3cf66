//! Players: new guests, the session and `me`, a player's public profile and matches.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use protocol::{GuestRequest, GuestResponse, PlayerInfo};
use serde::Deserialize;
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::extract::*;
use crate::state::{AppState, now_ms};
use crate::wire;
use realtime::table::{self};

#[utoipa::path(
    post,
    path = "/api/guest",
    tag = "players",
    summary = "Become a guest player",
    request_body = wire::GuestRequest,
    responses(
        (status = 200, description = "the new player and its token, also set as the `fib_token` cookie", body = wire::GuestResponse),
        (status = 400, description = "`code`: malformed, bad_name, name_forbidden_char, name_looks_like_bot", body = wire::ErrorBody),
        (status = 413, description = "`code`: too_large", body = wire::ErrorBody),
        (status = 429, description = "`code`: rate_limited (too many requests of this kind from this address)", body = wire::ErrorBody, headers(("Retry-After" = u64, description = "seconds to wait before trying again"))),
    ),
)]
pub async fn create_guest(
    State(app): State<AppState>,
    headers: HeaderMap,
    Body(req): Body<GuestRequest>,
) -> Result<Response, ApiError> {
    let name = auth::clean_name(&req.name)?;
    let token = auth::random_hex(32);
    let p = app
        .store
        .create_player(
            Uuid::new_v4(),
            &name,
            &auth::hash_token(&token),
            &crate::http::accounts::device_label(&headers),
            now_ms(),
        )
        .await?;
    tracing::info!(player = %p.id, "new guest");
    let body = GuestResponse {
        player: PlayerInfo {
            id: p.id,
            name: p.name,
        },
        token: token.clone(),
    };
    Ok((
        [(
            header::SET_COOKIE,
            auth::set_cookie(&token, app.config.secure_cookies),
        )],
        Json(body),
    )
        .into_response())
}

/// `GET /api/session`: who the token belongs to, or `null`, always 200: a page can ask at
/// start-up without an error when nobody has signed in yet.
#[utoipa::path(
    get,
    path = "/api/session",
    tag = "players",
    summary = "Who the token belongs to, or null (always 200)",
    security((), ("cookie" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "the player, or `player: null` when no valid token was sent", body = wire::Session),
    ),
)]
pub async fn session(
    State(app): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<protocol::Session>, ApiError> {
    let who = player_from(&headers, &app).await?;
    Ok(Json(protocol::Session {
        player: who.map(|w| PlayerInfo {
            id: w.id,
            name: w.name,
        }),
    }))
}

#[utoipa::path(
    get,
    path = "/api/me",
    tag = "players",
    summary = "Who the token belongs to",
    security(("cookie" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "the player", body = wire::PlayerInfo),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
    ),
)]
pub async fn me(Me(who): Me) -> Json<PlayerInfo> {
    Json(PlayerInfo {
        id: who.id,
        name: who.name,
    })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LimitQuery {
    /// At most this many rows (default 50, at most 500).
    pub limit: Option<i64>,
}

/// The page of a player's public matches.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PublicLimitQuery {
    /// At most this many rows (default 20, at most 100).
    pub limit: Option<i64>,
}

#[utoipa::path(
    get,
    path = "/api/me/matches",
    tag = "players",
    summary = "The caller's matches, newest first",
    security(("cookie" = []), ("bearer" = [])),
    params(LimitQuery),
    responses(
        (status = 200, description = "the matches", body = Vec<wire::MatchRow>),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
        (status = 401, description = "`code`: unauthorized (no valid token)", body = wire::ErrorBody),
    ),
)]
pub async fn my_matches(
    State(app): State<AppState>,
    Me(who): Me,
    Query(q): Query<LimitQuery>,
) -> Result<Json<Vec<protocol::MatchRow>>, ApiError> {
    let rows = app
        .store
        .player_matches(who.id, q.limit.unwrap_or(50).clamp(1, 500))
        .await?;
    Ok(Json(rows.into_iter().map(|r| match_row(&app, r)).collect()))
}

/// A stored match row as the lists show it: the other seats with their bot flags.
fn match_row(app: &AppState, r: store::MatchRow) -> protocol::MatchRow {
    let own = r.seat as usize;
    let opponents = r
        .seats
        .into_iter()
        .enumerate()
        .filter(|(seat, _)| *seat != own)
        .filter_map(|(seat, o)| match o {
            store::Occupant::Empty => None,
            store::Occupant::Player { id, name } => Some(protocol::MatchOpponent::Player {
                seat,
                id,
                name,
                bot_account: app.core.is_bot_account(id),
            }),
            store::Occupant::Bot { level } => Some(protocol::MatchOpponent::Bot {
                seat,
                level: protocol::BotLevel::parse(&level).unwrap_or(protocol::BotLevel::Normal),
            }),
        })
        .collect();
    protocol::MatchRow {
        opponents,
        table_id: r.table_id,
        game: r.game,
        status: table::to_proto_status(r.status),
        seat: r.seat as usize,
        score: r.score,
        won: r.won,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// A player as anyone may see them.
#[utoipa::path(
    get,
    path = "/api/players/{id}",
    tag = "players",
    summary = "A player's public card: display name, whether claimed, since when",
    params(("id" = String, Path, format = Uuid, description = "the player's id (a UUID)")),
    responses(
        (status = 200, description = "the player", body = wire::PublicPlayer),
        (status = 400, description = "`code`: malformed (the id is not a UUID)", body = wire::ErrorBody),
        (status = 404, description = "`code`: not_found (no such player)", body = wire::ErrorBody),
    ),
)]
pub async fn player_profile(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<protocol::PublicPlayer>, ApiError> {
    let id = player_id(&id)?;
    let p = app
        .store
        .player(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no player {id}")))?;
    let claimed = app.store.account_of(id).await?.is_some();
    Ok(Json(protocol::PublicPlayer {
        id: p.id,
        name: p.name,
        claimed,
        created_at: p.created_at,
        bot: p.bot,
    }))
}

/// A player's finished public matches, for the profile: private tables and matches still
/// being played are left out.
#[utoipa::path(
    get,
    path = "/api/players/{id}/matches",
    tag = "players",
    summary = "A player's finished public matches, newest first",
    params(("id" = String, Path, format = Uuid, description = "the player's id (a UUID)"), PublicLimitQuery),
    responses(
        (status = 200, description = "the matches (empty for an unknown player); each has a replay at /api/tables/{id}/replay", body = Vec<wire::MatchRow>),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
    ),
)]
pub async fn player_matches(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<PublicLimitQuery>,
) -> Result<Json<Vec<protocol::MatchRow>>, ApiError> {
    let id = player_id(&id)?;
    let want = q.limit.unwrap_or(20).clamp(1, 100);
    // Filtered by the query itself: a walk's player whose newest 500 tables were private
    // showed none of the thousands of public ones when the filter came after a limit.
    let rows = app.store.public_matches(id, want).await?;
    Ok(Json(rows.into_iter().map(|r| match_row(&app, r)).collect()))
}
