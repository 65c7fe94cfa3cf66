//! The OpenAPI 3.1 document of the HTTP API (`GET /api/openapi.json`, kept in
//! `docs/openapi.json`). It is generated from the code: the request and response bodies
//! are the wire types of `crates/protocol` (and `games::GameInfo`), whose JSON Schemas
//! schemars derives, and the operations are the table below. Two tests keep it honest: the
//! committed file must equal what this module generates (`UPDATE_OPENAPI=1 cargo test -p
//! server openapi` rewrites it), and every route registered in `lib.rs` must be in the
//! table, so a new route without a description fails a test.
//!
//! The WebSockets (`/ws/lobby`, `/ws/table/{id}`) are listed as upgrades; their messages
//! are in docs/protocol.md and the JSON Schema `docs/protocol.schema.json`.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// How an operation knows who calls.
#[derive(Clone, Copy)]
enum Auth {
    /// Anyone.
    Open,
    /// A player's token: the `fib_token` cookie or `Authorization: Bearer`.
    Player,
}

/// Where a parameter goes.
#[derive(Clone, Copy)]
enum In {
    Path,
    Query,
}

/// A parameter: name, place, JSON Schema type, description.
type Param = (&'static str, In, &'static str, &'static str);

/// A body's schema, made by the generator so that named types land in the components.
type Body = fn(&mut SchemaGenerator) -> Value;

/// One operation of the API.
struct Op {
    method: &'static str,
    /// The path as the router spells it (`{id}` parameters, `/api` included).
    path: &'static str,
    summary: &'static str,
    auth: Auth,
    params: &'static [Param],
    request: Option<Body>,
    /// The success status, its description and body (`None`: no JSON body).
    ok: (u16, &'static str, Option<Body>),
    /// Error statuses with the codes they carry (the body is always `ErrorBody`).
    errors: &'static [(u16, &'static str)],
    /// Limited per client address (429 with Retry-After).
    limited: bool,
}

fn of<T: schemars::JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

const ID: Param = ("id", In::Path, "string", "the table's id (a UUID)");
const INVITE: Param = (
    "invite",
    In::Query,
    "string",
    "a private table's invite code (not needed when seated)",
);
const GAME: Param = ("game", In::Path, "string", "a game kind, e.g. `trump`");

/// Every operation, in the order of `lib.rs`.
fn operations() -> Vec<Op> {
    use protocol::*;
    vec![
        Op {
            method: "post",
            path: "/api/guest",
            summary: "Become a guest player: a display name gets a player id and a token (also set as the `fib_token` cookie).",
            auth: Auth::Open,
            params: &[],
            request: Some(of::<GuestRequest>),
            ok: (
                200,
                "the new player and its token",
                Some(of::<GuestResponse>),
            ),
            errors: &[
                (
                    400,
                    "malformed, bad_name, name_forbidden_char, name_looks_like_bot",
                ),
                (413, "too_large"),
            ],
            limited: true,
        },
        Op {
            method: "get",
            path: "/api/me",
            summary: "Who the token belongs to.",
            auth: Auth::Player,
            params: &[],
            request: None,
            ok: (200, "the player", Some(of::<PlayerInfo>)),
            errors: &[(401, "unauthorized")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/session",
            summary: "Who the token belongs to, or `null`: always 200, for a page's start-up.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "the player or null", Some(of::<Session>)),
            errors: &[],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/me/matches",
            summary: "The caller's matches, newest first.",
            auth: Auth::Player,
            params: &[(
                "limit",
                In::Query,
                "integer",
                "at most this many rows (default 50)",
            )],
            request: None,
            ok: (200, "the matches", Some(of::<Vec<MatchRow>>)),
            errors: &[(401, "unauthorized"), (400, "malformed")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/games",
            summary: "The games the server offers, with their player ranges and default options.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "the catalogue", Some(of::<Vec<games::GameInfo>>)),
            errors: &[],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/tables",
            summary: "The lobby: public tables that are open or in play.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "the tables", Some(of::<Vec<TableInfo>>)),
            errors: &[],
            limited: false,
        },
        Op {
            method: "post",
            path: "/api/tables",
            summary: "Create a table (and sit at it unless `join` is false).",
            auth: Auth::Player,
            params: &[],
            request: Some(of::<CreateTableRequest>),
            ok: (201, "the new table", Some(of::<CreateTableResponse>)),
            errors: &[
                (
                    400,
                    "malformed, unknown_game, bad_options, bad_player_count, bad_pace",
                ),
                (401, "unauthorized"),
                (413, "too_large"),
                (429, "too_many_open_tables"),
            ],
            limited: true,
        },
        Op {
            method: "get",
            path: "/api/tables/{id}",
            summary: "One table's public information.",
            auth: Auth::Open,
            params: &[ID, INVITE],
            request: None,
            ok: (200, "the table", Some(of::<TableInfo>)),
            errors: &[
                (404, "table_not_found"),
                (403, "invite_required"),
                (409, "table_closed"),
            ],
            limited: false,
        },
        Op {
            method: "post",
            path: "/api/tables/{id}/join",
            summary: "Take a seat (a given one, or the first free).",
            auth: Auth::Player,
            params: &[ID],
            request: Some(of::<JoinRequest>),
            ok: (200, "the table after joining", Some(of::<TableInfo>)),
            errors: &[
                (401, "unauthorized"),
                (403, "invite_required"),
                (404, "table_not_found"),
                (
                    409,
                    "already_seated, already_started, table_closed, bad_seat, seat_taken, table_full",
                ),
                (400, "malformed"),
                (413, "too_large"),
            ],
            limited: true,
        },
        Op {
            method: "post",
            path: "/api/tables/{id}/leave",
            summary: "Leave an open table's seat.",
            auth: Auth::Player,
            params: &[ID],
            request: None,
            ok: (200, "the table after leaving", Some(of::<TableInfo>)),
            errors: &[
                (401, "unauthorized"),
                (403, "invite_required"),
                (404, "table_not_found"),
                (409, "not_seated, already_started"),
            ],
            limited: false,
        },
        Op {
            method: "post",
            path: "/api/tables/{id}/start",
            summary: "Start the match (the creator; empty seats get the table's bots).",
            auth: Auth::Player,
            params: &[ID],
            request: None,
            ok: (200, "the started table", Some(of::<TableInfo>)),
            errors: &[
                (401, "unauthorized"),
                (403, "invite_required"),
                (404, "table_not_found"),
                (409, "not_seated, already_started, seats_not_full"),
            ],
            limited: false,
        },
        Op {
            method: "post",
            path: "/api/tables/{id}/bots",
            summary: "Seat a bot of a level at an open table's seat.",
            auth: Auth::Player,
            params: &[ID],
            request: Some(of::<SeatBotRequest>),
            ok: (200, "the table", Some(of::<TableInfo>)),
            errors: &[
                (401, "unauthorized"),
                (403, "invite_required"),
                (404, "table_not_found"),
                (
                    409,
                    "not_seated, already_started, bad_seat, seat_taken, not_a_bot",
                ),
                (400, "malformed"),
                (413, "too_large"),
            ],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/tables/{id}/rounds",
            summary: "Every dealt round's seed commitment, and the seeds of ended rounds (R-0).",
            auth: Auth::Open,
            params: &[ID, INVITE],
            request: None,
            ok: (200, "one entry per round", Some(of::<Vec<RoundFairness>>)),
            errors: &[(404, "table_not_found"), (403, "invite_required")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/tables/{id}/replay",
            summary: "A finished match step by step, every hand revealed (docs/protocol.md §2.13a).",
            auth: Auth::Open,
            params: &[ID, INVITE],
            request: None,
            ok: (200, "the replay", Some(of::<Replay>)),
            errors: &[
                (404, "table_not_found"),
                (403, "invite_required"),
                (409, "replay_not_finished, daily_in_progress"),
            ],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/tables/{id}/rounds/{round}/deal",
            summary: "An ended round's seed and its deal, recomputed by replaying the log (docs/deals.md).",
            auth: Auth::Open,
            params: &[
                ID,
                ("round", In::Path, "integer", "the round number, from 1"),
                INVITE,
            ],
            request: None,
            ok: (200, "the deal record", Some(of::<DealRecord>)),
            errors: &[
                (404, "table_not_found, not_found"),
                (403, "invite_required"),
                (409, "round_in_progress, daily_in_progress"),
                (400, "malformed"),
            ],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/leaderboard/{game}",
            summary: "A game's ranked leaderboard in one rating pool, paged (docs/ratings.md).",
            auth: Auth::Open,
            params: &[
                GAME,
                ("pool", In::Query, "string", "`duel` (default) or `multi`"),
                ("offset", In::Query, "integer", "rows to skip (default 0)"),
                (
                    "limit",
                    In::Query,
                    "integer",
                    "rows to return (default 50, at most 100)",
                ),
            ],
            request: None,
            ok: (200, "one page of the leaderboard", Some(of::<Leaderboard>)),
            errors: &[
                (404, "not_found (no such game)"),
                (400, "malformed (also a pool other than duel or multi)"),
            ],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/records/{game}",
            summary: "A game's own records: Trump's highest totals, Solitaire's fewest discards.",
            auth: Auth::Open,
            params: &[
                GAME,
                (
                    "target",
                    In::Query,
                    "integer",
                    "Solitaire's target: 21, 13 or 8",
                ),
            ],
            request: None,
            ok: (200, "the records", Some(of::<Records>)),
            errors: &[(404, "not_found"), (400, "malformed")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/players/{id}/ratings",
            summary: "A player's rating in every game and pool.",
            auth: Auth::Open,
            params: &[("id", In::Path, "string", "the player's id (a UUID)")],
            request: None,
            ok: (
                200,
                "the ratings (empty for an unknown player)",
                Some(of::<Vec<PlayerRating>>),
            ),
            errors: &[(400, "malformed (not a UUID)")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/players/{id}/rating-history",
            summary: "A player's rating after each rated match in one game's pool, oldest first (the newest 200).",
            auth: Auth::Open,
            params: &[
                ("id", In::Path, "string", "the player's id (a UUID)"),
                (
                    "game",
                    In::Query,
                    "string",
                    "a game kind, e.g. `trump` (required)",
                ),
                ("pool", In::Query, "string", "`duel` (default) or `multi`"),
            ],
            request: None,
            ok: (
                200,
                "the points (empty for an unknown player)",
                Some(of::<Vec<RatingPoint>>),
            ),
            errors: &[
                (400, "malformed (not a UUID, no game, or a bad pool)"),
                (404, "not_found (no such game)"),
            ],
            limited: false,
        },
        Op {
            method: "get",
            path: "/api/daily/solitaire",
            summary: "A day's daily Solitaire deal: its commitment (the seed once the day is over) and board.",
            auth: Auth::Open,
            params: &[
                ("target", In::Query, "integer", "21 (default), 13 or 8"),
                (
                    "day",
                    In::Query,
                    "string",
                    "a UTC day `YYYY-MM-DD` (default today)",
                ),
            ],
            request: None,
            ok: (200, "the deal's board", Some(of::<DailyBoard>)),
            errors: &[
                (400, "bad_options, malformed"),
                (404, "not_found (nobody played that deal)"),
            ],
            limited: false,
        },
        Op {
            method: "post",
            path: "/api/daily/solitaire",
            summary: "Play (or resume) today's daily Solitaire deal.",
            auth: Auth::Player,
            params: &[],
            request: Some(of::<DailyRequest>),
            ok: (200, "the caller's daily table", Some(of::<TableInfo>)),
            errors: &[
                (401, "unauthorized"),
                (400, "malformed, bad_options"),
                (413, "too_large"),
            ],
            limited: true,
        },
        Op {
            method: "get",
            path: "/api/openapi.json",
            summary: "This document.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "the OpenAPI document", None),
            errors: &[],
            limited: false,
        },
        Op {
            method: "post",
            path: "/api/tables/{id}/test/panic",
            summary: "Test hook, only with FIB_TEST_HOOKS: make the table's task panic once.",
            auth: Auth::Open,
            params: &[ID],
            request: None,
            ok: (204, "the panic was requested", None),
            errors: &[(404, "table_not_found")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/",
            summary: "The browser client's page, with versioned module URLs (docs/web.md). Other static files of `web/` are served under their paths.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "the page (HTML)", None),
            errors: &[],
            limited: false,
        },
        Op {
            method: "get",
            path: "/index.html",
            summary: "The same page as `/`.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "the page (HTML)", None),
            errors: &[],
            limited: false,
        },
        Op {
            method: "get",
            path: "/healthz",
            summary: "Health: `ok`, or `degraded` with parked tables; 503 when the database is unreachable.",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "healthy or degraded (JSON)", None),
            errors: &[(503, "the database does not answer")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/metrics",
            summary: "Prometheus metrics (text exposition format).",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (200, "metrics as text", None),
            errors: &[],
            limited: false,
        },
        Op {
            method: "get",
            path: "/ws/lobby",
            summary: "WebSocket upgrade: the live lobby (docs/protocol.md §1; messages in docs/protocol.schema.json, `LobbyMsg`).",
            auth: Auth::Open,
            params: &[],
            request: None,
            ok: (101, "switching protocols", None),
            errors: &[(403, "forbidden_origin")],
            limited: false,
        },
        Op {
            method: "get",
            path: "/ws/table/{id}",
            summary: "WebSocket upgrade: play or watch a table (docs/protocol.md §1; `ClientMsg` and `ServerMsg` in docs/protocol.schema.json).",
            auth: Auth::Open,
            params: &[
                ID,
                INVITE,
                (
                    "since",
                    In::Query,
                    "integer",
                    "the version a reconnecting client holds",
                ),
                (
                    "updates",
                    In::Query,
                    "string",
                    "`full` for whole states instead of patches",
                ),
            ],
            request: None,
            ok: (101, "switching protocols", None),
            errors: &[
                (404, "table_not_found"),
                (403, "invite_required, forbidden_origin"),
                (429, "too_many_sockets"),
            ],
            limited: false,
        },
    ]
}

fn status_text(s: u16) -> &'static str {
    match s {
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// The whole document.
pub fn document() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let error = of::<protocol::ErrorBody>(&mut generator);
    let mut paths = Map::new();
    for op in operations() {
        let mut responses = Map::new();
        let (status, description, body) = op.ok;
        let mut ok = json!({ "description": description });
        if let Some(body) = body {
            ok["content"] = json!({ "application/json": { "schema": body(&mut generator) } });
        }
        responses.insert(status.to_string(), ok);
        let mut errors: Vec<(u16, String)> =
            op.errors.iter().map(|(s, c)| (*s, c.to_string())).collect();
        if op.limited {
            errors.push((429, "rate_limited (see the Retry-After header)".into()));
        }
        if op.path.starts_with("/api/") {
            errors.push((500, "internal (details are logged, never sent)".into()));
        }
        for (s, codes) in errors {
            let entry = responses.entry(s.to_string()).or_insert_with(|| {
                json!({
                    "description": status_text(s),
                    "content": { "application/json": { "schema": error.clone() } },
                })
            });
            let d = entry["description"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            entry["description"] = json!(format!("{d}; `code`: {codes}"));
        }
        let params: Vec<Value> = op
            .params
            .iter()
            .map(|(name, place, ty, description)| {
                json!({
                    "name": name,
                    "in": match place { In::Path => "path", In::Query => "query" },
                    "required": matches!(place, In::Path),
                    "description": description,
                    "schema": { "type": ty },
                })
            })
            .collect();
        let mut operation = json!({
            "summary": op.summary,
            "responses": responses,
        });
        if !params.is_empty() {
            operation["parameters"] = json!(params);
        }
        if let Some(body) = op.request {
            operation["requestBody"] = json!({
                "required": true,
                "content": { "application/json": { "schema": body(&mut generator) } },
            });
        }
        operation["security"] = match op.auth {
            Auth::Open => json!([]),
            Auth::Player => json!([{ "cookie": [] }, { "bearer": [] }]),
        };
        paths
            .entry(op.path.to_string())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("an object")
            .insert(op.method.to_string(), operation);
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "fibonacci-cards HTTP API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Generated from crates/server/src/openapi.rs and the wire types of crates/protocol by `UPDATE_OPENAPI=1 cargo test -p server openapi`. Do not edit. Errors always have the body `ErrorBody` with a stable `code` (docs/protocol.md). The WebSocket protocol is in docs/protocol.md and docs/protocol.schema.json.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "cookie": { "type": "apiKey", "in": "cookie", "name": crate::auth::COOKIE },
                "bearer": { "type": "http", "scheme": "bearer" },
            },
        },
    })
}

/// `GET /api/openapi.json`.
pub async fn serve() -> axum::Json<Value> {
    axum::Json(document())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/openapi.json is what the code generates (`UPDATE_OPENAPI=1` rewrites it).
    #[test]
    fn openapi_document_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
        let generated = serde_json::to_string_pretty(&document()).unwrap() + "\n";
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo test -p server openapi`"
        );
    }

    /// The routes `lib.rs` registers, read from its source: `(method, path)`.
    fn registered_routes() -> Vec<(String, String)> {
        let src = include_str!("lib.rs");
        let start = src.find("let api = Router::new()").expect("the api router");
        let src = &src[start..];
        let mut out = Vec::new();
        let mut nest = "/api";
        for chunk in src.split(".route(").skip(1) {
            let path = chunk.split('"').nth(1).expect("a path literal");
            // The routes after `.nest("/api", api)` are at the top level.
            let head = chunk.split(".route(").next().unwrap();
            let methods: Vec<&str> = ["get(", "post(", "put(", "delete(", "patch("]
                .into_iter()
                .filter(|m| {
                    head.match_indices(m).any(|(i, _)| {
                        i == 0
                            || !head.as_bytes()[i - 1].is_ascii_alphanumeric()
                                && head.as_bytes()[i - 1] != b'_'
                    })
                })
                .collect();
            assert!(!methods.is_empty(), "no method for {path}");
            for m in methods {
                out.push((m.trim_end_matches('(').to_string(), format!("{nest}{path}")));
            }
            if chunk.contains(".nest(\"/api\", api)") {
                nest = "";
            }
        }
        out
    }

    /// Every route in the router is described, and nothing else is.
    #[test]
    fn every_route_is_in_the_document() {
        let doc = document();
        let routes = registered_routes();
        assert!(routes.len() >= 20, "{routes:?}");
        for (method, path) in &routes {
            assert!(
                doc["paths"][path][method].is_object(),
                "{method} {path} is registered in lib.rs but not described in openapi.rs"
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
            "openapi.rs describes a route lib.rs lacks"
        );
    }

    /// Every `$ref` points at a schema that is in the document.
    #[test]
    fn every_reference_resolves() {
        let doc = document();
        let text = doc.to_string();
        for part in text.split("\"$ref\":\"").skip(1) {
            let target = part.split('"').next().unwrap();
            let name = target
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("a reference outside the components: {target}"));
            assert!(doc["components"]["schemas"][name].is_object(), "{target}");
        }
    }
}
