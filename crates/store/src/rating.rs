//! Ratings: an Elo number per player and game, updated when a match between people ends.
//!
//! A match of n people counts as every pair of them playing one game: a winner beats a
//! non-winner, two winners (a shared win) draw, and between two non-winners the higher
//! final score wins (equal scores draw). Each pair moves both ratings by
//! `K / (n - 1) × (result − expected)`, with `expected = 1 / (1 + 10^((Rb − Ra) / 400))`,
//! so a match is worth the same K however many play. Bot seats are left out: a rating
//! says how someone does against people (matches against bots alone are unrated).

/// Where every player starts.
pub const INITIAL: f64 = 1500.0;
/// How far one match can move a rating.
pub const K: f64 = 32.0;

/// One person's side of a finished match.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    pub rating: f64,
    pub won: bool,
    pub score: i64,
}

/// The new ratings, in the order of `entries`. Fewer than two people: unchanged.
pub fn update(entries: &[Entry]) -> Vec<f64> {
    let n = entries.len();
    if n < 2 {
        return entries.iter().map(|e| e.rating).collect();
    }
    let k = K / (n - 1) as f64;
    entries
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let change: f64 = entries
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, b)| {
                    let expected = 1.0 / (1.0 + 10f64.powf((b.rating - a.rating) / 400.0));
                    k * (result(a, b) - expected)
                })
                .sum();
            a.rating + change
        })
        .collect()
}

/// `a`'s result against `b`: 1 win, 0.5 draw, 0 loss.
fn result(a: &Entry, b: &Entry) -> f64 {
    match (a.won, b.won) {
        (true, false) => 1.0,
        (false, true) => 0.0,
        (true, true) => 0.5,
        (false, false) => match a.score.cmp(&b.score) {
            std::cmp::Ordering::Greater => 1.0,
            std::cmp::Ordering::Less => 0.0,
            std::cmp::Ordering::Equal => 0.5,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(rating: f64, won: bool, score: i64) -> Entry {
        Entry { rating, won, score }
    }

    #[test]
    fn equal_players_move_by_half_k() {
        let r = update(&[e(INITIAL, true, 144), e(INITIAL, false, 90)]);
        assert_eq!(r, vec![1516.0, 1484.0]);
    }

    #[test]
    fn a_shared_win_between_equals_changes_nothing() {
        let r = update(&[e(1500.0, true, 10), e(1500.0, true, 10)]);
        assert_eq!(r, vec![1500.0, 1500.0]);
    }

    #[test]
    fn beating_a_stronger_player_gains_more() {
        let upset = update(&[e(1400.0, true, 1), e(1600.0, false, 0)]);
        let expected = update(&[e(1600.0, true, 1), e(1400.0, false, 0)]);
        assert!(upset[0] - 1400.0 > expected[0] - 1600.0);
        // Zero-sum between two.
        assert!((upset[0] + upset[1] - 3000.0).abs() < 1e-9);
    }

    #[test]
    fn four_players_rank_by_win_then_score_and_sum_to_zero() {
        let r = update(&[
            e(1500.0, false, 50),
            e(1500.0, true, 144),
            e(1500.0, false, 80),
            e(1500.0, false, 50),
        ]);
        // Winner +16 (three wins at 32/3 × 0.5), second +5.33, the two tied last −10.67.
        assert!((r[1] - 1516.0).abs() < 1e-9, "{r:?}");
        assert!((r[2] - (1500.0 + 32.0 / 3.0 * 0.5)).abs() < 1e-9, "{r:?}");
        assert!((r[0] - r[3]).abs() < 1e-9);
        assert!(r[0] < 1500.0);
        assert!((r.iter().sum::<f64>() - 6000.0).abs() < 1e-9);
    }

    #[test]
    fn one_person_is_unrated() {
        assert_eq!(update(&[e(1500.0, true, 20)]), vec![1500.0]);
        assert!(update(&[]).is_empty());
    }
}
