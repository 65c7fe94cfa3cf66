//! Bots for Fib-Fibonacci. The race is to empty the hand, so the normal bot prefers
//! whatever sheds a card: a reaction (R-45, it also blocks), a run card (the highest value
//! first: closing runs early feeds the next refill, R-46), a restart, a joker; it draws
//! only when it cannot shed, and uses a small wild (a 4: one card down, one card up) only
//! before passing. The hard bot has no sampler yet and plays as the normal one.

use fibfib::{Action, FibFib, FibFibView};
use game_core::Seat;

use crate::{BotGame, BotRng};

fn rank(a: &Action) -> i64 {
    match a {
        Action::PlayReaction { .. } => 600,
        Action::PlayRunCard { card, value, .. } => {
            500 + i64::from(value.unwrap_or_else(|| card.rank().face()))
        }
        Action::PlayRestart { .. } => 400,
        Action::PlayJoker { bonus, .. } => 300 + i64::from(bonus.is_some()) * 10,
        Action::Draw => 200,
        Action::PlaySmallWild { .. } => 100,
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
