//! The 26-card Fib-Fibonacci deck and how a card looks on the wire.
//!
//! Canonical order (the order before any shuffle, and the card ids):
//! * ids 0–1: the two jokers;
//! * ids 2–21: spades, hearts, diamonds, clubs, each 2, 3, 5, 7, 8
//!   (id = 2 + 5 × suit + position of the rank in [2, 3, 5, 7, 8]);
//! * ids 22–23: 4 of spades, 4 of hearts; ids 24–25: 6 of diamonds, 6 of clubs
//!   (the suits of 4s and 6s are only for show, R-40).
//!
//! On the wire a card is `{"id":9,"rank":"five","suit":"hearts"}`, a joker
//! `{"id":0,"rank":"joker"}`. When a card is read back (in an action) the rank and suit must
//! match the id, so a client can never name a card that is not the one it means.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Number of cards in the deck.
pub const DECK_SIZE: usize = 26;

/// A card's rank. Jokers are base cards; 4 is the small wild, 6 the big wild.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Rank {
    Joker,
    Two,
    Three,
    Four,
    Five,
    Six,
    Seven,
    Eight,
}

impl Rank {
    /// Face value (a joker has none: 0).
    pub fn face(self) -> u32 {
        match self {
            Rank::Joker => 0,
            Rank::Two => 2,
            Rank::Three => 3,
            Rank::Four => 4,
            Rank::Five => 5,
            Rank::Six => 6,
            Rank::Seven => 7,
            Rank::Eight => 8,
        }
    }
}

/// A suit. Only the 7/8 reaction cares about suits.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Suit {
    Spades,
    Hearts,
    Diamonds,
    Clubs,
}

const SUITS: [Suit; 4] = [Suit::Spades, Suit::Hearts, Suit::Diamonds, Suit::Clubs];
const SUITED: [Rank; 5] = [Rank::Two, Rank::Three, Rank::Five, Rank::Seven, Rank::Eight];

/// One card of the deck, identified by its id `0..26` (see the module header). Copy and
/// one byte, so hands and piles are cheap.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(try_from = "CardWire")]
pub struct Card(u8);

/// Each card's wire form, written once ([`game_core::json_texts`]).
static CARD_TEXT: std::sync::LazyLock<[Box<RawValue>; DECK_SIZE]> =
    std::sync::LazyLock::new(|| game_core::json_texts(|i| CardWire::from(Card(i as u8))));

impl Serialize for Card {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CARD_TEXT[self.0 as usize].serialize(serializer)
    }
}

impl Card {
    /// The card with this id, if it exists.
    pub fn from_id(id: u8) -> Option<Card> {
        ((id as usize) < DECK_SIZE).then_some(Card(id))
    }
    pub fn id(self) -> u8 {
        self.0
    }
    pub fn rank(self) -> Rank {
        match self.0 {
            0 | 1 => Rank::Joker,
            2..=21 => SUITED[(self.0 as usize - 2) % 5],
            22 | 23 => Rank::Four,
            _ => Rank::Six,
        }
    }
    /// Jokers have no suit.
    pub fn suit(self) -> Option<Suit> {
        match self.0 {
            0 | 1 => None,
            2..=21 => Some(SUITS[(self.0 as usize - 2) / 5]),
            22 => Some(Suit::Spades),
            23 => Some(Suit::Hearts),
            24 => Some(Suit::Diamonds),
            _ => Some(Suit::Clubs),
        }
    }
    /// The whole deck in canonical order.
    pub fn deck() -> Vec<Card> {
        (0..DECK_SIZE as u8).map(Card).collect()
    }
    /// Display order for hands: by rank, then suit, then id.
    pub fn sort_key(self) -> (Rank, Option<Suit>, u8) {
        (self.rank(), self.suit(), self.0)
    }
    /// the card that may answer this one (7 ↔ 8 of the same suit), if any.
    pub fn reaction_partner(self) -> Option<Card> {
        match self.rank() {
            // 7 and 8 are adjacent in the canonical order of each suit.
            Rank::Seven => Some(Card(self.0 + 1)),
            Rank::Eight => Some(Card(self.0 - 1)),
            _ => None,
        }
    }
}

impl fmt::Debug for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = match self.rank() {
            Rank::Joker => "Jk",
            Rank::Two => "2",
            Rank::Three => "3",
            Rank::Four => "4",
            Rank::Five => "5",
            Rank::Six => "6",
            Rank::Seven => "7",
            Rank::Eight => "8",
        };
        let s = match self.suit() {
            None => "",
            Some(Suit::Spades) => "s",
            Some(Suit::Hearts) => "h",
            Some(Suit::Diamonds) => "d",
            Some(Suit::Clubs) => "c",
        };
        write!(f, "{r}{s}#{}", self.0)
    }
}

/// The wire form of a [`Card`]: `{"id":9,"rank":"five","suit":"hearts"}`, jokers without
/// a suit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Card")]
pub struct CardWire {
    /// Stable id 0–25 (canonical deck order).
    pub id: u8,
    pub rank: Rank,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suit: Option<Suit>,
}

impl From<Card> for CardWire {
    fn from(c: Card) -> Self {
        CardWire {
            id: c.0,
            rank: c.rank(),
            suit: c.suit(),
        }
    }
}

impl TryFrom<CardWire> for Card {
    type Error = String;
    fn try_from(w: CardWire) -> Result<Self, String> {
        let c = Card::from_id(w.id).ok_or_else(|| format!("no card has id {}", w.id))?;
        if c.rank() != w.rank || c.suit() != w.suit {
            return Err(format!(
                "card id {} is {}, not {}",
                w.id,
                in_words(c.rank(), c.suit()),
                in_words(w.rank, w.suit)
            ));
        }
        Ok(c)
    }
}

/// A card as a message says it, in the wire's names: `the five of hearts`, `a joker`, `the
/// four` (a 4 or 6 named without its suit).
fn in_words(rank: Rank, suit: Option<Suit>) -> String {
    let name = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let rank = name(serde_json::to_value(rank).expect("a rank is JSON"));
    match suit {
        _ if rank == "joker" => "a joker".to_string(),
        Some(s) => format!(
            "the {rank} of {}",
            name(serde_json::to_value(s).expect("a suit is JSON"))
        ),
        None => format!("the {rank}"),
    }
}

#[cfg(test)]
mod wire_tests {
    use super::*;

    /// The precomputed text of every card is its wire form, as text and as a value, and
    /// reads back as the card.
    #[test]
    fn every_card_is_written_as_its_wire_form() {
        for id in 0..DECK_SIZE as u8 {
            let c = Card::from_id(id).unwrap();
            let wire = CardWire::from(c);
            let text = serde_json::to_string(&c).unwrap();
            assert_eq!(text, serde_json::to_string(&wire).unwrap());
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::to_value(wire).unwrap()
            );
            assert_eq!(serde_json::from_str::<Card>(&text).unwrap(), c);
        }
    }

    /// A card named with another card's id is refused in the wire's words, not Rust's.
    #[test]
    fn a_mismatched_card_is_refused_in_words() {
        let read = |v: serde_json::Value| serde_json::from_value::<Card>(v).unwrap_err();
        let e = read(serde_json::json!({"id": 9, "rank": "two", "suit": "spades"}));
        assert!(
            e.to_string()
                .starts_with("card id 9 is the five of hearts, not the two of spades"),
            "{e}"
        );
        let e = read(serde_json::json!({"id": 0, "rank": "two", "suit": "spades"}));
        assert!(
            e.to_string()
                .starts_with("card id 0 is a joker, not the two of spades"),
            "{e}"
        );
    }
}
