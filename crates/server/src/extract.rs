//! What the HTTP handlers and the sockets take from a request: a JSON body whose rejection
//! is our own error, the signed-in player (by token, looked up every time), the client's
//! address as the abuse limits see it, and the live table a path names (with a private
//! table's invite rule). Every refusal is an [`ApiError`] with a JSON body.

use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use uuid::Uuid;

use crate::limits::SocketSlot;

use crate::auth;
use crate::error::ApiError;
use crate::state::{AppState, now_ms};
use realtime::table::{self, Who};

/// A JSON body whose rejection is our `malformed` error rather than axum's plain text,
/// decoded strictly: checked against its type's JSON Schema first (`protocol::strict`), so
/// that an array where the schema has an object, or an unknown field beside a unit variant,
/// is refused as the published schema says rather than taken by serde.
pub struct Body<T>(pub T);

impl<T, S> axum::extract::FromRequest<S> for Body<T>
where
    T: serde::de::DeserializeOwned + schemars::JsonSchema + 'static,
    S: Send + Sync,
{
    type Rejection = ApiError;
    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let value = match Json::<protocol::strict::Unique>::from_request(req, state).await {
            Ok(Json(protocol::strict::Unique(v))) => v,
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(ApiError::TooLarge);
            }
            Err(e) => return Err(ApiError::Malformed(e.body_text())),
        };
        protocol::strict::decode(&value, "body")
            .map(Body)
            .map_err(|m| ApiError::Malformed(format!("{BODY_REFUSED}: {m}")))
    }
}

/// How axum begins the message of a body that is JSON but not of the type; kept for the
/// refusals of the strict decoding, so that every such message reads alike.
const BODY_REFUSED: &str = "Failed to deserialize the JSON body into the target type";

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
    if a.player.bot {
        // Its seats are marked as a bot account's, and its sockets get a bot's allowance.
        app.core.mark_bot_account(a.player.id);
    }
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

pub fn player_id(id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id)
        .map_err(|_| ApiError::Malformed(format!("a player id is a UUID, not {id:?}")))
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

pub async fn not_found_api() -> ApiError {
    ApiError::NotFound("no such endpoint; see docs/protocol.md".into())
}

/// Refuses a request that says its body is over the limit (`413 too_large`), before any
/// handler runs: also where the handler takes no body, and so never reads it (axum's own
/// limit only acts on a body read), so that the limit holds for every endpoint alike.
pub async fn refuse_large_bodies(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let too_large = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > protocol::MAX_HTTP_BODY as u64);
    if too_large {
        return ApiError::TooLarge.into_response();
    }
    next.run(req).await
}

/// The client's address as the limits see it (an extractor).
pub struct ClientAddr(pub IpAddr);

impl axum::extract::FromRequestParts<AppState> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        Ok(ClientAddr(app.limits.client(peer, &parts.headers)))
    }
}

/// Takes a WebSocket place for `client`, counting a refusal: one of the address's
/// WebSockets a minute (`--sockets-per-minute`), then one of those it may hold open
/// (`--sockets-per-address`).
pub fn socket_slot(app: &AppState, client: IpAddr) -> Result<SocketSlot, ApiError> {
    app.limits
        .check(crate::limits::Class::Socket, client)
        .inspect_err(|_| app.metrics.limited(crate::limits::Class::Socket.as_str()))?;
    app.limits
        .socket(client)
        .inspect_err(|_| app.metrics.limited("sockets"))
}

/// The OpenAPI schemas of query parameters that take one of a few values: the handlers
/// read them as text and refuse others with their own error (`malformed`,
/// `bad_tournament`, `bad_options`), and the document lists the values a client may send.
pub mod params {
    use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

    fn strings(values: &[&'static str], description: &str) -> Object {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values.iter().copied()))
            .description(Some(description))
            .build()
    }

    /// `pool`: a rating pool (docs/ratings.md).
    pub fn pool() -> Object {
        strings(
            &["duel", "multi", "bots"],
            "The rating pool: `duel` (default), `multi` or `bots` (matches with a bot account).",
        )
    }

    /// `status` of the tournament list.
    pub fn tournament_status() -> Object {
        strings(
            &["registration", "running", "finished", "cancelled"],
            "Only the tournaments in this state (absent or empty: all).",
        )
    }

    /// `target` of Solitaire (the daily deal, the records).
    pub fn solitaire_target() -> Object {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some([21, 13, 8]))
            .description(Some("Solitaire's target: 21 (default), 13 or 8."))
            .build()
    }
}
