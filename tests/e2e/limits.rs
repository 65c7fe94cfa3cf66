//! Abuse limits per client address, end to end: guest creation, table creation, joins,
//! WebSockets per address, open tables per player. Each refusal is a 429 with
//! `Retry-After` and a specific code; other addresses are not affected; a rate lifts after
//! its period. Addresses are told apart through `X-Forwarded-For` from a trusted proxy
//! (the test itself, on 127.0.0.1). Every test runs on SQLite and on Postgres.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::*;

/// POSTs `body` to `path` as coming from `addr` (through the trusted proxy).
async fn post_from(
    server: &Server,
    addr: &str,
    token: Option<&str>,
    path: &str,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut r = reqwest::Client::new()
        .post(format!("{}{path}", server.base))
        .header("x-forwarded-for", addr)
        .json(&body);
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry, r.json().await.unwrap_or(Value::Null))
}

async fn limited_server(db: &Db, tweak: impl FnOnce(&mut server::Config)) -> Server {
    Server::start_with(db, |c| {
        c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
        tweak(c);
    })
    .await
}

fn assert_429(status: u16, retry: &Option<String>, body: &Value, code: &str) {
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["code"], code, "{body}");
    let secs: u64 = retry
        .as_deref()
        .expect("a Retry-After header")
        .parse()
        .expect("Retry-After in seconds");
    assert!(secs >= 1, "{secs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_are_rate_limited_per_address_and_the_limit_lifts() {
    for db in databases().await {
        // 6 a minute: a burst of 6, then one more every 10 s (slow enough that the burst is
        // spent before any of it comes back, however loaded the machine).
        let server = limited_server(&db, |c| c.guests_per_minute = 6).await;
        let guest = |addr: &'static str, name: &'static str| {
            post_from(&server, addr, None, "/api/guest", json!({ "name": name }))
        };
        for _ in 0..6 {
            let (s, _, v) = guest("1.1.1.1", "Gus").await;
            assert_eq!(s, 200, "{v}");
        }
        let (s, retry, v) = guest("1.1.1.1", "One more").await;
        assert_429(s, &retry, &v, "rate_limited");
        assert!(v["message"].as_str().unwrap().contains("6 a minute"), "{v}");
        let wait: u64 = retry.unwrap().parse().unwrap();
        assert!(wait <= 10, "{wait}");
        // Another address is not affected; what a client writes left of the proxy's own hop
        // is not believed.
        let (s, _, v) = guest("2.2.2.2", "Bea").await;
        assert_eq!(s, 200, "{v}");
        let (s, _, v) = guest("9.9.9.9, 1.1.1.1", "Spoof").await;
        assert_eq!(s, 429, "the rightmost untrusted hop counts: {v}");
        // After the wait it asked for, the address may create a guest again.
        tokio::time::sleep(Duration::from_millis(wait * 1000 + 300)).await;
        let (s, _, v) = guest("1.1.1.1", "Later").await;
        assert_eq!(s, 200, "{v}");
        let m = metrics(&server).await;
        assert!(m.contains("fib_limited_total{limit=\"guest\"} 2"), "{m}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_creation_and_joins_are_rate_limited_per_address() {
    for db in databases().await {
        let server = limited_server(&db, |c| {
            c.tables_per_minute = 2;
            c.joins_per_minute = 1;
        })
        .await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let create = json!({"game": "trump", "seats": 2, "join": false});
        let mut tables = Vec::new();
        for _ in 0..2 {
            let (s, _, v) = post_from(
                &server,
                "3.3.3.3",
                Some(&ada.token),
                "/api/tables",
                create.clone(),
            )
            .await;
            assert_eq!(s, 201, "{v}");
            tables.push(v["table"]["id"].as_str().unwrap().to_string());
        }
        let (s, retry, v) = post_from(
            &server,
            "3.3.3.3",
            Some(&ada.token),
            "/api/tables",
            create.clone(),
        )
        .await;
        assert_429(s, &retry, &v, "rate_limited");
        let (s, _, v) =
            post_from(&server, "4.4.4.4", Some(&ada.token), "/api/tables", create).await;
        assert_eq!(s, 201, "another address: {v}");

        let join = |t: &str| format!("/api/tables/{t}/join");
        let (s, _, v) = post_from(
            &server,
            "5.5.5.5",
            Some(&ada.token),
            &join(&tables[0]),
            json!({}),
        )
        .await;
        assert_eq!(s, 200, "{v}");
        let (s, retry, v) = post_from(
            &server,
            "5.5.5.5",
            Some(&ada.token),
            &join(&tables[1]),
            json!({}),
        )
        .await;
        assert_429(s, &retry, &v, "rate_limited");
        // Refused before anything happened: the seat is still free.
        let (_, info) = ada.get(&format!("/api/tables/{}", tables[1])).await;
        assert_eq!(info["seats"][0]["kind"], "empty", "{info}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_are_capped_per_address() {
    for db in databases().await {
        let server = limited_server(&db, |c| c.sockets_per_address = 2).await;
        let url = format!("{}/ws/lobby", server.ws);
        let one = Sock::open(&url, None, None).await;
        let _two = Sock::open(&url, None, None).await;
        let req = url.as_str().into_client_request().unwrap();
        match tokio_tungstenite::connect_async(req).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(res)) => {
                assert_eq!(res.status().as_u16(), 429);
                assert!(res.headers().contains_key("retry-after"));
                let body: Value = serde_json::from_slice(res.body().as_deref().unwrap()).unwrap();
                assert_eq!(body["code"], "too_many_sockets", "{body}");
            }
            other => panic!("a third socket must be refused: {:?}", other.map(|_| ())),
        }
        // Closing one frees its place.
        drop(one);
        let mut ok = false;
        for _ in 0..50 {
            let req = url.as_str().into_client_request().unwrap();
            if tokio_tungstenite::connect_async(req).await.is_ok() {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(ok, "a closed socket's place is freed");
        assert!(
            metrics(&server)
                .await
                .contains("fib_limited_total{limit=\"sockets\"}")
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_tables_are_capped_per_player_on_every_database() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| c.open_tables_per_player = 2).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let first = ada.create_trump(2, true).await;
        ada.create_trump(2, true).await;
        let (s, v) = ada
            .post("/api/tables", json!({"game": "trump", "seats": 2}))
            .await;
        assert_eq!(s, 429, "{v}");
        assert_eq!(v["code"], "too_many_open_tables", "{v}");
        // Someone else may still create one.
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        bob.create_trump(2, true).await;
        // Starting one frees a place.
        let (s, v) = ada
            .post(&format!("/api/tables/{first}/start"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        ada.create_trump(2, true).await;
        server.stop().await;
    }
}
