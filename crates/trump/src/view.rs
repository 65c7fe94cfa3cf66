//! What one viewer sees, with every display value precomputed (symbols, playable
//! cards, counts), so a browser or bot never re-derives a rule.

use game_core::{Phase, Seat, Viewer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{Card, Colour, Symbol, cards_of};
use crate::{Options, Trump};

/// One card played into a trick, by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrickPlay {
    pub seat: Seat,
    pub card: Card,
}

/// A finished trick.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompletedTrick {
    pub leader: Seat,
    pub winner: Seat,
    /// In playing order, starting with the leader.
    pub cards: Vec<TrickPlay>,
}

/// The scoring of a finished round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoundResult {
    pub round: u32,
    /// Winner of the last trick: took both indicators, deals and leads next.
    pub last_trick_winner: Seat,
    pub trump_colour: Colour,
    /// The symbol that scored.
    pub symbol: Symbol,
    /// Cards won per seat, indicators included.
    pub won_counts: Vec<u32>,
    /// Won cards bearing the round's symbol, per seat.
    pub symbol_counts: Vec<u32>,
    /// Points of this round per seat.
    pub points: Vec<i64>,
    /// Match totals after this round.
    pub totals: Vec<i64>,
}

/// Everything one viewer may see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrumpView {
    pub options: Options,
    pub players: usize,
    pub viewer: Viewer,
    pub phase: Phase,
    /// Current (or last) round, 1-based; 0 before the first.
    pub round: u32,
    /// Dealer of the current (or last) round.
    pub dealer: Option<Seat>,
    /// Dealer of the next round once known (R-31: the last trick's winner).
    pub next_dealer: Option<Seat>,
    /// The face-up indicators of the current (or last) round.
    pub trump_indicator: Option<Card>,
    pub symbol_indicator: Option<Card>,
    pub trump_colour: Option<Colour>,
    pub symbol: Option<Symbol>,
    /// Leader of the trick on the table.
    pub leader: Option<Seat>,
    /// The seat whose turn it is, while a round is in progress.
    pub turn: Option<Seat>,
    /// The trick on the table, in playing order.
    pub trick: Vec<TrickPlay>,
    /// Colour of the trick's first card.
    pub led_colour: Option<Colour>,
    /// The seat whose card wins the trick on the table so far (R-32: the highest trump,
    /// else the highest card of the led colour); `None` when no card is on the table. The
    /// client marks that card with it instead of judging tricks itself.
    pub winning: Option<Seat>,
    /// The viewer's hand, sorted (colour-major, then number). `None` for a spectator. The
    /// cards it may play now are its legal actions ([`TrumpView::playable`]), not repeated
    /// here.
    pub hand: Option<Vec<Card>>,
    /// Cards in each seat's hand.
    pub hand_counts: Vec<u32>,
    /// Tricks won this round, per seat.
    pub tricks_won: Vec<u32>,
    /// Cards won this round, per seat (indicators included once taken).
    pub won_counts: Vec<u32>,
    /// Won cards bearing the round's symbol, per seat.
    pub symbol_counts: Vec<u32>,
    /// Tricks completed this round.
    pub tricks_played: u32,
    /// The last completed trick of this round.
    pub last_trick: Option<CompletedTrick>,
    /// Every card of this round's completed tricks, sorted (colour-major, then number):
    /// each was played face up, so anyone could remember them (the indicators are not
    /// listed, even once taken). Empty between rounds.
    pub played: Vec<Card>,
    /// The result of the last finished round.
    pub last_round: Option<RoundResult>,
    /// Match totals.
    pub scores: Vec<i64>,
    pub match_over: bool,
    /// Winners once the match is over.
    pub winners: Vec<Seat>,
}

impl TrumpView {
    /// The cards the viewer may play now: on its turn, the cards of the led colour
    /// it holds, or its whole hand when it holds none or leads; otherwise none. What the
    /// legal actions list, read from the view alone.
    pub fn playable(&self) -> Vec<Card> {
        let (Some(hand), Some(me)) = (&self.hand, self.viewer.seat()) else {
            return Vec::new();
        };
        if self.phase != Phase::Playing || self.turn != Some(me) {
            return Vec::new();
        }
        match self.led_colour {
            Some(led) if hand.iter().any(|c| c.colour() == led) => {
                hand.iter().copied().filter(|c| c.colour() == led).collect()
            }
            _ => hand.clone(),
        }
    }
}

pub(crate) fn view_for(g: &Trump, viewer: Viewer) -> TrumpView {
    let n = g.players;
    let me = viewer.seat().filter(|&s| s < n);
    let playing = g.phase == Phase::Playing;
    let r = g.round.as_ref();
    let per_seat = |f: &dyn Fn(Seat) -> u32| -> Vec<u32> {
        match r {
            Some(_) => (0..n).map(f).collect(),
            None => vec![0; n],
        }
    };
    let hand = match (r, me) {
        (Some(r), Some(s)) => Some(cards_of(r.hands[s]).collect()),
        (None, Some(_)) => Some(Vec::new()),
        _ => None,
    };
    TrumpView {
        options: g.options.clone(),
        players: n,
        viewer,
        phase: g.phase,
        round: g.round_no,
        dealer: r.map(|r| r.dealer),
        next_dealer: if playing { None } else { g.next_dealer },
        trump_indicator: r.map(|r| r.trump_indicator),
        symbol_indicator: r.map(|r| r.symbol_indicator),
        trump_colour: r.map(|r| r.trump),
        symbol: r.map(|r| r.symbol),
        leader: r.filter(|_| playing).map(|r| r.leader),
        turn: r.filter(|_| playing).map(|r| r.turn),
        trick: r
            .map(|r| {
                (0..r.trick_len as usize)
                    .map(|i| TrickPlay {
                        seat: (r.leader + i) % n,
                        card: r.trick[i],
                    })
                    .collect()
            })
            .unwrap_or_default(),
        led_colour: r.filter(|r| r.trick_len > 0).map(|r| r.trick[0].colour()),
        // R-32, as the trick would end if nobody else played.
        winning: r.filter(|r| r.trick_len > 0).map(|r| {
            let pos = Trump::trick_winner_pos(&r.trick[..r.trick_len as usize], r.trump);
            (r.leader + pos) % n
        }),
        hand,
        hand_counts: per_seat(&|s| r.map_or(0, |r| r.hands[s].count_ones())),
        tricks_won: per_seat(&|s| r.map_or(0, |r| u32::from(r.tricks_won[s]))),
        won_counts: per_seat(&|s| r.map_or(0, |r| r.won[s].count_ones())),
        symbol_counts: per_seat(&|s| r.map_or(0, |r| (r.won[s] & r.symbol.mask()).count_ones())),
        tricks_played: r.map_or(0, |r| u32::from(r.tricks_played)),
        last_trick: r.and_then(|r| r.last_trick.clone()),
        played: r
            .filter(|_| playing)
            .map(|r| cards_of(r.played()).collect())
            .unwrap_or_default(),
        last_round: g.last_result.clone(),
        scores: g.scores.clone(),
        match_over: g.phase == Phase::Finished,
        winners: g
            .outcome
            .as_ref()
            .map(|o| o.winners.clone())
            .unwrap_or_default(),
    }
}
