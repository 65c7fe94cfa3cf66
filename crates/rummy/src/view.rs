//! What one viewer sees and the legal actions computed from that view alone.

use game_core::{Outcome, Phase, Seat, Viewer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Options;
use crate::cards::{Card, CardKind, base_numbers, is_card_t, opening_base_sets, required_sets};
use crate::rules::{Action, Ctx, Placed, Play, Stage, TableSet};
use crate::state::{RoundResult, Rummy};

/// One set as everybody sees it, with its running total toward T.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SetView {
    pub key: u8,
    pub cards: Vec<Placed>,
    pub total: u32,
    pub closed: bool,
    /// Totals exactly T (may be closed on the owner's turn).
    pub complete: bool,
    pub non_rabbit: bool,
}

/// One seat's public table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TableView {
    pub seat: Seat,
    pub opened: bool,
    pub hand_count: usize,
    pub sets: Vec<SetView>,
    pub closed_sets: usize,
    /// Every required set closed: this seat only discards now.
    pub all_closed: bool,
}

/// Everything one viewer may see. Other hands are counts; the stock is a count; of the
/// discard pile only the top card and the count are shown.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct View {
    pub options: Options,
    pub players: usize,
    /// One player: Solitaire Fibonacci.
    pub solitaire: bool,
    pub viewer: Viewer,
    pub phase: Phase,
    pub round: u32,
    pub target: u8,
    /// Base numbers (one set each); also the numbers a wild may take in a set.
    pub base_numbers: Vec<u8>,
    pub required_sets: usize,
    /// Base sets the opening needs besides card T.
    pub opening_base_sets: usize,
    pub dealer: Option<Seat>,
    /// The seat on turn and its stage.
    pub turn: Option<Seat>,
    pub stage: Option<Stage>,
    /// The viewer's own hand, sorted; `null` for a spectator.
    pub hand: Option<Vec<Card>>,
    pub tables: Vec<TableView>,
    pub discard_top: Option<Card>,
    pub discard_count: usize,
    pub stock_count: usize,
    /// The once-per-round reshuffle of R-21 has happened.
    pub reshuffled: bool,
    pub scores: Vec<i64>,
    pub last_round: Option<RoundResult>,
    pub outcome: Option<Outcome>,
    /// The viewer's legal actions now (out-of-turn moves included, R-18).
    /// Not sent: the state document's `legal` holds them (a view does not repeat it,
    /// docs/protocol.md §1.4).
    #[serde(skip)]
    pub legal: Vec<Action>,
}

pub(crate) fn set_view(s: &TableSet, t: u8) -> SetView {
    let total = s.total();
    SetView {
        key: s.key,
        cards: s.cards.clone(),
        total,
        closed: s.closed,
        complete: total == u32::from(t),
        non_rabbit: s.non_rabbit,
    }
}

impl Rummy {
    pub(crate) fn make_view(&self, viewer: Viewer) -> View {
        let t = self.target();
        let r = self.round.as_ref();
        let playing = self.phase == Phase::Playing;
        let seat = viewer.seat().filter(|&s| s < self.players);
        let mut v = View {
            options: self.options.clone(),
            players: self.players,
            solitaire: self.solitaire(),
            viewer,
            phase: self.phase,
            round: self.round_no,
            target: t,
            base_numbers: base_numbers(t).to_vec(),
            required_sets: required_sets(t),
            opening_base_sets: opening_base_sets(t),
            dealer: r.map(|r| r.dealer),
            turn: r.filter(|_| playing).map(|r| r.turn),
            stage: r.filter(|_| playing).map(|r| r.stage),
            hand: seat.map(|s| r.map(|r| r.seats[s].hand.clone()).unwrap_or_default()),
            tables: r.map_or_else(Vec::new, |r| {
                r.seats
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let closed = s.sets.iter().filter(|x| x.closed).count();
                        TableView {
                            seat: i,
                            opened: s.opened,
                            hand_count: s.hand.len(),
                            sets: s.sets.iter().map(|x| set_view(x, t)).collect(),
                            closed_sets: closed,
                            all_closed: closed == required_sets(t),
                        }
                    })
                    .collect()
            }),
            discard_top: r.and_then(|r| r.discard.last().copied()),
            discard_count: r.map_or(0, |r| r.discard.len()),
            stock_count: r.map_or(0, |r| r.stock.len()),
            reshuffled: r.is_some_and(|r| r.reshuffled),
            scores: self.scores.clone(),
            last_round: self.last.clone(),
            outcome: self.outcome.clone(),
            legal: Vec::new(),
        };
        v.legal = legal_from_view(&v);
        v
    }
}

/// The canonical opening built from a hand, if the hand has one: card T (a real one
/// if held, else a wild as T), then every base number held as a real base card (the bonus
/// card for 2 when no base 2 is held), then, if that is short of the required number, wilds
/// as the lowest missing base numbers. Starters only; the player adds cards afterwards or
/// sends any other valid opening of their own.
pub fn canonical_opening(hand: &[Card], target: u8) -> Option<Vec<Vec<Play>>> {
    let mut wilds = hand.iter().filter(|c| c.is_wild()).map(|c| c.id);
    let mut sets = Vec::new();
    match hand.iter().find(|&&c| is_card_t(c, target)) {
        Some(c) => sets.push(vec![Play {
            card: c.id,
            number: None,
        }]),
        None => sets.push(vec![Play {
            card: wilds.next()?,
            number: Some(target),
        }]),
    }
    let mut missing = Vec::new();
    for &n in base_numbers(target) {
        let real = hand
            .iter()
            .find(|c| c.kind == CardKind::Base { number: n })
            .or_else(|| hand.iter().find(|c| n == 2 && c.kind == CardKind::Bonus));
        match real {
            Some(c) => sets.push(vec![Play {
                card: c.id,
                number: None,
            }]),
            None => missing.push(n),
        }
    }
    let mut missing = missing.into_iter();
    while sets.len() - 1 < opening_base_sets(target) {
        let n = missing.next()?;
        sets.push(vec![Play {
            card: wilds.next()?,
            number: Some(n),
        }]);
    }
    Some(sets)
}

impl SetView {
    /// The set as the rules hold it (a set on the table is public).
    pub(crate) fn to_table_set(&self) -> TableSet {
        TableSet {
            key: self.key,
            cards: self.cards.clone(),
            closed: self.closed,
            non_rabbit: self.non_rabbit,
        }
    }
}

/// Legal actions of the viewing seat, from the view alone: candidates filtered through the
/// same validation the server applies.
pub(crate) fn legal_from_view(v: &View) -> Vec<Action> {
    let mut out = Vec::new();
    let Some(seat) = v.viewer.seat() else {
        return out;
    };
    if v.phase != Phase::Playing || seat >= v.tables.len() {
        return out;
    }
    let Some(hand) = v.hand.as_deref() else {
        return out;
    };
    let t = v.target;
    let table = &v.tables[seat];
    let sets: Vec<TableSet> = table.sets.iter().map(SetView::to_table_set).collect();
    let ctx = Ctx {
        target: t,
        non_rabbit_option: v.options.non_rabbit,
        solitaire: v.solitaire,
        seat,
        stage: if v.turn == Some(seat) { v.stage } else { None },
        hand,
        sets: &sets,
        opened: table.opened,
        stock: v.stock_count,
        discard: v.discard_count,
    };
    let mut push = |a: Action| {
        if ctx.validate(&a).is_ok() {
            out.push(a);
        }
    };
    let nums = base_numbers(t);
    let open_keys: Vec<u8> = sets.iter().filter(|s| !s.closed).map(|s| s.key).collect();
    // Out-of-turn moves, also legal on one's own turn.
    for s in sets.iter().filter(|s| !s.closed) {
        for p in &s.cards[1..] {
            for &to in &open_keys {
                push(Action::MoveCard {
                    from: s.key,
                    to,
                    card: p.card.id,
                });
            }
            if p.card.is_wild() {
                for &n in nums {
                    push(Action::SetWildNumber {
                        set: s.key,
                        card: p.card.id,
                        number: n,
                    });
                }
            }
        }
    }
    match ctx.stage {
        None => {}
        Some(Stage::MustDraw) => {
            push(Action::DrawStock);
            push(Action::DrawDiscard);
        }
        Some(_) => {
            if !table.opened {
                if let Some(sets) = canonical_opening(hand, t) {
                    push(Action::Open { sets });
                }
            } else {
                for c in hand {
                    let wild_nums: &[u8] = if c.is_wild() { nums } else { &[0] };
                    for &n in wild_nums {
                        let number = c.is_wild().then_some(n);
                        push(Action::StartSet { card: c.id, number });
                        for &k in &open_keys {
                            push(Action::AddToSet {
                                set: k,
                                card: c.id,
                                number,
                            });
                        }
                    }
                    for &k in &open_keys {
                        push(Action::ExchangeWild { set: k, card: c.id });
                        push(Action::RestoreBase { set: k, card: c.id });
                    }
                }
                for s in sets.iter().filter(|s| !s.closed) {
                    push(Action::CloseSet { set: s.key });
                    for p in &s.cards[1..] {
                        push(Action::TakeBack {
                            set: s.key,
                            card: p.card.id,
                        });
                    }
                }
            }
            for c in hand {
                push(Action::Discard { card: c.id });
            }
        }
    }
    out
}
