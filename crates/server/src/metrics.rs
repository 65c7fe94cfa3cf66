//! Operational counters, rendered at `GET /metrics` in the Prometheus text format.
//! Plain atomics: a scrape reads them without locking any table.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds (seconds) of the persistence latency histogram buckets.
const BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

#[derive(Default)]
pub struct Metrics {
    pub ws_connections: AtomicI64,
    pub live_tables: AtomicI64,
    pub actions_accepted: AtomicU64,
    /// Refused actions by error code.
    rejected: Mutex<Vec<(String, u64)>>,
    persist_buckets: [AtomicU64; BUCKETS.len()],
    persist_count: AtomicU64,
    persist_sum_micros: AtomicU64,
}

impl Metrics {
    pub fn rejected(&self, code: &str) {
        let mut r = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        match r.iter_mut().find(|(c, _)| c == code) {
            Some((_, n)) => *n += 1,
            None => r.push((code.to_string(), 1)),
        }
    }

    /// Records how long one durable write of an action took.
    pub fn persisted(&self, took: Duration) {
        let secs = took.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.persist_buckets[i].fetch_add(1, Relaxed);
            }
        }
        self.persist_count.fetch_add(1, Relaxed);
        self.persist_sum_micros
            .fetch_add(took.as_micros() as u64, Relaxed);
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# HELP fib_ws_connections Open WebSocket connections.");
        let _ = writeln!(s, "# TYPE fib_ws_connections gauge");
        let _ = writeln!(
            s,
            "fib_ws_connections {}",
            self.ws_connections.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP fib_live_tables Tables with a running table task."
        );
        let _ = writeln!(s, "# TYPE fib_live_tables gauge");
        let _ = writeln!(s, "fib_live_tables {}", self.live_tables.load(Relaxed));
        let _ = writeln!(
            s,
            "# HELP fib_actions_accepted_total Game actions accepted."
        );
        let _ = writeln!(s, "# TYPE fib_actions_accepted_total counter");
        let _ = writeln!(
            s,
            "fib_actions_accepted_total {}",
            self.actions_accepted.load(Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP fib_actions_rejected_total Messages refused, by error code."
        );
        let _ = writeln!(s, "# TYPE fib_actions_rejected_total counter");
        for (code, n) in self
            .rejected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(s, "fib_actions_rejected_total{{code=\"{code}\"}} {n}");
        }
        let _ = writeln!(
            s,
            "# HELP fib_persist_seconds Time to durably store one action."
        );
        let _ = writeln!(s, "# TYPE fib_persist_seconds histogram");
        for (i, b) in BUCKETS.iter().enumerate() {
            let n = self.persist_buckets[i].load(Relaxed);
            let _ = writeln!(s, "fib_persist_seconds_bucket{{le=\"{b}\"}} {n}");
        }
        let count = self.persist_count.load(Relaxed);
        let _ = writeln!(s, "fib_persist_seconds_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.persist_sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(s, "fib_persist_seconds_sum {sum}");
        let _ = writeln!(s, "fib_persist_seconds_count {count}");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.actions_accepted.fetch_add(3, Relaxed);
        m.rejected("not_your_turn");
        m.rejected("not_your_turn");
        m.persisted(Duration::from_millis(2));
        let t = m.render();
        assert!(t.contains("fib_actions_accepted_total 3"));
        assert!(t.contains("fib_actions_rejected_total{code=\"not_your_turn\"} 2"));
        assert!(t.contains("fib_persist_seconds_bucket{le=\"0.0025\"} 1"));
        assert!(t.contains("fib_persist_seconds_bucket{le=\"0.001\"} 0"));
        assert!(t.contains("fib_persist_seconds_count 1"));
    }
}
