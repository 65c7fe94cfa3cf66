//! Fib-Fibonacci (rulebook 002, rulings R-0..R-4 and R-40..R-47) as a pure
//! [`game_core::Game`] state machine ([`FibFib`]): two players race to empty their hands
//! by building Fibonacci runs on a shared table.
//!
//! * Deck: 26 cards, see [`cards`] for ids and the wire form
//!   (`{"id":9,"rank":"five","suit":"hearts"}`, jokers `{"id":0,"rank":"joker"}`).
//! * Options: none ([`Options`] is an empty struct). Exactly 2 players, one round per
//!   match: `AwaitingRound → Playing → Finished`.
//! * Start: the dealer is drawn from the seed: the canonical deck is shuffled,
//!   seat 0 and seat 1 take cards 1 and 2, then 3 and 4, … until the face values differ
//!   (a joker counts 0); the higher card deals; if all 13 pairs tie the deck is shuffled
//!   again. Then the canonical deck is shuffled again (same stream), five cards are dealt
//!   one at a time starting with the non-dealer, and the rest (top first) is the draw
//!   pile. The non-dealer plays first.
//! * A turn is one action: `draw` (whenever the pile is not empty), or one play:
//!   `play_joker` (any time, new column at the end, optional bonus first card of value
//!   ≤ 3 on either side, R-42), `play_run_card` (R-44 values: first card 0–3, second 3–5
//!   and not 3 after a first 3, then exactly the sum of the two before; a 6 declares its
//!   value, other cards count their face), `play_restart` (a 6 as a base on the end of a
//!   non-empty run; that side grows a fresh run from it, R-44), `play_small_wild` (a 4
//!   takes the place, value and role of any face-up table card, which goes to the hand,
//!   R-43), `play_reaction` (R-45: only on the turn right after the opponent laid a 7 or 8
//!   as a run card, with the 8 or 7 of the same suit, set beside that run), `pass`.
//! * Empty draw pile: whenever, after any action, the draw pile is empty and the
//!   table holds something to shuffle, all bases (jokers, restart 6s and 4s standing in
//!   for them), closed runs (top value ≥ 7), runs ended by a restart and reaction cards are
//!   shuffled from the round's seeded stream into a new pile (index 0 of the shuffle is the
//!   top). Open runs stay, without base; empty openings whose base went are lost; columns
//!   left with nothing are removed (indices shift). A player who cannot draw and cannot
//!   play passes; two passes in a row end the game as a draw.
//! * End: the first player whose hand is empty wins (score 1, loser 0; a draw
//!   scores 0–0). Because refills can feed the table back into the pile forever (and two
//!   4s can swap each other endlessly), the server bounds the game: after
//!   [`MAX_TURNS`] actions without a winner the game ends as a draw (`turn_limit`).
//!
//! Error codes (besides game-core's `bad_seat`, `not_your_turn`, `no_round_in_progress`,
//! `bad_player_count`, `wrong_phase`, `card_not_in_hand`):
//! * `draw_pile_empty`: `draw` with an empty pile.
//! * `not_a_joker`, `not_a_run_card`, `not_a_six`, `not_a_four`: the card cannot make that
//!   play (a run card is a 2, 3, 5, 7, 8 or 6).
//! * `no_such_column`, `bad_side`: the column index or side (0/1) does not exist.
//! * `value_required`: a 6 played as a run card (or joker bonus) without `value`;
//!   `value_not_allowed`: `value` given for a card that is not a 6.
//! * `opening_lost`: that opening's base was shuffled away.
//! * `does_not_fit`: the card's value does not continue the run (R-44, "Legal plays").
//! * `bonus_too_high`: a joker bonus card of value above 3.
//! * `nothing_to_restart`: a restart on a run with no card.
//! * `not_on_table`: the card a 4 should replace is not face up on the table.
//! * `no_reaction_chance`, `wrong_reaction_card`: no 7/8 was just laid by the opponent,
//!   or the card is not its same-suit partner.
//! * `pass_not_allowed`: a pass while a draw or play is possible.

pub mod cards;
pub mod moves;
pub mod table;
pub mod view;

#[cfg(test)]
mod tests;

use game_core::{DeckRng, Game, Outcome, Phase, RuleError, Seat, Seed, Viewer, codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cards::{Card, CardWire, DECK_SIZE, Rank, Suit};
pub use moves::{Action, Bonus, EndReason, Event, ReactionChance, legal_moves};
pub use table::{Column, Laid, Next, Placed, Reaction, Side};
pub use view::{ColumnView, FibFibView, GameResult, SideView};

use table::{gather_for_refill, is_run_rank, on_table, replace};

/// Cards dealt to each player.
pub const HAND_SIZE: usize = 5;
/// The server's bound on a game's length (see the header): after this many actions
/// without a winner the game is a draw.
pub const MAX_TURNS: u32 = 1000;

pub const DRAW_PILE_EMPTY: &str = "draw_pile_empty";
pub const NOT_A_JOKER: &str = "not_a_joker";
pub const NOT_A_RUN_CARD: &str = "not_a_run_card";
pub const NOT_A_SIX: &str = "not_a_six";
pub const NOT_A_FOUR: &str = "not_a_four";
pub const NO_SUCH_COLUMN: &str = "no_such_column";
pub const BAD_SIDE: &str = "bad_side";
pub const VALUE_REQUIRED: &str = "value_required";
pub const VALUE_NOT_ALLOWED: &str = "value_not_allowed";
pub const OPENING_LOST: &str = "opening_lost";
pub const DOES_NOT_FIT: &str = "does_not_fit";
pub const BONUS_TOO_HIGH: &str = "bonus_too_high";
pub const NOTHING_TO_RESTART: &str = "nothing_to_restart";
pub const NOT_ON_TABLE: &str = "not_on_table";
pub const NO_REACTION_CHANCE: &str = "no_reaction_chance";
pub const WRONG_REACTION_CARD: &str = "wrong_reaction_card";
pub const PASS_NOT_ALLOWED: &str = "pass_not_allowed";

/// Table options: Fib-Fibonacci has none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Options {}

/// How the game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct End {
    winner: Option<Seat>,
    reason: EndReason,
}

/// The round's random stream, kept for refills. Equality compares only how
/// many shuffles were drawn from it: two states of the same round that made the same
/// number of shuffles hold the same stream.
#[derive(Clone, Debug)]
struct RoundRng {
    rng: DeckRng,
    shuffles: u32,
}

impl PartialEq for RoundRng {
    fn eq(&self, other: &Self) -> bool {
        self.shuffles == other.shuffles
    }
}

impl RoundRng {
    fn shuffle(&mut self, cards: &mut [Card]) {
        self.rng.shuffle(cards);
        self.shuffles += 1;
    }
}

/// What the deal fixed, for verification after the round.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct DealRecord {
    /// Pairs drawn for the deal (seat 0's card, seat 1's card), last pair decisive.
    dealer_draw: Vec<[Card; 2]>,
    dealer: Seat,
    hands: [Vec<Card>; 2],
    /// Top first.
    draw_pile: Vec<Card>,
    /// Every refill's new pile, top first.
    refills: Vec<Vec<Card>>,
}

/// A game in progress given by its cards, for rule tests and puzzles
/// ([`FibFib::from_position`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Position {
    pub hands: [Vec<Card>; 2],
    /// The draw pile, top first.
    pub pile_top_first: Vec<Card>,
    /// The table, columns in order (see [`Column`]).
    pub columns: Vec<Column>,
    /// The seat on turn (0 or 1); the other one dealt.
    pub turn: Seat,
    /// The stream that shuffles any refill.
    pub refill_seed: Seed,
}

/// A Fib-Fibonacci match (one round).
#[derive(Clone, Debug, PartialEq)]
pub struct FibFib {
    phase: Phase,
    round: u32,
    dealer: Seat,
    turn: Seat,
    hands: [Vec<Card>; 2],
    /// Top of the pile is the LAST element.
    pile: Vec<Card>,
    columns: Vec<Column>,
    chance: Option<ReactionChance>,
    passes: u8,
    turns: u32,
    refills: u32,
    end: Option<End>,
    rng: Option<RoundRng>,
    deal: Option<DealRecord>,
}

fn err(code: &'static str, msg: impl Into<String>) -> RuleError {
    RuleError::new(code, msg)
}

fn describe(next: Next) -> String {
    match next {
        Next::First => {
            "an opening takes a first card of value 0-3 (a 2 or 3, or a 6 as 0-3)".to_string()
        }
        Next::Second { after: 3 } => {
            "the second card after a 3 must count 4 or 5 (a 5, or a 6 as 4-5)".to_string()
        }
        Next::Second { .. } => {
            "the second card must count 3-5 (a 3 or 5, or a 6 as 3-5)".to_string()
        }
        Next::Sum { value } => format!("the next card must count exactly {value}"),
        Next::Lost => "this opening was lost".to_string(),
    }
}

impl FibFib {
    fn other(seat: Seat) -> Seat {
        1 - seat
    }

    fn require_in_hand(&self, seat: Seat, card: Card) -> Result<(), RuleError> {
        if self.hands[seat].contains(&card) {
            Ok(())
        } else {
            Err(RuleError::new(
                codes::CARD_NOT_IN_HAND,
                format!("{card:?} is not in seat {seat}'s hand"),
            ))
        }
    }

    fn require_place(&self, column: usize, side: usize) -> Result<(), RuleError> {
        if column >= self.columns.len() {
            return Err(err(
                NO_SUCH_COLUMN,
                format!(
                    "there is no column {column} (the table has {})",
                    self.columns.len()
                ),
            ));
        }
        if side > 1 {
            return Err(err(
                BAD_SIDE,
                format!("side {side} does not exist (0 or 1)"),
            ));
        }
        Ok(())
    }

    /// The value a run card counts as: a 6's declared value, else its face.
    fn run_value(card: Card, value: Option<u32>) -> Result<u32, RuleError> {
        let r = card.rank();
        if !is_run_rank(r) {
            return Err(err(
                NOT_A_RUN_CARD,
                format!("{card:?} cannot go in a run (jokers are bases, 4s replace cards)"),
            ));
        }
        match (r, value) {
            (Rank::Six, Some(v)) => Ok(v),
            (Rank::Six, None) => Err(err(VALUE_REQUIRED, "a 6 in a run needs a declared value")),
            (_, None) => Ok(r.face()),
            (_, Some(_)) => Err(err(
                VALUE_NOT_ALLOWED,
                format!("only a 6 declares a value; {card:?} counts its face"),
            )),
        }
    }

    /// Validates `action` without changing anything.
    fn check(&self, seat: Seat, action: &Action) -> Result<(), RuleError> {
        match *action {
            Action::Draw => {
                if self.pile.is_empty() {
                    return Err(err(DRAW_PILE_EMPTY, "the draw pile is empty"));
                }
            }
            Action::PlayJoker { card, bonus } => {
                self.require_in_hand(seat, card)?;
                if card.rank() != Rank::Joker {
                    return Err(err(NOT_A_JOKER, format!("{card:?} is not a joker")));
                }
                if let Some(b) = bonus {
                    if b.card == card {
                        return Err(RuleError::new(
                            codes::CARD_NOT_IN_HAND,
                            "the bonus card cannot be the joker itself",
                        ));
                    }
                    self.require_in_hand(seat, b.card)?;
                    if b.side > 1 {
                        return Err(err(BAD_SIDE, format!("side {} does not exist", b.side)));
                    }
                    let v = Self::run_value(b.card, b.value)?;
                    // the bonus card counts 3 or less (a 2, 3 or a 6 as 0-3).
                    if v > 3 {
                        return Err(err(
                            BONUS_TOO_HIGH,
                            format!("the joker's bonus card must count 3 or less, not {v}"),
                        ));
                    }
                }
            }
            Action::PlayRunCard {
                card,
                column,
                side,
                value,
            } => {
                self.require_in_hand(seat, card)?;
                let v = Self::run_value(card, value)?;
                self.require_place(column, side)?;
                let next = self.columns[column].next(side);
                if next == Next::Lost {
                    return Err(err(
                        OPENING_LOST,
                        format!(
                            "side {side} of column {column} lost its base before any card was played (R-46)"
                        ),
                    ));
                }
                if !next.fits(v) {
                    return Err(err(
                        DOES_NOT_FIT,
                        format!("{card:?} counting {v} does not fit: {}", describe(next)),
                    ));
                }
            }
            Action::PlayRestart { card, column, side } => {
                self.require_in_hand(seat, card)?;
                if card.rank() != Rank::Six {
                    return Err(err(
                        NOT_A_SIX,
                        format!("only a 6 restarts a run, not {card:?}"),
                    ));
                }
                self.require_place(column, side)?;
                if self.columns[column].sides[side].run.is_empty() {
                    return Err(err(
                        NOTHING_TO_RESTART,
                        format!("side {side} of column {column} has no run to restart"),
                    ));
                }
            }
            Action::PlaySmallWild { card, replace } => {
                self.require_in_hand(seat, card)?;
                if card.rank() != Rank::Four {
                    return Err(err(
                        NOT_A_FOUR,
                        format!("only a 4 replaces cards, not {card:?}"),
                    ));
                }
                if !on_table(&self.columns, replace) {
                    return Err(err(
                        NOT_ON_TABLE,
                        format!("{replace:?} is not face up on the table"),
                    ));
                }
            }
            Action::PlayReaction { card } => {
                self.require_in_hand(seat, card)?;
                let Some(ch) = self.chance.filter(|c| c.seat == seat) else {
                    return Err(err(
                        NO_REACTION_CHANCE,
                        "a reaction is only possible right after the opponent laid a 7 or 8 (R-45)",
                    ));
                };
                if ch.laid.reaction_partner() != Some(card) {
                    return Err(err(
                        WRONG_REACTION_CARD,
                        format!(
                            "{card:?} does not answer {:?} (same suit, 7 for 8 or 8 for 7)",
                            ch.laid
                        ),
                    ));
                }
            }
            Action::Pass => {
                let moves = legal_moves(
                    &self.hands[seat],
                    &self.columns,
                    self.pile.len(),
                    self.chance.as_ref().filter(|c| c.seat == seat),
                );
                if moves != [Action::Pass] {
                    return Err(err(
                        PASS_NOT_ALLOWED,
                        "passing is only allowed when you can neither draw nor play (R-46)",
                    ));
                }
            }
        }
        Ok(())
    }

    fn take(&mut self, seat: Seat, card: Card) {
        let i = self.hands[seat]
            .iter()
            .position(|&c| c == card)
            .expect("checked in hand");
        self.hands[seat].swap_remove(i);
    }

    /// Carries out a checked action; returns its event.
    fn execute(&mut self, seat: Seat, action: &Action) -> Event {
        let mut chance = None;
        let ev = match *action {
            Action::Draw => {
                let c = self.pile.pop().expect("checked non-empty");
                self.hands[seat].push(c);
                Event::Drew { seat }
            }
            Action::PlayJoker { card, bonus } => {
                self.take(seat, card);
                let mut col = Column {
                    base: Some(card),
                    ..Column::default()
                };
                if let Some(b) = bonus {
                    self.take(seat, b.card);
                    let value = Self::run_value(b.card, b.value).expect("checked");
                    col.sides[b.side].run.push(Placed {
                        card: b.card,
                        value,
                    });
                }
                self.columns.push(col);
                Event::JokerPlayed {
                    seat,
                    card,
                    column: self.columns.len() - 1,
                    bonus,
                }
            }
            Action::PlayRunCard {
                card,
                column,
                side,
                value,
            } => {
                self.take(seat, card);
                let value = Self::run_value(card, value).expect("checked");
                self.columns[column].sides[side]
                    .run
                    .push(Placed { card, value });
                // a laid 7 or 8 opens the reaction chance for the opponent's next turn.
                if matches!(card.rank(), Rank::Seven | Rank::Eight) {
                    chance = Some(ReactionChance {
                        seat: Self::other(seat),
                        laid: card,
                        column,
                        side,
                    });
                }
                Event::RunCardPlayed {
                    seat,
                    card,
                    column,
                    side,
                    value,
                }
            }
            Action::PlayRestart { card, column, side } => {
                self.take(seat, card);
                // the old run (and any older restart) is finished for good.
                let s = &mut self.columns[column].sides[side];
                if let Some(r) = s.restart.take() {
                    s.ended.push(Laid::Restart { card: r });
                }
                s.ended.extend(s.run.drain(..).map(|p| Laid::Run {
                    card: p.card,
                    value: p.value,
                }));
                s.restart = Some(card);
                Event::Restarted {
                    seat,
                    card,
                    column,
                    side,
                }
            }
            Action::PlaySmallWild {
                card,
                replace: target,
            } => {
                self.take(seat, card);
                let done = replace(&mut self.columns, target, card);
                debug_assert!(done);
                self.hands[seat].push(target);
                Event::SmallWildPlayed {
                    seat,
                    card,
                    replaced: target,
                }
            }
            Action::PlayReaction { card } => {
                self.take(seat, card);
                let ch = self.chance.expect("checked");
                self.columns[ch.column].reactions.push(Reaction {
                    card,
                    side: ch.side,
                });
                Event::ReactionPlayed {
                    seat,
                    card,
                    column: ch.column,
                    side: ch.side,
                }
            }
            Action::Pass => Event::Passed { seat },
        };
        self.chance = chance;
        ev
    }

    /// refills an empty draw pile from the table, if anything can be shuffled.
    fn refill(&mut self) -> Option<Event> {
        if !self.pile.is_empty() {
            return None;
        }
        let mut cards = gather_for_refill(&mut self.columns);
        if cards.is_empty() {
            return None;
        }
        self.rng
            .as_mut()
            .expect("round started")
            .shuffle(&mut cards);
        self.refills += 1;
        if let Some(d) = &mut self.deal {
            d.refills.push(cards.clone());
        }
        // a 7 or 8 always closes its run, so a refill right after one was laid
        // shuffles it back into the pile: the chance to answer it is gone.
        self.chance = None;
        let n = cards.len();
        cards.reverse();
        self.pile = cards;
        Some(Event::Refilled {
            cards: n,
            columns: self.columns.len(),
        })
    }

    fn finish(&mut self, winner: Option<Seat>, reason: EndReason, events: &mut Vec<Event>) {
        self.end = Some(End { winner, reason });
        self.phase = Phase::Finished;
        self.chance = None;
        events.push(Event::GameOver { winner, reason });
    }

    /// A state consistent with `view` (a seat's view of the game in progress) in which
    /// what the viewer cannot see is as guessed: `other_hand` (the opponent's hand),
    /// `pile_top_first` (the draw pile, top first) and `refill_seed` (the stream of
    /// future refills, R-46). Together with the viewer's hand and the face-up table they
    /// must hold every card once. A search bot samples such states; the deal record is
    /// absent.
    pub fn from_view_and_hidden(
        view: &FibFibView,
        other_hand: Vec<Card>,
        pile_top_first: Vec<Card>,
        refill_seed: &Seed,
    ) -> Result<FibFib, RuleError> {
        let bad = |m: &str| RuleError::new(codes::BAD_OPTIONS, m.to_string());
        let (Some(me), Some(turn), Some(hand), Phase::Playing) = (
            view.viewer.seat().filter(|&s| s < 2),
            view.turn,
            view.hand.as_ref(),
            view.phase,
        ) else {
            return Err(bad("needs a player's view of the game in progress"));
        };
        if other_hand.len() != view.hand_counts[1 - me] || pile_top_first.len() != view.draw_pile {
            return Err(bad("the guess does not match the view's counts"));
        }
        let columns: Vec<Column> = view.columns.iter().map(ColumnView::to_column).collect();
        let mut all: Vec<Card> = hand.clone();
        all.extend(&other_hand);
        all.extend(&pile_top_first);
        for c in &columns {
            c.face_up(&mut all);
        }
        let mut ids: Vec<u8> = all.iter().map(|c| c.id()).collect();
        ids.sort_unstable();
        if ids != (0..DECK_SIZE as u8).collect::<Vec<_>>() {
            return Err(bad("a card is missing or in two places"));
        }
        let mut hands = [Vec::new(), Vec::new()];
        hands[me] = hand.clone();
        hands[1 - me] = other_hand;
        let mut pile = pile_top_first;
        pile.reverse();
        Ok(FibFib {
            phase: Phase::Playing,
            round: view.round,
            dealer: view.dealer.unwrap_or(1 - turn),
            turn,
            hands,
            pile,
            columns,
            chance: view.reaction,
            passes: view.passes_in_row,
            turns: view.turns,
            refills: view.refills,
            end: None,
            rng: Some(RoundRng {
                rng: refill_seed.rng(),
                shuffles: 0,
            }),
            deal: None,
        })
    }

    /// A state from explicit parts, for scenario tests, with refills drawn from seed 0.
    /// Unlike [`FibFib::from_position`] it does not check the cards: the scenarios pad
    /// their piles with repeated cards nobody ever plays.
    #[cfg(test)]
    pub(crate) fn from_parts(
        hands: [Vec<Card>; 2],
        pile_top_first: Vec<Card>,
        columns: Vec<Column>,
        turn: Seat,
    ) -> Self {
        FibFib::from_checked_position(Position {
            hands,
            pile_top_first,
            columns,
            turn,
            refill_seed: Seed::from_u64(0),
        })
    }

    /// A game in progress exactly as `position` lays it out, for rule tests and puzzles:
    /// no reaction chance open, no pass made, turn count 0. Cards in no hand, not in the
    /// pile and not on the table are out of the game. Refuses (`bad_seat` or
    /// `bad_options`) a turn other than seat 0 or 1 and a card given twice (hands, pile
    /// and every face-up card of the table together). The deal record is absent.
    pub fn from_position(position: &Position) -> Result<FibFib, RuleError> {
        if position.turn > 1 {
            return Err(RuleError::bad_seat(position.turn, 2));
        }
        let mut all: Vec<Card> = position.hands.iter().flatten().copied().collect();
        all.extend(&position.pile_top_first);
        for c in &position.columns {
            c.face_up(&mut all);
        }
        let mut seen = [false; DECK_SIZE];
        for c in &all {
            if std::mem::replace(&mut seen[c.id() as usize], true) {
                return Err(RuleError::new(
                    codes::BAD_OPTIONS,
                    format!("{c:?} is given twice"),
                ));
            }
        }
        Ok(FibFib::from_checked_position(position.clone()))
    }

    fn from_checked_position(position: Position) -> FibFib {
        let mut pile = position.pile_top_first;
        pile.reverse();
        FibFib {
            phase: Phase::Playing,
            round: 1,
            dealer: 1 - position.turn,
            turn: position.turn,
            hands: position.hands,
            pile,
            columns: position.columns,
            chance: None,
            passes: 0,
            turns: 0,
            refills: 0,
            end: None,
            rng: Some(RoundRng {
                rng: position.refill_seed.rng(),
                shuffles: 0,
            }),
            deal: None,
        }
    }

    /// Every card's whereabouts, for the accounting property.
    #[cfg(test)]
    pub(crate) fn all_cards(&self) -> Vec<Card> {
        let mut v: Vec<Card> = self.hands.iter().flatten().copied().collect();
        v.extend(&self.pile);
        for c in &self.columns {
            c.face_up(&mut v);
        }
        v
    }

    #[cfg(test)]
    pub(crate) fn hidden_from(&self, seat: Option<Seat>) -> Vec<Card> {
        let mut v = self.pile.clone();
        for s in 0..2 {
            if Some(s) != seat {
                v.extend(&self.hands[s]);
            }
        }
        v
    }
}

impl Game for FibFib {
    type Options = Options;
    type Action = Action;
    type View = FibFibView;
    type Event = Event;

    const KIND: &'static str = "fibfib";
    const RULES_VERSION: u32 = 1;

    fn player_range(_: &Options) -> (usize, usize) {
        (2, 2)
    }

    fn new_match(_: &Options, players: usize) -> Result<Self, RuleError> {
        if players != 2 {
            return Err(RuleError::new(
                codes::BAD_PLAYER_COUNT,
                format!("Fib-Fibonacci is for exactly 2 players, not {players}"),
            ));
        }
        Ok(FibFib {
            phase: Phase::AwaitingRound,
            round: 0,
            dealer: 0,
            turn: 0,
            hands: [Vec::new(), Vec::new()],
            pile: Vec::new(),
            columns: Vec::new(),
            chance: None,
            passes: 0,
            turns: 0,
            refills: 0,
            end: None,
            rng: None,
            deal: None,
        })
    }

    fn players(&self) -> usize {
        2
    }
    fn phase(&self) -> Phase {
        self.phase
    }
    fn round(&self) -> u32 {
        self.round
    }

    fn start_round(&mut self, seed: &Seed) -> Result<Vec<Event>, RuleError> {
        if self.phase != Phase::AwaitingRound {
            return Err(RuleError::new(
                codes::WRONG_PHASE,
                "Fib-Fibonacci plays a single round; it has already started",
            ));
        }
        let mut rng = RoundRng {
            rng: seed.rng(),
            shuffles: 0,
        };
        // draw for the dealer, highest face deals, ties draw again.
        let mut dealer_draw = Vec::new();
        let dealer = 'draw: loop {
            let mut deck = Card::deck();
            rng.shuffle(&mut deck);
            for pair in deck.chunks_exact(2) {
                dealer_draw.push([pair[0], pair[1]]);
                let (a, b) = (pair[0].rank().face(), pair[1].rank().face());
                if a != b {
                    break 'draw if a > b { 0 } else { 1 };
                }
            }
        };
        let first = 1 - dealer;
        let mut deck = Card::deck();
        rng.shuffle(&mut deck);
        let mut hands = [Vec::new(), Vec::new()];
        for (i, &c) in deck[..2 * HAND_SIZE].iter().enumerate() {
            hands[(first + i) % 2].push(c);
        }
        let pile_top_first = deck[2 * HAND_SIZE..].to_vec();
        self.pile = pile_top_first.iter().rev().copied().collect();
        self.deal = Some(DealRecord {
            dealer_draw,
            dealer,
            hands: hands.clone(),
            draw_pile: pile_top_first,
            refills: Vec::new(),
        });
        self.hands = hands;
        self.columns.clear();
        self.dealer = dealer;
        self.turn = first;
        self.round = 1;
        self.phase = Phase::Playing;
        self.rng = Some(rng);
        Ok(vec![Event::RoundStarted {
            dealer,
            first,
            hand_size: HAND_SIZE,
            draw_pile: self.pile.len(),
        }])
    }

    fn to_act(&self) -> Vec<Seat> {
        if self.phase == Phase::Playing {
            vec![self.turn]
        } else {
            Vec::new()
        }
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Vec<Event>, RuleError> {
        if seat >= 2 {
            return Err(RuleError::bad_seat(seat, 2));
        }
        if self.phase != Phase::Playing {
            return Err(RuleError::no_round());
        }
        if seat != self.turn {
            return Err(RuleError::not_your_turn(seat));
        }
        self.check(seat, action)?;
        let mut events = vec![self.execute(seat, action)];
        self.turns += 1;
        if matches!(action, Action::Pass) {
            self.passes += 1;
        } else {
            self.passes = 0;
        }
        self.turn = Self::other(seat);
        if self.hands[seat].is_empty() {
            self.finish(Some(seat), EndReason::EmptiedHand, &mut events);
        } else if self.passes >= 2 {
            self.finish(None, EndReason::TwoPasses, &mut events);
        } else if self.turns >= MAX_TURNS {
            self.finish(None, EndReason::TurnLimit, &mut events);
        } else if let Some(ev) = self.refill() {
            events.push(ev);
        }
        Ok(events)
    }

    fn view_for(&self, viewer: Viewer) -> FibFibView {
        view::build(self, viewer)
    }

    fn legal_actions(view: &FibFibView) -> Vec<Action> {
        view::legal_from_view(view)
    }

    fn scores(&self) -> Vec<i64> {
        match self.end {
            Some(End {
                winner: Some(w), ..
            }) => (0..2).map(|s| i64::from(s == w)).collect(),
            _ => vec![0, 0],
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        let end = self.end?;
        Some(Outcome {
            winners: end.winner.into_iter().collect(),
            scores: self.scores(),
        })
    }

    fn deal_record(&self) -> serde_json::Value {
        serde_json::to_value(&self.deal).expect("deal record serializes")
    }
}
