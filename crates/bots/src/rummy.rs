//! Bots for the rummy family (Fibonacci 21 / 13 / 8, and Solitaire). The normal bot takes
//! the discard when it is a wild, the bonus card or a base card it can still use; opens as
//! soon as the view offers an opening (the rules crate computes the canonical one); then
//! closes complete sets, starts sets with real base cards, adds standard cards (a wild
//! only when it completes a set, so wilds are kept), and discards its least useful card:
//! dead base cards (their set is already down) and high standard cards first (they cost
//! the most if an opponent goes out, R-22). It never takes cards back or shuffles them
//! between sets without a purpose, so it cannot loop. The R-18 moves (legal out of turn and
//! on the own turn): it moves a card into a set that it completes (never out of a complete
//! set), raises a wild to complete its set, or lowers one so that a hand card completes
//! it. Normal makes them as soon as they appear, which is in its own turn (its sets change
//! only then), before discarding. The hard bot's search sometimes discards first; then
//! [`BotGame::off_turn`] makes them while the next player is on turn (the server and the
//! simulator ask right after a bot's turn passes). The hard bot samples the unseen cards (other hands, the stock, the discard
//! pile under its top: `Rummy::from_view_and_hidden`), tries only the moves the normal bot
//! could make (taking cards back or moving them for nothing could go on without end), and
//! judges short rollouts by what every seat would score if the round ended there.

use game_core::Seat;
use rummy::{Action, Card, CardKind, Rummy, SetView, View};

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
    let t = u32::from(view.target);
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
        // R-18 moves (legal on the own turn too): only when they complete a set (which is
        // then closed, or closed next turn) or, for a wild, make room for a hand card that
        // completes it. A complete set is never taken apart, so the moves cannot loop.
        Action::MoveCard { from, to, card } => {
            let (Some(src), Some(dst)) = (set_of(view, me, *from), set_of(view, me, *to)) else {
                return -2000;
            };
            let Some(p) = src.cards.iter().find(|p| p.card.id == *card) else {
                return -2000;
            };
            if !src.complete && dst.total + u32::from(p.value) == t {
                780
            } else {
                -2000
            }
        }
        Action::SetWildNumber { set, card, number } => {
            let Some(s) = set_of(view, me, *set) else {
                return -2000;
            };
            let Some(p) = s.cards.iter().find(|p| p.card.id == *card) else {
                return -2000;
            };
            let total = s.total - u32::from(p.value) + u32::from(*number);
            let fills =
                |c: &Card| !c.is_wild() && c.number().is_some_and(|n| total + u32::from(n) == t);
            if s.complete {
                -2000
            } else if total == t {
                770
            } else if *number < p.value && view.hand.iter().flatten().any(fills) {
                620
            } else {
                -2000
            }
        }
        Action::TakeBack { .. } | Action::RestoreBase { .. } => -2000,
    }
}

fn set_of(view: &View, me: Seat, key: u8) -> Option<&SetView> {
    view.tables[me]
        .sets
        .iter()
        .find(|s| s.key == key && !s.closed)
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

    /// Off turn, the same rearrangements the normal bot makes on its own turn: a
    /// move or a wild's new number that completes a set, or lowers a wild for a hand card.
    fn off_turn(view: &View, legal: &[Action]) -> Option<usize> {
        let me = view.viewer.seat()?;
        let i = argmax(legal, |a| score(view, me, a));
        (score(view, me, legal.get(i)?) > 0).then_some(i)
    }

    /// Only the moves the normal bot would ever make: taking cards back or shuffling them
    /// between sets for nothing could go on without end.
    fn worth_trying(view: &View, action: &Action) -> bool {
        view.viewer
            .seat()
            .is_some_and(|me| score(view, me, action) > -1000)
    }

    /// The unseen cards (other hands, the stock, the discard pile under its top) dealt at
    /// random with the right counts, and a fresh stream for the R-21 reshuffle.
    fn determinize(view: &View, rng: &mut BotRng) -> Option<Rummy> {
        let me = view.viewer.seat()?;
        let own = view.hand.as_ref()?;
        let mut seen: Vec<u8> = own.iter().map(|c| c.id).collect();
        seen.extend(view.discard_top.map(|c| c.id));
        for t in &view.tables {
            seen.extend(
                t.sets
                    .iter()
                    .flat_map(|s| s.cards.iter().map(|p| p.card.id)),
            );
        }
        let mut unseen: Vec<Card> = rummy::cards::deck(view.target)
            .into_iter()
            .filter(|c| !seen.contains(&c.id))
            .collect();
        rng.shuffle(&mut unseen);
        let mut hands = Vec::with_capacity(view.players);
        for (s, t) in view.tables.iter().enumerate() {
            hands.push(if s == me {
                own.clone()
            } else {
                unseen.split_off(unseen.len().checked_sub(t.hand_count)?)
            });
        }
        let stock = unseen.split_off(unseen.len().checked_sub(view.stock_count)?);
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
        Rummy::from_view_and_hidden(view, hands, stock, unseen, &game_core::Seed(b)).ok()
    }

    /// Match scores plus, while the round goes on, what each seat would score if it ended
    /// now (`Rummy::standing`). Solitaire scores the discard count, lower is better.
    fn value(state: &Rummy, seat: Seat) -> f64 {
        let mut s = game_core::Game::scores(state);
        if s.len() == 1 {
            if game_core::Game::phase(state) == game_core::Phase::Playing {
                // Unfinished: judged by what is still in hand and open on the table.
                return state.standing()[0] as f64 / 10.0 - 89.0;
            }
            return -(s[0] as f64);
        }
        for (x, st) in s.iter_mut().zip(state.standing()) {
            *x += st;
        }
        let best_other = (0..s.len())
            .filter(|&i| i != seat)
            .map(|i| s[i])
            .max()
            .unwrap_or(0);
        (s[seat] - best_other) as f64
    }

    const ROLLOUT_LIMIT: usize = ROLLOUT;
}

/// Rollout length in actions (about a turn each for two players), then judged by
/// `Rummy::standing`.
const ROLLOUT: usize = 12;
