//! Bots through the server: normal and hard bots, chosen per seat, play whole matches of
//! Fibonachos, Fib-Fibonacci and Trump from the server's worker pool while one real client
//! plays its own seat. A bot move the rules refuse is retried with the same view and would
//! stall the match, so finishing shows every bot move was legal; the metrics show that the
//! only refusals were the client's expected `stale_version` races. (A match of bots alone
//! cannot be set up: only a seated player chooses bots and starts the table.)

use serde_json::{Value, json};

use crate::support::*;

/// Creates a table of `game` with `seats` seats, the creator in seat 0 and a bot of
/// `levels[i]` in seat `i + 1`, and starts it; returns the table id and the socket.
async fn table_with_bots(
    p: &Player,
    game: &str,
    options: Value,
    levels: &[&str],
) -> (String, Sock) {
    let (s, v) = p
        .post(
            "/api/tables",
            json!({"game": game, "seats": levels.len() + 1, "options": options}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    for (i, level) in levels.iter().enumerate() {
        let (s, v) = p
            .post(
                &format!("/api/tables/{table}/bots"),
                json!({"seat": i + 1, "level": level}),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["seats"][i + 1], json!({"kind": "bot", "level": level}));
    }
    let sock = p.connect(&table).await;
    let (s, v) = p
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    (table, sock)
}

/// The `/metrics` text.
async fn metrics(server: &Server) -> String {
    reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Plays the client's seat to the end of the match, then checks that the bots moved and
/// that nothing but the client's `stale_version` races was refused.
async fn finish(server: &Server, sock: &mut Sock, pick: fn(&[Value]) -> Value) -> Value {
    let (end, moves) = play_until(sock, pick, |s| status(s) == "finished").await;
    assert!(moves > 0, "the client played too");
    let text = metrics(server).await;
    let accepted: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("fib_actions_accepted_total "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        accepted > moves,
        "the bots moved: {accepted} actions, {moves} by the client"
    );
    for l in text
        .lines()
        .filter_map(|l| l.strip_prefix("fib_actions_rejected_total{code=\""))
    {
        assert!(l.starts_with("stale_version\""), "refused: {l}");
    }
    end
}

/// Plays a card, a run card, a joker: anything but a draw when it can (so the client's
/// own seat does not make Fib-Fibonacci last to the turn limit).
fn shed(legal: &[Value]) -> Value {
    legal
        .iter()
        .find(|a| a["type"].as_str().is_some_and(|t| t.starts_with("play")))
        .unwrap_or(&legal[0])
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_normal_and_hard_finish_a_fibonachos_match() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (table, mut sock) = table_with_bots(&ada, "nachos", Value::Null, &["normal", "hard"]).await;
    let end = finish(&server, &mut sock, first).await;
    assert_eq!(end["table"]["round"], 3, "three rounds (R-54)");
    let (s, info) = ada.get(&format!("/api/tables/{table}")).await;
    assert_eq!(s, 200);
    assert_eq!(info["status"], "finished");
    assert_eq!(info["seats"][2], json!({"kind": "bot", "level": "hard"}));
    server.stop().await;
}

/// Draws and discards only: the normal bot's R-18 moves and closing end the round.
fn progress(legal: &[Value]) -> Value {
    legal
        .iter()
        .find(|a| matches!(a["type"].as_str(), Some("draw_stock" | "discard")))
        .unwrap_or(&legal[0])
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_normal_finishes_a_fibonacci_8_round() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (_, mut sock) = table_with_bots(&ada, "rummy", json!({"target": 8}), &["normal"]).await;
    let end = finish(&server, &mut sock, progress).await;
    assert_eq!(end["table"]["status"], "finished");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_hard_finishes_a_fib_fibonacci_game() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (_, mut sock) = table_with_bots(&ada, "fibfib", Value::Null, &["hard"]).await;
    let end = finish(&server, &mut sock, shed).await;
    assert_eq!(end["table"]["status"], "finished");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_normal_and_hard_finish_a_short_trump_match() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (_, mut sock) =
        table_with_bots(&ada, "trump", json!({"target": 13}), &["normal", "hard"]).await;
    let end = finish(&server, &mut sock, first).await;
    let best = end["table"]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .max()
        .unwrap();
    assert!(best >= 13, "{end}");
    server.stop().await;
}
