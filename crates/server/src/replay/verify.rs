//! `verify-match`: a published replay checked from its seeds and actions alone. Each round's
//! deal is recomputed from its revealed seed and compared with the commitment and the
//! published deal, and the whole replay is rebuilt and compared step by step, naming the
//! first difference.

use game_core::Seed;
use protocol::{ReplaySeat, patch};

use super::build;
use serde_json::Value;
use store::{Occupant, StoredTable};

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
