//! Bringing a table back from the store: its match is replayed from each round's seed and
//! action log, in order (the rules are deterministic), and an ended round's deal is
//! recomputed the same way for anyone who wants to verify it.

use game_core::Seed;
use serde_json::Value;
use store::StoredTable;

use super::{RoundState, Table};
use crate::Core;

/// Rebuilds a table from the store: its match is replayed from each round's seed and
/// action log, in order.
pub fn restore(core: Core, st: StoredTable, epoch: i64) -> Result<Table, String> {
    let StoredTable {
        record,
        seats,
        rounds,
        actions,
        abandoned,
        ..
    } = st;
    let updated_at = record.updated_at;
    let mut table = Table::new(core, record, seats)
        .map_err(|e| e.to_string())?
        .claimed(epoch);
    if table.game.rules_version() as i32 != table.record.rules_version {
        tracing::warn!(table = %table.record.id, "stored under another rules version");
    }
    let mut actions = actions.into_iter().peekable();
    for r in rounds {
        let seed = Seed::from_hex(&r.seed_hex).ok_or("a stored seed is not 64 hex digits")?;
        table.game.start_round(&seed).map_err(|e| e.to_string())?;
        let mut seq = 0;
        while let Some(a) = actions.next_if(|a| a.round_no == r.round_no) {
            table
                .game
                .apply_json(a.seat as usize, &a.action)
                .map_err(|e| format!("round {} action {}: {e}", a.round_no, a.seq))?;
            seq += 1;
        }
        std::sync::Arc::make_mut(&mut table.rounds).push(RoundState::new(
            r.round_no as u32,
            seed,
            r.ended_at.is_some(),
        ));
        table.seq = seq;
    }
    if abandoned.len() == table.seats.len() {
        table.online.abandoned = abandoned;
    }
    table.resume_clocks(updated_at);
    Ok(table)
}

impl Table {
    /// After a write that failed, or whose outcome is unknown (a commit cut off mid-way
    /// may still have landed): the table takes again exactly what the database holds and
    /// sends everyone a full state. Without this, a move stored despite the error would
    /// leave the table one sequence number behind its log, refusing every later move.
    /// If the database cannot be read either, the table stays as it is (nothing was
    /// adopted) and `false` is returned: the caller parks the table.
    pub(super) async fn reload(&mut self) -> bool {
        self.take_stored(true).await
    }

    /// What [`Table::reload`] does; `after_write` false after a panic (`recover`), which
    /// is logged and counted as a panic already, not as a failed write.
    pub(super) async fn take_stored(&mut self, after_write: bool) -> bool {
        let id = self.record.id;
        if self.told_to_end() {
            // Stepped down (or fenced off): what is stored is another node's to read.
            return false;
        }
        let st = match self.core.store.load_table(id).await {
            Ok(Some(st)) => st,
            Ok(None) => {
                tracing::error!(table = %id, "a live table is not in the store");
                return false;
            }
            Err(e) => {
                tracing::warn!(table = %id, error = %e, "could not reload a table");
                return false;
            }
        };
        let fresh = match restore(self.core.clone(), st, self.epoch) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(table = %id, error = %e, "could not replay a table");
                return false;
            }
        };
        self.game = fresh.game;
        self.rounds = fresh.rounds;
        self.seq = fresh.seq;
        self.seats = fresh.seats;
        self.record.status = fresh.record.status;
        // Presence stays as the table knows it; banks are what is stored, and a clock
        // that was running starts again now.
        self.online.banks = fresh.online.banks;
        self.online.banks_dirty = false;
        self.online.abandoned = fresh.online.abandoned;
        self.online.running.iter_mut().for_each(|r| *r = None);
        self.sync_clocks();
        self.version = self.version.max(fresh.version) + 1;
        self.moved = self.version;
        self.seated = self.version;
        if after_write {
            self.core
                .metrics
                .table_reloads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(table = %id, "table reloaded from the store after a failed write");
        } else {
            tracing::info!(table = %id, "table reloaded from the store after its panic");
        }
        // Every connection gets the whole state: no held document is trusted.
        self.fan.forget_documents();
        self.broadcast(&[]);
        self.schedule_bots();
        true
    }
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
