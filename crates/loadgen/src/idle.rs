//! `idle` mode: what an open, quiet socket costs the server. Tables are created first (so
//! their own memory is not counted), the server's VmRSS is read, N spectator sockets are
//! opened (at most [`PER_TABLE`] per table, as each connect is announced to the table's
//! other sockets), VmRSS is read again; then they all close and it is read a third time
//! to see whether the memory goes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::Message;

use crate::conn::Connector;
use crate::play::Guest;
use crate::proc;
use crate::stats::Tally;

/// Spectator sockets per table.
pub const PER_TABLE: usize = 8;

/// Sockets opened at once: enough to be quick, few enough not to overflow the listen
/// backlog or look like a flood.
const CONNECTING: usize = 64;

/// The figures of an idle run. Memory in KiB, per socket in bytes.
#[derive(Clone, Debug, Serialize)]
pub struct IdleReport {
    pub sockets_wanted: usize,
    pub sockets_open: usize,
    pub tables: usize,
    /// Server VmRSS with the tables but no sockets.
    pub rss_before_kib: u64,
    /// Server VmRSS with every socket open and quiet.
    pub rss_open_kib: u64,
    /// Server VmRSS 12 s after every socket closed (an allocator returns memory over
    /// seconds).
    pub rss_closed_kib: u64,
    /// (open − before) / sockets.
    pub server_bytes_per_socket: Option<f64>,
    /// What the same figure gives for 50,000 sockets: before + 50,000 × per socket.
    pub server_rss_at_50k_mib: Option<f64>,
    /// The same sockets opened and closed a second time: if this stays near the first
    /// round's figures, memory kept after closing is reused, not leaked.
    pub rss_reopen_kib: u64,
    pub rss_reclosed_kib: u64,
    /// The server's heap still allocated (`fib_heap_allocated_bytes`, KiB) before, with
    /// every socket open, and after closing: tells memory still in use from memory only
    /// not yet returned (absent when the server does not run on jemalloc).
    pub heap_before_kib: Option<f64>,
    pub heap_open_kib: Option<f64>,
    pub heap_closed_kib: Option<f64>,
    /// How much of the growth was given back after closing: (open − closed) / (open − before).
    pub returned_fraction: Option<f64>,
    /// The load generator's own VmRSS growth per socket, bytes.
    pub client_bytes_per_socket: Option<f64>,
    /// Server CPU while the sockets sat idle for the window, in cores.
    pub server_idle_cores: Option<f64>,
    /// Sockets the server counted (`fib_ws_connections`) with all open, and after closing.
    pub server_ws_open: Option<f64>,
    pub server_ws_closed: Option<f64>,
    pub seconds_to_open: f64,
    pub failures: Tally,
}

fn settle() -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_secs(2))
}

/// What one open → hold → close round saw.
struct Round {
    opened: usize,
    seconds_to_open: f64,
    open: proc::ProcSample,
    me_open: Option<proc::ProcSample>,
    closed: proc::ProcSample,
    idle_cores: Option<f64>,
    server_ws_open: Option<f64>,
    server_ws_closed: Option<f64>,
    heap_open_kib: Option<f64>,
    heap_closed_kib: Option<f64>,
}

/// The server's `fib_heap_allocated_bytes`, in KiB.
async fn heap_kib(conn: &Connector) -> Option<f64> {
    let m = conn.metrics().await.ok()?;
    m.value("fib_heap_allocated_bytes").map(|b| b / 1024.0)
}

/// Opens `sockets` spectator sockets over `tables`, holds them quiet for `hold` seconds,
/// closes them all and waits (bounded) for the server to count them gone.
async fn round(
    conn: &Arc<Connector>,
    pid: Option<u32>,
    tables: &[String],
    sockets: usize,
    hold: f64,
    failures: &mut Tally,
) -> Result<Round, String> {
    let opened = Arc::new(AtomicUsize::new(0));
    let done_connecting = Arc::new(AtomicUsize::new(0));
    let (close_tx, close_rx) = watch::channel(false);
    let gate = Arc::new(tokio::sync::Semaphore::new(CONNECTING));
    let t0 = Instant::now();
    let mut holders = Vec::with_capacity(sockets);
    for i in 0..sockets {
        let table = tables[(i / PER_TABLE) % tables.len()].clone();
        let (conn, opened, done, gate, mut close) = (
            conn.clone(),
            opened.clone(),
            done_connecting.clone(),
            gate.clone(),
            close_rx.clone(),
        );
        holders.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let permit = gate.acquire_owned().await;
            let ws = conn.table_ws(&table, None, None).await;
            drop(permit);
            done.fetch_add(1, Relaxed);
            let mut ws = match ws {
                Ok(ws) => ws,
                Err(e) => {
                    tally.http(&format!("spectator socket {e}"));
                    return tally;
                }
            };
            opened.fetch_add(1, Relaxed);
            // Keep reading (others' arrivals are announced) until told to close.
            loop {
                tokio::select! {
                    _ = close.wait_for(|c| *c) => break,
                    m = ws.next() => match m {
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                            tally.unexpected_closes += 1;
                            return tally;
                        }
                        Some(Ok(_)) => {}
                    }
                }
            }
            let _ = tokio::time::timeout(Duration::from_secs(5), ws.close(None)).await;
            // Read to the server's close reply so the socket ends cleanly on both sides.
            let _ = tokio::time::timeout(Duration::from_secs(5), async {
                while let Some(Ok(_)) = ws.next().await {}
            })
            .await;
            tally
        }));
    }
    crate::echo::wait_ready(&done_connecting, sockets, Duration::from_secs(300)).await;
    let seconds_to_open = t0.elapsed().as_secs_f64();
    settle().await;
    let server_ws = || async {
        conn.metrics()
            .await
            .ok()
            .and_then(|m| m.value("fib_ws_connections"))
    };
    let server_ws_open = server_ws().await;
    let idle_start = proc::sample(pid);
    tokio::time::sleep(Duration::from_secs_f64(hold)).await;
    let open = proc::sample(pid).ok_or("the server is gone")?;
    let me_open = proc::sample(None);
    let heap_open_kib = heap_kib(conn).await;

    let _ = close_tx.send(true);
    for h in holders {
        if let Ok(Ok(t)) = tokio::time::timeout(Duration::from_secs(30), h).await {
            failures.merge(t);
        }
    }
    let mut server_ws_closed = None;
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        server_ws_closed = server_ws().await;
        if server_ws_closed.is_some_and(|n| n <= 0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // An allocator that returns memory does so over seconds (jemalloc's decay spreads it
    // over 10 s): read after that.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let closed = proc::sample(pid).ok_or("the server is gone")?;
    let heap_closed_kib = heap_kib(conn).await;
    Ok(Round {
        heap_open_kib,
        heap_closed_kib,
        opened: opened.load(Relaxed),
        seconds_to_open,
        open,
        me_open,
        closed,
        idle_cores: idle_start
            .filter(|_| hold > 0.0)
            .map(|s| (open.cpu_s - s.cpu_s) / hold),
        server_ws_open,
        server_ws_closed,
    })
}

/// Opens `sockets` idle spectator sockets against the server at `conn` (process `pid`),
/// holds them for `seconds`, closes them, does it again
/// (without the hold), and reports the memory figures.
pub async fn run(
    conn: Arc<Connector>,
    pid: Option<u32>,
    creators: Vec<Guest>,
    game: &str,
    seats: usize,
    sockets: usize,
    seconds: f64,
) -> Result<IdleReport, String> {
    let mut failures = Tally::default();
    let tables_wanted = sockets.div_ceil(PER_TABLE);
    // Tables first, a few at a time.
    let made = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(tables_wanted)));
    let next = Arc::new(AtomicUsize::new(0));
    let mut makers = Vec::new();
    for g in creators.iter().cloned() {
        let (conn, made, next, game) = (conn.clone(), made.clone(), next.clone(), game.to_string());
        makers.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            while next.fetch_add(1, Relaxed) < tables_wanted {
                match conn.create_table(&g.token, &game, seats, None, true).await {
                    Ok(t) => made.lock().await.push(t.id.to_string()),
                    Err(e) => tally.http(&e.key()),
                }
            }
            tally
        }));
    }
    for m in makers {
        if let Ok(t) = m.await {
            failures.merge(t);
        }
    }
    let tables = std::mem::take(&mut *made.lock().await);
    if tables.is_empty() {
        return Err(format!(
            "no table could be created: {:?}",
            failures.http_errors
        ));
    }
    settle().await;
    let before = proc::sample(pid).ok_or("cannot read the server's /proc")?;
    let heap_before_kib = heap_kib(&conn).await;
    let me_before = proc::sample(None);
    let first = round(&conn, pid, &tables, sockets, seconds, &mut failures).await?;
    // A second round on the same tables: if the memory kept after the first close is
    // reused (the allocator holding freed pages) rather than leaked, RSS barely grows.
    let second = round(&conn, pid, &tables, sockets, 0.0, &mut failures).await?;

    let open_n = first.opened;
    let grown = first.open.rss_kib as f64 - before.rss_kib as f64;
    let per = (open_n > 0).then(|| grown * 1024.0 / open_n as f64);
    Ok(IdleReport {
        sockets_wanted: sockets,
        sockets_open: open_n,
        tables: tables.len(),
        rss_before_kib: before.rss_kib,
        rss_open_kib: first.open.rss_kib,
        rss_closed_kib: first.closed.rss_kib,
        rss_reopen_kib: second.open.rss_kib,
        rss_reclosed_kib: second.closed.rss_kib,
        heap_before_kib,
        heap_open_kib: first.heap_open_kib,
        heap_closed_kib: first.heap_closed_kib,
        server_bytes_per_socket: per,
        server_rss_at_50k_mib: per
            .map(|p| (before.rss_kib as f64 * 1024.0 + p * 50_000.0) / 1048576.0),
        returned_fraction: (grown > 0.0)
            .then(|| (first.open.rss_kib as f64 - first.closed.rss_kib as f64) / grown + 0.0),
        client_bytes_per_socket: match (me_before, first.me_open) {
            (Some(b), Some(a)) if open_n > 0 => {
                Some((a.rss_kib as f64 - b.rss_kib as f64) * 1024.0 / open_n as f64)
            }
            _ => None,
        },
        server_idle_cores: first.idle_cores,
        server_ws_open: first.server_ws_open,
        server_ws_closed: first.server_ws_closed,
        seconds_to_open: first.seconds_to_open,
        failures,
    })
}
