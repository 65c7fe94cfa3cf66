//! One tokio task per live table: the only writer of the table's state.
//!
//! Connections and HTTP handlers send it commands ([`Cmd`]) over a channel; it handles them
//! one at a time, in arrival order. Every change is made on a draft ([`play`]): the draft's
//! writes go to the process's single store writer as one unit, and only once that unit is
//! durable is the draft adopted and anyone told (R-4: each seat sees its own view,
//! spectators the public one, as patches against what each connection holds, [`fanout`]).
//!
//! The concerns live in one module each:
//! - this module: the command loop, the table's identity and its lobby-facing info;
//! - [`play`]: actions, round and match transitions, persistence;
//! - [`seats`]: joining, leaving, bots chosen per seat, the start;
//! - [`fanout`]: connections, per-viewer documents and patches, bounded queues;
//! - [`bots`]: when bots move, and the worker pool that thinks for them;
//! - [`online`]: clocks, presence, stand-in bots, abandonment, expiry, parking;
//! - [`restore`]: rebuilding a table from its stored seeds and actions.
//!
//! Supervision: each step of the loop runs under `catch_unwind`. A step that panics leaves
//! the table's memory in doubt, so the table takes its state again from the store (the
//! only truth: nothing is acknowledged before it is stored) and sends every connection a
//! full state; the panic is logged and counted. Connections stay open throughout.

mod bots;
pub mod chat;
mod fanout;
mod online;
mod play;
mod rematch;
mod restore;
mod seats;

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use game_core::{Seat, Seed};
use games::{BotLevel, DynGame};
use protocol::{SeatInfo, TableInfo};
use serde_json::Value;
use store::{Occupant, TableRecord, TableStatus};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

pub use fanout::Updates;
pub use restore::{deal_of_round, restore};

use crate::time::now_ms;
use crate::{Core, TableError, Text};

/// Messages a connection may have queued before it counts as too slow and is dropped
/// (closed with 1013; it reconnects and resyncs). Patches are small, so 64 is generous
/// for a reader that keeps up, and bounds what one that does not can hold.
pub const CONN_QUEUE: usize = 64;

/// Panics in a row after which a table's task gives up (its state keeps failing the same
/// way): it ends, its connections close, and the next visit restores it afresh.
const MAX_PANICS_IN_A_ROW: u32 = 3;

/// How long a finished, unwatched table stays in memory.
const LINGER: Duration = Duration::from_secs(30);

pub type Reply<T> = oneshot::Sender<Result<T, TableError>>;

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
    /// The full state a socket of this viewer would get first, for HTTP
    /// (`GET /api/tables/{id}/state`). The table keeps that viewer's document at this
    /// version, so a socket opened right after with `since` gets a patch, not it again.
    State {
        who: Option<Uuid>,
        reply: oneshot::Sender<Text>,
    },
    /// A WebSocket connection joins; its first message is queued at once: a patch from
    /// `since` if the table still holds that version of the connection's document, else
    /// the full state.
    Connect {
        who: Option<Who>,
        out: crate::outbox::Sender<Text>,
        since: Option<u64>,
        updates: Updates,
        reply: oneshot::Sender<u64>,
    },
    Disconnect {
        conn: u64,
    },
    Act {
        conn: u64,
        version: u64,
        action: Value,
        /// When the socket read it, for the received → acknowledged histogram.
        received: Instant,
    },
    Sync {
        conn: u64,
    },
    /// A seated player accepts or declines a rematch of the finished match.
    Rematch {
        conn: u64,
        accept: bool,
    },
    /// The page of a connection was hidden or is back in view.
    Presence {
        conn: u64,
        away: bool,
    },
    /// Test hook (`FIB_TEST_HOOKS`): the table's task panics, to test supervision.
    TestPanic,
    /// Another node owns the table now (`cluster`): the task ends at once, without
    /// writing anything more, and its connections close (1013) to find the new owner.
    StepDown,
    /// The node is draining (`cluster::drain`): the task ends, releases the table for
    /// another node, closes its connections (1013), and answers.
    HandOver {
        reply: oneshot::Sender<()>,
    },
    /// Node `to` asks for the table, because a socket for it reached that node first
    /// (`cluster::adopt`): if nobody is connected here (nor connecting), the task ends and
    /// hands the table straight to `to`, answering the new epoch; otherwise it answers
    /// `None` and goes on.
    Release {
        to: String,
        /// The asking node waits no longer: a request found later is refused.
        before: Instant,
        reply: oneshot::Sender<Option<i64>>,
    },
    /// Table chat, reactions and mutes ([`chat`]): never a change of the table's version.
    Chat {
        conn: u64,
        cmd: chat::ChatCmd,
    },
}

/// A cheap, cloneable way to reach a table task.
#[derive(Clone)]
pub struct TableHandle {
    pub id: Uuid,
    /// The game's kind (fixed for a table's life).
    pub game: String,
    pub private: bool,
    pub invite_code: Option<String>,
    /// The fencing epoch the task holds the table at (`cluster`).
    pub epoch: i64,
    /// When the task started: a check of ownership made before it knows nothing of it.
    pub claimed_at: Instant,
    /// Sockets accepted whose connection has not reached the task yet ([`Opening`]).
    pending: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    tx: mpsc::Sender<Cmd>,
    /// True once the task has ended (see [`Self::ended`]).
    ended: tokio::sync::watch::Receiver<bool>,
    /// Set by [`Self::step_down`]: the task no longer waits for a write in progress.
    stepping_down: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
}

/// A socket accepted for a table, until its connection reaches the table's task: the
/// table is not handed to another node meanwhile (`Cmd::Release`).
pub struct Opening(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Opening {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl TableHandle {
    pub async fn send(&self, cmd: Cmd) -> Result<(), TableError> {
        let closed = TableError::closed;
        match self.tx.try_send(cmd) {
            Ok(()) => Ok(()),
            // A full queue is waited on in a box: inline, the wait (which holds the
            // command) made every caller's future 400 bytes larger, and a table socket's
            // task is memory held for as long as the socket is open.
            Err(mpsc::error::TrySendError::Full(cmd)) => {
                Box::pin(self.tx.send(cmd)).await.map_err(|_| closed())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(closed()),
        }
    }

    /// Sends a command carrying a reply channel and waits for the answer.
    pub async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Cmd) -> Result<T, TableError> {
        let (tx, rx) = oneshot::channel();
        self.send(make(tx)).await?;
        rx.await.map_err(|_| TableError::closed())?
    }

    /// The `state` message (JSON text) of `who`'s viewer: a seat's, or a spectator's.
    pub async fn state_for(&self, who: Option<Uuid>) -> Result<Text, TableError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::State { who, reply: tx }).await?;
        rx.await.map_err(|_| TableError::closed())
    }

    /// This node no longer owns the table (its lease ran out, or another node took the
    /// table): the task ends as soon as it can, and stops waiting for a write it has in
    /// progress (on a database that does not answer, that wait lasts the writer's 30 s of
    /// retries, and meanwhile its sockets would hear nothing). A write already queued may
    /// still be made; the fence refuses it if another node claimed the table since.
    pub async fn step_down(&self) {
        self.stepping_down.send_replace(true);
        let _ = self.send(Cmd::StepDown).await;
    }

    /// The task's loop has ended and it takes no more commands: it is letting go of its
    /// table and about to leave the registry. (A command that reached it after it was told
    /// to end, before its loop ended, is dropped unanswered: its sender hears
    /// `table_closed`.)
    pub fn ending(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves once the task has ended: whatever it was doing is stored, it has let go of
    /// its table (released it, handed it on, or left it to the node that took it; a
    /// release that failed is logged) and it has left the registry. What a stopping node
    /// waits for before it closes the store, whether or not the task still took its
    /// `HandOver`.
    pub async fn ended(&self) {
        let mut ended = self.ended.clone();
        // An error: the task (and its sender) is gone, so it ended too.
        let _ = ended.wait_for(|e| *e).await;
    }

    /// Notes a socket accepted for this table until the returned guard drops.
    pub fn opening(&self) -> Opening {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Opening(self.pending.clone())
    }

    pub async fn info(&self) -> Result<TableInfo, TableError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Info { reply: tx }).await?;
        rx.await.map_err(|_| TableError::closed())
    }
}

/// A round as the table remembers it: its seed (secret until it ends) and commitment.
#[derive(Clone)]
struct RoundState {
    round: u32,
    seed: Seed,
    /// SHA-256 of the seed, hex: computed once, shown in every state.
    commitment: String,
    ended: bool,
}

impl RoundState {
    fn new(round: u32, seed: Seed, ended: bool) -> Self {
        RoundState {
            round,
            commitment: seed.commitment(),
            seed,
            ended,
        }
    }
}

/// A run of moves out of turn (R-18, the rummy family), each the only change of the game
/// since the one before it. "Accepted at any time, in the order received, without
/// disturbing the player whose turn it is": an action chosen at a version before such a
/// move of another seat is judged on the game as it is now, not refused as stale.
#[derive(Default)]
struct OffTurn {
    /// The version of the last other change of the game, before the run.
    base: u64,
    /// The version of the run's latest move: the run holds while it is the table's `moved`.
    last: u64,
    /// Per seat, the version of its latest move in the run (0: none).
    by_seat: Vec<u64>,
}

pub struct Table {
    record: TableRecord,
    seats: Vec<Occupant>,
    game: Box<dyn DynGame>,
    /// Bumped by every change of the table, presence included.
    version: u64,
    /// The version of the last change of the game, the seats or the status: an action
    /// chosen at an older version is stale. Presence changes do not move it.
    moved: u64,
    /// The version of the last change of who sits where: a client's document from before
    /// it may be another viewer's, so a resync from it gets a full state.
    seated: u64,
    /// The moves out of turn since the last other change of the game: they make no
    /// other seat's action stale.
    off_turn: OffTurn,
    /// Next action sequence number in the current round.
    seq: i64,
    rounds: std::sync::Arc<Vec<RoundState>>,
    fan: fanout::Fanout,
    bots: bots::BotState,
    online: online::Online,
    chat: chat::Chat,
    /// A rematch being agreed after the match (`rematch`).
    rematch: Option<protocol::RematchInfo>,
    /// The fencing epoch this node claimed the table at: every write carries it
    /// (`cluster`), and 0 until claimed.
    epoch: i64,
    /// Set when a write was refused because another node claimed the table since: the task
    /// ends after the current step, without writing or releasing anything.
    fenced: std::sync::atomic::AtomicBool,
    /// Set once the task has ended: its table released (or handed on) and out of the
    /// registry ([`TableHandle::ended`]).
    ended: tokio::sync::watch::Sender<bool>,
    /// Set when the node steps down from the table ([`TableHandle::step_down`]).
    stepping_down: std::sync::Arc<tokio::sync::watch::Sender<bool>>,
    /// Why the task is ending, when it was asked to.
    ending: Option<Ending>,
    /// Sockets accepted for this table whose connection has not reached the task yet
    /// (shared with the handle): a table with one is not released to another node.
    pending: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    core: Core,
}

/// Why a table's task ends before its table is over.
enum Ending {
    SteppedDown,
    HandedOver(oneshot::Sender<()>),
    Released(String, oneshot::Sender<Option<i64>>),
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
                .is_some_and(|day| day < crate::time::utc_day(now_ms()).as_str())
        })
}

impl Table {
    /// A new, open table (already stored).
    pub fn new(core: Core, record: TableRecord, seats: Vec<Occupant>) -> Result<Self, TableError> {
        let (game, _) = games::new_match(&record.game, &record.options, seats.len())
            .map_err(|e| TableError::BadTable("bad_options", format!("{e:?}")))?;
        let (banks, timed_out) = record
            .clock
            .as_ref()
            .map(online::read_clock)
            .unwrap_or_default();
        let online = online::Online::new(
            online::stored_pace(&record.pace),
            seats.len(),
            banks,
            &timed_out,
        );
        Ok(Table {
            record,
            seats,
            game,
            version: 1,
            moved: 1,
            seated: 1,
            seq: 0,
            rounds: Default::default(),
            fan: fanout::Fanout::default(),
            off_turn: OffTurn::default(),
            bots: bots::BotState::default(),
            online,
            chat: chat::Chat::default(),
            rematch: None,
            epoch: 0,
            fenced: std::sync::atomic::AtomicBool::new(false),
            ended: tokio::sync::watch::Sender::new(false),
            stepping_down: std::sync::Arc::new(tokio::sync::watch::Sender::new(false)),
            ending: None,
            pending: Default::default(),
            core,
        })
    }

    /// The table as claimed by this node at `epoch`: its writes carry the epoch, and its
    /// versions start at `epoch × 2^32`, above any version an earlier owner (a lower
    /// epoch) can have sent, so versions only grow across hand-overs and restarts.
    pub fn claimed(mut self, epoch: i64) -> Self {
        self.epoch = epoch;
        let base = (epoch.max(0) as u64) << 32;
        self.version = base + 1;
        self.moved = self.version;
        self.seated = self.version;
        self
    }

    /// Notes a write refused by the fence ([`store::StoreError::Fenced`]): the task ends.
    fn note_fenced(&self, e: &store::StoreError) {
        if matches!(e, store::StoreError::Fenced(_)) {
            tracing::warn!(table = %self.record.id, epoch = self.epoch, "another node claimed this table: stepping down");
            self.fenced
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
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

    fn bots_level(&self) -> Option<BotLevel> {
        self.record.bots.as_deref().and_then(BotLevel::parse)
    }

    pub fn info(&self) -> TableInfo {
        // Nobody acts or stands in at a table that is over (an abandoned match's game
        // still waits for a seat).
        let playing = self.record.status == TableStatus::Playing;
        let seats = self
            .seats
            .iter()
            .enumerate()
            .map(|(seat, o)| match o {
                Occupant::Empty => SeatInfo::Empty,
                Occupant::Player { id, name } => SeatInfo::Player {
                    id: *id,
                    name: name.clone(),
                    bot_account: self.core.is_bot_account(*id),
                    connected: self.fan.connected(*id),
                    presence: self.presence(seat, *id),
                    stand_in: if playing {
                        self.stand_in_info(seat)
                    } else {
                        None
                    },
                    abandoned: self.online.abandoned[seat],
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
            bots: self.bots_level(),
            seats,
            spectators: self.fan.spectators(|who| self.seat_of(Some(who)).is_none()),
            round: self.game.round(),
            to_act: if started && playing {
                self.game.to_act()
            } else {
                vec![]
            },
            scores: if started {
                self.game.scores()
            } else {
                vec![0; self.seats.len()]
            },
            winners: self
                .game
                .outcome()
                .map(|o| online::winners_staying(&o, &self.online.abandoned)),
            created_at: self.record.created_at,
            pace: self.online.pace,
            clocks: self.clocks(),
            parked: self.online.parked.is_some(),
            rematch: self.rematch.clone(),
        }
    }

    fn seat_of(&self, who: Option<Uuid>) -> Option<Seat> {
        let who = who?;
        self.seats
            .iter()
            .position(|o| matches!(o, Occupant::Player { id, .. } if *id == who))
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
            Cmd::State { who, reply } => {
                let _ = reply.send(self.state_for(who));
            }
            Cmd::Connect {
                who,
                out,
                since,
                updates,
                reply,
            } => {
                let who = who.map(|w| w.id);
                // A connection's `since` stands for the document of the viewer it is now,
                // unless seats changed after it: then it may have been someone else's.
                let since = since
                    .filter(|&v| v >= self.seated)
                    .map(|v| (self.viewer_for(who), v));
                // A seated person's arrival moves a bot's pending question to the people's
                // pool (`ask_pool`); a spectator's does not.
                let had_people = self.person_connected();
                let id = self.fan.add(who, out, since, updates);
                let _ = reply.send(id);
                match who {
                    Some(who) => self.person_connected_now(who),
                    None => self.watchers_changed(),
                }
                if !had_people && self.person_connected() {
                    self.people_arrived();
                }
                // Everyone sees the new presence; the newcomer gets its state or the patch
                // from what it holds.
                self.socket_seen(Some(id));
                self.schedule_bots();
            }
            Cmd::Disconnect { conn } => {
                let who = self.fan.who(conn).flatten();
                if self.fan.remove(conn) {
                    self.chat_forget(conn, who);
                    match who {
                        Some(who) => self.person_disconnected(who),
                        // A spectator signed out: the last watcher of a table of bots.
                        None => self.watchers_changed(),
                    }
                    // A socket whose leaving nobody can see (its player still has another
                    // open) changes no document: no new version, so that it can come back
                    // with `since` = what it holds and get a patch, not a full state.
                    self.socket_seen(None);
                }
            }
            Cmd::Sync { conn } => self.send_state(conn),
            Cmd::Presence { conn, away } => {
                if self.set_hidden(conn, away) {
                    self.version += 1;
                    self.broadcast(&[]);
                    self.schedule_bots();
                }
            }
            Cmd::StepDown => self.ending = Some(Ending::SteppedDown),
            Cmd::HandOver { reply } => self.ending = Some(Ending::HandedOver(reply)),
            Cmd::Release { to, before, reply } => {
                let opening = self.pending.load(std::sync::atomic::Ordering::Acquire);
                if Instant::now() < before
                    && self.fan.is_empty()
                    && opening == 0
                    && self.ending.is_none()
                    && self.online.parked.is_none()
                {
                    self.ending = Some(Ending::Released(to, reply));
                } else {
                    let _ = reply.send(None);
                }
            }
            Cmd::TestPanic => {
                if self.core.config.test_hooks {
                    panic!("test hook: a forced panic in table {}", self.record.id);
                }
            }
            Cmd::Chat { conn, cmd } => self.chat(conn, cmd).await,
            Cmd::Rematch { conn, accept } => self.rematch(conn, accept).await,
            Cmd::Act {
                conn,
                version,
                action,
                received,
            } => {
                self.core.metrics.action_taken_up(received.elapsed());
                let Some(who) = self.fan.who(conn) else {
                    return;
                };
                let Some(seat) = self.seat_of(who) else {
                    self.refuse(
                        conn,
                        "not_seated",
                        "spectators cannot play: you have no seat at this table".into(),
                    );
                    return;
                };
                if self.online.parked.is_some() {
                    self.refuse(
                        conn,
                        "table_parked",
                        "the table is paused: the server cannot save moves right now and retries on its own; you will get the table's state when it is back".into(),
                    );
                    return;
                }
                if self.back_by_playing(seat) {
                    // The seat is theirs again; everyone sees the bot leave it.
                    self.version += 1;
                    self.broadcast(&[]);
                    self.schedule_bots();
                }
                if self.online.owes[seat] {
                    self.refuse(
                        conn,
                        "move_timed_out",
                        "your time for this move ran out: a bot is making it for you; your seat is yours again from the next move".into(),
                    );
                    return;
                }
                if version < self.stale_before(seat) || version > self.version {
                    // A connection taking patches already has every change since its
                    // version (they were queued before this refusal): it needs no state.
                    // One taking full states, or naming a version it cannot hold, gets it.
                    let resend = version > self.version || self.fan.updates(conn) == Updates::Full;
                    let msg = if version > self.version {
                        format!(
                            "your move was made against version {version}, which the table has not reached: it is at {}; here is the current state",
                            self.version
                        )
                    } else {
                        format!(
                            "your move was made against version {version} but the table has moved on to {}; {}",
                            self.version,
                            if resend {
                                "here is the current state"
                            } else {
                                "the changes since were sent to you"
                            }
                        )
                    };
                    self.refuse(conn, "stale_version", msg);
                    if resend {
                        self.send_state(conn);
                    }
                    return;
                }
                // A move the game waited for (its seat on turn), once accepted, is no
                // flood however fast the table plays: its socket gets back what its rate
                // limit charged for it (`ws`). Moves out of turn, refused ones
                // and every other message stay counted.
                let on_turn = self.game.to_act().contains(&seat);
                match self.accept(seat, action).await {
                    Ok(()) => {
                        self.core.metrics.acknowledged(received.elapsed());
                        if on_turn {
                            self.fan.refund(conn);
                        }
                    }
                    Err((code, msg)) => self.refuse(conn, &code, msg),
                }
            }
        }
    }

    /// An action of `seat` chosen at a version before this is stale: the game changed
    /// since in a way it did not see. Moves out of turn of other seats do not count
    /// they never disturb anyone); the seat's own do (a second click of a move it
    /// already made).
    fn stale_before(&self, seat: Seat) -> u64 {
        let o = &self.off_turn;
        if o.last != 0 && o.last == self.moved {
            o.base.max(o.by_seat.get(seat).copied().unwrap_or(0))
        } else {
            self.moved
        }
    }

    fn done(&self) -> bool {
        matches!(
            self.record.status,
            TableStatus::Finished | TableStatus::Abandoned
        ) && self.fan.is_empty()
    }

    /// Runs the table until it is over and nobody is connected, or the server stops.
    async fn run(mut self, mut rx: mpsc::Receiver<Cmd>) {
        let id = self.record.id;
        self.core
            .metrics
            .live_tables
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let begun = AssertUnwindSafe(self.begin()).catch_unwind().await;
        let mut alive = match begun {
            Ok(()) => true,
            Err(panic) => self.recover_or_give_up(panic).await,
        };
        let mut panics_in_a_row = 0;
        // A step that set an ending and then panicked, once recovered, must not wait for
        // another command: the ending is checked before every step.
        while alive && !self.told_to_end() {
            match AssertUnwindSafe(self.step(&mut rx)).catch_unwind().await {
                Ok(true) => panics_in_a_row = 0,
                Ok(false) => break,
                Err(panic) => {
                    panics_in_a_row += 1;
                    alive = panics_in_a_row <= MAX_PANICS_IN_A_ROW
                        && self.recover_or_give_up(panic).await;
                }
            }
        }
        // No command is taken any more: senders now fail at once ("table_closed") instead
        // of queueing for a task that will not answer, and the node's ownership check
        // knows the task is ending (`TableHandle::ending`), so that a table released below
        // and not yet out of the registry is not mistaken for one another node took.
        rx.close();
        if panics_in_a_row > MAX_PANICS_IN_A_ROW || !alive {
            // Its connections close with it; the next visit restores it from the store.
            tracing::error!(table = %id, "table task gave up after repeated panics");
        }
        if let Some(p) = self.online.parked.take() {
            drop(p);
            self.core.metrics.parked(-1);
        }
        // Taken apart once: matching it in place in an `if let` chain would drop a
        // `HandedOver` reply unanswered, and the draining node would stop waiting for this
        // task before it released the table.
        let ending = self.ending.take();
        let stepped_down = self.fenced.load(std::sync::atomic::Ordering::Relaxed)
            || matches!(ending, Some(Ending::SteppedDown));
        let (release_to, handed_over) = match ending {
            Some(Ending::Released(to, reply)) => (Some((to, reply)), None),
            Some(Ending::HandedOver(reply)) => (None, Some(reply)),
            Some(Ending::SteppedDown) | None => (None, None),
        };
        let gave_up = panics_in_a_row > MAX_PANICS_IN_A_ROW || !alive;
        if gave_up {
            // Left to a visit (`open`), not restarted by the beat every second.
            self.core.mark_broken(id, true);
        }
        if stepped_down {
            // The new owner holds the table: nothing of it is this node's to change.
            self.core.metrics.cluster("stepped_down");
            if let Some((_, reply)) = release_to {
                let _ = reply.send(None);
            }
        } else if let Some((to, reply)) = release_to {
            // Straight to the node that asked: nobody else can claim it in between.
            let handed = self
                .core
                .store
                .transfer_table(id, &self.core.node, self.epoch, &to)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(table = %id, error = %e, "could not hand a table over");
                    None
                });
            if handed.is_some() {
                self.core.metrics.cluster("released");
            }
            let _ = reply.send(handed);
        } else if !gave_up {
            // Over, idle, or handed over: any node may take it when it is wanted again.
            match self
                .core
                .store
                .release_table(id, &self.core.node, self.epoch)
                .await
            {
                Ok(true) if handed_over.is_some() => self.core.metrics.cluster("handed_over"),
                Ok(_) => {}
                Err(e) => tracing::warn!(table = %id, error = %e, "could not release a table"),
            }
        }
        self.core.forget(id);
        self.core.publish_lobby(id, self.epoch, None);
        if let Some(reply) = handed_over {
            // Its connections close (1013) as the table goes: they reconnect to the next
            // owner. Answered last: the node waits for this before it closes the store.
            self.fan = fanout::Fanout::default();
            let _ = reply.send(());
        }
        self.ended.send_replace(true);
        self.core
            .metrics
            .live_tables
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The start of a table's task: a restored table may have stopped between an action and
    /// the transition it caused.
    async fn begin(&mut self) {
        if let Err(e) = self.settle_now().await {
            tracing::error!(table = %self.record.id, error = %e, "could not complete a round transition");
            self.park(None);
        }
        self.publish(self.info());
        self.schedule_bots();
    }

    /// [`Table::recover`], itself guarded: `false` if recovering panicked too (the same
    /// bug on the stored state), and the task must end.
    async fn recover_or_give_up(&mut self, panic: Box<dyn std::any::Any + Send>) -> bool {
        AssertUnwindSafe(self.recover(panic))
            .catch_unwind()
            .await
            .is_ok()
    }

    /// One turn of the loop: a command, a bot's move, a bot's answer, or the timer.
    /// `false` when the table is done.
    async fn step(&mut self, rx: &mut mpsc::Receiver<Cmd>) -> bool {
        let due = self.bots.due;
        let wake = self.next_wake();
        let spectators = self.fan.spectators_due;
        // Moved out for the select (a future may not borrow the table it reports to);
        // put back below unless it was answered or replaced.
        let mut pending = self.bots.pending.take();
        let mut answered = None;
        // A table that is over and unwatched lingers a little, so a page that is just
        // (re)connecting still finds it; after that it is restored on demand.
        let idle = self.done();
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(cmd) => self.handle(cmd).await,
                None => return false,
            },
            _ = async { tokio::time::sleep_until(due.expect("guarded")).await }, if due.is_some() => {
                self.bot_move();
            }
            r = async { (&mut pending.as_mut().expect("guarded").rx).await }, if pending.is_some() => {
                answered = Some(r);
            }
            _ = async { tokio::time::sleep_until(wake.expect("guarded")).await }, if wake.is_some() => {
                self.on_wake().await;
            }
            _ = async { tokio::time::sleep_until(spectators.expect("guarded").into()).await }, if spectators.is_some() => {
                self.spectators_due();
            }
            _ = tokio::time::sleep(LINGER), if idle => return false,
        }
        self.bot_answer(answered, pending).await;
        self.chat_after_change();
        !self.told_to_end()
    }

    /// Asked to end (stepped down, handed over, released) or fenced off by another node:
    /// the loop takes no further step.
    fn told_to_end(&self) -> bool {
        self.ending.is_some() || self.fenced.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// After a panic inside a step: the table's memory may be half-changed, so it takes
    /// its state again from the store and resyncs everyone (see the module's header).
    async fn recover(&mut self, panic: Box<dyn std::any::Any + Send>) {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        tracing::error!(table = %self.record.id, panic = what, "table task panicked; restarting it from its stored log");
        self.core
            .metrics
            .table_panics
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.bots = bots::BotState::default();
        if !self.take_stored(false).await {
            self.park(None);
        }
    }
}

/// The record of a new, open, public, untimed table of `game` for `seats` players with the
/// game's default options, created by `by` now: what tests and benchmarks start from
/// (`Core::create` stores it).
pub fn open_record(game: &str, seats: usize, by: Uuid) -> Result<TableRecord, TableError> {
    let options = games::check_options(game, &serde_json::json!({}), seats)
        .map_err(|e| TableError::BadTable("bad_options", format!("{e:?}")))?;
    let now = now_ms();
    Ok(TableRecord {
        id: Uuid::new_v4(),
        game: game.to_string(),
        options,
        rules_version: 0,
        seat_count: seats as i32,
        private: false,
        invite_code: None,
        created_by: by,
        created_at: now,
        status: TableStatus::Open,
        bots: None,
        daily: None,
        pace: serde_json::json!({}),
        clock: None,
        updated_at: now,
    })
}

/// Starts the task of a table and registers it. Returns its handle.
/// If the table is already live (a concurrent restore won), that task's handle is returned
/// and `table` is dropped: there is never more than one task per table.
pub fn spawn(table: Table) -> TableHandle {
    let (tx, rx) = mpsc::channel(64);
    let handle = TableHandle {
        id: table.record.id,
        game: table.record.game.clone(),
        private: table.record.private,
        invite_code: table.record.invite_code.clone(),
        epoch: table.epoch,
        claimed_at: Instant::now(),
        pending: table.pending.clone(),
        tx,
        ended: table.ended.subscribe(),
        stepping_down: table.stepping_down.clone(),
    };
    let core = table.core.clone();
    let mut tables = crate::lock(&core.tables);
    if let Some(live) = tables.get(&handle.id) {
        return live.clone();
    }
    tables.insert(handle.id, handle.clone());
    tokio::spawn(table.run(rx));
    handle
}

/// The live table `id`, restoring it from the store if it is not running (a finished
/// match that nobody watched for a while, or a table whose node is gone). `None` if the
/// store does not know it. A table another live node owns is not taken from it
/// (`table_moving`: the request was meant to be forwarded there, `cluster::forward`).
pub async fn open(core: &Core, id: Uuid) -> Result<Option<TableHandle>, TableError> {
    if let Some(h) = core.table(id) {
        if !h.ending() {
            return Ok(Some(h));
        }
        // Its task is ending (the match over and nobody left, a hand-over): it would only
        // answer `table_closed`. Once it has let go of the table, the table is restored
        // below like any other; should it take longer than 5 s, the lookup below still
        // finds the ending task, and the caller hears `table_closed`.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), h.ended()).await;
    }
    // One claim at a time on this node: two claims of one table here would leave the
    // task holding the older epoch.
    let _one = core.opening.lock().await;
    if let Some(h) = core.table(id) {
        return Ok(Some(h));
    }
    // `table_moving` is the expected answer while a table changes nodes: logged as such
    // (the server's request log does not count it as a failure).
    if core.draining() {
        return match core.store.table_owner(id).await? {
            None => Ok(None),
            Some(_) => {
                tracing::info!(table = %id, "table_moving: this node is draining and takes no table");
                Err(TableError::Moving)
            }
        };
    }
    let Some(epoch) = core.store.claim_table(id, &core.node).await? else {
        return match core.store.table_owner(id).await? {
            None => Ok(None),
            Some(_) => {
                tracing::info!(table = %id, "table_moving: another node holds the table");
                Err(TableError::Moving)
            }
        };
    };
    // Read after the claim: whatever the previous owner wrote is in, and it can write
    // nothing more.
    let Some(st) = core.store.load_table(id).await? else {
        return Ok(None);
    };
    let table = restore(core.clone(), st, epoch).map_err(|e| {
        tracing::error!(table = %id, error = %e, "could not restore a table on demand");
        core.mark_broken(id, true);
        TableError::Broken
    })?;
    core.mark_broken(id, false);
    Ok(Some(spawn(table)))
}

/// Ends every table task of this node, each once it has done what was sent to it before (a
/// move is stored and answered); what arrives after is not taken, and no client was told it
/// was. Each releases its table, and is waited for until it has ended or 10 s have passed
/// (then a warning names it). Returns how many tasks there were. Called before the store
/// closes: a task still running then would fail its next write and park.
pub async fn stop_tables(core: &Core) -> usize {
    // Set on SQLite too: a housekeeping beat already under way then claims nothing more
    // (the tables released here would be orphans to it), and the matcher seats nobody.
    core.start_draining();
    // No table is created or claimed here once draining, but one may have been starting
    // as it was set: take what is running, until nothing is (a few rounds). Tasks by
    // (table, epoch): a table released in one round and claimed again meanwhile (by a beat
    // that began before draining was set) is a new task, stopped in turn.
    let mut stopped = std::collections::HashSet::new();
    for _ in 0..5 {
        // Whoever was creating or claiming has finished.
        drop(core.opening.lock().await);
        // Each waited for once: one that did not stop within its 10 s is not waited for again.
        let handles: Vec<_> = core
            .tables()
            .into_iter()
            .filter(|h| !stopped.contains(&(h.id, h.epoch)))
            .collect();
        if handles.is_empty() {
            break;
        }
        stopped.extend(handles.iter().map(|h| (h.id, h.epoch)));
        let waits = handles.into_iter().map(|h| async move {
            let stop = async {
                let (tx, _answer) = oneshot::channel();
                // Refused by a task that is ending already (it takes no more commands):
                // that one is waited for all the same.
                let _ = h.send(Cmd::HandOver { reply: tx }).await;
                h.ended().await;
            };
            if tokio::time::timeout(Duration::from_secs(10), stop)
                .await
                .is_err()
            {
                tracing::warn!(table = %h.id, "a table did not stop within 10 s");
            }
        });
        futures_util::future::join_all(waits).await;
    }
    stopped.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of Trump for two, open, owned by this node.
    async fn a_table(core: &Core) -> TableHandle {
        let record = open_record("trump", 2, Uuid::new_v4()).expect("a trump record");
        core.create(record, vec![Occupant::Empty; 2])
            .await
            .expect("a new table")
    }

    /// A table asked to hand itself over (the node is stopping) answers only once it has
    /// released the table in the store and left the registry: the node waits for that
    /// answer before it closes the store. It used to drop the answer unsent as the task
    /// began to end, so the node stopped waiting while the release was still under way.
    #[tokio::test]
    async fn a_table_handed_over_answers_once_it_has_released_the_table() {
        let app = crate::testing::core("sqlite::memory:").await;
        let table = a_table(&app).await;
        let owner = app.store.table_owner(table.id).await.unwrap().unwrap();
        assert_eq!(owner.node.as_deref(), Some(app.node.as_str()));
        assert!(!table.ending());

        let (reply, answer) = oneshot::channel();
        table.send(Cmd::HandOver { reply }).await.unwrap();
        answer
            .await
            .expect("answered, not dropped as the task ended");
        assert!(table.ending(), "an ended task takes no more commands");
        assert!(app.table(table.id).is_none(), "out of the registry");
        let owner = app.store.table_owner(table.id).await.unwrap().unwrap();
        assert_eq!(owner.node, None, "released in the store");
        assert!(
            app.metrics
                .render()
                .contains("fib_cluster_events_total{event=\"handed_over\"} 1\n"),
            "counted as handed over"
        );
        let refused = table
            .send(Cmd::StepDown)
            .await
            .expect_err("a command to an ended task fails at once");
        assert_eq!(refused.code(), "table_closed");
        app.store.close().await;
    }

    /// A node's stop hands every table over and waits for each: afterwards none runs, each
    /// is released in the store and counted once.
    #[tokio::test]
    async fn stopping_the_tables_releases_each_and_counts_it_once() {
        let app = crate::testing::core("sqlite::memory:").await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(a_table(&app).await.id);
        }
        assert_eq!(stop_tables(&app).await, 3);
        assert_eq!(app.live(), 0);
        for id in ids {
            let owner = app.store.table_owner(id).await.unwrap().unwrap();
            assert_eq!(owner.node, None, "released in the store");
        }
        assert!(
            app.metrics
                .render()
                .contains("fib_cluster_events_total{event=\"handed_over\"} 3\n")
        );
        app.store.close().await;
    }

    /// A table whose task was asked to hand itself over and is stuck in the middle of its
    /// ending: another connection holds SQLite's write lock, so its release waits until
    /// [`MidEnding::let_go`].
    struct MidEnding {
        app: Core,
        table: TableHandle,
        /// The hand-over's answer.
        answer: oneshot::Receiver<()>,
        lock: sqlx::SqliteConnection,
        dir: std::path::PathBuf,
    }

    impl MidEnding {
        async fn new() -> MidEnding {
            use sqlx::Connection;
            let dir = std::env::temp_dir().join(format!("fib-table-unit-{}", Uuid::new_v4()));
            let url = format!("sqlite://{}/fib.db", dir.display());
            let app = crate::testing::core(&url).await;
            let table = a_table(&app).await;
            let mut lock = sqlx::SqliteConnection::connect(&url).await.unwrap();
            sqlx::raw_sql("BEGIN IMMEDIATE")
                .execute(&mut lock)
                .await
                .unwrap();
            let (reply, answer) = oneshot::channel();
            table.send(Cmd::HandOver { reply }).await.unwrap();
            let ending = async {
                while !table.ending() {
                    tokio::task::yield_now().await;
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(5), ending)
                .await
                .expect("the task begins to end");
            MidEnding {
                app,
                table,
                answer,
                lock,
                dir,
            }
        }

        /// Lets the release through: the task ends.
        async fn let_go(
            mut self,
        ) -> (Core, TableHandle, oneshot::Receiver<()>, std::path::PathBuf) {
            use sqlx::Connection;
            sqlx::raw_sql("COMMIT")
                .execute(&mut self.lock)
                .await
                .unwrap();
            self.lock.close().await.unwrap();
            (self.app, self.table, self.answer, self.dir)
        }
    }

    /// A node's stop waits also for a table whose task was ending already when the stop
    /// began (it refuses the hand-over, taking no more commands), until it has released
    /// its table: only then may the store close.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stopping_waits_for_a_table_that_was_ending_already() {
        let mid = MidEnding::new().await;
        let stop = tokio::spawn({
            let app = mid.app.clone();
            async move { stop_tables(&app).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(
            !stop.is_finished(),
            "the stop returned while the table was still releasing itself"
        );
        let (app, table, _, dir) = mid.let_go().await;
        assert_eq!(stop.await.unwrap(), 1);
        assert!(app.table(table.id).is_none());
        let owner = app.store.table_owner(table.id).await.unwrap().unwrap();
        assert_eq!(owner.node, None, "released in the store");
        app.store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A task that is ending takes no more commands, and `ended` resolves only once it has
    /// released its table and left the registry; a visit meanwhile waits for that and then
    /// restores the table, rather than being handed the ending task (which would only
    /// answer `table_closed`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_visit_to_an_ending_table_waits_for_it_and_restores_the_table() {
        let mid = MidEnding::new().await;
        let visit = tokio::spawn({
            let (app, id) = (mid.app.clone(), mid.table.id);
            async move { open(&app, id).await }
        });
        // The task cannot release its table while the lock is held: it is still ending,
        // and still in the registry, when the visit asks for it.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(mid.app.table(mid.table.id).is_some_and(|h| h.ending()));
        let (app, table, answer, dir) = mid.let_go().await;
        answer.await.expect("the hand-over is answered");
        let again = visit
            .await
            .unwrap()
            .expect("a visit")
            .expect("the table exists");
        assert!(!again.ending(), "a live task, not the ending one");
        assert!(again.epoch > table.epoch, "claimed again: {}", again.epoch);
        tokio::time::timeout(std::time::Duration::from_secs(5), table.ended())
            .await
            .expect("the old task has ended");
        stop_tables(&app).await;
        app.store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
}
