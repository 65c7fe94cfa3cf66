//! What the two backends share: the SQL of every [`Store`](crate::Store) method, the row
//! decoders, and the [`impl_store!`] macro that writes the trait implementation once for
//! both pool types.
//!
//! One SQL text serves both databases because the schemas use the same column types (ids
//! and JSON as TEXT, BIGINT milliseconds) and because sqlx's SQLite driver binds `$N`
//! parameters by their number, as Postgres does (a `$N` used twice binds the same value
//! on both). A macro rather than generic functions: the bounds a function generic over
//! `sqlx::Database` would need (executors, encoders and decoders per column type) are far
//! longer than the code they would share, while inside the macro every type is concrete.
//!
//! Rows are read as tuples (`query_as::<_, (..)>`), which decode on either backend, and
//! turned into the crate's types by the plain functions below.
//!
//! A group of [`TableWrite`]s is first split by [`Plan`]: the ops other than actions run
//! in order (shared SQL, in the macro), then each backend writes the group's actions and
//! the tables' `updated_at` its own way (`write_tail`: one statement on Postgres, two on
//! SQLite). A group of actions alone, the common case, is written in one call to the
//! database (`write_plain`).

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::{
    AccountRecord, ActionRecord, Authed, ChatRecord, LeaderRow, MatchRow, Occupant, Player,
    QueueEntry, RoundRecord, SessionRecord, StoreError, TableRecord, TableStatus, TableWrite,
    WriteOp,
};

/// `id, name, created_at` of `players`.
pub(crate) type PlayerRow = (String, String, i64, Option<i64>);
/// The columns of [`SELECT_TABLE`].
pub(crate) type TableRow = (
    String,
    String,
    String,
    i32,
    i32,
    bool,
    Option<String>,
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    i64,
);
/// `kind, player_id, name, bot_level, score` of `table_seats`.
pub(crate) type SeatRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    bool,
);
/// `round_no, seed_hex, commitment, started_at, ended_at, result` of `rounds`.
pub(crate) type RoundRow = (i32, String, String, i64, Option<i64>, Option<String>);
/// `round_no, seq, seat, action` of `actions`.
pub(crate) type ActionRow = (i32, i64, i32, String);
/// The columns of the player-matches query.
pub(crate) type MatchTuple = (
    String,
    String,
    String,
    i32,
    i64,
    Option<bool>,
    i64,
    i64,
    bool,
);

/// One table as a [`TableRow`] (`$1` table id).
pub(crate) const SELECT_TABLE: &str = "SELECT id, game, options, rules_version, seat_count, \
     private, invite_code, created_by, created_at, status, bots, daily, pace, clock, updated_at \
     FROM game_tables WHERE id = $1";

pub(crate) const SELECT_ROUNDS: &str = "SELECT round_no, seed_hex, commitment, started_at, \
     ended_at, result FROM rounds WHERE table_id = $1 ORDER BY round_no";

/// Seats someone (`$1` kind, `$2` player id, `$3` name, `$4` bot level, `$5` table,
/// `$6` seat).
pub(crate) const SET_SEAT: &str = "UPDATE table_seats SET kind = $1, player_id = $2, \
     name = $3, bot_level = $4 WHERE table_id = $5 AND seat = $6";

/// `$1` table, `$2` the seats' time banks (JSON).
pub(crate) const SET_CLOCK: &str = "UPDATE game_tables SET clock = $2 WHERE id = $1";

/// `$1` table, `$2` seat.
pub(crate) const ABANDON_SEAT: &str =
    "UPDATE table_seats SET abandoned = TRUE WHERE table_id = $1 AND seat = $2";

/// `$1` table, `$2` status.
pub(crate) const SET_STATUS: &str = "UPDATE game_tables SET status = $2 WHERE id = $1";

/// `$1` table, then the [`RoundRecord`] columns.
pub(crate) const INSERT_ROUND: &str = "INSERT INTO rounds (table_id, round_no, seed_hex, \
     commitment, started_at, ended_at, result) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Ends a round not ended yet (`$1` table, `$2` round, `$3` Unix ms, `$4` result JSON).
pub(crate) const END_ROUND: &str = "UPDATE rounds SET ended_at = $3, result = $4 \
     WHERE table_id = $1 AND round_no = $2 AND ended_at IS NULL";

/// Whether a round exists (`$1` table, `$2` round).
pub(crate) const ROUND_EXISTS: &str =
    "SELECT round_no FROM rounds WHERE table_id = $1 AND round_no = $2";

/// `game, status` of a table (`$1`).
pub(crate) const GAME_AND_STATUS: &str = "SELECT game, status FROM game_tables WHERE id = $1";

/// `$1` table.
pub(crate) const FINISH_TABLE: &str =
    "UPDATE game_tables SET status = 'finished', finished_at = $2 WHERE id = $1";

/// Stores a chat line: `$1` table, then the [`ChatRecord`] columns.
pub(crate) const INSERT_CHAT: &str = "INSERT INTO chat_lines (table_id, seq, player_id, name, \
     spectator, text, emote, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// Forgets the lines of one kind (`$2`: spectators' or not) of table `$1` older than its
/// latest [`crate::CHAT_KEPT`] (`$3`), written with each new line: no page can show
/// them, and each line costs up to a few KB (a walk measured 4.7 KB of disk a line).
pub(crate) const PRUNE_CHAT: &str = "DELETE FROM chat_lines WHERE table_id = $1 \
     AND spectator = $2 AND seq <= (SELECT seq FROM chat_lines WHERE table_id = $1 \
     AND spectator = $2 ORDER BY seq DESC LIMIT 1 OFFSET $3)";

/// The latest `$3` lines of one kind (`$2`: spectators' or not) of table `$1`, newest
/// first, as [`ChatRow`]s.
pub(crate) const CHAT_HISTORY: &str = "SELECT seq, player_id, name, spectator, text, emote, \
     created_at FROM chat_lines WHERE table_id = $1 AND spectator = $2 \
     ORDER BY seq DESC LIMIT $3";

/// `seq, player_id, name, spectator, text, emote, created_at` of `chat_lines`.
pub(crate) type ChatRow = (
    i64,
    String,
    String,
    bool,
    Option<String>,
    Option<String>,
    i64,
);

pub(crate) fn chat(r: ChatRow) -> Result<ChatRecord, StoreError> {
    Ok(ChatRecord {
        seq: r.0,
        player_id: uuid(&r.1, "chat sender")?,
        name: r.2,
        spectator: r.3,
        text: r.4,
        emote: r.5,
        created_at: r.6,
    })
}

/// `(seat, score)` rows for [`seat_scores`], `(seat, score, won)` for [`seat_results`].
fn values_rows(rows: usize, width: usize, first: usize) -> String {
    (0..rows)
        .map(|r| {
            let cells: Vec<String> = (0..width)
                .map(|c| format!("${}", first + r * width + c))
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sets the score of `seats` seats in one statement: `$1` table, then `seat, score` per
/// seat. Both databases name the columns of a `VALUES` list `column1, column2, ...`.
pub(crate) fn seat_scores(seats: usize) -> String {
    format!(
        "UPDATE table_seats SET score = v.column2 FROM (VALUES {}) AS v \
         WHERE table_seats.table_id = $1 AND table_seats.seat = v.column1",
        values_rows(seats, 2, 2)
    )
}

/// Sets the final score and outcome of `seats` seats in one statement: `$1` table, then
/// `seat, score, won` per seat.
pub(crate) fn seat_results(seats: usize) -> String {
    format!(
        "UPDATE table_seats SET score = v.column2, won = v.column3 FROM (VALUES {}) AS v \
         WHERE table_seats.table_id = $1 AND table_seats.seat = v.column1",
        values_rows(seats, 3, 2)
    )
}

/// Creates the rating rows that do not exist yet, at the pool's initial values, for
/// `people` people: `$1` game, `$2` pool, `$3` Unix ms, `$4..$6` μ, σ, volatility, `$7`
/// conservative rating, then one player id per person.
pub(crate) fn ensure_ratings(people: usize) -> String {
    let rows: Vec<String> = (0..people)
        .map(|i| format!("(${}, $1, $2, $4, $5, $6, $7, 0, 0, $3)", 8 + i))
        .collect();
    format!(
        "INSERT INTO player_ratings (player_id, game, pool, mu, sigma, volatility, \
         conservative, matches, wins, updated_at) VALUES {} \
         ON CONFLICT (player_id, game, pool) DO NOTHING",
        rows.join(", ")
    )
}

/// Reads the ratings of `people` people in a game's pool (`$1` game, `$2` pool, then one
/// player id per person), by player id, with `lock` appended: Postgres locks the rows (in
/// that order, the same in every transaction, so two never deadlock) until the commit, so
/// a concurrent match of the same player waits instead of losing this update.
pub(crate) fn select_ratings(people: usize, lock: &str) -> String {
    let ids: Vec<String> = (0..people).map(|i| format!("${}", 3 + i)).collect();
    format!(
        "SELECT player_id, mu, sigma, volatility FROM player_ratings \
         WHERE game = $1 AND pool = $2 AND player_id IN ({}) ORDER BY player_id{lock}",
        ids.join(", ")
    )
}

/// Stores the new ratings of `people` people after one more rated match, in one
/// statement: `$1` game, `$2` pool, `$3` Unix ms, then `player, μ, σ, volatility,
/// conservative, won` per person.
pub(crate) fn update_ratings(people: usize) -> String {
    format!(
        "UPDATE player_ratings SET mu = v.column2, sigma = v.column3, \
         volatility = v.column4, conservative = v.column5, matches = matches + 1, \
         wins = wins + CASE WHEN v.column6 THEN 1 ELSE 0 END, updated_at = $3 \
         FROM (VALUES {}) AS v \
         WHERE player_ratings.game = $1 AND player_ratings.pool = $2 \
           AND player_ratings.player_id = v.column1",
        values_rows(people, 6, 4)
    )
}

/// Records the ratings of `people` people after a rated match, in one statement: `$1`
/// game, `$2` pool, `$3` table id, `$4` Unix ms, then `player, μ, σ, conservative, won`
/// per person.
pub(crate) fn insert_history(people: usize) -> String {
    let rows: Vec<String> = (0..people)
        .map(|i| {
            let b = 5 + i * 5;
            format!(
                "(${b}, $1, $2, $3, $4, ${}, ${}, ${}, ${})",
                b + 1,
                b + 2,
                b + 3,
                b + 4
            )
        })
        .collect();
    format!(
        "INSERT INTO rating_history (player_id, game, pool, table_id, at, mu, sigma, \
         conservative, won) VALUES {}",
        rows.join(", ")
    )
}

/// One player's rating history in a game's pool, oldest first (`$1` player, `$2` game,
/// `$3` pool, `$4` limit: the newest `$4` points). "Oldest" is the order the ratings were
/// applied in, the matches' `finish_seq`, not their finish time: matches finished in the
/// same millisecond have one `at`, and then the last point would not always be the current
/// rating.
pub(crate) const RATING_HISTORY: &str = "SELECT table_id, at, mu, sigma, conservative, won FROM \
     (SELECT h.table_id, h.at, h.mu, h.sigma, h.conservative, h.won, t.finish_seq \
      FROM rating_history h JOIN game_tables t ON t.id = h.table_id \
      WHERE h.player_id = $1 AND h.game = $2 AND h.pool = $3 \
      ORDER BY t.finish_seq DESC LIMIT $4) n \
     ORDER BY finish_seq";

/// An op of a group other than an action, with its table.
pub(crate) struct Step<'a> {
    pub table: Uuid,
    pub key: String,
    pub now: i64,
    pub op: &'a WriteOp,
}

/// An action of a group, with its table.
pub(crate) struct Append<'a> {
    pub table: Uuid,
    pub key: String,
    pub now: i64,
    pub action: &'a ActionRecord,
}

/// Whether `op` ends its table for good (no action may follow it).
pub(crate) fn ends(op: &WriteOp) -> bool {
    match op {
        WriteOp::SetStatus(status) => status.ended(),
        WriteOp::FinishMatch { .. } => true,
        _ => false,
    }
}

/// A group of units as the backends write it: the steps in group order, except those that
/// end a table ([`ends`]), then the actions and each touched table's `updated_at` once,
/// then the steps that end a table and (SQLite) the retirement of its head.
pub(crate) struct Plan<'a> {
    pub steps: Vec<Step<'a>>,
    pub appends: Vec<Append<'a>>,
    /// `(table id, Unix ms)` by table id: the time of each table's last op in the group,
    /// which is where touching it after every op would leave `updated_at`.
    pub touches: Vec<(String, i64)>,
    /// `(table id, epoch)` of every table of the group, once: the fence the group must
    /// pass before anything of it lands. Sorted by table id, like `touches`.
    pub fences: Vec<(String, i64)>,
}

impl<'a> Plan<'a> {
    pub fn new(group: &'a [TableWrite]) -> Self {
        let mut plan = Plan {
            steps: Vec::new(),
            appends: Vec::new(),
            touches: Vec::new(),
            fences: Vec::new(),
        };
        let mut touched = BTreeMap::new();
        let mut fences = BTreeMap::new();
        for unit in group {
            let key = unit.table.to_string();
            // Two units of one table in a group hold the same epoch (one writer task per
            // table); if not, the first one's is checked and the table is refused anyway.
            if let Some(epoch) = unit.epoch {
                fences.entry(key.clone()).or_insert(epoch);
            }
            for op in &unit.ops {
                if let WriteOp::Chat(_) = op {
                    // Chat does not touch the table: it is no change of the match.
                    plan.steps.push(Step {
                        table: unit.table,
                        key: key.clone(),
                        now: unit.now,
                        op,
                    });
                    continue;
                }
                // A round's start touches its table at the round's start time, as
                // `start_round` always did.
                let at = match op {
                    WriteOp::StartRound(r) => r.started_at,
                    _ => unit.now,
                };
                touched.insert(key.clone(), at);
                match op {
                    WriteOp::AppendAction(action) => plan.appends.push(Append {
                        table: unit.table,
                        key: key.clone(),
                        now: unit.now,
                        action,
                    }),
                    op => plan.steps.push(Step {
                        table: unit.table,
                        key: key.clone(),
                        now: unit.now,
                        op,
                    }),
                }
            }
        }
        plan.touches = touched.into_iter().collect();
        plan.fences = fences.into_iter().collect();
        plan
    }

    /// The tables a step of the group ends (finished or abandoned), each once.
    pub fn ended(&self) -> impl Iterator<Item = &str> {
        let mut seen = std::collections::BTreeSet::new();
        self.steps
            .iter()
            .filter(|s| ends(s.op))
            .map(|s| s.key.as_str())
            .filter(move |k| seen.insert(*k))
    }

    /// Whether every fenced table is also touched: then the touch can carry the fence
    /// (`write_plain`). Both lists are sorted by table id (made from ordered maps), so
    /// each lookup is a binary search: a group may hold hundreds of tables.
    pub fn fences_touched(&self) -> bool {
        self.fences.iter().all(|(k, _)| {
            self.touches
                .binary_search_by(|(t, _)| t.as_str().cmp(k))
                .is_ok()
        })
    }

    /// The epoch each touched table's writer holds, in the order of `touches` (`None`:
    /// unfenced).
    pub fn touch_epochs(&self) -> Vec<Option<i64>> {
        self.touches
            .iter()
            .map(|(key, _)| {
                self.fences
                    .binary_search_by(|(k, _)| k.as_str().cmp(key))
                    .ok()
                    .map(|i| self.fences[i].1)
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.appends.is_empty()
    }

    /// What to call the missing round when the actions, written together, hit an unknown
    /// table or round.
    pub fn missing_round(&self) -> String {
        match self.appends.as_slice() {
            [a, rest @ ..]
                if rest
                    .iter()
                    .all(|b| b.table == a.table && b.action.round_no == a.action.round_no) =>
            {
                format!("round {} of table {}", a.action.round_no, a.table)
            }
            all => format!("the round of one of {} actions", all.len()),
        }
    }
}

/// One page of a pool's leaderboard: `$1` game, `$2` pool, `$3` minimum rated matches,
/// `$4` limit, `$5` offset. Best conservative rating first; equal ones by more matches,
/// then by player id, so that pages never overlap or skip a row.
pub(crate) const LEADERBOARD: &str = "\
    SELECT p.id, p.name, r.mu, r.sigma, r.volatility, r.conservative, r.matches, r.wins, \
           p.bot_since \
    FROM player_ratings r \
    JOIN players p ON p.id = r.player_id \
    WHERE r.game = $1 AND r.pool = $2 AND r.matches >= $3 \
    ORDER BY r.conservative DESC, r.matches DESC, p.id ASC \
    LIMIT $4 OFFSET $5";

/// How many players the leaderboard of [`LEADERBOARD`]'s `$1..$3` ranks in all.
pub(crate) const LEADERBOARD_SIZE: &str = "\
    SELECT COUNT(*) FROM player_ratings WHERE game = $1 AND pool = $2 AND matches >= $3";

/// `player_id, name, μ, σ, volatility, conservative, matches, wins` of [`LEADERBOARD`].
pub(crate) type LeaderTuple = (String, String, f64, f64, f64, f64, i64, i64);
/// A [`LeaderTuple`] and the player's `bot_since` ([`LEADERBOARD`]).
pub(crate) type BoardTuple = (String, String, f64, f64, f64, f64, i64, i64, Option<i64>);

/// A row when table `$1`'s match changes no rating: a game of an unrated tournament, or a
/// table marked unrated (an unrated challenge, and its rematches).
pub(crate) const UNRATED: &str = "SELECT 1 FROM tournament_tables tt JOIN tournaments t \
     ON t.id = tt.tournament_id WHERE tt.table_id = $1 AND NOT t.rated \
     UNION ALL SELECT 1 FROM unrated_tables WHERE table_id = $1";

/// The players and house bots seated at a table (`$1`): `player_id` (NULL for a house
/// bot), `bot_level`, `won, score, abandoned`, and the player's `bot_since` (a bot
/// account), by seat.
pub(crate) const RATED_SEATS: &str = "\
    SELECT s.player_id, s.bot_level, s.won, s.score, s.abandoned, p.bot_since \
    FROM table_seats s \
    LEFT JOIN players p ON p.id = s.player_id \
    WHERE s.table_id = $1 AND s.kind IN ('player', 'bot') \
    ORDER BY s.seat";

/// The ids of every bot account.
pub(crate) const BOT_ACCOUNTS: &str = "SELECT id FROM players WHERE bot_since IS NOT NULL";

/// Makes `$1` a bot account at `$2` if it is claimed, not a bot yet, and never sat at a
/// table as a player.
pub(crate) const MAKE_BOT: &str = "\
    UPDATE players SET bot_since = $2 \
    WHERE id = $1 AND bot_since IS NULL \
      AND EXISTS (SELECT 1 FROM accounts a WHERE a.player_id = players.id) \
      AND NOT EXISTS (SELECT 1 FROM table_seats s WHERE s.player_id = players.id)";

/// Every finished match, in the order the store finished and rated them (`finish_seq`,
/// migration 0013): what re-rating replays, so that it applies the ratings in the order
/// live play did, also where matches finished in the same millisecond.
pub(crate) const FINISHED_IN_ORDER: &str = "\
    SELECT id, game, finished_at FROM game_tables \
    WHERE status = 'finished' AND finish_seq IS NOT NULL \
    ORDER BY finish_seq";

/// Records a finished match's place in the order of finishes (`$1` table, `$2` its number).
pub(crate) const SET_FINISH_SEQ: &str = "UPDATE game_tables SET finish_seq = $2 WHERE id = $1";

/// The highest final totals of people in finished matches of a game (`$1`) of two seats or
/// more, `$2` of them; the earlier finish first among equals. `player_id, name, score,
/// table_id, finished_at, people, bots`. A seat its player abandoned is no record: its
/// stand-in made the points (a walk found leavers at the top of the Trump records).
pub(crate) const BEST_TOTALS: &str = "\
    SELECT p.id, p.name, s.score, t.id, t.finished_at, \
           (SELECT COUNT(*) FROM table_seats o WHERE o.table_id = t.id AND o.kind = 'player'), \
           (SELECT COUNT(*) FROM table_seats o WHERE o.table_id = t.id AND o.kind = 'bot') \
    FROM table_seats s \
    JOIN game_tables t ON t.id = s.table_id \
    JOIN players p ON p.id = s.player_id \
    WHERE t.game = $1 AND t.status = 'finished' AND t.seat_count > 1 AND s.kind = 'player' \
      AND NOT s.abandoned AND t.finished_at IS NOT NULL \
    ORDER BY s.score DESC, t.finished_at ASC, t.id ASC \
    LIMIT $2";

/// Solitaire games played out (a one-seat `rummy` table whose player won, R-25) to a
/// target, by fewest discards, the earlier finish first among equals: `$1` and `$2` the
/// target as it appears in the stored options (`"target":21,` or `"target":21}`: the
/// options are stored as compact JSON), `$3` the daily deal or NULL for any game, `$4`
/// finished before (Unix ms), `$5` limit. A daily game counts only if it ended within the
/// UTC day it was started, which is its deal's day: afterwards the deal's seed is public.
/// Same columns as [`BEST_TOTALS`].
pub(crate) const SOLITAIRE_BEST: &str = "\
    SELECT p.id, p.name, s.score, t.id, t.finished_at, CAST(1 AS BIGINT), CAST(0 AS BIGINT) \
    FROM game_tables t \
    JOIN table_seats s ON s.table_id = t.id \
    JOIN players p ON p.id = s.player_id \
    WHERE t.game = 'rummy' AND t.seat_count = 1 AND t.status = 'finished' \
      AND s.kind = 'player' AND s.won AND t.finished_at IS NOT NULL AND t.finished_at < $4 \
      AND (t.options LIKE $1 OR t.options LIKE $2) \
      AND ($3 IS NULL OR t.daily = $3) \
      AND (t.daily IS NULL OR t.finished_at < (t.created_at / 86400000 + 1) * 86400000) \
    ORDER BY s.score ASC, t.finished_at ASC, t.id ASC \
    LIMIT $5";

/// `player_id, name, score, table_id, finished_at, people, bots` of [`BEST_TOTALS`] and
/// [`SOLITAIRE_BEST`].
pub(crate) type RecordTuple = (String, String, i64, String, i64, i64, i64);

pub(crate) fn record_row(r: RecordTuple) -> Result<crate::ScoreRecord, StoreError> {
    Ok(crate::ScoreRecord {
        player_id: uuid(&r.0, "player id")?,
        name: r.1,
        score: r.2,
        table_id: uuid(&r.3, "table id")?,
        finished_at: r.4,
        people: r.5,
        bots: r.6,
    })
}

pub(crate) const PLAYER_MATCHES: &str = "\
    SELECT t.id, t.game, t.status, s.seat, s.score, s.won, t.created_at, t.updated_at, \
           t.private \
    FROM table_seats s \
    JOIN game_tables t ON t.id = s.table_id \
    WHERE s.player_id = $1 AND s.kind = 'player' \
    ORDER BY CASE WHEN t.status IN ('open', 'playing') THEN 0 ELSE 1 END, \
             t.updated_at DESC, t.id ASC \
    LIMIT $2";

/// [`PLAYER_MATCHES`] of finished and abandoned public tables only (a profile's list):
/// such a table's `updated_at` is its last change (its head was folded into it as it
/// ended), on either backend.
pub(crate) const PUBLIC_MATCHES: &str = "\
    SELECT t.id, t.game, t.status, s.seat, s.score, s.won, t.created_at, t.updated_at, \
           t.private \
    FROM table_seats s \
    JOIN game_tables t ON t.id = s.table_id \
    WHERE s.player_id = $1 AND s.kind = 'player' AND NOT t.private \
      AND t.status IN ('finished', 'abandoned') \
    ORDER BY t.updated_at DESC, t.id ASC \
    LIMIT $2";

/// Every seat of the tables listed in `$1`, a JSON array of table ids (the match list's
/// opponents, one query for the whole page).
pub(crate) const MATCH_SEATS: &str = "\
    SELECT table_id, kind, player_id, name, bot_level, score, abandoned FROM table_seats \
    WHERE table_id IN (SELECT value FROM json_each($1)) \
    ORDER BY table_id, seat";

/// Finished tables of a daily deal, best first: finished games by fewest discards, then
/// lost ones (R-25), earliest finish first among equals.
pub(crate) const DAILY_BOARD: &str = "\
    SELECT p.id, p.name, s.score, s.won, t.id \
    FROM game_tables t \
    JOIN table_seats s ON s.table_id = t.id \
    JOIN players p ON p.id = s.player_id \
    WHERE t.daily = $1 AND t.status = 'finished' AND s.kind = 'player' \
      AND t.updated_at < $3 \
    ORDER BY CASE WHEN s.won THEN 0 ELSE 1 END, s.score ASC, t.updated_at ASC, t.id ASC \
    LIMIT $2";

/// `player_id, name, score, won, table_id` of [`DAILY_BOARD`].
pub(crate) type DailyTuple = (String, String, i64, Option<bool>, String);

pub(crate) fn daily_row(r: DailyTuple) -> Result<crate::DailyRow, StoreError> {
    Ok(crate::DailyRow {
        player_id: uuid(&r.0, "player id")?,
        name: r.1,
        score: r.2,
        finished: r.3 == Some(true),
        table_id: uuid(&r.4, "table id")?,
    })
}

/// A `LIMIT` both databases accept: Postgres rejects a negative one.
pub(crate) fn limit(n: i64) -> i64 {
    n.max(0)
}

/// `NotFound(what)` when an `UPDATE` matched no row.
pub(crate) fn found(rows: u64, what: impl FnOnce() -> String) -> Result<(), StoreError> {
    match rows {
        0 => Err(StoreError::NotFound(what())),
        _ => Ok(()),
    }
}

/// `NotFound` unless a multi-row seat update matched every seat it names.
pub(crate) fn seats_found(rows: u64, seats: usize, table: Uuid) -> Result<(), StoreError> {
    match rows as usize == seats {
        true => Ok(()),
        false => Err(StoreError::NotFound(format!(
            "one of seats 0..{seats} of table {table}"
        ))),
    }
}

/// Maps a foreign-key violation to `NotFound(what)`: writing under a table, round or
/// player that does not exist. Anything else goes through the usual mapping.
pub(crate) fn fk_as_not_found(e: sqlx::Error, what: impl FnOnce() -> String) -> StoreError {
    if let sqlx::Error::Database(d) = &e
        && d.is_foreign_key_violation()
    {
        return StoreError::NotFound(what());
    }
    e.into()
}

pub(crate) fn uuid(s: &str, what: &str) -> Result<Uuid, StoreError> {
    Uuid::parse_str(s).map_err(|e| StoreError::Corrupt(format!("{what} {s:?}: {e}")))
}

fn json(s: &str, what: &str) -> Result<serde_json::Value, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

fn status(s: &str) -> Result<TableStatus, StoreError> {
    TableStatus::parse(s).ok_or_else(|| StoreError::Corrupt(format!("table status {s:?}")))
}

/// The columns of [`SELECT_TOURNAMENT`].
pub(crate) type TournamentRow = (
    String,
    String,
    String,
    String,
    bool,
    Option<String>,
    bool,
    Option<String>,
    i64,
    Option<i64>,
    String,
    String,
    i64,
    Option<String>,
    i64,
    Option<String>,
);

/// Every column of a tournament, as a [`TournamentRow`] (append a condition).
pub(crate) const SELECT_TOURNAMENT: &str = "SELECT id, name, game, status, private, \
     invite_code, rated, created_by, created_at, starts_at, config, state, version, \
     schedule_key, updated_at, cancelled FROM tournaments";

pub(crate) fn tournament(r: TournamentRow) -> Result<crate::TournamentRecord, StoreError> {
    let (
        id,
        name,
        game,
        status,
        private,
        invite_code,
        rated,
        created_by,
        created_at,
        starts_at,
        config,
        state,
        version,
        schedule_key,
        updated_at,
        cancelled,
    ) = r;
    Ok(crate::TournamentRecord {
        id: uuid(&id, "tournament id")?,
        name,
        game,
        status: crate::TournamentStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("tournament status {status:?}")))?,
        private,
        invite_code,
        rated,
        created_by: created_by
            .map(|c| uuid(&c, "tournament creator"))
            .transpose()?,
        created_at,
        starts_at,
        config: json(&config, "tournament config")?,
        state: json(&state, "tournament state")?,
        version,
        schedule_key,
        updated_at,
        cancelled,
    })
}

/// `engine_table, table_id, round, status, seat, won, score, abandoned` of a tournament's
/// tables joined with their seats.
pub(crate) type TournamentTableRow = (
    i64,
    String,
    i32,
    Option<String>,
    Option<i32>,
    Option<bool>,
    Option<i64>,
    Option<bool>,
);

/// A tournament's tables (`$1`), each row one seat (or the table alone when not created).
pub(crate) const TOURNAMENT_TABLES: &str = "SELECT tt.engine_table, tt.table_id, tt.round, \
     g.status, s.seat, s.won, s.score, s.abandoned FROM tournament_tables tt \
     LEFT JOIN game_tables g ON g.id = tt.table_id \
     LEFT JOIN table_seats s ON s.table_id = tt.table_id \
     WHERE tt.tournament_id = $1 ORDER BY tt.engine_table, s.seat";

pub(crate) fn tournament_tables(
    rows: Vec<TournamentTableRow>,
) -> Result<Vec<crate::TournamentTable>, StoreError> {
    let mut out: Vec<crate::TournamentTable> = Vec::new();
    for (engine, table, round, st, seat, won, score, abandoned) in rows {
        let engine = u32::try_from(engine)
            .map_err(|_| StoreError::Corrupt(format!("engine table {engine}")))?;
        if out.last().is_none_or(|t| t.engine_table != engine) {
            out.push(crate::TournamentTable {
                engine_table: engine,
                table: uuid(&table, "table id")?,
                round,
                status: st.as_deref().map(status).transpose()?,
                won: Vec::new(),
                scores: Vec::new(),
                abandoned: Vec::new(),
            });
        }
        if seat.is_some() {
            let t = out.last_mut().expect("pushed above");
            t.won.push(won.unwrap_or(false));
            t.scores.push(score.unwrap_or(0));
            t.abandoned.push(abandoned.unwrap_or(false));
        }
    }
    Ok(out)
}

/// Inserts a session: `id, player_id, token_hash, label, now`.
pub(crate) const INSERT_SESSION: &str = "INSERT INTO player_sessions \
     (id, player_id, token_hash, label, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $5)";

/// A new session's public id: 32 hex digits, unrelated to its token.
pub(crate) fn session_id() -> String {
    Uuid::new_v4().simple().to_string()
}

/// A player's columns, then a session's (`player_by_token_hash`).
pub(crate) type AuthedRow = (String, String, i64, Option<i64>, String, String, i64, i64);

pub(crate) fn authed(r: AuthedRow) -> Result<Authed, StoreError> {
    let player = player((r.0, r.1, r.2, r.3))?;
    Ok(Authed {
        session: SessionRecord {
            id: r.4,
            player_id: player.id,
            label: r.5,
            created_at: r.6,
            last_seen_at: r.7,
        },
        player,
    })
}

/// `id, player_id, label, created_at, last_seen_at` of `player_sessions`.
pub(crate) type SessionRow = (String, String, String, i64, i64);

pub(crate) fn session(r: SessionRow) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        id: r.0,
        player_id: uuid(&r.1, "session player")?,
        label: r.2,
        created_at: r.3,
        last_seen_at: r.4,
    })
}

pub(crate) type AccountRow = (String, String, String, String, i64);

pub(crate) fn account(r: AccountRow) -> Result<AccountRecord, StoreError> {
    Ok(AccountRecord {
        player_id: uuid(&r.0, "account player")?,
        username: r.1,
        username_key: r.2,
        password_hash: r.3,
        created_at: r.4,
    })
}

/// The columns of an [`AnalysisJob`](crate::AnalysisJob), in [`AnalysisRow`]'s order.
pub(crate) const JOB_COLUMNS: &str = "id, table_id, version, requested_by, state, done, total, \
     worker, lease_until, result, error, created_at, started_at, finished_at";

pub(crate) type AnalysisRow = (
    String,
    String,
    i64,
    String,
    String,
    i64,
    i64,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
);

pub(crate) fn analysis_job(r: AnalysisRow) -> Result<crate::AnalysisJob, StoreError> {
    let (
        id,
        table,
        version,
        by,
        state,
        done,
        total,
        worker,
        lease,
        result,
        error,
        created,
        started,
        finished,
    ) = r;
    Ok(crate::AnalysisJob {
        id: uuid(&id, "analysis job id")?,
        table_id: uuid(&table, "table id")?,
        version,
        requested_by: uuid(&by, "player id")?,
        state: crate::AnalysisState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("analysis state {state:?}")))?,
        done,
        total,
        worker,
        lease_until: lease,
        result,
        error,
        created_at: created,
        started_at: started,
        finished_at: finished,
    })
}

pub(crate) type QueueRow = (String, String, String, i32, f64, String, i64);

pub(crate) fn queue_entry(r: QueueRow) -> Result<QueueEntry, StoreError> {
    Ok(QueueEntry {
        player_id: uuid(&r.0, "queued player")?,
        name: r.1,
        game: r.2,
        seats: r.3,
        rating: r.4,
        conn: r.5,
        joined_at: r.6,
    })
}

pub(crate) fn player(r: PlayerRow) -> Result<Player, StoreError> {
    Ok(Player {
        id: uuid(&r.0, "player id")?,
        name: r.1,
        created_at: r.2,
        bot: r.3.is_some(),
    })
}

pub(crate) fn table(r: TableRow) -> Result<TableRecord, StoreError> {
    Ok(TableRecord {
        id: uuid(&r.0, "table id")?,
        game: r.1,
        options: json(&r.2, "table options")?,
        rules_version: r.3,
        seat_count: r.4,
        private: r.5,
        invite_code: r.6,
        created_by: uuid(&r.7, "table creator")?,
        created_at: r.8,
        status: status(&r.9)?,
        bots: r.10,
        daily: r.11,
        pace: json(&r.12, "table pace")?,
        clock: r
            .13
            .as_deref()
            .map(|c| json(c, "table clock"))
            .transpose()?,
        updated_at: r.14,
    })
}

/// The seat's occupant and cumulative score.
pub(crate) fn seat(r: SeatRow) -> Result<(Occupant, i64, bool), StoreError> {
    let occupant = match (r.0.as_str(), r.1, r.2, r.3) {
        ("empty", ..) => Occupant::Empty,
        ("player", Some(id), Some(name), _) => Occupant::Player {
            id: uuid(&id, "seat player id")?,
            name,
        },
        ("bot", _, _, Some(level)) => Occupant::Bot { level },
        (kind, ..) => return Err(StoreError::Corrupt(format!("seat of kind {kind:?}"))),
    };
    Ok((occupant, r.4, r.5))
}

/// The `kind, player_id, name, bot_level` columns of a seat.
pub(crate) fn seat_columns(
    o: &Occupant,
) -> (&'static str, Option<String>, Option<&str>, Option<&str>) {
    match o {
        Occupant::Empty => ("empty", None, None, None),
        Occupant::Player { id, name } => ("player", Some(id.to_string()), Some(name), None),
        Occupant::Bot { level } => ("bot", None, None, Some(level)),
    }
}

pub(crate) fn round(r: RoundRow) -> Result<RoundRecord, StoreError> {
    Ok(RoundRecord {
        round_no: r.0,
        seed_hex: r.1,
        commitment: r.2,
        started_at: r.3,
        ended_at: r.4,
        result: r
            .5
            .as_deref()
            .map(|s| json(s, "round result"))
            .transpose()?,
    })
}

pub(crate) fn action(r: ActionRow) -> Result<ActionRecord, StoreError> {
    Ok(ActionRecord {
        round_no: r.0,
        seq: r.1,
        seat: r.2,
        action: json(&r.3, "action")?,
    })
}

pub(crate) fn leader(r: BoardTuple) -> Result<LeaderRow, StoreError> {
    Ok(LeaderRow {
        player_id: uuid(&r.0, "player id")?,
        name: r.1,
        rating: rating_of(r.2, r.3, r.4),
        conservative: r.5,
        matches: r.6,
        wins: r.7,
        bot: r.8.is_some(),
    })
}

/// A row of [`PLAYER_RATINGS`]: `game, pool`, then the same rating columns as a
/// [`LeaderTuple`].
pub(crate) fn player_rating(r: LeaderTuple) -> Result<crate::PlayerRating, StoreError> {
    let pool = crate::rating::Pool::parse(&r.1)
        .ok_or_else(|| StoreError::Corrupt(format!("rating pool {:?}", r.1)))?;
    Ok(crate::PlayerRating {
        game: r.0,
        pool,
        rating: rating_of(r.2, r.3, r.4),
        conservative: r.5,
        matches: r.6,
        wins: r.7,
    })
}

/// The `mu, sigma, volatility` columns of `player_ratings`.
fn rating_of(mu: f64, sigma: f64, volatility: f64) -> crate::rating::Rating {
    crate::rating::Rating {
        mu,
        sigma,
        volatility,
    }
}

/// One player's ratings, every game and pool (`$1` player id).
pub(crate) const PLAYER_RATINGS: &str = "SELECT game, pool, mu, sigma, volatility, \
     conservative, matches, wins FROM player_ratings WHERE player_id = $1 ORDER BY game, pool";

pub(crate) fn match_row(r: MatchTuple) -> Result<MatchRow, StoreError> {
    Ok(MatchRow {
        table_id: uuid(&r.0, "table id")?,
        game: r.1,
        status: status(&r.2)?,
        seat: r.3,
        score: r.4,
        won: r.5,
        created_at: r.6,
        updated_at: r.7,
        private: r.8,
        seats: Vec::new(),
    })
}

/// Implements [`Store`](crate::Store) for `$store`, a struct with a `pool` field for reads
/// and a `write` field for writes (the same pool, except on a SQLite file), whose
/// connections are `$conn`; `$backend` is what [`Store::backend`](crate::Store::backend)
/// answers.
///
/// The backend module provides, on `$store`: `begin_write` (a write transaction),
/// `write_tail` (a [`Plan`]'s actions and touches, on a connection), `write_plain` (a
/// plan without steps, fenced and committed, in one call to the database), `LOCK` (what
/// makes a read hold its rows until commit) and `NEXT_FINISH_SEQ` (the next number of the
/// order of finishes).
macro_rules! impl_store {
    ($store:ty, $conn:ty, $backend:literal) => {
        impl $store {
            /// A match list by `sql` (`PLAYER_MATCHES` or `common::PUBLIC_MATCHES`), each row with
            /// every seat of its table.
            async fn matches_of(
                &self,
                sql: &'static str,
                player: ::uuid::Uuid,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::MatchRow>> {
                let mut rows = sqlx::query_as::<_, $crate::common::MatchTuple>(sql)
                    .bind(player.to_string())
                    .bind($crate::common::limit(limit))
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map($crate::common::match_row)
                    .collect::<$crate::Result<Vec<$crate::MatchRow>>>()?;
                if rows.is_empty() {
                    return Ok(rows);
                }
                // Every seat of those tables, in one query (the opponents of each row).
                let ids: Vec<String> = rows.iter().map(|r| r.table_id.to_string()).collect();
                let seats = sqlx::query_as::<_, (String, String, Option<String>, Option<String>, Option<String>, i64, bool)>(
                    Self::MATCH_SEATS,
                )
                .bind(serde_json::to_string(&ids).expect("ids serialize"))
                .fetch_all(&self.pool)
                .await?;
                let mut by_table: ::std::collections::HashMap<String, Vec<$crate::Occupant>> =
                    ::std::collections::HashMap::new();
                for (table, kind, id, name, level, score, gone) in seats {
                    let (occupant, _, _) = $crate::common::seat((kind, id, name, level, score, gone))?;
                    by_table.entry(table).or_default().push(occupant);
                }
                for (row, id) in rows.iter_mut().zip(&ids) {
                    row.seats = by_table.remove(id).unwrap_or_default();
                }
                Ok(rows)
            }


            /// [`crate::Store::create_owned_table`], where [`Self::serially`] runs it.
            async fn create_owned_table_now(
                &self,
                record: &$crate::TableRecord,
                seats: &[$crate::Occupant],
                owner: Option<&str>,
            ) -> $crate::Result<i64> {
                let epoch: i64 = if owner.is_some() { 1 } else { 0 };
                if seats.len() != record.seat_count as usize {
                    return Err($crate::StoreError::Corrupt(format!(
                        "table {}: {} seats given for seat_count {}",
                        record.id,
                        seats.len(),
                        record.seat_count
                    )));
                }
                let key = record.id.to_string();
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO game_tables (id, game, options, rules_version, seat_count, \
                     private, invite_code, created_by, created_at, updated_at, status, bots, \
                     daily, pace, owner, lease_epoch) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15)",
                )
                .bind(&key)
                .bind(&record.game)
                .bind(record.options.to_string())
                .bind(record.rules_version)
                .bind(record.seat_count)
                .bind(record.private)
                .bind(&record.invite_code)
                .bind(record.created_by.to_string())
                .bind(record.created_at)
                .bind(record.status.as_str())
                .bind(&record.bots)
                .bind(&record.daily)
                .bind(record.pace.to_string())
                .bind(owner)
                .bind(epoch)
                .execute(&mut *tx)
                .await?;
                for (i, occupant) in seats.iter().enumerate() {
                    let (kind, player_id, name, level) = $crate::common::seat_columns(occupant);
                    sqlx::query(
                        "INSERT INTO table_seats (table_id, seat, kind, player_id, name, \
                         bot_level) VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(&key)
                    .bind(i as i32)
                    .bind(kind)
                    .bind(player_id)
                    .bind(name)
                    .bind(level)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| {
                        $crate::common::fk_as_not_found(e, || format!("player of seat {i}"))
                    })?;
                }
                tx.commit().await?;
                Ok(epoch)
            }

            /// Runs one step of a group (an op other than an action), on the group's
            /// transaction. Touching the table is left to the tail.
            async fn write_step(
                conn: &mut $conn,
                step: &$crate::common::Step<'_>,
            ) -> $crate::Result<()> {
                use $crate::WriteOp;
                use $crate::common as c;
                let (table, key, now) = (step.table, step.key.as_str(), step.now);
                match step.op {
                    WriteOp::SetSeat { seat, occupant } => {
                        let (kind, player_id, name, level) = c::seat_columns(occupant);
                        let done = sqlx::query(c::SET_SEAT)
                            .bind(kind)
                            .bind(player_id)
                            .bind(name)
                            .bind(level)
                            .bind(key)
                            .bind(*seat)
                            .execute(&mut *conn)
                            .await
                            .map_err(|e| c::fk_as_not_found(e, || format!("{occupant:?}")))?;
                        c::found(done.rows_affected(), || {
                            format!("seat {seat} of table {table}")
                        })
                    }
                    WriteOp::SetStatus(status) => {
                        let done = sqlx::query(c::SET_STATUS)
                            .bind(key)
                            .bind(status.as_str())
                            .execute(&mut *conn)
                            .await?;
                        c::found(done.rows_affected(), || format!("table {table}"))
                    }
                    WriteOp::StartRound(round) => {
                        sqlx::query(c::INSERT_ROUND)
                            .bind(key)
                            .bind(round.round_no)
                            .bind(&round.seed_hex)
                            .bind(&round.commitment)
                            .bind(round.started_at)
                            .bind(round.ended_at)
                            .bind(round.result.as_ref().map(|v| v.to_string()))
                            .execute(&mut *conn)
                            .await
                            .map_err(|e| c::fk_as_not_found(e, || format!("table {table}")))?;
                        Ok(())
                    }
                    WriteOp::AppendAction(_) => {
                        unreachable!("actions are written by the tail, not as steps")
                    }
                    WriteOp::SetClock(banks) => {
                        let done = sqlx::query(c::SET_CLOCK)
                            .bind(key)
                            .bind(banks.to_string())
                            .execute(&mut *conn)
                            .await?;
                        c::found(done.rows_affected(), || format!("table {table}"))
                    }
                    WriteOp::Abandon { seats } => {
                        for seat in seats {
                            let done = sqlx::query(c::ABANDON_SEAT)
                                .bind(key)
                                .bind(*seat)
                                .execute(&mut *conn)
                                .await?;
                            c::found(done.rows_affected(), || {
                                format!("seat {seat} of table {table}")
                            })?;
                        }
                        Ok(())
                    }
                    WriteOp::Chat(line) => {
                        sqlx::query(c::INSERT_CHAT)
                            .bind(key)
                            .bind(line.seq)
                            .bind(line.player_id.to_string())
                            .bind(&line.name)
                            .bind(line.spectator)
                            .bind(&line.text)
                            .bind(&line.emote)
                            .bind(line.created_at)
                            .execute(&mut *conn)
                            .await
                            .map_err(|e| {
                                c::fk_as_not_found(e, || {
                                    format!("table {table} or chat sender {}", line.player_id)
                                })
                            })?;
                        sqlx::query(c::PRUNE_CHAT)
                            .bind(key)
                            .bind(line.spectator)
                            .bind($crate::CHAT_KEPT)
                            .execute(&mut *conn)
                            .await?;
                        Ok(())
                    }
                    WriteOp::EndRound {
                        round_no,
                        result,
                        totals,
                    } => {
                        let done = sqlx::query(c::END_ROUND)
                            .bind(key)
                            .bind(*round_no)
                            .bind(now)
                            .bind(result.to_string())
                            .execute(&mut *conn)
                            .await?;
                        if done.rows_affected() == 0 {
                            // Tell "already ended" (a result would be overwritten) from
                            // "unknown".
                            let exists: Option<(i32,)> = sqlx::query_as(c::ROUND_EXISTS)
                                .bind(key)
                                .bind(*round_no)
                                .fetch_optional(&mut *conn)
                                .await?;
                            let what = format!("round {round_no} of table {table}");
                            return Err(match exists {
                                Some(_) => {
                                    $crate::StoreError::Conflict(format!("{what} already ended"))
                                }
                                None => $crate::StoreError::NotFound(what),
                            });
                        }
                        if totals.is_empty() {
                            return Ok(());
                        }
                        let sql = c::seat_scores(totals.len());
                        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(key);
                        for (seat, total) in totals.iter().enumerate() {
                            q = q.bind(seat as i32).bind(*total);
                        }
                        let done = q.execute(&mut *conn).await?;
                        c::seats_found(done.rows_affected(), totals.len(), table)
                    }
                    WriteOp::FinishMatch { totals, winners } => {
                        let (game, status): (String, String) =
                            sqlx::query_as(c::GAME_AND_STATUS)
                                .bind(key)
                                .fetch_optional(&mut *conn)
                                .await?
                                .ok_or_else(|| {
                                    $crate::StoreError::NotFound(format!("table {table}"))
                                })?;
                        // Finishing twice (a retry after a crash) must not rate the match
                        // twice.
                        let rate = status != "finished";
                        sqlx::query(c::FINISH_TABLE)
                            .bind(key)
                            .bind(now)
                            .execute(&mut *conn)
                            .await?;
                        if !totals.is_empty() {
                            let sql = c::seat_results(totals.len());
                            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(key);
                            for (seat, total) in totals.iter().enumerate() {
                                let seat = seat as i32;
                                q = q.bind(seat).bind(*total).bind(winners.contains(&seat));
                            }
                            let done = q.execute(&mut *conn).await?;
                            c::seats_found(done.rows_affected(), totals.len(), table)?;
                        }
                        if rate {
                            Self::rate(conn, key, &game, now).await?;
                            // Numbered after `rate` holds the ratings it changed, so a match
                            // rated after another of the same player gets a larger number
                            // (the history's order and re-rating's: migration 0013).
                            let (seq,): (i64,) = sqlx::query_as(Self::NEXT_FINISH_SEQ)
                                .fetch_one(&mut *conn)
                                .await?;
                            sqlx::query(c::SET_FINISH_SEQ)
                                .bind(key)
                                .bind(seq)
                                .execute(&mut *conn)
                                .await?;
                        }
                        Ok(())
                    }
                }
            }

            /// The tables the group ended: their heads leave the store's heads
            /// (`RETIRE_HEAD`: SQLite, migration 0022; nothing on Postgres). After the
            /// group's actions, which still find their table's head.
            async fn retire_heads(
                conn: &mut $conn,
                plan: &$crate::common::Plan<'_>,
            ) -> $crate::Result<()> {
                for key in plan.ended() {
                    for sql in Self::RETIRE_HEAD {
                        sqlx::query(*sql).bind(key).execute(&mut *conn).await?;
                    }
                }
                Ok(())
            }

            /// Rates the people of a match just finished, if two or more played: in the
            /// duel pool of its game (Glicko-2) when two did, else in the multi pool
            /// (Weng-Lin). Bot seats are not rated and do not count ([`crate::rating`]).
            ///
            /// Atomic: the ratings are read and written in the transaction that finishes
            /// the match, and read under [`Self::LOCK`] (Postgres: `FOR UPDATE`; SQLite
            /// holds its one write lock from `BEGIN IMMEDIATE`), so two matches of the same
            /// player finishing at once run one after the other, the second from the
            /// first's result.
            async fn rate(
                conn: &mut $conn,
                key: &str,
                game: &str,
                now: i64,
            ) -> $crate::Result<()> {
                use $crate::rating::{self, Entry, Pool};
                // A game of an unrated tournament, or an unrated table (challenge),
                // changes no rating.
                let unrated: Option<(i32,)> = sqlx::query_as($crate::common::UNRATED)
                .bind(key)
                .fetch_optional(&mut *conn)
                .await?;
                if unrated.is_some() {
                    return Ok(());
                }
                type Seat = (Option<String>, Option<String>, Option<bool>, i64, bool, Option<i64>);
                let seats: Vec<Seat> = sqlx::query_as($crate::common::RATED_SEATS)
                    .bind(key)
                    .fetch_all(&mut *conn)
                    .await?;
                // A bot account at the table: the bot pool, where house bots count as
                // fixed anchors; else the people alone, in their pools.
                let bot_pool = seats.iter().any(|s| s.5.is_some());
                let mut anchors = Vec::new();
                let mut people: Vec<(String, Option<bool>, i64, bool)> = Vec::new();
                for (id, level, won, score, abandoned, _) in seats {
                    match id {
                        Some(id) => people.push((id, won, score, abandoned)),
                        None if bot_pool => anchors.push(Entry {
                            rating: rating::house_bot(level.as_deref().unwrap_or("normal")),
                            won: won.unwrap_or(false),
                            score,
                            abandoned,
                        }),
                        None => {}
                    }
                }
                let mut ids: Vec<&str> = people.iter().map(|p| p.0.as_str()).collect();
                ids.sort_unstable();
                ids.dedup();
                // Each person in one seat (nobody rated against themself).
                if ids.len() != people.len() {
                    return Ok(());
                }
                let pool = if bot_pool {
                    if people.len() + anchors.len() < 2 {
                        return Ok(());
                    }
                    Pool::Bots
                } else {
                    let Some(pool) = Pool::for_people(people.len()) else {
                        return Ok(());
                    };
                    pool
                };
                let start = pool.initial();
                let sql = $crate::common::ensure_ratings(ids.len());
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(game)
                    .bind(pool.as_str())
                    .bind(now)
                    .bind(start.mu)
                    .bind(start.sigma)
                    .bind(start.volatility)
                    .bind(rating::conservative(&start));
                for id in &ids {
                    q = q.bind(*id);
                }
                q.execute(&mut *conn).await?;
                let sql = $crate::common::select_ratings(ids.len(), Self::LOCK);
                let mut q = sqlx::query_as::<_, (String, f64, f64, f64)>(sqlx::AssertSqlSafe(sql))
                    .bind(game)
                    .bind(pool.as_str());
                for id in &ids {
                    q = q.bind(*id);
                }
                let current: std::collections::HashMap<String, rating::Rating> = q
                    .fetch_all(&mut *conn)
                    .await?
                    .into_iter()
                    .map(|(id, mu, sigma, volatility)| {
                        (id, rating::Rating { mu, sigma, volatility })
                    })
                    .collect();
                let mut entries = Vec::with_capacity(people.len());
                for p in &people {
                    let Some(r) = current.get(&p.0) else {
                        return Err($crate::StoreError::Corrupt(format!(
                            "no {} rating of player {} in {game} after creating it",
                            pool.as_str(),
                            p.0
                        )));
                    };
                    entries.push(Entry {
                        rating: *r,
                        won: p.1.unwrap_or(false),
                        score: p.2,
                        abandoned: p.3,
                    });
                }
                let sql = $crate::common::update_ratings(people.len());
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(game)
                    .bind(pool.as_str())
                    .bind(now);
                entries.extend(anchors);
                let mut updated = rating::update(pool, &entries);
                // The anchors' own results are dropped: house bots are never rated.
                updated.truncate(people.len());
                // The history point of each person, in the same transaction.
                let sql = $crate::common::insert_history(people.len());
                let mut h = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(game)
                    .bind(pool.as_str())
                    .bind(key)
                    .bind(now);
                for (p, r) in people.iter().zip(&updated) {
                    h = h
                        .bind(&p.0)
                        .bind(r.mu)
                        .bind(r.sigma)
                        .bind(rating::conservative(r))
                        .bind(p.1.unwrap_or(false) && !p.3);
                }
                h.execute(&mut *conn).await?;
                for (p, r) in people.iter().zip(updated) {
                    q = q
                        .bind(&p.0)
                        .bind(r.mu)
                        .bind(r.sigma)
                        .bind(r.volatility)
                        .bind(rating::conservative(&r))
                        // A win as the match counts it (a shared win too), never for a
                        // seat that abandoned.
                        .bind(p.1.unwrap_or(false) && !p.3);
                }
                let done = q.execute(&mut *conn).await?;
                $crate::common::seats_found(done.rows_affected(), people.len(), ::uuid::Uuid::nil())
                    .map_err(|_| {
                        $crate::StoreError::Corrupt(format!("ratings of table {key} not all updated"))
                    })
            }

            /// Re-rates every finished match from the stored history, in the order they
            /// were finished and rated (`finish_seq`), on `conn` (inside the caller's
            /// transaction): the ratings are deleted and rebuilt exactly as live play built
            /// them. The number of matches replayed.
            async fn rerate_on(conn: &mut $conn) -> $crate::Result<u64> {
                sqlx::query("DELETE FROM rating_history")
                    .execute(&mut *conn)
                    .await?;
                sqlx::query("DELETE FROM player_ratings")
                    .execute(&mut *conn)
                    .await?;
                let finished: Vec<(String, String, i64)> =
                    sqlx::query_as($crate::common::FINISHED_IN_ORDER)
                        .fetch_all(&mut *conn)
                        .await?;
                for (id, game, at) in &finished {
                    Self::rate(conn, id, game, *at).await?;
                }
                Ok(finished.len() as u64)
            }

            /// Loads one table on `conn`: used by both `load_table` and
            /// `unfinished_tables`, which must not take a second pool connection while
            /// holding one (an in-memory SQLite pool has exactly one).
            async fn load_on(
                conn: &mut $conn,
                id: ::uuid::Uuid,
            ) -> $crate::Result<Option<$crate::StoredTable>> {
                use $crate::common as c;
                let key = id.to_string();
                let Some(row) = sqlx::query_as::<_, c::TableRow>(Self::SELECT_TABLE)
                    .bind(&key)
                    .fetch_optional(&mut *conn)
                    .await?
                else {
                    return Ok(None);
                };
                let record = c::table(row)?;
                let seat_rows = sqlx::query_as::<_, c::SeatRow>(
                    "SELECT kind, player_id, name, bot_level, score, abandoned FROM table_seats \
                     WHERE table_id = $1 ORDER BY seat",
                )
                .bind(&key)
                .fetch_all(&mut *conn)
                .await?;
                let (mut seats, mut scores, mut abandoned) = (Vec::new(), Vec::new(), Vec::new());
                for r in seat_rows {
                    let (occupant, score, gone) = c::seat(r)?;
                    seats.push(occupant);
                    scores.push(score);
                    abandoned.push(gone);
                }
                let rounds = sqlx::query_as::<_, c::RoundRow>(c::SELECT_ROUNDS)
                    .bind(&key)
                    .fetch_all(&mut *conn)
                    .await?
                    .into_iter()
                    .map(c::round)
                    .collect::<$crate::Result<Vec<_>>>()?;
                let actions = sqlx::query_as::<_, c::ActionRow>(
                    "SELECT round_no, seq, seat, action FROM actions \
                     WHERE table_id = $1 ORDER BY round_no, seq",
                )
                .bind(&key)
                .fetch_all(&mut *conn)
                .await?
                .into_iter()
                .map(c::action)
                .collect::<$crate::Result<Vec<_>>>()?;
                Ok(Some($crate::StoredTable {
                    record,
                    seats,
                    scores,
                    rounds,
                    actions,
                    abandoned,
                }))
            }
        }

        #[::async_trait::async_trait]
        impl $crate::Store for $store {
            fn backend(&self) -> &'static str {
                $backend
            }

            fn writer_runtime(&self) -> Option<::tokio::runtime::Handle> {
                <$store>::writer_runtime(self)
            }

            fn apart(&self, unit: &$crate::TableWrite) -> bool {
                <$store>::apart(self, unit)
            }

            async fn close(&self) {
                <$store>::close(self).await
            }

            async fn ping(&self) -> $crate::Result<()> {
                sqlx::query("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }

            async fn create_player(
                &self,
                id: ::uuid::Uuid,
                name: &str,
                token_hash: &str,
                label: &str,
                now: i64,
            ) -> $crate::Result<$crate::Player> {
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO players (id, name, token_hash, created_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(id.to_string())
                .bind(name)
                .bind(token_hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                sqlx::query($crate::common::INSERT_SESSION)
                    .bind($crate::common::session_id())
                    .bind(id.to_string())
                    .bind(token_hash)
                    .bind(label)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok($crate::Player {
                    id,
                    name: name.to_string(),
                    created_at: now,
                    bot: false,
                })
            }

            async fn player_by_token_hash(
                &self,
                token_hash: &str,
            ) -> $crate::Result<Option<$crate::Authed>> {
                sqlx::query_as::<_, $crate::common::AuthedRow>(
                    "SELECT p.id, p.name, p.created_at, p.bot_since, s.id, s.label, \
                     s.created_at, s.last_seen_at FROM player_sessions s JOIN players p ON p.id = s.player_id \
                     WHERE s.token_hash = $1",
                )
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?
                .map($crate::common::authed)
                .transpose()
            }

            async fn player(
                &self,
                id: ::uuid::Uuid,
            ) -> $crate::Result<Option<$crate::Player>> {
                sqlx::query_as::<_, $crate::common::PlayerRow>(
                    "SELECT id, name, created_at, bot_since FROM players WHERE id = $1",
                )
                .bind(id.to_string())
                .fetch_optional(&self.pool)
                .await?
                .map($crate::common::player)
                .transpose()
            }

            async fn make_bot(
                &self,
                player: ::uuid::Uuid,
                now: i64,
            ) -> $crate::Result<$crate::BotConversion> {
                use $crate::BotConversion as B;
                let key = player.to_string();
                let mut tx = self.begin_write().await?;
                let done = sqlx::query($crate::common::MAKE_BOT)
                    .bind(&key)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 1 {
                    tx.commit().await?;
                    return Ok(B::Done);
                }
                let row: Option<(Option<i64>, bool, bool)> = sqlx::query_as(
                    "SELECT p.bot_since, \
                     EXISTS (SELECT 1 FROM accounts a WHERE a.player_id = p.id), \
                     EXISTS (SELECT 1 FROM table_seats s WHERE s.player_id = p.id) \
                     FROM players p WHERE p.id = $1",
                )
                .bind(&key)
                .fetch_optional(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(match row {
                    None => B::NoPlayer,
                    Some((Some(_), _, _)) => B::AlreadyBot,
                    Some((None, false, _)) => B::NotClaimed,
                    Some((None, true, _)) => B::HasPlayed,
                })
            }

            async fn bot_accounts(&self) -> $crate::Result<Vec<::uuid::Uuid>> {
                let rows: Vec<(String,)> = sqlx::query_as($crate::common::BOT_ACCOUNTS)
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter()
                    .map(|(id,)| $crate::common::uuid(id, "bot account"))
                    .collect()
            }

            async fn create_session(
                &self,
                player: ::uuid::Uuid,
                token_hash: &str,
                label: &str,
                now: i64,
            ) -> $crate::Result<$crate::SessionRecord> {
                let id = $crate::common::session_id();
                sqlx::query($crate::common::INSERT_SESSION)
                    .bind(&id)
                    .bind(player.to_string())
                    .bind(token_hash)
                    .bind(label)
                    .bind(now)
                    .execute(&mut *self.write_conn().await?)
                    .await?;
                Ok($crate::SessionRecord {
                    id,
                    player_id: player,
                    label: label.to_string(),
                    created_at: now,
                    last_seen_at: now,
                })
            }

            async fn touch_session(&self, id: &str, now: i64) -> $crate::Result<()> {
                sqlx::query(
                    "UPDATE player_sessions SET last_seen_at = $2 \
                     WHERE id = $1 AND last_seen_at < $2",
                )
                .bind(id)
                .bind(now)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(())
            }

            async fn sessions_of(
                &self,
                player: ::uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::SessionRecord>> {
                sqlx::query_as::<_, $crate::common::SessionRow>(
                    "SELECT id, player_id, label, created_at, last_seen_at FROM player_sessions \
                     WHERE player_id = $1 ORDER BY last_seen_at DESC, created_at DESC, id",
                )
                .bind(player.to_string())
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .map($crate::common::session)
                .collect()
            }

            async fn revoke_session(
                &self,
                player: ::uuid::Uuid,
                id: &str,
            ) -> $crate::Result<bool> {
                let done =
                    sqlx::query("DELETE FROM player_sessions WHERE id = $1 AND player_id = $2")
                        .bind(id)
                        .bind(player.to_string())
                        .execute(&mut *self.write_conn().await?)
                        .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn create_account(
                &self,
                a: &$crate::AccountRecord,
            ) -> $crate::Result<$crate::Claim> {
                let mut tx = self.begin_write().await?;
                let mine: Option<(String,)> =
                    sqlx::query_as("SELECT player_id FROM accounts WHERE player_id = $1")
                .bind(a.player_id.to_string())
                .fetch_optional(&mut *tx)
                .await?;
                if mine.is_some() {
                    return Ok($crate::Claim::AlreadyClaimed);
                }
                let taken: Option<(String,)> =
                    sqlx::query_as("SELECT player_id FROM accounts WHERE username_key = $1")
                .bind(&a.username_key)
                .fetch_optional(&mut *tx)
                .await?;
                if taken.is_some() {
                    return Ok($crate::Claim::UsernameTaken);
                }
                let inserted = sqlx::query(
                    "INSERT INTO accounts \
                     (player_id, username, username_key, password_hash, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(a.player_id.to_string())
                .bind(&a.username)
                .bind(&a.username_key)
                .bind(&a.password_hash)
                .bind(a.created_at)
                .execute(&mut *tx)
                .await;
                match inserted {
                    Ok(_) => {}
                    // Two claims racing (on Postgres, where the reads above take no lock):
                    // the unique keys settle it.
                    Err(e) => {
                        return match $crate::StoreError::from(e) {
                            $crate::StoreError::Conflict(m) if m.contains("username") => {
                                Ok($crate::Claim::UsernameTaken)
                            }
                            $crate::StoreError::Conflict(_) => Ok($crate::Claim::AlreadyClaimed),
                            e => Err(e),
                        };
                    }
                }
                tx.commit().await?;
                Ok($crate::Claim::Claimed)
            }

            async fn account_of(
                &self,
                player: ::uuid::Uuid,
            ) -> $crate::Result<Option<$crate::AccountRecord>> {
                sqlx::query_as::<_, $crate::common::AccountRow>(
                    "SELECT player_id, username, username_key, password_hash, created_at \
                     FROM accounts WHERE player_id = $1",
                )
                .bind(player.to_string())
                .fetch_optional(&self.pool)
                .await?
                .map($crate::common::account)
                .transpose()
            }

            async fn account_by_key(
                &self,
                key: &str,
            ) -> $crate::Result<Option<$crate::AccountRecord>> {
                sqlx::query_as::<_, $crate::common::AccountRow>(
                    "SELECT player_id, username, username_key, password_hash, created_at \
                     FROM accounts WHERE username_key = $1",
                )
                .bind(key)
                .fetch_optional(&self.pool)
                .await?
                .map($crate::common::account)
                .transpose()
            }

            async fn request_analysis(
                &self,
                table: ::uuid::Uuid,
                version: i64,
                player: ::uuid::Uuid,
                from: &str,
                now: i64,
                limits: $crate::AnalysisLimits,
            ) -> $crate::Result<$crate::AnalysisRequested> {
                use $crate::common as c;
                use $crate::{AnalysisRequested as R, AnalysisState as S};
                let mut tx = self.begin_write().await?;
                let existing: Option<c::AnalysisRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM analysis_jobs WHERE table_id = $1 AND version = $2{}",
                    c::JOB_COLUMNS,
                    Self::LOCK
                )))
                .bind(table.to_string())
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
                let existing = existing.map(c::analysis_job).transpose()?;
                if let Some(job) = &existing
                    && job.state != S::Failed
                {
                    return Ok(R::Existing(job.clone()));
                }
                let (pending,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM analysis_jobs WHERE requested_by = $1 \
                     AND state IN ('queued', 'running')",
                )
                .bind(player.to_string())
                .fetch_one(&mut *tx)
                .await?;
                if pending >= limits.pending_per_player {
                    return Ok(R::PlayerPending);
                }
                if limits.pending_per_address > 0 {
                    let (from_there,): (i64,) = sqlx::query_as(
                        "SELECT COUNT(*) FROM analysis_jobs WHERE requested_from = $1 \
                         AND state IN ('queued', 'running')",
                    )
                    .bind(from)
                    .fetch_one(&mut *tx)
                    .await?;
                    if from_there >= limits.pending_per_address {
                        return Ok(R::AddressPending);
                    }
                }
                let (today,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM analysis_jobs WHERE requested_by = $1 AND created_at > $2",
                )
                .bind(player.to_string())
                .bind(now - 86_400_000)
                .fetch_one(&mut *tx)
                .await?;
                if today >= limits.per_player_day {
                    return Ok(R::PlayerDaily);
                }
                let (queued,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM analysis_jobs WHERE state IN ('queued', 'running')",
                )
                .fetch_one(&mut *tx)
                .await?;
                if queued >= limits.queue {
                    return Ok(R::QueueFull);
                }
                let row: c::AnalysisRow = match existing {
                    // A failed job is asked for again: queued afresh, by this player, now.
                    Some(job) => sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "UPDATE analysis_jobs SET state = 'queued', requested_by = $2, \
                         created_at = $3, done = 0, total = 0, worker = NULL, lease_until = NULL, \
                         error = NULL, started_at = NULL, finished_at = NULL, requested_from = $4 \
                         WHERE id = $1 RETURNING {}",
                        c::JOB_COLUMNS
                    )))
                    .bind(job.id.to_string())
                    .bind(player.to_string())
                    .bind(now)
                    .bind(from)
                    .fetch_one(&mut *tx)
                    .await?,
                    None => sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "INSERT INTO analysis_jobs (id, table_id, version, requested_by, state, \
                         created_at, requested_from) VALUES ($1, $2, $3, $4, 'queued', $5, $6) \
                         RETURNING {}",
                        c::JOB_COLUMNS
                    )))
                    .bind(::uuid::Uuid::new_v4().to_string())
                    .bind(table.to_string())
                    .bind(version)
                    .bind(player.to_string())
                    .bind(now)
                    .bind(from)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(|e| c::fk_as_not_found(e, || format!("table {table} or player {player}")))?,
                };
                tx.commit().await?;
                Ok(R::Queued(c::analysis_job(row)?))
            }

            async fn analysis_job(
                &self,
                table: ::uuid::Uuid,
                version: i64,
            ) -> $crate::Result<Option<$crate::AnalysisJob>> {
                use $crate::common as c;
                let row: Option<c::AnalysisRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM analysis_jobs WHERE table_id = $1 AND version = $2",
                    c::JOB_COLUMNS
                )))
                .bind(table.to_string())
                .bind(version)
                .fetch_optional(&self.pool)
                .await?;
                row.map(c::analysis_job).transpose()
            }

            async fn analysis_counts(&self) -> $crate::Result<(i64, i64)> {
                let (queued, running): (i64, i64) = sqlx::query_as(
                    "SELECT COALESCE(SUM(CASE WHEN state = 'queued' THEN 1 ELSE 0 END), 0), \
                            COALESCE(SUM(CASE WHEN state = 'running' THEN 1 ELSE 0 END), 0) \
                     FROM analysis_jobs WHERE state IN ('queued', 'running')",
                )
                .fetch_one(&self.pool)
                .await?;
                Ok((queued, running))
            }

            async fn analysis_ahead(&self, job: ::uuid::Uuid) -> $crate::Result<i64> {
                let (n,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM analysis_jobs a, analysis_jobs j \
                     WHERE j.id = $1 AND j.state = 'queued' AND a.state = 'queued' \
                     AND (a.created_at < j.created_at OR (a.created_at = j.created_at AND a.id < j.id))",
                )
                .bind(job.to_string())
                .fetch_one(&self.pool)
                .await?;
                Ok(n)
            }

            async fn claim_analysis(
                &self,
                worker: &str,
                now: i64,
                lease_ms: i64,
            ) -> $crate::Result<Option<$crate::AnalysisJob>> {
                use $crate::common as c;
                // One statement: on SQLite it holds the one write lock throughout; on
                // Postgres the inner SELECT skips rows another worker is taking.
                let row: Option<c::AnalysisRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "UPDATE analysis_jobs SET state = 'running', worker = $1, lease_until = $2, \
                     started_at = COALESCE(started_at, $3) \
                     WHERE id = (SELECT id FROM analysis_jobs \
                       WHERE state = 'queued' OR (state = 'running' AND lease_until < $3) \
                       ORDER BY created_at, id LIMIT 1{skip}) \
                     RETURNING {cols}",
                    skip = Self::SKIP_LOCKED,
                    cols = c::JOB_COLUMNS
                )))
                .bind(worker)
                .bind(now + lease_ms)
                .bind(now)
                .fetch_optional(&mut *self.write_conn().await?)
                .await?;
                row.map(c::analysis_job).transpose()
            }

            async fn analysis_progress(
                &self,
                job: ::uuid::Uuid,
                worker: &str,
                done: i64,
                total: i64,
                now: i64,
                lease_ms: i64,
            ) -> $crate::Result<bool> {
                let r = sqlx::query(
                    "UPDATE analysis_jobs SET done = $3, total = $4, lease_until = $5 \
                     WHERE id = $1 AND worker = $2 AND state = 'running'",
                )
                .bind(job.to_string())
                .bind(worker)
                .bind(done)
                .bind(total)
                .bind(now + lease_ms)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(r.rows_affected() == 1)
            }

            async fn finish_analysis(
                &self,
                job: ::uuid::Uuid,
                worker: &str,
                result: ::std::result::Result<&str, &str>,
                (done, total): (i64, i64),
                now: i64,
            ) -> $crate::Result<bool> {
                let (state, result, error) = match result {
                    Ok(json) => ("done", Some(json), None),
                    Err(why) => ("failed", None, Some(why)),
                };
                let r = sqlx::query(
                    "UPDATE analysis_jobs SET state = $3, result = $4, error = $5, \
                     finished_at = $6, done = $7, total = $8, lease_until = NULL, \
                     requested_from = NULL \
                     WHERE id = $1 AND worker = $2 AND state = 'running'",
                )
                .bind(job.to_string())
                .bind(worker)
                .bind(state)
                .bind(result)
                .bind(error)
                .bind(now)
                .bind(done)
                .bind(total)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(r.rows_affected() == 1)
            }

            async fn release_analysis(
                &self,
                job: ::uuid::Uuid,
                worker: &str,
            ) -> $crate::Result<bool> {
                let r = sqlx::query(
                    "UPDATE analysis_jobs SET state = 'queued', worker = NULL, lease_until = NULL \
                     WHERE id = $1 AND worker = $2 AND state = 'running'",
                )
                .bind(job.to_string())
                .bind(worker)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(r.rows_affected() == 1)
            }

            async fn queue_join(&self, e: &$crate::QueueEntry) -> $crate::Result<()> {
                sqlx::query(
                    "INSERT INTO queue_entries \
                     (player_id, name, game, seats, rating, conn, joined_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(e.player_id.to_string())
                .bind(&e.name)
                .bind(&e.game)
                .bind(e.seats)
                .bind(e.rating)
                .bind(&e.conn)
                .bind(e.joined_at)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(())
            }

            async fn queue_leave(
                &self,
                player: ::uuid::Uuid,
                conn: &str,
            ) -> $crate::Result<bool> {
                let done = sqlx::query("DELETE FROM queue_entries WHERE player_id = $1 AND conn = $2")
                    .bind(player.to_string())
                    .bind(conn)
                    .execute(&mut *self.write_conn().await?)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn playing_tables_of(
                &self,
                player: ::uuid::Uuid,
            ) -> $crate::Result<Vec<(::uuid::Uuid, serde_json::Value)>> {
                let rows: Vec<(String, String)> = sqlx::query_as(
                    "SELECT t.id, t.pace FROM table_seats s JOIN game_tables t ON t.id = s.table_id \
                     WHERE s.player_id = $1 AND t.status = 'playing' AND NOT s.abandoned",
                )
                .bind(player.to_string())
                .fetch_all(&self.pool)
                .await?;
                Ok(rows
                    .into_iter()
                    .filter_map(|(id, pace)| {
                        Some((id.parse().ok()?, serde_json::from_str(&pace).ok()?))
                    })
                    .collect())
            }

            async fn queue_entries(&self) -> $crate::Result<Vec<$crate::QueueEntry>> {
                sqlx::query_as::<_, $crate::common::QueueRow>(
                    "SELECT player_id, name, game, seats, rating, conn, joined_at \
                     FROM queue_entries ORDER BY joined_at, player_id",
                )
                .fetch_all(&self.pool)
                .await?
                .into_iter()
                .map($crate::common::queue_entry)
                .collect()
            }

            async fn queue_take(&self, entries: &[(::uuid::Uuid, String)]) -> $crate::Result<bool> {
                // In one order for every caller: two matchers taking overlapping groups
                // then wait for each other instead of deadlocking (Postgres row locks).
                let mut entries = entries.to_vec();
                entries.sort();
                let mut tx = self.begin_write().await?;
                for (player, conn) in &entries {
                    let done = sqlx::query(
                        "DELETE FROM queue_entries WHERE player_id = $1 AND conn = $2",
                    )
                    .bind(player.to_string())
                    .bind(conn)
                    .execute(&mut *tx)
                    .await?;
                    if done.rows_affected() != 1 {
                        // Dropping the transaction rolls back the entries taken so far.
                        return Ok(false);
                    }
                }
                tx.commit().await?;
                Ok(true)
            }

            async fn queue_clear(&self) -> $crate::Result<u64> {
                let done = sqlx::query("DELETE FROM queue_entries")
                    .execute(&mut *self.write_conn().await?)
                    .await?;
                Ok(done.rows_affected())
            }

            async fn queue_clear_dead(&self) -> $crate::Result<u64> {
                let done = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DELETE FROM queue_entries WHERE NOT EXISTS (SELECT 1 FROM nodes n \
                     WHERE n.expires_at > {now} \
                     AND substr(queue_entries.conn, 1, length(n.id) + 1) = n.id || '/')",
                    now = Self::NOW_MS
                )))
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(done.rows_affected())
            }

            async fn node_beat(
                &self,
                id: &str,
                address: &str,
                lease_ms: i64,
                draining: bool,
            ) -> $crate::Result<()> {
                let now = Self::NOW_MS;
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO nodes (id, address, started_at, expires_at, draining) \
                     VALUES ($1, $2, {now}, {now} + $3, $4) \
                     ON CONFLICT (id) DO UPDATE SET address = excluded.address, \
                     expires_at = excluded.expires_at, draining = excluded.draining"
                )))
                .bind(id)
                .bind(address)
                .bind(lease_ms)
                .bind(draining)
                .execute(&mut *self.write_conn().await?)
                .await?;
                sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM nodes WHERE expires_at < {now} - 3600000")))
                    .execute(&mut *self.write_conn().await?)
                    .await?;
                Ok(())
            }

            async fn node_gone(&self, id: &str) -> $crate::Result<()> {
                sqlx::query("DELETE FROM nodes WHERE id = $1")
                    .bind(id)
                    .execute(&mut *self.write_conn().await?)
                    .await?;
                Ok(())
            }

            async fn database_now_ms(&self) -> $crate::Result<i64> {
                let (now,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {now}",
                    now = Self::NOW_MS
                )))
                .fetch_one(&self.pool)
                .await?;
                Ok(now)
            }

            async fn live_nodes(&self) -> $crate::Result<Vec<$crate::NodeRecord>> {
                let rows: Vec<(String, String, i64, i64, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT id, address, started_at, expires_at, draining FROM nodes \
                     WHERE expires_at > {now} ORDER BY started_at, id",
                    now = Self::NOW_MS
                )))
                .fetch_all(&self.pool)
                .await?;
                Ok(rows
                    .into_iter()
                    .map(|(id, address, started_at, expires_at, draining)| $crate::NodeRecord {
                        id,
                        address,
                        started_at,
                        expires_at,
                        draining,
                    })
                    .collect())
            }

            async fn claim_table(
                &self,
                table: ::uuid::Uuid,
                node: &str,
            ) -> $crate::Result<Option<i64>> {
                let row: Option<(i64,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "UPDATE game_tables SET owner = $2, lease_epoch = lease_epoch + 1 \
                     WHERE id = $1 AND (owner IS NULL OR owner = $2 OR NOT EXISTS \
                     (SELECT 1 FROM nodes n WHERE n.id = game_tables.owner \
                      AND n.expires_at > {now})) \
                     RETURNING lease_epoch",
                    now = Self::NOW_MS
                )))
                .bind(table.to_string())
                .bind(node)
                .fetch_optional(&mut *self.write_conn().await?)
                .await?;
                Ok(row.map(|(e,)| e))
            }

            async fn release_table(
                &self,
                table: ::uuid::Uuid,
                node: &str,
                epoch: i64,
            ) -> $crate::Result<bool> {
                let done = sqlx::query(
                    "UPDATE game_tables SET owner = NULL \
                     WHERE id = $1 AND owner = $2 AND lease_epoch = $3",
                )
                .bind(table.to_string())
                .bind(node)
                .bind(epoch)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn transfer_table(
                &self,
                table: ::uuid::Uuid,
                from: &str,
                epoch: i64,
                to: &str,
            ) -> $crate::Result<Option<i64>> {
                let row: Option<(i64,)> = sqlx::query_as(
                    "UPDATE game_tables SET owner = $4, lease_epoch = lease_epoch + 1 \
                     WHERE id = $1 AND owner = $2 AND lease_epoch = $3 \
                     RETURNING lease_epoch",
                )
                .bind(table.to_string())
                .bind(from)
                .bind(epoch)
                .bind(to)
                .fetch_optional(&mut *self.write_conn().await?)
                .await?;
                Ok(row.map(|(e,)| e))
            }

            async fn table_owner(
                &self,
                table: ::uuid::Uuid,
            ) -> $crate::Result<Option<$crate::TableOwner>> {
                let row: Option<(Option<String>, i64, Option<String>, Option<i64>, i64)> =
                    sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "SELECT g.owner, g.lease_epoch, n.address, n.expires_at, {now} \
                         FROM game_tables g LEFT JOIN nodes n ON n.id = g.owner \
                         WHERE g.id = $1",
                        now = Self::NOW_MS
                    )))
                    .bind(table.to_string())
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(row.map(|(node, epoch, address, expires, now)| $crate::TableOwner {
                    node,
                    epoch,
                    live_address: address.filter(|_| expires.is_some_and(|e| e > now)),
                }))
            }

            async fn claim_orphans(
                &self,
                node: &str,
                limit: i64,
                mine_too: bool,
            ) -> $crate::Result<Vec<(::uuid::Uuid, i64)>> {
                let rows: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "UPDATE game_tables SET owner = $1, lease_epoch = lease_epoch + 1 \
                     WHERE id IN (SELECT g.id FROM game_tables g \
                       WHERE g.status IN ('open', 'playing') AND (g.owner IS NULL \
                         OR ($3 AND g.owner = $1) \
                         OR (g.owner <> $1 AND NOT EXISTS (SELECT 1 FROM nodes n \
                             WHERE n.id = g.owner AND n.expires_at > {now}))) \
                       ORDER BY g.updated_at DESC LIMIT $2{skip}) \
                     RETURNING id, lease_epoch",
                    now = Self::NOW_MS,
                    skip = Self::SKIP_LOCKED,
                )))
                .bind(node)
                .bind(limit)
                .bind(mine_too)
                .fetch_all(&mut *self.write_conn().await?)
                .await?;
                rows.into_iter()
                    .map(|(id, epoch)| Ok(($crate::common::uuid(&id, "table id")?, epoch)))
                    .collect()
            }

            async fn owned_tables(
                &self,
                node: &str,
            ) -> $crate::Result<Vec<(::uuid::Uuid, i64, bool)>> {
                let rows: Vec<(String, i64, String)> = sqlx::query_as(
                    "SELECT id, lease_epoch, status FROM game_tables WHERE owner = $1",
                )
                .bind(node)
                .fetch_all(&self.pool)
                .await?;
                rows.into_iter()
                    .map(|(id, epoch, status)| {
                        let live = status == "open" || status == "playing";
                        Ok(($crate::common::uuid(&id, "table id")?, epoch, live))
                    })
                    .collect()
            }

            async fn cluster_secret(&self) -> $crate::Result<String> {
                let fresh = format!(
                    "{}{}",
                    ::uuid::Uuid::new_v4().simple(),
                    ::uuid::Uuid::new_v4().simple()
                );
                sqlx::query(
                    "INSERT INTO cluster_secret (id, secret) VALUES (1, $1) \
                     ON CONFLICT (id) DO NOTHING",
                )
                .bind(fresh)
                .execute(&mut *self.write_conn().await?)
                .await?;
                let (secret,): (String,) =
                    sqlx::query_as("SELECT secret FROM cluster_secret WHERE id = 1")
                        .fetch_one(&mut *self.write_conn().await?)
                        .await?;
                Ok(secret)
            }

            async fn notify(&self, channel: &str, payloads: &[String]) -> $crate::Result<()> {
                self.notify_on(channel, payloads).await
            }

            async fn listen(
                &self,
                channels: &[&str],
            ) -> $crate::Result<Option<::tokio::sync::mpsc::Receiver<$crate::Notice>>> {
                self.listen_on(channels).await
            }

            async fn try_exclusive(&self, key: i64) -> $crate::Result<Option<$crate::Exclusive>> {
                self.exclusive_on(key).await
            }

            async fn rename_player(&self, id: ::uuid::Uuid, name: &str) -> $crate::Result<()> {
                let key = id.to_string();
                let mut tx = self.begin_write().await?;
                let done = sqlx::query("UPDATE players SET name = $2 WHERE id = $1")
                    .bind(&key)
                    .bind(name)
                    .execute(&mut *tx)
                    .await?;
                $crate::common::found(done.rows_affected(), || format!("player {id}"))?;
                // Finished matches keep the name they were played under.
                sqlx::query(
                    "UPDATE table_seats SET name = $2 \
                     WHERE player_id = $1 AND kind = 'player' AND table_id IN \
                     (SELECT id FROM game_tables WHERE status IN ('open', 'playing'))",
                )
                .bind(&key)
                .bind(name)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn create_owned_table(
                &self,
                record: &$crate::TableRecord,
                seats: &[$crate::Occupant],
                owner: Option<&str>,
            ) -> $crate::Result<i64> {
                let (record, seats) = (record.clone(), seats.to_vec());
                let owner = owner.map(str::to_string);
                self.serially(move |store: Self| async move {
                    store
                        .create_owned_table_now(&record, &seats, owner.as_deref())
                        .await
                })
                .await
            }

            async fn load_table(
                &self,
                table: ::uuid::Uuid,
            ) -> $crate::Result<Option<$crate::StoredTable>> {
                let mut conn = self.pool.acquire().await?;
                Self::load_on(&mut conn, table).await
            }

            async fn unfinished_tables(&self) -> $crate::Result<Vec<$crate::StoredTable>> {
                let mut conn = self.pool.acquire().await?;
                let ids: Vec<(String,)> = sqlx::query_as(
                    "SELECT id FROM game_tables WHERE status IN ('open', 'playing') \
                     ORDER BY created_at, id",
                )
                .fetch_all(&mut *conn)
                .await?;
                let mut tables = Vec::with_capacity(ids.len());
                for (id,) in ids {
                    let id = ::uuid::Uuid::parse_str(&id).map_err(|e| {
                        $crate::StoreError::Corrupt(format!("table id {id:?}: {e}"))
                    })?;
                    // A table deleted in between is simply not unfinished any more.
                    if let Some(t) = Self::load_on(&mut conn, id).await? {
                        tables.push(t);
                    }
                }
                Ok(tables)
            }

            async fn open_tables_created_by(&self, player: ::uuid::Uuid) -> $crate::Result<i64> {
                let (n,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM game_tables WHERE created_by = $1 AND status = 'open'",
                )
                .bind(player.to_string())
                .fetch_one(&self.pool)
                .await?;
                Ok(n)
            }

            async fn write_group(&self, group: &[$crate::TableWrite]) -> $crate::Result<()> {
                let plan = $crate::common::Plan::new(group);
                if plan.is_empty() {
                    return Ok(());
                }
                if plan.steps.is_empty() && plan.fences_touched() {
                    // Actions alone: one call, no separate BEGIN, fence and COMMIT (each a
                    // round trip on Postgres, a hand-off to another thread on SQLite).
                    return self.write_plain(&plan).await;
                }
                // SQLite: steps and actions in one visit to the write connection's handle.
                if let Some(r) = self.write_mixed(&plan).await {
                    return r;
                }
                let mut tx = self.begin_write().await?;
                Self::write_fence(&mut tx, &plan).await?;
                // The steps that end a table after the actions, which must still find it
                // in play (SQLite refuses an action of an ended table without a head:
                // migration 0022); a match may end on its first action.
                for step in plan.steps.iter().filter(|s| !$crate::common::ends(s.op)) {
                    Self::write_step(&mut tx, step).await?;
                }
                Self::write_tail(&mut tx, &plan).await?;
                for step in plan.steps.iter().filter(|s| $crate::common::ends(s.op)) {
                    Self::write_step(&mut tx, step).await?;
                }
                Self::retire_heads(&mut tx, &plan).await?;
                // Durable on return: SQLite runs with synchronous=FULL, Postgres with its
                // default synchronous_commit=on. Dropping an uncommitted transaction (an
                // error above) rolls it back before the connection is used again.
                tx.commit().await?;
                Ok(())
            }

            async fn rounds(
                &self,
                table: ::uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::RoundRecord>> {
                sqlx::query_as::<_, $crate::common::RoundRow>($crate::common::SELECT_ROUNDS)
                    .bind(table.to_string())
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map($crate::common::round)
                    .collect()
            }

            async fn leaderboard(
                &self,
                game: &str,
                pool: $crate::rating::Pool,
                offset: i64,
                limit: i64,
            ) -> $crate::Result<$crate::LeaderPage> {
                use $crate::common as c;
                let min = $crate::rating::MIN_RANKED_MATCHES;
                let (total,): (i64,) = sqlx::query_as(c::LEADERBOARD_SIZE)
                    .bind(game)
                    .bind(pool.as_str())
                    .bind(min)
                    .fetch_one(&self.pool)
                    .await?;
                let rows = sqlx::query_as::<_, c::BoardTuple>(c::LEADERBOARD)
                    .bind(game)
                    .bind(pool.as_str())
                    .bind(min)
                    .bind(c::limit(limit))
                    .bind(offset.max(0))
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(c::leader)
                    .collect::<$crate::Result<Vec<_>>>()?;
                Ok($crate::LeaderPage { total, rows })
            }

            async fn player_ratings(
                &self,
                player: ::uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::PlayerRating>> {
                sqlx::query_as::<_, $crate::common::LeaderTuple>($crate::common::PLAYER_RATINGS)
                    .bind(player.to_string())
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map($crate::common::player_rating)
                    .collect()
            }

            async fn rating_history(
                &self,
                player: ::uuid::Uuid,
                game: &str,
                pool: $crate::rating::Pool,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::RatingPoint>> {
                let rows: Vec<(String, i64, f64, f64, f64, bool)> =
                    sqlx::query_as($crate::common::RATING_HISTORY)
                        .bind(player.to_string())
                        .bind(game)
                        .bind(pool.as_str())
                        .bind(limit)
                        .fetch_all(&self.pool)
                        .await?;
                rows.into_iter()
                    .map(|(t, at, mu, sigma, conservative, won)| {
                        Ok($crate::RatingPoint {
                            table_id: $crate::common::uuid(&t, "table id")?,
                            at,
                            mu,
                            sigma,
                            conservative,
                            won,
                        })
                    })
                    .collect()
            }

            async fn best_totals(
                &self,
                game: &str,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::ScoreRecord>> {
                use $crate::common as c;
                sqlx::query_as::<_, c::RecordTuple>(c::BEST_TOTALS)
                    .bind(game)
                    .bind(c::limit(limit))
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(c::record_row)
                    .collect()
            }

            async fn solitaire_best(
                &self,
                target: u32,
                daily: Option<&str>,
                finished_before: i64,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::ScoreRecord>> {
                use $crate::common as c;
                sqlx::query_as::<_, c::RecordTuple>(c::SOLITAIRE_BEST)
                    .bind(format!("%\"target\":{target},%"))
                    .bind(format!("%\"target\":{target}}}%"))
                    .bind(daily)
                    .bind(finished_before)
                    .bind(c::limit(limit))
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(c::record_row)
                    .collect()
            }

            async fn rerate(&self, force: bool) -> $crate::Result<Option<u64>> {
                let mut tx = self.begin_write().await?;
                // The marker row, locked (Postgres) so that two servers starting at once
                // re-rate once: the second waits, then sees the new version.
                sqlx::query(
                    "INSERT INTO store_meta (key, value) VALUES ('rating_version', 0) \
                     ON CONFLICT (key) DO NOTHING",
                )
                .execute(&mut *tx)
                .await?;
                let sql = format!(
                    "SELECT value FROM store_meta WHERE key = 'rating_version'{}",
                    Self::LOCK
                );
                let (version,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .fetch_one(&mut *tx)
                    .await?;
                if version == $crate::rating::VERSION && !force {
                    tx.commit().await?;
                    return Ok(None);
                }
                let n = Self::rerate_on(&mut tx).await?;
                sqlx::query("UPDATE store_meta SET value = $1 WHERE key = 'rating_version'")
                    .bind($crate::rating::VERSION)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(Some(n))
            }

            async fn player_matches(
                &self,
                player: ::uuid::Uuid,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::MatchRow>> {
                self.matches_of(Self::PLAYER_MATCHES, player, limit).await
            }

            async fn public_matches(
                &self,
                player: ::uuid::Uuid,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::MatchRow>> {
                self.matches_of($crate::common::PUBLIC_MATCHES, player, limit).await
            }

            async fn chat_history(
                &self,
                table: ::uuid::Uuid,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::ChatRecord>> {
                use $crate::common as c;
                let key = table.to_string();
                let mut lines = Vec::new();
                for spectators in [false, true] {
                    let rows = sqlx::query_as::<_, c::ChatRow>(c::CHAT_HISTORY)
                        .bind(&key)
                        .bind(spectators)
                        .bind(c::limit(limit))
                        .fetch_all(&self.pool)
                        .await?;
                    for r in rows {
                        lines.push(c::chat(r)?);
                    }
                }
                lines.sort_by_key(|l| l.seq);
                Ok(lines)
            }

            async fn mutes_of(&self, player: ::uuid::Uuid) -> $crate::Result<Vec<::uuid::Uuid>> {
                let rows: Vec<(String,)> =
                    sqlx::query_as("SELECT muted_id FROM chat_mutes WHERE player_id = $1")
                        .bind(player.to_string())
                        .fetch_all(&self.pool)
                        .await?;
                rows.iter()
                    .map(|(id,)| $crate::common::uuid(id, "muted player"))
                    .collect()
            }

            async fn set_muted(
                &self,
                player: ::uuid::Uuid,
                target: ::uuid::Uuid,
                muted: bool,
                now: i64,
            ) -> $crate::Result<()> {
                if player == target {
                    return Err($crate::StoreError::Conflict(format!(
                        "player {player} cannot mute themselves"
                    )));
                }
                let not_found = || format!("player {target} or {player}");
                if muted {
                    sqlx::query(
                        "INSERT INTO chat_mutes (player_id, muted_id, created_at) \
                         VALUES ($1, $2, $3) ON CONFLICT (player_id, muted_id) DO NOTHING",
                    )
                    .bind(player.to_string())
                    .bind(target.to_string())
                    .bind(now)
                    .execute(&mut *self.write_conn().await?)
                    .await
                    .map_err(|e| $crate::common::fk_as_not_found(e, not_found))?;
                    return Ok(());
                }
                let done =
                    sqlx::query("DELETE FROM chat_mutes WHERE player_id = $1 AND muted_id = $2")
                        .bind(player.to_string())
                        .bind(target.to_string())
                        .execute(&mut *self.write_conn().await?)
                        .await?;
                // Nothing to delete: unmuting a player who was not muted is fine, one who
                // does not exist is refused as muting them is (by the foreign keys).
                if done.rows_affected() == 0 {
                    let (found,): (i64,) =
                        sqlx::query_as("SELECT COUNT(*) FROM players WHERE id IN ($1, $2)")
                            .bind(player.to_string())
                            .bind(target.to_string())
                            .fetch_one(&self.pool)
                            .await?;
                    if found < 2 {
                        return Err($crate::StoreError::NotFound(not_found()));
                    }
                }
                Ok(())
            }

            async fn daily_seed(
                &self,
                key: &str,
                fresh_seed_hex: Option<&str>,
                now: i64,
            ) -> $crate::Result<Option<String>> {
                const SELECT: &str = "SELECT seed_hex FROM daily_deals WHERE key = $1";
                let Some(fresh) = fresh_seed_hex else {
                    let row: Option<(String,)> = sqlx::query_as(SELECT)
                        .bind(key)
                        .fetch_optional(&self.pool)
                        .await?;
                    return Ok(row.map(|(seed,)| seed));
                };
                // The first caller's seed wins; everybody reads the stored one, here in the
                // same write transaction.
                let mut tx = self.begin_write().await?;
                sqlx::query(
                    "INSERT INTO daily_deals (key, seed_hex, created_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (key) DO NOTHING",
                )
                .bind(key)
                .bind(fresh)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                let (seed,): (String,) = sqlx::query_as(SELECT)
                    .bind(key)
                    .fetch_one(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(Some(seed))
            }

            async fn daily_table_of(&self, key: &str, player: ::uuid::Uuid) -> $crate::Result<Option<::uuid::Uuid>> {
                let row: Option<(String,)> = sqlx::query_as(
                    "SELECT t.id FROM game_tables t JOIN table_seats s ON s.table_id = t.id \
                     WHERE t.daily = $1 AND s.player_id = $2 ORDER BY t.created_at LIMIT 1",
                )
                .bind(key)
                .bind(player.to_string())
                .fetch_optional(&self.pool)
                .await?;
                row.map(|(id,)| $crate::common::uuid(&id, "table id")).transpose()
            }

            async fn create_tournament(
                &self,
                t: &$crate::TournamentRecord,
            ) -> $crate::Result<()> {
                sqlx::query(
                    "INSERT INTO tournaments (id, name, game, status, private, invite_code, \
                     rated, created_by, created_at, starts_at, config, state, version, \
                     schedule_key, updated_at, cancelled) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                )
                .bind(t.id.to_string())
                .bind(&t.name)
                .bind(&t.game)
                .bind(t.status.as_str())
                .bind(t.private)
                .bind(&t.invite_code)
                .bind(t.rated)
                .bind(t.created_by.map(|c| c.to_string()))
                .bind(t.created_at)
                .bind(t.starts_at)
                .bind(t.config.to_string())
                .bind(t.state.to_string())
                .bind(t.version)
                .bind(&t.schedule_key)
                .bind(t.updated_at)
                .bind(&t.cancelled)
                .execute(&mut *self.write_conn().await?)
                .await
                .map_err(|e| {
                    $crate::common::fk_as_not_found(e, || format!("player {:?}", t.created_by))
                })?;
                Ok(())
            }

            async fn tournament(
                &self,
                id: ::uuid::Uuid,
            ) -> $crate::Result<Option<$crate::TournamentRecord>> {
                let row: Option<$crate::common::TournamentRow> = sqlx::query_as(
                    sqlx::AssertSqlSafe(format!(
                        "{} WHERE id = $1",
                        $crate::common::SELECT_TOURNAMENT
                    )),
                )
                .bind(id.to_string())
                .fetch_optional(&self.pool)
                .await?;
                row.map($crate::common::tournament).transpose()
            }

            async fn tournaments(
                &self,
                status: Option<$crate::TournamentStatus>,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::TournamentRecord>> {
                let rows: Vec<$crate::common::TournamentRow> = sqlx::query_as(
                    sqlx::AssertSqlSafe(format!(
                        "{} WHERE ($1 IS NULL OR status = $1) \
                         ORDER BY created_at DESC, id LIMIT $2",
                        $crate::common::SELECT_TOURNAMENT
                    )),
                )
                .bind(status.map(|s| s.as_str()))
                .bind(limit)
                .fetch_all(&self.pool)
                .await?;
                rows.into_iter().map($crate::common::tournament).collect()
            }

            async fn listed_tournaments(
                &self,
                status: Option<$crate::TournamentStatus>,
                cancelled: Option<bool>,
                viewer: Option<::uuid::Uuid>,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::TournamentRecord>> {
                // A member of a private tournament is found by the id in its state's
                // players (a UUID appears in no other text); the caller checks again.
                let rows: Vec<$crate::common::TournamentRow> = sqlx::query_as(
                    sqlx::AssertSqlSafe(format!(
                        "{} WHERE ($1 IS NULL OR status = $1) \
                         AND ($2 IS NULL OR (cancelled IS NOT NULL) = $2) \
                         AND (private = FALSE OR ($3 IS NOT NULL AND \
                              (created_by = $3 OR state LIKE '%' || $3 || '%'))) \
                         ORDER BY created_at DESC, id LIMIT $4",
                        $crate::common::SELECT_TOURNAMENT
                    )),
                )
                .bind(status.map(|s| s.as_str()))
                .bind(cancelled)
                .bind(viewer.map(|v| v.to_string()))
                .bind(limit)
                .fetch_all(&self.pool)
                .await?;
                rows.into_iter().map($crate::common::tournament).collect()
            }

            async fn save_tournament(
                &self,
                step: &$crate::TournamentStep,
            ) -> $crate::Result<bool> {
                let mut tx = self.begin_write().await?;
                let (node, epoch) = match &step.fence {
                    Some((n, e)) => (Some(n.as_str()), Some(*e)),
                    None => (None, None),
                };
                let done = sqlx::query(
                    "UPDATE tournaments SET state = $3, status = $4, version = version + 1, \
                     updated_at = $5 WHERE id = $1 AND version = $2 AND cancelled IS NULL \
                     AND ($6 IS NULL OR (owner = $6 AND lease_epoch = $7))",
                )
                .bind(step.id.to_string())
                .bind(step.version)
                .bind(step.state.to_string())
                .bind(step.status.as_str())
                .bind(step.now)
                .bind(node)
                .bind(epoch)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() != 1 {
                    return Ok(false);
                }
                for (engine, table, round) in &step.tables {
                    sqlx::query(
                        "INSERT INTO tournament_tables (tournament_id, engine_table, table_id, \
                         round) VALUES ($1, $2, $3, $4)",
                    )
                    .bind(step.id.to_string())
                    .bind(i64::from(*engine))
                    .bind(table.to_string())
                    .bind(*round)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(true)
            }

            async fn cancel_tournament(
                &self,
                id: ::uuid::Uuid,
                reason: &str,
                now: i64,
            ) -> $crate::Result<bool> {
                let done = sqlx::query(
                    "UPDATE tournaments SET status = 'finished', cancelled = $2, \
                     version = version + 1, updated_at = $3 \
                     WHERE id = $1 AND status = 'registration' AND cancelled IS NULL",
                )
                .bind(id.to_string())
                .bind(reason)
                .bind(now)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn is_unrated(&self, table: ::uuid::Uuid) -> $crate::Result<bool> {
                let unrated: Option<(i32,)> = sqlx::query_as($crate::common::UNRATED)
                    .bind(table.to_string())
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(unrated.is_some())
            }

            async fn mark_unrated(&self, table: ::uuid::Uuid, now: i64) -> $crate::Result<()> {
                sqlx::query(
                    "INSERT INTO unrated_tables (table_id, created_at) VALUES ($1, $2) \
                     ON CONFLICT (table_id) DO NOTHING",
                )
                .bind(table.to_string())
                .bind(now)
                .execute(&mut *self.write_conn().await?)
                .await?;
                Ok(())
            }

            async fn open_tournaments_created_by(
                &self,
                player: ::uuid::Uuid,
            ) -> $crate::Result<i64> {
                let (n,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM tournaments WHERE created_by = $1 \
                     AND status IN ('registration', 'running') AND cancelled IS NULL",
                )
                .bind(player.to_string())
                .fetch_one(&self.pool)
                .await?;
                Ok(n)
            }

            async fn claim_tournaments(
                &self,
                node: &str,
                limit: i64,
                mine_too: bool,
            ) -> $crate::Result<Vec<(::uuid::Uuid, i64)>> {
                let rows: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "UPDATE tournaments SET owner = $1, lease_epoch = lease_epoch + 1 \
                     WHERE id IN (SELECT t.id FROM tournaments t \
                       WHERE t.status <> 'finished' AND (t.owner IS NULL \
                         OR ($3 AND t.owner = $1) \
                         OR (t.owner <> $1 AND NOT EXISTS (SELECT 1 FROM nodes n \
                             WHERE n.id = t.owner AND n.expires_at > {now}))) \
                       ORDER BY t.created_at LIMIT $2{skip}) \
                     RETURNING id, lease_epoch",
                    now = Self::NOW_MS,
                    skip = Self::SKIP_LOCKED,
                )))
                .bind(node)
                .bind(limit)
                .bind(mine_too)
                .fetch_all(&mut *self.write_conn().await?)
                .await?;
                rows.into_iter()
                    .map(|(id, epoch)| Ok(($crate::common::uuid(&id, "tournament id")?, epoch)))
                    .collect()
            }

            async fn tournament_owner(
                &self,
                id: ::uuid::Uuid,
            ) -> $crate::Result<Option<(Option<String>, i64)>> {
                Ok(sqlx::query_as("SELECT owner, lease_epoch FROM tournaments WHERE id = $1")
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await?)
            }

            async fn tournament_tables(
                &self,
                id: ::uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::TournamentTable>> {
                let rows: Vec<$crate::common::TournamentTableRow> =
                    sqlx::query_as($crate::common::TOURNAMENT_TABLES)
                        .bind(id.to_string())
                        .fetch_all(&self.pool)
                        .await?;
                $crate::common::tournament_tables(rows)
            }

            async fn daily_board(
                &self,
                key: &str,
                finished_before: i64,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::DailyRow>> {
                sqlx::query_as::<_, $crate::common::DailyTuple>($crate::common::DAILY_BOARD)
                    .bind(key)
                    .bind($crate::common::limit(limit))
                    .bind(finished_before)
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map($crate::common::daily_row)
                    .collect()
            }
        }
    };
}
pub(crate) use impl_store;
