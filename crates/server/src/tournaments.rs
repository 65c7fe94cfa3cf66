//! Tournaments on this server (#31, docs/tournaments.md "Playing one on this server"): the
//! director, which runs the pure engine of `crates/tournament` against real tables, and
//! what the HTTP handlers share with it (creating, loading and stepping a tournament).
//!
//! A tournament is a row (`store::TournamentRecord`): its settings, the engine's whole
//! state as JSON, and a version. Every input (a join, a withdrawal, the start, a result,
//! an absence, an arena's tick) is a **step**: load the state, apply the input, and store
//! the new state over the version it was computed from, in one transaction with the
//! tables the step paired (engine table → a real table id chosen then). A step that lost
//! the race is computed again from the newer state; a refused input stores nothing.
//!
//! The **director** of a tournament is the node that claimed it (`claim_tournaments`,
//! like a table: the lease of a dead node's tournaments runs out with the node's, and the
//! claim raises the tournament's epoch). Only the director starts it, creates its tables,
//! learns their results and ticks an arena, and its steps are stored only while it holds
//! its epoch (fencing): a node that lost the tournament can never act for it again. Other
//! nodes store joins and withdrawals (plain versioned steps). The director acts only on
//! what is stored: it creates a paired table after the step that paired it is durable,
//! under the id the step chose, so after a crash it creates the ones still missing and
//! never one twice; it learns results by reading the finished tables from the store.

use std::collections::HashMap;
use std::time::Duration;

use protocol::{
    CreateTournamentRequest, Pace, TournamentGame, TournamentInfo, TournamentKind,
    TournamentStanding, TournamentSummary,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{
    Occupant, TableRecord, TableStatus, TournamentRecord, TournamentStatus, TournamentStep,
};
use tournament::{Config as EngineConfig, Effect, Kind, TableId, Tournament, TournamentError};
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::{AppState, now_ms};
use realtime::table::{Cmd, Who};

/// How often the director looks at its tournaments when nothing wakes it (and an arena's
/// tick).
pub const TICK: Duration = Duration::from_secs(1);

/// The default pace of a tournament's tables: strangers need a clock.
pub const PACE: Pace = Pace::Live {
    move_s: 30,
    bank_s: 300,
};

/// The level of the bot that stands in for a player who ran out of time or left.
const STAND_IN: &str = "normal";

/// A tournament with no start time (`start_when` only) still short of players this long
/// after its creation is cancelled (`expired`).
pub const EXPIRES_AFTER_MS: i64 = 7 * 86_400_000;

/// The server's settings of a tournament (`tournaments.config`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settings {
    pub engine: EngineConfig,
    pub kind: TournamentKind,
    pub options: Value,
    pub pace: Pace,
    pub bots_allowed: bool,
    pub start_when: Option<u32>,
}

/// A tournament as stored, read.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub record: TournamentRecord,
    pub settings: Settings,
    pub engine: Tournament,
}

impl Loaded {
    pub fn from_record(record: TournamentRecord) -> Result<Self, ApiError> {
        let settings = serde_json::from_value(record.config.clone()).map_err(|e| {
            tracing::error!(tournament = %record.id, error = %e, "stored settings do not parse");
            ApiError::Internal
        })?;
        let engine = serde_json::from_value(record.state.clone()).map_err(|e| {
            tracing::error!(tournament = %record.id, error = %e, "stored state does not parse");
            ApiError::Internal
        })?;
        Ok(Loaded {
            record,
            settings,
            engine,
        })
    }
}

/// Reads a tournament: 404 `tournament_not_found` when there is none.
pub async fn load(app: &AppState, id: Uuid) -> Result<Loaded, ApiError> {
    match app.store.tournament(id).await? {
        Some(r) => Loaded::from_record(r),
        None => Err(ApiError::TournamentNotFound(id.to_string())),
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::BadTournament("bad_tournament", msg.into())
}

/// The engine's refusal as the client sees it: 409 with the engine's code.
pub fn refused(e: TournamentError) -> ApiError {
    match e {
        TournamentError::BadConfig(m) => bad(m),
        e => ApiError::Conflict(e.code(), e.to_string()),
    }
}

/// Checks a request and makes the tournament it asks for (not stored yet). `by`: the
/// creator (`None`: the operator's schedule).
pub fn plan(
    req: &CreateTournamentRequest,
    by: Option<Uuid>,
    now: i64,
) -> Result<TournamentRecord, ApiError> {
    let Some(info) = games::catalogue().into_iter().find(|g| g.kind == req.game) else {
        return Err(ApiError::BadTournament(
            "unknown_game",
            format!("no game {:?}", req.game),
        ));
    };
    let size = req.table_size;
    if size < info.min_players || size > info.max_players {
        return Err(bad(format!(
            "table_size must be within {}–{} for {}",
            info.min_players, info.max_players, info.kind
        )));
    }
    let min = req.min_table_size.unwrap_or(size);
    if min > size || min < info.min_players.max(if size == 1 { 1 } else { 2 }) {
        return Err(bad(format!(
            "min_table_size must be within {}–{size}",
            info.min_players.max(if size == 1 { 1 } else { 2 })
        )));
    }
    let options = games::check_options(&req.game, &req.options, size)
        .map_err(|e| ApiError::BadTournament(e.code(), e.to_string()))?;
    let kind = match req.kind {
        TournamentKind::Swiss { rounds } => {
            if !(1..=30).contains(&rounds) {
                return Err(bad("a Swiss has 1 to 30 rounds"));
            }
            Kind::Swiss { rounds }
        }
        TournamentKind::Arena {
            duration_s,
            stop_pairing_before_s,
        } => {
            if !(60..=86_400).contains(&duration_s) {
                return Err(bad("an arena lasts 60 s to 24 h (duration_s)"));
            }
            let stop = stop_pairing_before_s.unwrap_or_else(|| default_cutoff_s(duration_s));
            if stop >= duration_s {
                return Err(bad("stop_pairing_before_s must be shorter than duration_s"));
            }
            Kind::Arena {
                duration_ms: duration_s * 1000,
                stop_pairing_before_ms: stop * 1000,
            }
        }
    };
    if let Some(at) = req.starts_at
        && (at < now - 60_000 || at > now + 30 * 86_400_000)
    {
        return Err(bad("starts_at must be from now to 30 days ahead (Unix ms)"));
    }
    if let Some(n) = req.start_when
        && !(2..=512).contains(&n)
    {
        return Err(bad("start_when must be 2 to 512 players"));
    }
    if req.starts_at.is_none() && req.start_when.is_none() {
        return Err(bad("say when it starts: starts_at, start_when, or both"));
    }
    let pace = req.pace.unwrap_or(PACE);
    pace.validate().map_err(bad)?;
    let name = match &req.name {
        Some(n) => {
            // A tournament's name is listed to everyone: it follows the rule of names
            // (no invisible or stacked characters that could make it pass for another's or
            // draw over the list), with room for 60 characters.
            let n = protocol::text::check(
                n,
                protocol::text::Field {
                    max_chars: 60,
                    emoji_joiners: false,
                },
            )
            .map_err(|e| bad(e.describe("a tournament's name")))?;
            n.to_string()
        }
        None => format!(
            "{} {}",
            info.title,
            match req.kind {
                TournamentKind::Swiss { .. } => "Swiss",
                TournamentKind::Arena { .. } => "arena",
            }
        ),
    };
    let engine_config = EngineConfig {
        kind,
        game: req.game.clone(),
        table_size: size,
        min_table_size: min,
        rated: req.rated,
        seed: u64::from_str_radix(&realtime::random_hex(8), 16).expect("hex"),
    };
    let engine = Tournament::new(engine_config.clone(), (info.min_players, info.max_players))
        .map_err(refused)?;
    let settings = Settings {
        engine: engine_config,
        kind: req.kind.clone(),
        options,
        pace,
        bots_allowed: req.bots_allowed,
        start_when: req.start_when,
    };
    Ok(TournamentRecord {
        id: Uuid::new_v4(),
        name,
        game: req.game.clone(),
        status: TournamentStatus::Registration,
        private: req.private,
        invite_code: req.private.then(|| realtime::random_hex(12)),
        rated: req.rated,
        created_by: by,
        created_at: now,
        starts_at: req.starts_at,
        config: serde_json::to_value(&settings).expect("settings serialize"),
        state: serde_json::to_value(&engine).expect("a tournament serializes"),
        version: 0,
        schedule_key: None,
        updated_at: now,
        cancelled: None,
    })
}

/// Why a step was not stored.
#[derive(Debug)]
pub enum StepError {
    /// The engine refused the input: nothing changed.
    Refused(TournamentError),
    /// The director no longer holds the tournament.
    Lost,
    /// The tournament was cancelled: nothing more happens in it.
    Cancelled,
    Api(ApiError),
}

impl From<ApiError> for StepError {
    fn from(e: ApiError) -> Self {
        StepError::Api(e)
    }
}

impl From<store::StoreError> for StepError {
    fn from(e: store::StoreError) -> Self {
        StepError::Api(e.into())
    }
}

impl From<StepError> for ApiError {
    fn from(e: StepError) -> Self {
        match e {
            StepError::Refused(e) => refused(e),
            StepError::Lost => ApiError::Unavailable(
                "tournament_moving",
                "the tournament is changing servers: try again".into(),
            ),
            StepError::Cancelled => cancelled_error(),
            StepError::Api(e) => e,
        }
    }
}

/// 409 `tournament_cancelled`.
pub fn cancelled_error() -> ApiError {
    ApiError::Conflict(
        "tournament_cancelled",
        "this tournament was cancelled before it started".into(),
    )
}

/// Cancels a tournament that has not started, for `reason` (see
/// `protocol::TournamentSummary::cancelled`): `false` when it had started, ended or was
/// cancelled already (nothing changed). Its followers are told.
pub async fn cancel(app: &AppState, id: Uuid, reason: &str) -> Result<bool, ApiError> {
    if !app.store.cancel_tournament(id, reason, now_ms()).await? {
        return Ok(false);
    }
    tracing::info!(tournament = %id, reason, "tournament cancelled");
    let _ = app.tournament_feed.send(id);
    app.tournament_wake.notify_one();
    Ok(true)
}

/// Applies `input` to the stored tournament and stores the result over the version it
/// was computed from (again from the newer state when another step came first). With
/// `fence`, only while that node holds that epoch. Returns the tournament after the step
/// and its effects; a step that changed nothing stores nothing.
pub async fn step<F>(
    app: &AppState,
    id: Uuid,
    fence: Option<(String, i64)>,
    mut input: F,
) -> Result<(Loaded, Vec<Effect>), StepError>
where
    F: FnMut(&mut Tournament, &Settings, u64) -> Result<Vec<Effect>, TournamentError>,
{
    for _ in 0..20 {
        let mut l = load(app, id).await?;
        if l.record.cancelled.is_some() {
            return Err(StepError::Cancelled);
        }
        let now = now_ms();
        let before = l.record.state.clone();
        let effects = input(&mut l.engine, &l.settings, now as u64).map_err(StepError::Refused)?;
        let state = serde_json::to_value(&l.engine).expect("a tournament serializes");
        if effects.is_empty() && state == before {
            return Ok((l, effects));
        }
        let tables: Vec<(u32, Uuid, i32)> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::CreateTable { table, round, .. } => {
                    Some((table.0, Uuid::new_v4(), *round as i32))
                }
                _ => None,
            })
            .collect();
        let status = match l.engine.phase() {
            tournament::Phase::Registration => TournamentStatus::Registration,
            tournament::Phase::Running => TournamentStatus::Running,
            tournament::Phase::Finished => TournamentStatus::Finished,
        };
        let s = TournamentStep {
            id,
            version: l.record.version,
            fence: fence.clone(),
            status,
            state: state.clone(),
            tables,
            now,
        };
        if app.store.save_tournament(&s).await? {
            l.record.version += 1;
            l.record.state = state;
            l.record.status = status;
            l.record.updated_at = now;
            let _ = app.tournament_feed.send(id);
            app.tournament_wake.notify_one();
            return Ok((l, effects));
        }
        if let Some((node, epoch)) = &fence {
            let owner = app.store.tournament_owner(id).await?;
            if owner != Some((Some(node.clone()), *epoch)) {
                return Err(StepError::Lost);
            }
        }
    }
    tracing::warn!(tournament = %id, "a step lost the race 20 times");
    Err(StepError::Api(ApiError::Unavailable(
        "busy",
        "the tournament is busy: try again".into(),
    )))
}

/// A player's rating for pairing and tie-breaks: the conservative rating in the pool the
/// tournament's games are rated in (0 without one).
pub async fn rating_of(app: &AppState, player: Uuid, game: &str, size: usize, bot: bool) -> f64 {
    use store::rating::Pool;
    let pool = if bot {
        Pool::Bots
    } else if size == 2 {
        Pool::Duel
    } else {
        Pool::Multi
    };
    match app.store.player_ratings(player).await {
        Ok(rs) => rs
            .iter()
            .find(|r| r.game == game && r.pool == pool)
            .map_or(0.0, |r| r.conservative),
        Err(_) => 0.0,
    }
}

// ---- what clients are shown ----

/// Refuses a private tournament to whoever has neither its code nor a place in it (403
/// `invite_required`).
pub fn may_see(l: &Loaded, me: Option<Uuid>, invite: Option<&str>) -> Result<(), ApiError> {
    if !l.record.private {
        return Ok(());
    }
    let member = me.is_some_and(|m| l.engine.player(m).is_some() || l.record.created_by == Some(m));
    if member || (invite.is_some() && invite == l.record.invite_code.as_deref()) {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "invite_required",
            "this tournament is private: open it through its invite link".into(),
        ))
    }
}

fn status_str(s: TournamentStatus) -> &'static str {
    s.as_str()
}

/// An arena's pairing cutoff when none is asked: a tenth of its duration.
fn default_cutoff_s(duration_s: u64) -> u64 {
    duration_s / 10
}

/// A kind as shown: an arena's pairing cutoff as the server applies it
/// ([`default_cutoff_s`] when none was asked), where `null` left players to guess when
/// pairing stops.
pub fn with_defaults(kind: &TournamentKind) -> TournamentKind {
    match *kind {
        TournamentKind::Arena {
            duration_s,
            stop_pairing_before_s: None,
        } => TournamentKind::Arena {
            duration_s,
            stop_pairing_before_s: Some(default_cutoff_s(duration_s)),
        },
        ref k => k.clone(),
    }
}

/// A tournament as lists show it; the invite code only to its creator.
pub fn summary(l: &Loaded, me: Option<Uuid>) -> TournamentSummary {
    let r = &l.record;
    TournamentSummary {
        id: r.id,
        name: r.name.clone(),
        game: r.game.clone(),
        kind: with_defaults(&l.settings.kind),
        table_size: l.settings.engine.table_size,
        min_table_size: l.settings.engine.min_table_size,
        status: if r.cancelled.is_some() {
            "cancelled".to_string()
        } else {
            status_str(r.status).to_string()
        },
        cancelled: r.cancelled.clone(),
        private: r.private,
        rated: r.rated,
        bots_allowed: l.settings.bots_allowed,
        pace: l.settings.pace,
        starts_at: r.starts_at,
        start_when: l.settings.start_when,
        players: l.engine.players().len(),
        round: l.engine.round(),
        created_by: r.created_by,
        created_at: r.created_at,
        invite_code: r
            .invite_code
            .clone()
            .filter(|_| me.is_some() && me == r.created_by),
    }
}

fn player_status(s: tournament::PlayerStatus) -> &'static str {
    match s {
        tournament::PlayerStatus::Active => "active",
        tournament::PlayerStatus::Withdrawn => "withdrawn",
        tournament::PlayerStatus::Dropped => "dropped",
        tournament::PlayerStatus::Paused => "paused",
    }
}

/// A tournament in full: standings with names, every game with its real table.
pub async fn info(
    app: &AppState,
    l: &Loaded,
    me: Option<Uuid>,
) -> Result<TournamentInfo, ApiError> {
    let swiss = matches!(l.settings.engine.kind, Kind::Swiss { .. });
    let per_point = if swiss {
        f64::from(tournament::points::TICKS_PER_POINT)
    } else {
        1.0
    };
    let mut standings = Vec::new();
    for s in l.engine.standings() {
        let name = app
            .store
            .player(s.player)
            .await?
            .map(|p| p.name)
            .unwrap_or_default();
        standings.push(TournamentStanding {
            rank: s.rank,
            player: s.player,
            name,
            score: s.score,
            buchholz: s.buchholz as f64 / 576.0,
            sonneborn_berger: s.sonneborn_berger as f64 / 576.0,
            performance: s.performance,
            games: s.games,
            wins: s.wins,
            draws: s.draws,
            losses: s.losses,
            byes: s.byes,
            streak: s.streak,
            status: player_status(s.status).to_string(),
        });
    }
    let real: HashMap<u32, Uuid> = app
        .store
        .tournament_tables(l.record.id)
        .await?
        .into_iter()
        .map(|t| (t.engine_table, t.table))
        .collect();
    let games = l
        .engine
        .tables()
        .iter()
        .filter_map(|t| {
            let table_id = *real.get(&t.id.0)?;
            let (state, points) = match &t.state {
                tournament::TableState::Playing => ("playing", None),
                tournament::TableState::Finished { points, .. } => (
                    "finished",
                    Some(points.iter().map(|&p| f64::from(p) / per_point).collect()),
                ),
                tournament::TableState::Uncounted => ("uncounted", None),
            };
            Some(TournamentGame {
                round: t.round,
                table_id,
                players: t.players.clone(),
                state: state.to_string(),
                points,
            })
        })
        .collect();
    let podium = if l.engine.phase() == tournament::Phase::Finished {
        l.engine
            .standings()
            .iter()
            .take(3)
            .map(|s| s.player)
            .collect()
    } else {
        Vec::new()
    };
    Ok(TournamentInfo {
        summary: summary(l, me),
        started_at: l.engine.started_at().map(|t| t as i64),
        finished_at: l.engine.finished_at().map(|t| t as i64),
        ends_at: l.engine.ends_at().map(|t| t as i64),
        standings,
        games,
        podium,
    })
}

// ---- the operator's schedule ----

/// A recurring event of the operator's schedule (`--tournaments-file`, a JSON array of
/// these). An occurrence starts every `every_minutes` minutes, `offset_minutes` after
/// each multiple of it since the Unix epoch (UTC): every hour at :00 is `60` and `0`, every
/// day at 18:30 UTC `1440` and `1110`. It is created `announce_minutes` before its start
/// (default 30), once, whichever node's director gets there first.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scheduled {
    /// Names the event: its occurrences are `KEY@<start ms>`.
    pub key: String,
    pub every_minutes: u64,
    #[serde(default)]
    pub offset_minutes: u64,
    #[serde(default = "announce")]
    pub announce_minutes: u64,
    /// The tournament, as `POST /api/tournaments` takes it (`starts_at` is set to each
    /// occurrence's start).
    pub tournament: CreateTournamentRequest,
}

fn announce() -> u64 {
    30
}

impl Scheduled {
    /// The start (Unix ms) of the first occurrence at or after `now`.
    pub fn next_start(&self, now: i64) -> i64 {
        let every = self.every_minutes as i64 * 60_000;
        let offset = self.offset_minutes as i64 * 60_000;
        let k = (now - offset + every - 1).div_euclid(every);
        k * every + offset
    }
}

/// Reads and checks the operator's schedule: every event must make a valid tournament.
pub fn read_schedule(path: &std::path::Path) -> Result<Vec<Scheduled>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_schedule(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`read_schedule`] of a text.
pub fn parse_schedule(text: &str) -> Result<Vec<Scheduled>, String> {
    let events: Vec<Scheduled> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut keys = std::collections::HashSet::new();
    for e in &events {
        if e.key.is_empty() || e.key.contains('@') || !keys.insert(e.key.clone()) {
            return Err(format!(
                "event key {:?}: empty, with '@', or repeated",
                e.key
            ));
        }
        if !(1..=43_200).contains(&e.every_minutes) || e.offset_minutes >= e.every_minutes {
            return Err(format!(
                "event {}: every_minutes must be 1 to 43200 and offset_minutes below it",
                e.key
            ));
        }
        if e.announce_minutes > 7 * 1440 {
            return Err(format!("event {}: announce_minutes at most a week", e.key));
        }
        let mut req = e.tournament.clone();
        req.starts_at = Some(now_ms() + 60_000);
        plan(&req, None, now_ms()).map_err(|err| format!("event {}: {err}", e.key))?;
    }
    Ok(events)
}

/// Creates the occurrences of the schedule due to be announced now (each once: its key
/// is unique in the store).
async fn create_scheduled(app: &AppState, events: &[Scheduled]) -> Result<(), ApiError> {
    let now = now_ms();
    for e in events {
        let start = e.next_start(now);
        if start - now > e.announce_minutes as i64 * 60_000 {
            continue;
        }
        let mut req = e.tournament.clone();
        req.starts_at = Some(start);
        let mut record = plan(&req, None, now)?;
        record.schedule_key = Some(format!("{}@{start}", e.key));
        match app.store.create_tournament(&record).await {
            Ok(()) => {
                tracing::info!(tournament = %record.id, event = %e.key, start, "scheduled tournament created");
            }
            // Made already (by this node or another).
            Err(store::StoreError::Conflict(_)) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// Cancels (`unscheduled`) the occurrences still in registration of events no longer in
/// the operator's schedule: run once at start-up, when the server has a tournaments file.
async fn cancel_unscheduled(app: &AppState, events: &[Scheduled]) -> Result<(), ApiError> {
    let keys: std::collections::HashSet<&str> = events.iter().map(|e| e.key.as_str()).collect();
    for r in app
        .store
        .tournaments(Some(TournamentStatus::Registration), 10_000)
        .await?
    {
        let Some(event) = r.schedule_key.as_deref().and_then(|k| k.split('@').next()) else {
            continue;
        };
        if !keys.contains(event) {
            cancel(app, r.id, "unscheduled").await?;
        }
    }
    Ok(())
}

// ---- the director ----

/// Starts this node's director: every [`TICK`], or when woken, it claims the tournaments
/// no live node directs and runs each of its own one step further. It ends with the
/// server.
pub fn spawn_director(app: &AppState) {
    let weak = std::sync::Arc::downgrade(&app.0);
    let mut shutdown = app.shutdown.subscribe();
    // `None`: no tournaments file, or one that no longer reads (it was checked at
    // start-up): nothing is scheduled, and nothing is cancelled as unscheduled.
    let read = app
        .config
        .tournaments_file
        .as_ref()
        .and_then(|path| match read_schedule(path) {
            Ok(events) => Some(events),
            Err(e) => {
                tracing::error!(error = %e, "the tournaments file: no scheduled tournaments");
                None
            }
        });
    let has_schedule = read.is_some();
    let schedule = read.unwrap_or_default();
    app.background.spawn(async move {
        let mut owned: HashMap<Uuid, i64> = HashMap::new();
        let mut first = true;
        loop {
            let Some(inner) = weak.upgrade() else { break };
            let app = AppState(inner);
            if !app.core.draining() {
                if first
                    && has_schedule
                    && let Err(e) = cancel_unscheduled(&app, &schedule).await
                {
                    tracing::error!(error = ?e, "unscheduled tournaments");
                }
                if let Err(e) = create_scheduled(&app, &schedule).await {
                    tracing::error!(error = ?e, "scheduled tournaments");
                }
                if let Err(e) = pass(&app, &mut owned, first).await {
                    tracing::error!(error = %e, "tournament director");
                }
                first = false;
            }
            tokio::select! {
                _ = app.tournament_wake.notified() => {}
                _ = tokio::time::sleep(TICK) => {}
                _ = crate::state::stopping(&mut shutdown) => break,
            }
        }
    });
}

/// One pass of the director over the tournaments it holds.
async fn pass(
    app: &AppState,
    owned: &mut HashMap<Uuid, i64>,
    first: bool,
) -> Result<(), store::StoreError> {
    let node = app.cluster.node.clone();
    for (id, epoch) in app.store.claim_tournaments(&node, 100, first).await? {
        tracing::info!(tournament = %id, epoch, "directing a tournament");
        owned.insert(id, epoch);
    }
    let ids: Vec<(Uuid, i64)> = owned.iter().map(|(k, v)| (*k, *v)).collect();
    for (id, epoch) in ids {
        match direct(app, id, epoch).await {
            Ok(true) => {}
            Ok(false) => {
                owned.remove(&id);
            }
            Err(StepError::Lost) => {
                tracing::warn!(tournament = %id, "lost the tournament to another node");
                owned.remove(&id);
            }
            Err(StepError::Cancelled) => {
                owned.remove(&id);
            }
            Err(e) => tracing::error!(tournament = %id, error = ?e, "directing a tournament"),
        }
    }
    Ok(())
}

/// Whether a tournament in registration starts now: its time came (`starts_at`), or
/// `start_when` players have joined.
fn is_due(t: &Tournament, starts_at: Option<i64>, start_when: Option<u32>, now: i64) -> bool {
    starts_at.is_some_and(|at| at <= now)
        || start_when.is_some_and(|n| t.players().len() >= n as usize)
}

/// Starts a tournament in registration if it [`is_due`]; else changes nothing.
fn start_if_due(
    t: &mut Tournament,
    starts_at: Option<i64>,
    start_when: Option<u32>,
    now: u64,
) -> Result<Vec<Effect>, TournamentError> {
    if is_due(t, starts_at, start_when, now as i64) {
        t.start(now)
    } else {
        Ok(Vec::new())
    }
}

/// Runs one tournament one step further: `Ok(false)` when this node no longer directs it
/// (finished, or another node holds it).
async fn direct(app: &AppState, id: Uuid, epoch: i64) -> Result<bool, StepError> {
    let node = app.cluster.node.clone();
    let fence = Some((node.clone(), epoch));
    if app.store.tournament_owner(id).await? != Some((Some(node), epoch)) {
        return Err(StepError::Lost);
    }
    let mut l = load(app, id).await?;
    if l.record.cancelled.is_some() {
        return Ok(false);
    }
    if l.engine.phase() == tournament::Phase::Registration {
        let now = now_ms();
        let (starts_at, start_when) = (l.record.starts_at, l.settings.start_when);
        let time_came = starts_at.is_some_and(|at| at <= now);
        if !is_due(&l.engine, starts_at, start_when, now) {
            if l.record.starts_at.is_none() && now - l.record.created_at >= EXPIRES_AFTER_MS {
                cancel(app, id, "expired").await?;
                return Ok(false);
            }
            return Ok(true);
        }
        // Its start time came with fewer players than the smallest table: cancelled
        // (Swiss and arena alike), never left waiting.
        let active = l
            .engine
            .players()
            .iter()
            .filter(|p| p.status == tournament::PlayerStatus::Active)
            .count();
        if time_came && active < l.settings.engine.min_table_size {
            cancel(app, id, "too_few_players").await?;
            return Ok(false);
        }
        // Due again on the state the start is taken on: a withdrawal stored since the
        // snapshot above may have brought the players below `start_when` (a walk saw an
        // event for 4 start with 3 when two left as two others joined).
        let started = step(app, id, fence.clone(), |t, _, now| {
            start_if_due(t, starts_at, start_when, now)
        });
        match started.await {
            Ok((after, _)) => l = after,
            // `start_when` reached before its time with fewer than a table (a table size
            // above `start_when`): it waits for more, or for its time.
            Err(StepError::Refused(TournamentError::TooFewPlayers)) => return Ok(true),
            Err(StepError::Cancelled) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    if l.engine.phase() == tournament::Phase::Running {
        // Results of the tables that finished.
        let tables = app.store.tournament_tables(id).await?;
        let done: Vec<store::TournamentTable> = tables
            .into_iter()
            .filter(|mt| {
                matches!(
                    mt.status,
                    Some(TableStatus::Finished) | Some(TableStatus::Abandoned)
                ) && l
                    .engine
                    .table(TableId(mt.engine_table))
                    .is_some_and(|t| t.state == tournament::TableState::Playing)
            })
            .collect();
        if !done.is_empty() {
            let (after, _) = step(app, id, fence.clone(), |t, _, now| {
                let mut effects = Vec::new();
                for mt in &done {
                    report(t, mt, now, &mut effects);
                }
                Ok(effects)
            })
            .await?;
            l = after;
        }
        if matches!(l.engine.config().kind, Kind::Arena { .. }) {
            let (after, _) = step(app, id, fence.clone(), |t, _, now| Ok(t.tick(now))).await?;
            l = after;
        }
    }
    // Every paired table that is still to be played exists and is started.
    for mt in app.store.tournament_tables(id).await? {
        let Some(t) = l.engine.table(TableId(mt.engine_table)) else {
            continue;
        };
        if t.state != tournament::TableState::Playing {
            continue;
        }
        match mt.status {
            None => {
                if let Err(e) = open_table(app, &l, t, mt.table, true).await {
                    tracing::error!(tournament = %id, table = %mt.table, error = ?e, "could not create a tournament table");
                }
            }
            Some(TableStatus::Open) => {
                if let Err(e) = open_table(app, &l, t, mt.table, false).await {
                    tracing::error!(tournament = %id, table = %mt.table, error = ?e, "could not start a tournament table");
                }
            }
            _ => {}
        }
    }
    Ok(l.engine.phase() != tournament::Phase::Finished)
}

/// Feeds the engine a finished real table: absences for the seats that abandoned (all of
/// them if the table was abandoned unplayed), then the result if the table still counts.
fn report(t: &mut Tournament, mt: &store::TournamentTable, now: u64, effects: &mut Vec<Effect>) {
    let table = TableId(mt.engine_table);
    let Some(players) = t.table(table).map(|x| x.players.clone()) else {
        return;
    };
    let all_absent = mt.status == Some(TableStatus::Abandoned);
    // All at once: one by one, the first reported absent would hand the last a win
    // (a table abandoned unplayed is a forfeit for all at it, docs/tournaments.md).
    let gone: Vec<_> = players
        .iter()
        .enumerate()
        .filter(|(seat, _)| all_absent || mt.abandoned.get(*seat).copied().unwrap_or(false))
        .map(|(_, p)| *p)
        .collect();
    if !gone.is_empty() {
        match t.absent_together(&gone, table, now) {
            Ok(e) => effects.extend(e),
            Err(e) => tracing::debug!(%table, error = %e, "absence not counted"),
        }
    }
    if t.table(table)
        .is_some_and(|x| x.state == tournament::TableState::Playing)
    {
        let outcome = if all_absent || mt.scores.len() != players.len() {
            game_core::Outcome {
                winners: Vec::new(),
                scores: vec![0; players.len()],
            }
        } else {
            game_core::Outcome {
                winners: (0..players.len()).filter(|&s| mt.won[s]).collect(),
                scores: mt.scores.clone(),
            }
        };
        match t.report_result(table, &outcome, now) {
            Ok(e) => effects.extend(e),
            Err(e) => tracing::error!(%table, error = %e, "a result the engine refused"),
        }
    }
}

/// Creates (`create`) and starts the real table of an engine table, or starts one that
/// exists but is still open (a crash between the two).
async fn open_table(
    app: &AppState,
    l: &Loaded,
    t: &tournament::Table,
    id: Uuid,
    create: bool,
) -> Result<(), ApiError> {
    let mut seats = Vec::new();
    for p in &t.players {
        let name = app
            .store
            .player(*p)
            .await?
            .map(|p| p.name)
            .unwrap_or_else(|| "player".into());
        seats.push(Occupant::Player { id: *p, name });
    }
    let first = match &seats[0] {
        Occupant::Player { id, name } => Who {
            id: *id,
            name: name.clone(),
        },
        _ => unreachable!("every seat is a player"),
    };
    let handle = if create {
        let now = now_ms();
        let options = games::check_options(&l.record.game, &l.settings.options, seats.len())
            .map_err(|e| ApiError::BadTable(e.code(), e.to_string()))?;
        let record = TableRecord {
            id,
            game: l.record.game.clone(),
            options,
            rules_version: 0,
            seat_count: seats.len() as i32,
            private: false,
            invite_code: None,
            created_by: first.id,
            created_at: now,
            status: TableStatus::Open,
            bots: Some(STAND_IN.to_string()),
            daily: None,
            pace: serde_json::to_value(l.settings.pace).expect("a pace serializes"),
            clock: None,
            updated_at: now,
        };
        match app.core.create(record, seats).await {
            Ok(h) => h,
            Err(realtime::TableError::Exists) => {
                match realtime::table::open(&app.core, id).await? {
                    Some(h) => h,
                    None => return Ok(()),
                }
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        match realtime::table::open(&app.core, id).await? {
            Some(h) => h,
            None => return Ok(()),
        }
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    handle
        .send(Cmd::Start {
            who: first,
            reply: tx,
        })
        .await?;
    match rx.await.map_err(|_| ApiError::Internal)? {
        Ok(_) => {}
        Err(realtime::TableError::Conflict("already_started", _)) => {}
        Err(e) => return Err(e.into()),
    }
    tracing::info!(tournament = %l.record.id, table = %id, round = t.round, "tournament table started");
    // Its players' lobby sockets go there: this node's at once, the other nodes' through
    // a note (Postgres NOTIFY, as challenges travel).
    for (seat, p) in t.players.iter().enumerate() {
        let msg = protocol::LobbyMsg::TournamentGame {
            tournament: l.record.id,
            table: id,
            seat: seat as u8,
        };
        app.challenges.tell(*p, &msg);
        app.cluster.tell_player(*p, &msg);
    }
    let _ = app.tournament_feed.send(l.record.id);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start is decided on the state it is taken on: players that joined and then
    /// withdrew do not count towards `start_when`, whatever an earlier look saw.
    /// An arena is shown with the pairing cutoff the server applies (a walk saw `null`
    /// and could not tell when pairing stops); one asked for is shown as asked.
    #[test]
    fn an_arena_shows_its_pairing_cutoff() {
        let shown = with_defaults(&TournamentKind::Arena {
            duration_s: 600,
            stop_pairing_before_s: None,
        });
        assert_eq!(
            serde_json::to_value(shown).unwrap(),
            serde_json::json!({"type": "arena", "duration_s": 600, "stop_pairing_before_s": 60})
        );
        let asked = TournamentKind::Arena {
            duration_s: 600,
            stop_pairing_before_s: Some(30),
        };
        assert_eq!(with_defaults(&asked), asked);
        let swiss = TournamentKind::Swiss { rounds: 3 };
        assert_eq!(with_defaults(&swiss), swiss);
    }

    #[test]
    fn a_start_when_event_starts_only_with_that_many_players_still_registered() {
        let config = tournament::Config {
            kind: tournament::Kind::Swiss { rounds: 2 },
            game: "trump".into(),
            table_size: 2,
            min_table_size: 2,
            rated: false,
            seed: 7,
        };
        let mut t = Tournament::new(config, (2, 4)).unwrap();
        let ids: Vec<Uuid> = (0..4).map(|_| Uuid::new_v4()).collect();
        for id in &ids {
            t.join(*id, 1500.0, 0).unwrap();
        }
        // The director saw 4 of 4 (due); two withdrew before the start was taken.
        t.withdraw(ids[0], 1).unwrap();
        t.withdraw(ids[1], 1).unwrap();
        assert!(start_if_due(&mut t, None, Some(4), 2).unwrap().is_empty());
        assert_eq!(t.phase(), tournament::Phase::Registration);
        // Its time coming starts it with whoever is there; so do 4 players again.
        let mut timed = t.clone();
        assert!(
            !start_if_due(&mut timed, Some(2), Some(4), 2)
                .unwrap()
                .is_empty()
        );
        assert_eq!(timed.phase(), tournament::Phase::Running);
        t.join(Uuid::new_v4(), 1500.0, 3).unwrap();
        t.join(Uuid::new_v4(), 1500.0, 3).unwrap();
        assert!(!start_if_due(&mut t, None, Some(4), 4).unwrap().is_empty());
        assert_eq!(t.phase(), tournament::Phase::Running);
    }

    #[test]
    fn schedules_are_checked_and_recur() {
        let ok = r#"[{"key": "hourly-trump", "every_minutes": 60,
            "tournament": {"game": "trump", "kind": {"type": "arena", "duration_s": 1800},
                "table_size": 2}}]"#;
        let events = parse_schedule(ok).unwrap();
        // Every hour at :00, the next one at or after now.
        assert_eq!(events[0].next_start(3_600_000), 3_600_000);
        assert_eq!(events[0].next_start(3_600_001), 7_200_000);
        let daily = Scheduled {
            every_minutes: 1440,
            offset_minutes: 1110,
            ..events[0].clone()
        };
        assert_eq!(daily.next_start(0), 1110 * 60_000);
        for (bad, says) in [
            (
                r#"[{"key": "x", "every_minutes": 0, "tournament": {"game": "trump", "kind": {"type": "swiss", "rounds": 3}, "table_size": 2}}]"#,
                "every_minutes",
            ),
            (
                r#"[{"key": "x", "every_minutes": 60, "tournament": {"game": "chess", "kind": {"type": "swiss", "rounds": 3}, "table_size": 2}}]"#,
                "chess",
            ),
            (
                r#"[{"key": "x", "every_minutes": 60, "tournament": {"game": "trump", "kind": {"type": "swiss", "rounds": 0}, "table_size": 2}}]"#,
                "rounds",
            ),
            (
                r#"[{"key": "x", "every_minutes": 60, "colour": 1, "tournament": {"game": "trump", "kind": {"type": "swiss", "rounds": 3}, "table_size": 2}}]"#,
                "colour",
            ),
            (
                r#"[{"key": "a@b", "every_minutes": 60, "tournament": {"game": "trump", "kind": {"type": "swiss", "rounds": 3}, "table_size": 2}}]"#,
                "key",
            ),
        ] {
            let e = parse_schedule(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
