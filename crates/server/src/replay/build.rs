//! Builds a finished match's replay from its stored table: every seat's view after every
//! step, sent once in full and then as patches.

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
