//! TCP connections per client address, counted where they are accepted.
//!
//! The per-address limits of `limits` act on requests and WebSocket upgrades; a connection
//! that never finishes its request (a slow or silent one: "slowloris") reaches none of
//! them, and holds a file descriptor and some memory for as long as its peer likes. A walk
//! opened 20,000 such connections from one address: the server ran out of descriptors and
//! `/healthz` went unanswered until they closed. So each address may hold at most
//! `--connections-per-address` connections at once; one more is closed as it is accepted.
//! A trusted proxy is never limited (every client behind it shares its address; nginx
//! holds slow clients itself), nor another live node of the cluster (it forwards its
//! clients' requests and sockets for the tables this node runs).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::config::Proxies;

/// Open connections by address.
#[derive(Default)]
struct Counts {
    open: HashMap<IpAddr, u32>,
    /// When a refusal was last logged: at most one line a minute.
    logged: Option<Instant>,
    refused: u64,
}

/// A listener that refuses an address's connections beyond `max` (0: no limit).
pub struct Limited<L> {
    inner: L,
    max: u32,
    trusted: Vec<Proxies>,
    /// Another live node's address (`node::Cluster::is_peer`).
    peer: Box<dyn Fn(IpAddr) -> bool + Send>,
    /// Told of each connection closed for the limit (`/metrics`: `limited{limit="connections"}`).
    on_refused: Box<dyn Fn() + Send>,
    counts: Arc<Mutex<Counts>>,
}

impl<L> Limited<L> {
    pub fn new(
        inner: L,
        max: u32,
        trusted: Vec<Proxies>,
        peer: impl Fn(IpAddr) -> bool + Send + 'static,
        on_refused: impl Fn() + Send + 'static,
    ) -> Self {
        Limited {
            inner,
            max,
            trusted,
            peer: Box::new(peer),
            on_refused: Box::new(on_refused),
            counts: Arc::default(),
        }
    }
}

impl<L> axum::serve::Listener for Limited<L>
where
    L: axum::serve::Listener<Addr = SocketAddr>,
{
    type Io = Counted<L::Io>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (io, addr) = self.inner.accept().await;
            let ip = addr.ip();
            if self.max == 0 || self.trusted.iter().any(|p| p.contains(ip)) || (self.peer)(ip) {
                return (
                    Counted {
                        inner: io,
                        ip: None,
                        counts: self.counts.clone(),
                    },
                    addr,
                );
            }
            let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            let open = c.open.entry(ip).or_default();
            if *open >= self.max {
                c.refused += 1;
                let now = Instant::now();
                if c.logged.is_none_or(|t| now - t >= Duration::from_secs(60)) {
                    tracing::warn!(
                        address = %ip,
                        max = self.max,
                        refused = c.refused,
                        "an address holds --connections-per-address connections: closing \
                         its new ones"
                    );
                    c.logged = Some(now);
                }
                drop(c);
                drop(io);
                (self.on_refused)();
                continue;
            }
            *open += 1;
            drop(c);
            return (
                Counted {
                    inner: io,
                    ip: Some(ip),
                    counts: self.counts.clone(),
                },
                addr,
            );
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// An accepted connection, counted for its address until it is dropped.
pub struct Counted<T> {
    inner: T,
    ip: Option<IpAddr>,
    counts: Arc<Mutex<Counts>>,
}

impl<T> Counted<T> {
    /// The connection itself.
    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

impl<T> Drop for Counted<T> {
    fn drop(&mut self) {
        let Some(ip) = self.ip else {
            return;
        };
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = c.open.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                c.open.remove(&ip);
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
