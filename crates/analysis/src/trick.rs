//! Compact positions of the two trick-taking games for the exact search ([`crate::exact`]):
//! Fibonacci's Trump ([`TrumpPos`], R-30..R-33) and Fibonachos ([`NachosPos`],
//! R-50..R-54). Each is read off a live game state through every seat's view (every hand
//! open) and the round's deal record (Fibonachos' face-down spicy order, R-51), and plays
//! the rest of the round by the same rules as the rules crate; the tests hold both to the
//! rules crates over thousands of seeded positions.

use game_core::{Game, Phase, Viewer};
use nachos::NachosMatch;
use trump::{Card as TrumpCard, SYMBOL_POINTS, Trump};

use crate::exact::Position;

/// A Trump round in play: hands, the trick on the table, and what each seat has won.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrumpPos {
    pub n: u8,
    /// Hands as bitsets of card indices (colour-major, `trump::Card::index`).
    pub hands: [u64; 4],
    pub trick: [u8; 4],
    pub trick_len: u8,
    pub leader: u8,
    pub turn: u8,
    /// Trump colour index.
    pub trump: u8,
    /// Cards bearing the round's symbol.
    pub sym_mask: u64,
    /// Won cards bearing the round's symbol, per seat.
    pub sym: [u8; 4],
    /// How many of the two indicators bear the symbol: the last trick's winner takes both
    ///
    pub ind_sym: u8,
}

const COLOUR_MASK: u64 = (1 << 10) - 1;

fn colour_of(c: u8) -> u8 {
    c / 10
}

/// The cards strictly between indices `p < c`.
fn between(p: u8, c: u8) -> u64 {
    ((1u64 << c) - 1) & !((1u64 << (p + 1)) - 1)
}

/// does card `c` beat card `b` (the trick's best so far), `led` being the led colour?
fn trump_beats(c: u8, b: u8, trump: u8) -> bool {
    if colour_of(c) == trump {
        colour_of(b) != trump || c > b
    } else {
        // Same colour: the higher index is the higher number.
        colour_of(b) != trump && colour_of(c) == colour_of(b) && c > b
    }
}

impl TrumpPos {
    /// The position of `g`'s round in play, or `None` between rounds.
    pub fn from_game(g: &Trump) -> Option<TrumpPos> {
        if g.phase() != Phase::Playing {
            return None;
        }
        let n = g.players();
        let v0 = g.view_for(Viewer::Spectator);
        let trump = v0.trump_colour?.index() as u8;
        let symbol = v0.symbol?;
        let mut hands = [0u64; 4];
        for (s, h) in hands.iter_mut().enumerate().take(n) {
            for c in g.view_for(Viewer::Player(s)).hand? {
                *h |= c.bit();
            }
        }
        let mut trick = [0u8; 4];
        for (i, p) in v0.trick.iter().enumerate() {
            trick[i] = p.card.index() as u8;
        }
        let mut sym = [0u8; 4];
        for (s, x) in sym.iter_mut().enumerate().take(n) {
            *x = v0.symbol_counts[s] as u8;
        }
        let ind_sym = [v0.trump_indicator?, v0.symbol_indicator?]
            .iter()
            .filter(|c| c.symbol() == symbol)
            .count() as u8;
        Some(TrumpPos {
            n: n as u8,
            hands,
            trick,
            trick_len: v0.trick.len() as u8,
            leader: v0.leader? as u8,
            turn: v0.turn? as u8,
            trump,
            sym_mask: symbol.mask(),
            sym,
            ind_sym,
        })
    }

    /// Every card still in play: in a hand or in the trick.
    fn live(&self) -> u64 {
        let trick = self.trick[..usize::from(self.trick_len)]
            .iter()
            .fold(0u64, |a, &c| a | 1u64 << c);
        self.hands.iter().fold(trick, |a, h| a | h)
    }

    /// The rules crate's action for move `m`.
    pub fn action(m: u8) -> trump::Action {
        trump::Action::Play {
            card: TrumpCard::from_index(usize::from(m)),
        }
    }

    /// The move of a rules-crate action.
    pub fn move_of(a: &trump::Action) -> u8 {
        let trump::Action::Play { card } = a;
        card.index() as u8
    }
}

impl Position for TrumpPos {
    fn to_move(&self) -> usize {
        usize::from(self.turn)
    }
    fn cards_left(&self) -> usize {
        self.hands.iter().map(|h| h.count_ones() as usize).sum()
    }
    fn is_over(&self) -> bool {
        self.trick_len == 0 && self.hands.iter().all(|&h| h == 0)
    }
    fn moves(&self, out: &mut Vec<u8>) {
        self.all_moves(out);
        // Two cards of one hand are interchangeable when they share colour and symbol
        // status and no card still in play (a hand or the trick) lies between them: they
        // follow, win and score alike. `out` is in index order, which within
        // a colour is number order.
        let live = self.live();
        let mut prev: Option<u8> = None;
        out.retain(|&c| {
            let same = prev.is_some_and(|p| {
                colour_of(p) == colour_of(c)
                    && (self.sym_mask >> p & 1) == (self.sym_mask >> c & 1)
                    && live & between(p, c) == 0
            });
            prev = Some(c);
            !same
        });
    }
    fn all_moves(&self, out: &mut Vec<u8>) {
        out.clear();
        let hand = self.hands[usize::from(self.turn)];
        let mut set = hand;
        if self.trick_len > 0 {
            // follow the led colour if able.
            let follow = hand & (COLOUR_MASK << (10 * colour_of(self.trick[0])));
            if follow != 0 {
                set = follow;
            }
        }
        while set != 0 {
            out.push(set.trailing_zeros() as u8);
            set &= set - 1;
        }
    }
    fn play(&mut self, m: u8) {
        let t = usize::from(self.turn);
        self.hands[t] &= !(1u64 << m);
        self.trick[usize::from(self.trick_len)] = m;
        self.trick_len += 1;
        if self.trick_len < self.n {
            self.turn = (self.turn + 1) % self.n;
            return;
        }
        let mut best = 0;
        for i in 1..usize::from(self.n) {
            if trump_beats(self.trick[i], self.trick[best], self.trump) {
                best = i;
            }
        }
        let w = (usize::from(self.leader) + best) % usize::from(self.n);
        let won: u64 = self.trick[..usize::from(self.n)]
            .iter()
            .fold(0, |a, &c| a | 1u64 << c);
        self.sym[w] += (won & self.sym_mask).count_ones() as u8;
        if self.hands.iter().all(|&h| h == 0) {
            // the last trick's winner takes both indicators.
            self.sym[w] += self.ind_sym;
        }
        self.trick_len = 0;
        self.leader = w as u8;
        self.turn = w as u8;
    }
    fn score(&self, seat: usize) -> i32 {
        //
        SYMBOL_POINTS[usize::from(self.sym[seat]).min(10)] as i32
    }
    fn key(&self, persp: usize) -> [u64; 7] {
        let mut t = 0u64;
        for i in 0..usize::from(self.trick_len) {
            t |= u64::from(self.trick[i]) << (8 * i);
        }
        t |= u64::from(self.trick_len) << 40 | u64::from(self.turn) << 48;
        [
            self.hands[0],
            self.hands[1],
            self.hands[2],
            self.hands[3],
            t,
            u64::from(self.sym[persp]) | (persp as u64) << 8,
            0,
        ]
    }
}

/// A Fibonachos round in play: hands, the trick, the spicy cards still face down in their
/// order (all hands open includes the spicy deck's order, R-51), and every seat's pile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NachosPos {
    pub n: u8,
    /// Hands as bitsets of `nachos::Card::index` (0..45).
    pub hands: [u64; 5],
    pub trick: [u8; 5],
    pub trick_len: u8,
    pub leader: u8,
    pub turn: u8,
    /// The spicy card of the trick in play.
    pub stake: u8,
    /// The spicy cards still face down, top first, and how many of them are used.
    pub spicy: [u8; 15],
    pub next: u8,
    /// Tricks and spicy total per seat.
    pub tricks: [u8; 5],
    pub total: [u8; 5],
}

const SUIT_MASK: u64 = (1 << 15) - 1;

/// The number of the nacho card with index `i` (each suit: 1, 1, 2, …, 14).
pub fn nacho_number(i: u8) -> u8 {
    let w = i % 15;
    if w < 2 { 1 } else { w }
}

fn is_fibonacho(i: u8) -> bool {
    matches!(nacho_number(i), 1 | 2 | 3 | 5 | 8 | 13)
}

/// the winning position in a complete trick.
fn nachos_winner(trick: &[u8]) -> usize {
    let fib = trick.iter().filter(|&&c| is_fibonacho(c)).count() >= 2;
    let lead = trick[0] / 15;
    let mut best: Option<usize> = None;
    for (i, &c) in trick.iter().enumerate() {
        let eligible = if fib { is_fibonacho(c) } else { c / 15 == lead };
        // Ties go to the card played last.
        if eligible && best.is_none_or(|b| nacho_number(c) >= nacho_number(trick[b])) {
            best = Some(i);
        }
    }
    best.unwrap_or(0)
}

impl NachosPos {
    /// The position of `g`'s round in play, or `None` between rounds.
    pub fn from_game(g: &NachosMatch) -> Option<NachosPos> {
        if g.phase() != Phase::Playing {
            return None;
        }
        let n = g.players();
        let v0 = g.view_for(Viewer::Spectator);
        let mut hands = [0u64; 5];
        for (s, h) in hands.iter_mut().enumerate().take(n) {
            for c in g.view_for(Viewer::Player(s)).hand? {
                let card = nachos::Card {
                    suit: c.suit,
                    number: c.number,
                    copy: c.copy,
                };
                *h |= 1u64 << card.index();
            }
        }
        let mut trick = [0u8; 5];
        for (i, p) in v0.trick.iter().enumerate() {
            trick[i] = p.card.card().index() as u8;
        }
        let mut tricks = [0u8; 5];
        let mut total = [0u8; 5];
        let mut revealed = 0;
        for (s, pile) in v0.spicy_piles.iter().enumerate() {
            tricks[s] = pile.cards.len() as u8;
            total[s] = pile.total as u8;
            revealed += pile.cards.len();
        }
        let stake = v0.spicy_at_stake?;
        revealed += 1;
        let order: Vec<u8> = serde_json::from_value(g.deal_record()["spicy_order"].clone()).ok()?;
        if order.get(revealed - 1) != Some(&stake) {
            return None;
        }
        let mut spicy = [0u8; 15];
        for (i, &v) in order.iter().enumerate().take(15) {
            spicy[i] = v;
        }
        Some(NachosPos {
            n: n as u8,
            hands,
            trick,
            trick_len: v0.trick.len() as u8,
            leader: v0.leader? as u8,
            turn: v0.turn? as u8,
            stake,
            spicy,
            next: revealed as u8,
            tricks,
            total,
        })
    }

    /// Every card still in play: in a hand or in the trick.
    fn live(&self) -> u64 {
        let trick = self.trick[..usize::from(self.trick_len)]
            .iter()
            .fold(0u64, |a, &c| a | 1u64 << c);
        self.hands.iter().fold(trick, |a, h| a | h)
    }

    /// The rules crate's action for move `m`.
    pub fn action(m: u8) -> nachos::Action {
        nachos::Action::Play {
            card: nachos::canonical_deck()[usize::from(m)],
        }
    }

    /// The move of a rules-crate action.
    pub fn move_of(a: &nachos::Action) -> u8 {
        let nachos::Action::Play { card } = a;
        card.index() as u8
    }
}

impl Position for NachosPos {
    fn to_move(&self) -> usize {
        usize::from(self.turn)
    }
    fn cards_left(&self) -> usize {
        self.hands.iter().map(|h| h.count_ones() as usize).sum()
    }
    fn is_over(&self) -> bool {
        self.trick_len == 0 && self.hands.iter().all(|&h| h == 0)
    }
    fn moves(&self, out: &mut Vec<u8>) {
        self.all_moves(out);
        // Interchangeable cards of one hand: a suit's two 1s, and two cards of one suit
        // that are not fibonachos with no card still in play (a hand or the trick) between
        // them. Cards that are not fibonachos only ever count by number within the lead
        // suit, and never tie.
        let live = self.live();
        let mut prev: Option<u8> = None;
        out.retain(|&c| {
            let same = prev.is_some_and(|p| {
                p / 15 == c / 15
                    && ((nacho_number(p) == 1 && nacho_number(c) == 1)
                        || (!is_fibonacho(p) && !is_fibonacho(c) && live & between(p, c) == 0))
            });
            prev = Some(c);
            !same
        });
    }
    fn all_moves(&self, out: &mut Vec<u8>) {
        out.clear();
        let hand = self.hands[usize::from(self.turn)];
        let mut set = hand;
        if self.trick_len > 0 {
            // follow the lead suit if able.
            let follow = hand & (SUIT_MASK << (15 * (self.trick[0] / 15)));
            if follow != 0 {
                set = follow;
            }
        }
        while set != 0 {
            out.push(set.trailing_zeros() as u8);
            set &= set - 1;
        }
    }
    fn play(&mut self, m: u8) {
        let t = usize::from(self.turn);
        self.hands[t] &= !(1u64 << m);
        self.trick[usize::from(self.trick_len)] = m;
        self.trick_len += 1;
        if self.trick_len < self.n {
            self.turn = (self.turn + 1) % self.n;
            return;
        }
        let best = nachos_winner(&self.trick[..usize::from(self.n)]);
        let w = (usize::from(self.leader) + best) % usize::from(self.n);
        // the winner takes the spicy card and leads next.
        self.tricks[w] += 1;
        self.total[w] += self.stake;
        self.trick_len = 0;
        self.leader = w as u8;
        self.turn = w as u8;
        if self.hands[w] != 0 {
            self.stake = self.spicy[usize::from(self.next).min(14)];
            self.next += 1;
        } else {
            self.stake = 0;
        }
    }
    fn score(&self, seat: usize) -> i32 {
        //
        nachos::round_score(u32::from(self.tricks[seat]), u32::from(self.total[seat])).0 as i32
    }
    fn key(&self, persp: usize) -> [u64; 7] {
        let mut t = 0u64;
        for i in 0..usize::from(self.trick_len) {
            t |= u64::from(self.trick[i]) << (8 * i);
        }
        t |= u64::from(self.trick_len) << 40 | u64::from(self.turn) << 48;
        let me = u64::from(self.tricks[persp].min(1))
            | u64::from(self.total[persp]) << 1
            | u64::from(self.next) << 16
            | (persp as u64) << 24;
        [
            self.hands[0],
            self.hands[1],
            self.hands[2],
            self.hands[3],
            self.hands[4],
            t,
            me,
        ]
    }
}
