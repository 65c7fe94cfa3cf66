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

pub use protocol::client::{Incoming, TableDoc, actor};
use protocol::{
    CreateTableRequest, CreateTableResponse, ErrorBody, GuestRequest, GuestResponse, TableInfo,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
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

    /// Asks for a finished match's analysis.
    pub async fn request_analysis(
        &self,
        token: &str,
        table: &str,
    ) -> Result<protocol::AnalysisStatus, HttpError> {
        let path = format!("/api/tables/{table}/analysis");
        self.post(
            "POST /api/tables/{id}/analysis",
            &path,
            Some(token),
            &json!({}),
        )
        .await
    }

    /// A match's analysis and its progress.
    pub async fn analysis(&self, table: &str) -> Result<protocol::AnalysisStatus, HttpError> {
        self.get(
            "GET /api/tables/{id}/analysis",
            &format!("/api/tables/{table}/analysis"),
        )
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
