//! How players are split into tables: the plan of table sizes for a number of players,
//! and the Swiss search for the grouping with the fewest repeated meetings.
//!
//! The search works on positions in rank order (0 is the best-ranked player to seat) and a
//! matrix of how often each two have met. It is a depth-first branch and bound over every
//! grouping, enumerated in a canonical order: each table is opened by the best-ranked
//! player still unseated, and its other seats are filled with unseated players in rank
//! order. The first complete grouping is therefore the plain "neighbours in rank order"
//! one; the search then only follows branches that can still beat the fewest repeats
//! found so far, and stops at the first grouping with none. What it returns is the first
//! grouping in that order with the fewest repeats: the best-ranked players meet their
//! nearest-ranked possible opponents. On small fields it is exact (tested against a brute
//! force); on large ones it gives up after [`NODE_BUDGET`] steps and keeps the best found.

/// Steps (a player placed at a table) the search may take before it settles for the best
/// grouping found so far. Enough to be exact on every field of a dozen players, and to
/// stay within a few milliseconds on large ones.
pub const NODE_BUDGET: u64 = 200_000;

/// How `n` players are seated at tables of at most `table_size` and at least
/// `min_table_size`: `(sizes, byes)`. Byes are as few as possible; then tables as few as
/// possible (as many full ones as can be); their sizes differ by at most one, larger
/// first. With `min_table_size == table_size` this is `n / k` full tables and `n % k`
/// byes.
pub fn table_plan(n: usize, table_size: usize, min_table_size: usize) -> (Vec<usize>, usize) {
    for byes in 0..=n {
        let seated = n - byes;
        if seated == 0 {
            return (Vec::new(), byes);
        }
        let tables = seated.div_ceil(table_size);
        if tables * min_table_size <= seated {
            let (q, r) = (seated / tables, seated % tables);
            let sizes = (0..tables).map(|t| q + usize::from(t < r)).collect();
            return (sizes, byes);
        }
    }
    (Vec::new(), n)
}

/// The cost of seating `a` and `b` together again: how often they met before (a third
/// meeting costs more than a second).
pub type Met = Vec<Vec<u32>>;

/// Total repeats of a grouping: over every two players at one table, their past meetings.
pub fn repeats(groups: &[Vec<usize>], met: &Met) -> u64 {
    groups
        .iter()
        .map(|g| {
            let mut c = 0u64;
            for (x, &a) in g.iter().enumerate() {
                for &b in &g[x + 1..] {
                    c += u64::from(met[a][b]);
                }
            }
            c
        })
        .sum()
}

/// Groups positions `0..met.len()` into tables of the given sizes (any order of them)
/// with the fewest repeats, as described in the module header. Each table lists its
/// players in rank order; tables come in the order they were opened (best first).
pub fn group(met: &Met, sizes: &[usize]) -> Vec<Vec<usize>> {
    let n = met.len();
    debug_assert_eq!(sizes.iter().sum::<usize>(), n);
    let mut distinct: Vec<(usize, usize)> = Vec::new(); // (size, count), larger first
    for &s in sizes {
        match distinct.iter_mut().find(|(z, _)| *z == s) {
            Some(e) => e.1 += 1,
            None => distinct.push((s, 1)),
        }
    }
    distinct.sort_by_key(|&(size, _)| std::cmp::Reverse(size));
    let mut search = Search {
        met,
        seated: vec![false; n],
        tables: Vec::new(),
        counts: distinct,
        best: None,
        nodes: 0,
    };
    search.open_table(0);
    search.best.map(|(_, g)| g).unwrap_or_default()
}

struct Search<'a> {
    met: &'a Met,
    seated: Vec<bool>,
    tables: Vec<Vec<usize>>,
    counts: Vec<(usize, usize)>,
    best: Option<(u64, Vec<Vec<usize>>)>,
    nodes: u64,
}

impl Search<'_> {
    /// Whether the search should unwind: a grouping without repeats is found, or the
    /// budget is spent and some grouping is at hand.
    fn done(&self) -> bool {
        match &self.best {
            Some((0, _)) => true,
            Some(_) => self.nodes > NODE_BUDGET,
            None => false,
        }
    }

    fn bound(&self) -> u64 {
        self.best.as_ref().map_or(u64::MAX, |(c, _)| *c)
    }

    /// Opens the next table with the best-ranked unseated player, or records a complete
    /// grouping.
    fn open_table(&mut self, cost: u64) {
        let Some(anchor) = self.seated.iter().position(|s| !s) else {
            if cost < self.bound() {
                self.best = Some((cost, self.tables.clone()));
            }
            return;
        };
        for k in 0..self.counts.len() {
            if self.counts[k].1 == 0 {
                continue;
            }
            let size = self.counts[k].0;
            self.counts[k].1 -= 1;
            self.seated[anchor] = true;
            self.tables.push(vec![anchor]);
            self.fill(size, anchor + 1, cost);
            self.tables.pop();
            self.seated[anchor] = false;
            self.counts[k].1 += 1;
            if self.done() {
                return;
            }
        }
    }

    /// Fills the last table up to `size` with unseated players from position `from` on.
    fn fill(&mut self, size: usize, from: usize, cost: u64) {
        let table = self.tables.len() - 1;
        if self.tables[table].len() == size {
            self.open_table(cost);
            return;
        }
        let n = self.seated.len();
        let missing = size - self.tables[table].len();
        // Unseated players from `c` on: the table cannot be completed once fewer than
        // `missing` are left.
        let mut left = (from..n).filter(|&x| !self.seated[x]).count();
        for c in from..n {
            if self.seated[c] {
                continue;
            }
            if left < missing {
                break;
            }
            left -= 1;
            let add: u64 = self.tables[table]
                .iter()
                .map(|&m| u64::from(self.met[m][c]))
                .sum();
            if cost + add >= self.bound() {
                continue;
            }
            self.nodes += 1;
            self.seated[c] = true;
            self.tables[table].push(c);
            self.fill(size, c + 1, cost + add);
            self.tables[table].pop();
            self.seated[c] = false;
            if self.done() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(table_plan(7, 2, 2), (vec![2, 2, 2], 1));
        assert_eq!(table_plan(7, 3, 3), (vec![3, 3], 1));
        assert_eq!(table_plan(7, 3, 2), (vec![3, 2, 2], 0));
        assert_eq!(table_plan(10, 4, 3), (vec![4, 3, 3], 0));
        assert_eq!(table_plan(5, 4, 3), (vec![4], 1));
        assert_eq!(table_plan(1, 2, 2), (vec![], 1));
        assert_eq!(table_plan(3, 1, 1), (vec![1, 1, 1], 0));
    }

    #[test]
    fn neighbours_when_nobody_met() {
        let met = vec![vec![0; 4]; 4];
        assert_eq!(group(&met, &[2, 2]), vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn avoids_a_repeat_by_the_nearest_swap() {
        let mut met = vec![vec![0; 4]; 4];
        met[0][1] = 1;
        met[1][0] = 1;
        assert_eq!(group(&met, &[2, 2]), vec![vec![0, 2], vec![1, 3]]);
    }
}
