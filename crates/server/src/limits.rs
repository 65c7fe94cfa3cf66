//! Abuse limits per client address: request rates on the endpoints that create things
//! (guests, tables) or seat players, and the number of WebSockets one address may hold
//! open. Each refusal is a 429 with `Retry-After` and a specific code, and is counted in
//! `/metrics`.
//!
//! The client's address is the socket's peer, unless that peer is a trusted proxy
//! (`--trusted-proxies`, addresses or networks): then it is the rightmost address of
//! `X-Forwarded-For` that is not itself a trusted proxy (the leftmost ones can be made up
//! by the client; an entry that is not an address ends the walk at the peer, so garbage
//! cannot hide a made-up address behind it). IPv6 addresses are grouped by their /64,
//! which one subscriber usually holds whole.
//!
//! Rates are GCRA limiters (`governor`) keyed by address, one per [`Class`] of endpoint: a
//! new kind of endpoint (account sign-up, sign-in) gets a class and a setting, and its
//! route the [`limit`] layer. Their state is pruned every minute so that addresses seen
//! once do not stay in memory.
//!
//! The cap on open tables per player is checked and the new table stored under a lock of
//! that player ([`Limits::open_tables`]), so that simultaneous requests cannot all pass the
//! count before any of them is stored.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::config::Proxies;
use crate::error::ApiError;

/// How many locks the open-table check is spread over: players whose ids fall on the same
/// lock wait for each other only while one of them creates a table.
const OPEN_TABLE_LOCKS: usize = 64;

/// A class of limited endpoint: one rate per class and address. To limit a new kind of
/// endpoint (account sign-up, sign-in), add a class here with its setting in `Config` and
/// its line in [`Limits::new`], and give its route `.layer(limited(Class::…))` in `app`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `POST /api/guest`.
    Guest,
    /// `POST /api/account/signin` (per address; [`Limits::sign_in`] limits per account).
    SignIn,
    /// `POST /api/tables`, `POST /api/daily/solitaire`, `POST /api/tournaments`.
    CreateTable,
    /// `POST /api/tables/{id}/join`.
    Join,
    /// `GET /ws/table/{id}`, `GET /ws/lobby`: WebSockets opened (the number held open is
    /// capped apart, [`Limits::socket`]). A socket opened and closed in a loop would
    /// otherwise make every table it visits tell everyone there of each spectator.
    Socket,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Guest => "guest",
            Class::SignIn => "signin",
            Class::CreateTable => "create_table",
            Class::Join => "join",
            Class::Socket => "socket",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Class::Guest => "new guests",
            Class::SignIn => "sign-in attempts",
            Class::CreateTable => "new tables (daily games and tournaments included)",
            Class::Join => "seat requests",
            Class::Socket => "new WebSockets",
        }
    }
}

struct Rate {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    per_minute: u32,
}

pub struct Limits {
    /// The cluster's shared secret (`cluster`): a request carrying it was forwarded by
    /// another node, which names the client.
    pub node_secret: std::sync::OnceLock<String>,
    rates: Vec<(Class, Rate)>,
    trusted: Vec<Proxies>,
    /// Sign-in attempts per account (keyed by the username's key).
    per_account: Option<(governor::DefaultKeyedRateLimiter<String>, u32)>,
    max_sockets: u32,
    sockets: Mutex<HashMap<IpAddr, u32>>,
    max_open_tables: u32,
    open_table_locks: Vec<tokio::sync::Mutex<()>>,
    clock: DefaultClock,
}

impl Limits {
    pub fn new(config: &crate::config::Config) -> Self {
        let mut rates = Vec::new();
        for (class, per_minute) in [
            (Class::Guest, config.guests_per_minute),
            (Class::SignIn, config.signins_per_minute),
            (Class::CreateTable, config.tables_per_minute),
            (Class::Join, config.joins_per_minute),
            (Class::Socket, config.sockets_per_minute),
        ] {
            // 0: no limit for this class.
            if let Some(n) = NonZeroU32::new(per_minute) {
                rates.push((
                    class,
                    Rate {
                        limiter: DefaultKeyedRateLimiter::keyed(Quota::per_minute(n)),
                        per_minute,
                    },
                ));
            }
        }
        let per_account = NonZeroU32::new(config.signins_per_account).map(|n| {
            let quota = Quota::per_minute(NonZeroU32::MIN).allow_burst(n);
            (DefaultKeyedRateLimiter::keyed(quota), n.get())
        });
        Limits {
            node_secret: std::sync::OnceLock::new(),
            rates,
            per_account,
            trusted: config.trusted_proxies.clone(),
            max_sockets: config.sockets_per_address,
            sockets: Mutex::new(HashMap::new()),
            max_open_tables: config.open_tables_per_player,
            open_table_locks: (0..OPEN_TABLE_LOCKS)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            clock: DefaultClock::default(),
        }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted.iter().any(|p| p.contains(ip))
    }

    /// The address a request comes from (see the module's header).
    pub fn client(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> IpAddr {
        let peer = peer.map_or(IpAddr::from([0, 0, 0, 0]), |p| p.ip().to_canonical());
        // Forwarded by another node of the cluster, which names the client it serves.
        if let (Some(secret), Some(v)) = (
            self.node_secret.get(),
            headers.get(crate::node::NODE_HEADER),
        ) && crate::node::same_secret(v.as_bytes(), secret.as_bytes())
            && let Some(ip) = headers
                .get(crate::node::CLIENT_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<IpAddr>().ok())
        {
            return group(ip);
        }
        if !self.trusts(peer) {
            return group(peer);
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            // A line that is not even text is garbage, like `unknown`.
            .flat_map(|v| v.to_str().unwrap_or("?").split(','))
            .map(str::trim)
            .collect();
        // From the right: the trusted proxies' own hops are skipped; the first other hop
        // is the client. One that does not parse (`unknown`) ends the walk at the peer:
        // anything left of it may have been written by the client. A port is fine
        // (`1.2.3.4:5678`, as some proxies write them).
        for hop in hops.iter().rev() {
            match hop_address(hop) {
                Some(a) if self.trusts(a) => continue,
                Some(a) => return group(a),
                None => return group(peer),
            }
        }
        group(peer)
    }

    /// Takes one request of `class` from `client`'s allowance.
    pub fn check(&self, class: Class, client: IpAddr) -> Result<(), ApiError> {
        let Some((_, rate)) = self.rates.iter().find(|(c, _)| *c == class) else {
            return Ok(());
        };
        rate.limiter.check_key(&client).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            ApiError::RateLimited {
                code: "rate_limited",
                message: format!(
                    "too many {} from your address: at most {} a minute; try again in {} s",
                    class.what(),
                    rate.per_minute,
                    retry_secs(wait)
                ),
                retry_after: retry_secs(wait),
                limit: class.as_str(),
            }
        })
    }

    /// Takes one sign-in attempt from the account `username_key`'s allowance, whether or
    /// not such an account exists (so the answer says nothing about that).
    pub fn sign_in(&self, username_key: &str) -> Result<(), ApiError> {
        let Some((limiter, burst)) = &self.per_account else {
            return Ok(());
        };
        limiter
            .check_key(&username_key.to_string())
            .map_err(|not_until| {
                let wait = retry_secs(not_until.wait_time_from(self.clock.now()));
                ApiError::RateLimited {
                    code: "too_many_attempts",
                    message: format!(
                        "too many sign-in attempts to this account: {burst} in a row, then one \
                         a minute; try again in {wait} s"
                    ),
                    retry_after: wait,
                    limit: "signin_account",
                }
            })
    }

    /// Holds one WebSocket of `client` until the returned guard drops, or refuses it when
    /// the address already holds its maximum.
    pub fn socket(self: &Arc<Self>, client: IpAddr) -> Result<SocketSlot, ApiError> {
        let mut open = self.sockets.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(client).or_insert(0);
        if self.max_sockets != 0 && *n >= self.max_sockets {
            return Err(ApiError::RateLimited {
                code: "too_many_sockets",
                message: format!(
                    "your address already has {} WebSockets open here, the most allowed; close one first",
                    self.max_sockets
                ),
                retry_after: 5,
                limit: "sockets",
            });
        }
        *n += 1;
        Ok(SocketSlot {
            limits: self.clone(),
            client,
        })
    }

    /// Checks the cap on open tables for `player` (`--open-tables-per-player`), counting
    /// them in `store`. The returned guard must be held until the new table is stored:
    /// requests of the same player wait for it, so that each one counts the tables stored
    /// before it.
    pub async fn open_tables(
        &self,
        store: &dyn store::Store,
        metrics: &realtime::Metrics,
        player: uuid::Uuid,
    ) -> Result<Option<tokio::sync::MutexGuard<'_, ()>>, ApiError> {
        let cap = self.max_open_tables;
        if cap == 0 {
            return Ok(None);
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        player.hash(&mut h);
        let lock = &self.open_table_locks[(h.finish() % OPEN_TABLE_LOCKS as u64) as usize];
        let guard = lock.lock().await;
        if store.open_tables_created_by(player).await? >= i64::from(cap) {
            metrics.limited("open_tables");
            return Err(ApiError::RateLimited {
                code: "too_many_open_tables",
                message: format!(
                    "you already have {cap} open tables waiting for players, the most allowed: \
                     start one, leave one (the last player to leave closes it), or wait until \
                     one expires"
                ),
                retry_after: 60,
                limit: "open_tables",
            });
        }
        Ok(Some(guard))
    }

    /// Forgets addresses whose allowance is whole again: called every minute.
    pub fn prune(&self) {
        for (_, rate) in &self.rates {
            rate.limiter.retain_recent();
            rate.limiter.shrink_to_fit();
        }
        if let Some((limiter, _)) = &self.per_account {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// Addresses tracked now, for tests of pruning.
    pub fn tracked(&self) -> usize {
        self.rates.iter().map(|(_, r)| r.limiter.len()).sum()
    }
}

/// One open WebSocket of an address; dropping it frees the place.
pub struct SocketSlot {
    limits: Arc<Limits>,
    client: IpAddr,
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        let mut open = self
            .limits
            .sockets
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// Whole seconds to wait, at least 1.
fn retry_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0).max(u64::from(d.is_zero()))
}

/// One `X-Forwarded-For` entry: an address, possibly with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:443`, as some proxies write them).
fn hop_address(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim();
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .map(|a| a.to_canonical())
}

/// IPv6 addresses by their /64; IPv4 as they are.
fn group(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(trusted: &[&str], per_minute: u32, sockets: u32) -> Arc<Limits> {
        let mut c = crate::config::Config::for_tests("sqlite::memory:");
        c.trusted_proxies = trusted.iter().map(|a| a.parse().unwrap()).collect();
        c.guests_per_minute = per_minute;
        c.sockets_per_address = sockets;
        Arc::new(Limits::new(&c))
    }

    fn headers(xff: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", xff.parse().unwrap());
        h
    }

    #[test]
    fn forwarded_addresses_count_only_behind_a_trusted_proxy() {
        let peer: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let untrusted = limits(&[], 1, 0);
        assert_eq!(
            untrusted.client(Some(peer), &headers("1.2.3.4")),
            "10.0.0.1".parse::<IpAddr>().unwrap(),
            "a client cannot choose its address"
        );
        let proxied = limits(&["10.0.0.1", "10.0.0.2"], 1, 0);
        // The rightmost untrusted hop: what the client wrote on the left is ignored.
        assert_eq!(
            proxied.client(Some(peer), &headers("6.6.6.6, 1.2.3.4, 10.0.0.2")),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            proxied.client(Some(peer), &HeaderMap::new()),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
        // A hop the proxy wrote in a form that does not parse: nothing left of it is
        // believed.
        assert_eq!(
            proxied.client(Some(peer), &headers("1.2.3.4, unknown")),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn trusted_proxies_may_be_networks() {
        let peer: SocketAddr = "10.1.2.3:5000".parse().unwrap();
        let l = limits(&["10.0.0.0/8", "fd00::/8"], 1, 0);
        // Two proxies of the private network, then the client.
        assert_eq!(
            l.client(Some(peer), &headers("1.2.3.4, 10.9.9.9")),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        let v6: SocketAddr = "[fd12::1]:443".parse().unwrap();
        assert_eq!(
            l.client(Some(v6), &headers("2001:db8:5:6::7")),
            "2001:db8:5:6::".parse::<IpAddr>().unwrap()
        );
        // Outside the networks: the peer itself.
        let outside: SocketAddr = "11.0.0.1:1".parse().unwrap();
        assert_eq!(
            l.client(Some(outside), &headers("1.2.3.4")),
            "11.0.0.1".parse::<IpAddr>().unwrap()
        );
        // An IPv4-mapped peer is its IPv4 address, for the networks too.
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:1".parse().unwrap();
        assert_eq!(
            l.client(Some(mapped), &headers("1.2.3.4")),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        let all: Proxies = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        assert!(!all.contains("::1".parse().unwrap()));
    }

    #[test]
    fn a_bad_proxy_setting_is_refused_with_what_is_wrong() {
        for bad in [
            "",
            "proxy.local",
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/x",
            "1.2.3.4/",
        ] {
            let e = bad.parse::<Proxies>().unwrap_err();
            assert!(e.contains(bad), "{bad}: {e}");
        }
        assert_eq!(
            "::ffff:10.0.0.1".parse::<Proxies>().unwrap(),
            "10.0.0.1".parse::<Proxies>().unwrap()
        );
    }

    #[test]
    fn the_proxy_flag_takes_a_list_and_names_a_bad_entry() {
        use clap::Parser;
        let cli = crate::config::Cli::try_parse_from([
            "fibonacci-cards",
            "--trusted-proxies",
            "127.0.0.1,10.0.0.0/8,fd00::/8",
        ])
        .unwrap();
        assert_eq!(cli.config.trusted_proxies.len(), 3);
        assert!(cli.config.trusted_proxies[1].contains("10.200.0.1".parse().unwrap()));
        let e = crate::config::Cli::try_parse_from([
            "fibonacci-cards",
            "--trusted-proxies",
            "127.0.0.1,10.0.0.0/40",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("\"10.0.0.0/40\": the prefix length must be 0 to 32"),
            "{e}"
        );
    }

    #[test]
    fn forwarded_hops_with_ports_count_and_garbage_ends_the_walk() {
        let peer: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let l = limits(&["10.0.0.1", "10.0.0.2"], 1, 0);
        assert_eq!(
            l.client(Some(peer), &headers("1.2.3.4:5678")),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            l.client(Some(peer), &headers("[2001:db8::1]:443")),
            "2001:db8::".parse::<IpAddr>().unwrap()
        );
        // Behind garbage, a made-up address is not believed: the peer is the client.
        assert_eq!(
            l.client(Some(peer), &headers("6.6.6.6, unknown, 10.0.0.2")),
            "10.0.0.1".parse::<IpAddr>().unwrap()
        );
        let mut h = headers("6.6.6.6");
        h.append(
            "x-forwarded-for",
            axum::http::HeaderValue::from_bytes(b"\xff").unwrap(),
        );
        assert_eq!(
            l.client(Some(peer), &h),
            "10.0.0.1".parse::<IpAddr>().unwrap(),
            "a line that is not text is garbage too"
        );
        // Several header lines are one list, in order.
        let mut h = headers("6.6.6.6");
        h.append("x-forwarded-for", "5.5.5.5".parse().unwrap());
        assert_eq!(
            l.client(Some(peer), &h),
            "5.5.5.5".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn pruning_forgets_addresses_whose_allowance_is_whole_again() {
        // 600 a minute: one request is paid back after 100 ms.
        let l = limits(&[], 600, 0);
        let a: IpAddr = "1.1.1.1".parse().unwrap();
        l.check(Class::Guest, a).unwrap();
        l.check(Class::Guest, "2.2.2.2".parse().unwrap()).unwrap();
        l.prune();
        assert_eq!(l.tracked(), 2, "a recent request is remembered");
        std::thread::sleep(Duration::from_millis(250));
        l.check(Class::Guest, a).unwrap();
        l.prune();
        assert_eq!(l.tracked(), 1, "only the address seen lately is left");
    }

    #[test]
    fn ipv6_clients_are_grouped_by_their_64() {
        let l = limits(&[], 1, 0);
        let a: SocketAddr = "[2001:db8:1:2:aaaa::1]:1".parse().unwrap();
        let b: SocketAddr = "[2001:db8:1:2:bbbb::9]:1".parse().unwrap();
        assert_eq!(
            l.client(Some(a), &HeaderMap::new()),
            l.client(Some(b), &HeaderMap::new())
        );
        let mapped: SocketAddr = "[::ffff:1.2.3.4]:1".parse().unwrap();
        assert_eq!(
            l.client(Some(mapped), &HeaderMap::new()),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn a_rate_refuses_past_its_burst_with_a_retry_time_and_other_addresses_are_free() {
        let l = limits(&[], 2, 0);
        let a: IpAddr = "1.1.1.1".parse().unwrap();
        let b: IpAddr = "2.2.2.2".parse().unwrap();
        assert!(l.check(Class::Guest, a).is_ok());
        assert!(l.check(Class::Guest, a).is_ok());
        match l.check(Class::Guest, a) {
            Err(ApiError::RateLimited {
                code, retry_after, ..
            }) => {
                assert_eq!(code, "rate_limited");
                assert!((1..=30).contains(&retry_after), "{retry_after}");
            }
            other => panic!("{other:?}"),
        }
        assert!(l.check(Class::Guest, b).is_ok());
        // A class with no limit configured (0) is never refused.
        for _ in 0..100 {
            assert!(l.check(Class::Join, a).is_ok());
        }
        assert_eq!(l.tracked(), 2);
    }

    #[test]
    fn sockets_are_capped_per_address_and_freed_on_drop() {
        let l = limits(&[], 0, 2);
        let a: IpAddr = "1.1.1.1".parse().unwrap();
        let one = l.socket(a).unwrap();
        let _two = l.socket(a).unwrap();
        assert!(matches!(
            l.socket(a),
            Err(ApiError::RateLimited {
                code: "too_many_sockets",
                ..
            })
        ));
        assert!(l.socket("2.2.2.2".parse().unwrap()).is_ok());
        drop(one);
        assert!(l.socket(a).is_ok());
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_secs(Duration::from_millis(1000)), 1);
        assert_eq!(retry_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_secs(Duration::ZERO), 1);
    }
}
