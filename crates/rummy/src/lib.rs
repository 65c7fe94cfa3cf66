//! Rules of the rummy family of Fibonacci card games: Fibonacci 21, 13 and 8 for two to
//! four players, and Solitaire Fibonacci (one player), as the rulebooks 000 and 001 and
//! rulings R-0..R-4 and R-10..R-25 describe them. Fibonacci 89 is not offered.
//!
//! The match type is [`Rummy`]; it implements [`game_core::Game`] with `KIND = "rummy"`.
//!
//! - Cards ([`cards`]): every physical card has a stable id, its place in the deck's
//!   canonical order; actions name cards by id. JSON: `{"id":17,"kind":"base","number":13}`,
//!   `{"id":40,"kind":"standard","number":5}`, `{"id":84,"kind":"wild"}`,
//!   `{"id":87,"kind":"bonus"}`.
//! - Deal: the round's stream is `seed.rng()`. In round 1 of a multiplayer
//!   match it first shuffles a copy of the deck in canonical order ([`cards`]) and each seat
//!   in turn takes the top card (the vector's end) for the dealer draw, tied highest seats
//!   drawing again; then it shuffles a fresh canonical deck, seven cards go to each seat one
//!   at a time from the top starting after the dealer, and the next card starts the discard
//!   pile. The same stream, kept in the state, later shuffles the R-21 reshuffle.
//!   [`game_core::Game::deal_record`] shows the dealer draw, hands, the first discard and the
//!   stock (top last), plus the reshuffled stock once it exists.
//! - Sets are named by their key: the base number they were started with, or T for the
//!   one-card set. A player has at most one set per key.
//! - Turn: `draw_stock` or `draw_discard`, then table actions, then `discard`. A
//!   seat that has closed every required set skips the draw and only discards.
//! - Out of turn a seat may `move_card` and `set_wild_number` on its own open sets;
//!   [`game_core::Game::to_act`] names only the seat on turn.
//! - Solitaire (one seat, R-25): the same turn; closing the last required set ends the game
//!   with the hand added to the discard pile; the score is the discard count (lower is
//!   better), `winners = [0]`. If the stock is empty when a draw is due, the game is lost:
//!   `winners = []` and the score is the whole deck size (worse than any finished game).
//!   Match-length options do not apply to solitaire (one game).
//!
//! Readings this crate makes where the rulings leave room (see also the rules page):
//! - R-1 dealer draw: rank is the printed number, bonus 2, wild 0.
//! - a hand-to-table action must leave a card to discard; it may leave exactly one
//!   only when afterwards every required set is on the table and complete (or closed).
//!   The last card may be discarded only when every required set is closed. In solitaire
//!   the last card may go down too when every required set is then complete.
//! - the stock is checked when a turn that must draw begins; a draw of two from a
//!   one-card stock takes that one card.
//! - a wild's number may change to any allowed number that keeps its set at or
//!   under T (lowering it to make room is allowed). Starters (base, bonus, wild or non-rabbit
//!   standard) never move and a starting wild keeps its number; a starting wild may be
//!   exchanged for the real base card (the bonus card for set 2, a real card T for set T).
//! - with the option on, once opened, a player's last two sets (the sets after the
//!   first `required - 2`) may start with a standard card of a base number.
//! - R-22 with R-23: going out scores 80 + the closed-set points.
//!
//! Error codes (besides game-core's `bad_seat`, `not_your_turn`, `no_round_in_progress`,
//! `card_not_in_hand`, `bad_options`, `bad_player_count`, `wrong_phase`):
//! `must_draw_first`, `already_drew`, `no_draw_after_all_sets_closed`, `stock_empty`,
//! `discard_pile_empty`, `not_opened`, `already_opened`, `opening_incomplete`,
//! `duplicate_card`, `empty_set`, `bad_wild_number` (R-17a), `not_a_starter`,
//! `base_card_cannot_be_added`, `set_number_in_use`, `over_target`,
//! `no_such_set`, `set_closed`, `set_not_complete`, `card_not_in_set`,
//! `starter_cannot_move`, `not_a_wild`, `no_change`, `not_exchangeable`, `must_keep_card`
//! `must_close_all_sets`, `same_set`.

pub mod cards;
mod guess;
pub mod rules;
mod state;
mod view;

#[cfg(test)]
mod tests;

use game_core::{Game, Outcome, Phase, RuleError, Seat, Seed, Viewer, codes as core_codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cards::{Card, CardKind};
pub use rules::{Action, Placed, Play, Stage, TableSet};
pub use state::{Position, RoundResult, Rummy, SeatScore};
pub use view::{SetView, TableView, View, canonical_opening};

/// Match length: a number of rounds (1, 3 or 5) or first to 500 / 1000 points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MatchLength {
    Rounds { count: u32 },
    FirstTo { points: u32 },
}

/// Table options, e.g. `{"target":13,"match_length":{"kind":"first_to","points":500},"non_rabbit":true}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// 21, 13 or 8.
    pub target: u8,
    pub match_length: MatchLength,
    /// The non-rabbit sets variation.
    pub non_rabbit: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            target: 21,
            match_length: MatchLength::Rounds { count: 1 },
            non_rabbit: false,
        }
    }
}

/// Public record of what happened. Draws from the stock say how many, never which.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    RoundStarted {
        round: u32,
        dealer: Seat,
        first: Seat,
        hand_size: usize,
        discard_top: Card,
        stock_count: usize,
    },
    Drew {
        seat: Seat,
        from_stock: usize,
        from_discard: Option<Card>,
    },
    Opened {
        seat: Seat,
        sets: Vec<TableSet>,
    },
    SetStarted {
        seat: Seat,
        set: u8,
        card: Placed,
        non_rabbit: bool,
    },
    CardAdded {
        seat: Seat,
        set: u8,
        card: Placed,
    },
    SetClosed {
        seat: Seat,
        set: u8,
    },
    TookBack {
        seat: Seat,
        set: u8,
        card: Card,
    },
    /// `exchange_wild` or `restore_base`: `card` now starts the set, `returned` went to hand.
    StarterReplaced {
        seat: Seat,
        set: u8,
        card: Card,
        returned: Card,
    },
    WildNumberSet {
        seat: Seat,
        set: u8,
        card: u8,
        number: u8,
    },
    CardMoved {
        seat: Seat,
        from: u8,
        to: u8,
        card: u8,
    },
    Discarded {
        seat: Seat,
        card: Card,
    },
    StockReshuffled {
        stock_count: usize,
    },
    WentOut {
        seat: Seat,
    },
    RoundEnded {
        result: RoundResult,
        scores: Vec<i64>,
    },
    MatchEnded {
        outcome: Outcome,
    },
}

fn check_options(o: &Options) -> Result<(), RuleError> {
    if ![21, 13, 8].contains(&o.target) {
        return Err(RuleError::new(
            core_codes::BAD_OPTIONS,
            format!("target {} is not 21, 13 or 8", o.target),
        ));
    }
    match o.match_length {
        MatchLength::Rounds { count } if [1, 3, 5].contains(&count) => Ok(()),
        MatchLength::FirstTo { points } if [500, 1000].contains(&points) => Ok(()),
        // Said as the client wrote it (JSON), not as Rust debug-prints it.
        m => Err(RuleError::new(
            core_codes::BAD_OPTIONS,
            format!(
                "match length {} is not 1, 3 or 5 rounds or first to 500 or 1000 (R-24)",
                serde_json::to_string(&m).expect("a match length is JSON")
            ),
        )),
    }
}

impl Game for Rummy {
    type Options = Options;
    type Action = Action;
    type View = View;
    type Event = Event;

    const KIND: &'static str = "rummy";
    const RULES_VERSION: u32 = 1;

    fn player_range(_: &Options) -> (usize, usize) {
        (1, 4)
    }

    fn new_match(options: &Options, players: usize) -> Result<Self, RuleError> {
        check_options(options)?;
        if !(1..=4).contains(&players) {
            return Err(RuleError::new(
                core_codes::BAD_PLAYER_COUNT,
                format!("{players} players: the rummy games take 1 (solitaire) to 4"),
            ));
        }
        Ok(Rummy::new(options, players))
    }

    fn players(&self) -> usize {
        self.players
    }

    fn phase(&self) -> Phase {
        self.phase
    }

    fn round(&self) -> u32 {
        self.round_no
    }

    fn start_round(&mut self, seed: &Seed) -> Result<Vec<Event>, RuleError> {
        if self.phase != Phase::AwaitingRound {
            return Err(RuleError::new(
                core_codes::WRONG_PHASE,
                "a round can only start between rounds",
            ));
        }
        Ok(self.start(seed))
    }

    fn to_act(&self) -> Vec<Seat> {
        match (&self.round, self.phase) {
            (Some(r), Phase::Playing) => vec![r.turn],
            _ => Vec::new(),
        }
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Vec<Event>, RuleError> {
        self.apply_action(seat, action)
    }

    fn view_for(&self, viewer: Viewer) -> View {
        self.make_view(viewer)
    }

    fn legal_actions(view: &View) -> Vec<Action> {
        view::legal_from_view(view)
    }

    fn scores(&self) -> Vec<i64> {
        self.scores.clone()
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome.clone()
    }

    fn deal_record(&self) -> serde_json::Value {
        self.round
            .as_ref()
            .map_or(serde_json::Value::Null, |r| r.deal.clone())
    }
}
