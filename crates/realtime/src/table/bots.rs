//! When a table's bots move, and the worker pool that thinks for them.
//!
//! A bot's move is computed off the runtime, on a blocking thread, from a copy of the game
//! (where it is handed its seat's view only, `DynGame::bot_action`); the table never waits
//! for it, and drops an answer that comes back after the table moved on.
//!
//! People come first. Tables of bots only share the cores less one (at least one worker),
//! so however many of them run, they never hold every core. A table where a person is
//! connected never queues behind them: it has a pool of its own, wider than the cores
//! ([`PEOPLE_WORKERS_PER_CORE`]), because a bot's budget is wall-clock time: several
//! people's bots thinking at once share the CPU and each still answers within its budget
//! (with fewer samples), instead of each waiting for the one before. A request queued
//! for the bots-only pool when a person arrives is asked again on the people's pool.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use game_core::{Phase, Seat};
use games::BotLevel;
use serde_json::Value;
use store::TableStatus;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use super::Table;

#[derive(Default)]
pub(super) struct BotState {
    /// When the next bot move is due.
    pub due: Option<tokio::time::Instant>,
    /// The table's `moved` that `due` was set for: rescheduling for the same position
    /// never pushes a due move later (presence changes must not stall bots).
    due_for: Option<u64>,
    counter: u64,
    /// A bot move being computed off the runtime, for the table version it was asked at.
    pub pending: Option<PendingBot>,
    /// The version a bot move was last asked for (kept here while `pending` is out for
    /// the select), so that a reconnect does not ask again for the same position.
    asked: Option<u64>,
    /// Bot seats to ask for off-turn moves: a bot's own sets change only in its
    /// own turn, so it is asked right after its turn has passed, and again after each
    /// off-turn move it makes, until it wants none.
    off_turn_due: Vec<Seat>,
}

/// A bot's move on its way back from the worker pool. It is dropped unless the table is
/// still at `version` when it arrives (anything that happened since may change the move).
pub(super) struct PendingBot {
    version: u64,
    seat: Seat,
    /// Asked for an off-turn move (`None` then means "nothing worth doing").
    off_turn: bool,
    pub rx: oneshot::Receiver<Option<Value>>,
}

/// Bot moves computed at once for tables with people at them, per core: enough for several
/// such tables to think together, few enough that the runtime's own threads (sockets,
/// fan-out, the store writer) still get the CPU.
const PEOPLE_WORKERS_PER_CORE: usize = 2;

/// The bot workers: `bots_only` for tables of bots alone, watched or not (the cores less
/// one, at least one), `people` for tables where a seated person is connected.
struct Pool {
    bots_only: Arc<Semaphore>,
    people: Arc<Semaphore>,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        Pool {
            bots_only: Arc::new(Semaphore::new(n.saturating_sub(1).max(1))),
            people: Arc::new(Semaphore::new((n * PEOPLE_WORKERS_PER_CORE).max(4))),
        }
    })
}

/// A worker for a table: from its own pool when people are there.
async fn worker(people: bool) -> Option<OwnedSemaphorePermit> {
    let p = pool();
    let sem = if people { &p.people } else { &p.bots_only };
    sem.clone().acquire_owned().await.ok()
}

impl Table {
    /// After `seat` acted: if it is a bot whose turn has passed (or that moved off turn)
    /// and the game allows it moves off turn, it is asked for one.
    pub(super) fn queue_off_turn(&mut self, seat: Seat) {
        let thinking_bot = self.plays_as_bot(seat).is_some_and(|l| l != BotLevel::Easy);
        if thinking_bot
            && self.game.phase() == Phase::Playing
            && !self.game.to_act().contains(&seat)
            && !self.bots.off_turn_due.contains(&seat)
            && self.game.has_legal(seat)
        {
            self.bots.off_turn_due.push(seat);
        }
    }

    /// A person arrived at a table of bots only: a bot request still queued for the
    /// bots-only pool is asked again, on the people's pool.
    pub(super) fn people_arrived(&mut self) {
        if self.bots.pending.is_some() {
            self.bots.asked = None;
        }
    }

    pub(super) fn schedule_bots(&mut self) {
        let earlier = self
            .bots
            .due
            .take()
            .filter(|_| self.bots.due_for == Some(self.moved));
        if self.bots.asked == Some(self.moved) {
            // Its move for this very position is on its way.
            return;
        }
        if self.record.status != TableStatus::Playing
            || self.game.phase() != Phase::Playing
            || self.online.parked.is_some()
        {
            self.bots.off_turn_due.clear();
            return;
        }
        let bot_to_act = self
            .game
            .to_act()
            .iter()
            .any(|&s| self.plays_as_bot(s).is_some());
        if bot_to_act || !self.bots.off_turn_due.is_empty() {
            // An off-turn ask comes first and at once: it is no move people need time to
            // follow (most answers are "nothing"), and the bot on turn still gets its
            // pause after it.
            let delay = if self.bots.off_turn_due.is_empty() && self.humans_watching() {
                Duration::from_millis(self.core.config.bot_delay_ms)
            } else {
                Duration::ZERO
            };
            let at = tokio::time::Instant::now() + delay;
            self.bots.due = Some(earlier.map_or(at, |e| e.min(at)));
            self.bots.due_for = Some(self.moved);
        }
    }

    /// Asks the worker pool for the move of the bot whose turn it is. The game is cloned
    /// to the worker, and there the bot is handed that seat's view only
    /// (`DynGame::bot_action`). The move comes back through [`Table::bot_answer`].
    pub(super) fn bot_move(&mut self) {
        self.bots.due = None;
        // Off-turn asks first: they are quick (no search) and come before the next
        // player's turn, as a person's rearranging would.
        while let Some(seat) = self.bots.off_turn_due.pop() {
            let Some(level) = self.plays_as_bot(seat) else {
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
            .find_map(|s| Some((s, self.plays_as_bot(s)?)))
        else {
            return;
        };
        self.bots.counter += 1;
        let seed = self.bots.counter ^ (self.record.id.as_u128() as u64);
        let game = self.game.clone_box();
        let budget = games::BotBudget {
            time: Some(Duration::from_millis(self.core.config.bot_budget_ms)),
            samples: None,
        };
        self.ask_pool(seat, false, move || {
            game.bot_action(seat, level, seed, budget)
        });
    }

    /// Runs a bot's decision on the worker pool.
    fn ask_pool(
        &mut self,
        seat: Seat,
        off_turn: bool,
        decide: impl FnOnce() -> Option<Value> + Send + 'static,
    ) {
        let (tx, rx) = oneshot::channel();
        // The people's pool is for tables where a seated person waits for the bots. Anyone
        // watching a table of bots slows them down to be followed (`bot_delay_ms`), but
        // takes no worker from the people: a walk's spectators of a hundred bots-only
        // tables tripled the bots' wait for a person playing elsewhere.
        let people = self.person_connected();
        tokio::spawn(async move {
            let Some(permit) = worker(people).await else {
                return;
            };
            // Replaced while it queued (the table moved on, or asked again on the
            // people's pool): nobody would read the answer.
            if tx.is_closed() {
                return;
            }
            let work = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                decide()
            });
            if let Ok(action) = work.await {
                let _ = tx.send(action);
            }
        });
        // A newer request replaces an older one, whose answer is then never read.
        self.bots.asked = Some(self.moved);
        self.bots.pending = Some(PendingBot {
            version: self.moved,
            seat,
            off_turn,
            rx,
        });
    }

    /// After the table's select: plays a bot's answer that came back, or puts the pending
    /// request back.
    pub(super) async fn bot_answer(
        &mut self,
        answered: Option<Result<Option<Value>, oneshot::error::RecvError>>,
        pending: Option<PendingBot>,
    ) {
        match (answered, pending) {
            (Some(r), Some(p)) => {
                // A worker that died (`Err`) gives no move; the next schedule retries.
                let action = r.unwrap_or(None);
                if action.is_none() && !p.off_turn {
                    self.bots.due = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                }
                self.bot_done(p, action).await;
            }
            (None, Some(p)) if self.bots.pending.is_none() => self.bots.pending = Some(p),
            // Replaced by a newer request (the select ran `bot_move`): an off-turn ask
            // is still owed, and the new request's answer will schedule it.
            (None, Some(p)) if p.off_turn => self.queue_off_turn(p.seat),
            _ => {}
        }
    }

    /// A bot's move is back from the pool: play it if the table has not moved on.
    async fn bot_done(&mut self, p: PendingBot, action: Option<Value>) {
        let PendingBot {
            version,
            seat,
            off_turn,
            ..
        } = p;
        self.bots.asked = None;
        let still_a_bot =
            self.record.status == TableStatus::Playing && self.plays_as_bot(seat).is_some();
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
                    Err((code, msg)) if version == self.moved => {
                        // Refused at the position it was chosen for: a bug.
                        self.core.metrics.rejected(&code);
                        tracing::error!(table = %self.record.id, seat, code, msg, "bot off-turn move refused");
                    }
                    // Overtaken (e.g. a new round): ask afresh.
                    Err(_) => self.queue_off_turn(seat),
                }
            }
            self.schedule_bots();
            return;
        }
        // Moves out of turn of other seats since it was asked do not make its move stale
        // as for a person's.
        let still_its_turn =
            version >= self.stale_before(seat) && still_a_bot && self.game.to_act().contains(&seat);
        if !still_its_turn {
            // Stale: whatever changed has scheduled what comes next.
            self.schedule_bots();
            return;
        }
        match action {
            Some(action) => {
                let overtaken = version != self.moved;
                if let Err((code, msg)) = self.accept(seat, action).await {
                    if overtaken {
                        // Chosen before another seat's move out of turn, and refused now:
                        // asked again on the game as it is.
                        self.schedule_bots();
                        return;
                    }
                    // A bot's illegal move is a bug: counted like any refusal, and logged.
                    self.core.metrics.rejected(&code);
                    tracing::error!(table = %self.record.id, seat, code, msg, "bot move refused");
                    // Try again later rather than spin.
                    self.bots.due = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                }
            }
            None => tracing::error!(table = %self.record.id, seat, "bot has no legal move"),
        }
    }
}
