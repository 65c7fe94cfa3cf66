//! Bots for Fib-Fibonacci. The race is to empty the hand, so the normal bot plays
//! whatever sheds a card (a reaction first, R-45: it also answers the opponent's 7 or 8;
//! then a run card, restart or joker, at random among them), then a small wild (a 4 can
//! leave the hand no other way, R-43), and draws only when it can do nothing else.
//! Measured: ranking the small wild below the draw kept 4s in hand for good and lost to
//! the random bot. The hard bot samples the hidden cards (the opponent's hand and the
//! draw pile: everything neither in the own hand nor face up on the table, dealt at random
//! with the right counts, and a fresh stream for future refills) for determinized Monte
//! Carlo with short rollouts judged by the hand sizes (see [`ROLLOUT`]).

use fibfib::{Action, Card, DECK_SIZE, FibFib, FibFibView};
use game_core::{Game, Seat, Seed, Viewer};

use crate::{BotGame, BotRng};

/// Rollout length: the move, then two more actions, judged by the hand sizes. Measured
/// against normal: 2 → 69% (200 games, 16 samples) and 74.5% (64 samples); 4 → 72% (200
/// games, 16 or 64 samples); 6 → 69% (100 games, 16 samples); 16 → 50% (40 games, 4
/// samples); 40 → 64% (100 games, 16 samples). Long random races are mostly noise.
const ROLLOUT: usize = 2;

fn rank(a: &Action) -> i64 {
    match a {
        Action::PlayReaction { .. } => 600,
        Action::PlayRunCard { .. } | Action::PlayRestart { .. } | Action::PlayJoker { .. } => 500,
        Action::Draw => 200,
        Action::PlaySmallWild { .. } => 450,
        Action::Pass => 0,
    }
}

impl BotGame for FibFib {
    fn view_seat(view: &FibFibView) -> Option<Seat> {
        view.viewer.seat()
    }

    fn normal(_view: &FibFibView, legal: &[Action], rng: &mut BotRng) -> usize {
        // Random among the best-ranked moves, so two normal bots do not loop forever.
        let top = legal.iter().map(rank).max().unwrap_or(0);
        let best: Vec<usize> = (0..legal.len())
            .filter(|&i| rank(&legal[i]) == top)
            .collect();
        best[rng.below(best.len())]
    }

    fn determinize(view: &FibFibView, rng: &mut BotRng) -> Option<FibFib> {
        let me = view.viewer.seat()?;
        let mut seen = [false; DECK_SIZE];
        for c in view.hand.iter().flatten() {
            seen[usize::from(c.id())] = true;
        }
        for col in &view.columns {
            let mut up = Vec::new();
            col.base.iter().for_each(|c| up.push(*c));
            for s in &col.sides {
                up.extend(s.side.ended.iter().map(|l| l.card()));
                up.extend(s.side.restart);
                up.extend(s.side.run.iter().map(|p| p.card));
            }
            up.extend(col.reactions.iter().map(|r| r.card));
            for c in up {
                seen[usize::from(c.id())] = true;
            }
        }
        let mut unseen: Vec<Card> = Card::deck()
            .into_iter()
            .filter(|c| !seen[usize::from(c.id())])
            .collect();
        rng.shuffle(&mut unseen);
        let k = *view.hand_counts.get(1 - me)?;
        let pile = unseen.split_off(k.min(unseen.len()));
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
        FibFib::from_view_and_hidden(view, unseen, pile, &Seed(b)).ok()
    }

    /// Won: 1, lost: −1; a rollout cut short: the difference in hand sizes, scaled so
    /// that it never outweighs a finished game.
    fn value(state: &FibFib, seat: Seat) -> f64 {
        let s = state.scores();
        if state.phase() != game_core::Phase::Playing {
            return (s[seat] - s[1 - seat]) as f64;
        }
        let v = state.view_for(Viewer::Spectator);
        (v.hand_counts[1 - seat] as f64 - v.hand_counts[seat] as f64) / 30.0
    }

    const ROLLOUT_LIMIT: usize = ROLLOUT;
}
