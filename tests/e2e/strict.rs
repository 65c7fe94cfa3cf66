//! Strict input, end to end (issue #12): an unknown field inside `action` is refused with
//! `unknown_field` in every game and changes nothing; oversized frames and messages close
//! the lobby socket (and the table socket) with 1009; display names with invisible or
//! control characters, or that pass for a bot's, are refused with their own codes.

use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

use crate::support::*;

/// A table of `game` with `name` in seat 0 and an easy bot in seat 1, started, with its
/// socket at a state where it is `name`'s turn.
async fn my_turn_at(server: &Server, game: &str, name: &str) -> (Player, String, Sock, Value) {
    let p = Player::guest(&server.base, &server.ws, name).await;
    let (s, v) = p
        .post(
            "/api/tables",
            json!({"game": game, "seats": 2, "bots": "easy"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let table = v["table"]["id"].as_str().unwrap().to_string();
    let mut sock = p.connect(&table).await;
    sock.next_state().await;
    let (s, v) = p
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
    let st = sock.until(my_turn).await;
    (p, table, sock, st)
}

/// What a refused action must leave as it was: the refusing seat's hand, that it is still
/// its turn, and its legal actions. (The version too, except in the rummy family, where a
/// bot may rearrange its own sets out of turn, R-18, while we wait.)
fn mine(st: &Value) -> Value {
    json!({"hand": st["view"]["hand"], "to_act": st["table"]["to_act"], "legal": st["legal"]})
}

/// Sends `action` against the state `st` and expects `unknown_field` naming `needle`.
async fn refused(sock: &mut Sock, st: &Value, action: &Value, needle: &str) {
    sock.act(st["version"].as_u64().unwrap(), action).await;
    let err = sock.next_error().await;
    assert_eq!(err["code"], "unknown_field", "{action} → {err}");
    let msg = err["message"].as_str().unwrap();
    assert!(msg.contains(needle), "{action} → {msg}");
}

/// Every game: an unknown field at the top of the action, one inside a nested object, and
/// one beside a unit action (`{"type":"draw","x":1}` used to be applied as a draw) are each
/// refused with `unknown_field`; nothing changes, and the same action without the field
/// is then accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_inside_actions_are_refused_in_every_game() {
    for db in databases().await {
        let server = Server::start(&db).await;
        for game in ["trump", "nachos", "fibfib", "rummy"] {
            let (_p, _table, mut sock, st) = my_turn_at(&server, game, "Ada").await;
            let version = st["version"].as_u64().unwrap();
            let legal = st["legal"].as_array().unwrap().clone();
            // Trump's legal actions are card codes (`"r7"`): its object form takes fields.
            let action = match &legal[0] {
                Value::String(card) => json!({"type": "play", "card": card}),
                a => a.clone(),
            };

            let mut top = action.clone();
            top["seat"] = json!(1);
            refused(&mut sock, &st, &top, "unknown field `seat` in `action`").await;
            // An unknown field whose value is null is still unknown.
            let mut null = action.clone();
            null["why"] = Value::Null;
            refused(&mut sock, &st, &null, "unknown field `why` in `action`").await;
            // Inside a card (every game but the rummy family names cards by objects).
            if let Some(a) = legal.iter().find(|a| a["card"].is_object()) {
                let mut nested = a.clone();
                nested["card"]["face_up"] = json!(true);
                refused(
                    &mut sock,
                    &st,
                    &nested,
                    "unknown field `face_up` in `action.card`",
                )
                .await;
            }
            // Beside an action that has no fields at all.
            if let Some(a) = legal
                .iter()
                .find(|a| a.as_object().is_some_and(|o| o.len() == 1))
            {
                let mut unit = a.clone();
                unit["x"] = json!(1);
                refused(&mut sock, &st, &unit, "it takes no other field").await;
            }
            if game == "fibfib" || game == "rummy" {
                assert!(
                    legal.iter().any(|a| a.as_object().unwrap().len() == 1),
                    "{game}: a draw is legal at the start of a turn: {legal:?}"
                );
            }

            // Nothing changed.
            sock.send(json!({"type": "sync"})).await;
            let now = sock.next_state().await;
            assert_eq!(mine(&now), mine(&st), "{game} ({})", db.label);
            if game != "rummy" {
                assert_eq!(now["version"].as_u64(), Some(version), "{game}");
                assert_eq!(now["view"], st["view"], "{game}");
            }

            // The clean action goes through.
            sock.act(now["version"].as_u64().unwrap(), &action).await;
            let after = sock.next_state_after_act().await;
            assert!(
                after["version"].as_u64().unwrap() > version,
                "{game}: accepted"
            );
        }
        let m = metrics(&server).await;
        assert!(
            m.lines()
                .any(|l| l.contains("unknown_field") && !l.starts_with('#')),
            "unknown_field is counted in /metrics"
        );
        server.stop().await;
    }
}

/// Writes the header of a masked text frame announcing `len` bytes, and nothing more: the
/// server refuses the frame on its header, so no unread bytes make its close a reset and
/// the close code arrives for certain.
async fn announce_frame(sock: &mut Sock, len: u64) {
    let mut header = vec![0x81, 0x80 | 127];
    header.extend_from_slice(&len.to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4]);
    match sock.ws.get_mut() {
        MaybeTlsStream::Plain(tcp) => {
            tcp.write_all(&header).await.unwrap();
            tcp.flush().await.unwrap();
        }
        _ => unreachable!("the test server speaks plain ws"),
    }
}

/// A message over 16 KiB made of frames that are each within the limit: three 8 KiB
/// fragments. The server reads each whole fragment before it finds the message too long.
async fn fragmented_message(sock: &mut Sock) {
    let chunk = vec![b'x'; 8 * 1024];
    let frames = [
        Frame::message(chunk.clone(), OpCode::Data(Data::Text), false),
        Frame::message(chunk.clone(), OpCode::Data(Data::Continue), false),
        Frame::message(chunk, OpCode::Data(Data::Continue), false),
    ];
    for f in frames {
        sock.ws.send(Message::Frame(f)).await.unwrap();
    }
}

/// The lobby socket closes with 1009 on an oversized frame and on an oversized message
/// made of small frames, like the table socket; both count in `/metrics`, and a message
/// right at the limit is only refused (`malformed`), the socket staying open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_lobby_and_table_frames_close_with_1009() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let lobby_url = format!("{}/ws/lobby", server.ws);

    let mut lobby = Sock::open(&lobby_url, None, None).await;
    assert_eq!(lobby.next().await["type"], "tables");
    announce_frame(&mut lobby, 64 * 1024).await;
    assert_eq!(lobby.close_code().await, Some(1009), "oversized frame");

    let mut lobby = Sock::open(&lobby_url, None, None).await;
    assert_eq!(lobby.next().await["type"], "tables");
    fragmented_message(&mut lobby).await;
    assert_eq!(lobby.close_code().await, Some(1009), "oversized message");

    // A message right at the limit is no offence: the lobby refuses it as `malformed` (it
    // is no lobby message) and stays open.
    let mut lobby = Sock::open(&lobby_url, None, None).await;
    assert_eq!(lobby.next().await["type"], "tables");
    let at_limit = format!(r#"{{"pad":"{}"}}"#, "x".repeat(16 * 1024 - 10));
    assert_eq!(at_limit.len(), 16 * 1024);
    lobby.send_raw(&at_limit).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let table = ada.create_trump(2, false).await;
    let mut refused = false;
    let change = loop {
        let m = lobby.next().await;
        match m["type"].as_str() {
            Some("error") => {
                assert_eq!(m["code"], "malformed", "{m}");
                refused = true;
            }
            Some("changes") => break m,
            _ => {} // the chat history after the list
        }
    };
    assert!(refused, "the padded message was answered");
    assert_eq!(change["tables"][0]["id"], table.as_str());

    // The table socket, the same two ways.
    let mut sock = ada.connect(&table).await;
    sock.next_state().await;
    announce_frame(&mut sock, 64 * 1024).await;
    assert_eq!(
        sock.close_code().await,
        Some(1009),
        "table: oversized frame"
    );
    let mut sock = ada.connect(&table).await;
    sock.next_state().await;
    fragmented_message(&mut sock).await;
    assert_eq!(
        sock.close_code().await,
        Some(1009),
        "table: oversized message"
    );

    let m = metrics(&server).await;
    let closed = m
        .lines()
        .find(|l| l.starts_with("fib_ws_closed_total") && l.contains("frame_too_large"))
        .unwrap_or_else(|| panic!("frame_too_large closes are counted:\n{m}"));
    assert!(closed.ends_with(" 4"), "{closed}");
    server.stop().await;
}

/// `POST /api/guest` with a name, as a raw request: status and code.
async fn guest_code(base: &str, name: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/api/guest"))
        .json(&json!({ "name": name }))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    (status, v["code"].as_str().unwrap_or("").to_string())
}

/// Display names: bidi overrides, zero-width characters, the BOM, line separators and
/// controls are refused (`name_forbidden_char`); a name of nothing but such characters and
/// spaces has no visible character (`bad_name`); names that pass for a bot's
/// (`name_looks_like_bot`). Nothing is created for a refused name; good names still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn display_names_are_refused_specifically() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let base = server.base.as_str();
    for name in [
        "Ada\u{202E}nimda",
        "\u{2066}Bob\u{2069}",
        "Ad\u{200B}a",
        "A\u{200D}da",
        "\u{FEFF}Ada",
        "Ada\u{00AD}",
        "Ada\u{2028}Bob",
        "Ada\tBob",
    ] {
        assert_eq!(
            guest_code(base, name).await,
            (400, "name_forbidden_char".into()),
            "{name:?}"
        );
    }
    for name in ["\u{200B}", " \u{200B}\u{200C} ", "\u{202E}", "\u{FEFF} "] {
        assert_eq!(
            guest_code(base, name).await,
            (400, "bad_name".into()),
            "{name:?}"
        );
    }
    for name in [
        "Bot",
        "bot 2",
        "Bot 2 (hard)",
        "BOT (easy)",
        "bot\u{3000}1",
        "Ｂｏｔ",
    ] {
        assert_eq!(
            guest_code(base, name).await,
            (400, "name_looks_like_bot".into()),
            "{name:?}"
        );
    }
    for name in ["Botond", "Robot", "Zoë", "李小龍"] {
        let p = Player::guest(&server.base, &server.ws, name).await;
        let (s, me) = p.get("/api/me").await;
        assert_eq!((s, me["name"].as_str()), (200, Some(name)));
    }
    server.stop().await;
}

/// A raw request to `base`: (status, content type, body as text).
async fn raw(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    auth_scheme: &str,
    body: Option<String>,
) -> (u16, String, String) {
    let mut r = reqwest::Client::new().request(method, url);
    if let Some(t) = token {
        r = r.header("Authorization", format!("{auth_scheme} {t}"));
    }
    if let Some(b) = body {
        r = r.header("Content-Type", "application/json").body(b);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let kind = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, kind, r.text().await.unwrap())
}

/// Bodies and lobby messages are decoded as strictly as the published schema says (a
/// black-box walk found these taken): an array is no object, even where serde would read
/// it as the fields in order, and a unit variant (`{"kind":"untimed"}`) takes no other
/// field. Each refusal says what is wrong in words and creates nothing. Also: `/api/`
/// itself is a JSON 404; a body over the limit is 413 on an endpoint that reads none, and
/// outside `/api`; a file of the browser client answers a POST 405 with `Allow`; the
/// bearer scheme is case-insensitive; setup errors carry no Rust debug text; unmuting
/// nobody is `player_not_found` like muting nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_and_lobby_messages_are_decoded_strictly() {
    let db = sqlite_db();
    let server = Server::start(&db).await;
    let base = server.base.as_str();
    let p = Player::guest(base, &server.ws, "Strict").await;

    // An array where the body is an object: no guest made, no table, no seat.
    let (s, v) = p.post("/api/guest", json!(["Zed"])).await;
    assert_eq!((s, v["code"].as_str()), (400, Some("malformed")), "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("`body` must be a JSON object, not an array"),
        "{v}"
    );
    for (body, code, needle) in [
        (
            json!(["trump", 2]),
            "malformed",
            "`body` must be a JSON object",
        ),
        (
            json!({"game": "trump", "seats": 2, "pace": {"kind": "untimed", "bogus": 3}}),
            "malformed",
            "unknown field `bogus` in `body.pace`",
        ),
        (
            json!({"game": "trump", "seats": 2, "pace": ["live", 30, 60]}),
            "malformed",
            "`body.pace` must be a JSON object",
        ),
        (
            json!({"game": "trump", "seats": 2, "options": [8]}),
            "bad_options",
            "`options` must be a JSON object, not an array",
        ),
    ] {
        let (s, v) = p.post("/api/tables", body.clone()).await;
        assert_eq!((s, v["code"].as_str()), (400, Some(code)), "{body}: {v}");
        assert!(
            v["message"].as_str().unwrap().contains(needle),
            "{body}: {v}"
        );
    }
    let (s, mine) = p.get("/api/me/matches").await;
    assert_eq!(s, 200, "{mine}");
    assert_eq!(mine.as_array().map(Vec::len), Some(0), "{mine}");

    // A table to join: an array is no join request either, and leaves the seat free.
    let host = Player::guest(base, &server.ws, "Host").await;
    let table = host.create_trump(2, false).await;
    let (s, v) = p
        .post(&format!("/api/tables/{table}/join"), json!([1]))
        .await;
    assert_eq!((s, v["code"].as_str()), (400, Some("malformed")), "{v}");
    let (_, t) = p.get(&format!("/api/tables/{table}")).await;
    assert_eq!(t["seats"][1]["kind"], "empty", "{t}");

    // A key twice is refused, not read as its last value (a walk made a Fibonachos table
    // with `{"game":"trump","seats":2,"game":"nachos"}`).
    let (s, _, text) = raw(
        reqwest::Method::POST,
        &format!("{base}/api/tables"),
        Some(&p.token),
        "Bearer",
        Some(r#"{"game":"trump","seats":2,"game":"nachos"}"#.into()),
    )
    .await;
    assert_eq!(s, 400, "{text}");
    assert!(text.contains("\"malformed\""), "{text}");
    assert!(text.contains("duplicate key `game`"), "{text}");
    let (_, mine) = p.get("/api/me/matches").await;
    assert_eq!(mine.as_array().map(Vec::len), Some(0), "{mine}");

    // `/api/` is the API's, not the browser client's page.
    let (s, kind, text) = raw(
        reqwest::Method::GET,
        &format!("{base}/api/"),
        None,
        "",
        None,
    )
    .await;
    assert_eq!(s, 404, "{text}");
    assert!(kind.starts_with("application/json"), "{kind}");
    assert!(text.contains("\"not_found\""), "{text}");

    // Over the limit where the handler reads no body: 413, and the table is not left.
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(17 * 1024));
    let (s, _, text) = raw(
        reqwest::Method::POST,
        &format!("{base}/api/tables/{table}/leave"),
        Some(&host.token),
        "Bearer",
        Some(big),
    )
    .await;
    assert_eq!(s, 413, "{text}");
    assert!(text.contains("\"too_large\""), "{text}");
    let (_, t) = host.get(&format!("/api/tables/{table}")).await;
    assert_eq!(t["seats"][0]["name"], "Host", "still seated: {t}");
    // Outside `/api` as well (a walk sent 20 KB to `/healthz` and pages, answered 200).
    for path in ["/healthz", "/metrics", "/", "/app.js"] {
        let big = "a".repeat(17 * 1024);
        let (s, _, text) = raw(
            reqwest::Method::GET,
            &format!("{base}{path}"),
            None,
            "",
            Some(big),
        )
        .await;
        assert_eq!(s, 413, "{path}: {text}");
        assert!(text.contains("\"too_large\""), "{path}: {text}");
    }
    // A file of the browser client is read, not written: its 405 says what is allowed.
    let r = reqwest::Client::new()
        .post(format!("{base}/app.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "GET,HEAD");

    // The scheme of `Authorization` in any case (RFC 9110).
    let (s, _, text) = raw(
        reqwest::Method::GET,
        &format!("{base}/api/me"),
        Some(&p.token),
        "bearer",
        None,
    )
    .await;
    assert_eq!(s, 200, "{text}");

    // The lobby: a challenge's options refused in words, its pace as strictly as a
    // table's; unmuting nobody refused.
    let mut sock = lobby(&p).await;
    sock.send(
        json!({"type": "challenge", "to": "house:easy", "game": "trump",
                     "options": {"target": 0}}),
    )
    .await;
    let e = lobby_until(&mut sock, "error").await;
    assert_eq!(e["code"], "bad_options", "{e}");
    assert_eq!(e["message"], "the target score must be at least 1", "{e}");
    sock.send(
        json!({"type": "challenge", "to": "house:easy", "game": "trump",
                     "pace": {"kind": "untimed", "zz": 1}}),
    )
    .await;
    let e = lobby_until(&mut sock, "error").await;
    assert_eq!(e["code"], "malformed", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("unknown field `zz` in `message.pace`"),
        "{e}"
    );
    sock.send(json!({"type": "unmute", "player": uuid::Uuid::new_v4()}))
        .await;
    let e = lobby_until(&mut sock, "error").await;
    assert_eq!(e["code"], "player_not_found", "{e}");
    let (_, mine) = p.get("/api/me/matches").await;
    assert_eq!(mine.as_array().map(Vec::len), Some(0), "{mine}");
    server.stop().await;
}
