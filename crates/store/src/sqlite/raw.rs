//! A group of plain actions, and the fold of the journal, written straight through
//! SQLite, with prepared statements and bound values, on a thread of the store's own
//! ([`Lane`]) (issue #30).
//!
//! Through sqlx, each statement is a message to the connection's thread and back, so a
//! group was one script of a few statements reading its rows from JSON arrays
//! (`json_each`): SQLite then parsed every row's JSON, and the journal's rows were built
//! from text. Here the group's rows are bound as values, one prepared statement per kind
//! of row, all in one visit of the lane. For a database file the lane has a connection of
//! its own, opened with the write connection's settings (`synchronous=FULL` among them),
//! which keeps its prepared statements from one group to the next; the caller holds the
//! write pool's only connection meanwhile, so nothing else of the store writes at the same
//! time. In memory, the pool's one connection is the database: sqlx's thread hands its
//! handle over ([`sqlx::sqlite::SqliteConnection::lock_handle`]) and takes it back when
//! the group is done. The action's JSON text is stored as the caller serialized it, never
//! parsed here.
//!
//! A group with other ops than actions (a round's start or end, seats, status, clock,
//! abandons, chat lines: [`Step`]) is written the same way, in one visit ([`mixed`]):
//! under load nearly every group holds one, and through sqlx such a group cost a hand-off
//! to sqlx's thread and back per statement, its actions going through the `actions` view's
//! trigger (JSON parsed per row). Only a group that finishes a match (its ratings) still
//! goes through sqlx.
//!
//! The writer alone (`write_bench … 1024 8 writer`) went from about 50k durable actions/s
//! to 72-99k on this busy 2-core machine, at 7-8 µs of CPU per action in all instead of
//! 21, of which 3.5-4 µs on this thread (docs/performance.md). Its own connection took two
//! wake-ups of sqlx's thread out of every group: at a human pace (500 tables) a move's
//! server CPU went down by a tenth and its round trip's p50 by a sixth.

use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, OptionalExtension, params};
use sqlx::Sqlite;
use sqlx::pool::PoolConnection;

use uuid::Uuid;

use crate::{StoreError, WriteOp, common};

/// An action of the group, as its journal row.
pub(super) struct Row {
    pub table: String,
    pub round_no: i32,
    pub seq: i64,
    pub seat: i32,
    /// The action's JSON text, stored as it is.
    pub action: String,
    pub at: i64,
}

/// A table of the group: its first action must come after the table's head, its last
/// becomes the head.
pub(super) struct Head {
    pub table: String,
    pub first: (i32, i64),
    pub last: (i32, i64),
    pub at: i64,
}

/// Why a group was refused, or what failed.
#[derive(Debug)]
pub(super) enum Refused {
    /// `(table, its epoch, the epoch the group holds)`.
    Fenced(String, i64, i64),
    /// The table whose head is at or after the group's first action of it.
    Duplicate(String),
    /// The table that ended (finished or abandoned; no head left: migration 0022).
    Ended(String),
    /// SQLite's own error (a missing round: a foreign key).
    Sqlite(rusqlite::Error),
    /// Anything else: the handover failed, or the write panicked.
    Store(StoreError),
}

impl From<rusqlite::Error> for Refused {
    fn from(e: rusqlite::Error) -> Self {
        Refused::Sqlite(e)
    }
}

impl Refused {
    /// The store's error; `missing` names the round when a foreign key failed.
    pub fn into_store(self, missing: impl FnOnce() -> String) -> StoreError {
        match self {
            Refused::Fenced(table, at, held) => StoreError::Fenced(format!(
                "table {table} is at epoch {at}, the write holds epoch {held}"
            )),
            Refused::Duplicate(table) => StoreError::Conflict(format!(
                "a duplicate action: table {table}'s head is at or after the group's first action"
            )),
            // A conflict, as a duplicate: what a group retried after a commit whose outcome
            // was lost meets (`writer.rs`).
            Refused::Ended(table) => StoreError::Conflict(format!(
                "a duplicate action: table {table} has ended (finished or abandoned)"
            )),
            Refused::Store(e) => e,
            Refused::Sqlite(e) => sqlite_error(e, missing),
        }
    }
}

/// SQLite's primary result codes that may pass (as `transient_sqlx` counts them): BUSY,
/// LOCKED, IOERR, FULL, PROTOCOL.
fn sqlite_error(e: rusqlite::Error, missing: impl FnOnce() -> String) -> StoreError {
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        let code = f.extended_code;
        if code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY {
            return StoreError::NotFound(missing());
        }
        if code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
            || code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
        {
            return StoreError::Conflict(format!("{e}"));
        }
        if matches!(code & 0xff, 5 | 6 | 10 | 13 | 15) {
            return StoreError::Unavailable(format!("SQLite: {e}"));
        }
    }
    StoreError::Db(sqlx::Error::Protocol(format!("SQLite: {e}")))
}

/// Selects a fenced table's epoch.
const EPOCH: &str = "SELECT lease_epoch FROM game_tables WHERE id = ?1";
/// Moves a table's head to the group's last action if it is before the group's first.
const HEAD_MOVE: &str = "UPDATE action_heads SET round_no = ?2, seq = ?3, at = ?4 \
     WHERE table_id = ?1 AND (round_no, seq) < (?5, ?6)";
/// A table's first head (none yet); changes nothing if it has one, or if the table ended
/// (an ended table's head is gone once its group is: migration 0022); either way the
/// action is refused.
const HEAD_NEW: &str = "INSERT INTO action_heads (table_id, round_no, seq, at) \
     SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM game_tables \
     WHERE id = ?1 AND status IN ('finished', 'abandoned')) \
     ON CONFLICT (table_id) DO NOTHING";
/// Whether a table has a head (telling a refused action's two reasons apart).
const HAS_HEAD: &str = "SELECT 1 FROM action_heads WHERE table_id = ?1";
const JOURNAL: &str = "INSERT INTO action_journal \
     (table_id, round_no, seq, seat, action, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// The group as one transaction: the fences, then each table's head (refusing an action
/// at or before it), then the journal's rows; what migration 0014's trigger on `actions`
/// does row by row. Durable on return (the connection's `synchronous=FULL`).
fn group(
    db: &Connection,
    rows: &[Row],
    heads: &[Head],
    fences: &[(String, i64)],
) -> Result<(), Refused> {
    db.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    fence(db, fences)?;
    append(db, rows, heads)?;
    db.prepare_cached("COMMIT")?.execute([])?;
    Ok(())
}

/// Refuses the group if a fenced table is at another epoch than the one it holds.
fn fence(db: &Connection, fences: &[(String, i64)]) -> Result<(), Refused> {
    if !fences.is_empty() {
        let mut epoch = db.prepare_cached(EPOCH)?;
        for (table, held) in fences {
            // An unknown table is refused below, by its actions' foreign key.
            let at: Option<i64> = epoch.query_row([table], |r| r.get(0)).optional()?;
            if let Some(at) = at
                && at != *held
            {
                return Err(Refused::Fenced(table.clone(), at, *held));
            }
        }
    }
    Ok(())
}

/// Each table's head (refusing an action at or before it), then the journal's rows.
fn append(db: &Connection, rows: &[Row], heads: &[Head]) -> Result<(), Refused> {
    {
        let (mut moved, mut new) = (db.prepare_cached(HEAD_MOVE)?, db.prepare_cached(HEAD_NEW)?);
        for h in heads {
            let (round, seq) = h.last;
            let (first_round, first_seq) = h.first;
            let args = params![h.table, round, seq, h.at, first_round, first_seq];
            if moved.execute(args)? == 0 && new.execute(params![h.table, round, seq, h.at])? == 0 {
                // Refused: a head at or after the action, or none left (an ended table);
                // which one is read only here, off the way of every accepted group.
                let head: Option<i64> = db
                    .prepare_cached(HAS_HEAD)?
                    .query_row([&h.table], |r| r.get(0))
                    .optional()?;
                return Err(match head {
                    Some(_) => Refused::Duplicate(h.table.clone()),
                    None => Refused::Ended(h.table.clone()),
                });
            }
        }
    }
    let mut journal = db.prepare_cached(JOURNAL)?;
    for r in rows {
        journal.execute(params![r.table, r.round_no, r.seq, r.seat, r.action, r.at])?;
    }
    Ok(())
}

/// An op of a group other than an action (a round's start or end, a seat, the status, the
/// clock, an abandon, a chat line), with its table: what `impl_store!`'s `write_step`
/// writes through sqlx, one hand-off to sqlx's thread and back per statement.
pub(super) struct Step {
    pub table: Uuid,
    pub key: String,
    pub now: i64,
    /// Never `AppendAction` (the group's rows) nor `FinishMatch` (its ratings are written
    /// through sqlx: such a group goes that way whole).
    pub op: WriteOp,
}

/// A group with steps as one transaction: the fences, the steps in group order, each
/// table's head and the journal's rows (as [`group`]), then `updated_at` of each table a
/// step touched (`touches`; a table's actions alone move its head, which reads count as
/// its time). Durable on return. Before, such a group went through sqlx, a statement at a
/// time, its actions through the `actions` view's trigger: under load nearly every group
/// holds a round's end or start, so nearly every group went that way.
fn mixed(db: &Connection, g: &Mixed) -> Result<(), Refused> {
    db.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    fence(db, &g.fences)?;
    // The steps that end a table after the actions, as `impl_store!`'s `write_group`.
    for s in g.steps.iter().filter(|s| !common::ends(&s.op)) {
        step(db, s)?;
    }
    append(db, &g.rows, &g.heads)?;
    for s in g.steps.iter().filter(|s| common::ends(&s.op)) {
        step(db, s)?;
    }
    retire(db, &g.ended)?;
    {
        let mut touch = db.prepare_cached(TOUCH)?;
        for (table, at) in &g.touches {
            touch.execute(params![table, at])?;
        }
    }
    db.prepare_cached("COMMIT")?.execute([])?;
    Ok(())
}

/// The heads of the tables the group ended (`Mixed::ended`) leave `action_heads`
/// (`super::RETIRE_HEAD`, migration 0022): after the group's actions, which still find
/// their table's head.
fn retire(db: &Connection, ended: &[String]) -> Result<(), Refused> {
    for table in ended {
        for sql in super::RETIRE_HEAD {
            exec(db, &numbered(sql), params![table])?;
        }
    }
    Ok(())
}

/// What [`mixed`] writes.
pub(super) struct Mixed {
    pub steps: Vec<Step>,
    pub rows: Vec<Row>,
    pub heads: Vec<Head>,
    pub fences: Vec<(String, i64)>,
    /// `(table, Unix ms)` of the tables a step touched.
    pub touches: Vec<(String, i64)>,
    /// The tables a step ends, each once (`Plan::ended`): their heads are retired.
    pub ended: Vec<String>,
}

const TOUCH: &str = "UPDATE game_tables SET updated_at = ?2 WHERE id = ?1";

/// Runs `sql` with `args`: the rows it changed. Statements are prepared once per
/// connection (`prepare_cached`): the lane's own connection keeps them between groups (a
/// borrowed handle's cache goes with the visit).
fn exec(db: &Connection, sql: &str, args: impl rusqlite::Params) -> rusqlite::Result<usize> {
    db.prepare_cached(sql)?.execute(args)
}

/// A statement of `common` (numbered `$n` parameters, as sqlx writes them) for rusqlite:
/// `?n`, which SQLite binds by number whatever the order they appear in.
fn numbered(sql: &str) -> String {
    sql.replace('$', "?")
}

/// `e` as the store's error, a foreign key's refusal as `NotFound(what)` ([`sqlite_error`],
/// as `common::fk_as_not_found` on the sqlx path).
fn fk(e: rusqlite::Error, what: impl FnOnce() -> String) -> Refused {
    Refused::Store(sqlite_error(e, what))
}

/// `NotFound(what)` when an `UPDATE` matched no row (as `common::found`).
fn found(rows: usize, what: impl FnOnce() -> String) -> Result<(), Refused> {
    common::found(rows as u64, what).map_err(Refused::Store)
}

/// One step, as `impl_store!`'s `write_step` writes it, with the same statements and the
/// same errors.
fn step(db: &Connection, s: &Step) -> Result<(), Refused> {
    use rusqlite::types::Value;
    let (table, key) = (s.table, s.key.as_str());
    match &s.op {
        WriteOp::SetSeat { seat, occupant } => {
            let (kind, player_id, name, level) = common::seat_columns(occupant);
            let done = exec(
                db,
                &numbered(common::SET_SEAT),
                params![kind, player_id, name, level, key, seat],
            )
            .map_err(|e| fk(e, || format!("{occupant:?}")))?;
            found(done, || format!("seat {seat} of table {table}"))
        }
        WriteOp::SetStatus(status) => {
            let done = exec(
                db,
                &numbered(common::SET_STATUS),
                params![key, status.as_str()],
            )?;
            found(done, || format!("table {table}"))
        }
        WriteOp::StartRound(round) => {
            exec(
                db,
                &numbered(common::INSERT_ROUND),
                params![
                    key,
                    round.round_no,
                    round.seed_hex,
                    round.commitment,
                    round.started_at,
                    round.ended_at,
                    round.result.as_ref().map(|v| v.to_string())
                ],
            )
            .map_err(|e| fk(e, || format!("table {table}")))?;
            Ok(())
        }
        WriteOp::SetClock(banks) => {
            let done = exec(
                db,
                &numbered(common::SET_CLOCK),
                params![key, banks.to_string()],
            )?;
            found(done, || format!("table {table}"))
        }
        WriteOp::Abandon { seats } => {
            let mut abandon = db.prepare_cached(&numbered(common::ABANDON_SEAT))?;
            for seat in seats {
                let done = abandon.execute(params![key, seat])?;
                found(done, || format!("seat {seat} of table {table}"))?;
            }
            Ok(())
        }
        WriteOp::Chat(line) => {
            exec(
                db,
                &numbered(common::INSERT_CHAT),
                params![
                    key,
                    line.seq,
                    line.player_id.to_string(),
                    line.name,
                    line.spectator,
                    line.text,
                    line.emote,
                    line.created_at
                ],
            )
            .map_err(|e| {
                fk(e, || {
                    format!("table {table} or chat sender {}", line.player_id)
                })
            })?;
            exec(
                db,
                &numbered(common::PRUNE_CHAT),
                params![key, line.spectator, crate::CHAT_KEPT],
            )?;
            Ok(())
        }
        WriteOp::EndRound {
            round_no,
            result,
            totals,
        } => {
            let done = exec(
                db,
                &numbered(common::END_ROUND),
                params![key, round_no, s.now, result.to_string()],
            )?;
            if done == 0 {
                // Tell "already ended" (a result would be overwritten) from "unknown".
                let exists: Option<i32> = db
                    .prepare_cached(&numbered(common::ROUND_EXISTS))?
                    .query_row(params![key, round_no], |r| r.get(0))
                    .optional()?;
                let what = format!("round {round_no} of table {table}");
                return Err(Refused::Store(match exists {
                    Some(_) => StoreError::Conflict(format!("{what} already ended")),
                    None => StoreError::NotFound(what),
                }));
            }
            if totals.is_empty() {
                return Ok(());
            }
            let mut args = vec![Value::Text(key.to_string())];
            for (seat, total) in totals.iter().enumerate() {
                args.push(Value::Integer(seat as i64));
                args.push(Value::Integer(*total));
            }
            let done = exec(
                db,
                &numbered(&common::seat_scores(totals.len())),
                rusqlite::params_from_iter(args),
            )?;
            common::seats_found(done as u64, totals.len(), table).map_err(Refused::Store)
        }
        WriteOp::AppendAction(_) | WriteOp::FinishMatch { .. } => Err(Refused::Store(
            StoreError::Corrupt("an action or a match's finish written as a raw step".into()),
        )),
    }
}

/// Writes a group with steps ([`mixed`]) on the store's [`Lane`] ([`run`]).
pub(super) async fn write_mixed(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    group: Mixed,
    may_close: bool,
) -> (Result<(), Refused>, Option<PoolConnection<Sqlite>>) {
    run(lane, conn, may_close, move |db| mixed(db, &group)).await
}

/// Writes a group ([`group`]) on the store's [`Lane`] ([`run`]).
pub(super) async fn write_group(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    rows: Vec<Row>,
    heads: Vec<Head>,
    fences: Vec<(String, i64)>,
    may_close: bool,
) -> (Result<(), Refused>, Option<PoolConnection<Sqlite>>) {
    run(lane, conn, may_close, move |db| {
        group(db, &rows, &heads, &fences)
    })
    .await
}

/// The journal's visible rows from the first to `upto` (ids), as chunks: one per table
/// and round, its actions in order (a table's rows are in the journal in its order, which
/// its head enforces), sorted by table. Reads only. A fold writes them in slices
/// ([`fold_slice`]), invisible until [`fold_flip`] shows them and hides their rows at once
/// (migration 0021), then removes those rows ([`fold_trim`]).
pub(super) struct Chunks {
    /// `fold_state` when the rows were read: `(chunks_upto, journal_upto)`. Every step of
    /// the fold refuses to go on if it changed (another fold went through meanwhile).
    state: (i64, i64),
    /// The last journal id folded.
    upto: i64,
    /// Visible rows after `upto` when the rows were read.
    pub(super) left: i64,
    /// The rows read.
    pub(super) moved: u64,
    /// (table, round, first seq, JSON array of `[seq, seat, created_at, action]`).
    chunks: Vec<(String, i32, i64, String)>,
}

impl Chunks {
    /// How many chunks (one per table and round).
    pub(super) fn len(&self) -> usize {
        self.chunks.len()
    }
}

/// `fold_state` (migration 0021): `(chunks_upto, journal_upto)`.
fn fold_state(db: &Connection) -> Result<(i64, i64), Refused> {
    Ok(db
        .prepare_cached("SELECT chunks_upto, journal_upto FROM fold_state")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Refused, nothing changed by the caller's rollback: another fold went through since the
/// chunks were read (the store lets one fold run at a time), or a table went (its chunks
/// and rows with it) in the middle of this one.
fn changed() -> Refused {
    Refused::Store(StoreError::Unavailable(
        "the action journal changed while it was being folded; folded again later".into(),
    ))
}

/// Reads the journal's oldest visible rows, at most `most`, as [`Chunks`]; `None` when
/// none is visible.
fn read_chunks(db: &Connection, most: i64) -> Result<Option<Chunks>, Refused> {
    use std::fmt::Write;
    let state = fold_state(db)?;
    let (lo, hi): (Option<i64>, Option<i64>) = db.query_row(
        "SELECT MIN(id), MAX(id) FROM action_journal WHERE id > ?1",
        [state.1],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Ok(None);
    };
    let upto = hi.min(lo + most - 1);
    // Each table's chunks by round: the first seq and the JSON array so far (unclosed).
    let mut by_table: HashMap<String, BTreeMap<i32, (i64, String)>> = HashMap::new();
    let mut moved = 0;
    let mut select = db.prepare_cached(
        "SELECT table_id, round_no, seq, seat, created_at, action FROM action_journal \
         WHERE id > ?1 AND id <= ?2 ORDER BY id",
    )?;
    let mut rows = select.query([state.1, upto])?;
    while let Some(r) = rows.next()? {
        let table = r.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        let (round, seq, seat, at): (i32, i64, i64, i64) =
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        let action = r.get_ref(5)?.as_str().map_err(rusqlite::Error::from)?;
        let rounds = match by_table.get_mut(table) {
            Some(rounds) => rounds,
            None => by_table.entry(table.to_string()).or_default(),
        };
        let (_, text) = rounds
            .entry(round)
            .or_insert_with(|| (seq, String::with_capacity(64 * (action.len() + 24))));
        text.push(if text.is_empty() { '[' } else { ',' });
        let _ = write!(text, "[{seq},{seat},{at},{action}]");
        moved += 1;
    }
    // In the index's order, so that neighbouring entries go in together (and a slice of
    // the fold touches its own few pages of the index).
    let mut tables: Vec<_> = by_table.into_iter().collect();
    tables.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut chunks = Vec::with_capacity(tables.len());
    for (table, rounds) in tables {
        for (round, (first, mut text)) in rounds {
            text.push(']');
            chunks.push((table.clone(), round, first, text));
        }
    }
    Ok(Some(Chunks {
        state,
        upto,
        left: hi - upto,
        moved,
        chunks,
    }))
}

/// Inserts `c`'s chunks from `from` on, invisible (after `chunks_upto`, at the rowids
/// [`fold_flip`] will show), in the caller's transaction, until `budget` has passed (at
/// least one); returns the index after the last one inserted. The first slice first
/// removes what an unfinished fold left invisible (a crash, or a fold refused halfway).
fn insert_chunks(
    db: &Connection,
    c: &Chunks,
    from: usize,
    budget: Option<std::time::Duration>,
) -> Result<usize, Refused> {
    let started = std::time::Instant::now();
    if fold_state(db)? != c.state {
        return Err(changed());
    }
    if from == 0 {
        db.prepare_cached("DELETE FROM action_chunks WHERE rowid > ?1")?
            .execute([c.state.0])?;
    }
    let mut insert = db.prepare_cached(
        "INSERT INTO action_chunks (rowid, table_id, round_no, first_seq, actions) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut next = from;
    while let Some((table, round, first, text)) = c.chunks.get(next) {
        insert.execute(params![
            c.state.0 + 1 + next as i64,
            table,
            round,
            first,
            text
        ])?;
        next += 1;
        if budget.is_some_and(|b| started.elapsed() >= b) {
            break;
        }
    }
    Ok(next)
}

/// Shows `c`'s chunks and hides the journal rows they hold, at once, in the caller's
/// transaction: refused if another fold went through since they were read, or if not all
/// of them are there (a table went meanwhile, its chunks with it).
fn flip(db: &Connection, c: &Chunks) -> Result<(), Refused> {
    if fold_state(db)? != c.state {
        return Err(changed());
    }
    let n = c.chunks.len() as i64;
    let written: i64 = db
        .prepare_cached("SELECT COUNT(*) FROM action_chunks WHERE rowid > ?1")?
        .query_row([c.state.0], |r| r.get(0))?;
    if written != n {
        return Err(changed());
    }
    db.prepare_cached("UPDATE fold_state SET chunks_upto = ?1, journal_upto = ?2")?
        .execute([c.state.0 + n, c.upto])?;
    Ok(())
}

/// Removes at most `most` hidden journal rows (folded: at or below `journal_upto`), in
/// the caller's transaction; whether hidden rows are left.
fn trim(db: &Connection, most: i64) -> Result<bool, Refused> {
    let (_, upto) = fold_state(db)?;
    let first: Option<i64> = db
        .prepare_cached("SELECT MIN(id) FROM action_journal")?
        .query_row([], |r| r.get(0))?;
    let Some(first) = first.filter(|f| *f <= upto) else {
        return Ok(false);
    };
    let end = upto.min(first.saturating_add(most - 1));
    db.prepare_cached("DELETE FROM action_journal WHERE id <= ?1")?
        .execute([end])?;
    Ok(end < upto)
}

/// Folds at most `most` of the journal's rows in one transaction ([`fold_some`]): reads
/// them, writes their chunks, shows them, removes the rows. Returns the rows moved and the
/// visible rows left.
fn fold(db: &Connection, most: i64) -> Result<(u64, i64), Refused> {
    db.execute_batch("BEGIN IMMEDIATE")?;
    trim(db, i64::MAX)?;
    let Some(c) = read_chunks(db, most)? else {
        db.execute_batch("COMMIT")?;
        return Ok((0, 0));
    };
    insert_chunks(db, &c, 0, None)?;
    flip(db, &c)?;
    trim(db, i64::MAX)?;
    db.execute_batch("COMMIT")?;
    Ok((c.moved, c.left))
}

/// Reads the journal's oldest visible rows, at most `most`, as [`Chunks`] through a
/// read-only connection of its own to `file`, on the calling thread (a blocking one): the
/// first step of a file's fold, outside the write lock. A fold of 64k rows at 5,000 tables
/// spent 44 ms of its 110 ms reading them and making the chunks, while every group waited
/// (docs/performance.md).
pub(super) fn read_journal(file: &std::path::Path, most: i64) -> Result<Journal, Refused> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(file, flags)?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    // One read transaction: the state, MIN, MAX and the rows from one snapshot.
    db.execute_batch("BEGIN")?;
    let read = (|| {
        let hidden: bool = db.query_row(
            "SELECT EXISTS (SELECT 1 FROM action_journal \
             WHERE id <= (SELECT journal_upto FROM fold_state))",
            [],
            |r| r.get(0),
        )?;
        Ok(Journal {
            hidden,
            chunks: read_chunks(&db, most)?,
        })
    })();
    let _ = db.execute_batch("COMMIT");
    read
}

/// What [`read_journal`] saw.
pub(super) struct Journal {
    /// Rows an earlier fold hid and did not remove (a crash, or an error between its
    /// steps): the fold removes them first ([`fold_trim`]).
    pub(super) hidden: bool,
    /// The visible rows' chunks; `None` when none is visible.
    pub(super) chunks: Option<Chunks>,
}

/// One slice of a file's fold, on the store's [`Lane`] ([`run`]): `c`'s chunks from `from`
/// on, invisible, in one transaction of about `budget` ([`insert_chunks`]). Returns the
/// index after the last one written.
pub(super) async fn fold_slice(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    c: std::sync::Arc<Chunks>,
    from: usize,
    budget: std::time::Duration,
) -> (Result<usize, Refused>, Option<PoolConnection<Sqlite>>) {
    transaction(lane, conn, move |db| {
        insert_chunks(db, &c, from, Some(budget))
    })
    .await
}

/// Once every slice is in: shows `c`'s chunks and hides their journal rows, in one small
/// transaction ([`flip`]).
pub(super) async fn fold_flip(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    c: std::sync::Arc<Chunks>,
) -> (Result<(), Refused>, Option<PoolConnection<Sqlite>>) {
    transaction(lane, conn, move |db| flip(db, &c)).await
}

/// Removes at most `most` hidden journal rows in one transaction ([`trim`]); whether
/// hidden rows are left.
pub(super) async fn fold_trim(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    most: i64,
) -> (Result<bool, Refused>, Option<PoolConnection<Sqlite>>) {
    transaction(lane, conn, move |db| trim(db, most)).await
}

/// `step` in a write transaction of its own, on the lane ([`run`]): a step of a file's fold.
async fn transaction<T: Send + 'static>(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    step: impl FnOnce(&Connection) -> Result<T, Refused> + Send + 'static,
) -> (Result<T, Refused>, Option<PoolConnection<Sqlite>>) {
    run(lane, conn, true, move |db| {
        db.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        let done = step(db)?;
        db.prepare_cached("COMMIT")?.execute([])?;
        Ok(done)
    })
    .await
}

/// Folds at most `most` of the journal's rows in one transaction ([`fold`]) on `conn`'s
/// handle ([`run`]): an in-memory database's fold (`conn` is the database, never closed).
pub(super) async fn fold_some(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    most: i64,
) -> (Result<(u64, i64), Refused>, Option<PoolConnection<Sqlite>>) {
    run(lane, conn, false, move |db| fold(db, most)).await
}

/// The thread that runs the store's raw writes ([`run`]): one per store, so that the
/// serial part of every write is on one thread, whose time a profile can tell apart. It
/// ends once the store is gone (its last clone dropped).
///
/// For a database file the thread writes through a connection of its own ([`Own`]), with
/// its prepared statements kept from one group to the next; the caller still holds the
/// write pool's one connection meanwhile, so that nothing else of the store writes at the
/// same time (the pool is the store's order of writes). Borrowing the pool connection's
/// handle instead ([`sqlx::sqlite::SqliteConnection::lock_handle`]) costs two wake-ups of
/// sqlx's thread per group, one of them before the group can begin, and prepares every
/// statement again: at a human pace, where a group is one or two moves, those wake-ups are
/// a good part of a move's round trip (docs/performance.md). In memory, the pool's one
/// connection is the database, so its handle is borrowed.
///
/// The thread runs a runtime of its own (tokio's, one thread). A file's store has the
/// process's [`crate::Writer`] run there too ([`Lane::writer_home`]): its groups are then
/// written where it runs, with no hand-off to another thread and back, and it never waits
/// behind the tasks of the tables that wake up in a burst on the server's runtime. Under
/// 10,000 players those hand-offs waited for a core 2-6 ms at a time (docs/performance.md).
#[derive(Clone, Debug)]
pub(super) struct Lane(std::sync::Arc<LaneThread>);

#[derive(Debug)]
struct LaneThread {
    /// The thread's runtime, where other threads' writes go as tasks.
    runtime: tokio::runtime::Handle,
    thread: std::thread::ThreadId,
    /// A database file (the lane has its own connection).
    file: bool,
    /// Dropped with the last clone of the lane: the thread then ends.
    _alive: tokio::sync::oneshot::Sender<()>,
}

std::thread_local! {
    /// The lane's connection, on the lane's thread.
    static OWN: std::cell::RefCell<Option<Own>> = const { std::cell::RefCell::new(None) };
}

/// The lane's own connection to a database file (none in memory).
pub(super) struct Own {
    /// The file, with the settings of the write pool's connection.
    file: Option<std::path::PathBuf>,
    /// Opened at the first write, again after one that could not roll back.
    db: Option<Connection>,
    /// The store is closed: the connection too, for good (so that the pool's connection,
    /// closed last, checkpoints the WAL and removes it).
    closed: bool,
}

/// How long the lane's connection waits for another process's write (as the pool's).
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Own {
    /// The file's connection, opened with the write pool's settings (`sqlite.rs`).
    fn connection(&mut self) -> Result<Option<&Connection>, Refused> {
        let Some(file) = &self.file else {
            return Ok(None);
        };
        if self.closed {
            return Err(Refused::Store(StoreError::Unavailable(
                "the SQLite store is closed".into(),
            )));
        }
        if self.db.is_none() {
            use rusqlite::OpenFlags;
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let db = Connection::open_with_flags(file, flags)?;
            db.busy_timeout(BUSY_TIMEOUT)?;
            // Durable on COMMIT (the WAL fsynced), as the pool's connection; the journal
            // mode is the file's, set to WAL by that connection when the store opened.
            db.execute_batch(
                "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; \
                 PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536;",
            )?;
            db.pragma_update(None, "wal_autocheckpoint", super::CHECKPOINT_FALLBACK_PAGES)?;
            let mode: String = db.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(Refused::Store(StoreError::Corrupt(format!(
                    "the SQLite file's journal mode is {mode}, not WAL"
                ))));
            }
            db.set_prepared_statement_cache_capacity(64);
            self.db = Some(db);
        }
        Ok(self.db.as_ref())
    }
}

impl Lane {
    /// The thread of a store of `file` (its own connection), or in memory (`None`).
    pub fn start(file: Option<std::path::PathBuf>) -> std::io::Result<Lane> {
        let (alive, gone) = tokio::sync::oneshot::channel::<()>();
        let is_file = file.is_some();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        // The runtime goes to the thread once it exists: were it moved into the closure, a
        // thread that could not be started would drop it here, in async code, which panics.
        let (give, take) = std::sync::mpsc::sync_channel::<tokio::runtime::Runtime>(1);
        let started = std::thread::Builder::new()
            .name("fib-sqlite-write".into())
            .spawn(move || {
                let Ok(runtime) = take.recv() else { return };
                batch_class();
                // Set before the runtime runs anything: every job finds it.
                OWN.with_borrow_mut(|own| {
                    *own = Some(Own {
                        file,
                        db: None,
                        closed: false,
                    })
                });
                // Until the store is gone (the writer's task, which holds it, included).
                runtime.block_on(async {
                    let _ = gone.await;
                });
                drop(runtime);
                OWN.with_borrow_mut(|own| *own = None);
            });
        let thread = match started {
            Ok(thread) => thread,
            Err(e) => {
                // Dropped without waiting for anything: allowed in async code.
                runtime.shutdown_background();
                return Err(e);
            }
        };
        // The channel has room for it and the thread waits for it: this never blocks.
        if let Err(std::sync::mpsc::SendError(runtime)) = give.send(runtime) {
            runtime.shutdown_background();
            return Err(std::io::Error::other(
                "the SQLite write thread ended at its start",
            ));
        }
        Ok(Lane(std::sync::Arc::new(LaneThread {
            runtime: handle,
            thread: thread.thread().id(),
            file: is_file,
            _alive: alive,
        })))
    }

    /// Where the process's writer task should run: the lane's runtime, for a database
    /// file. In memory, writes borrow the pool connection's handle from sqlx's thread,
    /// which the lane awaits: the writer stays on the caller's runtime.
    pub fn writer_home(&self) -> Option<tokio::runtime::Handle> {
        self.0.file.then(|| self.0.runtime.clone())
    }

    /// Runs `task` on the lane's thread, in its runtime (a file's folder: `sqlite.rs`).
    pub fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        drop(self.0.runtime.spawn(task));
    }

    /// On the lane's own thread (a file's writer task, [`Lane::writer_home`]).
    pub fn here(&self) -> bool {
        self.0.file && std::thread::current().id() == self.0.thread
    }

    /// Closes the lane's own connection for good, once the writes before have ended.
    pub async fn close(&self) {
        let close = || {
            OWN.with_borrow_mut(|own| {
                if let Some(own) = own.as_mut() {
                    own.closed = true;
                    own.db = None;
                }
            })
        };
        if self.here() {
            close();
            return;
        }
        let _ = self.0.runtime.spawn(async move { close() }).await;
    }
}

/// Puts the calling thread, the write thread, in Linux's batch scheduling class
/// (`SCHED_BATCH`): the same share of the cores as any thread, but its wake-ups do not
/// preempt the thread running on a busy core. The write thread is woken by every action a
/// table hands it; where a core is idle it starts there at once, as before, but where
/// every core is busy it used to preempt the table tasks' thread at each action and
/// commit groups of one or two, each paying a commit and two more switches. It now
/// starts when that thread sleeps or its time slice ends, with the group that has queued
/// meanwhile. Measured (docs/performance.md): everything on one core, 20-35 % more moves
/// per second in the core benchmark and half the context switches per move; on two cores
/// and at a human pace, the same rates and latencies, in turns with the normal class.
///
/// Only at nice 0: the crate sets the nice value along with the class, and a server that
/// an operator started at another one keeps the normal class rather than lose it.
#[cfg(target_os = "linux")]
fn batch_class() {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
        thread_native_id,
    };
    let nice = thread_stat(&[NICE]).map(|f| f[0]);
    if nice != Some(0) {
        tracing::debug!(
            ?nice,
            "the SQLite write thread keeps the normal scheduling class"
        );
        return;
    }
    if let Err(e) = set_thread_priority_and_policy(
        thread_native_id(),
        // Nice 0, as it is.
        thread_priority::ThreadPriority::Os(Default::default()),
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
    ) {
        tracing::warn!(error = ?e, "the SQLite write thread keeps the normal scheduling class");
    }
}

#[cfg(not(target_os = "linux"))]
fn batch_class() {}

/// Fields of `/proc/thread-self/stat` ([`thread_stat`]), numbered as in proc(5).
pub(super) const NICE: usize = 19;
/// The scheduling policy: 0 normal, 3 batch.
#[cfg(test)]
pub(super) const POLICY: usize = 41;

/// The calling thread's `/proc/thread-self/stat` fields `fields` (numbered from 1 as in
/// proc(5), from the state, the 3rd, on: the name before it may hold spaces); `None` where
/// there is no such file (not Linux) or a field is missing.
pub(super) fn thread_stat(fields: &[usize]) -> Option<Vec<i64>> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    fields
        .iter()
        .map(|&f| rest.get(f.checked_sub(3)?)?.parse().ok())
        .collect()
}

/// Runs `write` and ends its transaction: `Ok`, or the error with the transaction rolled
/// back (a panic too); `broken` when it could not be rolled back.
fn ended<T>(
    db: &Connection,
    write: impl FnOnce(&Connection) -> Result<T, Refused>,
) -> (Result<T, Refused>, bool) {
    // A panic must not leave the transaction open on a connection that writes on: it is
    // rolled back like any failure.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(db)))
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Refused::Store(StoreError::Panicked(message)))
        });
    let broken = result.is_err() && !db.is_autocommit() && db.execute_batch("ROLLBACK").is_err();
    (result, broken)
}

/// Runs `write` on `conn`'s handle (the write pool's one connection), on the store's
/// [`Lane`], where the caller cannot cancel it: the transaction that `write` begins always ends (committed, or rolled back
/// on an error or a panic) before `conn` goes back to its pool. A connection that cannot
/// roll back is closed (unless `may_close` is false: in memory, the connection is the
/// database).
async fn run<T: Send + 'static>(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
    may_close: bool,
    write: impl FnOnce(&Connection) -> Result<T, Refused> + Send + 'static,
) -> (Result<T, Refused>, Option<PoolConnection<Sqlite>>) {
    if lane.here() {
        // The writer's task, on the lane's thread: written here and now, in one poll.
        return match on_own(conn, write) {
            Ok(done) => done,
            Err((conn, _)) => (Err(gone()), Some(conn)),
        };
    }
    let (answer, answered) = tokio::sync::oneshot::channel();
    // On the lane's runtime, where nothing cancels it once begun. A connection dropped
    // there (the answer's receiver gone, or closed) goes back to its pool through that
    // runtime (a task sqlx spawns).
    let job = async move {
        let done = match on_own(conn, write) {
            Ok(done) => done,
            Err((conn, write)) => borrowed(conn, may_close, write).await,
        };
        let _ = answer.send(done);
    };
    drop(lane.0.runtime.spawn(job));
    match answered.await {
        Ok(done) => done,
        // The lane's runtime is gone, and the job (with the connection) dropped.
        Err(_) => (Err(gone()), None),
    }
}

fn gone() -> Refused {
    Refused::Store(thread_gone())
}

/// What a write hears when the lane's thread (and its runtime) ended before it did.
pub(super) fn thread_gone() -> StoreError {
    StoreError::Unavailable("the SQLite write thread is gone".into())
}

/// On the lane's thread: `write` through the lane's own connection (a file), while `conn`
/// is held (nothing else writes); `conn` and `write` back in memory, which has none.
#[allow(clippy::type_complexity)]
fn on_own<T, W: FnOnce(&Connection) -> Result<T, Refused>>(
    conn: PoolConnection<Sqlite>,
    write: W,
) -> Result<(Result<T, Refused>, Option<PoolConnection<Sqlite>>), (PoolConnection<Sqlite>, W)> {
    OWN.with_borrow_mut(|own| {
        let Some(own) = own.as_mut() else {
            return Ok((Err(gone()), Some(conn)));
        };
        match own.connection() {
            Ok(Some(db)) => {
                let (result, broken) = ended(db, write);
                if broken {
                    // Opened afresh for the next group: closing this one rolls back.
                    own.db = None;
                }
                Ok((result, Some(conn)))
            }
            Ok(None) => Err((conn, write)),
            Err(e) => Ok((Err(e), Some(conn))),
        }
    })
}

/// In memory, on the lane's runtime: `write` through `conn`'s own handle, which sqlx's
/// thread lends meanwhile.
async fn borrowed<T>(
    mut conn: PoolConnection<Sqlite>,
    may_close: bool,
    write: impl FnOnce(&Connection) -> Result<T, Refused>,
) -> (Result<T, Refused>, Option<PoolConnection<Sqlite>>) {
    let (result, broken) = 'borrowed: {
        let mut locked = match conn.lock_handle().await {
            Ok(locked) => locked,
            Err(e) => break 'borrowed (Err(Refused::Store(e.into())), false),
        };
        let handle = locked.as_raw_handle().as_ptr();
        // SAFETY: `locked` guarantees that sqlx's thread makes no call on this handle or
        // its statements until it is dropped, after `db`; `from_handle` does not own the
        // handle (dropping `db` finalizes only the statements made here and leaves the
        // connection open); and the handle is used from this one thread meanwhile (SQLite
        // allows a connection to move between threads).
        #[allow(unsafe_code)]
        let db = match unsafe { Connection::from_handle(handle) } {
            Ok(db) => db,
            Err(e) => break 'borrowed (Err(e.into()), false),
        };
        ended(&db, write)
    };
    if broken && may_close {
        // Closed as it is dropped here (its pool opens another), never kept.
        conn.close_on_drop();
        return (result, None);
    }
    (result, Some(conn))
}

/// The connection the lane writes through, as `(journal_mode, synchronous, foreign_keys,
/// busy_timeout ms, whether it sees the temporary table `probe`)`: the last is true only
/// on the write pool's own connection, where a test made it.
#[cfg(test)]
pub(super) async fn settings(
    lane: &Lane,
    conn: PoolConnection<Sqlite>,
) -> Result<(String, i64, i64, i64, bool), Refused> {
    run(lane, conn, false, |db| {
        let get = |sql: &str| -> rusqlite::Result<i64> { db.query_row(sql, [], |r| r.get(0)) };
        let journal: String = db.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let probe = get("SELECT count(*) FROM temp.sqlite_master WHERE name = 'probe'")?;
        Ok((
            journal,
            get("PRAGMA synchronous")?,
            get("PRAGMA foreign_keys")?,
            get("PRAGMA busy_timeout")?,
            probe == 1,
        ))
    })
    .await
    .0
}
