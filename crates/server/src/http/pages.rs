//! The pages that are not the API: a table's own link (the client's page with the
//! viewer's first state in it), and the 404 page for a path that is neither the API nor a
//! file of the client.

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use protocol::PlayerInfo;

use crate::extract::*;
use crate::state::AppState;

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
    params(("id" = String, Path, format = Uuid, description = "the table's id (a UUID)")),
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
        ("id" = String, Path, format = Uuid, description = "the table's id (a UUID)"),
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

/// `GET /`: the rewritten index page.
#[utoipa::path(
    get,
    path = "/",
    tag = "service",
    summary = "The browser client's page",
    responses(
        (status = 200, description = "the page, with versioned module URLs (docs/web.md); the other files of `web/` are served under their own paths", body = String, content_type = "text/html"),
    ),
)]
pub async fn index(State(app): State<AppState>) -> Response {
    (
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))],
        Html(app.assets.index.clone()),
    )
        .into_response()
}

/// `GET /index.html`: the same page (its own handler, so that the OpenAPI document has an
/// operation for each route).
#[utoipa::path(
    get,
    path = "/index.html",
    tag = "service",
    summary = "The same page as `/`",
    responses(
        (status = 200, description = "the page", body = String, content_type = "text/html"),
    ),
)]
pub async fn index_html(state: State<AppState>) -> Response {
    index(state).await
}

/// A client file asked for by its current version (`/app.js?v=…`, cached for a year): the
/// bytes read at start-up, whose hash the version is, whatever the folder holds now.
pub async fn versioned_file(State(app): State<AppState>, req: Request, next: Next) -> Response {
    if matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    ) && let Some((bytes, kind)) = app.assets.snapshot(req.uri().path(), req.uri().query())
    {
        return ([(header::CONTENT_TYPE, kind)], bytes).into_response();
    }
    next.run(req).await
}

/// Caching and security headers on every response.
pub async fn headers(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let immutable = app.assets.current(&path, req.uri().query());
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    if !h.contains_key(header::CACHE_CONTROL) {
        let cache = if path.starts_with("/api/") || path == "/healthz" || path == "/metrics" {
            "no-store"
        } else if immutable {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        };
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    }
    if let Ok(csp) = HeaderValue::from_str(&app.assets.csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}
