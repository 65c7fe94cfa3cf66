//! Test harness: a real server (in-process on port 0, or the real binary as a child process
//! that can be SIGKILLed), per-test databases on SQLite and Postgres, and real HTTP and
//! WebSocket clients that speak the protocol as a browser or a bot would.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Message, http::HeaderValue};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Whether skipping a part of the suite is an error (CI sets `FIB_REQUIRE_ALL=1`).
pub fn require_all() -> bool {
    std::env::var("FIB_REQUIRE_ALL").is_ok_and(|v| v == "1")
}

/// Says loudly that a part of the suite was skipped, or fails if nothing may be skipped.
pub fn skip(what: &str, how: &str) {
    if require_all() {
        panic!("FIB_REQUIRE_ALL=1 but {what} cannot run: {how}");
    }
    eprintln!("\n*** SKIPPED: {what} ({how}) ***\n");
}

/// A fresh, empty database for one test.
#[derive(Clone, Debug)]
pub struct Db {
    pub url: String,
    pub label: &'static str,
}

pub fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fib-e2e-{tag}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn sqlite_db() -> Db {
    let dir = scratch_dir("sqlite");
    Db {
        url: format!("sqlite://{}/fib.db", dir.display()),
        label: "sqlite",
    }
}

/// A new database on the Postgres server of `TEST_DATABASE_URL`, or `None` (with a loud
/// skip) when it is unset.
pub async fn postgres_db() -> Option<Db> {
    let Ok(admin) = std::env::var("TEST_DATABASE_URL") else {
        skip(
            "Postgres end-to-end tests",
            "set TEST_DATABASE_URL=postgres://…",
        );
        return None;
    };
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&admin)
        .await
        .expect("connect TEST_DATABASE_URL");
    let name = format!("fib_e2e_{}", uuid::Uuid::new_v4().simple());
    // `name` is a UUID's hex digits, not input: safe to splice.
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("create a test database");
    let base = admin.rsplit_once('/').expect("a database URL has a path").0;
    Some(Db {
        url: format!("{base}/{name}"),
        label: "postgres",
    })
}

/// SQLite always; Postgres when configured.
pub async fn databases() -> Vec<Db> {
    let mut v = vec![sqlite_db()];
    v.extend(postgres_db().await);
    v
}

/// A server running inside the test process.
pub struct Server {
    pub base: String,
    pub ws: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    pub async fn start(db: &Db) -> Server {
        Self::start_with_bot_delay(db, 0).await
    }

    /// A server whose bots wait `bot_delay_ms` before each move while a person watches, so
    /// a test has a window in which it is reliably a bot's turn.
    pub async fn start_with_bot_delay(db: &Db, bot_delay_ms: u64) -> Server {
        Self::start_with(db, |c| c.bot_delay_ms = bot_delay_ms).await
    }

    /// A server with the test configuration changed by `tweak`.
    pub async fn start_with(db: &Db, tweak: impl FnOnce(&mut server::Config)) -> Server {
        let mut config = server::Config::for_tests(&db.url);
        tweak(&mut config);
        let state = server::build(config).await.expect("server builds");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            server::serve(listener, state, async move {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        Server {
            base: format!("http://{addr}"),
            ws: format!("ws://{addr}"),
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Graceful stop; waits until the server has closed its sockets and returned.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            tokio::time::timeout(TIMEOUT, t)
                .await
                .expect("server stops")
                .unwrap();
        }
    }
}

/// The real server binary as a child process.
pub struct Child {
    pub base: String,
    pub ws: String,
    pub child: tokio::process::Child,
    /// Its log lines at WARN or ERROR, and panics, as they come.
    troubles: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Child {
    /// The server binary as the node `child`: one process at a time on a database (a
    /// restart under the same id takes its tables back at once).
    pub async fn start(db: &Db) -> Child {
        Self::start_as(db, "child", &[]).await
    }

    /// The server binary as the node `node`, with more flags (`--bot-delay-ms` among them
    /// replaces the default 0).
    pub async fn start_as(db: &Db, node: &str, extra: &[&str]) -> Child {
        Self::start_with(db, Some(node), 0, extra).await
    }

    /// As [`Child::start_as`], on `port` (0: a free one), and without `--node-id` when
    /// `node` is `None`: a random id, as a Postgres node has by default.
    pub async fn start_with(db: &Db, node: Option<&str>, port: u16, extra: &[&str]) -> Child {
        let bot_delay = if extra.contains(&"--bot-delay-ms") {
            &[][..]
        } else {
            &["--bot-delay-ms", "0"][..]
        };
        let port = port.to_string();
        let node_id = match node {
            Some(n) => vec!["--node-id", n],
            None => vec![],
        };
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"))
            .args(bot_delay)
            .args([
                "--port",
                &port,
                // The test clients answer every state at once.
                "--ws-messages-per-second",
                "100000",
                // One test address plays many guests and tables: no abuse limits.
                "--guests-per-minute",
                "0",
                "--tables-per-minute",
                "0",
                "--joins-per-minute",
                "0",
                "--sockets-per-address",
                "0",
                "--sockets-per-minute",
                "0",
                "--connections-per-address",
                "0",
                "--analysis-pending-per-address",
                "0",
                "--open-tables-per-player",
                "0",
                "--database-url",
                &db.url,
            ])
            .args(&node_id)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the server binary");
        // The server logs `listening on http://ADDR` once it accepts connections.
        let out = child.stdout.take().unwrap();
        let mut lines = BufReader::new(out).lines();
        let addr = tokio::time::timeout(TIMEOUT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(i) = line.find("listening on http://") {
                    // The address ends the text line, or the message of a JSON one.
                    let rest = &line[i + "listening on http://".len()..];
                    return rest.split('"').next().unwrap_or(rest).trim().to_string();
                }
            }
            panic!("the server exited before listening");
        })
        .await
        .expect("the server starts listening");
        // Keep draining its output so it never blocks on a full pipe, keeping what is
        // worth a look.
        let troubles = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep = |t: &std::sync::Arc<std::sync::Mutex<Vec<String>>>, line: String| {
            if ["WARN", "ERROR", "panicked"]
                .iter()
                .any(|w| line.contains(w))
            {
                t.lock().unwrap().push(line);
            }
        };
        let t = troubles.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                keep(&t, line);
            }
        });
        let err = child.stderr.take().unwrap();
        let t = troubles.clone();
        tokio::spawn(async move {
            let mut l = BufReader::new(err).lines();
            while let Ok(Some(line)) = l.next_line().await {
                keep(&t, line);
            }
        });
        Child {
            base: format!("http://{addr}"),
            ws: format!("ws://{addr}"),
            child,
            troubles,
        }
    }

    /// Sends it `sig` (`-TERM`, `-STOP`, …) with the `kill` command.
    pub fn signal(&self, sig: &str) {
        let pid = self.child.id().expect("the child runs").to_string();
        let ok = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig} {pid}");
    }

    /// Its `/metrics` text.
    pub async fn metrics(&self) -> String {
        metrics_at(&self.base).await
    }

    /// How many WARN, ERROR and panic lines it has logged so far: [`Child::exit`] from
    /// here on.
    pub fn troubles_so_far(&self) -> usize {
        self.troubles.lock().unwrap().len()
    }

    /// Waits for the process to exit (it was told to stop) and returns its status with
    /// the WARN, ERROR and panic lines it logged after the first `from`, all of its output
    /// read. sqlx's warnings of slow statements are left out: they say how loaded the
    /// machine is (a CI runner), not that anything went wrong.
    pub async fn exit(mut self, from: usize) -> (std::process::ExitStatus, Vec<String>) {
        let status = tokio::time::timeout(TIMEOUT, self.child.wait())
            .await
            .expect("the server exits")
            .unwrap();
        // The readers hold the last lines until the pipes close, just after the exit.
        for _ in 0..50 {
            if std::sync::Arc::strong_count(&self.troubles) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let lines = self.troubles.lock().unwrap()[from..]
            .iter()
            .filter(|l| !l.contains("slow statement"))
            .cloned()
            .collect();
        (status, lines)
    }
}

/// A player: an HTTP client with its guest token.
#[derive(Clone)]
pub struct Player {
    pub http: reqwest::Client,
    pub base: String,
    pub ws: String,
    pub token: String,
    pub id: String,
}

impl Player {
    pub async fn guest(base: &str, ws: &str, name: &str) -> Player {
        let http = reqwest::Client::new();
        let r = http
            .post(format!("{base}/api/guest"))
            .json(&json!({ "name": name }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let cookie = r
            .headers()
            .get("set-cookie")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert!(cookie.contains("HttpOnly"), "{cookie}");
        let v: Value = r.json().await.unwrap();
        Player {
            http,
            base: base.into(),
            ws: ws.into(),
            token: v["token"].as_str().unwrap().into(),
            id: v["player"]["id"].as_str().unwrap().into(),
        }
    }

    /// The same player seen from another process (after a restart): same token.
    pub fn at(&self, base: &str, ws: &str) -> Player {
        Player {
            base: base.into(),
            ws: ws.into(),
            ..self.clone()
        }
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    /// Creates a Trump table; returns its id.
    pub async fn create_trump(&self, seats: usize, bots: bool) -> String {
        let (s, v) = self
            .post(
                "/api/tables",
                json!({"game": "trump", "seats": seats, "bots": if bots { json!("random") } else { Value::Null }}),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        v["table"]["id"].as_str().unwrap().to_string()
    }

    pub async fn connect(&self, table: &str) -> Sock {
        Sock::open(
            &format!("{}/ws/table/{table}", self.ws),
            Some(&self.token),
            None,
        )
        .await
    }
}

/// Two new guests, Ada and Bob, seated at a two-seat Trump table Ada created (not started):
/// both players and the table id.
pub async fn ada_and_bob_at_trump(base: &str, ws: &str) -> (Player, Player, String) {
    let ada = Player::guest(base, ws, "Ada").await;
    let bob = Player::guest(base, ws, "Bob").await;
    let table = ada.create_trump(2, false).await;
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    (ada, bob, table)
}

/// A new guest `name` at a started Trump table of `seats` with bots in the other seats,
/// connected to it: the player, the table id and the socket.
pub async fn trump_with_bots(server: &Server, name: &str, seats: usize) -> (Player, String, Sock) {
    let p = Player::guest(&server.base, &server.ws, name).await;
    let table = p.create_trump(seats, true).await;
    let sock = p.connect(&table).await;
    let (s, v) = p
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    (p, table, sock)
}

/// A WebSocket to a table.
pub struct Sock {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The latest state: the last `state` message with every `patch` since applied.
    pub state: Option<Value>,
    /// How many patches this socket has received.
    pub patches: usize,
    /// How many of their operations came in the compact form (arrays, the default), and
    /// how many as RFC 6902 objects (`updates=json_patch`).
    pub compact_ops: usize,
    pub json_patch_ops: usize,
    /// The start of the last message sent: a wait that times out names it, so a message
    /// the server never answered can be told from the test's own step.
    pub last_sent: String,
    /// The starts of the last few messages received, for the same report.
    recent: std::collections::VecDeque<String>,
}

impl Sock {
    /// A socket already open, holding nothing yet.
    pub fn new(ws: WebSocketStream<MaybeTlsStream<TcpStream>>) -> Sock {
        Sock {
            ws,
            state: None,
            patches: 0,
            compact_ops: 0,
            json_patch_ops: 0,
            last_sent: String::new(),
            recent: Default::default(),
        }
    }

    pub async fn open(url: &str, token: Option<&str>, origin: Option<&str>) -> Sock {
        let mut req = url.into_client_request().unwrap();
        if let Some(t) = token {
            req.headers_mut().insert(
                "authorization",
                HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
            );
        }
        if let Some(o) = origin {
            req.headers_mut()
                .insert("origin", HeaderValue::from_str(o).unwrap());
        }
        let (ws, _) = tokio_tungstenite::connect_async(req)
            .await
            .expect("websocket opens");
        Sock::new(ws)
    }

    /// Applies a `patch` message to the held state and returns the state it makes.
    fn apply_patch(&mut self, m: &Value) -> Value {
        let st = self.state.as_mut().expect("a patch comes after a state");
        // The compact form (the default) leaves out `from` when it is `version - 1`, and
        // `events` when there are none.
        let from = protocol::patch::patch_from(m["from"].as_u64(), m["version"].as_u64().unwrap());
        assert_eq!(
            from,
            st["version"].as_u64(),
            "a patch applies to the version held: {m}"
        );
        for op in m["ops"].as_array().unwrap() {
            if op.is_array() {
                self.compact_ops += 1;
            } else {
                self.json_patch_ops += 1;
            }
        }
        let st = self.state.as_mut().expect("a patch comes after a state");
        let ops: Vec<protocol::PatchOp> = serde_json::from_value(m["ops"].clone()).unwrap();
        protocol::patch::apply(st, &ops).expect("the patch applies");
        st["version"] = m["version"].clone();
        st["events"] = m
            .get("events")
            .cloned()
            .unwrap_or_else(|| serde_json::json!([]));
        st.clone()
    }

    /// The next message other than chat and the lobby's queue counts, parsed (panics on
    /// timeout or close). Chat (`chat`, `chat_history`, `muted`) travels beside the state
    /// document, and `queues` beside the lobby's list; tests of them read them with
    /// [`Sock::next_any`].
    pub async fn next(&mut self) -> Value {
        loop {
            let v = self.next_any().await;
            if !matches!(
                v["type"].as_str(),
                Some("chat" | "chat_history" | "muted" | "queues")
            ) {
                return v;
            }
        }
    }

    /// The next message, whatever it is, parsed (panics on timeout or close).
    pub async fn next_any(&mut self) -> Value {
        loop {
            let m = tokio::time::timeout(TIMEOUT, self.ws.next())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no message in {TIMEOUT:?}; holding version {}; the last sent on this socket: {}; the last received, oldest first:\n{}",
                        self.state.as_ref().map_or(Value::Null, |s| s["version"].clone()),
                        self.last_sent,
                        Vec::from(self.recent.clone()).join("\n")
                    )
                })
                .expect("socket open")
                .expect("no socket error");
            if let Message::Text(t) = m {
                if self.recent.len() == 8 {
                    self.recent.pop_front();
                }
                self.recent.push_back(t.chars().take(300).collect());
                let v: Value = serde_json::from_str(&t).unwrap();
                // Every message must decode as the protocol says.
                // Lobby messages: the lists, and errors (which carry no table version).
                // Chat messages have the same shape on both sockets.
                let lobby_error = v["type"] == "error" && v.get("version").is_none();
                let lobby = matches!(
                    v["type"].as_str(),
                    Some(
                        "tables"
                            | "changes"
                            | "queues"
                            | "queued"
                            | "queue_left"
                            | "matched"
                            | "challenge_sent"
                            | "challenge_received"
                            | "challenge_ended"
                            | "challenge_started"
                            | "tournament"
                            | "tournament_game"
                    )
                );
                if lobby || lobby_error {
                    serde_json::from_value::<protocol::LobbyMsg>(v.clone())
                        .expect("a valid LobbyMsg");
                } else {
                    serde_json::from_value::<protocol::ServerMsg>(v.clone())
                        .expect("a valid ServerMsg");
                }
                if v["type"] == "state" {
                    self.state = Some(v.clone());
                }
                if v["type"] == "patch" {
                    // Patches are applied to the held state, and the test sees the state
                    // they make, like the web client renders it.
                    self.patches += 1;
                    return self.apply_patch(&v);
                }
                return v;
            }
        }
    }

    pub async fn next_state(&mut self) -> Value {
        loop {
            let v = self.next().await;
            if v["type"] == "state" {
                return v;
            }
        }
    }

    /// The next error message, skipping states.
    pub async fn next_error(&mut self) -> Value {
        loop {
            let v = self.next().await;
            if v["type"] == "error" {
                return v;
            }
        }
    }

    /// Waits for a state satisfying `f`.
    pub async fn until(&mut self, f: impl Fn(&Value) -> bool) -> Value {
        if let Some(s) = &self.state
            && f(s)
        {
            return s.clone();
        }
        loop {
            let v = self.next_state().await;
            if f(&v) {
                return v;
            }
        }
    }

    /// The next state after an `act`: a `stale_version` refusal is expected when others
    /// (bots) moved in between; any other message fails the test.
    pub async fn next_state_after_act(&mut self) -> Value {
        let m = self.next().await;
        match m["type"].as_str() {
            Some("state") => m,
            // Others moved first: the patches that say so came before the refusal,
            // so the state held is already the current one.
            Some("error") if m["code"] == "stale_version" => {
                self.state.clone().expect("a state is held")
            }
            _ => panic!("unexpected message while playing: {m}"),
        }
    }

    /// Reads until the socket closes; the close frame's code, if one was sent.
    pub async fn close_code(&mut self) -> Option<u16> {
        self.close_code_within(TIMEOUT).await
    }

    /// [`Sock::close_code`], waiting up to `within`.
    pub async fn close_code_within(&mut self, within: std::time::Duration) -> Option<u16> {
        tokio::time::timeout(within, async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Close(f))) => return f.map(|f| u16::from(f.code)),
                    Some(Ok(_)) => continue,
                    _ => return None,
                }
            }
        })
        .await
        .expect("the socket closes in time")
    }

    pub async fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string()).await;
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.last_sent = text.chars().take(200).collect();
        self.ws
            .send(Message::Text(text.to_string().into()))
            .await
            .unwrap();
    }

    pub async fn act(&mut self, version: u64, action: &Value) {
        self.send(json!({"type": "act", "version": version, "action": action}))
            .await;
    }
}

/// My seat in a state message, if I have one.
pub fn my_seat(state: &Value) -> Option<u64> {
    (state["you"]["kind"] == "player").then(|| state["you"]["seat"].as_u64().unwrap())
}

pub fn my_turn(state: &Value) -> bool {
    match my_seat(state) {
        Some(s) => {
            state["table"]["to_act"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v.as_u64() == Some(s))
                && !state["legal"].as_array().unwrap().is_empty()
        }
        None => false,
    }
}

/// A Trump view's round as (seat, card) per card played, in playing order: the view's
/// `plays`, each trick from its leader (the first trick's `first_leader`, each next one's
/// the winner of the trick before, R-32), as any client reads it (protocol.md §6.4).
pub fn trump_plays(view: &Value) -> Vec<(u64, Value)> {
    let Some(n) = view["players"].as_u64() else {
        return Vec::new();
    };
    let plays = view["plays"].as_array().cloned().unwrap_or_default();
    let trump = view["trump_colour"].as_str().unwrap_or("").chars().next();
    // A code's colour letter and number.
    let card = |c: &Value| {
        let s = c.as_str().unwrap();
        (s.chars().next(), s[1..].parse::<u32>().unwrap())
    };
    let mut leader = view["first_leader"].as_u64().unwrap_or(0);
    let mut out = Vec::new();
    for trick in plays.chunks(n as usize) {
        let mut best = 0;
        for i in 1..trick.len() {
            let ((c, x), (b, y)) = (card(&trick[i]), card(&trick[best]));
            let led = card(&trick[0]).0;
            let beats = if c == trump {
                b != trump || x > y
            } else {
                c == led && b != trump && x > y
            };
            if beats {
                best = i;
            }
        }
        out.extend(
            trick
                .iter()
                .enumerate()
                .map(|(i, c)| ((leader + i as u64) % n, c.clone())),
        );
        if trick.len() == n as usize {
            leader = (leader + best as u64) % n;
        }
    }
    out
}

/// Tricks completed in a Trump view's round (0 without a view).
pub fn trump_tricks_played(view: &Value) -> u64 {
    match (view["players"].as_u64(), view["plays"].as_array()) {
        (Some(n), Some(p)) => p.len() as u64 / n,
        _ => 0,
    }
}

pub fn status(state: &Value) -> &str {
    state["table"]["status"].as_str().unwrap()
}

/// Plays from `sock` (choosing legal moves by `pick`) until `stop` holds for a state.
/// Returns that state and the number of moves made. Stale-version refusals are expected
/// when bots move in between; any other refusal fails the test.
pub async fn play_until(
    sock: &mut Sock,
    mut pick: impl FnMut(&[Value]) -> Value,
    stop: impl Fn(&Value) -> bool,
) -> (Value, u64) {
    let mut moves = 0;
    // Start from the latest state already received, if any (a stale one only costs a
    // `stale_version` refusal, after the patches that bring the current state).
    let mut st = match sock.state.clone() {
        Some(s) => s,
        None => sock.next_state().await,
    };
    loop {
        if stop(&st) {
            return (st, moves);
        }
        if my_turn(&st) {
            let legal = st["legal"].as_array().unwrap().clone();
            let a = pick(&legal);
            sock.act(st["version"].as_u64().unwrap(), &a).await;
            moves += 1;
        }
        st = sock.next_state_after_act().await;
    }
}

/// Reads a lobby socket until a message of type `ty` (panics on timeout).
pub async fn lobby_until(sock: &mut Sock, ty: &str) -> Value {
    loop {
        let v = sock.next_any().await;
        if v["type"] == ty {
            return v;
        }
    }
}

/// A lobby socket of `p`.
pub async fn lobby(p: &Player) -> Sock {
    Sock::open(&format!("{}/ws/lobby", p.ws), Some(&p.token), None).await
}

/// Picks the first legal action (deterministic, always legal).
pub fn first(legal: &[Value]) -> Value {
    legal[0].clone()
}

/// Creates a table of `seats` bots of `level` only (the creator takes no seat) and returns
/// its id; the table is not started.
pub async fn create_bots_only(
    p: &Player,
    game: &str,
    seats: usize,
    level: &str,
    options: Value,
) -> String {
    let (s, v) = p
        .post(
            "/api/tables",
            json!({"game": game, "seats": seats, "bots": level, "join": false, "options": options}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    v["table"]["id"].as_str().unwrap().to_string()
}

/// Polls the table over HTTP until its match is finished (two minutes at most); returns
/// the table's info.
pub async fn wait_finished(p: &Player, table: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let (_, info) = p.get(&format!("/api/tables/{table}")).await;
        if info["status"] == "finished" {
            return info;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "{info}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The `/healthz` answer of the server at `base`.
pub async fn health_at(base: &str) -> Value {
    reqwest::get(format!("{base}/healthz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The server's `/metrics` text.
pub async fn metrics(server: &Server) -> String {
    metrics_at(&server.base).await
}

/// The `/metrics` text of the server at `base`.
pub async fn metrics_at(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
