//! The exact search of a trick-taking round's remaining tricks with every hand open: a
//! paranoid alpha-beta search with a transposition table, bounded by a node count.
//!
//! "Paranoid" for a seat `p`: `p` picks its cards to make its own final round score as
//! high as possible, and every other seat picks its cards to make `p`'s score as low as
//! possible (as if they had all agreed to hurt `p`). The result is what `p` can guarantee
//! whatever the others do, which is a zero-sum value and so allows alpha-beta. With two
//! players it is the plain minimax of `p`'s own score (Trump's and Fibonachos' round scores
//! are not zero-sum: each seat scores on its own pile, R-33, R-54).
//!
//! A search that would visit more than its node budget stops with [`Abort`], so a result is
//! the same on every machine (no clock).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A position of a round in play, with every hand known, compact enough to search.
pub trait Position: Clone {
    /// The seat to play.
    fn to_move(&self) -> usize;
    /// Every card has been played and the round is scored.
    fn is_over(&self) -> bool;
    /// Every legal move of the seat to play (card indices), in a fixed order.
    fn all_moves(&self, out: &mut Vec<u8>);
    /// The legal moves the search tries: [`Position::all_moves`] less moves equivalent to
    /// one already listed (cards that would change nothing by being swapped). Default: all.
    fn moves(&self, out: &mut Vec<u8>) {
        self.all_moves(out);
    }
    /// Plays move `m` (one of [`Position::moves`]) for the seat to play.
    fn play(&mut self, m: u8);
    /// `seat`'s round score if the round ended now (the final score once [`is_over`]).
    ///
    /// [`is_over`]: Position::is_over
    fn score(&self, seat: usize) -> i32;
    /// Everything the rest of the round depends on from `persp`'s point of view: the hands,
    /// the trick on the table, whose turn it is, and what `persp` has won so far.
    fn key(&self, persp: usize) -> [u64; 7];
    /// Cards still to be played in the round (in hands).
    fn cards_left(&self) -> usize;
}

/// The search ran past its node budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abort;

/// A small multiplicative hasher for the table's keys (already well mixed card bitsets).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

#[derive(Clone, Copy)]
struct Entry {
    lo: i32,
    hi: i32,
    best: u8,
}

const NO_MOVE: u8 = u8::MAX;
/// Below and above every round score of both games.
const LOW: i32 = -1_000;
const HIGH: i32 = 1_000;

/// Paranoid alpha-beta with a transposition table, for one perspective seat at a time
/// (the table's entries are keyed by the perspective's own winnings, so searches for
/// different seats never mix).
pub struct Solver {
    tt: HashMap<[u64; 7], Entry, BuildHasherDefault<KeyHasher>>,
    /// Nodes visited since the budget was last set.
    pub nodes: u64,
    limit: u64,
    /// Nodes visited over the solver's life.
    pub total_nodes: u64,
}

impl Solver {
    pub fn new() -> Self {
        Solver {
            tt: HashMap::default(),
            nodes: 0,
            limit: u64::MAX,
            total_nodes: 0,
        }
    }

    /// Starts a fresh budget of `limit` nodes (and empties the table once it grows large).
    pub fn budget(&mut self, limit: u64) {
        self.nodes = 0;
        self.limit = limit;
        if self.tt.len() > 4_000_000 {
            self.tt.clear();
        }
    }

    /// Forgets every stored position.
    pub fn clear(&mut self) {
        self.tt.clear();
    }

    /// `persp`'s exact paranoid value of `p` (its round score at the round's end).
    pub fn value<P: Position>(&mut self, p: &P, persp: usize) -> Result<i32, Abort> {
        self.search(p, persp, LOW, HIGH)
    }

    /// The exact value for `persp` after each legal move of the seat to play (which need
    /// not be `persp`), in [`Position::moves`] order.
    pub fn move_values<P: Position>(
        &mut self,
        p: &P,
        persp: usize,
    ) -> Result<Vec<(u8, i32)>, Abort> {
        let mut moves = Vec::new();
        p.all_moves(&mut moves);
        let mut out = Vec::with_capacity(moves.len());
        for m in moves {
            let mut c = p.clone();
            c.play(m);
            out.push((m, self.value(&c, persp)?));
        }
        Ok(out)
    }

    fn search<P: Position>(
        &mut self,
        p: &P,
        persp: usize,
        mut alpha: i32,
        mut beta: i32,
    ) -> Result<i32, Abort> {
        if p.is_over() {
            return Ok(p.score(persp));
        }
        self.nodes += 1;
        self.total_nodes += 1;
        if self.nodes > self.limit {
            return Err(Abort);
        }
        let key = p.key(persp);
        let mut first = NO_MOVE;
        let (mut lo, mut hi) = (LOW, HIGH);
        if let Some(e) = self.tt.get(&key) {
            if e.lo == e.hi || e.lo >= beta {
                return Ok(e.lo);
            }
            if e.hi <= alpha {
                return Ok(e.hi);
            }
            alpha = alpha.max(e.lo);
            beta = beta.min(e.hi);
            (lo, hi, first) = (e.lo, e.hi, e.best);
        }
        let (a0, b0) = (alpha, beta);
        let maxing = p.to_move() == persp;
        let mut moves = Vec::with_capacity(24);
        p.moves(&mut moves);
        if let Some(i) = moves.iter().position(|&m| m == first) {
            moves.swap(0, i);
        }
        let mut best_v = if maxing { LOW - 1 } else { HIGH + 1 };
        let mut best_m = NO_MOVE;
        for m in moves {
            let mut c = p.clone();
            c.play(m);
            let v = self.search(&c, persp, alpha, beta)?;
            if maxing {
                if v > best_v {
                    (best_v, best_m) = (v, m);
                }
                alpha = alpha.max(v);
            } else {
                if v < best_v {
                    (best_v, best_m) = (v, m);
                }
                beta = beta.min(v);
            }
            if alpha >= beta {
                break;
            }
        }
        // Fail-soft bounds, relative to the window this node was searched with.
        if best_v <= a0 {
            hi = hi.min(best_v);
        } else if best_v >= b0 {
            lo = lo.max(best_v);
        } else {
            (lo, hi) = (best_v, best_v);
        }
        self.tt.insert(
            key,
            Entry {
                lo,
                hi,
                best: best_m,
            },
        );
        Ok(best_v)
    }
}

impl Default for Solver {
    fn default() -> Self {
        Self::new()
    }
}

/// The plain paranoid value, every legal line searched ([`Position::all_moves`]), no
/// pruning, no table, no equivalent cards skipped: the reference the tests hold [`Solver`]
/// to.
pub fn brute_force<P: Position>(p: &P, persp: usize) -> i32 {
    if p.is_over() {
        return p.score(persp);
    }
    let mut moves = Vec::new();
    p.all_moves(&mut moves);
    let vals = moves.iter().map(|&m| {
        let mut c = p.clone();
        c.play(m);
        brute_force(&c, persp)
    });
    if p.to_move() == persp {
        vals.max().unwrap_or(LOW)
    } else {
        vals.min().unwrap_or(HIGH)
    }
}
