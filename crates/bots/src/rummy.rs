//! Bots for the rummy family (Fibonacci 21 / 13 / 8, and Solitaire). The normal bot takes
//! the discard when it is a wild, the bonus card or a base card it can still use; opens as
//! soon as the view offers an opening (the rules crate computes the canonical one); then
//! closes complete sets, starts sets with real base cards, adds standard cards (a wild
//! only when it completes a set, so wilds are kept), and discards its least useful card:
//! dead base cards (their set is already down) and high standard cards first (they cost
//! the most if an opponent goes out, R-22). It never takes cards back or shuffles them
//! between sets, so it cannot loop. Out-of-turn moves are not played yet. The hard
//! bot has no sampler yet and plays as the normal one.

use game_core::Seat;
use rummy::{Action, Card, CardKind, Rummy, View};

use crate::{BotGame, BotRng, argmax};

/// How much the viewer wants to keep `card` in hand.
fn keep(view: &View, me: Seat, card: Card) -> i64 {
    let started = |n: u8| view.tables[me].sets.iter().any(|s| s.key == n);
    match card.kind {
        CardKind::Wild => 1000,
        CardKind::Bonus => 500,
        CardKind::Base { number } if started(number) => 0,
        CardKind::Base { .. } => 300,
        CardKind::Standard { number } => 60 - i64::from(number),
    }
}

fn card_by_id(view: &View, id: u8) -> Option<Card> {
    view.hand.iter().flatten().copied().find(|c| c.id == id)
}

fn score(view: &View, me: Seat, a: &Action) -> i64 {
    let set_total = |key: u8| {
        view.tables[me]
            .sets
            .iter()
            .find(|s| s.key == key)
            .map_or(0, |s| s.total)
    };
    match a {
        Action::CloseSet { .. } => 900,
        Action::Open { .. } => 800,
        Action::AddToSet { set, card, number } => {
            let Some(c) = card_by_id(view, *card) else {
                return -1000;
            };
            let value = number.or(c.number()).unwrap_or(0);
            let completes = set_total(*set) + u32::from(value) == u32::from(view.target);
            match (c.is_wild(), completes) {
                (false, true) => 760,
                (true, true) => 700,
                (false, false) => 600 + i64::from(value),
                (true, false) => -1000,
            }
        }
        Action::StartSet { card, .. } => match card_by_id(view, *card).map(|c| c.kind) {
            Some(CardKind::Base { .. }) | Some(CardKind::Bonus) => 650,
            _ => -1000,
        },
        Action::ExchangeWild { .. } => 640,
        Action::DrawDiscard => {
            let useful = view.discard_top.is_some_and(|c| keep(view, me, c) >= 300);
            if useful { 300 } else { 100 }
        }
        Action::DrawStock => 250,
        Action::Discard { card } => match card_by_id(view, *card) {
            Some(c) => 200 - keep(view, me, c),
            None => -1000,
        },
        Action::TakeBack { .. }
        | Action::RestoreBase { .. }
        | Action::SetWildNumber { .. }
        | Action::MoveCard { .. } => -2000,
    }
}

impl BotGame for Rummy {
    fn view_seat(view: &View) -> Option<Seat> {
        view.viewer.seat()
    }

    fn normal(view: &View, legal: &[Action], _rng: &mut BotRng) -> usize {
        let Some(me) = view.viewer.seat() else {
            return 0;
        };
        argmax(legal, |a| score(view, me, a))
    }

    /// Solitaire scores the discard count, lower is better.
    fn value(state: &Rummy, seat: Seat) -> f64 {
        let s = game_core::Game::scores(state);
        if s.len() == 1 {
            return -(s[0] as f64);
        }
        let best_other = (0..s.len())
            .filter(|&i| i != seat)
            .map(|i| s[i])
            .max()
            .unwrap_or(0);
        (s[seat] - best_other) as f64
    }
}
