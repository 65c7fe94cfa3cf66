//! Seeded bot-vs-bot matches recorded as a [`MatchInput`], as the store would log them:
//! for the tests and the cost example.

use game_core::{Phase, Seed};
use games::{BotBudget, BotLevel};
use serde_json::Value;

use crate::MatchInput;

/// The seed of round `round` of recorded match `game`.
pub fn round_seed(game: u64, round: u32) -> Seed {
    let mut b = [0u8; 32];
    b[..8].copy_from_slice(&game.to_le_bytes());
    b[8..12].copy_from_slice(&round.to_le_bytes());
    b[12..18].copy_from_slice(b"record");
    Seed(b)
}

/// A whole match of `kind` between bots of `levels` (one per seat), seeded by `game`; a
/// hard bot searches `samples` determinizations. Off-turn moves are asked for right
/// after each seat's own move, as the server does.
pub fn bot_match(
    kind: &str,
    options: &Value,
    levels: &[BotLevel],
    game: u64,
    samples: u32,
) -> Result<MatchInput, String> {
    let players = levels.len();
    let (mut g, _) = games::new_match(kind, options, players).map_err(|e| format!("{e:?}"))?;
    let mut seeds = Vec::new();
    let mut actions = Vec::new();
    let budget = BotBudget {
        time: None,
        samples: Some(samples),
    };
    let mut n = 0u64;
    loop {
        match g.phase() {
            Phase::Finished => break,
            Phase::AwaitingRound => {
                let seed = round_seed(game, g.round() + 1);
                g.start_round(&seed).map_err(|e| e.to_string())?;
                seeds.push(seed);
            }
            Phase::Playing => {
                let seat = *g.to_act().first().ok_or("nobody to act")?;
                let a = g
                    .bot_action(seat, levels[seat], game.wrapping_mul(7919) + n, budget)
                    .ok_or("a bot has no move")?;
                g.apply_json(seat, &a).map_err(|e| e.to_string())?;
                actions.push((g.round(), seat, a));
                n += 1;
                while g.phase() == Phase::Playing && !g.to_act().contains(&seat) {
                    let Some(a) = g.bot_off_turn_action(seat, levels[seat]) else {
                        break;
                    };
                    g.apply_json(seat, &a).map_err(|e| e.to_string())?;
                    actions.push((g.round(), seat, a));
                    n += 1;
                }
                if n > 200_000 {
                    return Err("the match does not end".into());
                }
            }
        }
    }
    Ok(MatchInput {
        game: kind.to_string(),
        options: options.clone(),
        players,
        seeds,
        actions,
    })
}
