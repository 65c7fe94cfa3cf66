//! The server's error type: what an HTTP request or a WebSocket message gets back when it
//! is refused. Each variant says what the client sees (status and code). Internal errors
//! are logged with their detail and answered with a bare `internal`, never echoed.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::ErrorBody;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 `malformed`: the body or message is not valid JSON of the expected shape.
    #[error("{0}")]
    Malformed(String),
    /// 400, a display name that is refused: `bad_name` (no visible character, or over 24
    /// characters), `name_forbidden_char` (a control or invisible formatting character:
    /// Unicode Cc, Cf, Zl, Zp), `name_looks_like_bot` (it could pass for a bot's name).
    #[error("{1}")]
    BadName(&'static str, String),
    /// 400 `bad_options` / `unknown_game` / `bad_player_count`: a table that cannot be set up.
    #[error("{1}")]
    BadTable(&'static str, String),
    /// 400, an account that cannot be claimed as asked: `bad_username` (3 to 24 ASCII
    /// letters, digits, `_`, `.`, `-`, beginning with a letter or digit), `weak_password`
    /// (the message names the rule it breaks).
    #[error("{1}")]
    BadAccount(&'static str, String),
    /// 401 `bad_credentials`: a sign-in whose username or password is wrong; which of
    /// the two is never said.
    #[error("the username or the password is wrong")]
    BadCredentials,
    /// 404 `device_not_found`: no signed-in device of this player has that id (it may
    /// have been signed out already).
    #[error("no signed-in device {0} of yours")]
    DeviceNotFound(String),
    /// 413 `too_large`: a request body over the limit.
    #[error("the request body is larger than {} bytes", protocol::MAX_HTTP_BODY)]
    TooLarge,
    /// 401 `unauthorized`: no token, or a token the server does not know.
    #[error("sign in first: no valid player token was sent")]
    Unauthorized,
    /// 403 `forbidden_origin`: a WebSocket upgrade from another site's page.
    #[error("origin {0:?} may not open WebSockets here")]
    ForbiddenOrigin(String),
    /// 403 `invite_required`: a private table reached without its invite code.
    #[error("this table is private: open it through its invite link")]
    InviteRequired,
    /// 404 `table_not_found`.
    #[error("no table {0}")]
    TableNotFound(String),
    /// 404 `not_found`: another unknown thing (round, game).
    #[error("{0}")]
    NotFound(String),
    /// 409: a lobby action that the table's state refuses. Codes: `seat_taken`,
    /// `table_full`, `already_seated`, `not_seated`, `already_started`, `seats_not_full`,
    /// `bad_seat`, `not_a_bot`, `round_in_progress`, `daily_in_progress`, `table_closed`,
    /// `username_taken`, `already_claimed`.
    #[error("{1}")]
    Conflict(&'static str, String),
    /// 429 with `Retry-After`: an abuse limit (the `limits` module). Codes: `rate_limited`
    /// (too many requests of one kind from one address), `too_many_sockets` (WebSockets
    /// per address), `too_many_open_tables` (open tables per player),
    /// `too_many_attempts` (sign-ins to one account, right or wrong).
    #[error("{message}")]
    RateLimited {
        code: &'static str,
        message: String,
        /// Seconds, for the `Retry-After` header.
        retry_after: u64,
        /// The limit's name in `/metrics`.
        limit: &'static str,
    },
    /// 503 with `Retry-After: 1`: the server cannot serve this now, and soon will. Codes:
    /// `table_moving` (the table is changing servers: its owner stopped or is
    /// unreachable, and another takes it within seconds), `server_draining` (this server
    /// is shutting down: it makes no new table and opens no new socket; another server
    /// will, or this one once restarted), `database_unavailable` (the database is down,
    /// restarting, or its connections are all busy: a failure that goes away by itself).
    #[error("{1}")]
    Unavailable(&'static str, String),
    /// 400, a tournament that cannot be set up as asked: `bad_tournament` (the message
    /// names the field and its bounds), `unknown_game`, `bad_options`.
    #[error("{1}")]
    BadTournament(&'static str, String),
    /// 403, a tournament that refuses this player: `invite_required` (private, no or a
    /// wrong invite code), `bots_not_allowed` (a bot account where bots may not join).
    #[error("{1}")]
    Forbidden(&'static str, String),
    /// 404 `tournament_not_found`.
    #[error("no tournament {0}")]
    TournamentNotFound(String),
    /// 500 `table_broken`: the table's stored record does not replay; it is kept as it is,
    /// the log says why, and `/healthz` counts it.
    #[error("{0}")]
    TableBroken(String),
    /// 500 `internal`: logged, not explained.
    #[error("internal error")]
    Internal,
}

impl ApiError {
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Malformed(_) => "malformed",
            ApiError::BadName(c, _) => c,
            ApiError::BadTable(c, _) => c,
            ApiError::BadAccount(c, _) => c,
            ApiError::BadCredentials => "bad_credentials",
            ApiError::DeviceNotFound(_) => "device_not_found",
            ApiError::TooLarge => "too_large",
            ApiError::Unauthorized => "unauthorized",
            ApiError::ForbiddenOrigin(_) => "forbidden_origin",
            ApiError::InviteRequired => "invite_required",
            ApiError::TableNotFound(_) => "table_not_found",
            ApiError::NotFound(_) => "not_found",
            ApiError::Conflict(c, _) => c,
            ApiError::RateLimited { code, .. } => code,
            ApiError::Unavailable(c, _) => c,
            ApiError::BadTournament(c, _) | ApiError::Forbidden(c, _) => c,
            ApiError::TournamentNotFound(_) => "tournament_not_found",
            ApiError::TableBroken(_) => "table_broken",
            ApiError::Internal => "internal",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Malformed(_)
            | ApiError::BadName(..)
            | ApiError::BadTable(..)
            | ApiError::BadAccount(..)
            | ApiError::BadTournament(..) => StatusCode::BAD_REQUEST,
            ApiError::Forbidden(..) => StatusCode::FORBIDDEN,
            ApiError::TournamentNotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadCredentials => StatusCode::UNAUTHORIZED,
            ApiError::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::ForbiddenOrigin(_) | ApiError::InviteRequired => StatusCode::FORBIDDEN,
            ApiError::TableNotFound(_) | ApiError::NotFound(_) | ApiError::DeviceNotFound(_) => {
                StatusCode::NOT_FOUND
            }
            ApiError::Conflict(..) => StatusCode::CONFLICT,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(..) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::TableBroken(_) | ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code().to_string(),
            message: self.to_string(),
        }
    }

    pub fn conflict(code: &'static str, msg: impl Into<String>) -> Self {
        ApiError::Conflict(code, msg.into())
    }
}

impl From<store::StoreError> for ApiError {
    fn from(e: store::StoreError) -> Self {
        // A database that is down, restarting or out of connections: worth trying again
        // soon, and said so (a walk's players got a bare 500 through a Postgres restart).
        if e.is_transient() {
            tracing::warn!(error = %e, "the database is not answering");
            return ApiError::Unavailable(
                "database_unavailable",
                "the database is not answering right now; try again in a moment".into(),
            );
        }
        tracing::error!(error = %e, "store error");
        ApiError::Internal
    }
}

impl From<realtime::TableError> for ApiError {
    fn from(e: realtime::TableError) -> Self {
        use realtime::TableError as T;
        match e {
            T::Conflict(code, msg) => ApiError::Conflict(code, msg),
            T::BadTable(code, msg) => ApiError::BadTable(code, msg),
            T::Moving | T::Draining => ApiError::Unavailable(e.code(), e.to_string()),
            T::Exists => ApiError::Conflict(e.code(), e.to_string()),
            T::Broken => ApiError::TableBroken(e.to_string()),
            T::Internal => ApiError::Internal,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry = match &self {
            ApiError::RateLimited { retry_after, .. } => Some(*retry_after),
            ApiError::Unavailable(..) => Some(1),
            _ => None,
        };
        let mut res = (self.status(), axum::Json(self.body())).into_response();
        if let Some(secs) = retry {
            res.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        res
    }
}

/// How the request log (tower-http's `TraceLayer`) sorts answers: a 5xx is a failure,
/// logged at ERROR for an operator to act on, except a 503 that tells the client when to
/// try again (`Retry-After`). That is the documented answer while a table changes nodes
/// (`table_moving`) or this server drains (`server_draining`): expected, and logged where
/// it is decided, at info or warn with the table. An answer passed on from another node
/// (the cluster's forwarding) keeps its `Retry-After`, so it is sorted the same way.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestFailures;

impl tower_http::classify::ClassifyResponse for RequestFailures {
    type FailureClass = tower_http::classify::ServerErrorsFailureClass;
    type ClassifyEos = tower_http::classify::NeverClassifyEos<Self::FailureClass>;

    fn classify_response<B>(
        self,
        res: &axum::http::Response<B>,
    ) -> tower_http::classify::ClassifiedResponse<Self::FailureClass, Self::ClassifyEos> {
        let try_again = res.status() == StatusCode::SERVICE_UNAVAILABLE
            && res.headers().contains_key(axum::http::header::RETRY_AFTER);
        if try_again {
            tower_http::classify::ClassifiedResponse::Ready(Ok(()))
        } else {
            tower_http::classify::ServerErrorsAsFailures::new().classify_response(res)
        }
    }

    fn classify_error<E: std::fmt::Display + 'static>(self, error: &E) -> Self::FailureClass {
        tower_http::classify::ServerErrorsAsFailures::new().classify_error(error)
    }
}

/// Turns the framework's own plain-text rejections (a bad path or query value, a wrong
/// method, a non-upgrade request to a socket path, a body that is not JSON) into our JSON
/// error body, so every client error has a code.
pub async fn json_rejections(res: Response) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !status.is_client_error() || is_json || status == StatusCode::NOT_FOUND {
        return res;
    }
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        _ => "malformed",
    };
    // A 405 says what is allowed (RFC 9110 §15.5.6): a route's own answer has it; the
    // browser client's files (`ServeDir`) are read with GET and HEAD only.
    let allow = (status == StatusCode::METHOD_NOT_ALLOWED).then(|| {
        res.headers()
            .get(axum::http::header::ALLOW)
            .cloned()
            .unwrap_or(axum::http::HeaderValue::from_static("GET,HEAD"))
    });
    let bytes = axum::body::to_bytes(res.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let message = String::from_utf8_lossy(&bytes).trim().to_string();
    let message = if message.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("bad request")
            .to_string()
    } else {
        message
    };
    let body = ErrorBody {
        code: code.to_string(),
        message,
    };
    let mut res = (status, axum::Json(body)).into_response();
    if let Some(allow) = allow {
        res.headers_mut().insert(axum::http::header::ALLOW, allow);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_http::classify::{ClassifiedResponse, ClassifyResponse};

    fn failure(res: Response) -> bool {
        match RequestFailures.classify_response(&res) {
            ClassifiedResponse::Ready(r) => r.is_err(),
            ClassifiedResponse::RequiresEos(_) => unreachable!("decided on the head"),
        }
    }

    /// The request log's failures are the server's: a 503 telling the client when to try
    /// again (`table_moving`, `server_draining`, as answered here or passed on from another
    /// node) is not one; any other 5xx, a bare 503 included, is.
    #[test]
    fn only_the_answers_to_try_again_are_no_failures() {
        assert!(!failure(
            ApiError::from(realtime::TableError::Moving).into_response()
        ));
        assert!(!failure(
            ApiError::Unavailable("server_draining", "draining".into()).into_response()
        ));
        assert!(failure(ApiError::Internal.into_response()));
        assert!(failure(StatusCode::SERVICE_UNAVAILABLE.into_response()));
        assert!(failure(StatusCode::BAD_GATEWAY.into_response()));
        assert!(!failure(
            ApiError::TableNotFound("x".into()).into_response()
        ));
    }

    /// A database that does not answer is a 503 to try again, not a bare 500; a broken
    /// rule is still a 500.
    #[test]
    fn a_database_that_does_not_answer_is_a_503() {
        let down = ApiError::from(store::StoreError::Db(sqlx::Error::PoolTimedOut));
        assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(down.code(), "database_unavailable");
        let res = down.into_response();
        assert_eq!(res.headers()[axum::http::header::RETRY_AFTER], "1");
        let broken = ApiError::from(store::StoreError::Conflict("x".into()));
        assert_eq!(broken.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
