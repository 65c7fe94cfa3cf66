//! Reaching the server: the HTTP API (guests, tables, metrics) and WebSocket connections
//! from many loopback source addresses, plus [`TableDoc`], a table socket's state document
//! kept up to date from `state` and `patch` messages.
//!
//! One source address runs out of ephemeral ports near 28k connections, so sockets are
//! spread round-robin over 127.0.0.2..=127.0.0.50 (each a different 4-tuple source) when
//! the server is on IPv4 loopback. Only loopback targets are accepted at all: this tool
//! must never send its traffic anywhere else.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use protocol::patch::{Node, TextDoc, TextOp};
use protocol::{
    CreateTableRequest, CreateTableResponse, ErrorBody, GuestRequest, GuestResponse, ServerMsg,
    TableInfo, patch,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

pub type Ws = WebSocketStream<TcpStream>;

/// Where the server is, and how to open sockets to it.
pub struct Connector {
    /// `http://host:port`, no trailing slash.
    pub base: String,
    addr: SocketAddr,
    /// Source addresses to spread connections over (empty: let the kernel choose).
    sources: Vec<IpAddr>,
    next: AtomicUsize,
    http: reqwest::Client,
}

/// The loopback source addresses used after the server's own.
const SOURCES: std::ops::RangeInclusive<u8> = 2..=50;

/// A failed HTTP call: the status and the server's error code when it sent one.
#[derive(Debug)]
pub struct HttpError {
    pub what: String,
    pub status: Option<u16>,
    pub code: String,
    pub message: String,
}

impl HttpError {
    /// The key under which [`crate::stats::Tally::http`] counts it.
    pub fn key(&self) -> String {
        match self.status {
            Some(s) => format!("{} {s} {}", self.what, self.code),
            None => format!("{} {}", self.what, self.code),
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key(), self.message)
    }
}

impl Connector {
    /// Checks that `base` (`http://host:port`) is a loopback address and resolves it.
    pub async fn new(base: &str) -> Result<Connector, String> {
        let base = base.trim_end_matches('/').to_string();
        let hostport = base
            .strip_prefix("http://")
            .ok_or_else(|| format!("{base}: only http:// URLs are supported"))?;
        let addr = tokio::net::lookup_host(hostport)
            .await
            .map_err(|e| format!("{hostport}: {e}"))?
            .find(|a| a.ip().is_loopback())
            .ok_or_else(|| {
                format!(
                    "{hostport} is not a loopback address: load goes to 127.0.0.0/8 or ::1 only"
                )
            })?;
        let sources = match addr.ip() {
            IpAddr::V4(_) => SOURCES
                .map(|k| IpAddr::V4(Ipv4Addr::new(127, 0, 0, k)))
                .collect(),
            IpAddr::V6(_) => Vec::new(),
        };
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Connector {
            base,
            addr,
            sources,
            next: AtomicUsize::new(0),
            http,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A TCP connection to the server (or `to`) from the next source address.
    pub async fn tcp(&self, to: SocketAddr) -> std::io::Result<TcpStream> {
        let stream = if self.sources.is_empty() {
            TcpStream::connect(to).await?
        } else {
            let src = self.sources[self.next.fetch_add(1, Relaxed) % self.sources.len()];
            let sock = TcpSocket::new_v4()?;
            sock.bind(SocketAddr::new(src, 0))?;
            sock.connect(to).await?
        };
        // Small messages, each awaited: Nagle's delay would be measured as latency.
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// A WebSocket to `path` (e.g. `/ws/table/ID`), as `token`'s player if given.
    pub async fn ws(&self, to: SocketAddr, path: &str, token: Option<&str>) -> Result<Ws, String> {
        let url = format!("ws://{to}{path}");
        let mut req = url
            .as_str()
            .into_client_request()
            .map_err(|e| e.to_string())?;
        if let Some(t) = token {
            let v = HeaderValue::from_str(&format!("Bearer {t}")).map_err(|e| e.to_string())?;
            req.headers_mut().insert("authorization", v);
        }
        let tcp = self.tcp(to).await.map_err(|e| format!("connect: {e}"))?;
        let (ws, _) = tokio_tungstenite::client_async_with_config(req, tcp, Some(ws_config()))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        Ok(ws)
    }

    /// A table socket as `token`'s player (a spectator without a token).
    pub async fn table_ws(
        &self,
        table: &str,
        since: Option<u64>,
        token: Option<&str>,
    ) -> Result<Ws, String> {
        let path = match since {
            Some(v) => format!("/ws/table/{table}?since={v}"),
            None => format!("/ws/table/{table}"),
        };
        self.ws(self.addr, &path, token).await
    }

    async fn call<R: DeserializeOwned>(
        &self,
        what: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<R, HttpError> {
        let fail = |status: Option<u16>, code: &str, message: String| HttpError {
            what: what.to_string(),
            status,
            code: code.to_string(),
            message,
        };
        let resp = req
            .send()
            .await
            .map_err(|e| fail(None, "unreachable", e.to_string()))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| fail(Some(status.as_u16()), "body", e.to_string()))?;
        if !status.is_success() {
            let (code, message) = match serde_json::from_slice::<ErrorBody>(&bytes) {
                Ok(b) => (b.code, b.message),
                Err(_) => (
                    "no_error_body".into(),
                    String::from_utf8_lossy(&bytes).into(),
                ),
            };
            return Err(fail(Some(status.as_u16()), &code, message));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| fail(Some(status.as_u16()), "undecodable", e.to_string()))
    }

    async fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        what: &str,
        path: &str,
        token: Option<&str>,
        body: &B,
    ) -> Result<R, HttpError> {
        let mut req = self.http.post(format!("{}{path}", self.base)).json(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.call(what, req).await
    }

    pub async fn get<R: DeserializeOwned>(&self, what: &str, path: &str) -> Result<R, HttpError> {
        self.call(what, self.http.get(format!("{}{path}", self.base)))
            .await
    }

    /// `GET path` as text, with its status.
    pub async fn get_text(&self, path: &str) -> Result<(u16, String), String> {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        Ok((status, r.text().await.map_err(|e| e.to_string())?))
    }

    pub async fn guest(&self, name: &str) -> Result<GuestResponse, HttpError> {
        let body = GuestRequest { name: name.into() };
        self.post("POST /api/guest", "/api/guest", None, &body)
            .await
    }

    /// Creates a table; `join`: the creator takes seat 0.
    pub async fn create_table(
        &self,
        token: &str,
        game: &str,
        seats: usize,
        bots: Option<protocol::BotLevel>,
        join: bool,
    ) -> Result<TableInfo, HttpError> {
        let body = CreateTableRequest {
            game: game.into(),
            seats,
            options: Value::Null,
            private: false,
            bots,
            join,
            pace: protocol::Pace::Untimed,
        };
        let r: CreateTableResponse = self
            .post("POST /api/tables", "/api/tables", Some(token), &body)
            .await?;
        Ok(r.table)
    }

    pub async fn join(&self, token: &str, table: &str) -> Result<TableInfo, HttpError> {
        let path = format!("/api/tables/{table}/join");
        self.post("POST /api/tables/{id}/join", &path, Some(token), &json!({}))
            .await
    }

    pub async fn start(&self, token: &str, table: &str) -> Result<TableInfo, HttpError> {
        let path = format!("/api/tables/{table}/start");
        self.post(
            "POST /api/tables/{id}/start",
            &path,
            Some(token),
            &json!({}),
        )
        .await
    }

    pub async fn table(&self, table: &str) -> Result<TableInfo, HttpError> {
        self.get("GET /api/tables/{id}", &format!("/api/tables/{table}"))
            .await
    }

    /// The server's Prometheus text.
    pub async fn metrics(&self) -> Result<Metrics, String> {
        let (status, text) = self.get_text("/metrics").await?;
        if status != 200 {
            return Err(format!("GET /metrics: {status}"));
        }
        Ok(Metrics(text))
    }
}

/// Client sockets: a small read buffer, because tungstenite allocates its whole read buffer
/// per connection up front (128 KiB by default: 2.5 GB for 19k idle sockets). It grows for
/// the rare larger message.
fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .write_buffer_size(4 * 1024)
}

/// The echo server's sockets, configured as the game server configures its own (axum's
/// `read_buffer_size(256)`, `write_buffer_size(4096)`, the same message limits), so the
/// baseline is the same stack doing the least possible work.
pub fn echo_server_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(256)
        .write_buffer_size(4 * 1024)
        .max_message_size(Some(protocol::MAX_WS_MESSAGE))
        .max_frame_size(Some(protocol::MAX_WS_MESSAGE))
}

pub fn echo_client_config() -> WebSocketConfig {
    ws_config()
}

/// A scrape of `GET /metrics`.
#[derive(Clone, Debug, Default)]
pub struct Metrics(pub String);

impl Metrics {
    /// The value of an unlabelled sample, e.g. `fib_actions_accepted_total`.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.0.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(' ')?;
            rest.trim().parse().ok()
        })
    }

    /// Every sample of a labelled family, e.g. `fib_actions_rejected_total{code="x"} 3`
    /// gives `("code=\"x\"", 3)`.
    pub fn labelled(&self, name: &str) -> Vec<(String, f64)> {
        self.0
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix(name)?.strip_prefix('{')?;
                let (labels, v) = rest.split_once("} ")?;
                Some((labels.to_string(), v.trim().parse().ok()?))
            })
            .collect()
    }
}

/// What one server message did to a [`TableDoc`].
#[derive(Debug)]
pub enum Incoming {
    /// The document changed (a `state`, or a `patch` that applied): now at this version.
    /// `actor`: the seat the change's first event names, if any (see [`actor`]).
    Updated {
        version: u64,
        full: bool,
        actor: Option<usize>,
    },
    /// A patch that did not fit what we hold: send `sync` and wait for the state.
    Mismatch,
    Error {
        code: String,
        message: String,
    },
    Pong,
    /// Chat (a line, the history, a mute list): beside the document, not in it.
    Chat,
    /// Not a `ServerMsg` at all.
    Undecodable(String),
}

/// Who made a change, as far as its public events say: the `seat` of the first event that
/// has one (`card_played`, `drew`, … name the acting seat first; a round's start or end
/// that follows comes after it). `None` when no event names a seat (presence changes have
/// no events at all). Games are free to shape their events, so this is a heuristic the
/// players use only to tell their own move's result from another seat's move in games
/// where several seats may act at once (rummy's off-turn moves).
pub fn actor(events: &[Box<RawValue>]) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Event {
        seat: Option<u64>,
    }
    // Objects only: serde would read `[3]` as an `Event` too.
    events
        .iter()
        .filter(|e| e.get().starts_with('{'))
        .find_map(|e| serde_json::from_str::<Event>(e.get()).ok()?.seat)
        .map(|s| s as usize)
}

/// Which parts of a [`TableDoc`] to read again after a patch.
struct Reread {
    legal: bool,
    status: bool,
    seat: bool,
}

/// Whether a change at `path` may change what is at `prefix` (a JSON Pointer): it is at or
/// inside it, or replaces a container of it.
fn touches(path: &str, prefix: &str) -> bool {
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => prefix.starts_with(path) && prefix[path.len()..].starts_with('/'),
    }
}

/// The state document of one table socket (the `state` message minus `type`, `version`
/// and `events`), kept by applying patches as any client must. It is held as the text it
/// came in (`protocol::patch::TextDoc`), opened only where a patch reaches inside: parsing
/// every card and legal action of every patch into a tree of values, and dropping them
/// again, was 60 % of the clients' CPU under the flat load, on the cores the server
/// runs on. What the players read after each message (the legal actions' count, the
/// status, the seat) is kept beside it.
#[derive(Debug, Default)]
pub struct TableDoc {
    pub doc: Option<TextDoc>,
    pub version: u64,
    legal: usize,
    status: String,
    seat: Option<usize>,
}

impl TableDoc {
    pub fn take(&mut self, text: &str) -> Incoming {
        // The message sent after every move, read without the tagged enum's detour.
        if let Some(p) = patch::TextPatchMessage::read(text) {
            return self.apply(p.from, p.version, p.ops, &p.events);
        }
        // Anything else, or a patch of the wrong shape (reported as undecodable below). A
        // `state` (on connecting, or after a `sync`) is read as the typed message, which
        // checks the whole of its shape.
        let msg = match serde_json::from_str::<ServerMsg>(text) {
            Ok(m) => m,
            Err(e) => {
                return Incoming::Undecodable(format!(
                    "{e}: {}",
                    text.chars().take(200).collect::<String>()
                ));
            }
        };
        match msg {
            ServerMsg::State {
                version,
                table,
                you,
                view,
                legal,
                events,
                fairness,
            } => {
                let doc = TextDoc::from_members(vec![
                    ("table".into(), raw(&table)),
                    ("you".into(), raw(&you)),
                    ("view".into(), raw(&view)),
                    ("legal".into(), raw(&legal)),
                    ("fairness".into(), raw(&fairness)),
                ]);
                let events: Vec<_> = events.iter().map(raw).collect();
                self.hold(version, doc, &events)
            }
            ServerMsg::Patch {
                from,
                version,
                ops,
                events,
            } => {
                let ops = ops.into_iter().map(TextOp::from).collect();
                let events: Vec<_> = events.iter().map(raw).collect();
                self.apply(from, version, ops, &events)
            }
            ServerMsg::Error { code, message, .. } => Incoming::Error { code, message },
            ServerMsg::Pong => Incoming::Pong,
            ServerMsg::Chat { .. } | ServerMsg::ChatHistory { .. } | ServerMsg::Muted { .. } => {
                Incoming::Chat
            }
        }
    }

    /// Takes a full state.
    fn hold(&mut self, version: u64, doc: TextDoc, events: &[Box<RawValue>]) -> Incoming {
        self.doc = Some(doc);
        self.version = version;
        if !self.read_back() {
            self.doc = None;
            return Incoming::Undecodable(format!(
                "state {version}: no list of legal actions or no status where expected"
            ));
        }
        Incoming::Updated {
            version,
            full: true,
            actor: actor(events),
        }
    }

    /// Applies a patch from `from` to `version`.
    fn apply(
        &mut self,
        from: u64,
        version: u64,
        ops: Vec<TextOp>,
        events: &[Box<RawValue>],
    ) -> Incoming {
        let Some(doc) = self.doc.as_mut().filter(|_| from == self.version) else {
            self.doc = None;
            return Incoming::Mismatch;
        };
        // Only what an operation reached is read again: `/table/status` and `/you` change a
        // few times a match, `/legal` about every other move.
        let touched = |prefix: &str| ops.iter().any(|op| touches(op.path(), prefix));
        let reread = Reread {
            legal: touched("/legal"),
            status: touched("/table/status"),
            seat: touched("/you"),
        };
        // Partly patched, or patched into a shape without what we read: worthless until
        // the next full state.
        if doc.apply(ops).is_err() || !self.read(reread) {
            self.doc = None;
            return Incoming::Mismatch;
        }
        self.version = version;
        Incoming::Updated {
            version,
            full: false,
            actor: actor(events),
        }
    }

    /// Reads the legal actions' count, the status and the seat from the document; `false`
    /// if one is missing or of the wrong type.
    fn read_back(&mut self) -> bool {
        self.read(Reread {
            legal: true,
            status: true,
            seat: true,
        })
    }

    /// [`Self::read_back`] of the parts `what` names; the others are kept.
    fn read(&mut self, what: Reread) -> bool {
        let Some(doc) = self.doc.as_mut() else {
            return false;
        };
        let scalar = |doc: &mut TextDoc, path: &str| -> Option<Value> { doc.get(path)?.to_value() };
        if what.legal {
            let Some(legal) = doc.get("/legal").and_then(Node::array_len) else {
                return false;
            };
            self.legal = legal;
        }
        if what.status {
            let Some(Value::String(status)) = scalar(doc, "/table/status") else {
                return false;
            };
            self.status = status;
        }
        if what.seat {
            self.seat = match scalar(doc, "/you/kind") {
                Some(k) if k == "player" => scalar(doc, "/you/seat")
                    .and_then(|s| s.as_u64())
                    .map(|s| s as usize),
                _ => None,
            };
        }
        true
    }

    /// How many legal actions the document's viewer has (none while no document is held).
    pub fn legal_count(&self) -> usize {
        if self.doc.is_some() { self.legal } else { 0 }
    }

    /// The `act` message that sends back the `i`-th legal action against the version held,
    /// as text: the action's own text as it came, when nothing opened it. `None` if there
    /// is no such action, or it is not a value (which the server never sends).
    pub fn act_text(&mut self, i: usize) -> Option<String> {
        let version = self.version;
        let node = self.doc.as_mut()?.get("/legal")?.index(i)?;
        let action = match node.as_text() {
            Some(text) => text.to_string(),
            None => node.to_value()?.to_string(),
        };
        Some(format!(
            r#"{{"type":"act","version":{version},"action":{action}}}"#
        ))
    }

    /// `"open"`, `"playing"`, `"finished"`, `"abandoned"` (empty without a document).
    pub fn status(&self) -> &str {
        if self.doc.is_some() { &self.status } else { "" }
    }

    /// Whether the match is over (or the table gone for good).
    pub fn over(&self) -> bool {
        matches!(self.status(), "finished" | "abandoned")
    }

    /// The seat this socket plays, if any.
    pub fn seat(&self) -> Option<usize> {
        self.doc.as_ref().and(self.seat)
    }
}

/// A part of a typed message, written as checked JSON text.
fn raw<T: Serialize>(v: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).expect("a typed message part serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::PatchOp;

    #[test]
    fn metrics_values_and_labels() {
        let m = Metrics(
            "# HELP x\nfib_actions_accepted_total 42\nfib_actions_rejected_total{code=\"stale_version\"} 3\n"
                .into(),
        );
        assert_eq!(m.value("fib_actions_accepted_total"), Some(42.0));
        assert_eq!(m.value("fib_actions"), None);
        assert_eq!(
            m.labelled("fib_actions_rejected_total"),
            vec![("code=\"stale_version\"".to_string(), 3.0)]
        );
    }

    #[test]
    fn the_actor_is_the_first_event_object_naming_a_seat() {
        let events = |t: &str| serde_json::from_str::<Vec<Box<RawValue>>>(t).unwrap();
        assert_eq!(
            actor(&events(r#"[[3], {"type":"x"}, {"seat":2}, {"seat":1}]"#)),
            Some(2)
        );
        assert_eq!(actor(&events(r#"[{"seat":null}, 4]"#)), None);
        assert_eq!(actor(&[]), None);
    }

    #[test]
    fn what_a_path_touches() {
        assert!(touches("/legal", "/legal"));
        assert!(touches("/legal/3", "/legal"));
        assert!(!touches("/legalx", "/legal"));
        assert!(touches("/table", "/table/status"));
        assert!(touches("", "/table/status"));
        assert!(!touches("/tab", "/table/status"));
        assert!(!touches("/table/seats/0", "/table/status"));
        assert!(!touches("/view/legal", "/legal"));
    }

    #[test]
    fn doc_follows_state_and_patches() {
        let mut d = TableDoc::default();
        let state = json!({
            "type": "state", "version": 5,
            "table": {"id": uuid::Uuid::nil(), "game": "trump", "options": null, "private": false,
                "status": "playing", "bots": null, "seats": [{"kind": "empty"}], "spectators": 0,
                "round": 1, "to_act": [0], "scores": [0], "winners": null, "created_at": 0,
                "pace": {"kind": "untimed"}, "clocks": [], "parked": false},
            "you": {"kind": "player", "seat": 0}, "view": {"hand": [1, 2]},
            "legal": [{"play": 1}, {"play": 2}], "events": [], "fairness": []
        });
        assert!(matches!(
            d.take(&state.to_string()),
            Incoming::Updated {
                version: 5,
                full: true,
                actor: None
            }
        ));
        assert_eq!(d.legal_count(), 2);
        let act = d.act_text(1).unwrap();
        assert_eq!(act, r#"{"type":"act","version":5,"action":{"play":2}}"#);
        assert!(matches!(
            serde_json::from_str::<protocol::ClientMsg>(&act).unwrap(),
            protocol::ClientMsg::Act { version: 5, action } if action == json!({"play": 2})
        ));
        assert_eq!(d.act_text(2), None);
        assert_eq!(d.seat(), Some(0));
        // A patch that reaches none of the parts read leaves them as they were.
        let p = json!({"type": "patch", "from": 5, "version": 6, "events": [],
            "ops": [{"op": "remove", "path": "/view/hand/1"}]});
        assert!(matches!(
            d.take(&p.to_string()),
            Incoming::Updated { version: 6, .. }
        ));
        assert_eq!(
            (d.legal_count(), d.status(), d.seat()),
            (2, "playing", Some(0))
        );
        // Replacing a container of a part reads it again: the seat goes with `/you`.
        let p = json!({"type": "patch", "from": 6, "version": 7, "events": [],
            "ops": [{"op": "replace", "path": "/you", "value": {"kind": "spectator"}}]});
        assert!(matches!(
            d.take(&p.to_string()),
            Incoming::Updated { version: 7, .. }
        ));
        assert_eq!((d.legal_count(), d.seat()), (2, None));
        d.doc
            .as_mut()
            .unwrap()
            .apply([TextOp::from(PatchOp::Replace {
                path: "/you".into(),
                value: json!({"kind": "player", "seat": 0}),
            })])
            .unwrap();
        d.read_back();
        assert_eq!(d.seat(), Some(0));
        // Back to the state, for what follows.
        assert!(matches!(
            d.take(&state.to_string()),
            Incoming::Updated { version: 5, .. }
        ));
        let p = json!({"type": "patch", "from": 5, "version": 6,
            "events": [{"type": "card_played", "seat": 1}, {"type": "trick_won", "winner": 0}], "ops": [
            {"op": "remove", "path": "/view/hand/0"},
            {"op": "replace", "path": "/legal", "value": []},
            {"op": "replace", "path": "/table/status", "value": "finished"}]});
        assert!(matches!(
            d.take(&p.to_string()),
            Incoming::Updated {
                version: 6,
                actor: Some(1),
                ..
            }
        ));
        assert_eq!(d.legal_count(), 0);
        assert!(d.over());
        // Written as the server writes it (read the quick way, `patch::TextPatchMessage`).
        let written = r#"{"type":"patch","from":6,"version":7,"ops":[{"op":"add","path":"/view/hand/-","value":3},{"op":"remove","path":"/legal/0"},{"op":"replace","path":"/table/status","value":"playing"},{"op":"replace","path":"/table/winners","value":null}],"events":[{"seat":0}]}"#;
        let legal = r#"[{"play":9}]"#.to_string();
        let set = PatchOp::Replace {
            path: "/legal".into(),
            value: serde_json::from_str(&legal).unwrap(),
        };
        d.doc.as_mut().unwrap().apply([TextOp::from(set)]).unwrap();
        assert!(matches!(
            d.take(written),
            Incoming::Updated {
                version: 7,
                actor: Some(0),
                ..
            }
        ));
        let held = d.doc.as_ref().unwrap().to_value().unwrap();
        assert_eq!(held["view"]["hand"], json!([2, 3]));
        assert_eq!(d.legal_count(), 0);
        assert_eq!(d.status(), "playing");
        assert_eq!(held["table"]["winners"], Value::Null);
        // An operation of the wrong shape is not taken the quick way, and is undecodable.
        let bad =
            r#"{"type":"patch","from":7,"version":8,"ops":[{"op":"add","path":"/x"}],"events":[]}"#;
        assert!(matches!(d.take(bad), Incoming::Undecodable(_)));
        // A patch from a version we do not hold.
        let p = json!({"type": "patch", "from": 9, "version": 10, "events": [], "ops": []});
        assert!(matches!(d.take(&p.to_string()), Incoming::Mismatch));
        assert!(d.doc.is_none());
        assert!(matches!(
            d.take("{\"type\":\"dance\"}"),
            Incoming::Undecodable(_)
        ));
    }
}
