//! One tokio task per live table: the only writer of the table's state.
//!
//! Connections and HTTP handlers send it commands over a channel; it handles them one at a
//! time, in arrival order. For a game action it applies the action to a copy of the game,
//! writes it to the store's action log, and only then adopts the copy and sends every
//! connection its own view (R-4: each seat sees its own view, spectators the public one).
//! A table is rebuilt after a restart from its stored seeds and actions ([`restore`]), and
//! [`Table::settle`] finishes any round or match transition a crash interrupted.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use game_core::{Phase, Seat, Seed, Viewer};
use games::{ActionError, BotLevel, DynGame};
use protocol::{RoundFairness, SeatInfo, ServerMsg, TableInfo};
use serde_json::{Value, json};
use store::{
    ActionRecord, Occupant, RoundRecord, StoreError, StoredTable, TableRecord, TableStatus,
};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::error::ApiError;
use crate::state::{AppState, now_ms};

/// Messages a connection may have queued before it counts as too slow and is dropped (it
/// reconnects and resyncs).
pub const CONN_QUEUE: usize = 256;

/// How long a finished, unwatched table stays in memory.
const LINGER: Duration = Duration::from_secs(30);

pub type Reply<T> = oneshot::Sender<Result<T, ApiError>>;

/// Who asks: a signed-in player.
#[derive(Clone, Debug)]
pub struct Who {
    pub id: Uuid,
    pub name: String,
}

pub enum Cmd {
    Join {
        who: Who,
        seat: Option<usize>,
        reply: Reply<TableInfo>,
    },
    Leave {
        who: Who,
        reply: Reply<TableInfo>,
    },
    Start {
        who: Who,
        reply: Reply<TableInfo>,
    },
    /// Puts a bot of `level` in an empty seat, or (`None`) takes a bot out of one.
    SetBot {
        who: Who,
        seat: usize,
        level: Option<BotLevel>,
        reply: Reply<TableInfo>,
    },
    Info {
        reply: oneshot::Sender<TableInfo>,
    },
    /// A WebSocket connection joins; its first state message is queued at once.
    Connect {
        who: Option<Who>,
        out: mpsc::Sender<String>,
        reply: oneshot::Sender<u64>,
    },
    Disconnect {
        conn: u64,
    },
    Act {
        conn: u64,
        version: u64,
        action: Value,
    },
    Sync {
        conn: u64,
    },
}

/// A cheap, cloneable way to reach a table task.
#[derive(Clone)]
pub struct TableHandle {
    pub id: Uuid,
    pub private: bool,
    pub invite_code: Option<String>,
    tx: mpsc::Sender<Cmd>,
}

impl TableHandle {
    pub async fn send(&self, cmd: Cmd) -> Result<(), ApiError> {
        self.tx
            .send(cmd)
            .await
            .map_err(|_| ApiError::conflict("table_closed", "this table has closed"))
    }

    /// Sends a command carrying a reply channel and waits for the answer.
    pub async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Cmd) -> Result<T, ApiError> {
        let (tx, rx) = oneshot::channel();
        self.send(make(tx)).await?;
        rx.await
            .map_err(|_| ApiError::conflict("table_closed", "this table has closed"))?
    }

    pub async fn info(&self) -> Result<TableInfo, ApiError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Info { reply: tx }).await?;
        rx.await
            .map_err(|_| ApiError::conflict("table_closed", "this table has closed"))
    }
}

struct Conn {
    who: Option<Uuid>,
    out: mpsc::Sender<String>,
}

struct RoundState {
    round: u32,
    seed: Seed,
    ended: bool,
}

pub struct Table {
    record: TableRecord,
    seats: Vec<Occupant>,
    game: Box<dyn DynGame>,
    /// Bumped by every change of the table: seat, status, round start, accepted action.
    version: u64,
    /// Next action sequence number in the current round.
    seq: i64,
    rounds: Vec<RoundState>,
    conns: HashMap<u64, Conn>,
    next_conn: u64,
    bot_due: Option<tokio::time::Instant>,
    bot_counter: u64,
    /// A bot move being computed off the runtime, for the table version it was asked at.
    bot_pending: Option<PendingBot>,
    /// The version a bot move was last asked for (kept here while `bot_pending` is out
    /// for the select), so that a reconnect does not ask again for the same position.
    bot_asked: Option<u64>,
    /// Bot seats to ask for off-turn moves: a bot's own sets change only in its
    /// own turn, so it is asked right after its turn has passed, and again after each
    /// off-turn move it makes, until it wants none.
    off_turn_due: Vec<Seat>,
    app: AppState,
}

/// A bot's move on its way back from the worker pool. It is dropped unless the table is
/// still at `version` when it arrives (anything that happened since may change the move).
struct PendingBot {
    version: u64,
    seat: Seat,
    /// Asked for an off-turn move (`None` then means "nothing worth doing").
    off_turn: bool,
    rx: oneshot::Receiver<Option<Value>>,
}

/// Bounds the bot moves being computed at once, server-wide, to the number of cores: a
/// hard bot searches for up to its budget (100 ms), and many tables of bots must not
/// starve the blocking pool or each other.
fn bot_workers() -> std::sync::Arc<tokio::sync::Semaphore> {
    static POOL: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
        std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        std::sync::Arc::new(tokio::sync::Semaphore::new(n))
    })
    .clone()
}

pub fn to_proto_status(s: TableStatus) -> protocol::TableStatus {
    match s {
        TableStatus::Open => protocol::TableStatus::Open,
        TableStatus::Playing => protocol::TableStatus::Playing,
        TableStatus::Finished => protocol::TableStatus::Finished,
        TableStatus::Abandoned => protocol::TableStatus::Abandoned,
    }
}

/// Whether a round's seed may be published: the round is over, and for a daily deal
/// (`daily` = `…/YYYY-MM-DD`) its day (UTC) is over too.
pub fn seed_public(round_ended: bool, daily: Option<&str>) -> bool {
    round_ended
        && daily.is_none_or(|key| {
            key.rsplit('/')
                .next()
                .is_some_and(|day| day < crate::state::utc_day(now_ms()).as_str())
        })
}

/// A fresh round seed from the OS's CSPRNG.
fn fresh_seed() -> Seed {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).expect("the OS random source is available");
    Seed(b)
}

impl Table {
    /// A new, open table (already stored).
    pub fn new(app: AppState, record: TableRecord, seats: Vec<Occupant>) -> Result<Self, ApiError> {
        let (game, _) = games::new_match(&record.game, &record.options, seats.len())
            .map_err(|e| ApiError::BadTable("bad_options", format!("{e:?}")))?;
        Ok(Table {
            record,
            seats,
            game,
            version: 1,
            seq: 0,
            rounds: Vec::new(),
            conns: HashMap::new(),
            next_conn: 0,
            bot_due: None,
            bot_counter: 0,
            bot_pending: None,
            bot_asked: None,
            off_turn_due: Vec::new(),
            app,
        })
    }

    /// Records the rules version the match is played under, and returns the record to store.
    pub fn set_rules_version(&mut self) -> TableRecord {
        self.record.rules_version = self.game.rules_version() as i32;
        self.record.clone()
    }

    /// The level of the bot in `seat`, if a bot holds it (an unknown stored level plays
    /// as easy).
    fn bot_level(&self, seat: Seat) -> Option<BotLevel> {
        match self.seats.get(seat) {
            Some(Occupant::Bot { level }) => Some(BotLevel::parse(level).unwrap_or(BotLevel::Easy)),
            _ => None,
        }
    }

    fn bots(&self) -> Option<BotLevel> {
        self.record.bots.as_deref().and_then(BotLevel::parse)
    }

    pub fn info(&self) -> TableInfo {
        let connected = |id: &Uuid| self.conns.values().any(|c| c.who.as_ref() == Some(id));
        let seats = self
            .seats
            .iter()
            .map(|o| match o {
                Occupant::Empty => SeatInfo::Empty,
                Occupant::Player { id, name } => SeatInfo::Player {
                    id: *id,
                    name: name.clone(),
                    connected: connected(id),
                },
                Occupant::Bot { level } => SeatInfo::Bot {
                    level: BotLevel::parse(level).unwrap_or(BotLevel::Easy),
                },
            })
            .collect();
        let started = !self.rounds.is_empty();
        TableInfo {
            id: self.record.id,
            game: self.record.game.clone(),
            options: self.record.options.clone(),
            private: self.record.private,
            status: to_proto_status(self.record.status),
            bots: self.bots(),
            seats,
            spectators: self
                .conns
                .values()
                .filter(|c| self.seat_of(c.who).is_none())
                .count(),
            round: self.game.round(),
            to_act: if started { self.game.to_act() } else { vec![] },
            scores: if started {
                self.game.scores()
            } else {
                vec![0; self.seats.len()]
            },
            winners: self.game.outcome().map(|o| o.winners),
            created_at: self.record.created_at,
        }
    }

    fn seat_of(&self, who: Option<Uuid>) -> Option<Seat> {
        let who = who?;
        self.seats
            .iter()
            .position(|o| matches!(o, Occupant::Player { id, .. } if *id == who))
    }

    fn fairness(&self) -> Vec<RoundFairness> {
        self.rounds
            .iter()
            .map(|r| RoundFairness {
                round: r.round,
                seed_sha256: r.seed.commitment(),
                // the seed is published only once its round is over (and a daily
                // deal's only once its day is over: others are still playing it).
                seed: seed_public(r.ended, self.record.daily.as_deref()).then(|| r.seed.to_hex()),
            })
            .collect()
    }

    /// The state message for one viewer.
    fn state_for(&self, viewer: Viewer, table: &TableInfo, events: &[Value]) -> String {
        let started = !self.rounds.is_empty();
        let view = if started {
            self.game.view_json(viewer)
        } else {
            Value::Null
        };
        let legal = match viewer {
            Viewer::Player(s) if started && self.record.status == TableStatus::Playing => {
                self.game.legal_json(s)
            }
            _ => vec![],
        };
        let msg = ServerMsg::State {
            version: self.version,
            table: table.clone(),
            you: viewer,
            view,
            legal,
            events: events.to_vec(),
            fairness: self.fairness(),
        };
        serde_json::to_string(&msg).expect("server messages serialize")
    }

    fn viewer_of(&self, conn: &Conn) -> Viewer {
        match self.seat_of(conn.who) {
            Some(s) => Viewer::Player(s),
            None => Viewer::Spectator,
        }
    }

    /// Sends every connection its own state, and refreshes the lobby entry.
    fn broadcast(&mut self, events: &[Value]) {
        let table = self.info();
        let mut cache: HashMap<Option<Seat>, String> = HashMap::new();
        let mut slow = Vec::new();
        for (id, c) in &self.conns {
            let viewer = self.viewer_of(c);
            let msg = cache
                .entry(viewer.seat())
                .or_insert_with(|| self.state_for(viewer, &table, events))
                .clone();
            if c.out.try_send(msg).is_err() {
                slow.push(*id);
            }
        }
        for id in slow {
            // Dropping its sender ends the connection; the client reconnects and resyncs.
            tracing::info!(table = %self.record.id, conn = id, "dropping a slow connection");
            self.conns.remove(&id);
        }
        let listed = !self.record.private
            && matches!(self.record.status, TableStatus::Open | TableStatus::Playing);
        self.app
            .publish_lobby(self.record.id, listed.then(|| self.info()));
    }

    fn send_to(&mut self, conn: u64, msg: &ServerMsg) {
        if let Some(c) = self.conns.get(&conn) {
            let _ = c
                .out
                .try_send(serde_json::to_string(msg).expect("serializes"));
        }
    }

    fn send_state(&mut self, conn: u64) {
        let table = self.info();
        if let Some(c) = self.conns.get(&conn) {
            let msg = self.state_for(self.viewer_of(c), &table, &[]);
            let _ = c.out.try_send(msg);
        }
    }

    fn refuse(&mut self, conn: u64, code: &str, message: String) {
        self.app.metrics.rejected(code);
        let msg = ServerMsg::Error {
            code: code.to_string(),
            message,
            version: self.version,
        };
        self.send_to(conn, &msg);
    }

    /// Finishes whatever transition the game is waiting for: ends a finished round, ends a
    /// finished match, or deals the next round. Idempotent, and safe to call again after a
    /// failure (it is also how recovery completes a transition a crash interrupted).
    async fn settle(&mut self, events: &mut Vec<Value>) -> Result<(), StoreError> {
        if self.record.status != TableStatus::Playing {
            return Ok(());
        }
        let id = self.record.id;
        loop {
            if self.game.phase() == Phase::Playing {
                return Ok(());
            }
            let totals = self.game.scores();
            if let Some(r) = self.rounds.last_mut().filter(|r| !r.ended) {
                let result = json!({ "totals": totals });
                self.app
                    .store
                    .end_round(id, r.round as i32, &result, &totals, now_ms())
                    .await?;
                r.ended = true;
            }
            if self.game.phase() == Phase::Finished {
                let outcome = self.game.outcome().expect("a finished game has an outcome");
                let winners: Vec<i32> = outcome.winners.iter().map(|&s| s as i32).collect();
                self.app
                    .store
                    .finish_match(id, &outcome.scores, &winners, now_ms())
                    .await?;
                self.record.status = TableStatus::Finished;
                self.bot_due = None;
                return Ok(());
            }
            // Deal the next round: the seed is stored before anything of it is shown. A
            // daily table's first round is the day's deal, the same for everybody.
            let seed = match (&self.record.daily, self.rounds.is_empty()) {
                (Some(key), true) => {
                    let hex = self
                        .app
                        .store
                        .daily_seed(key, Some(&fresh_seed().to_hex()), now_ms())
                        .await?
                        .ok_or_else(|| StoreError::Corrupt(format!("no daily seed for {key}")))?;
                    Seed::from_hex(&hex)
                        .ok_or_else(|| StoreError::Corrupt(format!("daily seed of {key}")))?
                }
                _ => fresh_seed(),
            };
            let mut next = self.game.clone_box();
            let evs = match next.start_round(&seed) {
                Ok(evs) => evs,
                Err(e) => {
                    tracing::error!(table = %id, error = %e, "start_round refused");
                    return Ok(());
                }
            };
            let round = next.round();
            let rec = RoundRecord {
                round_no: round as i32,
                seed_hex: seed.to_hex(),
                commitment: seed.commitment(),
                started_at: now_ms(),
                ended_at: None,
                result: None,
            };
            self.app.store.start_round(id, &rec).await?;
            self.game = next;
            self.rounds.push(RoundState {
                round,
                seed,
                ended: false,
            });
            self.seq = 0;
            self.version += 1;
            events.push(
                json!({"type": "round_dealt", "round": round, "seed_sha256": rec.commitment}),
            );
            events.extend(evs);
        }
    }

    /// Applies, persists, then publishes one action of `seat`.
    async fn accept(&mut self, seat: Seat, action: Value) -> Result<(), (String, String)> {
        if self.record.status != TableStatus::Playing {
            return Err(("not_started".into(), "the match has not started".into()));
        }
        let mut next = self.game.clone_box();
        let mut events = match next.apply_json(seat, &action) {
            Ok(ev) => ev,
            Err(ActionError::Decode(m)) => {
                return Err((
                    "bad_action".into(),
                    format!("not an action of this game: {m}"),
                ));
            }
            Err(ActionError::Rule(e)) => return Err((e.code.to_string(), e.message)),
        };
        let round = self.rounds.last().map(|r| r.round).unwrap_or(0);
        let rec = ActionRecord {
            round_no: round as i32,
            seq: self.seq,
            seat: seat as i32,
            action,
        };
        let t = Instant::now();
        if let Err(e) = self
            .app
            .store
            .append_action(self.record.id, &rec, now_ms())
            .await
        {
            tracing::error!(table = %self.record.id, error = %e, "could not store an action");
            return Err((
                "internal".into(),
                "the server could not save this move; try again".into(),
            ));
        }
        self.app.metrics.persisted(t.elapsed());
        self.app
            .metrics
            .actions_accepted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.game = next;
        self.seq += 1;
        self.version += 1;
        if let Err(e) = self.settle(&mut events).await {
            tracing::error!(table = %self.record.id, error = %e, "could not store a round transition");
        }
        self.queue_off_turn(seat);
        self.broadcast(&events);
        self.schedule_bots();
        Ok(())
    }

    fn humans_watching(&self) -> bool {
        self.conns.values().any(|c| c.who.is_some())
    }

    /// After `seat` acted: if it is a bot whose turn has passed (or that moved off turn)
    /// and the game allows it moves off turn, it is asked for one.
    fn queue_off_turn(&mut self, seat: Seat) {
        let thinking_bot = self.bot_level(seat).is_some_and(|l| l != BotLevel::Easy);
        if thinking_bot
            && self.game.phase() == Phase::Playing
            && !self.game.to_act().contains(&seat)
            && !self.off_turn_due.contains(&seat)
            && self.game.has_legal(seat)
        {
            self.off_turn_due.push(seat);
        }
    }

    fn schedule_bots(&mut self) {
        self.bot_due = None;
        if self.bot_asked == Some(self.version) {
            // Its move for this very position is on its way.
            return;
        }
        if self.record.status != TableStatus::Playing || self.game.phase() != Phase::Playing {
            self.off_turn_due.clear();
            return;
        }
        let bot_to_act = self
            .game
            .to_act()
            .iter()
            .any(|&s| self.bot_level(s).is_some());
        if bot_to_act || !self.off_turn_due.is_empty() {
            // An off-turn ask comes first and at once: it is no move people need time to
            // follow (most answers are "nothing"), and the bot on turn still gets its
            // pause after it.
            let delay = if self.off_turn_due.is_empty() && self.humans_watching() {
                Duration::from_millis(self.app.config.bot_delay_ms)
            } else {
                Duration::ZERO
            };
            self.bot_due = Some(tokio::time::Instant::now() + delay);
        }
    }

    /// Asks the worker pool for the move of the bot whose turn it is. The game is cloned
    /// to the worker, and there the bot is handed that seat's view only
    /// (`DynGame::bot_action`). The table task never waits for it: the move comes back
    /// through [`Table::bot_done`].
    fn bot_move(&mut self) {
        self.bot_due = None;
        // Off-turn asks first: they are quick (no search) and come before the next
        // player's turn, as a person's rearranging would.
        while let Some(seat) = self.off_turn_due.pop() {
            let Some(level) = self.bot_level(seat) else {
                continue;
            };
            if self.game.to_act().contains(&seat) {
                continue;
            }
            let game = self.game.clone_box();
            self.ask_pool(seat, true, move || game.bot_off_turn_action(seat, level));
            return;
        }
        let Some((seat, level)) = self
            .game
            .to_act()
            .into_iter()
            .find_map(|s| Some((s, self.bot_level(s)?)))
        else {
            return;
        };
        self.bot_counter += 1;
        let seed = self.bot_counter ^ (self.record.id.as_u128() as u64);
        let game = self.game.clone_box();
        let budget = games::BotBudget {
            time: Some(Duration::from_millis(self.app.config.bot_budget_ms)),
            samples: None,
        };
        self.ask_pool(seat, false, move || {
            game.bot_action(seat, level, seed, budget)
        });
    }

    /// Runs a bot's decision on the worker pool; the answer comes back through the
    /// table's loop to [`Table::bot_done`].
    fn ask_pool(
        &mut self,
        seat: Seat,
        off_turn: bool,
        decide: impl FnOnce() -> Option<Value> + Send + 'static,
    ) {
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            let Ok(permit) = bot_workers().acquire_owned().await else {
                return;
            };
            let work = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                decide()
            });
            if let Ok(action) = work.await {
                let _ = tx.send(action);
            }
        });
        // A newer request replaces an older one, whose answer is then never read.
        self.bot_asked = Some(self.version);
        self.bot_pending = Some(PendingBot {
            version: self.version,
            seat,
            off_turn,
            rx,
        });
    }

    /// A bot's move is back from the pool: play it if the table has not moved on.
    async fn bot_done(&mut self, p: PendingBot, action: Option<Value>) {
        let PendingBot {
            version,
            seat,
            off_turn,
            ..
        } = p;
        self.bot_asked = None;
        let still_a_bot =
            self.record.status == TableStatus::Playing && self.bot_level(seat).is_some();
        if off_turn {
            // The bot's own sets change only in its turn or by its own off-turn moves, so
            // an answer is still meant if the table moved on meanwhile (others played):
            // it is offered to the rules like any move, which refuse it if it no longer
            // fits. A "nothing" stays true for the same reason.
            if let Some(action) = action.filter(|_| {
                still_a_bot
                    && self.game.phase() == Phase::Playing
                    && !self.game.to_act().contains(&seat)
            }) {
                match self.accept(seat, action).await {
                    Ok(()) => return,
                    Err((code, msg)) if version == self.version => {
                        // Refused at the position it was chosen for: a bug.
                        self.app.metrics.rejected(&code);
                        tracing::error!(table = %self.record.id, seat, code, msg, "bot off-turn move refused");
                    }
                    // Overtaken (e.g. a new round): ask afresh.
                    Err(_) => self.queue_off_turn(seat),
                }
            }
            self.schedule_bots();
            return;
        }
        let still_its_turn =
            version == self.version && still_a_bot && self.game.to_act().contains(&seat);
        if !still_its_turn {
            // Stale: whatever changed has scheduled what comes next.
            self.schedule_bots();
            return;
        }
        match action {
            Some(action) => {
                if let Err((code, msg)) = self.accept(seat, action).await {
                    // A bot's illegal move is a bug: counted like any refusal, and logged.
                    self.app.metrics.rejected(&code);
                    tracing::error!(table = %self.record.id, seat, code, msg, "bot move refused");
                    // Try again later rather than spin.
                    self.bot_due = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                }
            }
            None => tracing::error!(table = %self.record.id, seat, "bot has no legal move"),
        }
    }

    /// An abandoned table takes no more lobby actions.
    fn refuse_if_abandoned(&self) -> Result<(), ApiError> {
        if self.record.status == TableStatus::Abandoned {
            return Err(ApiError::conflict(
                "table_closed",
                "this table was abandoned before its match started; create a new one",
            ));
        }
        Ok(())
    }

    /// What starting and choosing bots need: an open table (not abandoned, not started)
    /// and a requester who sits at it or created it (a creator who took no seat can run a
    /// table of bots only). `what` names the action in the refusal.
    fn before_start_by_a_seated_player(&self, who: &Who, what: &str) -> Result<(), ApiError> {
        self.refuse_if_abandoned()?;
        if self.seat_of(Some(who.id)).is_none() && self.record.created_by != who.id {
            return Err(ApiError::conflict(
                "not_seated",
                format!("only a seated player or the table's creator can {what}"),
            ));
        }
        if self.record.status != TableStatus::Open {
            return Err(ApiError::conflict(
                "already_started",
                format!("the match has already started: too late to {what}"),
            ));
        }
        Ok(())
    }

    async fn join(&mut self, who: Who, seat: Option<usize>) -> Result<TableInfo, ApiError> {
        self.refuse_if_abandoned()?;
        if self.seat_of(Some(who.id)).is_some() {
            return Err(ApiError::conflict(
                "already_seated",
                "you already have a seat at this table",
            ));
        }
        if self.record.status != TableStatus::Open {
            return Err(ApiError::conflict(
                "already_started",
                "the match has already started",
            ));
        }
        let seat = match seat {
            Some(s) if s >= self.seats.len() => {
                return Err(ApiError::conflict(
                    "bad_seat",
                    format!("seat {s} does not exist at a table of {}", self.seats.len()),
                ));
            }
            Some(s) if self.seats[s] != Occupant::Empty => {
                return Err(ApiError::conflict(
                    "seat_taken",
                    format!("seat {s} is already taken"),
                ));
            }
            Some(s) => s,
            None => self
                .seats
                .iter()
                .position(|o| *o == Occupant::Empty)
                .ok_or_else(|| ApiError::conflict("table_full", "every seat is taken"))?,
        };
        let occ = Occupant::Player {
            id: who.id,
            name: who.name,
        };
        self.app
            .store
            .set_seat(self.record.id, seat as i32, &occ, now_ms())
            .await?;
        self.seats[seat] = occ;
        self.version += 1;
        self.broadcast(&[]);
        Ok(self.info())
    }

    async fn leave(&mut self, who: Who) -> Result<TableInfo, ApiError> {
        let Some(seat) = self.seat_of(Some(who.id)) else {
            return Err(ApiError::conflict(
                "not_seated",
                "you have no seat at this table",
            ));
        };
        if self.record.status != TableStatus::Open {
            return Err(ApiError::conflict(
                "already_started",
                "the match has started: your seat stays yours, come back any time",
            ));
        }
        let now = now_ms();
        self.app
            .store
            .set_seat(self.record.id, seat as i32, &Occupant::Empty, now)
            .await?;
        self.seats[seat] = Occupant::Empty;
        if self
            .seats
            .iter()
            .all(|o| !matches!(o, Occupant::Player { .. }))
        {
            self.app
                .store
                .set_status(self.record.id, TableStatus::Abandoned, now)
                .await?;
            self.record.status = TableStatus::Abandoned;
        }
        self.version += 1;
        self.broadcast(&[]);
        Ok(self.info())
    }

    /// Before the match, a seated player chooses a bot (and its level) for an empty seat,
    /// or frees a seat a bot holds.
    async fn set_bot(
        &mut self,
        who: Who,
        seat: usize,
        level: Option<BotLevel>,
    ) -> Result<TableInfo, ApiError> {
        self.before_start_by_a_seated_player(&who, "choose the bots")?;
        let Some(current) = self.seats.get(seat) else {
            return Err(ApiError::conflict(
                "bad_seat",
                format!(
                    "seat {seat} does not exist at a table of {}",
                    self.seats.len()
                ),
            ));
        };
        let occ = match (level, current) {
            (Some(level), Occupant::Empty) => Occupant::Bot {
                level: level.as_str().into(),
            },
            (Some(_), _) => {
                return Err(ApiError::conflict(
                    "seat_taken",
                    format!("seat {seat} is already taken"),
                ));
            }
            (None, Occupant::Bot { .. }) => Occupant::Empty,
            (None, _) => {
                return Err(ApiError::conflict(
                    "not_a_bot",
                    format!("seat {seat} has no bot to take out"),
                ));
            }
        };
        self.app
            .store
            .set_seat(self.record.id, seat as i32, &occ, now_ms())
            .await?;
        self.seats[seat] = occ;
        self.version += 1;
        self.broadcast(&[]);
        Ok(self.info())
    }

    async fn start(&mut self, who: Who) -> Result<TableInfo, ApiError> {
        self.before_start_by_a_seated_player(&who, "start the match")?;
        let empty: Vec<usize> = (0..self.seats.len())
            .filter(|&s| self.seats[s] == Occupant::Empty)
            .collect();
        if !empty.is_empty() {
            let Some(level) = self.bots() else {
                return Err(ApiError::conflict(
                    "seats_not_full",
                    format!(
                        "{} seat(s) are still empty and this table has no bots",
                        empty.len()
                    ),
                ));
            };
            let now = now_ms();
            for &s in &empty {
                let occ = Occupant::Bot {
                    level: level.as_str().into(),
                };
                self.app
                    .store
                    .set_seat(self.record.id, s as i32, &occ, now)
                    .await?;
                self.seats[s] = occ;
            }
        }
        self.app
            .store
            .set_status(self.record.id, TableStatus::Playing, now_ms())
            .await?;
        self.record.status = TableStatus::Playing;
        self.version += 1;
        let mut events = Vec::new();
        if let Err(e) = self.settle(&mut events).await {
            tracing::error!(table = %self.record.id, error = %e, "could not deal round 1");
        }
        self.broadcast(&events);
        self.schedule_bots();
        Ok(self.info())
    }

    async fn handle(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Join { who, seat, reply } => {
                let _ = reply.send(self.join(who, seat).await);
            }
            Cmd::Leave { who, reply } => {
                let _ = reply.send(self.leave(who).await);
            }
            Cmd::Start { who, reply } => {
                let _ = reply.send(self.start(who).await);
            }
            Cmd::SetBot {
                who,
                seat,
                level,
                reply,
            } => {
                let _ = reply.send(self.set_bot(who, seat, level).await);
            }
            Cmd::Info { reply } => {
                let _ = reply.send(self.info());
            }
            Cmd::Connect { who, out, reply } => {
                let id = self.next_conn;
                self.next_conn += 1;
                self.conns.insert(
                    id,
                    Conn {
                        who: who.map(|w| w.id),
                        out,
                    },
                );
                let _ = reply.send(id);
                // Everyone sees the new presence; the newcomer gets its full state.
                self.broadcast(&[]);
                self.schedule_bots();
            }
            Cmd::Disconnect { conn } => {
                if self.conns.remove(&conn).is_some() {
                    self.broadcast(&[]);
                }
            }
            Cmd::Sync { conn } => self.send_state(conn),
            Cmd::Act {
                conn,
                version,
                action,
            } => {
                let Some(c) = self.conns.get(&conn) else {
                    return;
                };
                let Some(seat) = self.seat_of(c.who) else {
                    self.refuse(
                        conn,
                        "not_seated",
                        "spectators cannot play: you have no seat at this table".into(),
                    );
                    return;
                };
                if version != self.version {
                    let msg = format!(
                        "your move was made against version {version} but the table is at {}; here is the current state",
                        self.version
                    );
                    self.refuse(conn, "stale_version", msg);
                    self.send_state(conn);
                    return;
                }
                if let Err((code, msg)) = self.accept(seat, action).await {
                    self.refuse(conn, &code, msg);
                }
            }
        }
    }

    fn done(&self) -> bool {
        matches!(
            self.record.status,
            TableStatus::Finished | TableStatus::Abandoned
        ) && self.conns.is_empty()
    }

    /// Runs the table until it is over and nobody is connected, or the server stops.
    async fn run(mut self, mut rx: mpsc::Receiver<Cmd>) {
        let id = self.record.id;
        self.app
            .metrics
            .live_tables
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut events = Vec::new();
        if let Err(e) = self.settle(&mut events).await {
            tracing::error!(table = %id, error = %e, "could not complete a round transition");
        }
        self.broadcast(&events);
        self.schedule_bots();
        loop {
            let due = self.bot_due;
            // Moved out for the select (a future may not borrow the table it reports to);
            // put back below unless it was answered or replaced.
            let mut pending = self.bot_pending.take();
            let mut answered = None;
            // A table that is over and unwatched lingers a little, so a page that is just
            // (re)connecting still finds it; after that it is restored on demand.
            let idle = self.done();
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(cmd) => self.handle(cmd).await,
                    None => break,
                },
                _ = async { tokio::time::sleep_until(due.expect("guarded")).await }, if due.is_some() => {
                    self.bot_move();
                }
                r = async { (&mut pending.as_mut().expect("guarded").rx).await }, if pending.is_some() => {
                    answered = Some(r);
                }
                _ = tokio::time::sleep(LINGER), if idle => break,
            }
            match (answered, pending) {
                (Some(r), Some(p)) => {
                    // A worker that died (`Err`) gives no move; the next schedule retries.
                    let action = r.unwrap_or(None);
                    if action.is_none() && !p.off_turn {
                        self.bot_due = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                    }
                    self.bot_done(p, action).await;
                }
                (None, Some(p)) if self.bot_pending.is_none() => self.bot_pending = Some(p),
                // Replaced by a newer request (the select ran `bot_move`): an off-turn ask
                // is still owed, and the new request's answer will schedule it.
                (None, Some(p)) if p.off_turn => self.queue_off_turn(p.seat),
                _ => {}
            }
        }
        crate::state::lock(&self.app.tables).remove(&id);
        self.app.publish_lobby(id, None);
        self.app
            .metrics
            .live_tables
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Starts the task of a table and registers it. Returns its handle.
/// If the table is already live (a concurrent restore won), that task's handle is returned
/// and `table` is dropped: there is never more than one task per table.
pub fn spawn(table: Table) -> TableHandle {
    let (tx, rx) = mpsc::channel(64);
    let handle = TableHandle {
        id: table.record.id,
        private: table.record.private,
        invite_code: table.record.invite_code.clone(),
        tx,
    };
    let app = table.app.clone();
    let mut tables = crate::state::lock(&app.tables);
    if let Some(live) = tables.get(&handle.id) {
        return live.clone();
    }
    tables.insert(handle.id, handle.clone());
    tokio::spawn(table.run(rx));
    handle
}

/// The live table `id`, restoring it from the store if it is not running (a finished
/// match that nobody watched for a while). `None` if the store does not know it.
pub async fn open(app: &AppState, id: Uuid) -> Result<Option<TableHandle>, ApiError> {
    if let Some(h) = app.table(id) {
        return Ok(Some(h));
    }
    let Some(st) = app.store.load_table(id).await? else {
        return Ok(None);
    };
    let table = restore(app.clone(), st).map_err(|e| {
        tracing::error!(table = %id, error = %e, "could not restore a table on demand");
        ApiError::Internal
    })?;
    Ok(Some(spawn(table)))
}

/// Rebuilds a table from the store: its match is replayed from each round's seed and
/// action log, in order.
pub fn restore(app: AppState, st: StoredTable) -> Result<Table, String> {
    let StoredTable {
        record,
        seats,
        rounds,
        actions,
        ..
    } = st;
    let mut table = Table::new(app, record, seats).map_err(|e| e.to_string())?;
    if table.game.rules_version() as i32 != table.record.rules_version {
        tracing::warn!(table = %table.record.id, "stored under another rules version");
    }
    let mut actions = actions.into_iter().peekable();
    for r in rounds {
        let seed = Seed::from_hex(&r.seed_hex).ok_or("a stored seed is not 64 hex digits")?;
        table.game.start_round(&seed).map_err(|e| e.to_string())?;
        table.version += 1;
        let mut seq = 0;
        while let Some(a) = actions.next_if(|a| a.round_no == r.round_no) {
            table
                .game
                .apply_json(a.seat as usize, &a.action)
                .map_err(|e| format!("round {} action {}: {e}", a.round_no, a.seq))?;
            table.version += 1;
            seq += 1;
        }
        table.rounds.push(RoundState {
            round: r.round_no as u32,
            seed,
            ended: r.ended_at.is_some(),
        });
        table.seq = seq;
    }
    if table.record.status != TableStatus::Open {
        table.version += 1;
    }
    // Versions never go backwards, even across a restart: versions are not stored, so a
    // restored table starts above any version it can have served before, at the restore
    // time in milliseconds (a table changes far less than once a millisecond, and counted
    // from 1 it never gets near). A client that compares versions then never mistakes
    // the restored table's states for late old ones.
    table.version = table.version.max(now_ms().max(0) as u64);
    Ok(table)
}

/// Replays a stored table through round `round` and returns the game's record of that
/// round's deal (and its later shuffles), for verifying an ended round.
pub fn deal_of_round(st: &StoredTable, round: u32) -> Result<Value, String> {
    let (mut game, _) = games::new_match(&st.record.game, &st.record.options, st.seats.len())
        .map_err(|e| format!("{e:?}"))?;
    for r in &st.rounds {
        let seed = Seed::from_hex(&r.seed_hex).ok_or("bad stored seed")?;
        game.start_round(&seed).map_err(|e| e.to_string())?;
        for a in st.actions.iter().filter(|a| a.round_no == r.round_no) {
            game.apply_json(a.seat as usize, &a.action)
                .map_err(|e| e.to_string())?;
        }
        // Read after the whole round, so the record also holds the round's later shuffles
        // from the same seed (a stock reshuffle, R-21; a draw-pile refill, R-46).
        if r.round_no as u32 == round {
            return Ok(game.deal_record());
        }
    }
    Err(format!("no round {round}"))
}
