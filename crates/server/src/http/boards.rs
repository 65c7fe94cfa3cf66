//! Leaderboards, a player's ratings and rating history, and each game's records.

use axum::Json;
use axum::extract::{Path, Query, State};
use protocol::PlayerInfo;
use serde::Deserialize;
use uuid::Uuid;

use super::daily::{daily_key, daily_target};
use crate::error::ApiError;
use crate::extract::*;
use crate::state::{AppState, now_ms};
use crate::wire;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeaderboardQuery {
    /// The rating pool: `duel` (default), `multi` or `bots` (matches with a bot account).
    #[param(schema_with = crate::extract::params::pool)]
    pub pool: Option<String>,
    /// Rows to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Rows to return (default 50, at most 100: more is read as 100, less than 1 as 1).
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
        (status = 400, description = "`code`: malformed (a bad query, a pool other than duel, multi or bots, a negative offset)", body = wire::ErrorBody),
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
            ApiError::Malformed(format!(
                "pool must be \"duel\", \"multi\" or \"bots\", not {p:?}"
            ))
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
                bot_account: r.bot,
            })
            .collect(),
    }))
}

/// The protocol's name of a store pool, and its system.
fn pool_names(pool: store::rating::Pool) -> (protocol::RatingPool, protocol::RatingSystem) {
    match pool {
        store::rating::Pool::Duel => (protocol::RatingPool::Duel, protocol::RatingSystem::Glicko2),
        store::rating::Pool::Bots => (protocol::RatingPool::Bots, protocol::RatingSystem::WengLin),
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
    params(("id" = String, Path, format = Uuid, description = "the player's id (a UUID)")),
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
    /// The rating pool: `duel` (default), `multi` or `bots` (matches with a bot account).
    #[param(schema_with = crate::extract::params::pool)]
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
    params(("id" = String, Path, format = Uuid, description = "the player's id (a UUID)"), HistoryQuery),
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
            ApiError::Malformed(format!(
                "pool must be \"duel\", \"multi\" or \"bots\", not {p:?}"
            ))
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
    #[param(schema_with = crate::extract::params::solitaire_target)]
    pub target: Option<u32>,
}

/// How many rows each list of records holds.
const RECORDS: i64 = 20;

fn record_rows(app: &AppState, rows: Vec<store::ScoreRecord>) -> Vec<protocol::RecordRow> {
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
            bot_account: app.core.is_bot_account(r.player_id),
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
            highest_totals: record_rows(&app, app.store.best_totals("trump", RECORDS).await?),
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
                best: record_rows(&app, best),
                today: record_rows(&app, today),
            }))
        }
        _ => Err(ApiError::NotFound(format!(
            "there are no records of {game:?}: records exist for \"trump\" and \"solitaire\""
        ))),
    }
}
