//! What one viewer sees: the whole table (it is all face up) with derived display
//! values, the viewer's own hand, hand sizes, the draw pile's size (never its cards),
//! whose turn it is, the open reaction chance, the result, and the viewer's legal actions.

use game_core::{Phase, Seat, Viewer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::moves::{Action, EndReason, ReactionChance, legal_moves};
use crate::table::{Column, Next, Reaction, Side};
use crate::{Card, FibFib, MAX_TURNS};

/// One side of a column as drawn: the side itself plus what it accepts next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SideView {
    #[serde(flatten)]
    pub side: Side,
    /// Top card counts 7 or more: it goes back into the pile at the next refill.
    pub closed: bool,
    /// What the next run card must be.
    pub next: Next,
}

/// One column as drawn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ColumnView {
    /// The joker (or a 4 standing in for it); absent once shuffled away.
    pub base: Option<Card>,
    /// `sides[0]` grows toward seat 0, `sides[1]` toward seat 1.
    pub sides: [SideView; 2],
    pub reactions: Vec<Reaction>,
}

/// The end of the game.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GameResult {
    /// `null` for a draw.
    pub winner: Option<Seat>,
    pub reason: EndReason,
}

/// Everything one viewer may see.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FibFibView {
    pub viewer: Viewer,
    pub phase: Phase,
    pub round: u32,
    /// Known once the round has started.
    pub dealer: Option<Seat>,
    /// The seat on turn while playing.
    pub turn: Option<Seat>,
    /// The viewer's hand, sorted by rank then suit; `null` for a spectator.
    pub hand: Option<Vec<Card>>,
    /// Cards in each seat's hand.
    pub hand_counts: Vec<usize>,
    pub draw_pile: usize,
    pub columns: Vec<ColumnView>,
    /// An open 7/8 reaction chance, public: who may answer, what was laid, where.
    pub reaction: Option<ReactionChance>,
    /// The viewer may play a reaction now.
    pub can_react: bool,
    /// Passes in a row so far (two end the game as a draw, R-46).
    pub passes_in_row: u8,
    /// Actions taken so far, and the draw bound.
    pub turns: u32,
    pub max_turns: u32,
    /// How often the draw pile was refilled from the table.
    pub refills: u32,
    pub result: Option<GameResult>,
    pub scores: Vec<i64>,
    /// The viewer's legal actions now (empty when not on turn, and for spectators).
    /// Not sent: the state document's `legal` holds them (a view does not repeat it,
    /// docs/protocol.md §1.4).
    #[serde(skip)]
    pub legal: Vec<Action>,
}

pub(crate) fn build(g: &FibFib, viewer: Viewer) -> FibFibView {
    let started = g.round > 0;
    let seat = viewer.seat().filter(|&s| s < 2);
    let hand = seat.map(|s| {
        let mut h = g.hands[s].clone();
        h.sort_by_key(|c| c.sort_key());
        h
    });
    let columns = g
        .columns
        .iter()
        .map(|c| ColumnView {
            base: c.base,
            sides: [0, 1].map(|s| SideView {
                side: c.sides[s].clone(),
                closed: c.sides[s].closed(),
                next: c.next(s),
            }),
            reactions: c.reactions.clone(),
        })
        .collect();
    let playing = g.phase == Phase::Playing;
    let mut v = FibFibView {
        viewer,
        phase: g.phase,
        round: g.round,
        dealer: started.then_some(g.dealer),
        turn: playing.then_some(g.turn),
        hand,
        hand_counts: g.hands.iter().map(Vec::len).collect(),
        draw_pile: g.pile.len(),
        columns,
        reaction: g.chance,
        can_react: false,
        passes_in_row: g.passes,
        turns: g.turns,
        max_turns: MAX_TURNS,
        refills: g.refills,
        result: g.end.map(|e| GameResult {
            winner: e.winner,
            reason: e.reason,
        }),
        scores: game_core::Game::scores(g),
        legal: Vec::new(),
    };
    v.legal = legal_from_view(&v);
    v.can_react = v
        .legal
        .iter()
        .any(|a| matches!(a, Action::PlayReaction { .. }));
    v
}

impl ColumnView {
    /// The column as the rules hold it (everything in a column is face up).
    pub(crate) fn to_column(&self) -> Column {
        Column {
            base: self.base,
            sides: [self.sides[0].side.clone(), self.sides[1].side.clone()],
            reactions: self.reactions.clone(),
        }
    }
}

/// The viewing seat's legal actions, from the view alone.
pub(crate) fn legal_from_view(v: &FibFibView) -> Vec<Action> {
    let (Some(seat), Some(hand)) = (v.viewer.seat(), v.hand.as_ref()) else {
        return Vec::new();
    };
    if v.phase != Phase::Playing || v.turn != Some(seat) {
        return Vec::new();
    }
    let columns: Vec<Column> = v.columns.iter().map(ColumnView::to_column).collect();
    legal_moves(
        hand,
        &columns,
        v.draw_pile,
        v.reaction.as_ref().filter(|c| c.seat == seat),
    )
}
