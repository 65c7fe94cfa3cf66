//! The actions of the rummy family and their validation. Validation is a pure function of
//! one seat's own situation (`Ctx`): the server builds it from the full state before
//! mutating, and the legal-action generator builds it from the seat's view and
//! filters candidate actions through the same function, so "legal" and "accepted" agree.

use game_core::{RuleError, Seat, codes as core_codes};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{
    BONUS_VALUE, Card, CardKind, base_numbers, is_card_t, opening_base_sets, required_sets,
};

/// Error codes of this game (besides game-core's), see the crate header.
pub mod codes {
    pub const MUST_DRAW_FIRST: &str = "must_draw_first";
    pub const ALREADY_DREW: &str = "already_drew";
    pub const NO_DRAW_AFTER_ALL_SETS: &str = "no_draw_after_all_sets_closed";
    pub const DISCARD_PILE_EMPTY: &str = "discard_pile_empty";
    pub const STOCK_EMPTY: &str = "stock_empty";
    pub const NOT_OPENED: &str = "not_opened";
    pub const ALREADY_OPENED: &str = "already_opened";
    pub const OPENING_INCOMPLETE: &str = "opening_incomplete";
    pub const DUPLICATE_CARD: &str = "duplicate_card";
    pub const EMPTY_SET: &str = "empty_set";
    pub const BAD_WILD_NUMBER: &str = "bad_wild_number";
    pub const NOT_A_STARTER: &str = "not_a_starter";
    pub const BASE_CANNOT_BE_ADDED: &str = "base_card_cannot_be_added";
    pub const SET_NUMBER_IN_USE: &str = "set_number_in_use";
    pub const OVER_TARGET: &str = "over_target";
    pub const NO_SUCH_SET: &str = "no_such_set";
    pub const SET_CLOSED: &str = "set_closed";
    pub const SET_NOT_COMPLETE: &str = "set_not_complete";
    pub const CARD_NOT_IN_SET: &str = "card_not_in_set";
    pub const STARTER_CANNOT_MOVE: &str = "starter_cannot_move";
    pub const NOT_A_WILD: &str = "not_a_wild";
    pub const NO_CHANGE: &str = "no_change";
    pub const NOT_EXCHANGEABLE: &str = "not_exchangeable";
    pub const MUST_KEEP_CARD: &str = "must_keep_card";
    pub const MUST_CLOSE_ALL_SETS: &str = "must_close_all_sets";
    pub const SAME_SET: &str = "same_set";
}

/// One card put on the table: `card` is its id, `number` the number chosen for a wild
/// (required for a wild, forbidden for any other card).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Play {
    pub card: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u8>,
}

/// What a seat asks to do. Sets are named by their key: the base number they were started
/// with (2, 3, 5, 8, 13), or T for the one-card set. Cards are named by id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// `{"type":"draw_stock"}`: take two cards from the stock (one if only one is left).
    DrawStock,
    /// `{"type":"draw_discard"}`: take the top discard and one card from the stock.
    DrawDiscard,
    /// `{"type":"open","sets":[[{"card":20}],[{"card":0},{"card":30}],[{"card":84,"number":5}]]}`:
    /// the opening meld, all or nothing. Each inner list is one new set, its first
    /// card the starter.
    Open { sets: Vec<Vec<Play>> },
    /// `{"type":"start_set","card":4}` / `{"type":"start_set","card":85,"number":8}`: start
    /// a set with a base card, the bonus card (base 2), a wild given a base number, or
    /// a standard card.
    StartSet {
        card: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        number: Option<u8>,
    },
    /// `{"type":"add_to_set","set":5,"card":40}`: add a standard card or a wild (with
    /// `number`) from the hand to an open set, never over T.
    AddToSet {
        set: u8,
        card: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        number: Option<u8>,
    },
    /// `{"type":"close_set","set":5}`: close a set that totals exactly T (own turn only).
    CloseSet { set: u8 },
    /// `{"type":"take_back","set":5,"card":40}`: return a non-starter card to the hand.
    TakeBack { set: u8, card: u8 },
    /// `{"type":"exchange_wild","set":5,"card":9}`: put the real base card `card` from the
    /// hand in place of the wild that starts set `set`; the wild goes to the hand.
    ExchangeWild { set: u8, card: u8 },
    /// `{"type":"restore_base","set":5,"card":9}`: put the real base card in place of
    /// the standard card that starts a non-rabbit set; the standard card goes to the hand.
    RestoreBase { set: u8, card: u8 },
    /// `{"type":"set_wild_number","set":5,"card":84,"number":3}`: give a wild in an open set
    /// (not a starter) another number. Allowed out of turn.
    SetWildNumber { set: u8, card: u8, number: u8 },
    /// `{"type":"move_card","from":5,"to":3,"card":40}`: move a non-starter card between two
    /// of one's own open sets. Allowed out of turn.
    MoveCard { from: u8, to: u8, card: u8 },
    /// `{"type":"discard","card":40}`: end the turn by discarding a card.
    Discard { card: u8 },
}

impl Action {
    /// Moves a seat may make when it is not on turn.
    pub fn is_out_of_turn_move(&self) -> bool {
        matches!(self, Action::SetWildNumber { .. } | Action::MoveCard { .. })
    }
}

/// A card on the table with what it counts toward T: the printed number, the bonus card's
/// 8, or a wild's chosen number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Placed {
    pub card: Card,
    pub value: u8,
}

/// One set on the table. `cards[0]` is the starter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TableSet {
    /// The base number it was started with, or T for the one-card set.
    pub key: u8,
    pub cards: Vec<Placed>,
    pub closed: bool,
    /// Started with a standard card: scores 10 when closed.
    pub non_rabbit: bool,
}

impl TableSet {
    pub fn total(&self) -> u32 {
        self.cards.iter().map(|p| u32::from(p.value)).sum()
    }
}

/// Where a seat is in its turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Must draw before anything else.
    MustDraw,
    /// Has drawn: may act on the table, ends the turn by discarding.
    MayAct,
    /// Has closed all required sets: no drawing, only a discard.
    MustDiscard,
}

/// One seat's situation, all that validation needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx<'a> {
    pub target: u8,
    pub non_rabbit_option: bool,
    pub solitaire: bool,
    pub seat: Seat,
    /// `Some(stage)` when this seat is on turn.
    pub stage: Option<Stage>,
    pub hand: &'a [Card],
    pub sets: &'a [TableSet],
    pub opened: bool,
    pub stock: usize,
    pub discard: usize,
}

fn err(code: &'static str, msg: impl Into<String>) -> RuleError {
    RuleError::new(code, msg)
}

/// How a starter card stands: (set key, value toward T, non-rabbit).
pub(crate) fn starter(
    card: Card,
    number: Option<u8>,
    target: u8,
    allow_non_rabbit: bool,
) -> Result<(u8, u8, bool), RuleError> {
    let bases = base_numbers(target);
    match (card.kind, number) {
        (CardKind::Wild, Some(n)) if bases.contains(&n) || n == target => Ok((n, n, false)),
        (CardKind::Wild, _) => Err(err(
            codes::BAD_WILD_NUMBER,
            format!("a wild starting a set needs a number among {bases:?} or {target} (R-17a)"),
        )),
        (_, Some(_)) => Err(err(
            codes::BAD_WILD_NUMBER,
            format!("card {} is not a wild: it takes no number", card.id),
        )),
        (CardKind::Bonus, None) => Ok((2, BONUS_VALUE, false)),
        (CardKind::Base { number }, None) if bases.contains(&number) => Ok((number, number, false)),
        (_, None) if is_card_t(card, target) => Ok((target, target, false)),
        (CardKind::Standard { number }, None) if allow_non_rabbit && bases.contains(&number) => {
            Ok((number, number, true))
        }
        _ => Err(err(
            codes::NOT_A_STARTER,
            format!("card {} cannot start a set (R-12, R-23)", card.id),
        )),
    }
}

/// Value of a card added to a set: standard cards and wilds only (base cards and the bonus
/// only start sets, R-11, R-12).
pub(crate) fn addition(card: Card, number: Option<u8>, target: u8) -> Result<u8, RuleError> {
    let bases = base_numbers(target);
    match (card.kind, number) {
        (CardKind::Wild, Some(n)) if bases.contains(&n) => Ok(n),
        (CardKind::Wild, _) => Err(err(
            codes::BAD_WILD_NUMBER,
            format!("a wild added to a set needs a number among {bases:?} (R-17a)"),
        )),
        (_, Some(_)) => Err(err(
            codes::BAD_WILD_NUMBER,
            format!("card {} is not a wild: it takes no number", card.id),
        )),
        (CardKind::Standard { number }, None) => Ok(number),
        _ => Err(err(
            codes::BASE_CANNOT_BE_ADDED,
            format!(
                "card {} is a base or bonus card: it can only start a set",
                card.id
            ),
        )),
    }
}

impl Ctx<'_> {
    fn hand_card(&self, id: u8) -> Result<Card, RuleError> {
        self.hand
            .iter()
            .copied()
            .find(|c| c.id == id)
            .ok_or_else(|| {
                err(
                    core_codes::CARD_NOT_IN_HAND,
                    format!("card {id} is not in seat {}'s hand", self.seat),
                )
            })
    }

    fn set(&self, key: u8) -> Result<&TableSet, RuleError> {
        self.sets.iter().find(|s| s.key == key).ok_or_else(|| {
            err(
                codes::NO_SUCH_SET,
                format!("seat {} has no set {key} on the table", self.seat),
            )
        })
    }

    fn open_set(&self, key: u8) -> Result<&TableSet, RuleError> {
        let s = self.set(key)?;
        if s.closed {
            return Err(err(
                codes::SET_CLOSED,
                format!("set {key} is closed: no card enters or leaves it (R-19)"),
            ));
        }
        Ok(s)
    }

    /// A non-starter card of an open set.
    fn movable(&self, key: u8, id: u8) -> Result<(&TableSet, usize), RuleError> {
        let s = self.open_set(key)?;
        let i = s
            .cards
            .iter()
            .position(|p| p.card.id == id)
            .ok_or_else(|| {
                err(
                    codes::CARD_NOT_IN_SET,
                    format!("card {id} is not in set {key}"),
                )
            })?;
        if i == 0 {
            return Err(err(
                codes::STARTER_CANNOT_MOVE,
                format!("card {id} starts set {key}: it stays (R-17)"),
            ));
        }
        Ok((s, i))
    }

    fn all_closed(&self) -> bool {
        self.sets.iter().filter(|s| s.closed).count() == required_sets(self.target)
    }

    /// Own turn, drawn, opened: the gate of every table action.
    fn table_turn(&self) -> Result<(), RuleError> {
        match self.stage {
            None => Err(RuleError::not_your_turn(self.seat)),
            Some(Stage::MustDraw) => {
                Err(err(codes::MUST_DRAW_FIRST, "draw two cards first (R-15)"))
            }
            Some(_) if !self.opened => Err(err(
                codes::NOT_OPENED,
                "lay down the opening meld first (R-16)",
            )),
            Some(_) => Ok(()),
        }
    }

    /// a turn ends with a discard, so a hand-to-table action must leave a card; it
    /// may leave exactly one only if the player could then close every required set and go
    /// out with it. In solitaire, where closing the last set ends the game, the
    /// last card may go down too when every required set is then complete.
    fn check_keep(&self, hand_after: usize, sets_after_complete: bool) -> Result<(), RuleError> {
        let ok = hand_after >= 2 || (sets_after_complete && (hand_after == 1 || self.solitaire));
        if ok {
            Ok(())
        } else {
            Err(err(
                codes::MUST_KEEP_CARD,
                "keep a card to discard: the hand may only run down to one card when every \
                 required set is complete (R-20)",
            ))
        }
    }

    /// Whether, with `extra` new set keys and a changed total for `changed`, every
    /// required set would be on the table and complete or closed.
    fn complete_after(&self, new_sets: &[(u8, u32)], changed: Option<(u8, u32)>) -> bool {
        let t = u32::from(self.target);
        if self.sets.len() + new_sets.len() != required_sets(self.target) {
            return false;
        }
        self.sets.iter().all(|s| {
            let total = match changed {
                Some((k, tot)) if k == s.key => tot,
                _ => s.total(),
            };
            s.closed || total == t
        }) && new_sets.iter().all(|&(_, tot)| tot == t)
    }

    pub fn validate(&self, action: &Action) -> Result<(), RuleError> {
        let t = self.target;
        match action {
            Action::DrawStock | Action::DrawDiscard => {
                match self.stage {
                    None => return Err(RuleError::not_your_turn(self.seat)),
                    Some(Stage::MayAct) => {
                        return Err(err(codes::ALREADY_DREW, "you have drawn this turn"));
                    }
                    Some(Stage::MustDiscard) => {
                        return Err(err(
                            codes::NO_DRAW_AFTER_ALL_SETS,
                            "all sets are closed: no more drawing, only discarding (R-20)",
                        ));
                    }
                    Some(Stage::MustDraw) => {}
                }
                if self.stock == 0 {
                    return Err(err(codes::STOCK_EMPTY, "the stock is empty"));
                }
                if matches!(action, Action::DrawDiscard) && self.discard == 0 {
                    return Err(err(codes::DISCARD_PILE_EMPTY, "the discard pile is empty"));
                }
                Ok(())
            }
            Action::Open { sets } => {
                match self.stage {
                    None => return Err(RuleError::not_your_turn(self.seat)),
                    Some(Stage::MustDraw) => {
                        return Err(err(codes::MUST_DRAW_FIRST, "draw two cards first (R-15)"));
                    }
                    _ => {}
                }
                if self.opened {
                    return Err(err(codes::ALREADY_OPENED, "you have already opened"));
                }
                let mut used: Vec<u8> = Vec::new();
                let mut keys: Vec<u8> = Vec::new();
                let mut new_sets = Vec::new();
                for set in sets {
                    let Some((first, rest)) = set.split_first() else {
                        return Err(err(codes::EMPTY_SET, "an opening set has no card"));
                    };
                    // Each card once in the whole opening: within a set as well as across
                    // sets (a card twice in one set was once taken from the hand twice).
                    for p in set {
                        if used.contains(&p.card) {
                            return Err(err(
                                codes::DUPLICATE_CARD,
                                format!("card {} is used twice", p.card),
                            ));
                        }
                        used.push(p.card);
                    }
                    let c = self.hand_card(first.card)?;
                    let (key, v, _) = starter(c, first.number, t, false)?;
                    if keys.contains(&key) {
                        return Err(err(
                            codes::SET_NUMBER_IN_USE,
                            format!("two sets of number {key} (R-13)"),
                        ));
                    }
                    keys.push(key);
                    let mut total = u32::from(v);
                    for p in rest {
                        let c = self.hand_card(p.card)?;
                        total += u32::from(addition(c, p.number, t)?);
                    }
                    if total > u32::from(t) {
                        return Err(err(
                            codes::OVER_TARGET,
                            format!("set {key} would total {total}, over {t} (R-12)"),
                        ));
                    }
                    new_sets.push((key, total));
                }
                let bases = keys.iter().filter(|&&k| k != t).count();
                let need = opening_base_sets(t);
                if !keys.contains(&t) || bases < need {
                    return Err(err(
                        codes::OPENING_INCOMPLETE,
                        format!(
                            "the opening must lay down at least {need} base {} and card {t} in \
                             one go (R-16); this one has {bases} base {}{}",
                            if need == 1 { "set" } else { "sets" },
                            if bases == 1 { "set" } else { "sets" },
                            if keys.contains(&t) {
                                ""
                            } else {
                                " and no card T"
                            }
                        ),
                    ));
                }
                self.check_keep(
                    self.hand.len() - used.len(),
                    self.complete_after(&new_sets, None),
                )
            }
            Action::StartSet { card, number } => {
                self.table_turn()?;
                let c = self.hand_card(*card)?;
                let allow_nr = self.non_rabbit_option
                    && self.sets.len() + 2 >= required_sets(t)
                    && !c.is_wild();
                let (key, v, _) = starter(c, *number, t, allow_nr)?;
                if self.sets.iter().any(|s| s.key == key) {
                    return Err(err(
                        codes::SET_NUMBER_IN_USE,
                        format!("you already have a set {key}; a second base {key} is dead (R-13)"),
                    ));
                }
                self.check_keep(
                    self.hand.len() - 1,
                    self.complete_after(&[(key, u32::from(v))], None),
                )
            }
            Action::AddToSet { set, card, number } => {
                self.table_turn()?;
                let s = self.open_set(*set)?;
                let c = self.hand_card(*card)?;
                let v = addition(c, *number, t)?;
                let total = s.total() + u32::from(v);
                if total > u32::from(t) {
                    return Err(err(
                        codes::OVER_TARGET,
                        format!("set {set} would total {total}, over {t} (R-12)"),
                    ));
                }
                self.check_keep(
                    self.hand.len() - 1,
                    self.complete_after(&[], Some((*set, total))),
                )
            }
            Action::CloseSet { set } => {
                match self.stage {
                    None => return Err(RuleError::not_your_turn(self.seat)),
                    Some(_) => self.table_turn()?,
                }
                let s = self.open_set(*set)?;
                if s.total() != u32::from(t) {
                    return Err(err(
                        codes::SET_NOT_COMPLETE,
                        format!("set {set} totals {}, not {t}", s.total()),
                    ));
                }
                Ok(())
            }
            Action::TakeBack { set, card } => {
                self.table_turn()?;
                self.movable(*set, *card).map(|_| ())
            }
            Action::ExchangeWild { set, card } | Action::RestoreBase { set, card } => {
                self.table_turn()?;
                let s = self.open_set(*set)?;
                let c = self.hand_card(*card)?;
                let first = s.cards[0].card;
                let wild = matches!(action, Action::ExchangeWild { .. });
                if wild && !first.is_wild() {
                    return Err(err(
                        codes::NOT_EXCHANGEABLE,
                        format!("set {set} is not started by a wild"),
                    ));
                }
                if !wild && !s.non_rabbit {
                    return Err(err(
                        codes::NOT_EXCHANGEABLE,
                        format!("set {set} is not a non-rabbit set (R-23)"),
                    ));
                }
                let real = match starter(c, None, t, false) {
                    Ok((key, v, _)) if key == *set => v,
                    _ => {
                        return Err(err(
                            codes::NOT_EXCHANGEABLE,
                            format!("card {card} is not the base card of set {set}"),
                        ));
                    }
                };
                let total = s.total() - u32::from(s.cards[0].value) + u32::from(real);
                if total > u32::from(t) {
                    return Err(err(
                        codes::OVER_TARGET,
                        format!("set {set} would total {total}, over {t} (R-12)"),
                    ));
                }
                Ok(())
            }
            Action::SetWildNumber { set, card, number } => {
                if !self.opened {
                    return Err(err(codes::NOT_OPENED, "you have no sets on the table"));
                }
                let (s, i) = self.movable(*set, *card)?;
                let p = s.cards[i];
                if !p.card.is_wild() {
                    return Err(err(codes::NOT_A_WILD, format!("card {card} is not a wild")));
                }
                let v = addition(p.card, Some(*number), t)?;
                if v == p.value {
                    return Err(err(
                        codes::NO_CHANGE,
                        format!("the wild already counts {v}"),
                    ));
                }
                let total = s.total() - u32::from(p.value) + u32::from(v);
                if total > u32::from(t) {
                    return Err(err(
                        codes::OVER_TARGET,
                        format!("set {set} would total {total}, over {t} (R-12)"),
                    ));
                }
                Ok(())
            }
            Action::MoveCard { from, to, card } => {
                if !self.opened {
                    return Err(err(codes::NOT_OPENED, "you have no sets on the table"));
                }
                let (s, i) = self.movable(*from, *card)?;
                if from == to {
                    return Err(err(codes::SAME_SET, "the card is already in that set"));
                }
                let dest = self.open_set(*to)?;
                let total = dest.total() + u32::from(s.cards[i].value);
                if total > u32::from(t) {
                    return Err(err(
                        codes::OVER_TARGET,
                        format!("set {to} would total {total}, over {t} (R-12)"),
                    ));
                }
                Ok(())
            }
            Action::Discard { card } => {
                match self.stage {
                    None => return Err(RuleError::not_your_turn(self.seat)),
                    Some(Stage::MustDraw) => {
                        return Err(err(codes::MUST_DRAW_FIRST, "draw two cards first (R-15)"));
                    }
                    _ => {}
                }
                self.hand_card(*card)?;
                if self.hand.len() == 1 && !self.all_closed() {
                    return Err(err(
                        codes::MUST_CLOSE_ALL_SETS,
                        "every required set must be closed before the last card is discarded (R-20)",
                    ));
                }
                Ok(())
            }
        }
    }
}
