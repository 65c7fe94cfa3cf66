//! End to end for the rummy family (Fibonacci 21/13/8 and Solitaire Fibonacci): a whole
//! round over WebSockets with a bot in the other seat on every database, including an
//! out-of-turn rearrangement accepted while the bot is on turn; a Solitaire game to
//! its end; and the browser test (tests/browser/rummy.mjs). `cargo test -p e2e rummy`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Player, Server, Sock, databases, my_seat, status};

async fn create_rummy(p: &Player, seats: usize, options: Value) -> String {
    let (s, v) = p
        .post(
            "/api/tables",
            json!({"game": "rummy", "seats": seats, "options": options, "bots": "random"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    v["table"]["id"].as_str().unwrap().to_string()
}

async fn start(p: &Player, table: &str) {
    let (s, v) = p
        .post(&format!("/api/tables/{table}/start"), json!({}))
        .await;
    assert_eq!(s, 200, "{v}");
}

fn legal(st: &Value) -> Vec<Value> {
    st["legal"].as_array().cloned().unwrap_or_default()
}

fn to_act(st: &Value) -> Vec<u64> {
    st["table"]["to_act"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect()
}

fn version(st: &Value) -> u64 {
    st["version"].as_u64().unwrap()
}

/// The next state or error message (skipping anything else).
async fn next_reply(sock: &mut Sock) -> Value {
    loop {
        let m = sock.next().await;
        if m["type"] == "state" || m["type"] == "error" {
            return m;
        }
    }
}

/// A simple purposeful player, choosing only from `legal`: draw, open with the standard
/// opening, close complete sets (when `close`), add to sets, start sets, and discard.
///
/// The rules let the hand run down to one card only when every required set is complete
/// that card may then be discarded only once the sets are closed, so closing
/// comes back as a fallback even before `close`. It grows sets only from two cards up,
/// and if stuck anyway it takes a card back and then (`took_back`) grows no more this
/// turn, so every turn ends with a discard.
struct Greedy {
    took_back: bool,
}

impl Greedy {
    fn new() -> Self {
        Greedy { took_back: false }
    }

    fn choose(&mut self, st: &Value, close: bool) -> Option<Value> {
        let legal = legal(st);
        let hand = st["view"]["hand"].as_array().map_or(0, Vec::len);
        let find = |t: &str| legal.iter().find(|a| a["type"] == t).cloned();
        let grow = || {
            if close {
                find("add_to_set").or_else(|| find("start_set"))
            } else {
                find("start_set").or_else(|| find("add_to_set"))
            }
        };
        let a = find("draw_stock")
            .or_else(|| find("draw_discard"))
            .or_else(|| find("open"))
            .or_else(|| close.then(|| find("close_set")).flatten())
            .or_else(|| (hand >= 2 && !self.took_back).then(grow).flatten())
            .or_else(|| find("discard"))
            .or_else(|| find("close_set"))
            .or_else(|| find("take_back"))
            .or_else(grow)?;
        match a["type"].as_str() {
            Some("take_back") => self.took_back = true,
            Some("discard") => self.took_back = false,
            _ => {}
        }
        Some(a)
    }
}

/// My sets in a state's view.
fn my_sets(st: &Value) -> Vec<Value> {
    let me = my_seat(st).unwrap();
    st["view"]["tables"][me as usize]["sets"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn set_has(st: &Value, key: u64, card: u64) -> bool {
    my_sets(st).iter().any(|s| {
        s["key"].as_u64() == Some(key)
            && s["cards"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["card"]["id"].as_u64() == Some(card))
    })
}

/// Plays one table (me in seat 0, a random bot in seat 1) until the match is over. Makes
/// one out-of-turn move as soon as one is legal while the bot is on turn, and
/// checks it was accepted then. Returns the final state and whether that move happened.
async fn play_round_with_bot(p: &Player) -> (Value, bool) {
    let table = create_rummy(
        p,
        2,
        json!({"target": 13, "match_length": {"kind": "rounds", "count": 1}}),
    )
    .await;
    let mut sock = p.connect(&table).await;
    sock.next_state().await;
    start(p, &table).await;
    let mut st = sock.until(|s| status(s) == "playing").await;
    let me = my_seat(&st).unwrap();
    let mut moved = false;
    let mut my_moves = 0;
    let mut greedy = Greedy::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while status(&st) != "finished" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the round did not end in time"
        );
        let acting = to_act(&st);
        let bot_on_turn = !acting.is_empty() && !acting.contains(&me);
        let mine = acting.contains(&me) && !legal(&st).is_empty();
        let ooo = legal(&st).into_iter().find(|a| a["type"] == "move_card");
        if let Some(a) = ooo.filter(|_| !moved && bot_on_turn) {
            // rearrange my open sets while the bot plays its turn.
            sock.act(version(&st), &a).await;
            // Either a state carrying my move's event (accepted) or a stale_version refusal
            // (the bot moved first); the bot's own states may come in between.
            loop {
                let reply = next_reply(&mut sock).await;
                if reply["type"] == "error" {
                    assert_eq!(reply["code"], "stale_version", "{reply}");
                    // The patches that made it stale came first: the held state is current.
                    st = sock.state.clone().unwrap();
                    break;
                }
                st = reply;
                let mine_moved = st["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["type"] == "card_moved" && e["seat"].as_u64() == Some(me));
                if mine_moved {
                    let to = a["to"].as_u64().unwrap();
                    let card = a["card"].as_u64().unwrap();
                    assert!(
                        set_has(&st, to, card),
                        "the moved card is in set {to}: {a} {}",
                        st["view"]
                    );
                    assert_eq!(
                        to_act(&st),
                        acting,
                        "the bot is still on turn after my out-of-turn move"
                    );
                    moved = true;
                    break;
                }
            }
            continue;
        }
        if mine {
            // Keep sets open until the out-of-turn move was made (it needs two open sets).
            let a = greedy
                .choose(&st, moved)
                .unwrap_or_else(|| panic!("something legal on my turn: {}", st["legal"]));
            sock.act(version(&st), &a).await;
            my_moves += 1;
            assert!(my_moves < 2000, "too many moves");
        }
        let reply = next_reply(&mut sock).await;
        if reply["type"] == "error" {
            assert_eq!(reply["code"], "stale_version", "refused: {reply}");
            st = sock.state.clone().unwrap();
        } else {
            st = reply;
        }
    }
    (st, moved)
}

/// Checks the end of a one-round match: outcome, and scores that add up.
fn check_round_end(st: &Value) {
    let view = &st["view"];
    assert_eq!(view["phase"], "finished", "{view}");
    let lr = &view["last_round"];
    let seats = lr["seats"].as_array().unwrap();
    assert_eq!(seats.len(), 2);
    let scores = st["table"]["scores"].as_array().unwrap();
    for s in seats {
        let total = s["going_out_bonus"].as_i64().unwrap() + s["closed_points"].as_i64().unwrap()
            - s["open_penalty"].as_i64().unwrap()
            - s["hand_penalty"].as_i64().unwrap();
        assert_eq!(
            s["total"].as_i64().unwrap(),
            total,
            "breakdown adds up: {s}"
        );
        let seat = s["seat"].as_u64().unwrap() as usize;
        // A one-round match, unless it ended in a tie, which plays another round.
        if st["table"]["round"] == 1 {
            assert_eq!(
                scores[seat].as_i64().unwrap(),
                total,
                "one round: match = round"
            );
        }
    }
    let mut totals: Vec<i64> = scores.iter().map(|v| v.as_i64().unwrap()).collect();
    totals.sort_unstable();
    assert!(
        totals[totals.len() - 1] > totals[totals.len() - 2],
        "a match does not end tied (R-24): {scores:?} after round {}",
        st["table"]["round"]
    );
    match lr["went_out"].as_u64() {
        Some(w) => {
            let s = &seats[w as usize];
            assert_eq!(s["going_out_bonus"], 80);
            assert_eq!(s["closed_sets"], 5, "Fibonacci 13: five sets to go out");
        }
        None => assert_eq!(lr["blocked"], true, "nobody went out: blocked (R-21)"),
    }
    let winners = st["table"]["winners"].as_array().unwrap();
    assert!(!winners.is_empty());
}

/// A whole round of Fibonacci 13 against a bot on each database, with an out-of-turn
/// rearrangement accepted while the bot is on turn. The deal is random, so a few
/// tables may be needed before one gives two open sets with a movable card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rummy_round_with_bot_and_out_of_turn_move_on_every_database() {
    for db in databases().await {
        let server = Server::start_with_bot_delay(&db, 40).await;
        let p = Player::guest(&server.base, &server.ws, "Ada").await;
        let mut moved = false;
        for attempt in 1..=6 {
            let (end, m) = play_round_with_bot(&p).await;
            check_round_end(&end);
            eprintln!(
                "{}: table {attempt}: round over ({}), out-of-turn move: {m}",
                db.label,
                if end["view"]["last_round"]["blocked"] == true {
                    "blocked".to_string()
                } else {
                    format!("seat {} went out", end["view"]["last_round"]["went_out"])
                }
            );
            if m {
                moved = true;
                break;
            }
        }
        assert!(moved, "{}: no out-of-turn move in 6 tables", db.label);
        let (s, mine) = p.get("/api/me/matches").await;
        assert_eq!(s, 200);
        assert_eq!(mine[0]["game"], "rummy");
        assert_eq!(mine[0]["status"], "finished");
        server.stop().await;
    }
}

/// Solitaire Fibonacci (one seat) played to its end on each database: either every set
/// closed (score = the discard pile, winners [0]) or the stock ran out (lost, winners []).
/// Also: a move out of order is refused with a readable message and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rummy_solitaire_to_the_end_on_every_database() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let p = Player::guest(&server.base, &server.ws, "Sol").await;
        let table = create_rummy(&p, 1, json!({"target": 13})).await;
        let mut sock = p.connect(&table).await;
        sock.next_state().await;
        start(&p, &table).await;
        let mut st = sock.until(|s| status(s) == "playing").await;
        assert_eq!(st["view"]["solitaire"], true);
        assert_eq!(st["view"]["hand"].as_array().unwrap().len(), 7);

        // Discarding before drawing is refused, readably, and nothing changes.
        let card = st["view"]["hand"][0]["id"].clone();
        sock.act(version(&st), &json!({"type": "discard", "card": card}))
            .await;
        let e = sock.next_error().await;
        assert_eq!(e["code"], "must_draw_first", "{e}");
        assert!(e["message"].as_str().unwrap().contains("draw"), "{e}");

        let mut moves = 0;
        let mut greedy = Greedy::new();
        while status(&st) != "finished" {
            let l = legal(&st);
            if !l.is_empty() {
                let a = greedy
                    .choose(&st, true)
                    .unwrap_or_else(|| panic!("a move: {}", st["legal"]));
                sock.act(version(&st), &a).await;
                moves += 1;
                assert!(moves < 3000, "solitaire did not end");
            }
            let reply = next_reply(&mut sock).await;
            assert_eq!(reply["type"], "state", "refused: {reply}");
            st = reply;
        }
        let view = &st["view"];
        let lr = &view["last_round"];
        let score = st["table"]["scores"][0].as_i64().unwrap();
        if lr["blocked"] == true {
            assert_eq!(view["outcome"]["winners"], json!([]));
            assert_eq!(score, 73, "a lost game scores the whole deck (Deck 13)");
        } else {
            assert_eq!(view["outcome"]["winners"], json!([0]));
            assert_eq!(score, lr["solitaire_discards"].as_i64().unwrap());
            assert_eq!(view["tables"][0]["closed_sets"], 5);
        }
        eprintln!(
            "{}: solitaire over after {moves} moves: {}",
            db.label,
            if lr["blocked"] == true {
                "lost (stock ran out)".to_string()
            } else {
                format!("won with {score} discards")
            }
        );
        server.stop().await;
    }
}

/// Through the real client in Chromium: a player lays down an opening meld, adds to a set
/// and discards (tests/browser/rummy.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rummy_browser_open_add_discard() {
    crate::browser::run_script("rummy.mjs").await;
}

/// moves out of turn "never hold up the player whose turn it is". Two people at a
/// Fibonacci 13 table; as soon as Bob (seat 1) has a move out of turn while Ada (seat 0)
/// must draw, both choose at the same version: Bob's rearrangement reaches the table
/// first, then Ada's draw, chosen before it. Both are accepted (a black-box walk found
/// Ada's draw refused as stale: every accepted move, out of turn included, made any
/// action chosen before it stale). The deal is random: a few tables may be needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_out_of_turn_does_not_make_the_turn_players_move_stale() {
    let db = crate::support::sqlite_db();
    let server = Server::start(&db).await;
    let ada = Player::guest(&server.base, &server.ws, "Ada").await;
    let bob = Player::guest(&server.base, &server.ws, "Bob").await;
    let off_turn = |st: &Value| {
        legal(st)
            .into_iter()
            .find(|a| a["type"] == "move_card" || a["type"] == "set_wild_number")
    };
    for attempt in 1..=10 {
        let table = create_rummy(
            &ada,
            2,
            json!({"target": 13, "match_length": {"kind": "rounds", "count": 1}}),
        )
        .await;
        let (s, v) = bob
            .post(&format!("/api/tables/{table}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let mut a = ada.connect(&table).await;
        let mut b = bob.connect(&table).await;
        start(&ada, &table).await;
        let mut sa = a.until(|s| status(s) == "playing").await;
        let mut greedy = [Greedy::new(), Greedy::new()];
        while status(&sa) == "playing" {
            // Both hold the same version: nothing moves but these two.
            let v = version(&sa);
            let sb = b.until(|s| version(s) >= v).await;
            assert_eq!(version(&sb), v);
            let turn = to_act(&sa);
            let draw = legal(&sa).into_iter().find(|a| a["type"] == "draw_stock");
            if let (Some(draw), Some(off)) = (draw.filter(|_| turn == [0]), off_turn(&sb)) {
                b.act(v, &off).await;
                let r = next_reply(&mut b).await;
                assert!(r["type"] == "state" && version(&r) == v + 1, "{off}: {r}");
                a.act(v, &draw).await;
                loop {
                    let r = next_reply(&mut a).await;
                    assert_ne!(r["type"], "error", "Ada's draw after Bob's {off}: {r}");
                    if version(&r) >= v + 2 {
                        let drew = r["events"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|e| e["seat"].as_u64() == Some(0) && e["type"] == "drew");
                        assert!(drew, "Ada drew: {}", r["events"]);
                        break;
                    }
                }
                eprintln!("table {attempt}: {off} out of turn, then the draw");
                server.stop().await;
                return;
            }
            let (sock, st, g) = match turn.first() {
                Some(0) => (&mut a, &sa, &mut greedy[0]),
                Some(1) => (&mut b, &sb, &mut greedy[1]),
                _ => panic!("someone is on turn while playing: {}", sa["table"]),
            };
            let choice = g
                .choose(st, false)
                .unwrap_or_else(|| panic!("something legal on turn: {}", st["legal"]));
            sock.act(v, &choice).await;
            sa = a.until(|s| version(s) > v).await;
        }
    }
    panic!("no move out of turn while the other seat had to draw, in 10 tables");
}
