//! A load generator that speaks only the public protocol (the `protocol` crate's wire
//! types over HTTP and WebSocket), so it sees the server exactly as a browser or any other
//! client does. It depends on no server, games, bots or store crate.
//!
//! [`run`] measures one [`Mode`] against a server it spawns (the release binary on a fresh
//! SQLite file, or the database given) or one already running ([`Target::Url`], which is how
//! the end-to-end suite runs a short smoke in-process). Next to it, in the same run, it
//! measures a bare tokio-tungstenite echo server (the `echo` subcommand of this binary, as
//! a child process) with as many connections as the game has player sockets: the same
//! stack doing the least possible work, the ceiling the server's figures are compared to.
//!
//! [`compare::compare`] runs the same load several times against one or more server builds,
//! alternating them, and prints the medians.
//!
//! The modules: [`analyses`] (match analyses kept running beside the play), [`compare`] (rounds of runs and their medians), [`conn`] (HTTP API, sockets from many loopback addresses, the state
//! document), [`play`] (players and bots-only tables), [`idle`] (memory per quiet socket),
//! [`echo`] (the baseline), [`proc`] (child processes, `/proc` figures), [`stats`]
//! (percentiles, error tallies, the move RNG).

pub mod analyses;
pub mod cli;
pub mod compare;
pub mod conn;
pub mod echo;
pub mod idle;
pub mod play;
pub mod proc;
pub mod stats;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;

use crate::conn::{Connector, Metrics};
use crate::echo::EchoReport;
use crate::idle::IdleReport;
use crate::play::{Ctx, Guest, Played};
use crate::proc::{LogWatch, Spawned};
use crate::stats::{Latency, Tally, Window};

/// What kind of load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every player moves as soon as it may: the server's throughput.
    Flat,
    /// Every player waits about a second before each move: latency at a realistic pace.
    Think,
    /// Open sockets that say nothing: memory per socket, and whether it comes back.
    Idle,
    /// Bots-only tables of hard bots, plus a few people each against hard bots: how long a
    /// person waits for a bot while the bots keep the cores busy.
    Bots,
}

/// Which server to load.
#[derive(Clone, Debug)]
pub enum Target {
    /// A server already running at this `http://` loopback URL.
    Url(String),
    /// Start the server binary as a child process, on `database_url` (default: a fresh
    /// SQLite file in a temporary directory, removed afterwards).
    Spawn {
        bin: PathBuf,
        database_url: Option<String>,
        /// `--bot-budget-ms` (the server's default when `None`).
        bot_budget_ms: Option<u64>,
    },
}

/// A run's settings. [`Options::new`] gives each mode's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    pub mode: Mode,
    pub game: String,
    pub seats: usize,
    /// Tables of players (in `bots` mode: tables with one person against bots).
    pub tables: usize,
    /// Length of the measurement window (in `idle` mode: how long the sockets stay open).
    pub seconds: f64,
    /// `idle` mode: sockets to open.
    pub sockets: usize,
    /// `bots` mode: bots-only tables kept running.
    pub bot_tables: usize,
    /// `think` mode: the pause before each move (each drawn from ±20% of it).
    pub think: Duration,
    /// Match analyses asked for before the window (`flat`, `think`), which the server's
    /// analysis workers run beside the play.
    pub analyses: usize,
    pub target: Target,
    /// The binary whose `echo` subcommand runs the baseline (this one, from the command
    /// line); `None` skips the baseline.
    pub echo: Option<PathBuf>,
    /// The server's process id, for CPU and memory figures when it runs elsewhere
    /// ([`Target::Url`]); a spawned server's is known.
    pub server_pid: Option<u32>,
}

impl Options {
    /// `mode`'s defaults against `target`: trump for two, 10 s; 64 tables flat, 500 tables
    /// thinking, 4 people against bots next to 50 bots-only tables; 10,000 idle sockets.
    pub fn new(mode: Mode, target: Target) -> Options {
        Options {
            mode,
            game: "trump".into(),
            seats: 2,
            tables: match mode {
                Mode::Flat => 64,
                Mode::Think => 500,
                Mode::Bots => 4,
                Mode::Idle => 0,
            },
            seconds: 10.0,
            sockets: 10_000,
            bot_tables: 50,
            think: Duration::from_secs(1),
            analyses: 0,
            target,
            echo: None,
            server_pid: None,
        }
    }

    /// A short flat run against a server already running at `url` (for the e2e suite).
    pub fn smoke(url: &str) -> Options {
        Options {
            tables: 2,
            seconds: 1.0,
            ..Options::new(Mode::Flat, Target::Url(url.into()))
        }
    }
}

/// Figures of the players' side of a run (`flat`, `think`, `bots`).
#[derive(Clone, Debug, Serialize)]
pub struct PlayReport {
    /// Player sockets (one per human seat).
    pub players: usize,
    pub bot_tables: usize,
    /// Actions the server accepted in the window (`fib_actions_accepted_total`; bots'
    /// moves included).
    pub server_actions: Option<u64>,
    pub actions_per_sec: Option<f64>,
    /// Our own moves acknowledged in the window.
    pub our_moves: u64,
    pub our_moves_per_sec: f64,
    /// Server actions per second / echo messages per second.
    pub ratio_to_echo: Option<f64>,
    /// My act → my socket gets the version it made.
    pub move_rtt: Option<Latency>,
    /// My act → another seat's socket gets that version.
    pub opponent_sees: Option<Latency>,
    /// (think) A move sent after its think time was up → how late (the load generator's
    /// own stalls).
    pub send_late: Option<Latency>,
    /// (bots) My move's acknowledgement → the bot's move.
    pub bot_wait: Option<Latency>,
    /// Sizes of the frames the players' sockets received in the window.
    pub frames: Option<stats::FrameSizes>,
    /// The server's own view (`/metrics` over the window): mean received → acknowledged
    /// time of an accepted action, ms.
    pub server_ack_mean_ms: Option<f64>,
    /// The server's p99 of the same time, as the upper bound of its histogram's bucket
    /// (ms): what of a move's p99 the server's table, writer and store account for, the
    /// rest being sockets, the kernel and the load generator.
    pub server_ack_p99_ms: Option<f64>,
    /// The p99 of a group commit's time (its histogram's bucket, ms): what of the above
    /// the durable write alone accounts for.
    pub commit_p99_ms: Option<f64>,
    /// Two stages of the server's p99 (its histograms' buckets, ms): an action from its
    /// socket to its table's task taking it up (queues and the runtime), and a table's
    /// durable write as the table waits for it (the writer's queue, the commit, the way
    /// back). Where a tail that the commits do not explain comes from.
    pub queue_p99_ms: Option<f64>,
    pub table_write_p99_ms: Option<f64>,
    /// The first part of the write's: its wait in the writer's queue (behind the commit
    /// in progress), p99 and mean (ms).
    pub write_queue_p99_ms: Option<f64>,
    pub write_queue_mean_ms: Option<f64>,
    /// Durable group commits per second, their mean duration (ms) and mean size (table
    /// units per commit): where the time of a move goes when the CPU is not busy.
    pub commits_per_sec: Option<f64>,
    pub commit_mean_ms: Option<f64>,
    pub units_per_commit: Option<f64>,
    /// Server CPU time per accepted action, microseconds.
    pub server_cpu_us_per_action: Option<f64>,
    /// Server CPU over the window, in cores.
    pub server_cores: Option<f64>,
    pub server_rss_kib: Option<u64>,
    pub server_rss_peak_kib: Option<u64>,
    /// The load generator's own CPU over the window, in cores.
    pub client_cores: Option<f64>,
    /// CPU the rest of the machine used over the window (neither the server nor us), in
    /// cores: above a few tenths, other work shared the cores and the figures are low.
    pub others_cores: Option<f64>,
    pub tables_started: u64,
    pub matches_finished: u64,
    pub bot_tables_started: u64,
    pub bot_matches_finished: u64,
    /// The analyses beside the play (`--analyses`).
    pub analyses: Option<analyses::AnalysisLoad>,
    pub failures: Tally,
}

/// What the server said about itself: refusals and closes from `/metrics` over the run,
/// and the warnings, errors and panics in its log (when spawned).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerSide {
    /// `fib_actions_rejected_total` by code, growth over the run.
    pub rejected: Vec<(String, f64)>,
    /// `fib_ws_closed_total` by reason, growth over the run.
    pub closed: Vec<(String, f64)>,
    pub store_write_failures: Option<f64>,
    pub log_warnings: u64,
    pub log_errors: u64,
    pub log_panics: u64,
    pub log_lines: Vec<String>,
    /// Set if the spawned server exited before we stopped it.
    pub exited_early: Option<String>,
    /// How the spawned server stopped on SIGTERM.
    pub stop: Option<String>,
}

/// Everything a run measured. Latencies in ms, memory in KiB unless named otherwise.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub mode: Mode,
    pub game: String,
    pub seats: usize,
    pub tables: usize,
    pub seconds: f64,
    /// The server URL, and the database when we spawned it (password hidden).
    pub server: String,
    pub database: Option<String>,
    pub open_files_limit: u64,
    pub echo: Option<EchoReport>,
    pub play: Option<PlayReport>,
    pub idle: Option<IdleReport>,
    pub server_side: ServerSide,
    /// Anything that looks like a bug (errors other than `stale_version`, undecodable
    /// messages, server warnings, …), one line each. Empty on a clean run.
    pub problems: Vec<String>,
}

/// A server to load: where, which process, and the child if we started it.
struct Server {
    base: String,
    pid: Option<u32>,
    child: Option<Spawned>,
    database: Option<String>,
    scratch: Option<PathBuf>,
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((cred, host)) => match cred.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

async fn start_server(opts: &Options) -> Result<Server, String> {
    let (bin, database_url, budget) = match &opts.target {
        Target::Url(u) => {
            return Ok(Server {
                base: u.trim_end_matches('/').to_string(),
                pid: opts.server_pid,
                child: None,
                database: None,
                scratch: None,
            });
        }
        Target::Spawn {
            bin,
            database_url,
            bot_budget_ms,
        } => (bin, database_url, bot_budget_ms),
    };
    let (db, scratch) = match database_url {
        Some(u) => (u.clone(), None),
        None => {
            let dir = std::env::temp_dir().join(format!("loadgen-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            (format!("sqlite://{}/x.db", dir.display()), Some(dir))
        }
    };
    // Port 0, and the address read from the server's own log: a port picked here and
    // freed again could be taken by another process before the server binds it, and the
    // health check below would then reach that process.
    let mut args: Vec<String> = vec![
        "--port".into(),
        "0".into(),
        "--database-url".into(),
        db.clone(),
        // Bots move at once: a delay would only be measured as our latency.
        "--bot-delay-ms".into(),
        "0".into(),
        // The players send as fast as the server answers; the per-socket rate limit must
        // not be what is measured.
        "--ws-messages-per-second".into(),
        "100000".into(),
    ];
    // Every simulated player comes from this one address: the abuse limits (per address)
    // would measure themselves.
    for limit in [
        "--guests-per-minute",
        "--tables-per-minute",
        "--joins-per-minute",
        "--sockets-per-address",
        "--sockets-per-minute",
        "--open-tables-per-player",
    ] {
        args.extend([limit.into(), "0".into()]);
    }
    if let Some(b) = budget {
        args.extend(["--bot-budget-ms".into(), b.to_string()]);
    }
    // Plain log lines (no colour codes) for the watch on warnings and errors.
    // Its address is read from its log: at `info`, as text, whatever this shell sets.
    let env = [
        ("NO_COLOR", "1"),
        ("RUST_LOG", "info"),
        ("FIB_LOG_FORMAT", "text"),
        // A limit newer than some builds compared here (`--server-bin`): set by its
        // variable, which an older build ignores, where an unknown flag would stop it.
        ("FIB_CONNECTIONS_PER_ADDRESS", "0"),
        ("FIB_ANALYSIS_PENDING_PER_ADDRESS", "0"),
    ];
    let (mut child, listening) = Spawned::start(bin, &args, &env, proc::listening_address)?;
    let until = Instant::now() + Duration::from_secs(60);
    let exited = |child: &mut Spawned| {
        child.exited().map(|status| {
            let log = child.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
            format!(
                "the server exited before it was healthy ({status}): {}",
                log.lines.join(" | ")
            )
        })
    };
    let address = match tokio::time::timeout_at(until.into(), listening).await {
        Ok(Ok(address)) => address,
        Ok(Err(_)) => {
            // Its output ended: it exited, or is about to.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let why = exited(&mut child).unwrap_or_else(|| "the server closed its output".into());
            child.stop(Duration::from_secs(5)).await;
            return Err(why);
        }
        Err(_) => {
            child.stop(Duration::from_secs(5)).await;
            return Err("the server did not listen within 60 s".into());
        }
    };
    let base = format!("http://{address}");
    let http = reqwest::Client::new();
    loop {
        if let Some(why) = exited(&mut child) {
            return Err(why);
        }
        if let Ok(r) = http.get(format!("{base}/healthz")).send().await
            && r.status().is_success()
        {
            break;
        }
        if Instant::now() >= until {
            child.stop(Duration::from_secs(5)).await;
            return Err("the server was not healthy within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Server {
        base,
        pid: Some(child.pid),
        child: Some(child),
        database: Some(hide_password(&db)),
        scratch,
    })
}

/// Runs `opts` and reports. Needs a multi-threaded tokio runtime (all players share it).
pub async fn run(opts: Options) -> Result<Report, String> {
    if opts.seats == 0 || opts.seats > 64 {
        return Err("--seats must be 1 to 64".into());
    }
    if !(opts.seconds > 0.0 && opts.seconds <= 3600.0) {
        return Err("--seconds must be within (0, 3600]".into());
    }
    let open_files = proc::raise_open_files();
    let players = match opts.mode {
        Mode::Flat | Mode::Think => opts.tables * opts.seats,
        Mode::Bots => opts.tables,
        Mode::Idle => 0,
    };
    // Our sockets, the server's (when it runs here too, under the same limit) and some
    // slack for files, HTTP connections and the echo phase's leftovers.
    if players + 200 > open_files as usize {
        return Err(format!(
            "{players} player sockets need more open files than the limit of {open_files}"
        ));
    }
    let echo = match (&opts.echo, opts.mode) {
        (Some(exe), Mode::Flat | Mode::Think) if players > 0 => {
            Some(echo::run(exe, players, opts.seconds).await?)
        }
        _ => None,
    };
    let mut server = start_server(&opts).await?;
    let result = drive(&opts, &server, players, open_files).await;
    let mut side = ServerSide::default();
    if let Some(mut child) = server.child.take() {
        side.exited_early = child.exited();
        let log = child.log.clone();
        side.stop = Some(child.stop(Duration::from_secs(10)).await);
        let log: LogWatch = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        side.log_warnings = log.warnings;
        side.log_errors = log.errors;
        side.log_panics = log.panics;
        side.log_lines = log.lines;
    }
    if let Some(dir) = server.scratch.take() {
        let _ = std::fs::remove_dir_all(dir);
    }
    let (play, idle, metrics) = result?;
    if let Some((before, after)) = metrics {
        side.rejected = growth(&before, &after, "fib_actions_rejected_total");
        side.closed = growth(&before, &after, "fib_ws_closed_total");
        side.store_write_failures = after.value("fib_store_write_failures_total");
    }
    let mut report = Report {
        mode: opts.mode,
        game: opts.game.clone(),
        seats: opts.seats,
        tables: opts.tables,
        seconds: opts.seconds,
        server: server.base.clone(),
        database: server.database.clone(),
        open_files_limit: open_files,
        echo,
        play,
        idle,
        server_side: side,
        problems: Vec::new(),
    };
    if let (Some(p), Some(e)) = (report.play.as_mut(), report.echo.as_ref())
        && e.msgs_per_sec > 0.0
    {
        p.ratio_to_echo = p.actions_per_sec.map(|a| a / e.msgs_per_sec);
    }
    report.problems = problems(&report);
    Ok(report)
}

/// Growth of every sample of a labelled family between two scrapes (new labels count from 0).
fn growth(before: &Metrics, after: &Metrics, name: &str) -> Vec<(String, f64)> {
    let b = before.labelled(name);
    after
        .labelled(name)
        .into_iter()
        .map(|(l, v)| {
            let was = b.iter().find(|(k, _)| *k == l).map_or(0.0, |(_, v)| *v);
            (l, v - was)
        })
        .filter(|(_, d)| *d > 0.0)
        .collect()
}

type Driven = (
    Option<PlayReport>,
    Option<IdleReport>,
    Option<(Metrics, Metrics)>,
);

async fn drive(
    opts: &Options,
    server: &Server,
    players: usize,
    open_files: u64,
) -> Result<Driven, String> {
    let conn = Arc::new(Connector::new(&server.base).await?);
    check_game(&conn, &opts.game, opts.seats).await?;
    let before = conn.metrics().await.ok();
    match opts.mode {
        Mode::Idle => {
            // Our sockets must fit our own limit, with slack for the HTTP side.
            let n = opts.sockets.min(open_files.saturating_sub(300) as usize);
            let creators = guests(&conn, 8).await?;
            let r = idle::run(
                conn.clone(),
                server.pid,
                creators,
                &opts.game,
                opts.seats,
                n,
                opts.seconds,
            )
            .await?;
            let after = conn.metrics().await.ok();
            Ok((None, Some(r), before.zip(after)))
        }
        _ => {
            let r = play(opts, server, conn.clone(), players).await?;
            let after = conn.metrics().await.ok();
            Ok((Some(r), None, before.zip(after)))
        }
    }
}

/// Checks that the server offers `game` for `seats` players.
async fn check_game(conn: &Connector, game: &str, seats: usize) -> Result<(), String> {
    let list: Vec<serde_json::Value> = conn
        .get("GET /api/games", "/api/games")
        .await
        .map_err(|e| e.to_string())?;
    let g = list
        .iter()
        .find(|g| g["kind"] == game)
        .ok_or_else(|| format!("the server has no game {game:?}"))?;
    let (lo, hi) = (g["min_players"].as_u64(), g["max_players"].as_u64());
    if let (Some(lo), Some(hi)) = (lo, hi)
        && !(lo..=hi).contains(&(seats as u64))
    {
        return Err(format!("{game} is for {lo} to {hi} players, not {seats}"));
    }
    Ok(())
}

/// `n` guest players, a few created at a time.
async fn guests(conn: &Arc<Connector>, n: usize) -> Result<Vec<Guest>, String> {
    let made: Vec<_> = futures_util::stream::iter(0..n)
        .map(|i| {
            let conn = conn.clone();
            async move { conn.guest(&format!("lg{i}")).await }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    made.into_iter()
        .map(|r| {
            r.map(|g| Guest { token: g.token })
                .map_err(|e| e.to_string())
        })
        .collect()
}

async fn play(
    opts: &Options,
    server: &Server,
    conn: Arc<Connector>,
    players: usize,
) -> Result<PlayReport, String> {
    let vs_bots = opts.mode == Mode::Bots;
    let per_group = if vs_bots { 1 } else { opts.seats };
    let bot_tables = if vs_bots { opts.bot_tables } else { 0 };
    let jobs = if opts.analyses > 0 && !vs_bots {
        Some(analyses::prepare(&conn, opts.analyses).await?)
    } else {
        None
    };
    let mut all = guests(&conn, players + bot_tables).await?;
    // Think mode: the tables start at random moments over one think time, or over as long
    // as starting them at most 500 a second takes (5,000 tables: 10 s), so that neither
    // their moves nor their starts come in one burst (see `play::group`).
    let start_spread = opts
        .think
        .max(Duration::from_secs_f64(opts.tables as f64 / 500.0));
    let ctx = Arc::new(Ctx {
        conn: conn.clone(),
        game: opts.game.clone(),
        seats: opts.seats,
        think: (opts.mode == Mode::Think).then_some(opts.think),
        start_spread: (opts.mode == Mode::Think).then_some(start_spread),
        vs_bots,
    });
    let ready = Arc::new(AtomicUsize::new(0));
    let (go_tx, go_rx) = tokio::sync::watch::channel(None::<Window>);
    let mut groups = Vec::new();
    for i in 0..opts.tables {
        let g: Vec<Guest> = all.drain(..per_group).collect();
        groups.push(tokio::spawn(play::group(
            ctx.clone(),
            g,
            i as u64,
            ready.clone(),
            go_rx.clone(),
        )));
    }
    let mut runners = Vec::new();
    for g in all.drain(..bot_tables) {
        runners.push(tokio::spawn(play::bot_tables(
            ctx.clone(),
            g,
            ready.clone(),
            go_rx.clone(),
        )));
    }
    echo::wait_ready(
        &ready,
        groups.len() + runners.len(),
        Duration::from_secs(120),
    )
    .await;

    // Think mode: the window opens once every table plays (a quarter of a think time after
    // the last start), so that it measures the steady pace, not the ramp.
    let ramp = match opts.mode {
        Mode::Think => start_spread + opts.think / 4,
        _ => Duration::ZERO,
    };
    let start = Instant::now() + ramp;
    let window = Window {
        start,
        end: start + Duration::from_secs_f64(opts.seconds),
    };
    let _ = go_tx.send(Some(window));
    tokio::time::sleep_until(start.into()).await;
    let a0 = match &jobs {
        Some(j) => j.read(&conn).await,
        None => Vec::new(),
    };
    let m0 = conn.metrics().await.ok();
    let s0 = proc::sample(server.pid);
    let me0 = proc::sample(None);
    let busy0 = proc::machine_busy();
    tokio::time::sleep_until(window.end.into()).await;
    let m1 = conn.metrics().await.ok();
    let s1 = proc::sample(server.pid);
    let me1 = proc::sample(None);
    let busy1 = proc::machine_busy();
    let analyses = match &jobs {
        Some(j) => Some(j.summary(&a0, &j.read(&conn).await)),
        None => None,
    };

    let mut played = Played::default();
    let mut bots = Played::default();
    // The players stop at the window's end; a stuck one is not waited for long.
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    for g in groups {
        match tokio::time::timeout_at(until, g).await {
            Ok(Ok(p)) => played.merge(p),
            _ => played
                .tally
                .error("loadgen_task_failed", "a group did not finish in time"),
        }
    }
    for r in runners {
        match tokio::time::timeout_at(until, r).await {
            Ok(Ok(p)) => bots.merge(p),
            _ => bots
                .tally
                .error("loadgen_task_failed", "a bot runner did not finish in time"),
        }
    }
    played.tally.merge(bots.tally);
    let secs = opts.seconds;
    let actions = match (&m0, &m1) {
        (Some(a), Some(b)) => a
            .value("fib_actions_accepted_total")
            .zip(b.value("fib_actions_accepted_total"))
            .map(|(x, y)| (y - x).max(0.0) as u64),
        _ => None,
    };
    let cpu = s0.zip(s1).map(|(a, b)| b.cpu_s - a.cpu_s);
    let delta = |name: &str| match (&m0, &m1) {
        (Some(a), Some(b)) => a.value(name).zip(b.value(name)).map(|(x, y)| y - x),
        _ => None,
    };
    // A histogram's p99 over the window, as its bucket's upper bound (ms).
    let p99 = |family: &str| match (&m0, &m1) {
        (Some(a), Some(b)) => bucket_quantile(a, b, family, 0.99),
        _ => None,
    };
    let mean = |family: &str, scale: f64| {
        let n = delta(&format!("{family}_count")).filter(|n| *n > 0.0)?;
        Some(delta(&format!("{family}_sum"))? * scale / n)
    };
    Ok(PlayReport {
        players,
        bot_tables,
        server_actions: actions,
        actions_per_sec: actions.map(|a| a as f64 / secs),
        our_moves: played.moves,
        our_moves_per_sec: played.moves as f64 / secs,
        ratio_to_echo: None,
        move_rtt: played.move_rtt.summary(),
        opponent_sees: played.opponent_sees.summary(),
        send_late: played.send_late.summary(),
        bot_wait: played.bot_wait.summary(),
        frames: played.frames.summary(),
        server_ack_mean_ms: mean("fib_action_seconds", 1e3),
        server_ack_p99_ms: p99("fib_action_seconds"),
        commit_p99_ms: p99("fib_commit_seconds"),
        queue_p99_ms: p99("fib_action_queue_seconds"),
        table_write_p99_ms: p99("fib_table_write_seconds"),
        write_queue_p99_ms: p99("fib_write_queue_seconds"),
        write_queue_mean_ms: mean("fib_write_queue_seconds", 1e3),
        commits_per_sec: delta("fib_commit_seconds_count").map(|n| n / secs),
        commit_mean_ms: mean("fib_commit_seconds", 1e3),
        units_per_commit: mean("fib_commit_group_units", 1.0),
        server_cpu_us_per_action: cpu
            .zip(actions)
            .filter(|(_, a)| *a > 0)
            .map(|(c, a)| c * 1e6 / a as f64),
        server_cores: cpu.map(|c| c / secs),
        server_rss_kib: s1.map(|s| s.rss_kib),
        server_rss_peak_kib: s1.map(|s| s.hwm_kib),
        client_cores: me0.zip(me1).map(|(a, b)| (b.cpu_s - a.cpu_s) / secs),
        others_cores: match (busy0, busy1, s0, s1, me0, me1) {
            (Some(b0), Some(b1), Some(s0), Some(s1), Some(m0), Some(m1)) => {
                let ours = (s1.cpu_s - s0.cpu_s) + (m1.cpu_s - m0.cpu_s);
                Some(((b1 - b0) - ours).max(0.0) / secs)
            }
            _ => None,
        },
        tables_started: played.tables_started,
        matches_finished: played.matches_finished,
        bot_tables_started: bots.tables_started,
        bot_matches_finished: bots.matches_finished,
        analyses,
        failures: played.tally,
    })
}

/// One line per thing that looks wrong.
fn problems(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let mut tally = |who: &str, t: &Tally| {
        for (code, n) in &t.errors {
            out.push(format!("{who}: {n} × error {code}"));
        }
        for s in &t.error_samples {
            out.push(format!("{who}: e.g. {s}"));
        }
        if t.decode_failures > 0 {
            out.push(format!("{who}: {} undecodable messages", t.decode_failures));
        }
        if t.patch_mismatches > 0 {
            out.push(format!(
                "{who}: {} patches did not apply (resynced)",
                t.patch_mismatches
            ));
        }
        if t.unexpected_closes > 0 {
            out.push(format!(
                "{who}: {} sockets lost mid-match (close codes {:?}, {} reconnects)",
                t.unexpected_closes, t.close_codes, t.reconnects
            ));
        }
        if t.stalls > 0 {
            out.push(format!(
                "{who}: {} matches stalled (nothing heard for long)",
                t.stalls
            ));
        }
        for (what, n) in &t.http_errors {
            out.push(format!("{who}: {n} × {what}"));
        }
    };
    if let Some(e) = &r.echo {
        tally("echo", &e.failures);
    }
    if let Some(p) = &r.play {
        tally("players", &p.failures);
    }
    if let Some(i) = &r.idle {
        tally("idle", &i.failures);
        if i.sockets_open < i.sockets_wanted {
            out.push(format!(
                "idle: only {} of {} sockets opened",
                i.sockets_open, i.sockets_wanted
            ));
        }
    }
    if let Some(a) = r
        .play
        .as_ref()
        .and_then(|p| p.analyses.as_ref())
        .filter(|a| a.busy_at_end == 0)
    {
        out.push(format!(
            "analyses: all {} were over before the window ended: ask for more",
            a.jobs
        ));
    }
    let s = &r.server_side;
    for (code, n) in &s.rejected {
        if !code.contains("stale_version") {
            out.push(format!("server refused {n} × {code}"));
        }
    }
    if let Some(f) = s.store_write_failures.filter(|f| *f > 0.0) {
        out.push(format!("server: {f} store write failures"));
    }
    if s.log_warnings + s.log_errors + s.log_panics > 0 {
        out.push(format!(
            "server log: {} warnings, {} errors, {} panics",
            s.log_warnings, s.log_errors, s.log_panics
        ));
    }
    if let Some(e) = &s.exited_early {
        out.push(format!("server exited during the run: {e}"));
    }
    out
}

/// The upper bound (ms) of the first bucket of histogram `family` holding the `q` quantile
/// of what it counted between the snapshots `a` and `b`.
fn bucket_quantile(a: &Metrics, b: &Metrics, family: &str, q: f64) -> Option<f64> {
    let name = format!("{family}_bucket");
    let before: std::collections::HashMap<String, f64> = a.labelled(&name).into_iter().collect();
    let mut buckets: Vec<(f64, f64)> = b
        .labelled(&name)
        .into_iter()
        .filter_map(|(labels, n)| {
            let le = labels.strip_prefix("le=\"")?.strip_suffix('"')?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, n - before.get(&labels).copied().unwrap_or(0.0)))
        })
        .collect();
    buckets.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let (le, _) = buckets.into_iter().find(|(_, n)| *n >= q * total)?;
    Some(le * 1e3)
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = |v: Option<f64>, unit: &str| match v {
            Some(v) => format!("{v:.1}{unit}"),
            None => "n/a".to_string(),
        };
        let lat = |l: &Option<Latency>| match l {
            Some(l) => l.to_string(),
            None => "no samples".to_string(),
        };
        writeln!(
            f,
            "loadgen {:?}: {} for {}, {} {}, {} s against {}{}",
            self.mode,
            self.game,
            self.seats,
            self.idle.as_ref().map_or(self.tables, |i| i.sockets_wanted),
            if self.idle.is_some() {
                "sockets"
            } else {
                "tables"
            },
            self.seconds,
            self.server,
            self.database
                .as_ref()
                .map(|d| format!(" on {d}"))
                .unwrap_or_default()
        )?;
        if let Some(e) = &self.echo {
            writeln!(
                f,
                "echo baseline:       {:.0} msg/s over {} connections; rtt {}; echo CPU {} /msg; client {} cores; other processes {} cores",
                e.msgs_per_sec,
                e.connections,
                lat(&e.rtt),
                opt(e.cpu_us_per_msg, " µs"),
                opt(e.client_cores, ""),
                opt(e.others_cores, "")
            )?;
        }
        if let Some(p) = &self.play {
            writeln!(
                f,
                "server actions:      {} /s accepted ({} in the window; ours {:.0}/s){}",
                opt(p.actions_per_sec, ""),
                p.server_actions.map_or("n/a".into(), |a| a.to_string()),
                p.our_moves_per_sec,
                p.ratio_to_echo
                    .map(|r| format!("; {:.1}% of the echo's msg/s", r * 100.0))
                    .unwrap_or_default()
            )?;
            writeln!(f, "move round trip:     {}", lat(&p.move_rtt))?;
            writeln!(
                f,
                "server's view:       ack {} mean, p99 ≤ {}; {} commits/s of {} ms (p99 ≤ {}) and {} units on average",
                opt(p.server_ack_mean_ms.map(|m| m * 1000.0), " µs"),
                p.server_ack_p99_ms
                    .map_or("n/a".into(), |m| format!("{m} ms")),
                opt(p.commits_per_sec, ""),
                p.commit_mean_ms.map_or("n/a".into(), |m| format!("{m:.2}")),
                p.commit_p99_ms.map_or("n/a".into(), |m| format!("{m} ms")),
                opt(p.units_per_commit, "")
            )?;
            writeln!(
                f,
                "server's stages:     p99 ≤ {} from socket to table, p99 ≤ {} a table's write \
                 (in the writer's queue: {} ms mean, p99 ≤ {})",
                p.queue_p99_ms.map_or("n/a".into(), |m| format!("{m} ms")),
                p.table_write_p99_ms
                    .map_or("n/a".into(), |m| format!("{m} ms")),
                p.write_queue_mean_ms
                    .map_or("n/a".into(), |m| format!("{m:.2}")),
                p.write_queue_p99_ms
                    .map_or("n/a".into(), |m| format!("{m} ms")),
            )?;
            if self.mode != Mode::Bots {
                writeln!(f, "opponent sees move:  {}", lat(&p.opponent_sees))?;
                if p.send_late.is_some() {
                    writeln!(f, "sent late by:        {}", lat(&p.send_late))?;
                }
            }
            if let Some(frames) = &p.frames {
                writeln!(f, "frames received:     {frames}")?;
            }
            if let Some(a) = &p.analyses {
                writeln!(
                    f,
                    "analyses beside:     {} asked; running {} at the start, {} at the end ({} waiting or running); {} decisions analysed in the window; {} done",
                    a.jobs,
                    a.running_at_start,
                    a.running_at_end,
                    a.busy_at_end,
                    a.decisions_in_window,
                    a.done_at_end
                )?;
            }
            if self.mode == Mode::Bots {
                writeln!(f, "waiting for a bot:   {}", lat(&p.bot_wait))?;
                writeln!(
                    f,
                    "bots-only tables:    {} kept running, {} started, {} finished",
                    p.bot_tables, p.bot_tables_started, p.bot_matches_finished
                )?;
            }
            writeln!(
                f,
                "server CPU:          {} per action, {} cores; RSS {} (peak {}); client {} cores ({} per action); other processes {} cores",
                opt(p.server_cpu_us_per_action, " µs"),
                opt(p.server_cores, ""),
                opt(p.server_rss_kib.map(|k| k as f64 / 1024.0), " MiB"),
                opt(p.server_rss_peak_kib.map(|k| k as f64 / 1024.0), " MiB"),
                opt(p.client_cores, ""),
                // The load generator's own weight on the cores it shares with the server.
                opt(
                    p.client_cores
                        .zip(p.actions_per_sec.filter(|a| *a > 0.0))
                        .map(|(c, a)| c / a * 1e6),
                    " µs"
                ),
                opt(p.others_cores, "")
            )?;
            writeln!(
                f,
                "matches:             {} started, {} finished; {} stale_version (expected)",
                p.tables_started, p.matches_finished, p.failures.stale_version
            )?;
        }
        if let Some(i) = &self.idle {
            writeln!(
                f,
                "idle sockets:        {} open of {} over {} tables (opened in {:.1} s; server counted {}, and {} after closing)",
                i.sockets_open,
                i.sockets_wanted,
                i.tables,
                i.seconds_to_open,
                i.server_ws_open.map_or("n/a".into(), |n| format!("{n:.0}")),
                i.server_ws_closed
                    .map_or("n/a".into(), |n| format!("{n:.0}")),
            )?;
            writeln!(
                f,
                "server RSS:          {:.1} MiB before, {:.1} MiB open, {:.1} MiB after closing ({} returned); again: {:.1} MiB open, {:.1} MiB closed",
                i.rss_before_kib as f64 / 1024.0,
                i.rss_open_kib as f64 / 1024.0,
                i.rss_closed_kib as f64 / 1024.0,
                opt(i.returned_fraction.map(|r| r * 100.0), "%"),
                i.rss_reopen_kib as f64 / 1024.0,
                i.rss_reclosed_kib as f64 / 1024.0,
            )?;
            if let (Some(b), Some(o), Some(c)) =
                (i.heap_before_kib, i.heap_open_kib, i.heap_closed_kib)
            {
                writeln!(
                    f,
                    "server heap:         {:.1} MiB allocated before, {:.1} MiB open, {:.1} MiB after closing (the rest of RSS: pages the allocator has not returned)",
                    b / 1024.0,
                    o / 1024.0,
                    c / 1024.0,
                )?;
            }
            writeln!(
                f,
                "per idle socket:     {} on the server (client {}); at 50k sockets ≈ {} (extrapolated); idle CPU {} cores",
                opt(i.server_bytes_per_socket.map(|b| b / 1024.0), " KiB"),
                opt(i.client_bytes_per_socket.map(|b| b / 1024.0), " KiB"),
                opt(i.server_rss_at_50k_mib, " MiB"),
                opt(i.server_idle_cores.map(|c| c * 100.0), "%")
            )?;
        }
        if let Some(stop) = &self.server_side.stop {
            writeln!(f, "server stopped:      {stop}")?;
        }
        if self.problems.is_empty() {
            writeln!(f, "problems:            none")?;
        } else {
            writeln!(f, "problems:")?;
            for p in &self.problems {
                writeln!(f, "  - {p}")?;
            }
            for l in &self.server_side.log_lines {
                writeln!(f, "  | {l}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(
            hide_password("postgres://fib:fib@127.0.0.1:55432/fib"),
            "postgres://fib:***@127.0.0.1:55432/fib"
        );
        assert_eq!(hide_password("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }

    #[test]
    fn growth_counts_new_labels_from_zero() {
        let a = Metrics("m{code=\"a\"} 1\n".into());
        let b = Metrics("m{code=\"a\"} 3\nm{code=\"b\"} 2\n".into());
        assert_eq!(
            growth(&a, &b, "m"),
            vec![("code=\"a\"".into(), 2.0), ("code=\"b\"".into(), 2.0)]
        );
    }
}
