//! Dealing a round from its seed.
//!
//! The round's random stream (`seed.rng()`) is used in this order:
//! 1. Round 1 only, the draw for the first dealer: the canonical deck is shuffled
//!    and the seats draw one card each in seat order; the highest number deals (colours
//!    do not rank); seats tied for the highest draw again, in seat order, from the rest
//!    of that shuffled deck (reshuffled from the canonical order should it run out). The
//!    drawn cards go back: they are not the deal.
//! 2. The canonical deck is shuffled (Fisher–Yates, `DeckRng::shuffle`). Deck positions
//!    0..48 are dealt one at a time, position `i` to seat `(dealer + 1 + i) mod players`;
//!    position 48 is the trump indicator, position 49 the symbol indicator.

use game_core::{Seat, Seed};

use crate::cards::{Card, Colour, DECK_SIZE};
use crate::{DealerDraw, MAX_PLAYERS, Round};

/// Deals a round. `dealer` is the known dealer of a later round, or `None` in
/// round 1, when it is drawn.
pub(crate) fn deal(seed: &Seed, players: usize, dealer: Option<Seat>) -> Round {
    let mut rng = seed.rng();
    let mut dealer_draw = Vec::new();
    let dealer = match dealer {
        Some(d) => d,
        None => draw_dealer(&mut rng, players, &mut dealer_draw, &mut || {
            Card::canonical_deck().to_vec()
        }),
    };
    deal_with_dealer(&mut rng, players, dealer, dealer_draw)
}

/// the seats draw from a shuffled deck (`fresh` gives the deck in canonical order),
/// highest number deals, tied seats draw again from the rest of that deck; when the rest
/// cannot give every tied seat a card, a fresh deck is shuffled. Every card drawn is
/// recorded in `record`.
pub(crate) fn draw_dealer(
    rng: &mut game_core::DeckRng,
    players: usize,
    record: &mut Vec<DealerDraw>,
    fresh: &mut dyn FnMut() -> Vec<Card>,
) -> Seat {
    let mut deck = fresh();
    rng.shuffle(&mut deck);
    let mut pos = 0;
    let mut contenders: Vec<Seat> = (0..players).collect();
    loop {
        if pos + contenders.len() > deck.len() {
            deck = fresh();
            rng.shuffle(&mut deck);
            pos = 0;
        }
        let mut best = 0;
        let mut drawn = [0u8; MAX_PLAYERS];
        for (k, &seat) in contenders.iter().enumerate() {
            let card = deck[pos];
            pos += 1;
            record.push(DealerDraw { seat, card });
            drawn[k] = card.number();
            best = best.max(card.number());
        }
        let mut k = 0;
        contenders.retain(|_| {
            k += 1;
            drawn[k - 1] == best
        });
        if contenders.len() == 1 {
            return contenders[0];
        }
    }
}

fn deal_with_dealer(
    rng: &mut game_core::DeckRng,
    players: usize,
    dealer: Seat,
    dealer_draw: Vec<DealerDraw>,
) -> Round {
    let mut deck = Card::canonical_deck();
    rng.shuffle(&mut deck);
    let mut hands = [0u64; MAX_PLAYERS];
    for (i, c) in deck[..DECK_SIZE - 2].iter().enumerate() {
        hands[(dealer + 1 + i) % players] |= c.bit();
    }
    let round_one = !dealer_draw.is_empty();
    from_hands(
        players,
        hands,
        deck[DECK_SIZE - 2],
        deck[DECK_SIZE - 1],
        dealer,
        round_one,
        deck,
        dealer_draw,
    )
}

/// Builds a round from explicit hands and indicators (also used by the scenario tests).
/// `round_one` selects the first-lead rule: lowest trump in any hand, else the
/// dealer leads.
#[allow(clippy::too_many_arguments)]
pub(crate) fn from_hands(
    players: usize,
    hands: [u64; MAX_PLAYERS],
    trump_indicator: Card,
    symbol_indicator: Card,
    dealer: Seat,
    round_one: bool,
    deck: [Card; DECK_SIZE],
    dealer_draw: Vec<DealerDraw>,
) -> Round {
    let trump = trump_indicator.colour();
    let leader = if round_one {
        lowest_trump_holder(&hands[..players], trump).unwrap_or(dealer)
    } else {
        dealer
    };
    Round {
        hands,
        won: [0; MAX_PLAYERS],
        tricks_won: [0; MAX_PLAYERS],
        trump_indicator,
        symbol_indicator,
        trump,
        symbol: symbol_indicator.symbol(),
        indicators_taken: false,
        dealer,
        leader,
        turn: leader,
        trick: [Card::from_index(0); MAX_PLAYERS],
        trick_len: 0,
        tricks_played: 0,
        last_trick: None,
        plays: [Card::from_index(0); DECK_SIZE - 2],
        deck,
        dealt: hands,
        dealer_draw,
        first_leader: leader,
    }
}

/// the seat holding the lowest card of the trump colour. Cards lying as indicators
/// are in no hand, so they are passed over automatically.
pub(crate) fn lowest_trump_holder(hands: &[u64], trump: Colour) -> Option<Seat> {
    let mask = trump.mask();
    hands
        .iter()
        .enumerate()
        .filter(|(_, h)| *h & mask != 0)
        .min_by_key(|(_, h)| (*h & mask).trailing_zeros())
        .map(|(s, _)| s)
}
