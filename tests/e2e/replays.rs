//! Step replays and whole-match verification end to end, on every database: bots play a
//! match of each game to the end through the server; its replay rebuilds the stored result,
//! and the `verify-match` command, given only the replay document, recomputes every
//! round's deal from its revealed seed and the moves before it (R-0). An unfinished match
//! is not replayed, so no hidden card leaks.

use serde_json::{Value, json};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_game_replays_and_verifies_from_its_seeds() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        for (game, seats, options) in [
            ("trump", 3, json!({"target": 21})),
            ("nachos", 3, Value::Null),
            ("fibfib", 2, Value::Null),
            ("rummy", 2, json!({"target": 8})),
            ("rummy", 1, json!({"target": 8})),
        ] {
            let table = create_bots_only(&ada, game, seats, "easy", options).await;
            let (s, v) = ada.get(&format!("/api/tables/{table}/replay")).await;
            assert_eq!(
                (s, v["code"].as_str()),
                (409, Some("replay_not_finished")),
                "{v}"
            );
            let (s, v) = ada
                .post(&format!("/api/tables/{table}/start"), json!({}))
                .await;
            assert_eq!(s, 200, "{v}");
            let end = wait_finished(&ada, &table).await;
            // Anyone may open the link of a finished public match, signed in or not.
            let bob = Player::guest(&server.base, &server.ws, "Bob").await;
            let (s, replay) = bob.get(&format!("/api/tables/{table}/replay")).await;
            assert_eq!(s, 200, "{game}: {replay}");
            assert_eq!(replay["final_scores"], end["scores"], "{game}");
            assert_eq!(replay["winners"], end["winners"], "{game}");
            // Asked again, it is the replay kept built (replay::Cache), the same.
            let (s, again) = ada.get(&format!("/api/tables/{table}/replay")).await;
            assert_eq!((s, &again), (200, &replay), "{game}");
            let (_, rounds) = ada.get(&format!("/api/tables/{table}/rounds")).await;
            assert_eq!(
                replay["rounds"].as_array().unwrap().len(),
                rounds.as_array().unwrap().len()
            );
            for (r, f) in replay["rounds"]
                .as_array()
                .unwrap()
                .iter()
                .zip(rounds.as_array().unwrap())
            {
                assert_eq!(r["seed"], f["seed"], "{game}: the published seed");
                let (s, served) = ada
                    .get(&format!("/api/tables/{table}/rounds/{}/deal", r["round"]))
                    .await;
                assert_eq!(s, 200);
                assert_eq!(r["deal"], served["deal"], "{game}");
            }
            // Every seat's whole view is in the replay: every hand is revealed.
            assert_eq!(replay["views"].as_array().unwrap().len(), seats);
            let moves = replay["steps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| !s["seat"].is_null())
                .count();
            assert!(moves > 0, "{game}");
            verify(&replay, true).await;
            // A replay whose deal was changed does not verify, nor one whose first views
            // (what the replay page draws) were.
            let mut forged = replay.clone();
            forged["rounds"][0]["deal"] = json!({"forged": true});
            verify(&forged, false).await;
            let mut forged = replay.clone();
            forged["views"][0] = json!({"forged": true});
            verify(&forged, false).await;
        }
        server.stop().await;
    }
}

/// Runs `verify-match --replay -` on `replay` and checks it succeeds (or fails).
async fn verify(replay: &Value, ok: bool) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_e2e-server"))
        .args(["verify-match", "--replay", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let body = serde_json::to_vec(replay).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.success(), ok, "{stdout}\n{stderr}");
    if ok {
        let rounds = replay["rounds"].as_array().unwrap().len();
        // A line per round, the views and steps, the result.
        assert_eq!(stdout.lines().count(), rounds + 2, "{stdout}");
        assert!(stdout.contains(r#""views":"ok""#), "{stdout}");
        assert!(stdout.lines().last().unwrap().contains("\"result\":\"ok\""));
    } else {
        assert!(stderr.contains("differ"), "{stderr}");
    }
}

/// An unknown table has no replay: `table_not_found`, as for the table itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_of_an_unknown_table_is_not_found() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, v) = ada
        .get("/api/tables/00000000-0000-0000-0000-000000000000/replay")
        .await;
    assert_eq!(
        (s, v["code"].as_str()),
        (404, Some("table_not_found")),
        "{v}"
    );
    server.stop().await;
}

/// A private match's replay follows the table's rule whether it is built or served from
/// the cache (a finished match's replay is cached, and a hit no longer loads the table to
/// check): its people and whoever has the invite code see it, nobody else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_replay_keeps_its_invite_rule_once_cached() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let (s, v) = ada
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "private": true, "bots": "random", "options": {"target": 5}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let code = v["invite_code"].as_str().unwrap().to_string();
    let (s, v) = ada
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let mut a = ada.connect(&table).await;
    a.next_state().await;
    play_until(&mut a, first, |s| status(s) == "finished").await;
    let path = format!("/api/tables/{table}/replay");
    let stranger = Player::guest(&server.base, &server.ws, "Stranger").await;
    // Twice each: the first request builds it (or finds it built), the next is a hit.
    for _ in 0..2 {
        let (s, v) = stranger.get(&path).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (403, Some("invite_required")),
            "{v}"
        );
        let (s, v) = stranger.get(&format!("{path}?invite=wrong")).await;
        assert_eq!((s, v["code"].as_str()), (403, Some("invite_required")));
        let anonymous = reqwest::get(format!("{}{path}", server.base))
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 403);
    }
    let (s, mine) = ada.get(&path).await;
    assert_eq!(s, 200, "{mine}");
    for _ in 0..2 {
        let (s, again) = ada.get(&path).await;
        assert_eq!((s, &again), (200, &mine));
        let (s, shared) = stranger.get(&format!("{path}?invite={code}")).await;
        assert_eq!((s, &shared), (200, &mine));
        let (s, v) = stranger.get(&path).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (403, Some("invite_required")),
            "a hit checks the rule too: {v}"
        );
        let anonymous = reqwest::get(format!("{}{path}", server.base))
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 403);
    }
    server.stop().await;
}
