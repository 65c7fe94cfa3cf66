//! Bots for Fibonachos. A seat that wins no trick in a round scores 34, more than a
//! fair share of the 35 spicy points; once it has a trick, what counts is the spicy value
//! of the tricks it wins, and landing on a Fibonacci total (scored as the next one). The
//! normal bot ducks every trick while it has none, then takes tricks worth 3 or more (or
//! that land its total on a Fibonacci number) and ducks the rest, dumping its highest
//! losing card. Whether a card wins is judged with R-53 (two fibonachos in a trick: the
//! highest fibonacho wins; ties go to the card played last). The hard bot samples the
//! unseen cards (other hands, the set-aside cards, the face-down spicy cards), leaving out
//! the round's played cards, which the view lists.

use game_core::Seat;
use nachos::{Action, Card, NachosMatch, NachosView, SPICY_DECK, canonical_deck};

use crate::{BotGame, BotRng, argmax};

/// Does `card`, played now by the viewer, take the lead of `trick`?
fn takes_lead(trick: &[Card], card: Card) -> bool {
    let mut all: Vec<Card> = trick.to_vec();
    all.push(card);
    winner_index(&all) == all.len() - 1
}

/// R-53, as in the rules crate: with two or more fibonachos the highest fibonacho wins,
/// else the highest card of the lead suit; ties go to the card played last.
fn winner_index(trick: &[Card]) -> usize {
    let fib = trick.iter().filter(|c| c.is_fibonacho()).count() >= 2;
    let lead = trick[0].suit;
    let mut best: Option<usize> = None;
    for (i, c) in trick.iter().enumerate() {
        let eligible = if fib {
            c.is_fibonacho()
        } else {
            c.suit == lead
        };
        if eligible && best.is_none_or(|b| c.number >= trick[b].number) {
            best = Some(i);
        }
    }
    best.unwrap_or(0)
}

fn is_fibonacci(n: u32) -> bool {
    matches!(n, 1 | 2 | 3 | 5 | 8 | 13 | 21 | 34)
}

fn card_of(a: &Action) -> Card {
    let Action::Play { card } = a;
    *card
}

impl BotGame for NachosMatch {
    fn view_seat(view: &NachosView) -> Option<Seat> {
        view.viewer
    }

    fn normal(view: &NachosView, legal: &[Action], _rng: &mut BotRng) -> usize {
        let Some(me) = view.viewer else { return 0 };
        let cards: Vec<Card> = legal.iter().map(card_of).collect();
        let trick: Vec<Card> = view.trick.iter().map(|p| p.card.card()).collect();
        let pile = &view.spicy_piles[me];
        let stake = u32::from(view.spicy_at_stake.unwrap_or(0));
        let want = !pile.cards.is_empty() && (stake >= 3 || is_fibonacci(pile.total + stake));
        let last = trick.len() + 1 == view.players;
        let n = |c: &Card| i64::from(c.number);
        if trick.is_empty() {
            // Leading: a low card loses to anyone who follows; a high one tends to win.
            return argmax(&cards, |c| if want { n(c) } else { -n(c) });
        }
        let wins = |c: &Card| takes_lead(&trick, *c);
        argmax(&cards, |c| match (want, wins(c)) {
            // Take it: cheapest sure winner when last, else the strongest.
            (true, true) => 1000 + if last { -n(c) } else { n(c) },
            (true, false) => -n(c),
            // Duck: the highest card that still loses, so it is gone before it hurts.
            (false, false) => 1000 + n(c),
            (false, true) => -n(c),
        })
    }

    fn determinize(view: &NachosView, rng: &mut BotRng) -> Option<NachosMatch> {
        let me = view.viewer?;
        let mut seen = [false; 45];
        let own: Vec<Card> = view.hand.iter().flatten().map(|c| c.card()).collect();
        let trick_cards = view.trick.iter().map(|p| p.card.card());
        // The round's completed tricks are listed in the view (played face up).
        let played = view.played.iter().map(|c| c.card());
        for c in own.iter().copied().chain(trick_cards).chain(played) {
            seen[c.index()] = true;
        }
        let mut pool: Vec<Card> = canonical_deck()
            .into_iter()
            .filter(|c| !seen[c.index()])
            .collect();
        rng.shuffle(&mut pool);
        let mut hands = vec![Vec::new(); view.players];
        for (s, h) in hands.iter_mut().enumerate() {
            if s == me {
                *h = own.clone();
            } else {
                *h = pool.split_off(pool.len().checked_sub(view.hand_counts[s])?);
            }
        }
        let set_aside = pool.split_off(pool.len().checked_sub(view.set_aside_count)?);
        let mut spicy: Vec<u8> = SPICY_DECK.to_vec();
        for v in view
            .spicy_piles
            .iter()
            .flat_map(|p| p.cards.iter())
            .chain(view.spicy_at_stake.iter())
        {
            let i = spicy.iter().position(|x| x == v)?;
            spicy.swap_remove(i);
        }
        rng.shuffle(&mut spicy);
        NachosMatch::from_view_and_hidden(view, hands, set_aside, spicy).ok()
    }
}
