//! Command-line and environment configuration (clap). Every setting has a default, so the
//! server starts with no configuration at all: `127.0.0.1:8080`, SQLite under `./data/`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;

use clap::{Parser, Subcommand};

#[derive(Clone, Debug, Parser)]
#[command(
    name = "fibonacci-cards",
    version,
    about = "The fibonacci-cards game server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub config: Config,
}

#[derive(Clone, Debug, Subcommand)]
pub enum Command {
    /// Run the server (the default).
    Serve,
    /// Recompute a round's deal from its seed, as the server would deal it.
    VerifyDeal {
        /// Game kind, e.g. `trump`.
        #[arg(long)]
        game: String,
        /// Number of players at the table.
        #[arg(long)]
        players: usize,
        /// The revealed seed, 64 hex characters.
        #[arg(long)]
        seed: String,
        /// The table's options as JSON (default: the game's defaults).
        #[arg(long, default_value = "null")]
        options: String,
    },
    /// Check every round of a finished match against its revealed seeds: each seed's
    /// SHA-256 is the commitment published at the round's start, and the deal recomputed
    /// from the seed and the moves before it is the deal the server recorded; the final
    /// scores follow. Reads the JSON of `GET /api/tables/{id}/replay`.
    VerifyMatch {
        /// The replay JSON file, or `-` for standard input.
        #[arg(long)]
        replay: String,
    },
}

#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "FIB_BIND", default_value = "127.0.0.1")]
    pub bind: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "FIB_PORT", default_value_t = 8080)]
    pub port: u16,
    /// Database URL: `sqlite://PATH` (created if missing) or `postgres://…`.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://data/fibonacci.db"
    )]
    pub database_url: String,
    /// Extra origins allowed to open WebSockets, comma-separated (e.g.
    /// `https://cards.example.org`). The server's own origin (the request's Host) is always
    /// allowed.
    #[arg(long, env = "FIB_ALLOWED_ORIGINS", value_delimiter = ',', value_parser = origin_arg)]
    pub allowed_origins: Vec<String>,
    /// Directory of the browser client.
    #[arg(long, env = "FIB_WEB_DIR", default_value_os_t = default_web_dir())]
    pub web_dir: PathBuf,
    /// Milliseconds a bot waits before moving while people are watching, so they can follow.
    #[arg(long, env = "FIB_BOT_DELAY_MS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub bot_delay_ms: u64,
    /// Milliseconds a hard bot may think about one move (its search stops at this budget;
    /// more is stronger and costs more CPU; the pool runs one bot per core at a time).
    #[arg(long, env = "FIB_BOT_BUDGET_MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub bot_budget_ms: u64,
    /// Messages one table WebSocket may send per second (bursts of twice that), not
    /// counting accepted moves the game waited for; beyond, each is refused with
    /// `rate_limited`.
    #[arg(long, env = "FIB_WS_MESSAGES_PER_SECOND", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    pub ws_messages_per_second: u32,
    /// The same allowance for the sockets of bot accounts (programs, docs/protocol.md
    /// §2.26): accepted moves never count, as for anyone, and other messages may come this
    /// fast (bursts of twice that); a flood beyond it is refused like anyone's.
    #[arg(long, env = "FIB_BOT_WS_MESSAGES_PER_SECOND", default_value_t = 120, value_parser = clap::value_parser!(u32).range(1..))]
    pub bot_ws_messages_per_second: u32,
    /// Seconds a lobby challenge waits for an answer before it expires.
    #[arg(long, env = "FIB_CHALLENGE_EXPIRY_S", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub challenge_expiry_s: u64,
    /// Seconds a seated player of a live or untimed match may stay disconnected before a
    /// bot of the table's level plays for them (until they reconnect). Correspondence
    /// matches have no grace: their clocks decide.
    #[arg(long, env = "FIB_DISCONNECT_GRACE_S", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=315_360_000))]
    pub disconnect_grace_s: u64,
    /// Seconds a live or untimed match may go on with none of its people connected before
    /// it ends as abandoned (a match of bots only: with nobody watching it).
    #[arg(long, env = "FIB_ABANDON_AFTER_S", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=315_360_000))]
    pub abandon_after_s: u64,
    /// Seconds a game of one (Solitaire, a daily deal) waits for its player before it ends
    /// as abandoned. Each such game is held in memory meanwhile (about 80 KB): lower it on
    /// a server short of memory.
    #[arg(long, env = "FIB_SOLO_ABANDON_AFTER_S", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..=315_360_000))]
    pub solo_abandon_after_s: u64,
    /// Seconds an open table may wait for players (since it was created or last had a
    /// seat change) before it expires.
    #[arg(long, env = "FIB_OPEN_TABLE_TTL_S", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=315_360_000))]
    pub open_table_ttl_s: u64,
    /// New guests one client address may create a minute (bursts of as many); 0: no limit.
    #[arg(long, env = "FIB_GUESTS_PER_MINUTE", default_value_t = 10)]
    pub guests_per_minute: u32,
    /// Sign-in attempts one client address may make a minute (bursts of as many), right
    /// or wrong; 0: no limit.
    #[arg(long, env = "FIB_SIGNINS_PER_MINUTE", default_value_t = 20)]
    pub signins_per_minute: u32,
    /// Sign-in attempts to one account, from anywhere, right or wrong: at most this many
    /// in a row, then one more a minute (so a password cannot be guessed from many
    /// addresses); 0: no limit.
    #[arg(long, env = "FIB_SIGNINS_PER_ACCOUNT", default_value_t = 10)]
    pub signins_per_account: u32,
    /// Seconds a quick-play player waits for people before bots take the empty seats.
    #[arg(long, env = "FIB_BOT_FILL_S", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=315_360_000))]
    pub bot_fill_s: u64,
    /// Tables (daily games and tournaments included) one client address may create a minute;
    /// 0: no limit.
    #[arg(long, env = "FIB_TABLES_PER_MINUTE", default_value_t = 20)]
    pub tables_per_minute: u32,
    /// Seat requests (joins) one client address may make a minute; 0: no limit.
    #[arg(long, env = "FIB_JOINS_PER_MINUTE", default_value_t = 60)]
    pub joins_per_minute: u32,
    /// TCP connections one client address may hold open at once, whatever they carry (a
    /// connection still sending its request counts too); more are closed as they are
    /// accepted. Trusted proxies are not limited. 0: no limit.
    #[arg(long, env = "FIB_CONNECTIONS_PER_ADDRESS", default_value_t = 256)]
    pub connections_per_address: u32,
    /// WebSockets (table and lobby) one client address may hold open; 0: no limit.
    #[arg(long, env = "FIB_SOCKETS_PER_ADDRESS", default_value_t = 64)]
    pub sockets_per_address: u32,
    /// WebSockets (table and lobby) one client address may open a minute (bursts of as
    /// many); 0: no limit.
    #[arg(long, env = "FIB_SOCKETS_PER_MINUTE", default_value_t = 120)]
    pub sockets_per_minute: u32,
    /// Tables the lobby shows each visitor at most: the first of the public tables, open
    /// ones first, newest first (of one game when the visitor picks one). The lobby's
    /// messages and the page stay small however many tables are listed; `total` says how
    /// many there are.
    #[arg(long, env = "FIB_LOBBY_SHOWN", default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub lobby_shown: usize,
    /// Open tables (not started yet) one player may have created at once; 0: no limit.
    #[arg(long, env = "FIB_OPEN_TABLES_PER_PLAYER", default_value_t = 5)]
    pub open_tables_per_player: u32,
    /// Reverse proxies whose `X-Forwarded-For` is believed, comma-separated addresses or
    /// networks (e.g. `127.0.0.1`, `10.0.0.0/8`). Default: none, every peer is the client.
    #[arg(long, env = "FIB_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<Proxies>,
    /// Analysis workers (docs/analysis.md): jobs analysed at once by this node. Default: one
    /// per core but one (at least one); they run at the idle scheduling class, below play.
    /// 0: this node analyses nothing (another node may).
    #[arg(long, env = "FIB_ANALYSIS_WORKERS", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=256))]
    pub analysis_workers: Option<usize>,
    /// Analyses waiting or running at once, over every player; more are refused
    /// (`analysis_queue_full`) until some are done.
    #[arg(long, env = "FIB_ANALYSIS_QUEUE", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub analysis_queue: u32,
    /// Analyses one player may have waiting or running at once.
    #[arg(long, env = "FIB_ANALYSIS_PENDING_PER_PLAYER", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub analysis_pending_per_player: u32,
    /// Analyses asked from one client address that may be waiting or running at once,
    /// whoever asked: guests cost nothing to make, and without this one address could
    /// fill the whole queue with them. Trusted proxies' clients count by their own
    /// address. 0: no limit.
    #[arg(long, env = "FIB_ANALYSIS_PENDING_PER_ADDRESS", default_value_t = 4)]
    pub analysis_pending_per_address: u32,
    /// Analyses one player may ask for in 24 hours (a match analysed already is served
    /// without counting).
    #[arg(long, env = "FIB_ANALYSIS_PER_DAY", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub analysis_per_day: u32,
    /// Test hooks: `POST /api/tables/{id}/test/panic` makes the table's task panic, to
    /// test supervision. Never set this on a real server.
    #[arg(long, env = "FIB_TEST_HOOKS", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub test_hooks: bool,
    /// Log format: `text` for people, `json` (one object per line) for log collectors.
    #[arg(long, env = "FIB_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Mark the token cookie `Secure` (set this when serving over HTTPS).
    #[arg(long, env = "FIB_SECURE_COOKIES", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub secure_cookies: bool,
    /// This node's name among the servers sharing one Postgres. Default: a fresh random
    /// id per process on Postgres, `local` on SQLite (one node). Give a node a stable id
    /// only if no two processes ever run under it at once; a restart under the same id
    /// takes the node's tables back at once instead of after its lease runs out.
    #[arg(long, env = "FIB_NODE_ID")]
    pub node_id: Option<String>,
    /// Recurring tournaments the server creates by itself: a JSON file of events
    /// (docs/tournaments.md, "Playing one on this server"). Checked at start-up.
    #[arg(long, env = "FIB_TOURNAMENTS_FILE")]
    pub tournaments_file: Option<PathBuf>,
    /// How many tournaments one player may have created that are still in registration or
    /// running: a further creation is refused `too_many_tournaments` (0: no limit).
    #[arg(long, env = "FIB_MAX_TOURNAMENTS_PER_PLAYER", default_value_t = 3)]
    pub max_tournaments_per_player: u32,
    /// Where the other nodes reach this one, `http://host:port`. Default: the address this
    /// machine uses to reach the database, and the port it listens on.
    #[arg(long, env = "FIB_ADVERTISE_URL", value_parser = advertise_arg)]
    pub advertise_url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// `web/` next to the workspace when run from a checkout (`cargo run`), else `./web`.
fn default_web_dir() -> PathBuf {
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../web"));
    if built.join("index.html").exists() {
        built
    } else {
        PathBuf::from("web")
    }
}

impl Config {
    /// The configuration of a server started with no flags: every default (environment
    /// variables still apply). Tests use it to check that the defaults do not get in the
    /// way of normal play.
    pub fn defaults() -> Result<Config, clap::Error> {
        Cli::try_parse_from(["fibonacci-cards"]).map(|c| c.config)
    }

    /// A configuration for tests: port 0, the given database, no bot delay, and no
    /// practical message rate limit (test clients answer every state at once).
    /// The settings of the real-time core.
    pub fn core(&self) -> realtime::CoreConfig {
        realtime::CoreConfig {
            bot_delay_ms: self.bot_delay_ms,
            bot_budget_ms: self.bot_budget_ms,
            disconnect_grace_s: self.disconnect_grace_s,
            abandon_after_s: self.abandon_after_s,
            solo_abandon_after_s: self.solo_abandon_after_s,
            open_table_ttl_s: self.open_table_ttl_s,
            test_hooks: self.test_hooks,
        }
    }

    pub fn for_tests(database_url: &str) -> Self {
        Config {
            bind: "127.0.0.1".into(),
            port: 0,
            database_url: database_url.into(),
            allowed_origins: vec![],
            web_dir: default_web_dir(),
            bot_delay_ms: 0,
            bot_budget_ms: 100,
            // Test clients play as fast as the server answers.
            ws_messages_per_second: 100_000,
            bot_ws_messages_per_second: 100_000,
            challenge_expiry_s: 60,
            // No abuse limits: a test makes many guests and tables from one address (the
            // limits' own tests set them).
            guests_per_minute: 0,
            signins_per_minute: 0,
            signins_per_account: 0,
            bot_fill_s: 30,
            tables_per_minute: 0,
            joins_per_minute: 0,
            sockets_per_address: 0,
            connections_per_address: 0,
            sockets_per_minute: 0,
            open_tables_per_player: 0,
            lobby_shown: 200,
            trusted_proxies: vec![],
            analysis_workers: Some(1),
            analysis_queue: 256,
            analysis_pending_per_player: 100,
            analysis_pending_per_address: 0,
            analysis_per_day: 1000,
            disconnect_grace_s: 60,
            abandon_after_s: 300,
            solo_abandon_after_s: 86_400,
            open_table_ttl_s: 1800,
            test_hooks: true,
            log_format: LogFormat::Text,
            secure_cookies: false,
            node_id: None,
            tournaments_file: None,
            max_tournaments_per_player: 3,
            advertise_url: None,
        }
    }
}

/// A trusted proxy: one address (`10.0.0.7`) or a network (`10.0.0.0/8`, `fd00::/8`), as
/// `--trusted-proxies` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proxies {
    net: IpAddr,
    prefix: u8,
}

impl Proxies {
    /// Whether `ip` is one of these proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Proxies {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let net = addr
            .parse::<IpAddr>()
            .map_err(|_| format!("{s:?} is not an IP address or a network like 10.0.0.0/8"))?
            // `::ffff:10.0.0.1` is the IPv4 address the peer will be seen as.
            .to_canonical();
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(Proxies { net, prefix })
    }
}

/// `SCHEME://HOST[:PORT]`, nothing after the host and port (a trailing `/` is dropped),
/// with a scheme among `schemes` (any, if empty): `s` so, or why not.
fn scheme_host(s: &str, what: &str, schemes: &[&str]) -> Result<String, String> {
    let s = s.trim().trim_end_matches('/');
    let shape = if schemes.is_empty() {
        "SCHEME://HOST[:PORT]".to_string()
    } else {
        format!("{}://HOST[:PORT]", schemes.join("|"))
    };
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(format!("{what} {s:?} is not {shape}"));
    };
    let scheme_ok = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
        && (schemes.is_empty() || schemes.iter().any(|x| x.eq_ignore_ascii_case(scheme)));
    if !scheme_ok || rest.is_empty() || rest.contains(['/', '?', '#', ' ', '@']) {
        return Err(format!("{what} {s:?} is not {shape} (no path, no user)"));
    }
    if let Some((_, port)) = rest.rsplit_once(':')
        && !rest.ends_with(']')
        && port.parse::<u16>().is_err()
    {
        return Err(format!("{what} {s:?} has a port that is not a number"));
    }
    Ok(s.to_string())
}

/// An entry of `--allowed-origins`: an origin as browsers send it (`https://host[:port]`,
/// an app's `capacitor://localhost`, or `null`). An empty one (a stray comma, an empty
/// variable) is kept as empty and matches nothing.
fn origin_arg(s: &str) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty() || t == "null" {
        return Ok(t.to_string());
    }
    scheme_host(t, "the origin", &[])
}

/// `--advertise-url`: where the other nodes reach this one over HTTP.
fn advertise_arg(s: &str) -> Result<String, String> {
    scheme_host(s, "the address", &["http", "https"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::builder::TypedValueParser as _;

    #[test]
    fn origins_and_addresses_are_checked_at_start() {
        assert_eq!(
            origin_arg("HTTPS://Cards.Example.org/").as_deref(),
            Ok("HTTPS://Cards.Example.org")
        );
        assert_eq!(
            advertise_arg("http://10.0.0.5:8080").as_deref(),
            Ok("http://10.0.0.5:8080")
        );
        assert!(advertise_arg("http://[::1]:8080").is_ok());
        for bad in [
            "notaurl",
            "not a url",
            "http://",
            "http://a/b",
            "http://a:port",
            "a b://c",
        ] {
            assert!(origin_arg(bad).is_err(), "{bad:?}");
        }
        // An app's origin, `null`, and an empty entry (ignored) are fine.
        for fine in ["capacitor://localhost", "null", "", " "] {
            assert!(origin_arg(fine).is_ok(), "{fine:?}");
        }
        assert!(advertise_arg("notaurl").is_err());
        assert!(advertise_arg("ftp://a:21").is_err());
    }

    /// Durations and counts that would overflow a clock or flood the node are refused at
    /// start (a walk's `--open-table-ttl-s 18446744073709551615` made every table task
    /// panic, `--bot-fill-s 1e16` filled seats at once, `--analysis-workers 100000` took
    /// the node down), and so is 0 where it would refuse every analysis.
    #[test]
    fn absurd_values_are_refused_at_start() {
        let parses = |args: &[&str]| Cli::try_parse_from([&["fib"], args].concat()).is_ok();
        for flag in [
            "--open-table-ttl-s",
            "--abandon-after-s",
            "--solo-abandon-after-s",
            "--disconnect-grace-s",
            "--bot-fill-s",
        ] {
            assert!(parses(&[flag, "315360000"]), "{flag}: ten years");
            assert!(!parses(&[flag, "315360001"]), "{flag}");
            assert!(!parses(&[flag, "18446744073709551615"]), "{flag}");
        }
        assert!(parses(&["--bot-delay-ms", "60000"]));
        assert!(!parses(&["--bot-delay-ms", "60001"]));
        assert!(parses(&["--analysis-workers", "256"]));
        assert!(parses(&["--analysis-workers", "0"]));
        assert!(!parses(&["--analysis-workers", "257"]));
        for flag in [
            "--analysis-queue",
            "--analysis-pending-per-player",
            "--analysis-per-day",
        ] {
            assert!(parses(&[flag, "1"]), "{flag}");
            assert!(!parses(&[flag, "0"]), "{flag}");
        }
    }

    #[test]
    fn switches_take_the_usual_spellings() {
        // What a switch's environment variable (FIB_SECURE_COOKIES=1) goes through.
        let parser = clap::builder::BoolishValueParser::new();
        let cmd = clap::Command::new("t");
        for (v, want) in [
            ("1", true),
            ("yes", true),
            ("on", true),
            ("true", true),
            ("0", false),
            ("off", false),
        ] {
            let parsed = parser
                .parse_ref(&cmd, None, std::ffi::OsStr::new(v))
                .unwrap();
            assert_eq!(parsed, want, "{v}");
        }
        assert!(Cli::try_parse_from(["fib", "--allowed-origins", "not a url,,"]).is_err());
        assert!(Cli::try_parse_from(["fib", "--allowed-origins", "https://a.example,,"]).is_ok());
        assert!(Cli::try_parse_from(["fib", "--advertise-url", "notaurl"]).is_err());
        let ok = Cli::try_parse_from([
            "fib",
            "--allowed-origins",
            "https://a.example,http://b.example:8080/",
        ]);
        assert_eq!(
            ok.unwrap().config.allowed_origins,
            vec![
                "https://a.example".to_string(),
                "http://b.example:8080".to_string()
            ]
        );
    }
}
