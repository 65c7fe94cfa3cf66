//! Bots for Fibonacci's Trump. What counts is winning the cards that bear the round's
//! symbol (R-33, points grow fast with the count) and the last trick, which takes both
//! indicators. The normal bot wins tricks that hold symbol cards with the cheapest
//! sure winner when it plays last and with its strongest card otherwise, never feeds a
//! symbol card to a trick it is not winning, and dumps its weakest card when nothing is
//! at stake. The hard bot samples the unseen cards (the other hands: the view lists the
//! round's played cards, so those are never dealt again) and splits the played cards into
//! won piles with every seat's counts and symbol counts, for determinized Monte Carlo.

use game_core::Seat;
use trump::{Action, Card, Colour, Symbol, Trump, TrumpView, cards::DECK_SIZE};

use crate::{BotGame, BotRng, argmax};

/// How hard `card` is to beat in a trick led with `led` (0: it cannot win at all).
fn strength(card: Card, led: Colour, trump: Colour) -> i64 {
    if card.colour() == trump {
        100 + i64::from(card.number())
    } else if card.colour() == led {
        i64::from(card.number())
    } else {
        0
    }
}

fn card_of(a: &Action) -> Card {
    let Action::Play { card } = a;
    *card
}

impl BotGame for Trump {
    fn view_seat(view: &TrumpView) -> Option<Seat> {
        view.viewer.seat()
    }

    fn normal(view: &TrumpView, legal: &[Action], _rng: &mut BotRng) -> usize {
        let (Some(trump), Some(symbol)) = (view.trump_colour, view.symbol) else {
            return 0;
        };
        let is_sym = |c: Card| c.symbol() == symbol;
        let cards: Vec<Card> = legal.iter().map(card_of).collect();
        // Dumping: the card least worth keeping and least worth giving away.
        let dump = |c: &Card| {
            -(i64::from(is_sym(*c)) * 200
                + i64::from(c.colour() == trump) * 50
                + i64::from(c.number()))
        };
        let Some(first) = view.trick.first() else {
            // Leading: cash a high plain card, else lead low and keep trumps and symbols.
            return argmax(&cards, |c| {
                let plain = !is_sym(*c) && c.colour() != trump;
                match (plain, c.number() >= 9) {
                    (true, true) => 1000 + i64::from(c.number()),
                    (true, false) => 500 - i64::from(c.number()),
                    _ => dump(c),
                }
            });
        };
        let led = first.card.colour();
        let best = view
            .trick
            .iter()
            .map(|p| strength(p.card, led, trump))
            .max()
            .unwrap_or(0);
        let last = view.trick.len() + 1 == view.players;
        let last_trick = (view.tricks_played as usize + 1) * view.players >= DECK_SIZE - 2;
        let mut value = view.trick.iter().filter(|p| is_sym(p.card)).count() as i64;
        if last_trick {
            value += [view.trump_indicator, view.symbol_indicator]
                .iter()
                .flatten()
                .filter(|c| is_sym(**c))
                .count() as i64
                + 1;
        }
        let wins = |c: &Card| strength(*c, led, trump) > best;
        let any_win = cards.iter().any(wins);
        let sym_win = cards.iter().any(|c| wins(c) && is_sym(*c));
        if any_win && (value > 0 || (last && sym_win)) {
            return argmax(&cards, |c| {
                if !wins(c) {
                    return i64::MIN / 2;
                }
                let s = strength(*c, led, trump);
                // Last: the cheapest winner, a symbol card first (it scores for us).
                // Otherwise the strongest, to keep the trick against those still to play.
                if last {
                    i64::from(is_sym(*c)) * 1000 - s
                } else {
                    s * 10 + i64::from(is_sym(*c))
                }
            });
        }
        argmax(&cards, |c| dump(c) - i64::from(wins(c)) * 30)
    }

    fn determinize(view: &TrumpView, rng: &mut BotRng) -> Option<Trump> {
        let me = view.viewer.seat()?;
        let symbol = view.symbol?;
        let n = view.players;
        // Seen: own hand, the trick on the table, the indicators, and every card of the
        // round's completed tricks (the view lists them; all were played face up).
        let mut known = 0u64;
        for c in view.hand.iter().flatten() {
            known |= c.bit();
        }
        for p in &view.trick {
            known |= p.card.bit();
        }
        for c in [view.trump_indicator?, view.symbol_indicator?] {
            known |= c.bit();
        }
        for c in &view.played {
            known |= c.bit();
        }
        // Won piles: the played cards, split to match every seat's counts. Which played
        // card sits in whose pile does not change the rest of the round (only the symbol
        // counts score), so any split with the right counts will do.
        let (mut sym, mut plain): (Vec<Card>, Vec<Card>) =
            view.played.iter().partition(|c| c.symbol() == symbol);
        rng.shuffle(&mut sym);
        rng.shuffle(&mut plain);
        let mut won: Vec<Vec<Card>> = vec![Vec::new(); n];
        for (s, pile) in won.iter_mut().enumerate() {
            let need_sym = view.symbol_counts[s] as usize;
            let need_plain = (view.won_counts[s] as usize).checked_sub(need_sym)?;
            *pile = sym.split_off(sym.len().checked_sub(need_sym)?);
            pile.extend(plain.split_off(plain.len().checked_sub(need_plain)?));
        }
        // Hands: the unseen cards, dealt at random with the right counts.
        let mut rest: Vec<Card> = (0..DECK_SIZE)
            .map(Card::from_index)
            .filter(|c| known & c.bit() == 0)
            .collect();
        rng.shuffle(&mut rest);
        let mut hands: Vec<Vec<Card>> = vec![Vec::new(); n];
        for (s, hand) in hands.iter_mut().enumerate() {
            if s == me {
                *hand = view.hand.clone()?;
            } else {
                let k = view.hand_counts[s] as usize;
                *hand = rest.split_off(rest.len().checked_sub(k)?);
            }
        }
        Trump::from_view_and_hidden(view, &hands, &won).ok()
    }
}

/// Symbol of a card, re-exported for tests that build positions.
#[allow(dead_code)]
pub(crate) fn symbol_of(c: Card) -> Symbol {
    c.symbol()
}
