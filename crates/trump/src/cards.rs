//! The Fibonacci's Trump deck (R-30): five colours × numbers 1–10, each card printed with
//! one of five symbols. A card is one byte (its index in the canonical deck order), so
//! hands and won piles are `u64` bitsets and every rule check is a mask test.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Number of cards in the deck.
pub const DECK_SIZE: usize = 50;

/// The five colours, in the order R-30 lists them (index 0..4).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Colour {
    Red = 0,
    Yellow = 1,
    Green = 2,
    Blue = 3,
    Purple = 4,
}

impl Colour {
    pub const ALL: [Colour; 5] = [
        Colour::Red,
        Colour::Yellow,
        Colour::Green,
        Colour::Blue,
        Colour::Purple,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The bitset of the ten cards of this colour.
    pub fn mask(self) -> u64 {
        0x3ff << (10 * self as u64)
    }

    pub fn name(self) -> &'static str {
        ["red", "yellow", "green", "blue", "purple"][self as usize]
    }
}

/// The five symbols, in the order R-30 lists them: circled plus, circle, square, star,
/// three wavy lines.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Symbol {
    CircledPlus = 0,
    Circle = 1,
    Square = 2,
    Star = 3,
    Waves = 4,
}

impl Symbol {
    pub const ALL: [Symbol; 5] = [
        Symbol::CircledPlus,
        Symbol::Circle,
        Symbol::Square,
        Symbol::Star,
        Symbol::Waves,
    ];

    /// The wire name (as serde writes it), for messages.
    pub fn name(self) -> &'static str {
        match self {
            Symbol::CircledPlus => "circled_plus",
            Symbol::Circle => "circle",
            Symbol::Square => "square",
            Symbol::Star => "star",
            Symbol::Waves => "waves",
        }
    }

    /// The bitset of the ten cards bearing this symbol (R-30: two per colour).
    pub fn mask(self) -> u64 {
        SYMBOL_MASKS[self as usize]
    }
}

/// `SYMBOL_MASKS[s]` = the cards whose symbol is `s`, computed once at compile time.
const SYMBOL_MASKS: [u64; 5] = {
    let mut m = [0u64; 5];
    let mut i = 0;
    while i < DECK_SIZE {
        // R-30: symbol[(n - 1 + c) mod 5] with c = i / 10 and n - 1 = i % 10.
        m[(i % 10 + i / 10) % 5] |= 1 << i;
        i += 1;
    }
    m
};

/// One card: its index in the canonical deck order, colour-major (red 1..10, yellow
/// 1..10, green, blue, purple), so `index = 10 * colour + (number - 1)`. That order is
/// the order the shuffle starts from (R-0), and the bit order of hand bitsets, which
/// makes a bitset's iteration order the sorted hand order.
///
/// On the wire the server writes a card as a short string: its colour's letter (`r`, `y`,
/// `g`, `b`, `p`) and its number, `"r7"`, `"p10"` (protocol.md §6.2); the symbol follows
/// from the two (R-30). When read, the object form of earlier versions,
/// `{"colour":"red","number":7}` with an optional `"symbol"` that must be the card's
/// printed one, is taken too: stored action logs and old clients keep working.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Card(u8);

/// The colours' letters on the wire, in [`Colour`] order.
pub const COLOUR_LETTERS: [char; 5] = ['r', 'y', 'g', 'b', 'p'];

/// Each card's wire form, written once ([`game_core::json_texts`]): writing a card field by
/// field was about a twentieth of the server's CPU under the flat load (perf).
static CARD_TEXT: std::sync::LazyLock<[Box<RawValue>; DECK_SIZE]> =
    std::sync::LazyLock::new(|| game_core::json_texts(|i| Card(i as u8).code()));

impl Serialize for Card {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CARD_TEXT[self.index()].serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Card, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Card;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    r#"a card such as "r7" (its colour's letter r, y, g, b or p and its number 1-10)"#,
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Card, E> {
                Card::from_code(v).map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Card, A::Error> {
                let wire =
                    CardWire::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Card::try_from(wire).map_err(serde::de::Error::custom)
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// `value` with every card written in the object form of earlier versions
/// (`{"colour":"red","number":7,"symbol":…}`) written as its code (`"r7"`), at any depth:
/// a deal record (or any record of cards) saved before the codes compares equal to the same
/// record written now. Anything that is not a card object is kept as it is.
pub fn with_card_codes(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(o) if o.contains_key("colour") && o.contains_key("number") => {
            match Card::deserialize(value) {
                Ok(c) => Value::String(c.code()),
                Err(_) => value.clone(),
            }
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), with_card_codes(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(with_card_codes).collect()),
        v => v.clone(),
    }
}

impl JsonSchema for Card {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Card".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let object = generator.subschema_for::<CardWire>();
        schemars::json_schema!({
            "description": "A card: its colour's letter (r, y, g, b, p) and its number 1-10, e.g. \"r7\"; its symbol follows from them (R-30, protocol.md §6.2). The server always writes this form; the object form of earlier versions is also read.",
            "anyOf": [
                {"type": "string", "pattern": "^[rygbp]([1-9]|10)$"},
                object
            ]
        })
    }
}

impl Card {
    /// The card of `colour` and `number` (1..=10). Panics on a number out of range.
    pub fn new(colour: Colour, number: u8) -> Card {
        assert!(
            (1..=10).contains(&number),
            "card number {number} out of 1..=10"
        );
        Card(colour as u8 * 10 + number - 1)
    }

    /// The card at canonical index `i` (0..50).
    pub fn from_index(i: usize) -> Card {
        debug_assert!(i < DECK_SIZE);
        Card(i as u8)
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The wire code: colour letter and number, `"r7"`.
    pub fn code(self) -> String {
        format!("{}{}", COLOUR_LETTERS[self.colour().index()], self.number())
    }

    /// Reads a wire code (`"r7"`, `"p10"`), with a message saying what is wrong otherwise.
    pub fn from_code(code: &str) -> Result<Card, String> {
        let bad = || {
            format!(
                "`{code}` is not a card: write its colour's letter (r, y, g, b, p) and its number 1-10, e.g. \"r7\""
            )
        };
        let mut chars = code.chars();
        let letter = chars.next().ok_or_else(bad)?;
        let colour = COLOUR_LETTERS
            .iter()
            .position(|&l| l == letter)
            .ok_or_else(bad)?;
        let number: u8 = match chars.as_str() {
            n @ ("1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "10") => {
                n.parse().map_err(|_| bad())?
            }
            _ => return Err(bad()),
        };
        Ok(Card::new(Colour::ALL[colour], number))
    }

    pub fn bit(self) -> u64 {
        1 << self.0
    }

    pub fn colour(self) -> Colour {
        Colour::ALL[(self.0 / 10) as usize]
    }

    pub fn number(self) -> u8 {
        self.0 % 10 + 1
    }

    /// R-30: symbol[(n − 1 + c) mod 5].
    pub fn symbol(self) -> Symbol {
        Symbol::ALL[((self.0 % 10 + self.0 / 10) % 5) as usize]
    }

    /// The whole deck in canonical order.
    pub fn canonical_deck() -> [Card; DECK_SIZE] {
        std::array::from_fn(|i| Card(i as u8))
    }
}

impl std::fmt::Display for Card {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.colour().name(), self.number())
    }
}

/// The object form of a [`Card`] that earlier versions wrote, still read (and written by
/// nobody now).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CardObject")]
pub struct CardWire {
    pub colour: Colour,
    /// 1..=10
    pub number: u8,
    /// The printed symbol (R-30). Always sent by the server; optional when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<Symbol>,
}

impl TryFrom<CardWire> for Card {
    type Error = String;
    fn try_from(w: CardWire) -> Result<Card, String> {
        if !(1..=10).contains(&w.number) {
            return Err(format!("card number {} is not in 1..=10", w.number));
        }
        let card = Card::new(w.colour, w.number);
        match w.symbol {
            Some(s) if s != card.symbol() => Err(format!(
                "{card} bears the symbol {}, not {}",
                card.symbol().name(),
                s.name()
            )),
            _ => Ok(card),
        }
    }
}

impl From<Card> for CardWire {
    fn from(c: Card) -> CardWire {
        CardWire {
            colour: c.colour(),
            number: c.number(),
            symbol: Some(c.symbol()),
        }
    }
}

/// Iterates the cards of a bitset in canonical (sorted) order.
pub fn cards_of(mut set: u64) -> impl Iterator<Item = Card> {
    std::iter::from_fn(move || {
        if set == 0 {
            None
        } else {
            let i = set.trailing_zeros();
            set &= set - 1;
            Some(Card(i as u8))
        }
    })
}

/// The bitset of all 50 cards.
pub const FULL_DECK: u64 = (1 << DECK_SIZE) - 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r30_symbols_twice_per_colour_ten_per_deck() {
        for s in Symbol::ALL {
            assert_eq!(s.mask().count_ones(), 10);
            for c in Colour::ALL {
                assert_eq!((s.mask() & c.mask()).count_ones(), 2, "{s:?} in {c:?}");
            }
        }
        assert_eq!(Card::new(Colour::Red, 1).symbol(), Symbol::CircledPlus);
        assert_eq!(Card::new(Colour::Red, 5).symbol(), Symbol::Waves);
        assert_eq!(Card::new(Colour::Red, 6).symbol(), Symbol::CircledPlus);
        assert_eq!(Card::new(Colour::Yellow, 1).symbol(), Symbol::Circle);
        assert_eq!(Card::new(Colour::Purple, 1).symbol(), Symbol::Waves);
        assert_eq!(Card::new(Colour::Purple, 2).symbol(), Symbol::CircledPlus);
        // Every (colour, symbol) pair names two numbers, no two numbers of a colour share
        // a symbol within 1..5.
        for c in Colour::ALL {
            for n in 1..=5 {
                assert_eq!(Card::new(c, n).symbol(), Card::new(c, n + 5).symbol());
            }
        }
    }

    /// The precomputed text of every card is its code; both the code and the object form
    /// of earlier versions read back as the card.
    #[test]
    fn every_card_is_written_as_its_code_and_read_in_either_form() {
        for c in Card::canonical_deck() {
            let text = serde_json::to_string(&c).unwrap();
            assert_eq!(text, format!("\"{}\"", c.code()));
            assert!(text.len() <= 5, "{text}");
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(c.code())
            );
            assert_eq!(serde_json::from_str::<Card>(&text).unwrap(), c);
            let object = serde_json::to_value(CardWire::from(c)).unwrap();
            assert_eq!(serde_json::from_value::<Card>(object).unwrap(), c);
            assert_eq!(Card::from_code(&c.code()), Ok(c));
        }
    }

    #[test]
    fn card_wire_format() {
        let c = Card::new(Colour::Red, 7);
        let j = serde_json::to_value(c).unwrap();
        assert_eq!(j, serde_json::json!("r7"));
        assert_eq!(
            serde_json::to_value(Card::new(Colour::Purple, 10)).unwrap(),
            serde_json::json!("p10")
        );
        let back: Card =
            serde_json::from_value(serde_json::json!({"colour":"red","number":7})).unwrap();
        assert_eq!(back, c);
        let back: Card = serde_json::from_value(
            serde_json::json!({"colour":"red","number":7,"symbol":"circle"}),
        )
        .unwrap();
        assert_eq!(back, c);
        assert_eq!(serde_json::from_value::<Card>(j).unwrap(), c);
        for bad in [
            serde_json::json!({"colour":"red","number":7,"symbol":"star"}),
            serde_json::json!({"colour":"red","number":11}),
            serde_json::json!({"colour":"red","number":0}),
            serde_json::json!({"colour":"pink","number":3}),
            serde_json::json!({"colour":"red","number":3,"x":1}),
            serde_json::json!("r0"),
            serde_json::json!("r11"),
            serde_json::json!("r07"),
            serde_json::json!("x7"),
            serde_json::json!("R7"),
            serde_json::json!("r"),
            serde_json::json!(""),
            serde_json::json!("r 7"),
            serde_json::json!(7),
            serde_json::json!(null),
        ] {
            assert!(
                serde_json::from_value::<Card>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let e = serde_json::from_value::<Card>(serde_json::json!("x7"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "`x7` is not a card: write its colour's letter (r, y, g, b, p) and its number 1-10"
            ),
            "{e}"
        );
        let e = serde_json::from_value::<Card>(serde_json::json!(7))
            .unwrap_err()
            .to_string();
        assert!(e.contains(r#"expected a card such as "r7""#), "{e}");
    }

    #[test]
    fn r30_symbol_and_colour_names_are_the_wire_names() {
        for s in Symbol::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
        for c in Colour::ALL {
            assert_eq!(serde_json::to_value(c).unwrap(), c.name());
        }
        // The refusal of a wrong printed symbol names both symbols.
        let e = serde_json::from_value::<Card>(
            serde_json::json!({"colour":"red","number":7,"symbol":"star"}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("red 7 bears the symbol circle, not star"), "{e}");
    }

    #[test]
    fn r30_colour_indices_follow_the_rulebook_order() {
        for (i, c) in Colour::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(Card::new(c, 1).index(), 10 * i);
        }
    }

    #[test]
    fn bitset_iteration_is_sorted_canonical_order() {
        let all: Vec<Card> = cards_of(FULL_DECK).collect();
        assert_eq!(all, Card::canonical_deck().to_vec());
        assert_eq!(all[0], Card::new(Colour::Red, 1));
        assert_eq!(all[49], Card::new(Colour::Purple, 10));
    }
}
