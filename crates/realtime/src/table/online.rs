//! What a table does because people are people: clocks, presence, bots standing in for
//! players who ran out of time or went away, abandoned matches and expired tables.
//!
//! - **Clocks** (`protocol::Pace`): a seat's clock runs while the game waits for that seat
//!   and a person holds it. A move within `move_s` costs nothing; beyond it the seat's time
//!   bank pays, and when both are spent a bot makes the move for the player. Banks are
//!   stored (`WriteOp::SetClock`) only when they change; after a restart a running clock
//!   resumes from the table's last stored change, with at least a few seconds to go.
//! - **Stand-ins**: a bot of the table's level (normal if it names none) plays a player's
//!   seat after their clock ran out (until they show they are back) or after they stayed
//!   disconnected past the grace period of a live or untimed match (until they reconnect).
//!   Stand-ins only play while some person at the table is connected, or in a
//!   correspondence match, where nobody is expected to stay connected.
//! - **Abandonment**: a match that ends with a stand-in still playing a seat records that
//!   seat as abandoned (rated as losing to everyone else); a live or untimed match with
//!   none of its people connected for `abandon_after_s` ends as abandoned; an open table
//!   nobody joins expires after `open_table_ttl_s`.
//!
//! All of it is driven by one timer per table ([`Table::next_wake`]), so nothing polls.

use std::time::Duration;

use game_core::{Phase, Seat};
use games::BotLevel;
use protocol::{Pace, Presence, SeatClock};
use store::{Occupant, TableStatus, WriteOp};
use tokio::time::Instant;

use super::Table;
use crate::time::now_ms;

/// However long a table was down, a clock that was running resumes with at least this much
/// time left (or its whole allowance, if smaller): a restart is nobody's fault.
const RESUME_AT_LEAST: Duration = Duration::from_secs(30);

/// Why a bot plays a player's seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StandIn {
    /// The player's clock ran out; they have not shown they are back since.
    TimedOut,
    /// The player stayed disconnected past the grace period.
    Gone,
}

/// A table parked after writes failed: it refuses changes and retries on its own.
pub(super) struct Parked {
    pub since: Instant,
    pub retry_at: Instant,
    pub attempts: u32,
    /// A player's move that could not be stored: it is stored when the database is back,
    /// if it is still legal then.
    pub owed: Option<(Seat, serde_json::Value)>,
}

pub(super) struct Online {
    pub pace: Pace,
    /// Per seat: ms left in its time bank.
    pub banks: Vec<u64>,
    /// A bank changed since the last stored `SetClock`.
    pub banks_dirty: bool,
    /// Per seat: when its clock started running for the move it owes.
    pub running: Vec<Option<Instant>>,
    /// Per seat: since when its player has had no connection.
    pub gone_since: Vec<Option<Instant>>,
    pub stand_in: Vec<Option<StandIn>>,
    /// Per seat: its clock ran out on the move the game waits for; that move is the
    /// stand-in's even if the player comes back before it is made (coming back must not
    /// give the clock a fresh start). Only that one move: the debt is paid once the seat
    /// makes a move ([`Table::adopt_clocks`]), even when the game waits for the same seat
    /// again (a rummy draw before its discard, a trick's winner leading the next).
    pub owes: Vec<bool>,
    /// Per seat: stored as having abandoned the match.
    pub abandoned: Vec<bool>,
    /// Since when no seated person has been connected.
    pub deserted_since: Option<Instant>,
    /// An open table's last seat change (or creation, or restore).
    pub open_since: Instant,
    pub parked: Option<Parked>,
}

/// The stored form of the clocks (`WriteOp::SetClock`): the banks as an array, as every
/// build has stored them; while a seat's clock has run out on the move the game waits for
/// (the stand-in owes it), `{"banks":[…],"timed_out":[seats]}`, so that a restart neither
/// gives that move back to the player with a fresh clock nor forgets that the bank is
/// spent (a walk saw both after a restart).
pub(super) fn stored_clock(banks: &[u64], owes: &[bool]) -> serde_json::Value {
    let timed_out: Vec<usize> = (0..owes.len()).filter(|&s| owes[s]).collect();
    if timed_out.is_empty() {
        serde_json::json!(banks)
    } else {
        serde_json::json!({"banks": banks, "timed_out": timed_out})
    }
}

/// Reads [`stored_clock`]'s two forms: the banks, and the seats whose timed-out move is owed.
pub(super) fn read_clock(v: &serde_json::Value) -> (Option<Vec<u64>>, Vec<usize>) {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Banks(Vec<u64>),
        Owing {
            banks: Vec<u64>,
            timed_out: Vec<usize>,
        },
    }
    match <Stored as serde::Deserialize>::deserialize(v) {
        Ok(Stored::Banks(banks)) => (Some(banks), Vec::new()),
        Ok(Stored::Owing { banks, timed_out }) => (Some(banks), timed_out),
        Err(_) => (None, Vec::new()),
    }
}

impl Online {
    /// `timed_out`: seats whose clock ran out on the move the game waits for (stored).
    pub fn new(pace: Pace, seats: usize, banks: Option<Vec<u64>>, timed_out: &[usize]) -> Self {
        let now = Instant::now();
        let full = match pace {
            Pace::Live { bank_s, .. } => u64::from(bank_s) * 1000,
            _ => 0,
        };
        let banks = banks
            .filter(|b| b.len() == seats)
            .unwrap_or_else(|| vec![full; seats]);
        let owes: Vec<bool> = (0..seats).map(|s| timed_out.contains(&s)).collect();
        Online {
            pace,
            banks,
            banks_dirty: false,
            running: vec![None; seats],
            // Nobody is connected when a table starts (or restarts): grace counts from now.
            gone_since: vec![Some(now); seats],
            stand_in: owes
                .iter()
                .map(|&o| o.then_some(StandIn::TimedOut))
                .collect(),
            owes,
            abandoned: vec![false; seats],
            deserted_since: Some(now),
            open_since: now,
            parked: None,
        }
    }

    /// The per-move allowance, if the pace has a clock.
    fn per_move(&self) -> Option<Duration> {
        match self.pace {
            Pace::Untimed => None,
            Pace::Live { move_s, .. } | Pace::Correspondence { move_s } => {
                Some(Duration::from_secs(u64::from(move_s)))
            }
        }
    }

    /// When the clock of `seat`, running since `start`, runs out.
    fn deadline(&self, seat: Seat, start: Instant) -> Option<Instant> {
        Some(start + self.per_move()? + Duration::from_millis(self.banks[seat]))
    }

    /// Charges a clock that stops at `now` to its seat's bank (what went past the per-move
    /// allowance). Returns whether the bank changed.
    fn charge(&mut self, seat: Seat, start: Instant, now: Instant) -> bool {
        let Some(per_move) = self.per_move() else {
            return false;
        };
        let left = charged(self.banks[seat], per_move, start, now);
        let changed = left != self.banks[seat];
        self.banks[seat] = left;
        changed
    }

    /// Disconnection grace, for a pace that has one.
    fn grace(&self, config: &crate::CoreConfig) -> Option<Duration> {
        match self.pace {
            Pace::Correspondence { .. } => None,
            _ => Some(Duration::from_secs(config.disconnect_grace_s)),
        }
    }
}

/// Who won a finished match: the game's winners, unless a seat abandoned it. Then a seat
/// that abandoned never wins, whatever its stand-in did: the winners are those who stayed
/// and come first as the ratings place them (`store::rating::first_of_those_who_stayed`,
/// docs/ratings.md), so a draw with someone who left is the stayers' win.
pub(super) fn winners_staying(outcome: &game_core::Outcome, abandoned: &[bool]) -> Vec<Seat> {
    let seats = outcome.scores.len();
    if abandoned.len() != seats || !abandoned.contains(&true) {
        return outcome.winners.clone();
    }
    let won: Vec<bool> = (0..seats).map(|s| outcome.winners.contains(&s)).collect();
    store::rating::first_of_those_who_stayed(&won, &outcome.scores, abandoned)
}

/// Reads a stored pace, untimed if unreadable (a table from before paces existed has the
/// column's default).
pub(super) fn stored_pace(v: &serde_json::Value) -> Pace {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

impl Table {
    /// The level a bot playing `seat` has: the seat's own bot, or a stand-in for its
    /// player when one may play now.
    pub(super) fn plays_as_bot(&self, seat: Seat) -> Option<BotLevel> {
        match self.seats.get(seat)? {
            Occupant::Bot { .. } => self.bot_level(seat),
            Occupant::Player { .. } => {
                if self.online.stand_in.get(seat).copied().flatten().is_none()
                    && !self.online.owes.get(seat).copied().unwrap_or(false)
                {
                    return None;
                }
                let allowed = matches!(self.online.pace, Pace::Correspondence { .. })
                    || self.person_connected();
                allowed.then(|| self.bots_level().unwrap_or(BotLevel::Normal))
            }
            Occupant::Empty => None,
        }
    }

    /// Whether any seated person has a connection.
    pub(super) fn person_connected(&self) -> bool {
        self.seats.iter().any(|o| match o {
            Occupant::Player { id, .. } => self.fan.connected(*id),
            _ => false,
        })
    }

    /// Whether the match has someone to play for: a seated person connected, or, at a
    /// table of bots only, anyone connected (a spectator, signed in or not).
    pub(super) fn watched(&self) -> bool {
        if self.has_people_seated() {
            self.person_connected()
        } else {
            !self.fan.is_empty()
        }
    }

    /// A connection came or went: desertion (nobody to play for, [`Self::watched`])
    /// starts, or ends.
    pub(super) fn watchers_changed(&mut self) {
        if self.watched() {
            self.online.deserted_since = None;
        } else if self.online.deserted_since.is_none() {
            self.online.deserted_since = Some(Instant::now());
        }
    }

    fn has_people_seated(&self) -> bool {
        self.seats
            .iter()
            .any(|o| matches!(o, Occupant::Player { .. }))
    }

    /// What everyone is shown of a seated player. A stand-in makes them away only while
    /// the match is played: once it is over no stand-in is shown (a walk saw a finished
    /// match show a player `away` with none).
    pub(super) fn presence(&self, seat: Seat, id: uuid::Uuid) -> Presence {
        let standing_in =
            self.record.status == TableStatus::Playing && self.online.stand_in[seat].is_some();
        if !self.fan.connected(id) {
            Presence::Disconnected
        } else if self.fan.all_hidden(id) || standing_in {
            Presence::Away
        } else {
            Presence::Connected
        }
    }

    pub(super) fn stand_in_info(&self, seat: Seat) -> Option<BotLevel> {
        self.online.stand_in[seat].map(|_| self.bots_level().unwrap_or(BotLevel::Normal))
    }

    /// The seats' clocks as everyone sees them (empty when untimed).
    pub(super) fn clocks(&self) -> Vec<SeatClock> {
        if self.online.per_move().is_none() {
            return Vec::new();
        }
        let now = Instant::now();
        (0..self.seats.len())
            .map(|s| SeatClock {
                bank_ms: self.online.banks[s],
                left_ms: self.online.running[s].and_then(|start| {
                    let end = self.online.deadline(s, start)?;
                    Some(end.saturating_duration_since(now).as_millis() as u64)
                }),
            })
            .collect()
    }

    /// Starts the clocks of the seats the game now waits for and stops the others,
    /// charging banks. Called after every change.
    pub(super) fn sync_clocks(&mut self) {
        let now = Instant::now();
        let waiting = self.record.status == TableStatus::Playing
            && self.game.phase() == Phase::Playing
            && self.online.parked.is_none();
        let to_act = if waiting {
            self.game.to_act()
        } else {
            Vec::new()
        };
        for seat in 0..self.seats.len() {
            let person = matches!(self.seats[seat], Occupant::Player { .. });
            if !to_act.contains(&seat) {
                self.online.owes[seat] = false;
            }
            let run = !self.online.owes[seat]
                && self.online.per_move().is_some()
                && person
                && to_act.contains(&seat)
                && self.online.stand_in[seat].is_none();
            match (self.online.running[seat], run) {
                (None, true) => self.online.running[seat] = Some(now),
                (Some(start), false) => {
                    self.online.running[seat] = None;
                    if self.online.charge(seat, start, now) {
                        self.online.banks_dirty = true;
                    }
                }
                _ => {}
            }
        }
    }

    /// The banks to store with the next unit, if any changed: the seats whose clocks that
    /// unit stops are charged first, so the stored bank is the one the move left.
    pub(super) fn clock_banks(
        &self,
        actor: Option<Seat>,
        to_act_after: &[Seat],
        playing_after: bool,
    ) -> Option<Vec<u64>> {
        let now = Instant::now();
        let mut banks = self.online.banks.clone();
        let mut changed = self.online.banks_dirty;
        if let Some(per_move) = self.online.per_move() {
            for (seat, start) in self.online.running.iter().enumerate() {
                let Some(start) = *start else { continue };
                // Each action the game waits for is a move: the seat that acted is charged
                // even when it is on move again (a trick's winner leads the next).
                if playing_after && to_act_after.contains(&seat) && actor != Some(seat) {
                    continue;
                }
                let left = charged(banks[seat], per_move, start, now);
                changed |= left != banks[seat];
                banks[seat] = left;
            }
        }
        changed.then_some(banks)
    }

    /// After a change is stored: its banks become the table's, the clocks it stopped are
    /// stopped without being charged again, and the clocks of the seats now owing a move
    /// start. The seat that acted has made its move: a timed-out move it owed (made by its
    /// stand-in) is paid, and its next move is the player's own, with a fresh clock once
    /// they are back (protocol.md §1.6: each action the game waits for is a move).
    pub(super) fn adopt_clocks(&mut self, actor: Option<Seat>, banks: Option<Vec<u64>>) {
        if let Some(seat) = actor {
            self.online.owes[seat] = false;
        }
        if let Some(banks) = banks {
            self.online.banks = banks;
            self.online.banks_dirty = false;
            let playing =
                self.record.status == TableStatus::Playing && self.game.phase() == Phase::Playing;
            let to_act = if playing {
                self.game.to_act()
            } else {
                Vec::new()
            };
            for (seat, r) in self.online.running.iter_mut().enumerate() {
                if !to_act.contains(&seat) || actor == Some(seat) {
                    *r = None;
                }
            }
        } else if let Some(seat) = actor {
            // Charged nothing (within its allowance): its next move starts a fresh clock.
            self.online.running[seat] = None;
        }
        self.sync_clocks();
    }

    /// Resumes clocks after a restore: a seat the game waits for has been on the clock
    /// since the table's last stored change, but keeps at least [`RESUME_AT_LEAST`].
    pub(super) fn resume_clocks(&mut self, updated_at_ms: i64) {
        // An open table's expiry counts from its last stored change, not from the restart.
        let idle = Duration::from_millis(now_ms().saturating_sub(updated_at_ms).max(0) as u64);
        self.online.open_since = Instant::now()
            .checked_sub(idle)
            .unwrap_or_else(Instant::now);
        // A match nobody comes back to counts as deserted from its last stored change too,
        // not from the restart: a walk found that every restart gave a deserted game of one
        // another 24 h (a server restarted daily never let one go, and loaded them all at
        // every start). As with the clocks, the people get at least the disconnection grace
        // to come back.
        if let Some(after) = self.abandon_after() {
            let grace = Duration::from_secs(self.core.config.disconnect_grace_s);
            let gone = idle.min(after.saturating_sub(after.min(grace)));
            self.online.deserted_since = Some(
                Instant::now()
                    .checked_sub(gone)
                    .unwrap_or_else(Instant::now),
            );
        }
        self.sync_clocks();
        let Some(per_move) = self.online.per_move() else {
            return;
        };
        let now = Instant::now();
        let waited = Duration::from_millis(now_ms().saturating_sub(updated_at_ms).max(0) as u64);
        for seat in 0..self.seats.len() {
            if self.online.running[seat].is_none() {
                continue;
            }
            let allowance = per_move + Duration::from_millis(self.online.banks[seat]);
            let keep = allowance.min(RESUME_AT_LEAST);
            // What the clock had used of this move before the stop counts, downtime
            // included, but never more than the move's own allowance: the bank is only
            // spent by a player's own thinking.
            let used = waited.min(per_move).min(allowance.saturating_sub(keep));
            self.online.running[seat] = Some(now.checked_sub(used).unwrap_or(now));
        }
    }

    /// `seat` gets a new occupant: its presence starts afresh, and an open table's expiry
    /// counts from now.
    pub(super) fn seat_changed(&mut self, seat: Seat, to: &Occupant) {
        let now = Instant::now();
        self.online.open_since = now;
        self.online.stand_in[seat] = None;
        self.online.gone_since[seat] = match to {
            Occupant::Player { id, .. } if !self.fan.connected(*id) => Some(now),
            _ => None,
        };
    }

    /// The match starts: if nobody it plays for is connected, desertion counts from now.
    pub(super) fn match_started(&mut self) {
        self.online.deserted_since = (!self.watched()).then(Instant::now);
        self.sync_clocks();
    }

    /// A connection of player `id` arrived: they are back.
    pub(super) fn person_connected_now(&mut self, id: uuid::Uuid) {
        if let Some(seat) = self.seat_of(Some(id)) {
            self.online.gone_since[seat] = None;
            self.online.stand_in[seat] = None;
        }
        self.watchers_changed();
        self.sync_clocks();
    }

    /// A connection of player `id` left; if it was their last, the grace period starts.
    pub(super) fn person_disconnected(&mut self, id: uuid::Uuid) {
        // Another page of theirs is open: whether they are away follows from their pages
        // left (`Fanout::all_hidden`).
        if self.fan.connected(id) {
            return;
        }
        if let Some(seat) = self.seat_of(Some(id)) {
            self.online.gone_since[seat] = Some(Instant::now());
        }
        self.watchers_changed();
    }

    /// `presence` from connection `conn`'s page (`away`). A player is away while every
    /// page of theirs is hidden (`Fanout::all_hidden`); a page back in view takes the seat
    /// back from a stand-in. Returns whether the player's presence or seat changed.
    pub(super) fn set_hidden(&mut self, conn: u64, away: bool) -> bool {
        let Some(Some(id)) = self.fan.who(conn) else {
            self.fan.set_hidden(conn, away);
            return false;
        };
        let was_hidden = self.fan.all_hidden(id);
        self.fan.set_hidden(conn, away);
        let Some(seat) = self.seat_of(Some(id)) else {
            return false;
        };
        if !away && self.online.stand_in[seat].take().is_some() {
            self.sync_clocks();
            return true;
        }
        was_hidden != self.fan.all_hidden(id)
    }

    /// The player of `seat` played: if a bot stood in for them, the seat is theirs again.
    pub(super) fn back_by_playing(&mut self, seat: Seat) -> bool {
        let was = self.online.stand_in[seat].take().is_some();
        if was {
            self.sync_clocks();
        }
        was
    }

    /// Seats a stand-in is playing at the end of the match: they abandoned it.
    pub(super) fn abandoning_seats(&self) -> Vec<i32> {
        (0..self.seats.len())
            .filter(|&s| match (&self.seats[s], self.online.stand_in[s]) {
                (Occupant::Player { .. }, Some(StandIn::Gone)) => true,
                // A clock that ran out on a player who is here (connected, page in view)
                // is a slow move, not a departure.
                (Occupant::Player { id, .. }, Some(StandIn::TimedOut)) => {
                    self.fan.all_hidden(*id) || !self.fan.connected(*id)
                }
                _ => false,
            })
            .map(|s| s as i32)
            .collect()
    }

    /// When the table's timer must next fire, if ever.
    pub(super) fn next_wake(&self) -> Option<Instant> {
        let o = &self.online;
        let mut wake: Option<Instant> = None;
        let mut at = |t: Instant| wake = Some(wake.map_or(t, |w| w.min(t)));
        if let Some(p) = &o.parked {
            at(p.retry_at);
            return wake;
        }
        match self.record.status {
            TableStatus::Open => at(o.open_since + self.open_ttl()),
            TableStatus::Playing => {
                for (seat, start) in o.running.iter().enumerate() {
                    if let Some(end) = start.and_then(|s| o.deadline(seat, s)) {
                        at(end);
                    }
                }
                if let Some(grace) = o.grace(&self.core.config) {
                    for seat in 0..self.seats.len() {
                        if let (Some(since), None, Occupant::Player { .. }) =
                            (o.gone_since[seat], o.stand_in[seat], &self.seats[seat])
                        {
                            at(since + grace);
                        }
                    }
                }
                if let (Some(since), Some(after)) = (o.deserted_since, self.abandon_after())
                    && !self.watched()
                {
                    at(since + after);
                }
            }
            _ => {}
        }
        wake
    }

    fn open_ttl(&self) -> Duration {
        Duration::from_secs(self.core.config.open_table_ttl_s)
    }

    /// How long a match may go on with nobody it plays for connected ([`Self::watched`]);
    /// `None` when that is normal (correspondence). A table of bots only plays for its
    /// watchers: nobody watching for `abandon_after_s`, it ends (a walk found
    /// unwatched ones never ended, and every restart would load them all again).
    fn abandon_after(&self) -> Option<Duration> {
        if matches!(self.online.pace, Pace::Correspondence { .. }) {
            return None;
        }
        if !self.has_people_seated() {
            return Some(Duration::from_secs(self.core.config.abandon_after_s));
        }
        // A game of one waits long for its player (`solo_abandon_after_s`, a day by
        // default): nobody else waits for them.
        Some(if self.seats.len() == 1 {
            Duration::from_secs(self.core.config.solo_abandon_after_s)
        } else {
            Duration::from_secs(self.core.config.abandon_after_s)
        })
    }

    /// The timer fired: whatever is due now happens.
    pub(super) async fn on_wake(&mut self) {
        let now = Instant::now();
        if self.online.parked.is_some() {
            return self.retry_parked().await;
        }
        match self.record.status {
            TableStatus::Open if now >= self.online.open_since + self.open_ttl() => {
                self.end_as(TableStatus::Abandoned, Vec::new(), "expired")
                    .await;
            }
            TableStatus::Playing => {
                if self.watched() {
                    self.online.deserted_since = None;
                } else if let (Some(since), Some(after)) =
                    (self.online.deserted_since, self.abandon_after())
                    && now >= since + after
                {
                    let people: Vec<i32> = (0..self.seats.len())
                        .filter(|&s| matches!(self.seats[s], Occupant::Player { .. }))
                        .map(|s| s as i32)
                        .collect();
                    // Bots only: nobody abandoned a seat; nobody watched.
                    let why = if people.is_empty() {
                        "unwatched"
                    } else {
                        "deserted"
                    };
                    return self.end_as(TableStatus::Abandoned, people, why).await;
                }
                let mut changed = false;
                for seat in 0..self.seats.len() {
                    if let Some(start) = self.online.running[seat]
                        && self
                            .online
                            .deadline(seat, start)
                            .is_some_and(|end| now >= end)
                    {
                        // R-none: the pace is the table's, not the game's. Out of time:
                        // the bank is spent and a bot makes this move.
                        self.online.running[seat] = None;
                        self.online.banks[seat] = 0;
                        self.online.banks_dirty = true;
                        self.online.stand_in[seat] = Some(StandIn::TimedOut);
                        self.online.owes[seat] = true;
                        self.core.metrics.count("timeouts");
                        changed = true;
                    }
                }
                if let Some(grace) = self.online.grace(&self.core.config) {
                    for seat in 0..self.seats.len() {
                        if let (Some(since), None, Occupant::Player { .. }) = (
                            self.online.gone_since[seat],
                            self.online.stand_in[seat],
                            &self.seats[seat],
                        ) && now >= since + grace
                        {
                            self.online.stand_in[seat] = Some(StandIn::Gone);
                            self.core.metrics.count("stand_ins");
                            changed = true;
                        }
                    }
                }
                if changed {
                    if self.online.banks_dirty {
                        // Stored at once, not with the next change: a restart before the
                        // stand-in's move would otherwise bring the spent bank back and
                        // give the player the move with a fresh clock.
                        let clock = stored_clock(&self.online.banks, &self.online.owes);
                        if let Err(e) = self.persist(vec![WriteOp::SetClock(clock)]).await {
                            tracing::error!(table = %self.record.id, error = %e, "could not store a time-out");
                            self.park(None);
                            return;
                        }
                        self.online.banks_dirty = false;
                    }
                    self.sync_clocks();
                    self.version += 1;
                    self.broadcast(&[]);
                    self.schedule_bots();
                }
            }
            _ => {}
        }
    }

    /// Ends the table (an open table expiring, a match nobody is left at) with `status`,
    /// marking `abandoned` seats.
    async fn end_as(&mut self, status: TableStatus, abandoned: Vec<i32>, why: &'static str) {
        let mut ops = Vec::new();
        if !abandoned.is_empty() {
            ops.push(WriteOp::Abandon {
                seats: abandoned.clone(),
            });
        }
        ops.push(WriteOp::SetStatus(status));
        if let Err(e) = self.persist(ops).await {
            tracing::error!(table = %self.record.id, error = %e, why, "could not end a table");
            self.park(None);
            return;
        }
        tracing::info!(table = %self.record.id, why, "table ended as {}", status.as_str());
        self.core.metrics.count(why);
        for s in abandoned {
            self.online.abandoned[s as usize] = true;
        }
        self.record.status = status;
        self.bots.due = None;
        self.sync_clocks();
        self.version += 1;
        self.moved = self.version;
        self.broadcast(&[serde_json::json!({"type": "table_ended", "reason": why})]);
    }

    /// Parks the table after a write failed: changes are refused until a retry succeeds.
    pub(super) fn park(&mut self, owed: Option<(Seat, serde_json::Value)>) {
        if self.told_to_end() {
            // The task ends after this step: nothing is retried here (another node takes
            // the table; its players reconnect there).
            return;
        }
        let now = Instant::now();
        let old = self.online.parked.take();
        if old.is_none() {
            self.core.metrics.parked(1);
            tracing::warn!(table = %self.record.id, "table parked: its writes fail; retrying");
        }
        let (since, attempts, old_owed) =
            old.map_or((now, 0, None), |p| (p.since, p.attempts, p.owed));
        self.online.parked = Some(Parked {
            since,
            retry_at: now + backoff(attempts),
            attempts: attempts + 1,
            // The first move owed stays owed: a later one never replaces it.
            owed: old_owed.or(owed),
        });
        // A bot's answer on its way would be a change the table cannot store now.
        self.bots = super::bots::BotState::default();
        self.sync_clocks();
        self.version += 1;
        self.broadcast(&[]);
    }

    /// A parked table tries again: reread what is stored, finish any transition, then
    /// store the move it owes.
    async fn retry_parked(&mut self) {
        let Some(p) = self.online.parked.take() else {
            return;
        };
        let owed = p.owed.clone();
        self.online.parked = Some(p);
        if !self.reload().await {
            return self.park(None);
        }
        if let Err(e) = self.settle_now().await {
            tracing::warn!(table = %self.record.id, error = %e, "parked table: transition still fails");
            return self.park(None);
        }
        if let Some((seat, action)) = owed {
            match self.store_owed(seat, action.clone()).await {
                Ok(()) => {}
                Err(Some(e)) => {
                    tracing::warn!(table = %self.record.id, error = %e, "parked table: move still not stored");
                    return self.park(Some((seat, action)));
                }
                // No longer legal (the stored table moved on): nothing is owed.
                Err(None) => {}
            }
        }
        if let Some(p) = self.online.parked.take() {
            self.core.metrics.parked(-1);
            tracing::info!(table = %self.record.id, after = ?p.since.elapsed(), "table unparked");
        }
        self.sync_clocks();
        self.version += 1;
        self.broadcast(&[]);
        self.schedule_bots();
    }
}

/// What is left of a bank of `bank` ms after a move that started at `start` and ended at
/// `now`: the time beyond the per-move allowance is paid from the bank.
fn charged(bank: u64, per_move: Duration, start: Instant, now: Instant) -> u64 {
    let over = now
        .saturating_duration_since(start)
        .saturating_sub(per_move);
    bank.saturating_sub(over.as_millis() as u64)
}

/// 1 s, 2 s, 4 s … at most 30 s between retries.
fn backoff(attempts: u32) -> Duration {
    Duration::from_secs((1u64 << attempts.min(5)).min(30))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seat_that_abandoned_never_wins() {
        let o = |winners: Vec<usize>, scores: Vec<i64>| game_core::Outcome { winners, scores };
        // Nobody left: the game's winners.
        assert_eq!(
            winners_staying(&o(vec![1], vec![3, 13]), &[false, false]),
            vec![1]
        );
        // The winner's stand-in won: the one who stayed wins instead.
        assert_eq!(
            winners_staying(&o(vec![1], vec![3, 13]), &[false, true]),
            vec![0]
        );
        // A shared win: the one who stayed keeps it alone.
        assert_eq!(
            winners_staying(&o(vec![0, 2], vec![5, 1, 5]), &[false, false, true]),
            vec![0]
        );
        // Three seats, the winner gone: the better score of those who stayed.
        assert_eq!(
            winners_staying(&o(vec![2], vec![4, 7, 9]), &[false, false, true]),
            vec![1]
        );
        // A draw with someone who left: the one who stayed comes first, so wins. A draw
        // with nobody gone stays a draw; nobody stayed: nobody won.
        assert_eq!(
            winners_staying(&o(vec![], vec![2, 2]), &[false, true]),
            vec![0]
        );
        assert!(winners_staying(&o(vec![], vec![2, 2]), &[false, false]).is_empty());
        assert!(winners_staying(&o(vec![0], vec![2, 1]), &[true, true]).is_empty());
    }

    #[test]
    fn a_move_within_its_allowance_costs_no_bank() {
        let t0 = Instant::now();
        let per_move = Duration::from_secs(30);
        assert_eq!(
            charged(120_000, per_move, t0, t0 + Duration::from_secs(29)),
            120_000
        );
        assert_eq!(
            charged(120_000, per_move, t0, t0 + Duration::from_secs(30)),
            120_000
        );
    }

    #[test]
    fn time_beyond_the_allowance_comes_out_of_the_bank_and_stops_at_zero() {
        let t0 = Instant::now();
        let per_move = Duration::from_secs(30);
        assert_eq!(
            charged(120_000, per_move, t0, t0 + Duration::from_secs(45)),
            105_000
        );
        assert_eq!(
            charged(10_000, per_move, t0, t0 + Duration::from_secs(400)),
            0
        );
    }

    #[test]
    fn a_clock_runs_out_after_the_move_time_plus_the_bank() {
        let mut o = Online::new(
            Pace::Live {
                move_s: 30,
                bank_s: 120,
            },
            2,
            None,
            &[],
        );
        let t0 = Instant::now();
        assert_eq!(o.deadline(0, t0), Some(t0 + Duration::from_secs(150)));
        assert!(o.charge(0, t0, t0 + Duration::from_secs(90)));
        assert_eq!(o.banks, vec![60_000, 120_000]);
        assert_eq!(o.deadline(0, t0), Some(t0 + Duration::from_secs(90)));
        // Untimed: no deadline, nothing charged.
        let mut u = Online::new(Pace::Untimed, 2, None, &[]);
        assert_eq!(u.deadline(0, t0), None);
        assert!(!u.charge(0, t0, t0 + Duration::from_secs(9999)));
    }

    #[test]
    fn stored_banks_are_kept_only_when_they_fit_the_table() {
        let pace = Pace::Live {
            move_s: 10,
            bank_s: 60,
        };
        assert_eq!(
            Online::new(pace, 2, Some(vec![5, 6]), &[]).banks,
            vec![5, 6]
        );
        assert_eq!(
            Online::new(pace, 2, Some(vec![5]), &[]).banks,
            vec![60_000, 60_000]
        );
        // A time-out owed is stored beside the banks, and read back with them; the plain
        // array (every older build's form) still reads.
        let v = stored_clock(&[0, 6], &[true, false]);
        assert_eq!(v, serde_json::json!({"banks": [0, 6], "timed_out": [0]}));
        assert_eq!(read_clock(&v), (Some(vec![0, 6]), vec![0]));
        assert_eq!(
            stored_clock(&[5, 6], &[false, false]),
            serde_json::json!([5, 6])
        );
        assert_eq!(
            read_clock(&serde_json::json!([5, 6])),
            (Some(vec![5, 6]), vec![])
        );
        assert_eq!(read_clock(&serde_json::json!("x")), (None, vec![]));
        let o = Online::new(pace, 2, Some(vec![0, 6]), &[0]);
        assert!(o.owes[0] && !o.owes[1]);
        assert_eq!(o.stand_in[0], Some(StandIn::TimedOut));
        assert_eq!(
            stored_pace(&serde_json::json!({"kind": "correspondence", "move_s": 86400})),
            Pace::Correspondence { move_s: 86400 }
        );
        assert_eq!(stored_pace(&serde_json::json!("nonsense")), Pace::Untimed);
    }

    #[test]
    fn retries_back_off_to_thirty_seconds() {
        let secs: Vec<u64> = (0..8).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
