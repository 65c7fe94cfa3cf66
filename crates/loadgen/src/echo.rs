//! The baseline: a bare tokio-tungstenite echo server (`loadgen echo`), and the load that
//! measures it. It is the same stack as the game server's sockets (tokio, tungstenite,
//! TCP_NODELAY, the same buffer sizes) doing nothing but echo, so the server's actions per
//! second divided by the echo's messages per second says how much of the stack's
//! capacity the game itself leaves.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

use crate::conn::{self, Connector};
use crate::proc::{self, Spawned};
use crate::stats::{Latency, Samples, Tally, Window};

/// Runs the echo server on 127.0.0.1:`port` (0: any), printing the bound port on stdout.
/// Runs until killed.
pub async fn serve(port: u16) -> Result<(), String> {
    proc::raise_open_files();
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("bind 127.0.0.1:{port}: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    // The parent reads this first line to learn where to connect.
    println!("{port}");
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            // Out of file descriptors and the like: wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            let Ok(mut ws) =
                tokio_tungstenite::accept_async_with_config(tcp, Some(conn::echo_server_config()))
                    .await
            else {
                return;
            };
            while let Some(Ok(msg)) = ws.next().await {
                let reply = match msg {
                    Message::Text(_) | Message::Binary(_) => msg,
                    Message::Close(_) => break,
                    // Pings are answered by tungstenite itself.
                    _ => continue,
                };
                if ws.send(reply).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// The baseline's figures.
#[derive(Clone, Debug, Serialize)]
pub struct EchoReport {
    pub connections: usize,
    pub messages: u64,
    pub seconds: f64,
    pub msgs_per_sec: f64,
    pub rtt: Option<Latency>,
    /// Echo server CPU time per message, microseconds.
    pub cpu_us_per_msg: Option<f64>,
    /// The load generator's own CPU over the window, in cores (2.0 = both cores busy).
    pub client_cores: Option<f64>,
    /// CPU the rest of the machine used meanwhile, in cores (see `PlayReport`).
    pub others_cores: Option<f64>,
    pub failures: Tally,
}

/// A message of about the size of a game action (~200 bytes of JSON).
fn payload() -> String {
    let mut s = String::from(
        r#"{"type":"act","version":123456,"action":{"type":"play","card":{"suit":"hearts","rank":13}},"pad":""#,
    );
    while s.len() < 198 {
        s.push('x');
    }
    s.push_str("\"}");
    s
}

/// Spawns `exe echo --port 0`, runs `connections` clients flat out for `seconds`, stops it.
pub async fn run(exe: &Path, connections: usize, seconds: f64) -> Result<EchoReport, String> {
    let (child, first) = Spawned::start(
        exe,
        &["echo".into(), "--port".into(), "0".into()],
        &[],
        crate::proc::first_line,
    )?;
    let line = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .map_err(|_| "the echo server printed no port within 10 s".to_string())?
        .map_err(|_| "the echo server exited before printing its port".to_string())?;
    let port: u16 = line
        .trim()
        .parse()
        .map_err(|_| format!("the echo server printed {line:?}, not a port"))?;
    let result = measure(
        &format!("http://127.0.0.1:{port}"),
        child.pid,
        connections,
        seconds,
    )
    .await;
    child.stop(Duration::from_secs(2)).await;
    result
}

async fn measure(
    base: &str,
    pid: u32,
    connections: usize,
    seconds: f64,
) -> Result<EchoReport, String> {
    let connector = Arc::new(Connector::new(base).await?);
    let to = connector.addr();
    let ready = Arc::new(AtomicUsize::new(0));
    let (go_tx, go_rx) = tokio::sync::watch::channel(None::<Window>);
    let mut tasks = Vec::with_capacity(connections);
    // Bounded concurrent handshakes: a burst of thousands would overflow the listen backlog.
    let gate = Arc::new(tokio::sync::Semaphore::new(64));
    for _ in 0..connections {
        let (connector, ready, mut go, gate) = (
            connector.clone(),
            ready.clone(),
            go_rx.clone(),
            gate.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut samples = Samples::default();
            let mut count = 0u64;
            let permit = gate.acquire_owned().await;
            let ws = connector.ws(to, "/", None).await;
            drop(permit);
            ready.fetch_add(1, Relaxed);
            let mut ws = match ws {
                Ok(ws) => ws,
                Err(e) => {
                    tally.http(&format!("echo connect: {e}"));
                    return (samples, count, tally);
                }
            };
            let Ok(w) = go.wait_for(Option::is_some).await.map(|w| w.expect("some")) else {
                return (samples, count, tally);
            };
            let text = payload();
            let deadline = tokio::time::Instant::from_std(w.end);
            loop {
                let sent = Instant::now();
                if sent >= w.end {
                    break;
                }
                if ws.send(Message::text(text.clone())).await.is_err() {
                    tally.unexpected_closes += 1;
                    break;
                }
                match tokio::time::timeout_at(deadline + Duration::from_secs(1), ws.next()).await {
                    Ok(Some(Ok(Message::Text(_)))) => {
                        let now = Instant::now();
                        if now <= w.end {
                            samples.push(now - sent);
                            count += 1;
                        }
                    }
                    _ => {
                        tally.unexpected_closes += 1;
                        break;
                    }
                }
            }
            let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(None)).await;
            (samples, count, tally)
        }));
    }
    wait_ready(&ready, connections, Duration::from_secs(60)).await;
    let before = proc::sample(Some(pid));
    let me_before = proc::sample(None);
    let busy_before = proc::machine_busy();
    let start = Instant::now();
    let window = Window {
        start,
        end: start + Duration::from_secs_f64(seconds),
    };
    let _ = go_tx.send(Some(window));
    tokio::time::sleep_until(window.end.into()).await;
    let after = proc::sample(Some(pid));
    let me_after = proc::sample(None);
    let busy_after = proc::machine_busy();
    let mut samples = Samples::default();
    let mut messages = 0;
    let mut failures = Tally::default();
    for t in tasks {
        if let Ok(Ok((s, c, f))) = tokio::time::timeout(Duration::from_secs(10), t).await {
            samples.extend(s);
            messages += c;
            failures.merge(f);
        }
    }
    let cpu = match (before, after) {
        (Some(b), Some(a)) if messages > 0 => Some((a.cpu_s - b.cpu_s) * 1e6 / messages as f64),
        _ => None,
    };
    let client_cores = match (me_before, me_after) {
        (Some(b), Some(a)) => Some((a.cpu_s - b.cpu_s) / seconds),
        _ => None,
    };
    let others_cores = match (busy_before, busy_after, before, after, me_before, me_after) {
        (Some(b0), Some(b1), Some(s0), Some(s1), Some(m0), Some(m1)) => {
            let ours = (s1.cpu_s - s0.cpu_s) + (m1.cpu_s - m0.cpu_s);
            Some(((b1 - b0) - ours).max(0.0) / seconds)
        }
        _ => None,
    };
    Ok(EchoReport {
        others_cores,
        connections,
        messages,
        seconds,
        msgs_per_sec: messages as f64 / seconds,
        rtt: samples.summary(),
        cpu_us_per_msg: cpu,
        client_cores,
        failures,
    })
}

/// Waits until `n` tasks said they are ready, or `limit` passed.
pub async fn wait_ready(ready: &AtomicUsize, n: usize, limit: Duration) {
    let until = Instant::now() + limit;
    while ready.load(Relaxed) < n && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_is_json_of_about_200_bytes() {
        let p = payload();
        assert!((195..=205).contains(&p.len()), "{}", p.len());
        serde_json::from_str::<serde_json::Value>(&p).unwrap();
    }
}
