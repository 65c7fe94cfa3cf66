//! What one viewer sees: the own hand with the playable cards marked, counts of the
//! other hands, the trick in progress with its derived state (lead suit, whether the
//! fibonacho trump is active, who is winning it), the public spicy piles, scores and the
//! last trick and round results, and the cards already played this round. Nothing hidden: no other hand, no set-aside card, no
//! face-down spicy card, no seed.

use game_core::{Phase, Seat, Viewer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{Card, Suit, hand_size};
use crate::state::{
    Action, CardView, NachosMatch, PlayedCard, ROUNDS, RoundSummary, TrickResult, trick_winner,
};

/// A card in the viewer's own hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HandCard {
    pub suit: Suit,
    pub number: u8,
    pub copy: u8,
    pub fibonacho: bool,
    /// The viewer is on turn and may play this card now.
    pub playable: bool,
}

impl HandCard {
    /// The card itself, without what the view says of it.
    pub fn card(self) -> Card {
        Card {
            suit: self.suit,
            number: self.number,
            copy: self.copy,
        }
    }
}

/// A seat's won spicy cards this round (public).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SpicyPile {
    /// Values in the order won; one per trick won.
    pub cards: Vec<u8>,
    pub total: u32,
}

/// Everything one viewer may see of a Fibonachos table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NachosView {
    pub players: usize,
    /// The viewing seat; `null` for a spectator.
    pub viewer: Option<Seat>,
    pub phase: Phase,
    /// Current (or last) round, 1..=3; 0 before the first.
    pub round: u32,
    /// Rounds in the match (3).
    pub rounds: u32,
    /// Cards dealt to each player per round.
    pub hand_size: usize,
    /// Dealer of the current (or last) round; `null` before the first deal.
    pub dealer: Option<Seat>,
    /// Leader of the trick in progress.
    pub leader: Option<Seat>,
    /// Seat to play; `null` between rounds and after the match.
    pub turn: Option<Seat>,
    /// The spicy card turned up for the trick in progress: what the trick is worth.
    pub spicy_at_stake: Option<u8>,
    /// Spicy cards still face down.
    pub spicy_remaining: usize,
    /// Cards played to the trick in progress, in order.
    pub trick: Vec<PlayedCard>,
    pub lead_suit: Option<Suit>,
    /// Two or more fibonachos are in the trick: the highest fibonacho wins it.
    pub fibonachos_active: bool,
    /// The seat that would win the trick if it ended now.
    pub trick_winning: Option<Seat>,
    /// The viewer's hand, sorted (suit red, green, yellow; then number); `null` for a
    /// spectator.
    pub hand: Option<Vec<HandCard>>,
    /// Cards in each seat's hand.
    pub hand_counts: Vec<usize>,
    /// Each seat's spicy cards won this round.
    pub spicy_piles: Vec<SpicyPile>,
    /// Cards set aside unseen this round.
    pub set_aside_count: usize,
    pub last_trick: Option<TrickResult>,
    /// Every card of this round's completed tricks, sorted (suit red, green, yellow; then
    /// number): each was played face up, so anyone could remember them. Empty between
    /// rounds.
    pub played: Vec<CardView>,
    pub last_round: Option<RoundSummary>,
    /// Score of each finished round, per seat (`round_scores[r][seat]`).
    pub round_scores: Vec<Vec<i64>>,
    /// Match totals per seat.
    pub totals: Vec<i64>,
    /// Set once the match is over: every seat sharing the highest total.
    pub winners: Option<Vec<Seat>>,
}

impl NachosMatch {
    pub(crate) fn view(&self, viewer: Viewer) -> NachosView {
        let playing = self.phase == Phase::Playing;
        let me = viewer.seat().filter(|&s| s < self.players);
        let hand = me.map(|s| {
            let on_turn = playing && s == self.turn;
            self.hands[s]
                .iter()
                .map(|&c| HandCard {
                    suit: c.suit,
                    number: c.number,
                    copy: c.copy,
                    fibonacho: c.is_fibonacho(),
                    playable: on_turn && self.may_play(s, c),
                })
                .collect()
        });
        let (trick_winning, fibonachos_active) = if self.trick.is_empty() {
            (None, false)
        } else {
            let (i, active) = trick_winner(&self.trick);
            (Some(self.trick[i].seat), active)
        };
        NachosView {
            players: self.players,
            viewer: me,
            phase: self.phase,
            round: self.round,
            rounds: ROUNDS,
            hand_size: hand_size(self.players),
            dealer: (self.round > 0).then_some(self.dealer),
            leader: playing.then_some(self.leader),
            turn: playing.then_some(self.turn),
            spicy_at_stake: if playing { self.at_stake } else { None },
            spicy_remaining: self.spicy_order.len() - self.spicy_next,
            trick: self
                .trick
                .iter()
                .map(|p| PlayedCard {
                    seat: p.seat,
                    card: p.card.into(),
                })
                .collect(),
            lead_suit: self.lead_suit(),
            fibonachos_active,
            trick_winning,
            hand,
            hand_counts: self.hands.iter().map(Vec::len).collect(),
            spicy_piles: self
                .piles
                .iter()
                .map(|p| SpicyPile {
                    cards: p.clone(),
                    total: p.iter().map(|&v| u32::from(v)).sum(),
                })
                .collect(),
            set_aside_count: self.set_aside.len(),
            last_trick: self.last_trick.clone(),
            played: if playing {
                let mut played = self.played.clone();
                played.sort_unstable();
                played.into_iter().map(CardView::from).collect()
            } else {
                Vec::new()
            },
            last_round: self.last_round.clone(),
            round_scores: self.round_scores.clone(),
            totals: self.totals.clone(),
            winners: (self.phase == Phase::Finished).then(|| self.winners()),
        }
    }
}

/// The viewing seat's legal actions, from the view alone: one `play` per playable card.
pub(crate) fn legal_from_view(view: &NachosView) -> Vec<Action> {
    let on_turn = view.viewer.is_some() && view.viewer == view.turn;
    match &view.hand {
        Some(hand) if on_turn => hand
            .iter()
            .filter(|c| c.playable)
            .map(|c| Action::Play {
                card: CardView {
                    suit: c.suit,
                    number: c.number,
                    copy: c.copy,
                    fibonacho: c.fibonacho,
                }
                .card(),
            })
            .collect(),
        _ => Vec::new(),
    }
}
