//! Bot accounts and the API for programs (#31), end to end: making a bot account (only a
//! new claimed account; irreversible), its API token (works as a bearer, revocable), the
//! flags that mark it (account, profile, seats, leaderboard), the socket limits (a bot at
//! full speed is not refused, a flood from one is), lobby challenges between two sockets
//! and against a house bot, unrated challenges, and the example bot (`examples/bot`) playing every game
//! against house bots, rated in the bot pool only.

use serde_json::{Value, json};

use crate::support::*;

/// A new guest that claimed an account `name` (password fixed).
async fn claimed(server: &Server, name: &str) -> Player {
    let p = Player::guest(&server.base, &server.ws, name).await;
    let (s, v) = p
        .post(
            "/api/account/claim",
            json!({"username": name, "password": "correct horse battery"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    p
}

/// A bot account `name` and a fresh API token for it: the player as seen through that
/// token, and the token's id.
async fn bot_account(server: &Server, name: &str) -> (Player, String) {
    let owner = claimed(server, name).await;
    let (s, v) = owner.post("/api/account/bot", json!({})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["bot"], true, "{v}");
    let (s, v) = owner.post("/api/account/bot/token", json!({})).await;
    assert_eq!(s, 201, "{v}");
    let mut bot = owner.clone();
    bot.token = v["token"].as_str().unwrap().to_string();
    (bot, v["id"].as_str().unwrap().to_string())
}

async fn delete(p: &Player, path: &str) -> u16 {
    p.http
        .delete(format!("{}{path}", p.base))
        .bearer_auth(&p.token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bot_accounts_tokens_and_flags() {
    for db in databases().await {
        let server = Server::start(&db).await;
        // A guest cannot; an account that played cannot; refusals change nothing.
        let guest = Player::guest(&server.base, &server.ws, "Guest").await;
        let (s, v) = guest.post("/api/account/bot", json!({})).await;
        assert_eq!((s, v["code"].as_str()), (409, Some("not_claimed")), "{v}");
        let ada = claimed(&server, "ada").await;
        ada.create_trump(2, false).await;
        let (s, v) = ada.post("/api/account/bot", json!({})).await;
        assert_eq!((s, v["code"].as_str()), (409, Some("has_played")), "{v}");
        let (_, v) = ada.get("/api/account").await;
        assert!(v.get("bot").is_none(), "{v}");
        let (s, v) = ada.post("/api/account/bot/token", json!({})).await;
        assert_eq!((s, v["code"].as_str()), (409, Some("not_a_bot")), "{v}");

        let (robo, token_id) = bot_account(&server, "robo").await;
        // Irreversible, and only once.
        let (s, v) = robo.post("/api/account/bot", json!({})).await;
        assert_eq!((s, v["code"].as_str()), (409, Some("already_bot")), "{v}");
        // The token is a bearer like any session, and the account says it is a bot.
        let (s, v) = robo.get("/api/account").await;
        assert_eq!((s, &v["bot"]), (200, &json!(true)), "{v}");
        let (_, v) = robo.get(&format!("/api/players/{}", robo.id)).await;
        assert_eq!(v["bot"], true, "{v}");
        let (_, v) = ada.get(&format!("/api/players/{}", ada.id)).await;
        assert!(v.get("bot").is_none(), "{v}");
        let (_, devices) = robo.get("/api/account/devices").await;
        assert!(
            devices
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["id"] == token_id && d["label"] == "bot API token"),
            "{devices}"
        );
        // Its seat is marked in the table's info and its state document.
        let table = robo.create_trump(2, true).await;
        let (_, info) = robo.get(&format!("/api/tables/{table}")).await;
        assert_eq!(info["seats"][0]["bot_account"], true, "{info}");
        let mut sock = robo.connect(&table).await;
        let st = sock.next_state().await;
        assert_eq!(st["table"]["seats"][0]["bot_account"], true, "{st}");
        drop(sock);
        // The match lists carry each opponent seat's flag: Ada sees the bot account, the
        // bot account sees a person (no flag), and a house bot by its level.
        let duel = robo.create_trump(2, false).await;
        let (s, v) = ada
            .post(&format!("/api/tables/{duel}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let row = |rows: &Value, table: &str| {
            rows.as_array()
                .unwrap()
                .iter()
                .find(|r| r["table_id"] == table)
                .cloned()
                .unwrap_or_else(|| panic!("no row of {table} in {rows}"))
        };
        let (_, rows) = ada.get("/api/me/matches").await;
        assert_eq!(
            row(&rows, &duel)["opponents"],
            json!([{"kind": "player", "seat": 0, "id": robo.id, "name": "robo", "bot_account": true}]),
            "{rows}"
        );
        let (s, v) = robo
            .post(
                &format!("/api/tables/{table}/bots"),
                json!({"seat": 1, "level": "easy"}),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        let (_, rows) = robo.get("/api/me/matches").await;
        let opp = &row(&rows, &duel)["opponents"][0];
        assert_eq!(opp["id"], ada.id.as_str(), "{rows}");
        assert!(opp.get("bot_account").is_none(), "{rows}");
        assert_eq!(
            row(&rows, &table)["opponents"],
            json!([{"kind": "bot", "seat": 1, "level": "easy"}]),
            "{rows}"
        );
        // Revoked: the token stops working at once; an unknown id is refused.
        assert_eq!(
            delete(&robo, &format!("/api/account/bot/token/{}", "0".repeat(32))).await,
            404
        );
        assert_eq!(
            delete(&robo, &format!("/api/account/bot/token/{token_id}")).await,
            204
        );
        let (s, _) = robo.get("/api/account").await;
        assert_eq!(s, 401);
        server.stop().await;
    }
}

/// Two bot accounts answering every state at once play a whole match far beyond the
/// people's socket rate (2 a second here) without one `rate_limited`; a flood of junk from
/// a bot is still refused past its own allowance (20 a second here, bursts of 40).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_play_at_full_speed_but_cannot_flood() {
    let db = sqlite_db();
    let server = Server::start_with(&db, |c| {
        c.ws_messages_per_second = 2;
        c.bot_ws_messages_per_second = 20;
    })
    .await;
    let (one, _) = bot_account(&server, "robo1").await;
    let (two, _) = bot_account(&server, "robo2").await;
    let (s, v) = one
        .post(
            "/api/tables",
            json!({"game": "trump", "seats": 2, "options": {"target": 8}}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let (s, v) = two
        .post(&format!("/api/tables/{table}/join"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = one
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let run = |p: Player, table: String| async move {
        let cfg = example_bot::Config {
            server: p.base.clone(),
            token: p.token.clone(),
            challenge: None,
            game: "trump".into(),
            seats: None,
            options: Value::Null,
            matches: 1,
            delay_ms: 0,
            match_timeout: std::time::Duration::from_secs(120),
        };
        example_bot::play_table(&cfg, &table).await
    };
    let (a, b) = tokio::join!(run(one.clone(), table.clone()), run(two, table.clone()));
    let (a, b) = (a.unwrap(), b.unwrap());
    // Refusals of the race between two seats (`stale_version`) may happen; the limit
    // never refuses a bot's message here.
    assert_eq!(
        a.rate_limited, 0,
        "no message of a bot was rate-limited: {a:?}"
    );
    assert_eq!(b.rate_limited, 0, "{b:?}");
    assert!(a.moves + b.moves >= 10, "a whole match: {a:?} {b:?}");
    let info = wait_finished(&one, &table).await;
    assert_eq!(info["status"], "finished");

    let mut sock = one.connect(&table).await;
    sock.next_state().await;
    for _ in 0..200 {
        sock.send_raw("{\"type\":\"nonsense\"}").await;
    }
    let (mut malformed, mut limited) = (0, 0);
    while malformed + limited < 200 {
        let m = sock.next().await;
        match m["code"].as_str() {
            Some("rate_limited") => limited += 1,
            Some(_) => malformed += 1,
            None => {}
        }
    }
    assert!(
        limited >= 100 && malformed <= 60,
        "a flood past the bots' burst is cut off: {malformed} answered, {limited} refused"
    );
    server.stop().await;
}

/// Lobby challenges between two sockets: every refusal with its code, decline, cancel,
/// accept (both told the table, which is started with both seated), a socket that goes
/// away, expiry, and a house bot (accepted at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_challenges() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| c.challenge_expiry_s = 1).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let mut a = lobby(&ada).await;
        let mut b = lobby(&bob).await;
        lobby_until(&mut a, "tables").await;
        lobby_until(&mut b, "tables").await;
        let challenge = |to: &str, extra: Value| {
            let mut m =
                json!({"type": "challenge", "to": to, "game": "trump", "options": {"target": 8}});
            for (k, v) in extra.as_object().unwrap() {
                m[k] = v.clone();
            }
            m
        };
        let refusals = [
            (challenge(&ada.id, json!({})), "self_challenge"),
            (
                challenge(&uuid::Uuid::new_v4().to_string(), json!({})),
                "unknown_player",
            ),
            (challenge("house:grandmaster", json!({})), "unknown_player"),
            (challenge("nobody", json!({})), "unknown_player"),
            (challenge(&bob.id, json!({"game": "chess"})), "unknown_game"),
            (challenge(&bob.id, json!({"seats": 9})), "bad_player_count"),
            (
                challenge(&bob.id, json!({"options": {"target": "high"}})),
                "bad_options",
            ),
            (
                challenge(
                    &bob.id,
                    json!({"pace": {"kind": "live", "move_s": 0, "bank_s": 0}}),
                ),
                "bad_pace",
            ),
            (
                json!({"type": "challenge_accept", "id": "nope"}),
                "challenge_not_found",
            ),
            (
                json!({"type": "challenge_cancel", "id": "nope"}),
                "challenge_not_found",
            ),
        ];
        for (msg, code) in refusals {
            a.send(msg.clone()).await;
            let e = lobby_until(&mut a, "error").await;
            assert_eq!(e["code"], code, "{msg} → {e}");
        }

        // Declined.
        a.send(challenge(&bob.id, json!({}))).await;
        let sent = lobby_until(&mut a, "challenge_sent").await;
        let id = sent["challenge"]["id"].as_str().unwrap().to_string();
        let got = lobby_until(&mut b, "challenge_received").await;
        assert_eq!(got["challenge"]["id"], id.as_str());
        assert_eq!(got["challenge"]["from"]["id"], ada.id.as_str());
        // Not Ada's to accept, nor Bob's to cancel.
        a.send(json!({"type": "challenge_accept", "id": id})).await;
        assert_eq!(
            lobby_until(&mut a, "error").await["code"],
            "not_your_challenge"
        );
        b.send(json!({"type": "challenge_cancel", "id": id})).await;
        assert_eq!(
            lobby_until(&mut b, "error").await["code"],
            "not_your_challenge"
        );
        b.send(json!({"type": "challenge_decline", "id": id})).await;
        let ended = lobby_until(&mut b, "challenge_ended").await;
        assert_eq!(ended["reason"], "declined");
        let ended = lobby_until(&mut a, "challenge_ended").await;
        assert_eq!(
            (&ended["id"], &ended["reason"]),
            (&json!(id), &json!("declined"))
        );

        // Cancelled; then too late to accept.
        a.send(challenge(&bob.id, json!({}))).await;
        let id = lobby_until(&mut a, "challenge_sent").await["challenge"]["id"].clone();
        lobby_until(&mut b, "challenge_received").await;
        a.send(json!({"type": "challenge_cancel", "id": id})).await;
        assert_eq!(
            lobby_until(&mut a, "challenge_ended").await["reason"],
            "cancelled"
        );
        assert_eq!(
            lobby_until(&mut b, "challenge_ended").await["reason"],
            "cancelled"
        );
        b.send(json!({"type": "challenge_accept", "id": id})).await;
        assert_eq!(
            lobby_until(&mut b, "error").await["code"],
            "challenge_not_found"
        );

        // Expired (1 s here).
        a.send(challenge(&bob.id, json!({}))).await;
        lobby_until(&mut a, "challenge_sent").await;
        lobby_until(&mut b, "challenge_received").await;
        assert_eq!(
            lobby_until(&mut a, "challenge_ended").await["reason"],
            "expired"
        );
        assert_eq!(
            lobby_until(&mut b, "challenge_ended").await["reason"],
            "expired"
        );

        // Accepted: both are told the table, started with both seated.
        a.send(challenge(&bob.id, json!({}))).await;
        lobby_until(&mut a, "challenge_sent").await;
        let id = lobby_until(&mut b, "challenge_received").await["challenge"]["id"].clone();
        b.send(json!({"type": "challenge_accept", "id": id})).await;
        let bs = lobby_until(&mut b, "challenge_started").await;
        let as_ = lobby_until(&mut a, "challenge_started").await;
        assert_eq!(as_["table"], bs["table"]);
        assert_eq!(
            (as_["seat"].as_u64(), bs["seat"].as_u64()),
            (Some(0), Some(1))
        );
        let table = bs["table"].as_str().unwrap();
        let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(info["status"], "playing", "{info}");
        assert_eq!(info["seats"][0]["id"], ada.id.as_str());
        assert_eq!(info["seats"][1]["id"], bob.id.as_str());
        assert_eq!(info["options"]["target"], 8);

        // The challenged side's socket goes away: the challenger is told.
        a.send(challenge(&bob.id, json!({}))).await;
        lobby_until(&mut a, "challenge_sent").await;
        lobby_until(&mut b, "challenge_received").await;
        drop(b);
        assert_eq!(
            lobby_until(&mut a, "challenge_ended").await["reason"],
            "gone"
        );
        // And nobody is there now.
        a.send(challenge(&bob.id, json!({}))).await;
        assert_eq!(lobby_until(&mut a, "error").await["code"], "player_offline");

        // A house bot accepts at once.
        a.send(challenge("house:easy", json!({}))).await;
        let started = lobby_until(&mut a, "challenge_started").await;
        let table = started["table"].as_str().unwrap();
        let (_, info) = ada.get(&format!("/api/tables/{table}")).await;
        assert_eq!(info["status"], "playing", "{info}");
        assert_eq!(info["seats"][1]["kind"], "bot", "{info}");
        assert_eq!(info["seats"][1]["level"], "easy", "{info}");
        server.stop().await;
    }
}

/// The example bot (`examples/bot`, through its library) plays short matches of every
/// game against house bots, challenging them over the lobby socket with its API token;
/// each finishes, and each is rated in the bot pool only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_bot_plays_every_game_rated_in_the_bot_pool() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (robo, _) = bot_account(&server, "robo").await;
        let short = [
            ("trump", None, json!({"target": 8})),
            ("nachos", None, Value::Null),
            ("fibfib", None, Value::Null),
            (
                "rummy",
                Some(2),
                json!({"target": 8, "match_length": {"kind": "rounds", "count": 1}}),
            ),
            (
                "rummy",
                Some(1),
                json!({"target": 8, "match_length": {"kind": "rounds", "count": 1}}),
            ),
        ];
        let mut all = Vec::new();
        for (game, seats, options) in short {
            let cfg = example_bot::Config {
                server: server.base.clone(),
                token: robo.token.clone(),
                challenge: Some("house:easy".into()),
                game: game.into(),
                seats,
                options,
                matches: if game == "trump" { 3 } else { 1 },
                delay_ms: 0,
                match_timeout: std::time::Duration::from_secs(180),
            };
            let report = example_bot::run(cfg)
                .await
                .unwrap_or_else(|e| panic!("{game}: {e}"));
            assert!(!report.finished.is_empty(), "{game}");
            for t in &report.finished {
                let info = wait_finished(&robo, t).await;
                assert_eq!(info["status"], "finished", "{game}: {info}");
            }
            all.extend(report.finished);
        }
        assert_eq!(all.len(), 7);
        // Rated in the bot pool of each game played against a house bot, nowhere else.
        let (_, ratings) = robo.get(&format!("/api/players/{}/ratings", robo.id)).await;
        let ratings = ratings.as_array().unwrap();
        assert!(!ratings.is_empty());
        assert!(ratings.iter().all(|r| r["pool"] == "bots"), "{ratings:?}");
        let trump = ratings.iter().find(|r| r["game"] == "trump").unwrap();
        assert_eq!(trump["matches"], 3, "{trump}");
        let (_, board) = robo.get("/api/leaderboard/trump?pool=bots").await;
        assert_eq!(
            board["rows"][0]["player"]["id"],
            robo.id.as_str(),
            "{board}"
        );
        assert_eq!(board["rows"][0]["bot_account"], true, "{board}");
        for pool in ["duel", "multi"] {
            let (_, board) = robo
                .get(&format!("/api/leaderboard/trump?pool={pool}"))
                .await;
            assert_eq!(board["total"], 0, "{pool}: {board}");
        }
        server.stop().await;
    }
}

/// Challenges the easy house bot to a short Trump match over `sock`, `rated` or not, and
/// plays it out with the example bot: the finished table.
async fn play_house(robo: &Player, sock: &mut Sock, rated: bool) -> Value {
    sock.send(
        json!({"type": "challenge", "to": "house:easy", "game": "trump",
        "options": {"target": 5}, "rated": rated}),
    )
    .await;
    let started = lobby_until(sock, "challenge_started").await;
    let table = started["table"].as_str().unwrap().to_string();
    let cfg = example_bot::Config {
        server: robo.base.clone(),
        token: robo.token.clone(),
        challenge: None,
        game: "trump".into(),
        seats: None,
        options: Value::Null,
        matches: 1,
        delay_ms: 0,
        match_timeout: std::time::Duration::from_secs(180),
    };
    example_bot::play_table(&cfg, &table)
        .await
        .unwrap_or_else(|e| panic!("{table}: {e}"));
    wait_finished(robo, &table).await
}

/// An unrated challenge (`rated: false`) makes a table like any other, played to the end,
/// whose result changes no rating; the same challenge rated is rated (in the bot pool of
/// a bot account), so the check can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unrated_challenges_change_no_rating() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (robo, _) = bot_account(&server, "robo").await;
        let mut sock = lobby(&robo).await;
        lobby_until(&mut sock, "tables").await;
        let ratings = |robo: Player| async move {
            let (s, r) = robo.get(&format!("/api/players/{}/ratings", robo.id)).await;
            assert_eq!(s, 200, "{r}");
            r
        };
        let unrated = play_house(&robo, &mut sock, false).await;
        assert_eq!(unrated["status"], "finished", "{unrated}");
        assert_eq!(ratings(robo.clone()).await, json!([]), "an unrated match");
        let (_, board) = robo.get("/api/leaderboard/trump?pool=bots").await;
        assert_eq!(board["total"], 0, "{board}");
        play_house(&robo, &mut sock, true).await;
        let r = ratings(robo.clone()).await;
        let trump: Vec<&Value> = r
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["game"] == "trump" && x["pool"] == "bots")
            .collect();
        assert_eq!(trump.len(), 1, "{r}");
        assert_eq!(trump[0]["matches"], 1, "only the rated match counts: {r}");
        server.stop().await;
    }
}

/// Every lobby socket of the challenged player shows a challenge, and every one learns its
/// answer: when one declines or accepts, the others get `challenge_ended` (a black-box walk
/// found them still showing a challenge that was over).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenges_answer_reaches_every_socket_of_the_challenged() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let mut a = lobby(&ada).await;
    let mut b1 = lobby(&bob).await;
    let mut b2 = lobby(&bob).await;
    for s in [&mut a, &mut b1, &mut b2] {
        lobby_until(s, "tables").await;
    }
    let challenge = json!({"type": "challenge", "to": bob.id, "game": "trump"});
    for (answer, reason) in [
        ("challenge_decline", "declined"),
        ("challenge_accept", "accepted"),
    ] {
        a.send(challenge.clone()).await;
        lobby_until(&mut a, "challenge_sent").await;
        let id = lobby_until(&mut b1, "challenge_received").await["challenge"]["id"].clone();
        assert_eq!(
            lobby_until(&mut b2, "challenge_received").await["challenge"]["id"],
            id
        );
        b1.send(json!({"type": answer, "id": id})).await;
        let other = lobby_until(&mut b2, "challenge_ended").await;
        assert_eq!(
            (&other["id"], other["reason"].as_str()),
            (&id, Some(reason)),
            "{other}"
        );
        let expected = if reason == "declined" {
            "challenge_ended"
        } else {
            "challenge_started"
        };
        assert_eq!(lobby_until(&mut b1, expected).await["id"], id);
    }
    server.stop().await;
}
