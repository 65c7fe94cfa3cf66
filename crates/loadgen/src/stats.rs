//! Latency samples and their percentiles, the tally of everything that went wrong, and the
//! small random number generator the players draw their moves from.
//!
//! Every task keeps its own [`Samples`] and [`Tally`] and hands them back when it ends, so
//! recording a figure never takes a lock shared with other players.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Latencies in microseconds (a `u32` holds over an hour, far beyond any bound we wait).
#[derive(Clone, Debug, Default)]
pub struct Samples(Vec<u32>);

impl Samples {
    pub fn push(&mut self, d: Duration) {
        self.0.push(d.as_micros().min(u128::from(u32::MAX)) as u32);
    }

    pub fn extend(&mut self, other: Samples) {
        self.0.extend(other.0);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// p50, p99 and max; `None` without samples.
    pub fn summary(&self) -> Option<Latency> {
        if self.0.is_empty() {
            return None;
        }
        let mut v = self.0.clone();
        v.sort_unstable();
        // Nearest-rank percentile: the smallest sample with at least p% at or below it.
        let rank = |p: f64| {
            let i = ((p / 100.0) * v.len() as f64).ceil() as usize;
            f64::from(v[i.clamp(1, v.len()) - 1]) / 1000.0
        };
        Some(Latency {
            count: v.len(),
            p50_ms: rank(50.0),
            p99_ms: rank(99.0),
            max_ms: f64::from(*v.last().expect("not empty")) / 1000.0,
        })
    }
}

/// Sizes of the server → client text frames the players received (wire bytes of the
/// message text), for the protocol's size targets (protocol.md §1.4).
#[derive(Clone, Debug, Default)]
pub struct Frames {
    pub count: u64,
    pub bytes: u64,
    /// Each `patch` message's `ops` (the JSON Patch itself, as text).
    pub patch_ops: Vec<u32>,
    /// Each `patch` message whole.
    pub patch_msgs: Vec<u32>,
    /// Each `state` message whole.
    pub states: Vec<u32>,
}

impl Frames {
    /// Counts one received text frame.
    pub fn record(&mut self, text: &str) {
        self.count += 1;
        self.bytes += text.len() as u64;
        let len = text.len().min(u32::MAX as usize) as u32;
        if text.starts_with(r#"{"type":"patch""#) {
            self.patch_msgs.push(len);
            // The server writes `…,"ops":[…],"events":[…]}`: the ops run from the first
            // `"ops":` to the last `,"events":` (events hold no such text), or to the
            // closing brace where the compact form left out `events` (none).
            let end = text
                .rfind(r#","events":"#)
                .unwrap_or(text.len().saturating_sub(1));
            if let Some(a) = text.find(r#""ops":"#)
                && a + 6 <= end
            {
                self.patch_ops.push((end - a - 6) as u32);
            }
        } else if text.starts_with(r#"{"type":"state""#) {
            self.states.push(len);
        }
    }

    pub fn merge(&mut self, o: Frames) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.patch_ops.extend(o.patch_ops);
        self.patch_msgs.extend(o.patch_msgs);
        self.states.extend(o.states);
    }

    pub fn summary(&self) -> Option<FrameSizes> {
        if self.count == 0 {
            return None;
        }
        let median = |v: &[u32]| -> Option<u32> {
            let mut v = v.to_vec();
            v.sort_unstable();
            // Nearest rank, as the latencies.
            v.get(v.len().div_ceil(2).max(1) - 1).copied()
        };
        Some(FrameSizes {
            frames: self.count,
            mean_frame_bytes: self.bytes as f64 / self.count as f64,
            patches: self.patch_msgs.len() as u64,
            median_patch_bytes: median(&self.patch_ops),
            median_patch_message_bytes: median(&self.patch_msgs),
            states: self.states.len() as u64,
            median_state_bytes: median(&self.states),
            max_state_bytes: self.states.iter().max().copied(),
        })
    }
}

/// What [`Frames`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct FrameSizes {
    /// Server → client text frames received in the window.
    pub frames: u64,
    pub mean_frame_bytes: f64,
    pub patches: u64,
    /// The median `ops` of a `patch` (the JSON Patch), bytes.
    pub median_patch_bytes: Option<u32>,
    /// The median `patch` message whole (with its versions and events), bytes.
    pub median_patch_message_bytes: Option<u32>,
    pub states: u64,
    pub median_state_bytes: Option<u32>,
    pub max_state_bytes: Option<u32>,
}

impl std::fmt::Display for FrameSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = |v: Option<u32>| v.map_or("n/a".into(), |v| format!("{v} B"));
        write!(
            f,
            "{} frames, {:.0} B on average; {} patches, median {} ({} with versions and events); {} states, median {}, largest {}",
            self.frames,
            self.mean_frame_bytes,
            self.patches,
            b(self.median_patch_bytes),
            b(self.median_patch_message_bytes),
            self.states,
            b(self.median_state_bytes),
            b(self.max_state_bytes)
        )
    }
}

/// A latency distribution, in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl std::fmt::Display for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} samples)",
            self.p50_ms, self.p99_ms, self.max_ms, self.count
        )
    }
}

/// What went wrong, counted. `stale_version` is expected (bots or others moved first) and
/// counted apart; every other entry means a bug somewhere, and the report prints it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    /// `error` messages from the server by code, except `stale_version`.
    pub errors: BTreeMap<String, u64>,
    /// A few of those errors in full (code: message), to tell what happened.
    pub error_samples: Vec<String>,
    pub stale_version: u64,
    /// Server messages that did not decode as a `protocol::ServerMsg`.
    pub decode_failures: u64,
    /// Patches whose `from` was not the version held, or that did not apply (then `sync`).
    pub patch_mismatches: u64,
    /// Sockets that closed or failed while their match was still on.
    pub unexpected_closes: u64,
    /// Close frames from the server, by code (1013: the client fell behind, …).
    pub close_codes: BTreeMap<u16, u64>,
    /// Reconnections after such a close.
    pub reconnects: u64,
    /// Matches abandoned because nothing arrived for a long time.
    pub stalls: u64,
    /// Failed HTTP requests and WebSocket handshakes, by "what: why".
    pub http_errors: BTreeMap<String, u64>,
}

/// Error samples kept per tally: enough to see the pattern, bounded so a storm of the same
/// bug does not grow memory.
const KEEP_SAMPLES: usize = 10;

impl Tally {
    pub fn error(&mut self, code: &str, message: &str) {
        if code == "stale_version" {
            self.stale_version += 1;
            return;
        }
        *self.errors.entry(code.to_string()).or_default() += 1;
        self.keep(format!("{code}: {message}"));
    }

    /// Keeps a distinct sample, up to [`KEEP_SAMPLES`].
    fn keep(&mut self, sample: String) {
        if self.error_samples.len() < KEEP_SAMPLES && !self.error_samples.contains(&sample) {
            self.error_samples.push(sample);
        }
    }

    pub fn http(&mut self, what: &str) {
        *self.http_errors.entry(what.to_string()).or_default() += 1;
    }

    pub fn merge(&mut self, o: Tally) {
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for s in o.error_samples {
            self.keep(s);
        }
        self.stale_version += o.stale_version;
        self.decode_failures += o.decode_failures;
        self.patch_mismatches += o.patch_mismatches;
        self.unexpected_closes += o.unexpected_closes;
        for (k, v) in o.close_codes {
            *self.close_codes.entry(k).or_default() += v;
        }
        self.reconnects += o.reconnects;
        self.stalls += o.stalls;
        for (k, v) in o.http_errors {
            *self.http_errors.entry(k).or_default() += v;
        }
    }

    /// Whether anything other than `stale_version` happened.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
            && self.decode_failures == 0
            && self.patch_mismatches == 0
            && self.unexpected_closes == 0
            && self.stalls == 0
            && self.http_errors.is_empty()
    }
}

/// xorshift64*: small and fast, plenty for picking among a handful of legal moves. Not for
/// anything that must be unpredictable.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// Seeded from the clock and a per-player salt, so that players started in the same
    /// nanosecond still differ.
    pub fn from_clock(salt: u64) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        // splitmix64 of the mix, so nearby seeds give unrelated streams; never zero.
        let mut z = nanos ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (n > 0). The modulo bias is negligible for small `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The measurement window: samples count only for what was sent inside it.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: Instant,
    pub end: Instant,
}

impl Window {
    pub fn contains(&self, t: Instant) -> bool {
        t >= self.start && t <= self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut s = Samples::default();
        for ms in 1..=100 {
            s.push(Duration::from_millis(ms));
        }
        let l = s.summary().unwrap();
        assert_eq!(l.count, 100);
        assert_eq!(l.p50_ms, 50.0);
        assert_eq!(l.p99_ms, 99.0);
        assert_eq!(l.max_ms, 100.0);
        assert!(Samples::default().summary().is_none());
    }

    #[test]
    fn frame_sizes() {
        let mut f = Frames::default();
        assert!(f.summary().is_none());
        let patch = r#"{"type":"patch","from":1,"version":2,"ops":[{"op":"remove","path":"/view/hand/0"}],"events":[]}"#;
        f.record(patch);
        f.record(r#"{"type":"state","version":2}"#);
        f.record(r#"{"type":"pong"}"#);
        let s = f.summary().unwrap();
        assert_eq!(s.frames, 3);
        assert_eq!(s.patches, 1);
        assert_eq!(
            s.median_patch_bytes,
            Some(r#"[{"op":"remove","path":"/view/hand/0"}]"#.len() as u32)
        );
        assert_eq!(s.median_patch_message_bytes, Some(patch.len() as u32));
        assert_eq!(s.states, 1);
        // The compact form, without `events`: its ops run to the closing brace.
        let mut c = Frames::default();
        c.record(r#"{"type":"patch","version":2,"ops":[["hand/0"]]}"#);
        assert_eq!(c.summary().unwrap().median_patch_bytes, Some(12));
        let total = patch.len() + 28 + 15;
        assert!((s.mean_frame_bytes - total as f64 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn rng_stays_in_range_and_varies() {
        let mut r = Rng::from_clock(7);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            seen[r.below(5)] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn stale_version_is_not_a_bug() {
        let mut t = Tally::default();
        t.error("stale_version", "x");
        assert!(t.is_clean());
        t.error("not_your_turn", "y");
        t.error("not_your_turn", "y");
        assert!(!t.is_clean());
        assert_eq!(t.errors["not_your_turn"], 2);
        assert_eq!(t.error_samples, vec!["not_your_turn: y".to_string()]);
    }
}
