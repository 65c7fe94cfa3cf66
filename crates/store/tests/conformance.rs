//! Conformance suite of the [`Store`] trait: every case runs against every backend.
//!
//! - `sqlite_memory`: `sqlite::memory:`, a fresh database per case.
//! - `sqlite_file`: a fresh database file per case in its own temp directory, plus a test
//!   that closes and reopens the file to prove that what was acknowledged persists.
//! - `postgres`: only when `TEST_DATABASE_URL` names a role with CREATEDB (see
//!   `scripts/test-postgres.sh`). Each case creates its own database, so cases run in
//!   parallel without seeing each other's rows, and drops it at the end. Without the
//!   variable these tests pass after printing a loud SKIPPED line, unless
//!   `FIB_REQUIRE_ALL=1`, in which case they fail: CI must not pass by skipping.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Once};
use std::time::Duration;

use serde_json::json;
use store::rating::{self, Entry, Pool, Rating};
use store::{
    ActionRecord, ChatRecord, Occupant, Player, RoundRecord, Store, StoreError, StoredTable,
    TableRecord, TableStatus, TableWrite, TournamentRecord, TournamentStatus, TournamentStep,
    WriteObserver, WriteOp, Writer,
};
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// Fixtures: a fresh, empty store per case, cleaned up when dropped (even after a panic).

/// Fields drop in order: the store (its pool) first, then the guard removes its data.
struct Fixture {
    store: Arc<dyn Store>,
    _guard: Guard,
}

/// Removes a test's data when dropped.
struct Guard(Cleanup);

enum Cleanup {
    Nothing,
    Dir(PathBuf),
    PgDatabase { admin_url: String, name: String },
}

impl Drop for Guard {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.0, Cleanup::Nothing) {
            Cleanup::Nothing => {}
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::PgDatabase { admin_url, name } => {
                // Drop may run inside the test's runtime, which cannot be blocked on: use
                // a runtime of our own on another thread.
                let _ = std::thread::spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime")
                        .block_on(pg_admin(
                            &admin_url,
                            &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
                        ))
                })
                .join();
            }
        }
    }
}

async fn sqlite_memory() -> Option<Fixture> {
    let store = store::connect("sqlite::memory:").await.expect("connect");
    assert_eq!(store.backend(), "sqlite");
    Some(Fixture {
        store,
        _guard: Guard(Cleanup::Nothing),
    })
}

/// A new empty directory under the system temp directory.
fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fib-store-test-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

async fn sqlite_file() -> Option<Fixture> {
    let dir = temp_dir();
    let guard = Guard(Cleanup::Dir(dir.clone()));
    // A parent directory that does not exist yet: connect must create it.
    let url = format!("sqlite://{}/nested/fib.db", dir.display());
    let store = store::connect(&url).await.expect("connect");
    assert_eq!(store.backend(), "sqlite");
    Some(Fixture {
        store,
        _guard: guard,
    })
}

/// The admin URL from `TEST_DATABASE_URL`, or `None` after saying loudly that the
/// Postgres tests are skipped (panics instead under `FIB_REQUIRE_ALL=1`).
fn pg_admin_url() -> Option<String> {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("FIB_REQUIRE_ALL").as_deref() == Ok("1") {
                panic!(
                    "FIB_REQUIRE_ALL=1 but TEST_DATABASE_URL is unset: Postgres store tests cannot run"
                );
            }
            static ONCE: Once = Once::new();
            // Straight to the stderr handle: libtest captures `eprintln!` of passing tests.
            ONCE.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** SKIPPED: Postgres store tests (set TEST_DATABASE_URL) ***\n"
                );
            });
            None
        }
    }
}

/// `url` with its database replaced by `db` (query parameters kept).
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let host_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[host_start..].find('/') {
        Some(i) => &base[..host_start + i],
        None => base,
    };
    format!("{base}/{db}{query}")
}

async fn pg_admin(admin_url: &str, sql: &str) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("connect to TEST_DATABASE_URL");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let _ = conn.close().await;
}

/// A fresh database on the server of `TEST_DATABASE_URL`: its name and URL.
async fn pg_database(admin_url: &str) -> (String, String) {
    let name = format!("fib_store_test_{}", Uuid::new_v4().simple());
    pg_admin(admin_url, &format!("CREATE DATABASE \"{name}\"")).await;
    let url = with_database(admin_url, &name);
    (name, url)
}

async fn postgres() -> Option<Fixture> {
    let admin_url = pg_admin_url()?;
    let (name, url) = pg_database(&admin_url).await;
    // The guard exists before connecting: a failed connect still drops the database.
    let guard = Guard(Cleanup::PgDatabase { admin_url, name });
    let store = store::connect(&url).await.expect("connect");
    assert_eq!(store.backend(), "postgres");
    Some(Fixture {
        store,
        _guard: guard,
    })
}

// ---------------------------------------------------------------------------------------
// Helpers shared by the cases.

const T0: i64 = 1_700_000_000_000;

async fn player(s: &dyn Store, name: &str) -> Player {
    let id = Uuid::new_v4();
    s.create_player(id, name, &format!("hash-of-{id}"), "test", T0)
        .await
        .expect("create_player")
}

fn seat_of(p: &Player) -> Occupant {
    Occupant::Player {
        id: p.id,
        name: p.name.clone(),
    }
}

fn bot() -> Occupant {
    Occupant::Bot {
        level: "easy".into(),
    }
}

fn record(game: &str, seats: usize, creator: Uuid, now: i64) -> TableRecord {
    TableRecord {
        id: Uuid::new_v4(),
        game: game.into(),
        options: json!({ "target": 100, "nested": { "list": [1, 2, 3] } }),
        rules_version: 3,
        seat_count: seats as i32,
        private: false,
        invite_code: None,
        created_by: creator,
        created_at: now,
        status: TableStatus::Open,
        bots: Some("random".into()),
        daily: None,
        pace: serde_json::json!({"kind": "untimed"}),
        clock: None,
        updated_at: now,
    }
}

async fn new_table(s: &dyn Store, game: &str, seats: &[Occupant], now: i64) -> TableRecord {
    let r = record(game, seats.len(), Uuid::new_v4(), now);
    s.create_table(&r, seats).await.expect("create_table");
    r
}

fn round(no: i32, at: i64) -> RoundRecord {
    RoundRecord {
        round_no: no,
        seed_hex: format!("{no:064x}"),
        commitment: format!("{:064x}", no + 1000),
        started_at: at,
        ended_at: None,
        result: None,
    }
}

fn action(round_no: i32, seq: i64) -> ActionRecord {
    ActionRecord {
        round_no,
        seq,
        seat: (seq % 3) as i32,
        action: json!({ "play": seq, "round": round_no }),
    }
}

/// A whole finished match of `game` with `seats`: one round, final `totals`, `winners`.
async fn finished_match(
    s: &dyn Store,
    game: &str,
    seats: &[Occupant],
    totals: &[i64],
    winners: &[i32],
    now: i64,
) -> Uuid {
    let t = new_table(s, game, seats, now).await;
    s.set_status(t.id, TableStatus::Playing, now).await.unwrap();
    s.start_round(t.id, &round(0, now)).await.unwrap();
    s.end_round(t.id, 0, &json!({}), totals, now).await.unwrap();
    s.finish_match(t.id, totals, winners, now).await.unwrap();
    t.id
}

fn assert_conflict<T: std::fmt::Debug>(r: Result<T, StoreError>) {
    assert!(
        matches!(r, Err(StoreError::Conflict(_))),
        "expected Conflict, got {r:?}"
    );
}

fn assert_not_found<T: std::fmt::Debug>(r: Result<T, StoreError>) {
    assert!(
        matches!(r, Err(StoreError::NotFound(_))),
        "expected NotFound, got {r:?}"
    );
}

// ---------------------------------------------------------------------------------------
// The cases: each takes a fresh, empty store.

async fn players(s: &dyn Store) {
    s.ping().await.expect("ping");
    let id = Uuid::new_v4();
    let p = s
        .create_player(id, "Ada", "h1", "Firefox", T0)
        .await
        .unwrap();
    assert_eq!(
        p,
        Player {
            id,
            name: "Ada".into(),
            created_at: T0,
            bot: false,
        }
    );
    let authed = s.player_by_token_hash("h1").await.unwrap().unwrap();
    assert_eq!(authed.player, p);
    assert_eq!(authed.session.player_id, id);
    assert_eq!(authed.session.label, "Firefox");
    assert_eq!(authed.session.id.len(), 32);
    assert_eq!(s.player(id).await.unwrap(), Some(p.clone()));
    assert_eq!(s.player(Uuid::new_v4()).await.unwrap(), None);
    assert_eq!(s.player_by_token_hash("nope").await.unwrap(), None);
    // The token hash and the id are unique.
    assert_conflict(s.create_player(Uuid::new_v4(), "Bob", "h1", "x", T0).await);
    assert_conflict(s.create_player(id, "Bob", "h2", "x", T0).await);
    s.rename_player(id, "Ada L.").await.unwrap();
    assert_eq!(
        s.player_by_token_hash("h1")
            .await
            .unwrap()
            .unwrap()
            .player
            .name,
        "Ada L."
    );
    assert_not_found(s.rename_player(Uuid::new_v4(), "Ghost").await);
}

/// Sessions (devices) and accounts: a second device signs in, both are listed, revoking
/// one stops its token at once and leaves the other; a username is unique by its key.
async fn accounts_and_sessions(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let b = player(s, "Bob").await;
    let first = s
        .player_by_token_hash(&format!("hash-of-{}", a.id))
        .await
        .unwrap()
        .unwrap()
        .session;
    let second = s
        .create_session(a.id, "h-phone", "Phone", T0 + 5)
        .await
        .unwrap();
    assert_ne!(first.id, second.id);
    assert_conflict(s.create_session(b.id, "h-phone", "again", T0).await);
    assert_eq!(
        s.player_by_token_hash("h-phone")
            .await
            .unwrap()
            .unwrap()
            .player,
        a
    );
    // Most recently seen first; touching moves a session up, never back in time.
    let ids = |v: Vec<store::SessionRecord>| v.into_iter().map(|x| x.id).collect::<Vec<_>>();
    assert_eq!(
        ids(s.sessions_of(a.id).await.unwrap()),
        [second.id.clone(), first.id.clone()]
    );
    s.touch_session(&first.id, T0 + 10).await.unwrap();
    s.touch_session(&first.id, T0 + 7).await.unwrap();
    let listed = s.sessions_of(a.id).await.unwrap();
    assert_eq!(listed[0].id, first.id);
    assert_eq!(listed[0].last_seen_at, T0 + 10);
    // Another player cannot revoke it; its owner can, once.
    assert!(!s.revoke_session(b.id, &second.id).await.unwrap());
    assert!(s.revoke_session(a.id, &second.id).await.unwrap());
    assert!(!s.revoke_session(a.id, &second.id).await.unwrap());
    assert_eq!(s.player_by_token_hash("h-phone").await.unwrap(), None);
    assert_eq!(
        ids(s.sessions_of(a.id).await.unwrap()),
        vec![first.id.clone()]
    );

    let account = |p: &Player, name: &str| store::AccountRecord {
        player_id: p.id,
        username: name.into(),
        username_key: name.to_lowercase(),
        password_hash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaA".into(),
        created_at: T0,
    };
    assert_eq!(s.account_of(a.id).await.unwrap(), None);
    assert_eq!(
        s.create_account(&account(&a, "Ada")).await.unwrap(),
        store::Claim::Claimed
    );
    assert_eq!(
        s.create_account(&account(&a, "Ada2")).await.unwrap(),
        store::Claim::AlreadyClaimed
    );
    assert_eq!(
        s.create_account(&account(&b, "ADA")).await.unwrap(),
        store::Claim::UsernameTaken
    );
    assert_eq!(s.account_of(b.id).await.unwrap(), None);
    assert_eq!(s.account_of(a.id).await.unwrap(), Some(account(&a, "Ada")));
    assert_eq!(
        s.account_by_key("ada").await.unwrap(),
        Some(account(&a, "Ada"))
    );
    assert_eq!(s.account_by_key("bob").await.unwrap(), None);
}

/// Bot accounts (#31): only a claimed account that holds no seat at any table becomes one, for
/// good; a match with one is rated in the bot pool only (house bots as anchors), and the
/// people's pools never see it.
async fn bot_accounts_and_the_bot_pool(s: &dyn Store) {
    use store::BotConversion as B;
    let guest = player(s, "Guest").await;
    assert_eq!(s.make_bot(guest.id, T0).await.unwrap(), B::NotClaimed);
    assert_eq!(s.make_bot(Uuid::new_v4(), T0).await.unwrap(), B::NoPlayer);
    let account = |p: &Player, name: &str| store::AccountRecord {
        player_id: p.id,
        username: name.into(),
        username_key: name.to_lowercase(),
        password_hash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaA".into(),
        created_at: T0,
    };
    let robo = player(s, "Robo").await;
    s.create_account(&account(&robo, "robo")).await.unwrap();
    let ada = player(s, "Ada").await;
    s.create_account(&account(&ada, "ada")).await.unwrap();
    let bob = player(s, "Bob").await;
    // Ada has played: she stays a person.
    finished_match(
        s,
        "trump",
        &[seat_of(&ada), seat_of(&bob)],
        &[8, 3],
        &[0],
        T0,
    )
    .await;
    assert_eq!(s.make_bot(ada.id, T0).await.unwrap(), B::HasPlayed);
    assert_eq!(s.make_bot(robo.id, T0 + 1).await.unwrap(), B::Done);
    assert_eq!(s.make_bot(robo.id, T0 + 2).await.unwrap(), B::AlreadyBot);
    assert!(s.player(robo.id).await.unwrap().unwrap().bot);
    assert!(!s.player(ada.id).await.unwrap().unwrap().bot);
    assert_eq!(s.bot_accounts().await.unwrap(), vec![robo.id]);
    // Robo against an easy house bot, then against Ada and Bob: the bot pool only.
    for i in 0..3 {
        finished_match(
            s,
            "trump",
            &[seat_of(&robo), bot()],
            &[8, 2],
            &[0],
            T0 + 10 + i,
        )
        .await;
    }
    finished_match(
        s,
        "trump",
        &[seat_of(&robo), seat_of(&ada), seat_of(&bob)],
        &[8, 5, 1],
        &[0],
        T0 + 20,
    )
    .await;
    let board = s.leaderboard("trump", Pool::Bots, 0, 10).await.unwrap();
    assert_eq!(board.total, 1, "only Robo has 3 rated matches there");
    assert_eq!(board.rows[0].player_id, robo.id);
    assert!(board.rows[0].bot);
    assert_eq!(board.rows[0].matches, 4);
    assert!(board.rows[0].rating.mu > Pool::Bots.initial().mu);
    let robo_ratings = s.player_ratings(robo.id).await.unwrap();
    assert!(
        robo_ratings.iter().all(|r| r.pool == Pool::Bots),
        "{robo_ratings:?}"
    );
    // Ada's one people's match (the duel with Bob) is all her duel pool saw.
    let ada_ratings = s.player_ratings(ada.id).await.unwrap();
    let duel = ada_ratings.iter().find(|r| r.pool == Pool::Duel).unwrap();
    assert_eq!(duel.matches, 1);
    assert!(ada_ratings.iter().all(|r| r.pool != Pool::Multi));
    let bots = ada_ratings.iter().find(|r| r.pool == Pool::Bots).unwrap();
    assert_eq!(bots.matches, 1);
    // Re-rating rebuilds the same.
    s.rerate(true).await.unwrap();
    let again = s.leaderboard("trump", Pool::Bots, 0, 10).await.unwrap();
    assert_eq!(again.rows[0].matches, 4);
    assert!((again.rows[0].rating.mu - board.rows[0].rating.mu).abs() < 1e-9);
}

/// Quick-play queues: one entry per player; only its connection takes it out; taking a
/// group is all or nothing.
async fn queues(s: &dyn Store) {
    let (a, b, c) = (
        player(s, "Ada").await,
        player(s, "Bob").await,
        player(s, "Cy").await,
    );
    let entry = |p: &Player, conn: &str, at: i64| store::QueueEntry {
        player_id: p.id,
        name: p.name.clone(),
        game: "trump".into(),
        seats: 2,
        rating: 0.25,
        conn: conn.into(),
        joined_at: at,
    };
    s.queue_join(&entry(&b, "b1", T0 + 2)).await.unwrap();
    s.queue_join(&entry(&a, "a1", T0 + 1)).await.unwrap();
    assert_conflict(s.queue_join(&entry(&a, "a2", T0 + 3)).await);
    s.queue_join(&entry(&c, "c1", T0 + 3)).await.unwrap();
    assert_eq!(
        s.queue_entries().await.unwrap(),
        vec![
            entry(&a, "a1", T0 + 1),
            entry(&b, "b1", T0 + 2),
            entry(&c, "c1", T0 + 3)
        ]
    );
    // Another connection of the same player does not take the entry out.
    assert!(!s.queue_leave(a.id, "a2").await.unwrap());
    assert!(s.queue_leave(c.id, "c1").await.unwrap());
    // A group with one entry gone is not taken at all.
    let gone = [(a.id, "a1".to_string()), (c.id, "c1".to_string())];
    assert!(!s.queue_take(&gone).await.unwrap());
    assert_eq!(s.queue_entries().await.unwrap().len(), 2);
    let pair = [(a.id, "a1".to_string()), (b.id, "b1".to_string())];
    assert!(s.queue_take(&pair).await.unwrap());
    assert!(!s.queue_take(&pair).await.unwrap(), "taken once only");
    assert_eq!(s.queue_entries().await.unwrap(), vec![]);
    s.queue_join(&entry(&c, "c2", T0 + 4)).await.unwrap();
    assert_eq!(s.queue_clear().await.unwrap(), 1);
    assert_eq!(s.queue_entries().await.unwrap(), vec![]);
}

/// Many matchers racing to take overlapping groups: every entry is taken by exactly one.
async fn concurrent_queue_takes(s: Arc<dyn Store>) {
    let mut people = Vec::new();
    for i in 0..12 {
        let p = player(&*s, &format!("P{i}")).await;
        s.queue_join(&store::QueueEntry {
            player_id: p.id,
            name: p.name.clone(),
            game: "trump".into(),
            seats: 3,
            rating: 0.0,
            conn: format!("c{i}"),
            joined_at: T0 + i,
        })
        .await
        .unwrap();
        people.push((p.id, format!("c{i}")));
    }
    // Every window of three consecutive players, all at once: they overlap, so at most
    // one of each overlapping pair can win.
    let mut tasks = Vec::new();
    for start in 0..10 {
        let group = people[start..start + 3].to_vec();
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            (group.clone(), s.queue_take(&group).await.unwrap())
        }));
    }
    let mut seated = std::collections::HashMap::new();
    for t in tasks {
        let (group, won) = t.await.unwrap();
        if won {
            for (p, _) in group {
                *seated.entry(p).or_insert(0) += 1;
            }
        }
    }
    assert!(!seated.is_empty());
    assert!(seated.values().all(|n| *n == 1), "seated twice: {seated:?}");
    let left = s.queue_entries().await.unwrap().len();
    assert_eq!(left + seated.len(), 12);
}

const LIMITS: store::AnalysisLimits = store::AnalysisLimits {
    queue: 4,
    pending_per_player: 2,
    pending_per_address: 0,
    per_player_day: 3,
};

/// The analysis queue: one job per table and version, served again once there; the
/// limits per player and in all; a failed job queued again; claims in order, leases that
/// fence a worker out once another took its job, release at shutdown.
async fn analysis_jobs(s: &dyn Store) {
    use store::{AnalysisRequested as R, AnalysisState as S};
    let a = player(s, "Ann").await;
    let b = player(s, "Bob").await;
    let seats = [seat_of(&a), seat_of(&b)];
    let mut tables = Vec::new();
    for i in 0..7 {
        tables.push(finished_match(s, "trump", &seats, &[3, 1], &[0], T0 + i).await);
    }
    let ask = |t: Uuid, p: Uuid, now: i64| s.request_analysis(t, 1, p, "10.0.0.1", now, LIMITS);
    let R::Queued(j0) = ask(tables[0], a.id, T0 + 10).await.unwrap() else {
        panic!("first request not queued")
    };
    assert_eq!(
        (j0.state, j0.table_id, j0.requested_by),
        (S::Queued, tables[0], a.id)
    );
    // Asked again, by anyone: the same job, nothing new counted.
    assert_eq!(
        ask(tables[0], b.id, T0 + 11).await.unwrap(),
        R::Existing(j0.clone())
    );
    // Another version is another job.
    assert!(matches!(
        s.request_analysis(tables[0], 2, b.id, "10.0.0.2", T0 + 11, LIMITS)
            .await
            .unwrap(),
        R::Queued(_)
    ));
    assert!(matches!(
        ask(tables[1], a.id, T0 + 12).await.unwrap(),
        R::Queued(_)
    ));
    // Ann has two waiting: a third waits for one of them to end.
    assert_eq!(
        ask(tables[2], a.id, T0 + 13).await.unwrap(),
        R::PlayerPending
    );
    assert!(s.analysis_job(tables[2], 1).await.unwrap().is_none());
    assert_not_found(ask(Uuid::new_v4(), b.id, T0 + 13).await);

    // Oldest first: j0, then Bob's version 2, then Ann's second.
    let j1 = s.analysis_job(tables[1], 1).await.unwrap().unwrap();
    assert_eq!(s.analysis_ahead(j0.id).await.unwrap(), 0);
    assert_eq!(s.analysis_ahead(j1.id).await.unwrap(), 2);
    // Claims come oldest first; a second worker gets the next one.
    let c0 = s
        .claim_analysis("w1", T0 + 20, 1_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (c0.id, c0.state, c0.worker.as_deref()),
        (j0.id, S::Running, Some("w1"))
    );
    assert_eq!(c0.lease_until, Some(T0 + 1_020));
    let c1 = s
        .claim_analysis("w2", T0 + 20, 1_000)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(c1.id, c0.id);
    assert!(
        s.analysis_progress(c0.id, "w1", 3, 10, T0 + 30, 1_000)
            .await
            .unwrap()
    );
    assert!(
        !s.analysis_progress(c0.id, "w2", 3, 10, T0 + 30, 1_000)
            .await
            .unwrap()
    );
    let seen = s.analysis_job(tables[0], 1).await.unwrap().unwrap();
    assert_eq!(
        (seen.done, seen.total, seen.lease_until),
        (3, 10, Some(T0 + 1_030))
    );
    // w1 stops renewing: after its lease another worker takes the job, and w1 is out.
    let c2 = s
        .claim_analysis("w3", T0 + 1_031, 1_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c2.id, c0.id);
    assert!(
        !s.analysis_progress(c0.id, "w1", 4, 10, T0 + 1_032, 1_000)
            .await
            .unwrap()
    );
    assert!(
        !s.finish_analysis(c0.id, "w1", Ok("{}"), (10, 10), T0 + 1_033)
            .await
            .unwrap()
    );
    assert!(
        s.finish_analysis(c0.id, "w3", Ok(r#"{"version":1}"#), (10, 10), T0 + 1_040)
            .await
            .unwrap()
    );
    let done = s.analysis_job(tables[0], 1).await.unwrap().unwrap();
    assert_eq!(done.state, S::Done);
    assert_eq!(done.result.as_deref(), Some(r#"{"version":1}"#));
    assert_eq!(
        (done.done, done.total, done.finished_at),
        (10, 10, Some(T0 + 1_040))
    );
    assert!(
        !s.finish_analysis(c0.id, "w3", Ok("{}"), (10, 10), T0 + 1_041)
            .await
            .unwrap()
    );
    assert_eq!(
        ask(tables[0], a.id, T0 + 1_050).await.unwrap(),
        R::Existing(done)
    );

    // A worker that stops gives its job back (Bob's version-2 job, the next oldest); it
    // fails the next time.
    assert_eq!((c1.version, c1.requested_by), (2, b.id));
    assert!(s.release_analysis(c1.id, "w2").await.unwrap());
    assert!(!s.release_analysis(c1.id, "w2").await.unwrap());
    let again = s
        .claim_analysis("w4", T0 + 1_060, 1_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.id, c1.id);
    assert!(
        s.finish_analysis(again.id, "w4", Err("does not replay"), (3, 7), T0 + 1_070)
            .await
            .unwrap()
    );
    let failed = s.analysis_job(tables[0], 2).await.unwrap().unwrap();
    assert_eq!(
        (failed.state, failed.error.as_deref()),
        (S::Failed, Some("does not replay"))
    );
    assert_eq!((failed.done, failed.total), (3, 7), "how far it got");
    // Then Ann's second; nothing else waits.
    let anns = s
        .claim_analysis("w5", T0 + 1_080, 1_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((anns.table_id, anns.requested_by), (tables[1], a.id));
    assert!(
        s.claim_analysis("w5", T0 + 1_081, 1_000)
            .await
            .unwrap()
            .is_none()
    );
    // Finished before any progress was written (a short match): the counts come with
    // the result.
    assert!(
        s.finish_analysis(anns.id, "w5", Ok("{}"), (48, 48), T0 + 1_082)
            .await
            .unwrap()
    );
    let short = s.analysis_job(tables[1], 1).await.unwrap().unwrap();
    assert_eq!((short.state, short.done, short.total), (S::Done, 48, 48));

    // Ann's allowance is three a day: this is her third, and a fourth must wait a day.
    assert!(matches!(
        ask(tables[2], a.id, T0 + 1_090).await.unwrap(),
        R::Queued(_)
    ));
    assert_eq!(
        ask(tables[3], a.id, T0 + 1_091).await.unwrap(),
        R::PlayerDaily
    );
    let next_day = T0 + 86_400_000 + 2_000;
    assert!(matches!(
        ask(tables[3], a.id, next_day).await.unwrap(),
        R::Queued(_)
    ));
    // A failed job asked for again is queued afresh.
    let R::Queued(requeued) = s
        .request_analysis(failed.table_id, 2, b.id, "10.0.0.2", next_day, LIMITS)
        .await
        .unwrap()
    else {
        panic!("a failed job is queued again")
    };
    assert_eq!((failed.version, requeued.id), (2, failed.id));
    assert_eq!((requeued.state, requeued.error), (S::Queued, None));
    // Three wait (Ann's two, Bob's); a fourth fills the queue (4), a fifth is refused.
    let c = player(s, "Cy").await;
    assert!(matches!(
        ask(tables[4], c.id, next_day).await.unwrap(),
        R::Queued(_)
    ));
    assert_eq!(ask(tables[5], c.id, next_day).await.unwrap(), R::QueueFull);
}

/// One client address holds at most `pending_per_address` waiting or running jobs,
/// whichever players asked from there; a job that ends (done or failed) frees its place.
async fn analysis_jobs_per_address(s: &dyn Store) {
    use store::AnalysisRequested as R;
    let a = player(s, "Ann").await;
    let b = player(s, "Bob").await;
    let seats = [seat_of(&a), seat_of(&b)];
    let mut tables = Vec::new();
    for i in 0..5 {
        tables.push(finished_match(s, "trump", &seats, &[3, 1], &[0], T0 + i).await);
    }
    let limits = store::AnalysisLimits {
        queue: 10,
        pending_per_player: 10,
        pending_per_address: 2,
        per_player_day: 10,
    };
    let ask = |t: Uuid, p: Uuid, from: &'static str, now: i64| {
        s.request_analysis(t, 1, p, from, now, limits)
    };
    assert!(matches!(
        ask(tables[0], a.id, "10.0.0.1", T0 + 10).await.unwrap(),
        R::Queued(_)
    ));
    assert!(matches!(
        ask(tables[1], b.id, "10.0.0.1", T0 + 11).await.unwrap(),
        R::Queued(_)
    ));
    // A third from the address, by either player: refused; from another address: queued.
    assert_eq!(
        ask(tables[2], b.id, "10.0.0.1", T0 + 12).await.unwrap(),
        R::AddressPending
    );
    assert_eq!(
        s.analysis_job(tables[2], 1).await.unwrap(),
        None,
        "nothing queued"
    );
    assert!(matches!(
        ask(tables[2], b.id, "10.0.0.9", T0 + 13).await.unwrap(),
        R::Queued(_)
    ));
    // The first job runs: still a place of its address. Once done, its place is free.
    let running = s
        .claim_analysis("w", T0 + 20, 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(running.table_id, tables[0]);
    assert_eq!(
        ask(tables[3], a.id, "10.0.0.1", T0 + 21).await.unwrap(),
        R::AddressPending
    );
    assert!(
        s.finish_analysis(running.id, "w", Ok("{}"), (1, 1), T0 + 22)
            .await
            .unwrap()
    );
    assert!(matches!(
        ask(tables[3], a.id, "10.0.0.1", T0 + 23).await.unwrap(),
        R::Queued(_)
    ));
    // A failed one frees its place too.
    let running = s
        .claim_analysis("w", T0 + 30, 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(running.table_id, tables[1]);
    assert!(
        s.finish_analysis(running.id, "w", Err("broken"), (0, 1), T0 + 31)
            .await
            .unwrap()
    );
    assert!(matches!(
        ask(tables[4], a.id, "10.0.0.1", T0 + 32).await.unwrap(),
        R::Queued(_)
    ));
    // Asking for a job that exists costs no place.
    assert!(matches!(
        ask(tables[0], b.id, "10.0.0.1", T0 + 33).await.unwrap(),
        R::Existing(_)
    ));
}

/// Workers taking jobs at once never take the same job twice (SKIP LOCKED on Postgres,
/// the one writer on SQLite).
async fn concurrent_analysis_claims(s: Arc<dyn Store>) {
    let people = [player(&*s, "Ann").await, player(&*s, "Bob").await];
    let seats = [seat_of(&people[0]), seat_of(&people[1])];
    let limits = store::AnalysisLimits {
        queue: 100,
        pending_per_player: 100,
        pending_per_address: 0,
        per_player_day: 100,
    };
    for i in 0..20 {
        let t = finished_match(&*s, "trump", &seats, &[1, 0], &[0], T0 + i).await;
        s.request_analysis(t, 1, people[0].id, "10.0.0.1", T0 + 100 + i, limits)
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(job) = s
                .claim_analysis(&format!("w{w}"), T0 + 200, 60_000)
                .await
                .unwrap()
            {
                got.push(job.id);
            }
            got
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!((n, all.len()), (20, 20), "every job taken exactly once");
}

async fn rename_updates_unfinished_seats_only(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let open = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    let playing = new_table(s, "trump", &[bot(), seat_of(&a)], T0).await;
    s.set_status(playing.id, TableStatus::Playing, T0)
        .await
        .unwrap();
    let done = finished_match(s, "trump", &[seat_of(&a), bot()], &[5, 1], &[0], T0).await;
    s.rename_player(a.id, "Grace").await.unwrap();
    let renamed = Occupant::Player {
        id: a.id,
        name: "Grace".into(),
    };
    let seats = |t: Option<StoredTable>| t.expect("table").seats;
    assert_eq!(seats(s.load_table(open.id).await.unwrap())[0], renamed);
    assert_eq!(seats(s.load_table(playing.id).await.unwrap())[1], renamed);
    // A finished match keeps the name it was played under.
    assert_eq!(seats(s.load_table(done).await.unwrap())[0], seat_of(&a));
}

async fn tables_and_seats(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let b = player(s, "Bob").await;
    let mut r = record("rummy", 3, a.id, T0);
    r.private = true;
    r.invite_code = Some("INV1".into());
    let seats = vec![seat_of(&a), bot(), Occupant::Empty];
    s.create_table(&r, &seats).await.unwrap();

    let t = s.load_table(r.id).await.unwrap().expect("stored");
    assert_eq!(t.record, r);
    assert_eq!(t.seats, seats);
    assert_eq!(t.scores, vec![0, 0, 0]);
    assert!(t.rounds.is_empty() && t.actions.is_empty());
    assert_eq!(s.load_table(Uuid::new_v4()).await.unwrap(), None);

    // Same id, or same invite code: conflicts.
    assert_conflict(s.create_table(&r, &seats).await);
    let mut r2 = record("rummy", 3, a.id, T0);
    r2.invite_code = Some("INV1".into());
    assert_conflict(s.create_table(&r2, &seats).await);
    // Public tables have no invite code, and several of them may exist.
    new_table(s, "rummy", &[Occupant::Empty], T0).await;
    new_table(s, "rummy", &[Occupant::Empty], T0).await;
    // Seats must match the seat count, and a seated player must exist.
    let r3 = record("rummy", 2, a.id, T0);
    assert!(s.create_table(&r3, &[Occupant::Empty]).await.is_err());
    let ghost = Occupant::Player {
        id: Uuid::new_v4(),
        name: "Ghost".into(),
    };
    assert_not_found(s.create_table(&r3, &[Occupant::Empty, ghost.clone()]).await);
    assert_eq!(
        s.load_table(r3.id).await.unwrap(),
        None,
        "nothing half-written"
    );

    s.set_seat(r.id, 2, &seat_of(&b), T0 + 1).await.unwrap();
    s.set_seat(r.id, 0, &Occupant::Empty, T0 + 2).await.unwrap();
    assert_not_found(s.set_seat(r.id, 3, &Occupant::Empty, T0).await);
    assert_not_found(s.set_seat(Uuid::new_v4(), 0, &Occupant::Empty, T0).await);
    assert_not_found(s.set_seat(r.id, 1, &ghost, T0).await);
    let t = s.load_table(r.id).await.unwrap().unwrap();
    assert_eq!(t.seats, vec![Occupant::Empty, bot(), seat_of(&b)]);

    for status in [
        TableStatus::Playing,
        TableStatus::Abandoned,
        TableStatus::Finished,
        TableStatus::Open,
    ] {
        s.set_status(r.id, status, T0 + 3).await.unwrap();
        assert_eq!(
            s.load_table(r.id).await.unwrap().unwrap().record.status,
            status
        );
    }
    assert_not_found(s.set_status(Uuid::new_v4(), TableStatus::Playing, T0).await);
}

async fn rounds_and_actions(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let t = new_table(s, "fibfib", &[seat_of(&a), bot(), bot()], T0).await;
    s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    s.start_round(t.id, &round(0, T0 + 10)).await.unwrap();
    assert_conflict(s.start_round(t.id, &round(0, T0 + 11)).await);
    assert_not_found(s.start_round(Uuid::new_v4(), &round(0, T0)).await);

    // Round 0 gets 12 actions (seq past 9: ordering must be numeric), in order: a table's
    // actions are appended in order (SQLite refuses one before the table's last).
    for seq in 0..12 {
        s.append_action(t.id, &action(0, seq), T0 + 20)
            .await
            .unwrap();
    }
    assert_conflict(s.append_action(t.id, &action(0, 4), T0 + 21).await);
    assert_not_found(s.append_action(t.id, &action(1, 0), T0 + 21).await);
    assert_not_found(
        s.append_action(Uuid::new_v4(), &action(0, 0), T0 + 21)
            .await,
    );

    let result0 = json!({ "winner": 0, "points": [8, 3, 1] });
    s.end_round(t.id, 0, &result0, &[8, 3, 1], T0 + 30)
        .await
        .unwrap();
    assert_conflict(s.end_round(t.id, 0, &result0, &[8, 3, 1], T0 + 31).await);
    assert_not_found(s.end_round(t.id, 7, &result0, &[8, 3, 1], T0 + 31).await);
    assert_not_found(
        s.end_round(Uuid::new_v4(), 0, &result0, &[0], T0 + 31)
            .await,
    );

    s.start_round(t.id, &round(1, T0 + 40)).await.unwrap();
    for seq in [0, 1, 2] {
        s.append_action(t.id, &action(1, seq), T0 + 50)
            .await
            .unwrap();
    }

    let stored = s.load_table(t.id).await.unwrap().unwrap();
    let mut want: Vec<ActionRecord> = (0..12).map(|q| action(0, q)).collect();
    want.extend((0..3).map(|q| action(1, q)));
    assert_eq!(stored.actions, want, "ordered by (round_no, seq)");
    assert_eq!(stored.scores, vec![8, 3, 1]);
    let mut r0 = round(0, T0 + 10);
    r0.ended_at = Some(T0 + 30);
    r0.result = Some(result0);
    let r1 = round(1, T0 + 40);
    assert_eq!(stored.rounds, vec![r0.clone(), r1.clone()]);
    assert_eq!(s.rounds(t.id).await.unwrap(), vec![r0, r1]);
    assert!(s.rounds(Uuid::new_v4()).await.unwrap().is_empty());
    assert_eq!(stored.record.status, TableStatus::Playing);

    // Actions and round ends count as activity.
    let m = s.player_matches(a.id, 10).await.unwrap();
    assert_eq!(m[0].updated_at, T0 + 50);
}

async fn finish_match(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let b = player(s, "Bob").await;
    let t = new_table(s, "nachos", &[seat_of(&a), seat_of(&b), bot()], T0).await;
    s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    s.start_round(t.id, &round(0, T0)).await.unwrap();
    s.end_round(t.id, 0, &json!(null), &[4, 4, 2], T0 + 1)
        .await
        .unwrap();
    assert_not_found(s.finish_match(Uuid::new_v4(), &[1], &[0], T0).await);
    s.finish_match(t.id, &[10, 10, 3], &[0, 1], T0 + 2)
        .await
        .unwrap();

    let stored = s.load_table(t.id).await.unwrap().unwrap();
    assert_eq!(stored.record.status, TableStatus::Finished);
    assert_eq!(stored.scores, vec![10, 10, 3]);
    let mb = s.player_matches(b.id, 10).await.unwrap();
    assert_eq!(mb.len(), 1);
    assert_eq!(
        (
            mb[0].table_id,
            mb[0].status,
            mb[0].seat,
            mb[0].score,
            mb[0].won
        ),
        (t.id, TableStatus::Finished, 1, 10, Some(true))
    );
    assert_eq!((mb[0].created_at, mb[0].updated_at), (T0, T0 + 2));
    assert_eq!(mb[0].game, "nachos");
}

/// A table's ending comes after its group's actions, whatever their order in the group: a
/// match may end on its first action, with a round's end and the finish (through the
/// ratings' path) or with a status (an ended table). Once it ended, its actions and
/// activity time are kept, and a unit of them sent again (a group retried after a commit
/// whose outcome was lost) is refused as a duplicate: SQLite keeps no head for an ended
/// table (migration 0022), Postgres refuses by its log's primary key.
async fn ended_tables_keep_their_actions(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let unit = |table: Uuid, now: i64, ops: Vec<WriteOp>| TableWrite {
        table,
        epoch: None,
        now,
        ops,
    };
    // Ended by a finish: an action, then the finishing unit (its last action, the round's
    // end and the finish) in one group with another table's action.
    let t = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    let other = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    for id in [t.id, other.id] {
        s.set_status(id, TableStatus::Playing, T0).await.unwrap();
        s.start_round(id, &round(0, T0)).await.unwrap();
    }
    s.append_action(t.id, &action(0, 0), T0 + 1).await.unwrap();
    let last = WriteOp::AppendAction(action(0, 1));
    let finishing = unit(
        t.id,
        T0 + 5,
        vec![
            last.clone(),
            WriteOp::EndRound {
                round_no: 0,
                result: json!({}),
                totals: vec![3, 1],
            },
            WriteOp::FinishMatch {
                totals: vec![3, 1],
                winners: vec![0],
            },
        ],
    );
    let elsewhere = unit(other.id, T0 + 5, vec![WriteOp::AppendAction(action(0, 0))]);
    s.write_group(&[finishing, elsewhere]).await.unwrap();
    // Ended by a status, on its first action, in a group with plain steps.
    let quick = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    s.set_status(quick.id, TableStatus::Playing, T0)
        .await
        .unwrap();
    let first = WriteOp::AppendAction(action(0, 0));
    s.write_group(&[unit(
        quick.id,
        T0 + 7,
        vec![
            WriteOp::StartRound(round(0, T0 + 6)),
            first.clone(),
            WriteOp::SetStatus(TableStatus::Finished),
        ],
    )])
    .await
    .unwrap();

    let ended = s.load_table(t.id).await.unwrap().unwrap();
    assert_eq!(ended.record.status, TableStatus::Finished);
    assert_eq!(ended.actions, vec![action(0, 0), action(0, 1)]);
    assert_eq!(ended.record.updated_at, T0 + 5);
    let quick_ended = s.load_table(quick.id).await.unwrap().unwrap();
    assert_eq!(quick_ended.record.status, TableStatus::Finished);
    assert_eq!(quick_ended.actions, vec![action(0, 0)]);
    assert_eq!(quick_ended.record.updated_at, T0 + 7);
    // The other table's head still moves on.
    s.append_action(other.id, &action(0, 1), T0 + 8)
        .await
        .unwrap();
    assert_conflict(s.append_action(other.id, &action(0, 1), T0 + 8).await);

    // Sent again: with its finish (SQLite: through the `actions` view's trigger), alone or
    // with another table's new action (the write thread's statements).
    let finish_again = WriteOp::FinishMatch {
        totals: vec![3, 1],
        winners: vec![0],
    };
    assert_conflict(
        s.write_group(&[unit(t.id, T0 + 9, vec![last.clone(), finish_again])])
            .await,
    );
    assert_conflict(s.write_group(&[unit(t.id, T0 + 9, vec![last])]).await);
    assert_conflict(
        s.write_group(&[
            unit(quick.id, T0 + 9, vec![first]),
            unit(other.id, T0 + 9, vec![WriteOp::AppendAction(action(0, 2))]),
        ])
        .await,
    );
    // A new action (never stored) of an ended table is refused too, on every backend: alone,
    // and with another table's action, which is then not stored either (one group, one
    // transaction).
    assert_conflict(s.append_action(t.id, &action(0, 2), T0 + 9).await);
    assert_conflict(s.append_action(quick.id, &action(0, 1), T0 + 9).await);
    assert_conflict(
        s.write_group(&[
            unit(t.id, T0 + 9, vec![WriteOp::AppendAction(action(0, 2))]),
            unit(other.id, T0 + 9, vec![WriteOp::AppendAction(action(0, 2))]),
        ])
        .await,
    );
    assert_eq!(
        s.load_table(other.id).await.unwrap().unwrap().actions.len(),
        2
    );
    assert_eq!(
        s.load_table(quick.id).await.unwrap().unwrap().actions.len(),
        1
    );
    let m = s.player_matches(a.id, 10).await.unwrap();
    let time = |id: Uuid| m.iter().find(|r| r.table_id == id).unwrap().updated_at;
    assert_eq!((time(t.id), time(quick.id)), (T0 + 5, T0 + 7));
    // Other ops of an ended table are no actions: a seat left after the end is stored.
    s.write_group(&[unit(
        t.id,
        T0 + 10,
        vec![WriteOp::SetSeat {
            seat: 0,
            occupant: Occupant::Empty,
        }],
    )])
    .await
    .unwrap();
    assert_eq!(
        s.load_table(t.id).await.unwrap().unwrap().seats[0],
        Occupant::Empty
    );
    assert_eq!(s.load_table(t.id).await.unwrap().unwrap().actions.len(), 2);
}

async fn unfinished_tables(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let open = new_table(s, "trump", &[seat_of(&a), Occupant::Empty], T0).await;
    let playing = new_table(s, "trump", &[seat_of(&a), bot()], T0 + 1).await;
    s.set_status(playing.id, TableStatus::Playing, T0 + 1)
        .await
        .unwrap();
    s.start_round(playing.id, &round(0, T0 + 2)).await.unwrap();
    s.append_action(playing.id, &action(0, 0), T0 + 3)
        .await
        .unwrap();
    let abandoned = new_table(s, "trump", &[Occupant::Empty], T0 + 2).await;
    s.set_status(abandoned.id, TableStatus::Abandoned, T0 + 2)
        .await
        .unwrap();
    finished_match(s, "trump", &[seat_of(&a)], &[1], &[0], T0 + 3).await;

    let mut got = s.unfinished_tables().await.unwrap();
    got.sort_by_key(|t| t.record.created_at);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].record.id, open.id);
    assert_eq!(got[0].record.status, TableStatus::Open);
    assert_eq!(got[1].record.id, playing.id);
    assert_eq!(got[1].record.status, TableStatus::Playing);
    // Fully loaded, ready for replay.
    assert_eq!(got[1].seats, vec![seat_of(&a), bot()]);
    assert_eq!(got[1].rounds, vec![round(0, T0 + 2)]);
    assert_eq!(got[1].actions, vec![action(0, 0)]);
}

/// One rated step by hand: `people` (rating, won, score) through [`rating::update`].
fn step(pool: Pool, people: &mut [(&mut Rating, bool, i64)]) {
    let entries: Vec<Entry> = people
        .iter()
        .map(|(r, won, score)| Entry {
            rating: **r,
            won: *won,
            score: *score,
            abandoned: false,
        })
        .collect();
    for ((r, _, _), new) in people.iter_mut().zip(rating::update(pool, &entries)) {
        **r = new;
    }
}

fn same(a: &Rating, b: &Rating) -> bool {
    (a.mu - b.mu).abs() < 1e-9
        && (a.sigma - b.sigma).abs() < 1e-9
        && (a.volatility - b.volatility).abs() < 1e-12
}

async fn leaderboard(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let b = player(s, "Bob").await;
    let c = player(s, "Cy").await;
    let d = player(s, "Dee").await;
    let (pa, pb, pc, pd) = (seat_of(&a), seat_of(&b), seat_of(&c), seat_of(&d));
    let duel = Pool::Duel.initial();
    let (mut ra, mut rb, mut rc, mut rd) = (duel, duel, duel, duel);
    // Duels (a bot seat does not count: Ada against Bob with a bot is a duel).
    finished_match(
        s,
        "trump",
        &[pa.clone(), pb.clone(), bot()],
        &[20, 5, 99],
        &[0, 2],
        T0,
    )
    .await;
    step(Pool::Duel, &mut [(&mut ra, true, 20), (&mut rb, false, 5)]);
    finished_match(
        s,
        "trump",
        &[pa.clone(), pc.clone()],
        &[10, 5],
        &[0],
        T0 + 1,
    )
    .await;
    step(Pool::Duel, &mut [(&mut ra, true, 10), (&mut rc, false, 5)]);
    let bc = finished_match(
        s,
        "trump",
        &[pb.clone(), pc.clone()],
        &[10, 20],
        &[1],
        T0 + 2,
    )
    .await;
    step(Pool::Duel, &mut [(&mut rb, false, 10), (&mut rc, true, 20)]);
    finished_match(
        s,
        "trump",
        &[pa.clone(), pb.clone()],
        &[3, 3],
        &[0, 1],
        T0 + 3,
    )
    .await;
    step(Pool::Duel, &mut [(&mut ra, true, 3), (&mut rb, true, 3)]);
    finished_match(
        s,
        "trump",
        &[pb.clone(), pd.clone()],
        &[10, 1],
        &[0],
        T0 + 4,
    )
    .await;
    step(Pool::Duel, &mut [(&mut rb, true, 10), (&mut rd, false, 1)]);
    finished_match(s, "trump", &[pc.clone(), pa.clone()], &[9, 1], &[0], T0 + 5).await;
    step(Pool::Duel, &mut [(&mut rc, true, 9), (&mut ra, false, 1)]);
    // Finishing a match again (a retry after a crash) does not rate it twice.
    s.finish_match(bc, &[10, 20], &[1], T0 + 2).await.unwrap();
    // Against bots alone: unrated.
    for i in 0..4 {
        finished_match(
            s,
            "trump",
            &[pd.clone(), bot()],
            &[144, 0],
            &[0],
            T0 + 10 + i,
        )
        .await;
    }
    // A three-person match: the multi pool (Weng-Lin), not the duel one.
    let multi = Pool::Multi.initial();
    let (mut ma, mut mb, mut mc) = (multi, multi, multi);
    finished_match(
        s,
        "trump",
        &[pa.clone(), pb.clone(), pc.clone()],
        &[5, 9, 7],
        &[1],
        T0 + 20,
    )
    .await;
    step(
        Pool::Multi,
        &mut [(&mut ma, false, 5), (&mut mb, true, 9), (&mut mc, false, 7)],
    );
    // Neither unfinished nor abandoned matches nor other games count.
    let playing = new_table(s, "trump", &[pd.clone(), pa.clone()], T0).await;
    s.set_status(playing.id, TableStatus::Playing, T0)
        .await
        .unwrap();
    let gone = new_table(s, "trump", &[pd.clone(), pa.clone()], T0).await;
    s.set_status(gone.id, TableStatus::Abandoned, T0)
        .await
        .unwrap();
    finished_match(s, "rummy", &[pd.clone(), pa.clone()], &[1000, 0], &[0], T0).await;

    // Ada 4 duels, Bob 4, Cy 3, Dee 1 (below the minimum of 3): three ranked.
    assert_eq!(rating::MIN_RANKED_MATCHES, 3);
    let page = s.leaderboard("trump", Pool::Duel, 0, 10).await.unwrap();
    assert_eq!(page.total, 3);
    let mut expected = vec![(a.id, ra, 4, 3), (b.id, rb, 4, 2), (c.id, rc, 3, 2)];
    expected.sort_by(|x, y| rating::conservative(&y.1).total_cmp(&rating::conservative(&x.1)));
    assert_eq!(page.rows.len(), 3);
    for (row, (id, r, matches, wins)) in page.rows.iter().zip(&expected) {
        assert_eq!(
            (row.player_id, row.matches, row.wins),
            (*id, *matches, *wins),
            "{page:?}"
        );
        assert!(same(&row.rating, r), "{row:?} vs {r:?}");
        assert!((row.conservative - rating::conservative(r)).abs() < 1e-9);
    }
    // Paging: pages do not overlap and cover the board; past the end is empty.
    let first = s.leaderboard("trump", Pool::Duel, 0, 2).await.unwrap();
    let second = s.leaderboard("trump", Pool::Duel, 2, 2).await.unwrap();
    assert_eq!((first.total, second.total), (3, 3));
    assert_eq!(first.rows, page.rows[..2].to_vec());
    assert_eq!(second.rows, page.rows[2..].to_vec());
    assert!(
        s.leaderboard("trump", Pool::Duel, 3, 2)
            .await
            .unwrap()
            .rows
            .is_empty()
    );
    assert!(
        s.leaderboard("trump", Pool::Duel, 0, 0)
            .await
            .unwrap()
            .rows
            .is_empty()
    );
    // The multi pool has its own ratings; one match each is not enough to rank.
    let board = s.leaderboard("trump", Pool::Multi, 0, 10).await.unwrap();
    assert_eq!((board.total, board.rows.len()), (0, 0));
    // Ratings are per game: one rummy duel each.
    assert_eq!(
        s.leaderboard("rummy", Pool::Duel, 0, 10)
            .await
            .unwrap()
            .total,
        0
    );
    assert!(
        s.leaderboard("nachos", Pool::Duel, 0, 10)
            .await
            .unwrap()
            .rows
            .is_empty()
    );
    // Re-rating from the history reproduces the live ratings (multi ones too) exactly.
    let before_duel = page.clone();
    let replayed = s.rerate(true).await.unwrap();
    // 6 duels + 4 against bots + 1 multi + 1 rummy, finished.
    assert_eq!(replayed, Some(12));
    assert_eq!(
        s.leaderboard("trump", Pool::Duel, 0, 10).await.unwrap(),
        before_duel
    );
    assert_eq!(
        s.rerate(false).await.unwrap(),
        None,
        "the version is recorded"
    );
    // Two multi matches more, both won by Ada: three each, so the multi board ranks them,
    // with exactly the ratings of the three Weng-Lin steps.
    for i in 0..2 {
        finished_match(
            s,
            "trump",
            &[pa.clone(), pb.clone(), pc.clone()],
            &[50, 9, 7],
            &[0],
            T0 + 30 + i,
        )
        .await;
        step(
            Pool::Multi,
            &mut [
                (&mut ma, true, 50),
                (&mut mb, false, 9),
                (&mut mc, false, 7),
            ],
        );
    }
    let board = s.leaderboard("trump", Pool::Multi, 0, 10).await.unwrap();
    assert_eq!(board.total, 3);
    assert_eq!(board.rows[0].player_id, a.id, "Ada won twice: {board:?}");
    for row in &board.rows {
        let want = [(a.id, ma), (b.id, mb), (c.id, mc)]
            .into_iter()
            .find(|(id, _)| *id == row.player_id)
            .unwrap()
            .1;
        assert!(same(&row.rating, &want), "{row:?} vs {want:?}");
        assert_eq!(row.matches, 3);
    }
}

/// A match whose seat abandoned it: written as the table task does (abandon, then finish).
async fn abandoned_match(s: &dyn Store, seats: &[Occupant], gone: i32, now: i64) {
    let t = new_table(s, "fibfib", seats, now).await;
    s.set_status(t.id, TableStatus::Playing, now).await.unwrap();
    s.write_group(&[unit(
        t.id,
        now,
        vec![
            WriteOp::Abandon { seats: vec![gone] },
            finish(&vec![10; seats.len()], &[gone]),
        ],
    )])
    .await
    .unwrap();
}

/// Who abandons loses to everyone who stayed, even as the match's winner with the best
/// score; in a multi match the stayers keep their order among themselves.
async fn abandoning_loses_to_everyone(s: &dyn Store) {
    let (a, b, c) = (
        player(s, "Ada").await,
        player(s, "Bob").await,
        player(s, "Cy").await,
    );
    for i in 0..3 {
        abandoned_match(s, &[seat_of(&a), seat_of(&b)], 0, T0 + i).await;
        abandoned_match(s, &[seat_of(&a), seat_of(&b), seat_of(&c)], 0, T0 + 10 + i).await;
    }
    let duel = s.leaderboard("fibfib", Pool::Duel, 0, 10).await.unwrap();
    let ids: Vec<Uuid> = duel.rows.iter().map(|r| r.player_id).collect();
    assert_eq!(ids, vec![b.id, a.id], "{duel:?}");
    assert_eq!(
        (duel.rows[0].wins, duel.rows[1].wins),
        (0, 0),
        "an abandoner never wins"
    );
    let multi = s.leaderboard("fibfib", Pool::Multi, 0, 10).await.unwrap();
    assert_eq!(multi.rows.last().unwrap().player_id, a.id, "{multi:?}");
    // Bob and Cy drew (equal scores, neither won): equal ratings.
    let (rb, rc) = (&multi.rows[0].rating, &multi.rows[1].rating);
    assert!((rb.mu - rc.mu).abs() < 1e-9, "{multi:?}");
}

/// No lost update: one player's matches finishing at the same time (on Postgres really
/// concurrently, each in its own transaction) each start from the previous one's result.
/// Ada beats a newcomer in every match, so whatever the order, her rating must be that of
/// `N` wins in a row against newcomers; a lost update would leave it lower.
async fn concurrent_ratings_lose_no_update(s: Arc<dyn Store>) {
    const N: usize = 12;
    let ada = player(&*s, "Ada").await;
    let mut tables = Vec::new();
    for i in 0..N {
        let other = player(&*s, &format!("P{i}")).await;
        let t = new_table(&*s, "nachos", &[seat_of(&ada), seat_of(&other)], T0).await;
        s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
        tables.push(t.id);
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let tasks: Vec<_> = tables
        .iter()
        .map(|&t| {
            let (s, barrier) = (s.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                s.finish_match(t, &[10, 0], &[0], T0 + 5).await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().expect("finish");
    }
    let mut expected = Pool::Duel.initial();
    for _ in 0..N {
        let mut fresh = Pool::Duel.initial();
        step(
            Pool::Duel,
            &mut [(&mut expected, true, 10), (&mut fresh, false, 0)],
        );
    }
    let board = s.leaderboard("nachos", Pool::Duel, 0, 50).await.unwrap();
    assert_eq!(board.total, 1, "only Ada has 3 or more matches");
    let row = &board.rows[0];
    assert_eq!(
        (row.player_id, row.matches, row.wins),
        (ada.id, N as i64, N as i64)
    );
    assert!(
        (row.rating.mu - expected.mu).abs() < 1e-6
            && (row.rating.sigma - expected.sigma).abs() < 1e-6,
        "{row:?} vs {expected:?}"
    );
}

/// Issue #33, item 3: rating updates of matches finished in the same millisecond have a
/// total order, the one they were applied in, which the history and re-rating both use.
/// Sixteen people, 24 duels (three each), all finishing at one instant: half one after the
/// other in the reverse of their table ids' order (so neither finish time nor table id can
/// stand in for the order), half at once (on Postgres really concurrently, players in two
/// matches at once). Then every player's history ends at their current rating, and a
/// re-rating reproduces the live ratings and histories exactly.
async fn same_millisecond_ratings_keep_their_order(s: Arc<dyn Store>) {
    const PEOPLE: usize = 16;
    let at = T0 + 5;
    let mut people = Vec::new();
    for i in 0..PEOPLE {
        people.push(player(&*s, &format!("P{i}")).await);
    }
    // Neighbours on a ring, and across it: three duels each.
    let pairs: Vec<(usize, usize)> = (0..PEOPLE)
        .map(|i| (i, (i + 1) % PEOPLE))
        .chain((0..PEOPLE / 2).map(|i| (i, i + PEOPLE / 2)))
        .collect();
    let mut tables = Vec::new();
    for (n, &(x, y)) in pairs.iter().enumerate() {
        let seats = [seat_of(&people[x]), seat_of(&people[y])];
        let t = new_table(&*s, "nachos", &seats, T0).await;
        s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
        // Winners vary, so the order of a player's matches changes the result.
        let winner = (n % 3 == 0) as usize;
        tables.push((t.id, winner));
    }
    let (first_half, at_once) = tables.split_at(tables.len() / 2);
    let mut one_by_one = first_half.to_vec();
    one_by_one.sort_by_key(|(id, _)| std::cmp::Reverse(id.to_string()));
    for (id, winner) in &one_by_one {
        let mut totals = [3, 3];
        totals[*winner] = 10;
        s.finish_match(*id, &totals, &[*winner as i32], at)
            .await
            .unwrap();
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(at_once.len()));
    let tasks: Vec<_> = at_once
        .iter()
        .map(|&(id, winner)| {
            let (s, barrier) = (s.clone(), barrier.clone());
            tokio::spawn(async move {
                let mut totals = [3, 3];
                totals[winner] = 10;
                barrier.wait().await;
                s.finish_match(id, &totals, &[winner as i32], at).await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().expect("finish");
    }

    let snapshot = |s: Arc<dyn Store>, people: Vec<Player>| async move {
        let mut out = Vec::new();
        for p in &people {
            let ratings = s.player_ratings(p.id).await.unwrap();
            let history = s
                .rating_history(p.id, "nachos", Pool::Duel, 1000)
                .await
                .unwrap();
            out.push((p.name.clone(), ratings, history));
        }
        out
    };
    let live = snapshot(s.clone(), people.clone()).await;
    let mut wrong = Vec::new();
    for (name, ratings, history) in &live {
        assert_eq!(ratings.len(), 1, "{name}: {ratings:?}");
        let current = &ratings[0];
        assert_eq!((current.matches, history.len()), (3, 3), "{name}");
        assert!(history.iter().all(|p| p.at == at), "{name}: {history:?}");
        let last = history.last().unwrap();
        if (last.mu, last.sigma, last.conservative)
            != (
                current.rating.mu,
                current.rating.sigma,
                current.conservative,
            )
        {
            wrong.push(format!(
                "{name}: history ends at {} / {}, rating is {} / {}",
                last.mu, last.sigma, current.rating.mu, current.rating.sigma
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "the last point of the history is not the current rating:\n{}",
        wrong.join("\n")
    );
    // Re-rating replays the same order: the same ratings and histories, exactly.
    assert_eq!(s.rerate(true).await.unwrap(), Some(pairs.len() as u64));
    let replayed = snapshot(s.clone(), people.clone()).await;
    for (l, r) in live.iter().zip(&replayed) {
        assert_eq!(l, r, "re-rating changed {}'s ratings or history", l.0);
    }
}

/// Records: a game's best totals (people only, bots counted per match, no abandoned seat's
/// total: its stand-in made it); Solitaire's best
/// played-out games per target, overall and for one daily deal.
async fn records(s: &dyn Store) {
    let (a, b) = (player(s, "Ada").await, player(s, "Bob").await);
    finished_match(s, "trump", &[seat_of(&a), bot()], &[90, 200], &[1], T0).await;
    finished_match(
        s,
        "trump",
        &[seat_of(&a), seat_of(&b)],
        &[120, 90],
        &[0],
        T0 + 1,
    )
    .await;
    finished_match(
        s,
        "nachos",
        &[seat_of(&b), seat_of(&a)],
        &[500, 1],
        &[0],
        T0,
    )
    .await;
    // Unfinished: no record.
    let t = new_table(s, "trump", &[seat_of(&b), seat_of(&a)], T0).await;
    s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    // Abandoned: Bob left, his stand-in made 300. No record of his; Ada's 10 still is one.
    let t = new_table(s, "trump", &[seat_of(&b), seat_of(&a)], T0).await;
    s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    s.write_group(&[unit(
        t.id,
        T0 + 2,
        vec![
            WriteOp::Abandon { seats: vec![0] },
            finish(&[300, 10], &[1]),
        ],
    )])
    .await
    .unwrap();
    let best = s.best_totals("trump", 10).await.unwrap();
    let rows: Vec<(&str, i64, i64, i64)> = best
        .iter()
        .map(|r| (r.name.as_str(), r.score, r.people, r.bots))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("Ada", 120, 2, 0),
            ("Ada", 90, 1, 1),
            ("Bob", 90, 2, 0),
            ("Ada", 10, 2, 0)
        ]
    );
    assert_eq!(best[0].finished_at, T0 + 1);
    assert_eq!(s.best_totals("trump", 1).await.unwrap().len(), 1);

    let solitaire = |p: &Player, target: u32, daily: Option<&str>, at: i64| {
        let mut r = record("rummy", 1, p.id, at);
        r.options = json!({"match_length": {"count": 1, "kind": "rounds"}, "non_rabbit": false, "target": target});
        r.daily = daily.map(str::to_string);
        (r, seat_of(p))
    };
    let day = "solitaire-21/2026-11-22";
    for (p, target, daily, score, won, at) in [
        (&a, 21, Some(day), 30, true, 10),
        (&b, 21, None, 12, true, 20),
        (&b, 21, Some(day), 20, true, 25),
        (&a, 13, None, 5, true, 5),
        (&a, 21, None, 3, false, 5),
    ] {
        let (r, seat) = solitaire(p, target, daily, at);
        s.create_table(&r, &[seat]).await.unwrap();
        s.set_status(r.id, TableStatus::Playing, at).await.unwrap();
        let winners: &[i32] = if won { &[0] } else { &[] };
        s.finish_match(r.id, &[score], winners, at).await.unwrap();
    }
    let names = |v: Vec<store::ScoreRecord>| -> Vec<(String, i64)> {
        v.into_iter().map(|r| (r.name, r.score)).collect()
    };
    assert_eq!(
        names(s.solitaire_best(21, None, i64::MAX, 10).await.unwrap()),
        [("Bob".into(), 12), ("Bob".into(), 20), ("Ada".into(), 30)]
    );
    assert_eq!(
        names(s.solitaire_best(21, Some(day), i64::MAX, 10).await.unwrap()),
        [("Bob".into(), 20), ("Ada".into(), 30)]
    );
    // Only games finished before the cut-off.
    assert_eq!(
        names(s.solitaire_best(21, Some(day), 15, 10).await.unwrap()),
        [("Ada".into(), 30)]
    );
    assert_eq!(
        names(s.solitaire_best(13, None, i64::MAX, 10).await.unwrap()),
        [("Ada".into(), 5)]
    );
    assert!(
        s.solitaire_best(8, None, i64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// One daily game per player and deal, even when two requests race: the store refuses the
/// second table with a `Conflict`, so the caller can hand back the first.
async fn one_daily_table_per_player(s: Arc<dyn Store>) {
    let ada = player(&*s, "Ada").await;
    let key = "solitaire-8/2026-11-22";
    let tries: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            let mut r = record("rummy", 1, ada.id, T0 + i);
            r.daily = Some(key.into());
            let seat = seat_of(&ada);
            tokio::spawn(async move { (r.id, s.create_table(&r, &[seat]).await) })
        })
        .collect();
    let mut won = Vec::new();
    for t in tries {
        let (id, r) = t.await.unwrap();
        match r {
            Ok(()) => won.push(id),
            Err(e) => assert!(matches!(e, StoreError::Conflict(_)), "{e:?}"),
        }
    }
    assert_eq!(won.len(), 1, "exactly one daily table");
    assert_eq!(s.daily_table_of(key, ada.id).await.unwrap(), Some(won[0]));
    // Another player, or another deal, is no conflict.
    let bob = player(&*s, "Bob").await;
    let mut r = record("rummy", 1, bob.id, T0);
    r.daily = Some(key.into());
    s.create_table(&r, &[seat_of(&bob)]).await.unwrap();
    let mut r = record("rummy", 1, ada.id, T0);
    r.daily = Some("solitaire-8/2026-11-23".into());
    s.create_table(&r, &[seat_of(&ada)]).await.unwrap();
}

async fn player_matches(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let pa = seat_of(&a);
    let old_done = finished_match(s, "trump", &[pa.clone(), bot()], &[3, 1], &[0], T0 + 1).await;
    let new_done = finished_match(s, "trump", &[bot(), pa.clone()], &[3, 1], &[0], T0 + 5).await;
    let gone = new_table(s, "trump", std::slice::from_ref(&pa), T0).await;
    s.set_status(gone.id, TableStatus::Abandoned, T0 + 9)
        .await
        .unwrap();
    let open = new_table(s, "rummy", &[pa.clone(), Occupant::Empty], T0 + 2).await;
    let playing = new_table(s, "nachos", &[Occupant::Empty, pa.clone()], T0).await;
    s.set_status(playing.id, TableStatus::Playing, T0 + 3)
        .await
        .unwrap();
    new_table(s, "trump", &[bot(), Occupant::Empty], T0 + 4).await; // not Ada's

    let got = s.player_matches(a.id, 10).await.unwrap();
    let ids: Vec<Uuid> = got.iter().map(|m| m.table_id).collect();
    // Unfinished first (newest activity first), then the rest (newest first).
    assert_eq!(ids, vec![playing.id, open.id, gone.id, new_done, old_done]);
    assert_eq!(got[0].won, None);
    assert_eq!(got[0].seat, 1);
    assert_eq!(got[2].won, None, "abandoned: no winner");
    assert_eq!((got[3].won, got[3].seat, got[3].score), (Some(false), 1, 1));
    assert_eq!((got[4].won, got[4].seat, got[4].score), (Some(true), 0, 3));
    assert_eq!(s.player_matches(a.id, 2).await.unwrap(), got[..2].to_vec());
    assert!(
        s.player_matches(Uuid::new_v4(), 10)
            .await
            .unwrap()
            .is_empty()
    );

    // The public list: finished and abandoned public tables only, filtered before the
    // limit (the unfinished ones, first above, take no place in it), newest first.
    let mut hidden = record("trump", 2, Uuid::new_v4(), T0 + 20);
    hidden.private = true;
    s.create_table(&hidden, &[pa.clone(), bot()]).await.unwrap();
    s.set_status(hidden.id, TableStatus::Abandoned, T0 + 21)
        .await
        .unwrap();
    let public = s.public_matches(a.id, 10).await.unwrap();
    let ids: Vec<Uuid> = public.iter().map(|m| m.table_id).collect();
    assert_eq!(ids, vec![gone.id, new_done, old_done]);
    assert_eq!(
        public[1], got[3],
        "the same row as in the player's own list"
    );
    assert_eq!(
        s.public_matches(a.id, 1).await.unwrap(),
        public[..1].to_vec()
    );
}

/// The database's clock, which leases are measured on, in Unix milliseconds: this
/// machine's within a few seconds (the database runs here).
async fn database_clock(s: &dyn Store) {
    let here = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let db = s.database_now_ms().await.unwrap();
    assert!((db - here).abs() < 5_000, "database {db}, here {here}");
}

fn chat_line(seq: i64, p: &Player, spectator: bool, text: &str, at: i64) -> WriteOp {
    WriteOp::Chat(ChatRecord {
        seq,
        player_id: p.id,
        name: p.name.clone(),
        spectator,
        text: (!text.is_empty()).then(|| text.to_string()),
        emote: text.is_empty().then(|| "gg".to_string()),
        created_at: at,
    })
}

/// Table chat is stored through groups, does not touch the table's `updated_at`, and its
/// history keeps the latest lines of players and of spectators apart; mutes are a set.
async fn chat_lines_and_mutes(s: &dyn Store) {
    let (a, c) = (player(s, "Ada").await, player(s, "Cy").await);
    let t = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    let mut units = Vec::new();
    // Players' lines 1..=4 (4 is a reaction), spectators' 5..=10.
    for seq in 1..=4 {
        let text = if seq == 4 {
            String::new()
        } else {
            format!("a{seq}")
        };
        units.push(unit(
            t.id,
            T0 + seq,
            vec![chat_line(seq, &a, false, &text, T0 + seq)],
        ));
    }
    for seq in 5..=10 {
        units.push(unit(
            t.id,
            T0 + seq,
            vec![chat_line(seq, &c, true, &format!("c{seq}"), T0 + seq)],
        ));
    }
    s.write_group(&units).await.unwrap();
    let history = s.chat_history(t.id, 3).await.unwrap();
    let seqs: Vec<i64> = history.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, vec![2, 3, 4, 8, 9, 10], "3 of each kind, in order");
    assert_eq!(history[0].text.as_deref(), Some("a2"));
    assert_eq!(
        (history[2].text.as_deref(), history[2].emote.as_deref()),
        (None, Some("gg"))
    );
    assert!(history[3].spectator && !history[0].spectator);
    assert_eq!(history[3].player_id, c.id);
    assert_eq!(history[3].created_at, T0 + 8);
    // Each kind keeps its latest CHAT_KEPT lines: the players' beyond are forgotten as
    // new ones come (one group of many, and one line at a time), the spectators' three
    // stay.
    let talk = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    let kept = store::CHAT_KEPT;
    let mut many: Vec<_> = (1..=kept + 5)
        .map(|seq| {
            unit(
                talk.id,
                T0 + seq,
                vec![chat_line(seq, &a, false, "x", T0 + seq)],
            )
        })
        .collect();
    many.insert(
        3,
        unit(talk.id, T0, vec![chat_line(1_000, &c, true, "c", T0)]),
    );
    s.write_group(&many).await.unwrap();
    for seq in [kept + 6, kept + 7] {
        let one = unit(talk.id, T0, vec![chat_line(seq, &a, false, "y", T0)]);
        s.write_group(&[one]).await.unwrap();
    }
    for seq in [1_001, 1_002] {
        let one = unit(talk.id, T0, vec![chat_line(seq, &c, true, "d", T0)]);
        s.write_group(&[one]).await.unwrap();
    }
    let all = s.chat_history(talk.id, 1_000).await.unwrap();
    let players: Vec<i64> = all.iter().filter(|l| !l.spectator).map(|l| l.seq).collect();
    assert_eq!(players, (8..=kept + 7).collect::<Vec<_>>());
    let audience: Vec<i64> = all.iter().filter(|l| l.spectator).map(|l| l.seq).collect();
    assert_eq!(audience, vec![1_000, 1_001, 1_002]);
    // Talking is no activity of the match.
    let mine = s.player_matches(a.id, 5).await.unwrap();
    assert_eq!(mine[0].updated_at, T0);
    // A line number is unique per table; an unknown sender or table is refused.
    let dup = s
        .write_group(&[unit(t.id, T0, vec![chat_line(2, &a, false, "x", T0)])])
        .await;
    assert!(matches!(dup, Err(StoreError::Conflict(_))), "{dup:?}");
    let ghost = Player {
        id: Uuid::new_v4(),
        name: "Ghost".into(),
        created_at: T0,
        bot: false,
    };
    let unknown = s
        .write_group(&[unit(t.id, T0, vec![chat_line(11, &ghost, true, "x", T0)])])
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound(_))),
        "{unknown:?}"
    );
    let nowhere = s
        .write_group(&[unit(
            Uuid::new_v4(),
            T0,
            vec![chat_line(1, &a, false, "x", T0)],
        )])
        .await;
    assert!(
        matches!(nowhere, Err(StoreError::NotFound(_))),
        "{nowhere:?}"
    );
    assert_eq!(s.chat_history(t.id, 50).await.unwrap().len(), 10);
    assert!(s.chat_history(Uuid::new_v4(), 50).await.unwrap().is_empty());

    assert!(s.mutes_of(a.id).await.unwrap().is_empty());
    s.set_muted(a.id, c.id, true, T0).await.unwrap();
    s.set_muted(a.id, c.id, true, T0 + 1).await.unwrap(); // twice: no error
    assert_eq!(s.mutes_of(a.id).await.unwrap(), vec![c.id]);
    assert!(
        s.mutes_of(c.id).await.unwrap().is_empty(),
        "a mute is one-way"
    );
    let me = s.set_muted(a.id, a.id, true, T0).await;
    assert!(matches!(me, Err(StoreError::Conflict(_))), "{me:?}");
    let nobody = s.set_muted(a.id, Uuid::new_v4(), true, T0).await;
    assert!(matches!(nobody, Err(StoreError::NotFound(_))), "{nobody:?}");
    // Unmuting nobody is refused too, though there is no row to delete either way.
    let nobody = s.set_muted(a.id, Uuid::new_v4(), false, T0).await;
    assert!(matches!(nobody, Err(StoreError::NotFound(_))), "{nobody:?}");
    s.set_muted(a.id, c.id, false, T0).await.unwrap();
    s.set_muted(a.id, c.id, false, T0).await.unwrap(); // not muted any more: no error
    assert!(s.mutes_of(a.id).await.unwrap().is_empty());
}

/// Several tables written at once (as table tasks do): no write may fail with "busy".
async fn concurrent_writers(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let mut tables = Vec::new();
    for _ in 0..6 {
        let t = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
        s.start_round(t.id, &round(0, T0)).await.unwrap();
        tables.push(t.id);
    }
    let writes = tables.iter().map(|&t| async move {
        for seq in 0..25 {
            s.append_action(t, &action(0, seq), T0 + seq).await?;
        }
        s.end_round(t, 0, &json!({}), &[1, 2], T0 + 30).await
    });
    for r in futures_join_all(writes).await {
        r.expect("concurrent write");
    }
    for t in tables {
        assert_eq!(s.load_table(t).await.unwrap().unwrap().actions.len(), 25);
    }
}

/// Polls all futures together on the current task (no extra dependency for `join_all`).
async fn futures_join_all<F: std::future::Future>(
    fs: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in fs {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in set.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *slot = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("ready")).collect()
}

/// Everything of a small match, written so that reopening can be checked against it.
async fn daily_deals(s: &dyn Store) {
    let key = "solitaire-21/2026-11-22";
    let seed = |v: Option<String>| v;
    // Without a fresh seed nothing is created; the first seed of the day wins.
    assert_eq!(s.daily_seed(key, None, 1).await.unwrap(), None);
    assert_eq!(
        seed(s.daily_seed(key, Some("aa"), 1).await.unwrap()).as_deref(),
        Some("aa")
    );
    assert_eq!(
        seed(s.daily_seed(key, Some("bb"), 2).await.unwrap()).as_deref(),
        Some("aa")
    );
    assert_eq!(
        seed(s.daily_seed(key, None, 2).await.unwrap()).as_deref(),
        Some("aa")
    );
    let other = "solitaire-13/2026-11-22";
    assert_eq!(
        seed(s.daily_seed(other, Some("cc"), 2).await.unwrap()).as_deref(),
        Some("cc")
    );

    let (a, b, c) = (
        player(s, "Ada").await,
        player(s, "Bob").await,
        player(s, "Cy").await,
    );
    let mut tables = Vec::new();
    for (p, score, won, at) in [(&a, 30, true, 10), (&b, 12, true, 20), (&c, 67, false, 5)] {
        let mut r = record("rummy", 1, p.id, at);
        r.daily = Some(key.into());
        r.private = true;
        s.create_table(&r, &[seat_of(p)]).await.unwrap();
        let loaded = s.load_table(r.id).await.unwrap().unwrap();
        assert_eq!(loaded.record.daily.as_deref(), Some(key));
        s.set_status(r.id, TableStatus::Playing, at).await.unwrap();
        s.start_round(r.id, &round(1, at)).await.unwrap();
        s.end_round(r.id, 1, &json!({}), &[score], at)
            .await
            .unwrap();
        let winners: &[i32] = if won { &[0] } else { &[] };
        s.finish_match(r.id, &[score], winners, at).await.unwrap();
        tables.push(r.id);
    }
    // An unfinished daily game is not on the board, but it is the player's table.
    let next_day = "solitaire-21/2026-11-23";
    let mut late = record("rummy", 1, a.id, 50);
    late.daily = Some(next_day.into());
    s.create_table(&late, &[seat_of(&a)]).await.unwrap();
    assert_eq!(s.daily_table_of(key, a.id).await.unwrap(), Some(tables[0]));
    assert_eq!(s.daily_table_of(key, Uuid::new_v4()).await.unwrap(), None);
    assert_eq!(
        s.daily_table_of(next_day, a.id).await.unwrap(),
        Some(late.id)
    );
    let board = s.daily_board(key, 1_000, 10).await.unwrap();
    let order: Vec<(&str, i64, bool)> = board
        .iter()
        .map(|r| (r.name.as_str(), r.score, r.finished))
        .collect();
    // Finished games by fewest discards, then lost ones.
    assert_eq!(
        order,
        vec![("Bob", 12, true), ("Ada", 30, true), ("Cy", 67, false)]
    );
    assert_eq!(board[0].table_id, tables[1]);
    assert!(s.daily_board(next_day, 1_000, 10).await.unwrap().is_empty());
    assert_eq!(s.daily_board(key, 1_000, 1).await.unwrap().len(), 1);
    // Only games finished before the cut-off (the end of the deal's day) rank.
    let early: Vec<String> = s
        .daily_board(key, 15, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(early, ["Ada", "Cy"]);
}

async fn fill(s: &dyn Store) -> (Player, StoredTable) {
    let a = player(s, "Ada").await;
    let t = new_table(s, "trump", &[seat_of(&a), bot()], T0).await;
    s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    s.start_round(t.id, &round(0, T0)).await.unwrap();
    for seq in 0..5 {
        s.append_action(t.id, &action(0, seq), T0 + seq)
            .await
            .unwrap();
    }
    s.end_round(t.id, 0, &json!({ "w": 0 }), &[7, 2], T0 + 9)
        .await
        .unwrap();
    s.start_round(t.id, &round(1, T0 + 10)).await.unwrap();
    s.append_action(t.id, &action(1, 0), T0 + 11).await.unwrap();
    let stored = s.load_table(t.id).await.unwrap().unwrap();
    (a, stored)
}

async fn check_filled(s: &dyn Store, (a, stored): &(Player, StoredTable)) {
    let token = format!("hash-of-{}", a.id);
    assert_eq!(
        s.player_by_token_hash(&token)
            .await
            .unwrap()
            .map(|a| a.player)
            .as_ref(),
        Some(a)
    );
    assert_eq!(
        s.load_table(stored.record.id).await.unwrap().as_ref(),
        Some(stored)
    );
    assert_eq!(s.unfinished_tables().await.unwrap(), vec![stored.clone()]);
}

// ---------------------------------------------------------------------------------------
// Group commit: `write_group` and the `Writer`.

/// A unit of `ops` for `table` at `now`.
fn unit(table: Uuid, now: i64, ops: Vec<WriteOp>) -> TableWrite {
    TableWrite {
        table,
        epoch: None,
        now,
        ops,
    }
}

fn append(round_no: i32, seq: i64) -> WriteOp {
    WriteOp::AppendAction(action(round_no, seq))
}

fn end(round_no: i32, totals: &[i64]) -> WriteOp {
    WriteOp::EndRound {
        round_no,
        result: json!({ "round": round_no, "totals": totals }),
        totals: totals.to_vec(),
    }
}

fn finish(totals: &[i64], winners: &[i32]) -> WriteOp {
    WriteOp::FinishMatch {
        totals: totals.to_vec(),
        winners: winners.to_vec(),
    }
}

/// Writes `unit` through the single-write methods, op by op.
async fn write_singly(s: &dyn Store, unit: &TableWrite) -> Result<(), StoreError> {
    let (t, now) = (unit.table, unit.now);
    for op in &unit.ops {
        match op {
            WriteOp::SetSeat { seat, occupant } => s.set_seat(t, *seat, occupant, now).await,
            WriteOp::SetStatus(status) => s.set_status(t, *status, now).await,
            WriteOp::StartRound(r) => s.start_round(t, r).await,
            WriteOp::AppendAction(a) => s.append_action(t, a, now).await,
            WriteOp::EndRound {
                round_no,
                result,
                totals,
            } => s.end_round(t, *round_no, result, totals, now).await,
            WriteOp::FinishMatch { totals, winners } => {
                s.finish_match(t, totals, winners, now).await
            }
            // No single-write method: a unit of its own.
            op @ (WriteOp::SetClock(_) | WriteOp::Abandon { .. }) => {
                s.write_group(&[TableWrite::one(t, now, op.clone())]).await
            }
            // Chat has no single-write method: a group of one.
            WriteOp::Chat(_) => s.write_group(&[TableWrite::one(t, now, op.clone())]).await,
        }?;
    }
    Ok(())
}

/// Three people and three tables of `game`, and the units of an evening of play there, in
/// the order a writer could have grouped them: t0 (Ada v Bob) plays two rounds and Ada
/// wins; t1 (Ada v Cy) is won by Cy, after t0 (so Ada's second rating starts from her
/// first), then finished again (a retry: rated once); t2 (Bob v an empty seat, then a bot)
/// keeps playing.
async fn evening(s: &dyn Store, game: &str) -> (Vec<Uuid>, Vec<Player>, Vec<TableWrite>) {
    let people = vec![
        player(s, "Ada").await,
        player(s, "Bob").await,
        player(s, "Cy").await,
    ];
    let [a, b, c] = [0, 1, 2].map(|i| seat_of(&people[i]));
    let mut tables = Vec::new();
    for seats in [[a.clone(), b.clone()], [a, c], [b, Occupant::Empty]] {
        let r = record(game, 2, people[0].id, T0);
        s.create_table(&r, &seats).await.unwrap();
        tables.push(r.id);
    }
    let [t0, t1, t2] = [tables[0], tables[1], tables[2]];
    let playing = || WriteOp::SetStatus(TableStatus::Playing);
    let start = |no, at| WriteOp::StartRound(round(no, at));
    let units = vec![
        unit(t0, T0 + 1, vec![playing(), start(0, T0 + 1)]),
        unit(t1, T0 + 1, vec![playing(), start(0, T0 + 2)]),
        unit(
            t2,
            T0 + 2,
            vec![
                WriteOp::SetSeat {
                    seat: 1,
                    occupant: bot(),
                },
                playing(),
                start(0, T0 + 2),
            ],
        ),
        unit(t0, T0 + 3, vec![append(0, 0)]),
        unit(t1, T0 + 3, vec![append(0, 0)]),
        unit(t0, T0 + 4, vec![append(0, 1)]),
        unit(t2, T0 + 4, vec![append(0, 0)]),
        unit(t0, T0 + 5, vec![append(0, 2)]),
        unit(t1, T0 + 5, vec![append(0, 1)]),
        unit(
            t0,
            T0 + 10,
            vec![append(0, 3), end(0, &[5, 3]), start(1, T0 + 10)],
        ),
        unit(
            t0,
            T0 + 11,
            vec![append(1, 0), end(1, &[9, 4]), finish(&[9, 4], &[0])],
        ),
        unit(
            t1,
            T0 + 12,
            vec![append(0, 2), end(0, &[2, 7]), finish(&[2, 7], &[1])],
        ),
        unit(t2, T0 + 13, vec![append(0, 1)]),
        unit(t1, T0 + 14, vec![finish(&[2, 7], &[1])]),
    ];
    (tables, people, units)
}

/// Everything the store says about `tables` and `people`, with their ids and `game`
/// replaced by placeholders, so that two runs can be compared.
async fn snapshot(s: &dyn Store, game: &str, tables: &[Uuid], people: &[Player]) -> String {
    let mut out = String::new();
    for &t in tables {
        out += &format!("{:?}\n", s.load_table(t).await.unwrap());
    }
    for p in people {
        out += &format!("{:?}\n", s.player_matches(p.id, 10).await.unwrap());
    }
    for p in people {
        out += &format!("{:?}\n", s.player_ratings(p.id).await.unwrap());
    }
    for pool in [Pool::Duel, Pool::Multi] {
        out += &format!("{:?}\n", s.leaderboard(game, pool, 0, 10).await.unwrap());
    }
    for (i, t) in tables.iter().enumerate() {
        out = out.replace(&t.to_string(), &format!("T{i}"));
    }
    for (i, p) in people.iter().enumerate() {
        out = out.replace(&p.id.to_string(), &format!("P{i}"));
    }
    out.replace(game, "GAME")
}

async fn write_group_matches_single_methods(s: &dyn Store) {
    let (tables, people, units) = evening(s, "trump").await;
    for u in &units {
        write_singly(s, u).await.unwrap();
    }
    let singly = snapshot(s, "trump", &tables, &people).await;

    let (tables, people, units) = evening(s, "rummy").await;
    s.write_group(&units).await.unwrap();
    let grouped = snapshot(s, "rummy", &tables, &people).await;
    assert_eq!(grouped, singly);

    // And the result is the evening's, not merely the same twice.
    let t0 = s.load_table(tables[0]).await.unwrap().unwrap();
    assert_eq!(t0.record.status, TableStatus::Finished);
    assert_eq!(
        (t0.scores, t0.actions.len(), t0.rounds.len()),
        (vec![9, 4], 5, 2)
    );
    let t2 = s.load_table(tables[2]).await.unwrap().unwrap();
    assert_eq!(t2.record.status, TableStatus::Playing);
    assert_eq!(t2.seats[1], bot());
    assert_eq!(t2.actions, vec![action(0, 0), action(0, 1)]);
    let updated: Vec<i64> = s
        .player_matches(people[0].id, 10)
        .await
        .unwrap()
        .iter()
        .map(|m| m.updated_at)
        .collect();
    assert_eq!(updated, [T0 + 14, T0 + 11], "each table's last op");
    let duel = Pool::Duel.initial();
    let (mut ra, mut rb, mut rc) = (duel, duel, duel);
    step(Pool::Duel, &mut [(&mut ra, true, 9), (&mut rb, false, 4)]);
    step(Pool::Duel, &mut [(&mut ra, false, 2), (&mut rc, true, 7)]);
    for (p, r, matches) in [
        (&people[0], ra, 2),
        (&people[1], rb, 1),
        (&people[2], rc, 1),
    ] {
        let got = s.player_ratings(p.id).await.unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            (got[0].game.as_str(), got[0].pool, got[0].matches),
            ("rummy", Pool::Duel, matches)
        );
        assert!(same(&got[0].rating, &r), "{} {got:?} vs {r:?}", p.name);
    }
}

async fn write_group_is_all_or_nothing(s: &dyn Store) {
    let (tables, people, units) = evening(s, "trump").await;
    s.write_group(&units).await.unwrap();
    let [t0, t1, t2] = [tables[0], tables[1], tables[2]];
    let before = snapshot(s, "trump", &tables, &people).await;
    let next = || unit(t2, T0 + 20, vec![append(0, 2)]);
    let start = |no| WriteOp::StartRound(round(no, T0 + 20));
    let bad_groups = [
        // A duplicate of a stored action, after a good unit and a match's end.
        vec![
            next(),
            unit(t2, T0 + 20, vec![end(0, &[1, 1]), finish(&[1, 1], &[0])]),
            unit(t0, T0 + 20, vec![append(1, 0)]),
        ],
        // Two units with the same sequence number.
        vec![next(), unit(t1, T0 + 20, vec![append(0, 9)]), next()],
        // A round that already ended.
        vec![next(), unit(t1, T0 + 20, vec![end(0, &[3, 3])])],
        // A round that does not exist, and a table that does not exist.
        vec![next(), unit(t2, T0 + 20, vec![append(4, 0)])],
        vec![next(), unit(Uuid::new_v4(), T0 + 20, vec![append(0, 0)])],
        vec![
            next(),
            unit(Uuid::new_v4(), T0 + 20, vec![finish(&[1], &[0])]),
        ],
        vec![
            unit(t2, T0 + 20, vec![WriteOp::SetStatus(TableStatus::Finished)]),
            unit(
                t2,
                T0 + 20,
                vec![WriteOp::SetSeat {
                    seat: 5,
                    occupant: bot(),
                }],
            ),
        ],
        // The ops of a round's end and the next deal (on SQLite, written on the store's
        // own thread with the actions: `raw_step`), each refused as the others are.
        vec![next(), unit(t0, T0 + 20, vec![start(0)])],
        vec![next(), unit(t1, T0 + 20, vec![end(7, &[1, 1])])],
        // A seat the table does not have (its round ends, then the third score fails).
        vec![unit(t2, T0 + 20, vec![end(0, &[1, 1, 1])])],
        vec![next(), unit(Uuid::new_v4(), T0 + 20, vec![start(0)])],
        vec![
            next(),
            unit(
                Uuid::new_v4(),
                T0 + 20,
                vec![WriteOp::SetClock(serde_json::json!([1, 2]))],
            ),
        ],
        vec![
            next(),
            unit(
                Uuid::new_v4(),
                T0 + 20,
                vec![WriteOp::SetStatus(TableStatus::Finished)],
            ),
        ],
    ];
    for (i, group) in bad_groups.iter().enumerate() {
        let r = s.write_group(group).await;
        match i {
            0..=2 | 7 => assert_conflict(r),
            _ => assert_not_found(r),
        }
        assert_eq!(
            snapshot(s, "trump", &tables, &people).await,
            before,
            "group {i} left nothing behind"
        );
    }
    // The good unit alone goes through; an empty group does nothing.
    s.write_group(&[next()]).await.unwrap();
    s.write_group(&[]).await.unwrap();
    assert_eq!(s.load_table(t2).await.unwrap().unwrap().actions.len(), 3);
}

/// What a writer reported, in order, for the tests to check; it can hold the writer task
/// in its first `committed` until released, so that the next group queues up whole.
struct Recorder {
    events: std::sync::Mutex<Vec<String>>,
    hold: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    held: tokio::sync::Notify,
}

impl Recorder {
    fn new(hold: Option<std::sync::mpsc::Receiver<()>>) -> Arc<Self> {
        Arc::new(Recorder {
            events: Default::default(),
            hold: std::sync::Mutex::new(hold),
            held: tokio::sync::Notify::new(),
        })
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }
}

impl WriteObserver for Recorder {
    fn taken(&self, _: Duration) {}
    fn committed(&self, units: usize, _: Duration) {
        self.events
            .lock()
            .unwrap()
            .push(format!("committed {units}"));
        let hold = self.hold.lock().unwrap().take();
        if let Some(release) = hold {
            self.held.notify_one();
            // Blocking here is the point. On a runtime of several workers,
            // `block_in_place` moves this worker's other tasks elsewhere meanwhile; a
            // SQLite file's writer runs on the store's own one-thread runtime, which
            // holds nothing else that this test waits for.
            let wait = || release.recv_timeout(Duration::from_secs(30));
            let multi = tokio::runtime::Handle::current().runtime_flavor()
                == tokio::runtime::RuntimeFlavor::MultiThread;
            if multi {
                tokio::task::block_in_place(wait)
            } else {
                wait()
            }
            .expect("released");
        }
    }
    fn retried(&self, error: &StoreError) {
        self.events.lock().unwrap().push(format!("retried {error}"));
    }
    fn failed(&self, units: usize, error: &StoreError) {
        let kind = format!("{error:?}");
        let kind = kind.split('(').next().unwrap_or_default().to_string();
        self.events
            .lock()
            .unwrap()
            .push(format!("failed {units} {kind}"));
    }
}

/// Playing tables (two bot seats) with round 0 started.
async fn playing_tables(s: &dyn Store, n: usize) -> Vec<Uuid> {
    let mut tables = Vec::new();
    for _ in 0..n {
        let t = new_table(s, "trump", &[bot(), bot()], T0).await;
        s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
        s.start_round(t.id, &round(0, T0)).await.unwrap();
        tables.push(t.id);
    }
    tables
}

async fn writer_isolates_a_bad_unit(s: Arc<dyn Store>) {
    let tables = playing_tables(&*s, 5).await;
    let (release, hold) = std::sync::mpsc::channel();
    let recorder = Recorder::new(Some(hold));
    let writer = Writer::spawn(s.clone(), recorder.clone());
    let write = |u: TableWrite| {
        let writer = writer.clone();
        tokio::spawn(async move { writer.write(u).await })
    };
    // The first unit commits alone, and the writer stays in its `committed` meanwhile.
    let held = recorder.held.notified();
    let first = write(unit(tables[0], T0, vec![append(0, 0)]));
    held.await;
    // Queued while the writer is held, in this order: one group when it is released.
    let a = tables[0];
    let mut group = vec![
        unit(a, T0 + 1, vec![append(0, 1)]),
        unit(a, T0 + 1, vec![append(0, 0)]), // a duplicate: fails
        unit(a, T0 + 2, vec![append(0, 2)]), // after a failed unit of its table: not tried
    ];
    group.extend(
        tables[1..]
            .iter()
            .map(|&t| unit(t, T0 + 1, vec![append(0, 0)])),
    );
    let mut pending = Vec::new();
    for (i, u) in group.into_iter().enumerate() {
        pending.push(write(u));
        for _ in 0..1000 {
            if writer.queued() > i {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(writer.queued(), i + 1, "unit {i} queued");
    }
    release.send(()).unwrap();
    first.await.unwrap().unwrap();
    let mut results = Vec::new();
    for p in pending {
        results.push(p.await.unwrap());
    }
    results[0].as_ref().expect("a good unit before the bad one");
    assert_conflict(results.remove(1));
    let skipped = results.remove(1);
    assert!(
        matches!(&skipped, Err(StoreError::Conflict(m)) if m.contains("earlier write")),
        "{skipped:?}"
    );
    for r in results {
        r.expect("the other tables' units");
    }
    let actions = |t| {
        let s = s.clone();
        async move { s.load_table(t).await.unwrap().unwrap().actions }
    };
    assert_eq!(actions(a).await, vec![action(0, 0), action(0, 1)]);
    for &t in &tables[1..] {
        assert_eq!(actions(t).await, vec![action(0, 0)]);
    }
    let mut want = vec!["committed 1"; 2];
    want.extend(["failed 1 Conflict"; 2]);
    want.extend(["committed 1"; 4]);
    assert_eq!(recorder.events(), want);
}

/// Tables of two people in the 64-table cases, and the actions of each before its last.
const TABLES: usize = 64;
const ACTIONS: i64 = 20;

/// 64 tables of two people each play concurrently, one tokio task per table, and finish
/// at the same moment; the first `direct` of them write through the single-write methods
/// (as the server did before the writer), the others through one `Writer`. With
/// `side_traffic`, other tasks create players and tables, rename people and fix daily
/// seeds all along. Nothing may fail (no "database is locked"), and every match must end
/// finished, scored and rated exactly once.
async fn tables_finish_at_once(s: Arc<dyn Store>, direct: usize, side_traffic: bool) {
    let game = "fibfib";
    let mut people = Vec::new();
    let mut tables = Vec::new();
    for i in 0..TABLES {
        let a = player(&*s, &format!("A{i:02}")).await;
        let b = player(&*s, &format!("B{i:02}")).await;
        tables.push(
            new_table(&*s, game, &[seat_of(&a), seat_of(&b)], T0)
                .await
                .id,
        );
        people.push((a, b));
    }
    let recorder = Recorder::new(None);
    let writer = Writer::spawn(s.clone(), recorder.clone());
    let barrier = Arc::new(tokio::sync::Barrier::new(TABLES));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, &t) in tables.iter().enumerate() {
        let (s, writer, barrier) = (s.clone(), writer.clone(), barrier.clone());
        let totals = [100 + i as i64, i as i64];
        let units = [unit(
            t,
            T0,
            vec![
                WriteOp::SetStatus(TableStatus::Playing),
                WriteOp::StartRound(round(0, T0)),
            ],
        )]
        .into_iter()
        .chain((0..ACTIONS - 1).map(|q| unit(t, T0 + q, vec![append(0, q)])));
        let last = unit(
            t,
            T0 + 100,
            vec![
                append(0, ACTIONS - 1),
                end(0, &totals),
                finish(&totals, &[0]),
            ],
        );
        let units: Vec<TableWrite> = units.collect();
        tasks.spawn(async move {
            let via_writer = i >= direct;
            let write = async |u: TableWrite| match via_writer {
                true => writer.write(u).await,
                false => write_singly(&*s, &u).await,
            };
            for u in units {
                write(u).await?;
            }
            barrier.wait().await;
            write(last).await
        });
    }
    if side_traffic {
        for k in 0..4 {
            let s = s.clone();
            tasks.spawn(async move {
                for j in 0..25 {
                    let p = player(&*s, &format!("side {k}/{j}")).await;
                    let r = record("trump", 2, p.id, T0);
                    s.create_table(&r, &[seat_of(&p), Occupant::Empty]).await?;
                    s.rename_player(p.id, &format!("side {k}/{j}!")).await?;
                    let day = format!("solitaire-21/day-{j}");
                    s.daily_seed(&day, Some(&format!("{k:064x}")), T0).await?;
                    s.set_seat(r.id, 1, &bot(), T0).await?;
                }
                Ok(())
            });
        }
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("task").expect("every write succeeds");
    }
    drop(writer);

    for (i, &t) in tables.iter().enumerate() {
        let stored = s.load_table(t).await.unwrap().unwrap();
        assert_eq!(stored.record.status, TableStatus::Finished, "table {i}");
        assert_eq!(stored.scores, vec![100 + i as i64, i as i64]);
        assert_eq!(stored.actions.len(), ACTIONS as usize);
        assert_eq!(stored.rounds[0].ended_at, Some(T0 + 100));
        let (a, b) = &people[i];
        let won = |p: &Player| {
            let s = s.clone();
            let id = p.id;
            async move { s.player_matches(id, 10).await.unwrap()[0].won }
        };
        assert_eq!((won(a).await, won(b).await), (Some(true), Some(false)));
    }
    // Each person rated once, as a newcomer's win or loss against a newcomer.
    let (mut win, mut loss) = (Pool::Duel.initial(), Pool::Duel.initial());
    step(
        Pool::Duel,
        &mut [(&mut win, true, 1), (&mut loss, false, 0)],
    );
    for (a, b) in &people {
        for (p, want) in [(a, win), (b, loss)] {
            let got = s.player_ratings(p.id).await.unwrap();
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].matches, 1);
            assert!(same(&got[0].rating, &want), "{got:?}");
        }
    }
    assert!(
        s.unfinished_tables()
            .await
            .unwrap()
            .iter()
            .all(|t| t.record.game != game)
    );
    let events = recorder.events();
    assert!(
        events.iter().all(|e| e.starts_with("committed")),
        "{events:?}"
    );
    let via_writer = (TABLES - direct) * (ACTIONS as usize + 1);
    let units: usize = events
        .iter()
        .map(|e| e["committed ".len()..].parse::<usize>().unwrap())
        .sum();
    assert_eq!(units, via_writer);
}

async fn writer_64_tables_finish_at_once(s: Arc<dyn Store>) {
    tables_finish_at_once(s, 0, false).await;
}

async fn old_and_new_paths_at_once(s: Arc<dyn Store>) {
    tables_finish_at_once(s, TABLES / 2, true).await;
}

async fn ownership_and_fencing(s: &dyn Store) {
    let a = player(s, "Ada").await;
    let t = new_table(s, "fibfib", &[seat_of(&a), bot(), bot()], T0).await;
    s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    s.start_round(t.id, &round(0, T0 + 10)).await.unwrap();
    // Nobody owns a new table; an unknown one has no owner row at all.
    assert_eq!(s.table_owner(Uuid::new_v4()).await.unwrap(), None);
    assert_eq!(s.claim_table(Uuid::new_v4(), "n1").await.unwrap(), None);
    let o = s.table_owner(t.id).await.unwrap().unwrap();
    assert_eq!((o.node, o.epoch, o.live_address), (None, 0, None));

    s.node_beat("n1", "http://n1:1", 60_000, false)
        .await
        .unwrap();
    s.node_beat("n2", "http://n2:2", 60_000, false)
        .await
        .unwrap();
    let e1 = s.claim_table(t.id, "n1").await.unwrap().unwrap();
    assert_eq!(e1, 1);
    let o = s.table_owner(t.id).await.unwrap().unwrap();
    assert_eq!(o.node.as_deref(), Some("n1"));
    assert_eq!(o.live_address.as_deref(), Some("http://n1:1"));
    // A live owner keeps it from the others; the owner itself may claim again (a restore).
    assert_eq!(s.claim_table(t.id, "n2").await.unwrap(), None);
    let orphans = s.claim_orphans("n2", 100, false).await.unwrap();
    assert!(!orphans.iter().any(|(id, _)| *id == t.id), "{orphans:?}");
    assert_eq!(s.owned_tables("n1").await.unwrap(), vec![(t.id, 1, true)]);

    let unit = |seq: i64, epoch: i64| {
        TableWrite::one(t.id, T0 + 20, WriteOp::AppendAction(action(0, seq))).fenced(epoch)
    };
    s.write_group(&[unit(0, 1)]).await.unwrap();

    // n1 dies: its lease runs out, n2 takes the table under a new epoch.
    s.node_beat("n1", "http://n1:1", -1, false).await.unwrap();
    assert_eq!(
        s.live_nodes()
            .await
            .unwrap()
            .iter()
            .map(|n| n.id.as_str())
            .collect::<Vec<_>>(),
        ["n2"]
    );
    let o = s.table_owner(t.id).await.unwrap().unwrap();
    assert_eq!(o.live_address, None);
    let taken = s.claim_orphans("n2", 100, false).await.unwrap();
    assert!(taken.contains(&(t.id, 2)), "{taken:?}");

    // The old owner wakes: every write it makes is refused, alone or in a group, and
    // nothing of a refused group lands.
    match s.write_group(&[unit(1, 1)]).await {
        Err(StoreError::Fenced(_)) => {}
        other => panic!("a stale epoch's write: {other:?}"),
    }
    let chat = ChatRecord {
        seq: 1,
        player_id: a.id,
        name: "Ada".into(),
        spectator: false,
        text: Some("hi".into()),
        emote: None,
        created_at: T0,
    };
    let stale_chat = TableWrite::one(t.id, T0, WriteOp::Chat(chat)).fenced(1);
    assert!(matches!(
        s.write_group(&[stale_chat]).await,
        Err(StoreError::Fenced(_))
    ));
    let other = new_table(s, "fibfib", &[bot(), bot(), bot()], T0).await;
    s.set_status(other.id, TableStatus::Playing, T0)
        .await
        .unwrap();
    s.start_round(other.id, &round(0, T0)).await.unwrap();
    let fresh = TableWrite::one(other.id, T0, WriteOp::AppendAction(action(0, 0)));
    assert!(matches!(
        s.write_group(&[fresh, unit(1, 1)]).await,
        Err(StoreError::Fenced(_))
    ));
    let st = s.load_table(t.id).await.unwrap().unwrap();
    assert_eq!(st.actions.len(), 1);
    assert!(
        s.load_table(other.id)
            .await
            .unwrap()
            .unwrap()
            .actions
            .is_empty()
    );
    assert!(s.chat_history(t.id, 10).await.unwrap().is_empty());
    // The new owner writes at its epoch; the old one cannot release or hand over what it
    // lost. A hand-over goes straight to the other node, under a new epoch.
    s.write_group(&[unit(1, 2)]).await.unwrap();
    assert_eq!(s.transfer_table(t.id, "n1", 1, "n3").await.unwrap(), None);
    assert_eq!(
        s.transfer_table(t.id, "n2", 2, "n3").await.unwrap(),
        Some(3)
    );
    assert_eq!(
        s.table_owner(t.id).await.unwrap().unwrap().node.as_deref(),
        Some("n3")
    );
    assert!(matches!(
        s.write_group(&[unit(2, 2)]).await,
        Err(StoreError::Fenced(_))
    ));
    assert_eq!(
        s.transfer_table(t.id, "n3", 3, "n2").await.unwrap(),
        Some(4)
    );
    s.write_group(&[unit(2, 4)]).await.unwrap();
    assert!(!s.release_table(t.id, "n1", 1).await.unwrap());
    assert!(s.release_table(t.id, "n2", 4).await.unwrap());
    let o = s.table_owner(t.id).await.unwrap().unwrap();
    assert_eq!((o.node, o.epoch), (None, 4));
    // Released tables are orphans; epochs only grow.
    let taken = s.claim_orphans("n2", 100, false).await.unwrap();
    assert!(taken.contains(&(t.id, 5)), "{taken:?}");
    // A restart under the same id takes its own tables back only when asked to.
    assert!(
        !s.claim_orphans("n2", 100, false)
            .await
            .unwrap()
            .iter()
            .any(|(id, _)| *id == t.id)
    );
    assert!(
        s.claim_orphans("n2", 100, true)
            .await
            .unwrap()
            .contains(&(t.id, 6))
    );

    // Queue entries of dead nodes go; those of live nodes stay.
    for (who, conn) in [("Bo", "n1/7"), ("Cy", "n2/8")] {
        let p = player(s, who).await;
        s.queue_join(&store::QueueEntry {
            player_id: p.id,
            name: who.into(),
            game: "trump".into(),
            seats: 2,
            rating: 0.0,
            conn: conn.into(),
            joined_at: T0,
        })
        .await
        .unwrap();
    }
    assert_eq!(s.queue_clear_dead().await.unwrap(), 1);
    let left: Vec<String> = s
        .queue_entries()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.conn)
        .collect();
    assert_eq!(left, ["n2/8"]);
    s.node_gone("n2").await.unwrap();
    assert!(s.live_nodes().await.unwrap().is_empty());

    // One secret for every node; the exclusive lock is a lock.
    let secret = s.cluster_secret().await.unwrap();
    assert_eq!(secret.len(), 64);
    assert_eq!(s.cluster_secret().await.unwrap(), secret);
    let held = s.try_exclusive(77).await.unwrap();
    assert!(held.is_some());
    if s.backend() == "postgres" {
        assert!(s.try_exclusive(77).await.unwrap().is_none());
        drop(held);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(s.try_exclusive(77).await.unwrap().is_some());
    }
}

async fn notifications(s: &dyn Store) {
    let rx = s.listen(&["fib_test"]).await.unwrap();
    let Some(mut rx) = rx else {
        assert_eq!(s.backend(), "sqlite");
        s.notify("fib_test", &["nobody hears".into()])
            .await
            .unwrap();
        return;
    };
    let sent: Vec<String> = (0..50).map(|i| format!("hello {i}")).collect();
    s.notify("fib_test", &sent).await.unwrap();
    s.notify("fib_test", &[]).await.unwrap();
    for want in sent {
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            got,
            store::Notice::Message {
                channel: "fib_test".into(),
                payload: want
            },
            "in order, each once"
        );
    }
}

// ---------------------------------------------------------------------------------------
// One module per backend, one test per case.

fn tournament_record(creator: Option<Uuid>, rated: bool, key: Option<&str>) -> TournamentRecord {
    TournamentRecord {
        id: Uuid::new_v4(),
        name: "Friday Swiss".into(),
        game: "trump".into(),
        status: TournamentStatus::Registration,
        private: false,
        invite_code: None,
        rated,
        created_by: creator,
        created_at: T0,
        starts_at: Some(T0 + 60_000),
        config: json!({"kind": {"type": "swiss", "rounds": 3}}),
        state: json!({"players": []}),
        version: 0,
        schedule_key: key.map(str::to_string),
        updated_at: T0,
        cancelled: None,
    }
}

/// A list of tournaments filters before its limit: 2 public ones stay in a page of 2 however
/// many private or cancelled ones are newer, and a private one is listed to its creator and
/// its members only.
async fn listed_tournaments(s: &dyn Store) {
    let ada = player(s, "ada").await;
    let bob = player(s, "bob").await;
    let cy = player(s, "cy").await;
    let at = |minute: i64, private: bool, creator: Option<Uuid>| {
        let mut t = tournament_record(creator, false, None);
        t.private = private;
        t.created_at = T0 + minute * 60_000;
        t
    };
    let old_public = at(0, false, None);
    let public = at(1, false, Some(ada.id));
    // Newer than both: ada's private one, which bob joined; a crowd of cy's private ones;
    // a cancelled public one.
    let mut joined = at(2, true, Some(ada.id));
    joined.state = json!({"players": [{"id": bob.id.to_string(), "name": "bob"}]});
    let mut crowd = Vec::new();
    for i in 0..5 {
        crowd.push(at(3 + i, true, Some(cy.id)));
    }
    let gone = at(9, false, Some(bob.id));
    for t in [&old_public, &public, &joined, &gone]
        .into_iter()
        .chain(&crowd)
    {
        s.create_tournament(t).await.unwrap();
    }
    assert!(s.cancel_tournament(gone.id, "creator", T0).await.unwrap());
    let ids = |v: Vec<TournamentRecord>| v.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let list =
        |status, cancelled, viewer, limit| s.listed_tournaments(status, cancelled, viewer, limit);

    // Signed out: the public ones, the cancelled one only when asked for all.
    assert_eq!(
        ids(list(None, Some(false), None, 2).await.unwrap()),
        vec![public.id, old_public.id]
    );
    assert_eq!(
        ids(list(None, None, None, 10).await.unwrap()),
        vec![gone.id, public.id, old_public.id]
    );
    assert_eq!(
        ids(list(None, Some(true), None, 10).await.unwrap()),
        vec![gone.id]
    );
    // The cancelled one is stored as finished; the others are in registration.
    assert_eq!(
        ids(list(Some(TournamentStatus::Finished), Some(true), None, 10)
            .await
            .unwrap()),
        vec![gone.id]
    );
    assert_eq!(
        ids(
            list(Some(TournamentStatus::Registration), Some(false), None, 10)
                .await
                .unwrap()
        ),
        vec![public.id, old_public.id]
    );
    // Its creator and its member see the private one; the others do not.
    let private_of = |who| list(None, Some(false), Some(who), 20);
    assert_eq!(
        ids(private_of(ada.id).await.unwrap()),
        vec![joined.id, public.id, old_public.id]
    );
    assert_eq!(
        ids(private_of(bob.id).await.unwrap()),
        vec![joined.id, public.id, old_public.id]
    );
    let mut cys = ids(private_of(cy.id).await.unwrap());
    assert_eq!(cys.len(), 7, "cy's five and the two public ones");
    assert!(!cys.contains(&joined.id));
    cys.truncate(5);
    let mut mine = crowd.iter().rev().map(|t| t.id).collect::<Vec<_>>();
    mine.truncate(5);
    assert_eq!(cys, mine);
    let stranger = player(s, "dee").await;
    assert_eq!(
        ids(private_of(stranger.id).await.unwrap()),
        vec![public.id, old_public.id]
    );
}

async fn tournaments(s: &dyn Store) {
    let ada = player(s, "ada").await;
    let bob = player(s, "bob").await;
    let t = tournament_record(Some(ada.id), false, None);
    s.create_tournament(&t).await.unwrap();
    assert_eq!(s.tournament(t.id).await.unwrap().as_ref(), Some(&t));
    assert_eq!(s.tournament(Uuid::new_v4()).await.unwrap(), None);
    // The same id, or the same occurrence of a recurring event, is stored once.
    assert_conflict(s.create_tournament(&t).await);
    let op = tournament_record(None, true, Some("hourly@1"));
    s.create_tournament(&op).await.unwrap();
    let mut again = tournament_record(None, true, Some("hourly@1"));
    again.created_at = T0 + 1;
    assert_conflict(s.create_tournament(&again).await);
    // An unknown creator is NotFound.
    assert_not_found(
        s.create_tournament(&tournament_record(Some(Uuid::new_v4()), true, None))
            .await,
    );
    assert_eq!(s.tournaments(None, 10).await.unwrap().len(), 2);
    assert_eq!(
        s.tournaments(Some(TournamentStatus::Running), 10)
            .await
            .unwrap(),
        vec![]
    );

    // Open tournaments by creator: ada's one (the operator's has none).
    assert_eq!(s.open_tournaments_created_by(ada.id).await.unwrap(), 1);
    assert_eq!(s.open_tournaments_created_by(bob.id).await.unwrap(), 0);
    // Cancelled in registration: finished with its reason, counted no more, and no step
    // is stored over it; cancelling again (or a running one) changes nothing.
    let c = tournament_record(Some(bob.id), false, None);
    s.create_tournament(&c).await.unwrap();
    assert_eq!(s.open_tournaments_created_by(bob.id).await.unwrap(), 1);
    assert!(s.cancel_tournament(c.id, "creator", T0 + 3).await.unwrap());
    let got = s.tournament(c.id).await.unwrap().unwrap();
    assert_eq!(
        (
            got.status,
            got.cancelled.as_deref(),
            got.version,
            got.updated_at
        ),
        (TournamentStatus::Finished, Some("creator"), 1, T0 + 3)
    );
    assert!(!s.cancel_tournament(c.id, "expired", T0 + 4).await.unwrap());
    assert!(
        !s.cancel_tournament(Uuid::new_v4(), "creator", T0)
            .await
            .unwrap()
    );
    assert_eq!(s.open_tournaments_created_by(bob.id).await.unwrap(), 0);
    let over_it = TournamentStep {
        id: c.id,
        version: 1,
        fence: None,
        status: TournamentStatus::Running,
        state: json!({"round": 1}),
        tables: vec![],
        now: T0 + 5,
    };
    assert!(!s.save_tournament(&over_it).await.unwrap(), "cancelled");
    assert_eq!(s.tournament(c.id).await.unwrap().unwrap().version, 1);
    assert_eq!(
        s.claim_tournaments("n0", 10, false)
            .await
            .unwrap()
            .iter()
            .filter(|(id, _)| *id == c.id)
            .count(),
        0,
        "nobody directs a cancelled tournament"
    );
    s.node_gone("n0").await.unwrap();
    // (Its claim of the others above is forgotten with its node: n1 claims them below.)

    // A step is written over the version it was computed from, once.
    let table = Uuid::new_v4();
    let step = TournamentStep {
        id: t.id,
        version: 0,
        fence: None,
        status: TournamentStatus::Running,
        state: json!({"round": 1}),
        tables: vec![(0, table, 1)],
        now: T0 + 5,
    };
    assert!(s.save_tournament(&step).await.unwrap());
    assert!(!s.save_tournament(&step).await.unwrap(), "a stale version");
    let got = s.tournament(t.id).await.unwrap().unwrap();
    assert_eq!(
        (got.version, got.status, got.state.clone(), got.updated_at),
        (1, TournamentStatus::Running, json!({"round": 1}), T0 + 5)
    );
    assert_eq!(
        s.tournaments(Some(TournamentStatus::Running), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    // The table is paired but not created yet.
    let tables = s.tournament_tables(t.id).await.unwrap();
    assert_eq!(tables.len(), 1);
    assert_eq!(
        (tables[0].engine_table, tables[0].table, tables[0].round),
        (0, table, 1)
    );
    assert_eq!(tables[0].status, None);

    // The director's claim and fence.
    s.node_beat("n1", "http://n1", 60_000, false).await.unwrap();
    s.node_beat("n2", "http://n2", 60_000, false).await.unwrap();
    let claimed = s.claim_tournaments("n1", 10, false).await.unwrap();
    assert_eq!(claimed.len(), 2, "{claimed:?}");
    let epoch = claimed.iter().find(|c| c.0 == t.id).unwrap().1;
    assert_eq!(
        s.tournament_owner(t.id).await.unwrap(),
        Some((Some("n1".to_string()), epoch))
    );
    assert_eq!(s.claim_tournaments("n2", 10, false).await.unwrap(), vec![]);
    assert_eq!(s.claim_tournaments("n1", 10, false).await.unwrap(), vec![]);
    let fenced = |version, fence: (&str, i64)| TournamentStep {
        id: t.id,
        version,
        fence: Some((fence.0.to_string(), fence.1)),
        status: TournamentStatus::Running,
        state: json!({"round": 2}),
        tables: vec![],
        now: T0 + 6,
    };
    assert!(!s.save_tournament(&fenced(1, ("n2", epoch))).await.unwrap());
    assert!(
        !s.save_tournament(&fenced(1, ("n1", epoch + 1)))
            .await
            .unwrap()
    );
    assert!(s.save_tournament(&fenced(1, ("n1", epoch))).await.unwrap());
    // n1 dies: n2 takes over under a new epoch, and n1's epoch is refused.
    s.node_gone("n1").await.unwrap();
    let taken = s.claim_tournaments("n2", 10, false).await.unwrap();
    assert_eq!(taken.len(), 2);
    let epoch2 = taken.iter().find(|c| c.0 == t.id).unwrap().1;
    assert!(epoch2 > epoch);
    assert!(!s.save_tournament(&fenced(2, ("n1", epoch))).await.unwrap());
    assert!(s.save_tournament(&fenced(2, ("n2", epoch2))).await.unwrap());
    // A duplicate engine table is refused whole: nothing of the step is written.
    let dup = TournamentStep {
        tables: vec![(1, Uuid::new_v4(), 2), (0, Uuid::new_v4(), 2)],
        ..fenced(3, ("n2", epoch2))
    };
    assert_conflict(s.save_tournament(&dup).await);
    assert_eq!(s.tournament(t.id).await.unwrap().unwrap().version, 3);
    assert_eq!(s.tournament_tables(t.id).await.unwrap().len(), 1);

    // The table, once created and finished, shows its seats; the tournament is unrated,
    // so its game changes no rating.
    let mut r = record("trump", 2, ada.id, T0);
    r.id = table;
    s.create_table(&r, &[seat_of(&ada), seat_of(&bob)])
        .await
        .unwrap();
    let tables = s.tournament_tables(t.id).await.unwrap();
    assert_eq!(tables[0].status, Some(TableStatus::Open));
    assert_eq!(tables[0].won, vec![false, false]);
    s.set_status(table, TableStatus::Playing, T0).await.unwrap();
    s.start_round(table, &round(0, T0)).await.unwrap();
    s.end_round(table, 0, &json!({}), &[8, 3], T0)
        .await
        .unwrap();
    s.finish_match(table, &[8, 3], &[0], T0).await.unwrap();
    assert!(
        s.is_unrated(table).await.unwrap(),
        "a game of an unrated tournament"
    );
    let tables = s.tournament_tables(t.id).await.unwrap();
    assert_eq!(tables[0].status, Some(TableStatus::Finished));
    assert_eq!(
        (tables[0].won.clone(), tables[0].scores.clone()),
        (vec![true, false], vec![8, 3])
    );
    assert_eq!(s.player_ratings(ada.id).await.unwrap(), vec![]);
    // Nor does a table marked unrated (an unrated challenge), marked twice.
    let mut u = record("trump", 2, ada.id, T0);
    u.id = Uuid::new_v4();
    assert!(!s.is_unrated(u.id).await.unwrap());
    s.mark_unrated(u.id, T0).await.unwrap();
    s.mark_unrated(u.id, T0).await.unwrap();
    assert!(s.is_unrated(u.id).await.unwrap());
    s.create_table(&u, &[seat_of(&ada), seat_of(&bob)])
        .await
        .unwrap();
    s.set_status(u.id, TableStatus::Playing, T0).await.unwrap();
    s.start_round(u.id, &round(0, T0)).await.unwrap();
    s.end_round(u.id, 0, &json!({}), &[8, 3], T0).await.unwrap();
    s.finish_match(u.id, &[8, 3], &[0], T0).await.unwrap();
    assert_eq!(s.player_ratings(ada.id).await.unwrap(), vec![]);
    // A rated one does.
    let mut r = record("trump", 2, ada.id, T0);
    r.id = Uuid::new_v4();
    let step = TournamentStep {
        id: op.id,
        version: 0,
        fence: None,
        status: TournamentStatus::Running,
        state: json!({}),
        tables: vec![(0, r.id, 1)],
        now: T0,
    };
    assert!(s.save_tournament(&step).await.unwrap());
    s.create_table(&r, &[seat_of(&ada), seat_of(&bob)])
        .await
        .unwrap();
    s.set_status(r.id, TableStatus::Playing, T0).await.unwrap();
    s.start_round(r.id, &round(0, T0)).await.unwrap();
    s.end_round(r.id, 0, &json!({}), &[8, 3], T0).await.unwrap();
    s.finish_match(r.id, &[8, 3], &[0], T0).await.unwrap();
    assert_eq!(s.player_ratings(ada.id).await.unwrap().len(), 1);
    // A finished tournament is claimed by nobody.
    let done = TournamentStep {
        status: TournamentStatus::Finished,
        tables: vec![],
        ..fenced(3, ("n2", epoch2))
    };
    assert!(s.save_tournament(&done).await.unwrap());
    s.node_gone("n2").await.unwrap();
    let last = s.claim_tournaments("n3", 10, false).await.unwrap();
    assert_eq!(last.len(), 1, "only the unfinished one: {last:?}");
    assert_eq!(last[0].0, op.id);
}

macro_rules! suite {
    ($backend:ident, $fixture:path, [$($case:ident),* $(,)?], [$($shared:ident),* $(,)?]) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let Some(fx) = $fixture().await else { return };
                    super::$case(&*fx.store).await;
                }
            )*
            // Cases that share the store with tasks of their own (a `Writer`).
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $shared() {
                    let Some(fx) = $fixture().await else { return };
                    super::$shared(fx.store.clone()).await;
                }
            )*
        }
    };
}

macro_rules! all_cases {
    ($backend:ident, $fixture:path) => {
        suite!(
            $backend,
            $fixture,
            [
                players,
                accounts_and_sessions,
                bot_accounts_and_the_bot_pool,
                queues,
                rename_updates_unfinished_seats_only,
                tables_and_seats,
                rounds_and_actions,
                finish_match,
                ended_tables_keep_their_actions,
                unfinished_tables,
                leaderboard,
                abandoning_loses_to_everyone,
                records,
                player_matches,
                database_clock,
                concurrent_writers,
                daily_deals,
                chat_lines_and_mutes,
                analysis_jobs,
                analysis_jobs_per_address,
                write_group_matches_single_methods,
                write_group_is_all_or_nothing,
                ownership_and_fencing,
                notifications,
                tournaments,
                listed_tournaments,
            ],
            [
                writer_isolates_a_bad_unit,
                writer_64_tables_finish_at_once,
                old_and_new_paths_at_once,
                concurrent_ratings_lose_no_update,
                same_millisecond_ratings_keep_their_order,
                one_daily_table_per_player,
                concurrent_queue_takes,
                concurrent_analysis_claims,
            ]
        );
    };
}

all_cases!(sqlite_memory, super::sqlite_memory);
all_cases!(sqlite_file, super::sqlite_file);
all_cases!(postgres, super::postgres);

// ---------------------------------------------------------------------------------------
// Persistence across connect, and URL dispatch.

#[tokio::test]
async fn sqlite_file_persists_across_reconnect() {
    let dir = temp_dir();
    let _guard = Guard(Cleanup::Dir(dir.clone()));
    let url = format!("sqlite://{}/a/b/fib.db", dir.display());
    let first = store::SqliteStore::connect(&url).await.unwrap();
    let filled = fill(&first).await;
    first.close().await;
    assert!(dir.join("a/b/fib.db").is_file());
    // Reopening re-runs the (already applied) migrations and sees every row.
    let second = store::SqliteStore::connect(&url).await.unwrap();
    check_filled(&second, &filled).await;
}

/// A database that a newer version migrated further (a migration this build does not
/// know) still opens: an old node restarting in the middle of a rolling upgrade, or a
/// rollback (docs/operations.md). A black-box walk found the start refused ("migration
/// was previously applied but is missing").
#[tokio::test]
async fn sqlite_opens_a_database_a_newer_version_migrated() {
    use sqlx::Connection as _;
    let dir = temp_dir();
    let _guard = Guard(Cleanup::Dir(dir.clone()));
    let url = format!("sqlite://{}/fib.db", dir.display());
    let first = store::SqliteStore::connect(&url).await.unwrap();
    let filled = fill(&first).await;
    first.close().await;
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99999, 'from a newer version', TRUE, x'00', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let second = store::SqliteStore::connect(&url)
        .await
        .expect("opens with a newer migration applied");
    check_filled(&second, &filled).await;
}

#[tokio::test]
async fn postgres_opens_a_database_a_newer_version_migrated() {
    use sqlx::Connection as _;
    let Some(admin_url) = pg_admin_url() else {
        return;
    };
    let (name, url) = pg_database(&admin_url).await;
    let _guard = Guard(Cleanup::PgDatabase { admin_url, name });
    let first = store::PgStore::connect(&url).await.unwrap();
    let filled = fill(&first).await;
    first.close().await;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99999, 'from a newer version', TRUE, '\\x00'::bytea, 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let second = store::PgStore::connect(&url)
        .await
        .expect("opens with a newer migration applied");
    check_filled(&second, &filled).await;
    second.close().await;
}

/// Two nodes on one SQLite file, each its own store (its own connections): the first
/// writes several groups at its epoch; the second takes the table over (a new epoch,
/// through a connection the first never used). The first's next write at the old epoch
/// must be refused, however many groups passed the fence before: whatever the first's
/// write connection keeps between groups (its page cache, its prepared statements), the
/// fence must see another connection's commit.
#[tokio::test]
async fn sqlite_fence_sees_another_connections_takeover() {
    let dir = temp_dir();
    let _guard = Guard(Cleanup::Dir(dir.clone()));
    let url = format!("sqlite://{}/fib.db", dir.display());
    let n1 = store::SqliteStore::connect(&url).await.unwrap();
    let n2 = store::SqliteStore::connect(&url).await.unwrap();
    let t = new_table(&n1, "fibfib", &[bot(), bot(), bot()], T0).await;
    n1.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
    n1.start_round(t.id, &round(0, T0)).await.unwrap();
    n1.node_beat("n1", "http://n1:1", 60_000, false)
        .await
        .unwrap();
    assert_eq!(n1.claim_table(t.id, "n1").await.unwrap(), Some(1));
    let unit = |seq: i64, epoch: i64| {
        TableWrite::one(t.id, T0 + seq, WriteOp::AppendAction(action(0, seq))).fenced(epoch)
    };
    for seq in 0..5 {
        n1.write_group(&[unit(seq, 1)]).await.unwrap();
    }
    // n1's lease runs out; n2 adopts the table.
    n1.node_beat("n1", "http://n1:1", -1, false).await.unwrap();
    n2.node_beat("n2", "http://n2:2", 60_000, false)
        .await
        .unwrap();
    let taken = n2.claim_orphans("n2", 100, false).await.unwrap();
    assert!(taken.contains(&(t.id, 2)), "{taken:?}");
    match n1.write_group(&[unit(5, 1)]).await {
        Err(StoreError::Fenced(_)) => {}
        other => panic!("the old owner's write after a takeover: {other:?}"),
    }
    n2.write_group(&[unit(5, 2)]).await.unwrap();
    // And back: n2 hands the table to n1 (epoch 3) through n2's connection; n1 writes at
    // 3, and no longer at 2.
    assert_eq!(
        n2.transfer_table(t.id, "n2", 2, "n1").await.unwrap(),
        Some(3)
    );
    match n2.write_group(&[unit(6, 2)]).await {
        Err(StoreError::Fenced(_)) => {}
        other => panic!("n2's write after handing the table over: {other:?}"),
    }
    n1.write_group(&[unit(6, 3)]).await.unwrap();
    let actions = n2.load_table(t.id).await.unwrap().unwrap().actions;
    assert_eq!(actions.len(), 7);
    n1.close().await;
    n2.close().await;
}

#[tokio::test]
async fn postgres_persists_across_reconnect() {
    let Some(admin_url) = pg_admin_url() else {
        return;
    };
    let (name, url) = pg_database(&admin_url).await;
    let _guard = Guard(Cleanup::PgDatabase { admin_url, name });
    let first = store::PgStore::connect(&url).await.unwrap();
    let filled = fill(&first).await;
    first.close().await;
    let second = store::PgStore::connect(&url).await.unwrap();
    check_filled(&second, &filled).await;
    second.close().await;
}

/// A little rated history (duels and a multi match): each person's ratings.
async fn rated_history(s: &dyn Store) -> Vec<(Player, Vec<store::PlayerRating>)> {
    let people = [
        player(s, "Ada").await,
        player(s, "Bob").await,
        player(s, "Cy").await,
    ];
    let [a, b, c] = people.each_ref().map(seat_of);
    finished_match(s, "trump", &[a.clone(), b.clone()], &[10, 5], &[0], T0).await;
    finished_match(
        s,
        "trump",
        &[b.clone(), c.clone(), bot()],
        &[10, 5, 0],
        &[0],
        T0 + 1,
    )
    .await;
    finished_match(
        s,
        "trump",
        &[a.clone(), b.clone(), c.clone()],
        &[1, 3, 2],
        &[1],
        T0 + 2,
    )
    .await;
    finished_match(
        s,
        "trump",
        &[c.clone(), a.clone()],
        &[7, 7],
        &[0, 1],
        T0 + 3,
    )
    .await;
    let mut out = Vec::new();
    for p in people {
        let r = s.player_ratings(p.id).await.unwrap();
        assert!(!r.is_empty());
        out.push((p, r));
    }
    out
}

/// The stored ratings made under other rules (an older `rating_version`, here also
/// scrambled) are rebuilt from the history when the store opens, once.
async fn check_rerated(
    s: &dyn Store,
    before: &[(Player, Vec<store::PlayerRating>)],
    history: &[Vec<store::RatingPoint>],
) {
    for (p, want) in before {
        assert_eq!(&s.player_ratings(p.id).await.unwrap(), want, "{}", p.name);
    }
    // The rating history is rebuilt point for point, ending at each current rating.
    assert_eq!(&histories(s, before).await, history);
    for ((_, ratings), points) in before.iter().zip(history) {
        let duel = ratings
            .iter()
            .find(|r| r.game == "trump" && r.pool == store::rating::Pool::Duel);
        if let (Some(r), Some(last)) = (duel, points.last()) {
            assert_eq!((last.mu, last.sigma), (r.rating.mu, r.rating.sigma));
            assert_eq!(points.len() as i64, r.matches);
        }
    }
    assert_eq!(s.rerate(false).await.unwrap(), None, "nothing left to do");
}

const STALE: &str = "UPDATE store_meta SET value = 1 WHERE key = 'rating_version'; \
    UPDATE player_ratings SET mu = 0, sigma = 1, matches = 99; DELETE FROM rating_history";

/// Each rated player's Trump duel history.
async fn histories(
    s: &dyn Store,
    rated: &[(Player, Vec<store::PlayerRating>)],
) -> Vec<Vec<store::RatingPoint>> {
    let mut out = Vec::new();
    for (p, _) in rated {
        out.push(
            s.rating_history(p.id, "trump", store::rating::Pool::Duel, 1000)
                .await
                .unwrap(),
        );
    }
    out
}

#[tokio::test]
async fn sqlite_rerates_stale_ratings_at_startup() {
    use sqlx::Connection;
    let dir = temp_dir();
    let _guard = Guard(Cleanup::Dir(dir.clone()));
    let url = format!("sqlite://{}/fib.db", dir.display());
    let first = store::SqliteStore::connect(&url).await.unwrap();
    let before = rated_history(&first).await;
    let history = histories(&first, &before).await;
    assert!(
        history.iter().any(|h| !h.is_empty()),
        "some history to rebuild"
    );
    first.close().await;
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(STALE).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    let second = store::SqliteStore::connect(&url).await.unwrap();
    check_rerated(&second, &before, &history).await;
    second.close().await;
}

#[tokio::test]
async fn postgres_rerates_stale_ratings_at_startup() {
    let Some(admin_url) = pg_admin_url() else {
        return;
    };
    let (name, url) = pg_database(&admin_url).await;
    let _guard = Guard(Cleanup::PgDatabase { admin_url, name });
    let first = store::PgStore::connect(&url).await.unwrap();
    let before = rated_history(&first).await;
    let history = histories(&first, &before).await;
    assert!(
        history.iter().any(|h| !h.is_empty()),
        "some history to rebuild"
    );
    first.close().await;
    pg_admin(&url, STALE).await;
    let second = store::PgStore::connect(&url).await.unwrap();
    check_rerated(&second, &before, &history).await;
    second.close().await;
}

/// Undoes migration 0013 (the order of finishes) and marks the ratings as made under
/// version 3: the database as it was before, for the tests of that migration.
const BEFORE_0013: &str = "DROP INDEX game_tables_by_finish_seq; \
    ALTER TABLE game_tables DROP COLUMN finish_seq; \
    DELETE FROM _sqlx_migrations WHERE version = 13; \
    UPDATE store_meta SET value = 3 WHERE key = 'rating_version'";

/// Three duels among three people, finished in one millisecond in the reverse of their
/// table ids' order. The people, and the tables in id order.
async fn tied_duels(s: &dyn Store) -> (Vec<Player>, Vec<Uuid>) {
    let people = vec![
        player(s, "Ada").await,
        player(s, "Bob").await,
        player(s, "Cy").await,
    ];
    let mut tables = Vec::new();
    for (x, y) in [(0, 1), (1, 2), (2, 0)] {
        let seats = [seat_of(&people[x]), seat_of(&people[y])];
        let t = new_table(s, "trump", &seats, T0).await;
        s.set_status(t.id, TableStatus::Playing, T0).await.unwrap();
        tables.push(t.id);
    }
    tables.sort_by_key(|id| id.to_string());
    for id in tables.iter().rev() {
        s.finish_match(*id, &[10, 3], &[0], T0 + 5).await.unwrap();
    }
    (people, tables)
}

/// Migration 0013 on a database with matches finished before it (issue #33, item 3): they
/// are numbered by finish time, then table id, the order re-rating used until then, and
/// rating version 4 re-rates them in that order at start-up, so every history ends at the
/// current rating. A match finished afterwards comes after them, even with an earlier
/// finish time (on Postgres: the sequence starts after the numbers given).
async fn check_numbered_by_0013(s: &dyn Store, people: &[Player], tables: &[Uuid]) {
    for p in people {
        let history = s
            .rating_history(p.id, "trump", Pool::Duel, 10)
            .await
            .unwrap();
        let ids: Vec<Uuid> = history.iter().map(|h| h.table_id).collect();
        let mut by_id = ids.clone();
        by_id.sort_by_key(|id| id.to_string());
        assert_eq!(ids, by_id, "{}: numbered by (finished_at, id)", p.name);
        assert!(tables.iter().filter(|t| ids.contains(t)).count() == 2);
        let current = &s.player_ratings(p.id).await.unwrap()[0];
        let last = history.last().unwrap();
        assert_eq!(
            (last.mu, last.sigma),
            (current.rating.mu, current.rating.sigma),
            "{}: re-rated in that order",
            p.name
        );
    }
    let seats = [seat_of(&people[0]), seat_of(&people[1])];
    let later = finished_match(s, "trump", &seats, &[3, 10], &[1], T0).await;
    for p in &people[..2] {
        let history = s
            .rating_history(p.id, "trump", Pool::Duel, 10)
            .await
            .unwrap();
        assert_eq!(history.last().unwrap().table_id, later, "{}", p.name);
        let current = &s.player_ratings(p.id).await.unwrap()[0];
        assert_eq!(history.last().unwrap().mu, current.rating.mu);
    }
}

#[tokio::test]
async fn sqlite_migration_0013_numbers_earlier_finishes() {
    use sqlx::Connection;
    let dir = temp_dir();
    let _guard = Guard(Cleanup::Dir(dir.clone()));
    let url = format!("sqlite://{}/fib.db", dir.display());
    let first = store::SqliteStore::connect(&url).await.unwrap();
    let (people, tables) = tied_duels(&first).await;
    first.close().await;
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(BEFORE_0013).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    let second = store::SqliteStore::connect(&url).await.unwrap();
    check_numbered_by_0013(&second, &people, &tables).await;
    second.close().await;
}

#[tokio::test]
async fn postgres_migration_0013_numbers_earlier_finishes() {
    let Some(admin_url) = pg_admin_url() else {
        return;
    };
    let (name, url) = pg_database(&admin_url).await;
    let _guard = Guard(Cleanup::PgDatabase { admin_url, name });
    let first = store::PgStore::connect(&url).await.unwrap();
    let (people, tables) = tied_duels(&first).await;
    first.close().await;
    pg_admin(&url, &format!("{BEFORE_0013}; DROP SEQUENCE finish_order")).await;
    let second = store::PgStore::connect(&url).await.unwrap();
    check_numbered_by_0013(&second, &people, &tables).await;
    second.close().await;
}

#[tokio::test]
async fn connect_dispatches_on_scheme() {
    assert_eq!(
        store::connect("sqlite::memory:").await.unwrap().backend(),
        "sqlite"
    );
    for url in ["mysql://u:secret@h/db", "sqlite3.db", ""] {
        match store::connect(url).await {
            Err(StoreError::UnsupportedUrl(shown)) => assert!(!shown.contains("secret")),
            other => panic!(
                "{url}: expected UnsupportedUrl, got {:?}",
                other.map(|s| s.backend())
            ),
        }
    }
    if let Some(admin_url) = pg_admin_url() {
        let other_scheme = admin_url.replacen("postgres://", "postgresql://", 1);
        assert_eq!(
            store::connect(&other_scheme).await.unwrap().backend(),
            "postgres"
        );
    }
}

#[test]
fn with_database_replaces_the_path() {
    assert_eq!(
        with_database("postgres://u:p@h:1/fib", "x"),
        "postgres://u:p@h:1/x"
    );
    assert_eq!(
        with_database("postgres://u:p@h:1", "x"),
        "postgres://u:p@h:1/x"
    );
    assert_eq!(
        with_database("postgresql://h/fib?sslmode=disable", "x"),
        "postgresql://h/x?sslmode=disable"
    );
}
