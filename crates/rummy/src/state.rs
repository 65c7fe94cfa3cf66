//! The match state and its transitions: dealing, applying validated actions,
//! stock exhaustion, going out, scoring, match end and
//! solitaire.

use game_core::{DeckRng, Outcome, Phase, RuleError, Seat, Seed, next_seat};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{Card, dealer_draw_rank, deck, required_sets};
use crate::rules::{Action, Ctx, Placed, Stage, TableSet, addition, starter};
use crate::{Event, MatchLength, Options};

/// The round's seeded random stream, kept for the one reshuffle of R-21. It is the same
/// stream that shuffled the deal, continued. Not compared: two states that agree on
/// everything else came from the same seed and actions.
#[derive(Clone, Debug)]
pub(crate) struct StreamRng(pub DeckRng);

impl PartialEq for StreamRng {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One seat in a round.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeatState {
    pub hand: Vec<Card>,
    /// Sorted by key.
    pub sets: Vec<TableSet>,
    pub opened: bool,
}

/// A round in progress (or just ended, kept for its deal record).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Round {
    /// Top is the last element.
    pub stock: Vec<Card>,
    /// Top is the last element.
    pub discard: Vec<Card>,
    pub seats: Vec<SeatState>,
    pub dealer: Seat,
    pub turn: Seat,
    pub stage: Stage,
    pub reshuffled: bool,
    pub rng: StreamRng,
    pub deal: serde_json::Value,
}

/// One seat's score for a round with its breakdown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeatScore {
    pub seat: Seat,
    pub went_out: bool,
    /// 80 for going out, else 0.
    pub going_out_bonus: i64,
    pub closed_sets: usize,
    /// 20 per closed set, 10 per closed non-rabbit set.
    pub closed_points: i64,
    /// Sum of the cards in open sets (wild 50, bonus 8), as a positive number subtracted.
    pub open_penalty: i64,
    /// Twice the cards in hand (wild 100, bonus 16), subtracted.
    pub hand_penalty: i64,
    pub total: i64,
}

/// How a round ended, public once it has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoundResult {
    pub round: u32,
    /// The seat that went out, if any.
    pub went_out: Option<Seat>,
    /// Ended because the stock ran out a second time; in solitaire, the game lost.
    pub blocked: bool,
    /// Multiplayer: one entry per seat. Solitaire: empty.
    pub seats: Vec<SeatScore>,
    /// Solitaire: cards in the discard pile at the end (lower is better), or `null`
    /// when the game was lost.
    pub solitaire_discards: Option<usize>,
}

/// A match of Fibonacci 21/13/8 (2-4 seats) or a game of Solitaire Fibonacci (1 seat).
#[derive(Clone, Debug, PartialEq)]
pub struct Rummy {
    pub(crate) options: Options,
    pub(crate) players: usize,
    pub(crate) phase: Phase,
    pub(crate) round_no: u32,
    pub(crate) scores: Vec<i64>,
    pub(crate) round: Option<Round>,
    pub(crate) last: Option<RoundResult>,
    pub(crate) outcome: Option<Outcome>,
}

impl Rummy {
    pub(crate) fn target(&self) -> u8 {
        self.options.target
    }
    pub(crate) fn solitaire(&self) -> bool {
        self.players == 1
    }

    pub(crate) fn new(options: &Options, players: usize) -> Rummy {
        Rummy {
            options: options.clone(),
            players,
            phase: Phase::AwaitingRound,
            round_no: 0,
            scores: vec![0; players],
            round: None,
            last: None,
            outcome: None,
        }
    }

    /// The stage of a seat on turn: after all sets are closed it only discards.
    fn stage_for(&self, seat: &SeatState) -> Stage {
        if seat.sets.iter().filter(|s| s.closed).count() == required_sets(self.target()) {
            Stage::MustDiscard
        } else {
            Stage::MustDraw
        }
    }

    pub(crate) fn ctx(&self, seat: Seat) -> Option<Ctx<'_>> {
        let r = self
            .round
            .as_ref()
            .filter(|_| self.phase == Phase::Playing)?;
        let s = &r.seats[seat];
        Some(Ctx {
            target: self.target(),
            non_rabbit_option: self.options.non_rabbit,
            solitaire: self.solitaire(),
            seat,
            stage: (r.turn == seat).then_some(r.stage),
            hand: &s.hand,
            sets: &s.sets,
            opened: s.opened,
            stock: r.stock.len(),
            discard: r.discard.len(),
        })
    }

    pub(crate) fn start(&mut self, seed: &Seed) -> Vec<Event> {
        let t = self.target();
        let mut rng = seed.rng();
        let n = self.players;
        let mut dealer_draw = Vec::new();
        let dealer = if self.round_no == 0 {
            let mut pile = deck(t);
            rng.shuffle(&mut pile);
            draw_for_dealer(&mut pile, n, &mut dealer_draw)
        } else {
            let prev = self.round.as_ref().map_or(0, |r| r.dealer);
            next_seat(prev, n)
        };
        let mut stock = deck(t);
        rng.shuffle(&mut stock);
        let mut seats: Vec<SeatState> = (0..n)
            .map(|_| SeatState {
                hand: Vec::with_capacity(24),
                sets: Vec::new(),
                opened: false,
            })
            .collect();
        // seven cards each, one at a time, starting after the dealer.
        let first = next_seat(dealer, n);
        for i in 0..7 * n {
            let c = stock.pop().expect("deck has enough cards");
            seats[(first + i) % n].hand.push(c);
        }
        let top = stock.pop().expect("deck has enough cards");
        let deal = serde_json::json!({
            "target": t,
            "dealer_draw": dealer_draw.iter().map(|(s, c)| serde_json::json!({"seat": s, "card": c})).collect::<Vec<_>>(),
            "dealer": dealer,
            "hands": seats.iter().map(|s| s.hand.clone()).collect::<Vec<_>>(),
            "discard_start": top,
            "stock_top_last": stock.clone(),
        });
        for s in &mut seats {
            s.hand.sort_by_key(|c| c.sort_key());
        }
        self.round_no += 1;
        self.phase = Phase::Playing;
        self.round = Some(Round {
            stock,
            discard: vec![top],
            seats,
            dealer,
            turn: first,
            stage: Stage::MustDraw,
            reshuffled: false,
            rng: StreamRng(rng),
            deal,
        });
        vec![Event::RoundStarted {
            round: self.round_no,
            dealer,
            first,
            hand_size: 7,
            discard_top: top,
            stock_count: self.round.as_ref().map_or(0, |r| r.stock.len()),
        }]
    }

    pub(crate) fn apply_action(
        &mut self,
        seat: Seat,
        action: &Action,
    ) -> Result<Vec<Event>, RuleError> {
        if seat >= self.players {
            return Err(RuleError::bad_seat(seat, self.players));
        }
        let Some(ctx) = self.ctx(seat) else {
            return Err(RuleError::no_round());
        };
        ctx.validate(action)?;
        // Validated: from here on nothing fails.
        let t = self.target();
        let r = self.round.as_mut().expect("validated in a round");
        let mut events = Vec::with_capacity(2);
        let me = &mut r.seats[seat];
        fn take(hand: &mut Vec<Card>, id: u8) -> Card {
            let i = hand.iter().position(|c| c.id == id).expect("validated");
            hand.remove(i)
        }
        fn give(hand: &mut Vec<Card>, c: Card) {
            let i = hand.partition_point(|h| h.sort_key() < c.sort_key());
            hand.insert(i, c);
        }
        fn set_mut(sets: &mut [TableSet], key: u8) -> &mut TableSet {
            sets.iter_mut().find(|s| s.key == key).expect("validated")
        }
        match action {
            Action::DrawStock => {
                let k = r.stock.len().min(2);
                for _ in 0..k {
                    let c = r.stock.pop().expect("validated");
                    give(&mut r.seats[seat].hand, c);
                }
                r.stage = Stage::MayAct;
                events.push(Event::Drew {
                    seat,
                    from_stock: k,
                    from_discard: None,
                });
            }
            Action::DrawDiscard => {
                let d = r.discard.pop().expect("validated");
                let c = r.stock.pop().expect("validated");
                give(&mut r.seats[seat].hand, d);
                give(&mut r.seats[seat].hand, c);
                r.stage = Stage::MayAct;
                events.push(Event::Drew {
                    seat,
                    from_stock: 1,
                    from_discard: Some(d),
                });
            }
            Action::Open { sets } => {
                for set in sets {
                    let c = take(&mut me.hand, set[0].card);
                    let (key, v, _) = starter(c, set[0].number, t, false).expect("validated");
                    let mut cards = vec![Placed { card: c, value: v }];
                    for p in &set[1..] {
                        let c = take(&mut me.hand, p.card);
                        let v = addition(c, p.number, t).expect("validated");
                        cards.push(Placed { card: c, value: v });
                    }
                    me.sets.push(TableSet {
                        key,
                        cards,
                        closed: false,
                        non_rabbit: false,
                    });
                }
                me.sets.sort_by_key(|s| s.key);
                me.opened = true;
                events.push(Event::Opened {
                    seat,
                    sets: me.sets.clone(),
                });
            }
            Action::StartSet { card, number } => {
                let c = take(&mut me.hand, *card);
                let (key, v, nr) = starter(c, *number, t, true).expect("validated");
                let placed = Placed { card: c, value: v };
                let i = me.sets.partition_point(|s| s.key < key);
                me.sets.insert(
                    i,
                    TableSet {
                        key,
                        cards: vec![placed],
                        closed: false,
                        non_rabbit: nr,
                    },
                );
                events.push(Event::SetStarted {
                    seat,
                    set: key,
                    card: placed,
                    non_rabbit: nr,
                });
            }
            Action::AddToSet { set, card, number } => {
                let c = take(&mut me.hand, *card);
                let v = addition(c, *number, t).expect("validated");
                let placed = Placed { card: c, value: v };
                set_mut(&mut me.sets, *set).cards.push(placed);
                events.push(Event::CardAdded {
                    seat,
                    set: *set,
                    card: placed,
                });
            }
            Action::CloseSet { set } => {
                set_mut(&mut me.sets, *set).closed = true;
                events.push(Event::SetClosed { seat, set: *set });
                let all = me.sets.iter().filter(|s| s.closed).count() == required_sets(t);
                if all && self.players == 1 {
                    // the hand joins the discard pile; the score is its size.
                    let hand = std::mem::take(&mut me.hand);
                    r.discard.extend(hand);
                    let n = r.discard.len();
                    self.finish_solitaire(Some(n), &mut events);
                } else if all {
                    r.stage = Stage::MustDiscard;
                }
            }
            Action::TakeBack { set, card } => {
                let s = set_mut(&mut me.sets, *set);
                let i = s
                    .cards
                    .iter()
                    .position(|p| p.card.id == *card)
                    .expect("validated");
                let p = s.cards.remove(i);
                give(&mut me.hand, p.card);
                events.push(Event::TookBack {
                    seat,
                    set: *set,
                    card: p.card,
                });
            }
            Action::ExchangeWild { set, card } | Action::RestoreBase { set, card } => {
                let c = take(&mut me.hand, *card);
                let (_, v, _) = starter(c, None, t, false).expect("validated");
                let s = set_mut(&mut me.sets, *set);
                let old = std::mem::replace(&mut s.cards[0], Placed { card: c, value: v });
                s.non_rabbit = false;
                give(&mut me.hand, old.card);
                events.push(Event::StarterReplaced {
                    seat,
                    set: *set,
                    card: c,
                    returned: old.card,
                });
            }
            Action::SetWildNumber { set, card, number } => {
                let s = set_mut(&mut me.sets, *set);
                let p = s
                    .cards
                    .iter_mut()
                    .find(|p| p.card.id == *card)
                    .expect("validated");
                p.value = *number;
                events.push(Event::WildNumberSet {
                    seat,
                    set: *set,
                    card: *card,
                    number: *number,
                });
            }
            Action::MoveCard { from, to, card } => {
                let s = set_mut(&mut me.sets, *from);
                let i = s
                    .cards
                    .iter()
                    .position(|p| p.card.id == *card)
                    .expect("validated");
                let p = s.cards.remove(i);
                set_mut(&mut me.sets, *to).cards.push(p);
                events.push(Event::CardMoved {
                    seat,
                    from: *from,
                    to: *to,
                    card: *card,
                });
            }
            Action::Discard { card } => {
                let c = take(&mut me.hand, *card);
                let out = me.hand.is_empty();
                r.discard.push(c);
                events.push(Event::Discarded { seat, card: c });
                if out {
                    events.push(Event::WentOut { seat });
                    self.end_round(Some(seat), false, &mut events);
                } else {
                    self.next_turn(&mut events);
                }
            }
        }
        Ok(events)
    }

    /// Passes the turn clockwise, handling an empty stock.
    fn next_turn(&mut self, events: &mut Vec<Event>) {
        let n = self.players;
        let solitaire = self.solitaire();
        let r = self.round.as_mut().expect("in a round");
        let next = next_seat(r.turn, n);
        let stage = self.stage_for(&self.round.as_ref().expect("in a round").seats[next]);
        let r = self.round.as_mut().expect("in a round");
        r.turn = next;
        r.stage = stage;
        if stage != Stage::MustDraw || !r.stock.is_empty() {
            return;
        }
        if solitaire {
            // no reshuffle; the game is lost.
            self.finish_solitaire(None, events);
            return;
        }
        if !r.reshuffled {
            // once per round, the discard pile but its top becomes the stock.
            r.reshuffled = true;
            let top = r.discard.pop().expect("a discard was just made");
            let mut pile = std::mem::take(&mut r.discard);
            r.rng.0.shuffle(&mut pile);
            r.deal["reshuffled_stock_top_last"] = serde_json::json!(pile);
            r.stock = pile;
            r.discard.push(top);
            events.push(Event::StockReshuffled {
                stock_count: r.stock.len(),
            });
            if !r.stock.is_empty() {
                return;
            }
        }
        // a second exhaustion blocks the round before this player's turn.
        self.end_round(None, true, events);
    }

    fn finish_solitaire(&mut self, discards: Option<usize>, events: &mut Vec<Event>) {
        // A lost game scores the whole deck: worse than any finished game.
        let score = discards.map_or(crate::cards::deck(self.target()).len(), |d| d) as i64;
        self.scores = vec![score];
        let result = RoundResult {
            round: self.round_no,
            went_out: discards.map(|_| 0),
            blocked: discards.is_none(),
            seats: Vec::new(),
            solitaire_discards: discards,
        };
        events.push(Event::RoundEnded {
            result: result.clone(),
            scores: self.scores.clone(),
        });
        self.last = Some(result);
        let outcome = Outcome {
            winners: if discards.is_some() { vec![0] } else { vec![] },
            scores: self.scores.clone(),
        };
        events.push(Event::MatchEnded {
            outcome: outcome.clone(),
        });
        self.outcome = Some(outcome);
        self.phase = Phase::Finished;
    }

    /// R-22 scoring, then R-24: the match ends or awaits the next round.
    fn end_round(&mut self, went_out: Option<Seat>, blocked: bool, events: &mut Vec<Event>) {
        let r = self.round.as_ref().expect("in a round");
        let seats: Vec<SeatScore> = r
            .seats
            .iter()
            .enumerate()
            .map(|(i, s)| score_seat(i, s, went_out == Some(i)))
            .collect();
        for s in &seats {
            self.scores[s.seat] += s.total;
        }
        let result = RoundResult {
            round: self.round_no,
            went_out,
            blocked,
            seats,
            solitaire_discards: None,
        };
        self.settle(result, events);
    }

    /// Publishes a round's result (already added to the scores) and decides, by R-24,
    /// whether the match ends or another round follows.
    pub(crate) fn settle(&mut self, result: RoundResult, events: &mut Vec<Event>) {
        events.push(Event::RoundEnded {
            result: result.clone(),
            scores: self.scores.clone(),
        });
        self.last = Some(result);
        let best = *self.scores.iter().max().expect("players >= 1");
        let leaders: Vec<Seat> = (0..self.players)
            .filter(|&s| self.scores[s] == best)
            .collect();
        let reached = match self.options.match_length {
            MatchLength::Rounds { count } => self.round_no >= count,
            MatchLength::FirstTo { points } => best >= i64::from(points),
        };
        // a tie for the highest total plays another round.
        if reached && leaders.len() == 1 {
            let outcome = Outcome {
                winners: leaders,
                scores: self.scores.clone(),
            };
            events.push(Event::MatchEnded {
                outcome: outcome.clone(),
            });
            self.outcome = Some(outcome);
            self.phase = Phase::Finished;
        } else {
            self.phase = Phase::AwaitingRound;
        }
    }
}

/// R-22 (with R-23's 10 for a closed non-rabbit set).
pub(crate) fn score_seat(seat: Seat, s: &SeatState, went_out: bool) -> SeatScore {
    let closed: Vec<&TableSet> = s.sets.iter().filter(|x| x.closed).collect();
    let closed_points: i64 = closed
        .iter()
        .map(|x| if x.non_rabbit { 10 } else { 20 })
        .sum();
    let open_penalty: i64 = s
        .sets
        .iter()
        .filter(|x| !x.closed)
        .flat_map(|x| x.cards.iter())
        .map(|p| p.card.table_penalty())
        .sum();
    let hand_penalty: i64 = s.hand.iter().map(|c| c.hand_penalty()).sum();
    let going_out_bonus = if went_out { 80 } else { 0 };
    SeatScore {
        seat,
        went_out,
        going_out_bonus,
        closed_sets: closed.len(),
        closed_points,
        open_penalty,
        hand_penalty,
        total: going_out_bonus + closed_points - open_penalty - hand_penalty,
    }
}

/// each of `n` seats draws a card from the top of `pile` (its last card); the
/// highest deals and tied seats draw again. If the pile cannot give every tied seat a
/// card, the first of them deals. Every draw is recorded in `record`, in order.
pub(crate) fn draw_for_dealer(
    pile: &mut Vec<Card>,
    n: usize,
    record: &mut Vec<(Seat, Card)>,
) -> Seat {
    let mut contenders: Vec<Seat> = (0..n).collect();
    loop {
        let mut best = 0;
        let mut drawn = Vec::new();
        for &s in &contenders {
            let c = pile.pop().expect("the deck outlasts the dealer draw");
            record.push((s, c));
            best = best.max(dealer_draw_rank(c));
            drawn.push((s, dealer_draw_rank(c)));
        }
        contenders = drawn.iter().filter(|d| d.1 == best).map(|d| d.0).collect();
        if contenders.len() == 1 || pile.len() < contenders.len() {
            return contenders[0];
        }
    }
}

/// A round in progress given by its cards, for rule tests and puzzles
/// ([`Rummy::from_position`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// One hand per seat (one seat: Solitaire).
    pub hands: Vec<Vec<Card>>,
    /// Each seat's sets on the table; a seat with none has not opened.
    pub tables: Vec<Vec<TableSet>>,
    /// The discard pile, bottom first (its last card is the visible top).
    pub discard_bottom_first: Vec<Card>,
    /// The stock, top last.
    pub stock_top_last: Vec<Card>,
    /// The seat on turn and where it is in its turn.
    pub turn: Seat,
    pub stage: Stage,
    /// The stream of the R-21 reshuffle.
    pub stream: Seed,
}

impl Rummy {
    /// A match in round 1 exactly as `position` lays it out, the seat before `turn`
    /// dealing. Together the hands, tables, discard pile and stock must hold every card
    /// of the game's deck once. Refuses (`bad_options`, `bad_player_count`) bad
    /// options, a wrong number of seats or tables, a turn not at the table, a card that
    /// is not of this deck or is given twice or is missing, and a table set that is empty,
    /// shares its key with another set of the seat, totals over T or is closed
    /// without totalling T. The deal record is absent.
    pub fn from_position(options: &Options, position: Position) -> Result<Rummy, RuleError> {
        use game_core::Game;
        let bad = |m: String| RuleError::new(game_core::codes::BAD_OPTIONS, m);
        let n = position.hands.len();
        let mut g = Rummy::new_match(options, n)?;
        let t = options.target;
        if position.tables.len() != n || position.turn >= n {
            return Err(bad(format!(
                "{} tables and turn {} for {n} seats",
                position.tables.len(),
                position.turn
            )));
        }
        for sets in &position.tables {
            for (i, set) in sets.iter().enumerate() {
                if set.cards.is_empty()
                    || sets[..i].iter().any(|o| o.key == set.key)
                    || set.total() > u32::from(t)
                    || (set.closed && set.total() != u32::from(t))
                {
                    return Err(bad(format!(
                        "the set {} is empty, doubled, over {t} or closed incomplete",
                        set.key
                    )));
                }
            }
        }
        let the_deck = deck(t);
        let mut seen = vec![false; the_deck.len()];
        let on_tables = position
            .tables
            .iter()
            .flatten()
            .flat_map(|s| s.cards.iter().map(|p| &p.card));
        for c in position
            .hands
            .iter()
            .flatten()
            .chain(on_tables)
            .chain(&position.discard_bottom_first)
            .chain(&position.stock_top_last)
        {
            let i = usize::from(c.id);
            if the_deck.get(i) != Some(c) || std::mem::replace(&mut seen[i], true) {
                return Err(bad(format!(
                    "card {} is not in this deck or is given twice",
                    c.id
                )));
            }
        }
        if seen.contains(&false) {
            return Err(bad("cards of the deck are missing".to_string()));
        }
        let seats = position
            .hands
            .into_iter()
            .zip(position.tables)
            .map(|(mut hand, sets)| {
                hand.sort_by_key(|c| c.sort_key());
                SeatState {
                    hand,
                    opened: !sets.is_empty(),
                    sets,
                }
            })
            .collect();
        g.phase = Phase::Playing;
        g.round_no = 1;
        g.round = Some(Round {
            stock: position.stock_top_last,
            discard: position.discard_bottom_first,
            seats,
            dealer: (position.turn + n - 1) % n,
            turn: position.turn,
            stage: position.stage,
            reshuffled: false,
            rng: StreamRng(position.stream.rng()),
            deal: serde_json::Value::Null,
        });
        Ok(g)
    }

    /// What each seat would score if the round ended now with nobody going out:
    /// a search bot's judgement of a position it stops looking at. Empty between rounds.
    pub fn standing(&self) -> Vec<i64> {
        match &self.round {
            Some(r) if self.phase == Phase::Playing => r
                .seats
                .iter()
                .enumerate()
                .map(|(i, s)| score_seat(i, s, false).total)
                .collect(),
            _ => Vec::new(),
        }
    }
}
