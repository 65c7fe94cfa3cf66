//! Changes of a table's game: actions, round and match transitions, and their persistence.
//!
//! Every change is worked out on a [`Draft`]: a copy of the game and rounds plus the store
//! writes that record it. The draft's writes go to the single store writer as one unit
//! (grouped there with other tables' units into one transaction); only when that unit is
//! durable is the draft adopted and broadcast. So nobody ever hears of a change the
//! database does not have ("acknowledged = durable"), and a failed write changes nothing.

use std::sync::Arc;

use game_core::{Phase, Seat, Seed};
use games::{ActionError, DynGame};
use serde_json::{Value, json};
use store::{ActionRecord, RoundRecord, StoreError, TableStatus, TableWrite, WriteOp};

use super::{RoundState, Table};
use crate::time::now_ms;

/// A change being prepared: the table as it will be, and the writes that make it so.
pub(super) struct Draft {
    pub game: Box<dyn DynGame>,
    /// Shared with the table until a round starts or ends ([`Arc::make_mut`]): a move
    /// copies no round (a long match has hundreds).
    pub rounds: Arc<Vec<RoundState>>,
    pub status: TableStatus,
    pub seq: i64,
    pub ops: Vec<WriteOp>,
    pub events: Vec<Value>,
    /// The seats' time banks once the change is made, if they changed.
    pub banks: Option<Vec<u64>>,
    /// The seat whose action the change is, if any: its move's clock stops.
    pub actor: Option<Seat>,
    /// The actor's seat was not on turn.
    pub off_turn: bool,
}

impl Draft {
    /// Logs `seat`'s accepted action as the next of the current round.
    fn append(&mut self, seat: Seat, action: Value) {
        let round = self.rounds.last().map(|r| r.round).unwrap_or(0);
        self.ops.push(WriteOp::AppendAction(ActionRecord {
            round_no: round as i32,
            seq: self.seq,
            seat: seat as i32,
            action,
        }));
        self.seq += 1;
    }
}

/// A fresh round seed from the OS's CSPRNG.
fn fresh_seed() -> Seed {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).expect("the OS random source is available");
    Seed(b)
}

impl Table {
    pub(super) fn draft(&self) -> Draft {
        Draft {
            game: self.game.clone_box(),
            rounds: self.rounds.clone(),
            status: self.record.status,
            seq: self.seq,
            ops: Vec::new(),
            events: Vec::new(),
            banks: None,
            actor: None,
            off_turn: false,
        }
    }

    /// Writes `ops` as one durable unit through the store's single writer.
    pub(super) async fn persist(&self, ops: Vec<WriteOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        let asked = std::time::Instant::now();
        let write = self.core.writer.write(TableWrite {
            table: self.record.id,
            epoch: Some(self.epoch),
            now: now_ms(),
            ops,
        });
        let mut stepping_down = self.stepping_down.subscribe();
        let written = tokio::select! {
            biased;
            written = write => written,
            // The node let go of the table (`TableHandle::step_down`): the task ends
            // without waiting for the database (the unit, queued, may still be written).
            _ = stepping_down.wait_for(|&s| s) => {
                tracing::warn!(table = %self.record.id, "this node stepped down from the table during a write: leaving it unconfirmed");
                self.fenced.store(true, std::sync::atomic::Ordering::Relaxed);
                Err(StoreError::Unavailable(
                    "this node stepped down from the table before the write was confirmed".into(),
                ))
            }
        };
        if let Err(e) = &written {
            self.note_fenced(e);
        }
        self.core.metrics.table_write(asked.elapsed());
        written
    }

    /// Persists a draft, then adopts it and tells everyone. On a write error nothing
    /// changed (the error is the caller's to report).
    pub(super) async fn commit(&mut self, d: Draft) -> Result<(), StoreError> {
        let Draft {
            game,
            rounds,
            status,
            seq,
            ops,
            events,
            banks,
            actor,
            off_turn,
        } = d;
        // A move out of turn that made no transition (a round's end, the match's).
        let off_turn =
            off_turn && status == self.record.status && rounds.len() == self.rounds.len();
        let abandoning = ops.iter().find_map(|op| match op {
            WriteOp::Abandon { seats } => Some(seats.clone()),
            _ => None,
        });
        self.persist(ops).await?;
        self.game = game;
        self.rounds = rounds;
        if status == TableStatus::Finished {
            self.bots.due = None;
        }
        self.record.status = status;
        self.seq = seq;
        for s in abandoning.unwrap_or_default() {
            self.online.abandoned[s as usize] = true;
        }
        self.adopt_clocks(actor, banks);
        let before = self.moved;
        self.version += 1;
        self.moved = self.version;
        if let (true, Some(seat)) = (off_turn, actor) {
            if self.off_turn.last != before || self.off_turn.last == 0 {
                self.off_turn.base = before;
                self.off_turn.by_seat = vec![0; self.seats.len()];
            }
            self.off_turn.last = self.version;
            if let Some(v) = self.off_turn.by_seat.get_mut(seat) {
                *v = self.version;
            }
        }
        self.broadcast(&events);
        Ok(())
    }

    /// Finishes whatever transition the game is waiting for, on the draft: ends a finished
    /// round, ends a finished match, or deals the next round. Idempotent: run again on the
    /// same state it plans nothing (it is also how recovery completes a transition a crash
    /// interrupted).
    pub(super) async fn settle(&self, d: &mut Draft) -> Result<(), StoreError> {
        if d.status != TableStatus::Playing {
            return Ok(());
        }
        loop {
            if d.game.phase() == Phase::Playing {
                return Ok(());
            }
            let totals = d.game.scores();
            if let Some(r) = Arc::make_mut(&mut d.rounds).last_mut().filter(|r| !r.ended) {
                d.ops.push(WriteOp::EndRound {
                    round_no: r.round as i32,
                    result: json!({ "totals": totals }),
                    totals: totals.clone(),
                });
                r.ended = true;
            }
            if d.game.phase() == Phase::Finished {
                let outcome = d.game.outcome().expect("a finished game has an outcome");
                // Whoever a bot is still standing in for stayed away to the end.
                let gone = self.abandoning_seats();
                if !gone.is_empty() {
                    d.ops.push(WriteOp::Abandon {
                        seats: gone.clone(),
                    });
                }
                let mut abandoned = self.online.abandoned.clone();
                for &s in &gone {
                    abandoned[s as usize] = true;
                }
                d.ops.push(WriteOp::FinishMatch {
                    totals: outcome.scores.clone(),
                    winners: super::online::winners_staying(&outcome, &abandoned)
                        .into_iter()
                        .map(|s| s as i32)
                        .collect(),
                });
                d.status = TableStatus::Finished;
                return Ok(());
            }
            // Deal the next round: the seed is stored (in this same unit) before anything
            // of it is shown. A daily table's first round is the day's deal, the same for
            // everybody.
            let seed = match (&self.record.daily, d.rounds.is_empty()) {
                (Some(key), true) => {
                    let hex = self
                        .core
                        .store
                        .daily_seed(key, Some(&fresh_seed().to_hex()), now_ms())
                        .await?
                        .ok_or_else(|| StoreError::Corrupt(format!("no daily seed for {key}")))?;
                    Seed::from_hex(&hex)
                        .ok_or_else(|| StoreError::Corrupt(format!("daily seed of {key}")))?
                }
                _ => fresh_seed(),
            };
            let evs = match d.game.start_round(&seed) {
                Ok(evs) => evs,
                Err(e) => {
                    tracing::error!(table = %self.record.id, error = %e, "start_round refused");
                    return Ok(());
                }
            };
            let state = RoundState::new(d.game.round(), seed, false);
            d.ops.push(WriteOp::StartRound(RoundRecord {
                round_no: state.round as i32,
                seed_hex: seed.to_hex(),
                commitment: state.commitment.clone(),
                started_at: now_ms(),
                ended_at: None,
                result: None,
            }));
            d.events.push(
                serde_json::to_value(protocol::ServerEvent::RoundDealt {
                    round: state.round,
                    seed_sha256: state.commitment.clone(),
                })
                .expect("an event serializes"),
            );
            d.events.extend(evs);
            Arc::make_mut(&mut d.rounds).push(state);
            d.seq = 0;
        }
    }

    /// Completes a pending transition at once (after a restore), if there is one.
    pub(super) async fn settle_now(&mut self) -> Result<(), StoreError> {
        let mut d = self.draft();
        self.settle(&mut d).await?;
        if !d.ops.is_empty() {
            self.commit(d).await?;
        }
        Ok(())
    }

    /// Applies, persists (with any transition it causes, in one unit), then publishes one
    /// action of `seat`.
    pub(super) async fn accept(
        &mut self,
        seat: Seat,
        action: Value,
    ) -> Result<(), (String, String)> {
        // One code for every status but `playing` (protocol.md §3.5), and a message that
        // says which.
        let not_now = match self.record.status {
            TableStatus::Playing => None,
            TableStatus::Open => Some("the match has not started"),
            TableStatus::Finished => Some("the match is over"),
            TableStatus::Abandoned => Some("the table was abandoned: no match is played here"),
        };
        if let Some(why) = not_now {
            return Err(("not_started".into(), why.into()));
        }
        if self.online.parked.is_some() {
            // Nothing can be stored now (a bot's answer that was on its way ends here).
            return Err((
                "table_parked".into(),
                "the table is paused: the server cannot save moves right now".into(),
            ));
        }
        let mut d = self.draft();
        d.actor = Some(seat);
        d.off_turn = !self.game.to_act().contains(&seat);
        d.events = match d.game.apply_json(seat, &action) {
            Ok(ev) => ev,
            Err(ActionError::Decode(m)) => {
                return Err((
                    "bad_action".into(),
                    format!("not an action of this game: {m}"),
                ));
            }
            Err(ActionError::UnknownField(m)) => return Err(("unknown_field".into(), m)),
            Err(ActionError::Rule(e)) => return Err((e.code.to_string(), e.message)),
        };
        let round = d.rounds.last().map(|r| r.round).unwrap_or(0);
        let action_for_retry = action.clone();
        d.append(seat, action);
        let stored = match self.settle(&mut d).await {
            Ok(()) => {
                self.add_clock_op(&mut d);
                self.commit(d).await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            if self.told_to_end() {
                // This node let go of the table meanwhile: the socket closes (1013) once
                // the step ends, and the player reconnects to its next owner.
                return Err((
                    "table_closed".into(),
                    "this server let go of the table before your move was confirmed (another takes it over): reconnect, and see whether it was stored".into(),
                ));
            }
            tracing::error!(table = %self.record.id, error = %e, "could not store an action");
            let (round_before, seq_before) = (round, self.seq);
            if !self.reload().await {
                // Not even readable: the move is owed and stored once the database is back.
                self.park(Some((seat, action_for_retry)));
                return Err((
                    "table_parked".into(),
                    "the server cannot save moves right now: the table is paused and stores your move as soon as it can".into(),
                ));
            }
            let slot_taken = self.rounds.last().map(|r| r.round).unwrap_or(0) != round_before
                || self.seq > seq_before;
            if slot_taken {
                // Something was stored in this move's place (perhaps this very move, its
                // commit cut off): the table now shows the stored truth.
                return Err((
                    "internal".into(),
                    "the server could not confirm this move was saved; the table now shows what is stored: check it and try again".into(),
                ));
            }
            // Stored nothing: the table parks and retries this move until it is stored.
            self.park(Some((seat, action_for_retry)));
            return Err((
                "table_parked".into(),
                "the server could not save your move: the table is paused and keeps trying to store it; you will see it played once it is saved".into(),
            ));
        }
        self.core
            .metrics
            .actions_accepted
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.queue_off_turn(seat);
        self.schedule_bots();
        Ok(())
    }

    /// The clock part of a change: banks charged for the seats whose clocks it stops (and
    /// any spent by a timeout), stored in the same unit.
    fn add_clock_op(&self, d: &mut Draft) {
        let playing = d.status == TableStatus::Playing && d.game.phase() == Phase::Playing;
        let to_act = d.game.to_act();
        // The timed-out moves still owed once this change is made: the actor has made its
        // move, and a seat the game no longer waits for owes nothing. Worked out only when
        // a seat owes one (rare): every other move leaves the debts as they are, none.
        let owes = self.online.owes.iter().any(|&o| o).then(|| {
            (0..self.online.owes.len())
                .map(|s| {
                    self.online.owes[s] && d.actor != Some(s) && playing && to_act.contains(&s)
                })
                .collect::<Vec<bool>>()
        });
        let banks = self.clock_banks(d.actor, &to_act, playing);
        // A debt paid is stored too, or a restart would make the seat owe its next move.
        let paid = owes.as_ref().is_some_and(|o| *o != self.online.owes);
        if banks.is_some() || paid {
            let stored = banks.unwrap_or_else(|| self.online.banks.clone());
            let owes = owes.as_deref().unwrap_or(&self.online.owes);
            d.ops.push(WriteOp::SetClock(super::online::stored_clock(
                &stored, owes,
            )));
            d.banks = Some(stored);
        }
    }

    /// A parked table stores the move it owes: `Err(None)` if the rules no longer take
    /// it, `Err(Some(_))` if the write fails again.
    pub(super) async fn store_owed(
        &mut self,
        seat: Seat,
        action: Value,
    ) -> Result<(), Option<StoreError>> {
        if self.record.status != TableStatus::Playing {
            return Err(None);
        }
        let mut d = self.draft();
        d.actor = Some(seat);
        d.events = d.game.apply_json(seat, &action).map_err(|_| None)?;
        d.append(seat, action);
        self.settle(&mut d).await.map_err(Some)?;
        self.add_clock_op(&mut d);
        self.commit(d).await.map_err(Some)?;
        self.queue_off_turn(seat);
        Ok(())
    }

    pub(super) fn refuse(&mut self, conn: u64, code: &str, message: String) {
        self.core.metrics.rejected(code);
        let msg = protocol::ServerMsg::Error {
            code: code.to_string(),
            message,
            version: self.version,
            retry_after_ms: None,
        };
        self.send_to(conn, serde_json::to_string(&msg).expect("serializes"));
    }
}
