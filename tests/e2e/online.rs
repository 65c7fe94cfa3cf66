//! Online play that survives real people: clocks running out, players disconnecting and
//! coming back, everybody leaving, open tables nobody joins, a table task that panics, and
//! a table whose writes fail (parked), on both databases.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A two-seat Trump table of Ada and Bob with `pace` and game `options`, started, with
/// both connected; returns the players, the table and both sockets (each holding a state
/// at least as new as the start).
async fn ada_and_bob_started(
    server: &Server,
    pace: Value,
    options: Value,
) -> (Player, Player, String, Sock, Sock) {
    ada_and_bob_playing(server, "trump", pace, options).await
}

/// [`ada_and_bob_started`] at a two-seat table of `game`.
async fn ada_and_bob_playing(
    server: &Server,
    game: &str,
    pace: Value,
    options: Value,
) -> (Player, Player, String, Sock, Sock) {
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": game, "seats": 2, "pace": pace, "options": options}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let (s, v) = bob
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let mut a = ada.connect(&table).await;
    let mut b = bob.connect(&table).await;
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    a.until(|s| status(s) == "playing").await;
    b.until(|s| status(s) == "playing").await;
    (ada, bob, table, a, b)
}

fn seat(st: &Value, s: usize) -> &Value {
    &st["table"]["seats"][s]
}

/// The seat whose turn it is.
fn on_turn(st: &Value) -> usize {
    st["table"]["to_act"][0].as_u64().unwrap() as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pace_is_validated_and_shown() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    for (pace, bound) in [
        (json!({"kind": "live", "move_s": 0, "bank_s": 10}), "1–600"),
        (
            json!({"kind": "live", "move_s": 30, "bank_s": 4000}),
            "0–3600",
        ),
        (json!({"kind": "correspondence", "move_s": 5}), "60 s"),
    ] {
        let (s, v) = ada
            .post(
                "/api/tables",
                json!({"game": "trump", "seats": 2, "pace": pace}),
            )
            .await;
        assert_eq!(s, 400, "{v}");
        assert_eq!(v["code"], "bad_pace", "{v}");
        assert!(v["message"].as_str().unwrap().contains(bound), "{v}");
    }
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "pace": {"kind": "fast"}}),
        )
        .await;
    assert_eq!(s, 400, "an unknown pace is refused: {v}");
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "pace": {"kind": "correspondence", "move_s": 86400}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["table"]["pace"]["kind"], "correspondence");
    assert_eq!(v["table"]["clocks"].as_array().unwrap().len(), 2);
    server.stop().await;
}

/// A live clock shows the time left; when it runs out a bot moves for the player, who is
/// then shown away with a stand-in until they say they are back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_that_runs_out_lets_a_bot_move_then_the_seat_comes_back() {
    for db in databases().await {
        // The stand-in waits 1.5 s before its move: time for the late player to try.
        let server = Server::start_with_bot_delay(&db, 1500).await;
        let (_, _, _, mut a, mut b) = ada_and_bob_started(
            &server,
            json!({"kind": "live", "move_s": 1, "bank_s": 1}),
            Value::Null,
        )
        .await;
        let st = a.state.clone().unwrap();
        let late = on_turn(&st);
        let clock = &st["table"]["clocks"][late];
        assert_eq!(clock["bank_ms"], 1000, "{clock}");
        let left = clock["left_ms"]
            .as_u64()
            .expect("the clock of the seat on turn runs");
        assert!(left <= 2000, "{clock}");
        assert!(st["table"]["clocks"][1 - late]["left_ms"].is_null());
        // Nobody moves: after 2 s the stand-in plays the late seat's card.
        let (late_sock, other) = if late == 0 {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        let timed_out = other.until(|s| !seat(s, late)["stand_in"].is_null()).await;
        assert_eq!(seat(&timed_out, late)["presence"], "away", "{timed_out}");
        assert_eq!(timed_out["table"]["clocks"][late]["bank_ms"], 0);
        // Coming back now does not buy a fresh clock for this move: it is the bot's.
        late_sock
            .send(json!({"type": "presence", "away": false}))
            .await;
        let st = late_sock
            .until(|s| {
                seat(s, late)["stand_in"].is_null() && s["table"]["clocks"][late]["bank_ms"] == 0
            })
            .await;
        assert!(st["table"]["clocks"][late]["left_ms"].is_null(), "{st}");
        late_sock
            .act(st["version"].as_u64().unwrap(), &st["legal"][0])
            .await;
        let err = late_sock.next_error().await;
        assert_eq!(err["code"], "move_timed_out", "{err}");
        let moved = other.until(|s| on_turn(s) != late).await;
        assert_eq!(
            moved["table"]["to_act"][0],
            1 - late,
            "the bot made the late seat's move: {moved}"
        );
        // Back in view: the seat is the player's again, and everyone sees it.
        let back = other.until(|s| seat(s, late)["stand_in"].is_null()).await;
        assert_eq!(seat(&back, late)["presence"], "connected", "{back}");
        // A hidden page shows as away, without a stand-in.
        late_sock
            .send(json!({"type": "presence", "away": true}))
            .await;
        let hidden = other.until(|s| seat(s, late)["presence"] == "away").await;
        assert!(seat(&hidden, late)["stand_in"].is_null(), "{hidden}");
        assert!(
            metrics(&server)
                .await
                .contains("fib_table_events_total{event=\"timeouts\"}")
        );
        server.stop().await;
    }
}

/// A player is away only while every page of theirs is hidden (a black-box walk found a
/// hidden second tab making a player who watched their table "away", and then counted as
/// abandoning when their clock ran out): a hidden tab beside one in view changes nothing;
/// closing the one in view leaves them away; the hidden one back in view, there again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_is_away_only_when_every_page_of_theirs_is_hidden() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, _, table, mut a, mut b) =
        ada_and_bob_started(&server, json!({"kind": "untimed"}), Value::Null).await;
    let mut hidden_tab = ada.connect(&table).await;
    hidden_tab.next_state().await;
    hidden_tab
        .send(json!({"type": "presence", "away": true}))
        .await;
    // A ping on the same socket after it: its answer comes once the presence is taken in.
    hidden_tab.send(json!({"type": "ping"})).await;
    while hidden_tab.next().await["type"] != "pong" {}
    let (s, info) = ada.get(&format!("/api/tables/{table}")).await;
    assert_eq!(s, 200, "{info}");
    assert_eq!(info["seats"][0]["presence"], "connected", "{info}");
    // The page in view closes: only the hidden one is left.
    a.ws.close(None).await.unwrap();
    drop(a);
    let away = b.until(|s| seat(s, 0)["presence"] == "away").await;
    assert!(seat(&away, 0)["stand_in"].is_null(), "{away}");
    hidden_tab
        .send(json!({"type": "presence", "away": false}))
        .await;
    b.until(|s| seat(s, 0)["presence"] == "connected").await;
    server.stop().await;
}

/// Issue #33, item 1: a stand-in makes only the move whose clock ran out. In Fibonacci 21
/// a turn is two moves (draw, then discard) for the same seat: the stand-in draws for the
/// late player, who is back (their late draw was refused), and the discard is theirs, on a
/// clock of its own. It used to stay the stand-in's as long as the game waited for that
/// seat: the player's discard was refused `move_timed_out` and the bot discarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stand_in_makes_only_the_timed_out_move_and_the_player_the_next() {
    fn find(st: &Value, kind: &str) -> Option<Value> {
        st["legal"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["type"] == kind)
            .cloned()
    }
    for db in databases().await {
        // The stand-in waits 1.5 s before its move: time for the late player to try.
        let server = Server::start_with_bot_delay(&db, 1500).await;
        let (_, _, _, mut a, mut b) = ada_and_bob_playing(
            &server,
            "rummy",
            json!({"kind": "live", "move_s": 2, "bank_s": 0}),
            json!({"target": 21}),
        )
        .await;
        let late = on_turn(a.state.as_ref().unwrap());
        let late_sock = if late == 0 { &mut a } else { &mut b };
        // Nobody draws: after 2 s a stand-in takes the seat for this move.
        let st = late_sock
            .until(|s| !seat(s, late)["stand_in"].is_null())
            .await;
        let draw = find(&st, "draw_stock").expect("a draw is due");
        late_sock.act(st["version"].as_u64().unwrap(), &draw).await;
        let err = late_sock.next_error().await;
        assert_eq!(err["code"], "move_timed_out", "{err}");
        // The stand-in draws; the game waits for the same seat again, for its discard.
        let drawn = late_sock
            .until(|s| on_turn(s) == late && find(s, "discard").is_some())
            .await;
        assert!(seat(&drawn, late)["stand_in"].is_null(), "{drawn}");
        assert_eq!(seat(&drawn, late)["presence"], "connected", "{drawn}");
        assert!(
            drawn["table"]["clocks"][late]["left_ms"].is_u64(),
            "the player's own clock runs for the discard: {drawn}"
        );
        let discard = find(&drawn, "discard").unwrap();
        late_sock
            .act(drawn["version"].as_u64().unwrap(), &discard)
            .await;
        let after = late_sock.next().await;
        assert_eq!(
            after["type"], "state",
            "the discard is the player's: {after}"
        );
        assert!(
            after["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["type"] == "discarded" && e["seat"] == late as u64),
            "{after}"
        );
        assert_ne!(on_turn(&after), late, "{after}");
        server.stop().await;
    }
}

/// Issue #33, item 2: a clock's `left_ms` is "as of the message", in a full state sent
/// alone (the answer to `sync`, `GET /api/tables/{id}/state`) too. Those used to carry the
/// table part of the latest broadcast, seconds old. A socket that still holds that older
/// part gets patches that bring it to the same table as everyone's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_sent_on_sync_or_over_http_has_the_clocks_as_of_then() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let (ada, _, table, mut a, mut b) = ada_and_bob_started(
        &server,
        json!({"kind": "live", "move_s": 30, "bank_s": 0}),
        Value::Null,
    )
    .await;
    // A second socket of Ada's: the last change, after which nothing changes for a while.
    let mut a2 = ada.connect(&table).await;
    let first = a2.next_state().await;
    let late = on_turn(&first);
    let left = |st: &Value| {
        st["table"]["clocks"][late]["left_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("the clock of the seat on turn runs: {st}"))
    };
    let at_first = left(&first);
    a.until(|s| s["version"] == first["version"]).await;
    b.until(|s| s["version"] == first["version"]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;

    a.send(json!({"type": "sync"})).await;
    let synced = a.next_state().await;
    assert_eq!(
        synced["version"], first["version"],
        "nothing changed: {synced}"
    );
    assert!(
        left(&synced) + 1000 <= at_first,
        "the answer to sync counts the clock down: {at_first} ms, then {} ms 1.5 s later",
        left(&synced)
    );
    let (s, over_http) = ada.get(&format!("/api/tables/{table}/state")).await;
    assert_eq!(s, 200, "{over_http}");
    assert_eq!(over_http["version"], first["version"]);
    assert!(
        left(&over_http) + 1000 <= at_first,
        "so does the state over HTTP: {at_first} ms, then {} ms",
        left(&over_http)
    );

    // The seat on turn moves: each socket's document, whichever table part it held (the
    // one answered to sync, or the broadcast's before it), is patched to the same table.
    let mover = if late == 0 { &mut a } else { &mut b };
    let st = mover.state.clone().unwrap();
    mover
        .act(st["version"].as_u64().unwrap(), &st["legal"][0])
        .await;
    let mut tables = Vec::new();
    for sock in [&mut a, &mut a2, &mut b] {
        let after = sock.until(|s| on_turn(s) != late).await;
        assert!(
            after["table"]["clocks"][late]["left_ms"].is_null(),
            "{after}"
        );
        tables.push(after["table"].clone());
    }
    assert_eq!(
        tables[0], tables[1],
        "Ada's two sockets hold the same table"
    );
    assert_eq!(tables[0], tables[2], "and so does Bob's");
    server.stop().await;
}

/// A player who disconnects is shown disconnected; after the grace period a bot plays for
/// them, and the seat is theirs again the moment they reconnect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_player_gets_a_stand_in_until_they_reconnect() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| c.disconnect_grace_s = 1).await;
        let (_, bob, table, mut a, b) =
            ada_and_bob_started(&server, json!({"kind": "untimed"}), Value::Null).await;
        drop(b);
        let gone = a.until(|s| seat(s, 1)["presence"] == "disconnected").await;
        assert!(seat(&gone, 1)["stand_in"].is_null(), "grace first: {gone}");
        let stood_in = a.until(|s| !seat(s, 1)["stand_in"].is_null()).await;
        assert_eq!(seat(&stood_in, 1)["stand_in"], "normal", "{stood_in}");
        // Ada plays two cards: in a trick game of two, Bob's stand-in played in between.
        let cards = |s: &Value| s["view"]["hand"].as_array().map_or(0, Vec::len);
        let before = cards(&stood_in);
        let (st, _) = play_until(&mut a, first, |s| cards(s) + 2 <= before && my_turn(s)).await;
        // Bob's hand: the round's hand size less the cards he played.
        let bobs = st["view"]["hand_size"].as_u64().unwrap()
            - trump_plays(&st["view"])
                .iter()
                .filter(|(seat, _)| *seat == 1)
                .count() as u64;
        assert!(bobs < before as u64, "{st}");
        let mut bob_sock = bob.connect(&table).await;
        bob_sock.next_state().await;
        let back = a.until(|s| seat(s, 1)["stand_in"].is_null()).await;
        assert_eq!(seat(&back, 1)["presence"], "connected", "{back}");
        server.stop().await;
    }
}

/// A match that ends while a bot stands in for a player who never came back records the
/// seat as abandoned, and rates it as a loss whatever the bot scored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staying_away_to_the_end_is_an_abandoned_match_rated_as_a_loss() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| c.disconnect_grace_s = 0).await;
        let (ada, bob, table, mut a, b) =
            ada_and_bob_started(&server, json!({"kind": "untimed"}), json!({"target": 5})).await;
        drop(b);
        a.until(|s| !seat(s, 1)["stand_in"].is_null()).await;
        let (end, _) = play_until(&mut a, first, |s| status(s) == "finished").await;
        assert_eq!(seat(&end, 1)["abandoned"], true, "{end}");
        assert_eq!(seat(&end, 0)["abandoned"], false, "{end}");
        // A duel (Glicko-2, everyone starts at 1500): Bob lost it.
        for (p, above) in [(&ada, true), (&bob, false)] {
            let (_, r) = ada.get(&format!("/api/players/{}/ratings", p.id)).await;
            let rating = r[0]["rating"].as_f64().unwrap();
            assert_eq!(rating > 1500.0, above, "{r}");
            if !above {
                assert_eq!(r[0]["wins"], 0, "an abandoned match is never a win: {r}");
            }
        }
        // Stored: the same after the table is read back.
        let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(info["seats"][1]["abandoned"], true, "{info}");
        // Whatever Bob's stand-in scored, Ada is the winner everywhere: the table, her
        // wins, both match lists (a black-box walk found them naming Bob).
        assert_eq!(info["winners"], json!([0]), "{info}");
        let (_, r) = ada.get(&format!("/api/players/{}/ratings", ada.id)).await;
        assert_eq!(r[0]["wins"], 1, "{r}");
        for (p, won) in [(&ada, true), (&bob, false)] {
            let (_, rows) = p.get("/api/me/matches").await;
            let row = rows
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["table_id"] == table.as_str() || m["id"] == table.as_str())
                .unwrap_or_else(|| panic!("{rows}"));
            assert_eq!(row["won"], won, "{row}");
        }
        server.stop().await;
    }
}

/// A game nobody comes back to counts as deserted from its last stored change, not from a
/// restart: a walk found each restart gave a deserted game of one its whole day again (and
/// kept it in memory). With 20 s to abandonment and 2 s of grace, a game deserted 8 s
/// before a restart ends about 12 s after it (without the change: 20 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_does_not_restart_desertion() {
    let db = sqlite_db();
    let tweak = |c: &mut server::Config| {
        c.disconnect_grace_s = 2;
        c.solo_abandon_after_s = 20;
    };
    let server = Server::start_with(&db, tweak).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "rummy", "seats": 1, "options": {"target": 8}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    tokio::time::sleep(Duration::from_secs(8)).await;
    server.stop().await;
    let server = Server::start_with(&db, tweak).await;
    let back = tokio::time::Instant::now();
    let looker = Player::guest(&server.base, &server.ws, "Looker").await;
    loop {
        let (_, info) = looker.get(&format!("/api/tables/{table}")).await;
        if info["status"] == "abandoned" {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(17),
            "still {} {:?} after the restart: {info}",
            info["status"],
            back.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    server.stop().await;
}

/// When every person has left a live match it ends as abandoned; an open table nobody
/// joins expires. Neither stays in the lobby.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deserted_matches_and_unjoined_tables_end() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| {
            c.disconnect_grace_s = 0;
            c.abandon_after_s = 1;
        })
        .await;
        // Expiry on a server of its own: the first table must not expire while it fills.
        let db2 = if db.label == "sqlite" {
            sqlite_db()
        } else {
            postgres_db().await.expect("postgres is configured")
        };
        let expiring = Server::start_with(&db2, |c| c.open_table_ttl_s = 1).await;
        let (ada, _, table, a, b) =
            ada_and_bob_started(&server, json!({"kind": "untimed"}), Value::Null).await;
        let ada2 = Player::guest(&expiring.base, &expiring.ws, "Ada").await;
        let open = ada2.create_trump(2, false).await;
        drop(a);
        drop(b);
        let ended = |id: String, ada: Player| async move {
            for _ in 0..100 {
                let (_, info) = ada.get(&format!("/api/tables/{id}")).await;
                if info["status"] == "abandoned" {
                    return info;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("table {id} never ended");
        };
        let info = ended(table.clone(), ada.clone()).await;
        assert_eq!(info["seats"][0]["abandoned"], true, "{info}");
        assert_eq!(info["seats"][1]["abandoned"], true, "{info}");
        // Over: nobody is waited for, nobody stands in (the game itself still waited).
        assert_eq!(info["to_act"], json!([]), "{info}");
        assert!(info["seats"][0]["stand_in"].is_null(), "{info}");
        assert!(info["seats"][1]["stand_in"].is_null(), "{info}");
        ended(open.clone(), ada2.clone()).await;
        for (p, id) in [(&ada, &table), (&ada2, &open)] {
            let (_, lobby) = p.get("/api/tables").await;
            assert!(
                lobby
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|t| t["id"] != id.as_str()),
                "{lobby}"
            );
        }
        let m = metrics(&server).await;
        assert!(
            m.contains("fib_table_events_total{event=\"deserted\"} 1"),
            "{m}"
        );
        let m = metrics(&expiring).await;
        assert!(
            m.contains("fib_table_events_total{event=\"expired\"} 1"),
            "{m}"
        );
        server.stop().await;
        expiring.stop().await;
    }
}

/// A table task that panics is restarted from its stored log: its players get the full
/// state (nothing acknowledged lost) and play on over the same sockets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_that_panics_is_restored_from_its_log_and_play_goes_on() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (ada, _, table, mut a, mut b) =
            ada_and_bob_started(&server, json!({"kind": "untimed"}), Value::Null).await;
        // One move, acknowledged.
        let st = a.state.clone().unwrap();
        let sock = if my_turn(&st) { &mut a } else { &mut b };
        let st = sock.state.clone().unwrap();
        sock.act(st["version"].as_u64().unwrap(), &st["legal"][0])
            .await;
        // The state that shows the move: a presence change (the other socket's connect)
        // may arrive first with a higher version but the same view.
        let after = loop {
            let next = sock.next_state_after_act().await;
            if next["view"] != st["view"] {
                break next;
            }
        };
        let moved = after["version"].as_u64().unwrap();
        a.until(|s| s["version"].as_u64().unwrap() >= moved).await;
        b.until(|s| s["version"].as_u64().unwrap() >= moved).await;
        let r = ada
            .http
            .post(format!("{}/api/tables/{table}/test/panic", server.base))
            .bearer_auth(&ada.token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
        // Everyone is resynced with a full state of what is stored: each player's view is
        // the one they held, the move included.
        let mut resynced = Value::Null;
        for sock in [&mut a, &mut b] {
            let held = sock.state.clone().unwrap();
            let fresh = loop {
                let m = sock.next().await;
                if m["type"] == "state" && m["version"].as_u64() > after["version"].as_u64() {
                    break m;
                }
            };
            assert_eq!(
                fresh["view"], held["view"],
                "the stored state is the one held"
            );
            assert_eq!(fresh["table"]["to_act"], held["table"]["to_act"]);
            resynced = fresh;
        }
        // Play goes on over the same sockets.
        let sock = if my_turn(&resynced) { &mut b } else { &mut a };
        let st = sock.until(my_turn).await;
        sock.act(st["version"].as_u64().unwrap(), &st["legal"][0])
            .await;
        let next = sock.next_state_after_act().await;
        assert!(next["version"].as_u64() > st["version"].as_u64());
        let text = metrics(&server).await;
        assert!(text.contains("fib_table_panics_total 1"), "{text}");
        // A panic is not a failed write: an operator reading the reloads counter looks
        // for database trouble.
        assert!(text.contains("fib_table_reloads_total 0"), "{text}");
        server.stop().await;
    }
}

/// Makes every insert into `actions` fail (`on`), or stop failing. On SQLite every stored
/// action is appended to `action_journal` first (migration 0014: `actions` is a view).
async fn break_actions(db: &Db, on: bool) {
    if db.label == "sqlite" {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        let sql = if on {
            "CREATE TRIGGER fail_actions BEFORE INSERT ON action_journal \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
        } else {
            "DROP TRIGGER fail_actions"
        };
        sqlx::query(sql).execute(&pool).await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let sqls: &[&str] = if on {
            &[
                "CREATE OR REPLACE FUNCTION fail_insert() RETURNS trigger AS $$ \
                 BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql",
                "CREATE TRIGGER fail_actions BEFORE INSERT ON actions \
                 FOR EACH ROW EXECUTE FUNCTION fail_insert()",
            ]
        } else {
            &["DROP TRIGGER fail_actions ON actions"]
        };
        for sql in sqls {
            sqlx::query(sqlx::AssertSqlSafe(*sql))
                .execute(&pool)
                .await
                .unwrap();
        }
        pool.close().await;
    }
}

async fn health(server: &Server) -> Value {
    health_at(&server.base).await
}

/// A move whose write fails parks the table: the player is told, the table says it is
/// parked, /healthz and /metrics report it, and once the database takes writes again the
/// move is stored and played without being sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_whose_writes_fail_parks_then_stores_the_move() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (_, _, _, mut a, mut b) =
            ada_and_bob_started(&server, json!({"kind": "untimed"}), Value::Null).await;
        let st = a.state.clone().unwrap();
        let (sock, other) = if my_turn(&st) {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        let st = sock.state.clone().unwrap();
        let mover = on_turn(&st);
        break_actions(&db, true).await;
        sock.act(st["version"].as_u64().unwrap(), &st["legal"][0])
            .await;
        let err = sock.next_error().await;
        assert_eq!(err["code"], "table_parked", "{err}");
        let parked = other.until(|s| s["table"]["parked"] == true).await;
        assert_eq!(on_turn(&parked), mover, "nothing moved yet");
        let h = health(&server).await;
        assert_eq!(h["status"], "degraded", "{h}");
        assert_eq!(h["parked_tables"], 1, "{h}");
        assert!(metrics(&server).await.contains("fib_tables_parked 1"));
        // Moves are refused while parked.
        let again = sock.state.clone().unwrap();
        sock.act(again["version"].as_u64().unwrap(), &again["legal"][0])
            .await;
        assert_eq!(sock.next_error().await["code"], "table_parked");

        break_actions(&db, false).await;
        let played = other
            .until(|s| s["table"]["parked"] == false && on_turn(s) != mover)
            .await;
        assert_eq!(
            on_turn(&played),
            1 - mover,
            "the owed move was stored: {played}"
        );
        assert_eq!(health(&server).await["status"], "ok");
        assert!(metrics(&server).await.contains("fib_tables_parked 0"));
        server.stop().await;
    }
}

/// A time bank spent before a restart is still spent after it, and the clock of the seat
/// on turn runs again when the table comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clocks_survive_a_restart() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (ada, _, table, mut a, mut b) = ada_and_bob_started(
            &server,
            json!({"kind": "live", "move_s": 1, "bank_s": 60}),
            Value::Null,
        )
        .await;
        let st = a.state.clone().unwrap();
        let mover = on_turn(&st);
        let sock = if my_turn(&st) { &mut a } else { &mut b };
        let st = sock.state.clone().unwrap();
        // Two seconds on a one-second move: about a second comes out of the bank.
        tokio::time::sleep(Duration::from_millis(2200)).await;
        sock.act(st["version"].as_u64().unwrap(), &st["legal"][0])
            .await;
        let after = sock.next_state_after_act().await;
        let bank = after["table"]["clocks"][mover]["bank_ms"].as_u64().unwrap();
        assert!((57_000..=59_000).contains(&bank), "{after}");
        drop(a);
        drop(b);
        server.stop().await;

        let server = Server::start(&db).await;
        let ada = ada.at(&server.base, &server.ws);
        let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(
            info["clocks"][mover]["bank_ms"].as_u64(),
            Some(bank),
            "{info}"
        );
        let other = 1 - mover;
        let left = info["clocks"][other]["left_ms"]
            .as_u64()
            .expect("running again");
        assert!(left > 30_000 && left <= 61_000, "{info}");
        server.stop().await;
    }
}

/// A time-out is stored when it happens (a walk restarted a server after a clock ran out
/// with nobody connected, before the stand-in could move: the spent bank came back and the
/// move was the player's again, on a fresh clock). After the restart the bank is still
/// spent, the move is still the stand-in's, and it makes it once someone is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_out_is_kept_across_a_restart() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (ada, bob, table, a, b) = ada_and_bob_started(
            &server,
            json!({"kind": "live", "move_s": 1, "bank_s": 2}),
            Value::Null,
        )
        .await;
        let st = a.state.clone().unwrap();
        let late = on_turn(&st);
        let version = st["version"].as_u64().unwrap();
        drop(a);
        drop(b);
        // Nobody is connected: the clock runs out after 3 s, and the stand-in waits.
        let info = loop {
            let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
            if !info["seats"][late]["stand_in"].is_null() {
                break info;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(info["clocks"][late]["bank_ms"], 0, "{info}");
        assert_eq!(
            info["to_act"][0], late,
            "nobody there, nobody moved: {info}"
        );
        server.stop().await;

        let server = Server::start(&db).await;
        let (_, info) = ada
            .at(&server.base, &server.ws)
            .get(&format!("/api/tables/{table}"))
            .await;
        assert_eq!(info["clocks"][late]["bank_ms"], 0, "still spent: {info}");
        assert!(
            info["clocks"][late]["left_ms"].is_null(),
            "no fresh clock: {info}"
        );
        assert_eq!(info["seats"][late]["stand_in"], "normal", "{info}");
        // The other player comes back: the stand-in makes the move it owes.
        let other = if late == 0 { &bob } else { &ada };
        let mut sock = other.at(&server.base, &server.ws).connect(&table).await;
        let moved = sock.until(|s| on_turn(s) != late).await;
        assert!(moved["version"].as_u64().unwrap() > version);
        assert_eq!(moved["table"]["to_act"][0], 1 - late, "{moved}");
        drop(sock);
        server.stop().await;
    }
}

/// A player whose stand-in played on after their clock ran out (they stayed, page in view,
/// and did nothing) is shown as they are once the match is over: connected, no stand-in.
/// A walk saw such a finished match show them `away`, with no stand-in to say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_match_shows_no_stand_in_presence() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "bots": "easy", "options": {"target": 1},
                   "pace": {"kind": "live", "move_s": 1, "bank_s": 0}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let mut a = ada.connect(&table).await;
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let standing_in = a.until(|s| !seat(s, 0)["stand_in"].is_null()).await;
    assert_eq!(seat(&standing_in, 0)["presence"], "away", "{standing_in}");
    let over = a.until(|s| status(s) == "finished").await;
    assert!(seat(&over, 0)["stand_in"].is_null(), "{over}");
    assert_eq!(seat(&over, 0)["presence"], "connected", "{over}");
    assert_eq!(
        seat(&over, 0)["abandoned"],
        false,
        "a slow player, not a leaver: {over}"
    );
    server.stop().await;
}
