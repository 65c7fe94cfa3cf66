//! Fib-Fibonacci end to end (rulebook 002, R-40..R-47): one real WebSocket client plays a
//! whole game against a bot on every database, the result is stored (and still there after
//! a restart), and no message the player received ever named a card of the bot's hand or of
//! the draw pile. That last check rests on facts, not on the view alone: once the game is
//! over the deal record (both hands and the pile) is public, and replaying the events the
//! player saw over it tells, at every message, which cards were in the bot's hand or the
//! pile. Also the browser test that plays a joker and a first run card through the UI.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::*;

/// What the player may not know, replayed from the deal record and the events it saw.
struct Tracker {
    me: usize,
    /// The player's own hand.
    mine: BTreeSet<u64>,
    /// The opponent's hand and the draw pile together: the cards whose place the player
    /// must never learn (an opponent's draw moves a card inside this set).
    hidden: BTreeSet<u64>,
    /// Cards the opponent took back from the table with a 4: the event names them,
    /// so everyone knows they are in that hand.
    public: BTreeSet<u64>,
    /// Cards the latest message's refill took off the table: that message may still
    /// name them (it reports the move that laid them), later ones may not.
    gathered: BTreeSet<u64>,
    started: bool,
}

fn ids(v: &Value) -> BTreeSet<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list of cards: {v}"))
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect()
}

/// Every card named anywhere in a message: any object with a numeric `id` and a `rank`.
fn cards_in(v: &Value, out: &mut BTreeSet<u64>) {
    match v {
        Value::Object(m) => {
            if let (Some(id), Some(Value::String(_))) =
                (m.get("id").and_then(Value::as_u64), m.get("rank"))
            {
                out.insert(id);
            }
            m.values().for_each(|x| cards_in(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| cards_in(x, out)),
        _ => {}
    }
}

impl Tracker {
    /// From the deal record: the player's hand, and the other hand plus the pile.
    fn new(deal: &Value, me: usize) -> Tracker {
        let mut hidden = ids(&deal["hands"][1 - me]);
        hidden.extend(ids(&deal["draw_pile"]));
        Tracker {
            me,
            mine: ids(&deal["hands"][me]),
            hidden,
            public: BTreeSet::new(),
            gathered: BTreeSet::new(),
            started: false,
        }
    }

    /// A card leaves `seat`'s hand for the table.
    fn play(&mut self, seat: usize, card: &Value) {
        let id = card["id"].as_u64().unwrap();
        let held = if seat == self.me {
            self.mine.remove(&id)
        } else {
            self.public.remove(&id) || self.hidden.remove(&id)
        };
        assert!(held, "seat {seat} played {card} it did not hold");
    }

    /// Applies the events of one state message (`m`'s view is the state after them).
    fn apply(&mut self, m: &Value) {
        let view = &m["view"];
        self.gathered.clear();
        for e in m["events"].as_array().unwrap() {
            let seat = e["seat"].as_u64().map(|s| s as usize);
            match e["type"].as_str().unwrap() {
                "round_started" => self.started = true,
                "drew" if seat == Some(self.me) => {
                    let new: Vec<u64> =
                        ids(&view["hand"]).difference(&self.mine).copied().collect();
                    assert_eq!(new.len(), 1, "one card drawn: {m}");
                    assert!(
                        self.hidden.remove(&new[0]),
                        "the drawn card came from the pile"
                    );
                    self.mine.insert(new[0]);
                }
                "joker_played" => {
                    self.play(seat.unwrap(), &e["card"]);
                    if !e["bonus"].is_null() {
                        self.play(seat.unwrap(), &e["bonus"]["card"]);
                    }
                }
                "run_card_played" | "restarted" | "reaction_played" => {
                    self.play(seat.unwrap(), &e["card"])
                }
                "small_wild_played" => {
                    self.play(seat.unwrap(), &e["card"]);
                    let r = e["replaced"]["id"].as_u64().unwrap();
                    if seat == Some(self.me) {
                        self.mine.insert(r);
                    } else {
                        self.public.insert(r);
                    }
                }
                "refilled" => {
                    // the new pile is what is now in nobody's hand and not on the table.
                    let mut table = BTreeSet::new();
                    cards_in(&view["columns"], &mut table);
                    let gathered: Vec<u64> = (0..26)
                        .filter(|c| {
                            !self.mine.contains(c)
                                && !self.public.contains(c)
                                && !self.hidden.contains(c)
                                && !table.contains(c)
                        })
                        .collect();
                    assert_eq!(gathered.len() as u64, e["cards"].as_u64().unwrap(), "{m}");
                    self.hidden.extend(&gathered);
                    self.gathered.extend(gathered);
                }
                "drew" | "passed" | "game_over" | "round_dealt" => {}
                other => panic!("unknown fibfib event {other}: {e}"),
            }
        }
    }
}

/// Prefers plays that empty the hand, then drawing. A 4 keeps the hand's size, so it is
/// used only to take back a joker (always playable next turn) or a 2 or 3 (which fit any
/// opening): a player who never parts with its 4s can never win. The first of the best.
fn greedy(legal: &[Value]) -> Value {
    let score = |a: &Value| match a["type"].as_str().unwrap() {
        "play_joker" if !a["bonus"].is_null() => 6,
        "play_run_card" | "play_reaction" => 5,
        "play_restart" => 4,
        "play_small_wild" if a["replace"]["rank"] == "joker" => 4,
        "play_joker" => 3,
        "play_small_wild" if ["two", "three"].contains(&a["replace"]["rank"].as_str().unwrap()) => {
            3
        }
        "draw" => 2,
        "pass" => 1,
        _ => 0,
    };
    legal.iter().max_by_key(|a| score(a)).unwrap().clone()
}

async fn create_fibfib(p: &Player) -> String {
    let (s, v) = p
        .post(
            "/api/tables",
            json!({"game": "fibfib", "seats": 2, "bots": "random"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    v["table"]["id"].as_str().unwrap().to_string()
}

/// A whole game against the random bot, on SQLite and Postgres: it ends in a win, loss or
/// draw, the result is stored and read back after a restart, a refused move names
/// its code, and no message shows the bot's hand or the draw pile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fibfib_whole_game_vs_bot_on_every_database() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let table = create_fibfib(&ada).await;
        let mut sock = ada.connect(&table).await;
        let st = sock.next_state().await;
        assert_eq!(status(&st), "open");
        let me = my_seat(&st).unwrap() as usize;
        let (s, v) = ada
            .post(&format!("/api/tables/{table}/start"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");

        // Play to the end, keeping every state message for the check below.
        let mut seen: Vec<Value> = Vec::new();
        let mut refused_once = false;
        let mut moves = 0;
        let end = loop {
            let m = sock.next().await;
            match m["type"].as_str() {
                Some("state") => {}
                Some("error") if m["code"] == "stale_version" => continue,
                _ => panic!("{}: unexpected message {m}", db.label),
            }
            seen.push(m.clone());
            if status(&m) == "finished" {
                break m;
            }
            if !my_turn(&m) {
                continue;
            }
            let legal = m["legal"].as_array().unwrap().clone();
            let version = m["version"].as_u64().unwrap();
            // Once: a pass while drawing is possible is refused by name and changes nothing.
            if !refused_once && legal.iter().any(|a| a["type"] == "draw") {
                refused_once = true;
                sock.act(version, &json!({"type": "pass"})).await;
                let e = sock.next_error().await;
                assert_eq!(e["code"], "pass_not_allowed", "{e}");
                assert_eq!(e["version"], version, "a refusal changes nothing");
            }
            sock.act(version, &greedy(&legal)).await;
            moves += 1;
        };
        assert!(moves > 0 && refused_once);

        // The result, in the view and in the table (R-47: win/loss/draw, 1-0 or 0-0).
        let result = &end["view"]["result"];
        assert!(
            result.is_object(),
            "{}: finished without a result: {end}",
            db.label
        );
        let winner = result["winner"].as_u64().map(|w| w as usize);
        let scores: Vec<i64> = end["table"]["scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let winners: Vec<usize> = end["table"]["winners"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        match winner {
            Some(w) => {
                assert_eq!(result["reason"], "emptied_hand");
                assert_eq!(end["view"]["hand_counts"][w], 0, "the winner has no cards");
                assert_eq!(winners, vec![w]);
                assert_eq!(scores[w], 1);
                assert_eq!(scores[1 - w], 0);
            }
            None => {
                assert!(["two_passes", "turn_limit"].contains(&result["reason"].as_str().unwrap()));
                assert!(winners.is_empty());
                assert_eq!(scores, vec![0, 0]);
            }
        }
        assert!(end["legal"].as_array().unwrap().is_empty());
        eprintln!(
            "{}: fibfib game over after {moves} moves of Ada: {result}",
            db.label
        );

        // the seed is revealed, and the deal record is the ground truth for the replay.
        let (s, deal) = ada.get(&format!("/api/tables/{table}/rounds/1/deal")).await;
        assert_eq!(s, 200, "{deal}");
        let mut t = Tracker::new(&deal["deal"], me);
        for m in &seen {
            t.apply(m);
            if !t.started {
                assert!(m["view"].is_null());
                continue;
            }
            let v = &m["view"];
            let at = &m["version"];
            assert_eq!(
                ids(&v["hand"]),
                t.mine,
                "the replay agrees with the view at {at}"
            );
            let opp = v["hand_counts"][1 - me].as_u64().unwrap() as usize;
            let pile = v["draw_pile"].as_u64().unwrap() as usize;
            assert_eq!(t.hidden.len() + t.public.len(), opp + pile, "at {at}");
            let mut named = BTreeSet::new();
            cards_in(m, &mut named);
            let leaked: Vec<_> = named
                .intersection(&t.hidden)
                .filter(|c| !t.gathered.contains(c))
                .collect();
            assert!(
                leaked.is_empty(),
                "{}: version {at} names hidden cards {leaked:?}: {m}",
                db.label
            );
        }
        assert!(t.started);

        // Stored: a fresh server on the same database still knows the result.
        server.stop().await;
        let server = Server::start(&db).await;
        let ada = ada.at(&server.base, &server.ws);
        let (s, mine) = ada.get("/api/me/matches").await;
        assert_eq!(s, 200, "{mine}");
        let row = mine
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["table_id"] == table.as_str())
            .unwrap_or_else(|| panic!("{}: the match is not stored: {mine}", db.label));
        assert_eq!(row["game"], "fibfib");
        assert_eq!(row["status"], "finished");
        assert_eq!(row["score"], scores[me]);
        match winner {
            Some(w) => assert_eq!(row["won"], json!(w == me), "{row}"),
            None => assert_ne!(row["won"], json!(true), "{row}"),
        }
        // Against bots: not rated.
        let (s, r) = ada.get(&format!("/api/players/{}/ratings", ada.id)).await;
        assert_eq!((s, &r), (200, &json!([])), "{r}");
        let (s, rounds) = ada.get(&format!("/api/tables/{table}/rounds")).await;
        assert_eq!(s, 200, "{rounds}");
        assert!(rounds[0]["seed"].is_string(), "{rounds}");
        server.stop().await;
    }
}

/// In Chromium: a human holding a joker and a 2 or 3 plays the joker (a new column) and
/// then the 2 or 3 on a highlighted opening, through the table UI only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fibfib_browser_joker_and_first_run_card() {
    crate::browser::run_script("fibfib.mjs").await;
}

/// Two people play a whole game through the server on every database; the match is rated
/// (ratings, Glicko-2): the winner gains what the loser loses (162.31 each between
/// newcomers), a draw leaves both at 1500, and both have one rated match. A match against a bot is not rated
/// (see `whole_trump_match_on_every_database`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fibfib_between_two_people_is_rated() {
    for db in databases().await {
        let server = Server::start(&db).await;
        let ada = Player::guest(&server.base, &server.ws, "Ada").await;
        let bob = Player::guest(&server.base, &server.ws, "Bob").await;
        let (s, v) = ada
            .post("/api/tables", json!({"game": "fibfib", "seats": 2}))
            .await;
        assert_eq!(s, 201, "{v}");
        let table = v["table"]["id"].as_str().unwrap().to_string();
        let (s, v) = bob
            .post(&format!("/api/tables/{table}/join"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let (s, v) = ada
            .post(&format!("/api/tables/{table}/start"), json!({}))
            .await;
        assert_eq!(s, 200, "{v}");
        let mut a = ada.connect(&table).await;
        let mut b = bob.connect(&table).await;
        let done = |s: &Value| status(s) == "finished";
        let ((end, _), _) = tokio::join!(
            play_until(&mut a, greedy, done),
            play_until(&mut b, greedy, done)
        );
        let winners: Vec<u64> = end["table"]["winners"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_u64)
            .collect();
        // A duel (Glicko-2) between newcomers (1500, RD 350): the winner goes to 1662.31,
        // the loser to 1337.69; a draw leaves both at 1500; one rated match each.
        let rating = |p: &Player| {
            let p = p.clone();
            async move {
                let (s, r) = p.get(&format!("/api/players/{}/ratings", p.id)).await;
                assert_eq!(s, 200, "{r}");
                assert_eq!(
                    (&r[0]["game"], &r[0]["pool"]),
                    (&json!("fibfib"), &json!("duel")),
                    "{r}"
                );
                assert_eq!(r[0]["matches"], 1, "{r}");
                (r[0]["rating"].as_f64().unwrap() * 100.0).round() / 100.0
            }
        };
        let (ra, rb) = (rating(&ada).await, rating(&bob).await);
        let seat_of = |name: &str| {
            end["table"]["seats"]
                .as_array()
                .unwrap()
                .iter()
                .position(|s| s["name"] == name)
                .unwrap() as u64
        };
        let expected = match winners.as_slice() {
            [w] if *w == seat_of("Ada") => (1662.31, 1337.69),
            [w] if *w == seat_of("Bob") => (1337.69, 1662.31),
            _ => (1500.0, 1500.0),
        };
        assert_eq!((ra, rb), expected, "{}: winners {winners:?}", db.label);
        server.stop().await;
    }
}
