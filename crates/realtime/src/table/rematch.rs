//! Rematch: at a finished match the same players start a new one in one click. Every
//! person must accept (a bot always has); one refusal ends the offer. When the last person
//! accepts, this table creates the new one (same game, options, pace, privacy and seats,
//! unrated if this one was, the first person as its creator), starts it, and shows its id in `table.rematch.table`,
//! which the clients follow. The offer lives in this table's task: a server restart forgets
//! an offer in progress (the players then simply ask again).

use protocol::RematchInfo;
use store::{Occupant, TableRecord, TableStatus};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::{Cmd, Table, Who};
use crate::time::now_ms;

impl Table {
    pub(super) async fn rematch(&mut self, conn: u64, accept: bool) {
        let who = self.fan.who(conn).flatten();
        let Some(seat) = who.and_then(|w| self.seat_of(Some(w))) else {
            return self.refuse(
                conn,
                "not_seated",
                "only the players of this match can ask for a rematch".into(),
            );
        };
        if self.record.status != TableStatus::Finished {
            return self.refuse(
                conn,
                "rematch_not_finished",
                "a rematch can be asked for once the match is over".into(),
            );
        }
        let bots: Vec<bool> = self
            .seats
            .iter()
            .map(|o| matches!(o, Occupant::Bot { .. }))
            .collect();
        let offer = self.rematch.get_or_insert(RematchInfo {
            accepted: bots,
            declined_by: None,
            table: None,
        });
        if offer.table.is_some() {
            // Already agreed: the new table is in the state the client holds.
            return;
        }
        if let Some(by) = offer.declined_by {
            return self.refuse(
                conn,
                "rematch_declined",
                format!("seat {by} declined this rematch"),
            );
        }
        if accept {
            offer.accepted[seat] = true;
        } else {
            offer.declined_by = Some(seat);
        }
        if offer.accepted.iter().all(|a| *a) {
            match self.start_rematch().await {
                Ok(id) => {
                    if let Some(o) = &mut self.rematch {
                        o.table = Some(id);
                    }
                }
                Err(e) => {
                    tracing::error!(table = %self.record.id, error = %e, "rematch failed");
                    // Everyone still agrees: asking again retries.
                    return self.refuse(
                        conn,
                        "internal",
                        "the rematch could not start; try again".into(),
                    );
                }
            }
        }
        self.version += 1;
        self.broadcast(&[]);
    }

    /// Creates and starts the new table; returns its id.
    async fn start_rematch(&mut self) -> Result<Uuid, crate::TableError> {
        let creator = self
            .seats
            .iter()
            .find_map(|o| match o {
                Occupant::Player { id, name } => Some(Who {
                    id: *id,
                    name: name.clone(),
                }),
                _ => None,
            })
            .ok_or(crate::TableError::Internal)?;
        let now = now_ms();
        let record = TableRecord {
            id: Uuid::new_v4(),
            game: self.record.game.clone(),
            options: self.record.options.clone(),
            rules_version: 0,
            seat_count: self.record.seat_count,
            private: self.record.private,
            invite_code: self.record.private.then(|| crate::random_hex(12)),
            created_by: creator.id,
            created_at: now,
            status: TableStatus::Open,
            bots: self.record.bots.clone(),
            daily: None,
            pace: self.record.pace.clone(),
            clock: None,
            updated_at: now,
        };
        // An unrated match's rematch is unrated too (an unrated challenge's, or a game of
        // an unrated tournament's): marked before the table exists, as a challenge does.
        if self.core.store.is_unrated(self.record.id).await? {
            self.core.store.mark_unrated(record.id, now).await?;
        }
        let handle = self.core.create(record, self.seats.clone()).await?;
        let (tx, rx) = oneshot::channel();
        handle
            .send(Cmd::Start {
                who: creator,
                reply: tx,
            })
            .await?;
        let info = rx.await.map_err(|_| crate::TableError::Internal)??;
        tracing::info!(from = %self.record.id, table = %info.id, "rematch started");
        Ok(info.id)
    }
}
