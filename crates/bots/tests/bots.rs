//! Every game at every level plays seeded matches to the end without an illegal move, and
//! a bot's decision depends on its view alone: two different deals of the hidden cards
//! behind the same view give the same decision under the same seed.

use bots::sim::play_match;
use bots::{BotGame, BotRng, Budget, Level, decide};
use game_core::{Game, Phase, Viewer};

/// Small but real search, so the hard level runs its sampler in these tests.
const HARD: Budget = Budget {
    time: None,
    samples: Some(2),
};

fn all_levels_finish<G: BotGame>(options: &G::Options, players: usize, matches: u64) {
    for level in Level::ALL {
        for m in 0..matches {
            // Mixed tables too: the level under test against an easy bot.
            let mut levels = vec![level; players];
            if players > 1 && m % 2 == 1 {
                levels[0] = Level::Easy;
            }
            let r = play_match::<G>(options, &levels, m, HARD)
                .unwrap_or_else(|e| panic!("{} {level:?} match {m}: {e}", G::KIND));
            assert_eq!(r.scores.len(), players);
            assert!(r.actions > 0);
        }
    }
}

#[test]
fn trump_every_level_finishes() {
    all_levels_finish::<trump::Trump>(&trump::Options { target: 21 }, 2, 4);
    all_levels_finish::<trump::Trump>(&trump::Options { target: 21 }, 4, 2);
}

#[test]
fn nachos_every_level_finishes() {
    all_levels_finish::<nachos::NachosMatch>(&Default::default(), 2, 3);
    all_levels_finish::<nachos::NachosMatch>(&Default::default(), 5, 1);
}

#[test]
fn fibfib_every_level_finishes() {
    all_levels_finish::<fibfib::FibFib>(&Default::default(), 2, 6);
}

#[test]
fn rummy_and_solitaire_every_level_finish() {
    for target in [21, 13, 8] {
        let o = rummy::Options {
            target,
            ..Default::default()
        };
        all_levels_finish::<rummy::Rummy>(&o, 2, 2);
        all_levels_finish::<rummy::Rummy>(&o, 1, 2);
    }
    all_levels_finish::<rummy::Rummy>(&Default::default(), 4, 1);
}

/// Plays `steps` easy moves of a seeded match and returns it mid-round.
fn midgame<G: BotGame>(options: &G::Options, players: usize, steps: u64) -> G {
    let mut g = G::new_match(options, players).unwrap();
    g.start_round(&bots::sim::deal_seed(7, 1)).unwrap();
    for i in 0..steps {
        if g.phase() != Phase::Playing {
            break;
        }
        let seat = g.to_act()[0];
        let view = g.view_for(Viewer::Player(seat));
        let a = decide::<G>(&view, Level::Easy, i, HARD).unwrap();
        g.apply(seat, &a).unwrap();
    }
    g
}

/// The sampler rebuilds states whose view for the bot's seat is exactly the real one, yet
/// whose hidden cards differ; every level decides the same on each of them.
fn hidden_cards_do_not_matter<G: BotGame>(real: &G)
where
    G::View: PartialEq,
{
    let seat = real.to_act()[0];
    let view = real.view_for(Viewer::Player(seat));
    let mut rng = BotRng::new(1);
    let a = G::determinize(&view, &mut rng).expect("a sample");
    let b = G::determinize(&view, &mut rng).expect("a sample");
    assert_eq!(
        a.view_for(Viewer::Player(seat)),
        view,
        "sample a shows another view"
    );
    assert_eq!(
        b.view_for(Viewer::Player(seat)),
        view,
        "sample b shows another view"
    );
    let other = (seat + 1) % real.players();
    assert!(
        a.view_for(Viewer::Player(other)) != b.view_for(Viewer::Player(other))
            || real.view_for(Viewer::Player(other)) != a.view_for(Viewer::Player(other)),
        "the samples should differ in what the bot cannot see"
    );
    for level in Level::ALL {
        for seed in 0..3 {
            let from = |g: &G| decide::<G>(&g.view_for(Viewer::Player(seat)), level, seed, HARD);
            let d = from(real);
            assert_eq!(d, from(&a), "{level:?} seed {seed}");
            assert_eq!(d, from(&b), "{level:?} seed {seed}");
        }
    }
}

#[test]
fn trump_decisions_ignore_hidden_cards() {
    for steps in [0, 5, 17, 30] {
        let g = midgame::<trump::Trump>(&Default::default(), 3, steps);
        hidden_cards_do_not_matter(&g);
    }
}

#[test]
fn nachos_decisions_ignore_hidden_cards() {
    for steps in [0, 4, 13, 20] {
        let g = midgame::<nachos::NachosMatch>(&Default::default(), 3, steps);
        hidden_cards_do_not_matter(&g);
    }
}

#[test]
fn fibfib_decisions_ignore_hidden_cards() {
    for steps in [0, 3, 10, 25] {
        let g = midgame::<fibfib::FibFib>(&Default::default(), 2, steps);
        if g.phase() == Phase::Playing {
            hidden_cards_do_not_matter(&g);
        }
    }
}

/// Rummy's view has no `PartialEq` (its debug form is compared instead).
#[test]
fn rummy_decisions_ignore_hidden_cards() {
    for (players, target, steps) in [(2, 21, 0), (2, 21, 9), (3, 13, 20), (1, 8, 12)] {
        let o = rummy::Options {
            target,
            ..Default::default()
        };
        let real = midgame::<rummy::Rummy>(&o, players, steps);
        if real.phase() != Phase::Playing {
            continue;
        }
        let seat = real.to_act()[0];
        let view = real.view_for(Viewer::Player(seat));
        let json = |g: &rummy::Rummy| format!("{:?}", g.view_for(Viewer::Player(seat)));
        let mut rng = BotRng::new(3);
        let a = rummy::Rummy::determinize(&view, &mut rng).expect("a sample");
        let b = rummy::Rummy::determinize(&view, &mut rng).expect("a sample");
        assert_eq!(json(&a), json(&real));
        assert_eq!(json(&b), json(&real));
        for level in Level::ALL {
            for seed in 0..3 {
                let from = |g: &rummy::Rummy| {
                    decide::<rummy::Rummy>(&g.view_for(Viewer::Player(seat)), level, seed, HARD)
                };
                let d = from(&real);
                assert_eq!(d, from(&a), "{level:?} seed {seed}");
                assert_eq!(d, from(&b), "{level:?} seed {seed}");
            }
        }
    }
}

/// Hard is a search, not a coin: from a fixed position with a clear best move it finds it
/// more often than easy does. (The simulator measures the real margins; this guards the
/// search against being wired backwards.)
#[test]
fn hard_beats_easy_at_nachos_in_a_short_run() {
    let budget = Budget::samples(4);
    let results = bots::sim::run::<nachos::NachosMatch>(
        &Default::default(),
        &[Level::Hard, Level::Easy],
        &(0..40).collect::<Vec<_>>(),
        budget,
        2,
    )
    .unwrap();
    let t = bots::sim::by_level(&results);
    let hard = &t.iter().find(|(l, _)| *l == Level::Hard).unwrap().1;
    assert!(
        hard.win_rate() > 0.6,
        "hard won only {:.2}",
        hard.win_rate()
    );
}

/// R-18 off turn: the normal bot never ends its turn leaving a rearrangement it wants
/// (it makes them on its turn, so asking it off turn finds nothing), while the hard bot,
/// whose search may prefer to discard first, sometimes does; the simulator then plays
/// those moves off turn, every one legal, and only ones that complete a set or make room
/// for a hand card. Counts over seeded matches, which reproduce exactly.
#[test]
fn rummy_bots_rearrange_off_turn_only_when_it_helps() {
    let mut hard_off_turn = 0;
    for target in [21u8, 13, 8] {
        let o = rummy::Options {
            target,
            ..Default::default()
        };
        for m in 0..3u64 {
            let normal = play_match::<rummy::Rummy>(&o, &[Level::Normal; 2], m, HARD).unwrap();
            assert_eq!(normal.off_turn, 0, "normal leaves nothing for off turn");
            let easy = play_match::<rummy::Rummy>(&o, &[Level::Easy; 2], m, HARD).unwrap();
            assert_eq!(easy.off_turn, 0, "easy never acts off turn");
            let hard = play_match::<rummy::Rummy>(&o, &[Level::Hard; 2], m, HARD).unwrap();
            hard_off_turn += hard.off_turn;
        }
    }
    eprintln!("hard: {hard_off_turn} off-turn moves in 9 matches");
    assert!(
        hard_off_turn > 0,
        "hard bots found no off-turn move in 9 matches"
    );

    // Each off-turn choice, checked from the position itself: a legal R-18 move that
    // makes a set add up to the target (or lowers a wild that a hand card then fills).
    let mut g = midgame::<rummy::Rummy>(&Default::default(), 2, 0);
    let mut checked = 0;
    for i in 0..1500u64 {
        if g.phase() != Phase::Playing {
            g = rummy::Rummy::new_match(&Default::default(), 2).unwrap();
            g.start_round(&bots::sim::deal_seed(i, 1)).unwrap();
        }
        let seat = g.to_act()[0];
        let other = 1 - seat;
        let view = g.view_for(Viewer::Player(other));
        if let Some(a) = bots::decide_off_turn::<rummy::Rummy>(&view, Level::Hard) {
            let before = g.view_for(Viewer::Player(other));
            g.apply(other, &a).expect("off-turn move is legal");
            let after = g.view_for(Viewer::Player(other));
            let complete = |v: &rummy::View| {
                v.tables[other]
                    .sets
                    .iter()
                    .filter(|s| s.complete && !s.closed)
                    .count()
            };
            let lowered = matches!(a, rummy::Action::SetWildNumber { .. })
                && complete(&after) == complete(&before);
            assert!(
                complete(&after) > complete(&before) || lowered,
                "{a:?} completes a set"
            );
            assert_eq!(g.to_act(), vec![seat], "the player on turn is undisturbed");
            checked += 1;
            continue;
        }
        let view = g.view_for(Viewer::Player(seat));
        let a = decide::<rummy::Rummy>(&view, Level::Hard, i, HARD).unwrap();
        g.apply(seat, &a).unwrap();
    }
    eprintln!("{checked} off-turn moves checked");
    assert!(checked > 0, "no off-turn move to check");
}
