//! Tournaments (#31) end to end, through the public API only: bot accounts join, and each
//! plays its games with the example bot (`examples/bot`) as the tournament pairs them; the
//! standings the server shows are checked against a recomputation from the games' own
//! results (`GET /api/tables/{id}`); the server is stopped mid-tournament and another
//! started on the same database carries on. Refusals change nothing.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A claimed account turned bot account, with an API token: the player as its token
/// sees it.
async fn bot_account(server: &Server, name: &str) -> Player {
    bot_account_at(&server.base, &server.ws, name).await
}

async fn bot_account_at(base: &str, ws: &str, name: &str) -> Player {
    let p = Player::guest(base, ws, name).await;
    let (s, v) = p
        .post(
            "/api/account/claim",
            json!({"username": name, "password": "correct horse battery"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let (s, v) = p.post("/api/account/bot", json!({})).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = p.post("/api/account/bot/token", json!({})).await;
    assert_eq!(s, 201, "{v}");
    let mut bot = p.clone();
    bot.token = v["token"].as_str().unwrap().to_string();
    bot
}

/// A claimed account (only those create tournaments), named `organiser`.
async fn organiser_at(base: &str, ws: &str) -> Player {
    claimed_at(base, ws, "organiser").await
}

/// A guest that claimed an account `name`.
async fn claimed_at(base: &str, ws: &str, name: &str) -> Player {
    let p = Player::guest(base, ws, name).await;
    let (s, v) = p
        .post(
            "/api/account/claim",
            json!({"username": name, "password": "correct horse battery"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    p
}

/// Plays every game the tournament seats `p` at, against whichever server `base` names
/// now (it changes at a restart), until the tournament is over. Returns the tables played.
async fn play_tournament(p: Player, base: Arc<Mutex<String>>, tid: String) -> Vec<String> {
    play_tournament_at(p, base, tid, 0).await
}

/// [`play_tournament`], thinking `think_ms` before each move.
async fn play_tournament_at(
    p: Player,
    base: Arc<Mutex<String>>,
    tid: String,
    think_ms: u64,
) -> Vec<String> {
    let mut played: Vec<String> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1200);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the tournament never ended"
        );
        let url = base.lock().unwrap().clone();
        let me = p.at(&url, &url.replacen("http://", "ws://", 1));
        let got = me
            .http
            .get(format!("{url}/api/tournaments/{tid}"))
            .bearer_auth(&me.token)
            .send()
            .await;
        let v: Value = match got {
            Ok(r) if r.status().is_success() => r.json().await.unwrap_or(Value::Null),
            _ => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if v["status"] == "finished" {
            return played;
        }
        let mine: Vec<String> = v["games"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| {
                g["state"] == "playing"
                    && g["players"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|x| x == &json!(p.id))
            })
            .map(|g| g["table_id"].as_str().unwrap().to_string())
            .filter(|t| !played.contains(t))
            .collect();
        for table in mine {
            let cfg = example_bot::Config {
                server: url.clone(),
                token: p.token.clone(),
                challenge: None,
                game: "trump".into(),
                seats: None,
                options: Value::Null,
                matches: 1,
                delay_ms: think_ms,
                match_timeout: Duration::from_secs(300),
            };
            match example_bot::play_table(&cfg, &table).await {
                Ok(_) => played.push(table),
                // The server went away (a restart): try again on the next one.
                Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// Duel points of a finished table from its own result: 1 for the win, ½ each for a
/// shared win or equal scores without a winner.
fn duel_points(table: &Value) -> [f64; 2] {
    let winners: Vec<u64> = table["winners"]
        .as_array()
        .map(|w| w.iter().map(|x| x.as_u64().unwrap()).collect())
        .unwrap_or_default();
    let scores: Vec<i64> = table["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    let key = |s: usize| (winners.contains(&(s as u64)), scores[s]);
    match key(0).cmp(&key(1)) {
        std::cmp::Ordering::Greater => [1.0, 0.0],
        std::cmp::Ordering::Less => [0.0, 1.0],
        std::cmp::Ordering::Equal => [0.5, 0.5],
    }
}

/// One standing's Buchholz and Sonneborn-Berger against their recomputation, and its
/// place after the standing before it (points, then Buchholz, then Sonneborn-Berger).
fn check_tie_breaks(
    st: &Value,
    id: &str,
    points: f64,
    buchholz: f64,
    sb: f64,
    previous: &mut Option<(f64, f64, f64)>,
) {
    assert!(
        (st["buchholz"].as_f64().unwrap() - buchholz).abs() < 1e-9,
        "Buchholz of {id}: {st} vs {buchholz}"
    );
    assert!(
        (st["sonneborn_berger"].as_f64().unwrap() - sb).abs() < 1e-9,
        "Sonneborn-Berger of {id}: {st} vs {sb}"
    );
    let key = (points, buchholz, sb);
    if let Some(p) = *previous {
        assert!(
            p >= key,
            "ranked by points, Buchholz, Sonneborn-Berger: {p:?} before {key:?}"
        );
    }
    *previous = Some(key);
}

/// Checks a finished Swiss of duels against a recomputation from its games: every player's
/// points, games and Buchholz; the ranking sorted by points then Buchholz; the podium.
async fn check_standings(viewer: &Player, t: &Value, rounds: usize, players: usize) {
    assert_eq!(t["status"], "finished", "{t}");
    let games = t["games"].as_array().unwrap();
    assert_eq!(
        games.len(),
        rounds * players / 2,
        "every round seats everyone"
    );
    let mut points: HashMap<String, f64> = HashMap::new();
    let mut opponents: HashMap<String, Vec<String>> = HashMap::new();
    // Per player: (opponent, my result against them).
    let mut results: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    let mut met: HashSet<(String, String)> = HashSet::new();
    for g in games {
        assert_eq!(g["state"], "finished", "{g}");
        let table = g["table_id"].as_str().unwrap();
        let (s, info) = viewer.get(&format!("/api/tables/{table}")).await;
        assert_eq!(s, 200, "{info}");
        assert_eq!(info["status"], "finished", "{info}");
        let ps: Vec<String> = g["players"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        // The table seats the players the tournament paired, in its order.
        for (seat, p) in ps.iter().enumerate() {
            assert_eq!(info["seats"][seat]["id"], json!(p), "{info}");
        }
        let pts = duel_points(&info);
        let shown: Vec<f64> = g["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(shown, pts.to_vec(), "the game's points: {g} {info}");
        for s in 0..2 {
            *points.entry(ps[s].clone()).or_default() += pts[s];
            opponents
                .entry(ps[s].clone())
                .or_default()
                .push(ps[1 - s].clone());
            results
                .entry(ps[s].clone())
                .or_default()
                .push((ps[1 - s].clone(), pts[s]));
        }
        let pair = if ps[0] < ps[1] {
            (ps[0].clone(), ps[1].clone())
        } else {
            (ps[1].clone(), ps[0].clone())
        };
        if rounds < players / 2 {
            assert!(met.insert(pair), "nobody meets twice in {rounds} rounds");
        }
    }
    let standings = t["standings"].as_array().unwrap();
    assert_eq!(standings.len(), players);
    let mut previous: Option<(f64, f64, f64)> = None;
    for (i, s) in standings.iter().enumerate() {
        let id = s["player"].as_str().unwrap().to_string();
        assert_eq!(s["rank"], json!(i + 1));
        let mine = points.get(&id).copied().unwrap_or(0.0);
        assert_eq!(s["score"].as_f64().unwrap(), mine, "points of {id}: {s}");
        assert_eq!(s["games"], json!(rounds), "{s}");
        let buchholz: f64 = opponents[&id].iter().map(|o| points[o]).sum();
        let sb: f64 = results[&id].iter().map(|(o, r)| r * points[o]).sum();
        check_tie_breaks(s, &id, mine, buchholz, sb, &mut previous);
    }
    let podium: Vec<&Value> = standings.iter().take(3).map(|s| &s["player"]).collect();
    let shown: Vec<&Value> = t["podium"].as_array().unwrap().iter().collect();
    assert_eq!(podium, shown);
}

/// Bad requests are refused with their code, and create nothing.
async fn refusals(org: &Player) {
    let base = json!({"game": "trump", "kind": {"type": "swiss", "rounds": 3},
        "table_size": 2, "start_when": 4});
    let cases = [
        (json!({"game": "chess"}), 400, "unknown_game"),
        (json!({"table_size": 9}), 400, "bad_tournament"),
        (
            json!({"kind": {"type": "swiss", "rounds": 0}}),
            400,
            "bad_tournament",
        ),
        (
            json!({"kind": {"type": "arena", "duration_s": 5}}),
            400,
            "bad_tournament",
        ),
        (json!({"start_when": null}), 400, "bad_tournament"),
        (json!({"start_when": 1}), 400, "bad_tournament"),
        (json!({"options": {"target": -3}}), 400, "bad_options"),
        (
            json!({"pace": {"kind": "live", "move_s": 0, "bank_s": 0}}),
            400,
            "bad_tournament",
        ),
        (json!({"name": ""}), 400, "bad_tournament"),
        // Names follow the rule of every text others are shown (protocol::text): nothing
        // invisible, nothing drawn as nothing, no stack of marks over the list.
        (json!({"name": "\u{034F}"}), 400, "bad_tournament"),
        (
            json!({"name": "\u{FFF0}Official Hourly"}),
            400,
            "bad_tournament",
        ),
        (
            json!({"name": format!("T{}", "\u{489}".repeat(59))}),
            400,
            "bad_tournament",
        ),
        (json!({"colour": "red"}), 400, "malformed"),
    ];
    for (patch, status, code) in cases {
        let mut body = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (s, v) = org.post("/api/tournaments", body.clone()).await;
        assert_eq!((s, v["code"].as_str()), (status, Some(code)), "{body}: {v}");
    }
    // A guest creates no tournament, even a valid one.
    let guest = Player::guest(&org.base, &org.ws, "Guest").await;
    let (s, v) = guest.post("/api/tournaments", base.clone()).await;
    assert_eq!((s, v["code"].as_str()), (403, Some("not_claimed")), "{v}");
    let (s, v) = org.get("/api/tournaments").await;
    assert_eq!(s, 200);
    assert_eq!(v["tournaments"], json!([]), "nothing was created");
    let (s, v) = org.get("/api/tournaments?status=later").await;
    assert_eq!((s, v["code"].as_str()), (400, Some("bad_tournament")));
    let (s, v) = org
        .get("/api/tournaments/00000000-0000-0000-0000-000000000000")
        .await;
    assert_eq!((s, v["code"].as_str()), (404, Some("tournament_not_found")));
}

/// A 32-player Swiss of bot accounts (5 rounds of Trump duels), played to the end
/// through the public API, with a restart of the server after the first round; the
/// standings checked against a recomputation from the games' results.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swiss_of_32_bot_accounts_with_a_restart() {
    const PLAYERS: usize = 32;
    const ROUNDS: usize = 5;
    for db in databases().await {
        let server = Server::start(&db).await;
        let org = organiser_at(&server.base, &server.ws).await;
        refusals(&org).await;
        let (s, t) = org
            .post(
                "/api/tournaments",
                json!({"name": "Thirty-two", "game": "trump",
                    "kind": {"type": "swiss", "rounds": ROUNDS}, "table_size": 2,
                    "options": {"target": 5}, "start_when": PLAYERS, "bots_allowed": true,
                    "pace": {"kind": "untimed"}}),
            )
            .await;
        assert_eq!(s, 201, "{t}");
        assert_eq!(t["status"], "registration");
        let tid = t["id"].as_str().unwrap().to_string();
        let mut bots = Vec::new();
        for i in 0..PLAYERS {
            bots.push(bot_account(&server, &format!("swissbot{i}")).await);
        }
        // A bot account may not join a tournament that does not allow bots.
        let (s, closed) = org
            .post(
                "/api/tournaments",
                json!({"game": "trump", "kind": {"type": "swiss", "rounds": 1},
                    "table_size": 2, "start_when": 2}),
            )
            .await;
        assert_eq!(s, 201, "{closed}");
        let (s, v) = bots[0]
            .post(
                &format!("/api/tournaments/{}/join", closed["id"].as_str().unwrap()),
                json!({}),
            )
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (403, Some("bots_not_allowed")),
            "{v}"
        );
        for b in &bots {
            let (s, v) = b
                .post(&format!("/api/tournaments/{tid}/join"), json!({}))
                .await;
            assert!(s == 200, "{v}");
        }
        let (s, v) = bots[0]
            .post(&format!("/api/tournaments/{tid}/join"), json!({}))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("already_joined")),
            "{v}"
        );

        let base = Arc::new(Mutex::new(server.base.clone()));
        let tasks: Vec<_> = bots
            .iter()
            .map(|b| tokio::spawn(play_tournament(b.clone(), base.clone(), tid.clone())))
            .collect();
        // Once the first round is over (and the second under way), restart.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
        loop {
            let (_, v) = org.get(&format!("/api/tournaments/{tid}")).await;
            if v["round"].as_u64().unwrap_or(0) >= 2 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "round 2 never came: {v}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        server.stop().await;
        let server = Server::start(&db).await;
        *base.lock().unwrap() = server.base.clone();
        let org = org.at(&server.base, &server.ws);
        for t in tasks {
            let played = t.await.unwrap();
            assert!(played.len() <= ROUNDS);
        }
        let (s, t) = org.get(&format!("/api/tournaments/{tid}")).await;
        assert_eq!(s, 200);
        check_standings(&org, &t, ROUNDS, PLAYERS).await;
        // Finished: no more joins or withdrawals.
        let (s, v) = bots[1]
            .at(&server.base, &server.ws)
            .post(&format!("/api/tournaments/{tid}/withdraw"), json!({}))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("tournament_over")),
            "{v}"
        );
        let (s, v) = org.get("/api/tournaments?status=finished").await;
        assert_eq!(s, 200);
        assert_eq!(v["tournaments"].as_array().unwrap().len(), 1, "{v}");
        // Rated: the games of bot accounts count in the game's bot pool.
        let (_, r) = org
            .get(&format!("/api/players/{}/ratings", bots[0].id))
            .await;
        assert!(
            r.as_array()
                .unwrap()
                .iter()
                .any(|x| x["game"] == "trump" && x["pool"] == "bots"),
            "{r}"
        );
        server.stop().await;
        eprintln!("{}: a Swiss of {PLAYERS} played with a restart", db.label);
    }
}

/// Recomputes an arena's points from its games' own results, in the order each player
/// played them: win 2, draw 1, loss 0, doubled after two wins in a row until a game that
/// is not a win. Checks each game's points and every player's total.
///
/// Returns the number of games counted and of those in which someone scored a streak's
/// double.
async fn check_arena(viewer: &Player, t: &Value) -> (usize, usize) {
    assert_eq!(t["status"], "finished", "{t}");
    let mut streak: HashMap<String, u32> = HashMap::new();
    let mut total: HashMap<String, f64> = HashMap::new();
    let mut counted = 0;
    let mut doubled = 0;
    for g in t["games"].as_array().unwrap() {
        if g["state"] != "finished" {
            assert_eq!(g["state"], "uncounted", "{g}");
            continue;
        }
        counted += 1;
        let table = g["table_id"].as_str().unwrap();
        let (s, info) = viewer.get(&format!("/api/tables/{table}")).await;
        assert_eq!(s, 200, "{info}");
        let result = duel_points(&info);
        let mut expected = Vec::new();
        let mut on_fire = false;
        for (seat, p) in g["players"].as_array().unwrap().iter().enumerate() {
            let p = p.as_str().unwrap().to_string();
            let s = streak.entry(p.clone()).or_default();
            let base = match result[seat] {
                1.0 => 2.0,
                0.5 => 1.0,
                _ => 0.0,
            };
            let pts = if *s >= 2 { base * 2.0 } else { base };
            if *s >= 2 && base > 0.0 {
                on_fire = true;
            }
            *s = if result[seat] == 1.0 { *s + 1 } else { 0 };
            *total.entry(p).or_default() += pts;
            expected.push(pts);
        }
        let shown: Vec<f64> = g["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(shown, expected, "the game's arena points: {g} {info}");
        doubled += usize::from(on_fire);
    }
    assert!(counted >= 3, "an arena plays several games: {t}");
    let mut previous = f64::INFINITY;
    for s in t["standings"].as_array().unwrap() {
        let id = s["player"].as_str().unwrap();
        let mine = total.get(id).copied().unwrap_or(0.0);
        assert_eq!(s["score"].as_f64().unwrap(), mine, "points of {id}: {s}");
        assert!(mine <= previous, "ranked by points first");
        previous = mine;
    }
    (counted, doubled)
}

/// How long the bots of the ten-minute arenas think before each move: a modest pace, so
/// that the two arenas (SQLite and Postgres, run at once) leave the CPU to the rest of the
/// suite and still play many games.
pub(crate) const ARENA_THINK_MS: u64 = 150;

/// A ten-minute arena of bot accounts (the test), played through the public API:
/// whoever is free is paired again at once; a lobby socket following it sees the
/// standings move, and a bot's lobby socket is told each game it is seated at; at the end
/// every game's points and every total are checked against a recomputation from the
/// games' own results, streak bonuses included.
pub(crate) async fn arena_of_bot_accounts_followed_on_the_lobby_socket(db: Db) {
    const PLAYERS: usize = 6;
    {
        let server = Server::start(&db).await;
        let org = organiser_at(&server.base, &server.ws).await;
        let (s, t) = org
            .post(
                "/api/tournaments",
                json!({"name": "Ten-minute arena", "game": "trump",
                    "kind": {"type": "arena", "duration_s": 600, "stop_pairing_before_s": 30},
                    "table_size": 2, "options": {"target": 5}, "start_when": PLAYERS,
                    "bots_allowed": true, "rated": false, "private": true,
                    "pace": {"kind": "untimed"}}),
            )
            .await;
        assert_eq!(s, 201, "{t}");
        let tid = t["id"].as_str().unwrap().to_string();
        let code = t["invite_code"]
            .as_str()
            .expect("the creator sees the code")
            .to_string();
        let mut bots = Vec::new();
        for i in 0..PLAYERS {
            bots.push(bot_account(&server, &format!("arenabot{i}")).await);
        }
        // Private: listed for nobody else, joined with its code only.
        let (_, list) = bots[0].get("/api/tournaments").await;
        assert_eq!(list["tournaments"], json!([]), "{list}");
        let (s, v) = bots[0].get(&format!("/api/tournaments/{tid}")).await;
        assert_eq!((s, v["code"].as_str()), (403, Some("invite_required")));
        let (s, v) = bots[0]
            .post(
                &format!("/api/tournaments/{tid}/join"),
                json!({"invite": "nope"}),
            )
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (403, Some("invite_required")),
            "{v}"
        );
        // A watcher follows it on the lobby socket (with the code).
        let mut watch = lobby(&org).await;
        watch
            .send(json!({"type": "tournament_follow", "id": tid, "invite": code}))
            .await;
        let first = lobby_until(&mut watch, "tournament").await;
        assert_eq!(first["tournament"]["status"], "registration", "{first}");
        // A bot's own lobby socket is told where it plays.
        let mut told = lobby(&bots[0]).await;
        for b in &bots {
            let (s, v) = b
                .post(
                    &format!("/api/tournaments/{tid}/join"),
                    json!({"invite": code}),
                )
                .await;
            assert_eq!(s, 200, "{v}");
            assert!(v["invite_code"].is_null(), "only the creator sees the code");
        }
        let game = lobby_until(&mut told, "tournament_game").await;
        assert_eq!(game["tournament"], json!(tid), "{game}");
        assert!(game["table"].is_string());
        let base = Arc::new(Mutex::new(server.base.clone()));
        let tasks: Vec<_> = bots
            .iter()
            .map(|b| {
                tokio::spawn(play_tournament_at(
                    b.clone(),
                    base.clone(),
                    tid.clone(),
                    ARENA_THINK_MS,
                ))
            })
            .collect();
        // The followed standings move: games get counted while it runs.
        let moved = tokio::time::timeout(Duration::from_secs(120), async {
            loop {
                let m = lobby_until(&mut watch, "tournament").await;
                let counted = m["tournament"]["games"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|g| g["state"] == "finished")
                    .count();
                if counted >= 1 {
                    return m;
                }
            }
        })
        .await
        .expect("the followed tournament counts a game");
        assert!(
            moved["tournament"]["standings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["score"].as_f64().unwrap() > 0.0),
            "{moved}"
        );
        for t in tasks {
            t.await.unwrap();
        }
        let (s, t) = org.get(&format!("/api/tournaments/{tid}")).await;
        assert_eq!(s, 200);
        let (counted, doubled) = check_arena(&org, &t).await;
        // Ten minutes at this pace: many games, and streaks that scored double.
        assert!(counted >= 40, "{}: only {counted} games counted", db.label);
        assert!(doubled >= 1, "{}: no game scored a streak bonus", db.label);
        assert_eq!(t["podium"].as_array().unwrap().len(), 3);
        // Unrated: the games changed no rating.
        let (_, r) = bots[0]
            .get(&format!("/api/players/{}/ratings", bots[0].id))
            .await;
        assert_eq!(r, json!([]), "{r}");
        server.stop().await;
        eprintln!(
            "{}: a ten-minute arena played: {counted} games, {doubled} on a streak",
            db.label
        );
    }
}

/// The director of a tournament and its epoch, as the database has them.
async fn director_of(db: &Db, tid: &str) -> (Option<String>, i64) {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::query_as("SELECT owner, lease_epoch FROM tournaments WHERE id = $1")
        .bind(tid)
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

/// Two nodes on one Postgres: one directs the tournament (its players play through
/// either node), never both; when the director is killed mid-tournament, the other takes
/// it over under a new epoch and plays it to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_one_director_and_failover() {
    const PLAYERS: usize = 8;
    const ROUNDS: usize = 3;
    let Some(db) = postgres_db().await else {
        return;
    };
    let mut nodes = vec![
        Child::start_as(&db, "t1", &[]).await,
        Child::start_as(&db, "t2", &[]).await,
    ];
    let org = organiser_at(&nodes[0].base, &nodes[0].ws).await;
    let (s, t) = org
        .post(
            "/api/tournaments",
            json!({"game": "trump", "kind": {"type": "swiss", "rounds": ROUNDS},
                "table_size": 2, "options": {"target": 5}, "start_when": PLAYERS,
                "bots_allowed": true, "pace": {"kind": "untimed"}}),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let mut bots = Vec::new();
    let mut bases = Vec::new();
    for i in 0..PLAYERS {
        let node = &nodes[i % 2];
        let b = bot_account_at(&node.base, &node.ws, &format!("nodebot{i}")).await;
        let (s, v) = b
            .post(&format!("/api/tournaments/{tid}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        bots.push(b);
        bases.push(Arc::new(Mutex::new(node.base.clone())));
    }
    let tasks: Vec<_> = bots
        .iter()
        .zip(&bases)
        .map(|(b, base)| tokio::spawn(play_tournament(b.clone(), base.clone(), tid.clone())))
        .collect();
    // One director throughout round 1, whichever node took it.
    let (director, epoch) = loop {
        if let (Some(d), e) = director_of(&db, &tid).await {
            break (d, e);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    loop {
        assert_eq!(
            director_of(&db, &tid).await,
            (Some(director.clone()), epoch),
            "one director, never handed over while it lives"
        );
        let (_, v) = org.get(&format!("/api/tournaments/{tid}")).await;
        if v["round"].as_u64().unwrap_or(0) >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "round 2 never came: {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Kill the director: the other node takes the tournament (and its tables) over.
    let (dead, alive) = if director == "t1" { (0, 1) } else { (1, 0) };
    nodes[dead].signal("-KILL");
    for base in &bases {
        *base.lock().unwrap() = nodes[alive].base.clone();
    }
    let org = org.at(&nodes[alive].base, &nodes[alive].ws);
    for t in tasks {
        t.await.unwrap();
    }
    let (owner, epoch2) = director_of(&db, &tid).await;
    assert_eq!(owner.as_deref(), Some(if alive == 0 { "t1" } else { "t2" }));
    assert!(epoch2 > epoch, "a new epoch: {epoch2} after {epoch}");
    let (s, t) = org.get(&format!("/api/tournaments/{tid}")).await;
    assert_eq!(s, 200);
    check_standings(&org, &t, ROUNDS, PLAYERS).await;
    let _ = nodes.remove(dead);
}

/// The operator's schedule (`--tournaments-file`): the next occurrence of each event is
/// created by the server itself, once, with no creator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_tournaments_are_created_once() {
    let db = sqlite_db();
    let file = scratch_dir("schedule").join("schedule.json");
    std::fs::write(
        &file,
        json!([{"key": "every-minute", "every_minutes": 1, "announce_minutes": 5,
            "tournament": {"name": "Blitz", "game": "trump",
                "kind": {"type": "swiss", "rounds": 2}, "table_size": 2}},
            {"key": "hourly", "every_minutes": 60, "announce_minutes": 60,
            "tournament": {"name": "Hourly", "game": "trump",
                "kind": {"type": "swiss", "rounds": 2}, "table_size": 2}}])
        .to_string(),
    )
    .unwrap();
    let server = Server::start_with(&db, |c| c.tournaments_file = Some(file.clone())).await;
    let p = Player::guest(&server.base, &server.ws, "Visitor").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let list = loop {
        let (s, v) = p.get("/api/tournaments?status=registration").await;
        assert_eq!(s, 200);
        let names: HashSet<&str> = v["tournaments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        if names.contains("Blitz") && names.contains("Hourly") {
            break v;
        }
        assert!(tokio::time::Instant::now() < deadline, "nothing scheduled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // Every status: an occurrence whose minute came meanwhile was cancelled (no players).
    let (_, again) = p.get("/api/tournaments").await;
    let named = |name: &str| {
        list["tournaments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let t = &named("Blitz");
    assert!(t["created_by"].is_null(), "{t}");
    let start = t["starts_at"].as_i64().unwrap();
    assert_eq!(start % 60_000, 0, "on the minute");
    // Once per occurrence (the next minute's may have come meanwhile).
    let same = again["tournaments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["starts_at"] == json!(start))
        .count();
    assert_eq!(same, 1, "{again}");
    server.stop().await;
    // The events taken out of the schedule: at the next start their occurrences still in
    // registration are cancelled (`unscheduled`), and no new one is made.
    std::fs::write(&file, "[]").unwrap();
    let at_restart = server_now_ms();
    let server = Server::start_with(&db, |c| c.tournaments_file = Some(file.clone())).await;
    let p = p.at(&server.base, &server.ws);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, v) = p.get("/api/tournaments?status=registration").await;
        if v["tournaments"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "not cancelled: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, all) = p.get("/api/tournaments").await;
    let all = all["tournaments"].as_array().unwrap();
    assert!(!all.is_empty());
    for t in all {
        assert_eq!(t["status"], "cancelled", "{t}");
        // One whose start time came before the restart was cancelled for want of players;
        // the one still to come, for its event's removal.
        let why = if t["starts_at"].as_i64().unwrap() > at_restart + 1000 {
            "unscheduled"
        } else {
            t["cancelled"].as_str().unwrap()
        };
        assert_eq!(t["cancelled"].as_str(), Some(why), "{t}");
    }
    let hourly = named("Hourly");
    assert_eq!(
        hourly["starts_at"].as_i64().unwrap() % 3_600_000,
        0,
        "on the hour"
    );
    if hourly["starts_at"].as_i64().unwrap() > at_restart + 1000 {
        let got = all.iter().find(|t| t["id"] == hourly["id"]).unwrap();
        assert_eq!(got["cancelled"], "unscheduled", "{got}");
    }
    server.stop().await;
}

/// A player who never comes to their games: at live pace a stand-in plays out their clock,
/// the game ends with their seat abandoned, and the tournament counts a forfeit; absent
/// from two rounds in a row, they are dropped, and a Swiss with too few active players
/// left ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absent_players_forfeit_and_are_dropped() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let org = organiser_at(&server.base, &server.ws).await;
    let (s, t) = org
        .post(
            "/api/tournaments",
            json!({"game": "trump", "kind": {"type": "swiss", "rounds": 3},
                "table_size": 2, "options": {"target": 5}, "start_when": 2,
                "bots_allowed": true, "pace": {"kind": "live", "move_s": 1, "bank_s": 0}}),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let here = bot_account(&server, "presentbot").await;
    let away = bot_account(&server, "absentbot").await;
    for b in [&here, &away] {
        let (s, v) = b
            .post(&format!("/api/tournaments/{tid}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
    }
    let base = Arc::new(Mutex::new(server.base.clone()));
    let played = tokio::time::timeout(
        Duration::from_secs(300),
        play_tournament(here.clone(), base, tid.clone()),
    )
    .await
    .expect("the tournament ends");
    assert_eq!(played.len(), 2, "two rounds, then the absentee is dropped");
    let (_, t) = org.get(&format!("/api/tournaments/{tid}")).await;
    assert_eq!(t["status"], "finished", "{t}");
    let of = |id: &str| {
        t["standings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["player"] == json!(id))
            .unwrap()
            .clone()
    };
    let (h, a) = (of(&here.id), of(&away.id));
    assert_eq!(
        (h["score"].as_f64(), h["wins"].as_u64()),
        (Some(2.0), Some(2)),
        "{h}"
    );
    assert_eq!(
        (a["score"].as_f64(), a["losses"].as_u64()),
        (Some(0.0), Some(2)),
        "{a}"
    );
    assert_eq!(a["status"], "dropped", "{a}");
    for g in t["games"].as_array().unwrap() {
        let (_, info) = org
            .get(&format!("/api/tables/{}", g["table_id"].as_str().unwrap()))
            .await;
        let seat = g["players"]
            .as_array()
            .unwrap()
            .iter()
            .position(|p| p == &json!(away.id))
            .unwrap();
        assert_eq!(info["seats"][seat]["abandoned"], true, "{info}");
    }
    server.stop().await;
}

/// The server binary killed (SIGKILL) mid-round on SQLite, and started again on the same
/// database: the tournament carries on from what was stored, no game lost or repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_server_carries_on_after_restart() {
    const PLAYERS: usize = 8;
    const ROUNDS: usize = 3;
    let db = sqlite_db();
    let node = Child::start(&db).await;
    let org = organiser_at(&node.base, &node.ws).await;
    let (s, t) = org
        .post(
            "/api/tournaments",
            json!({"game": "trump", "kind": {"type": "swiss", "rounds": ROUNDS},
                "table_size": 2, "options": {"target": 5}, "start_when": PLAYERS,
                "bots_allowed": true, "pace": {"kind": "untimed"}}),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let mut bots = Vec::new();
    for i in 0..PLAYERS {
        let b = bot_account_at(&node.base, &node.ws, &format!("killbot{i}")).await;
        let (s, v) = b
            .post(&format!("/api/tournaments/{tid}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        bots.push(b);
    }
    let base = Arc::new(Mutex::new(node.base.clone()));
    let tasks: Vec<_> = bots
        .iter()
        .map(|b| tokio::spawn(play_tournament(b.clone(), base.clone(), tid.clone())))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    loop {
        let (_, v) = org.get(&format!("/api/tournaments/{tid}")).await;
        if v["round"].as_u64().unwrap_or(0) >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "round 2 never came: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut node = node;
    node.child.kill().await.unwrap(); // SIGKILL, and waits for it
    let node = Child::start(&db).await;
    *base.lock().unwrap() = node.base.clone();
    let org = org.at(&node.base, &node.ws);
    for t in tasks {
        t.await.unwrap();
    }
    let (s, t) = org.get(&format!("/api/tournaments/{tid}")).await;
    assert_eq!(s, 200);
    check_standings(&org, &t, ROUNDS, PLAYERS).await;
}

/// Multi-player points of a finished table from its own result, per seat: each tablemate
/// is a mini-duel (1 for each one placed below, ½ for each level), places by (won, score).
fn table_points(table: &Value) -> Vec<f64> {
    let winners: Vec<u64> = table["winners"]
        .as_array()
        .map(|w| w.iter().map(|x| x.as_u64().unwrap()).collect())
        .unwrap_or_default();
    let scores: Vec<i64> = table["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    let key = |s: usize| (winners.contains(&(s as u64)), scores[s]);
    (0..scores.len())
        .map(|i| {
            (0..scores.len())
                .filter(|&j| j != i)
                .map(|j| match key(i).cmp(&key(j)) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                })
                .sum()
        })
        .collect()
}

/// A Swiss of Trump for three (7 bot accounts, 3 rounds): every round two full tables of
/// three and one bye, the byes to three different players; played through the public API;
/// every game's points, every total (a bye scores a win: 2), Buchholz and Sonneborn-Berger
/// (the multi-player forms: the tablemates' average per game) checked against a
/// recomputation from the games' own results, and the ranking by points, Buchholz, SB.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swiss_of_tables_of_three_with_byes() {
    const PLAYERS: usize = 7;
    const ROUNDS: usize = 3;
    const SIZE: usize = 3;
    for db in databases().await {
        let server = Server::start(&db).await;
        let org = organiser_at(&server.base, &server.ws).await;
        let (s, t) = org
            .post(
                "/api/tournaments",
                json!({"name": "Threes", "game": "trump",
                    "kind": {"type": "swiss", "rounds": ROUNDS}, "table_size": SIZE,
                    "options": {"target": 5}, "start_when": PLAYERS, "bots_allowed": true,
                    "pace": {"kind": "untimed"}}),
            )
            .await;
        assert_eq!(s, 201, "{t}");
        assert_eq!(
            (t["table_size"].as_u64(), t["min_table_size"].as_u64()),
            (Some(3), Some(3))
        );
        let tid = t["id"].as_str().unwrap().to_string();
        let mut bots = Vec::new();
        for i in 0..PLAYERS {
            let b = bot_account(&server, &format!("threebot{i}")).await;
            let (s, v) = b
                .post(&format!("/api/tournaments/{tid}/join"), json!({}))
                .await;
            assert_eq!(s, 200, "{v}");
            bots.push(b);
        }
        let base = Arc::new(Mutex::new(server.base.clone()));
        let tasks: Vec<_> = bots
            .iter()
            .map(|b| tokio::spawn(play_tournament(b.clone(), base.clone(), tid.clone())))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let (s, t) = org.get(&format!("/api/tournaments/{tid}")).await;
        assert_eq!(s, 200);
        assert_eq!(t["status"], "finished", "{t}");
        let games = t["games"].as_array().unwrap();
        assert_eq!(games.len(), ROUNDS * 2, "two tables a round: {t}");
        let mut points: HashMap<String, f64> = HashMap::new();
        // Per player and game: (tablemates, my mini-duel result against each).
        let mut played: HashMap<String, Vec<Vec<(String, f64)>>> = HashMap::new();
        let mut seated: HashMap<usize, HashSet<String>> = HashMap::new();
        for g in games {
            assert_eq!(g["state"], "finished", "{g}");
            let table = g["table_id"].as_str().unwrap();
            let (s, info) = org.get(&format!("/api/tables/{table}")).await;
            assert_eq!(s, 200, "{info}");
            assert_eq!(info["status"], "finished", "{info}");
            assert_eq!(info["seats"].as_array().unwrap().len(), SIZE, "{info}");
            let ps: Vec<String> = g["players"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect();
            assert_eq!(ps.len(), SIZE, "groups of the game's size: {g}");
            for (seat, p) in ps.iter().enumerate() {
                assert_eq!(info["seats"][seat]["id"], json!(p), "{info}");
                let round = g["round"].as_u64().unwrap() as usize;
                assert!(
                    seated.entry(round).or_default().insert(p.clone()),
                    "{p} seated twice in round {round}"
                );
            }
            let pts = table_points(&info);
            let shown: Vec<f64> = g["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(shown, pts, "the game's points: {g} {info}");
            let winners: Vec<u64> = info["winners"]
                .as_array()
                .map(|w| w.iter().map(|x| x.as_u64().unwrap()).collect())
                .unwrap_or_default();
            let key = |s: usize| {
                (
                    winners.contains(&(s as u64)),
                    info["scores"][s].as_i64().unwrap(),
                )
            };
            for i in 0..SIZE {
                *points.entry(ps[i].clone()).or_default() += pts[i];
                let mates = (0..SIZE)
                    .filter(|&j| j != i)
                    .map(|j| {
                        let r = match key(i).cmp(&key(j)) {
                            std::cmp::Ordering::Greater => 1.0,
                            std::cmp::Ordering::Equal => 0.5,
                            std::cmp::Ordering::Less => 0.0,
                        };
                        (ps[j].clone(), r)
                    })
                    .collect();
                played.entry(ps[i].clone()).or_default().push(mates);
            }
        }
        // One bye a round, never two for one player: a bye scores a win (2 points).
        let mut byes: HashMap<String, u32> = HashMap::new();
        for round in 1..=ROUNDS {
            let absent: Vec<String> = bots
                .iter()
                .map(|b| b.id.clone())
                .filter(|id| !seated[&round].contains(id))
                .collect();
            assert_eq!(absent.len(), 1, "one bye in round {round}: {absent:?}");
            *byes.entry(absent[0].clone()).or_default() += 1;
            *points.entry(absent[0].clone()).or_default() += (SIZE - 1) as f64;
        }
        assert_eq!(byes.len(), ROUNDS, "nobody gets a second bye: {byes:?}");
        let standings = t["standings"].as_array().unwrap();
        assert_eq!(standings.len(), PLAYERS);
        let mut previous: Option<(f64, f64, f64)> = None;
        for (i, st) in standings.iter().enumerate() {
            let id = st["player"].as_str().unwrap().to_string();
            assert_eq!(st["rank"], json!(i + 1));
            let mine = points.get(&id).copied().unwrap_or(0.0);
            assert_eq!(st["score"].as_f64().unwrap(), mine, "points of {id}: {st}");
            let bye = byes.get(&id).copied().unwrap_or(0);
            assert_eq!(st["byes"], json!(bye), "{st}");
            let games = played.get(&id).map_or(0, Vec::len);
            assert_eq!(games + bye as usize, ROUNDS, "{st}");
            assert_eq!(st["games"].as_u64().unwrap() as usize, games, "{st}");
            let mut buchholz = 0.0;
            let mut sb = 0.0;
            for mates in played.get(&id).into_iter().flatten() {
                let n = mates.len() as f64;
                buchholz += mates.iter().map(|(o, _)| points[o]).sum::<f64>() / n;
                sb += mates.iter().map(|(o, r)| r * points[o]).sum::<f64>() / n;
            }
            check_tie_breaks(st, &id, mine, buchholz, sb, &mut previous);
        }
        server.stop().await;
        eprintln!("{}: a Swiss of tables of three played", db.label);
    }
}

/// A correspondence-pace Swiss: its tables are created with correspondence clocks (a day a
/// move, no time bank), as the tournament asked, and it is played to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn correspondence_pace_reaches_the_tables() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let org = organiser_at(&server.base, &server.ws).await;
    let pace = json!({"kind": "correspondence", "move_s": 86400});
    let (s, t) = org
        .post(
            "/api/tournaments",
            json!({"game": "trump", "kind": {"type": "swiss", "rounds": 1}, "table_size": 2,
                "options": {"target": 5}, "start_when": 2, "bots_allowed": true,
                "pace": pace}),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    assert_eq!(t["pace"], pace, "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let a = bot_account(&server, "postbot0").await;
    let b = bot_account(&server, "postbot1").await;
    for p in [&a, &b] {
        let (s, v) = p
            .post(&format!("/api/tournaments/{tid}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
    }
    // Its table, before anyone moved: the tournament's pace, a clock per seat, no bank, and
    // the seat to act has (about) a day.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let table = loop {
        let (_, v) = org.get(&format!("/api/tournaments/{tid}")).await;
        if let Some(g) = v["games"].as_array().and_then(|g| g.first()) {
            let id = g["table_id"].as_str().unwrap().to_string();
            let (_, info) = org.get(&format!("/api/tables/{id}")).await;
            if info["status"] == "playing" && !info["to_act"].as_array().unwrap().is_empty() {
                break info;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no table: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(table["pace"], pace, "{table}");
    let clocks = table["clocks"].as_array().unwrap();
    assert_eq!(clocks.len(), 2, "{table}");
    for c in clocks {
        assert_eq!(c["bank_ms"], 0, "{table}");
    }
    let to_act = table["to_act"][0].as_u64().unwrap() as usize;
    let left = clocks[to_act]["left_ms"].as_u64().expect("its clock runs");
    assert!(
        (86_300_000..=86_400_000).contains(&left),
        "a day for the move: {left} ms"
    );
    let base = Arc::new(Mutex::new(server.base.clone()));
    let (pa, pb) = tokio::join!(
        play_tournament(a.clone(), base.clone(), tid.clone()),
        play_tournament(b.clone(), base.clone(), tid.clone())
    );
    assert_eq!((pa.len(), pb.len()), (1, 1));
    let (_, t) = org.get(&format!("/api/tournaments/{tid}")).await;
    assert_eq!(t["status"], "finished", "{t}");
    let total: f64 = t["standings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["score"].as_f64().unwrap())
        .sum();
    assert_eq!(total, 1.0, "one duel counted: {t}");
    server.stop().await;
}

/// Creation limits and cancelling: a guest creates nothing; one player has at most 3
/// tournaments in registration or running; the creator (only) cancels one that has not
/// started, and its followers see it; a started one is no longer cancelled; a tournament
/// whose start time comes with too few players is cancelled by the server. Refusals change
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_and_creation_limits() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let org = organiser_at(&server.base, &server.ws).await;
        let other = claimed_at(&server.base, &server.ws, "other").await;
        let swiss = |when: u32| {
            json!({"game": "trump", "kind": {"type": "swiss", "rounds": 1}, "table_size": 2,
                "options": {"target": 5}, "start_when": when, "pace": {"kind": "untimed"}})
        };
        let guest = Player::guest(&server.base, &server.ws, "Guest").await;
        let (s, v) = guest.post("/api/tournaments", swiss(4)).await;
        assert_eq!((s, v["code"].as_str()), (403, Some("not_claimed")), "{v}");
        let mut ids = Vec::new();
        for when in [4, 2, 4] {
            let (s, t) = org.post("/api/tournaments", swiss(when)).await;
            assert_eq!(s, 201, "{t}");
            ids.push(t["id"].as_str().unwrap().to_string());
        }
        let (s, v) = org.post("/api/tournaments", swiss(4)).await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("too_many_tournaments")),
            "{v}"
        );
        assert!(v["message"].as_str().unwrap().contains('3'), "{v}");
        let (_, list) = org.get("/api/tournaments").await;
        assert_eq!(list["tournaments"].as_array().unwrap().len(), 3, "{list}");

        // Only the creator cancels.
        let a = &ids[0];
        let (s, v) = other
            .post(&format!("/api/tournaments/{a}/cancel"), json!({}))
            .await;
        assert_eq!((s, v["code"].as_str()), (403, Some("not_creator")), "{v}");
        let (s, v) = org
            .post(
                "/api/tournaments/00000000-0000-0000-0000-000000000000/cancel",
                json!({}),
            )
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (404, Some("tournament_not_found")),
            "{v}"
        );
        let (_, v) = org.get(&format!("/api/tournaments/{a}")).await;
        assert_eq!(v["status"], "registration", "{v}");
        // A follower on the lobby socket sees it cancelled.
        let mut watch = lobby(&other).await;
        watch
            .send(json!({"type": "tournament_follow", "id": a}))
            .await;
        let first = lobby_until(&mut watch, "tournament").await;
        assert_eq!(first["tournament"]["status"], "registration", "{first}");
        let (s, v) = org
            .post(&format!("/api/tournaments/{a}/cancel"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(
            (v["status"].as_str(), v["cancelled"].as_str()),
            (Some("cancelled"), Some("creator"))
        );
        let seen = lobby_until(&mut watch, "tournament").await;
        assert_eq!(seen["tournament"]["status"], "cancelled", "{seen}");
        assert_eq!(seen["tournament"]["cancelled"], "creator", "{seen}");
        // Nothing more happens in it.
        let (s, v) = org
            .post(&format!("/api/tournaments/{a}/cancel"), json!({}))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("tournament_cancelled")),
            "{v}"
        );
        let (s, v) = other
            .post(&format!("/api/tournaments/{a}/join"), json!({}))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("tournament_cancelled")),
            "{v}"
        );
        let (_, v) = org.get(&format!("/api/tournaments/{a}")).await;
        assert_eq!(v["players"], 0, "{v}");
        let (_, c) = org.get("/api/tournaments?status=cancelled").await;
        let c: Vec<&Value> = c["tournaments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["id"])
            .collect();
        assert_eq!(c, vec![&json!(a)]);
        let (_, r) = org.get("/api/tournaments?status=registration").await;
        assert_eq!(r["tournaments"].as_array().unwrap().len(), 2, "{r}");
        let (_, f) = org.get("/api/tournaments?status=finished").await;
        assert_eq!(
            f["tournaments"],
            json!([]),
            "a cancelled one is not finished: {f}"
        );
        // The cancelled one no longer counts: a fourth may be created.
        let (s, v) = org.post("/api/tournaments", swiss(4)).await;
        assert_eq!(s, 201, "{v}");

        // A started one is not cancelled.
        let b = &ids[1];
        for p in [&other, &guest] {
            let (s, v) = p
                .post(&format!("/api/tournaments/{b}/join"), json!({}))
                .await;
            assert_eq!(s, 200, "{v}");
        }
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let (_, v) = org.get(&format!("/api/tournaments/{b}")).await;
            if v["status"] == "running" {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "never started: {v}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (s, v) = org
            .post(&format!("/api/tournaments/{b}/cancel"), json!({}))
            .await;
        assert_eq!(
            (s, v["code"].as_str()),
            (409, Some("already_started")),
            "{v}"
        );
        let (_, v) = org.get(&format!("/api/tournaments/{b}")).await;
        assert_eq!(v["status"], "running", "{v}");

        // Its start time comes with one player: the server cancels it.
        let starts = server_now_ms() + 1500;
        let (s, t) = other
            .post(
                "/api/tournaments",
                json!({"game": "trump", "kind": {"type": "swiss", "rounds": 1},
                    "table_size": 2, "starts_at": starts}),
            )
            .await;
        assert_eq!(s, 201, "{t}");
        let e = t["id"].as_str().unwrap().to_string();
        let (s, v) = other
            .post(&format!("/api/tournaments/{e}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let (_, v) = other.get(&format!("/api/tournaments/{e}")).await;
            if v["status"] != "registration" {
                assert_eq!(
                    (v["status"].as_str(), v["cancelled"].as_str()),
                    (Some("cancelled"), Some("too_few_players")),
                    "{v}"
                );
                assert!(server_now_ms() >= starts, "not before its time");
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "still waiting: {v}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server.stop().await;
        eprintln!("{}: cancelling and creation limits", db.label);
    }
}

/// This machine's clock in Unix ms (the server's: they share it).
fn server_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Two nodes on one Postgres: the players' lobby sockets are on the node that does not
/// direct the tournament, and follow nothing; each is told `tournament_game` (its table
/// and seat) when the director seats it, through the database's notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tournament_game_reaches_lobby_sockets_on_every_node() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let nodes = [
        Child::start_as(&db, "g1", &[]).await,
        Child::start_as(&db, "g2", &[]).await,
    ];
    let org = organiser_at(&nodes[0].base, &nodes[0].ws).await;
    let (s, t) = org
        .post(
            "/api/tournaments",
            json!({"game": "trump", "kind": {"type": "swiss", "rounds": 1},
                "table_size": 2, "options": {"target": 5}, "start_when": 2,
                "bots_allowed": true, "pace": {"kind": "untimed"}}),
        )
        .await;
    assert_eq!(s, 201, "{t}");
    let tid = t["id"].as_str().unwrap().to_string();
    let director = loop {
        if let (Some(d), _) = director_of(&db, &tid).await {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let away = &nodes[if director == "g1" { 1 } else { 0 }];
    let mut bots = Vec::new();
    let mut socks = Vec::new();
    for i in 0..2 {
        let b = bot_account_at(&away.base, &away.ws, &format!("pushbot{i}")).await;
        socks.push(lobby(&b).await);
        bots.push(b);
    }
    // The sockets are registered before the join that starts it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for b in &bots {
        let (s, v) = b
            .post(&format!("/api/tournaments/{tid}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
    }
    let mut tables = Vec::new();
    for (i, sock) in socks.iter_mut().enumerate() {
        let m = lobby_until(sock, "tournament_game").await;
        assert_eq!(m["tournament"], json!(tid), "{m}");
        let table = m["table"].as_str().unwrap().to_string();
        let (_, info) = bots[i].get(&format!("/api/tables/{table}")).await;
        let seat = m["seat"].as_u64().unwrap() as usize;
        assert_eq!(info["seats"][seat]["id"], json!(bots[i].id), "{info}");
        tables.push(table);
    }
    assert_eq!(tables[0], tables[1], "one table for the two");
    assert_eq!(
        director_of(&db, &tid).await.0.as_deref(),
        Some(director.as_str())
    );
}
