//! The real-time path through the real server: patches against full states for every
//! viewer, a reconnect that resumes from the version it holds, bounded connections (a
//! client that never reads, one that reads too slowly, and the readers next to them), and
//! a SIGKILL under sustained load on every database.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

/// The state document and version of a state message (what patches must reproduce).
fn doc(st: &Value) -> Value {
    json!({
        "version": st["version"], "table": st["table"], "you": st["you"],
        "view": st["view"], "legal": st["legal"], "fairness": st["fairness"],
        "events": st["events"],
    })
}

/// A Trump table without end (the race target is out of reach) of `seats` easy bots, not
/// started.
async fn endless_bots_table(p: &Player, seats: usize) -> String {
    create_bots_only(p, "trump", seats, "easy", json!({"target": 1_000_000})).await
}

/// An endless table of four easy bots made by a new guest on the server at `base`, and
/// started: the bots play on with nobody watching.
async fn endless_bots_game(base: &str, ws: &str) -> String {
    let ada = Player::guest(base, ws, "Ada").await;
    let table = endless_bots_table(&ada, 4).await;
    start(&ada, &table).await;
    table
}

async fn start(p: &Player, table: &str) {
    let (s, v) = p
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
}

/// For a seated player and for a spectator, a socket taking patches and one taking full
/// states (`updates=full`) see the same document at every version, events included; and
/// so does a spectator taking RFC 6902 patches (`updates=json_patch`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_rebuild_the_full_state_of_every_viewer() {
    let db = sqlite_db();
    let server = Server::start_with_bot_delay(&db, 0).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 3, "bots": "easy"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let url = |q: &str| format!("{}/ws/table/{table}{q}", server.ws);
    let mut ada_patch = ada.connect(&table).await;
    let mut ada_full = Sock::open(&url("?updates=full"), Some(&ada.token), None).await;
    let mut spec_patch = Sock::open(&url(""), None, None).await;
    let mut spec_full = Sock::open(&url("?updates=full"), None, None).await;
    let mut spec_json = Sock::open(&url("?updates=json_patch"), None, None).await;
    for s in [
        &mut ada_patch,
        &mut ada_full,
        &mut spec_patch,
        &mut spec_full,
        &mut spec_json,
    ] {
        s.next_state().await;
    }
    ada.post(&format!("/api/tables/{table}/start"), json!({}))
        .await;

    // Ada plays 12 cards; all four sockets record every document they reach.
    let mut seen: [HashMap<u64, Value>; 5] = Default::default();
    let mut moves = 0;
    let mut acted_at = 0;
    while moves < 12 {
        let st = ada_patch.next_state_after_act().await;
        seen[0].insert(st["version"].as_u64().unwrap(), doc(&st));
        let v = st["version"].as_u64().unwrap();
        if my_turn(&st) && v > acted_at {
            ada_patch.act(v, &st["legal"][0]).await;
            acted_at = v;
            moves += 1;
        }
    }
    let last = ada_patch.state.clone().unwrap()["version"]
        .as_u64()
        .unwrap();
    for (i, s) in [
        &mut ada_full,
        &mut spec_patch,
        &mut spec_full,
        &mut spec_json,
    ]
    .into_iter()
    .enumerate()
    {
        loop {
            let st = s.next_state().await;
            let v = st["version"].as_u64().unwrap();
            seen[i + 1].insert(v, doc(&st));
            if v >= last {
                break;
            }
        }
    }
    assert!(ada_patch.patches > 12 && spec_patch.patches > 12);
    assert_eq!(
        ada_full.patches + spec_full.patches,
        0,
        "full sockets get states"
    );
    // The default is the compact form; `json_patch` gets RFC 6902 objects only.
    assert!(ada_patch.compact_ops > 12 && ada_patch.json_patch_ops == 0);
    assert!(spec_json.patches > 12 && spec_json.compact_ops == 0);
    for (patched, full, who) in [
        (0, 1, "Ada"),
        (2, 3, "a spectator"),
        (4, 3, "a spectator (json_patch)"),
    ] {
        let mut compared = 0;
        for (v, d) in &seen[patched] {
            if let Some(f) = seen[full].get(v) {
                assert_eq!(d, f, "{who} at version {v}");
                compared += 1;
            }
        }
        assert!(compared >= 12, "{who}: {compared} versions compared");
    }
    // A spectator's document never holds a hand.
    assert!(seen[2].values().all(|d| d["view"]["hand"].is_null()));
    server.stop().await;
}

/// Ada and Bob at a started two-seat Trump table, both connected, Ada's socket caught up
/// with Bob's arrival: Ada, the table, their sockets, and Ada's state.
async fn ada_and_bob_playing(server: &Server) -> (Player, String, Sock, Sock, Value) {
    let (ada, bob, table) = ada_and_bob_at_trump(&server.base, &server.ws).await;
    ada.post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    let mut a = ada.connect(&table).await;
    let mut b = bob.connect(&table).await;
    let joined = b.next_state().await["version"].as_u64().unwrap();
    let sa = a.until(|s| s["version"].as_u64().unwrap() >= joined).await;
    (ada, table, a, b, sa)
}

/// Waits until the match is dealt and a turn has begun (nothing more is on its way from
/// the start), then until everything sent to `sock` before its ping's answer is in.
async fn settled(sock: &mut Sock) {
    sock.until(|s| {
        s["table"]["to_act"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    })
    .await;
    sock.send(json!({"type": "ping"})).await;
    while sock.next().await["type"] != "pong" {}
}

/// A player's second socket (another tab) that opens or closes changes nothing anyone
/// sees: no new version, so the first socket hears nothing, and the second comes back with
/// `since` = the version it held and gets a patch, not the full state (a black-box walk
/// found a full state every time a player had another socket open; every socket heard an
/// empty patch, at a new version, whenever another opened).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_players_second_socket_leaves_unseen_and_resumes_with_a_patch() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, table, mut a, _b, _) = ada_and_bob_playing(&server).await;
    settled(&mut a).await;
    let at = a.state.as_ref().unwrap()["version"].as_u64().unwrap();
    let mut second = ada.connect(&table).await;
    second.next_state().await;
    // Everything sent to it before its ping's answer is in: it holds the latest.
    second.send(json!({"type": "ping"})).await;
    while second.next().await["type"] != "pong" {}
    let held = second.state.clone().unwrap();
    let since = held["version"].as_u64().unwrap();
    assert_eq!(since, at, "the second socket's coming made no new version");
    a.send(json!({"type": "ping"})).await;
    // Chat (its history arrives when it is read) is not the table's.
    let m = a.next().await;
    assert_eq!(
        m["type"], "pong",
        "the first socket heard nothing of the second: {m}"
    );
    second.ws.close(None).await.unwrap();
    drop(second);
    // Time for the server to take the socket's leaving in (a broadcast, before the fix).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    a.send(json!({"type": "ping"})).await;
    // Chat (its history arrives when it is read) is not the table's.
    let m = a.next().await;
    assert_eq!(m["type"], "pong", "nothing but the answer: {m}");

    let url = format!("{}/ws/table/{table}?since={since}", server.ws);
    let mut back = Sock::open(&url, Some(&ada.token), None).await;
    back.state = Some(held.clone());
    let first = back.next().await;
    assert_eq!(back.patches, 1, "one patch from the version held: {first}");
    back.send(json!({"type": "sync"})).await;
    let full = back.next_state().await;
    assert_eq!(first["view"], full["view"]);
    assert_eq!(first["table"], full["table"]);
    server.stop().await;
}

/// A player alone at a table who reloads the page: the old socket's leaving is told to
/// nobody but the lobby; the new socket's coming must still be told (a review found the
/// comparison made against the table part before the leaving, so the player stayed
/// "disconnected" in the lobby and in their own document until something else changed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_player_who_reloads_is_connected_again() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let table = ada.create_trump(2, false).await;
    let connected = |info: &Value| info["seats"][0]["connected"] == true;
    // The lobby's list (what lobby sockets and `GET /api/tables` show).
    let listed = || async {
        let (_, list) = ada.get("/api/tables").await;
        list.as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == table.as_str())
            .cloned()
            .expect("listed")
    };
    let mut a = ada.connect(&table).await;
    assert!(connected(&a.next_state().await["table"]));
    drop(a);
    let mut gone = false;
    for _ in 0..100 {
        if !connected(&listed().await) {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(gone, "the lobby hears that Ada left");
    let mut a = ada.connect(&table).await;
    let st = a.next_state().await;
    assert!(connected(&st["table"]), "her own document: {}", st["table"]);
    let mut back = false;
    for _ in 0..100 {
        if connected(&listed().await) {
            back = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(back, "the lobby hears that Ada is back");
    server.stop().await;
}

/// Spectators that come and go are told to the table at most once a second (a black-box
/// walk opened and closed anonymous sockets in a loop: each made two patches to everyone
/// at the table, thousands a second). The count still arrives, and each newcomer gets its
/// state at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spectators_coming_and_going_are_told_at_most_once_a_second() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (_ada, table, mut a, _b, _) = ada_and_bob_playing(&server).await;
    settled(&mut a).await;
    let before = a.patches;
    let url = format!("{}/ws/table/{table}", server.ws);
    let mut watching = Vec::new();
    for _ in 0..5 {
        let mut s = Sock::open(&url, None, None).await;
        s.next_state().await;
        watching.push(s);
        // Come and gone, twice as many times.
        for _ in 0..2 {
            let mut s = Sock::open(&url, None, None).await;
            s.next_state().await;
            drop(s);
        }
    }
    let started = std::time::Instant::now();
    let told = a.until(|s| s["table"]["spectators"] == 5).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "the count came within a second or so"
    );
    let patches = a.patches - before;
    assert!(
        patches <= 3,
        "15 sockets came and 10 went, {patches} patches to a player: {told}"
    );
    server.stop().await;
}

/// While a spectator's coming waits to be told (the count alone is told at most once a
/// second), the documents of the current version keep the count they were sent with: a
/// `sync` or an HTTP state at that version says what the sockets hold (a walk found them
/// differing, and a client that synced then held a count nobody corrected when the
/// spectator left again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_at_a_version_is_the_same_while_a_spectator_count_waits() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, table, mut a, _b, _) = ada_and_bob_playing(&server).await;
    settled(&mut a).await;
    let url = format!("{}/ws/table/{table}", server.ws);
    let mut checked = false;
    let mut watching = Vec::new();
    for _ in 0..3 {
        // The last broadcast over a second ago: the first spectator is told at once, the
        // second waits.
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        let mut first = Sock::open(&url, None, None).await;
        first.next_state().await;
        let told = a
            .until(|s| s["table"]["spectators"] == watching.len() + 1)
            .await;
        let mut second = Sock::open(&url, None, None).await;
        second.next_state().await;
        let (_, st) = ada.get(&format!("/api/tables/{table}/state")).await;
        watching.push(first);
        watching.push(second);
        if st["version"] != told["version"] {
            // The deferred count went out already (a slow machine): try again.
            continue;
        }
        assert_eq!(
            st["table"]["spectators"], told["table"]["spectators"],
            "{st}"
        );
        checked = true;
        break;
    }
    assert!(
        checked,
        "the second spectator's coming was told at once three times"
    );
    server.stop().await;
}

/// A client that reconnects with `since` = the version it holds gets one patch from there
/// (the move it missed while away), which brings it to exactly the state a `sync` gives; a
/// `since` the table does not hold gets the full state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_resumes_from_the_version_it_holds() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, table, mut a, mut b, sa) = ada_and_bob_playing(&server).await;
    if my_turn(&sa) {
        a.act(sa["version"].as_u64().unwrap(), &sa["legal"][0])
            .await;
        a.next_state_after_act().await;
    }
    let held = a.state.clone().unwrap();
    let since = held["version"].as_u64().unwrap();
    let sb = b.until(|s| s["version"].as_u64().unwrap() >= since).await;
    assert!(my_turn(&sb), "Bob is on turn");
    drop(a);

    // While Ada is away: she is shown as gone, and Bob plays.
    let sb = b
        .until(|s| s["table"]["seats"][0]["connected"] == false)
        .await;
    b.act(sb["version"].as_u64().unwrap(), &sb["legal"][0])
        .await;
    b.next_state_after_act().await;

    let url = format!("{}/ws/table/{table}?since={since}", server.ws);
    let mut back = Sock::open(&url, Some(&ada.token), None).await;
    back.state = Some(held.clone());
    let first = back.next().await;
    assert_eq!(back.patches, 1, "one patch from the version held: {first}");
    assert!(first["version"].as_u64() > Some(since));
    assert_ne!(first["view"], held["view"], "the patch brought Bob's card");
    back.send(json!({"type": "sync"})).await;
    let full = back.next_state().await;
    assert_eq!(back.patches, 1, "sync answers with a full state");
    assert_eq!(doc(&first)["view"], doc(&full)["view"]);
    assert_eq!(first["legal"], full["legal"]);
    assert_eq!(first["table"], full["table"]);
    assert_eq!(first["fairness"], full["fairness"]);

    // A version the table does not hold for Ada's viewer: the full state.
    for bad in [since - 1, 1, u64::MAX] {
        let url = format!("{}/ws/table/{table}?since={bad}", server.ws);
        let mut s = Sock::open(&url, Some(&ada.token), None).await;
        let m = s.next().await;
        assert_eq!(
            (m["type"].as_str(), s.patches),
            (Some("state"), 0),
            "since={bad}"
        );
    }
    // And an unknown `updates` is refused before the upgrade.
    let url = format!("{}/ws/table/{table}?updates=sometimes", server.ws);
    match tokio_tungstenite::connect_async(url.as_str()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            assert_eq!(r.status(), 400)
        }
        other => panic!("expected a refused upgrade, got {:?}", other.map(|_| ())),
    }
    server.stop().await;
}

/// `GET /api/tables/{id}/state` answers what the viewer's socket would say first (a seat
/// sees its own hand, a spectator none), and a socket opened next with `since` = its
/// version gets a patch from there, not the whole state again. Unknown tables and private
/// ones without their invite are refused as the table's other routes refuse them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_state_over_http_then_patches_over_the_socket() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, table, mut a, _b, _) = ada_and_bob_playing(&server).await;
    let (status, st) = ada.get(&format!("/api/tables/{table}/state")).await;
    assert_eq!(status, 200, "{st}");
    assert_eq!(st["type"], "state");
    assert_eq!(
        st["you"],
        json!({"kind": "player", "seat": 0}),
        "{}",
        st["you"]
    );
    assert!(
        st["view"]["hand"].as_array().is_some_and(|h| !h.is_empty()),
        "Ada sees her hand"
    );
    // The same document as a socket's full state at that version.
    a.send(json!({"type": "sync"})).await;
    let full = a.next_state().await;
    if full["version"] == st["version"] {
        assert_eq!(doc(&full)["view"], doc(&st)["view"]);
        assert_eq!(full["legal"], st["legal"]);
        assert_eq!(full["fairness"], st["fairness"]);
    }
    // A spectator's: no hand, no legal actions.
    let eve = Player::guest(&server.base, &server.ws, "Eve").await;
    let (status, sp) = eve.get(&format!("/api/tables/{table}/state")).await;
    assert_eq!(status, 200, "{sp}");
    assert_eq!(sp["you"], json!({"kind": "spectator"}));
    assert!(
        sp["view"]["hand"].is_null(),
        "a spectator sees no hand: {}",
        sp["view"]
    );
    assert_eq!(sp["legal"], json!([]));

    // A socket opened right after with `since` gets a patch to what it holds.
    let (_, st) = ada.get(&format!("/api/tables/{table}/state")).await;
    let since = st["version"].as_u64().unwrap();
    let url = format!("{}/ws/table/{table}?since={since}", server.ws);
    let mut s = Sock::open(&url, Some(&ada.token), None).await;
    s.state = Some(st.clone());
    let first = s.next().await;
    assert_eq!(
        s.patches, 1,
        "a patch from the version fetched over HTTP: {first}"
    );
    // Ada's other socket is open: this one's coming changes nothing anyone sees, so the
    // patch is from `since` to `since`, with no operations.
    assert_eq!(first["version"].as_u64(), Some(since), "{first}");
    assert_eq!(first["view"], st["view"]);

    // The table's own address carries that state in the page, for the viewer only.
    let page = |token: Option<String>, path: String| {
        let url = format!("{}{path}", server.base);
        async move {
            let mut req = reqwest::Client::new().get(url);
            if let Some(t) = token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 200);
            assert_eq!(res.headers()["cache-control"], "no-store");
            res.text().await.unwrap()
        }
    };
    let in_page = |html: &str| -> Option<Value> {
        let start = html.find("<script type=\"application/json\" id=\"fib-state\">")?;
        let rest = &html[start..];
        let text = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
        Some(serde_json::from_str(text).unwrap())
    };
    let html = page(Some(ada.token.clone()), format!("/table/{table}")).await;
    let mine = in_page(&html).expect("Ada's page carries her state");
    assert_eq!(mine["type"], "state");
    assert_eq!(mine["you"], json!({"kind": "player", "seat": 0}));
    assert!(
        mine["view"]["hand"]
            .as_array()
            .is_some_and(|h| !h.is_empty())
    );
    assert!(
        html.contains("rel=\"modulepreload\" href=\"/games/trump.js?v="),
        "the game's module is preloaded"
    );
    assert!(
        html.contains(&format!(
            "id=\"fib-session\">{{\"player\":{{\"id\":\"{}\"",
            ada.id
        )),
        "the page carries the session"
    );
    let theirs = in_page(&page(Some(eve.token.clone()), format!("/table/{table}")).await).unwrap();
    assert_eq!(theirs["you"], json!({"kind": "spectator"}));
    assert!(
        theirs["view"]["hand"].is_null(),
        "no hand in a spectator's page"
    );
    // Nobody signed in, or no such table: the plain page (it says why when it asks).
    assert!(in_page(&page(None, format!("/table/{table}")).await).is_none());
    let unknown = "/table/00000000-0000-0000-0000-000000000000".to_string();
    assert!(in_page(&page(Some(ada.token.clone()), unknown).await).is_none());

    let (status, e) = ada
        .get("/api/tables/00000000-0000-0000-0000-000000000000/state")
        .await;
    assert_eq!(
        (status, e["code"].as_str()),
        (404, Some("table_not_found")),
        "{e}"
    );
    server.stop().await;
}

/// A table socket whose receive window is tiny (4 KiB), so that a client that does not
/// read stops the server's writes within a moment.
async fn small_window_socket(server: &Server, url: &str) -> Sock {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let addr = server.base.trim_start_matches("http://").parse().unwrap();
    let tcp = sock.connect(addr).await.unwrap();
    let stream = tokio_tungstenite::MaybeTlsStream::Plain(tcp);
    let (ws, _) = tokio_tungstenite::client_async(url, stream)
        .await
        .expect("upgrade");
    Sock::new(ws)
}

/// A client that never reads is closed within seconds and its connection freed; one that
/// reads too slowly gets 1013; a normal reader of the same table is unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_that_fall_behind_are_closed_and_the_others_carry_on() {
    let db = sqlite_db();
    let server = Server::start_with_bot_delay(&db, 0).await;
    let table = endless_bots_game(&server.base, &server.ws).await;
    let url = format!("{}/ws/table/{table}?updates=full", server.ws);
    let mut normal = Sock::open(&format!("{}/ws/table/{table}", server.ws), None, None).await;
    normal.next_state().await;
    let connections = |text: &str| -> i64 {
        text.lines()
            .find_map(|l| l.strip_prefix("fib_ws_connections "))
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    let before = connections(&metrics(&server).await);

    // Never reads: the stream is never polled.
    let never = small_window_socket(&server, &url).await;
    // Reads, but pauses long enough for its queue to overflow. A usual receive buffer:
    // once it reads again, what the kernels hold for it (megabytes of full states) must
    // drain before its stuck write times out, which a small window on a loaded machine
    // does not manage.
    let mut slow = Sock::open(&url, None, None).await;
    slow.next_state().await;

    let closed = closed_total;
    // Meanwhile the normal reader follows every change (its Sock checks that each patch
    // starts at the version it holds). How soon the two others fall behind depends on the
    // machine's speed and socket buffers: seconds, but a loaded CI may need more.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut followed = 0u64;
    let mut slow_code = None;
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the readers that do not read were not closed in time"
        );
        normal.next().await;
        followed += 1;
        if !followed.is_multiple_of(20) {
            continue;
        }
        let text = metrics(&server).await;
        // Both stopped readers overflowed their queues: the slow one reads again now,
        // before its stuck write times out, and finds the close frame.
        if slow_code.is_none() && closed(&text, "fell_behind") >= 2 {
            // What was queued for it before it fell behind comes first: up to 64 full
            // states through its small window, which a loaded CI machine writes slowly.
            slow_code = Some(slow.close_code_within(Duration::from_secs(60)).await);
        }
        // The one that never reads is cut off when its write times out.
        if slow_code.is_some() && closed(&text, "write_timeout") >= 1 {
            break;
        }
    }
    let text = metrics(&server).await;
    assert_eq!(closed(&text, "write_timeout"), 1, "{text}");
    let slow_code = slow_code.unwrap();
    assert_eq!(slow_code, Some(1013), "the slow reader is told to resync");
    assert!(
        followed > 10,
        "the normal reader kept receiving: {followed}"
    );
    // Both closed sockets are gone: their tasks ended and what they held was dropped.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while connections(&metrics(&server).await) != before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "connections not freed:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The normal reader is still connected and in step.
    normal.send(json!({"type": "sync"})).await;
    let st = normal.next_state().await;
    assert_eq!(status(&st), "playing");
    drop(never);
    server.stop().await;
}

/// SIGKILL while many tables play flat out: every action a client saw acknowledged is in
/// the database after the restart, in order, on every database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_no_acknowledged_action() {
    for db in databases().await {
        let proc = Child::start(&db).await;
        let (tables, watchers) = watched_bots_tables(&proc).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut proc = proc;
        proc.child.kill().await.unwrap(); // SIGKILL, mid-stream
        seen_is_stored(&db, &tables, watchers).await;
        // And the tables carry on after a restart.
        let proc2 = Child::start(&db).await;
        let mut s = Sock::open(&format!("{}/ws/table/{}", proc2.ws, tables[0]), None, None).await;
        let st = s.next_state().await;
        assert_eq!(status(&st), "playing", "{}", db.label);
        drop(proc2);
    }
}

/// Sockets that close while their table broadcasts (bots moving flat out) are not counted
/// as readers that fell behind: their queue is refused as closed, not as full, between the
/// socket's end and the table hearing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_that_close_are_not_counted_as_fallen_behind() {
    let db = sqlite_db();
    let server = Server::start_with_bot_delay(&db, 0).await;
    let table = endless_bots_game(&server.base, &server.ws).await;
    let url = format!("{}/ws/table/{table}", server.ws);
    // A watcher that reads everything, on its own task: one that lagged would fall behind
    // for real.
    let mut watcher = Sock::open(&url, None, None).await;
    watcher.next_state().await;
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let watching = tokio::spawn(async move {
        while let Some(Ok(_)) = watcher.ws.next().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    for _ in 0..10 {
        let mut socks = Vec::new();
        for _ in 0..10 {
            let mut s = Sock::open(&url, None, None).await;
            s.next_state().await;
            socks.push(s);
        }
        // Half say goodbye, half just vanish (the TCP connection dropped).
        for (i, mut s) in socks.into_iter().enumerate() {
            if i % 2 == 0 {
                let _ = s.ws.close(None).await;
            }
        }
        // The table keeps broadcasting meanwhile.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen.load(std::sync::atomic::Ordering::Relaxed) > 50,
        "the table was broadcasting"
    );
    let text = metrics(&server).await;
    assert_eq!(closed_total(&text, "fell_behind"), 0, "{text}");
    server.stop().await;
    watching.abort();
}

/// SIGTERM while bots-only tables play flat out (their moves need no socket, so they go
/// on after the sockets close) and players wait in a quick-play queue: the server stops
/// its background tasks and every table before it closes the database, so it exits
/// cleanly with nothing logged at WARN or ERROR (no write tried on a closed pool), and
/// every action a watcher saw is stored, on every database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_stops_the_tables_before_the_database() {
    for db in databases().await {
        let proc = Child::start(&db).await;
        let (tables, watchers) = watched_bots_tables(&proc).await;
        // Three players waiting in a quick-play queue for four: their sockets close with
        // the server, and each closing takes its player out of the queue in the store.
        let mut queued = Vec::new();
        for name in ["Bea", "Cy", "Di"] {
            let p = Player::guest(&proc.base, &proc.ws, name).await;
            let mut lobby =
                Sock::open(&format!("{}/ws/lobby", proc.ws), Some(&p.token), None).await;
            lobby
                .send(json!({"type": "queue_join", "game": "trump", "seats": 4}))
                .await;
            while lobby.next_any().await["type"] != "queued" {}
            queued.push(lobby);
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let from = proc.troubles_so_far();
        proc.signal("-TERM");
        let (status, troubles) = proc.exit(from).await;
        assert!(status.success(), "{}: {status:?}", db.label);
        assert!(
            troubles.is_empty(),
            "{}: the shutdown logged trouble:\n{}",
            db.label,
            troubles.join("\n")
        );
        seen_is_stored(&db, &tables, watchers).await;
    }
}

/// A client that stopped reading cannot hold a shutdown up for longer than its write
/// timeouts: the server waits for its socket's task (so that nothing is left using the
/// store), which ends when its stuck write times out, and then exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stopped_reading_delays_a_shutdown_by_its_write_timeouts_at_most() {
    let db = sqlite_db();
    let proc = Child::start(&db).await;
    let table = endless_bots_game(&proc.base, &proc.ws).await;
    // Full states to a 4 KiB receive window that is never read: the server's writes to
    // it are stuck within moments.
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let addr = proc.base.trim_start_matches("http://").parse().unwrap();
    let tcp = sock.connect(addr).await.unwrap();
    let url = format!("{}/ws/table/{table}?updates=full", proc.ws);
    let (never, _) = tokio_tungstenite::client_async(url.as_str(), tcp)
        .await
        .expect("upgrade");
    // Its queue overflowing (the table drops it: `fell_behind`) means its task is stuck
    // in a write, which then has up to its whole timeout left.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = proc.metrics().await;
        if closed_total(&text, "fell_behind") >= 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reader that does not read never fell behind:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let from = proc.troubles_so_far();
    let asked = std::time::Instant::now();
    proc.signal("-TERM");
    let (status, troubles) = proc.exit(from).await;
    let took = asked.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(troubles.is_empty(), "{}", troubles.join("\n"));
    // Two write timeouts (the stuck write, then the close frame) and a second of slack,
    // as `serve` allows, plus the rest of the shutdown.
    assert!(took < Duration::from_secs(15), "the shutdown took {took:?}");
    drop(never);
}

/// The cards a spectator on `url` saw played, (seat, card) in order, until its socket
/// ends: each was acknowledged (made durable, then broadcast). Read from its document's
/// `plays` (protocol.md §6.4) after each message, and a round's last card from the
/// `round_ended` event that comes with the next round's deal.
async fn watch_cards(url: String) -> Vec<(i64, Value)> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let mut doc = protocol::client::TableDoc::default();
    let mut played = Vec::new();
    // The view of the round last seen, and how many of its plays are recorded.
    let mut round: Option<Value> = None;
    let mut seen = 0;
    let take = |view: &Value, seen: &mut usize, played: &mut Vec<(i64, Value)>| {
        let plays = trump_plays(view);
        for (seat, card) in &plays[*seen..] {
            played.push((*seat as i64, card.clone()));
        }
        *seen = plays.len();
    };
    while let Some(Ok(m)) = ws.next().await {
        let Message::Text(t) = m else { continue };
        let protocol::client::Incoming::Updated { .. } = doc.take(&t) else {
            continue;
        };
        let msg: Value = serde_json::from_str(&t).unwrap();
        let view = doc.doc.as_ref().unwrap().to_value().unwrap()["view"].clone();
        if view.is_null() {
            continue;
        }
        if let Some(old) = round.as_mut()
            && old["round"] != view["round"]
        {
            // The round before ended in this message: its last card is in `round_ended`.
            let ended = msg["events"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["type"] == "round_ended")
                .expect("a new round comes with the end of the one before");
            let last = ended["last_trick"].as_array().unwrap().last().unwrap();
            old["plays"].as_array_mut().unwrap().push(last.clone());
            take(old, &mut seen, &mut played);
            seen = 0;
        }
        take(&view, &mut seen, &mut played);
        round = Some(view);
    }
    played
}

/// Eight bots-only Trump tables of three playing flat out on `proc`, each with an
/// anonymous spectator recording the cards it sees played ([`watch_cards`]); started once
/// watched, so the watchers see every card from the first.
async fn watched_bots_tables(
    proc: &Child,
) -> (Vec<String>, Vec<tokio::task::JoinHandle<Vec<(i64, Value)>>>) {
    let ada = Player::guest(&proc.base, &proc.ws, "Ada").await;
    let mut tables = Vec::new();
    for _ in 0..8 {
        tables.push(endless_bots_table(&ada, 3).await);
    }
    let mut watchers = Vec::new();
    for t in &tables {
        watchers.push(tokio::spawn(watch_cards(format!(
            "{}/ws/table/{t}",
            proc.ws
        ))));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for t in &tables {
        start(&ada, t).await;
    }
    (tables, watchers)
}

/// `fib_ws_closed_total{reason}` in a `/metrics` text (0 until one is closed so).
fn closed_total(text: &str, reason: &str) -> u64 {
    let key = format!("fib_ws_closed_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(key.as_str()))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The cards each watcher saw played (after its socket ended) are, in order, the first
/// actions stored for its table, read from the database directly; and the tables were
/// playing (more than 50 cards in all).
async fn seen_is_stored(
    db: &Db,
    tables: &[String],
    watchers: Vec<tokio::task::JoinHandle<Vec<(i64, Value)>>>,
) {
    let mut seen = Vec::new();
    for w in watchers {
        seen.push(w.await.unwrap());
    }
    let total: usize = seen.iter().map(Vec::len).sum();
    assert!(
        total > 50,
        "{}: the tables were playing ({total} cards)",
        db.label
    );
    let stored = stored_actions(&db.url, tables).await;
    for ((t, saw), log) in tables.iter().zip(&seen).zip(&stored) {
        assert!(
            log.len() >= saw.len(),
            "{}: table {t} lost acknowledged actions ({} seen, {} stored)",
            db.label,
            saw.len(),
            log.len()
        );
        assert_eq!(&log[..saw.len()], &saw[..], "{}: table {t}", db.label);
    }
}

/// Every stored action of each table as (seat, card), in log order.
async fn stored_actions(url: &str, tables: &[String]) -> Vec<Vec<(i64, Value)>> {
    let mut out = Vec::new();
    let sql = "SELECT seat, action FROM actions WHERE table_id = $1 ORDER BY round_no, seq";
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        for t in tables {
            let rows: Vec<(i32, String)> =
                sqlx::query_as(sql).bind(t).fetch_all(&pool).await.unwrap();
            out.push(card_log(rows));
        }
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        for t in tables {
            let rows: Vec<(i32, String)> =
                sqlx::query_as(sql).bind(t).fetch_all(&pool).await.unwrap();
            out.push(card_log(rows));
        }
        pool.close().await;
    }
    out
}

fn card_log(rows: Vec<(i32, String)>) -> Vec<(i64, Value)> {
    rows.into_iter()
        .map(|(seat, a)| {
            let a: Value = serde_json::from_str(&a).unwrap();
            // Stored as the card's code alone, or (sent so) as an object.
            let card = if a.is_string() { a } else { a["card"].clone() };
            (i64::from(seat), card)
        })
        .collect()
}

/// A move stored although its write reported an error (a commit cut off mid-way that did
/// land) must not wedge the table: the table takes again what the database holds, tells
/// everyone, and play goes on. Simulated by writing the move into the log behind the
/// server's back, so that the server's own write of the next sequence number fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_with_an_unknown_outcome_reloads_the_table() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (_, table, mut a, mut b, sa) = ada_and_bob_playing(&server).await;
    let sb = b.state.clone().unwrap();
    let (sock, st) = if my_turn(&sa) {
        (&mut a, sa)
    } else {
        (&mut b, sb)
    };
    let seat = st["you"]["seat"].as_i64().unwrap();
    let legal = st["legal"].as_array().unwrap().clone();
    assert!(legal.len() >= 2, "a choice of cards: {legal:?}");

    // The first card "lands" without the server hearing of it.
    let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
    sqlx::query(
        "INSERT INTO actions (table_id, round_no, seq, seat, action, created_at) \
         VALUES ($1, 1, 0, $2, $3, 0)",
    )
    .bind(&table)
    .bind(seat)
    .bind(legal[0].to_string())
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    // The player plays another card: the server's write collides with the stored move.
    sock.act(st["version"].as_u64().unwrap(), &legal[1]).await;
    let mut reloaded = None;
    let mut refused = None;
    while reloaded.is_none() || refused.is_none() {
        let m = sock.next().await;
        match m["type"].as_str() {
            Some("state") => reloaded = Some(m),
            Some("error") => refused = Some(m),
            _ => panic!("unexpected {m}"),
        }
    }
    let (reloaded, refused) = (reloaded.unwrap(), refused.unwrap());
    assert_eq!(refused["code"], "internal", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("the table now shows what is stored"),
        "{refused}"
    );
    // What is shown is what is stored: the first card is played, the other in hand.
    assert_eq!(
        reloaded["view"]["plays"].as_array().unwrap().last(),
        Some(&legal[0]),
        "{reloaded}"
    );
    assert!(
        reloaded["view"]["hand"]
            .as_array()
            .unwrap()
            .contains(&legal[1])
    );
    let text = metrics(&server).await;
    assert!(text.contains("fib_table_reloads_total 1"), "{text}");

    // And play goes on: the other player moves, and it is stored after the injected move.
    let other = if my_turn(&reloaded) {
        panic!("the turn passed on: {reloaded}")
    } else if seat == 0 {
        &mut b
    } else {
        &mut a
    };
    let st = other.until(my_turn).await;
    other
        .act(st["version"].as_u64().unwrap(), &st["legal"][0])
        .await;
    let after = other.next_state_after_act().await;
    assert!(after["version"].as_u64() > st["version"].as_u64());
    // Its card is the round's latest play (or the last of a round just ended).
    let played = &st["legal"][0];
    assert!(
        after["view"]["plays"].as_array().unwrap().last() == Some(played)
            || after["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["type"] == "round_ended"
                    && e["last_trick"].as_array().unwrap().last() == Some(played)),
        "{after}"
    );
    server.stop().await;
}
