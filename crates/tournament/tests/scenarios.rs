//! One scenario per documented rule of docs/tournaments.md: a whole Swiss, tables of three
//! with a bye, a late join, a withdrawal, two absences and a drop, an arena simulated
//! with game lengths, the streak bonus, refused inputs that change nothing, and a state
//! that survives a trip through JSON.

mod common;

use common::*;
use game_core::Outcome;
use tournament::{Effect, Phase, PlayerStatus, TableId, TableState, Tournament};

fn win(seat: usize, seats: usize) -> Outcome {
    Outcome {
        winners: vec![seat],
        scores: vec![0; seats],
    }
}

fn open_tables(t: &Tournament) -> Vec<TableId> {
    t.tables()
        .iter()
        .filter(|x| x.state == TableState::Playing)
        .map(|x| x.id)
        .collect()
}

#[test]
fn thirty_two_players_five_rounds_to_the_end() {
    let mut g = Gen(7);
    let (t, log) = run_swiss(swiss(5, 2, 2, 42), 32, &mut g, 0, 0);
    assert_eq!(t.phase(), Phase::Finished);
    assert_eq!(t.round(), 5);
    assert_eq!(log.rounds_checked, 5);
    assert_eq!(t.tables().len(), 5 * 16);
    assert!(t.byes().is_empty());
    // Nobody met anyone twice: 5 rounds among 32 always allow it.
    for a in t.players() {
        let mut mates: Vec<_> = t
            .tables()
            .iter()
            .filter(|x| x.players.contains(&a.id))
            .flat_map(|x| x.players.clone())
            .filter(|&p| p != a.id)
            .collect();
        let n = mates.len();
        mates.sort();
        mates.dedup();
        assert_eq!(n, mates.len(), "{} met someone twice", a.id);
        assert_eq!(n, 5);
    }
    check_standings(&t, &log);
    // Total points: one per game.
    let total: u32 = t.players().iter().map(|p| p.points).sum();
    assert_eq!(total, 5 * 16 * 24);
}

#[test]
fn the_over_effect_has_the_podium_of_the_final_standings() {
    let mut t = Tournament::new(swiss(1, 2, 2, 1), (2, 2)).unwrap();
    for i in 0..4 {
        t.join(pid(i), 1500.0 + i as f64, 0).unwrap();
    }
    t.start(1).unwrap();
    t.report_result(TableId(0), &win(0, 2), 2).unwrap();
    let fx = t.report_result(TableId(1), &win(1, 2), 3).unwrap();
    let Some(Effect::Over {
        podium, standings, ..
    }) = fx.last()
    else {
        panic!("no over: {fx:?}");
    };
    assert_eq!(podium.len(), 3);
    assert_eq!(standings.len(), 4);
    assert_eq!(
        podium[..],
        standings
            .iter()
            .take(3)
            .map(|s| s.player)
            .collect::<Vec<_>>()[..]
    );
    assert_eq!(fx[fx.len() - 2], Effect::RoundEnded { round: 1 });
    // Pairing round 1 by rating: 1st v 2nd, 3rd v 4th.
    let t0: Vec<_> = t.table(TableId(0)).unwrap().players.clone();
    assert!(t0.contains(&pid(3)) && t0.contains(&pid(2)));
}

#[test]
fn tables_of_three_with_a_bye_going_to_the_lowest_ranked_without_one() {
    let mut t = Tournament::new(swiss(3, 3, 3, 5), (2, 5)).unwrap();
    for i in 0..7 {
        t.join(pid(i), 1000.0 + 100.0 * i as f64, 0).unwrap();
    }
    let fx = t.start(1).unwrap();
    // 7 = 3 + 3 and a bye, to the lowest rated (pid 0), worth a win: 2 points.
    assert_eq!(
        fx[1],
        Effect::RoundStarted {
            round: 1,
            byes: vec![pid(0)]
        }
    );
    assert_eq!(t.player(pid(0)).unwrap().points, 2 * 24);
    let mut now = 2;
    for round in 1..=3 {
        assert_eq!(t.round(), round);
        check_round(&t, round);
        for table in open_tables(&t) {
            now += 1;
            t.report_result(table, &win(0, 3), now).unwrap();
        }
    }
    assert_eq!(t.phase(), Phase::Finished);
    // Three rounds, three different players had the bye.
    let mut had: Vec<_> = t.byes().iter().map(|b| b.player).collect();
    had.sort();
    had.dedup();
    assert_eq!(had.len(), 3);
}

#[test]
fn smaller_tables_instead_of_byes_when_the_config_allows() {
    let mut t = Tournament::new(swiss(2, 3, 2, 5), (2, 5)).unwrap();
    for i in 0..7 {
        t.join(pid(i), 1000.0, 0).unwrap();
    }
    t.start(1).unwrap();
    let sizes: Vec<usize> = t.tables().iter().map(|x| x.players.len()).collect();
    assert_eq!(sizes, vec![3, 2, 2]);
    assert!(t.byes().is_empty());
    // A duel at a three-player event is worth as much as a full table: 2 points a win.
    let fx = t.report_result(TableId(1), &win(0, 2), 2).unwrap();
    assert!(matches!(&fx[0], Effect::TableFinished { points, .. } if points == &vec![48, 0]));
}

#[test]
fn a_late_join_is_paired_from_the_next_round_with_no_points() {
    let mut t = Tournament::new(swiss(3, 2, 2, 9), (2, 2)).unwrap();
    for i in 0..4 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(1).unwrap();
    t.join(pid(10), 1000.0, 5).unwrap();
    let late = t.player(pid(10)).unwrap();
    assert_eq!(
        (late.points, late.joined_in_round, late.table),
        (0, 1, None)
    );
    t.report_result(TableId(0), &win(0, 2), 6).unwrap();
    let fx = t.report_result(TableId(1), &win(0, 2), 7).unwrap();
    // Round 2: five players, two tables and a bye; the late joiner, with no points and
    // the lowest rating, is the lowest ranked without a bye: theirs.
    assert!(fx.contains(&Effect::RoundStarted {
        round: 2,
        byes: vec![pid(10)]
    }));
    check_round(&t, 2);
    // Joining is closed once the last round has begun.
    for table in open_tables(&t) {
        t.report_result(table, &win(0, 2), 8).unwrap();
    }
    assert_eq!(t.round(), 3);
    assert_eq!(t.join(pid(11), 1500.0, 9).unwrap_err().code(), "closed");
}

#[test]
fn a_withdrawn_player_is_not_paired_again_and_past_games_stand() {
    let mut t = Tournament::new(swiss(3, 2, 2, 3), (2, 2)).unwrap();
    for i in 0..4 {
        t.join(pid(i), 1500.0 + i as f64, 0).unwrap();
    }
    t.start(1).unwrap();
    let at0 = t.table(TableId(0)).unwrap().players.clone();
    let winner = at0[0];
    t.report_result(TableId(0), &win(0, 2), 2).unwrap();
    t.withdraw(winner, 3).unwrap();
    assert_eq!(t.withdraw(winner, 3).unwrap_err().code(), "not_active");
    t.report_result(TableId(1), &win(0, 2), 4).unwrap();
    assert_eq!(t.round(), 2);
    let r2: Vec<_> = t.tables().iter().filter(|x| x.round == 2).collect();
    assert!(r2.iter().all(|x| !x.players.contains(&winner)));
    assert_eq!(t.player(winner).unwrap().points, 24);
    assert_eq!(t.player(winner).unwrap().status, PlayerStatus::Withdrawn);
    // Three left: one table and a bye.
    assert_eq!(t.byes().len(), 1);
}

#[test]
fn two_absences_in_a_row_drop_a_player() {
    let mut t = Tournament::new(swiss(4, 2, 2, 11), (2, 2)).unwrap();
    for i in 0..4 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(1).unwrap();
    let lazy = t.table(TableId(0)).unwrap().players[1];
    // Round 1: absent, the opponent wins at once by forfeit.
    let fx = t.absent(lazy, TableId(0), 2).unwrap();
    assert!(matches!(&fx[0], Effect::TableFinished { points, .. } if points == &vec![24, 0]));
    assert_eq!(t.player(lazy).unwrap().status, PlayerStatus::Active);
    t.report_result(TableId(1), &win(0, 2), 3).unwrap();
    // Round 2: absent again: dropped.
    let table = t.player(lazy).unwrap().table.unwrap();
    let fx = t.absent(lazy, table, 4).unwrap();
    assert_eq!(fx[0], Effect::PlayerDropped { player: lazy });
    assert_eq!(t.player(lazy).unwrap().status, PlayerStatus::Dropped);
    for table in open_tables(&t) {
        t.report_result(table, &win(0, 2), 5).unwrap();
    }
    assert_eq!(t.round(), 3);
    assert!(
        t.tables()
            .iter()
            .filter(|x| x.round == 3)
            .all(|x| !x.players.contains(&lazy))
    );
    assert!(t.byes().iter().all(|b| b.player != lazy));
}

#[test]
fn an_absence_then_a_game_starts_the_count_again() {
    let mut t = Tournament::new(swiss(3, 2, 2, 11), (2, 2)).unwrap();
    for i in 0..2 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(1).unwrap();
    let p = pid(0);
    // Rounds 1 and 3 missed, round 2 played: not dropped (the rule is two in a row).
    t.absent(p, TableId(0), 2).unwrap();
    t.report_result(TableId(1), &win(0, 2), 3).unwrap();
    t.absent(p, TableId(2), 4).unwrap();
    assert_eq!(t.player(p).unwrap().status, PlayerStatus::Active);
    assert_eq!(t.player(p).unwrap().absences, 2);
    assert_eq!(t.phase(), Phase::Finished);
}

#[test]
fn at_a_multi_player_table_an_absent_player_forfeits_and_the_rest_play_on() {
    let mut t = Tournament::new(swiss(1, 3, 3, 2), (2, 5)).unwrap();
    for i in 0..3 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(1).unwrap();
    let seats = t.table(TableId(0)).unwrap().players.clone();
    assert!(t.absent(seats[2], TableId(0), 2).unwrap().is_empty());
    // The outcome names seat 2 the winner, but it forfeited: the two present share
    // nothing of it; seat 0 wins over seat 1, and both beat seat 2.
    let fx = t
        .report_result(
            TableId(0),
            &Outcome {
                winners: vec![2],
                scores: vec![5, 3, 9],
            },
            3,
        )
        .unwrap();
    assert!(matches!(&fx[0], Effect::TableFinished { points, .. } if points == &vec![48, 24, 0]));
}

/// A table abandoned unplayed: everyone at it is absent at once, and it is a forfeit for
/// all, with no points for anyone (one by one, the first reported would have handed the
/// last a win).
#[test]
fn a_table_everyone_is_absent_from_at_once_is_a_forfeit_for_all() {
    let mut t = Tournament::new(swiss(1, 2, 2, 1), (2, 2)).unwrap();
    for i in 0..2 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(1).unwrap();
    let seats = t.table(TableId(0)).unwrap().players.clone();
    let fx = t.absent_together(&seats, TableId(0), 2).unwrap();
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::TableFinished { points, .. } if points == &vec![0, 0])),
        "{fx:?}"
    );
    for p in &seats {
        let me = t.player(*p).unwrap();
        assert_eq!((me.points, me.absences), (0, 1), "{me:?}");
    }
    // Twice, or a player not at the table: refused, nothing changed.
    let mut u = Tournament::new(swiss(1, 2, 2, 1), (2, 2)).unwrap();
    for i in 0..2 {
        u.join(pid(i), 1500.0, 0).unwrap();
    }
    u.start(1).unwrap();
    let before = serde_json::to_value(&u).unwrap();
    let seats = u.table(TableId(0)).unwrap().players.clone();
    assert!(
        u.absent_together(&[seats[0], seats[0]], TableId(0), 2)
            .is_err()
    );
    assert!(
        u.absent_together(&[seats[0], pid(7)], TableId(0), 2)
            .is_err()
    );
    assert_eq!(serde_json::to_value(&u).unwrap(), before);
}

#[test]
fn refused_inputs_change_nothing() {
    let mut t = Tournament::new(swiss(1, 2, 2, 1), (2, 2)).unwrap();
    assert_eq!(t.start(0).unwrap_err().code(), "too_few_players");
    t.join(pid(0), 1500.0, 0).unwrap();
    t.join(pid(1), 1500.0, 0).unwrap();
    assert_eq!(
        t.join(pid(1), 1500.0, 0).unwrap_err().code(),
        "already_joined"
    );
    assert_eq!(
        t.join(pid(2), f64::NAN, 0).unwrap_err().code(),
        "bad_rating"
    );
    assert_eq!(t.withdraw(pid(9), 0).unwrap_err().code(), "not_a_member");
    t.start(1).unwrap();
    let before = t.clone();
    let errs = [
        t.start(1).unwrap_err(),
        t.report_result(TableId(5), &win(0, 2), 2).unwrap_err(),
        t.report_result(TableId(0), &win(0, 3), 2).unwrap_err(),
        t.report_result(TableId(0), &win(2, 2), 2).unwrap_err(),
        t.absent(pid(7), TableId(0), 2).unwrap_err(),
        t.withdraw(pid(9), 2).unwrap_err(),
    ];
    let codes: Vec<_> = errs.iter().map(|e| e.code()).collect();
    assert_eq!(
        codes,
        [
            "already_started",
            "unknown_table",
            "bad_outcome",
            "bad_outcome",
            "not_at_table",
            "not_a_member"
        ]
    );
    assert_eq!(t, before);
    t.report_result(TableId(0), &win(0, 2), 2).unwrap();
    assert_eq!(t.phase(), Phase::Finished);
    let before = t.clone();
    assert_eq!(t.join(pid(5), 1500.0, 3).unwrap_err().code(), "closed");
    assert_eq!(
        t.report_result(TableId(0), &win(0, 2), 3)
            .unwrap_err()
            .code(),
        "table_closed"
    );
    assert_eq!(t.withdraw(pid(0), 3).unwrap_err().code(), "tournament_over");
    assert_eq!(t, before);
}

#[test]
fn bad_configs_are_refused() {
    let code = |c, range| Tournament::new(c, range).unwrap_err().code();
    assert_eq!(code(swiss(0, 2, 2, 0), (2, 2)), "bad_config");
    assert_eq!(code(swiss(3, 3, 3, 0), (2, 2)), "bad_config");
    assert_eq!(code(swiss(3, 4, 5, 0), (2, 5)), "bad_config");
    assert_eq!(code(swiss(3, 6, 6, 0), (2, 6)), "bad_config");
    assert_eq!(code(arena(1000, 1000, 2, 0), (2, 2)), "bad_config");
}

#[test]
fn the_whole_state_survives_json_and_goes_on_alike() {
    let mut g = Gen(3);
    let mut t = Tournament::new(swiss(4, 3, 2, 8), (2, 5)).unwrap();
    for i in 0..11 {
        t.join(pid(i), 1234.5678 + i as f64 * 0.1, 0).unwrap();
    }
    t.start(1).unwrap();
    let mut copy: Tournament = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(copy, t);
    let mut now = 1;
    while t.phase() == Phase::Running {
        now += 1;
        let table = open_tables(&t)[0];
        let o = random_outcome(&mut g, t.table(table).unwrap().players.len());
        assert_eq!(
            t.report_result(table, &o, now),
            copy.report_result(table, &o, now)
        );
        copy = serde_json::from_str(&serde_json::to_string(&copy).unwrap()).unwrap();
    }
    assert_eq!(copy, t);
}

#[test]
fn arena_streak_bonus_doubles_wins_after_two_in_a_row() {
    let mut t = Tournament::new(arena(600_000, 60_000, 2, 4), (2, 2)).unwrap();
    t.join(pid(0), 1500.0, 0).unwrap();
    t.join(pid(1), 1500.0, 0).unwrap();
    t.start(0).unwrap();
    let hero = pid(0);
    let mut gained = Vec::new();
    // Win, win, win, draw, win: 2, 2, 4 (on fire), 2 (a draw on fire, ends it), 2.
    for (k, result) in ["w", "w", "w", "d", "w"].iter().enumerate() {
        let table = t
            .player(hero)
            .unwrap()
            .table
            .expect("paired at once (only two)");
        let seat = t
            .table(table)
            .unwrap()
            .players
            .iter()
            .position(|&p| p == hero)
            .unwrap();
        let o = if *result == "w" {
            win(seat, 2)
        } else {
            Outcome {
                winners: vec![],
                scores: vec![1, 1],
            }
        };
        let fx = t.report_result(table, &o, 1000 * (k as u64 + 1)).unwrap();
        let Effect::TableFinished { points, .. } = &fx[0] else {
            panic!()
        };
        gained.push(points[seat]);
    }
    assert_eq!(gained, vec![2, 2, 4, 2, 2]);
    assert_eq!(t.player(hero).unwrap().points, 12);
    assert_eq!(t.standings()[0].player, hero);
    assert_eq!(t.standings()[0].streak, 1);
}

#[test]
fn arena_of_ten_minutes_with_game_lengths() {
    let mut g = Gen(99);
    let (duration, stop) = (600_000, 90_000);
    let mut t = Tournament::new(arena(duration, stop, 2, 6), (2, 2)).unwrap();
    for i in 0..9 {
        t.join(pid(i), 1400.0 + 25.0 * i as f64, 0).unwrap();
    }
    let mut ends: Vec<(TableId, u64)> = Vec::new();
    let schedule = |fx: &[Effect], now: u64, g: &mut Gen, ends: &mut Vec<(TableId, u64)>| {
        for e in fx {
            if let Effect::CreateTable { table, .. } = e {
                assert!(now < duration - stop, "paired after the cutoff");
                ends.push((*table, now + 30_000 + g.below(90_000)));
            }
        }
    };
    let fx = t.start(0).unwrap();
    schedule(&fx, 0, &mut g, &mut ends);
    assert_eq!(ends.len(), 4, "nine players: four tables, one waits");
    let mut last = None;
    let mut now = 0;
    while t.phase() == Phase::Running {
        now += 1000;
        let due: Vec<_> = ends.iter().filter(|e| e.1 <= now).copied().collect();
        ends.retain(|e| e.1 > now);
        for (table, _) in due {
            let o = random_outcome(&mut g, 2);
            let fx = t.report_result(table, &o, now).unwrap();
            schedule(&fx, now, &mut g, &mut ends);
        }
        let fx = t.tick(now);
        schedule(&fx, now, &mut g, &mut ends);
        if let Some(Effect::Over { .. }) = fx.last() {
            last = fx.last().cloned();
        }
        // Nobody sits at two tables.
        for p in t.players() {
            let n = t
                .tables()
                .iter()
                .filter(|x| x.state == TableState::Playing && x.players.contains(&p.id))
                .count();
            assert!(n <= 1);
            assert_eq!(n == 1, p.table.is_some());
        }
    }
    assert_eq!(now, duration);
    let Some(Effect::Over {
        standings,
        uncounted,
        ..
    }) = last
    else {
        panic!("no end")
    };
    // Games that were still on at the end do not count.
    for id in &uncounted {
        assert_eq!(t.table(*id).unwrap().state, TableState::Uncounted);
    }
    let games: u32 = standings.iter().map(|s| s.games).sum();
    let counted = t
        .tables()
        .iter()
        .filter(|x| matches!(x.state, TableState::Finished { .. }))
        .count() as u32;
    assert_eq!(games, 2 * counted);
    assert!(
        counted >= 9,
        "ten minutes of games of 30 to 120 s: {counted}"
    );
    for w in standings.windows(2) {
        assert!(
            (w[0].points, w[0].performance, w[0].games)
                >= (w[1].points, w[1].performance, w[1].games)
        );
    }
    assert_eq!(t.tick(now + 1), vec![]);
}

#[test]
fn arena_avoids_an_immediate_rematch_when_someone_else_waits() {
    let mut t = Tournament::new(arena(600_000, 60_000, 2, 4), (2, 2)).unwrap();
    for i in 0..5 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(0).unwrap();
    assert_eq!(t.tables().len(), 2, "five players: two tables, one waits");
    let waiting = t.players().iter().find(|p| p.table.is_none()).unwrap().id;
    let first = t.table(TableId(0)).unwrap().players.clone();
    t.report_result(TableId(0), &win(0, 2), 10).unwrap();
    // Three are free: the two who just met, and the one who waited. The two do not meet
    // again; the winner (more points) meets the one who waited.
    let fresh = &t.table(TableId(2)).unwrap().players;
    assert!(
        fresh.contains(&first[0]) && fresh.contains(&waiting),
        "{fresh:?}"
    );
    assert_eq!(t.player(first[1]).unwrap().table, None);
    // Alone with their last opponent, a player may meet them again at once.
    let mut t = Tournament::new(arena(600_000, 60_000, 2, 4), (2, 2)).unwrap();
    t.join(pid(0), 1500.0, 0).unwrap();
    t.join(pid(1), 1500.0, 0).unwrap();
    t.start(0).unwrap();
    t.report_result(TableId(0), &win(0, 2), 10).unwrap();
    assert_eq!(t.tables().len(), 2);
}

#[test]
fn arena_late_join_pause_and_cutoff() {
    let mut t = Tournament::new(arena(600_000, 60_000, 2, 4), (2, 2)).unwrap();
    t.join(pid(0), 1500.0, 0).unwrap();
    t.start(0).unwrap();
    assert!(t.tables().is_empty(), "one player waits");
    let fx = t.join(pid(1), 1500.0, 5_000).unwrap();
    assert!(
        matches!(fx[1], Effect::CreateTable { .. }),
        "a late joiner is paired at once"
    );
    // Absent: a loss and a pause; joining again resumes.
    let fx = t.absent(pid(1), TableId(0), 6_000).unwrap();
    assert!(matches!(&fx[0], Effect::TableFinished { .. }));
    assert_eq!(t.player(pid(1)).unwrap().status, PlayerStatus::Paused);
    assert_eq!(t.tables().len(), 1, "nobody to pair with the one left");
    let fx = t.join(pid(1), 1500.0, 7_000).unwrap();
    assert_eq!(fx.len(), 2);
    t.report_result(TableId(1), &win(0, 2), 541_000).unwrap();
    assert_eq!(t.tables().len(), 2, "no pairing after the cutoff");
    assert_eq!(
        t.join(pid(2), 1500.0, 545_000).unwrap_err().code(),
        "closed"
    );
    assert!(t.tick(599_999).is_empty());
    assert!(matches!(t.tick(600_000)[0], Effect::Over { .. }));
}

#[test]
fn a_solitaire_swiss_seats_everyone_alone_and_a_win_is_a_point() {
    let mut t = Tournament::new(swiss(2, 1, 1, 3), (1, 4)).unwrap();
    for i in 0..3 {
        t.join(pid(i), 1500.0, 0).unwrap();
    }
    t.start(1).unwrap();
    assert_eq!(t.tables().len(), 3);
    assert!(t.tables().iter().all(|x| x.players.len() == 1));
    let lost = Outcome {
        winners: vec![],
        scores: vec![3],
    };
    t.report_result(TableId(0), &win(0, 1), 2).unwrap();
    t.report_result(TableId(1), &lost, 2).unwrap();
    t.absent(t.table(TableId(2)).unwrap().players[0], TableId(2), 3)
        .unwrap();
    let points: Vec<u32> = (0..3)
        .map(|i| {
            t.player(t.table(TableId(i)).unwrap().players[0])
                .unwrap()
                .points
        })
        .collect();
    assert_eq!(points, vec![24, 0, 0]);
    assert_eq!(t.round(), 2);
}

/// The invariant of ARCHITECTURE.md: the crate is pure, none of the I/O side's crates
/// among its dependencies.
#[test]
fn depends_on_no_tokio_sqlx_or_axum() {
    let manifest = include_str!("../Cargo.toml");
    for name in ["tokio", "sqlx", "axum", "getrandom"] {
        assert!(
            !manifest.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} in Cargo.toml"
        );
    }
}

#[test]
fn a_large_swiss_stays_quick_and_repeat_free() {
    for (k, players) in [(2, 200), (4, 150)] {
        let mut g = Gen(5);
        let (t, log) = run_swiss(swiss(9, k, k, 77), players, &mut g, 0, 0);
        assert_eq!(t.round(), 9);
        let mut pairs = std::collections::BTreeSet::new();
        for x in t.tables() {
            for i in 0..x.players.len() {
                for j in i + 1..x.players.len() {
                    let p = (
                        x.players[i].min(x.players[j]),
                        x.players[i].max(x.players[j]),
                    );
                    assert!(pairs.insert(p), "a repeat among {players} at tables of {k}");
                }
            }
        }
        check_standings(&t, &log);
    }
}

#[test]
fn a_log_of_inputs_replays_to_the_same_tournament() {
    use tournament::Input;
    let mut g = Gen(21);
    let mut t = Tournament::new(swiss(3, 3, 2, 4), (2, 5)).unwrap();
    let mut log = Vec::new();
    let feed = |t: &mut Tournament, i: Input, log: &mut Vec<Input>| {
        let fx = t.apply(&i);
        log.push(i);
        fx
    };
    for n in 0..8 {
        feed(
            &mut t,
            Input::Join {
                player: pid(n),
                rating: 1500.5 + n as f64,
                at: 0,
            },
            &mut log,
        )
        .unwrap();
    }
    feed(&mut t, Input::Start { at: 1 }, &mut log).unwrap();
    feed(
        &mut t,
        Input::Withdraw {
            player: pid(42),
            at: 1,
        },
        &mut log,
    )
    .unwrap_err();
    let mut now = 1;
    while t.phase() == Phase::Running {
        now += 1;
        let table = open_tables(&t)[0];
        let seats = t.table(table).unwrap().players.clone();
        let input = if g.chance(20) {
            Input::Absent {
                player: seats[0],
                table,
                at: now,
            }
        } else {
            Input::Result {
                table,
                outcome: random_outcome(&mut g, seats.len()),
                at: now,
            }
        };
        let _ = feed(&mut t, input, &mut log);
    }
    let text = serde_json::to_string(&log).unwrap();
    let back: Vec<Input> = serde_json::from_str(&text).unwrap();
    let mut replay = Tournament::new(swiss(3, 3, 2, 4), (2, 5)).unwrap();
    for i in &back {
        let _ = replay.apply(i);
    }
    assert_eq!(replay, t);
}

/// Every refusal has a message for people besides its code (the server sends both).
#[test]
fn every_refusal_says_what_is_wrong_in_words() {
    use tournament::TournamentError as E;
    let all = [
        E::BadConfig("x".into()),
        E::BadRating,
        E::AlreadyJoined,
        E::NotAMember,
        E::NotActive,
        E::Closed,
        E::AlreadyStarted,
        E::TooFewPlayers,
        E::TournamentOver,
        E::UnknownTable,
        E::TableClosed,
        E::NotAtTable,
        E::AlreadyAbsent,
        E::BadOutcome("y".into()),
    ];
    for e in all {
        let said = e.to_string();
        assert_ne!(said, e.code(), "{e:?}");
        assert!(said.contains(' '), "{e:?}: {said}");
    }
}

/// Three players at tables of two: whoever waited is seated at the next table, every time
/// (a black-box walk saw the two leaders meet again and again while the third waited).
#[test]
fn an_arena_of_three_seats_whoever_waited() {
    let mut t = Tournament::new(arena(600_000, 60_000, 2, 9), (2, 2)).unwrap();
    for i in 0..3 {
        t.join(pid(i), 1500.0 + i as f64, 0).unwrap();
    }
    t.start(0).unwrap();
    let mut now = 10;
    for game in 0..12 {
        let open: Vec<TableId> = open_tables(&t);
        assert_eq!(open.len(), 1, "game {game}");
        let waiting: Vec<_> = t
            .players()
            .iter()
            .filter(|p| p.table.is_none())
            .map(|p| p.id)
            .collect();
        assert_eq!(waiting.len(), 1, "game {game}");
        // Seat 0 wins every game, then a draw now and then.
        let outcome = if game % 3 == 2 {
            Outcome {
                winners: vec![],
                scores: vec![1, 1],
            }
        } else {
            win(0, 2)
        };
        t.report_result(open[0], &outcome, now).unwrap();
        now += 10;
        let next = open_tables(&t);
        assert_eq!(next.len(), 1, "game {game}");
        let seated = &t.table(next[0]).unwrap().players;
        assert!(
            seated.contains(&waiting[0]),
            "game {game}: {:?} waited, and {seated:?} were seated",
            waiting[0]
        );
    }
}
