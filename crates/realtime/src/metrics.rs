//! Operational counters, rendered at `GET /metrics` in the Prometheus text format.
//! Plain atomics: a scrape reads them without locking any table.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use store::{StoreError, WriteObserver};

/// Upper bounds (seconds) of the latency histograms' buckets: finer from 1 to 10 ms, where
/// a human pace's p99 targets lie (2 ms at 1,000 players, 10 ms at 10,000).
const SECONDS: [f64; 17] = [
    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.0025, 0.005, 0.0075, 0.01, 0.015,
    0.025, 0.05, 0.1, 0.25, 1.0,
];
/// Upper bounds of the commit group size histogram's buckets (table units per commit).
const UNITS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 512.0];

/// A Prometheus histogram over fixed buckets.
struct Histogram<const N: usize> {
    bounds: &'static [f64; N],
    buckets: [AtomicU64; N],
    count: AtomicU64,
    /// The sum, in millionths of the unit (µs for seconds), to stay an integer.
    sum_micros: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    fn new(bounds: &'static [f64; N]) -> Self {
        Histogram {
            bounds,
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    fn observe(&self, v: f64) {
        // Cumulative buckets are made at render time: one increment per observation.
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add((v * 1e6) as u64, Relaxed);
    }

    fn render(&self, s: &mut String, name: &str, help: &str) {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, b) in self.bounds.iter().enumerate() {
            cumulative += self.buckets[i].load(Relaxed);
            let _ = writeln!(s, "{name}_bucket{{le=\"{b}\"}} {cumulative}");
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(s, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(s, "{name}_sum {sum}");
        let _ = writeln!(s, "{name}_count {count}");
    }
}

/// Counters keyed by a short label (error code, close reason).
#[derive(Default)]
struct Labelled(Mutex<Vec<(String, u64)>>);

impl Labelled {
    fn add(&self, label: &str) {
        let mut r = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match r.iter_mut().find(|(c, _)| c == label) {
            Some((_, n)) => *n += 1,
            None => r.push((label.to_string(), 1)),
        }
    }

    fn render(&self, s: &mut String, name: &str, label: &str, help: &str) {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} counter");
        for (l, n) in self.0.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(s, "{name}{{{label}=\"{l}\"}} {n}");
        }
    }
}

pub struct Metrics {
    pub ws_connections: AtomicI64,
    pub live_tables: AtomicI64,
    pub actions_accepted: AtomicU64,
    /// Refused actions by error code.
    rejected: Labelled,
    /// Sockets closed by the server, by reason.
    closes: Labelled,
    /// Received → acknowledged (durable and sent) for accepted actions.
    action: Histogram<17>,
    /// Two stages of the above, so that a slow tail can be placed: received → the table's
    /// task taking the action up (its queue and the runtime's), and the durable write as
    /// the table waits for it (the writer's queue, the group's commit, the answer's trip
    /// back; every table write, not only actions'). The rest is the rules and the fan-out.
    action_queue: Histogram<17>,
    table_write: Histogram<17>,
    /// The first part of `table_write`: a unit's wait in the writer's queue, from being
    /// queued to being taken into a group (behind the commit in progress).
    write_queue: Histogram<17>,
    /// One group commit: how long, and how many table units.
    commit: Histogram<17>,
    group: Histogram<9>,
    write_retries: AtomicU64,
    /// The store writer is retrying a group after a transient failure (up to its 30 s
    /// deadline): its tables' moves wait meanwhile, before any table is parked.
    writes_retrying: std::sync::atomic::AtomicBool,
    write_failures: AtomicU64,
    /// When the store writer's attempt in progress began, in milliseconds after `born`
    /// plus one (0: none in progress).
    attempt_since: AtomicU64,
    born: std::time::Instant,
    /// Tables that took their state again from the store after a failed write.
    pub table_reloads: AtomicU64,
    /// Things that happened to tables because of people or time (timeouts, stand-ins,
    /// abandoned and expired tables), by kind.
    table_events: Labelled,
    /// Requests and sockets refused by an abuse limit, by limit.
    limited: Labelled,
    /// Tables parked now (their writes fail; they retry on their own).
    tables_parked: AtomicI64,
    /// Table tasks that panicked and were restarted from their stored log.
    pub table_panics: AtomicU64,
    /// What happened between this node and the others (`cluster`), by event.
    cluster: Labelled,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            ws_connections: AtomicI64::new(0),
            live_tables: AtomicI64::new(0),
            actions_accepted: AtomicU64::new(0),
            rejected: Labelled::default(),
            closes: Labelled::default(),
            action: Histogram::new(&SECONDS),
            action_queue: Histogram::new(&SECONDS),
            table_write: Histogram::new(&SECONDS),
            write_queue: Histogram::new(&SECONDS),
            commit: Histogram::new(&SECONDS),
            group: Histogram::new(&UNITS),
            write_retries: AtomicU64::new(0),
            writes_retrying: std::sync::atomic::AtomicBool::new(false),
            write_failures: AtomicU64::new(0),
            attempt_since: AtomicU64::new(0),
            born: std::time::Instant::now(),
            table_reloads: AtomicU64::new(0),
            table_events: Labelled::default(),
            limited: Labelled::default(),
            tables_parked: AtomicI64::new(0),
            table_panics: AtomicU64::new(0),
            cluster: Labelled::default(),
        }
    }
}

impl Metrics {
    pub fn rejected(&self, code: &str) {
        self.rejected.add(code);
    }

    /// A socket the server closed (`fell_behind`, `write_timeout`, `frame_too_large`, …).
    pub fn closed(&self, reason: &str) {
        self.closes.add(reason);
    }

    /// A table event: `timeouts`, `stand_ins`, `deserted` (a match ended as abandoned),
    /// `unwatched` (a match of bots only that nobody watched ended),
    /// `expired` (an open table nobody joined).
    pub fn count(&self, event: &str) {
        self.table_events.add(event);
    }

    /// A request or socket refused by the abuse limit `limit` (`guest`, `create_table`,
    /// `join`, `sockets`, `open_tables`).
    pub fn limited(&self, limit: &str) {
        self.limited.add(limit);
    }

    /// A table parked (`+1`) or unparked (`-1`).
    pub fn parked(&self, delta: i64) {
        self.tables_parked.fetch_add(delta, Relaxed);
    }

    /// Whether the store writer is retrying a failed write now (`/healthz`: degraded).
    pub fn writes_retrying(&self) -> bool {
        self.writes_retrying.load(Relaxed)
    }

    /// How long the store writer's commit in progress has taken so far (`None`: none in
    /// progress). `/healthz` says degraded past a few seconds: a disk that stopped
    /// answering holds the commit where the writer's own timeout cannot end it.
    pub fn write_in_flight(&self) -> Option<Duration> {
        match self.attempt_since.load(Relaxed) {
            0 => None,
            since => Some(
                self.born
                    .elapsed()
                    .saturating_sub(Duration::from_millis(since - 1)),
            ),
        }
    }

    /// Tables parked now.
    pub fn parked_now(&self) -> i64 {
        self.tables_parked.load(Relaxed)
    }

    /// A cluster event: `lease_renewals`, `lease_renewal_failures`, `claimed` (a table
    /// taken over from a dead or draining node), `handed_over` (released while draining
    /// or stopping), `stepped_down` (a table whose lease another node took),
    /// `forwarded_http`, `forwarded_ws` (to the table's owner), `forward_failures`.
    pub fn cluster(&self, event: &str) {
        self.cluster.add(event);
    }

    /// An action a player sent, from the socket reading it to its table's task taking it up.
    pub fn action_taken_up(&self, took: Duration) {
        self.action_queue.observe(took.as_secs_f64());
    }

    /// A table's durable write (an action's, or any other), from the table handing it to
    /// the writer to the answer.
    pub fn table_write(&self, took: Duration) {
        self.table_write.observe(took.as_secs_f64());
    }

    /// An accepted action, from the socket reading it to its patches being queued.
    pub fn acknowledged(&self, took: Duration) {
        self.action.observe(took.as_secs_f64());
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        gauge(
            &mut s,
            "fib_ws_connections",
            "Open WebSocket connections.",
            self.ws_connections.load(Relaxed),
        );
        gauge(
            &mut s,
            "fib_live_tables",
            "Tables with a running table task on this node: the tables it owns.",
            self.live_tables.load(Relaxed),
        );
        if let Some((allocated, resident)) = heap() {
            gauge(
                &mut s,
                "fib_heap_allocated_bytes",
                "Bytes the server holds allocated (jemalloc's stats.allocated).",
                allocated,
            );
            gauge(
                &mut s,
                "fib_heap_resident_bytes",
                "Bytes of memory the allocator keeps resident, its own bookkeeping and freed pages not yet returned included (jemalloc's stats.resident).",
                resident,
            );
        }
        self.cluster.render(
            &mut s,
            "fib_cluster_events_total",
            "event",
            "Between this node and the others: lease renewals (and failures), tables claimed from dead or draining nodes, handed over while draining or stopping, stepped down after another node took them, requests and sockets forwarded to a table's owner, tables taken over by (adopted) or handed to (released) the node their first socket reached.",
        );
        counter(
            &mut s,
            "fib_actions_accepted_total",
            "Game actions accepted, people's and bots' alike.",
            self.actions_accepted.load(Relaxed),
        );
        self.rejected.render(
            &mut s,
            "fib_actions_rejected_total",
            "code",
            "Messages refused, by error code.",
        );
        self.closes.render(
            &mut s,
            "fib_ws_closed_total",
            "reason",
            "Sockets the server closed, by reason (fell_behind: its queue was full; write_timeout: it stopped reading; frame_too_large; frame_broken).",
        );
        self.action.render(
            &mut s,
            "fib_action_seconds",
            "Accepted actions, from the socket reading them to their result being queued for every viewer (includes the durable write).",
        );
        self.action_queue.render(
            &mut s,
            "fib_action_queue_seconds",
            "Actions players sent, from the socket reading them to their table's task taking them up (the table's queue and the runtime's).",
        );
        self.table_write.render(
            &mut s,
            "fib_table_write_seconds",
            "Tables' durable writes as the table waits for them: the writer's queue, the group commit and the answer's way back.",
        );
        self.write_queue.render(
            &mut s,
            "fib_write_queue_seconds",
            "Tables' durable writes in the single store writer's queue: from being queued to being taken into a group commit.",
        );
        self.commit.render(
            &mut s,
            "fib_commit_seconds",
            "Group commits of the single store writer: time of one durable transaction.",
        );
        self.group.render(
            &mut s,
            "fib_commit_group_units",
            "Group commits of the single store writer: table units per transaction.",
        );
        counter(
            &mut s,
            "fib_store_write_retries_total",
            "Group commits retried after a transient database error.",
            self.write_retries.load(Relaxed),
        );
        let _ = writeln!(
            s,
            "# HELP fib_store_write_in_flight_seconds How long the store writer's commit in progress has taken so far (0: none in progress); it grows without end on a disk that stopped answering.\n# TYPE fib_store_write_in_flight_seconds gauge\nfib_store_write_in_flight_seconds {}",
            self.write_in_flight().unwrap_or_default().as_secs_f64()
        );
        counter(
            &mut s,
            "fib_store_write_failures_total",
            "Table units whose write failed for good (their change was refused, nothing changed).",
            self.write_failures.load(Relaxed),
        );
        counter(
            &mut s,
            "fib_table_reloads_total",
            "Tables that took their state again from the database after a failed write.",
            self.table_reloads.load(Relaxed),
        );
        self.table_events.render(
            &mut s,
            "fib_table_events_total",
            "event",
            "Table events: timeouts (a clock ran out, a bot moved), stand_ins (a bot took a disconnected player's seat), deserted (a match ended as abandoned), unwatched (a match of bots only that nobody watched ended), expired (an open table nobody joined).",
        );
        self.limited.render(
            &mut s,
            "fib_limited_total",
            "limit",
            "Requests and sockets refused with 429 by an abuse limit, by limit.",
        );
        gauge(
            &mut s,
            "fib_tables_parked",
            "Tables parked now: their database writes fail; they refuse moves and retry.",
            self.tables_parked.load(Relaxed),
        );
        counter(
            &mut s,
            "fib_table_panics_total",
            "Table tasks that panicked and were restarted from their stored log.",
            self.table_panics.load(Relaxed),
        );
        s
    }
}

/// Writes one gauge in the Prometheus text format (the server adds its own series with
/// these, beside [`Metrics::render`]'s).
pub fn gauge(s: &mut String, name: &str, help: &str, v: i64) {
    family(s, name, "gauge", help, "", [("", v)]);
}

/// Writes one counter in the Prometheus text format.
pub fn counter(s: &mut String, name: &str, help: &str, v: u64) {
    family(s, name, "counter", help, "", [("", v)]);
}

/// Writes a family of series of `kind` (`gauge`, `counter`), one per `(value, number)`,
/// labelled `label="value"`; with an empty `label`, one unlabelled series.
pub fn family<V: std::fmt::Display>(
    s: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    label: &str,
    series: impl IntoIterator<Item = (impl std::fmt::Display, V)>,
) {
    let _ = writeln!(s, "# HELP {name} {help}");
    let _ = writeln!(s, "# TYPE {name} {kind}");
    for (value, v) in series {
        if label.is_empty() {
            let _ = writeln!(s, "{name} {v}");
        } else {
            let _ = writeln!(s, "{name}{{{label}=\"{value}\"}} {v}");
        }
    }
}

impl WriteObserver for Metrics {
    fn taken(&self, waited: Duration) {
        self.write_queue.observe(waited.as_secs_f64());
    }

    fn committed(&self, units: usize, took: Duration) {
        self.commit.observe(took.as_secs_f64());
        self.group.observe(units as f64);
        if self.writes_retrying.load(Relaxed) {
            self.writes_retrying.store(false, Relaxed);
        }
    }

    fn retried(&self, error: &StoreError) {
        tracing::warn!(error = %error, "store write failed, retrying");
        self.write_retries.fetch_add(1, Relaxed);
        self.writes_retrying.store(true, Relaxed);
    }

    fn attempting(&self, now: bool) {
        let since = if now {
            self.born.elapsed().as_millis() as u64 + 1
        } else {
            0
        };
        self.attempt_since.store(since, Relaxed);
    }

    fn failed(&self, units: usize, error: &StoreError) {
        tracing::error!(error = %error, units, "store write failed");
        self.write_failures.fetch_add(units as u64, Relaxed);
        // Given up: the tables park (and say so) from here.
        self.writes_retrying.store(false, Relaxed);
    }
}

/// `(allocated, resident)` bytes of the heap, as jemalloc counts them; `None` when jemalloc
/// is not the allocator (tests), whose counters then stay at zero. What RSS alone cannot
/// say: whether memory kept after sockets close is still in use or only not yet returned.
fn heap() -> Option<(i64, i64)> {
    use tikv_jemalloc_ctl::{epoch, stats};
    // The statistics are a snapshot, refreshed by advancing the epoch.
    epoch::advance().ok()?;
    let allocated = stats::allocated::read().ok()?;
    let resident = stats::resident::read().ok()?;
    (allocated > 0).then_some((allocated as i64, resident as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/healthz` says degraded while the writer retries: from the first retry until a
    /// group commits, or the writer gives up (the tables then park and say so).
    #[test]
    fn writes_retrying_from_a_retry_to_the_next_commit_or_failure() {
        let m = Metrics::default();
        assert!(!m.writes_retrying());
        let e = StoreError::Unavailable("down".into());
        m.retried(&e);
        assert!(m.writes_retrying());
        m.committed(3, Duration::from_millis(5));
        assert!(!m.writes_retrying());
        m.retried(&e);
        m.failed(3, &e);
        assert!(!m.writes_retrying());
    }

    /// The commit in progress is timed from outside the writer: from its attempt's start
    /// until its answer, whatever the answer.
    #[test]
    fn write_in_flight_from_an_attempt_to_its_answer() {
        let m = Metrics::default();
        assert_eq!(m.write_in_flight(), None);
        m.attempting(true);
        std::thread::sleep(Duration::from_millis(30));
        let so_far = m.write_in_flight().expect("an attempt in progress");
        assert!(so_far >= Duration::from_millis(25), "{so_far:?}");
        assert!(m.render().contains("fib_store_write_in_flight_seconds 0.0"));
        m.attempting(false);
        assert_eq!(m.write_in_flight(), None);
        assert!(m.render().contains("fib_store_write_in_flight_seconds 0\n"));
    }

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.actions_accepted.fetch_add(3, Relaxed);
        m.rejected("not_your_turn");
        m.rejected("not_your_turn");
        m.closed("write_timeout");
        m.acknowledged(Duration::from_millis(2));
        m.committed(5, Duration::from_micros(300));
        m.committed(1, Duration::from_millis(3));
        m.action_taken_up(Duration::from_micros(80));
        m.table_write(Duration::from_millis(7));
        m.taken(Duration::from_micros(400));
        m.taken(Duration::from_millis(2));
        let t = m.render();
        assert!(t.contains("fib_actions_accepted_total 3"));
        assert!(t.contains("fib_actions_rejected_total{code=\"not_your_turn\"} 2"));
        assert!(t.contains("fib_ws_closed_total{reason=\"write_timeout\"} 1"));
        assert!(t.contains("fib_action_seconds_bucket{le=\"0.0025\"} 1"));
        assert!(t.contains("fib_action_seconds_bucket{le=\"0.001\"} 0"));
        assert!(t.contains("fib_action_seconds_count 1"));
        // Cumulative: 1 unit in le=1, 5 units in le=8.
        assert!(t.contains("fib_commit_group_units_bucket{le=\"1\"} 1"));
        assert!(t.contains("fib_commit_group_units_bucket{le=\"4\"} 1"));
        assert!(t.contains("fib_commit_group_units_bucket{le=\"8\"} 2"));
        assert!(t.contains("fib_commit_seconds_bucket{le=\"0.0005\"} 1"));
        assert!(t.contains("fib_commit_seconds_count 2"));
        assert!(t.contains("fib_action_queue_seconds_bucket{le=\"0.0001\"} 1"));
        assert!(t.contains("fib_table_write_seconds_bucket{le=\"0.005\"} 0"));
        assert!(t.contains("fib_table_write_seconds_bucket{le=\"0.0075\"} 1"));
        assert!(t.contains("fib_write_queue_seconds_bucket{le=\"0.0005\"} 1"));
        assert!(t.contains("fib_write_queue_seconds_bucket{le=\"0.0025\"} 2"));
        assert!(t.contains("fib_write_queue_seconds_count 2"));
    }
}
