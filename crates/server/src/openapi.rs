//! The OpenAPI 3.1 document of the HTTP API (`GET /api/openapi.json`, kept in
//! `docs/openapi.json`), generated from the code with utoipa: every handler that `lib.rs`
//! routes carries a `#[utoipa::path]` (method, path, parameters, bodies, every status it
//! can answer), and [`ApiDoc`] lists them.
//!
//! The bodies are the wire types of `crates/protocol` (and `games::GameInfo`). They already
//! derive schemars' `JsonSchema`, which also makes the socket protocol's JSON Schema
//! (`docs/protocol.schema.json`), so the document takes their schemas from there instead of
//! deriving a second, possibly different, description with utoipa: in an annotation a
//! marker from [`wire`] (same name as the wire type) stands for the type, utoipa writes a
//! reference to it, and [`document`] fills `components.schemas` with schemars' schemas of
//! exactly the referenced types (and the types they use). The rules crates and `protocol`
//! stay free of utoipa (ARCHITECTURE.md).
//!
//! Tests keep it honest: the committed file must equal what this module generates
//! (`UPDATE_OPENAPI=1 cargo test -p server openapi` rewrites it); every route registered in
//! `lib.rs` must be in the document with its handler's operation, and nothing else; every
//! reference resolves. The WebSockets (`/ws/lobby`, `/ws/table/{id}`) are listed as upgrades;
//! their messages are in docs/protocol.md and `docs/protocol.schema.json`.

use std::sync::LazyLock;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::Ref;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, RefOr};
use utoipa::{Modify, OpenApi};

/// The document: every operation of the router (in the order of `lib.rs`).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "fibonacci-cards HTTP API",
        description = "Generated from the code (crates/server/src/openapi.rs and the `#[utoipa::path]` of each handler; the bodies are the wire types of crates/protocol) by `UPDATE_OPENAPI=1 cargo test -p server openapi`. Do not edit. A failed request always has the body `ErrorBody` with a stable `code` (docs/protocol.md); 429 answers carry `Retry-After`. The WebSocket protocol is in docs/protocol.md and docs/protocol.schema.json.",
        license(name = "MIT"),
    ),
    paths(
        crate::http::players::create_guest,
        crate::http::players::me,
        crate::http::accounts::account,
        crate::http::accounts::claim,
        crate::http::accounts::sign_in,
        crate::http::accounts::sign_out,
        crate::http::accounts::devices,
        crate::http::accounts::revoke_device,
        crate::http::accounts::make_bot,
        crate::http::accounts::bot_token,
        crate::http::accounts::revoke_bot_token,
        crate::http::players::player_profile,
        crate::http::players::player_matches,
        crate::http::players::session,
        crate::http::players::my_matches,
        crate::http::tables::list_games,
        crate::http::tables::list_tables,
        crate::http::tables::create_table,
        crate::http::tables::get_table,
        crate::http::tables::get_table_state,
        crate::http::tables::join_table,
        crate::http::tables::leave_table,
        crate::http::tables::start_table,
        crate::http::tables::seat_bot,
        crate::http::tables::table_rounds,
        crate::http::tables::table_replay,
        crate::http::analysis::request_analysis,
        crate::http::analysis::get_analysis,
        crate::http::tournaments::create_tournament,
        crate::http::tournaments::list_tournaments,
        crate::http::tournaments::get_tournament,
        crate::http::tournaments::join_tournament,
        crate::http::tournaments::withdraw_tournament,
        crate::http::tournaments::cancel_tournament,
        crate::http::tables::round_deal,
        crate::http::boards::leaderboard,
        crate::http::boards::records,
        crate::http::boards::player_ratings,
        crate::http::boards::rating_history,
        serve,
        crate::http::daily::daily_board,
        crate::http::daily::start_daily,
        crate::http::ops::test_panic,
        crate::http::pages::index,
        crate::http::pages::index_html,
        crate::http::pages::table_page,
        crate::http::pages::table_page_invite,
        crate::http::ops::healthz,
        crate::http::ops::metrics,
        crate::ws::lobby::lobby_socket,
        crate::ws::table::table_socket,
    ),
    modifiers(&Conventions),
    tags(
        (name = "players", description = "Guest players, their tokens, matches and ratings"),
        (name = "tables", description = "Creating, joining and starting tables; their fairness records and replays"),
        (name = "ratings", description = "Leaderboards and records"),
        (name = "daily", description = "The daily Solitaire deal"),
        (name = "service", description = "The page, health, metrics and this document"),
        (name = "tournaments", description = "Swiss and arena tournaments (docs/tournaments.md)"),
        (name = "sockets", description = "WebSocket upgrades (messages: docs/protocol.md, docs/protocol.schema.json)"),
    ),
)]
pub struct ApiDoc;

/// What holds for every operation, added once instead of at each handler: the two ways to
/// send a player's token, and the `500 internal` that an `/api` handler answers when the
/// store or a table task fails (the detail is logged, never sent).
struct Conventions;

/// `/api` operations that cannot fail: they read memory only, so they get no 500.
const INFALLIBLE: [&str; 3] = ["list_games", "list_tables", "serve"];

impl Modify for Conventions {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::COOKIE,
                "the token `POST /api/guest` returned, as the browser keeps it",
            ))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("the same token in `Authorization: Bearer <token>`"))
                    .build(),
            ),
        );
        for (path, item) in api.paths.paths.iter_mut() {
            if !path.starts_with("/api/") {
                continue;
            }
            let operations: [&mut Option<Operation>; 5] = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in operations.into_iter().flatten() {
                // A query that does not decode (a value of the wrong kind, or a key given
                // twice) is refused before the handler runs, wherever a query is read.
                let has_query =
                    op.parameters.iter().flatten().any(|p| {
                        matches!(p.parameter_in, utoipa::openapi::path::ParameterIn::Query)
                    });
                if has_query {
                    const BAD_QUERY: &str =
                        "malformed (a query parameter that does not parse, or given twice)";
                    match op.responses.responses.get_mut("400") {
                        Some(RefOr::T(r)) if !r.description.contains("malformed") => {
                            r.description = format!("{}; also `code`: {BAD_QUERY}", r.description);
                        }
                        Some(_) => {}
                        None => {
                            op.responses.responses.insert(
                                "400".into(),
                                error_response(format!("`code`: {BAD_QUERY}")),
                            );
                        }
                    }
                }
                if INFALLIBLE.contains(&op.operation_id.as_deref().unwrap_or_default()) {
                    continue;
                }
                // A request of one table may find its stored record broken.
                let one_table = path.starts_with("/api/tables/{id}");
                op.responses
                    .responses
                    .entry("500".into())
                    .or_insert_with(|| {
                        error_response(if one_table {
                            "`code`: internal (the detail is logged, never sent), or table_broken (the table's stored record does not replay into a game; nothing is changed)"
                        } else {
                            "`code`: internal (the detail is logged, never sent)"
                        })
                    });
            }
        }
    }
}

/// A response whose body is an `ErrorBody`, described by `description`.
fn error_response(description: impl Into<String>) -> RefOr<utoipa::openapi::Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
            .build(),
    )
}

/// The whole document as JSON: utoipa's operations, with `components.schemas` made by
/// schemars from the wire types they reference.
pub fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the document is JSON");
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    // utoipa lists every marker a path references, each as a reference to itself.
    let referenced: Vec<String> = doc["components"]["schemas"]
        .as_object()
        .map(|s| s.keys().cloned().collect())
        .unwrap_or_default();
    for name in referenced {
        let schema = crate::wire::schema(&name, &mut generator)
            .unwrap_or_else(|| panic!("{name} is referenced but is no `wire` marker"));
        // The marker's reference must be where schemars put the type (no renamed duplicate).
        assert_eq!(
            schema,
            json!({ "$ref": format!("#/components/schemas/{name}") }),
            "schemars does not define {name} under its own name"
        );
    }
    let schemas: Map<String, Value> = generator.take_definitions(true);
    doc["components"]["schemas"] = Value::Object(schemas);
    doc
}

/// The document as served and committed: pretty JSON with a final newline.
pub fn document_text() -> String {
    serde_json::to_string_pretty(&document()).expect("the document is JSON") + "\n"
}

/// Built once: the document is a pure function of the code.
static DOCUMENT: LazyLock<String> = LazyLock::new(document_text);

/// `GET /api/openapi.json`.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "service",
    summary = "This document",
    responses((status = 200, description = "the OpenAPI 3.1 document (the same as docs/openapi.json)", content_type = "application/json")),
)]
pub async fn serve() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        DOCUMENT.as_str(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/openapi.json is what the code generates (`UPDATE_OPENAPI=1` rewrites it).
    #[test]
    fn openapi_document_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
        let generated = document_text();
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo test -p server openapi`"
        );
    }

    /// A route `lib.rs` registers: method, full path, the handler's function name.
    #[derive(Debug)]
    struct Route {
        method: String,
        path: String,
        handler: String,
    }

    /// The routes `lib.rs` registers, read from its source (`.route("/p", get(h).post(h2))`;
    /// routes before `.nest("/api", api)` are under `/api`).
    fn registered_routes() -> Vec<Route> {
        let src = include_str!("lib.rs");
        let start = src.find("let api = Router::new()").expect("the api router");
        let src = &src[start..];
        let mut out = Vec::new();
        let mut nest = "/api";
        for chunk in src.split(".route(").skip(1) {
            let path = chunk.split('"').nth(1).expect("a path literal");
            let head = chunk.split(".route(").next().unwrap();
            let before_nest = head.split(".nest(").next().unwrap();
            let mut found = 0;
            for method in ["get", "post", "put", "delete", "patch"] {
                let call = format!("{method}(");
                for (i, _) in before_nest.match_indices(&call) {
                    // `get(` itself, not the tail of another name (`target(`).
                    let prev = i.checked_sub(1).map(|p| before_nest.as_bytes()[p]);
                    if prev.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                        continue;
                    }
                    let args = &before_nest[i + call.len()..];
                    let end = args
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                        .unwrap_or(args.len());
                    let handler = args[..end].rsplit("::").next().unwrap().to_string();
                    out.push(Route {
                        method: method.to_string(),
                        path: format!("{nest}{path}"),
                        handler,
                    });
                    found += 1;
                }
            }
            assert!(found > 0, "no method for {path}");
            if chunk.contains(".nest(\"/api\", api)") {
                nest = "";
            }
        }
        out
    }

    /// Every route in the router is described by its own handler's annotation, and the
    /// document describes nothing else.
    #[test]
    fn every_route_is_in_the_document() {
        let doc = document();
        let routes = registered_routes();
        assert!(routes.len() >= 28, "{routes:?}");
        for r in &routes {
            let op = &doc["paths"][&r.path][&r.method];
            assert!(
                op.is_object(),
                "{} {} is registered in lib.rs but has no #[utoipa::path] in ApiDoc",
                r.method,
                r.path
            );
            assert_eq!(
                op["operationId"], r.handler,
                "{} {} is documented by another handler's annotation",
                r.method, r.path
            );
        }
        let described: usize = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|p| p.as_object().unwrap().len())
            .sum();
        assert_eq!(
            described,
            routes.len(),
            "the document describes a route lib.rs lacks"
        );
    }

    /// Every `$ref` points at a schema that is in the document.
    #[test]
    fn every_reference_resolves() {
        let doc = document();
        let text = doc.to_string();
        let mut seen = 0;
        for part in text.split("\"$ref\":\"").skip(1) {
            let target = part.split('"').next().unwrap();
            let name = target
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("a reference outside the components: {target}"));
            assert!(doc["components"]["schemas"][name].is_object(), "{target}");
            seen += 1;
        }
        assert!(seen > 20, "only {seen} references");
    }

    /// Every error answer has the error body (but health's 503), every operation answers something, a player's
    /// operations name the token, and each rate-limited route tells Retry-After.
    #[test]
    fn operations_are_complete() {
        let doc = document();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let responses = op["responses"].as_object().unwrap();
                assert!(!responses.is_empty(), "{method} {path}");
                for (status, res) in responses {
                    // `/healthz` answers 503 with its own health body.
                    if path != "/healthz" && (status.starts_with('4') || status.starts_with('5')) {
                        assert_eq!(
                            res["content"]["application/json"]["schema"]["$ref"],
                            "#/components/schemas/ErrorBody",
                            "{method} {path} {status}"
                        );
                    }
                    if status == "429" {
                        assert!(
                            res["headers"]["Retry-After"].is_object(),
                            "{method} {path} 429 without Retry-After"
                        );
                    }
                }
                // A 401 for a missing token (not a sign-in's wrong password).
                let unauthorized = responses.get("401").is_some_and(|r| {
                    r["description"]
                        .as_str()
                        .unwrap_or("")
                        .contains("unauthorized")
                });
                if unauthorized {
                    assert_eq!(
                        op["security"],
                        json!([{ "cookie": [] }, { "bearer": [] }]),
                        "{method} {path}"
                    );
                }
            }
        }
        assert!(doc["components"]["securitySchemes"]["cookie"].is_object());
        assert_eq!(
            doc["paths"]["/api/guest"]["post"]["responses"]["429"]["headers"]["Retry-After"]["schema"]
                ["type"],
            "integer"
        );
    }

    /// The served text is the generated document.
    #[tokio::test]
    async fn serve_answers_the_document() {
        let res = serve().await;
        assert_eq!(res.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), document());
    }
}
