//! Table chat, reactions, mutes and the lobby's chat, end to end on every database: the
//! limits and their refusals, spectators' lines hidden from the players until the match is
//! over (no coaching), mutes that hold everywhere, and table chat that survives a restart.

use serde_json::{Value, json};

use crate::support::*;

/// The next chat message (`chat`, `chat_history`, `muted`) or error, skipping states and
/// patches.
async fn next_chat(sock: &mut Sock) -> Value {
    loop {
        let m = sock.next_any().await;
        if matches!(
            m["type"].as_str(),
            Some("chat" | "chat_history" | "muted" | "error")
        ) {
            return m;
        }
    }
}

/// The next chat message, which must be of `kind`.
async fn expect(sock: &mut Sock, kind: &str) -> Value {
    let m = next_chat(sock).await;
    assert_eq!(m["type"], kind, "{m}");
    m
}

/// The next message must be the refusal `code`.
async fn refused(sock: &mut Sock, code: &str) -> Value {
    let m = expect(sock, "error").await;
    assert_eq!(m["code"], code, "{m}");
    m
}

async fn say(sock: &mut Sock, text: &str) {
    sock.send(json!({"type": "chat", "text": text})).await;
}

/// The texts of a history's lines, in order (reactions as `:emote:`).
fn texts(history: &Value) -> Vec<String> {
    history["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| match l["kind"].as_str() {
            Some("text") => l["text"].as_str().unwrap().to_string(),
            _ => format!(":{}:", l["emote"].as_str().unwrap()),
        })
        .collect()
}

/// Nothing more arrives on `sock` for a moment (chat or anything else).
async fn quiet(sock: &mut Sock) {
    let more = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        futures_util::StreamExt::next(&mut sock.ws),
    )
    .await;
    assert!(more.is_err(), "unexpected message: {more:?}");
}

/// Two players chat at their table: lines and reactions reach both (the table's version
/// does not move), bad texts, anonymous senders and floods get specific refusals, a new
/// connection gets the history, and the history is still there after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_chat_within_limits_and_it_survives_a_restart() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (ada, bob, table) = ada_and_bob_at_trump(&server.base, &server.ws).await;
        let mut a = ada.connect(&table).await;
        let version = a.next_state().await["version"].as_u64().unwrap();
        assert_eq!(
            texts(&expect(&mut a, "chat_history").await),
            Vec::<String>::new()
        );
        let mut b = bob.connect(&table).await;
        b.next_state().await;
        expect(&mut b, "chat_history").await;
        // Bob's arrival is a presence change Ada sees as a patch.
        let version = a.until(|s| s["version"].as_u64().unwrap() > version).await["version"]
            .as_u64()
            .unwrap();

        say(&mut a, "  hello Bob  ").await;
        for sock in [&mut a, &mut b] {
            let m = expect(sock, "chat").await;
            let line = &m["line"];
            assert_eq!(line["seq"], 1);
            assert_eq!(line["text"], "hello Bob", "trimmed");
            assert_eq!(line["kind"], "text");
            assert_eq!(line["name"], "Ada");
            assert_eq!(line["player"], ada.id.as_str());
            assert_eq!(line["spectator"], false);
            assert!(line["at"].as_i64().unwrap() > 0);
        }
        b.send(json!({"type": "react", "emote": "gg"})).await;
        for sock in [&mut a, &mut b] {
            let line = expect(sock, "chat").await["line"].clone();
            assert_eq!(
                (line["seq"].as_u64(), &line["kind"]),
                (Some(2), &json!("emote"))
            );
            assert_eq!(line["emote"], "gg");
            assert_eq!(line["name"], "Bob");
        }
        // Chat is no change of the table: no patch came, and the version is the same.
        a.send(json!({"type": "sync"})).await;
        let st = a.next_state().await;
        assert_eq!(st["version"].as_u64().unwrap(), version);

        // Bad input: a specific refusal each, and nothing is said.
        say(&mut a, "   ").await;
        refused(&mut a, "chat_empty").await;
        say(&mut a, &"x".repeat(protocol::MAX_CHAT_CHARS + 1)).await;
        let m = refused(&mut a, "chat_too_long").await;
        assert!(m["message"].as_str().unwrap().contains("300"), "{m}");
        say(&mut a, "evil\u{202E}txet").await;
        refused(&mut a, "chat_bad_character").await;
        say(&mut a, "two\nlines").await;
        refused(&mut a, "chat_bad_character").await;
        a.send(json!({"type": "react", "emote": "lol"})).await;
        refused(&mut a, "malformed").await;
        a.send(json!({"type": "chat", "text": "hi", "loud": true}))
            .await;
        refused(&mut a, "malformed").await;
        // An anonymous spectator reads but cannot speak.
        let mut anon = Sock::open(&format!("{}/ws/table/{table}", server.ws), None, None).await;
        anon.next_state().await;
        assert_eq!(
            texts(&expect(&mut anon, "chat_history").await),
            vec!["hello Bob", ":gg:"]
        );
        say(&mut anon, "boo").await;
        refused(&mut anon, "unauthorized").await;
        anon.send(json!({"type": "react", "emote": "wow"})).await;
        refused(&mut anon, "unauthorized").await;
        drop(anon);

        // The rate limit: five lines in ten seconds per player, then a refusal that says
        // when to try again; the other player is not limited by it.
        for i in 3..=6 {
            say(&mut a, &format!("line {i}")).await;
            assert_eq!(expect(&mut a, "chat").await["line"]["seq"], i);
            assert_eq!(expect(&mut b, "chat").await["line"]["seq"], i);
        }
        say(&mut a, "one too many").await;
        let m = refused(&mut a, "chat_rate_limited").await;
        let wait = m["retry_after_ms"].as_u64().expect("a retry-after");
        assert!(wait > 0 && wait <= protocol::CHAT_RATE_WINDOW_MS, "{m}");
        a.send(json!({"type": "react", "emote": "oops"})).await;
        refused(&mut a, "chat_rate_limited").await;
        say(&mut b, "I can still talk").await;
        assert_eq!(expect(&mut a, "chat").await["line"]["seq"], 7);
        assert_eq!(expect(&mut b, "chat").await["line"]["seq"], 7);

        drop((a, b));
        server.stop().await;

        // Restart on the same database: the history is stored with the match.
        let server = Server::start(&db).await;
        let bob = bob.at(&server.base, &server.ws);
        let mut b = bob.connect(&table).await;
        b.next_state().await;
        let history = expect(&mut b, "chat_history").await;
        assert_eq!(
            texts(&history),
            vec![
                "hello Bob",
                ":gg:",
                "line 3",
                "line 4",
                "line 5",
                "line 6",
                "I can still talk"
            ]
        );
        // Numbering goes on from the stored lines.
        b.send(json!({"type": "react", "emote": "thanks"})).await;
        assert_eq!(expect(&mut b, "chat").await["line"]["seq"], 8);
        server.stop().await;
    }
}

/// No coaching: while the match runs, a spectator's line reaches spectators (anonymous
/// ones too) but no player; players' lines reach everyone. Once the match is over, the
/// players are sent a history that holds the spectators' lines, and so is anyone who
/// connects later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spectators_chat_is_hidden_from_players_until_the_match_ends() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let cy = Player::guest(&server.base, &server.ws, "Cy").await;
        // A short race (target 1) against an easy bot.
        let (s, v) = ada
            .post(
                "/api/tables",
                json!({"game": "trump", "seats": 2, "bots": "easy", "options": {"target": 1}}),
            )
            .await;
        assert_eq!(s, 201, "{v}");
        let table = v["table"]["id"].as_str().unwrap().to_string();
        let mut a = ada.connect(&table).await;
        a.next_state().await;
        expect(&mut a, "chat_history").await;
        let (s, v) = ada
            .post(&format!("/api/tables/{table}/start"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let mut c = cy.connect(&table).await;
        assert_eq!(c.next_state().await["you"]["kind"], "spectator");
        expect(&mut c, "chat_history").await;
        let mut anon = Sock::open(&format!("{}/ws/table/{table}", server.ws), None, None).await;
        anon.next_state().await;
        expect(&mut anon, "chat_history").await;

        say(&mut c, "Ada, lead your red 5").await;
        for sock in [&mut c, &mut anon] {
            let line = expect(sock, "chat").await["line"].clone();
            assert_eq!(line["seq"], 1);
            assert_eq!(line["spectator"], true);
            assert_eq!(line["name"], "Cy");
        }
        // Ada's own line is the first chat she gets: Cy's (stored before it) never came.
        say(&mut a, "thanks all").await;
        let line = expect(&mut a, "chat").await["line"].clone();
        assert_eq!(
            (line["seq"].as_u64(), line["text"].as_str()),
            (Some(2), Some("thanks all"))
        );
        for sock in [&mut c, &mut anon] {
            assert_eq!(expect(sock, "chat").await["line"]["seq"], 2);
        }
        // A new connection of a player gets a history without it too.
        let mut a2 = ada.connect(&table).await;
        a2.next_state().await;
        assert_eq!(
            texts(&expect(&mut a2, "chat_history").await),
            vec!["thanks all"]
        );
        drop(a2);
        // Spectators' history has both.
        let mut c2 = cy.connect(&table).await;
        c2.next_state().await;
        assert_eq!(
            texts(&expect(&mut c2, "chat_history").await),
            vec!["Ada, lead your red 5", "thanks all"]
        );
        drop(c2);

        // Play the match out; then Ada is sent the whole history.
        let (end, _) = play_until(&mut a, first, |s| status(s) == "finished").await;
        assert_eq!(status(&end), "finished");
        let history = expect(&mut a, "chat_history").await;
        assert_eq!(texts(&history), vec!["Ada, lead your red 5", "thanks all"]);
        assert_eq!(history["lines"][0]["spectator"], true);
        // Spectators already had it all: nothing is re-sent to them.
        loop {
            let m = c.next_any().await;
            assert!(m["type"] != "chat_history" && m["type"] != "chat", "{m}");
            if m["type"] == "state" && status(&m) == "finished" {
                break;
            }
        }
        // After the match, spectators' new lines reach the players at once, and the
        // stored history (read afresh by a restarted server) holds everything.
        say(&mut c, "well played").await;
        assert_eq!(expect(&mut a, "chat").await["line"]["text"], "well played");
        drop((a, c, anon));
        server.stop().await;
        let server = Server::start(&db).await;
        let ada = ada.at(&server.base, &server.ws);
        let mut a = ada.connect(&table).await;
        a.next_state().await;
        assert_eq!(
            texts(&expect(&mut a, "chat_history").await),
            vec!["Ada, lead your red 5", "thanks all", "well played"]
        );
        server.stop().await;
    }
}

/// A mute is per player and stored: the muted player's lines and reactions reach none of
/// the muter's sockets (table or lobby, this table or another, after a reconnect), while
/// everyone else still sees them; unmuting brings them back. Bad mutes are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_can_mute_another_for_themselves() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let (ada, bob, table) = ada_and_bob_at_trump(&server.base, &server.ws).await;
        let mut a = ada.connect(&table).await;
        a.next_state().await;
        let h = expect(&mut a, "chat_history").await;
        assert_eq!(h["muted"], json!([]));
        let mut b = bob.connect(&table).await;
        b.next_state().await;
        expect(&mut b, "chat_history").await;

        a.send(json!({"type": "mute", "player": bob.id})).await;
        assert_eq!(expect(&mut a, "muted").await["players"], json!([bob.id]));
        b.send(json!({"type": "react", "emote": "hurry"})).await;
        say(&mut b, "can you hear me?").await;
        assert_eq!(expect(&mut b, "chat").await["line"]["seq"], 1);
        assert_eq!(expect(&mut b, "chat").await["line"]["seq"], 2);
        say(&mut a, "quiet here").await;
        assert_eq!(
            expect(&mut a, "chat").await["line"]["seq"],
            3,
            "Bob's lines never came"
        );
        assert_eq!(
            expect(&mut b, "chat").await["line"]["seq"],
            3,
            "Bob still hears Ada"
        );

        // Refusals: oneself, nobody, and an anonymous socket.
        a.send(json!({"type": "mute", "player": ada.id})).await;
        refused(&mut a, "cannot_mute_self").await;
        a.send(json!({"type": "mute", "player": uuid::Uuid::new_v4()}))
            .await;
        refused(&mut a, "player_not_found").await;
        a.send(json!({"type": "mute", "player": "not-a-uuid"}))
            .await;
        refused(&mut a, "malformed").await;
        let mut anon = Sock::open(&format!("{}/ws/table/{table}", server.ws), None, None).await;
        anon.next_state().await;
        // Anonymous readers mute nobody: they see every line.
        assert_eq!(texts(&expect(&mut anon, "chat_history").await).len(), 3);
        anon.send(json!({"type": "mute", "player": bob.id})).await;
        refused(&mut anon, "unauthorized").await;

        // Another socket of Ada's, at another table and in the lobby: still muted.
        let mut a2 = ada.connect(&table).await;
        a2.next_state().await;
        let h = expect(&mut a2, "chat_history").await;
        assert_eq!(texts(&h), vec!["quiet here"]);
        assert_eq!(h["muted"], json!([bob.id]));
        let mut lobby_a =
            Sock::open(&format!("{}/ws/lobby", server.ws), Some(&ada.token), None).await;
        assert_eq!(lobby_a.next().await["type"], "tables");
        assert_eq!(
            expect(&mut lobby_a, "chat_history").await["muted"],
            json!([bob.id])
        );
        let mut lobby_b =
            Sock::open(&format!("{}/ws/lobby", server.ws), Some(&bob.token), None).await;
        lobby_b.next().await;
        expect(&mut lobby_b, "chat_history").await;
        say(&mut lobby_b, "anyone for a game?").await;
        expect(&mut lobby_b, "chat").await;
        say(&mut lobby_a, "me").await;
        assert_eq!(
            expect(&mut lobby_a, "chat").await["line"]["text"],
            "me",
            "Bob's lobby line never came"
        );
        assert_eq!(expect(&mut lobby_b, "chat").await["line"]["text"], "me");

        // Unmuting (from the other socket) brings Bob back on every socket of Ada's here.
        a2.send(json!({"type": "unmute", "player": bob.id})).await;
        assert_eq!(expect(&mut a2, "muted").await["players"], json!([]));
        assert_eq!(expect(&mut a, "muted").await["players"], json!([]));
        say(&mut b, "back again").await;
        for sock in [&mut a, &mut a2, &mut b] {
            assert_eq!(expect(sock, "chat").await["line"]["text"], "back again");
        }
        // The lobby socket learns it through its own unmute (or on its next connect).
        lobby_a
            .send(json!({"type": "unmute", "player": bob.id}))
            .await;
        assert_eq!(expect(&mut lobby_a, "muted").await["players"], json!([]));
        say(&mut lobby_b, "hello Ada").await;
        assert_eq!(
            expect(&mut lobby_a, "chat").await["line"]["text"],
            "hello Ada"
        );
        server.stop().await;
    }
}

/// The lobby's chat: signed-in sockets talk, anonymous ones read; the same limits as at a
/// table; a newcomer gets the latest lines; the tables list works as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_chat() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let url = format!("{}/ws/lobby", server.ws);
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let mut a = Sock::open(&url, Some(&ada.token), None).await;
        assert_eq!(a.next().await["type"], "tables");
        assert_eq!(
            texts(&expect(&mut a, "chat_history").await),
            Vec::<String>::new()
        );
        let mut anon = Sock::open(&url, None, None).await;
        anon.next().await;
        expect(&mut anon, "chat_history").await;

        say(&mut a, "hi lobby").await;
        for sock in [&mut a, &mut anon] {
            let line = expect(sock, "chat").await["line"].clone();
            assert_eq!(
                (line["seq"].as_u64(), line["name"].as_str()),
                (Some(1), Some("Ada"))
            );
            assert_eq!(line["player"], ada.id.as_str());
        }
        say(&mut anon, "me too").await;
        refused(&mut anon, "unauthorized").await;
        say(&mut a, &"é".repeat(protocol::MAX_CHAT_CHARS + 1)).await;
        refused(&mut a, "chat_too_long").await;
        say(&mut a, "tab\there").await;
        refused(&mut a, "chat_bad_character").await;
        a.send(json!({"type": "react", "emote": "gg"})).await;
        refused(&mut a, "malformed").await;
        for i in 2..=5 {
            say(&mut a, &format!("line {i}")).await;
            assert_eq!(expect(&mut a, "chat").await["line"]["seq"], i);
        }
        say(&mut a, "too many").await;
        let m = refused(&mut a, "chat_rate_limited").await;
        assert!(m["retry_after_ms"].as_u64().unwrap() > 0, "{m}");
        quiet(&mut a).await;

        // A newcomer gets the latest lines; a new table still shows up in the list.
        let mut late = Sock::open(&url, None, None).await;
        late.next().await;
        assert_eq!(
            texts(&expect(&mut late, "chat_history").await),
            vec!["hi lobby", "line 2", "line 3", "line 4", "line 5"]
        );
        let table = ada.create_trump(2, false).await;
        let listed = late.next().await;
        assert_eq!(listed["type"], "changes", "{listed}");
        assert_eq!(listed["tables"][0]["id"], table.as_str());
        server.stop().await;
    }
}
