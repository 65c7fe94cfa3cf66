//! What one finished table is worth to each of its players: places from the game's
//! [`Outcome`], pairwise results between tablemates, Swiss points (in ticks) and arena
//! results. Everything is integer arithmetic, so that standings compare exactly and a
//! recomputation from the record gives the same numbers bit for bit.

use game_core::Outcome;

/// Swiss points are counted in ticks: 24 ticks are one point. 24 is the smallest number
/// that makes every share of a table of 2 to 5 players (halves, thirds, quarters of a
/// point, and their halves for ties) a whole number of ticks.
pub const TICKS_PER_POINT: u32 = 24;

/// Tie-break values (Buchholz, Sonneborn–Berger) are counted in units of 1/576 point:
/// they average over tablemates (a division by 1 to 4) and SB halves for draws, on top of
/// ticks.
pub const TIE_BREAK_UNITS_PER_POINT: u64 = 576;

/// A seat's place at a finished table: `Some(p)` with 0 the best, equal values tied; `None`
/// for a player who forfeited (reported absent), who comes after everyone present.
pub type Place = Option<u32>;

/// Places from a game's outcome, as the ratings rank them (docs/ratings.md): winners
/// share first place; the others follow by final score, higher first, equal scores
/// sharing a place. `absent[i]` forfeits seat `i` (its place is `None`). Alone at a table
/// (Solitaire) there is nobody to compare with: place 0 is a win, place 1 a loss.
pub fn places(outcome: &Outcome, absent: &[bool]) -> Vec<Place> {
    let n = outcome.scores.len();
    if n == 1 {
        return vec![(!absent[0]).then_some(u32::from(!outcome.winners.contains(&0)))];
    }
    // Key: (not a winner, -score); smaller is better. The place is the number of
    // present seats with a strictly better key, so equal keys share a place.
    let key = |i: usize| (!outcome.winners.contains(&i), -outcome.scores[i]);
    (0..n)
        .map(|i| {
            if absent[i] {
                None
            } else {
                let better = (0..n).filter(|&j| !absent[j] && key(j) < key(i)).count();
                Some(better as u32)
            }
        })
        .collect()
}

/// Seat `i`'s result against seat `j` of the same table, in half points: 2 a win (a better
/// place, or `j` forfeited while `i` did not), 1 a draw (same place), 0 a loss. A player
/// who forfeited loses to everyone, another forfeiter included (a double forfeit is two
/// losses, never a draw).
pub fn pairwise_halves(places: &[Place], i: usize, j: usize) -> u32 {
    match (places[i], places[j]) {
        (None, _) => 0,
        (Some(_), None) => 2,
        (Some(a), Some(b)) if a < b => 2,
        (Some(a), Some(b)) if a == b => 1,
        _ => 0,
    }
}

/// Seat `i`'s Swiss points, in ticks, at a table of `places.len()` seats in an event of
/// `table_size`: its pairwise results against every tablemate (win 1, draw ½), scaled so
/// that beating everyone is worth `table_size − 1` points whatever the table's own size
/// (a smaller table of the same event is worth as much as a full one). A duel is thus
/// 1 / ½ / 0. At a table of one (Solitaire) a win is one point.
pub fn swiss_ticks(places: &[Place], i: usize, table_size: usize) -> u32 {
    let s = places.len();
    if s == 1 {
        return if places[0] == Some(0) && table_size == 1 {
            TICKS_PER_POINT
        } else {
            0
        };
    }
    let halves: u32 = (0..s)
        .filter(|&j| j != i)
        .map(|j| pairwise_halves(places, i, j))
        .sum();
    // halves / 2 / (s-1) of the table's worth, (table_size-1) points, in ticks.
    (table_size as u32 - 1) * halves * (TICKS_PER_POINT / 2) / (s as u32 - 1)
}

/// The points of a bye: a win, `table_size − 1` points (1 at duels, 1 for Solitaire).
pub fn bye_ticks(table_size: usize) -> u32 {
    (table_size.max(2) as u32 - 1) * TICKS_PER_POINT
}

/// An arena result, as the points table reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArenaResult {
    Win,
    Draw,
    Loss,
}

/// Seat `i`'s arena result: a win for the best place when someone placed below it (shared
/// first places all win), a loss for a forfeit or the worst place when someone placed above
/// it, a draw otherwise (everyone tied, or a middle place). At a table of one, the game's
/// win is a win and anything else a loss.
pub fn arena_result(places: &[Place], i: usize) -> ArenaResult {
    if places[i].is_none() {
        return ArenaResult::Loss;
    }
    if places.len() == 1 {
        return if places[0] == Some(0) {
            ArenaResult::Win
        } else {
            ArenaResult::Loss
        };
    }
    let others = (0..places.len()).filter(|&j| j != i);
    let above = others.clone().any(|j| pairwise_halves(places, j, i) == 2);
    let below = others.clone().any(|j| pairwise_halves(places, i, j) == 2);
    match (above, below) {
        (false, true) => ArenaResult::Win,
        (true, false) => ArenaResult::Loss,
        _ => ArenaResult::Draw,
    }
}

/// Arena points of a result: win 2, draw 1, loss 0; doubled while on fire (the player
/// won the two games before this one).
pub fn arena_points(result: ArenaResult, on_fire: bool) -> u32 {
    let base = match result {
        ArenaResult::Win => 2,
        ArenaResult::Draw => 1,
        ArenaResult::Loss => 0,
    };
    if on_fire { base * 2 } else { base }
}

/// Checks an outcome against a table of `seats` seats: one score per seat, winners are
/// seats and named once.
pub fn check_outcome(outcome: &Outcome, seats: usize) -> Result<(), String> {
    if outcome.scores.len() != seats {
        return Err(format!(
            "{} scores for a table of {seats} seats",
            outcome.scores.len()
        ));
    }
    for (k, &w) in outcome.winners.iter().enumerate() {
        if w >= seats {
            return Err(format!("winner seat {w} is not at a table of {seats}"));
        }
        if outcome.winners[..k].contains(&w) {
            return Err(format!("winner seat {w} named twice"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(winners: &[usize], scores: &[i64]) -> Outcome {
        Outcome {
            winners: winners.to_vec(),
            scores: scores.to_vec(),
        }
    }

    #[test]
    fn duel_points_are_one_half_zero() {
        let p = places(&out(&[1], &[3, 5]), &[false, false]);
        assert_eq!(swiss_ticks(&p, 0, 2), 0);
        assert_eq!(swiss_ticks(&p, 1, 2), TICKS_PER_POINT);
        let d = places(&out(&[], &[4, 4]), &[false, false]);
        assert_eq!(swiss_ticks(&d, 0, 2), TICKS_PER_POINT / 2);
        assert_eq!(arena_result(&d, 0), ArenaResult::Draw);
    }

    #[test]
    fn multi_player_points_follow_places_and_ties_share() {
        // Seat 2 wins; seats 0 and 1 tie on score behind; seat 3 last.
        let p = places(&out(&[2], &[5, 5, 1, 2]), &[false; 4]);
        assert_eq!(p, vec![Some(1), Some(1), Some(0), Some(3)]);
        let t: Vec<u32> = (0..4).map(|i| swiss_ticks(&p, i, 4)).collect();
        assert_eq!(t, vec![36, 36, 72, 0]); // 1½, 1½, 3, 0 points
        assert_eq!(arena_result(&p, 2), ArenaResult::Win);
        assert_eq!(arena_result(&p, 0), ArenaResult::Draw);
        assert_eq!(arena_result(&p, 3), ArenaResult::Loss);
    }

    #[test]
    fn a_smaller_table_is_worth_as_much_as_a_full_one() {
        let p = places(&out(&[0], &[1, 0]), &[false, false]);
        assert_eq!(swiss_ticks(&p, 0, 3), 2 * TICKS_PER_POINT);
        assert_eq!(bye_ticks(3), 2 * TICKS_PER_POINT);
    }

    #[test]
    fn forfeits_lose_to_everyone() {
        let p = places(&out(&[0], &[9, 0, 0]), &[true, false, true]);
        assert_eq!(p, vec![None, Some(0), None]);
        assert_eq!(swiss_ticks(&p, 0, 3), 0);
        assert_eq!(swiss_ticks(&p, 2, 3), 0);
        assert_eq!(swiss_ticks(&p, 1, 3), 2 * TICKS_PER_POINT);
    }
}
