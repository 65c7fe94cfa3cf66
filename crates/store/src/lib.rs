//! Durable storage of players, tables, per-round seeds and action logs, cumulative scores,
//! match results and leaderboards.
//!
//! One trait, [`Store`], with one implementation per backend (SQLite, the embedded
//! default; Postgres, for production). The backend is chosen by the URL's scheme in
//! [`connect`]. Queries are built at run time (`sqlx::query` + `bind`), so no database is
//! needed to compile, and each backend has its own migration folder
//! (`migrations/sqlite`, `migrations/postgres`) applied by [`connect`].
//!
//! # Writes: one writer, group commit
//!
//! What a table task writes during play (an action, and the round or match transitions it
//! caused) is a [`TableWrite`]: a list of [`WriteOp`]s that land together, in order.
//! [`Store::write_group`] commits many such units, from many tables, in one transaction;
//! [`Writer`] is the one task per process that feeds it. Table tasks hand it their units
//! and wait; it takes whatever is queued when it is free (no timer: the next group grows
//! while the previous one commits), commits it, and answers every waiter once the group
//! is durable. So one fsync (SQLite) or one round trip (Postgres, when the group holds
//! only actions) serves many actions, and a busy moment makes groups larger rather than
//! latency higher. It retries transient failures (busy, I/O, lost connection) with
//! backoff up to a deadline, and when a group breaks a rule (a duplicate action, an
//! unknown round) it commits the units one by one so only the bad one fails.
//!
//! The older single-write methods ([`Store::append_action`] and friends) remain, each a
//! group of one unit; everything else a process writes (players, new tables, daily seeds)
//! goes straight to the store.
//!
//! On a SQLite file every write of the store, whichever path it takes, goes through one
//! connection, and every write transaction starts with `BEGIN IMMEDIATE` (a lone
//! statement takes the lock as it starts): SQLite has one write lock per database, and
//! several connections competing for it made transactions that began with a read fail
//! with `SQLITE_BUSY` (no busy wait applies to a lock upgrade). Reads use a separate pool
//! of read-only connections, which WAL lets run beside the writer.
//!
//! The server's table task is the only writer of a table's rows; the store does not
//! arbitrate between writers, but it does refuse a duplicate action sequence number, so a
//! bug cannot silently fork a log.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

mod common;
mod postgres;
pub mod rating;
mod sqlite;
mod writer;

pub use postgres::PgStore;
pub use sqlite::{SqliteStore, sqlite_file};
pub use writer::{WriteObserver, Writer};

/// Errors of the storage layer. None of these is shown to a client verbatim: the server
/// logs the detail and answers with a generic `internal` error (or `not_found`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL's scheme names no backend we have (client sees: the server does not start).
    #[error("unsupported database URL scheme in {0:?}: use sqlite:// or postgres://")]
    UnsupportedUrl(String),
    /// A uniqueness rule was broken: a duplicate token hash, table id, round or action
    /// sequence number (client sees `internal`; it means a server bug or a race).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The row to update does not exist (client sees `not_found` where that makes sense).
    #[error("not found: {0}")]
    NotFound(String),
    /// Stored data that does not decode (client sees `internal`).
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// Migrations failed at start-up (client sees: the server does not start).
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Any other database error (client sees `internal`).
    #[error("database error: {0}")]
    Db(sqlx::Error),
    /// The [`Writer`] kept meeting transient failures (busy, I/O, lost connection, no
    /// answer) until its retry deadline and gave up; the message has the last one. The
    /// unit is not stored, unless a lost connection hid a commit that did happen (client
    /// sees `internal`).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The [`Writer`]'s task is gone (it panicked, or its runtime shut down), so the unit
    /// was not answered. If the task died while committing, the unit may be stored; the
    /// caller should reload the table from the store rather than guess (client sees
    /// `internal`).
    #[error("the store's writer task is gone")]
    WriterGone,
    /// Writing a group panicked (a bug, most likely set off by one unit): the writer
    /// survives it and writes the group's units one by one, so only the unit that sets it
    /// off fails (client sees `internal`).
    #[error("the store panicked while writing: {0}")]
    Panicked(String),
    /// The unit's table was claimed by another node since its writer claimed it: the unit
    /// carries an older fencing epoch than the table's, and the database refused it
    /// (nothing of it was written). The writer is no longer the table's owner and must stop
    /// serving it (client sees its socket closed with 1013, and reconnects to the new owner).
    #[error("fenced: {0}")]
    Fenced(String),
}

impl StoreError {
    /// Whether trying the same write again may succeed: the database was busy or locked, a
    /// connection could not be had in time or broke, an I/O error, or the writer already
    /// gave up on such failures ([`StoreError::Unavailable`]). Broken rules (`Conflict`,
    /// `NotFound`), bad data and configuration errors are not: they fail the same way
    /// every time.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Db(e) => transient_sqlx(e),
            StoreError::Unavailable(_) => true,
            StoreError::UnsupportedUrl(_)
            | StoreError::Conflict(_)
            | StoreError::NotFound(_)
            | StoreError::Corrupt(_)
            | StoreError::Migrate(_)
            | StoreError::WriterGone
            | StoreError::Panicked(_)
            | StoreError::Fenced(_) => false,
        }
    }
}

/// See [`StoreError::is_transient`].
fn transient_sqlx(e: &sqlx::Error) -> bool {
    match e {
        // A connection that broke (or its SQLite worker thread) is replaced by the pool.
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => {
            if d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                // The code is SQLite's extended result code; its low byte is the primary
                // code: BUSY, LOCKED, IOERR, FULL (disk full), PROTOCOL (a WAL lock race).
                let code = d.code().and_then(|c| c.parse::<i32>().ok()).unwrap_or(0);
                matches!(code & 0xff, 5 | 6 | 10 | 13 | 15)
            } else if let Some(e) = d.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                let state = e.code();
                // Connection exceptions (08), insufficient resources (53), serialization
                // failure, deadlock, lock not available, shutdowns and restarts, I/O.
                state.starts_with("08")
                    || state.starts_with("53")
                    || matches!(
                        state,
                        "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03" | "58030"
                    )
            } else {
                false
            }
        }
        _ => false,
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if let sqlx::Error::Database(d) = &e
            && d.is_unique_violation()
        {
            return StoreError::Conflict(d.message().to_string());
        }
        // SQLite's `actions` trigger (migration 0014) refuses an action at or before its
        // table's head: the duplicate the log's primary key refuses on Postgres.
        if let sqlx::Error::Database(d) = &e
            && d.message().starts_with("fib: duplicate action")
        {
            return StoreError::Conflict(d.message().to_string());
        }
        // Postgres' fib_fence (migration 0012) refuses a write under a stale epoch, and so
        // does the `game_tables_fence` check in a group of plain actions.
        if let sqlx::Error::Database(d) = &e
            && d.code().as_deref() == Some("FB001")
        {
            return StoreError::Fenced(d.message().to_string());
        }
        // Postgres' `APPEND_AND_TOUCH` refuses an action of a table that has ended through
        // the status column's CHECK (`postgres.rs`): the refusal SQLite's trigger and
        // write thread give (migration 0022 there). Nothing else writes a status outside
        // `TableStatus`.
        if let sqlx::Error::Database(d) = &e
            && d.constraint() == Some("game_tables_status_check")
        {
            return StoreError::Conflict(
                "a duplicate action: a table of the group has ended (finished or abandoned)".into(),
            );
        }
        if let sqlx::Error::Database(d) = &e
            && d.constraint() == Some("game_tables_fence")
        {
            return StoreError::Fenced(
                "a table of the group is at another epoch than its write: another node claimed it"
                    .into(),
            );
        }
        StoreError::Db(e)
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A guest player. Only the SHA-256 of their token is stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Player {
    pub id: Uuid,
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// A bot account (`Store::make_bot`): a program plays as this player.
    #[serde(default)]
    pub bot: bool,
}

/// What [`Store::make_bot`] did. Only a claimed account that holds no seat at a table becomes
/// a bot account; nothing changes otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BotConversion {
    Done,
    /// No such player.
    NoPlayer,
    /// A guest: only a claimed account may become a bot account.
    NotClaimed,
    /// Already a bot account.
    AlreadyBot,
    /// The player has sat at a table: its history is a person's.
    HasPlayed,
}

/// A signed-in device of a player: one token (only its SHA-256 is stored).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRecord {
    /// Public and opaque (32 hex digits): names the device in the list, never the token.
    pub id: String,
    pub player_id: Uuid,
    /// What the device said it was when the session began (its User-Agent, shortened).
    pub label: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds; refreshed at most every few minutes ([`Store::touch_session`]).
    pub last_seen_at: i64,
}

/// The player and the session a token belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authed {
    pub player: Player,
    pub session: SessionRecord,
}

/// A claimed player: the username to sign in with and the argon2id hash of the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountRecord {
    pub player_id: Uuid,
    /// As the player typed it.
    pub username: String,
    /// The form that must be unique (case-folded); the server computes it.
    pub username_key: String,
    /// A PHC string (`$argon2id$v=19$…`).
    pub password_hash: String,
    pub created_at: i64,
}

/// What [`Store::create_account`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    Claimed,
    /// The player already has an account; nothing changed.
    AlreadyClaimed,
    /// Another account has the same `username_key`; nothing changed.
    UsernameTaken,
}

/// One player waiting in a quick-play queue: the pool is `(game, seats)`.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueEntry {
    pub player_id: Uuid,
    pub name: String,
    pub game: String,
    pub seats: i32,
    /// The player's rating in the pool, in starting deviations from the start (so that
    /// Glicko-2 and Weng-Lin ratings compare on one scale).
    pub rating: f64,
    /// The connection that waits (a socket's id): only it may take the entry out, so a
    /// second tab closing does not remove the first tab's place.
    pub conn: String,
    /// Unix milliseconds.
    pub joined_at: i64,
}

/// A server node as the database knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    pub id: String,
    /// Where the other nodes reach it, `http://host:port`.
    pub address: String,
    pub started_at: i64,
    pub expires_at: i64,
    pub draining: bool,
}

/// Who owns a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableOwner {
    /// The owner's node id, if any node claimed the table.
    pub node: Option<String>,
    pub epoch: i64,
    /// The owner's address while its lease runs (`None`: no live owner).
    pub live_address: Option<String>,
}

/// What a [`Store::listen`] receiver gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    Message {
        channel: String,
        payload: String,
    },
    /// The listening connection was lost and made again: notifications sent meanwhile
    /// were missed.
    Reconnected,
}

/// A held cluster-wide lock ([`Store::try_exclusive`]): released when dropped.
pub struct Exclusive(#[allow(dead_code)] pub(crate) Option<Box<dyn std::any::Any + Send>>);

/// Who sits in a seat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Occupant {
    Empty,
    Player { id: Uuid, name: String },
    Bot { level: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableStatus {
    /// Waiting for seats to fill.
    Open,
    /// The match has started and is not over.
    Playing,
    /// The match is over; a result is stored.
    Finished,
    /// Closed before the match started (everybody left an open table).
    Abandoned,
}

impl TableStatus {
    /// Whether a table at this status is over for good: no action may follow, and the
    /// SQLite store keeps no head for it (migration 0022).
    pub fn ended(self) -> bool {
        matches!(self, TableStatus::Finished | TableStatus::Abandoned)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TableStatus::Open => "open",
            TableStatus::Playing => "playing",
            TableStatus::Finished => "finished",
            TableStatus::Abandoned => "abandoned",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "open" => TableStatus::Open,
            "playing" => TableStatus::Playing,
            "finished" => TableStatus::Finished,
            "abandoned" => TableStatus::Abandoned,
            _ => return None,
        })
    }
}

/// A table as created in the lobby.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRecord {
    pub id: Uuid,
    /// The game's `KIND`, e.g. `"trump"`.
    pub game: String,
    /// The game's options as JSON.
    pub options: serde_json::Value,
    /// The rules version the match is played under (replay must use the same).
    pub rules_version: i32,
    /// Number of seats.
    pub seat_count: i32,
    /// A private table is not listed in the lobby; it is joined through its invite code.
    pub private: bool,
    /// Random code in the invite link of a private table (absent for public tables).
    pub invite_code: Option<String>,
    pub created_by: Uuid,
    /// Unix milliseconds.
    pub created_at: i64,
    pub status: TableStatus,
    /// Level of the bots that fill empty seats when the match starts; `None`: no bots.
    pub bots: Option<String>,
    /// The daily deal this table plays (its key in `daily_deals`), if any.
    pub daily: Option<String>,
    /// The table's pace (`protocol::Pace` as JSON).
    pub pace: serde_json::Value,
    /// The seats' time banks in ms (JSON array), once one has changed; while a seat's
    /// clock has run out on the move the game waits for, `{"banks":[…],"timed_out":[seats]}`
    /// (the realtime crate's `online` module writes and reads both).
    pub clock: Option<serde_json::Value>,
    /// Unix ms of the table's last stored change (equal to `created_at` when created).
    pub updated_at: i64,
}

/// One round's seed record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub round_no: i32,
    /// The seed, 64 hex characters. Secret until `ended_at` is set: the server must never
    /// publish it for a round still in play.
    pub seed_hex: String,
    /// SHA-256 of the seed bytes, hex: public from the round's start.
    pub commitment: String,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    /// The game's round result (JSON), once ended.
    pub result: Option<serde_json::Value>,
}

/// One accepted action in a round's append-only log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub round_no: i32,
    /// 0-based position within the round; strictly increasing without gaps.
    pub seq: i64,
    pub seat: i32,
    pub action: serde_json::Value,
}

/// Everything needed to bring a table back after a restart: replay `rounds` in order,
/// starting each with its seed and applying its actions in `seq` order.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTable {
    pub record: TableRecord,
    /// One per seat, in seat order.
    pub seats: Vec<Occupant>,
    /// Cumulative score per seat as stored after the last ended round.
    pub scores: Vec<i64>,
    pub rounds: Vec<RoundRecord>,
    /// All actions of all rounds, ordered by (round_no, seq).
    pub actions: Vec<ActionRecord>,
    /// Per seat: whether it abandoned the match.
    pub abandoned: Vec<bool>,
}

/// A ranked player on a pool's leaderboard ([`rating`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderRow {
    pub player_id: Uuid,
    pub name: String,
    /// μ, σ and (Glicko-2 only) volatility in the pool.
    pub rating: rating::Rating,
    /// μ − 3σ: what the board ranks by.
    pub conservative: f64,
    /// Rated matches in the pool.
    pub matches: i64,
    /// Of those, the ones the player won (a shared win too).
    pub wins: i64,
    /// A bot account.
    pub bot: bool,
}

/// A player's rating in one game's pool, ranked or not yet.
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerRating {
    pub game: String,
    pub pool: rating::Pool,
    pub rating: rating::Rating,
    pub conservative: f64,
    pub matches: i64,
    pub wins: i64,
}

/// A player's rating after one rated match (`rating_history`).
#[derive(Clone, Debug, PartialEq)]
pub struct RatingPoint {
    pub table_id: Uuid,
    /// Unix ms the match finished.
    pub at: i64,
    pub mu: f64,
    pub sigma: f64,
    pub conservative: f64,
    pub won: bool,
}

/// One page of a leaderboard, and how many players it ranks in all.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderPage {
    pub total: i64,
    pub rows: Vec<LeaderRow>,
}

/// A person's final score in a finished match, as a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoreRecord {
    pub player_id: Uuid,
    pub name: String,
    pub score: i64,
    pub table_id: Uuid,
    /// When the match finished, Unix ms.
    pub finished_at: i64,
    /// People and bots seated in that match.
    pub people: i64,
    pub bots: i64,
}

/// One of a player's matches, for "my matches".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchRow {
    pub table_id: Uuid,
    pub game: String,
    pub status: TableStatus,
    pub seat: i32,
    /// The player's cumulative score in that match.
    pub score: i64,
    /// `Some` once finished.
    pub won: Option<bool>,
    pub created_at: i64,
    /// Time of the latest change (action, round end, status change), Unix milliseconds.
    pub updated_at: i64,
    /// Whether the table is private (invite only).
    pub private: bool,
    /// Every seat of the table, in seat order (the player's own included).
    pub seats: Vec<Occupant>,
}

/// One result of a daily deal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DailyRow {
    pub player_id: Uuid,
    pub name: String,
    /// The game's final score (Solitaire: cards in the discard pile, R-25).
    pub score: i64,
    /// Whether the game was finished (all sets closed) rather than lost.
    pub finished: bool,
    pub table_id: Uuid,
}

/// The lines of each kind (players', spectators') a table keeps: its latest, what a page is
/// sent (`protocol::CHAT_HISTORY`, checked equal by the `realtime` crate's tests). Each new
/// line forgets the oldest beyond.
pub const CHAT_KEPT: i64 = 50;

/// One stored line of table chat: a text or a quick reaction (exactly one of the two).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatRecord {
    /// The table's chat line number (from 1; unique per table, may skip).
    pub seq: i64,
    pub player_id: Uuid,
    /// The sender's name when the line was sent.
    pub name: String,
    /// The sender held no seat at the table.
    pub spectator: bool,
    pub text: Option<String>,
    /// The reaction's wire name (`"gg"`, …).
    pub emote: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// One table's writes that must land together, in order (an action and the round/match
/// transitions it caused), written under the fencing epoch its writer holds.
#[derive(Clone, Debug, PartialEq)]
pub struct TableWrite {
    pub table: Uuid,
    /// The table's fencing epoch as its writer claimed it ([`Store::claim_table`]): the
    /// unit is refused ([`StoreError::Fenced`]) once the table is at another epoch. The
    /// server's table tasks always set it; `None` (no fence) is for the store's own
    /// one-op methods, which tools and tests call on tables no server holds.
    pub epoch: Option<i64>,
    /// Unix milliseconds: the time of every op (a round's start uses its `started_at`).
    pub now: i64,
    pub ops: Vec<WriteOp>,
}

/// One write of a [`TableWrite`]; each has the semantics of the [`Store`] method of the
/// same name.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    SetSeat {
        seat: i32,
        occupant: Occupant,
    },
    SetStatus(TableStatus),
    StartRound(RoundRecord),
    AppendAction(ActionRecord),
    EndRound {
        round_no: i32,
        result: serde_json::Value,
        totals: Vec<i64>,
    },
    FinishMatch {
        totals: Vec<i64>,
        winners: Vec<i32>,
    },
    /// The seats' time banks changed (ms, JSON array), or a time-out is owed (see
    /// [`TableRecord::clock`]).
    SetClock(serde_json::Value),
    /// These seats abandoned the match (their player left; a bot played on for them).
    /// Written before `FinishMatch` in the same unit, it makes the match's rating count
    /// them as losing to everyone else.
    Abandon {
        seats: Vec<i32>,
    },
    /// A line of the table's chat. Unlike every other op it does not touch the table's
    /// `updated_at` (talking is not a change of the match). A duplicate `seq` is a
    /// `Conflict`, an unknown sender `NotFound`.
    Chat(ChatRecord),
}

impl TableWrite {
    /// A unit of one op.
    pub fn one(table: Uuid, now: i64, op: WriteOp) -> Self {
        TableWrite {
            table,
            epoch: None,
            now,
            ops: vec![op],
        }
    }

    /// The same unit, written only while the table is at `epoch`.
    pub fn fenced(self, epoch: i64) -> Self {
        TableWrite {
            epoch: Some(epoch),
            ..self
        }
    }
}

/// Where a match analysis is (migration 0015, docs/analysis.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnalysisState {
    /// Waiting for a worker.
    Queued,
    /// A worker has it (until its lease runs out).
    Running,
    /// Finished: `result` holds the analysis.
    Done,
    /// The analysis could not be made (the log did not replay): `error` says why.
    Failed,
}

impl AnalysisState {
    pub fn as_str(self) -> &'static str {
        match self {
            AnalysisState::Queued => "queued",
            AnalysisState::Running => "running",
            AnalysisState::Done => "done",
            AnalysisState::Failed => "failed",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => AnalysisState::Queued,
            "running" => AnalysisState::Running,
            "done" => AnalysisState::Done,
            "failed" => AnalysisState::Failed,
            _ => return None,
        })
    }
}

/// One requested analysis of a finished match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalysisJob {
    pub id: Uuid,
    pub table_id: Uuid,
    /// The analysis engine's version the job is for.
    pub version: i64,
    pub requested_by: Uuid,
    pub state: AnalysisState,
    /// Decisions analysed so far, of `total` (0 of 0 before a worker counted them).
    pub done: i64,
    pub total: i64,
    /// The worker that holds (or last held) it, and until when (Unix ms).
    pub worker: Option<String>,
    pub lease_until: Option<i64>,
    /// The analysis as JSON text, once `Done`.
    pub result: Option<String>,
    /// Why it failed, once `Failed`.
    pub error: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// The bounds an analysis request must keep ([`Store::request_analysis`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnalysisLimits {
    /// Jobs waiting or running in all, over every player.
    pub queue: i64,
    /// Jobs one player may have waiting or running at once.
    pub pending_per_player: i64,
    /// Jobs asked from one client address that may be waiting or running at once, whoever
    /// asked (a guest costs nothing to make); 0: no limit.
    pub pending_per_address: i64,
    /// Jobs one player may request in 24 hours.
    pub per_player_day: i64,
}

/// What a request for an analysis did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalysisRequested {
    /// The table already had a job for this version (waiting, running or done): nothing new.
    Existing(AnalysisJob),
    /// A new job is queued (or a failed one queued again).
    Queued(AnalysisJob),
    /// The player has `pending_per_player` jobs waiting or running.
    PlayerPending,
    /// Jobs asked from the same address, `pending_per_address` of them, are waiting or
    /// running.
    AddressPending,
    /// The player requested `per_player_day` jobs in the last 24 hours.
    PlayerDaily,
    /// `queue` jobs are waiting or running.
    QueueFull,
}

/// Where a tournament stands (`tournaments.status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TournamentStatus {
    Registration,
    Running,
    Finished,
}

impl TournamentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TournamentStatus::Registration => "registration",
            TournamentStatus::Running => "running",
            TournamentStatus::Finished => "finished",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "registration" => Some(TournamentStatus::Registration),
            "running" => Some(TournamentStatus::Running),
            "finished" => Some(TournamentStatus::Finished),
            _ => None,
        }
    }
}

/// A stored tournament (migration 0017/0016): its settings, the engine's state and the
/// version of that state.
#[derive(Clone, Debug, PartialEq)]
pub struct TournamentRecord {
    pub id: Uuid,
    pub name: String,
    pub game: String,
    pub status: TournamentStatus,
    pub private: bool,
    pub invite_code: Option<String>,
    pub rated: bool,
    /// `None`: scheduled by the operator.
    pub created_by: Option<Uuid>,
    pub created_at: i64,
    /// When it starts; `None`: when enough players joined (per the config).
    pub starts_at: Option<i64>,
    /// The server's settings of the tournament, the engine's config among them (JSON).
    pub config: serde_json::Value,
    /// The engine's whole state (`tournament::Tournament` as JSON).
    pub state: serde_json::Value,
    /// Raised by every stored step.
    pub version: i64,
    /// A recurring event's occurrence, created once.
    pub schedule_key: Option<String>,
    pub updated_at: i64,
    /// Cancelled before it started ([`Store::cancel_tournament`]), and why; its status is
    /// then `Finished`.
    pub cancelled: Option<String>,
}

/// An engine table of a tournament and the real table it is (`tournament_tables`), with
/// that table's standing when it exists.
#[derive(Clone, Debug, PartialEq)]
pub struct TournamentTable {
    pub engine_table: u32,
    pub table: Uuid,
    pub round: i32,
    /// `None`: not created yet (paired, the director creates it).
    pub status: Option<TableStatus>,
    /// Per seat, once the table exists: whether it won, its final score, whether it
    /// abandoned.
    pub won: Vec<bool>,
    pub scores: Vec<i64>,
    pub abandoned: Vec<bool>,
}

/// One step of a tournament ([`Store::save_tournament`]): written only over `version`,
/// and, with `fence`, only while `(node, epoch)` directs it.
#[derive(Clone, Debug, PartialEq)]
pub struct TournamentStep {
    pub id: Uuid,
    pub version: i64,
    pub fence: Option<(String, i64)>,
    pub status: TournamentStatus,
    pub state: serde_json::Value,
    /// Tables paired by this step: (engine table, real table id, round).
    pub tables: Vec<(u32, Uuid, i32)>,
    pub now: i64,
}

/// Storage backend. Every method is a complete, atomic unit: a method that writes several
/// rows does it in one transaction.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// `"sqlite"` or `"postgres"`.
    fn backend(&self) -> &'static str;

    /// The runtime on which the process's [`Writer`] task should run, when the store has
    /// one of its own; `None`: the caller's. A SQLite file's store writes on a thread of
    /// its own, whose runtime this is: the writer's groups are then written where it runs.
    fn writer_runtime(&self) -> Option<tokio::runtime::Handle> {
        None
    }

    /// Whether the [`Writer`] commits `unit` apart from the rest of its group, in a second
    /// transaction after it (with any later unit of the same table, to keep each table's
    /// order): a unit this store writes much more slowly than the others, which would
    /// otherwise take the whole group its slow way. SQLite: a unit that finishes a match
    /// (its ratings are written through sqlx, a statement at a time, and the other units'
    /// actions with it through the `actions` view's trigger). Default: none.
    fn apart(&self, _unit: &TableWrite) -> bool {
        false
    }

    /// A cheap round trip, for `/healthz`.
    async fn ping(&self) -> Result<()>;

    /// Closes the store at shutdown, once nothing writes any more: on SQLite the last
    /// connection to close copies the WAL into the database file and removes it, so the
    /// file is whole by itself. Later calls fail.
    async fn close(&self);

    // ---- match analyses (docs/analysis.md) ----

    /// Asks for `table`'s analysis at engine `version` on behalf of `player`, from the client
    /// address `from` (an IPv6 address as its /64), at `now` (Unix ms), within `limits`:
    /// an existing job is answered as it is; a failed one is queued again; else a new one
    /// is queued. The address is kept with the job only while it waits or runs. One
    /// transaction.
    async fn request_analysis(
        &self,
        table: Uuid,
        version: i64,
        player: Uuid,
        from: &str,
        now: i64,
        limits: AnalysisLimits,
    ) -> Result<AnalysisRequested>;

    /// `table`'s job at engine `version`, if any.
    async fn analysis_job(&self, table: Uuid, version: i64) -> Result<Option<AnalysisJob>>;

    /// Waiting jobs that will be taken before `job` (0 when it is next, or not waiting).
    async fn analysis_ahead(&self, job: Uuid) -> Result<i64>;

    /// How many jobs wait and how many a worker holds now, over every node (`/metrics`).
    async fn analysis_counts(&self) -> Result<(i64, i64)>;

    /// Takes the oldest waiting job (or one whose worker's lease ran out) for `worker`,
    /// leased until `now + lease_ms`. On Postgres the row is taken `FOR UPDATE SKIP
    /// LOCKED`, so workers of several nodes never take the same job.
    async fn claim_analysis(
        &self,
        worker: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<AnalysisJob>>;

    /// Records progress and renews the lease. `false`: the job is no longer `worker`'s
    /// (its lease ran out and another took it); the worker stops.
    async fn analysis_progress(
        &self,
        job: Uuid,
        worker: &str,
        done: i64,
        total: i64,
        now: i64,
        lease_ms: i64,
    ) -> Result<bool>;

    /// Ends `worker`'s job: `Ok(json)` stores the result (`done`), `Err(why)` marks it
    /// failed; `progress` is its last `(done, total)`, stored with it (a short job ends
    /// before its first progress report). `false`: the job was not `worker`'s any more
    /// (nothing written).
    async fn finish_analysis(
        &self,
        job: Uuid,
        worker: &str,
        result: std::result::Result<&str, &str>,
        progress: (i64, i64),
        now: i64,
    ) -> Result<bool>;

    /// Puts `worker`'s running job back in the queue (a worker stopping at shutdown).
    async fn release_analysis(&self, job: Uuid, worker: &str) -> Result<bool>;

    // ---- players ----

    /// Creates a guest and its first session (device `label`). `token_hash` is the hex
    /// SHA-256 of the bearer token; it is unique.
    async fn create_player(
        &self,
        id: Uuid,
        name: &str,
        token_hash: &str,
        label: &str,
        now: i64,
    ) -> Result<Player>;
    /// The player and session a token's hash belongs to; `None` for an unknown or revoked
    /// token.
    async fn player_by_token_hash(&self, token_hash: &str) -> Result<Option<Authed>>;
    /// A player by id (for the public profile).
    async fn player(&self, id: Uuid) -> Result<Option<Player>>;

    /// Makes `player` a bot account, for good, if it is a claimed account that holds no
    /// seat at any table ([`BotConversion`]).
    async fn make_bot(&self, player: Uuid, now: i64) -> Result<BotConversion>;

    /// The ids of every bot account.
    async fn bot_accounts(&self) -> Result<Vec<Uuid>>;

    // ---- accounts and devices ----

    /// Starts a new session of `player` (a sign-in on a device).
    async fn create_session(
        &self,
        player: Uuid,
        token_hash: &str,
        label: &str,
        now: i64,
    ) -> Result<SessionRecord>;
    /// Notes that session `id` was used at `now`.
    async fn touch_session(&self, id: &str, now: i64) -> Result<()>;
    /// The sessions of `player`, the most recently seen first.
    async fn sessions_of(&self, player: Uuid) -> Result<Vec<SessionRecord>>;
    /// Ends `player`'s session `id` (its token stops working at once); `false` when the
    /// player has no such session.
    async fn revoke_session(&self, player: Uuid, id: &str) -> Result<bool>;
    /// Claims a player as an account, atomically: see [`Claim`].
    async fn create_account(&self, account: &AccountRecord) -> Result<Claim>;
    /// The account of a player, if claimed.
    async fn account_of(&self, player: Uuid) -> Result<Option<AccountRecord>>;
    /// The account with this `username_key`, if any.
    async fn account_by_key(&self, username_key: &str) -> Result<Option<AccountRecord>>;

    // ---- quick play ----

    /// Puts a player in a queue; a `Conflict` when the player already waits in one.
    async fn queue_join(&self, entry: &QueueEntry) -> Result<()>;
    /// Takes `player` out if `conn` put them in; whether an entry was removed.
    async fn queue_leave(&self, player: Uuid, conn: &str) -> Result<bool>;
    /// The tables being played at which `player` holds a seat they have not abandoned,
    /// with each one's pace (`protocol::Pace` as JSON): quick play keeps a player out of
    /// a second live match.
    async fn playing_tables_of(&self, player: Uuid) -> Result<Vec<(Uuid, serde_json::Value)>>;
    /// Everybody waiting, oldest first.
    async fn queue_entries(&self) -> Result<Vec<QueueEntry>>;
    /// Takes the entries `(player, conn)` out of the queues together, in one transaction:
    /// all of them (`true`), or none when any is gone already (`false`: it left, or
    /// another matcher took it). This is what keeps a player from being seated twice.
    async fn queue_take(&self, entries: &[(Uuid, String)]) -> Result<bool>;
    /// Empties the queues (at start-up: nobody is connected to wait any more); how many
    /// entries there were.
    async fn queue_clear(&self) -> Result<u64>;
    /// Takes out the entries whose waiting connection is on a node that is not alive (the
    /// connection ids start with the node's id and a `/`); how many there were.
    async fn queue_clear_dead(&self) -> Result<u64>;

    // ---- nodes: several servers on one database (the server's `cluster`) ----

    /// Announces node `id` (reached at `address`) alive for `lease_ms` more on the
    /// database's clock, or (again) draining. Also forgets nodes dead for an hour.
    async fn node_beat(&self, id: &str, address: &str, lease_ms: i64, draining: bool)
    -> Result<()>;
    /// The node is gone (it stopped after handing its tables over).
    async fn node_gone(&self, id: &str) -> Result<()>;
    /// The nodes whose lease runs, oldest first.
    async fn live_nodes(&self) -> Result<Vec<NodeRecord>>;
    /// The database's clock now, Unix milliseconds (what leases are measured on).
    async fn database_now_ms(&self) -> Result<i64>;
    /// Makes `node` the owner of `table` under a new fencing epoch, which it returns,
    /// unless another live node owns it (`None`, and also `None` for an unknown table).
    async fn claim_table(&self, table: Uuid, node: &str) -> Result<Option<i64>>;
    /// Gives up `node`'s ownership of `table` at `epoch` (a later claim is not undone);
    /// whether it held it.
    async fn release_table(&self, table: Uuid, node: &str, epoch: i64) -> Result<bool>;
    /// Hands `table` from `from` (at `epoch`) straight to node `to`, under a new epoch
    /// (returned), with no moment in which nobody owns it; `None` if `from` no longer holds
    /// it at `epoch`.
    async fn transfer_table(
        &self,
        table: Uuid,
        from: &str,
        epoch: i64,
        to: &str,
    ) -> Result<Option<i64>>;
    /// Who owns `table`; `None` for an unknown table.
    async fn table_owner(&self, table: Uuid) -> Result<Option<TableOwner>>;
    /// Claims up to `limit` open or playing tables that no live node owns (and, with
    /// `mine_too`, those `node` itself owned before: a restart under the same id), each
    /// under a new epoch.
    async fn claim_orphans(
        &self,
        node: &str,
        limit: i64,
        mine_too: bool,
    ) -> Result<Vec<(Uuid, i64)>>;
    /// The tables `node` owns, with their epochs, and whether each is open or playing.
    async fn owned_tables(&self, node: &str) -> Result<Vec<(Uuid, i64, bool)>>;
    /// The secret the nodes on this database share (made by the first to ask).
    async fn cluster_secret(&self) -> Result<String>;
    /// Sends each of `payloads`, in order and in one round trip, to every listener of
    /// `channel` (Postgres NOTIFY; nothing on SQLite, where there is one node).
    async fn notify(&self, channel: &str, payloads: &[String]) -> Result<()>;
    /// Listens to `channels`: `None` on SQLite. The connection is made again when lost,
    /// and [`Notice::Reconnected`] says that notifications may have been missed.
    async fn listen(
        &self,
        channels: &[&str],
    ) -> Result<Option<tokio::sync::mpsc::Receiver<Notice>>>;
    /// Takes the cluster-wide lock `key` if free (Postgres: a transaction-level advisory
    /// lock, released when the guard drops or its connection dies); SQLite always has it.
    async fn try_exclusive(&self, key: i64) -> Result<Option<Exclusive>>;
    /// Renames a player (and the name shown in their seats of unfinished tables).
    async fn rename_player(&self, id: Uuid, name: &str) -> Result<()>;

    // ---- tables ----

    /// Creates a table with `seats` (its length is `record.seat_count`), owned by nobody.
    async fn create_table(&self, record: &TableRecord, seats: &[Occupant]) -> Result<()> {
        self.create_owned_table(record, seats, None)
            .await
            .map(|_| ())
    }
    /// Creates a table with `seats`, owned by node `owner` at epoch 1 (returned) from the
    /// start, so that no other node takes it for an orphan; with `None`, as
    /// [`Store::create_table`] (epoch 0).
    async fn create_owned_table(
        &self,
        record: &TableRecord,
        seats: &[Occupant],
        owner: Option<&str>,
    ) -> Result<i64>;
    async fn set_seat(&self, table: Uuid, seat: i32, occupant: &Occupant, now: i64) -> Result<()> {
        let occupant = occupant.clone();
        let op = WriteOp::SetSeat { seat, occupant };
        self.write_group(&[TableWrite::one(table, now, op)]).await
    }
    async fn set_status(&self, table: Uuid, status: TableStatus, now: i64) -> Result<()> {
        let op = WriteOp::SetStatus(status);
        self.write_group(&[TableWrite::one(table, now, op)]).await
    }
    /// A table with its seats, scores, rounds and actions; `None` if unknown.
    async fn load_table(&self, table: Uuid) -> Result<Option<StoredTable>>;
    /// Every table whose status is `open` or `playing`, fully loaded, for recovery at
    /// start-up.
    async fn unfinished_tables(&self) -> Result<Vec<StoredTable>>;
    /// How many tables `player` created that are still `open` (for the cap on open tables
    /// per player).
    async fn open_tables_created_by(&self, player: Uuid) -> Result<i64>;

    // ---- rounds and the action log ----

    /// Records a round's seed before anything of the round is shown to anyone.
    async fn start_round(&self, table: Uuid, round: &RoundRecord) -> Result<()> {
        let op = WriteOp::StartRound(round.clone());
        self.write_group(&[TableWrite::one(table, round.started_at, op)])
            .await
    }
    /// Appends an accepted action. Must be durable when this returns. A table's actions
    /// are appended in `(round_no, seq)` order. A duplicate `(table, round_no, seq)` is a
    /// `Conflict`; so is, on SQLite, an action before the table's last (its log keeps
    /// only each table's head to check against, migration 0014).
    async fn append_action(&self, table: Uuid, action: &ActionRecord, now: i64) -> Result<()> {
        let op = WriteOp::AppendAction(action.clone());
        self.write_group(&[TableWrite::one(table, now, op)]).await
    }
    /// Ends a round: stores its result and the cumulative scores per seat, atomically.
    /// Ending a round already ended is a `Conflict`.
    async fn end_round(
        &self,
        table: Uuid,
        round_no: i32,
        result: &serde_json::Value,
        totals: &[i64],
        now: i64,
    ) -> Result<()> {
        let op = WriteOp::EndRound {
            round_no,
            result: result.clone(),
            totals: totals.to_vec(),
        };
        self.write_group(&[TableWrite::one(table, now, op)]).await
    }
    /// Ends the match: status `finished`, final scores and winners per seat, and, when two
    /// or more people played, their new ratings in the game ([`rating`]), atomically.
    /// Finishing a finished match again rewrites the scores and rates nothing.
    async fn finish_match(
        &self,
        table: Uuid,
        totals: &[i64],
        winners: &[i32],
        now: i64,
    ) -> Result<()> {
        let op = WriteOp::FinishMatch {
            totals: totals.to_vec(),
            winners: winners.to_vec(),
        };
        self.write_group(&[TableWrite::one(table, now, op)]).await
    }
    /// Commits every unit of `group` in ONE transaction, with the same semantics as calling
    /// the single methods in order (touching `game_tables.updated_at`, rating people once,
    /// etc). Durable when it returns. All or nothing: a unit that breaks a rule (a
    /// duplicate `(table, round_no, seq)` is a `Conflict`, an unknown table or round
    /// `NotFound`) fails the whole call and nothing of the group is stored.
    ///
    /// A table's `updated_at` ends as the time of its last op in the group. The actions
    /// of the group are inserted after its other ops, in one statement where the backend
    /// allows: nothing else a group writes depends on the action rows, so the result is
    /// the same as in order.
    async fn write_group(&self, group: &[TableWrite]) -> Result<()>;
    /// The rounds of a table, in order.
    async fn rounds(&self, table: Uuid) -> Result<Vec<RoundRecord>>;

    // ---- queries ----

    /// One page of the leaderboard of `game`'s `pool`: the players with at least
    /// [`rating::MIN_RANKED_MATCHES`] rated matches there, by conservative rating (best
    /// first, then more matches, then player id), `limit` of them from `offset`.
    async fn leaderboard(
        &self,
        game: &str,
        pool: rating::Pool,
        offset: i64,
        limit: i64,
    ) -> Result<LeaderPage>;
    /// Every rating of `player`, by game and pool (duel first).
    async fn player_ratings(&self, player: Uuid) -> Result<Vec<PlayerRating>>;
    /// A player's rating after each of their last `limit` rated matches in a game's pool,
    /// oldest first: in the order the ratings were applied, so the last point is the
    /// current rating even where matches finished in the same millisecond.
    async fn rating_history(
        &self,
        player: Uuid,
        game: &str,
        pool: rating::Pool,
        limit: i64,
    ) -> Result<Vec<RatingPoint>>;
    /// The highest final totals of people in finished matches of `game` with two seats or
    /// more (bots seated or not), the earlier finish first among equals.
    async fn best_totals(&self, game: &str, limit: i64) -> Result<Vec<ScoreRecord>>;
    /// Solitaire games to `target` played out and finished before
    /// `finished_before`, by fewest discards: of the daily deal `daily`, or of any game.
    async fn solitaire_best(
        &self,
        target: u32,
        daily: Option<&str>,
        finished_before: i64,
        limit: i64,
    ) -> Result<Vec<ScoreRecord>>;
    /// Rebuilds every rating from the finished matches, in the order they were finished
    /// and rated (the order live play applied their ratings in), in one
    /// transaction, if the stored ratings were made under another [`rating::VERSION`] (or
    /// always, with `force`), and records the version. `connect` calls it; running it
    /// again changes nothing. The number of matches replayed, `None` when nothing was to do.
    async fn rerate(&self, force: bool) -> Result<Option<u64>>;
    /// A player's matches: unfinished (`open`/`playing`) first, then the rest, newest
    /// activity first within each group.
    async fn player_matches(&self, player: Uuid, limit: i64) -> Result<Vec<MatchRow>>;
    /// A player's finished (or abandoned) public matches, newest first: what a profile
    /// shows anyone. The filter is the query's, before its limit, so that a player's
    /// private or unfinished tables never crowd the public ones out of the page.
    async fn public_matches(&self, player: Uuid, limit: i64) -> Result<Vec<MatchRow>>;

    // ---- chat ----

    /// The latest table chat: at most `limit` lines of the players and at most `limit`
    /// lines of spectators, together in `seq` order (so a chatty audience cannot push the
    /// players' lines out of a history).
    async fn chat_history(&self, table: Uuid, limit: i64) -> Result<Vec<ChatRecord>>;
    /// The players `player` has muted, in no particular order.
    async fn mutes_of(&self, player: Uuid) -> Result<Vec<Uuid>>;
    /// Mutes (`muted: true`) or unmutes `target` for `player`; doing it twice is no error.
    /// An unknown `target` is `NotFound`; muting oneself is a `Conflict`.
    async fn set_muted(&self, player: Uuid, target: Uuid, muted: bool, now: i64) -> Result<()>;

    // ---- tournaments ----

    /// Stores a new tournament. A taken id, invite code or schedule key is a `Conflict`.
    async fn create_tournament(&self, t: &TournamentRecord) -> Result<()>;
    /// One tournament.
    async fn tournament(&self, id: Uuid) -> Result<Option<TournamentRecord>>;
    /// Tournaments in `status` (every status when `None`), newest first.
    async fn tournaments(
        &self,
        status: Option<TournamentStatus>,
        limit: i64,
    ) -> Result<Vec<TournamentRecord>>;
    /// The tournaments a list shows `viewer` (`None`: someone signed out), newest first:
    /// the public ones, and the private ones `viewer` created or appears in (the engine's
    /// state names its players; the caller checks membership again on the loaded
    /// engine). `cancelled` keeps only the cancelled (`Some(true)`) or only the others
    /// (`Some(false)`). Every filter is the query's, before its limit, so that private or
    /// cancelled tournaments never crowd the listed ones out of the page.
    async fn listed_tournaments(
        &self,
        status: Option<TournamentStatus>,
        cancelled: Option<bool>,
        viewer: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<TournamentRecord>>;
    /// Writes one step (state, status and the tables it paired) in one transaction, only
    /// over `step.version` and, when fenced, only while the node holds its epoch. `false`:
    /// nothing written (another step came first, or the director lost the tournament).
    async fn save_tournament(&self, step: &TournamentStep) -> Result<bool>;
    /// Cancels a tournament still in registration (not cancelled yet): its status becomes
    /// `Finished` with `reason`, its version is raised, and no later step is stored over
    /// it. `false`: nothing changed (it started, ended or was cancelled already, or does
    /// not exist).
    async fn cancel_tournament(&self, id: Uuid, reason: &str, now: i64) -> Result<bool>;
    /// Marks a table (before it is created) as unrated: its match changes no rating.
    /// Marking it twice is no error.
    async fn mark_unrated(&self, table: Uuid, now: i64) -> Result<()>;
    /// Whether a table's match changes no rating: marked unrated (`mark_unrated`), or a
    /// game of an unrated tournament. An unknown table is not unrated.
    async fn is_unrated(&self, table: Uuid) -> Result<bool>;
    /// How many tournaments `player` created that are in registration or running (not
    /// cancelled).
    async fn open_tournaments_created_by(&self, player: Uuid) -> Result<i64>;
    /// Claims for `node` up to `limit` unfinished tournaments that no live node directs (and
    /// its own, with `mine_too`), raising each one's epoch: (id, epoch).
    async fn claim_tournaments(
        &self,
        node: &str,
        limit: i64,
        mine_too: bool,
    ) -> Result<Vec<(Uuid, i64)>>;
    /// Who directs the tournament: (owner, epoch).
    async fn tournament_owner(&self, id: Uuid) -> Result<Option<(Option<String>, i64)>>;
    /// A tournament's tables, by engine table, each with its real table's standing.
    async fn tournament_tables(&self, id: Uuid) -> Result<Vec<TournamentTable>>;

    // ---- daily deals ----

    /// The seed (hex) of the daily deal `key`. With `fresh_seed_hex`, it is stored first if
    /// the deal has none yet: whoever asks first fixes the day's deal, and everybody gets
    /// the same seed. Without, `None` when the deal does not exist.
    async fn daily_seed(
        &self,
        key: &str,
        fresh_seed_hex: Option<&str>,
        now: i64,
    ) -> Result<Option<String>>;
    /// The table a player started for the daily deal `key`, if any.
    async fn daily_table_of(&self, key: &str, player: Uuid) -> Result<Option<Uuid>>;
    /// The games of the daily deal `key` finished before `finished_before` (Unix ms: the
    /// end of the deal's day, when its seed is published), best first.
    async fn daily_board(
        &self,
        key: &str,
        finished_before: i64,
        limit: i64,
    ) -> Result<Vec<DailyRow>>;
}

/// Opens the store named by `url` and applies its migrations.
///
/// `sqlite://PATH` (created if missing, its parent directory too) or `sqlite::memory:`;
/// `postgres://…` or `postgresql://…`.
pub async fn connect(url: &str) -> Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::connect(url).await?))
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PgStore::connect(url).await?))
    } else {
        Err(StoreError::UnsupportedUrl(redact(url)))
    }
}

/// A URL with any password replaced by `***`, for logs and errors.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(
            redact("postgres://fib:secret@127.0.0.1:5432/db"),
            "postgres://fib:***@127.0.0.1:5432/db"
        );
        assert_eq!(redact("sqlite://data/fib.db"), "sqlite://data/fib.db");
        assert_eq!(redact("postgres://fib@h/db"), "postgres://fib@h/db");
    }
}
