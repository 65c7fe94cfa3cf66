//! Durable actions per second through the [`Writer`] (or, to compare, through
//! `append_action` straight on the store) for N tables playing at once.
//!
//! ```text
//! cargo run --release -p store --example write_bench -- URL TABLES SECONDS [writer|direct]
//! cargo run --release -p store --example write_bench -- sqlite:///tmp/bench/fib.db 64 10
//! ```
//!
//! Each table is a task that, like a server's table task, appends one action and waits
//! for it to be durable before the next. The tables are new (bot seats only), so any
//! database will do, but the rows stay: point it at a throwaway one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use store::{
    ActionRecord, Occupant, RoundRecord, StoreError, TableRecord, TableStatus, TableWrite,
    WriteObserver, WriteOp, Writer,
};
use uuid::Uuid;

/// Counts what the writer did.
#[derive(Default)]
struct Counts {
    groups: AtomicU64,
    units: AtomicU64,
    largest: AtomicUsize,
    /// Every unit's wait in the writer's queue (ns), summed. Each unit is taken once, then
    /// committed or failed once: `units + failures` of them.
    queued_ns: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
}

impl WriteObserver for Counts {
    fn taken(&self, waited: Duration) {
        self.queued_ns
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
    }
    fn committed(&self, units: usize, _: Duration) {
        self.groups.fetch_add(1, Ordering::Relaxed);
        self.units.fetch_add(units as u64, Ordering::Relaxed);
        self.largest.fetch_max(units, Ordering::Relaxed);
    }
    fn retried(&self, _: &StoreError) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }
    fn failed(&self, units: usize, _: &StoreError) {
        self.failures.fetch_add(units as u64, Ordering::Relaxed);
    }
}

/// Each live thread's name and CPU time so far (ns, from /proc: Linux only; empty elsewhere).
fn thread_times() -> std::collections::HashMap<u64, (String, u64)> {
    let mut times = std::collections::HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return times;
    };
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let ran = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        let ran = ran.split_whitespace().next().and_then(|n| n.parse().ok());
        if let Some(ran) = ran {
            times.insert(tid, (comm.trim().to_string(), ran));
        }
    }
    times
}

fn usage() -> ! {
    eprintln!("usage: write_bench URL TABLES SECONDS [writer|direct]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), StoreError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(url), Some(tables), Some(seconds)) = (args.first(), args.get(1), args.get(2)) else {
        usage()
    };
    let tables: usize = tables.parse().unwrap_or_else(|_| usage());
    let seconds: f64 = seconds.parse().unwrap_or_else(|_| usage());
    let direct = match args.get(3).map(String::as_str) {
        None | Some("writer") => false,
        Some("direct") => true,
        Some(_) => usage(),
    };

    let store = store::connect(url).await?;
    let mut ids = Vec::with_capacity(tables);
    for _ in 0..tables {
        let record = TableRecord {
            id: Uuid::new_v4(),
            game: "bench".into(),
            options: json!({}),
            rules_version: 1,
            seat_count: 2,
            private: true,
            invite_code: None,
            created_by: Uuid::nil(),
            created_at: 0,
            status: TableStatus::Playing,
            bots: None,
            daily: None,
            pace: serde_json::json!({"kind": "untimed"}),
            clock: None,
            updated_at: 0,
        };
        let bot = Occupant::Bot {
            level: "easy".into(),
        };
        store.create_table(&record, &[bot.clone(), bot]).await?;
        let round = RoundRecord {
            round_no: 0,
            seed_hex: "00".repeat(32),
            commitment: "11".repeat(32),
            started_at: 0,
            ended_at: None,
            result: None,
        };
        store.start_round(record.id, &round).await?;
        ids.push(record.id);
    }

    let counts = Arc::new(Counts::default());
    let writer = Writer::spawn(store.clone(), counts.clone());
    let cpu_before = thread_times();
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, table) in ids.into_iter().enumerate() {
        let (store, writer) = (store.clone(), writer.clone());
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            let mut seq = 0;
            while Instant::now() < until {
                let action = ActionRecord {
                    round_no: 0,
                    seq,
                    seat: (seq % 2) as i32,
                    action: json!({ "play": { "card": seq % 52, "table": i } }),
                };
                // Unix ms, as a server's units carry: the SQLite store folds its journal by
                // the age of its oldest row.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                let sent = Instant::now();
                match direct {
                    true => store.append_action(table, &action, now).await?,
                    false => {
                        let op = WriteOp::AppendAction(action);
                        writer.write(TableWrite::one(table, now, op)).await?
                    }
                }
                latencies.push(sent.elapsed());
                seq += 1;
            }
            Ok::<_, StoreError>(latencies)
        });
    }
    let mut latencies = Vec::new();
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done.expect("table task")?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = thread_times();
    latencies.sort_unstable();
    let at = |q: f64| {
        let i = ((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1));
        latencies.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "{} {}, {tables} tables, {elapsed:.1} s: {} durable actions, {:.0} actions/s; \
         write latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        store.backend(),
        if direct { "direct" } else { "writer" },
        latencies.len(),
        latencies.len() as f64 / elapsed,
        at(0.5),
        at(0.99),
        at(1.0),
    );
    // CPU per action by thread name: the process's, the store's serial part (SQLite's
    // write thread), the runtime's workers (the tables, the writer task), sqlx's threads.
    let mut by_name: std::collections::BTreeMap<String, u64> = Default::default();
    for (tid, (name, after)) in &cpu_after {
        let before = cpu_before.get(tid).map_or(0, |(_, t)| *t);
        *by_name.entry(name.clone()).or_default() += after.saturating_sub(before);
    }
    if !by_name.is_empty() {
        let per = |ns: u64| ns as f64 / 1e3 / latencies.len().max(1) as f64;
        let all: u64 = by_name.values().sum();
        let parts: Vec<String> = by_name
            .iter()
            .filter(|(_, ns)| per(**ns) >= 0.05)
            .map(|(name, ns)| format!("{name} {:.2}", per(*ns)))
            .collect();
        println!(
            "CPU per action: {:.2} µs in all ({:.2} cores); by thread: {}",
            per(all),
            all as f64 / 1e9 / elapsed,
            parts.join(", ")
        );
    }
    if !direct {
        let groups = counts.groups.load(Ordering::Relaxed).max(1);
        println!(
            "writer: {groups} groups, {:.1} units per group (largest {}), {:.2} ms in the queue \
             on average, {} retries, {} failed",
            counts.units.load(Ordering::Relaxed) as f64 / groups as f64,
            counts.largest.load(Ordering::Relaxed),
            counts.queued_ns.load(Ordering::Relaxed) as f64
                / (counts.units.load(Ordering::Relaxed) + counts.failures.load(Ordering::Relaxed))
                    .max(1) as f64
                / 1e6,
            counts.retries.load(Ordering::Relaxed),
            counts.failures.load(Ordering::Relaxed),
        );
    }
    Ok(())
}
