//! Every type that crosses the wire, in one place: HTTP request and response bodies, and the
//! WebSocket messages, named by direction ([`ClientMsg`]: client → server; [`ServerMsg`]
//! and [`LobbyMsg`]: server → client). These are separate from the rules crates' types:
//! a game's actions, views and events travel inside them as JSON whose schema each game
//! publishes ([`schema`]).
//!
//! `docs/protocol.schema.json` is generated from these types by [`schema`]; a test fails
//! when the checked-in copy is stale (regenerate with `UPDATE_SCHEMA=1 cargo test -p
//! protocol`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

pub use game_core::Viewer;
pub use games::BotLevel;

/// Largest WebSocket message the server reads, in bytes. Larger frames are refused and the
/// socket is closed with code 1009 (message too big).
pub const MAX_WS_MESSAGE: usize = 16 * 1024;
/// Largest HTTP request body, in bytes.
pub const MAX_HTTP_BODY: usize = 16 * 1024;
/// Longest display name, in characters.
pub const MAX_NAME_CHARS: usize = 24;

// ---------------------------------------------------------------------------------------
// HTTP bodies
// ---------------------------------------------------------------------------------------

/// `POST /api/guest`: become a guest player.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuestRequest {
    /// 1 to 24 characters after trimming; no control characters.
    pub name: String,
}

/// Answer to `POST /api/guest`. The token is also set as the `fib_token` HttpOnly cookie;
/// non-browser clients send it as `Authorization: Bearer <token>`. It is shown only once.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GuestResponse {
    pub player: PlayerInfo,
    pub token: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlayerInfo {
    pub id: Uuid,
    pub name: String,
}

/// `POST /api/tables`: create a table.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTableRequest {
    /// A game kind from `GET /api/games`, e.g. `"trump"`.
    pub game: String,
    /// Number of seats, within the game's player range.
    pub seats: usize,
    /// The game's options; omitted or `null` means the game's defaults.
    #[serde(default)]
    pub options: Value,
    /// A private table is not listed in the lobby and is reached through its invite link.
    #[serde(default)]
    pub private: bool,
    /// When the match starts, empty seats are filled with bots of this level. `null`: no
    /// bots; the match starts only with every seat taken.
    #[serde(default)]
    pub bots: Option<BotLevel>,
    /// Seat the creator at seat 0 (default true).
    #[serde(default = "yes")]
    pub join: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct CreateTableResponse {
    pub table: TableInfo,
    /// For a private table: the code to put in the invite link (`/#/table/<id>/<code>`).
    pub invite_code: Option<String>,
}

/// `POST /api/tables/{id}/join`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// The seat wanted; `null` takes the lowest free seat.
    #[serde(default)]
    pub seat: Option<usize>,
    /// Required for a private table.
    #[serde(default)]
    pub invite_code: Option<String>,
}

/// `POST /api/tables/{id}/bots`: before the match, put a bot of `level` in an empty seat,
/// or take the bot out of a seat (`level: null`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeatBotRequest {
    pub seat: usize,
    pub level: Option<BotLevel>,
}

/// The error body of every failed HTTP request, and the payload of [`ServerMsg::Error`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// A stable snake_case code (see docs/protocol.md for the full list).
    pub code: String,
    /// A human-readable explanation.
    pub message: String,
}

/// Who sits in a seat, as everyone sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SeatInfo {
    Empty,
    Player {
        id: Uuid,
        name: String,
        /// Whether the player has a live connection to the table now.
        connected: bool,
    },
    Bot {
        level: BotLevel,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TableStatus {
    Open,
    Playing,
    Finished,
    Abandoned,
}

/// A table as the lobby and its players see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableInfo {
    pub id: Uuid,
    pub game: String,
    pub options: Value,
    pub private: bool,
    pub status: TableStatus,
    pub bots: Option<BotLevel>,
    pub seats: Vec<SeatInfo>,
    /// Connected spectators.
    pub spectators: usize,
    /// Current round (0 before the first).
    pub round: u32,
    /// Seats the game waits for.
    pub to_act: Vec<usize>,
    /// Cumulative match score per seat.
    pub scores: Vec<i64>,
    /// Set when the match is over.
    pub winners: Option<Vec<usize>>,
    pub created_at: i64,
}

/// The public fairness record of one round (R-0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RoundFairness {
    pub round: u32,
    /// SHA-256 of the seed's 32 bytes, hex: published when the round starts.
    pub seed_sha256: String,
    /// The seed, hex: published only once the round has ended.
    pub seed: Option<String>,
}

/// `GET /api/tables/{id}/rounds/{n}/deal` for an ended round: the seed and the deal the
/// server recomputes from it by replaying the stored log.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DealRecord {
    pub round: u32,
    pub seed: String,
    pub seed_sha256: String,
    /// The game's record of the deal (every hand, the stock order, indicators).
    pub deal: Value,
}

/// One row of `GET /api/leaderboard/{game}`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct LeaderRow {
    pub player: PlayerInfo,
    pub matches: i64,
    pub wins: i64,
    pub points: i64,
    /// Elo rating in this game (everyone starts at 1500), rounded; `null` until the
    /// player's first rated match. Only matches between two or more people are rated.
    pub rating: Option<i64>,
    /// Matches that counted for the rating.
    pub rated_matches: i64,
}

/// One row of `GET /api/me/matches`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct MatchRow {
    pub table_id: Uuid,
    pub game: String,
    pub status: TableStatus,
    pub seat: usize,
    pub score: i64,
    pub won: Option<bool>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `POST /api/daily/solitaire`: start (or resume) today's daily Solitaire deal.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DailyRequest {
    /// 21, 13 or 8: Solitaire Fibonacci 21, 13 or 8.
    pub target: u32,
}

/// `GET /api/daily/solitaire?target=21&day=YYYY-MM-DD`: a day's deal and its board.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DailyBoard {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    pub target: u32,
    /// SHA-256 of the day's seed: the same for every player of that day.
    pub seed_sha256: String,
    /// The seed, once the day is over.
    pub seed: Option<String>,
    /// Finished games by fewest cards in the discard pile, then lost games (R-25).
    pub results: Vec<DailyResult>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DailyResult {
    pub player: PlayerInfo,
    /// Cards in the discard pile at the end (lower is better).
    pub discards: i64,
    /// `false` when the stock ran out first (the game is lost).
    pub finished: bool,
    pub table_id: Uuid,
}

// ---------------------------------------------------------------------------------------
// WebSocket messages
// ---------------------------------------------------------------------------------------

/// Client → server, on `/ws/table/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMsg {
    /// Take a game action. `version` is the table version the client last saw; an action
    /// against an older version is refused with `stale_version` (the client gets the
    /// current state with the error and may try again).
    Act { version: u64, action: Value },
    /// Ask for a full state message (a resync).
    Sync {},
    /// Keep-alive; answered with [`ServerMsg::Pong`].
    Ping {},
}

/// Server → client, on `/ws/table/{id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// The whole state as this connection may see it. Sent on connect, after every change
    /// of the table, and on `sync`. A client that holds the latest `state` is in sync: it
    /// never needs to merge events.
    State {
        /// Increases with every change of the table's game or seats (seat, status, round
        /// start, action); presence and spectator counts are refreshed without a bump. An
        /// `act` must carry the version of the newest state received. Versions never go
        /// backwards: after a server restart a table jumps to its restore time in ms.
        version: u64,
        table: TableInfo,
        /// Whose eyes this is: a seat, or a spectator.
        you: Viewer,
        /// The game's view for `you` (see the game's `view` schema); `null` before the
        /// match starts.
        view: Value,
        /// Your legal actions now (empty for spectators and when you cannot act).
        legal: Vec<Value>,
        /// What just happened: the game's public events of the change that produced this
        /// version (empty on connect and resync).
        events: Vec<Value>,
        /// Seed commitments and revealed seeds, round by round.
        fairness: Vec<RoundFairness>,
    },
    /// A refused message. Nothing changed.
    Error {
        code: String,
        message: String,
        /// The table version when the error was produced; 0 for errors the socket itself
        /// produces before the table sees the message (`malformed`,
        /// `binary_not_supported`, `rate_limited`, `table_closed`).
        version: u64,
    },
    Pong,
}

/// Server → client, on `/ws/lobby`: the public tables that are open or playing, sent on
/// connect and again whenever one changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LobbyMsg {
    Tables { tables: Vec<TableInfo> },
}

/// The JSON Schema document of the whole protocol: the WebSocket messages, the HTTP bodies,
/// and per game its options, actions, views and events.
pub fn schema() -> Value {
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "fibonacci-cards protocol",
        "description": "Generated from crates/protocol by `UPDATE_SCHEMA=1 cargo test -p protocol`. Do not edit.",
        "websocket": {
            "ClientMsg": schemars::schema_for!(ClientMsg),
            "ServerMsg": schemars::schema_for!(ServerMsg),
            "LobbyMsg": schemars::schema_for!(LobbyMsg),
        },
        "http": {
            "GuestRequest": schemars::schema_for!(GuestRequest),
            "GuestResponse": schemars::schema_for!(GuestResponse),
            "CreateTableRequest": schemars::schema_for!(CreateTableRequest),
            "CreateTableResponse": schemars::schema_for!(CreateTableResponse),
            "JoinRequest": schemars::schema_for!(JoinRequest),
            "SeatBotRequest": schemars::schema_for!(SeatBotRequest),
            "ErrorBody": schemars::schema_for!(ErrorBody),
            "DealRecord": schemars::schema_for!(DealRecord),
            "LeaderRow": schemars::schema_for!(LeaderRow),
            "MatchRow": schemars::schema_for!(MatchRow),
            "DailyRequest": schemars::schema_for!(DailyRequest),
            "DailyBoard": schemars::schema_for!(DailyBoard),
        },
        "games": games::schemas(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_schema_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/protocol.schema.json"
        );
        let fresh = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &fresh).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == fresh,
            "docs/protocol.schema.json is stale: run `UPDATE_SCHEMA=1 cargo test -p protocol`"
        );
    }

    #[test]
    fn client_messages_are_strict() {
        let ok: ClientMsg =
            serde_json::from_str(r#"{"type":"act","version":3,"action":{"type":"play"}}"#).unwrap();
        assert!(matches!(ok, ClientMsg::Act { version: 3, .. }));
        assert!(serde_json::from_str::<ClientMsg>(r#"{"type":"act"}"#).is_err());
        assert!(serde_json::from_str::<ClientMsg>(r#"{"type":"sync","x":1}"#).is_err());
        assert!(serde_json::from_str::<ClientMsg>(r#"{"type":"dance"}"#).is_err());
    }
}
