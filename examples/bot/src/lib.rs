//! A complete example bot for fibonacci-cards, through the public API only (HTTP and
//! WebSocket, `docs/protocol.md`): it signs in with a bot account's API token
//! (`Authorization: Bearer`), opens the lobby socket, and either issues challenges
//! (`--challenge house:normal` or a player id) or accepts every challenge it receives;
//! each match it plays on the table socket, keeping its state document from `state` and
//! `patch` messages (`protocol::client::TableDoc`) and answering with a move chosen from
//! the document's `legal` list, whatever the game. It never derives a rule: the server's
//! list is the whole truth. A lost table socket is reconnected with `since` (the version it
//! holds), so that one patch brings it up to date; a patch that does not fit asks `sync`.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use protocol::LobbyMsg;
use protocol::client::{Incoming, TableDoc};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "example-bot",
    about = "An example bot playing fibonacci-cards through its public API"
)]
pub struct Args {
    /// The server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub server: String,
    /// The bot account's API token (POST /api/account/bot/token).
    #[arg(long, env = "FIB_BOT_TOKEN")]
    pub token: String,
    /// Challenge this opponent: `house:easy`, `house:normal`, `house:hard` or a player id.
    /// Without it the bot waits for challenges and accepts each.
    #[arg(long)]
    pub challenge: Option<String>,
    /// The game of the challenges it issues (`GET /api/games`).
    #[arg(long, default_value = "trump")]
    pub game: String,
    /// Seats of the challenges it issues (default: the server's choice).
    #[arg(long)]
    pub seats: Option<u8>,
    /// The game's options, as JSON (default: the game's).
    #[arg(long)]
    pub options: Option<String>,
    /// Matches to play before it stops (0: for ever, when accepting).
    #[arg(long, default_value_t = 1)]
    pub matches: u32,
    /// Milliseconds to wait before each move (0: answer at once).
    #[arg(long, default_value_t = 0)]
    pub delay_ms: u64,
    /// Give up a match after this many seconds.
    #[arg(long, default_value_t = 300)]
    pub match_timeout_s: u64,
}

impl Args {
    pub fn into_config(self) -> Config {
        let options = self
            .options
            .as_deref()
            .map(|o| serde_json::from_str(o).expect("--options is JSON"))
            .unwrap_or(Value::Null);
        Config {
            server: self.server,
            token: self.token,
            challenge: self.challenge,
            game: self.game,
            seats: self.seats,
            options,
            matches: self.matches,
            delay_ms: self.delay_ms,
            match_timeout: Duration::from_secs(self.match_timeout_s),
        }
    }
}

/// What the bot does (see [`Args`]).
#[derive(Clone, Debug)]
pub struct Config {
    pub server: String,
    pub token: String,
    pub challenge: Option<String>,
    pub game: String,
    pub seats: Option<u8>,
    pub options: Value,
    pub matches: u32,
    pub delay_ms: u64,
    pub match_timeout: Duration,
}

/// What it did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The tables whose match it played to the end.
    pub finished: Vec<String>,
    /// Moves it sent (accepted or not).
    pub moves: u64,
}

/// Plays `cfg.matches` matches (challenging, or accepting challenges), then returns.
pub async fn run(cfg: Config) -> Result<Report, String> {
    let me = whoami(&cfg).await?;
    eprintln!("example-bot: signed in as {me}");
    let ws_base = cfg
        .server
        .replacen("http://", "ws://", 1)
        .replacen("https://", "wss://", 1);
    let mut lobby = connect(&format!("{ws_base}/ws/lobby"), &cfg.token).await?;
    let mut report = Report::default();
    let mut rng = Rng::seeded();
    while cfg.matches == 0 || (report.finished.len() as u32) < cfg.matches {
        let table = match &cfg.challenge {
            Some(to) => {
                let msg = json!({
                    "type": "challenge",
                    "to": to,
                    "game": cfg.game,
                    "seats": cfg.seats,
                    "options": cfg.options,
                });
                send(&mut lobby, msg.to_string()).await?;
                wait_for_table(&mut lobby, None).await?
            }
            None => wait_for_table(&mut lobby, Some(())).await?,
        };
        let played =
            tokio::time::timeout(cfg.match_timeout, play(&ws_base, &cfg, &table, &mut rng))
                .await
                .map_err(|_| {
                    format!(
                        "table {table}: the match took longer than {:?}",
                        cfg.match_timeout
                    )
                })??;
        let moves = played.moves;
        report.moves += moves;
        eprintln!("example-bot: table {table} finished ({moves} moves)");
        report.finished.push(table);
    }
    Ok(report)
}

/// The signed-in player's name and id (`GET /api/account`): the token works.
async fn whoami(cfg: &Config) -> Result<String, String> {
    let res = reqwest::Client::new()
        .get(format!("{}/api/account", cfg.server))
        .bearer_auth(&cfg.token)
        .send()
        .await
        .map_err(|e| format!("GET /api/account: {e}"))?;
    let status = res.status();
    let body: Value = res.json().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("GET /api/account: {status} {body}"));
    }
    if body["bot"] != json!(true) {
        eprintln!(
            "example-bot: warning: this account is not a bot account (POST /api/account/bot)"
        );
    }
    Ok(format!(
        "{} ({})",
        body["player"]["name"], body["player"]["id"]
    ))
}

async fn connect(url: &str, token: &str) -> Result<Ws, String> {
    let mut req = url.into_client_request().map_err(|e| e.to_string())?;
    let v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|e| e.to_string())?;
    req.headers_mut().insert("authorization", v);
    let (ws, _) = tokio_tungstenite::connect_async(req)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    Ok(ws)
}

async fn send(ws: &mut Ws, text: String) -> Result<(), String> {
    ws.send(Message::Text(text.into()))
        .await
        .map_err(|e| format!("send: {e}"))
}

/// Reads the lobby until a match of ours starts; with `accept`, accepts every challenge
/// received. A refusal of our challenge, or its end, is an error.
async fn wait_for_table(lobby: &mut Ws, accept: Option<()>) -> Result<String, String> {
    loop {
        let text = match lobby.next().await {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(c))) => return Err(format!("lobby closed: {c:?}")),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(format!("lobby: {e}")),
            None => return Err("lobby closed".into()),
        };
        // The lobby's list and chat are not for us; only challenges are.
        let Ok(msg) = serde_json::from_str::<LobbyMsg>(&text) else {
            continue;
        };
        match msg {
            LobbyMsg::ChallengeReceived { challenge } if accept.is_some() => {
                eprintln!(
                    "example-bot: {} challenges us to {}",
                    challenge.from.name, challenge.game
                );
                let msg = json!({"type": "challenge_accept", "id": challenge.id});
                send(lobby, msg.to_string()).await?;
            }
            LobbyMsg::ChallengeStarted { table, .. } => return Ok(table.to_string()),
            LobbyMsg::ChallengeEnded { id, reason } if accept.is_none() => {
                return Err(format!("challenge {id} ended: {reason}"));
            }
            LobbyMsg::Error { code, message, .. } => {
                if accept.is_none() {
                    return Err(format!("challenge refused: {code}: {message}"));
                }
                eprintln!("example-bot: lobby error {code}: {message}");
            }
            _ => {}
        }
    }
}

/// What playing one table came to.
#[derive(Clone, Copy, Debug, Default)]
pub struct Played {
    /// Moves sent.
    pub moves: u64,
    /// Errors the table socket answered (refused moves, such as a move another seat's
    /// beat to the table: `stale_version`).
    pub refused: u64,
    /// Of those, `rate_limited`: messages the socket's allowance refused.
    pub rate_limited: u64,
}

/// Plays the table `table` (where the token's player is seated) to the end of its match.
pub async fn play_table(cfg: &Config, table: &str) -> Result<Played, String> {
    let ws_base = cfg
        .server
        .replacen("http://", "ws://", 1)
        .replacen("https://", "wss://", 1);
    tokio::time::timeout(
        cfg.match_timeout,
        play(&ws_base, cfg, table, &mut Rng::seeded()),
    )
    .await
    .map_err(|_| {
        format!(
            "table {table}: the match took longer than {:?}",
            cfg.match_timeout
        )
    })?
}

/// Plays the table to the end of its match.
async fn play(ws_base: &str, cfg: &Config, table: &str, rng: &mut Rng) -> Result<Played, String> {
    let mut doc = TableDoc::default();
    let mut moves = 0;
    let mut refused = 0;
    let mut rate_limited = 0;
    let mut reconnects = 0;
    // The version we last answered: one move per version (a refused one waits for news).
    let mut answered: Option<u64> = None;
    loop {
        let url = match doc.doc.is_some() {
            true => format!("{ws_base}/ws/table/{table}?since={}", doc.version),
            false => format!("{ws_base}/ws/table/{table}"),
        };
        let mut ws = connect(&url, &cfg.token).await?;
        let ended = loop {
            let text = match ws.next().await {
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break false,
                Some(Ok(_)) => continue,
            };
            match doc.take(&text) {
                Incoming::Updated { .. } => {
                    if doc.over() {
                        break true;
                    }
                    let n = doc.legal_count();
                    if n > 0 && answered != Some(doc.version) {
                        if cfg.delay_ms > 0 {
                            tokio::time::sleep(Duration::from_millis(cfg.delay_ms)).await;
                        }
                        let Some(act) = doc.act_text(rng.below(n)) else {
                            continue;
                        };
                        answered = Some(doc.version);
                        moves += 1;
                        if ws.send(Message::Text(act.into())).await.is_err() {
                            break false;
                        }
                    }
                }
                Incoming::Mismatch => {
                    if ws
                        .send(Message::Text(r#"{"type":"sync"}"#.into()))
                        .await
                        .is_err()
                    {
                        break false;
                    }
                }
                Incoming::Error { code, message } => {
                    // A refused move changes nothing. `stale_version`: another seat's
                    // move came first, and its patch is on the way with what to answer.
                    // Anything else: ask for the whole state again (after a pause if
                    // the socket's allowance ran out).
                    eprintln!("example-bot: table {table}: {code}: {message}");
                    refused += 1;
                    answered = None;
                    if code == "stale_version" {
                        continue;
                    }
                    if code == "rate_limited" {
                        rate_limited += 1;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    if ws
                        .send(Message::Text(r#"{"type":"sync"}"#.into()))
                        .await
                        .is_err()
                    {
                        break false;
                    }
                }
                Incoming::Undecodable(e) => return Err(format!("table {table}: {e}")),
                Incoming::Pong | Incoming::Chat => {}
            }
        };
        if ended {
            let _ = ws.close(None).await;
            return Ok(Played {
                moves,
                refused,
                rate_limited,
            });
        }
        reconnects += 1;
        if reconnects > 20 {
            return Err(format!("table {table}: lost the socket {reconnects} times"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A small xorshift generator: which legal move to send (no dependency for it).
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Rng(t | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}
