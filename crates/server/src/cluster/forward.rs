//! Routing: a request or WebSocket for a table that another live node runs is forwarded to
//! it (HTTP by a client request, a socket by a socket to the owner, frames passed both
//! ways); a table nobody is connected to moves to the node its first socket reaches.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use protocol::TableInfo;
use uuid::Uuid;

use crate::node::*;
use crate::state::{AppState, lock};

use super::*;

/// Where a table is served from.
pub(super) enum Place {
    Here,
    There(String),
}

pub(super) async fn locate(app: &AppState, id: Uuid) -> Place {
    if !app.cluster.multi || app.table(id).is_some() {
        return Place::Here;
    }
    match app.store.table_owner(id).await {
        Ok(Some(store::TableOwner {
            node: Some(node),
            live_address: Some(address),
            ..
        })) if node != app.cluster.node => Place::There(address),
        _ => Place::Here,
    }
}

/// A table's info from its owner on another node, asked with the client's own
/// credentials (`headers`): for a request that names no table and so is not forwarded.
pub async fn remote_info(app: &AppState, id: Uuid, headers: &HeaderMap) -> Option<TableInfo> {
    let Place::There(address) = locate(app, id).await else {
        return None;
    };
    let client = std::net::IpAddr::from([0, 0, 0, 0]);
    let res = app
        .cluster
        .http
        .get(format!("{address}/api/tables/{id}"))
        .headers(forwarded_headers(app, headers, client))
        .send()
        .await
        .ok()?;
    if !res.status().is_success() {
        return None;
    }
    app.metrics.cluster("forwarded_http");
    res.json::<TableInfo>().await.ok()
}

/// The table id in a path that names one (`/api/tables/{id}/…`, `/table/{id}…`,
/// `/ws/table/{id}`).
pub(super) fn table_of(path: &str) -> Option<Uuid> {
    let rest = path
        .strip_prefix("/api/tables/")
        .or_else(|| path.strip_prefix("/table/"))
        .or_else(|| path.strip_prefix("/ws/table/"))?;
    Uuid::parse_str(rest.split('/').next()?).ok()
}

/// The path of the nodes' own request "release this table to me" ([`adopt`]): answered by
/// [`forward`] itself for a request that carries the cluster's secret, and by nobody else
/// (it is no route of the API, and a client gets the API's 404).
pub(super) const RELEASE_PATH: &str = "/internal/release/";

/// Middleware on every request: a table owned by another live node is served by
/// forwarding the request (or the WebSocket) to it, unless its socket can take the table
/// over ([`adopt`]); and the nodes' release requests are answered here.
pub async fn forward(State(app): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(id) = req.uri().path().strip_prefix(RELEASE_PATH) {
        return release(&app, id, req.headers()).await;
    }
    let Some(id) = table_of(req.uri().path()) else {
        return next.run(req).await;
    };
    let address = match locate(&app, id).await {
        Place::Here => return next.run(req).await,
        Place::There(address) => address,
    };
    if app.cluster.from_node(req.headers()) {
        // Forwarded once already: whoever sent it believed this node the owner. Handling it
        // here claims nothing a live owner holds (`table::open`), and forwarding again could
        // go round in circles.
        return next.run(req).await;
    }
    if let Err(e) = crate::auth::origin_allowed(req.headers(), &app.config.allowed_origins) {
        return e.into_response();
    }
    let client = req
        .extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let client = app.limits.client(client, req.headers());
    let is_ws = req
        .headers()
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let mut req = req;
    if is_ws && let Some(opening) = adopt(&app, &address, id).await {
        req.extensions_mut().insert(std::sync::Arc::new(opening));
        return next.run(req).await;
    }
    let result = if is_ws {
        forward_ws(&app, &address, client, req).await
    } else {
        forward_http(&app, &address, client, req).await
    };
    result.unwrap_or_else(|e| {
        app.metrics.cluster("forward_failures");
        tracing::warn!(table = %id, owner = %address, error = %e, "could not reach a table's owner: table_moving");
        // The owner cannot be reached or the table is changing owners: the same answer as
        // the core's (`table::open`), and the client tries again in a moment.
        ApiError::from(realtime::TableError::Moving).into_response()
    })
}

/// Takes a table over from its owner when a socket for it reaches this node and nobody is
/// connected to it on the owner: the first socket of a new table (created on whichever
/// node the request reached) moves the table to the node the load balancer sends its
/// sockets to, so that they need no forwarding. With nginx's consistent hash on the table
/// id, that is the node every later socket reaches too. The owner's task ends and releases
/// the table (nothing in flight: it answers between two commands), then this node claims
/// it at a new epoch and restores it. `false`: forward as usual.
pub(super) async fn adopt(
    app: &AppState,
    address: &str,
    id: Uuid,
) -> Option<realtime::table::Opening> {
    if app.core.draining() {
        return None;
    }
    let secret = app.cluster.secret.get()?;
    // One request for a table at a time from this node; another socket meanwhile is
    // forwarded. No lock is held while the owner is asked.
    if !lock(&app.cluster.adopting).insert(id) {
        return None;
    }
    struct Asking<'a>(&'a AppState, Uuid);
    impl Drop for Asking<'_> {
        fn drop(&mut self) {
            lock(&self.0.cluster.adopting).remove(&self.1);
        }
    }
    let _asking = Asking(app, id);
    let asked = app
        .cluster
        .http
        .post(format!("{address}{RELEASE_PATH}{id}"))
        .header(NODE_HEADER, secret.as_str())
        .header(NODE_ID_HEADER, app.cluster.node.as_str())
        // The owner refuses a request older than RELEASE_WITHIN; this waits a little more,
        // so that a hand-over it did not hear of is rare (and the beat starts such a table,
        // `check_owned`).
        .timeout(RELEASE_WITHIN + Duration::from_secs(1))
        .send()
        .await;
    let epoch = match asked {
        Ok(res) if res.status().is_success() => {
            res.text().await.ok().and_then(|t| t.parse::<i64>().ok())
        }
        _ => None,
    }?;
    // The table is this node's at `epoch` now; it is started under `opening`, like every
    // table this node starts.
    let _one = app.core.opening.lock().await;
    let restored = match app.store.load_table(id).await {
        Ok(Some(st)) => realtime::table::restore(app.core.clone(), st, epoch).ok(),
        _ => None,
    };
    match restored {
        Some(t) => {
            let h = realtime::table::spawn(t);
            app.core.mark_broken(id, false);
            app.metrics.cluster("adopted");
            // Held by the request until its socket reaches the table: no third node takes
            // the table in between.
            Some(h.opening())
        }
        None => {
            tracing::error!(table = %id, "could not start a table handed over to this node");
            // Any node may take it now.
            let _ = app.store.release_table(id, &app.cluster.node, epoch).await;
            None
        }
    }
}

/// How long after a node asked for a table its owner still hands it over.
pub(super) const RELEASE_WITHIN: Duration = Duration::from_secs(2);

/// The owner's side of [`adopt`]: the new epoch once the table is the asking node's, or
/// `none`.
pub(super) async fn release(app: &AppState, id: &str, headers: &HeaderMap) -> Response {
    if !app.cluster.from_node(headers) {
        return crate::extract::not_found_api().await.into_response();
    }
    let to = headers
        .get(NODE_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let table = Uuid::parse_str(id).ok().and_then(|id| app.table(id));
    let handed = match (table, to) {
        (Some(h), Some(to)) if !app.core.draining() => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let sent = h
                .send(realtime::table::Cmd::Release {
                    to: to.clone(),
                    before: Instant::now() + RELEASE_WITHIN,
                    reply: tx,
                })
                .await;
            match sent {
                Ok(()) => rx.await.ok().flatten(),
                Err(_) => None,
            }
            .inspect(|_| tracing::info!(table = %id, to, "table handed to the node its first socket reached"))
        }
        _ => None,
    };
    handed
        .map_or_else(|| "none".to_string(), |e| e.to_string())
        .into_response()
}

/// Headers a forwarded request keeps: what the owner needs to know who asks (the cookie,
/// the bearer token), what the body is, and what the client takes back.
pub(super) const KEPT: [HeaderName; 6] = [
    header::COOKIE,
    header::AUTHORIZATION,
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::USER_AGENT,
    header::ACCEPT_LANGUAGE,
];

/// The headers of a forwarded request: the kept ones, the node's secret and the client's
/// address. No `Origin`: this node checked it, and the owner believes a node.
pub(super) fn forwarded_headers(
    app: &AppState,
    from: &HeaderMap,
    client: std::net::IpAddr,
) -> HeaderMap {
    let mut h = HeaderMap::new();
    for name in KEPT {
        for v in from.get_all(&name) {
            h.append(name.clone(), v.clone());
        }
    }
    if let Some(secret) = app.cluster.secret.get()
        && let Ok(v) = HeaderValue::from_str(secret)
    {
        h.insert(NODE_HEADER, v);
    }
    if let Ok(v) = HeaderValue::from_str(&client.to_string()) {
        h.insert(CLIENT_HEADER, v);
    }
    h
}

/// Headers of an answer that belong to the hop, not to the answer: the length and codings
/// are this connection's own (the compression layer compresses again for this client),
/// and the connection's own headers (RFC 9110 §7.6.1).
pub(super) fn hop_by_hop(name: &HeaderName) -> bool {
    [
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
        header::CONTENT_ENCODING,
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::UPGRADE,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
    ]
    .contains(name)
        || name.as_str() == "keep-alive"
}

pub(super) async fn forward_http(
    app: &AppState,
    address: &str,
    client: std::net::IpAddr,
    req: Request,
) -> Result<Response, String> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let body = axum::body::to_bytes(body, protocol::MAX_HTTP_BODY)
        .await
        .map_err(|e| format!("the request's body: {e}"))?;
    let res = app
        .cluster
        .http
        .request(parts.method.clone(), format!("{address}{path}"))
        .headers(forwarded_headers(app, &parts.headers, client))
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    app.metrics.cluster("forwarded_http");
    let status = res.status();
    let mut out = Response::builder().status(status);
    for (name, v) in res.headers() {
        if !hop_by_hop(name) {
            out = out.header(name, v);
        }
    }
    let bytes = res.bytes().await.map_err(|e| e.to_string())?;
    out.body(Body::from(bytes)).map_err(|e| e.to_string())
}

pub(super) async fn forward_ws(
    app: &AppState,
    address: &str,
    client: std::net::IpAddr,
    req: Request,
) -> Result<Response, String> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let (mut parts, _body) = req.into_parts();
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, app).await {
        Ok(u) => u,
        Err(rejection) => return Ok(rejection.into_response()),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let ws_base = address
        .strip_prefix("https://")
        .map(|a| format!("wss://{a}"))
        .or_else(|| address.strip_prefix("http://").map(|a| format!("ws://{a}")))
        .ok_or_else(|| format!("the owner's address {address:?} is not http(s)"))?;
    let mut up = format!("{ws_base}{path}")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    for (name, v) in &forwarded_headers(app, &parts.headers, client) {
        up.headers_mut().append(name.clone(), v.clone());
    }
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(Some(protocol::MAX_WS_MESSAGE))
        .max_frame_size(Some(protocol::MAX_WS_MESSAGE));
    let upstream = match tokio::time::timeout(
        FORWARD_TIMEOUT,
        tokio_tungstenite::connect_async_with_config(up, Some(config), true),
    )
    .await
    {
        Err(_) => return Err("no answer from the owner".into()),
        Ok(Ok((ws, _))) => ws,
        // The owner refused the socket (no such table, an invite needed, a limit): its
        // answer is the client's.
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(res))) => {
            let (parts, body) = res.into_parts();
            let mut out = Response::builder().status(parts.status);
            for (name, v) in &parts.headers {
                if !hop_by_hop(name) {
                    out = out.header(name, v);
                }
            }
            return out
                .body(Body::from(body.unwrap_or_default()))
                .map_err(|e| e.to_string());
        }
        Ok(Err(e)) => return Err(e.to_string()),
    };
    app.metrics.cluster("forwarded_ws");
    let app = app.clone();
    let token = match crate::ws::socket_token(&app) {
        Ok(t) => t,
        // Shutting down: refused as any socket is then (`server_draining`).
        Err(e) => return Ok(e.into_response()),
    };
    Ok(crate::ws::limits(upgrade)
        .on_upgrade(move |socket| async move {
            let _token = token;
            pipe(app, socket, upstream).await
        })
        .into_response())
}

/// Passes frames both ways between a client's socket and the owner's, until either ends.
/// The owner's close frame reaches the client as it is; an owner that vanished without one
/// (it died) closes the client with 1013, so it reconnects and finds the next owner.
pub(super) async fn pipe(
    app: AppState,
    client: WebSocket,
    upstream: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) {
    use tokio_tungstenite::tungstenite::Message as Up;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame as UpClose;
    app.metrics.ws_connections.fetch_add(1, Relaxed);
    let (mut c_tx, mut c_rx) = client.split();
    let (mut u_tx, mut u_rx) = upstream.split();
    let mut shutdown = app.shutdown.subscribe();
    let write = crate::ws::WRITE_TIMEOUT;
    let close = |code: u16, reason: &str| {
        Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_string().into(),
        }))
    };
    loop {
        tokio::select! {
            m = u_rx.next() => {
                let out = match m {
                    Some(Ok(Up::Text(t))) => Message::Text(t.as_str().into()),
                    Some(Ok(Up::Binary(b))) => Message::Binary(b),
                    Some(Ok(Up::Close(f))) => {
                        let f = f.map(|f| CloseFrame { code: f.code.into(), reason: f.reason.as_str().into() });
                        let _ = tokio::time::timeout(write, c_tx.send(Message::Close(f))).await;
                        break;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => {
                        let _ = tokio::time::timeout(write, c_tx.send(close(close_code::AGAIN, "reconnect to resync"))).await;
                        break;
                    }
                };
                if !matches!(tokio::time::timeout(write, c_tx.send(out)).await, Ok(Ok(()))) {
                    app.metrics.closed("write_timeout");
                    break;
                }
            }
            m = c_rx.next() => {
                let out = match m {
                    Some(Ok(Message::Text(t))) => Up::Text(t.as_str().into()),
                    Some(Ok(Message::Binary(b))) => Up::Binary(b),
                    Some(Ok(Message::Close(f))) => {
                        let f = f.map(|f| UpClose { code: f.code.into(), reason: f.reason.as_str().into() });
                        let _ = tokio::time::timeout(write, u_tx.send(Up::Close(f))).await;
                        break;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => {
                        let _ = tokio::time::timeout(write, u_tx.send(Up::Close(None))).await;
                        break;
                    }
                };
                if !matches!(tokio::time::timeout(write, u_tx.send(out)).await, Ok(Ok(()))) {
                    let _ = tokio::time::timeout(write, c_tx.send(close(close_code::AGAIN, "reconnect to resync"))).await;
                    break;
                }
            }
            _ = crate::state::stopping(&mut shutdown) => {
                let _ = tokio::time::timeout(write, c_tx.send(close(close_code::AWAY, "server restarting"))).await;
                let _ = tokio::time::timeout(write, u_tx.send(Up::Close(None))).await;
                break;
            }
        }
    }
    app.metrics.ws_connections.fetch_sub(1, Relaxed);
}
