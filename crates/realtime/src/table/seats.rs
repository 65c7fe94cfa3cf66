//! Before the match: taking and leaving seats, bots chosen per seat, and the start. Each
//! change is stored (one unit through the single writer) before it is adopted and shown.

use games::BotLevel;
use protocol::TableInfo;
use store::{Occupant, TableStatus, WriteOp};

use super::{Table, Who};
use crate::TableError;

impl Table {
    /// An abandoned table takes no more lobby actions.
    fn refuse_if_abandoned(&self) -> Result<(), TableError> {
        if self.record.status == TableStatus::Abandoned {
            return Err(TableError::conflict(
                "table_closed",
                "this table was abandoned before its match started; create a new one",
            ));
        }
        Ok(())
    }

    /// What starting and choosing bots need: an open table (not abandoned, not started)
    /// and a requester who sits at it or created it (a creator who took no seat can run a
    /// table of bots only). `what` names the action in the refusal.
    fn before_start_by_a_seated_player(&self, who: &Who, what: &str) -> Result<(), TableError> {
        self.refuse_if_abandoned()?;
        if self.seat_of(Some(who.id)).is_none() {
            if self.record.created_by != who.id {
                return Err(TableError::conflict(
                    "not_seated",
                    format!("only a seated player or the table's creator can {what}"),
                ));
            }
            // A creator without a seat (`join: false`, or one who left) runs a table of
            // bots only: once somebody sits at it, the match is theirs to start and their
            // bots to choose (a black-box walk saw a creator who had left start a match on
            // the one person still seated, who could then no longer leave).
            if self
                .seats
                .iter()
                .any(|o| matches!(o, Occupant::Player { .. }))
            {
                return Err(TableError::conflict(
                    "not_seated",
                    format!(
                        "you have no seat at this table and people sit at it: only they can {what}"
                    ),
                ));
            }
        }
        if self.record.status != TableStatus::Open {
            return Err(TableError::conflict(
                "already_started",
                format!("the match has already started: too late to {what}"),
            ));
        }
        Ok(())
    }

    /// Stores new occupants (and a new status), then adopts and shows them.
    async fn change_seats(
        &mut self,
        seats: Vec<(usize, Occupant)>,
        status: Option<TableStatus>,
    ) -> Result<TableInfo, TableError> {
        let mut ops: Vec<WriteOp> = seats
            .iter()
            .map(|(s, o)| WriteOp::SetSeat {
                seat: *s as i32,
                occupant: o.clone(),
            })
            .collect();
        ops.extend(status.map(WriteOp::SetStatus));
        if let Err(e) = self.persist(ops).await {
            self.reload().await;
            return Err(e.into());
        }
        for (s, o) in seats {
            self.seat_changed(s, &o);
            self.seats[s] = o;
        }
        if let Some(status) = status {
            self.record.status = status;
        }
        self.version += 1;
        self.moved = self.version;
        self.seated = self.version;
        self.broadcast(&[]);
        Ok(self.info())
    }

    pub(super) async fn join(
        &mut self,
        who: Who,
        seat: Option<usize>,
    ) -> Result<TableInfo, TableError> {
        self.refuse_if_abandoned()?;
        if self.seat_of(Some(who.id)).is_some() {
            return Err(TableError::conflict(
                "already_seated",
                "you already have a seat at this table",
            ));
        }
        if self.record.status != TableStatus::Open {
            return Err(TableError::conflict(
                "already_started",
                "the match has already started",
            ));
        }
        let seat = match seat {
            Some(s) if s >= self.seats.len() => {
                return Err(TableError::conflict(
                    "bad_seat",
                    format!("seat {s} does not exist at a table of {}", self.seats.len()),
                ));
            }
            Some(s) if self.seats[s] != Occupant::Empty => {
                return Err(TableError::conflict(
                    "seat_taken",
                    format!("seat {s} is already taken"),
                ));
            }
            Some(s) => s,
            None => self
                .seats
                .iter()
                .position(|o| *o == Occupant::Empty)
                .ok_or_else(|| TableError::conflict("table_full", "every seat is taken"))?,
        };
        let occ = Occupant::Player {
            id: who.id,
            name: who.name,
        };
        self.change_seats(vec![(seat, occ)], None).await
    }

    pub(super) async fn leave(&mut self, who: Who) -> Result<TableInfo, TableError> {
        let Some(seat) = self.seat_of(Some(who.id)) else {
            return Err(TableError::conflict(
                "not_seated",
                "you have no seat at this table",
            ));
        };
        if self.record.status != TableStatus::Open {
            return Err(TableError::conflict(
                "already_started",
                "the match has started: your seat stays yours, come back any time",
            ));
        }
        // The last person to leave an open table abandons it.
        let nobody_left = self
            .seats
            .iter()
            .enumerate()
            .all(|(s, o)| s == seat || !matches!(o, Occupant::Player { .. }));
        let status = nobody_left.then_some(TableStatus::Abandoned);
        self.change_seats(vec![(seat, Occupant::Empty)], status)
            .await
    }

    /// Before the match, a seated player chooses a bot (and its level) for an empty seat,
    /// or frees a seat a bot holds.
    pub(super) async fn set_bot(
        &mut self,
        who: Who,
        seat: usize,
        level: Option<BotLevel>,
    ) -> Result<TableInfo, TableError> {
        self.before_start_by_a_seated_player(&who, "choose the bots")?;
        let Some(current) = self.seats.get(seat) else {
            return Err(TableError::conflict(
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
                return Err(TableError::conflict(
                    "seat_taken",
                    format!("seat {seat} is already taken"),
                ));
            }
            (None, Occupant::Bot { .. }) => Occupant::Empty,
            (None, _) => {
                return Err(TableError::conflict(
                    "not_a_bot",
                    format!("seat {seat} has no bot to take out"),
                ));
            }
        };
        self.change_seats(vec![(seat, occ)], None).await
    }

    /// Starts the match: empty seats get the table's bots, and round 1 is dealt, all
    /// stored as one unit.
    pub(super) async fn start(&mut self, who: Who) -> Result<TableInfo, TableError> {
        self.before_start_by_a_seated_player(&who, "start the match")?;
        let empty: Vec<usize> = (0..self.seats.len())
            .filter(|&s| self.seats[s] == Occupant::Empty)
            .collect();
        let mut fill = Vec::new();
        if !empty.is_empty() {
            let Some(level) = self.bots_level() else {
                return Err(TableError::conflict(
                    "seats_not_full",
                    format!(
                        "{} seat(s) are still empty and this table has no bots",
                        empty.len()
                    ),
                ));
            };
            for &s in &empty {
                let occ = Occupant::Bot {
                    level: level.as_str().into(),
                };
                fill.push(WriteOp::SetSeat {
                    seat: s as i32,
                    occupant: occ.clone(),
                });
                self.seats[s] = occ;
            }
        }
        let mut d = self.draft();
        d.ops = fill;
        d.ops.push(WriteOp::SetStatus(TableStatus::Playing));
        d.status = TableStatus::Playing;
        let stored = match self.settle(&mut d).await {
            Ok(()) => self.commit(d).await,
            Err(e) => Err(e),
        };
        if let Err(e) = stored {
            // Nothing was stored: the seats go back to empty, the table stays open.
            for &s in &empty {
                self.seats[s] = Occupant::Empty;
            }
            self.reload().await;
            return Err(e.into());
        }
        self.match_started();
        self.schedule_bots();
        Ok(self.info())
    }
}
