//! Tables of Fibonacci's Trump for two, played flat out through the real-time core alone:
//! no socket, no HTTP, no server crate.
//!
//! Each seat is a client task that reads its connection's queue (the texts a socket would
//! carry), keeps its state document from `state` and `patch` messages as any client must
//! (`protocol::client::TableDoc`), and answers each of its turns at once with a random legal
//! card, sent as the `act` message a socket would have parsed. Every move is durable in
//! SQLite (a database file in a temporary folder, the server's default backend) before
//! anyone hears of it, exactly as in the server: the measure is accepted, stored moves per
//! second. A finished match is followed by a new table at once. A configuration is measured
//! once every table has started its first match: the openings go through the store in turn
//! with the writer's groups, and on one core a thousand of them outlast a warm-up.
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
//!
//! With `CORE_BENCH_CPU=SECONDS`, each configuration then plays that long more and prints
//! what it cost: the cores the process used, CPU per move, each kind of thread's share (on
//! a core, and runnable but waiting for one), context switches per move, and each core of
//! the machine: how much of the time it idled (and waited for I/O, the fsyncs) and how
//! often the SQLite write thread was found on it; and where the
//! moves waited: the store writer's groups, commits and queue (a move's wait for its write,
//! and the part of it spent in the writer's queue), the runtime's shared queue, its
//! workers' busy time and sleeps, and how often none, one or both workers were asleep
//! (tokio's stable runtime metrics; the core's metrics text read with the load generator's
//! reader, `loadgen::conn::Metrics`, in process, no socket). On a busy machine the rates
//! say little; CPU per move and switches per move still compare builds.
//!
//! With `CORE_BENCH_ROUNDS=N` as well, criterion is left out: each table count's two
//! configurations are played in turns, N rounds of one window each (one core first in odd
//! rounds, two cores first in even ones), and the medians and each round's ratio of two
//! cores to one are printed. This VM's speed changes from one minute to the next, so a
//! ratio is only worth something between windows played side by side. Each round also
//! plays two copies of the one-core configuration at once, one pinned to each core, each
//! with its own runtime, store and database file: nothing shared between the cores. What
//! the two make together, against one copy alone, is what the machine gives this very
//! workload for a second core (on this VM about ×2 at 64 and 256 tables; at 1024, two
//! copies hold twice the tables' state, and made ×1.3–1.75), so that the two-core ratio can
//! be read against the machine's own ceiling as well as against 2. Before the rounds it
//! prints the machine's own prices: a wake-up handed between two threads on one core and
//! between two, how the idle cores wait (a virtual machine's may halt at once, and then each
//! wake-up goes through the host), and what two threads that never sleep make on two cores
//! against one:
//!
//! ```sh
//! CORE_BENCH_CPU=5 CORE_BENCH_ROUNDS=5 cargo bench -p realtime --bench core -- "256_tables|1024_tables"
//! ```
//!
//! The benchmark allocates with jemalloc, as the server does.

use std::sync::Arc;

/// The server's allocator (`crates/server/src/main.rs`): the core is measured as it runs
/// there. With glibc's malloc, a fifth of the benchmark's CPU was malloc and free.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use loadgen::conn::Metrics as Scrape;
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
    /// Tables whose first match has started (both seats then play).
    started: Arc<AtomicUsize>,
    /// How many tables play.
    tables: usize,
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
        Tables::start_on(tables, cores, 0)
    }

    /// As [`Tables::start`], one core being the `which`th core rather than the first (a
    /// copy of the one-core configuration beside another, [`copies_window`]).
    fn start_on(tables: usize, cores: usize, which: usize) -> Tables {
        let build = move || {
            if cores == 1 {
                let core = core_affinity::get_core_ids()
                    .and_then(|ids| ids.into_iter().nth(which))
                    .expect("a core to pin to");
                assert!(core_affinity::set_for_current(core), "pinned to one core");
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
        let started = Arc::new(AtomicUsize::new(0));
        let setup_started = started.clone();
        let setup = rt.spawn(async move {
            let (dir, stop, started) = (setup_dir, setup_stop, setup_started);
            let core = Tables::core(&dir).await;
            let players = players(&core, tables * 2).await;
            for pair in players.chunks(2) {
                let (core, stop, pair) = (core.clone(), stop.clone(), pair.to_vec());
                let started = started.clone();
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        n += 1;
                        if !play_a_match(&core, &pair, n, &started).await {
                            break;
                        }
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
            started,
            tables,
            dir,
        }
    }

    /// Moves accepted (stored, then told) so far.
    fn moves(&self) -> u64 {
        self.core.metrics.actions_accepted.load(Relaxed)
    }

    /// Waits (on this thread, outside the runtime) until every table has started its first
    /// match, then until `n` more moves are accepted. The tables are opened and started
    /// through the store's own writes, in turn with the writer's groups: on one core, a
    /// thousand of them took longer than a warm-up, and a window that began before they
    /// were all in play measured fewer tables, whose writes waited behind the others'
    /// openings.
    fn settle(&self, n: u64) {
        let deadline = Instant::now() + SETTLE_WITHIN;
        while self.started.load(Relaxed) < self.tables {
            // A table whose match never starts ends its task (a panic there): say so rather
            // than wait for ever.
            assert!(
                Instant::now() < deadline,
                "{} of {} tables started their match within {SETTLE_WITHIN:?}",
                self.started.load(Relaxed),
                self.tables
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        self.time_moves(n);
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

/// One match of Trump for the two players `pair`, from a new table to its end; `false`
/// once the configuration is stopping (the core makes no new table, or the table was
/// handed over before its match started). The first match of a pair (`n` 1) counts in
/// `begun` once it has started.
async fn play_a_match(core: &Core, pair: &[Who], n: u64, begun: &AtomicUsize) -> bool {
    let record = realtime::table::open_record("trump", 2, pair[0].id).expect("a trump record");
    let seats = pair
        .iter()
        .map(|w| Occupant::Player {
            id: w.id,
            name: w.name.clone(),
        })
        .collect();
    let table = match core.create(record, seats).await {
        Ok(table) => table,
        // The configuration is stopping: no new table, the player is done.
        Err(realtime::TableError::Draining) => return false,
        Err(e) => panic!("a new table: {e:?}"),
    };
    let started = table
        .ask(|reply| Cmd::Start {
            who: pair[0].clone(),
            reply,
        })
        .await;
    match started {
        // Each table's first match once: a table that finished one and began another
        // before the last table opened must not count twice.
        Ok(_) if n == 1 => {
            begun.fetch_add(1, Relaxed);
        }
        Ok(_) => {}
        Err(_) if core.draining() => return false,
        Err(e) => panic!("the match starts: {e:?}"),
    }
    let a = tokio::spawn(seat(table.clone(), pair[0].clone(), n * 2));
    let b = seat(table.clone(), pair[1].clone(), n * 2 + 1);
    let _ = tokio::join!(a, b);
    true
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

/// What the process and each of its threads used so far: CPU time (Linux's `/proc`, in
/// clock ticks of 10 ms) and context switches, by thread name.
#[derive(Default)]
struct Cpu {
    /// The process's user and system time, threads that ended included.
    process: (u64, u64),
    /// By thread id: its name, CPU ticks, voluntary and involuntary context switches, and
    /// from the scheduler (`schedstat`): ns on a core, ns runnable waiting for one.
    threads: std::collections::HashMap<u32, (String, u64, u64, u64, u64, u64)>,
    /// Each core of the machine (`/proc/stat`).
    cores: Vec<CoreTicks>,
}

/// One core's line of `/proc/stat`, in clock ticks.
#[derive(Clone, Copy)]
struct CoreTicks {
    /// The core's number (`cpuN`).
    n: usize,
    /// All its time.
    all: u64,
    /// Idle, while no thread waited for I/O.
    idle: u64,
    /// Idle while a thread waited for I/O (an fsync).
    iowait: u64,
}

/// Field `n` (numbered from 1 as in proc(5)) of a `/proc/.../stat` text, from the state
/// (the 3rd) on: the name before it, in parentheses, may hold spaces.
fn stat_field<T: std::str::FromStr>(stat: &str, n: usize) -> Option<T> {
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

impl Cpu {
    /// The process's CPU time since `before`, user and system, in seconds (clock ticks of
    /// 10 ms).
    fn used_since(&self, before: &Cpu) -> (f64, f64) {
        let tick = 0.01;
        let user = self.process.0.saturating_sub(before.process.0) as f64 * tick;
        let system = self.process.1.saturating_sub(before.process.1) as f64 * tick;
        (user + system, system)
    }

    /// Each core's share of the time since `before` spent idle, and the part of it
    /// while a thread waited for I/O.
    fn idle_since(&self, before: &Cpu) -> Vec<(usize, f64, f64)> {
        self.cores
            .iter()
            .zip(&before.cores)
            .map(|(a, b)| {
                let all = a.all.saturating_sub(b.all).max(1) as f64;
                let io = a.iowait.saturating_sub(b.iowait);
                let idle = a.idle.saturating_sub(b.idle) + io;
                (a.n, idle as f64 / all, io as f64 / all)
            })
            .collect()
    }

    fn now() -> Cpu {
        // proc(5): utime and stime, the 14th and 15th fields.
        let ticks = |stat: &str| Some((stat_field(stat, 14)?, stat_field(stat, 15)?));
        let mut cpu = Cpu::default();
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
            cpu.process = ticks(&stat).unwrap_or_default();
        }
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            // "cpuN user nice system idle iowait irq softirq steal …" (not the "cpu" sum).
            for line in stat.lines() {
                let mut fields = line.split_whitespace();
                let Some(n) = fields
                    .next()
                    .and_then(|name| name.strip_prefix("cpu")?.parse().ok())
                else {
                    continue;
                };
                let f: Vec<u64> = fields.filter_map(|v| v.parse().ok()).collect();
                if f.len() >= 5 {
                    cpu.cores.push(CoreTicks {
                        n,
                        all: f.iter().take(8).sum(),
                        idle: f[3],
                        iowait: f[4],
                    });
                }
            }
        }
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
            return cpu;
        };
        for task in tasks.flatten() {
            let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let read = |f: &str| std::fs::read_to_string(task.path().join(f)).unwrap_or_default();
            let name = read("comm").trim().to_string();
            let (user, system) = ticks(&read("stat")).unwrap_or_default();
            let status = read("status");
            let switches = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            let (vol, invol) = (
                switches("voluntary_ctxt_switches:"),
                switches("nonvoluntary_ctxt_switches:"),
            );
            let sched: Vec<u64> = read("schedstat")
                .split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect();
            let (run, wait) = (
                sched.first().copied().unwrap_or(0),
                sched.get(1).copied().unwrap_or(0),
            );
            cpu.threads
                .insert(tid, (name, user + system, vol, invol, run, wait));
        }
        cpu
    }
}

/// Where the moves of a window waited: the store writer's groups and queue, the runtime's
/// shared queue (tables woken by the writer's answers) and its workers' busy time and
/// sleeps. It showed (2026-11-28) that on two cores the tables wait mostly for the write,
/// and most of that wait is not the commit itself (docs/performance.md).
struct Stages {
    /// The core's metrics text at the start, read as the load generator reads a scrape.
    metrics: Scrape,
    parks: Vec<u64>,
    busy: Vec<Duration>,
    samples: u64,
    /// Sums over the samples: the runtime's shared queue, the writer's queue, and the
    /// samples that found the shared queue empty.
    shared: u64,
    writer: u64,
    shared_empty: u64,
    /// Samples by how many of the runtime's workers were asleep (0, 1, 2 or more), and of
    /// those with the shared queue not empty, how many found every worker asleep.
    asleep: [u64; 3],
    all_asleep_with_work: u64,
}

impl Stages {
    fn start(running: &Tables) -> Stages {
        let m = running.rt.metrics();
        Stages {
            metrics: Scrape(running.core.metrics.render()),
            parks: (0..m.num_workers())
                .map(|w| m.worker_park_count(w))
                .collect(),
            busy: (0..m.num_workers())
                .map(|w| m.worker_total_busy_duration(w))
                .collect(),
            samples: 0,
            shared: 0,
            writer: 0,
            shared_empty: 0,
            asleep: [0; 3],
            all_asleep_with_work: 0,
        }
    }

    fn sample(&mut self, running: &Tables) {
        let m = running.rt.metrics();
        let shared = m.global_queue_depth() as u64;
        self.samples += 1;
        self.shared += shared;
        self.shared_empty += u64::from(shared == 0);
        self.writer += running.core.writer.queued() as u64;
        // A worker's park-unpark count is odd while it sleeps (tokio's documentation), and
        // until it is back on a core once woken.
        let workers = m.num_workers();
        let asleep = (0..workers)
            .filter(|&w| m.worker_park_unpark_count(w) % 2 == 1)
            .count();
        self.asleep[asleep.min(2)] += 1;
        self.all_asleep_with_work += u64::from(asleep == workers && shared > 0);
    }

    fn print(&self, running: &Tables, wall: Duration) {
        let now = Scrape(running.core.metrics.render());
        let d = |k: &str| now.value(k).unwrap_or(0.0) - self.metrics.value(k).unwrap_or(0.0);
        let secs = wall.as_secs_f64();
        // A histogram's mean over the window.
        let mean =
            |family: &str| d(&format!("{family}_sum")) / d(&format!("{family}_count")).max(1.0);
        println!(
            "    writer: {:.0} groups/s of {:.1} units, a commit {:.2} ms, committing {:.0}% of the time; \
             a move's wait for its write {:.2} ms, {:.2} of it in the writer's queue (received to told: {:.2} ms)",
            d("fib_commit_seconds_count") / secs,
            mean("fib_commit_group_units"),
            1e3 * mean("fib_commit_seconds"),
            100.0 * d("fib_commit_seconds_sum") / secs,
            1e3 * mean("fib_table_write_seconds"),
            1e3 * mean("fib_write_queue_seconds"),
            1e3 * mean("fib_action_seconds"),
        );
        let m = running.rt.metrics();
        let parks: Vec<String> = (0..m.num_workers())
            .map(|w| {
                format!(
                    "{:.0}",
                    (m.worker_park_count(w) - self.parks[w]) as f64 / secs
                )
            })
            .collect();
        let busy: Vec<String> = (0..m.num_workers())
            .map(|w| {
                let busy = m.worker_total_busy_duration(w) - self.busy[w];
                format!("{:.2}", busy.as_secs_f64() / secs)
            })
            .collect();
        let n = self.samples.max(1) as f64;
        let pct = |v: u64| 100.0 * v as f64 / n;
        println!(
            "    queues: the writer's {:.1} units, the runtime's shared {:.1} tasks (empty in {:.0}% of samples); \
             workers busy {} of the time, asleep {} times a second; none asleep in {:.0}% of samples, \
             one in {:.0}%, two in {:.0}% (with the shared queue not empty: {:.0}%)",
            self.writer as f64 / n,
            self.shared as f64 / n,
            pct(self.shared_empty),
            busy.join(" + "),
            parks.join(" + "),
            pct(self.asleep[0]),
            pct(self.asleep[1]),
            pct(self.asleep[2]),
            pct(self.all_asleep_with_work),
        );
    }
}

/// Plays `secs` seconds more of a running configuration and prints what it cost: moves/s,
/// the cores the process used (CPU time over wall time), CPU per move, each kind of thread's
/// share, and context switches per move (each one a thread that went to sleep: a wake-up
/// handed across threads); on a machine of several cores, each core's idle share and how
/// often the write thread was seen on it (which core idles, and whether the write thread's
/// does while it waits for its fsyncs: on this VM both do, docs/performance.md). Returns the
/// moves per second and the cores used.
fn cpu_window(running: &Tables, label: &str, secs: f64) -> (f64, f64) {
    let (before, moves_before, start) = (Cpu::now(), running.moves(), Instant::now());
    let mut stages = Stages::start(running);
    // Where the SQLite write thread is seen at each sample: the core it runs or last ran on.
    // The store names it `fib-sqlite-write`; a thread's `comm` keeps 15 characters of that.
    let writer = before
        .threads
        .iter()
        .find(|(_, t)| t.0.starts_with("fib-sqlite-writ"))
        .map(|(tid, _)| format!("/proc/self/task/{tid}/stat"));
    let mut writer_on: std::collections::BTreeMap<usize, u32> = Default::default();
    while start.elapsed().as_secs_f64() < secs {
        std::thread::sleep(Duration::from_millis(2));
        stages.sample(running);
        // proc(5): "processor", the 39th field.
        let on = writer
            .as_ref()
            .and_then(|path| stat_field(&std::fs::read_to_string(path).ok()?, 39));
        if let Some(core) = on {
            *writer_on.entry(core).or_default() += 1;
        }
    }
    let (after, moves_after, wall) = (Cpu::now(), running.moves(), start.elapsed());
    stages.print(running, wall);
    let moves = (moves_after - moves_before).max(1) as f64;
    let wall = wall.as_secs_f64();
    let (used, system) = after.used_since(&before);
    // By kind of thread: cores on a core, switches (voluntary, not), threads, cores
    // runnable but waiting for a core (the machine's other work, or the process's own
    // threads on one core).
    let mut by_name: std::collections::BTreeMap<String, (f64, u64, u64, usize, f64)> =
        std::collections::BTreeMap::new();
    for (tid, (name, _, vol, invol, run, wait)) in &after.threads {
        let (v0, i0, r0, w0) = before
            .threads
            .get(tid)
            .map(|b| (b.2, b.3, b.4, b.5))
            .unwrap_or_default();
        let kind = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
        let e = by_name.entry(kind.to_string()).or_default();
        e.0 += (run - r0) as f64 * 1e-9 / wall;
        e.1 += vol - v0;
        e.2 += invol - i0;
        e.3 += 1;
        e.4 += (wait - w0) as f64 * 1e-9 / wall;
    }
    let switches: u64 = by_name.values().map(|e| e.1 + e.2).sum();
    println!(
        "{label}: {:.1}k moves/s; the process used {:.2} cores ({:.2} in the kernel), \
         {:.1} µs of CPU per move, {:.2} context switches per move",
        moves / wall / 1e3,
        used / wall,
        system / wall,
        used / moves * 1e6,
        switches as f64 / moves,
    );
    for (name, (cores, vol, invol, n, waiting)) in by_name {
        if cores > 0.0 || vol + invol > 0 {
            println!(
                "    {name} ×{n}: {cores:.2} cores, {waiting:.2} waiting for one, \
                 {:.2} + {:.2} switches per move (voluntary + not)",
                vol as f64 / moves,
                invol as f64 / moves
            );
        }
    }
    let idle = after.idle_since(&before);
    if idle.len() > 1 {
        let seen: u32 = writer_on.values().sum();
        let cores: Vec<String> = idle
            .iter()
            .map(|&(i, idle, io)| {
                let w = writer_on.get(&i).copied().unwrap_or(0) as f64 / f64::from(seen.max(1));
                format!("core {i} idle {idle:.2} ({io:.2} of it waiting for I/O), the write thread there {w:.2}")
            })
            .collect();
        println!("    the machine's cores: {}", cores.join("; "));
    }
    (moves / wall, used / wall)
}

/// Two copies of the one-core configuration at once, each its own runtime, store and
/// database file, pinned to the first and to the second core: nothing shared, no thread
/// handing work to the other core. What they make together against one copy alone is
/// what this machine gives this very workload for a second core; the two-core
/// configuration (one process, one store, one write thread) against the same one copy is
/// how much of it the core keeps.
fn copies_window(tables: usize, label: &str, secs: f64) -> f64 {
    let copies = [
        Tables::start_on(tables, 1, 0),
        Tables::start_on(tables, 1, 1),
    ];
    for copy in &copies {
        copy.settle(2_000);
    }
    std::thread::sleep(WARM_UP);
    let (before, start) = (Cpu::now(), Instant::now());
    let moves_before: Vec<u64> = copies.iter().map(Tables::moves).collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (after, wall) = (Cpu::now(), start.elapsed().as_secs_f64());
    let rates: Vec<f64> = copies
        .iter()
        .zip(&moves_before)
        .map(|(copy, before)| (copy.moves() - before) as f64 / wall)
        .collect();
    let used = after.used_since(&before).0 / wall;
    let sum: f64 = rates.iter().sum();
    println!(
        "{label}: {:.1}k moves/s ({:.1}k on the first core + {:.1}k on the second); the \
         process used {used:.2} cores",
        sum / 1e3,
        rates[0] / 1e3,
        rates[1] / 1e3,
    );
    for copy in copies {
        copy.stop();
    }
    sum
}

/// The configurations the filter leaves in, as (tables, cores) pairs: criterion's filter
/// (its first argument that is neither an option nor an option's number), read as plain
/// names between `|`; a configuration it leaves out is not started at all.
fn configurations() -> Vec<(usize, usize)> {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-') && a.parse::<f64>().is_err())
        .map(|f| f.split('|').map(str::to_string).collect())
        .unwrap_or_default();
    let mut v = Vec::new();
    for tables in [64, 256, 1024] {
        for cores in [1, 2] {
            let name = name(tables, cores);
            if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
                v.push((tables, cores));
            }
        }
    }
    v
}

fn name(tables: usize, cores: usize) -> String {
    format!("{tables}_tables_{cores}_cores")
}

/// The machine's own price of a wake-up handed between threads: the median round trip of
/// a message between two threads that sleep while they wait (`std`'s channel, a futex),
/// both on the first core and one on each of the first two. On one core the wake-up is a
/// context switch; between cores it is an interrupt to the other core, which on a virtual
/// machine whose idle cores halt means waking a virtual CPU. Every move of the two-core
/// configuration hands several such wake-ups between threads: printed beside the ratios as
/// the machine's part in them (on this VM it is not the whole story: docs/performance.md).
fn wake_round_trip() -> (f64, f64) {
    let ids = core_affinity::get_core_ids().unwrap_or_default();
    let trip = |a: usize, b: usize| -> f64 {
        let (ping, pinged) = std::sync::mpsc::channel::<u32>();
        let (pong, ponged) = std::sync::mpsc::channel::<u32>();
        let echo = on_core(&ids, b, move || {
            while let Ok(v) = pinged.recv() {
                let _ = pong.send(v);
            }
        });
        let measure = on_core(&ids, a, move || {
            let mut trips: Vec<Duration> = (0..20_000u32)
                .map(|i| {
                    let start = Instant::now();
                    let _ = ping.send(i);
                    let _ = ponged.recv();
                    start.elapsed()
                })
                .collect();
            drop(ping);
            trips.sort();
            trips[trips.len() / 2]
        });
        let median = measure.join().expect("the measuring thread");
        let _ = echo.join();
        median.as_secs_f64() * 1e6
    };
    (trip(0, 0), trip(0, 1))
}

/// Runs `f` on a thread of its own, pinned to the `core`th of `ids` where there is one
/// (unpinned on a machine with fewer cores).
fn on_core<T: Send + 'static>(
    ids: &[core_affinity::CoreId],
    core: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let core = ids.get(core).copied();
    std::thread::spawn(move || {
        if let Some(core) = core {
            core_affinity::set_for_current(core);
        }
        f()
    })
}

/// The machine's own ceiling for two cores: work that never sleeps (a loop of arithmetic)
/// on one thread pinned to the first core, then on two threads pinned to the first two
/// at once; what the two did against the one. Near 2 on this VM: its two cores run
/// two busy threads at full speed, so where the benchmark's two cores make less than
/// twice one, the rest is the benchmark's own, or the price of its threads' sleeps and
/// wake-ups ([`wake_round_trip`]).
fn busy_scaling() -> f64 {
    let ids = core_affinity::get_core_ids().unwrap_or_default();
    let busy = |core: usize| {
        on_core(&ids, core, || {
            let (start, mut x, mut n) = (Instant::now(), 0x9E37_79B9_7F4A_7C15u64, 0u64);
            while start.elapsed() < BUSY_WINDOW {
                for _ in 0..1024 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                }
                n += 1;
            }
            std::hint::black_box(x);
            n
        })
    };
    let one = busy(0).join().unwrap_or(0);
    let two: u64 = [busy(0), busy(1)]
        .into_iter()
        .map(|t| t.join().unwrap_or(0))
        .sum();
    two as f64 / one.max(1) as f64
}

/// How long each part of [`busy_scaling`] runs.
const BUSY_WINDOW: Duration = Duration::from_millis(700);

/// How this (virtual) machine's idle cores wait, from Linux's `/sys`: the idle driver, and
/// where it is `haltpoll` (a KVM guest's), how long an idle core polls before it halts
/// (`guest_halt_poll_ns`; 0: it halts at once, and waking it is a trip through the host).
fn idle_cores() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let driver = read("/sys/devices/system/cpu/cpuidle/current_driver");
    let poll = read("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
    match (driver, poll) {
        (Some(d), Some(p)) => format!("idle driver {d}, polling {p} ns before a halt"),
        (Some(d), None) => format!("idle driver {d}"),
        _ => "idle driver unknown".into(),
    }
}

/// The middle value (the upper of the two middle ones for an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// How long every table of a configuration may take to start its first match
/// ([`Tables::settle`]): a thousand take a few seconds on one core.
const SETTLE_WITHIN: Duration = Duration::from_secs(120);

/// How long a configuration of [`in_turns`] plays before its window.
const WARM_UP: Duration = Duration::from_secs(3);

/// One window of a round of [`in_turns`]: a configuration on this many cores, or the two
/// copies of the one-core configuration ([`copies_window`]).
#[derive(Clone, Copy)]
enum Window {
    Cores(usize),
    Copies,
}

/// `CORE_BENCH_ROUNDS`: each table count's one-core and two-core configurations in turns,
/// `rounds` windows of `secs` each, then the medians and the ratios.
fn in_turns(rounds: usize, secs: f64) {
    let (same, across) = wake_round_trip();
    println!(
        "a wake-up handed between two threads and back (median): {same:.1} µs on one core, \
         {across:.1} µs between two ({}); work that never sleeps, two threads on two cores \
         against one: ×{:.2}",
        idle_cores(),
        busy_scaling(),
    );
    let two_cores = core_affinity::get_core_ids().is_some_and(|ids| ids.len() >= 2);
    let configurations = configurations();
    let mut counts: Vec<usize> = configurations.iter().map(|c| c.0).collect();
    counts.dedup();
    for tables in counts {
        if !configurations.contains(&(tables, 1)) || !configurations.contains(&(tables, 2)) {
            eprintln!("{tables} tables: in turns needs both its configurations in the filter");
            continue;
        }
        // (moves/s, cores used) by round, one core then two; the two copies' moves/s.
        let mut one = Vec::new();
        let mut two = Vec::new();
        let mut copies = Vec::new();
        for round in 0..rounds {
            use Window::{Copies, Cores};
            let order = if round % 2 == 0 {
                [Cores(1), Cores(2), Copies]
            } else {
                [Copies, Cores(2), Cores(1)]
            };
            for window in order {
                let cores = match window {
                    Cores(cores) => cores,
                    Copies if two_cores => {
                        let label = format!("round {} {tables}_tables_two_copies", round + 1);
                        copies.push(copies_window(tables, &label, secs));
                        continue;
                    }
                    // A machine of one core has no second core to pin a copy to.
                    Copies => continue,
                };
                let running = Tables::start(tables, cores);
                // Past the first deals, and as long again as criterion's warm-up: the
                // window is of tables in their stride, as criterion's are.
                running.settle(2_000);
                std::thread::sleep(WARM_UP);
                let label = format!("round {} {}", round + 1, name(tables, cores));
                let got = cpu_window(&running, &label, secs);
                running.stop();
                if cores == 1 {
                    one.push(got)
                } else {
                    two.push(got)
                }
            }
        }
        let ratios: Vec<f64> = one.iter().zip(&two).map(|(a, b)| b.0 / a.0).collect();
        let by_round: Vec<String> = ratios.iter().map(|r| format!("×{r:.2}")).collect();
        let machine: Vec<f64> = one.iter().zip(&copies).map(|(a, c)| c / a.0).collect();
        let machine_by_round: Vec<String> = machine.iter().map(|r| format!("×{r:.2}")).collect();
        println!(
            "{tables} tables in turns, {rounds} rounds of {secs} s: one core {:.1}k moves/s \
             ({:.2} cores used), two cores {:.1}k moves/s ({:.2} cores used) (medians); \
             two against one by round {}, median ×{:.2}",
            median(one.iter().map(|x| x.0)) / 1e3,
            median(one.iter().map(|x| x.1)),
            median(two.iter().map(|x| x.0)) / 1e3,
            median(two.iter().map(|x| x.1)),
            by_round.join(" "),
            median(ratios.into_iter()),
        );
        if !copies.is_empty() {
            println!(
                "{tables} tables, two copies of the one-core configuration at once (nothing \
                 shared): {:.1}k moves/s (median); the machine gives this workload's second \
                 core ×{:.2} (by round {})",
                median(copies.iter().copied()) / 1e3,
                median(machine.iter().copied()),
                machine_by_round.join(" "),
            );
        }
    }
}

fn flat_out(c: &mut Criterion) {
    let secs = std::env::var("CORE_BENCH_CPU")
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    let rounds = std::env::var("CORE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| n > 0);
    if let Some(rounds) = rounds {
        in_turns(rounds, secs.unwrap_or(5.0));
        return;
    }
    let mut group = c.benchmark_group("trump_flat_out");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for (tables, cores) in configurations() {
        let name = name(tables, cores);
        let running = Tables::start(tables, cores);
        // Past the first deals and the store's first pages.
        running.settle(2_000);
        group.bench_function(&name, |b| b.iter_custom(|moves| running.time_moves(moves)));
        // `CORE_BENCH_CPU=SECONDS`: then a window of that long, with what it cost.
        if let Some(secs) = secs {
            cpu_window(&running, &name, secs);
        }
        running.stop();
    }
    group.finish();
}

criterion_group!(benches, flat_out);
criterion_main!(benches);
