//! Postgres backend, for production deployments.
//!
//! Durability relies on Postgres' default `synchronous_commit=on`: a commit returns once
//! its WAL record is flushed. Concurrent start-ups are safe: sqlx takes an advisory lock
//! while it migrates.
//!
//! Round trips, not the server, bound how fast one writer goes: a group made only of
//! actions (the common case during play) is one statement, which inserts every action
//! from arrays (`UNNEST`) and touches every table; autocommit makes it atomic and durable
//! on its own. Other groups run their steps and then that same statement in one
//! transaction.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use crate::Result;
use crate::common::{self, Plan};

/// How long a query waits for a free pooled connection before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pool size: the writer holds one connection at a time, the rest serve readers and the
/// writes that do not go through the writer.
const MAX_CONNECTIONS: u32 = 16;

/// A group's actions and touched tables in one statement: `$1..$6` the action columns as
/// arrays, `$7, $8` table ids and their new `updated_at`. A data-modifying `WITH` runs
/// even though nothing reads it.
///
///
/// `$9` is the epoch each touched table's writer holds (NULL: unfenced). The fence costs
/// nothing more: a table at another epoch has its `lease_epoch` set to -1, which its CHECK
/// constraint `game_tables_fence` refuses, so the whole statement fails (the actions
/// with it). The touch locks the row until the statement commits, so a claim waits for
/// it, and a touch that comes after a claim is evaluated against the claimed row.
///
/// A table that has ended (finished or abandoned) refuses new actions the same way, as
/// SQLite's do (migration 0022 there): the touch of such a table that has an action in the
/// group (`$10`, by touched table) sets its status to `ended`, which the status column's
/// CHECK constraint (`game_tables_status_check`) refuses. A table that only has other ops
/// in the group (a seat left, a chat line after the end) is touched as before. The steps
/// that end a table run after this statement ([`Plan`]), so a match still ends on its last
/// action.
const APPEND_AND_TOUCH: &str = "\
    WITH appended AS ( \
        INSERT INTO actions (table_id, round_no, seq, seat, action, created_at) \
        SELECT * FROM UNNEST($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::text[], \
                             $6::int8[]) \
    ) \
    UPDATE game_tables SET updated_at = touched.at, \
        lease_epoch = CASE WHEN touched.epoch IS NULL \
                             OR game_tables.lease_epoch = touched.epoch \
                           THEN game_tables.lease_epoch ELSE -1 END, \
        status = CASE WHEN game_tables.status IN ('finished', 'abandoned') \
                           AND touched.acted \
                      THEN 'ended' ELSE game_tables.status END \
    FROM UNNEST($7::text[], $8::int8[], $9::int8[], $10::bool[]) \
        AS touched (id, at, epoch, acted) \
    WHERE game_tables.id = touched.id";

/// How long a notification listener waits before connecting again after an error.
const LISTEN_RETRY: Duration = Duration::from_secs(1);

/// The [`Store`](crate::Store) on Postgres.
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    /// The same pool as `pool`: Postgres has no single write lock to queue for.
    write: PgPool,
}

impl PgStore {
    /// Opens a pool on `postgres://…` or `postgresql://…` and applies the migrations in
    /// `migrations/postgres`.
    pub async fn connect(url: &str) -> Result<Self> {
        // One connection first, for its error: the pool's for a server it cannot reach, a
        // wrong password or a missing database is "pool timed out while waiting for an open
        // connection", 10 s later, which tells an operator nothing (a walk met it). A server
        // that does not answer at all still ends in the pool's timeout.
        {
            use sqlx::Connection as _;
            if let Ok(first) =
                tokio::time::timeout(ACQUIRE_TIMEOUT, sqlx::PgConnection::connect(url)).await
            {
                first?.close().await?;
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await?;
        // A database that a newer version already migrated is fine (its migrations keep
        // this version working, docs/operations.md): the rolling upgrade's old nodes may
        // restart, and a rollback start.
        sqlx::migrate!("../../migrations/postgres")
            .set_ignore_missing(true)
            .run(&pool)
            .await?;
        let store = Self {
            write: pool.clone(),
            pool,
        };
        // Ratings computed under other rules are rebuilt from the history.
        crate::Store::rerate(&store, false).await?;
        Ok(store)
    }

    /// Closes the pool, waiting for connections in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The database's clock in Unix ms: every node's leases are measured on it, so the
    /// nodes' own clocks need not agree.
    const NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

    /// Claimers pass over rows another claimer holds rather than queue behind it.
    const SKIP_LOCKED: &str = " FOR UPDATE SKIP LOCKED";

    async fn notify_on(&self, channel: &str, payloads: &[String]) -> Result<()> {
        if payloads.is_empty() {
            return Ok(());
        }
        sqlx::query("SELECT pg_notify($1, p) FROM UNNEST($2::text[]) WITH ORDINALITY AS u (p, n) ORDER BY n")
            .bind(channel)
            .bind(payloads)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A task holds a `PgListener` (its own connection) and forwards what arrives; it
    /// ends when the receiver is dropped or the pool is closed (which would otherwise wait
    /// for ever for the listener's connection to come back).
    async fn listen_on(
        &self,
        channels: &[&str],
    ) -> Result<Option<tokio::sync::mpsc::Receiver<crate::Notice>>> {
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen_all(channels.iter().copied()).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(1024);
        let mut closed = self.pool.close_event();
        let forward = async move {
            loop {
                let notice = match listener.try_recv().await {
                    Ok(Some(n)) => crate::Notice::Message {
                        channel: n.channel().to_string(),
                        payload: n.payload().to_string(),
                    },
                    // The connection was lost; the next `try_recv` makes it again and
                    // listens to the same channels.
                    Ok(None) => crate::Notice::Reconnected,
                    // Shutting down (and `closed` about to end this task).
                    Err(sqlx::Error::PoolClosed) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "notification listener");
                        tokio::time::sleep(LISTEN_RETRY).await;
                        continue;
                    }
                };
                if tx.send(notice).await.is_err() {
                    break;
                }
            }
        };
        tokio::spawn(async move {
            // Err once the pool closes: the listener is dropped, its connection freed.
            let _ = closed.do_until(forward).await;
        });
        Ok(Some(rx))
    }

    /// A transaction holding `pg_try_advisory_xact_lock(key)`: the lock goes with the
    /// transaction (rolled back when the guard drops) or with its connection.
    async fn exclusive_on(&self, key: i64) -> Result<Option<crate::Exclusive>> {
        let mut tx = self.pool.begin().await?;
        let (got,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_xact_lock($1)")
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
        Ok(got.then(|| crate::Exclusive(Some(Box::new(tx)))))
    }

    /// The fence of a group that runs several statements, first, so that nothing of a
    /// refused group is even tried (and a group of chat lines, which touch no table, is
    /// fenced at all); the tail fences its touched tables again, at no cost.
    async fn write_fence(conn: &mut PgConnection, plan: &Plan<'_>) -> Result<()> {
        if plan.fences.is_empty() {
            return Ok(());
        }
        let (tables, epochs): (Vec<&str>, Vec<i64>) = plan
            .fences
            .iter()
            .map(|(key, epoch)| (key.as_str(), *epoch))
            .unzip();
        sqlx::query("SELECT fib_fence($1::text[], $2::int8[])")
            .bind(tables)
            .bind(epochs)
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Runs `write`, a write of the store's own (`impl_store!`), here: Postgres serves many
    /// writers at once, and nothing waits for one another's hand-offs.
    async fn serially<T, W>(&self, write: impl FnOnce(Self) -> W) -> Result<T>
    where
        W: std::future::Future<Output = Result<T>>,
    {
        write(self.clone()).await
    }

    /// See [`crate::Store::writer_runtime`]: the caller's.
    fn writer_runtime(&self) -> Option<tokio::runtime::Handle> {
        None
    }

    /// See [`crate::Store::apart`]: none. Every group goes the same way here (statements
    /// on the group's transaction), whatever its units.
    fn apart(&self, _unit: &crate::TableWrite) -> bool {
        false
    }

    /// A connection for one write outside a group (`impl_store!`): the pool's.
    async fn write_conn(&self) -> Result<sqlx::pool::PoolConnection<Postgres>> {
        Ok(self.write.acquire().await?)
    }

    /// See `impl_store!`: [`APPEND_AND_TOUCH`] is one statement, atomic and durable when
    /// it returns by itself, and it carries the fence: no BEGIN and COMMIT round trips.
    async fn write_plain(&self, plan: &Plan<'_>) -> Result<()> {
        let mut conn = self.write_conn().await?;
        Self::write_tail(&mut conn, plan).await
    }

    /// See `impl_store!`: on Postgres a group with steps goes through its transaction.
    async fn write_mixed(&self, _plan: &Plan<'_>) -> Option<Result<()>> {
        None
    }

    /// What `impl_store!` appends to a read it must keep until its commit: the rows stay
    /// locked against other transactions' updates (and their own `FOR UPDATE`).
    const LOCK: &str = " FOR UPDATE";

    /// Nothing: Postgres keeps no heads (its log's primary key refuses a duplicate).
    const RETIRE_HEAD: &[&str] = &[];

    /// Every action touches its table's `updated_at` as it lands.
    const SELECT_TABLE: &str = crate::common::SELECT_TABLE;
    const PLAYER_MATCHES: &str = crate::common::PLAYER_MATCHES;

    /// [`common::MATCH_SEATS`] with Postgres's JSON array function.
    const MATCH_SEATS: &str = "\
        SELECT table_id, kind, player_id, name, bot_level, score, abandoned FROM table_seats \
        WHERE table_id IN (SELECT jsonb_array_elements_text($1::jsonb)) \
        ORDER BY table_id, seat";

    /// The next number of the order of finishes (migration 0013). Drawn after the
    /// transaction locked the ratings it changes: one that waited on those locks draws
    /// after the holder committed, and so a larger number.
    const NEXT_FINISH_SEQ: &str = "SELECT nextval('finish_order')";

    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>> {
        Ok(self.write.begin().await?)
    }

    /// A group's actions and touched tables: [`APPEND_AND_TOUCH`].
    async fn write_tail(conn: &mut PgConnection, plan: &Plan<'_>) -> Result<()> {
        let n = plan.appends.len();
        let (mut tables, mut rounds, mut seqs) = (Vec::with_capacity(n), vec![], vec![]);
        let (mut seats, mut actions, mut times) = (vec![], vec![], vec![]);
        for a in &plan.appends {
            tables.push(a.key.as_str());
            rounds.push(a.action.round_no);
            seqs.push(a.action.seq);
            seats.push(a.action.seat);
            actions.push(a.action.action.to_string());
            times.push(a.now);
        }
        let (touched, at): (Vec<&str>, Vec<i64>) = plan
            .touches
            .iter()
            .map(|(key, at)| (key.as_str(), *at))
            .unzip();
        let acting: std::collections::HashSet<&str> =
            plan.appends.iter().map(|a| a.key.as_str()).collect();
        let acted: Vec<bool> = touched.iter().map(|key| acting.contains(key)).collect();
        let epochs = plan.touch_epochs();
        sqlx::query(APPEND_AND_TOUCH)
            .bind(tables)
            .bind(rounds)
            .bind(seqs)
            .bind(seats)
            .bind(actions)
            .bind(times)
            .bind(touched)
            .bind(at)
            .bind(epochs)
            .bind(acted)
            .execute(conn)
            .await
            .map_err(|e| common::fk_as_not_found(e, || plan.missing_round()))?;
        Ok(())
    }
}

crate::common::impl_store!(PgStore, PgConnection, "postgres");
