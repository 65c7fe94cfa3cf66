//! The two decks of Fibonachos: the 45 nacho cards that are played to tricks, and
//! the 15 spicy cards that give each trick its value, plus the round scoring table
//! . Everything here is small, `Copy` and allocation-free so that `apply` stays cheap.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The three nacho suits. The rulebook only says "colours"; we name them.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Suit {
    Red,
    Green,
    Yellow,
}

impl Suit {
    /// Canonical suit order: red, green, yellow.
    pub const ALL: [Suit; 3] = [Suit::Red, Suit::Green, Suit::Yellow];
}

/// Numbers that are fibonachos, as a bit mask indexed by number: 1, 2, 3, 5, 8, 13.
const FIBONACHO_MASK: u16 = (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 8) | (1 << 13);

/// One physical nacho card. Each suit holds two 1s; `copy` (0 or 1) tells them
/// apart so that an action names exactly one card. Every other number has only `copy` 0.
/// On the wire: `{"suit":"red","number":1,"copy":1}`; `copy` may be omitted and then
/// means 0.
///
/// The derived order (suit, then number, then copy) is the canonical deck order and the
/// order in which hands are sorted.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Card {
    pub suit: Suit,
    /// 1 to 14.
    pub number: u8,
    /// 0, or 1 for the second 1 of a suit.
    #[serde(default)]
    pub copy: u8,
}

impl Card {
    pub const fn new(suit: Suit, number: u8) -> Self {
        Card {
            suit,
            number,
            copy: 0,
        }
    }

    /// The second 1 of a suit.
    pub const fn second_one(suit: Suit) -> Self {
        Card {
            suit,
            number: 1,
            copy: 1,
        }
    }

    /// Whether this card exists in the deck: numbers 1–14, and copy 1 only for 1s.
    pub const fn is_valid(self) -> bool {
        self.number >= 1
            && self.number <= 14
            && (self.copy == 0 || (self.copy == 1 && self.number == 1))
    }

    /// Fibonachos are every 1, 2, 3, 5, 8 and 13.
    #[inline]
    pub const fn is_fibonacho(self) -> bool {
        self.number < 16 && (FIBONACHO_MASK >> self.number) & 1 == 1
    }

    /// Position in the canonical deck order, 0..45 (valid cards only).
    pub const fn index(self) -> usize {
        let within = if self.number == 1 {
            self.copy as usize
        } else {
            self.number as usize
        };
        self.suit as usize * 15 + within
    }
}

/// Number of nacho cards.
pub const NACHO_COUNT: usize = 45;

/// The canonical (unshuffled) nacho deck: red, then green, then yellow; within a suit
/// 1 (copy 0), 1 (copy 1), 2, 3, …, 14. Shuffles start from this order.
pub fn canonical_deck() -> Vec<Card> {
    let mut deck = Vec::with_capacity(NACHO_COUNT);
    for suit in Suit::ALL {
        deck.push(Card::new(suit, 1));
        deck.push(Card::second_one(suit));
        for number in 2..=14 {
            deck.push(Card::new(suit, number));
        }
    }
    deck
}

/// The spicy deck in canonical order: five 1s, four 2s, three 3s, two 4s, one 5.
pub const SPICY_DECK: [u8; 15] = [1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 5];

/// Cards dealt to each player: min(15, ⌊45 / players⌋).
pub const fn hand_size(players: usize) -> usize {
    let even = NACHO_COUNT / players;
    if even < 15 { even } else { 15 }
}

/// How a seat's round score was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// The spicy total is not a Fibonacci number: it scores as it is.
    Plain,
    /// The spicy total is a Fibonacci number: the next Fibonacci number is scored.
    FibonacciBonus,
    /// The seat won no trick: 34.
    NoTricks,
}

/// Round score from the number of tricks won and the sum of the spicy cards.
pub const fn round_score(tricks: u32, spicy_total: u32) -> (i64, Scoring) {
    if tricks == 0 {
        return (34, Scoring::NoTricks);
    }
    let next = match spicy_total {
        1 => 2,
        2 => 3,
        3 => 5,
        5 => 8,
        8 => 13,
        13 => 21,
        21 => 34,
        34 => 55,
        other => return (other as i64, Scoring::Plain),
    };
    (next, Scoring::FibonacciBonus)
}
