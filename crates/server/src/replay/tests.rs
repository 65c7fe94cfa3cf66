//! Replays built from played matches, and verified back.

use super::*;
use game_core::{Phase, Seed, Viewer};
use protocol::patch;
use serde_json::Value;
use store::{ActionRecord, Occupant, RoundRecord, StoredTable, TableRecord, TableStatus};
use uuid::Uuid;

/// Plays a match of `kind` between easy bots (seeded, so the same every run) and
/// stores it as the store would.
fn played(kind: &str, players: usize) -> StoredTable {
    let (mut g, _) = games::new_match(kind, &Value::Null, players).unwrap();
    let mut rounds = Vec::new();
    let mut actions = Vec::new();
    let mut round_no = 0;
    while g.phase() != Phase::Finished {
        round_no += 1;
        let seed = Seed::from_u64(1000 + round_no as u64);
        g.start_round(&seed).unwrap();
        rounds.push(RoundRecord {
            round_no,
            seed_hex: seed.to_hex(),
            commitment: seed.commitment(),
            started_at: 0,
            ended_at: Some(1),
            result: None,
        });
        let mut seq = 0;
        while g.phase() == Phase::Playing && g.round() == round_no as u32 {
            assert!(seq < 5000, "{kind}: round {round_no} never ends");
            let seat = g.to_act()[0];
            let budget = games::BotBudget {
                time: None,
                samples: Some(1),
            };
            let a = g
                .bot_action(seat, games::BotLevel::Easy, seq as u64, budget)
                .expect("a bot always has a move");
            g.apply_json(seat, &a).unwrap();
            actions.push(ActionRecord {
                round_no,
                seq,
                seat: seat as i32,
                action: a,
            });
            seq += 1;
        }
        assert!(round_no < 200, "{kind} never ends");
    }
    StoredTable {
        record: TableRecord {
            id: Uuid::nil(),
            game: kind.into(),
            options: Value::Null,
            rules_version: g.rules_version() as i32,
            seat_count: players as i32,
            private: false,
            invite_code: None,
            created_by: Uuid::nil(),
            created_at: 0,
            status: TableStatus::Finished,
            bots: None,
            daily: None,
            pace: Value::Null,
            clock: None,
            updated_at: 0,
        },
        seats: vec![
            Occupant::Bot {
                level: "easy".into()
            };
            players
        ],
        scores: g.scores(),
        rounds,
        actions,
        abandoned: vec![false; players],
    }
}

/// Applying the patches from the first views gives, at every step, exactly what the
/// rules show each seat after the same prefix of the log; the end is the outcome.
#[test]
fn replay_patches_rebuild_every_seats_view_at_every_step() {
    for info in games::catalogue() {
        let players = info.min_players.max(2).min(info.max_players);
        let st = played(info.kind, players);
        let replay = build(&st).unwrap();
        assert_eq!(replay.steps.len(), st.actions.len() + st.rounds.len());
        assert_eq!(replay.final_scores, st.scores, "{}", info.kind);
        eprintln!(
            "{}: {} steps, {} bytes",
            info.kind,
            replay.steps.len(),
            serde_json::to_vec(&replay).unwrap().len()
        );
        // Replay the log independently and compare each seat's document.
        let (mut g, _) = games::new_match(info.kind, &Value::Null, players).unwrap();
        let mut docs = replay.views.clone();
        let mut acts = st.actions.iter();
        for (i, s) in replay.steps.iter().enumerate() {
            match (&s.seat, &s.action) {
                (None, None) => {
                    let r = &replay.rounds[(s.round - 1) as usize];
                    assert_eq!(r.first_step, i);
                    g.start_round(&Seed::from_hex(&r.seed).unwrap()).unwrap();
                }
                (Some(seat), Some(a)) => {
                    let stored = acts.next().unwrap();
                    assert_eq!((stored.seat as usize, &stored.action), (*seat, a));
                    g.apply_json(*seat, a).unwrap();
                }
                _ => panic!("a step is a deal or an action"),
            }
            for (seat, doc) in docs.iter_mut().enumerate() {
                patch::apply(doc, &s.patches[seat]).unwrap();
                assert_eq!(*doc, g.view_json(Viewer::Player(seat)), "step {i}");
            }
        }
    }
}

/// A Trump match stored before cards were written as codes (protocol.md §6.2) holds
/// its actions' cards as objects: it replays exactly as the same match stored now, and
/// `verify-match` accepts it.
#[test]
fn a_trump_log_with_the_old_card_objects_still_replays() {
    let st = played("trump", 2);
    let mut old = st.clone();
    for a in &mut old.actions {
        // Stored now as the card's code alone (protocol.md §6.3).
        assert!(a.action.is_string(), "stored now as a code");
        a.action = serde_json::json!({"type": "play", "card": objects(&a.action)});
    }
    let (new, was) = (build(&st).unwrap(), build(&old).unwrap());
    assert_eq!(new.views, was.views);
    assert_eq!(new.final_scores, was.final_scores);
    assert_eq!(new.steps.len(), was.steps.len());
    for (n, o) in new.steps.iter().zip(&was.steps) {
        assert_eq!(n.patches, o.patches);
    }
    check_match(&was).unwrap();
    // A replay file saved from a server of that time: its deals' cards are objects too.
    let mut saved = was.clone();
    for r in &mut saved.rounds {
        r.deal = objects(&r.deal);
    }
    assert_ne!(saved.rounds[0].deal, was.rounds[0].deal);
    check_match(&saved).unwrap();
    // Still refused when a card differs.
    let deck = saved.rounds[0].deal["deck"].as_array_mut().unwrap();
    deck.swap(0, 1);
    assert!(check_match(&saved).unwrap_err().contains("differs"));
}

/// Every card code in `v` (`"r7"`) in the object form of earlier versions.
fn objects(v: &Value) -> Value {
    match v {
        Value::String(code)
            if code.len() >= 2
                && "rygbp".contains(&code[..1])
                && code[1..].parse::<u8>().is_ok_and(|n| (1..=10).contains(&n)) =>
        {
            let c = "rygbp".find(&code[..1]).unwrap();
            let number: usize = code[1..].parse().unwrap();
            // R-30: the symbol of colour c and number n.
            let symbol =
                ["circled_plus", "circle", "square", "star", "waves"][(number - 1 + c) % 5];
            let colour = ["red", "yellow", "green", "blue", "purple"][c];
            serde_json::json!({"colour": colour, "number": number, "symbol": symbol})
        }
        Value::Array(a) => Value::Array(a.iter().map(objects).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), objects(v))).collect()),
        v => v.clone(),
    }
}

/// `verify-match` accepts every game's replay and refuses a changed seed, deal or
/// result, a view or patch the page would draw, or a round's first step; seed and
/// commitment alike are lower-case hex.
#[test]
fn verify_match_checks_seeds_deals_and_result() {
    for info in games::catalogue() {
        let players = info.min_players.max(2).min(info.max_players);
        let replay = build(&played(info.kind, players)).unwrap();
        let lines = check_match(&replay).unwrap();
        assert_eq!(lines.len(), replay.rounds.len() + 2, "{}", info.kind);
        assert!(
            lines[replay.rounds.len()].contains(r#""views":"ok""#),
            "{lines:?}"
        );
        let mut bad = replay.clone();
        bad.rounds[0].seed = bad.rounds[0].seed.to_uppercase();
        let e = check_match(&bad).unwrap_err();
        assert!(e.contains("lower-case"), "{e}");
        let mut bad = replay.clone();
        bad.rounds[0].seed_sha256 = bad.rounds[0].seed_sha256.to_uppercase();
        let e = check_match(&bad).unwrap_err();
        assert!(e.contains("commitment must be"), "{e}");
        // A view of the first deal changed (a string inside it, wherever it is).
        let mut bad = replay.clone();
        bad.views[0] = serde_json::json!({"changed": true});
        let e = check_match(&bad).unwrap_err();
        assert!(e.contains("views of the first deal"), "{e}");
        // A patch of a step changed.
        let mut bad = replay.clone();
        let k = bad.steps.iter().position(|s| s.seat.is_some()).unwrap();
        bad.steps[k].patches[0] = Vec::new();
        bad.steps[k].patches[1] = Vec::new();
        let e = check_match(&bad).unwrap_err();
        assert!(e.contains(&format!("step {k} ")), "{}: {e}", info.kind);
        let mut bad = replay.clone();
        bad.rounds[0].first_step += 1;
        let e = check_match(&bad).unwrap_err();
        assert!(e.contains("begins at step"), "{e}");
        let mut bad = replay.clone();
        bad.rounds[0].seed = Seed::from_u64(1).to_hex();
        assert!(check_match(&bad).unwrap_err().contains("commitment"));
        let mut bad = replay.clone();
        bad.rounds[0].deal = Value::Null;
        assert!(check_match(&bad).unwrap_err().contains("differs"));
        // A changed dealer is named where it is.
        let mut bad = replay.clone();
        let dealer = bad.rounds[0].deal["dealer"].as_u64().unwrap();
        bad.rounds[0].deal["dealer"] = serde_json::json!((dealer + 1) % players as u64);
        let e = check_match(&bad).unwrap_err();
        assert!(
            e.contains(&format!("at /dealer: recomputed {dealer}, published")),
            "{}: {e}",
            info.kind
        );
        let mut bad = replay.clone();
        bad.final_scores[0] += 1;
        assert!(check_match(&bad).unwrap_err().contains("result"));
    }
}

/// docs/deals.md's worked examples: every row of its table is recomputed here.
#[test]
fn the_worked_examples_of_docs_deals_md_hold() {
    let doc = include_str!("../../../../docs/deals.md");
    let seed =
        Seed::from_hex("0100000000000000000000000000000000000000000000000000000000000000").unwrap();
    assert!(doc.contains(&seed.to_hex()));
    let mut rows = 0;
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, game, players, pointer, value, _] = cells[..] else {
            continue;
        };
        let Ok(players) = players.parse::<usize>() else {
            continue;
        };
        let want: Value = serde_json::from_str(value.trim_matches('`')).unwrap();
        let (mut g, _) = games::new_match(game, &Value::Null, players).unwrap();
        g.start_round(&seed).unwrap();
        let record = g.deal_record();
        assert_eq!(record.pointer(pointer), Some(&want), "{line}");
        rows += 1;
    }
    assert!(rows >= 10, "the table of worked examples was not found");
}

/// A log that stops before the match ends is refused, never half-served.
#[test]
fn an_unfinished_log_is_refused() {
    let mut st = played("trump", 2);
    st.rounds.pop();
    assert!(build(&st).is_err());
}
