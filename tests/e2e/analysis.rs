//! Match analyses end to end, on every database (#32, docs/analysis.md): bots finish a
//! match of each game; anyone who may see its replay asks for its analysis, watches its
//! progress and gets every decision of every seat, lined up with the replay's steps; asked
//! again, the stored analysis is served. Limits per player and in all refuse with their
//! codes and change nothing; a job queued on a node with no workers is done by the next
//! node that has some (the queue lives in the database, not in a process).

use serde_json::{Value, json};

use crate::support::*;

/// Polls a match's analysis until it is done (or failed); returns the last status.
async fn wait_analysed(p: &Player, table: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let (s, v) = p.get(&format!("/api/tables/{table}/analysis")).await;
        assert_eq!(s, 200, "{v}");
        match v["state"].as_str() {
            Some("done") | Some("failed") => return v,
            Some("running") => {
                let (done, total) = (v["done"].as_i64().unwrap(), v["total"].as_i64().unwrap());
                assert!(done <= total, "{v}");
            }
            Some("queued") => assert!(v["ahead"].as_i64().is_some(), "{v}"),
            _ => panic!("{v}"),
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "the analysis did not finish: {v}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The analysis says something of every logged action, at the replay's step for it.
fn check_against_replay(game: &str, replay: &Value, analysis: &Value) {
    let steps = replay["steps"].as_array().unwrap();
    let acted: Vec<(usize, &Value)> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !s["seat"].is_null())
        .collect();
    let analysed = analysis["steps"].as_array().unwrap();
    assert_eq!(analysed.len(), acted.len(), "{game}: one entry per action");
    for (a, (i, s)) in analysed.iter().zip(&acted) {
        assert_eq!(a["step"].as_u64(), Some(*i as u64), "{game}: {a}");
        assert_eq!(a["seat"], s["seat"], "{game}: step {i}");
        assert_eq!(a["taken"], s["action"], "{game}: step {i}");
        let cost = a["cost"].as_f64().unwrap();
        assert!(cost >= -1e-9, "{game}: a negative cost at step {i}: {a}");
        assert!(
            ["exact", "rollouts"].contains(&a["method"].as_str().unwrap()),
            "{game}: {a}"
        );
    }
    let seats = replay["seats"].as_array().unwrap().len();
    assert_eq!(analysis["seats"].as_array().unwrap().len(), seats, "{game}");
    for s in analysis["seats"].as_array().unwrap() {
        let acc = s["accuracy"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&acc), "{game}: {s}");
    }
    let rounds = analysis["rounds"].as_array().unwrap();
    assert_eq!(
        rounds.len(),
        replay["rounds"].as_array().unwrap().len(),
        "{game}"
    );
    for (r, rr) in rounds.iter().zip(replay["rounds"].as_array().unwrap()) {
        assert_eq!(r["first_step"], rr["first_step"], "{game}");
        let chart = r["chart"].as_array().unwrap();
        assert!(!chart.is_empty(), "{game}");
        assert!(
            chart.iter().all(|p| p.as_array().unwrap().len() == seats),
            "{game}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_game_is_analysed_on_every_database() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        for (game, seats, options) in [
            ("trump", 2, json!({"target": 8})),
            ("nachos", 3, Value::Null),
            ("fibfib", 2, Value::Null),
            ("rummy", 2, json!({"target": 8})),
        ] {
            let table = create_bots_only(&ada, game, seats, "normal", options).await;
            // Not over: no analysis, as no replay.
            let (s, v) = bob
                .post(&format!("/api/tables/{table}/analysis"), json!({}))
                .await;
            assert_eq!(
                (s, v["code"].as_str()),
                (409, Some("replay_not_finished")),
                "{v}"
            );
            let (s, v) = ada
                .post(&format!("/api/tables/{table}/start"), json!({}))
                .await;
            assert_eq!(s, 200, "{v}");
            wait_finished(&ada, &table).await;
            let (s, v) = bob.get(&format!("/api/tables/{table}/analysis")).await;
            assert_eq!(
                (s, v["state"].as_str()),
                (200, Some("not_requested")),
                "{v}"
            );
            // Asking needs a player (for the limits).
            let r = reqwest::Client::new()
                .post(format!("{}/api/tables/{table}/analysis", server.base))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 401);
            // Bob did not play: anyone who may see the replay may ask.
            let (s, v) = bob
                .post(&format!("/api/tables/{table}/analysis"), json!({}))
                .await;
            assert_eq!(s, 202, "{game}: {v}");
            assert_eq!(v["table_id"].as_str(), Some(table.as_str()));
            let done = wait_analysed(&bob, &table).await;
            assert_eq!(done["state"], "done", "{game}: {done}");
            assert_eq!(done["done"], done["total"], "{game}");
            let analysis = &done["analysis"];
            assert_eq!(analysis["game"], game);
            let (_, replay) = bob.get(&format!("/api/tables/{table}/replay")).await;
            check_against_replay(game, &replay, analysis);
            // Asked again (by anyone): served as stored, not queued again.
            let (s, again) = ada
                .post(&format!("/api/tables/{table}/analysis"), json!({}))
                .await;
            assert_eq!(s, 200, "{again}");
            assert_eq!(again["analysis"], *analysis);
            assert_eq!(again["finished_at"], done["finished_at"]);
        }
        server.stop().await;
    }
}

/// `n` Fib-Fibonacci matches of easy bots, played to their end.
async fn finished_matches(ada: &Player, n: usize) -> Vec<String> {
    let mut tables = Vec::new();
    for _ in 0..n {
        let t = create_bots_only(ada, "fibfib", 2, "easy", Value::Null).await;
        let (s, v) = ada.post(&format!("/api/tables/{t}/start"), json!({})).await;
        assert_eq!(s, 200, "{v}");
        tables.push(t);
    }
    for t in &tables {
        wait_finished(ada, t).await;
    }
    tables
}

/// Asks for table `t`'s analysis as `p`.
async fn ask(p: &Player, t: &str) -> (u16, Value) {
    p.post(&format!("/api/tables/{t}/analysis"), json!({}))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_limits_and_a_queue_that_outlives_its_node() {
    for db in databases().await {
        // No workers here: every job stays queued.
        let server = Server::start_with(&db, |c| {
            c.analysis_workers = Some(0);
            c.analysis_pending_per_player = 1;
            c.analysis_queue = 2;
        })
        .await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let cy = Player::guest(&server.base, &server.ws, "Cy").await;
        let tables = finished_matches(&ada, 3).await;
        let (s, v) = ask(&ada, &tables[0]).await;
        assert_eq!(
            (s, v["state"].as_str(), v["ahead"].as_i64()),
            (202, Some("queued"), Some(0))
        );
        // Ada has one waiting: her next must wait for it.
        let (s, v) = ask(&ada, &tables[1]).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (429, Some("analysis_pending")),
            "{v}"
        );
        let (s, v) = bob
            .get(&format!("/api/tables/{}/analysis", tables[1]))
            .await;
        assert_eq!(
            (s, v["state"].as_str()),
            (200, Some("not_requested")),
            "{v}"
        );
        let (s, v) = ask(&bob, &tables[1]).await;
        assert_eq!((s, v["ahead"].as_i64()), (202, Some(1)), "{v}");
        // Two wait: the queue (2) is full for everyone.
        let (s, v) = ask(&cy, &tables[2]).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (503, Some("analysis_queue_full")),
            "{v}"
        );
        // A job already asked for is no new job: answered, within any limit.
        let (s, v) = ask(&cy, &tables[0]).await;
        assert_eq!((s, v["state"].as_str()), (200, Some("queued")), "{v}");
        server.stop().await;

        // The next node, with a worker, does what the first left queued.
        let server = Server::start(&db).await;
        let ada = ada.at(&server.base, &server.ws);
        for t in &tables[..2] {
            let v = wait_analysed(&ada, t).await;
            assert_eq!(v["state"], "done", "{v}");
        }
        let (s, v) = ada
            .get(&format!("/api/tables/{}/analysis", tables[2]))
            .await;
        assert_eq!(
            (s, v["state"].as_str()),
            (200, Some("not_requested")),
            "{v}"
        );
        server.stop().await;
    }
}

/// One client address holds at most `--analysis-pending-per-address` of the queue's places
/// at once, whoever asks from there: guests cost nothing to make, and a walk filled the
/// whole queue from one address with new guests, two analyses each. A job that ends frees
/// its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_holds_only_so_many_waiting_analyses() {
    for db in databases().await {
        // No workers at first: every job stays queued.
        let server = Server::start_with(&db, |c| {
            c.analysis_workers = Some(0);
            c.analysis_pending_per_address = 2;
        })
        .await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let tables = finished_matches(&ada, 3).await;
        for t in &tables[..2] {
            let (s, v) = ask(&ada, t).await;
            assert_eq!(s, 202, "{v}");
        }
        // A new guest from the same address (every test client is 127.0.0.1).
        let fresh = Player::guest(&server.base, &server.ws, "Fresh").await;
        let (s, v) = ask(&fresh, &tables[2]).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (429, Some("analysis_pending_address")),
            "{v}"
        );
        assert!(
            v["message"].as_str().unwrap().contains("your address"),
            "{v}"
        );
        // Nothing was queued for it.
        let (_, v) = fresh
            .get(&format!("/api/tables/{}/analysis", tables[2]))
            .await;
        assert_eq!(v["state"], "not_requested", "{v}");
        server.stop().await;

        // A node with a worker does the two: their places are free again.
        let server = Server::start_with(&db, |c| c.analysis_pending_per_address = 2).await;
        let fresh = fresh.at(&server.base, &server.ws);
        for t in &tables[..2] {
            let v = wait_analysed(&fresh, t).await;
            assert_eq!(v["state"], "done", "{v}");
        }
        let (s, v) = ask(&fresh, &tables[2]).await;
        assert_eq!(s, 202, "{v}");
        server.stop().await;
    }
}
