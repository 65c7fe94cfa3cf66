//! The command line: runs the server (default) or recomputes a deal from a revealed seed.
//! Lives in the library so the end-to-end suite can build the same binary and SIGKILL it.

use crate::config::{Cli, Command, LogFormat};
use clap::Parser;
use game_core::{Phase, Seed};

/// The whole program: parses arguments, sets up logging, runs.
pub fn main() -> std::process::ExitCode {
    match tokio::runtime::Runtime::new() {
        Ok(rt) => rt.block_on(run()),
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap names the flag even when the bad value came from its environment
            // variable, which an operator who never typed that flag cannot find.
            let note = from_environment(&e, &std::env::args_os().collect::<Vec<_>>());
            let _ = e.print();
            if let Some(note) = note {
                eprintln!("{note}");
            }
            return std::process::ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    const DEFAULT_FILTER: &str = "info,tower_http=warn,sqlx=warn";
    // A `RUST_LOG` that does not parse is said (below, once logging is up), not ignored. One
    // that names targets only (`server=debug`, or a typo such as `nonsense`, which reads as
    // a target) would turn every other log off, errors included: the rest then logs at the
    // default levels, and that is said too.
    let (filter, bad_filter, widened) = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => {
            let wanted = if sets_a_level(&v) {
                v.clone()
            } else {
                format!("{DEFAULT_FILTER},{v}")
            };
            match tracing_subscriber::EnvFilter::try_new(&wanted) {
                Ok(f) => (f, None, (wanted != v).then_some(v)),
                Err(e) => (DEFAULT_FILTER.into(), Some((v, e)), None),
            }
        }
        _ => (DEFAULT_FILTER.into(), None, None),
    };
    // Structured logs on stdout: one JSON object per line for log collectors, or readable
    // text, coloured only on a terminal (not in a file or a collector's pipe).
    match cli.config.log_format {
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init(),
        LogFormat::Text => {
            use std::io::IsTerminal as _;
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            tracing_subscriber::fmt()
                .with_ansi(colour)
                .with_env_filter(filter)
                .init()
        }
    }
    if cli.config.log_format == LogFormat::Json {
        log_panics();
    }
    if let Some((v, e)) = bad_filter {
        tracing::warn!(rust_log = %v, error = %e, "RUST_LOG does not parse: logging at the default levels ({DEFAULT_FILTER})");
    }
    if let Some(v) = widened {
        tracing::warn!(rust_log = %v, "RUST_LOG names targets but no level for the rest: the rest logs at the default levels ({DEFAULT_FILTER})");
    }
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(cli.config).await,
        Command::VerifyDeal {
            game,
            players,
            seed,
            options,
        } => verify(&game, players, &seed, &options),
        Command::VerifyMatch { replay } => verify_match(&replay),
    }
}

/// Panics become log records: with JSON logs, Rust's own panic message (several lines of
/// text on stderr) is not read by a collector that expects one object per line, and a
/// table task's panic (caught and recovered, but a bug) went unseen there. The record
/// carries the message, where it happened, the thread and, when `RUST_BACKTRACE` asks for
/// one, the backtrace. Text logs keep Rust's own message.
fn log_panics() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with no message".to_string());
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            tracing::error!(target: "panic", %location, thread, %backtrace, "panicked: {message}");
        } else {
            tracing::error!(target: "panic", %location, thread, "panicked: {message}");
        }
    }));
}

/// For an argument error whose value came from the environment (the flag not given), a
/// line that names the variable.
fn from_environment(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::CommandFactory as _;
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    // `--bot-delay-ms <BOT_DELAY_MS>`
    let long = arg.split_whitespace().next()?.strip_prefix("--")?;
    let cmd = Cli::command();
    let env = cmd
        .get_arguments()
        .find(|a| a.get_long() == Some(long))?
        .get_env()?
        .to_str()?
        .to_string();
    let flag = format!("--{long}");
    let given = args.iter().any(|a| {
        a.to_str()
            .is_some_and(|a| a == flag || a.starts_with(&format!("{flag}=")))
    });
    (!given && std::env::var_os(&env).is_some())
        .then(|| format!("note: that value comes from the environment variable {env} (the flag {flag} was not given)"))
}

/// Whether a `RUST_LOG` value sets a level for every target: a directive that is a level
/// alone (`info`, `warn`, …), not `target=level` nor a bare target.
fn sets_a_level(v: &str) -> bool {
    v.split(',').any(|d| {
        matches!(
            d.trim().to_ascii_lowercase().as_str(),
            "trace" | "debug" | "info" | "warn" | "error" | "off"
        )
    })
}

/// `url` as it may be logged: a Postgres password left out (in the user part or a
/// `password=` parameter).
fn shown_url(url: &str) -> String {
    if let Some((base, query)) = url.split_once('?')
        && query.contains("password=")
    {
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        return format!("{}?{}", shown_url(base), query.join("&"));
    }
    match url.split_once("://") {
        Some((scheme, rest)) if scheme.starts_with("postgres") => match rest.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split_once(':').map_or(user, |(u, _)| u);
                format!("{scheme}://{user}:***@{host}")
            }
            None => url.to_string(),
        },
        _ => url.to_string(),
    }
}

/// A SQLite file is one node's (docs/operations.md): a second server on the same file
/// would take the first one's tables in turn, and nobody could play. Advisory locks
/// (`flock`, which SQLite's own `fcntl` locks do not touch) on `FILE.lock` beside it, as
/// builds before this one took, and on the database file itself, held while the server
/// runs, refuse the second at start: deleting a "stale" `FILE.lock` (a walk did) no longer
/// lets one in. Empty for Postgres and an in-memory database, and where the file system
/// cannot lock (said in a warning).
fn lock_sqlite_file(url: &str) -> Result<Vec<std::fs::File>, String> {
    // The file as the store opens it.
    let Some(path) = store::sqlite_file(url) else {
        return Ok(Vec::new());
    };
    let path = path.as_path();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the folder {}: {e}", dir.display()))?;
    }
    let mut held = Vec::new();
    // An empty database file is a new database to SQLite: creating it here changes nothing.
    for lock_path in [
        format!("{}.lock", path.display()),
        path.display().to_string(),
    ] {
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("cannot open {lock_path}: {e}"))?;
        match file.try_lock() {
            Ok(()) => held.push(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(format!(
                    "another server is running on {}: a SQLite database serves one process \
                     (stop that one first; several nodes need Postgres, \
                     docs/operations.md)",
                    path.display()
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::warn!(error = %e, lock = %lock_path, "cannot lock the SQLite file: a second server on it would not be refused");
            }
        }
    }
    Ok(held)
}

async fn serve(config: crate::Config) -> std::process::ExitCode {
    let addr = format!("{}:{}", config.bind, config.port);
    // Memory freed when sockets close goes back to the OS even while the server idles: a
    // background thread purges what jemalloc holds unused (a no-op under another
    // allocator, which tests use).
    match tikv_jemalloc_ctl::background_thread::write(true) {
        Ok(()) => tracing::debug!("jemalloc background purging on"),
        Err(e) => tracing::debug!(error = %e, "not running on jemalloc"),
    }
    // Every socket is a file: the usual soft limit (1024) would refuse players long before
    // memory or CPU run out. Raised to the hard limit, which only root can lift.
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(n) => tracing::info!(open_files = n, "open files limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open files limit"),
    }
    if let Some(path) = &config.tournaments_file
        && let Err(e) = crate::tournaments::read_schedule(path)
    {
        tracing::error!(error = %e, "cannot use the tournaments file");
        return std::process::ExitCode::FAILURE;
    }
    // The address first: a port in use is said before the database is opened and migrated.
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, %addr, "cannot listen");
            return std::process::ExitCode::FAILURE;
        }
    };
    let database = shown_url(&config.database_url);
    // Held for the process's life (the OS lets go of it when the process ends, however).
    let _one_node = match lock_sqlite_file(&config.database_url) {
        Ok(lock) => lock,
        Err(e) => {
            tracing::error!(error = %e, %database, "cannot use the database");
            return std::process::ExitCode::FAILURE;
        }
    };
    let state = match crate::build(config).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, %database, "cannot open the database");
            return std::process::ExitCode::FAILURE;
        }
    };
    // Which file or server: a SQLite path that does not exist is created empty, and an
    // operator who sees no history should be able to tell which one was opened.
    tracing::info!(%database, "database opened");
    if database.contains(":memory:") || database.contains("mode=memory") {
        tracing::warn!(
            %database,
            "an in-memory database: every account, match and rating is lost when this \
             process stops"
        );
    }
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
    tracing::info!("listening on http://{local}");
    let store = state.store.clone();
    let served = crate::serve(listener, state, shutdown_signal()).await;
    // The tables are handed over and the sockets closed: nothing writes any more. Bounded,
    // as closing waits for every connection in use: a stuck one must not keep the process.
    if tokio::time::timeout(std::time::Duration::from_secs(10), store.close())
        .await
        .is_err()
    {
        tracing::warn!("the database did not close within 10 s");
    }
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "server failed");
            std::process::ExitCode::FAILURE
        }
    }
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Prints the deal of a first round dealt from `seed`, as JSON. Later rounds depend on
/// the match so far: use `GET /api/tables/{id}/rounds/{n}/deal` for those.
fn verify(game: &str, players: usize, seed: &str, options: &str) -> std::process::ExitCode {
    let fail = |m: String| {
        eprintln!("verify-deal: {m}");
        std::process::ExitCode::FAILURE
    };
    let Some(seed) = Seed::from_hex(seed) else {
        return fail("the seed must be 64 hex digits".into());
    };
    let options: serde_json::Value = match serde_json::from_str(options) {
        Ok(o) => o,
        Err(e) => return fail(format!("--options is not JSON: {e}")),
    };
    let (mut g, _) = match games::new_match(game, &options, players) {
        Ok(g) => g,
        Err(e) => return fail(e.to_string()),
    };
    debug_assert_eq!(g.phase(), Phase::AwaitingRound);
    if let Err(e) = g.start_round(&seed) {
        return fail(e.to_string());
    }
    let out = serde_json::json!({
        "game": game,
        "players": players,
        "seed_sha256": seed.commitment(),
        "deal": g.deal_record(),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&out).expect("serializes")
    );
    std::process::ExitCode::SUCCESS
}

/// Replays a finished match from its revealed seeds and moves alone, with the rules, and
/// checks each round's commitment and deal record and the final result against what the
/// server published. Prints one line of JSON per round and a summary; fails on any
/// difference.
fn verify_match(path: &str) -> std::process::ExitCode {
    use std::io::Read;
    let fail = |m: String| {
        eprintln!("verify-match: {m}");
        std::process::ExitCode::FAILURE
    };
    let mut text = String::new();
    let read = if path == "-" {
        std::io::stdin().read_to_string(&mut text).map(drop)
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    if let Err(e) = read {
        return fail(format!("cannot read {path}: {e}"));
    }
    let replay: protocol::Replay = match serde_json::from_str(&text) {
        Ok(r) => r,
        Err(e) => return fail(format!("not a replay document: {e}")),
    };
    match crate::replay::check_match(&replay) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `RUST_LOG` without a level for every target (a walk's typo `nonsense` turned every
    /// log off) gets the default levels for the rest.
    #[test]
    fn a_rust_log_of_targets_only_keeps_the_default_levels() {
        assert!(sets_a_level("info"));
        assert!(sets_a_level("server=debug, WARN"));
        assert!(sets_a_level("off"));
        assert!(!sets_a_level("nonsense"));
        assert!(!sets_a_level("server=debug,sqlx=info"));
        assert!(!sets_a_level("information"));
    }

    #[test]
    fn a_database_url_is_logged_without_its_password() {
        assert_eq!(
            shown_url("postgres://fib:secret@db:5432/fib"),
            "postgres://fib:***@db:5432/fib"
        );
        assert_eq!(
            shown_url("postgresql://db/fib?user=fib&password=secret&sslmode=require"),
            "postgresql://db/fib?user=fib&password=***&sslmode=require"
        );
        assert_eq!(shown_url("sqlite://data/fib.db"), "sqlite://data/fib.db");
    }
}
