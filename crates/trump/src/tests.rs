//! Scenario tests per ruling (R-30..R-34), deterministic replay, and properties over
//! thousands of seeded random games.

use game_core::{DeckRng, Game, Phase, Seed, Viewer, codes};

use crate::cards::{Card, Colour, DECK_SIZE, FULL_DECK, Symbol, cards_of};
use crate::{Action, Event, MUST_FOLLOW_COLOUR, Options, Round, SYMBOL_POINTS, Trump, deal};

fn c(colour: Colour, number: u8) -> Card {
    Card::new(colour, number)
}

fn bits(cards: &[Card]) -> u64 {
    cards.iter().fold(0, |a, c| a | c.bit())
}

fn play(card: Card) -> Action {
    Action::Play { card }
}

/// A match in progress with explicit hands (round `round_one` selects R-31's first lead).
fn with_hands(
    hands: &[&[Card]],
    trump_ind: Card,
    symbol_ind: Card,
    dealer: usize,
    round_one: bool,
) -> Trump {
    let n = hands.len();
    let mut g = Trump::new_match(&Options::default(), n).unwrap();
    let mut hb = [0u64; 4];
    for (s, h) in hands.iter().enumerate() {
        hb[s] = bits(h);
    }
    let r = deal::from_hands(
        n,
        hb,
        trump_ind,
        symbol_ind,
        dealer,
        round_one,
        Card::canonical_deck(),
        Vec::new(),
    );
    g.round = Some(r);
    g.round_no = 1;
    g.phase = Phase::Playing;
    g
}

fn round(g: &Trump) -> &Round {
    g.round.as_ref().unwrap()
}

/// Plays random legal moves (chosen from the view's legal actions) until the round ends.
fn random_round(g: &mut Trump, rng: &mut DeckRng, log: &mut Vec<(usize, Action)>) {
    while g.phase() == Phase::Playing {
        let seat = g.to_act()[0];
        let legal = g.legal_actions_for(seat);
        let a = legal[rng.below(legal.len())].clone();
        g.apply(seat, &a).unwrap();
        log.push((seat, a));
    }
}

#[test]
fn smoke_random_match_ends() {
    for players in 2..=4 {
        let mut g = Trump::new_match(&Options::default(), players).unwrap();
        let mut rng = Seed::from_u64(1000 + players as u64).rng();
        let mut log = Vec::new();
        let mut r = 0;
        while g.phase() == Phase::AwaitingRound {
            r += 1;
            g.start_round(&Seed::from_u64(r)).unwrap();
            random_round(&mut g, &mut rng, &mut log);
            assert!(r < 500);
        }
        let o = g.outcome().unwrap();
        assert_eq!(o.winners.len(), 1);
        assert!(o.scores.iter().any(|&s| s >= 144));
    }
}
