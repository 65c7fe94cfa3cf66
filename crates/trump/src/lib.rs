//! Fibonacci's Trump (rulebook 003, rulings R-0..R-4 and R-30..R-34): a trick-taking race
//! to 144 for 2–4 players, as a pure [`game_core::Game`] state machine ([`Trump`]).
//!
//! * Deck (R-30): red, yellow, green, blue, purple × 1–10; the symbol of colour `c` (0–4)
//!   and number `n` is `[circled_plus, circle, square, star, waves][(n − 1 + c) mod 5]`.
//!   Canonical order before the shuffle: colour-major (red 1..10, yellow 1..10, …).
//! * Round start: round 1's dealer is drawn from the seed (R-1, see [`deal`]); later the
//!   winner of the previous round's last trick deals (R-31). The deck is shuffled from
//!   the round's seed, 48 cards are dealt one at a time starting with the seat after the
//!   dealer (24/16/12 each for 2/3/4 players), deck card 49 is the trump indicator (its
//!   colour is trump) and card 50 the symbol indicator (its symbol is collected). Both
//!   indicators are face up.
//! * First lead (R-31): in round 1 the holder of the lowest trump-colour card in any hand
//!   (indicators are in no hand, so they are skipped); later rounds the dealer leads.
//! * Play (R-32): follow the led colour if able, else anything. The highest trump wins,
//!   else the highest card of the led colour. The winner leads the next trick.
//! * Round end (R-31, R-33): when hands are empty, the last trick's winner takes both
//!   indicators into their won cards; each seat scores by the number of won cards bearing
//!   the round's symbol: 0,0,1,1,2,3,5,8,13,21,34 for 0..10.
//! * Match (R-34): after a round in which some total reaches the target (144), the single
//!   highest total wins; a tie for the highest plays another round.
//!
//! Visibility (R-4): a view shows the viewer's own hand, every hand's size, both
//! indicators, and every card played this round in playing order (`plays`): the trick on
//! the table, the completed tricks, who played each card and who took each trick, all of
//! which happened face up in front of everybody (anyone could keep them in mind, and
//! neither the browser nor a bot should have to). Won piles are face down, but they hold
//! exactly the tricks their seat was seen to take (and the indicators, taken in the open);
//! no hand is ever shown but the viewer's. The Rust view also spells out what follows from
//! those (the trick, the last trick, the sorted `played` cards, per seat the number of
//! tricks and cards won and how many of those bear the round's symbol); the wire leaves it
//! out ([`view::TrumpViewWire`]). The round result lists every seat's symbol count and
//! points.
//!
//! Error codes (besides game-core's `bad_seat`, `not_your_turn`, `no_round_in_progress`,
//! `bad_player_count`, `bad_options`, `wrong_phase`):
//! * `card_not_in_hand`: the played card is not in the player's hand.
//! * `must_follow_colour`: the player holds a card of the led colour but played another
//!   colour (R-32).
//! * `wrong_phase`: `start_round` while a round is in progress or after the match.
//! * `bad_options`: `target` is 0.

pub mod cards;
pub mod deal;
pub mod view;

#[cfg(test)]
mod tests;

use game_core::{Game, Outcome, Phase, RuleError, Seat, Seed, Viewer, codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cards::{Card, CardWire, Colour, Symbol};
pub use view::{CompletedTrick, RoundResult, TrickPlay, TrumpView};

use cards::{DECK_SIZE, cards_of};

/// Error code: the player holds a card of the led colour but played another (R-32).
pub const MUST_FOLLOW_COLOUR: &str = "must_follow_colour";

/// R-33: points for 0..=10 collected cards bearing the round's symbol.
pub const SYMBOL_POINTS: [i64; 11] = [0, 0, 1, 1, 2, 3, 5, 8, 13, 21, 34];

/// Maximum number of seats.
pub const MAX_PLAYERS: usize = 4;

/// Table options.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// The race target of R-34: the match ends after a round in which some seat's total
    /// reaches this (and one seat alone has the highest total). The official game: 144.
    pub target: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options { target: 144 }
    }
}

/// What a seat may do: play one card from its hand into the trick. Written as the card's
/// code alone (`"r7"`: legal actions, bots' moves, logs), which is what a client may send;
/// the object form `{"type":"play","card":"r7"}` is read too (protocol.md §6.3), and is
/// what match logs from before this form hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Play `card`.
    Play { card: Card },
}

/// [`Action`]'s object form: its schema, and how it is read.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "ActionObject")]
enum ActionObject {
    /// Play `card` (e.g. `{"type":"play","card":"r7"}`).
    Play { card: Card },
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Action::Play { card } => card.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Action, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Action;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"a card to play, such as "r7", or {"type":"play","card":"r7"}"#)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Action, E> {
                Card::from_code(v)
                    .map(|card| Action::Play { card })
                    .map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Action, A::Error> {
                let ActionObject::Play { card } =
                    ActionObject::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Action::Play { card })
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

impl JsonSchema for Action {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Action".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let object = generator.subschema_for::<ActionObject>();
        schemars::json_schema!({
            "description": "Play a card: its code alone (\"r7\", how the server writes it, in `legal` too), or {\"type\":\"play\",\"card\":\"r7\"}.",
            "anyOf": [
                {"type": "string", "pattern": "^[rygbp]([1-9]|10)$"},
                object
            ]
        })
    }
}

/// A card drawn for the first dealer (R-1). These draws come from a separate shuffle
/// before the deal, so they tell nothing about the hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DealerDraw {
    pub seat: Seat,
    pub card: Card,
}

/// Public records of what happened that the view does not say by itself: a card played
/// and a trick won are no events, since the view's `plays` (every card of the round, in
/// playing order) says both, and a patch carries that one card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A round was dealt.
    RoundStarted {
        round: u32,
        dealer: Seat,
        /// Who leads the first trick (R-31).
        leader: Seat,
        /// Round 1 only: the cards drawn for the first dealer, in drawing order (R-1).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dealer_draw: Vec<DealerDraw>,
        /// Cards dealt to each seat.
        hand_size: usize,
        trump_indicator: Card,
        symbol_indicator: Card,
        trump_colour: Colour,
        symbol: Symbol,
    },
    /// The round is over: the last trick's winner took the indicators (R-31) and
    /// everybody scored (R-33).
    RoundEnded(RoundResult),
    /// The match is over (R-34).
    MatchEnded {
        winners: Vec<Seat>,
        scores: Vec<i64>,
    },
}

/// The state of a round in progress (or the last one, kept for the views between rounds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Round {
    /// Hands as bitsets of card indices.
    pub hands: [u64; MAX_PLAYERS],
    /// Won cards per seat (face down), including the indicators once taken.
    pub won: [u64; MAX_PLAYERS],
    pub tricks_won: [u8; MAX_PLAYERS],
    pub trump_indicator: Card,
    pub symbol_indicator: Card,
    pub trump: Colour,
    pub symbol: Symbol,
    /// Set when the last trick's winner has taken the indicators (R-31).
    pub indicators_taken: bool,
    pub dealer: Seat,
    /// Leader of the trick on the table.
    pub leader: Seat,
    /// Whose turn it is.
    pub turn: Seat,
    /// Cards on the table, in playing order from `leader`.
    pub trick: [Card; MAX_PLAYERS],
    pub trick_len: u8,
    pub tricks_played: u8,
    pub last_trick: Option<CompletedTrick>,
    /// Every card played this round, in playing order: the first `tricks_played × players
    /// + trick_len` are set (the views' `plays`, from which the rest of a view follows).
    pub plays: [Card; DECK_SIZE - 2],
    /// The deal as shuffled, for [`Game::deal_record`].
    pub deck: [Card; DECK_SIZE],
    pub dealt: [u64; MAX_PLAYERS],
    pub dealer_draw: Vec<DealerDraw>,
    /// Who led the round's first trick (R-31).
    pub first_leader: Seat,
}

impl Round {
    /// The cards of the completed tricks (every won card but the indicators).
    pub(crate) fn played(&self) -> u64 {
        let won = self.won.iter().fold(0, |a, w| a | w);
        won & !(self.trump_indicator.bit() | self.symbol_indicator.bit())
    }
}

/// A match of Fibonacci's Trump: every round until R-34 names a winner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trump {
    pub(crate) options: Options,
    pub(crate) players: usize,
    pub(crate) phase: Phase,
    pub(crate) round_no: u32,
    pub(crate) scores: Vec<i64>,
    /// The dealer of the next round, once known (R-31: the last trick's winner).
    pub(crate) next_dealer: Option<Seat>,
    pub(crate) round: Option<Round>,
    pub(crate) last_result: Option<RoundResult>,
    pub(crate) outcome: Option<Outcome>,
}

/// A round in progress given by its cards, for rule tests and puzzles
/// ([`Trump::from_position`]). Cards in no hand and not an indicator are out of this round
/// (as if never dealt): nobody can play, win or score them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// One hand per seat (2 to 4 seats), all of the same, non-zero size.
    pub hands: Vec<Vec<Card>>,
    /// Its colour is trump (R-30).
    pub trump_indicator: Card,
    /// Its symbol is collected (R-30).
    pub symbol_indicator: Card,
    pub dealer: Seat,
    /// The round number, from 1. In round 1 the holder of the lowest trump in any hand
    /// leads (R-31); in later rounds the dealer leads.
    pub round: u32,
    /// Match totals before this round, one per seat; empty means all 0.
    pub scores: Vec<i64>,
}

impl Trump {
    /// A match in the middle of round `position.round`, dealt as `position` says and with
    /// no trick played yet. Refuses (code `bad_player_count` or `bad_options`) a wrong
    /// number of hands, hands of different sizes or empty ones, a card given twice
    /// (indicators included), a dealer not at the table, round 0, scores of the wrong
    /// length and a target of 0. The deal record lists the hands; the deck in it is the
    /// canonical order (no shuffle made this position).
    pub fn from_position(options: &Options, position: &Position) -> Result<Trump, RuleError> {
        let bad = |m: String| RuleError::new(codes::BAD_OPTIONS, m);
        let n = position.hands.len();
        let mut g = Trump::new_match(options, n)?;
        let size = position.hands[0].len();
        if size == 0 || position.hands.iter().any(|h| h.len() != size) {
            return Err(bad(format!(
                "every hand must hold the same number of cards, at least one (hands of {:?})",
                position.hands.iter().map(Vec::len).collect::<Vec<_>>()
            )));
        }
        let mut seen = 0u64;
        let mut hands = [0u64; MAX_PLAYERS];
        let all = position
            .hands
            .iter()
            .enumerate()
            .flat_map(|(s, h)| h.iter().map(move |&c| (Some(s), c)))
            .chain([
                (None, position.trump_indicator),
                (None, position.symbol_indicator),
            ]);
        for (seat, card) in all {
            if seen & card.bit() != 0 {
                return Err(bad(format!("{card} is given twice")));
            }
            seen |= card.bit();
            if let Some(s) = seat {
                hands[s] |= card.bit();
            }
        }
        if position.dealer >= n {
            return Err(bad(format!(
                "the dealer, seat {}, is not at a table of {n}",
                position.dealer
            )));
        }
        if position.round == 0 {
            return Err(bad("rounds are numbered from 1".to_string()));
        }
        if !position.scores.is_empty() {
            if position.scores.len() != n {
                return Err(bad(format!(
                    "{} scores for {n} seats",
                    position.scores.len()
                )));
            }
            g.scores = position.scores.clone();
        }
        g.round = Some(deal::from_hands(
            n,
            hands,
            position.trump_indicator,
            position.symbol_indicator,
            position.dealer,
            position.round == 1,
            Card::canonical_deck(),
            Vec::new(),
        ));
        g.round_no = position.round;
        g.phase = Phase::Playing;
        Ok(g)
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The seat whose turn it is, if a round is in progress.
    pub fn turn(&self) -> Option<Seat> {
        match (&self.round, self.phase) {
            (Some(r), Phase::Playing) => Some(r.turn),
            _ => None,
        }
    }

    /// The cards the seat on turn may play now, as a bitset (R-32).
    #[cfg(test)]
    pub(crate) fn playable_mask(r: &Round) -> u64 {
        let hand = r.hands[r.turn];
        if r.trick_len == 0 {
            return hand;
        }
        let led = r.trick[0].colour().mask();
        if hand & led != 0 { hand & led } else { hand }
    }

    /// The winning position in a complete or partial trick (R-32): highest trump, else
    /// highest card of the led colour.
    pub(crate) fn trick_winner_pos(trick: &[Card], trump: Colour) -> usize {
        let led = trick[0].colour();
        let mut best = 0;
        for (i, &c) in trick.iter().enumerate().skip(1) {
            let b = trick[best];
            let beats = if c.colour() == trump {
                b.colour() != trump || c.number() > b.number()
            } else {
                c.colour() == led && b.colour() != trump && c.number() > b.number()
            };
            if beats {
                best = i;
            }
        }
        best
    }

    /// Checks that `seat` may play `card` now, without changing anything (R-3).
    fn check_play(&self, seat: Seat, card: Card) -> Result<(), RuleError> {
        if seat >= self.players {
            return Err(RuleError::bad_seat(seat, self.players));
        }
        let r = match (&self.round, self.phase) {
            (Some(r), Phase::Playing) => r,
            _ => return Err(RuleError::no_round()),
        };
        if r.turn != seat {
            return Err(RuleError::not_your_turn(seat));
        }
        if r.hands[seat] & card.bit() == 0 {
            return Err(RuleError::new(
                codes::CARD_NOT_IN_HAND,
                format!("{card} is not in seat {seat}'s hand"),
            ));
        }
        if r.trick_len > 0 {
            let led = r.trick[0].colour();
            if card.colour() != led && r.hands[seat] & led.mask() != 0 {
                return Err(RuleError::new(
                    MUST_FOLLOW_COLOUR,
                    format!(
                        "{} was led and seat {seat} holds {}: it must follow colour (R-32), not play {card}",
                        led.name(),
                        led.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Plays a checked card; returns the events.
    fn play(&mut self, seat: Seat, card: Card) -> Vec<Event> {
        let n = self.players;
        let r = self.round.as_mut().expect("checked: round in progress");
        r.hands[seat] &= !card.bit();
        r.plays[r.tricks_played as usize * n + r.trick_len as usize] = card;
        r.trick[r.trick_len as usize] = card;
        r.trick_len += 1;
        // The card played and a trick's winner are no events: the view's `plays` says
        // both (protocol.md §6.4), and the patch carries that one card.
        let mut events = Vec::new();
        if (r.trick_len as usize) < n {
            r.turn = (seat + 1) % n;
            return events;
        }
        // Trick complete (R-32).
        let trick = &r.trick[..n];
        let pos = Self::trick_winner_pos(trick, r.trump);
        let winner = (r.leader + pos) % n;
        let mut won_bits = 0;
        for c in trick {
            won_bits |= c.bit();
        }
        r.won[winner] |= won_bits;
        r.tricks_won[winner] += 1;
        r.tricks_played += 1;
        let cards: Vec<TrickPlay> = trick
            .iter()
            .enumerate()
            .map(|(i, &card)| TrickPlay {
                seat: (r.leader + i) % n,
                card,
            })
            .collect();
        r.last_trick = Some(CompletedTrick {
            leader: r.leader,
            winner,
            cards,
        });
        r.trick_len = 0;
        r.leader = winner;
        r.turn = winner;
        if r.hands[winner] == 0 {
            // All hands are the same size, so every hand is empty: the round is over.
            self.end_round(winner, &mut events);
        }
        events
    }

    /// R-31, R-33, R-34: indicators to the last trick's winner, scoring, match end.
    fn end_round(&mut self, last_winner: Seat, events: &mut Vec<Event>) {
        let n = self.players;
        let r = self.round.as_mut().expect("round in progress");
        r.won[last_winner] |= r.trump_indicator.bit() | r.symbol_indicator.bit();
        r.indicators_taken = true;
        let sym = r.symbol.mask();
        let symbol_counts: Vec<u32> = (0..n).map(|s| (r.won[s] & sym).count_ones()).collect();
        let points: Vec<i64> = symbol_counts
            .iter()
            .map(|&c| SYMBOL_POINTS[c as usize])
            .collect();
        for (total, p) in self.scores.iter_mut().zip(&points) {
            *total += p;
        }
        let result = RoundResult {
            round: self.round_no,
            last_trick_winner: last_winner,
            last_trick: r
                .last_trick
                .as_ref()
                .map(|t| t.cards.iter().map(|p| p.card).collect())
                .unwrap_or_default(),
            trump_colour: r.trump,
            symbol: r.symbol,
            won_counts: (0..n).map(|s| r.won[s].count_ones()).collect(),
            symbol_counts,
            points,
            totals: self.scores.clone(),
        };
        self.last_result = Some(result.clone());
        events.push(Event::RoundEnded(result));
        self.next_dealer = Some(last_winner);
        // R-34: once someone reaches the target, a single highest total wins; a tie for
        // the highest plays on.
        let best = *self.scores.iter().max().expect("players >= 2");
        let leaders: Vec<Seat> = (0..n).filter(|&s| self.scores[s] == best).collect();
        if best >= i64::from(self.options.target) && leaders.len() == 1 {
            self.phase = Phase::Finished;
            let outcome = Outcome {
                winners: leaders,
                scores: self.scores.clone(),
            };
            events.push(Event::MatchEnded {
                winners: outcome.winners.clone(),
                scores: outcome.scores.clone(),
            });
            self.outcome = Some(outcome);
        } else {
            self.phase = Phase::AwaitingRound;
        }
    }

    /// A state consistent with `view` (a seat's view of a round in progress) in which the
    /// cards the viewer cannot see are where `hands` and `won` say: a search bot samples
    /// such "determinizations" of what it does not know. `hands[s]` and `won[s]` list every
    /// seat's hand and won pile (the viewer's own hand must be its real one; counts must
    /// match the view's `hand_counts`, `won_counts` and `symbol_counts`, and the won piles
    /// together must be the view's `played` cards). The deal record of the result is
    /// made up (it is never a real deal).
    pub fn from_view_and_hidden(
        view: &TrumpView,
        hands: &[Vec<Card>],
        won: &[Vec<Card>],
    ) -> Result<Trump, RuleError> {
        let bad = |m: &str| RuleError::new(codes::BAD_OPTIONS, m.to_string());
        let n = view.players;
        let me = view.viewer.seat().ok_or_else(|| bad("a spectator view"))?;
        if view.phase != Phase::Playing || hands.len() != n || won.len() != n {
            return Err(bad(
                "needs a round in progress and one hand and pile per seat",
            ));
        }
        let (Some(trump_indicator), Some(symbol_indicator), Some(leader), Some(turn)) = (
            view.trump_indicator,
            view.symbol_indicator,
            view.leader,
            view.turn,
        ) else {
            return Err(bad("the view lacks the round's indicators or turn"));
        };
        let bits = |cs: &[Card]| cs.iter().fold(0u64, |a, c| a | c.bit());
        let mut r_hands = [0u64; MAX_PLAYERS];
        let mut r_won = [0u64; MAX_PLAYERS];
        let mut tricks_won = [0u8; MAX_PLAYERS];
        let mut seen = trump_indicator.bit() | symbol_indicator.bit();
        let mut trick = [Card::from_index(0); MAX_PLAYERS];
        for (i, p) in view.trick.iter().enumerate() {
            trick[i] = p.card;
            seen |= p.card.bit();
        }
        for s in 0..n {
            r_hands[s] = bits(&hands[s]);
            r_won[s] = bits(&won[s]);
            tricks_won[s] = view.tricks_won[s] as u8;
            if r_hands[s].count_ones() != view.hand_counts[s]
                || r_won[s].count_ones() != view.won_counts[s]
                || (r_won[s] & view.symbol.map_or(0, |y| y.mask())).count_ones()
                    != view.symbol_counts[s]
            {
                return Err(bad("a hand or pile does not match the view's counts"));
            }
            for b in [r_hands[s], r_won[s]] {
                if seen & b != 0 {
                    return Err(bad("a card is in two places"));
                }
                seen |= b;
            }
        }
        let own: Vec<Card> = view.hand.clone().unwrap_or_default();
        if r_hands[me] != bits(&own) || seen.count_ones() as usize != DECK_SIZE {
            return Err(bad("the viewer's hand differs, or cards are missing"));
        }
        if r_won.iter().fold(0, |a, w| a | w) != bits(&view.played) {
            return Err(bad("the won piles are not the cards played"));
        }
        let mut plays = [Card::from_index(0); DECK_SIZE - 2];
        let mut dealt = r_hands;
        if view.plays.len() > plays.len() {
            return Err(bad("more cards played than dealt"));
        }
        let first_leader = view.first_leader.unwrap_or(leader);
        let seats = view::seats_of_plays(&view.plays, first_leader, trump_indicator.colour(), n);
        for (i, (&card, seat)) in view.plays.iter().zip(seats).enumerate() {
            plays[i] = card;
            dealt[seat] |= card.bit();
        }
        let round = Round {
            hands: r_hands,
            won: r_won,
            tricks_won,
            trump_indicator,
            symbol_indicator,
            trump: trump_indicator.colour(),
            symbol: symbol_indicator.symbol(),
            indicators_taken: false,
            dealer: view.dealer.unwrap_or(leader),
            leader,
            turn,
            trick,
            trick_len: view.trick.len() as u8,
            tricks_played: view.tricks_played as u8,
            last_trick: view.last_trick.clone(),
            plays,
            deck: Card::canonical_deck(),
            dealt,
            dealer_draw: Vec::new(),
            first_leader,
        };
        Ok(Trump {
            options: view.options.clone(),
            players: n,
            phase: Phase::Playing,
            round_no: view.round,
            scores: view.scores.clone(),
            next_dealer: None,
            round: Some(round),
            last_result: view.last_round.clone(),
            outcome: None,
        })
    }

    /// Every card's whereabouts, for the accounting property: the union of hands, trick,
    /// won piles and (until taken) the indicators; `None` if any card is in two places.
    #[cfg(test)]
    pub(crate) fn all_cards(&self) -> Option<u64> {
        let r = self.round.as_ref()?;
        let mut acc = 0u64;
        let mut add = |bits: u64| -> bool {
            let ok = acc & bits == 0;
            acc |= bits;
            ok
        };
        let mut ok = true;
        for s in 0..self.players {
            ok &= add(r.hands[s]);
            ok &= add(r.won[s]);
        }
        for c in &r.trick[..r.trick_len as usize] {
            ok &= add(c.bit());
        }
        if !r.indicators_taken {
            ok &= add(r.trump_indicator.bit());
            ok &= add(r.symbol_indicator.bit());
        }
        ok.then_some(acc)
    }
}

impl Game for Trump {
    type Options = Options;
    type Action = Action;
    type View = TrumpView;
    type Event = Event;

    const KIND: &'static str = "trump";
    const RULES_VERSION: u32 = 1;

    fn player_range(_options: &Options) -> (usize, usize) {
        (2, MAX_PLAYERS)
    }

    fn new_match(options: &Options, players: usize) -> Result<Self, RuleError> {
        if !(2..=MAX_PLAYERS).contains(&players) {
            return Err(RuleError::new(
                codes::BAD_PLAYER_COUNT,
                format!("Fibonacci's Trump is for 2 to 4 players, not {players}"),
            ));
        }
        if options.target == 0 {
            return Err(RuleError::new(
                codes::BAD_OPTIONS,
                "the target score must be at least 1",
            ));
        }
        Ok(Trump {
            options: options.clone(),
            players,
            phase: Phase::AwaitingRound,
            round_no: 0,
            scores: vec![0; players],
            next_dealer: None,
            round: None,
            last_result: None,
            outcome: None,
        })
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
                codes::WRONG_PHASE,
                match self.phase {
                    Phase::Playing => "a round is already in progress",
                    _ => "the match is over",
                },
            ));
        }
        let round = deal::deal(seed, self.players, self.next_dealer);
        self.round_no += 1;
        let ev = Event::RoundStarted {
            round: self.round_no,
            dealer: round.dealer,
            leader: round.leader,
            dealer_draw: round.dealer_draw.clone(),
            hand_size: (DECK_SIZE - 2) / self.players,
            trump_indicator: round.trump_indicator,
            symbol_indicator: round.symbol_indicator,
            trump_colour: round.trump,
            symbol: round.symbol,
        };
        self.round = Some(round);
        self.phase = Phase::Playing;
        Ok(vec![ev])
    }

    fn to_act(&self) -> Vec<Seat> {
        self.turn().into_iter().collect()
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Vec<Event>, RuleError> {
        match *action {
            Action::Play { card } => {
                self.check_play(seat, card)?;
                Ok(self.play(seat, card))
            }
        }
    }

    fn view_for(&self, viewer: Viewer) -> TrumpView {
        view::view_for(self, viewer)
    }

    fn legal_actions(view: &TrumpView) -> Vec<Action> {
        view.playable()
            .into_iter()
            .map(|card| Action::Play { card })
            .collect()
    }

    fn scores(&self) -> Vec<i64> {
        self.scores.clone()
    }

    fn outcome(&self) -> Option<Outcome> {
        self.outcome.clone()
    }

    fn deal_record(&self) -> serde_json::Value {
        let Some(r) = &self.round else {
            return serde_json::Value::Null;
        };
        serde_json::json!({
            "round": self.round_no,
            "dealer": r.dealer,
            "dealer_draw": r.dealer_draw,
            "deck": &r.deck[..],
            "hands": (0..self.players)
                .map(|s| cards_of(r.dealt[s]).collect::<Vec<Card>>())
                .collect::<Vec<_>>(),
            "trump_indicator": r.trump_indicator,
            "symbol_indicator": r.symbol_indicator,
            "first_leader": r.first_leader,
        })
    }
}
