//! Ratings and leaderboards end to end, on every database: people play whole matches over
//! WebSockets; each result moves their ratings exactly as `store::rating` computes them
//! (Glicko-2 for duels, Weng-Lin for three people); the paged per-pool leaderboards rank
//! them by conservative rating once they have enough matches; matches against bots change
//! nothing; Trump's records list the totals; and concurrent starts of the daily Solitaire
//! deal make one table.

use std::collections::HashMap;

use serde_json::{Value, json};
use store::rating::{self, Entry, Pool, Rating};

use crate::support::*;

/// A started Trump match to 5 between `people` (the first creates it), no bots.
pub async fn trump_between(people: &[&Player]) -> String {
    let (s, v) = people[0]
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": people.len(), "options": {"target": 5}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    for p in &people[1..] {
        let (s, v) = p
            .post(&format!("/api/tables/{table}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
    }
    let (s, v) = people[0]
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    table
}

/// Plays `table` to its end with every person's socket; the final state.
pub async fn play_out(people: &[&Player], table: &str) -> Value {
    let mut socks = Vec::new();
    for p in people {
        socks.push(p.connect(table).await);
    }
    let done = |s: &Value| status(s) == "finished";
    let ends = futures_util::future::join_all(
        socks
            .iter_mut()
            .map(|sock| async move { play_until(sock, first, done).await.0 }),
    )
    .await;
    ends.into_iter().next().unwrap()
}

/// Each person's entry of a finished match, by player id: won, final score.
fn results(end: &Value) -> HashMap<String, (bool, i64)> {
    let winners: Vec<u64> = end["table"]["winners"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    end["table"]["seats"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, s)| s["kind"] == "player")
        .map(|(i, s)| {
            let score = end["table"]["scores"][i].as_i64().unwrap();
            (
                s["id"].as_str().unwrap().to_string(),
                (winners.contains(&(i as u64)), score),
            )
        })
        .collect()
}

/// Applies one match to the expected ratings of `pool`, as the server must.
fn expect(
    ratings: &mut HashMap<String, Rating>,
    pool: Pool,
    people: &[&Player],
    res: &HashMap<String, (bool, i64)>,
) {
    let entries: Vec<Entry> = people
        .iter()
        .map(|p| {
            let (won, score) = res[&p.id];
            Entry {
                rating: *ratings.entry(p.id.clone()).or_insert(pool.initial()),
                won,
                score,
                abandoned: false,
            }
        })
        .collect();
    for (p, r) in people.iter().zip(rating::update(pool, &entries)) {
        ratings.insert(p.id.clone(), r);
    }
}

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap() - b).abs() < 1e-6
}

/// Checks a leaderboard page against the expected ratings: every ranked row matches, ranks
/// count from `offset + 1`, the order is by conservative rating.
fn check_board(board: &Value, expected: &HashMap<String, Rating>, wins: &HashMap<String, i64>) {
    let rows = board["rows"].as_array().unwrap();
    let offset = board["offset"].as_i64().unwrap();
    let mut last = f64::INFINITY;
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["rank"], offset + i as i64 + 1, "{board}");
        let id = row["player"]["id"].as_str().unwrap();
        let r = expected[id];
        assert!(close(&row["rating"], r.mu), "{row} vs {r:?}");
        assert!(close(&row["deviation"], r.sigma), "{row} vs {r:?}");
        let c = row["conservative"].as_f64().unwrap();
        assert!((c - rating::conservative(&r)).abs() < 1e-6, "{row}");
        assert!(c <= last, "best first: {board}");
        last = c;
        assert_eq!(row["matches"], 3, "{row}");
        assert_eq!(row["wins"], wins[id], "{row}");
    }
}

/// Three duels of Ada and Bob and three three-person matches of Ada, Bob and Cy: both
/// leaderboards rank exactly the expected ratings; Dee, with one duel, is not ranked but
/// has her rating; a match against bots changes nothing; Trump's records hold the totals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_move_ratings_onto_paged_leaderboards() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let guest = |name: &'static str| Player::guest(&server.base, &server.ws, name);
        let (ada, bob, cy, dee) = (
            guest("Ada").await,
            guest("Bob").await,
            guest("Cy").await,
            guest("Dee").await,
        );
        let (mut duel, mut multi) = (HashMap::new(), HashMap::new());
        let (mut duel_wins, mut multi_wins) = (HashMap::new(), HashMap::new());
        let mut totals = Vec::new();
        for (pool, people) in [
            (Pool::Duel, vec![&ada, &bob]),
            (Pool::Multi, vec![&ada, &bob, &cy]),
            (Pool::Duel, vec![&bob, &ada]),
            (Pool::Multi, vec![&cy, &ada, &bob]),
            (Pool::Duel, vec![&ada, &bob]),
            (Pool::Multi, vec![&bob, &cy, &ada]),
            (Pool::Duel, vec![&dee, &cy]),
        ] {
            let table = trump_between(&people).await;
            let end = play_out(&people, &table).await;
            let res = results(&end);
            let (expected, wins) = match pool {
                Pool::Duel => (&mut duel, &mut duel_wins),
                Pool::Multi | Pool::Bots => (&mut multi, &mut multi_wins),
            };
            expect(expected, pool, &people, &res);
            for (id, (won, score)) in &res {
                *wins.entry(id.clone()).or_insert(0) += i64::from(*won);
                totals.push(*score);
            }
        }

        // Duels: Ada and Bob have three; Cy and Dee one each (not ranked).
        let (s, board) = ada.get("/api/leaderboard/trump").await;
        assert_eq!(s, 200, "{board}");
        assert_eq!(
            (
                &board["game"],
                &board["pool"],
                &board["system"],
                &board["min_matches"]
            ),
            (
                &json!("trump"),
                &json!("duel"),
                &json!("glicko2"),
                &json!(3)
            ),
            "{board}"
        );
        assert_eq!(
            (&board["total"], &board["offset"], &board["limit"]),
            (&json!(2), &json!(0), &json!(50))
        );
        assert_eq!(board["rows"].as_array().unwrap().len(), 2, "{board}");
        check_board(&board, &duel, &duel_wins);
        assert!(board["rows"][0]["volatility"].is_f64(), "{board}");
        // Multi: all three ranked, Weng-Lin.
        let (s, board) = ada.get("/api/leaderboard/trump?pool=multi").await;
        assert_eq!(s, 200, "{board}");
        assert_eq!(
            (&board["system"], &board["total"]),
            (&json!("weng_lin"), &json!(3)),
            "{board}"
        );
        check_board(&board, &multi, &multi_wins);
        assert!(board["rows"][0]["volatility"].is_null(), "{board}");
        // Paging: the second page of one row is the second-ranked player.
        let (_, page) = ada
            .get("/api/leaderboard/trump?pool=multi&offset=1&limit=1")
            .await;
        assert_eq!(page["rows"].as_array().unwrap().len(), 1, "{page}");
        assert_eq!(page["rows"][0]["rank"], 2);
        assert_eq!(page["rows"][0]["player"], board["rows"][1]["player"]);
        check_board(&page, &multi, &multi_wins);
        let (_, past) = ada.get("/api/leaderboard/trump?pool=multi&offset=3").await;
        assert_eq!(
            (&past["total"], past["rows"].as_array().unwrap().len()),
            (&json!(3), 0)
        );
        // Another game has its own boards.
        let (_, other) = ada.get("/api/leaderboard/nachos").await;
        assert_eq!(other["total"], 0, "{other}");

        // Dee's duel rating, not ranked yet.
        let (s, mine) = dee.get(&format!("/api/players/{}/ratings", dee.id)).await;
        assert_eq!(s, 200, "{mine}");
        assert_eq!(mine.as_array().unwrap().len(), 1, "{mine}");
        assert_eq!(
            (&mine[0]["game"], &mine[0]["pool"], &mine[0]["ranked"]),
            (&json!("trump"), &json!("duel"), &json!(false))
        );
        assert!(close(&mine[0]["rating"], duel[&dee.id].mu), "{mine}");
        assert_eq!(mine[0]["matches"], 1);

        // Against bots: unrated, whatever the result.
        let (eve, _table, mut sock) = trump_with_bots(&server, "Eve", 2).await;
        play_until(&mut sock, first, |s| status(s) == "finished").await;
        let (_, eve) = eve.get(&format!("/api/players/{}/ratings", eve.id)).await;
        assert_eq!(eve, json!([]), "a match against bots alone is not rated");

        // Records: the highest totals, highest first.
        let (s, rec) = ada.get("/api/records/trump").await;
        assert_eq!(s, 200, "{rec}");
        assert_eq!(rec["game"], "trump");
        let best: Vec<i64> = rec["highest_totals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["score"].as_i64().unwrap())
            .collect();
        // 18 people's totals in all, fewer than the 20 a list holds: every one is there.
        assert_eq!(best.len(), totals.len() + 1, "{rec}");
        for t in &totals {
            assert!(best.contains(t), "{t} in {rec}");
        }
        assert!(best.windows(2).all(|w| w[0] >= w[1]), "{rec}");

        // Bad input: specific errors.
        let (s, e) = ada.get("/api/leaderboard/trump?pool=solo").await;
        assert_eq!((s, &e["code"]), (400, &json!("malformed")), "{e}");
        assert_eq!(
            e["message"],
            "pool must be \"duel\", \"multi\" or \"bots\", not \"solo\""
        );
        let (s, e) = ada.get("/api/leaderboard/trump?offset=-1").await;
        assert_eq!((s, &e["code"]), (400, &json!("malformed")), "{e}");
        let (s, e) = ada.get("/api/leaderboard/chess").await;
        assert_eq!((s, &e["code"]), (404, &json!("not_found")), "{e}");
        let (s, e) = ada.get("/api/records/nachos").await;
        assert_eq!((s, &e["code"]), (404, &json!("not_found")), "{e}");
        let (s, e) = ada.get("/api/players/nobody/ratings").await;
        assert_eq!((s, &e["code"]), (400, &json!("malformed")), "{e}");
        server.stop().await;
    }
}

/// Many simultaneous requests to start today's daily Solitaire make one table: all get
/// the same one (the store's unique index settles the race). The Solitaire records answer
/// for today.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_solitaire_starts_race_to_one_table() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let starts = (0..6).map(|_| ada.post("/api/daily/solitaire", json!({"target": 13})));
        let answers = futures_util::future::join_all(starts).await;
        let ids: Vec<&str> = answers
            .iter()
            .map(|(s, v)| {
                assert_eq!(*s, 200, "{v}");
                v["id"].as_str().unwrap()
            })
            .collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        let (_, mine) = ada.get("/api/me/matches").await;
        let daily: Vec<&Value> = mine
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["game"] == "rummy")
            .collect();
        assert_eq!(daily.len(), 1, "one daily table: {mine}");
        let (s, rec) = ada.get("/api/records/solitaire?target=13").await;
        assert_eq!(s, 200, "{rec}");
        assert_eq!(
            (&rec["game"], &rec["target"]),
            (&json!("solitaire"), &json!(13))
        );
        assert!(rec["best"].is_array() && rec["today"].is_array(), "{rec}");
        let (s, e) = ada.get("/api/records/solitaire?target=7").await;
        assert_eq!((s, &e["code"]), (400, &json!("bad_options")), "{e}");
        server.stop().await;
    }
}

/// The profile's rating history: one point per rated match, oldest first, ending at the
/// player's current rating; bad queries are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rating_history_follows_each_rated_match() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let mut tables = Vec::new();
        for _ in 0..2 {
            let table = trump_between(&[&ada, &bob]).await;
            play_out(&[&ada, &bob], &table).await;
            tables.push(table);
        }
        let (_, me) = ada.get("/api/me").await;
        let id = me["id"].as_str().unwrap();
        let (s, points) = ada
            .get(&format!(
                "/api/players/{id}/rating-history?game=trump&pool=duel"
            ))
            .await;
        assert_eq!(s, 200, "{points}");
        let points = points.as_array().unwrap();
        assert_eq!(points.len(), 2, "{points:?}");
        assert_eq!(points[0]["table_id"], json!(tables[0]));
        assert_eq!(points[1]["table_id"], json!(tables[1]));
        assert!(points[0]["at"].as_i64() <= points[1]["at"].as_i64());
        let (_, ratings) = ada.get(&format!("/api/players/{id}/ratings")).await;
        let duel = ratings
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["game"] == "trump" && r["pool"] == "duel")
            .unwrap();
        assert_eq!(points[1]["rating"], duel["rating"]);
        assert_eq!(points[1]["deviation"], duel["deviation"]);
        let wins = points.iter().filter(|p| p["won"] == true).count() as i64;
        assert_eq!(wins, duel["wins"].as_i64().unwrap());
        // Nothing in the multi pool; bad queries are refused.
        let (s, multi) = ada
            .get(&format!(
                "/api/players/{id}/rating-history?game=trump&pool=multi"
            ))
            .await;
        assert_eq!((s, multi), (200, json!([])));
        let (s, v) = ada.get(&format!("/api/players/{id}/rating-history")).await;
        assert_eq!((s, v["code"].as_str()), (400, Some("malformed")), "{v}");
        let (s, v) = ada
            .get(&format!("/api/players/{id}/rating-history?game=chess"))
            .await;
        assert_eq!((s, v["code"].as_str()), (404, Some("not_found")), "{v}");
        let (s, v) = ada
            .get(&format!(
                "/api/players/{id}/rating-history?game=trump&pool=team"
            ))
            .await;
        assert_eq!((s, v["code"].as_str()), (400, Some("malformed")), "{v}");
        server.stop().await;
    }
}
