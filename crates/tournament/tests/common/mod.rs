//! Helpers the scenario and property tests share: player ids, a small seeded generator,
//! drivers that run a tournament with random results, the invariants checked after every
//! pairing, and an independent recomputation of the standings from what the tests
//! reported (not from the crate's own record).
#![allow(dead_code)] // each test file uses its own part

use std::collections::BTreeMap;

use game_core::Outcome;
use tournament::{
    Config, Effect, Kind, Phase, PlayerId, PlayerStatus, TableId, TableState, Tournament,
};
use uuid::Uuid;

pub fn pid(n: u64) -> PlayerId {
    Uuid::from_u64_pair(0, n + 1)
}

/// SplitMix64: the tests' own random results, independent of the crate's streams.
pub struct Gen(pub u64);

impl Gen {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

pub fn swiss(rounds: u32, table_size: usize, min_table_size: usize, seed: u64) -> Config {
    Config {
        kind: Kind::Swiss { rounds },
        game: "nachos".into(),
        table_size,
        min_table_size,
        rated: true,
        seed,
    }
}

pub fn arena(duration_ms: u64, stop_ms: u64, table_size: usize, seed: u64) -> Config {
    Config {
        kind: Kind::Arena {
            duration_ms,
            stop_pairing_before_ms: stop_ms,
        },
        game: "nachos".into(),
        table_size,
        min_table_size: table_size,
        rated: true,
        seed,
    }
}

/// A random outcome for `seats` seats: scores 0..4 (ties likely), sometimes a winner.
pub fn random_outcome(g: &mut Gen, seats: usize) -> Outcome {
    let scores: Vec<i64> = (0..seats).map(|_| g.below(4) as i64).collect();
    let winners = if g.chance(50) {
        vec![g.below(seats as u64) as usize]
    } else {
        Vec::new()
    };
    Outcome { winners, scores }
}

/// What the tests reported for a table: the outcome (`None`: it ended by absences) and
/// who was reported absent.
#[derive(Clone, Debug, Default)]
pub struct Reported {
    pub outcome: Option<Outcome>,
    pub absent: Vec<PlayerId>,
}

/// Everything a driver did, for the recomputation.
#[derive(Default)]
pub struct Log {
    pub reported: BTreeMap<TableId, Reported>,
    /// Rounds whose pairing invariants were checked.
    pub rounds_checked: u32,
}

/// Runs a Swiss to its end with random results, absences (`absent_pct` per table),
/// withdrawals and late joins (`churn_pct` per result), checking the pairing invariants
/// after every input that paired a round. Returns the finished tournament and its log.
pub fn run_swiss(
    config: Config,
    players: u64,
    g: &mut Gen,
    absent_pct: u64,
    churn_pct: u64,
) -> (Tournament, Log) {
    let mut t = Tournament::new(config, (1, 5)).unwrap();
    let mut next = 0;
    for _ in 0..players {
        t.join(pid(next), 1000.0 + g.below(1000) as f64, 0).unwrap();
        next += 1;
    }
    let mut log = Log::default();
    let mut now = 1;
    let fx = t.start(now).unwrap();
    check_swiss_effects(&t, &fx, &mut log);
    while t.phase() == Phase::Running {
        now += 1;
        if g.chance(churn_pct) {
            if g.chance(50) {
                if t.join(pid(next), 1000.0 + g.below(1000) as f64, now)
                    .is_ok()
                {
                    next += 1;
                }
            } else {
                let who = pid(g.below(next));
                let _ = t.withdraw(who, now);
            }
        }
        let open: Vec<TableId> = t
            .tables()
            .iter()
            .filter(|x| x.state == TableState::Playing)
            .map(|x| x.id)
            .collect();
        let table = open[g.below(open.len() as u64) as usize];
        let seats = t.table(table).unwrap().players.clone();
        let fx = if g.chance(absent_pct) {
            let who = seats[g.below(seats.len() as u64) as usize];
            match t.absent(who, table, now) {
                Ok(fx) => {
                    log.reported.entry(table).or_default().absent.push(who);
                    fx
                }
                Err(e) => {
                    assert_eq!(e.code(), "already_absent");
                    continue;
                }
            }
        } else {
            let outcome = random_outcome(g, seats.len());
            let fx = t.report_result(table, &outcome, now).unwrap();
            log.reported.entry(table).or_default().outcome = Some(outcome);
            fx
        };
        check_swiss_effects(&t, &fx, &mut log);
    }
    (t, log)
}

/// After an input: if it paired a round, the round's invariants hold (see
/// [`check_round`]).
pub fn check_swiss_effects(t: &Tournament, fx: &[Effect], log: &mut Log) {
    for e in fx {
        if let Effect::RoundStarted { round, .. } = e {
            check_round(t, *round);
            log.rounds_checked += 1;
        }
    }
}

/// The invariants of round `round`, right after it was paired (so statuses are those
/// at pairing time):
/// - every active player is at exactly one table of the round or has its bye; nobody
///   else (withdrawn, dropped) is at any;
/// - tables have the planned sizes, between `min_table_size` and `table_size`, byes only
///   when no such plan seats everyone;
/// - byes are fair: nobody got one while an active player had fewer byes;
/// - on small fields, the round's repeated meetings are the fewest possible (brute force).
pub fn check_round(t: &Tournament, round: u32) {
    let cfg = t.config();
    let active: Vec<PlayerId> = t
        .players()
        .iter()
        .filter(|p| p.status == PlayerStatus::Active)
        .map(|p| p.id)
        .collect();
    let tables: Vec<_> = t.tables().iter().filter(|x| x.round == round).collect();
    let byes: Vec<PlayerId> = t
        .byes()
        .iter()
        .filter(|b| b.round == round)
        .map(|b| b.player)
        .collect();
    let mut seen: Vec<PlayerId> = byes.clone();
    for x in &tables {
        seen.extend(&x.players);
        assert!(
            (cfg.min_table_size..=cfg.table_size).contains(&x.players.len()),
            "table of {} in round {round}",
            x.players.len()
        );
    }
    let mut sorted_seen = seen.clone();
    sorted_seen.sort();
    sorted_seen.dedup();
    assert_eq!(
        sorted_seen.len(),
        seen.len(),
        "someone seated twice in round {round}"
    );
    let mut sorted_active = active.clone();
    sorted_active.sort();
    assert_eq!(
        sorted_seen, sorted_active,
        "round {round} seats exactly the active"
    );
    // Byes: only as many as needed.
    let n = active.len();
    let min_byes = (0..=n)
        .find(|b| {
            let s = n - b;
            s == 0 || s.div_ceil(cfg.table_size) * cfg.min_table_size <= s
        })
        .unwrap();
    assert_eq!(byes.len(), min_byes, "byes in round {round}");
    // Fair byes.
    let before = |p: PlayerId| {
        t.byes()
            .iter()
            .filter(|b| b.round < round && b.player == p)
            .count()
    };
    for &b in &byes {
        for &a in &active {
            if !byes.contains(&a) {
                assert!(before(a) >= before(b), "unfair bye in round {round}");
            }
        }
    }
    // Repeats: the fewest possible, checked by brute force on small fields.
    let seated: Vec<PlayerId> = active
        .iter()
        .copied()
        .filter(|p| !byes.contains(p))
        .collect();
    let met = |a: PlayerId, b: PlayerId| {
        t.tables()
            .iter()
            .filter(|x| x.round < round && x.players.contains(&a) && x.players.contains(&b))
            .count() as u64
    };
    let cost = |groups: &[Vec<PlayerId>]| -> u64 {
        groups
            .iter()
            .map(|g| {
                let mut c = 0;
                for i in 0..g.len() {
                    for j in i + 1..g.len() {
                        c += met(g[i], g[j]);
                    }
                }
                c
            })
            .sum()
    };
    let actual = cost(&tables.iter().map(|x| x.players.clone()).collect::<Vec<_>>());
    if seated.len() <= 8 {
        let sizes: Vec<usize> = tables.iter().map(|x| x.players.len()).collect();
        let best = brute_force_fewest(&seated, &sizes, &cost);
        assert_eq!(
            actual, best,
            "round {round}: {actual} repeats, {best} were possible"
        );
    }
}

/// The fewest repeats over every order of `players` cut into tables of `sizes`.
fn brute_force_fewest(
    players: &[PlayerId],
    sizes: &[usize],
    cost: &dyn Fn(&[Vec<PlayerId>]) -> u64,
) -> u64 {
    fn permute(
        v: &mut Vec<PlayerId>,
        k: usize,
        sizes: &[usize],
        cost: &dyn Fn(&[Vec<PlayerId>]) -> u64,
        best: &mut u64,
    ) {
        if k == v.len() {
            let mut groups = Vec::new();
            let mut at = 0;
            for &s in sizes {
                groups.push(v[at..at + s].to_vec());
                at += s;
            }
            *best = (*best).min(cost(&groups));
            return;
        }
        for i in k..v.len() {
            v.swap(k, i);
            permute(v, k + 1, sizes, cost, best);
            v.swap(k, i);
        }
    }
    let mut best = u64::MAX;
    permute(&mut players.to_vec(), 0, sizes, cost, &mut best);
    best
}

/// The standings recomputed from what was reported, with floats and from the rules as
/// docs/tournaments.md states them: `(player, points, buchholz, sonneborn_berger)` in
/// points.
pub fn recompute_swiss(t: &Tournament, log: &Log) -> BTreeMap<PlayerId, (f64, f64, f64)> {
    let k = t.config().table_size as f64;
    let mut pts: BTreeMap<PlayerId, f64> = t.players().iter().map(|p| (p.id, 0.0)).collect();
    // Per counted game: (player, tablemates with my result against each: 1, ½, 0).
    let mut games: Vec<(PlayerId, Vec<(PlayerId, f64)>)> = Vec::new();
    for b in t.byes() {
        *pts.get_mut(&b.player).unwrap() += (k - 1.0).max(1.0);
    }
    for (table, rep) in &log.reported {
        let seats = &t.table(*table).unwrap().players;
        let s = seats.len();
        let absent = |i: usize| rep.absent.contains(&seats[i]);
        // Better = a winner over a non-winner, else the higher score; an absent seat is
        // beaten by everyone present. Tables that ended by absences have no outcome: the
        // present one (if any) beats the absent.
        let rank = |i: usize| -> (i64, i64) {
            match &rep.outcome {
                Some(o) => (o.winners.contains(&i) as i64, o.scores[i]),
                None => (0, 0),
            }
        };
        let result = |i: usize, j: usize| -> f64 {
            if absent(i) {
                0.0
            } else if absent(j) || rank(i) > rank(j) {
                1.0
            } else if rank(i) == rank(j) {
                0.5
            } else {
                0.0
            }
        };
        if s == 1 {
            continue;
        }
        for i in 0..s {
            let mates: Vec<(PlayerId, f64)> = (0..s)
                .filter(|&j| j != i)
                .map(|j| (seats[j], result(i, j)))
                .collect();
            let share: f64 = mates.iter().map(|m| m.1).sum::<f64>() / (s as f64 - 1.0);
            *pts.get_mut(&seats[i]).unwrap() += share * (k - 1.0);
            games.push((seats[i], mates));
        }
    }
    let mut out: BTreeMap<PlayerId, (f64, f64, f64)> =
        pts.iter().map(|(&p, &x)| (p, (x, 0.0, 0.0))).collect();
    for (p, mates) in &games {
        let m = mates.len() as f64;
        let bh: f64 = mates.iter().map(|(q, _)| pts[q]).sum::<f64>() / m;
        let sb: f64 = mates.iter().map(|(q, r)| pts[q] * r).sum::<f64>() / m;
        let e = out.get_mut(p).unwrap();
        e.1 += bh;
        e.2 += sb;
    }
    out
}

/// The crate's standings equal the recomputation, and are ordered by points, Buchholz,
/// Sonneborn–Berger, then rating.
pub fn check_standings(t: &Tournament, log: &Log) {
    let want = recompute_swiss(t, log);
    let got = t.standings();
    assert_eq!(got.len(), want.len());
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    for s in &got {
        let (p, bh, sb) = want[&s.player];
        assert!(
            close(s.score, p),
            "points of {}: {} vs {p}",
            s.player,
            s.score
        );
        assert!(
            close(s.buchholz as f64 / 576.0, bh),
            "buchholz {} vs {bh}",
            s.buchholz
        );
        assert!(
            close(s.sonneborn_berger as f64 / 576.0, sb),
            "SB {} vs {sb}",
            s.sonneborn_berger
        );
    }
    for w in got.windows(2) {
        let key = |s: &tournament::Standing| {
            let (p, bh, sb) = want[&s.player];
            (p, bh, sb, s.rating)
        };
        let (a, b) = (key(&w[0]), key(&w[1]));
        let ge = a.0 > b.0 + 1e-9
            || close(a.0, b.0)
                && (a.1 > b.1 + 1e-9
                    || close(a.1, b.1) && (a.2 > b.2 + 1e-9 || close(a.2, b.2) && a.3 >= b.3));
        assert!(ge, "standings out of order: {:?} before {:?}", w[0], w[1]);
        assert_eq!(w[1].rank, w[0].rank + 1);
    }
}
