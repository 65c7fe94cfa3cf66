//! The HTTP API: guests, the game catalogue, tables and seats, fairness records,
//! leaderboards, health and metrics. Bodies are the `protocol` crate's types; every error
//! is an [`ApiError`] with a JSON [`protocol::ErrorBody`].

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use protocol::{
    CreateTableRequest, CreateTableResponse, DealRecord, GuestRequest, GuestResponse, JoinRequest,
    PlayerInfo, RoundFairness, TableInfo,
};
use serde::Deserialize;
use store::{Occupant, TableRecord, TableStatus};
use uuid::Uuid;

use crate::auth;
use crate::error::ApiError;
use crate::openapi::wire;
use crate::state::{AppState, now_ms};
use crate::table::{self, Cmd, Who};
use realtime::TableError;

/// A JSON body whose rejection is our `malformed` error rather than axum's plain text.
pub struct Body<T>(pub T);

impl<T, S> axum::extract::FromRequest<S> for Body<T>
where
    Json<T>: axum::extract::FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;
    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Body(v)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::TooLarge),
            Err(e) => Err(ApiError::Malformed(e.body_text())),
        }
    }
}

/// The signed-in player of a request (401 `unauthorized` without a valid token).
pub struct Me(pub Who);

impl FromRequestParts<AppState> for Me {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        player_from(&parts.headers, app)
            .await?
            .map(Me)
            .ok_or(ApiError::Unauthorized)
    }
}

/// The signed-in player of a request and the id of its session (device): 401
/// `unauthorized` without a valid token.
pub struct Signed(pub Who, pub String);

impl FromRequestParts<AppState> for Signed {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        authed(&parts.headers, app)
            .await?
            .map(|(who, session)| Signed(who, session))
            .ok_or(ApiError::Unauthorized)
    }
}

/// How stale a session's `last_seen_at` may get before a request refreshes it: often
/// enough for the device list, rarely enough not to write on every request.
const TOUCH_EVERY_MS: i64 = 5 * 60 * 1000;

/// The player a request's token names, if any.
pub async fn player_from(headers: &HeaderMap, app: &AppState) -> Result<Option<Who>, ApiError> {
    Ok(authed(headers, app).await?.map(|(who, _)| who))
}

/// The player a request's token names and the id of its session, if any. The token is
/// looked up every time, so a device signed out is refused at once.
pub async fn authed(
    headers: &HeaderMap,
    app: &AppState,
) -> Result<Option<(Who, String)>, ApiError> {
    let Some(token) = auth::token_from(headers) else {
        return Ok(None);
    };
    let Some(a) = app
        .store
        .player_by_token_hash(&auth::hash_token(&token))
        .await?
    else {
        return Ok(None);
    };
    let now = now_ms();
    if now - a.session.last_seen_at > TOUCH_EVERY_MS
        && let Err(e) = app.store.touch_session(&a.session.id, now).await
    {
        // Only the device list's "last seen" is late: the request goes on.
        tracing::warn!(error = %e, "could not note a session's use");
    }
    Ok(Some((
        Who {
            id: a.player.id,
            name: a.player.name,
        },
        a.session.id,
    )))
}

#[utoipa::path(
    get,
    path = "/healthz",
    tag = "service",
    summary = "Health",
    responses(
        (status = 200, description = "`{\"status\": \"ok\"}`, or `degraded` while tables are parked; with `database` and `parked_tables`", content_type = "application/json", example = json!({"status": "ok", "database": "sqlite", "parked_tables": 0})),
        (status = 503, description = "`{\"status\": \"unavailable\"}`: the database does not answer", content_type = "application/json"),
    ),
)]
pub async fn healthz(State(app): State<AppState>) -> Response {
    let parked = app.metrics.parked_now();
    match app.store.ping().await {
        // Parked tables cannot save moves: the server is up but degraded.
        Ok(()) => Json(serde_json::json!({
            "status": if parked > 0 { "degraded" } else { "ok" },
            "database": app.store.backend(),
            "parked_tables": parked,
        }))
        .into_response(),
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
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics.render(),
    )
        .into_response()
}

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
            &crate::account::device_label(&headers),
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
    summary = "The lobby: public tables that are open or in play",
    responses(
        (status = 200, description = "the tables", body = Vec<wire::TableInfo>),
    ),
)]
pub async fn list_tables(State(app): State<AppState>) -> Json<Vec<TableInfo>> {
    Json(app.lobby.tables())
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
    let options =
        games::check_options(&req.game, &req.options, req.seats).map_err(|e| match e {
            games::SetupError::UnknownGame(g) => ApiError::BadTable(
                "unknown_game",
                format!("there is no game {g:?}; see GET /api/games"),
            ),
            games::SetupError::BadOptions(m) => ApiError::BadTable("bad_options", m),
            // The rules' own code: `bad_player_count`, `bad_options`, …
            games::SetupError::Rule(r) => ApiError::BadTable(r.code, r.message),
        })?;
    req.pace
        .validate()
        .map_err(|m| ApiError::BadTable("bad_pace", m))?;
    // Held until the table is stored (`limits`: simultaneous requests count each other).
    let _cap = app.limits.open_tables(&app, who.id).await?;
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

/// Test hook (`FIB_TEST_HOOKS` only): makes the table's task panic, to test supervision.
#[utoipa::path(
    post,
    path = "/api/tables/{id}/test/panic",
    tag = "tables",
    summary = "Test hook: make the table task panic once",
    params(("id" = String, Path, description = "the table's id (a UUID)")),
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

/// The live table `id`, checking a private table's invite code unless `who` sits there.
pub async fn reach_table(
    app: &AppState,
    id: &str,
    invite: Option<&str>,
    who: Option<&Who>,
) -> Result<table::TableHandle, ApiError> {
    let tid = Uuid::parse_str(id).map_err(|_| ApiError::TableNotFound(id.to_string()))?;
    let h = table::open(&app.core, tid)
        .await?
        .ok_or_else(|| ApiError::TableNotFound(id.to_string()))?;
    if h.private && h.invite_code.as_deref() != invite {
        let seated = match who {
            Some(w) => h
                .info()
                .await?
                .seats
                .iter()
                .any(|s| matches!(s, protocol::SeatInfo::Player { id, .. } if *id == w.id)),
            None => false,
        };
        if !seated {
            return Err(ApiError::InviteRequired);
        }
    }
    Ok(h)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InviteQuery {
    /// A private table's invite code (not needed by a player seated there).
    pub invite: Option<String>,
}

#[utoipa::path(
    get,
    path = "/api/tables/{id}",
    tag = "tables",
    summary = "One table's public information",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the table's id (a UUID)"), InviteQuery),
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
        §1.3): the table, whose eyes (`you`), the game's view for them (a seated player sees \
        their own hand), their legal actions and the fairness records. A page can draw the \
        table from it at once, then open the socket with `since=<version>` and receive only \
        what changed since.",
    security((), ("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the table's id (a UUID)"), InviteQuery),
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

/// A table's own address, the link players share: the browser client's page with the
/// viewer's first state and the game's modules in it (`assets::table_index`).
#[utoipa::path(
    get,
    path = "/table/{id}",
    tag = "service",
    summary = "A table's page",
    description = "The browser client's page, opened on the table. With a signed-in viewer \
        who may see the table, it carries their first `state` (as `GET /api/tables/{id}/state` \
        answers) and preloads the game's modules, so the table is drawn without another \
        request; otherwise it is the plain page, which says why the table cannot be shown.",
    security((), ("cookie" = [])),
    params(("id" = String, Path, description = "the table's id (a UUID)")),
    responses(
        (status = 200, description = "the page", body = String, content_type = "text/html"),
    ),
)]
pub async fn table_page(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    table_page_for(&app, &id, None, &headers).await
}

/// The same page for a private table's invite link.
#[utoipa::path(
    get,
    path = "/table/{id}/{invite}",
    tag = "service",
    summary = "A private table's page, by its invite link",
    security((), ("cookie" = [])),
    params(
        ("id" = String, Path, description = "the table's id (a UUID)"),
        ("invite" = String, Path, description = "the table's invite code"),
    ),
    responses(
        (status = 200, description = "the page", body = String, content_type = "text/html"),
    ),
)]
pub async fn table_page_invite(
    State(app): State<AppState>,
    Path((id, invite)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    table_page_for(&app, &id, Some(&invite), &headers).await
}

async fn table_page_for(
    app: &AppState,
    id: &str,
    invite: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let state = async {
        let who = player_from(headers, app).await.ok()??;
        let h = reach_table(app, id, invite, Some(&who)).await.ok()?;
        let text = h.state_for(Some(who.id)).await.ok()?;
        // What `GET /api/session` would answer: the page need not ask.
        let session = serde_json::to_string(&protocol::Session {
            player: Some(PlayerInfo {
                id: who.id,
                name: who.name,
            }),
        })
        .ok()?;
        Some((h.game, text, session))
    }
    .await;
    let page = match state {
        Some((game, text, session)) => {
            crate::assets::table_index(&app.assets, &game, text.as_str(), &session)
        }
        None => crate::assets::plain_index(&app.assets),
    };
    // One viewer's state: never stored by a cache.
    (
        [(header::CACHE_CONTROL, "no-store")],
        axum::response::Html(page),
    )
        .into_response()
}

#[utoipa::path(
    post,
    path = "/api/tables/{id}/join",
    tag = "tables",
    summary = "Take a seat (a given one, or the first free)",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the table's id (a UUID)")),
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
        serde_json::from_slice(&body).map_err(|e| ApiError::Malformed(e.to_string()))?
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
    params(("id" = String, Path, description = "the table's id (a UUID)")),
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
    params(("id" = String, Path, description = "the table's id (a UUID)")),
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

/// A stored table, with a private table's invite rule applied as for live ones: its
/// invite code, or a seat at it.
/// A seated player chooses a bot for an empty seat, or takes one out, before the start.
#[utoipa::path(
    post,
    path = "/api/tables/{id}/bots",
    tag = "tables",
    summary = "Seat a bot at an open table's empty seat, or take one out",
    security(("cookie" = []), ("bearer" = [])),
    params(("id" = String, Path, description = "the table's id (a UUID)")),
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
    if st.record.private && st.record.invite_code.as_deref() != invite {
        let who = player_from(headers, app).await?;
        let seated = who.is_some_and(|w| {
            st.seats
                .iter()
                .any(|o| matches!(o, Occupant::Player { id, .. } if *id == w.id))
        });
        if !seated {
            return Err(ApiError::InviteRequired);
        }
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
    params(("id" = String, Path, description = "the table's id (a UUID)"), InviteQuery),
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
    params(("id" = String, Path, description = "the table's id (a UUID)"), ("round" = u32, Path, description = "the round number, from 1"), InviteQuery),
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
    params(("id" = String, Path, description = "the table's id (a UUID)"), InviteQuery),
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
) -> Result<Json<protocol::Replay>, ApiError> {
    let st = stored(&app, &id, q.invite.as_deref(), &headers).await?;
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
    let replay = crate::replay::build(&st).map_err(|e| {
        tracing::error!(table = %id, error = %e, "replaying a finished match failed");
        ApiError::Internal
    })?;
    Ok(Json(replay))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LimitQuery {
    /// At most this many rows (default 50, at most 500).
    pub limit: Option<i64>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeaderboardQuery {
    /// The rating pool: `duel` (default) or `multi`.
    pub pool: Option<String>,
    /// Rows to skip (default 0).
    pub offset: Option<i64>,
    /// Rows to return (default 50, at most 100).
    pub limit: Option<i64>,
}

/// The most rows of one leaderboard page.
const LEADERBOARD_PAGE_MAX: i64 = 100;

/// One page of a game's leaderboard in one rating pool (docs/ratings.md).
#[utoipa::path(
    get,
    path = "/api/leaderboard/{game}",
    tag = "ratings",
    summary = "A game's ranked leaderboard in one rating pool, paged (docs/ratings.md)",
    params(("game" = String, Path, description = "a game kind, e.g. `trump`"), LeaderboardQuery),
    responses(
        (status = 200, description = "one page of the leaderboard", body = wire::Leaderboard),
        (status = 400, description = "`code`: malformed (a bad query, a pool other than duel or multi, a negative offset)", body = wire::ErrorBody),
        (status = 404, description = "`code`: not_found (no such game)", body = wire::ErrorBody),
    ),
)]
pub async fn leaderboard(
    State(app): State<AppState>,
    Path(game): Path<String>,
    Query(q): Query<LeaderboardQuery>,
) -> Result<Json<protocol::Leaderboard>, ApiError> {
    use store::rating::{self, Pool};
    if !games::catalogue().iter().any(|g| g.kind == game) {
        return Err(ApiError::NotFound(format!("there is no game {game:?}")));
    }
    let pool = match q.pool.as_deref() {
        None => Pool::Duel,
        Some(p) => Pool::parse(p).ok_or_else(|| {
            ApiError::Malformed(format!("pool must be \"duel\" or \"multi\", not {p:?}"))
        })?,
    };
    let offset = q.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ApiError::Malformed(format!(
            "offset must be 0 or more, not {offset}"
        )));
    }
    let limit = q.limit.unwrap_or(50).clamp(1, LEADERBOARD_PAGE_MAX);
    let page = app.store.leaderboard(&game, pool, offset, limit).await?;
    let (proto_pool, system) = pool_names(pool);
    Ok(Json(protocol::Leaderboard {
        game,
        pool: proto_pool,
        system,
        min_matches: rating::MIN_RANKED_MATCHES,
        offset,
        limit,
        total: page.total,
        rows: page
            .rows
            .into_iter()
            .enumerate()
            .map(|(i, r)| protocol::LeaderRow {
                rank: offset + i as i64 + 1,
                player: PlayerInfo {
                    id: r.player_id,
                    name: r.name,
                },
                rating: r.rating.mu,
                deviation: r.rating.sigma,
                volatility: (pool == Pool::Duel).then_some(r.rating.volatility),
                conservative: r.conservative,
                matches: r.matches,
                wins: r.wins,
            })
            .collect(),
    }))
}

/// The protocol's name of a store pool, and its system.
fn pool_names(pool: store::rating::Pool) -> (protocol::RatingPool, protocol::RatingSystem) {
    match pool {
        store::rating::Pool::Duel => (protocol::RatingPool::Duel, protocol::RatingSystem::Glicko2),
        store::rating::Pool::Multi => {
            (protocol::RatingPool::Multi, protocol::RatingSystem::WengLin)
        }
    }
}

/// Every rating of a player (public, like the leaderboards), ranked or not yet: by game,
/// duel first. An unknown player has none.
#[utoipa::path(
    get,
    path = "/api/players/{id}/ratings",
    tag = "players",
    summary = "A player's rating in every game and pool",
    params(("id" = String, Path, description = "the player's id (a UUID)")),
    responses(
        (status = 200, description = "the ratings, by game, duel first (empty for an unknown player)", body = Vec<wire::PlayerRating>),
        (status = 400, description = "`code`: malformed (the id is not a UUID)", body = wire::ErrorBody),
    ),
)]
pub async fn player_ratings(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<protocol::PlayerRating>>, ApiError> {
    let id = player_id(&id)?;
    let rows = app.store.player_ratings(id).await?;
    Ok(Json(
        rows.into_iter()
            .map(|r| {
                let (pool, system) = pool_names(r.pool);
                protocol::PlayerRating {
                    game: r.game,
                    pool,
                    system,
                    rating: r.rating.mu,
                    deviation: r.rating.sigma,
                    volatility: (r.pool == store::rating::Pool::Duel)
                        .then_some(r.rating.volatility),
                    conservative: r.conservative,
                    matches: r.matches,
                    wins: r.wins,
                    ranked: r.matches >= store::rating::MIN_RANKED_MATCHES,
                }
            })
            .collect(),
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// A game kind, e.g. `trump`.
    pub game: String,
    /// The rating pool: `duel` (default) or `multi`.
    pub pool: Option<String>,
}

/// The most points of one rating history.
const HISTORY_POINTS: i64 = 200;

/// A player's rating after each rated match in one game's pool, for the profile's chart.
#[utoipa::path(
    get,
    path = "/api/players/{id}/rating-history",
    tag = "players",
    summary = "A player's rating after each rated match in one game's pool, oldest first (the newest 200)",
    params(("id" = String, Path, description = "the player's id (a UUID)"), HistoryQuery),
    responses(
        (status = 200, description = "the points (empty for an unknown player)", body = Vec<wire::RatingPoint>),
        (status = 400, description = "`code`: malformed (not a UUID, no game, or a bad pool)", body = wire::ErrorBody),
        (status = 404, description = "`code`: not_found (no such game)", body = wire::ErrorBody),
    ),
)]
pub async fn rating_history(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Json<Vec<protocol::RatingPoint>>, ApiError> {
    let id = Uuid::parse_str(&id)
        .map_err(|_| ApiError::Malformed(format!("a player id is a UUID, not {id:?}")))?;
    if !games::catalogue().iter().any(|g| g.kind == q.game) {
        return Err(ApiError::NotFound(format!("there is no game {:?}", q.game)));
    }
    let pool = match q.pool.as_deref() {
        None => store::rating::Pool::Duel,
        Some(p) => store::rating::Pool::parse(p).ok_or_else(|| {
            ApiError::Malformed(format!("pool must be \"duel\" or \"multi\", not {p:?}"))
        })?,
    };
    let points = app
        .store
        .rating_history(id, &q.game, pool, HISTORY_POINTS)
        .await?;
    Ok(Json(
        points
            .into_iter()
            .map(|p| protocol::RatingPoint {
                table_id: p.table_id,
                at: p.at,
                rating: p.mu,
                deviation: p.sigma,
                conservative: p.conservative,
                won: p.won,
            })
            .collect(),
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RecordsQuery {
    /// Solitaire's target: 21 (default), 13 or 8.
    pub target: Option<u32>,
}

/// How many rows each list of records holds.
const RECORDS: i64 = 20;

fn record_rows(rows: Vec<store::ScoreRecord>) -> Vec<protocol::RecordRow> {
    rows.into_iter()
        .map(|r| protocol::RecordRow {
            player: PlayerInfo {
                id: r.player_id,
                name: r.name,
            },
            score: r.score,
            table_id: r.table_id,
            finished_at: r.finished_at,
            people: r.people,
            bots: r.bots,
        })
        .collect()
}

/// A game's own records: Trump's highest totals; Solitaire's fewest discards, overall
/// and for today's daily deal.
#[utoipa::path(
    get,
    path = "/api/records/{game}",
    tag = "ratings",
    summary = "A game's own records: Trump's highest totals, Solitaire's fewest discards",
    params(("game" = String, Path, description = "a game kind, e.g. `trump`"), RecordsQuery),
    responses(
        (status = 200, description = "the records", body = wire::Records),
        (status = 400, description = "`code`: malformed, bad_options", body = wire::ErrorBody),
        (status = 404, description = "`code`: not_found (no such game, or no records kept for it)", body = wire::ErrorBody),
    ),
)]
pub async fn records(
    State(app): State<AppState>,
    Path(game): Path<String>,
    Query(q): Query<RecordsQuery>,
) -> Result<Json<protocol::Records>, ApiError> {
    match game.as_str() {
        "trump" => Ok(Json(protocol::Records::Trump {
            highest_totals: record_rows(app.store.best_totals("trump", RECORDS).await?),
        })),
        "solitaire" => {
            let target = daily_target(q.target.unwrap_or(21))?;
            let now = now_ms();
            let day = crate::state::utc_day(now);
            let end_of_day = crate::state::day_start_ms(&day).ok_or_else(|| {
                tracing::error!(day, "today is not a day");
                ApiError::Internal
            })? + 86_400_000;
            let key = daily_key(target, &day);
            let best = app
                .store
                .solitaire_best(target, None, i64::MAX, RECORDS)
                .await?;
            let today = app
                .store
                .solitaire_best(target, Some(&key), end_of_day, RECORDS)
                .await?;
            Ok(Json(protocol::Records::Solitaire {
                target,
                day,
                best: record_rows(best),
                today: record_rows(today),
            }))
        }
        _ => Err(ApiError::NotFound(format!(
            "there are no records of {game:?}: records exist for \"trump\" and \"solitaire\""
        ))),
    }
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
    Ok(Json(rows.into_iter().map(match_row).collect()))
}

fn match_row(r: store::MatchRow) -> protocol::MatchRow {
    protocol::MatchRow {
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
    params(("id" = String, Path, description = "the player's id (a UUID)")),
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
    }))
}

fn player_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id)
        .map_err(|_| ApiError::Malformed(format!("a player id is a UUID, not {id:?}")))
}

/// A player's finished public matches, for the profile: private tables and matches still
/// being played are left out.
#[utoipa::path(
    get,
    path = "/api/players/{id}/matches",
    tag = "players",
    summary = "A player's finished public matches, newest first",
    params(("id" = String, Path, description = "the player's id (a UUID)"), LimitQuery),
    responses(
        (status = 200, description = "the matches (empty for an unknown player); each has a replay at /api/tables/{id}/replay", body = Vec<wire::MatchRow>),
        (status = 400, description = "`code`: malformed", body = wire::ErrorBody),
    ),
)]
pub async fn player_matches(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<LimitQuery>,
) -> Result<Json<Vec<protocol::MatchRow>>, ApiError> {
    let id = player_id(&id)?;
    let want = q.limit.unwrap_or(20).clamp(1, 100) as usize;
    // Unfinished matches come first in the store's order: ask for enough to skip them.
    let rows = app.store.player_matches(id, 500).await?;
    Ok(Json(
        rows.into_iter()
            .filter(|r| {
                !r.private
                    && matches!(
                        r.status,
                        store::TableStatus::Finished | store::TableStatus::Abandoned
                    )
            })
            .take(want)
            .map(match_row)
            .collect(),
    ))
}

/// 404 for a path that is neither the API nor a file of the client: a page a person can
/// read, with the way back to the lobby.
pub async fn not_found_page() -> (StatusCode, axum::response::Html<&'static str>) {
    (
        StatusCode::NOT_FOUND,
        axum::response::Html(concat!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
            "<meta name=\"description\" content=\"This address is not a page of Fibonacci Cards.\">",
            "<link rel=\"stylesheet\" href=\"/style.css\">",
            "<title>Not found · Fibonacci Cards</title></head><body class=\"not-found\">",
            "<h1>Nothing here</h1><p>This address is not a page of Fibonacci Cards.</p>",
            "<p><a href=\"/\">Go to the lobby</a></p></body></html>"
        )),
    )
}

pub async fn not_found_api() -> ApiError {
    ApiError::NotFound("no such endpoint; see docs/protocol.md".into())
}

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
fn daily_key(target: u32, day: &str) -> String {
    format!("solitaire-{target}/{day}")
}

fn daily_target(target: u32) -> Result<u32, ApiError> {
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
        .map_err(|e| ApiError::BadTable("bad_options", format!("{e:?}")))?;
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
