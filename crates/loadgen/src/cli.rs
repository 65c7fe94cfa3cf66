//! The load generator's command line (`loadgen echo`, `loadgen run`), as a library
//! function: the `loadgen` binary is this and its allocator, and the end-to-end suite
//! builds the same command line as a binary of its own (scripts such as
//! `scripts/idle-cluster.sh` run it as a separate process).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::{Mode, Options, Target};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "loadgen",
    version,
    about = "Load generator for the fibonacci-cards server"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// A bare tokio-tungstenite echo server on 127.0.0.1 (prints its port on stdout).
    Echo {
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// Measure the echo baseline and the server in one run.
    Run(Box<RunArgs>),
}

#[derive(clap::Args)]
struct RunArgs {
    #[arg(long, value_enum, default_value_t = Mode::Flat)]
    mode: Mode,
    #[arg(long, default_value = "trump")]
    game: String,
    #[arg(long, default_value_t = 2)]
    seats: usize,
    /// Tables of players (default: flat 64, think 500, bots 4 people against bots).
    #[arg(long)]
    tables: Option<usize>,
    /// The measurement window (idle: how long the sockets stay open).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Idle mode: sockets to open (at most what the open-files limit allows).
    #[arg(long, default_value_t = 10_000)]
    sockets: usize,
    /// Bots mode: bots-only tables of hard bots kept running.
    #[arg(long, default_value_t = 50)]
    bot_tables: usize,
    /// Think mode: milliseconds before each move (each drawn from ±20% of it).
    #[arg(long, default_value_t = 1000)]
    think_ms: u64,
    /// Flat and think modes: first have bots finish this many Trump matches and ask for
    /// their analyses, so that the server's analysis workers run beside the play.
    #[arg(long, default_value_t = 0)]
    analyses: usize,
    /// The server binary to spawn.
    #[arg(long, default_value = "target/release/fibonacci-cards")]
    server_bin: PathBuf,
    /// The spawned server's database (default: a fresh SQLite file in a temp directory).
    #[arg(long)]
    database_url: Option<String>,
    /// The spawned server's --bot-budget-ms (default: the server's own).
    #[arg(long)]
    bot_budget_ms: Option<u64>,
    /// Load a server already running here (loopback only) instead of spawning one.
    #[arg(long, conflicts_with_all = ["database_url", "bot_budget_ms"])]
    url: Option<String>,
    /// With --url: the server's process id, for its CPU and memory figures.
    #[arg(long, requires = "url")]
    server_pid: Option<u32>,
    /// Skip the echo baseline.
    #[arg(long)]
    no_echo: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Compare with another server build: each round runs --server-bin and every
    /// --against build once, in turns (reversed every other round), and the medians of
    /// each build's figures are printed, with each build against the first per round.
    #[arg(long, conflicts_with = "url")]
    against: Vec<PathBuf>,
    /// Runs of each build (with --against, or to repeat one build); their medians are
    /// printed after every run's headline.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
}

/// Parses the command line and runs it; the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // One multi-threaded runtime for every client (one worker per core).
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loadgen: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Cmd::Echo { port } => match rt.block_on(crate::echo::serve(port)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("loadgen echo: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::Run(a) => {
            let json = a.json;
            let rounds = a.rounds as usize;
            let mut builds = vec![a.server_bin.clone()];
            builds.extend(a.against.iter().cloned());
            // (`options` checks `--server-bin` itself, saying how to build it.)
            if let Some(missing) = a.against.iter().find(|b| !b.exists()) {
                eprintln!("loadgen run: {} does not exist", missing.display());
                return ExitCode::FAILURE;
            }
            let opts = match options(*a) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("loadgen run: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if builds.len() > 1 || rounds > 1 {
                print(
                    rt.block_on(crate::compare::compare(opts, builds, rounds)),
                    json,
                )
            } else {
                print(rt.block_on(crate::run(opts)), json)
            }
        }
    }
}

/// Prints what a run measured (as JSON with `json`), or why it failed.
fn print<T: serde::Serialize + std::fmt::Display>(
    measured: Result<T, String>,
    json: bool,
) -> ExitCode {
    match measured {
        Ok(m) if json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&m).expect("a report serializes")
            );
            ExitCode::SUCCESS
        }
        Ok(m) => {
            print!("{m}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen run: {e}");
            ExitCode::FAILURE
        }
    }
}

fn options(a: RunArgs) -> Result<Options, String> {
    let target = match a.url {
        Some(u) => Target::Url(u),
        None => {
            if !a.server_bin.exists() {
                return Err(format!(
                    "{} does not exist: build it with `cargo build --release -p server`, or pass --server-bin or --url",
                    a.server_bin.display()
                ));
            }
            Target::Spawn {
                bin: a.server_bin,
                database_url: a.database_url,
                bot_budget_ms: a.bot_budget_ms,
            }
        }
    };
    let mut o = Options::new(a.mode, target);
    o.game = a.game;
    o.seats = a.seats;
    if let Some(t) = a.tables {
        o.tables = t;
    }
    o.seconds = a.seconds;
    o.sockets = a.sockets;
    o.bot_tables = a.bot_tables;
    o.think = Duration::from_millis(a.think_ms);
    o.analyses = a.analyses;
    o.server_pid = a.server_pid;
    if !a.no_echo {
        o.echo = Some(std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?);
    }
    Ok(o)
}
