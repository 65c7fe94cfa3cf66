//! SQLite backend: the embedded default, one file next to the server.
//!
//! Durability comes first: an action acknowledged to a player must survive a SIGKILL of
//! the server (and a power cut), so every commit is fsynced (`synchronous=FULL`). WAL lets
//! readers (lobby, leaderboards) run while a table task writes; writers wait on each other
//! up to the busy timeout instead of failing.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{SqliteConnection, SqlitePool};

use crate::Result;

/// How long a writer waits for another connection's write transaction to finish.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Pool size for a file database: readers in parallel, writers serialised by SQLite.
const MAX_CONNECTIONS: u32 = 8;

/// The [`Store`](crate::Store) on SQLite.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens `sqlite://PATH` (creating the file and its parent directory if missing) or
    /// `sqlite::memory:`, and applies the migrations in `migrations/sqlite`.
    pub async fn connect(url: &str) -> Result<Self> {
        let mut options = SqliteConnectOptions::from_str(url)?
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let pool = if in_memory {
            // An in-memory database lives as long as one connection to it: keep exactly
            // one, forever, so every query sees the same database.
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await?
        } else {
            options = options
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full);
            if let Some(dir) = options.get_filename().parent()
                && !dir.as_os_str().is_empty()
            {
                std::fs::create_dir_all(dir).map_err(sqlx::Error::Io)?;
            }
            SqlitePoolOptions::new()
                .max_connections(MAX_CONNECTIONS)
                .connect_with(options)
                .await?
        };
        sqlx::migrate!("../../migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
    }

    /// Closes the pool, waiting for connections in use; the last one to close checkpoints
    /// the WAL into the database file.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

crate::common::impl_store!(SqliteStore, SqliteConnection, "sqlite");

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings durability depends on, as every pooled connection sees them.
    #[tokio::test]
    async fn file_database_is_wal_fsynced_with_foreign_keys() {
        let dir = std::env::temp_dir().join(format!("fib-store-unit-{}", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}/new/fib.db", dir.display());
        let store = SqliteStore::connect(&url).await.unwrap();
        let (journal,): (String,) = sqlx::query_as("PRAGMA journal_mode")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        let (sync, fk): (i64, i64) = sqlx::query_as(
            "SELECT synchronous, foreign_keys FROM pragma_synchronous, pragma_foreign_keys",
        )
        .fetch_one(&store.pool)
        .await
        .unwrap();
        assert_eq!(journal, "wal");
        assert_eq!(sync, 2, "synchronous=FULL");
        assert_eq!(fk, 1, "foreign_keys=ON");
        store.close().await;
        std::fs::remove_dir_all(dir).unwrap();
    }
}
