//! Postgres backend, for production deployments.
//!
//! Durability relies on Postgres' default `synchronous_commit=on`: a commit returns once
//! its WAL record is flushed. Concurrent start-ups are safe: sqlx takes an advisory lock
//! while it migrates.

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::{PgConnection, PgPool};

use crate::Result;

/// How long a query waits for a free pooled connection before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Pool size: table tasks write a few rows per action, readers serve the lobby.
const MAX_CONNECTIONS: u32 = 16;

/// The [`Store`](crate::Store) on Postgres.
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
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
        Ok(Self { pool })
    }

    /// Closes the pool, waiting for connections in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

crate::common::impl_store!(PgStore, PgConnection, "postgres");
