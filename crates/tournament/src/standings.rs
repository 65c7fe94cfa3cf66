//! Standings: the Swiss table with its tie-breaks (points, Buchholz, Sonneborn–Berger,
//! rating, lot) and the arena's leaderboard (points, performance, games, rating, lot),
//! both computed from the record of counted tables, never kept up to date by hand.

use serde::{Deserialize, Serialize};

use crate::points::{self, TICKS_PER_POINT, TIE_BREAK_UNITS_PER_POINT};
use crate::{Kind, PlayerId, PlayerStatus, TableState, Tournament};

/// One line of the standings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// 1-based; never shared (the last tie-break is the seeded lot).
    pub rank: u32,
    pub player: PlayerId,
    /// Swiss: ticks (1/24 point); arena: arena points.
    pub points: u32,
    /// The points as a player reads them (Swiss: `points / 24`; arena: `points`).
    pub score: f64,
    /// Swiss: Buchholz in 1/576 point (0 in an arena).
    pub buchholz: u64,
    /// Swiss: Sonneborn–Berger in 1/576 point (0 in an arena).
    pub sonneborn_berger: u64,
    /// Arena: performance rating, rounded (the rating itself before any game; 0 in a
    /// Swiss).
    pub performance: i64,
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    pub byes: u32,
    /// Arena: wins in a row now; two or more means the next win scores double.
    pub streak: u32,
    pub rating: f64,
    pub status: PlayerStatus,
}

pub(crate) fn compute(t: &Tournament) -> Vec<Standing> {
    let arena = matches!(t.config.kind, Kind::Arena { .. });
    let n = t.players.len();
    let index = |id: PlayerId| t.players.iter().position(|p| p.id == id);
    let mut buchholz = vec![0u64; n];
    let mut sb = vec![0u64; n];
    // Arena performance: per player, the sum over games of (opponents' mean rating +
    // 800 × (share − ½)), and the number of games.
    let mut perf = vec![0f64; n];
    for table in &t.tables {
        let TableState::Finished { places, .. } = &table.state else {
            continue;
        };
        let s = table.players.len();
        if s < 2 {
            continue;
        }
        let ids: Vec<usize> = table
            .players
            .iter()
            .map(|&p| index(p).expect("a seated player is a member"))
            .collect();
        let mates = s as u64 - 1;
        for (a, &i) in ids.iter().enumerate() {
            let mut halves = 0u32;
            let mut ratings = 0f64;
            for (b, &j) in ids.iter().enumerate() {
                if a == b {
                    continue;
                }
                let their = u64::from(t.players[j].points);
                let r = points::pairwise_halves(places, a, b);
                // Ticks × 24 are 1/576 point; averaged over the tablemates, and
                // 24 / (s − 1) and 12 / (s − 1) are whole for tables of 2 to 5. SB takes
                // the result in halves, hence 12.
                buchholz[i] += their * (24 / mates);
                sb[i] += u64::from(r) * their * (12 / mates);
                halves += r;
                ratings += t.players[j].rating_milli as f64 / 1000.0;
            }
            let share = f64::from(halves) / (2.0 * mates as f64);
            perf[i] += ratings / mates as f64 + 800.0 * (share - 0.5);
        }
    }
    let mut lines: Vec<(Standing, u64)> = t
        .players
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let performance = if !arena {
                0
            } else if p.games == 0 {
                (p.rating_milli as f64 / 1000.0).round() as i64
            } else {
                (perf[i] / f64::from(p.games)).round() as i64
            };
            let line = Standing {
                rank: 0,
                player: p.id,
                points: p.points,
                score: if arena {
                    f64::from(p.points)
                } else {
                    f64::from(p.points) / f64::from(TICKS_PER_POINT)
                },
                buchholz: if arena { 0 } else { buchholz[i] },
                sonneborn_berger: if arena { 0 } else { sb[i] },
                performance,
                games: p.games,
                wins: p.wins,
                draws: p.draws,
                losses: p.losses,
                byes: p.byes.len() as u32,
                streak: p.streak,
                rating: p.rating_milli as f64 / 1000.0,
                status: p.status,
            };
            (line, p.lot)
        })
        .collect();
    lines.sort_by(|(a, la), (b, lb)| {
        let head = b.points.cmp(&a.points);
        let middle = if arena {
            b.performance
                .cmp(&a.performance)
                .then(b.games.cmp(&a.games))
        } else {
            b.buchholz
                .cmp(&a.buchholz)
                .then(b.sonneborn_berger.cmp(&a.sonneborn_berger))
        };
        head.then(middle)
            .then(b.rating.total_cmp(&a.rating))
            .then(la.cmp(lb))
            .then(a.player.cmp(&b.player))
    });
    debug_assert_eq!(TIE_BREAK_UNITS_PER_POINT, u64::from(TICKS_PER_POINT) * 24);
    lines
        .into_iter()
        .enumerate()
        .map(|(r, (mut s, _))| {
            s.rank = r as u32 + 1;
            s
        })
        .collect()
}
