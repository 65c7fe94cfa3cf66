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

use sqlx::postgres::PgPoolOptions;
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
const APPEND_AND_TOUCH: &str = "\
    WITH appended AS ( \
        INSERT INTO actions (table_id, round_no, seq, seat, action, created_at) \
        SELECT * FROM UNNEST($1::text[], $2::int4[], $3::int8[], $4::int4[], $5::text[], \
                             $6::int8[]) \
    ) \
    UPDATE game_tables SET updated_at = touched.at \
    FROM UNNEST($7::text[], $8::int8[]) AS touched (id, at) \
    WHERE game_tables.id = touched.id";

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
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await?;
        sqlx::migrate!("../../migrations/postgres")
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

    /// See `impl_store!`: [`APPEND_AND_TOUCH`] is the whole tail.
    const TAIL_IS_ONE_STATEMENT: bool = true;

    /// What `impl_store!` appends to a read it must keep until its commit: the rows stay
    /// locked against other transactions' updates (and their own `FOR UPDATE`).
    const LOCK: &str = " FOR UPDATE";

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
        sqlx::query(APPEND_AND_TOUCH)
            .bind(tables)
            .bind(rounds)
            .bind(seqs)
            .bind(seats)
            .bind(actions)
            .bind(times)
            .bind(touched)
            .bind(at)
            .execute(conn)
            .await
            .map_err(|e| common::fk_as_not_found(e, || plan.missing_round()))?;
        Ok(())
    }
}

crate::common::impl_store!(PgStore, PgConnection, "postgres");
