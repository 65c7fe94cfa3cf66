//! The ten-minute arena of bot accounts (#31), on SQLite and on Postgres at once, in one
//! test (`tournaments::arena_of_bot_accounts_followed_on_the_lobby_socket` is the arena).
//!
//! Why one test for both, in a module of its own: the suite runs as many tests at a time
//! as the machine has cores (2 on CI), each holding its slot until it ends. Two ten-minute
//! tests would hold both slots for ten minutes and stall the rest of the suite; one test
//! running both arenas side by side holds one, and the rest of the suite goes on in the
//! other. Tests start in the order of their names, so this module's name puts it among the
//! first to start, where its ten minutes overlap the rest of the suite instead of trailing
//! it. Its bots think before each move (`ARENA_THINK_MS`), so the two arenas leave most of
//! the CPU to the other tests.

use crate::support::*;
use crate::tournaments::arena_of_bot_accounts_followed_on_the_lobby_socket as arena;

/// A ten-minute arena of bot accounts played end to end through the public API on SQLite
/// and on Postgres (skipped loudly without `TEST_DATABASE_URL`, an error under
/// `FIB_REQUIRE_ALL=1`), side by side: both run to the end, then each one's result is
/// reported (a failure of one does not hide the other's).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_minute_arenas_of_bot_accounts_on_both_databases() {
    let sqlite = tokio::spawn(arena(sqlite_db()));
    let postgres = postgres_db().await.map(|db| tokio::spawn(arena(db)));
    let sqlite = sqlite.await;
    let postgres = match postgres {
        Some(p) => Some(p.await),
        None => None,
    };
    if let Err(e) = sqlite {
        std::panic::resume_unwind(e.into_panic());
    }
    if let Some(Err(e)) = postgres {
        std::panic::resume_unwind(e.into_panic());
    }
}
