//! Actions and events on the wire, and the legal-move generator. The generator works on
//! public table data plus one hand, so it runs both inside the state (to decide whether a
//! pass is allowed, R-46) and on a player's view (bots and the browser, R-4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use game_core::Seat;

use crate::cards::{Card, Rank};
use crate::table::{Column, Next, is_run_rank};

/// The optional bonus card played with a joker: a first run card of value 3 or less
/// on side `side` of the new column. `value` is given only for a 6 (0–3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bonus {
    pub card: Card,
    pub side: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u32>,
}

/// Something the player on turn asks to do. Columns are indices into the view's
/// `columns`; sides are 0 (toward seat 0) and 1 (toward seat 1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// `{"type":"draw"}`: take the top card of the draw pile; that is the whole turn.
    Draw,
    /// `{"type":"play_joker","card":{"id":0,"rank":"joker"},"bonus":{"card":{"id":2,"rank":"two","suit":"spades"},"side":1}}`:
    /// a new column at the end of the table, with an optional bonus card.
    PlayJoker {
        card: Card,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bonus: Option<Bonus>,
    },
    /// `{"type":"play_run_card","card":{"id":25,"rank":"six","suit":"clubs"},"column":0,"side":1,"value":5}`:
    /// a 2, 3, 5, 7, 8 or 6 on the end of a run; `value` only (and always) for a 6.
    PlayRunCard {
        card: Card,
        column: usize,
        side: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<u32>,
    },
    /// `{"type":"play_restart","card":{"id":24,"rank":"six","suit":"diamonds"},"column":0,"side":0}`:
    /// a 6 as a base on the end of a run; that side starts again from an opening.
    PlayRestart {
        card: Card,
        column: usize,
        side: usize,
    },
    /// `{"type":"play_small_wild","card":{"id":22,"rank":"four","suit":"spades"},"replace":{"id":0,"rank":"joker"}}`:
    /// the 4 takes the place, value and role of a face-up table card, which goes to the hand.
    PlaySmallWild { card: Card, replace: Card },
    /// `{"type":"play_reaction","card":{"id":6,"rank":"eight","suit":"spades"}}`: the 7/8
    /// answer, set beside the run the opponent just laid the 8/7 on.
    PlayReaction { card: Card },
    /// `{"type":"pass"}`: only when the draw pile is empty and no play is possible.
    Pass,
}

/// Why the game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The winner has no cards left.
    EmptiedHand,
    /// Two passes in a row: a draw.
    TwoPasses,
    /// The server's bound on game length was reached: a draw (see the crate header).
    TurnLimit,
}

/// A public record of what happened (no hidden card: a draw names no card).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    RoundStarted {
        dealer: Seat,
        first: Seat,
        hand_size: usize,
        draw_pile: usize,
    },
    Drew {
        seat: Seat,
    },
    JokerPlayed {
        seat: Seat,
        card: Card,
        column: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bonus: Option<Bonus>,
    },
    RunCardPlayed {
        seat: Seat,
        card: Card,
        column: usize,
        side: usize,
        value: u32,
    },
    Restarted {
        seat: Seat,
        card: Card,
        column: usize,
        side: usize,
    },
    SmallWildPlayed {
        seat: Seat,
        card: Card,
        replaced: Card,
    },
    ReactionPlayed {
        seat: Seat,
        card: Card,
        column: usize,
        side: usize,
    },
    Passed {
        seat: Seat,
    },
    /// The empty draw pile was refilled with `cards` cards from the table; columns
    /// left empty were removed, so column indices may have changed.
    Refilled {
        cards: usize,
        columns: usize,
    },
    GameOver {
        winner: Option<Seat>,
        reason: EndReason,
    },
}

/// The open chance to answer a 7/8: `seat` may, on this turn only, set `laid`'s
/// partner beside side `side` of column `column`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReactionChance {
    pub seat: Seat,
    pub laid: Card,
    pub column: usize,
    pub side: usize,
}

/// Every legal action for a player on turn holding `hand` (R-41..R-46). `chance` is the
/// reaction chance if it belongs to this player. Pass is listed only when nothing else is.
pub fn legal_moves(
    hand: &[Card],
    columns: &[Column],
    draw_pile: usize,
    chance: Option<&ReactionChance>,
) -> Vec<Action> {
    let mut out = Vec::new();
    if draw_pile > 0 {
        out.push(Action::Draw);
    }
    let mut table = Vec::new();
    for c in columns {
        c.face_up(&mut table);
    }
    for &card in hand {
        match card.rank() {
            Rank::Joker => {
                out.push(Action::PlayJoker { card, bonus: None });
                for &b in hand {
                    let values: &[Option<u32>] = match b.rank() {
                        Rank::Two | Rank::Three => &[None],
                        Rank::Six => &[Some(0), Some(1), Some(2), Some(3)],
                        _ => &[],
                    };
                    for &value in values {
                        for side in 0..2 {
                            out.push(Action::PlayJoker {
                                card,
                                bonus: Some(Bonus {
                                    card: b,
                                    side,
                                    value,
                                }),
                            });
                        }
                    }
                }
            }
            Rank::Four => {
                for &t in &table {
                    out.push(Action::PlaySmallWild { card, replace: t });
                }
            }
            r => {
                debug_assert!(is_run_rank(r));
                for (ci, col) in columns.iter().enumerate() {
                    for side in 0..2 {
                        let next = col.next(side);
                        if r == Rank::Six {
                            for v in next.six_values() {
                                if next.fits(v) {
                                    out.push(Action::PlayRunCard {
                                        card,
                                        column: ci,
                                        side,
                                        value: Some(v),
                                    });
                                }
                            }
                            if !col.sides[side].run.is_empty() {
                                out.push(Action::PlayRestart {
                                    card,
                                    column: ci,
                                    side,
                                });
                            }
                        } else if next != Next::Lost && next.fits(r.face()) {
                            out.push(Action::PlayRunCard {
                                card,
                                column: ci,
                                side,
                                value: None,
                            });
                        }
                    }
                }
                if let Some(ch) = chance
                    && ch.laid.reaction_partner() == Some(card)
                {
                    out.push(Action::PlayReaction { card });
                }
            }
        }
    }
    if out.is_empty() {
        out.push(Action::Pass);
    }
    out
}
