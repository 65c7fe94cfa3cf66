//! The table: columns of runs (rulebook "Definitions" and "Legal plays"), and the pure run
//! rules every play is checked against. All of it is face up, so these types appear in
//! views as they are.
//!
//! A column has a base (a joker, or a 4 that replaced it; `None` once the base was
//! shuffled into the draw pile, R-46) and two sides: side 0 grows toward seat 0, side 1
//! toward seat 1. Each side holds, from the base outward:
//! * `ended`: earlier runs of that side that were cut off by a restart 6, with those 6s
//!   . Nothing can be added to them any more, so a refill treats them as closed;
//! * `restart`: the restart 6 (base card) the current run grows from, if any;
//! * `run`: the current run, each card with its effective value.
//!
//! Reaction cards lie beside a side of a column and never count in a run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{Card, Rank};

/// A card in a run with the value it counts as (its face, a 6's declared value, or the
/// value a 4 took over, R-43/R-44).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Placed {
    pub card: Card,
    pub value: u32,
}

/// A card under an earlier, restarted run of a side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Laid {
    /// A run card of an ended run.
    Run { card: Card, value: u32 },
    /// A restart 6 (or the 4 that replaced it) that ended the run before it.
    Restart { card: Card },
}

impl Laid {
    pub fn card(self) -> Card {
        match self {
            Laid::Run { card, .. } | Laid::Restart { card } => card,
        }
    }
    fn card_mut(&mut self) -> &mut Card {
        match self {
            Laid::Run { card, .. } | Laid::Restart { card } => card,
        }
    }
}

/// One side of a column (toward seat 0 or seat 1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Side {
    pub ended: Vec<Laid>,
    pub restart: Option<Card>,
    pub run: Vec<Placed>,
}

/// What the next run card of a side must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum Next {
    /// An opening: a first card of value 0–3 (a 2 or 3, or a 6 as 0–3).
    First,
    /// The second card: value 3–5 (a 3 or 5, or a 6 as 3–5), not 3 after a first 3.
    Second { after: u32 },
    /// Third or later: exactly this value (the sum of the two before).
    Sum { value: u32 },
    /// An opening whose base was shuffled away before any card was played.
    Lost,
}

impl Next {
    /// Whether a run card counting `v` may go here (rulebook "Legal plays", R-44).
    pub fn fits(self, v: u32) -> bool {
        match self {
            Next::First => v <= 3,
            Next::Second { after } => (3..=5).contains(&v) && !(after == 3 && v == 3),
            Next::Sum { value } => v == value,
            Next::Lost => false,
        }
    }
    /// The values a 6 may declare here.
    pub fn six_values(self) -> std::ops::RangeInclusive<u32> {
        match self {
            Next::First => 0..=3,
            Next::Second { .. } => 3..=5,
            Next::Sum { value } => value..=value,
            #[allow(clippy::reversed_empty_ranges)]
            Next::Lost => 1..=0,
        }
    }
}

impl Side {
    /// The current run can still grow from something: a restart base, or the column base
    /// when the run has no restart.
    pub fn next(&self, column_base: bool) -> Next {
        match self.run.len() {
            0 if self.restart.is_some() || column_base => Next::First,
            0 => Next::Lost,
            1 => Next::Second {
                after: self.run[0].value,
            },
            n => Next::Sum {
                value: self.run[n - 2].value.saturating_add(self.run[n - 1].value),
            },
        }
    }
    /// a run whose top card counts 7 or more is closed.
    pub fn closed(&self) -> bool {
        self.run.last().is_some_and(|p| p.value >= 7)
    }
    fn is_empty(&self) -> bool {
        self.ended.is_empty() && self.restart.is_none() && self.run.is_empty()
    }
}

/// A reaction card set beside side `side` of its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reaction {
    pub card: Card,
    pub side: usize,
}

/// One column: a base and two runs (one toward each player), plus reaction cards.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Column {
    pub base: Option<Card>,
    pub sides: [Side; 2],
    pub reactions: Vec<Reaction>,
}

impl Column {
    pub fn next(&self, side: usize) -> Next {
        self.sides[side].next(self.base.is_some())
    }

    /// Every face-up card of the column (what a 4 may replace, R-43), in table order.
    pub fn face_up(&self, out: &mut Vec<Card>) {
        out.extend(self.base);
        for s in &self.sides {
            out.extend(s.ended.iter().map(|l| l.card()));
            out.extend(s.restart);
            out.extend(s.run.iter().map(|p| p.card));
        }
        out.extend(self.reactions.iter().map(|r| r.card));
    }

    /// The slot holding `card`, if it lies in this column.
    fn slot_mut(&mut self, card: Card) -> Option<&mut Card> {
        if self.base == Some(card) {
            return self.base.as_mut();
        }
        for s in &mut self.sides {
            if let Some(l) = s.ended.iter_mut().find(|l| l.card() == card) {
                return Some(l.card_mut());
            }
            if s.restart == Some(card) {
                return s.restart.as_mut();
            }
            if let Some(p) = s.run.iter_mut().find(|p| p.card == card) {
                return Some(&mut p.card);
            }
        }
        self.reactions
            .iter_mut()
            .find(|r| r.card == card)
            .map(|r| &mut r.card)
    }
}

/// Whether `card` lies face up anywhere on the table.
pub fn on_table(columns: &[Column], card: Card) -> bool {
    let mut v = Vec::new();
    columns.iter().any(|c| {
        v.clear();
        c.face_up(&mut v);
        v.contains(&card)
    })
}

/// puts `four` where `target` lies; the 4 keeps the slot's value and role. Returns
/// false (and changes nothing) when `target` is not on the table.
pub fn replace(columns: &mut [Column], target: Card, four: Card) -> bool {
    for c in columns {
        if let Some(slot) = c.slot_mut(target) {
            *slot = four;
            return true;
        }
    }
    false
}

/// takes every shuffleable card off the table (all bases, ended runs, closed runs,
/// reaction cards), in table order, and drops columns left with nothing on them. An
/// unused opening whose base went is lost (it shows as [`Next::Lost`]).
pub fn gather_for_refill(columns: &mut Vec<Column>) -> Vec<Card> {
    let mut out = Vec::new();
    for col in columns.iter_mut() {
        out.extend(col.base.take());
        for s in &mut col.sides {
            out.extend(s.ended.drain(..).map(Laid::card));
            out.extend(s.restart.take());
            if s.closed() {
                out.extend(s.run.drain(..).map(|p| p.card));
            }
        }
        out.extend(col.reactions.drain(..).map(|r| r.card));
    }
    columns.retain(|c| c.base.is_some() || !c.sides.iter().all(Side::is_empty));
    out
}

/// Whether a card of this rank can be a run card at all (jokers are bases, 4s only
/// replace cards).
pub fn is_run_rank(r: Rank) -> bool {
    !matches!(r, Rank::Joker | Rank::Four)
}
