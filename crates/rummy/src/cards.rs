//! Cards and decks of the rummy family: every physical card has a stable id
//! (its position in the deck's canonical order) because the deck holds many identical
//! cards and players move specific ones.
//!
//! Canonical order of a deck (ids 0, 1, 2, ... in this order; the shuffle of R-0 starts
//! from it): the base cards by number ascending (four of each base number, then the four
//! cards T), then the standard cards by number ascending (twelve of each), then the three
//! wilds, then the bonus cards (two, Deck 21 and Deck 13 only).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a card is. Serialized inside [`Card`] as `"kind"` plus `"number"` where it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CardKind {
    /// A base card (rabbits): starts the set of its number. Base T is "card T".
    Base { number: u8 },
    /// A standard card: added to sets (or, R-23, starts a non-rabbit set).
    Standard { number: u8 },
    /// A wild: stands for any number of the game, chosen when laid (R-17a).
    Wild,
    /// The bonus card: a base 2 with two 3s printed on it, worth 8 toward T.
    Bonus,
}

/// One physical card, e.g. `{"id":17,"kind":"base","number":13}`, `{"id":84,"kind":"wild"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
pub struct Card {
    pub id: u8,
    #[serde(flatten)]
    pub kind: CardKind,
}

/// Written as the flattened form reads, member by member: serde writes a flattened field
/// through a map of its own, which made writing a view's cards most of writing the view.
impl Serialize for Card {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (kind, number) = match self.kind {
            CardKind::Base { number } => ("base", Some(number)),
            CardKind::Standard { number } => ("standard", Some(number)),
            CardKind::Wild => ("wild", None),
            CardKind::Bonus => ("bonus", None),
        };
        let mut s = serializer.serialize_struct("Card", 2 + usize::from(number.is_some()))?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("kind", kind)?;
        match number {
            Some(n) => s.serialize_field("number", &n)?,
            None => s.skip_field("number")?,
        }
        s.end()
    }
}

/// What the bonus card counts toward T (base 2 + 3 + 3, R-11).
pub const BONUS_VALUE: u8 = 8;

impl Card {
    /// The printed number (bonus: 2, its base number; wild: none).
    pub fn number(self) -> Option<u8> {
        match self.kind {
            CardKind::Base { number } | CardKind::Standard { number } => Some(number),
            CardKind::Bonus => Some(2),
            CardKind::Wild => None,
        }
    }
    pub fn is_wild(self) -> bool {
        self.kind == CardKind::Wild
    }
    /// Sort key for a hand: by number, base before standard, then bonus, then wilds.
    pub fn sort_key(self) -> (u8, u8, u8) {
        match self.kind {
            CardKind::Base { number } => (number, 0, self.id),
            CardKind::Standard { number } => (number, 1, self.id),
            CardKind::Bonus => (200, 0, self.id),
            CardKind::Wild => (201, 0, self.id),
        }
    }
    /// Penalty when left in an open set: wild 50, bonus 8, else the number.
    pub fn table_penalty(self) -> i64 {
        match self.kind {
            CardKind::Wild => 50,
            CardKind::Bonus => 8,
            CardKind::Base { number } | CardKind::Standard { number } => i64::from(number),
        }
    }
    /// Penalty when left in the hand: twice the table penalty (wild 100, bonus 16).
    pub fn hand_penalty(self) -> i64 {
        2 * self.table_penalty()
    }
}

/// The game's numbers below T: base numbers, one set each, and the numbers a wild may take
/// when it is not card T (R-17a).
pub fn base_numbers(target: u8) -> &'static [u8] {
    match target {
        21 => &[2, 3, 5, 8, 13],
        13 => &[2, 3, 5, 8],
        _ => &[2, 3, 5],
    }
}

/// Sets needed to go out: one per base number plus the one-card set T.
pub fn required_sets(target: u8) -> usize {
    base_numbers(target).len() + 1
}

/// Base sets the opening must start besides card T (R-16 table).
pub fn opening_base_sets(target: u8) -> usize {
    match target {
        21 => 3,
        13 => 2,
        _ => 1,
    }
}

/// Whether `card` may serve as card T, the one-card set (R-10: in Fibonacci 8 any 8).
pub fn is_card_t(card: Card, target: u8) -> bool {
    match card.kind {
        CardKind::Base { number } => number == target,
        CardKind::Standard { number } => target == 8 && number == 8,
        _ => false,
    }
}

/// The deck for target T in canonical order: 89, 73 or 67 cards.
pub fn deck(target: u8) -> Vec<Card> {
    let mut kinds = Vec::with_capacity(89);
    let bases = base_numbers(target);
    for &n in bases.iter().chain(std::iter::once(&target)) {
        for _ in 0..4 {
            kinds.push(CardKind::Base { number: n });
        }
    }
    // Deck 21 keeps all five standard numbers; Deck 13 drops the standard 13s; Deck 8
    // drops all 13s but keeps the standard 8s (any 8 may be card 8).
    let standards: &[u8] = match target {
        21 => &[2, 3, 5, 8, 13],
        _ => &[2, 3, 5, 8],
    };
    for &n in standards {
        for _ in 0..12 {
            kinds.push(CardKind::Standard { number: n });
        }
    }
    for _ in 0..3 {
        kinds.push(CardKind::Wild);
    }
    if target != 8 {
        kinds.push(CardKind::Bonus);
        kinds.push(CardKind::Bonus);
    }
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Card { id: i as u8, kind })
        .collect()
}

/// Rank of a card when drawing for the first dealer: its number (bonus 2, wild 0).
pub fn dealer_draw_rank(card: Card) -> u8 {
    card.number().unwrap_or(0)
}

#[cfg(test)]
mod wire_tests {
    use super::*;
    use serde_json::json;

    /// Written member by member, a card is what its flattened form reads.
    #[test]
    fn cards_are_written_as_they_read() {
        for (card, wire) in [
            (
                Card {
                    id: 17,
                    kind: CardKind::Base { number: 13 },
                },
                json!({"id": 17, "kind": "base", "number": 13}),
            ),
            (
                Card {
                    id: 3,
                    kind: CardKind::Standard { number: 5 },
                },
                json!({"id": 3, "kind": "standard", "number": 5}),
            ),
            (
                Card {
                    id: 84,
                    kind: CardKind::Wild,
                },
                json!({"id": 84, "kind": "wild"}),
            ),
            (
                Card {
                    id: 90,
                    kind: CardKind::Bonus,
                },
                json!({"id": 90, "kind": "bonus"}),
            ),
        ] {
            let text = serde_json::to_string(&card).unwrap();
            assert_eq!(text, wire.to_string());
            assert_eq!(serde_json::from_str::<Card>(&text).unwrap(), card);
        }
    }
}
