//! The match state machine: dealing a round from its seed, playing cards to tricks,
//! resolving tricks (fibonacho trumps, R-53), scoring rounds and ending the match.
//! `apply` validates everything before it mutates anything, so a refused action leaves the
//! state untouched without cloning.

use game_core::{DeckRng, Outcome, Phase, RuleError, Seat, Seed, codes, next_seat};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{Card, SPICY_DECK, Scoring, Suit, canonical_deck, hand_size, round_score};

/// Rounds in a match.
pub const ROUNDS: u32 = 3;

/// Error code: the card named does not exist in the nacho deck (number outside 1–14, or
/// copy 1 of a number other than 1).
pub const NO_SUCH_CARD: &str = "no_such_card";
/// Error code: the player holds a card of the lead suit but played another suit.
pub const MUST_FOLLOW_SUIT: &str = "must_follow_suit";

/// Table options. Fibonachos has none; the struct exists so the wire format can grow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct NachosOptions {}

/// Something a seat asks to do: play one card from the hand to the current trick.
/// `{"type":"play","card":{"suit":"red","number":1,"copy":1}}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    Play { card: Card },
}

/// A card as shown to clients, with its fibonacho flag so the browser need not know R-50.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CardView {
    pub suit: Suit,
    pub number: u8,
    pub copy: u8,
    pub fibonacho: bool,
}

impl From<Card> for CardView {
    fn from(c: Card) -> Self {
        CardView {
            suit: c.suit,
            number: c.number,
            copy: c.copy,
            fibonacho: c.is_fibonacho(),
        }
    }
}

impl CardView {
    pub fn card(self) -> Card {
        Card {
            suit: self.suit,
            number: self.number,
            copy: self.copy,
        }
    }
}

/// A card played to a trick and who played it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlayedCard {
    pub seat: Seat,
    pub card: CardView,
}

/// A completed trick.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrickResult {
    /// The seat that led it.
    pub leader: Seat,
    /// Cards in the order played.
    pub cards: Vec<PlayedCard>,
    pub winner: Seat,
    /// The spicy card the winner took.
    pub spicy: u8,
    /// Whether two or more fibonachos were in the trick, so the highest fibonacho won.
    pub fibonachos_active: bool,
}

/// One seat's result for a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeatRoundResult {
    pub seat: Seat,
    pub tricks: u32,
    /// Sum of the spicy cards won (the raw total).
    pub spicy_total: u32,
    /// How the score was reached: as is, Fibonacci bonus, or 34 for no tricks.
    pub scoring: Scoring,
    pub score: i64,
}

/// The result of a finished round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoundSummary {
    pub round: u32,
    pub results: Vec<SeatRoundResult>,
    /// Match totals after this round.
    pub totals: Vec<i64>,
}

/// Public records of what happened. None carries a hidden card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A round was dealt: `hand_size` cards each, `set_aside` cards put away unseen.
    RoundStarted {
        round: u32,
        dealer: Seat,
        leader: Seat,
        hand_size: usize,
        set_aside: usize,
    },
    /// The trick's leader turned up the next spicy card: the value of this trick.
    SpicyRevealed {
        seat: Seat,
        spicy: u8,
        /// Spicy cards still face down after this one.
        remaining: usize,
    },
    CardPlayed {
        seat: Seat,
        card: CardView,
    },
    /// `seat` won the trick and takes the spicy card; it leads next.
    TrickWon {
        seat: Seat,
        spicy: u8,
        fibonachos_active: bool,
        cards: Vec<PlayedCard>,
    },
    /// Round scores: raw spicy totals, how each was scored, and the match totals.
    RoundEnded {
        round: u32,
        results: Vec<SeatRoundResult>,
        totals: Vec<i64>,
    },
    /// After round 3: highest total wins, ties share the win.
    MatchEnded {
        winners: Vec<Seat>,
        totals: Vec<i64>,
    },
}

/// Everything the deal of a round fixed, for verification once the round is over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealRecord {
    pub round: u32,
    pub dealer: Seat,
    /// Round 1 only: the draws for the first dealer, one list per (re-)draw.
    pub dealer_draw: Vec<Vec<(Seat, Card)>>,
    /// Hands as dealt, sorted.
    pub hands: Vec<Vec<Card>>,
    pub set_aside: Vec<Card>,
    /// The spicy deck, top card first.
    pub spicy_order: Vec<u8>,
}

/// A round about to start its first trick, given by its cards, for rule tests and puzzles
/// ([`NachosMatch::from_position`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// One hand per seat (2 to 5 seats), all of the same, non-zero size.
    pub hands: Vec<Vec<Card>>,
    /// Leads the first trick; the dealer is the seat before.
    pub leader: Seat,
    /// The spicy deck, top first: at least one card per trick.
    pub spicy_order: Vec<u8>,
    /// 1 to 3.
    pub round: u32,
    /// Match totals before this round, one per seat; empty means all 0.
    pub totals: Vec<i64>,
}

/// A card in the current trick (internal form).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Played {
    pub seat: Seat,
    pub card: Card,
}

/// A whole Fibonachos match: three rounds for 2–5 players.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NachosMatch {
    pub(crate) players: usize,
    pub(crate) phase: Phase,
    pub(crate) round: u32,
    pub(crate) dealer: Seat,
    /// Leader of the current trick.
    pub(crate) leader: Seat,
    pub(crate) turn: Seat,
    /// Sorted hands.
    pub(crate) hands: Vec<Vec<Card>>,
    pub(crate) set_aside: Vec<Card>,
    /// This round's shuffled spicy deck, top first; `spicy_next` cards have been turned up.
    pub(crate) spicy_order: Vec<u8>,
    pub(crate) spicy_next: usize,
    /// The spicy card at stake in the current trick.
    pub(crate) at_stake: Option<u8>,
    pub(crate) trick: Vec<Played>,
    /// Cards of this round's completed tricks (public, kept so every card is accounted for).
    pub(crate) played: Vec<Card>,
    /// Spicy cards won this round, per seat (public).
    pub(crate) piles: Vec<Vec<u8>>,
    pub(crate) last_trick: Option<TrickResult>,
    pub(crate) last_round: Option<RoundSummary>,
    /// Round scores, one row per finished round.
    pub(crate) round_scores: Vec<Vec<i64>>,
    pub(crate) totals: Vec<i64>,
    pub(crate) deal: Option<DealRecord>,
}

/// Index in `trick` of the card that wins it so far, and whether the fibonacho trump is
/// active. `trick` must not be empty.
pub(crate) fn trick_winner(trick: &[Played]) -> (usize, bool) {
    let fibonachos = trick.iter().filter(|p| p.card.is_fibonacho()).count();
    let mut best: Option<usize> = None;
    if fibonachos >= 2 {
        // highest fibonacho in any suit; `>=` gives a tie to the one played last.
        for (i, p) in trick.iter().enumerate() {
            if p.card.is_fibonacho() && best.is_none_or(|b| p.card.number >= trick[b].card.number) {
                best = Some(i);
            }
        }
    } else {
        // highest of the lead suit; off-suit cards never win; ties to the last played.
        let lead = trick[0].card.suit;
        for (i, p) in trick.iter().enumerate() {
            if p.card.suit == lead && best.is_none_or(|b| p.card.number >= trick[b].card.number) {
                best = Some(i);
            }
        }
    }
    (best.unwrap_or(0), fibonachos >= 2)
}

/// every seat draws a card from a shuffled nacho deck; the highest number deals; the
/// seats tied for highest draw again (from the same deck, reshuffled fresh if it runs out).
pub(crate) fn draw_dealer(rng: &mut DeckRng, players: usize) -> (Seat, Vec<Vec<(Seat, Card)>>) {
    let mut contenders: Vec<Seat> = (0..players).collect();
    let mut deck = canonical_deck();
    rng.shuffle(&mut deck);
    let mut pos = 0;
    let mut record = Vec::new();
    loop {
        let mut draws = Vec::with_capacity(contenders.len());
        for &seat in &contenders {
            if pos == deck.len() {
                deck = canonical_deck();
                rng.shuffle(&mut deck);
                pos = 0;
            }
            draws.push((seat, deck[pos]));
            pos += 1;
        }
        let high = draws.iter().map(|(_, c)| c.number).max().unwrap_or(0);
        contenders = draws
            .iter()
            .filter(|(_, c)| c.number == high)
            .map(|(s, _)| *s)
            .collect();
        record.push(draws);
        if contenders.len() == 1 {
            return (contenders[0], record);
        }
    }
}

impl NachosMatch {
    pub(crate) fn new(players: usize) -> Self {
        NachosMatch {
            players,
            phase: Phase::AwaitingRound,
            round: 0,
            dealer: 0,
            leader: 0,
            turn: 0,
            hands: vec![Vec::with_capacity(15); players],
            set_aside: Vec::new(),
            spicy_order: Vec::new(),
            spicy_next: 0,
            at_stake: None,
            trick: Vec::with_capacity(players),
            played: Vec::with_capacity(45),
            piles: vec![Vec::with_capacity(15); players],
            last_trick: None,
            last_round: None,
            round_scores: Vec::new(),
            totals: vec![0; players],
            deal: None,
        }
    }

    /// The suit led in the current trick, if a card has been played to it.
    pub fn lead_suit(&self) -> Option<Suit> {
        self.trick.first().map(|p| p.card.suit)
    }

    /// Whether `seat` may play `card` now, ignoring turn and phase: it holds the card and
    /// either it follows the lead suit or the seat has no card of that suit.
    pub fn may_play(&self, seat: Seat, card: Card) -> bool {
        let hand = &self.hands[seat];
        hand.contains(&card)
            && match self.lead_suit() {
                Some(lead) => card.suit == lead || !hand.iter().any(|c| c.suit == lead),
                None => true,
            }
    }

    /// The cards the seat on turn may play (empty when no round is in progress). A cheap
    /// alternative to `legal_actions_for` for simulations.
    pub fn playable_cards(&self, seat: Seat) -> impl Iterator<Item = Card> + '_ {
        let active = self.phase == Phase::Playing && seat == self.turn;
        let hand: &[Card] = if active { &self.hands[seat] } else { &[] };
        hand.iter()
            .copied()
            .filter(move |c| self.may_play(seat, *c))
    }

    pub(crate) fn start_round_impl(&mut self, seed: &Seed) -> Result<Vec<Event>, RuleError> {
        if self.phase != Phase::AwaitingRound {
            return Err(RuleError::new(
                codes::WRONG_PHASE,
                "a round can only be dealt between rounds",
            ));
        }
        let n = self.players;
        let mut rng = seed.rng();
        self.round += 1;
        // R-1 for round 1; afterwards the deal passes clockwise.
        let dealer_draw = if self.round == 1 {
            let (dealer, draw) = draw_dealer(&mut rng, n);
            self.dealer = dealer;
            draw
        } else {
            self.dealer = next_seat(self.dealer, n);
            Vec::new()
        };
        // Deal one card at a time clockwise from the seat after the dealer.
        let mut deck = canonical_deck();
        rng.shuffle(&mut deck);
        let per = hand_size(n);
        for h in &mut self.hands {
            h.clear();
        }
        for (i, card) in deck[..per * n].iter().enumerate() {
            self.hands[(self.dealer + 1 + i) % n].push(*card);
        }
        for h in &mut self.hands {
            h.sort_unstable();
        }
        self.set_aside = deck[per * n..].to_vec();
        // the spicy deck is reshuffled every round, after the nachos.
        let mut spicy = SPICY_DECK.to_vec();
        rng.shuffle(&mut spicy);
        self.spicy_order = spicy;
        self.spicy_next = 0;
        for p in &mut self.piles {
            p.clear();
        }
        self.trick.clear();
        self.played.clear();
        self.last_trick = None;
        self.leader = next_seat(self.dealer, n);
        self.turn = self.leader;
        self.phase = Phase::Playing;
        self.deal = Some(DealRecord {
            round: self.round,
            dealer: self.dealer,
            dealer_draw,
            hands: self.hands.clone(),
            set_aside: self.set_aside.clone(),
            spicy_order: self.spicy_order.clone(),
        });
        let mut events = vec![Event::RoundStarted {
            round: self.round,
            dealer: self.dealer,
            leader: self.leader,
            hand_size: per,
            set_aside: self.set_aside.len(),
        }];
        self.reveal_spicy(&mut events);
        Ok(events)
    }

    /// The trick's leader turns up the next spicy card. R-52 guarantees there is one.
    fn reveal_spicy(&mut self, events: &mut Vec<Event>) {
        let spicy = self.spicy_order[self.spicy_next];
        self.spicy_next += 1;
        self.at_stake = Some(spicy);
        events.push(Event::SpicyRevealed {
            seat: self.leader,
            spicy,
            remaining: self.spicy_order.len() - self.spicy_next,
        });
    }

    pub(crate) fn apply_impl(
        &mut self,
        seat: Seat,
        action: &Action,
    ) -> Result<Vec<Event>, RuleError> {
        if seat >= self.players {
            return Err(RuleError::bad_seat(seat, self.players));
        }
        if self.phase != Phase::Playing {
            return Err(RuleError::no_round());
        }
        if seat != self.turn {
            return Err(RuleError::not_your_turn(seat));
        }
        let Action::Play { card } = *action;
        if !card.is_valid() {
            return Err(RuleError::new(
                NO_SUCH_CARD,
                format!(
                    "there is no {:?} {} (copy {}) in the nacho deck",
                    card.suit, card.number, card.copy
                ),
            ));
        }
        let hand = &self.hands[seat];
        let Some(pos) = hand.iter().position(|c| *c == card) else {
            return Err(RuleError::new(
                codes::CARD_NOT_IN_HAND,
                format!(
                    "seat {seat} does not hold the {:?} {}",
                    card.suit, card.number
                ),
            ));
        };
        if let Some(lead) = self.lead_suit()
            && card.suit != lead
            && hand.iter().any(|c| c.suit == lead)
        {
            //
            return Err(RuleError::new(
                MUST_FOLLOW_SUIT,
                format!(
                    "{:?} was led and seat {seat} holds a {:?} card, so the {:?} {} cannot be played",
                    lead, lead, card.suit, card.number
                ),
            ));
        }

        // Validated: mutate.
        self.hands[seat].remove(pos);
        self.trick.push(Played { seat, card });
        let mut events = Vec::with_capacity(2);
        events.push(Event::CardPlayed {
            seat,
            card: card.into(),
        });
        if self.trick.len() < self.players {
            self.turn = next_seat(seat, self.players);
        } else {
            self.finish_trick(&mut events);
        }
        Ok(events)
    }

    fn finish_trick(&mut self, events: &mut Vec<Event>) {
        let (idx, active) = trick_winner(&self.trick);
        let winner = self.trick[idx].seat;
        let spicy = self.at_stake.take().unwrap_or(0);
        self.piles[winner].push(spicy);
        self.played.extend(self.trick.iter().map(|p| p.card));
        let cards: Vec<PlayedCard> = self
            .trick
            .iter()
            .map(|p| PlayedCard {
                seat: p.seat,
                card: p.card.into(),
            })
            .collect();
        events.push(Event::TrickWon {
            seat: winner,
            spicy,
            fibonachos_active: active,
            cards: cards.clone(),
        });
        self.last_trick = Some(TrickResult {
            leader: self.leader,
            cards,
            winner,
            spicy,
            fibonachos_active: active,
        });
        self.trick.clear();
        // The winner leads next.
        self.leader = winner;
        self.turn = winner;
        if self.hands[winner].is_empty() {
            self.end_round(events);
        } else {
            self.reveal_spicy(events);
        }
    }

    fn end_round(&mut self, events: &mut Vec<Event>) {
        let results: Vec<SeatRoundResult> = self
            .piles
            .iter()
            .enumerate()
            .map(|(seat, pile)| {
                let tricks = pile.len() as u32;
                let spicy_total = pile.iter().map(|&v| u32::from(v)).sum();
                let (score, scoring) = round_score(tricks, spicy_total);
                SeatRoundResult {
                    seat,
                    tricks,
                    spicy_total,
                    scoring,
                    score,
                }
            })
            .collect();
        for r in &results {
            self.totals[r.seat] += r.score;
        }
        self.round_scores
            .push(results.iter().map(|r| r.score).collect());
        let summary = RoundSummary {
            round: self.round,
            results: results.clone(),
            totals: self.totals.clone(),
        };
        events.push(Event::RoundEnded {
            round: self.round,
            results,
            totals: self.totals.clone(),
        });
        self.last_round = Some(summary);
        if self.round >= ROUNDS {
            self.phase = Phase::Finished;
            events.push(Event::MatchEnded {
                winners: self.winners(),
                totals: self.totals.clone(),
            });
        } else {
            self.phase = Phase::AwaitingRound;
        }
    }

    /// Seats with the highest total (R-54: ties share the win).
    pub(crate) fn winners(&self) -> Vec<Seat> {
        let best = self.totals.iter().copied().max().unwrap_or(0);
        (0..self.players)
            .filter(|&s| self.totals[s] == best)
            .collect()
    }

    pub(crate) fn outcome_impl(&self) -> Option<Outcome> {
        (self.phase == Phase::Finished).then(|| Outcome {
            winners: self.winners(),
            scores: self.totals.clone(),
        })
    }

    /// A match in the middle of a round from explicit hands, for scenario tests: the
    /// public [`NachosMatch::from_position`] with no totals, which must accept it.
    #[cfg(test)]
    pub(crate) fn from_hands(
        hands: Vec<Vec<Card>>,
        leader: Seat,
        spicy_order: Vec<u8>,
        round: u32,
    ) -> Self {
        NachosMatch::from_position(&Position {
            hands,
            leader,
            spicy_order,
            round,
            totals: Vec::new(),
        })
        .expect("a consistent position")
    }

    /// A match at the start of a trick-less round, dealt as `position` says, for rule
    /// tests and puzzles. The leader's spicy card (the first of `spicy_order`) is turned
    /// up at once; nacho cards in no hand are set aside unseen. Refuses
    /// (`bad_player_count` or `bad_options`) 2 > hands > 5, hands of different or zero
    /// size, a card that does not exist or is given twice, a leader not at the table,
    /// fewer spicy cards than tricks or spicy cards the deck does not hold,
    /// a round outside 1–3 and totals of the wrong length. The deal record is absent (no
    /// seed dealt this).
    pub fn from_position(position: &Position) -> Result<NachosMatch, RuleError> {
        let bad = |m: String| RuleError::new(codes::BAD_OPTIONS, m);
        let n = position.hands.len();
        if !(2..=5).contains(&n) {
            return Err(RuleError::new(
                codes::BAD_PLAYER_COUNT,
                format!("Fibonachos is for 2 to 5 players, not {n}"),
            ));
        }
        let size = position.hands[0].len();
        if size == 0 || position.hands.iter().any(|h| h.len() != size) {
            return Err(bad(format!(
                "every hand must hold the same number of cards, at least one (hands of {:?})",
                position.hands.iter().map(Vec::len).collect::<Vec<_>>()
            )));
        }
        let mut used = [false; crate::cards::NACHO_COUNT];
        for c in position.hands.iter().flatten() {
            if !c.is_valid() || std::mem::replace(&mut used[c.index()], true) {
                return Err(bad(format!(
                    "{:?} {} (copy {}) does not exist or is given twice",
                    c.suit, c.number, c.copy
                )));
            }
        }
        if position.leader >= n {
            return Err(bad(format!(
                "the leader, seat {}, is not at a table of {n}",
                position.leader
            )));
        }
        // one spicy card per trick, all from the spicy deck.
        let mut left = SPICY_DECK.to_vec();
        for v in &position.spicy_order {
            let Some(i) = left.iter().position(|x| x == v) else {
                return Err(bad(format!("the spicy deck holds no further {v}")));
            };
            left.swap_remove(i);
        }
        if position.spicy_order.len() < size {
            return Err(bad(format!(
                "{} spicy cards for {size} tricks",
                position.spicy_order.len()
            )));
        }
        if !(1..=ROUNDS).contains(&position.round) {
            return Err(bad(format!(
                "round {} is not 1 to {ROUNDS}",
                position.round
            )));
        }
        let mut m = NachosMatch::new(n);
        if !position.totals.is_empty() {
            if position.totals.len() != n {
                return Err(bad(format!(
                    "{} totals for {n} seats",
                    position.totals.len()
                )));
            }
            m.totals = position.totals.clone();
        }
        m.set_aside = canonical_deck()
            .into_iter()
            .filter(|c| !used[c.index()])
            .collect();
        m.hands = position.hands.clone();
        for h in &mut m.hands {
            h.sort_unstable();
        }
        m.round = position.round;
        m.dealer = (position.leader + n - 1) % n;
        m.leader = position.leader;
        m.turn = position.leader;
        m.spicy_order = position.spicy_order.clone();
        m.phase = Phase::Playing;
        let mut ev = Vec::new();
        m.reveal_spicy(&mut ev);
        Ok(m)
    }
}
