//! Bots for Fib-Fibonacci. The race is to empty the hand, so the normal bot plays
//! whatever sheds a card (a reaction first, R-45: it also answers the opponent's 7 or 8;
//! then a run card, restart or joker, at random among them), then a small wild (a 4 can
//! leave the hand no other way, R-43), and draws only when it can do nothing else.
//! Measured: ranking the small wild below the draw kept 4s in hand for good and lost to
//! the random bot. The hard bot has no sampler yet and plays as the normal one.

use fibfib::{Action, FibFib, FibFibView};
use game_core::Seat;

use crate::{BotGame, BotRng};

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
}
