//! End-to-end suite: the real server (in-process on port 0, or its binary as a child
//! process), real HTTP and WebSocket clients, SQLite always and Postgres when
//! `TEST_DATABASE_URL` is set, and the browser test when Chromium is installed. With
//! `FIB_REQUIRE_ALL=1` (CI) a part that cannot run fails instead of being skipped.

mod accounts;
mod analysis;
mod arena;
mod botapi;
mod bots;
mod browser;
mod chat;
mod cluster;
mod delivery;
mod fibfib;
mod limits;
mod load;
mod nachos;
mod online;
mod quickplay;
mod ratings;
mod realtime;
mod rematch;
mod replays;
mod rummy;
mod strict;
mod support;
mod tournaments;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::*;

/// A whole Trump match to 144 (R-34) with a real client in one seat and bots in the others,
/// on every database: then the result, fairness records, leaderboard and "my matches".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_trump_match_on_every_database() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let table = ada.create_trump(3, true).await;
        let mut sock = ada.connect(&table).await;
        let st = sock.next_state().await;
        assert_eq!(status(&st), "open");
        assert_eq!(my_seat(&st), Some(0));
        let (s, v) = ada
            .post(&format!("/api/tables/{table}/start"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let (end, moves) = play_until(&mut sock, first, |s| status(s) == "finished").await;
        assert!(moves > 0);
        let scores: Vec<i64> = end["table"]["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let best = *scores.iter().max().unwrap();
        assert!(
            best >= 144,
            "{} match ended below 144: {scores:?}",
            db.label
        );
        let winners = end["table"]["winners"].as_array().unwrap();
        assert_eq!(winners.len(), 1, "R-34: a tie plays on, so one winner");
        assert_eq!(scores[winners[0].as_u64().unwrap() as usize], best);

        // R-0: every round's seed is revealed after it ends and matches its commitment;
        // the deal endpoint recomputes the deal.
        let (s, rounds) = ada.get(&format!("/api/tables/{table}/rounds")).await;
        assert_eq!(s, 200);
        let rounds = rounds.as_array().unwrap();
        assert!(rounds.len() >= 2, "a race to 144 takes several rounds");
        for r in rounds {
            let seed = hex::decode(r["seed"].as_str().expect("seed revealed")).unwrap();
            assert_eq!(
                hex::encode(Sha256::digest(&seed)),
                r["seed_sha256"].as_str().unwrap()
            );
        }
        let (s, deal) = ada.get(&format!("/api/tables/{table}/rounds/1/deal")).await;
        assert_eq!(s, 200, "{deal}");
        assert_eq!(deal["seed"], rounds[0]["seed"]);
        assert!(deal["deal"].is_object() && !deal["deal"].as_object().unwrap().is_empty());

        // Leaderboard and my matches.
        // Against bots alone: unrated, so not on the leaderboard; her total is a record.
        let (s, lb) = ada.get("/api/leaderboard/trump").await;
        assert_eq!(s, 200);
        assert_eq!(lb["total"], 0, "{lb}");
        let (s, ratings) = ada.get(&format!("/api/players/{}/ratings", ada.id)).await;
        assert_eq!((s, &ratings), (200, &json!([])));
        let (s, rec) = ada.get("/api/records/trump").await;
        assert_eq!(s, 200, "{rec}");
        assert_eq!(rec["highest_totals"][0]["score"], scores[0], "{rec}");
        assert_eq!(rec["highest_totals"][0]["bots"], 2, "{rec}");
        let (s, mine) = ada.get("/api/me/matches").await;
        assert_eq!(s, 200);
        assert_eq!(mine[0]["table_id"], table.as_str());
        assert_eq!(mine[0]["status"], "finished");
        server.stop().await;

        // After a restart the finished match is not live, but it can still be opened and
        // watched: it is restored from the store on demand.
        let server = Server::start(&db).await;
        let ada = ada.at(&server.base, &server.ws);
        let (s, info) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(s, 200, "{info}");
        assert_eq!(info["status"], "finished");
        assert_eq!(info["winners"], end["table"]["winners"]);
        let mut again = ada.connect(&table).await;
        let st = again.next_state().await;
        assert_eq!(st["table"]["scores"], end["table"]["scores"]);
        assert!(st["legal"].as_array().unwrap().is_empty());
        server.stop().await;
    }
}

/// Two humans and a bot: each sees only their own hand; a spectator sees none (R-4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_are_filtered_per_viewer() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let eve = Player::guest(&server.base, &server.ws, "Eve").await;
    let table = ada.create_trump(3, true).await;
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let mut a = ada.connect(&table).await;
    let mut b = bob.connect(&table).await;
    let mut e = eve.connect(&table).await;
    ada.post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    let sa = a
        .until(|s| status(s) == "playing" && !s["view"].is_null())
        .await;
    let sb = b
        .until(|s| status(s) == "playing" && !s["view"].is_null())
        .await;
    let se = e
        .until(|s| status(s) == "playing" && !s["view"].is_null())
        .await;
    let ha = sa["view"]["hand"].as_array().unwrap().clone();
    let hb = sb["view"]["hand"].as_array().unwrap().clone();
    assert_eq!(ha.len(), 16);
    assert!(se["view"]["hand"].is_null(), "a spectator has no hand");
    assert_eq!(se["you"]["kind"], "spectator");
    // Neither player's message contains a card of the other's hand anywhere. (The R-1 draw
    // for the first dealer is public and its cards go back before the deal's own shuffle, so
    // a drawn card may be dealt to anyone: it is left out of the comparison.)
    let mut sa_public = sa.clone();
    for e in sa_public["events"].as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("dealer_draw");
    }
    let text_a = sa_public.to_string();
    for c in &hb {
        // Cards serialize as their codes ("b1", protocol.md §6.2): the closing quote keeps
        // blue 1 from matching blue 10.
        let code = c.as_str().expect("a card is its code");
        assert!(code.len() <= 3, "{c}");
        let needle = format!("\"{code}\"");
        assert!(
            !text_a.contains(&needle),
            "Ada's message shows Bob's card {c}: {sa_public}"
        );
    }
    // The seed of the round in play is not in anybody's message (R-0, R-4).
    assert!(sa["fairness"][0]["seed"].is_null());
    assert!(se["fairness"][0]["seed_sha256"].as_str().unwrap().len() == 64);
    server.stop().await;
}

/// Bad input gets a specific error and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_specifically() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, bob, table) = ada_and_bob_at_trump(&server.base, &server.ws).await;
    let mut a = ada.connect(&table).await;
    // A version from before the round is dealt: stale once it is.
    let before_start = a.next_state().await["version"].as_u64().unwrap();
    let mut b = bob.connect(&table).await;
    ada.post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    // Both connections registered (a socket's upgrade is answered before the table has
    // its connection, and that registration is a change of its own): nothing but what
    // the test sends moves the version from here.
    let ready = |s: &Value| {
        status(s) == "playing"
            && !s["view"].is_null()
            && s["table"]["seats"]
                .as_array()
                .unwrap()
                .iter()
                .all(|seat| seat["connected"] == true)
    };
    let st = a.until(ready).await;
    let at = st["version"].as_u64().unwrap();
    b.until(|s| ready(s) && s["version"].as_u64().unwrap() >= at)
        .await;
    let version = st["version"].as_u64().unwrap();
    let turn = st["table"]["to_act"][0].as_u64().unwrap();
    let (on, off) = if turn == 0 {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let on_state = on.state.clone().unwrap();
    let off_state = off.state.clone().unwrap();

    // Malformed JSON, unknown message type, missing fields.
    on.send_raw("{not json").await;
    assert_eq!(on.next_error().await["code"], "malformed");
    on.send(json!({"type": "teleport"})).await;
    assert_eq!(on.next_error().await["code"], "malformed");
    on.send(json!({"type": "act"})).await;
    assert_eq!(on.next_error().await["code"], "malformed");
    // Not an action of this game.
    on.act(version, &json!({"type": "bid", "amount": 3})).await;
    assert_eq!(on.next_error().await["code"], "bad_action");
    // Not a card (protocol.md §6.2): the refusal says how a card is written.
    on.act(version, &json!({"type": "play", "card": "r11"}))
        .await;
    let e = on.next_error().await;
    assert_eq!(e["code"], "bad_action", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("`r11` is not a card"),
        "{e}"
    );
    // A card not in hand (take one from the other player's hand).
    let theirs = off_state["view"]["hand"][0].clone();
    let card = theirs.clone();
    on.act(version, &json!({"type": "play", "card": card}))
        .await;
    let e = on.next_error().await;
    assert_eq!(e["code"], "card_not_in_hand", "{e}");
    // Out of turn.
    let mine = off_state["legal"]
        .as_array()
        .map(|l| l.is_empty())
        .unwrap_or(true);
    assert!(mine, "the player not on turn has no legal action");
    let card = off_state["view"]["hand"][0].clone();
    // The object form of earlier versions is still read.
    let code = card.as_str().unwrap();
    let colour = ["red", "yellow", "green", "blue", "purple"]["rygbp".find(&code[..1]).unwrap()];
    let number: u8 = code[1..].parse().unwrap();
    off.act(
        version,
        &json!({"type": "play", "card": {"colour": colour, "number": number}}),
    )
    .await;
    assert_eq!(off.next_error().await["code"], "not_your_turn");
    // Stale version: refused, and nothing changed (a socket taking patches has every
    // change already, so no state follows; `sync` shows the same version). Not `version -
    // 1`: when Bob's socket registered after the deal, that is the deal itself, and a
    // presence change alone never makes an action stale.
    let legal = on_state["legal"][0].clone();
    on.act(before_start, &legal).await;
    let err = on.next_error().await;
    assert_eq!(err["code"], "stale_version");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("the changes since were sent to you"),
        "{err}"
    );
    on.send(json!({"type": "sync"})).await;
    let again = on.next_state().await;
    assert_eq!(
        again["version"].as_u64().unwrap(),
        version,
        "nothing changed"
    );
    assert_eq!(again["view"], on_state["view"]);

    // Two actions from one player at once are applied in order: the first is accepted,
    // the second was made against the old version.
    on.act(version, &legal).await;
    on.act(version, &legal).await;
    let s1 = on.next_state().await;
    assert_eq!(s1["version"].as_u64().unwrap(), version + 1);
    assert_eq!(on.next_error().await["code"], "stale_version");

    // An oversized frame closes the socket; the table is unharmed.
    let big = format!(r#"{{"type":"sync","pad":"{}"}}"#, "x".repeat(64 * 1024));
    on.send_raw(&big).await;
    // (1009 "message too big", or a reset if the frame was cut off mid-send.)
    let code = on.close_code().await;
    assert!(
        matches!(code, None | Some(1009)),
        "an oversized frame ends the connection: {code:?}"
    );
    off.send(json!({"type": "sync"})).await;
    let s = off.next_state().await;
    assert_eq!(s["version"].as_u64().unwrap(), version + 1);

    // HTTP: unknown table, unauthorized, bad name, bad options, unknown game, wrong origin.
    let (s, v) = ada
        .get(&format!("/api/tables/{}", uuid::Uuid::new_v4()))
        .await;
    assert_eq!((s, v["code"].as_str()), (404, Some("table_not_found")));
    let (s, v) = ada.get("/api/tables/not-a-uuid").await;
    assert_eq!((s, v["code"].as_str()), (404, Some("table_not_found")));
    let anon = reqwest::Client::new();
    let r = anon
        .post(format!("{}/api/tables", server.base))
        .json(&json!({"game": "trump", "seats": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = anon
        .post(format!("{}/api/guest", server.base))
        .json(&json!({"name": "   "}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "bad_name");
    let r = anon
        .post(format!("{}/api/guest", server.base))
        .header("content-type", "application/json")
        .body("{\"name\":")
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "malformed");
    let (s, v) = ada
        .post("/api/tables", json!({"game": "trump", "seats": 7}))
        .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (400, Some("bad_player_count")),
        "{v}"
    );
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "options": {"speed": 9}}),
        )
        .await;
    assert_eq!((s, v["code"].as_str()), (400, Some("bad_options")), "{v}");
    let (s, v) = ada
        .post("/api/tables", json!({"game": "chess", "seats": 2}))
        .await;
    assert_eq!((s, v["code"].as_str()), (400, Some("unknown_game")), "{v}");
    let r = anon
        .post(format!("{}/api/guest", server.base))
        .json(&json!({"name": "x".repeat(20_000)}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413, "an oversized body is refused");
    let url = format!("{}/ws/table/{table}", server.ws);
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        url.as_str(),
    )
    .unwrap();
    req.headers_mut()
        .insert("origin", "http://evil.example".parse().unwrap());
    let err = tokio_tungstenite::connect_async(req).await.unwrap_err();
    assert!(err.to_string().contains("403"), "{err}");
    let missing = format!("{}/ws/table/{}", server.ws, uuid::Uuid::new_v4());
    let err = tokio_tungstenite::connect_async(missing.as_str())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("404"), "{err}");

    // Metrics counted some of this.
    let text = metrics(&server).await;
    assert!(
        text.contains("fib_actions_rejected_total{code=\"stale_version\"}"),
        "{text}"
    );
    assert!(text.contains("fib_actions_accepted_total 1"), "{text}");
    server.stop().await;
}

/// Two players race for the last seat: exactly one gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_seat_race_has_one_winner() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    for round in 0..5 {
        let table = ada.create_trump(2, false).await;
        let names: Vec<String> = (0..4).map(|i| format!("P{round}{i}")).collect();
        let p: Vec<Player> = futures_util::future::join_all(
            names
                .iter()
                .map(|n| Player::guest(&server.base, &server.ws, n)),
        )
        .await;
        let path = format!("/api/tables/{table}/join");
        let results =
            futures_util::future::join_all(p.iter().map(|pl| pl.post(&path, json!({"seat": 1}))))
                .await;
        let ok = results.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(ok, 1, "{results:?}");
        for (s, v) in results.iter().filter(|(s, _)| *s != 200) {
            assert_eq!(*s, 409);
            assert_eq!(v["code"], "seat_taken");
        }
    }
    server.stop().await;
}

/// Lobby operations: seats, leave, start rules, private tables and invite codes, the live
/// lobby list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_seats_and_private_tables() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let mut lobby = Sock::open(&format!("{}/ws/lobby", server.ws), None, None).await;
    let first = lobby.next().await;
    assert_eq!(first["type"], "tables");

    let table = ada.create_trump(2, false).await;
    let listed = loop {
        let m = lobby.next().await;
        if m["tables"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["id"] == table.as_str()))
        {
            break m;
        }
    };
    assert_eq!(listed["tables"][0]["status"], "open");
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!((s, v["code"].as_str()), (409, Some("seats_not_full")));
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!((s, v["code"].as_str()), (409, Some("not_seated")));
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!((s, v["code"].as_str()), (409, Some("already_seated")));
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/join"), json!({"seat": 5}))
        .await;
    assert_eq!((s, v["code"].as_str()), (409, Some("bad_seat")));
    let (s, _) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200);
    let (s, _) = bob
        .post(&format!("/api/tables/{table}/leave"), json!({}))
        .await;
    assert_eq!(s, 200);
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200);
    assert_eq!(v["seats"][1]["name"], "Bob");
    assert_eq!(v["seats"][1]["id"], bob.id.as_str());
    let (s, _) = bob
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200);
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/leave"), json!({}))
        .await;
    assert_eq!((s, v["code"].as_str()), (409, Some("already_started")));

    // A table everybody left before the start is closed for good.
    let lonely = ada.create_trump(2, false).await;
    let (s, _) = ada
        .post(&format!("/api/tables/{lonely}/leave"), json!({}))
        .await;
    assert_eq!(s, 200);
    let (s, v) = bob
        .post(&format!("/api/tables/{lonely}/join"), json!({}))
        .await;
    assert_eq!((s, v["code"].as_str()), (409, Some("table_closed")), "{v}");

    // A private table is not listed and needs its invite code.
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "private": true}),
        )
        .await;
    assert_eq!(s, 201);
    let private = v["table"]["id"].as_str().unwrap().to_string();
    let code = v["invite_code"].as_str().unwrap().to_string();
    let (_, tables) = ada.get("/api/tables").await;
    assert!(
        !tables
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == private.as_str())
    );
    let (s, v) = bob
        .post(&format!("/api/tables/{private}/join"), json!({}))
        .await;
    assert_eq!((s, v["code"].as_str()), (403, Some("invite_required")));
    let (s, v) = bob.get(&format!("/api/tables/{private}")).await;
    assert_eq!((s, v["code"].as_str()), (403, Some("invite_required")));
    let (s, _) = bob
        .post(
            &format!("/api/tables/{private}/join"),
            json!({"invite_code": code}),
        )
        .await;
    assert_eq!(s, 200);
    server.stop().await;
}

/// A client that drops and reconnects with the same token gets a full resync and keeps its
/// seat; a graceful restart keeps the match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_resyncs_and_keeps_the_seat() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, table, mut a) = trump_with_bots(&server, "Ada", 2).await;
    let (st, _) = play_until(&mut a, first, |s| trump_tricks_played(&s["view"]) >= 3).await;
    drop(a);
    let mut again = ada.connect(&table).await;
    let resync = again.next_state().await;
    assert_eq!(my_seat(&resync), Some(0));
    assert_eq!(
        resync["view"]["hand"],
        again.state.as_ref().unwrap()["view"]["hand"]
    );
    assert!(resync["version"].as_u64() >= st["version"].as_u64());
    let (s2, _) = play_until(&mut again, first, |s| trump_tricks_played(&s["view"]) >= 5).await;
    drop(again);
    server.stop().await;

    // Graceful restart on the same database: the match comes back.
    let server = Server::start(&db).await;
    let ada = ada.at(&server.base, &server.ws);
    let mut back = ada.connect(&table).await;
    let st = back.next_state().await;
    assert_eq!(status(&st), "playing");
    assert_eq!(st["view"]["hand"], s2["view"]["hand"]);
    // The bot may have led the next trick meanwhile: the tricks played are as they were.
    assert_eq!(
        trump_tricks_played(&st["view"]),
        trump_tricks_played(&s2["view"])
    );
    let (_, mine) = ada.get("/api/me/matches").await;
    assert_eq!(
        mine[0]["status"], "playing",
        "unfinished matches come first"
    );
    server.stop().await;
}

/// Every accepted connection has TCP keepalive on, so that a peer that vanished without
/// closing (no FIN: a lost network, a sleeping laptop) is found out and its seat gets its
/// stand-in; without it, a soak walk's cut-off client stayed "connected" for 48 minutes.
/// Read from the kernel's own table of sockets: the server's end of an idle connection
/// runs the keepalive timer (`tr` 2 in /proc/net/tcp), where without keepalive it runs none.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn accepted_connections_probe_a_silent_peer() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let client = std::net::TcpStream::connect(addr).unwrap();
    let mine = client.local_addr().unwrap();
    let hex = |a: std::net::SocketAddr| match a.ip() {
        std::net::IpAddr::V4(ip) => {
            format!("{:08X}:{:04X}", u32::from_le_bytes(ip.octets()), a.port())
        }
        ip => panic!("the test server listens on IPv4 loopback, not {ip}"),
    };
    let (server_end, client_end) = (hex(addr), hex(mine));
    let mut timer = None;
    for _ in 0..50 {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
        timer = table.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 5 && f[1] == server_end && f[2] == client_end).then(|| f[5].to_string())
        });
        // In the table once the kernel completed the handshake; its options set once the
        // server accepted it.
        if timer.as_deref().is_some_and(|t| t.starts_with("02:")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let timer = timer.expect("the server's end of the connection is in /proc/net/tcp");
    assert!(
        timer.starts_with("02:"),
        "the server's end of an idle connection runs no keepalive timer: tr:when {timer}"
    );
    drop(client);
    server.stop().await;
}

/// A restart with more unfinished tables than one claim batch (64) takes them all back
/// once and serves: the start-up claimed in batches, and each batch after the first found
/// the tables the one before had just claimed (this node's own by then), so with 64 or
/// more it never ended (a soak walk saw its log fill with "claimed a table already running
/// here" and `/healthz` never answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_many_unfinished_tables_takes_each_back_once() {
    const TABLES: usize = 70;
    for db in databases().await {
        let proc = Child::start(&db).await;
        let p = Player::guest(&proc.base, &proc.ws, "Solo").await;
        let mut tables = Vec::new();
        for _ in 0..TABLES {
            let (s, v) = p
                .post("/api/tables", json!({"game": "rummy", "seats": 1}))
                .await;
            assert_eq!(s, 201, "{v}");
            let id = v["table"]["id"].as_str().unwrap().to_string();
            let (s, v) = p.post(&format!("/api/tables/{id}/start"), json!({})).await;
            assert_eq!(s, 200, "{v}");
            tables.push(id);
        }
        proc.signal("-TERM");
        let (status, _) = proc.exit(0).await;
        assert!(status.success(), "{status}");

        let proc = Child::start(&db).await;
        let from = proc.troubles_so_far();
        let p = p.at(&proc.base, &proc.ws);
        let (s, h) = tokio::time::timeout(TIMEOUT, p.get("/healthz"))
            .await
            .expect("the restarted server answers");
        assert_eq!(s, 200, "{h}");
        for id in &tables {
            let (s, t) = p.get(&format!("/api/tables/{id}")).await;
            assert_eq!((s, t["status"].as_str()), (200, Some("playing")), "{t}");
        }
        let live = proc
            .metrics()
            .await
            .lines()
            .find(|l| l.starts_with("fib_live_tables "))
            .map(str::to_string);
        assert_eq!(live.as_deref(), Some(&*format!("fib_live_tables {TABLES}")));
        // Each table was taken back once: no epoch beyond the restart's.
        let ids: Vec<String> = tables.clone();
        let mut max_epoch = 0;
        for id in &ids {
            let mut sock = p.connect(id).await;
            let st = sock.next_state().await;
            max_epoch = max_epoch.max(st["version"].as_u64().unwrap() >> 32);
        }
        assert_eq!(max_epoch, 2, "{} tables claimed again and again", db.label);
        proc.signal("-TERM");
        let (status, troubles) = proc.exit(from).await;
        assert!(status.success(), "{status}");
        assert!(
            troubles.iter().all(|l| !l.contains("already running")),
            "{}: {troubles:#?}",
            db.label
        );
    }
}

/// SIGKILL in the middle of a round: every acknowledged action survives, and play goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_round_loses_no_acknowledged_action() {
    for db in databases().await {
        let mut proc = Child::start(&db).await;
        let (ada, bob, table) = ada_and_bob_at_trump(&proc.base, &proc.ws).await;
        ada.post(&format!("/api/tables/{table}/start"), json!({}))
            .await;
        let mut a = ada.connect(&table).await;
        let mut b = bob.connect(&table).await;
        // Play 7 cards: the server acknowledges each with a new state to both players.
        let mut v = a.next_state().await["version"].as_u64().unwrap();
        for _ in 0..7 {
            let sa = a.until(|s| s["version"].as_u64().unwrap() >= v).await;
            let sb = b.until(|s| s["version"].as_u64().unwrap() >= v).await;
            let (sock, st) = if my_turn(&sa) {
                (&mut a, sa)
            } else {
                (&mut b, sb)
            };
            assert!(my_turn(&st), "one of the two is on turn");
            v = st["version"].as_u64().unwrap();
            sock.act(v, &st["legal"][0]).await;
            v = sock.until(|s| s["version"].as_u64().unwrap() > v).await["version"]
                .as_u64()
                .unwrap();
        }
        let before = a.until(|s| s["version"].as_u64().unwrap() >= v).await;
        proc.child.kill().await.unwrap(); // SIGKILL
        drop((a, b));

        let proc2 = Child::start(&db).await;
        let ada = ada.at(&proc2.base, &proc2.ws);
        let bob = bob.at(&proc2.base, &proc2.ws);
        let mut a = ada.connect(&table).await;
        let after = a.next_state().await;
        assert!(
            after["version"].as_u64() > before["version"].as_u64(),
            "versions never go backwards across a restart: {} then {}",
            before["version"],
            after["version"]
        );
        assert_eq!(
            after["view"]["hand"], before["view"]["hand"],
            "{} lost a move",
            db.label
        );
        // Every card of the round, the trick on the table included.
        assert_eq!(after["view"]["plays"], before["view"]["plays"]);
        assert_eq!(after["table"]["to_act"], before["table"]["to_act"]);
        assert_eq!(
            after["fairness"][0]["seed_sha256"],
            before["fairness"][0]["seed_sha256"]
        );
        // And the players carry on.
        let mut b = bob.connect(&table).await;
        let sb = b.next_state().await;
        let (sock, st) = if my_turn(&after) {
            (&mut a, after)
        } else {
            (&mut b, sb)
        };
        let v = st["version"].as_u64().unwrap();
        sock.act(v, &st["legal"][0]).await;
        let next = sock.until(|s| s["version"].as_u64().unwrap() > v).await;
        assert_eq!(status(&next), "playing");
    }
}

/// `GET /healthz` names the database; the client is served at `/`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_client_are_served() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let h: Value = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        h,
        json!({"status": "ok", "database": "sqlite", "parked_tables": 0, "broken_tables": 0, "writes_retrying": false, "write_in_flight_ms": 0})
    );
    let page = reqwest::get(format!("{}/", server.base)).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("<html"));
    let games: Value = reqwest::get(format!("{}/api/games", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        games
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["kind"] == "trump")
    );
    let r = reqwest::get(format!("{}/api/nope", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A path that is no file of the client: a 404 page a person can read, with a way back.
    let r = reqwest::get(format!("{}/rules/nope.html", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(r.text().await.unwrap().contains("href=\"/\""));
    server.stop().await;
}

/// A write that stops answering makes `/healthz` degraded after 5 s, though the database
/// still answers the health check's read. Here another connection holds SQLite's write
/// lock (as an operator's `sqlite3` shell with a transaction left open does; a frozen
/// disk holds the write thread the same way): the writer's commit waits inside SQLite's
/// busy handler, on the write thread, where no timer of the writer's own can end it. A
/// walk froze the disk with `fsfreeze` and `/healthz` said `ok` while every move hung.
/// Once the lock goes, the move is stored and the health is ok again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_write_makes_health_degraded() {
    use sqlx::Connection;
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let health = || health_at(&server.base);
    let (_ada, _table, mut a) = trump_with_bots(&server, "Ada", 2).await;
    let playing = a.until(|s| status(s) == "playing" && my_turn(s)).await;
    let from = playing["version"].as_u64().unwrap();
    assert_eq!(health().await["status"], "ok");

    let mut lock = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut lock)
        .await
        .unwrap();
    let held = std::time::Instant::now();
    a.act(from, &playing["legal"][0]).await;
    let degraded = loop {
        let h = health().await;
        if h["status"] == "degraded" {
            break h;
        }
        assert_eq!(h["status"], "ok", "{h}");
        assert!(
            held.elapsed() < std::time::Duration::from_secs(9),
            "still {h} after {:?}",
            held.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(held.elapsed() >= std::time::Duration::from_secs(5));
    assert!(
        degraded["write_in_flight_ms"].as_u64().unwrap() >= 5_000,
        "{degraded}"
    );
    assert_eq!(
        degraded["writes_retrying"], false,
        "no retry yet: {degraded}"
    );
    assert_eq!(degraded["parked_tables"], 0, "{degraded}");
    let metrics = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let gauge = metrics
        .lines()
        .find_map(|l| l.strip_prefix("fib_store_write_in_flight_seconds "))
        .expect("the gauge")
        .parse::<f64>()
        .unwrap();
    assert!(gauge >= 5.0, "{gauge}");

    sqlx::raw_sql("ROLLBACK").execute(&mut lock).await.unwrap();
    lock.close().await.unwrap();
    let moved = a.until(|s| s["version"].as_u64().unwrap() > from).await;
    assert_eq!(status(&moved), "playing");
    // (The bot's answer may be committing at this moment: a few milliseconds at most.)
    let h = health().await;
    assert_eq!(h["status"], "ok", "{h}");
    assert!(h["write_in_flight_ms"].as_u64().unwrap() < 1_000, "{h}");
    server.stop().await;
}

/// Ada's two-seat Trump match with a bot on the server process `proc`, started and played
/// six versions on: her, the table, her socket, and how many moves she made.
async fn trump_played_on(proc: &Child) -> (Player, String, Sock, u64) {
    let ada = Player::guest(&proc.base, &proc.ws, "Ada").await;
    let table = ada.create_trump(2, true).await;
    let mut a = ada.connect(&table).await;
    a.next_state().await;
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let playing = a.until(|s| status(s) == "playing").await;
    let from = playing["version"].as_u64().unwrap();
    let (_, moves) = play_until(&mut a, first, |s| {
        s["version"].as_u64().unwrap_or(0) >= from + 6
    })
    .await;
    (ada, table, a, moves)
}

/// A table whose stored log no longer replays (here its seed was changed in the database,
/// as a backup copied beside a stale WAL mixed two states for an operator walk) is counted
/// in `/healthz` as broken, which says degraded, where it said ok while the table answered
/// 500 to everyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_that_does_not_restore_makes_health_degraded() {
    let db = sqlite_db();
    let mut proc = Child::start(&db).await;
    let (ada, table, a, _) = trump_played_on(&proc).await;
    drop(a);
    proc.signal("-TERM");
    let status = tokio::time::timeout(TIMEOUT, proc.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    let changed = sqlx::query("UPDATE rounds SET seed_hex = $1 WHERE table_id = $2")
        .bind("01".repeat(32))
        .bind(&table)
        .execute(&pool)
        .await
        .unwrap();
    assert!(changed.rows_affected() >= 1);
    pool.close().await;

    let proc = Child::start(&db).await;
    let health = || health_at(&proc.base);
    let started = std::time::Instant::now();
    let h = loop {
        let h = health().await;
        if h["broken_tables"] == 1 {
            break h;
        }
        assert!(started.elapsed() < TIMEOUT, "{h}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(h["status"], "degraded", "{h}");
    let (s, v) = ada
        .at(&proc.base, &proc.ws)
        .get(&format!("/api/tables/{table}"))
        .await;
    assert_eq!(s, 500, "{v}");
    // Said as such, not a bare `internal`: the player knows it is this table's record.
    assert_eq!(v["code"], "table_broken", "{v}");
    assert!(v["message"].as_str().unwrap().contains("record"), "{v}");
}

/// With JSON logs, a panic is a log record like any other (one JSON object on stdout, with
/// its message and place), where it was Rust's text on stderr that a log collector does
/// not read: a table task's caught panic went unseen there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_a_json_record_with_json_logs() {
    let db = sqlite_db();
    let proc = Child::start_as(&db, "child", &["--log-format", "json", "--test-hooks"]).await;
    let (ada, table, mut a, _) = trump_played_on(&proc).await;
    let from = proc.troubles_so_far();
    let held = a.state.clone().unwrap()["version"].as_u64().unwrap();
    let r = ada
        .http
        .post(format!("{}/api/tables/{table}/test/panic", proc.base))
        .bearer_auth(&ada.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    // Recovered: the socket is sent a full state of what is stored.
    loop {
        let m = a.next().await;
        if m["type"] == "state" && m["version"].as_u64().unwrap() > held {
            break;
        }
    }
    proc.signal("-TERM");
    let (status, troubles) = proc.exit(from).await;
    assert!(status.success(), "{status:?}");
    let records: Vec<Value> = troubles
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let panic = records
        .iter()
        .find(|r| {
            r["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("panicked: test hook: a forced panic"))
        })
        .unwrap_or_else(|| panic!("no panic record in {troubles:?}"));
    assert_eq!(panic["level"], "ERROR", "{panic}");
    assert_eq!(panic["target"], "panic", "{panic}");
    assert!(
        panic["fields"]["location"]
            .as_str()
            .is_some_and(|l| l.contains("table/mod.rs")),
        "{panic}"
    );
}

/// SIGTERM shuts the server down gracefully: sockets are told (1001), it exits 0, and
/// it closes its database: on SQLite no WAL is left, and every move is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_down_gracefully() {
    let db = sqlite_db();
    let mut proc = Child::start(&db).await;
    let (_ada, table, mut a, moves) = trump_played_on(&proc).await;
    assert!(moves > 0);
    let mut lobby = Sock::open(&format!("{}/ws/lobby", proc.ws), None, None).await;
    lobby.next().await;
    proc.signal("-TERM");
    assert_eq!(
        a.close_code().await,
        Some(1001),
        "sockets are closed with 'going away'"
    );
    assert_eq!(lobby.close_code().await, Some(1001), "the lobby socket too");
    let status = tokio::time::timeout(TIMEOUT, proc.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let file = db.url.trim_start_matches("sqlite://").to_string();
    assert!(
        !std::path::Path::new(&format!("{file}-wal")).exists(),
        "the WAL is folded into the database file"
    );
    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    let (stored,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM actions WHERE table_id = $1")
        .bind(&table)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(stored >= moves as i64, "every move is stored");
    pool.close().await;
}

/// R-0: the `verify-deal` command recomputes from a revealed seed exactly the deal the
/// server dealt (and reports through its deal endpoint).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_deal_command_matches_the_served_deal() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, table, mut a) = trump_with_bots(&server, "Ada", 2).await;
    let (st, _) = play_until(&mut a, first, |s| {
        s["table"]["round"].as_u64().unwrap_or(0) >= 2
    })
    .await;
    assert!(
        st["fairness"][0]["seed"].is_string(),
        "round 1's seed is revealed"
    );
    assert!(st["fairness"][1]["seed"].is_null(), "round 2's is not");
    let (s, served) = ada.get(&format!("/api/tables/{table}/rounds/1/deal")).await;
    assert_eq!(s, 200);
    let (s, v) = ada.get(&format!("/api/tables/{table}/rounds/2/deal")).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("round_in_progress")));
    let seed = served["seed"].as_str().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"))
        .args([
            "verify-deal",
            "--game",
            "trump",
            "--players",
            "2",
            "--seed",
            seed,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let computed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(computed["deal"], served["deal"]);
    assert_eq!(computed["seed_sha256"], served["seed_sha256"]);
    // The hand Ada was dealt is the one the deal record gives her.
    let dealt = &served["deal"]["hands"][0];
    assert!(
        dealt.is_array() && dealt.as_array().unwrap().len() == 24,
        "{dealt}"
    );
    // A state holds the latest two rounds' fairness records (protocol.md §3.4): in round
    // 3, those of rounds 2 (revealed) and 3; every round's are at `/rounds`.
    // (Two rounds score at most 2 × 34 points: the match to 144 is still on.)
    let (st, _) = play_until(&mut a, first, |s| {
        s["table"]["round"].as_u64().unwrap_or(0) >= 3
    })
    .await;
    let rounds: Vec<u64> = st["fairness"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds, vec![2, 3], "{}", st["fairness"]);
    assert!(st["fairness"][0]["seed"].is_string());
    assert!(st["fairness"][1]["seed"].is_null());
    let (s, all) = ada.get(&format!("/api/tables/{table}/rounds")).await;
    assert_eq!(s, 200);
    assert_eq!(all.as_array().map(Vec::len), Some(3), "{all}");
    server.stop().await;
}

/// The daily page in the browser: start today's deal, and come back to the same game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_solitaire_in_chromium() {
    browser::run_script("daily.mjs").await;
}

/// R-25's daily deal: everybody gets the same deal today, one game each, the seed stays
/// secret while the day lasts, and finished games go on the day's board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_solitaire_is_one_deal_for_everybody() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let (s, ta) = ada.post("/api/daily/solitaire", json!({"target": 8})).await;
    assert_eq!(s, 200, "{ta}");
    let (_, tb) = bob.post("/api/daily/solitaire", json!({"target": 8})).await;
    assert_ne!(ta["id"], tb["id"], "one table each");
    assert_eq!(ta["status"], "playing");
    assert!(
        ta["private"].as_bool().unwrap(),
        "nobody can watch a daily game"
    );
    let (_, again) = ada.post("/api/daily/solitaire", json!({"target": 8})).await;
    assert_eq!(again["id"], ta["id"], "asking again resumes the same game");
    let (s, v) = ada.post("/api/daily/solitaire", json!({"target": 9})).await;
    assert_eq!((s, v["code"].as_str()), (400, Some("bad_options")));

    let ida = ta["id"].as_str().unwrap().to_string();
    let idb = tb["id"].as_str().unwrap().to_string();
    let mut a = ada.connect(&ida).await;
    let mut b = bob.connect(&idb).await;
    let sa = a.until(|s| !s["view"].is_null()).await;
    let sb = b.until(|s| !s["view"].is_null()).await;
    assert_eq!(sa["view"]["hand"], sb["view"]["hand"], "the same deal");
    assert_eq!(
        sa["fairness"][0]["seed_sha256"],
        sb["fairness"][0]["seed_sha256"]
    );
    let (_, board) = ada.get("/api/daily/solitaire?target=8").await;
    assert_eq!(board["seed_sha256"], sa["fairness"][0]["seed_sha256"]);
    assert!(board["seed"].is_null());
    // Bob may not watch Ada's daily game.
    let (s, _) = bob.get(&format!("/api/tables/{ida}")).await;
    assert_eq!(s, 403);

    // Ada plays to the end, always making progress: draw, then discard.
    let progress = |legal: &[Value]| {
        legal
            .iter()
            .find(|a| matches!(a["type"].as_str(), Some("draw_stock" | "discard")))
            .unwrap_or(&legal[0])
            .clone()
    };
    let (end, _) = play_until(&mut a, progress, |s| status(s) == "finished").await;
    assert!(
        end["fairness"][0]["seed"].is_null(),
        "the day is not over: the seed stays secret"
    );
    let (s, v) = ada.get(&format!("/api/tables/{ida}/rounds/1/deal")).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("daily_in_progress")));
    let (_, board) = ada.get("/api/daily/solitaire?target=8").await;
    let results = board["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{board}");
    assert_eq!(results[0]["player"]["name"], "Ada");
    assert_eq!(results[0]["discards"], end["table"]["scores"][0]);
    for bad in ["2999-01-01", "2026-13-45", "2025-02-29", "yesterday"] {
        let (s, v) = ada.get(&format!("/api/daily/solitaire?day={bad}")).await;
        assert_eq!((s, v["code"].as_str()), (400, Some("malformed")), "{bad}");
    }
    // A past day that nobody played has no deal (and none is made up for it).
    let (s, v) = ada
        .get("/api/daily/solitaire?day=2001-01-01&target=13")
        .await;
    assert_eq!((s, v["code"].as_str()), (404, Some("not_found")), "{v}");
    server.stop().await;
}

/// Choosing bots per seat through the UI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_are_chosen_per_seat_in_chromium() {
    browser::run_script("bots.mjs").await;
}

/// Bots are chosen per seat before the start: a level for each empty seat, or out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_are_chosen_per_seat() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let table = ada.create_trump(3, false).await;
    let bots = format!("/api/tables/{table}/bots");
    let (s, v) = ada.post(&bots, json!({"seat": 1, "level": "easy"})).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = ada.post(&bots, json!({"seat": 2, "level": "hard"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["seats"][1], json!({"kind": "bot", "level": "easy"}));
    assert_eq!(v["seats"][2], json!({"kind": "bot", "level": "hard"}));
    // Refusals: not seated, a taken seat, no bot to take out, a bad level, a bad seat.
    let (s, v) = bob.post(&bots, json!({"seat": 1, "level": null})).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("not_seated")));
    let (s, v) = ada.post(&bots, json!({"seat": 0, "level": "easy"})).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("seat_taken")));
    let (s, v) = ada.post(&bots, json!({"seat": 2, "level": "genius"})).await;
    assert_eq!((s, v["code"].as_str()), (400, Some("malformed")));
    let (s, v) = ada.post(&bots, json!({"seat": 3, "level": "easy"})).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("bad_seat")));
    // Take the easy bot out; the seat is free for a person.
    let (s, v) = ada.post(&bots, json!({"seat": 1, "level": null})).await;
    assert_eq!((s, v["seats"][1]["kind"].as_str()), (200, Some("empty")));
    let (s, v) = ada.post(&bots, json!({"seat": 1, "level": null})).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("not_a_bot")));
    let (s, _) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200);
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["seats"][2], json!({"kind": "bot", "level": "hard"}));
    let (s, v) = ada.post(&bots, json!({"seat": 2, "level": null})).await;
    assert_eq!((s, v["code"].as_str()), (409, Some("already_started")));
    // The hard bot plays: the two people play their cards until it has won or played.
    let mut a = ada.connect(&table).await;
    let mut b = bob.connect(&table).await;
    let mut v = a.next_state().await["version"].as_u64().unwrap();
    let mut bot_played = false;
    for _ in 0..30 {
        let sa = a.until(|s| s["version"].as_u64().unwrap() >= v).await;
        if trump_plays(&sa["view"]).iter().any(|(seat, _)| *seat == 2) {
            bot_played = true;
            break;
        }
        let sb = b.until(|s| s["version"].as_u64().unwrap() >= v).await;
        let (sock, st) = if my_turn(&sa) {
            (&mut a, sa)
        } else if my_turn(&sb) {
            (&mut b, sb)
        } else {
            // The bot is thinking: wait for its move.
            v = a.until(|s| s["version"].as_u64().unwrap() > v).await["version"]
                .as_u64()
                .unwrap();
            continue;
        };
        v = st["version"].as_u64().unwrap();
        sock.act(v, &st["legal"][0]).await;
        v = sock.until(|s| s["version"].as_u64().unwrap() > v).await["version"]
            .as_u64()
            .unwrap();
    }
    assert!(bot_played, "the hard bot made a move");
    server.stop().await;
}

/// A creator without a seat runs a table of bots only: once a person sits at it, only the
/// seated may start it or choose its bots, whether the creator never sat (`join: false`)
/// or left. A black-box walk saw a creator who had left start the match on Bob, who could
/// then no longer leave.
#[tokio::test]
async fn a_creator_without_a_seat_cannot_start_a_table_where_people_sit() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let never_sat = create_bots_only(&ada, "nachos", 3, "easy", Value::Null).await;
    let left = ada.create_trump(2, true).await;
    for table in [&never_sat, &left] {
        let (s, v) = bob
            .post(&format!("/api/tables/{table}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let bob_seat = v["seats"]
            .as_array()
            .unwrap()
            .iter()
            .position(|s| s["name"] == "Bob")
            .unwrap();
        let free = (bob_seat + 1) % 2;
        if table == &left {
            let (s, v) = ada
                .post(&format!("/api/tables/{table}/leave"), json!({}))
                .await;
            assert_eq!(s, 200, "{v}");
        }
        for (path, body, what) in [
            ("start", json!({}), "start the match"),
            (
                "bots",
                json!({"seat": free, "level": null}),
                "choose the bots",
            ),
        ] {
            let (s, v) = ada.post(&format!("/api/tables/{table}/{path}"), body).await;
            assert_eq!((s, v["code"].as_str()), (409, Some("not_seated")), "{v}");
            assert_eq!(
                v["message"],
                format!(
                    "you have no seat at this table and people sit at it: only they can {what}"
                )
            );
        }
        let (_, info) = bob.get(&format!("/api/tables/{table}")).await;
        assert_eq!(info["status"], "open", "nothing started: {info}");
        // Bob, seated, may.
        let (s, v) = bob
            .post(&format!("/api/tables/{table}/start"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
    }
    server.stop().await;
}

/// A table of bots only: its creator takes no seat, starts it, and the bots play a whole
/// Trump match to 144 through the server as fast as the rules allow (nobody is watching).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_only_table_plays_a_whole_match() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let table = create_bots_only(&ada, "trump", 4, "normal", Value::Null).await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (409, Some("not_seated")),
        "only the creator"
    );
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    assert!(
        v["seats"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["kind"] == "bot")
    );
    let started = std::time::Instant::now();
    let end = wait_finished(&ada, &table).await;
    let scores: Vec<i64> = end["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(scores.iter().max().unwrap() >= &144, "{scores:?}");
    assert_eq!(end["winners"].as_array().unwrap().len(), 1);
    let text = metrics(&server).await;
    assert!(
        !text.contains("fib_actions_rejected_total{"),
        "no bot move was refused:\n{text}"
    );
    eprintln!("bots-only Trump match finished in {:?}", started.elapsed());
    server.stop().await;
}

/// A flooding client: past its rate (here 5 messages a second, bursts of 10) every
/// message is answered `rate_limited` and dropped, the table is unchanged, and after a
/// pause the connection works again. The lobby socket answers nothing it is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flooding_is_rate_limited_per_connection() {
    let db = sqlite_db();
    let server = Server::start_with(&db, |c| c.ws_messages_per_second = 5).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    // A table that is not started, so only this client could change it.
    let table = ada.create_trump(2, false).await;
    let mut sock = ada.connect(&table).await;
    let before = sock.next_state().await;
    let version = before["version"].as_u64().unwrap();
    for _ in 0..40 {
        sock.send(json!({"type": "sync"})).await;
    }
    let (mut states, mut limited) = (0, 0);
    while states + limited < 40 {
        let m = sock.next().await;
        match m["type"].as_str() {
            Some("state") => {
                states += 1;
                assert_eq!(m["version"].as_u64().unwrap(), version, "nothing changed");
            }
            Some("error") => {
                assert_eq!(m["code"], "rate_limited", "{m}");
                assert!(m["message"].as_str().unwrap().contains("5 a second"), "{m}");
                limited += 1;
            }
            _ => {}
        }
    }
    assert!(
        (10..=12).contains(&states),
        "a burst of 10 got through: {states}"
    );
    assert_eq!(states + limited, 40);
    let text = metrics(&server).await;
    assert!(
        text.contains(&format!(
            "fib_actions_rejected_total{{code=\"rate_limited\"}} {limited}"
        )),
        "{text}"
    );
    // Tokens come back with time.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    sock.send(json!({"type": "sync"})).await;
    let again = sock.next_state().await;
    assert_eq!(again["version"].as_u64().unwrap(), version);

    // The lobby takes chat only: a flood of anything else gets one refusal each (the
    // burst `malformed`, the rest `rate_limited`, as on a table socket), and no list is
    // re-sent per message.
    let mut lobby = Sock::open(&format!("{}/ws/lobby", server.ws), None, None).await;
    assert_eq!(lobby.next().await["type"], "tables");
    for _ in 0..50 {
        lobby.send(json!({"type": "sync"})).await;
    }
    let mut malformed = 0;
    for _ in 0..50 {
        let m = lobby.next().await;
        assert_eq!(m["type"], "error", "{m}");
        match m["code"].as_str() {
            Some("malformed") => malformed += 1,
            Some("rate_limited") => {}
            _ => panic!("{m}"),
        }
    }
    assert!((10..=12).contains(&malformed), "a burst of 10: {malformed}");
    let quiet = tokio::time::timeout(
        std::time::Duration::from_millis(400),
        futures_util::StreamExt::next(&mut lobby.ws),
    )
    .await;
    assert!(quiet.is_err(), "the lobby answered more: {quiet:?}");
    server.stop().await;
}

/// The served OpenAPI document is the one kept in docs/openapi.json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_is_served() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let res = reqwest::get(format!("{}/api/openapi.json", server.base))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/json");
    // The very text kept in the repository, not merely an equal value.
    let text = res.text().await.unwrap();
    assert_eq!(text, include_str!("../../docs/openapi.json"));
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["openapi"], "3.1.0");
    // Every operation the router serves is there, e.g. the page's second address.
    assert_eq!(
        body["paths"]["/index.html"]["get"]["operationId"],
        "index_html"
    );
    // ... and it serves the same page as `/`.
    let page = |path: &'static str| {
        let url = format!("{}{path}", server.base);
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    let root = page("/").await;
    assert!(root.contains("<html"), "{root}");
    assert_eq!(page("/index.html").await, root);
    server.stop().await;
}

/// A SQLite file serves one process: a second server started on it is refused at once,
/// saying why (a black-box walk found it accepted, the two then taking the tables from
/// each other every second or two). Once the first has stopped, the file is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_one_sqlite_file_is_refused() {
    let db = sqlite_db();
    let first = Child::start(&db).await;
    // A second server on the file: it must stop at once, saying why.
    let refused = |why: &'static str| {
        let url = db.url.clone();
        async move {
            let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"))
                .args(["--port", "0", "--database-url", &url])
                .env("NO_COLOR", "1")
                .output();
            let out = tokio::time::timeout(std::time::Duration::from_secs(30), second)
                .await
                .expect("the second server stops at once")
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(!out.status.success(), "{why}: {said}");
            assert!(said.contains("another server is running on"), "{said}");
        }
    };
    refused("refused").await;
    // Nor once `FILE.lock`, which looks stale, is deleted: the database file itself is
    // locked too (a walk deleted it, and two servers ran).
    let lock = db.url.trim_start_matches("sqlite://").to_string() + ".lock";
    std::fs::remove_file(&lock).expect("the lock file is there");
    refused("refused without FILE.lock").await;
    let mut first = first;
    first.child.kill().await.unwrap();
    // The first one's process is gone: its lock with it, and a new server starts.
    let third = Child::start(&db).await;
    drop(third);
}

/// `/metrics` has the server's own series beside the core's: lobby sockets, players
/// waiting in quick play, analysis jobs by state, HTTP answers by class (an operator walk
/// found none of them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_lobby_sockets_queues_analyses_and_answers() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let value = |text: &str, series: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{series} ")))
            .unwrap_or_else(|| panic!("no {series} in {text}"))
            .parse()
            .unwrap()
    };
    let before = metrics(&server).await;
    assert_eq!(value(&before, "fib_lobby_sockets"), 0);
    assert_eq!(value(&before, "fib_quickplay_waiting"), 0);
    assert_eq!(value(&before, "fib_analysis_jobs{state=\"queued\"}"), 0);
    assert_eq!(value(&before, "fib_analysis_jobs{state=\"running\"}"), 0);
    let four = value(&before, "fib_http_responses_total{class=\"4xx\"}");
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, _) = ada.get("/api/tables/not-a-table").await;
    assert_eq!(s, 404);
    let mut a = lobby(&ada).await;
    a.send(json!({"type": "queue_join", "game": "trump", "seats": 2}))
        .await;
    lobby_until(&mut a, "queued").await;
    let started = std::time::Instant::now();
    let after = loop {
        let text = metrics(&server).await;
        if value(&text, "fib_quickplay_waiting") == 1 {
            break text;
        }
        assert!(started.elapsed() < TIMEOUT, "{text}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(value(&after, "fib_lobby_sockets"), 1);
    assert!(value(&after, "fib_http_responses_total{class=\"4xx\"}") > four);
    assert!(value(&after, "fib_http_responses_total{class=\"2xx\"}") > 0);
    drop(a);
    server.stop().await;
}

/// `GET /api/tables` pages through a lobby longer than its window (`offset`, `limit`):
/// beyond the first `--lobby-shown` tables nothing was reachable. Every table once, in the
/// lobby's order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lobby_list_pages_beyond_its_window() {
    let db = sqlite_db();
    let server = Server::start_with(&db, |c| c.lobby_shown = 3).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let mut made = Vec::new();
    for _ in 0..7 {
        made.push(ada.create_trump(2, false).await);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let http = reqwest::Client::new();
    let page = |offset: usize, limit: Option<usize>| {
        let http = http.clone();
        let url = match limit {
            Some(l) => format!("{}/api/tables?offset={offset}&limit={l}", server.base),
            None => format!("{}/api/tables?offset={offset}", server.base),
        };
        async move {
            let r = http.get(url).send().await.unwrap();
            let status = r.status().as_u16();
            let total = r
                .headers()
                .get("x-total-count")
                .map(|v| v.to_str().unwrap().to_string());
            (status, total, r.json::<Value>().await.unwrap())
        }
    };
    let mut seen: Vec<String> = Vec::new();
    let mut offset = 0;
    loop {
        let (s, total, v) = page(offset, Some(2)).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(total.as_deref(), Some("7"));
        let ids: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        if ids.is_empty() {
            break;
        }
        assert!(ids.len() <= 2);
        offset += ids.len();
        seen.extend(ids);
    }
    // Newest first: the reverse of the order they were made.
    made.reverse();
    assert_eq!(seen, made);
    // Without a limit, the window's size.
    let (_, _, v) = page(3, None).await;
    assert_eq!(v.as_array().unwrap().len(), 3, "{v}");
    // A limit outside 1..=window is the nearest of the two, as the leaderboard's.
    for (asked, got) in [(0, 1), (4, 3)] {
        let (s, _, v) = page(0, Some(asked)).await;
        assert_eq!((s, v.as_array().unwrap().len()), (200, got), "{v}");
    }
    server.stop().await;
}

/// A Postgres the server cannot use stops it at once with the database's own reason (a
/// walk got "pool timed out while waiting for an open connection" after 10 s, for a server
/// that was not running): nothing listens there; and, with a test Postgres, a wrong
/// password and a database that does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_be_used_is_said_why() {
    let said = |url: String| async move {
        let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"))
            .args(["--port", "0", "--database-url", &url])
            .env("NO_COLOR", "1")
            .output();
        let out = tokio::time::timeout(std::time::Duration::from_secs(8), run)
            .await
            .expect("the server stops before the pool's 10 s")
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let out = said("postgres://fib:fib@127.0.0.1:1/fib".into()).await;
    assert!(out.contains("Connection refused"), "{out}");
    if let Ok(admin) = std::env::var("TEST_DATABASE_URL") {
        let mut url = reqwest::Url::parse(&admin).unwrap();
        url.set_password(Some("certainly-not-the-password"))
            .unwrap();
        let out = said(url.to_string()).await;
        assert!(out.contains("password authentication failed"), "{out}");
        let mut url = reqwest::Url::parse(&admin).unwrap();
        url.set_path("/no_such_database_here");
        let out = said(url.to_string()).await;
        assert!(out.contains("does not exist"), "{out}");
    }
}

/// A bad value from an environment variable is said to come from there: clap names only
/// the flag, which an operator who set `FIB_BOT_DELAY_MS` never typed. A bad flag is said
/// as clap says it, with no such note.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_environment_variable_is_named() {
    let run = |args: &'static [&'static str], env: Option<(&'static str, &'static str)>| async move {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"));
        cmd.args(args).env("NO_COLOR", "1");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = tokio::time::timeout(std::time::Duration::from_secs(10), cmd.output())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let said = run(&["--port", "0"], Some(("FIB_BOT_DELAY_MS", "abc"))).await;
    assert!(said.contains("invalid value 'abc'"), "{said}");
    assert!(
        said.contains("the environment variable FIB_BOT_DELAY_MS"),
        "{said}"
    );
    let said = run(&["--port", "0", "--bot-delay-ms", "abc"], None).await;
    assert!(said.contains("invalid value 'abc'"), "{said}");
    assert!(!said.contains("environment variable"), "{said}");
}

/// The lobby shows each socket only the first `--lobby-shown` tables (open first, newest
/// first), with the `total` listed; a socket may pick one game's tables. Tables that come
/// and go beyond its end are not sent to it; one that leaves it is replaced by the next.
/// A walk's 10,000 public tables made the whole list a 5.4 MB message to every visitor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lobby_shows_the_first_tables_of_many() {
    use std::collections::BTreeMap;
    let db = sqlite_db();
    let server = Server::start_with(&db, |c| c.lobby_shown = 3).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let mut lobby = Sock::open(&format!("{}/ws/lobby", server.ws), None, None).await;
    // What the socket shows, kept as a client keeps it.
    let mut shown: BTreeMap<String, Value> = BTreeMap::new();
    let mut total = 0;
    let first = lobby.next().await;
    assert_eq!(
        (&first["type"], &first["total"]),
        (&json!("tables"), &json!(0))
    );
    fn apply(m: &Value, shown: &mut BTreeMap<String, Value>, total: &mut u64) -> bool {
        match m["type"].as_str() {
            Some("tables") => shown.clear(),
            Some("changes") => {
                for id in m["removed"].as_array().unwrap() {
                    shown.remove(id.as_str().unwrap());
                }
            }
            _ => return false,
        }
        for t in m["tables"].as_array().unwrap() {
            shown.insert(t["id"].as_str().unwrap().to_string(), t.clone());
        }
        *total = m["total"].as_u64().unwrap();
        true
    }
    /// Reads the socket until it shows `want` (and `want_total`).
    async fn until(
        lobby: &mut Sock,
        shown: &mut BTreeMap<String, Value>,
        total: &mut u64,
        mut want: Vec<String>,
        want_total: u64,
    ) {
        want.sort();
        loop {
            let m = lobby.next().await;
            assert!(apply(&m, shown, total), "{m}");
            if shown.keys().cloned().collect::<Vec<_>>() == want && *total == want_total {
                return;
            }
        }
    }
    let mut trump = Vec::new();
    for _ in 0..4 {
        trump.push(ada.create_trump(2, false).await);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let (s, v) = ada
        .post("/api/tables", json!({"game": "nachos", "seats": 3}))
        .await;
    assert_eq!(s, 201, "{v}");
    let nachos = v["table"]["id"].as_str().unwrap().to_string();
    let ids = |v: &[&String]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    until(
        &mut lobby,
        &mut shown,
        &mut total,
        ids(&[&nachos, &trump[3], &trump[2]]),
        5,
    )
    .await;

    // One game's tables: the first three of Trump's four.
    lobby
        .send(json!({"type": "lobby_filter", "game": "trump"}))
        .await;
    let m = lobby.next().await;
    assert_eq!(m["type"], "tables", "{m}");
    let order: Vec<&str> = m["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        vec![&*trump[3], &*trump[2], &*trump[1]],
        "newest first"
    );
    assert_eq!(m["total"], 4);
    apply(&m, &mut shown, &mut total);
    // The newest leaves the lobby (its only player left): the next one takes its place.
    let (s, _) = ada
        .post(&format!("/api/tables/{}/leave", trump[3]), json!({}))
        .await;
    assert_eq!(s, 200);
    until(
        &mut lobby,
        &mut shown,
        &mut total,
        ids(&[&trump[2], &trump[1], &trump[0]]),
        3,
    )
    .await;
    // An unknown game is refused, and the list stays as it was.
    lobby
        .send(json!({"type": "lobby_filter", "game": "chess"}))
        .await;
    let e = lobby.next().await;
    assert_eq!(
        (&e["type"], &e["code"]),
        (&json!("error"), &json!("unknown_game")),
        "{e}"
    );
    // Every game again.
    lobby
        .send(json!({"type": "lobby_filter", "game": null}))
        .await;
    until(
        &mut lobby,
        &mut shown,
        &mut total,
        ids(&[&nachos, &trump[2], &trump[1]]),
        4,
    )
    .await;

    // A table past the end changes (Bob sits at the oldest), then one in the list (Cy sits
    // at the second newest): only the second is sent.
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let cy = Player::guest(&server.base, &server.ws, "Cy").await;
    let (s, _) = bob
        .post(&format!("/api/tables/{}/join", trump[0]), json!({}))
        .await;
    assert_eq!(s, 200);
    let (s, _) = cy
        .post(&format!("/api/tables/{}/join", trump[1]), json!({}))
        .await;
    assert_eq!(s, 200);
    loop {
        let m = lobby.next().await;
        assert_eq!(m["type"], "changes", "{m}");
        let sent = m["tables"].as_array().unwrap();
        assert!(
            sent.iter().all(|t| t["id"] != trump[0].as_str()),
            "a table past the list's end was sent: {m}"
        );
        if sent.iter().any(|t| t["id"] == trump[1].as_str()) {
            break;
        }
    }

    // The same over HTTP, with the total in a header.
    for (path, want, want_total) in [
        ("/api/tables", vec![&nachos, &trump[2], &trump[1]], "4"),
        (
            "/api/tables?game=trump",
            vec![&trump[2], &trump[1], &trump[0]],
            "3",
        ),
        ("/api/tables?game=rummy", vec![], "0"),
    ] {
        let r = reqwest::get(format!("{}{path}", server.base))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-total-count"], want_total, "{path}");
        let got: Vec<Value> = r.json().await.unwrap();
        let got: Vec<&str> = got.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(
            got,
            want.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            "{path}"
        );
    }
    let r = reqwest::get(format!("{}/api/tables?game=chess", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], "unknown_game");
    server.stop().await;
}
