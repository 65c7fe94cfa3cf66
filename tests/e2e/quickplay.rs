//! Quick play end to end over the lobby socket, on every database: queue → matched table →
//! played to the end → ratings → leaderboard; bot fill after the configured wait and
//! "play bots now"; leaving and disconnecting take a player out (the lobby's counts say
//! so); a player is never in two queues or seated twice, however requests race.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::ratings::play_out;
use crate::support::*;

fn join(game: &str, seats: u64) -> Value {
    json!({"type": "queue_join", "game": game, "seats": seats})
}

/// The `waiting` count of one queue in a `queues` message.
fn waiting(queues: &Value, game: &str, seats: u64) -> u64 {
    queues["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["game"] == game && q["seats"] == seats)
        .unwrap_or_else(|| panic!("no queue {game}/{seats} in {queues}"))["waiting"]
        .as_u64()
        .unwrap()
}

/// Reads `queues` messages until `f` holds for one.
async fn queues_until(sock: &mut Sock, f: impl Fn(&Value) -> bool) -> Value {
    loop {
        let v = lobby_until(sock, "queues").await;
        if f(&v) {
            return v;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_to_table_to_rating_to_leaderboard() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let mut watcher = Sock::open(&format!("{}/ws/lobby", server.ws), None, None).await;
        queues_until(&mut watcher, |q| waiting(q, "fibfib", 2) == 0).await;
        // Three matches: a leaderboard lists players with three rated matches.
        for round in 0..3 {
            let mut a = lobby(&ada).await;
            let mut b = lobby(&bob).await;
            a.send(join("fibfib", 2)).await;
            let queued = lobby_until(&mut a, "queued").await;
            assert_eq!(queued["game"], "fibfib");
            assert_eq!(queued["seats"], 2);
            assert_eq!(queued["bot_fill_ms"], 30_000);
            if round == 0 {
                // Anyone watching the lobby sees one waiting.
                queues_until(&mut watcher, |q| waiting(q, "fibfib", 2) == 1).await;
            }
            b.send(join("fibfib", 2)).await;
            let ma = lobby_until(&mut a, "matched").await;
            let mb = lobby_until(&mut b, "matched").await;
            assert_eq!(ma["table"], mb["table"], "{ma} {mb}");
            let mut seats = [ma["seat"].as_u64().unwrap(), mb["seat"].as_u64().unwrap()];
            seats.sort_unstable();
            assert_eq!(seats, [0, 1]);
            let table = ma["table"].as_str().unwrap().to_string();
            let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
            assert_eq!(info["status"], "playing", "{info}");
            assert_eq!(info["game"], "fibfib");
            let people: Vec<&str> = info["seats"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["kind"] == "player")
                .map(|s| s["id"].as_str().unwrap())
                .collect();
            assert_eq!(people.len(), 2, "two people, no bots: {info}");
            let end = play_out(&[&ada, &bob], &table).await;
            assert_eq!(status(&end), "finished");
        }
        queues_until(&mut watcher, |q| waiting(q, "fibfib", 2) == 0).await;
        let (_, ratings) = ada.get(&format!("/api/players/{}/ratings", ada.id)).await;
        let duel = ratings
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["game"] == "fibfib" && r["pool"] == "duel")
            .unwrap_or_else(|| panic!("{ratings}"));
        assert_eq!(duel["matches"], 3, "{duel}");
        let (_, board) = ada.get("/api/leaderboard/fibfib?pool=duel").await;
        let ids: Vec<&str> = board["rows"]
            .as_array()
            .unwrap_or_else(|| panic!("{board}"))
            .iter()
            .map(|e| e["player"]["id"].as_str().unwrap())
            .collect();
        assert!(
            ids.contains(&ada.id.as_str()) && ids.contains(&bob.id.as_str()),
            "{board}"
        );
        // The profile lists the finished matches, newest first.
        let (_, matches) = bob.get(&format!("/api/players/{}/matches", ada.id)).await;
        assert_eq!(matches.as_array().unwrap().len(), 3, "{matches}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_fill_after_the_wait_or_at_once() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| c.bot_fill_s = 1).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let mut a = lobby(&ada).await;
        let started = std::time::Instant::now();
        a.send(join("trump", 3)).await;
        assert_eq!(lobby_until(&mut a, "queued").await["bot_fill_ms"], 1000);
        let m = lobby_until(&mut a, "matched").await;
        assert!(started.elapsed() >= std::time::Duration::from_millis(900));
        let table = m["table"].as_str().unwrap();
        let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
        let kinds: Vec<&str> = info["seats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["player", "bot", "bot"], "{info}");
        assert_eq!(info["status"], "playing");

        // "Play bots now": no wait at all; the same socket can queue again once seated.
        let started = std::time::Instant::now();
        a.send(json!({"type": "queue_join", "game": "nachos", "bots_now": true}))
            .await;
        let m = lobby_until(&mut a, "matched").await;
        assert!(started.elapsed() < std::time::Duration::from_millis(900));
        let (_, info) = ada
            .get(&format!("/api/tables/{}", m["table"].as_str().unwrap()))
            .await;
        assert_eq!(info["game"], "nachos");
        assert_eq!(info["status"], "playing", "{info}");

        // Solitaire (rummy with one seat) starts at once, alone.
        a.send(json!({"type": "queue_join", "game": "rummy", "seats": 1}))
            .await;
        let m = lobby_until(&mut a, "matched").await;
        let (_, info) = ada
            .get(&format!("/api/tables/{}", m["table"].as_str().unwrap()))
            .await;
        assert_eq!(info["seats"].as_array().unwrap().len(), 1, "{info}");
        assert_eq!(info["status"], "playing", "{info}");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_and_disconnecting_take_a_player_out() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let mut watcher = lobby(&bob).await;
        let mut a = lobby(&ada).await;

        a.send(join("trump", 2)).await;
        lobby_until(&mut a, "queued").await;
        queues_until(&mut watcher, |q| waiting(q, "trump", 2) == 1).await;
        a.send(json!({"type": "queue_leave"})).await;
        lobby_until(&mut a, "queue_left").await;
        queues_until(&mut watcher, |q| waiting(q, "trump", 2) == 0).await;
        a.send(json!({"type": "queue_leave"})).await;
        assert_eq!(lobby_until(&mut a, "error").await["code"], "not_queued");

        // Closing the socket takes the player out: Bob, joining now, is not matched with
        // a ghost.
        a.send(join("trump", 2)).await;
        lobby_until(&mut a, "queued").await;
        queues_until(&mut watcher, |q| waiting(q, "trump", 2) == 1).await;
        drop(a);
        queues_until(&mut watcher, |q| waiting(q, "trump", 2) == 0).await;
        watcher.send(join("trump", 2)).await;
        lobby_until(&mut watcher, "queued").await;
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        let (_, mine) = bob.get("/api/me/matches").await;
        assert_eq!(mine.as_array().unwrap().len(), 0, "{mine}");

        // Refusals: not signed in, unknown game, a count the game does not allow.
        let mut anon = Sock::open(&format!("{}/ws/lobby", server.ws), None, None).await;
        anon.send(join("trump", 2)).await;
        assert_eq!(
            lobby_until(&mut anon, "error").await["code"],
            "not_signed_in"
        );
        let mut c = lobby(&ada).await;
        c.send(join("chess", 2)).await;
        assert_eq!(lobby_until(&mut c, "error").await["code"], "unknown_game");
        c.send(join("trump", 9)).await;
        assert_eq!(
            lobby_until(&mut c, "error").await["code"],
            "bad_player_count"
        );
        c.send(json!({"type": "queue_join"})).await;
        assert_eq!(lobby_until(&mut c, "error").await["code"], "malformed");
        server.stop().await;
    }
}

/// One player racing five sockets into the queues: one place. Twelve players racing into
/// two-seat queues (with bots filling whoever is left after a second): everybody is seated
/// exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_joins_never_seat_a_player_twice() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| c.bot_fill_s = 1).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let mut socks = Vec::new();
        for _ in 0..5 {
            let mut s = lobby(&ada).await;
            lobby_until(&mut s, "tables").await;
            socks.push(s);
        }
        let answers = futures_util::future::join_all(socks.iter_mut().map(|s| async move {
            s.send(join("trump", 2)).await;
            loop {
                let v = s.next_any().await;
                if matches!(v["type"].as_str(), Some("queued" | "error")) {
                    return v;
                }
            }
        }))
        .await;
        let queued = answers.iter().filter(|v| v["type"] == "queued").count();
        assert_eq!(queued, 1, "{answers:?}");
        assert!(
            answers
                .iter()
                .filter(|v| v["type"] == "error")
                .all(|v| v["code"] == "already_queued"),
            "{answers:?}"
        );
        drop(socks);

        let mut people = Vec::new();
        for i in 0..12 {
            people.push(Player::guest(&server.base, &server.ws, &format!("P{i}")).await);
        }
        let mut socks = Vec::new();
        for p in &people {
            let mut s = lobby(p).await;
            lobby_until(&mut s, "tables").await;
            socks.push(s);
        }
        let matched = futures_util::future::join_all(socks.iter_mut().map(|s| async move {
            s.send(join("trump", 2)).await;
            lobby_until(s, "matched").await
        }))
        .await;
        let mut per_table: HashMap<String, usize> = HashMap::new();
        for m in &matched {
            *per_table
                .entry(m["table"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        assert!(per_table.values().all(|n| *n <= 2), "{per_table:?}");
        for p in &people {
            let (_, mine) = p.get("/api/me/matches").await;
            assert_eq!(mine.as_array().unwrap().len(), 1, "seated once: {mine}");
        }
        server.stop().await;
    }
}

/// Leaving and joining again at once, without waiting for the answer to the leave (as a
/// script or bot does): each time the player is in the queue afterwards. A walk found 2 in
/// 30 such tries told `queued` while in no queue, the earlier entry's delete having taken
/// the new one. Eight players at once, so that the background deletes meet the joins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_and_joining_at_once_leaves_the_player_queued() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    // Each alone in a queue of its own: nobody is matched.
    let mut watcher = Sock::open(&format!("{}/ws/lobby", server.ws), None, None).await;
    let queues = lobby_until(&mut watcher, "queues").await;
    let pools: Vec<(String, u64)> = queues["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["game"].as_str().unwrap().to_string(),
                q["seats"].as_u64().unwrap(),
            )
        })
        .take(8)
        .collect();
    assert_eq!(pools.len(), 8, "{queues}");
    let mut people = Vec::new();
    for (i, pool) in pools.into_iter().enumerate() {
        people.push((
            Player::guest(&server.base, &server.ws, &format!("P{i}")).await,
            pool,
        ));
    }
    let lost = futures_util::future::join_all(people.iter().map(|(p, (game, seats))| async move {
        let join = || join(game, *seats);
        let mut a = lobby(p).await;
        a.send(join()).await;
        lobby_until(&mut a, "queued").await;
        for _ in 0..40 {
            a.send(json!({"type": "queue_leave"})).await;
            a.send(join()).await;
            lobby_until(&mut a, "queue_left").await;
            lobby_until(&mut a, "queued").await;
            // A second socket of the player's finds them queued, unless the entry is gone.
            let mut other = lobby(p).await;
            other.send(join()).await;
            let v = loop {
                let v = other.next_any().await;
                if matches!(v["type"].as_str(), Some("queued" | "error")) {
                    break v;
                }
            };
            if v["code"] != "already_queued" {
                return Some(v);
            }
        }
        None
    }))
    .await;
    let lost: Vec<_> = lost.into_iter().flatten().collect();
    assert!(
        lost.is_empty(),
        "a player told `queued` was in no queue: {lost:?}"
    );
    server.stop().await;
}

/// A player whose live match starts (a challenge accepted) leaves the quick-play queue they
/// wait in, and is told why; while it is played they cannot join one (a walk found a
/// player matched into a second live match while playing the first). Bots now and
/// Solitaire stay open to them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_match_takes_a_player_out_of_quick_play() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let mut a = lobby(&ada).await;
        a.send(join("fibfib", 2)).await;
        lobby_until(&mut a, "queued").await;
        let mut c = lobby(&ada).await;
        c.send(
            json!({"type": "challenge", "to": "house:normal", "game": "trump",
                      "pace": {"kind": "live", "move_s": 30, "bank_s": 60}}),
        )
        .await;
        let started = lobby_until(&mut c, "challenge_started").await;
        let table = started["table"].as_str().unwrap().to_string();
        let told = lobby_until(&mut a, "error").await;
        assert_eq!(told["code"], "in_live_match", "{told}");
        assert!(told["message"].as_str().unwrap().contains(&table), "{told}");
        lobby_until(&mut a, "queue_left").await;
        a.send(join("fibfib", 2)).await;
        let refused = lobby_until(&mut a, "error").await;
        assert_eq!(refused["code"], "in_live_match", "{refused}");
        // Against bots, now: nobody waits for them.
        a.send(json!({"type": "queue_join", "game": "fibfib", "seats": 2, "bots_now": true}))
            .await;
        lobby_until(&mut a, "matched").await;
        server.stop().await;
    }
}
