//! Tables of Fibonacci's Trump for two, played flat out through the real-time core alone:
//! no socket, no HTTP, no server crate.
//!
//! Each seat is a client task that reads its connection's queue (the texts a socket would
//! carry), keeps its state document from `state` and `patch` messages as any client must
//! (`protocol::client::TableDoc`), and answers each of its turns at once with a random legal
//! card, sent as the `act` message a socket would have parsed. Every move is durable in
//! SQLite (a database file in a temporary folder, the server's default backend) before
//! anyone hears of it, exactly as in the server: the measure is accepted, stored moves per
//! second. A finished match is followed by a new table at once.
//!
//! ```sh
//! cargo bench -p realtime --bench core
//! ```
//!
//! prints, for 64, 256 and 1024 tables, the moves per second (criterion's "thrpt") on one core
//! and on two: a runtime of one worker thread with every thread of the benchmark (the
//! runtime's, and sqlx's SQLite connection threads, which run the store's statements)
//! pinned to the first core, and a runtime of two worker threads on two cores. The second
//! against the first is how the core scales with cores: a serial part (the store writer,
//! a lock, a channel) would hold it near 1.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use protocol::ClientMsg;
use protocol::client::{Incoming, TableDoc};
use realtime::{Cmd, Core, CoreConfig, Metrics, NoLobby, TableHandle, Updates, Who, outbox};
use store::Occupant;
use uuid::Uuid;

/// The tables of one benchmark, playing in the background on their own runtime.
struct Tables {
    rt: tokio::runtime::Runtime,
    core: Core,
    stop: Arc<AtomicBool>,
    dir: std::path::PathBuf,
}

impl Tables {
    async fn core(dir: &std::path::Path) -> Core {
        let url = format!("sqlite://{}/bench.db", dir.display());
        let store = store::connect(&url).await.expect("a SQLite store");
        Core::new(
            store,
            Arc::new(Metrics::default()),
            CoreConfig::default(),
            "bench".into(),
            Arc::new(NoLobby),
        )
    }

    /// `tables` tables on `cores` worker threads; on one core, every thread of the runtime
    /// and of the store is pinned to the first core.
    fn start(tables: usize, cores: usize) -> Tables {
        let build = move || {
            if cores == 1 {
                let first = core_affinity::get_core_ids()
                    .and_then(|ids| ids.into_iter().next())
                    .expect("a core to pin to");
                assert!(core_affinity::set_for_current(first), "pinned to one core");
            }
            // Threads inherit the affinity of the thread that starts them: the runtime's
            // workers this one's, sqlx's connection threads (started by tasks) theirs.
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(cores)
                .enable_all()
                .build()
                .expect("a runtime")
        };
        let rt = std::thread::spawn(build)
            .join()
            .expect("the runtime is built");
        let dir = std::env::temp_dir().join(format!("fib-core-bench-{}", Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let stop = Arc::new(AtomicBool::new(false));
        // Set up in a task, not on this (unpinned) thread: the store's threads start here.
        let setup_dir = dir.clone();
        let setup_stop = stop.clone();
        let setup = rt.spawn(async move {
            let (dir, stop) = (setup_dir, setup_stop);
            let core = Tables::core(&dir).await;
            let players = players(&core, tables * 2).await;
            for pair in players.chunks(2) {
                let (core, stop, pair) = (core.clone(), stop.clone(), pair.to_vec());
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        n += 1;
                        play_a_match(&core, &pair, n).await;
                    }
                });
            }
            core
        });
        let core = rt.block_on(setup).expect("the tables start");
        Tables {
            rt,
            core,
            stop,
            dir,
        }
    }

    /// Moves accepted (stored, then told) so far.
    fn moves(&self) -> u64 {
        self.core.metrics.actions_accepted.load(Relaxed)
    }

    /// Waits (on this thread, outside the runtime) until `n` more moves are accepted;
    /// how long that took.
    fn time_moves(&self, n: u64) -> Duration {
        let start = Instant::now();
        let target = self.moves() + n;
        while self.moves() < target {
            std::thread::sleep(Duration::from_micros(200));
        }
        start.elapsed()
    }

    fn stop(self) {
        self.stop.store(true, Relaxed);
        self.rt.block_on(async {
            realtime::table::stop_tables(&self.core).await;
            self.core.store.close().await;
        });
        self.rt.shutdown_timeout(Duration::from_secs(5));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `n` players in the store (seats are players).
async fn players(core: &Core, n: usize) -> Vec<Who> {
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let id = Uuid::new_v4();
        let name = format!("bench{i}");
        core.store
            .create_player(id, &name, &Uuid::new_v4().to_string(), "bench", 0)
            .await
            .expect("a player");
        v.push(Who { id, name });
    }
    v
}

/// One match of Trump for the two players `pair`, from a new table to its end.
async fn play_a_match(core: &Core, pair: &[Who], n: u64) {
    let record = realtime::table::open_record("trump", 2, pair[0].id).expect("a trump record");
    let seats = pair
        .iter()
        .map(|w| Occupant::Player {
            id: w.id,
            name: w.name.clone(),
        })
        .collect();
    let table = core.create(record, seats).await.expect("a new table");
    table
        .ask(|reply| Cmd::Start {
            who: pair[0].clone(),
            reply,
        })
        .await
        .expect("the match starts");
    let a = tokio::spawn(seat(table.clone(), pair[0].clone(), n * 2));
    let b = seat(table.clone(), pair[1].clone(), n * 2 + 1);
    let _ = tokio::join!(a, b);
}

/// One seat's client: reads what the table sends, and plays a random legal action at
/// each of its turns, until the match is over.
async fn seat(table: TableHandle, who: Who, seed: u64) {
    let (tx, mut rx) = outbox::outbox(realtime::CONN_QUEUE);
    let (reply, answer) = tokio::sync::oneshot::channel();
    let connect = Cmd::Connect {
        who: Some(who),
        out: tx,
        since: None,
        updates: Updates::Patch,
        reply,
    };
    if table.send(connect).await.is_err() {
        return;
    }
    let Ok(conn) = answer.await else { return };
    let mut doc = TableDoc::default();
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut acted_at = 0;
    while let Some(text) = rx.recv().await {
        match doc.take(text.as_str()) {
            Incoming::Updated { .. } => {}
            Incoming::Mismatch => {
                let _ = table.send(Cmd::Sync { conn }).await;
                continue;
            }
            _ => continue,
        }
        if doc.over() {
            break;
        }
        let legal = doc.legal_count();
        if legal == 0 || acted_at == doc.version {
            continue;
        }
        // xorshift64: any spread of choices will do.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let Some(act) = doc.act_text((rng % legal as u64) as usize) else {
            continue;
        };
        // Parsed as the table socket parses what a client sends.
        let Ok(ClientMsg::Act { version, action }) = serde_json::from_str(&act) else {
            continue;
        };
        acted_at = doc.version;
        let cmd = Cmd::Act {
            conn,
            version,
            action,
            received: Instant::now(),
        };
        if table.send(cmd).await.is_err() {
            break;
        }
    }
    let _ = table.send(Cmd::Disconnect { conn }).await;
}

fn flat_out(c: &mut Criterion) {
    let mut group = c.benchmark_group("trump_flat_out");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for tables in [64, 256, 1024] {
        for cores in [1, 2] {
            let running = Tables::start(tables, cores);
            // Past the first deals and the store's first pages.
            running.time_moves(2_000);
            group.bench_function(format!("{tables}_tables_{cores}_cores"), |b| {
                b.iter_custom(|moves| running.time_moves(moves))
            });
            running.stop();
        }
    }
    group.finish();
}

criterion_group!(benches, flat_out);
criterion_main!(benches);
