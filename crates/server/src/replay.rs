//! Step replays of finished matches (`GET /api/tables/{id}/replay`). The match is rebuilt
//! from its stored seeds and action log by the rules crates, as a restore does (R-0), and
//! every seat's view is recorded after every step. Views are sent once in full and then as
//! JSON Patches per step (the same diff the live sockets use), which keeps a long match
//! small: the browser applies them forwards and keeps the documents to step back.

use game_core::{Phase, Seed, Viewer};
use protocol::{Replay, ReplayRound, ReplaySeat, ReplayStep, patch};
use serde_json::Value;
use store::{Occupant, StoredTable};

/// Rebuilds `st` step by step. An `Err` means the stored log does not replay (an internal
/// error: it was accepted by the same rules).
pub fn build(st: &StoredTable) -> Result<Replay, String> {
    let n = st.seats.len();
    let (mut game, _) =
        games::new_match(&st.record.game, &st.record.options, n).map_err(|e| e.to_string())?;
    let views_now = |g: &dyn games::DynGame| -> Vec<Value> {
        (0..n).map(|s| g.view_json(Viewer::Player(s))).collect()
    };
    let mut rounds = Vec::with_capacity(st.rounds.len());
    let mut steps: Vec<ReplayStep> = Vec::new();
    let mut first_views: Option<Vec<Value>> = None;
    let mut prev: Vec<Value> = Vec::new();
    let mut actions = st.actions.iter().peekable();
    let step = |prev: &mut Vec<Value>, now: Vec<Value>, round: u32, seat, action| {
        let patches = prev
            .iter()
            .zip(&now)
            .map(|(a, b)| patch::diff(a, b))
            .collect();
        *prev = now;
        ReplayStep {
            round,
            seat,
            action,
            patches,
        }
    };
    for r in &st.rounds {
        let seed = Seed::from_hex(&r.seed_hex).ok_or("a stored seed is not 64 hex digits")?;
        game.start_round(&seed).map_err(|e| e.to_string())?;
        let round = r.round_no as u32;
        let first_step = steps.len();
        let now = views_now(game.as_ref());
        if first_views.is_none() {
            first_views = Some(now.clone());
            prev = now;
            steps.push(ReplayStep {
                round,
                seat: None,
                action: None,
                patches: vec![Vec::new(); n],
            });
        } else {
            steps.push(step(&mut prev, now, round, None, None));
        }
        while let Some(a) = actions.next_if(|a| a.round_no == r.round_no) {
            game.apply_json(a.seat as usize, &a.action)
                .map_err(|e| format!("round {} action {}: {e}", a.round_no, a.seq))?;
            let now = views_now(game.as_ref());
            steps.push(step(
                &mut prev,
                now,
                round,
                Some(a.seat as usize),
                Some(a.action.clone()),
            ));
        }
        rounds.push(ReplayRound {
            round,
            seed: r.seed_hex.clone(),
            seed_sha256: r.commitment.clone(),
            deal: game.deal_record(),
            first_step,
        });
    }
    if game.phase() != Phase::Finished {
        return Err("the stored log does not reach the end of the match".into());
    }
    let outcome = game.outcome().ok_or("a finished match has an outcome")?;
    Ok(Replay {
        table_id: st.record.id,
        game: st.record.game.clone(),
        options: st.record.options.clone(),
        rules_version: game.rules_version(),
        seats: st
            .seats
            .iter()
            .map(|o| match o {
                Occupant::Player { id, name } => ReplaySeat::Player {
                    id: *id,
                    name: name.clone(),
                },
                Occupant::Bot { level } => ReplaySeat::Bot {
                    level: level.clone(),
                },
                Occupant::Empty => ReplaySeat::Empty,
            })
            .collect(),
        rounds,
        views: first_views.unwrap_or_default(),
        steps,
        final_scores: outcome.scores,
        winners: outcome.winners,
    })
}

/// The checks of `verify-match`, one JSON line per round and one for the result.
pub fn check_match(replay: &protocol::Replay) -> Result<Vec<String>, String> {
    let n = replay.seats.len();
    let (mut g, _) =
        games::new_match(&replay.game, &replay.options, n).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    // protocol.md §5.1: both are lower-case hex; the same rule for the two.
    let lower_hex =
        |s: &str| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    for r in &replay.rounds {
        if !lower_hex(&r.seed) {
            return Err(format!(
                "round {}: the seed must be 64 lower-case hex digits",
                r.round
            ));
        }
        if !lower_hex(&r.seed_sha256) {
            return Err(format!(
                "round {}: the commitment must be 64 lower-case hex digits",
                r.round
            ));
        }
        let seed = Seed::from_hex(&r.seed).ok_or(format!("round {}: bad seed", r.round))?;
        if seed.commitment() != r.seed_sha256 {
            return Err(format!(
                "round {}: the seed does not hash to the commitment {}",
                r.round, r.seed_sha256
            ));
        }
        g.start_round(&seed)
            .map_err(|e| format!("round {}: {e}", r.round))?;
        let published = games::current_deal_record(&replay.game, &r.deal);
        let dealt = g.deal_record();
        let moves: Vec<_> = replay
            .steps
            .iter()
            .filter(|s| s.round == r.round)
            .filter_map(|s| Some((s.seat?, s.action.as_ref()?)))
            .collect();
        for (k, (seat, action)) in moves.iter().enumerate() {
            g.apply_json(*seat, action).map_err(|e| {
                // A deal that differs already is the likelier cause (a seed changed with
                // its commitment): said first. (A record may grow during the round, with a
                // reshuffle's cards: then it differs at the start of an honest round too.)
                let deal = if dealt != published {
                    "the deal recomputed from the seed differs from the published one, and "
                } else {
                    ""
                };
                format!("round {}: {deal}move {} is refused: {e}", r.round, k + 1)
            })?;
        }
        // The record is read after the round: it holds the round's later shuffles from the
        // same seed too (R-21's reshuffle, R-46's refill).
        // A replay saved before Trump's cards were codes publishes them as objects: the
        // same deal (a walk found every such replay refused as "differs").
        let recomputed = g.deal_record();
        let published = games::current_deal_record(&replay.game, &r.deal);
        if recomputed != published {
            return Err(format!(
                "round {}: the deal recomputed from the seed differs from the published one \
                 at {}",
                r.round,
                first_difference(&recomputed, &published, String::new())
            ));
        }
        out.push(
            serde_json::json!({"round": r.round, "seed_sha256": r.seed_sha256, "moves": moves.len(), "deal": "ok"})
                .to_string(),
        );
    }
    let outcome = g
        .outcome()
        .ok_or("the moves do not finish the match".to_string())?;
    if outcome.scores != replay.final_scores || outcome.winners != replay.winners {
        return Err(format!(
            "the result differs: recomputed scores {:?}, winners {:?}",
            outcome.scores, outcome.winners
        ));
    }
    out.push(check_steps(replay)?);
    out.push(
        serde_json::json!({"result": "ok", "scores": outcome.scores, "winners": outcome.winners})
            .to_string(),
    );
    Ok(out)
}

/// Where two JSON values first differ, as a JSON Pointer (`/hands/1/3`; empty: the whole
/// value), with the two values there: what an auditor needs to find a forged card.
fn first_difference(want: &Value, got: &Value, at: String) -> String {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (x, y) = (a.get(k), b.get(k));
                if x != y {
                    let here = format!("{at}/{k}");
                    return match (x, y) {
                        (Some(x), Some(y)) => first_difference(x, y, here),
                        (Some(_), None) => format!("{here} (missing)"),
                        _ => format!("{here} (not in the recomputed deal)"),
                    };
                }
            }
            format!("{at} (equal?)")
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            match a.iter().zip(b).position(|(x, y)| x != y) {
                Some(i) => first_difference(&a[i], &b[i], format!("{at}/{i}")),
                None => format!("{at} (equal?)"),
            }
        }
        _ => {
            let at = if at.is_empty() {
                "the record".to_string()
            } else {
                at
            };
            format!("{at}: recomputed {want}, published {got}")
        }
    }
}

/// The rest of a replay document: every view and patch a replay page draws, and where each
/// round begins, must be exactly what its seeds and moves give (a walk changed a card of a
/// hand the page shows, and the check above still said "ok"). A replay saved before Trump's
/// cards were codes shows them otherwise: its views are not compared.
fn check_steps(replay: &protocol::Replay) -> Result<String, String> {
    if replay
        .rounds
        .iter()
        .any(|r| games::current_deal_record(&replay.game, &r.deal) != r.deal)
    {
        return Ok(
            serde_json::json!({"views": "not checked: a replay saved before cards were codes"})
                .to_string(),
        );
    }
    let again = build(&stored_from(replay))?;
    let json = |p: &Vec<Vec<patch::PatchOp>>| serde_json::to_value(p).unwrap_or(Value::Null);
    if again.views != replay.views {
        return Err("the views of the first deal differ from what the seeds give".into());
    }
    if again.steps.len() != replay.steps.len() {
        return Err(format!(
            "the replay has {} steps where the seeds and moves give {}",
            replay.steps.len(),
            again.steps.len()
        ));
    }
    for (k, (want, got)) in again.steps.iter().zip(&replay.steps).enumerate() {
        if want.round != got.round || json(&want.patches) != json(&got.patches) {
            return Err(format!(
                "step {k} (round {}): its views differ from what the seeds and moves give",
                got.round
            ));
        }
    }
    for (want, got) in again.rounds.iter().zip(&replay.rounds) {
        if want.first_step != got.first_step {
            return Err(format!(
                "round {}: it begins at step {}, not {}",
                got.round, want.first_step, got.first_step
            ));
        }
    }
    Ok(serde_json::json!({"views": "ok", "steps": replay.steps.len()}).to_string())
}

/// A stored table as the replay document tells it: what [`build`] rebuilds from.
fn stored_from(replay: &protocol::Replay) -> StoredTable {
    let mut actions = Vec::new();
    for r in &replay.rounds {
        let moves = replay
            .steps
            .iter()
            .filter(|s| s.round == r.round)
            .filter_map(|s| Some((s.seat?, s.action.clone()?)));
        for (seq, (seat, action)) in moves.enumerate() {
            actions.push(store::ActionRecord {
                round_no: r.round as i32,
                seq: seq as i64,
                seat: seat as i32,
                action,
            });
        }
    }
    StoredTable {
        record: store::TableRecord {
            id: replay.table_id,
            game: replay.game.clone(),
            options: replay.options.clone(),
            rules_version: replay.rules_version as i32,
            seat_count: replay.seats.len() as i32,
            private: false,
            invite_code: None,
            created_by: uuid::Uuid::nil(),
            created_at: 0,
            status: store::TableStatus::Finished,
            bots: None,
            daily: None,
            pace: Value::Null,
            clock: None,
            updated_at: 0,
        },
        seats: replay
            .seats
            .iter()
            .map(|s| match s {
                ReplaySeat::Player { id, name } => Occupant::Player {
                    id: *id,
                    name: name.clone(),
                },
                ReplaySeat::Bot { level } => Occupant::Bot {
                    level: level.clone(),
                },
                ReplaySeat::Empty => Occupant::Empty,
            })
            .collect(),
        scores: Vec::new(),
        rounds: replay
            .rounds
            .iter()
            .map(|r| store::RoundRecord {
                round_no: r.round as i32,
                seed_hex: r.seed.clone(),
                commitment: r.seed_sha256.clone(),
                started_at: 0,
                ended_at: Some(0),
                result: None,
            })
            .collect(),
        actions,
        abandoned: vec![false; replay.seats.len()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::{ActionRecord, RoundRecord, TableRecord, TableStatus};
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
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), objects(v))).collect())
            }
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
        let doc = include_str!("../../../docs/deals.md");
        let seed =
            Seed::from_hex("0100000000000000000000000000000000000000000000000000000000000000")
                .unwrap();
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
}

/// The replays built lately, as the JSON sent: a finished match's replay never changes,
/// and building a long one costs a few hundred milliseconds of CPU (a walk held up play
/// for everyone with five anonymous requests a second). Bounded by bytes; the oldest built
/// goes first.
pub struct Cache {
    inner: std::sync::Mutex<CacheInner>,
    budget: usize,
}

/// Who may see a cached replay: what the private-table rule reads of the stored table,
/// which a finished match no longer changes. A cache hit is checked against it without
/// loading the table (its whole action log) again.
#[derive(Clone, Debug)]
pub struct Access {
    pub private: bool,
    pub invite_code: Option<String>,
    /// The people seated at it: they see it without the invite code.
    pub players: Vec<uuid::Uuid>,
}

impl Access {
    pub fn of(st: &store::StoredTable) -> Access {
        Access {
            private: st.record.private,
            invite_code: st.record.invite_code.clone(),
            players: st
                .seats
                .iter()
                .filter_map(|o| match o {
                    store::Occupant::Player { id, .. } => Some(*id),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// A cached replay: its JSON and who may see it.
pub type Cached = (axum::body::Bytes, std::sync::Arc<Access>);

#[derive(Default)]
struct CacheInner {
    by_table: std::collections::HashMap<uuid::Uuid, Cached>,
    order: std::collections::VecDeque<uuid::Uuid>,
    bytes: usize,
}

impl Cache {
    /// A cache that holds at most `budget` bytes of replays.
    pub fn new(budget: usize) -> Self {
        Cache {
            inner: std::sync::Mutex::default(),
            budget,
        }
    }

    pub fn get(&self, table: uuid::Uuid) -> Option<Cached> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_table
            .get(&table)
            .cloned()
    }

    /// Keeps `json` as `table`'s replay, seen by whom `access` says; one larger than the
    /// whole budget is not kept.
    pub fn put(&self, table: uuid::Uuid, json: axum::body::Bytes, access: Access) {
        if json.len() > self.budget {
            return;
        }
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let len = json.len();
        if let Some((old, _)) = c
            .by_table
            .insert(table, (json, std::sync::Arc::new(access)))
        {
            c.bytes -= old.len();
        } else {
            c.order.push_back(table);
        }
        c.bytes += len;
        while c.bytes > self.budget {
            let Some(oldest) = c.order.pop_front() else {
                break;
            };
            if let Some((gone, _)) = c.by_table.remove(&oldest) {
                c.bytes -= gone.len();
            }
        }
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    #[test]
    fn the_cache_keeps_to_its_budget_oldest_out_first() {
        let c = Cache::new(10);
        let (a, b, d) = (
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
        );
        let open = || Access {
            private: false,
            invite_code: None,
            players: vec![],
        };
        c.put(a, axum::body::Bytes::from_static(b"aaaa"), open());
        c.put(b, axum::body::Bytes::from_static(b"bbbb"), open());
        assert!(c.get(a).is_some() && c.get(b).is_some());
        c.put(d, axum::body::Bytes::from_static(b"dddd"), open());
        assert!(c.get(a).is_none(), "the oldest went");
        assert_eq!(c.get(d).unwrap().0.as_ref(), &b"dddd"[..]);
        c.put(a, axum::body::Bytes::from(vec![0; 11]), open());
        assert!(c.get(a).is_none(), "larger than the budget: not kept");
    }
}
