//! Rematch end to end, on every database: two people finish a Trump match; a rematch is
//! refused before the end and to someone not seated; when both accept, the new table is
//! created and started with the same seats and every socket is told its id; a refusal
//! ends the offer.

use serde_json::{Value, json};

use crate::ratings::trump_between;
use crate::support::*;

/// Plays `table` to its end with both sockets; returns them, positioned at the end.
async fn finish(ada: &Player, bob: &Player, table: &str) -> (Sock, Sock) {
    let mut a = ada.connect(table).await;
    let mut b = bob.connect(table).await;
    let done = |s: &Value| status(s) == "finished";
    futures_util::future::join(
        play_until(&mut a, first, done),
        play_until(&mut b, first, done),
    )
    .await;
    (a, b)
}

fn rematch(s: &Value) -> &Value {
    &s["table"]["rematch"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rematch_when_everyone_accepts_and_not_after_a_refusal() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let table = trump_between(&[&ada, &bob]).await;

        // Not before the end.
        let mut early = ada.connect(&table).await;
        early.next_state().await;
        early.send(json!({"type": "rematch", "accept": true})).await;
        assert_eq!(early.next_error().await["code"], "rematch_not_finished");
        drop(early);

        let (mut a, mut b) = finish(&ada, &bob, &table).await;
        // Someone who did not play cannot ask.
        let carol = Player::guest(&server.base, &server.ws, "Carol").await;
        let mut c = carol.connect(&table).await;
        c.next_state().await;
        c.send(json!({"type": "rematch", "accept": true})).await;
        assert_eq!(c.next_error().await["code"], "not_seated");

        a.send(json!({"type": "rematch", "accept": true})).await;
        let seen = b
            .until(|s| rematch(s)["accepted"] == json!([true, false]))
            .await;
        assert!(rematch(&seen)["table"].is_null());
        b.send(json!({"type": "rematch", "accept": true})).await;
        let done = a.until(|s| rematch(s)["table"].is_string()).await;
        let next = rematch(&done)["table"].as_str().unwrap().to_string();
        assert_ne!(next, table);
        let watched = c.until(|s| rematch(s)["table"].is_string()).await;
        assert_eq!(rematch(&watched)["table"], json!(next));
        // The new table is playing, with the same people in the same seats.
        let (s, old) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(s, 200);
        let (s, new) = ada.get(&format!("/api/tables/{next}")).await;
        assert_eq!(s, 200, "{new}");
        assert_eq!(new["status"], "playing");
        assert_eq!(new["options"], old["options"]);
        for i in 0..2 {
            assert_eq!(new["seats"][i]["id"], old["seats"][i]["id"]);
        }
        // Asking again changes nothing.
        a.send(json!({"type": "rematch", "accept": true})).await;
        let (_, again) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(again["rematch"]["table"], json!(next));

        // A second match: Bob declines, which ends the offer.
        let table = trump_between(&[&ada, &bob]).await;
        let (mut a, mut b) = finish(&ada, &bob, &table).await;
        b.send(json!({"type": "rematch", "accept": false})).await;
        a.until(|s| rematch(s)["declined_by"] == json!(1)).await;
        a.send(json!({"type": "rematch", "accept": true})).await;
        let e = a.next_error().await;
        assert_eq!(e["code"], "rematch_declined", "{e}");
        // Seats are numbered from 0 (§1.3): Bob's is 1.
        assert_eq!(e["message"], "seat 1 declined this rematch", "{e}");
        let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
        assert!(info["rematch"]["table"].is_null());
        server.stop().await;
    }
}

/// An unrated challenge's rematch is unrated too: neither match changes a rating (a
/// black-box walk found the rematch rated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrated_challenges_rematch_is_unrated() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let mut la = lobby(&ada).await;
    let mut lb = lobby(&bob).await;
    lobby_until(&mut la, "tables").await;
    lobby_until(&mut lb, "tables").await;
    la.send(json!({"type": "challenge", "to": bob.id, "game": "trump",
                   "options": {"target": 5}, "rated": false}))
        .await;
    let id = lobby_until(&mut lb, "challenge_received").await["challenge"]["id"].clone();
    lb.send(json!({"type": "challenge_accept", "id": id})).await;
    let table = lobby_until(&mut lb, "challenge_started").await["table"]
        .as_str()
        .unwrap()
        .to_string();
    let (mut a, mut b) = finish(&ada, &bob, &table).await;
    a.send(json!({"type": "rematch", "accept": true})).await;
    b.until(|s| rematch(s)["accepted"] == json!([true, false]))
        .await;
    b.send(json!({"type": "rematch", "accept": true})).await;
    let done = a.until(|s| rematch(s)["table"].is_string()).await;
    let next = rematch(&done)["table"].as_str().unwrap().to_string();
    finish(&ada, &bob, &next).await;
    for p in [&ada, &bob] {
        let (s, ratings) = p.get(&format!("/api/players/{}/ratings", p.id)).await;
        assert_eq!(s, 200, "{ratings}");
        assert_eq!(ratings, json!([]), "no rating from either match: {ratings}");
    }
    server.stop().await;
}
