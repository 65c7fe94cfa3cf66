//! Child processes (the echo baseline and the server) and what `/proc` says about a
//! process: CPU time and resident memory.
//!
//! Both sides of the comparison run as separate processes so that `/proc/PID` measures
//! each alone, and neither shares a runtime or an allocator with the load it is under.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// CPU time and memory of one process, read from `/proc/PID/stat` and `/proc/PID/status`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcSample {
    /// utime + stime, in seconds.
    pub cpu_s: f64,
    /// VmRSS, KiB.
    pub rss_kib: u64,
    /// VmHWM (peak RSS), KiB.
    pub hwm_kib: u64,
}

/// Clock ticks per second of `/proc/PID/stat`'s times. `sysconf` would need `unsafe` (the
/// workspace forbids it), so ask `getconf` once; it is 100 on every Linux we know.
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// `pid` as `/proc` names it; `None` means this process (`self`).
fn proc_dir(pid: Option<u32>) -> String {
    match pid {
        Some(p) => format!("/proc/{p}"),
        None => "/proc/self".to_string(),
    }
}

/// Reads the process's CPU time and memory; `None` if it is gone (or not Linux).
pub fn sample(pid: Option<u32>) -> Option<ProcSample> {
    let dir = proc_dir(pid);
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    // Then field 3 (state) is index 0, so utime (14) is 11 and stime (15) is 12.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(ProcSample {
        cpu_s: (utime + stime) / clock_ticks(),
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
    })
}

/// CPU time the whole machine spent busy (everything but idle and iowait), in seconds,
/// from `/proc/stat`: set against our processes' own time over a window, it tells how much
/// other work (a build, someone's tests) shared the cores with the measurement.
pub fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: f64 = v
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, x)| x)
        .sum();
    Some(busy / clock_ticks())
}

/// Raises this process's soft limit of open files to the hard limit (children inherit
/// it), and returns the limit now in force.
pub fn raise_open_files() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => n,
        Err(_) => rlimit::Resource::NOFILE
            .get()
            .map(|(soft, _)| soft)
            .unwrap_or(1024),
    }
}

/// Lines of a child's output worth reporting: warnings, errors, panics. The first few are
/// kept word for word, the rest only counted.
#[derive(Clone, Debug, Default)]
pub struct LogWatch {
    pub lines: Vec<String>,
    pub warnings: u64,
    pub errors: u64,
    pub panics: u64,
}

const KEEP_LINES: usize = 20;

impl LogWatch {
    fn see(&mut self, line: &str) {
        let panic = line.contains("panicked");
        let error = line.contains("ERROR");
        let warn = line.contains("WARN");
        if !(panic || error || warn) {
            return;
        }
        if panic {
            self.panics += 1;
        } else if error {
            self.errors += 1;
        } else {
            self.warnings += 1;
        }
        if self.lines.len() < KEEP_LINES {
            // Log lines carry colour codes when the child thinks it has a terminal; it
            // does not here, but cut very long lines anyway.
            self.lines.push(line.chars().take(400).collect());
        }
    }
}

/// A child process whose output is drained (so it never blocks on a full pipe) and watched.
pub struct Spawned {
    pub child: Child,
    pub pid: u32,
    pub log: Arc<Mutex<LogWatch>>,
}

impl Spawned {
    /// Starts `bin args…`; what `ready` finds first in a stdout line goes to the returned
    /// receiver (the echo server prints its port on its first line, the server logs its
    /// address: [`first_line`], [`listening_address`]); every line is watched for
    /// warnings and panics.
    pub fn start(
        bin: &Path,
        args: &[String],
        env: &[(&str, &str)],
        ready: fn(&str) -> Option<String>,
    ) -> Result<(Spawned, tokio::sync::oneshot::Receiver<String>), String> {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let pid = child.id().ok_or("the child exited at once")?;
        let log = Arc::new(Mutex::new(LogWatch::default()));
        let (first_tx, first_rx) = tokio::sync::oneshot::channel();
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let l = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            let mut first = Some(first_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if first.is_some()
                    && let Some(found) = ready(&line)
                    && let Some(tx) = first.take()
                {
                    let _ = tx.send(found);
                }
                l.lock().unwrap_or_else(|p| p.into_inner()).see(&line);
            }
        });
        let l = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                l.lock().unwrap_or_else(|p| p.into_inner()).see(&line);
            }
        });
        Ok((Spawned { child, pid, log }, first_rx))
    }

    /// `Some(status)` if the child has already exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(s)) => Some(s.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot tell: {e}")),
        }
    }

    /// SIGTERM (a graceful stop: the server closes its sockets and its database), then
    /// SIGKILL if it has not exited within `grace`. Returns the exit status.
    pub async fn stop(mut self, grace: Duration) -> String {
        if let Some(s) = self.exited() {
            return format!("had already exited: {s}");
        }
        // No `unsafe` for kill(2): the `kill` command does the same.
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .await;
        let until = Instant::now() + grace;
        match tokio::time::timeout_at(until.into(), self.child.wait()).await {
            Ok(Ok(s)) => s.to_string(),
            Ok(Err(e)) => format!("wait failed: {e}"),
            Err(_) => {
                let _ = self.child.kill().await;
                format!("did not stop within {grace:?} of SIGTERM; killed")
            }
        }
    }
}

/// For [`Spawned::start`]: the first line as it is.
pub fn first_line(line: &str) -> Option<String> {
    Some(line.trim().to_string())
}

/// For [`Spawned::start`]: the address in the server's `listening on http://ADDR` line.
pub fn listening_address(line: &str) -> Option<String> {
    const SAYS: &str = "listening on http://";
    let at = line.find(SAYS)? + SAYS.len();
    let address = line[at..]
        .split(|c: char| c.is_whitespace() || c == '"')
        .next()
        .filter(|a| !a.is_empty())?;
    Some(address.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_address_the_server_listens_on() {
        let plain =
            "2026-11-26T05:55:22.875413Z  INFO server::cli: listening on http://127.0.0.1:38222";
        assert_eq!(listening_address(plain).as_deref(), Some("127.0.0.1:38222"));
        let coloured =
            "\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m listening on http://[::1]:80 ";
        assert_eq!(listening_address(coloured).as_deref(), Some("[::1]:80"));
        assert_eq!(listening_address("INFO server: store ready"), None);
        let json = r#"{"fields":{"message":"listening on http://127.0.0.1:9"},"target":"x"}"#;
        assert_eq!(listening_address(json).as_deref(), Some("127.0.0.1:9"));
        assert_eq!(first_line(" 4242\n").as_deref(), Some("4242"));
    }

    #[test]
    fn reads_its_own_process() {
        let s = sample(None).expect("/proc/self");
        assert!(s.rss_kib > 0);
        assert!(s.hwm_kib >= s.rss_kib);
        assert!(s.cpu_s >= 0.0);
        assert!(machine_busy().expect("/proc/stat") > 0.0);
    }

    #[test]
    fn log_watch_counts_and_keeps() {
        let mut w = LogWatch::default();
        w.see("2026 INFO listening");
        w.see("2026 WARN slow");
        w.see("2026 ERROR broke");
        w.see("thread 'x' panicked at src/a.rs");
        assert_eq!((w.warnings, w.errors, w.panics), (1, 1, 1));
        assert_eq!(w.lines.len(), 3);
    }
}
