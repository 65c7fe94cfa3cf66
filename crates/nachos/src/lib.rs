//! Fibonachos (rulebook `004_099e47ecfa601daa.txt`, rulings R-0..R-4 and R-50..R-54): a
//! trick-taking game for 2–5 players over three rounds. Nacho cards (three suits × 1, 1,
//! 2…14) are played to tricks; each trick is worth the spicy card turned up before it;
//! two or more fibonachos (1, 2, 3, 5, 8, 13) in a trick make the highest fibonacho win.
//!
//! [`NachosMatch`] implements [`game_core::Game`] with `KIND = "nachos"`.
//!
//! # Randomness
//! Each round's stream is `seed.rng()`. Round 1 first draws for the dealer: a canonical
//! nacho deck is shuffled, every seat in seat order takes the next card, the highest number
//! deals, tied seats draw again from the same deck (a fresh shuffled deck if it runs out).
//! Then, every round: the canonical nacho deck (red, green, yellow; within a suit 1 copy 0,
//! 1 copy 1, 2, …, 14) is shuffled and card `i` goes to seat `(dealer + 1 + i) % players`
//! for `i < hand_size × players`, the rest is set aside unseen; then the canonical
//! spicy deck `[1,1,1,1,1,2,2,2,2,3,3,3,4,4,5]` is shuffled, top card first.
//! Later rounds deal from the next seat clockwise; no dealer draw.
//!
//! # Play
//! The seat after the dealer leads the first trick. At the start of every trick the
//! leader's spicy card is turned up automatically (`spicy_revealed` event). Actions are only
//! `{"type":"play","card":{"suit":"green","number":1,"copy":1}}` (`copy` defaults to 0).
//!
//! # Views
//! [`NachosView`]: own hand sorted with `playable` and `fibonacho` flags, other hands as
//! counts, the trick in progress (`lead_suit`, `fibonachos_active`, `trick_winning`), the
//! spicy card at stake, public spicy piles, last trick, the round's played cards (sorted;
//! all were played face up), last round summary, per-round scores and totals. `Viewer::Player(seat)` with a seat not at the table gets the spectator view.
//!
//! # Error codes
//! - `bad_seat`: the seat number is not at the table.
//! - `no_round_in_progress`: between rounds or after the match.
//! - `not_your_turn`: another seat is to play.
//! - `no_such_card`: the card does not exist (number outside 1–14, or copy 1 of a non-1).
//! - `card_not_in_hand`: the seat does not hold that card.
//! - `must_follow_suit`: the seat holds a card of the lead suit but played another.
//! - `wrong_phase`: `start_round` while a round is in progress or after the match.
//! - `bad_player_count`: `new_match` with fewer than 2 or more than 5 players.

pub mod cards;
mod guess;
pub mod state;
pub mod view;

#[cfg(test)]
mod tests;

use game_core::{Game, Outcome, Phase, RuleError, Seat, Seed, Viewer, codes};

pub use cards::{Card, SPICY_DECK, Scoring, Suit, canonical_deck, hand_size, round_score};
pub use state::{
    Action, CardView, DealRecord, Event, MUST_FOLLOW_SUIT, NO_SUCH_CARD, NachosMatch,
    NachosOptions, PlayedCard, Position, ROUNDS, RoundSummary, SeatRoundResult, TrickResult,
};
pub use view::{HandCard, NachosView, SpicyPile};

impl Game for NachosMatch {
    type Options = NachosOptions;
    type Action = Action;
    type View = NachosView;
    type Event = Event;

    const KIND: &'static str = "nachos";
    const RULES_VERSION: u32 = 1;

    fn player_range(_options: &NachosOptions) -> (usize, usize) {
        (2, 5)
    }

    fn new_match(options: &NachosOptions, players: usize) -> Result<Self, RuleError> {
        let (lo, hi) = Self::player_range(options);
        if !(lo..=hi).contains(&players) {
            return Err(RuleError::new(
                codes::BAD_PLAYER_COUNT,
                format!("Fibonachos is for {lo} to {hi} players, not {players}"),
            ));
        }
        Ok(NachosMatch::new(players))
    }

    fn players(&self) -> usize {
        self.players
    }

    fn phase(&self) -> Phase {
        self.phase
    }

    fn round(&self) -> u32 {
        self.round
    }

    fn start_round(&mut self, seed: &Seed) -> Result<Vec<Event>, RuleError> {
        self.start_round_impl(seed)
    }

    fn to_act(&self) -> Vec<Seat> {
        if self.phase == Phase::Playing {
            vec![self.turn]
        } else {
            Vec::new()
        }
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Vec<Event>, RuleError> {
        self.apply_impl(seat, action)
    }

    fn view_for(&self, viewer: Viewer) -> NachosView {
        self.view(viewer)
    }

    fn legal_actions(view: &NachosView) -> Vec<Action> {
        view::legal_from_view(view)
    }

    fn scores(&self) -> Vec<i64> {
        self.totals.clone()
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome_impl()
    }

    fn deal_record(&self) -> serde_json::Value {
        serde_json::to_value(&self.deal).unwrap_or(serde_json::Value::Null)
    }
}
