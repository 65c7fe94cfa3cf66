//! Scenario tests per ruling (R-40..R-47) and per play of the rulebook's "Legal plays"
//! list, wire-format tests, and property tests over thousands of seeded random games.

use game_core::{DeckRng, Game, Phase, RuleError, Seat, Seed, Viewer, codes};

use crate::*;

// ---------- helpers ----------

fn k(r: Rank, s: Suit) -> Card {
    Card::deck()
        .into_iter()
        .find(|c| c.rank() == r && c.suit() == Some(s))
        .expect("card exists")
}
fn joker(i: u8) -> Card {
    Card::from_id(i).unwrap()
}
fn four(i: u8) -> Card {
    Card::from_id(22 + i).unwrap()
}
fn six(i: u8) -> Card {
    Card::from_id(24 + i).unwrap()
}
use Rank::{Eight, Five, Seven, Three, Two};
use Suit::{Clubs, Diamonds, Hearts, Spades};

fn run(card: Card, column: usize, side: usize) -> Action {
    Action::PlayRunCard {
        card,
        column,
        side,
        value: None,
    }
}
fn six_run(card: Card, column: usize, side: usize, value: u32) -> Action {
    Action::PlayRunCard {
        card,
        column,
        side,
        value: Some(value),
    }
}
fn jk(card: Card) -> Action {
    Action::PlayJoker { card, bonus: None }
}

/// Seat 0 holds `hand0`, seat 1 holds `hand1`, the pile (top first) is `pile`; seat 0 is on
/// turn with an empty table.
fn game(hand0: Vec<Card>, hand1: Vec<Card>, pile: Vec<Card>) -> FibFib {
    FibFib::from_parts([hand0, hand1], pile, Vec::new(), 0)
}

/// Seat 0 plays `a`, then (if the game goes on) seat 1 draws, so seat 0 is on turn again.
fn p0(g: &mut FibFib, a: Action) {
    g.apply(0, &a)
        .unwrap_or_else(|e| panic!("{a:?} refused: {e}"));
    if g.phase() == Phase::Playing {
        g.apply(1, &Action::Draw).expect("seat 1 draws");
    }
}

/// Applies and expects refusal with `code`, state unchanged (R-3).
fn refused(g: &mut FibFib, seat: Seat, a: Action, code: &str) -> RuleError {
    let before = g.clone();
    let e = g.apply(seat, &a).expect_err("must be refused");
    assert_eq!(e.code, code, "{a:?}: {e}");
    assert_eq!(*g, before, "state changed by a refused action");
    e
}

/// A long pile of cards no test cares about.
fn filler() -> Vec<Card> {
    vec![
        k(Seven, Clubs),
        k(Seven, Diamonds),
        k(Eight, Clubs),
        k(Eight, Diamonds),
        k(Seven, Clubs),
        k(Eight, Clubs),
        k(Seven, Diamonds),
        k(Eight, Diamonds),
    ]
}

fn legal(g: &FibFib, seat: Seat) -> Vec<Action> {
    g.legal_actions_for(seat)
}

// ---------- R-40 deck ----------

#[test]
fn r40_deck_of_26() {
    let deck = Card::deck();
    assert_eq!(deck.len(), 26);
    let count = |r: Rank| deck.iter().filter(|c| c.rank() == r).count();
    assert_eq!(count(Rank::Joker), 2);
    for r in [Two, Three, Five, Seven, Eight] {
        assert_eq!(count(r), 4);
        for s in [Spades, Hearts, Diamonds, Clubs] {
            assert_eq!(
                deck.iter()
                    .filter(|c| c.rank() == r && c.suit() == Some(s))
                    .count(),
                1
            );
        }
    }
    assert_eq!(count(Rank::Four), 2);
    assert_eq!(count(Rank::Six), 2);
    for c in &deck {
        assert_eq!(c.suit().is_none(), c.rank() == Rank::Joker);
        let back: Card = serde_json::from_value(serde_json::to_value(c).unwrap()).unwrap();
        assert_eq!(back, *c);
    }
    // R-40: the 4s and 6s show suits (without effect): 4 of spades and hearts, 6 of
    // diamonds and clubs. Messages name cards as rank, suit letter and id.
    assert_eq!(
        (four(0).suit(), four(1).suit()),
        (Some(Spades), Some(Hearts))
    );
    assert_eq!(
        (six(0).suit(), six(1).suit()),
        (Some(Diamonds), Some(Clubs))
    );
    assert_eq!(format!("{:?}", k(Seven, Hearts)), "7h#10");
    assert_eq!(format!("{:?} {:?}", joker(1), six(1)), "Jk#1 6c#25");
}

// ---------- R-41 deal and turn ----------

#[test]
fn r41_five_each_non_dealer_first_draw_ends_turn() {
    let mut dealers = [0; 2];
    for i in 0..200 {
        let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
        assert_eq!(g.phase(), Phase::AwaitingRound);
        let ev = g.start_round(&Seed::from_u64(i)).unwrap();
        let Event::RoundStarted { dealer, first, .. } = ev[0] else {
            panic!("{ev:?}")
        };
        dealers[dealer] += 1;
        assert_eq!(first, 1 - dealer, "non-dealer plays first");
        assert_eq!(g.to_act(), vec![first]);
        let v = g.view_for(Viewer::Spectator);
        assert_eq!(v.hand_counts, vec![5, 5]);
        assert_eq!(v.draw_pile, 16);
        assert_eq!(v.dealer, Some(dealer));
        // R-1: the recorded draw is decided by its last pair, higher face deals.
        let rec = g.deal_record();
        let pairs = rec["dealer_draw"].as_array().unwrap();
        let last: [Card; 2] = serde_json::from_value(pairs.last().unwrap().clone()).unwrap();
        let (a, b) = (last[0].rank().face(), last[1].rank().face());
        assert_ne!(a, b);
        assert_eq!(dealer, if a > b { 0 } else { 1 });
        // Drawing is a whole turn.
        g.apply(first, &Action::Draw).unwrap();
        assert_eq!(g.to_act(), vec![dealer]);
        assert_eq!(g.view_for(Viewer::Spectator).hand_counts[first], 6);
        assert_eq!(g.view_for(Viewer::Spectator).draw_pile, 15);
    }
    assert!(dealers[0] > 50 && dealers[1] > 50, "{dealers:?}");
}

#[test]
fn r41_draw_needs_a_non_empty_pile() {
    let mut g = game(vec![k(Five, Spades)], vec![k(Five, Hearts)], vec![]);
    refused(&mut g, 0, Action::Draw, DRAW_PILE_EMPTY);
    assert!(!legal(&g, 0).contains(&Action::Draw));
}

// ---------- Legal plays, bullet 1, and R-42 jokers ----------

#[test]
fn legal_plays_empty_table_only_a_joker() {
    let hand = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        four(0),
        six(0),
        k(Eight, Spades),
    ];
    let g = game(hand, vec![k(Two, Hearts)], filler());
    for a in legal(&g, 0) {
        assert!(
            matches!(a, Action::Draw | Action::PlayJoker { .. }),
            "{a:?} on an empty table"
        );
    }
    let mut g = g;
    refused(&mut g, 0, run(k(Two, Spades), 0, 0), NO_SUCH_COLUMN);
    refused(
        &mut g,
        0,
        Action::PlaySmallWild {
            card: four(0),
            replace: k(Two, Hearts),
        },
        NOT_ON_TABLE,
    );
}

#[test]
fn r42_joker_any_time_with_optional_bonus() {
    let hand = vec![
        joker(0),
        joker(1),
        k(Two, Spades),
        k(Five, Spades),
        six(0),
        k(Three, Hearts),
    ];
    let mut g = game(hand, vec![k(Two, Hearts)], filler());
    // Joker without bonus on an empty table.
    p0(&mut g, jk(joker(0)));
    assert_eq!(g.columns.len(), 1);
    assert_eq!(g.columns[0].base, Some(joker(0)));
    assert_eq!(g.columns[0].next(0), Next::First);
    assert_eq!(g.columns[0].next(1), Next::First);
    // A second joker on a table that already has a column (R-42), bonus too high refused.
    let bonus = |card, side, value| Action::PlayJoker {
        card: joker(1),
        bonus: Some(Bonus { card, side, value }),
    };
    refused(&mut g, 0, bonus(k(Five, Spades), 1, None), BONUS_TOO_HIGH);
    refused(&mut g, 0, bonus(six(0), 1, Some(4)), BONUS_TOO_HIGH);
    refused(&mut g, 0, bonus(six(0), 1, None), VALUE_REQUIRED);
    refused(&mut g, 0, bonus(k(Two, Spades), 2, None), BAD_SIDE);
    refused(&mut g, 0, bonus(joker(1), 1, None), codes::CARD_NOT_IN_HAND);
    refused(
        &mut g,
        0,
        bonus(k(Two, Hearts), 1, None),
        codes::CARD_NOT_IN_HAND,
    );
    refused(&mut g, 0, jk(k(Two, Spades)), NOT_A_JOKER);
    // The bonus happens in the same turn: seat 1 is on turn afterwards. The event names
    // the new column: the second one.
    let ev = g.apply(0, &bonus(k(Two, Spades), 1, None)).unwrap();
    assert_eq!(
        ev[0],
        Event::JokerPlayed {
            seat: 0,
            card: joker(1),
            column: 1,
            bonus: Some(Bonus {
                card: k(Two, Spades),
                side: 1,
                value: None
            })
        }
    );
    assert_eq!(g.to_act(), vec![1]);
    assert_eq!(g.columns.len(), 2);
    assert_eq!(
        g.columns[1].sides[1].run,
        vec![Placed {
            card: k(Two, Spades),
            value: 2
        }]
    );
    assert_eq!(g.columns[1].next(0), Next::First);
    assert_eq!(g.columns[1].next(1), Next::Second { after: 2 });
}

#[test]
fn r42_joker_bonus_six_counts_three_or_less() {
    let mut g = game(vec![joker(0), six(1), k(Two, Spades)], vec![], filler());
    let a = Action::PlayJoker {
        card: joker(0),
        bonus: Some(Bonus {
            card: six(1),
            side: 0,
            value: Some(0),
        }),
    };
    assert!(legal(&g, 0).contains(&a));
    g.apply(0, &a).unwrap();
    assert_eq!(g.columns[0].sides[0].run[0].value, 0);
}

// ---------- Legal plays, bullets 2-4 (first, second, sum) ----------

#[test]
fn legal_plays_first_card_two_or_three() {
    let hand = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        k(Seven, Spades),
        k(Eight, Spades),
    ];
    let mut g = game(hand, vec![], filler());
    p0(&mut g, jk(joker(0)));
    refused(&mut g, 0, run(k(Five, Spades), 0, 0), DOES_NOT_FIT);
    refused(&mut g, 0, run(k(Seven, Spades), 0, 0), DOES_NOT_FIT);
    refused(&mut g, 0, run(k(Eight, Spades), 0, 0), DOES_NOT_FIT);
    refused(&mut g, 0, run(k(Two, Spades), 1, 0), NO_SUCH_COLUMN);
    refused(&mut g, 0, run(k(Two, Spades), 0, 2), BAD_SIDE);
    refused(&mut g, 0, run(joker(0), 0, 0), codes::CARD_NOT_IN_HAND);
    let l = legal(&g, 0);
    assert!(l.contains(&run(k(Two, Spades), 0, 0)));
    assert!(l.contains(&run(k(Three, Spades), 0, 1)));
    assert!(!l.contains(&run(k(Five, Spades), 0, 0)));
    p0(&mut g, run(k(Two, Spades), 0, 0));
    p0(&mut g, run(k(Three, Spades), 0, 1));
    assert_eq!(g.columns[0].next(0), Next::Second { after: 2 });
    assert_eq!(g.columns[0].next(1), Next::Second { after: 3 });
}

#[test]
fn legal_plays_second_card_three_or_five_not_three_after_three() {
    let hand = vec![
        joker(0),
        joker(1),
        k(Three, Spades),
        k(Three, Hearts),
        k(Three, Clubs),
        k(Five, Spades),
        k(Two, Spades),
        k(Two, Hearts),
        k(Five, Hearts),
        k(Eight, Hearts),
    ];
    let mut g = game(hand, vec![], [filler(), filler()].concat());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Three, Spades), 0, 0));
    // 3 after 3 is refused, with a message saying why.
    let e = refused(&mut g, 0, run(k(Three, Hearts), 0, 0), DOES_NOT_FIT);
    assert!(e.message.contains("after a 3"), "{e}");
    refused(&mut g, 0, run(k(Two, Spades), 0, 0), DOES_NOT_FIT);
    refused(&mut g, 0, run(k(Eight, Hearts), 0, 0), DOES_NOT_FIT);
    p0(&mut g, run(k(Five, Spades), 0, 0)); // 3-5
    // 2-3 and 2-5 on the other side and a new column.
    p0(&mut g, run(k(Two, Spades), 0, 1));
    p0(&mut g, run(k(Three, Hearts), 0, 1)); // 2-3
    p0(&mut g, jk(joker(1)));
    p0(&mut g, run(k(Two, Hearts), 1, 0));
    p0(&mut g, run(k(Five, Hearts), 1, 0)); // 2-5
    assert_eq!(g.columns[0].next(0), Next::Sum { value: 8 });
    assert_eq!(g.columns[0].next(1), Next::Sum { value: 5 });
    assert_eq!(g.columns[1].next(0), Next::Sum { value: 7 });
}

#[test]
fn legal_plays_example_2_3_5_8() {
    let hand = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        k(Eight, Hearts),
        k(Seven, Hearts),
        k(Two, Hearts),
    ];
    let mut g = game(hand, vec![], filler());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 1));
    p0(&mut g, run(k(Three, Spades), 0, 1));
    // Third card: exactly 2 + 3.
    refused(&mut g, 0, run(k(Eight, Hearts), 0, 1), DOES_NOT_FIT);
    refused(&mut g, 0, run(k(Two, Hearts), 0, 1), DOES_NOT_FIT);
    p0(&mut g, run(k(Five, Spades), 0, 1));
    // Fourth card: exactly 3 + 5.
    refused(&mut g, 0, run(k(Seven, Hearts), 0, 1), DOES_NOT_FIT);
    assert!(!g.view_for(Viewer::Player(0)).columns[0].sides[1].closed);
    p0(&mut g, run(k(Eight, Hearts), 0, 1));
    let values: Vec<u32> = g.columns[0].sides[1].run.iter().map(|p| p.value).collect();
    assert_eq!(values, vec![2, 3, 5, 8]);
    let v = g.view_for(Viewer::Player(0));
    assert!(v.columns[0].sides[1].closed, "top 8 closes the run (R-46)");
    assert_eq!(v.columns[0].sides[1].next, Next::Sum { value: 13 });
}

#[test]
fn legal_plays_example_2_3_6_six_as_five_then_eight() {
    let hand = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        six(0),
        six(1),
        k(Eight, Hearts),
    ];
    let mut g = game(hand, vec![], filler());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 0));
    p0(&mut g, run(k(Three, Spades), 0, 0));
    refused(&mut g, 0, six_run(six(0), 0, 0, 4), DOES_NOT_FIT);
    refused(&mut g, 0, six_run(six(0), 0, 0, 6), DOES_NOT_FIT);
    refused(&mut g, 0, run(six(0), 0, 0), VALUE_REQUIRED);
    let l = legal(&g, 0);
    let six_values: Vec<_> = l
        .iter()
        .filter_map(|a| match a {
            Action::PlayRunCard {
                card,
                column: 0,
                side: 0,
                value,
            } if *card == six(0) => *value,
            _ => None,
        })
        .collect();
    assert_eq!(six_values, vec![5], "a 6 as third card must be the sum");
    p0(&mut g, six_run(six(0), 0, 0, 5));
    assert_eq!(g.columns[0].next(0), Next::Sum { value: 8 });
    // The next card is an 8, "which could be represented by another 6".
    assert!(legal(&g, 0).contains(&run(k(Eight, Hearts), 0, 0)));
    assert!(legal(&g, 0).contains(&six_run(six(1), 0, 0, 8)));
    p0(&mut g, six_run(six(1), 0, 0, 8));
    assert_eq!(g.columns[0].next(0), Next::Sum { value: 13 });
    assert!(g.columns[0].sides[0].closed());
}

// ---------- R-44 big wild ----------

#[test]
fn r44_six_bounds_give_the_eleven_openings() {
    let mut combos = Vec::new();
    for a in 0..=10u32 {
        if !Next::First.fits(a) {
            continue;
        }
        for b in 0..=10u32 {
            if (Next::Second { after: a }).fits(b) {
                combos.push((a, b));
            }
        }
    }
    let expected = [
        (0, 3),
        (0, 4),
        (0, 5),
        (1, 3),
        (1, 4),
        (1, 5),
        (2, 3),
        (2, 4),
        (2, 5),
        (3, 4),
        (3, 5),
    ];
    assert_eq!(combos, expected);
}

#[test]
fn r44_six_as_run_card_declares_a_value() {
    let hand = vec![joker(0), six(0), six(1), k(Three, Spades), k(Five, Spades)];
    let mut g = game(hand, vec![], filler());
    p0(&mut g, jk(joker(0)));
    // First card: 0-3.
    refused(&mut g, 0, six_run(six(0), 0, 0, 4), DOES_NOT_FIT);
    refused(
        &mut g,
        0,
        Action::PlayRunCard {
            card: k(Three, Spades),
            column: 0,
            side: 0,
            value: Some(3),
        },
        VALUE_NOT_ALLOWED,
    );
    p0(&mut g, six_run(six(0), 0, 0, 3));
    // Second card: 3-5, but not 3 after a first 3.
    refused(&mut g, 0, six_run(six(1), 0, 0, 3), DOES_NOT_FIT);
    refused(&mut g, 0, six_run(six(1), 0, 0, 6), DOES_NOT_FIT);
    refused(&mut g, 0, run(k(Three, Spades), 0, 0), DOES_NOT_FIT);
    p0(&mut g, six_run(six(1), 0, 0, 4));
    assert_eq!(g.columns[0].next(0), Next::Sum { value: 7 });
    // Second card after a first 0 may be a 6 as 3.
    let mut g = game(vec![joker(0), six(0), six(1)], vec![], filler());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, six_run(six(0), 0, 1, 0));
    let l = legal(&g, 0);
    for v in 0..=9 {
        assert_eq!(l.contains(&six_run(six(1), 0, 1, v)), (3..=5).contains(&v));
    }
}

#[test]
fn r44_six_restart_only_affects_its_side() {
    let hand = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        k(Eight, Spades),
        six(0),
        k(Two, Hearts),
        k(Three, Hearts),
        k(Five, Hearts),
        six(1),
    ];
    let mut g = game(hand, vec![], [filler(), filler()].concat());
    p0(&mut g, jk(joker(0)));
    // A restart needs a run to go on the end of.
    refused(
        &mut g,
        0,
        Action::PlayRestart {
            card: six(0),
            column: 0,
            side: 0,
        },
        NOTHING_TO_RESTART,
    );
    refused(
        &mut g,
        0,
        Action::PlayRestart {
            card: k(Two, Spades),
            column: 0,
            side: 0,
        },
        NOT_A_SIX,
    );
    for c in [
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        k(Eight, Spades),
    ] {
        p0(&mut g, run(c, 0, 0));
    }
    p0(&mut g, run(k(Two, Hearts), 0, 1));
    let restart = Action::PlayRestart {
        card: six(0),
        column: 0,
        side: 0,
    };
    assert!(legal(&g, 0).contains(&restart));
    // The restart ends the turn without any bonus card.
    g.apply(0, &restart).unwrap();
    assert_eq!(g.to_act(), vec![1]);
    g.apply(1, &Action::Draw).unwrap();
    let s0 = &g.columns[0].sides[0];
    assert_eq!(s0.restart, Some(six(0)));
    assert_eq!(s0.ended.len(), 4);
    assert!(s0.run.is_empty());
    // The run continues from zero beyond the 6: a fresh opening.
    assert_eq!(g.columns[0].next(0), Next::First);
    // The other side is unaffected.
    assert_eq!(g.columns[0].next(1), Next::Second { after: 2 });
    p0(&mut g, run(k(Three, Hearts), 0, 0));
    p0(&mut g, run(k(Five, Hearts), 0, 1));
    assert_eq!(g.columns[0].next(0), Next::Second { after: 3 });
    assert_eq!(g.columns[0].next(1), Next::Sum { value: 7 });
    // A second restart on the same side keeps the first one under it.
    p0(
        &mut g,
        Action::PlayRestart {
            card: six(1),
            column: 0,
            side: 0,
        },
    );
    let s0 = &g.columns[0].sides[0];
    assert_eq!(s0.restart, Some(six(1)));
    assert_eq!(s0.ended.len(), 6);
    assert_eq!(
        s0.ended[4],
        Laid::Restart { card: six(0) },
        "the older restart lies under the newer"
    );
}

// ---------- R-43 small wild ----------

#[test]
fn r43_small_wild_replaces_run_and_base_cards() {
    let hand = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        four(0),
        four(1),
        k(Eight, Hearts),
    ];
    let mut g = game(hand, vec![k(Two, Hearts)], filler());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 0));
    p0(&mut g, run(k(Three, Spades), 0, 0));
    refused(
        &mut g,
        0,
        Action::PlaySmallWild {
            card: four(0),
            replace: k(Two, Hearts),
        },
        NOT_ON_TABLE,
    );
    refused(
        &mut g,
        0,
        Action::PlaySmallWild {
            card: k(Eight, Hearts),
            replace: k(Three, Spades),
        },
        NOT_A_FOUR,
    );
    refused(&mut g, 0, run(four(0), 0, 0), NOT_A_RUN_CARD);
    // Replace the 3 of the run: the 3 goes to hand, the 4 counts 3.
    p0(
        &mut g,
        Action::PlaySmallWild {
            card: four(0),
            replace: k(Three, Spades),
        },
    );
    assert!(g.hands[0].contains(&k(Three, Spades)));
    assert!(!g.hands[0].contains(&four(0)));
    assert_eq!(
        g.columns[0].sides[0].run[1],
        Placed {
            card: four(0),
            value: 3
        }
    );
    assert_eq!(g.columns[0].next(0), Next::Sum { value: 5 });
    // Replace the joker base: the 4 is now the base, the other opening still works.
    p0(
        &mut g,
        Action::PlaySmallWild {
            card: four(1),
            replace: joker(0),
        },
    );
    assert_eq!(g.columns[0].base, Some(four(1)));
    assert!(g.hands[0].contains(&joker(0)));
    assert_eq!(g.columns[0].next(1), Next::First);
    assert!(
        legal(&g, 0)
            .iter()
            .all(|a| !matches!(a, Action::PlaySmallWild { .. })),
        "no 4 left in hand"
    );
}

#[test]
fn r43_small_wild_replaces_a_reaction_card() {
    let mut g = reaction_setup();
    g.apply(
        1,
        &Action::PlayReaction {
            card: k(Seven, Spades),
        },
    )
    .unwrap();
    g.hands[0].push(four(0));
    let a = Action::PlaySmallWild {
        card: four(0),
        replace: k(Seven, Spades),
    };
    assert!(legal(&g, 0).contains(&a));
    g.apply(0, &a).unwrap();
    assert_eq!(
        g.columns[0].reactions,
        vec![Reaction {
            card: four(0),
            side: 1
        }]
    );
    assert!(g.hands[0].contains(&k(Seven, Spades)));
}

#[test]
fn r43_small_wild_replaces_a_restart_base_and_another_four() {
    let hand = vec![joker(0), k(Two, Spades), six(0), four(0), four(1)];
    let mut g = game(hand, vec![], filler());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 1));
    p0(
        &mut g,
        Action::PlayRestart {
            card: six(0),
            column: 0,
            side: 1,
        },
    );
    p0(
        &mut g,
        Action::PlaySmallWild {
            card: four(0),
            replace: six(0),
        },
    );
    assert_eq!(g.columns[0].sides[1].restart, Some(four(0)));
    assert_eq!(g.columns[0].next(1), Next::First);
    p0(
        &mut g,
        Action::PlaySmallWild {
            card: four(1),
            replace: four(0),
        },
    );
    assert_eq!(g.columns[0].sides[1].restart, Some(four(1)));
    assert!(g.hands[0].contains(&four(0)) && g.hands[0].contains(&six(0)));
}

// ---------- R-45 reaction ----------

fn reaction_setup() -> FibFib {
    // Seat 0 builds 2-3-5 and lays the 8 of spades; seat 1 holds the 7 of spades.
    let hand0 = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        k(Eight, Spades),
        k(Seven, Hearts),
        k(Eight, Hearts),
    ];
    let hand1 = vec![k(Seven, Spades), k(Seven, Diamonds)];
    let mut g = game(hand0, hand1, [filler(), filler()].concat());
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 1));
    p0(&mut g, run(k(Three, Spades), 0, 1));
    p0(&mut g, run(k(Five, Spades), 0, 1));
    g.apply(0, &run(k(Eight, Spades), 0, 1)).unwrap();
    g
}

#[test]
fn r45_reaction_on_the_very_next_turn() {
    let mut g = reaction_setup();
    let v = g.view_for(Viewer::Player(1));
    assert_eq!(
        v.reaction,
        Some(ReactionChance {
            seat: 1,
            laid: k(Eight, Spades),
            column: 0,
            side: 1
        })
    );
    assert!(v.can_react);
    assert!(!g.view_for(Viewer::Player(0)).can_react);
    let react = Action::PlayReaction {
        card: k(Seven, Spades),
    };
    assert!(v.legal.contains(&react));
    refused(
        &mut g,
        1,
        Action::PlayReaction {
            card: k(Seven, Diamonds),
        },
        WRONG_REACTION_CARD,
    );
    refused(
        &mut g,
        1,
        Action::PlayReaction {
            card: k(Seven, Hearts),
        },
        codes::CARD_NOT_IN_HAND,
    );
    let ev = g.apply(1, &react).unwrap();
    assert_eq!(
        ev[0],
        Event::ReactionPlayed {
            seat: 1,
            card: k(Seven, Spades),
            column: 0,
            side: 1
        }
    );
    // Beside the run, not in it: the run still needs 13.
    assert_eq!(
        g.columns[0].reactions,
        vec![Reaction {
            card: k(Seven, Spades),
            side: 1
        }]
    );
    assert_eq!(g.columns[0].next(1), Next::Sum { value: 13 });
    assert!(!g.hands[1].contains(&k(Seven, Spades)));
    assert!(g.hands[1].contains(&k(Seven, Diamonds)));
    assert_eq!(g.chance, None);
}

#[test]
fn r45_reaction_chance_lasts_one_turn_only() {
    let mut g = reaction_setup();
    g.apply(1, &Action::Draw).unwrap();
    g.apply(0, &Action::Draw).unwrap();
    refused(
        &mut g,
        1,
        Action::PlayReaction {
            card: k(Seven, Spades),
        },
        NO_REACTION_CHANCE,
    );
    // A player cannot react to their own 7/8 even holding the partner (7♥ and 8♥).
    let mut g = game(
        vec![
            joker(0),
            k(Two, Hearts),
            k(Five, Hearts),
            k(Seven, Hearts),
            k(Eight, Hearts),
        ],
        vec![],
        filler(),
    );
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Hearts), 0, 0));
    p0(&mut g, run(k(Five, Hearts), 0, 0));
    g.apply(0, &run(k(Seven, Hearts), 0, 0)).unwrap();
    g.apply(1, &Action::Draw).unwrap();
    refused(
        &mut g,
        0,
        Action::PlayReaction {
            card: k(Eight, Hearts),
        },
        NO_REACTION_CHANCE,
    );
    // A 6 declared as 8 is not an 8: no chance opens.
    let mut g = game(
        vec![joker(0), k(Three, Hearts), k(Five, Hearts), six(0)],
        vec![k(Seven, Spades)],
        filler(),
    );
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Three, Hearts), 0, 0));
    p0(&mut g, run(k(Five, Hearts), 0, 0));
    g.apply(0, &six_run(six(0), 0, 0, 8)).unwrap();
    assert_eq!(g.chance, None);
}

// ---------- R-46 empty draw pile ----------

#[test]
fn r46_refill_shuffles_closed_runs_bases_and_reactions() {
    // Column 0: side 0 = 2-3-5-8 (closed), side 1 = 2 (open). Column 1: unused joker.
    let hand0 = vec![
        joker(0),
        joker(1),
        k(Two, Spades),
        k(Three, Spades),
        k(Five, Spades),
        k(Eight, Spades),
        k(Two, Hearts),
        k(Three, Clubs),
    ];
    let hand1 = vec![k(Seven, Spades), k(Two, Diamonds)];
    let pile = vec![
        k(Eight, Clubs),
        k(Eight, Diamonds),
        k(Seven, Clubs),
        k(Five, Clubs),
        k(Five, Diamonds),
        k(Two, Clubs),
    ];
    let mut g = game(hand0, hand1, pile);
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 0));
    p0(&mut g, run(k(Three, Spades), 0, 0));
    p0(&mut g, run(k(Five, Spades), 0, 0));
    g.apply(0, &run(k(Eight, Spades), 0, 0)).unwrap();
    g.apply(
        1,
        &Action::PlayReaction {
            card: k(Seven, Spades),
        },
    )
    .unwrap();
    g.apply(0, &run(k(Two, Hearts), 0, 1)).unwrap();
    g.apply(1, &Action::Draw).unwrap(); // pile 6 -> 5 -> ... (p0 drew 4 times: 2 left)
    assert_eq!(g.pile.len(), 1);
    g.apply(0, &jk(joker(1))).unwrap();
    let ev = g.apply(1, &Action::Draw).unwrap();
    // 2-3-5-8 + reaction 7 + two jokers = 7 cards.
    assert_eq!(
        ev[1],
        Event::Refilled {
            cards: 7,
            columns: 1
        }
    );
    assert_eq!(g.pile.len(), 7);
    assert_eq!(g.columns.len(), 1, "the emptied joker column is gone");
    let col = &g.columns[0];
    assert_eq!(col.base, None);
    assert!(col.reactions.is_empty());
    assert!(col.sides[0].run.is_empty());
    assert_eq!(col.next(0), Next::Lost, "the unused opening is lost");
    assert_eq!(col.next(1), Next::Second { after: 2 }, "open run stays");
    refused(&mut g, 0, run(k(Three, Clubs), 0, 0), OPENING_LOST);
    p0(&mut g, run(k(Three, Clubs), 0, 1));
    assert_eq!(g.columns[0].next(1), Next::Sum { value: 5 });
    assert_eq!(g.refills, 1);
    // The view marks the lost opening.
    let v = g.view_for(Viewer::Player(0));
    assert_eq!(v.columns[0].sides[0].next, Next::Lost);
    assert_eq!(v.refills, 1);
}

#[test]
fn r46_restart_ended_runs_are_shuffled_open_run_loses_its_restart_base() {
    let hand0 = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        six(0),
        k(Two, Hearts),
        k(Three, Hearts),
    ];
    let mut g = game(
        hand0,
        vec![],
        vec![
            k(Eight, Clubs),
            k(Eight, Diamonds),
            k(Seven, Clubs),
            k(Seven, Diamonds),
            k(Five, Clubs),
        ],
    );
    p0(&mut g, jk(joker(0)));
    p0(&mut g, run(k(Two, Spades), 0, 0));
    p0(&mut g, run(k(Three, Spades), 0, 0)); // open 2-3
    p0(
        &mut g,
        Action::PlayRestart {
            card: six(0),
            column: 0,
            side: 0,
        },
    );
    p0(&mut g, run(k(Two, Hearts), 0, 0)); // seat 1 draws the last card: refill
    assert_eq!(g.refills, 1);
    // joker + 2-3 (ended by the restart) + restart 6 = 4 cards; the 2 beyond stays.
    assert_eq!(g.pile.len(), 4);
    let s = &g.columns[0].sides[0];
    assert!(s.ended.is_empty() && s.restart.is_none());
    assert_eq!(s.run.len(), 1);
    assert_eq!(g.columns[0].next(0), Next::Second { after: 2 });
    assert_eq!(g.columns[0].next(1), Next::Lost);
}

#[test]
fn r46_pass_only_when_stuck_and_two_passes_draw() {
    // Empty pile, nothing on the table to shuffle, no playable card: pass.
    let mut g = game(vec![k(Five, Spades)], vec![k(Eight, Spades)], vec![]);
    assert_eq!(legal(&g, 0), vec![Action::Pass]);
    let ev = g.apply(0, &Action::Pass).unwrap();
    assert_eq!(ev, vec![Event::Passed { seat: 0 }]);
    assert_eq!(g.view_for(Viewer::Spectator).passes_in_row, 1);
    let ev = g.apply(1, &Action::Pass).unwrap();
    assert_eq!(
        ev[1],
        Event::GameOver {
            winner: None,
            reason: EndReason::TwoPasses
        }
    );
    assert_eq!(g.phase(), Phase::Finished);
    let o = g.outcome().unwrap();
    assert!(o.winners.is_empty());
    assert_eq!(o.scores, vec![0, 0]);
    // A pass is refused while a draw (or a play) is possible.
    let mut g = game(vec![k(Five, Spades)], vec![], vec![k(Two, Spades)]);
    refused(&mut g, 0, Action::Pass, PASS_NOT_ALLOWED);
    let mut g = game(vec![joker(0)], vec![], vec![]);
    refused(&mut g, 0, Action::Pass, PASS_NOT_ALLOWED);
}

#[test]
fn r46_pass_streak_is_broken_by_a_play() {
    // Seat 0 passes, seat 1 plays, seat 0 passes: no draw yet.
    let mut g = game(
        vec![k(Five, Spades), k(Eight, Hearts)],
        vec![k(Two, Clubs), k(Two, Hearts), k(Eight, Spades)],
        vec![],
    );
    // Make a column with an open run of 2 only (no base) so that refills find nothing.
    g.columns.push(Column {
        base: None,
        sides: [
            Side {
                run: vec![Placed {
                    card: k(Two, Diamonds),
                    value: 2,
                }],
                ..Side::default()
            },
            Side::default(),
        ],
        reactions: vec![],
    });
    assert_eq!(legal(&g, 0), vec![run(k(Five, Spades), 0, 0)]);
    g.apply(0, &run(k(Five, Spades), 0, 0)).unwrap(); // 2-5, needs 7
    assert_eq!(legal(&g, 1), vec![Action::Pass]);
    g.apply(1, &Action::Pass).unwrap();
    assert_eq!(legal(&g, 0), vec![Action::Pass]);
    g.apply(0, &Action::Pass).unwrap();
    assert_eq!(g.phase(), Phase::Finished);
}

#[test]
fn turn_limit_ends_in_a_draw() {
    let mut g = game(vec![k(Five, Spades)], vec![k(Five, Hearts)], filler());
    g.turns = MAX_TURNS - 1;
    let ev = g.apply(0, &Action::Draw).unwrap();
    assert_eq!(
        ev.last(),
        Some(&Event::GameOver {
            winner: None,
            reason: EndReason::TurnLimit
        })
    );
    assert_eq!(g.outcome().unwrap().winners, Vec::<Seat>::new());
}

// ---------- R-47 winning ----------

#[test]
fn r47_first_to_empty_hand_wins() {
    let mut g = game(
        vec![joker(0), k(Two, Spades)],
        vec![k(Two, Hearts)],
        filler(),
    );
    p0(&mut g, jk(joker(0)));
    let ev = g.apply(0, &run(k(Two, Spades), 0, 0)).unwrap();
    assert_eq!(
        ev.last(),
        Some(&Event::GameOver {
            winner: Some(0),
            reason: EndReason::EmptiedHand
        })
    );
    assert_eq!(g.phase(), Phase::Finished);
    assert_eq!(g.to_act(), Vec::<Seat>::new());
    assert_eq!(g.outcome().unwrap().winners, vec![0]);
    assert_eq!(g.scores(), vec![1, 0]);
    let e = g.apply(1, &Action::Draw).unwrap_err();
    assert_eq!(e.code, codes::NO_ROUND);
    // A joker with its bonus can empty the hand too.
    let mut g = game(vec![joker(0), k(Three, Spades)], vec![], filler());
    g.apply(
        0,
        &Action::PlayJoker {
            card: joker(0),
            bonus: Some(Bonus {
                card: k(Three, Spades),
                side: 0,
                value: None,
            }),
        },
    )
    .unwrap();
    assert_eq!(g.outcome().unwrap().winners, vec![0]);
    let v = g.view_for(Viewer::Player(1));
    assert_eq!(
        v.result,
        Some(GameResult {
            winner: Some(0),
            reason: EndReason::EmptiedHand
        })
    );
    assert!(v.legal.is_empty());
}

// ---------- lifecycle, seats, wire format ----------

#[test]
fn lifecycle_and_seat_errors() {
    assert_eq!(
        FibFib::new_match(&Options::default(), 3).unwrap_err().code,
        codes::BAD_PLAYER_COUNT
    );
    assert_eq!(FibFib::player_range(&Options::default()), (2, 2));
    let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
    assert_eq!(g.round(), 0);
    assert_eq!(g.view_for(Viewer::Spectator).dealer, None);
    assert_eq!(g.apply(0, &Action::Draw).unwrap_err().code, codes::NO_ROUND);
    let v = g.view_for(Viewer::Player(0));
    assert!(v.legal.is_empty() && v.turn.is_none());
    g.start_round(&Seed::from_u64(5)).unwrap();
    assert_eq!(g.round(), 1);
    assert_eq!(
        g.start_round(&Seed::from_u64(6)).unwrap_err().code,
        codes::WRONG_PHASE
    );
    let before = g.clone();
    assert_eq!(g.apply(2, &Action::Draw).unwrap_err().code, codes::BAD_SEAT);
    let off = 1 - g.to_act()[0];
    assert_eq!(
        g.apply(off, &Action::Draw).unwrap_err().code,
        codes::NOT_YOUR_TURN
    );
    assert_eq!(g, before);
    assert!(g.legal_actions_for(off).is_empty());
    let spec = g.view_for(Viewer::Spectator);
    assert!(spec.hand.is_none());
    assert!(FibFib::legal_actions(&spec).is_empty());
    assert!(!g.deal_record().is_null());
}

#[test]
fn wire_format() {
    let c: Card = serde_json::from_str(r#"{"id":9,"rank":"five","suit":"hearts"}"#).unwrap();
    assert_eq!((c.rank(), c.suit()), (Five, Some(Hearts)));
    assert_eq!(
        serde_json::to_string(&joker(0)).unwrap(),
        r#"{"id":0,"rank":"joker"}"#
    );
    // Rank or suit not matching the id, unknown ids and fields are refused.
    for bad in [
        r#"{"id":9,"rank":"two","suit":"hearts"}"#,
        r#"{"id":9,"rank":"five","suit":"clubs"}"#,
        r#"{"id":9,"rank":"five"}"#,
        r#"{"id":26,"rank":"six","suit":"clubs"}"#,
        r#"{"id":0,"rank":"joker","x":1}"#,
    ] {
        assert!(serde_json::from_str::<Card>(bad).is_err(), "{bad}");
    }
    let examples = [
        r#"{"type":"draw"}"#,
        r#"{"type":"play_joker","card":{"id":0,"rank":"joker"},"bonus":{"card":{"id":2,"rank":"two","suit":"spades"},"side":1}}"#,
        r#"{"type":"play_run_card","card":{"id":25,"rank":"six","suit":"clubs"},"column":0,"side":1,"value":5}"#,
        r#"{"type":"play_restart","card":{"id":24,"rank":"six","suit":"diamonds"},"column":0,"side":0}"#,
        r#"{"type":"play_small_wild","card":{"id":22,"rank":"four","suit":"spades"},"replace":{"id":0,"rank":"joker"}}"#,
        r#"{"type":"play_reaction","card":{"id":6,"rank":"eight","suit":"spades"}}"#,
        r#"{"type":"pass"}"#,
    ];
    for ex in examples {
        let a: Action = serde_json::from_str(ex).unwrap_or_else(|e| panic!("{ex}: {e}"));
        assert_eq!(serde_json::to_string(&a).unwrap(), ex);
    }
    // Unknown fields are refused in every action that has fields (serde cannot check
    // the field-less `draw` and `pass`).
    assert!(
        serde_json::from_str::<Action>(
            r#"{"type":"play_reaction","card":{"id":6,"rank":"eight","suit":"spades"},"x":1}"#
        )
        .is_err()
    );
    assert!(serde_json::from_str::<Action>(r#"{"type":"pull"}"#).is_err());
    assert_eq!(serde_json::from_str::<Options>("{}").unwrap(), Options {});
    // Schemas generate.
    let _ = schemars::schema_for!(Action);
    let _ = schemars::schema_for!(FibFibView);
    let _ = schemars::schema_for!(Event);
    // A view round-trips.
    let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
    g.start_round(&Seed::from_u64(1)).unwrap();
    let v = g.view_for(Viewer::Player(0));
    let back: FibFibView = serde_json::from_value(serde_json::to_value(&v).unwrap()).unwrap();
    assert_eq!(back, v);
}

// ---------- properties over seeded random games ----------

fn random_action(r: &mut DeckRng, columns: usize) -> Action {
    let card = |r: &mut DeckRng| Card::from_id(r.below(DECK_SIZE) as u8).unwrap();
    let value = |r: &mut DeckRng| match r.below(12) {
        0..=1 => None,
        n => Some(n as u32 - 2),
    };
    match r.below(7) {
        0 => Action::Draw,
        1 => Action::PlayJoker {
            card: card(r),
            bonus: (r.below(2) == 0).then(|| Bonus {
                card: card(r),
                side: r.below(3),
                value: value(r),
            }),
        },
        2 => Action::PlayRunCard {
            card: card(r),
            column: r.below(columns + 2),
            side: r.below(3),
            value: value(r),
        },
        3 => Action::PlayRestart {
            card: card(r),
            column: r.below(columns + 2),
            side: r.below(3),
        },
        4 => Action::PlaySmallWild {
            card: card(r),
            replace: card(r),
        },
        5 => Action::PlayReaction { card: card(r) },
        _ => Action::Pass,
    }
}

/// Every card id appearing anywhere in a JSON value (objects with "id" and "rank").
fn card_ids(v: &serde_json::Value, out: &mut Vec<u64>) {
    match v {
        serde_json::Value::Object(m) => {
            if let (Some(id), Some(_)) = (m.get("id"), m.get("rank")) {
                out.push(id.as_u64().unwrap());
            }
            m.values().for_each(|x| card_ids(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| card_ids(x, out)),
        _ => {}
    }
}

/// Every card a view names, gathered structurally (fast path of the hidden-card check).
fn view_cards(v: &FibFibView) -> Vec<Card> {
    let mut out: Vec<Card> = v.hand.clone().unwrap_or_default();
    for c in &v.columns {
        let col = Column {
            base: c.base,
            sides: [c.sides[0].side.clone(), c.sides[1].side.clone()],
            reactions: c.reactions.clone(),
        };
        col.face_up(&mut out);
    }
    out.extend(v.reaction.map(|r| r.laid));
    for a in &v.legal {
        match *a {
            Action::Draw | Action::Pass => {}
            Action::PlayJoker { card, bonus } => {
                out.push(card);
                out.extend(bonus.map(|b| b.card));
            }
            Action::PlayRunCard { card, .. }
            | Action::PlayRestart { card, .. }
            | Action::PlayReaction { card } => out.push(card),
            Action::PlaySmallWild { card, replace } => out.extend([card, replace]),
        }
    }
    out
}

fn check_invariants(g: &FibFib, json: bool) {
    // All 26 cards accounted for, no duplicates.
    let mut all = g.all_cards();
    all.sort();
    assert_eq!(all, Card::deck(), "cards lost or duplicated");
    // No hidden card in any view (R-4).
    for viewer in [Viewer::Player(0), Viewer::Player(1), Viewer::Spectator] {
        let v = g.view_for(viewer);
        let hidden: Vec<u64> = g
            .hidden_from(viewer.seat())
            .iter()
            .map(|c| u64::from(c.id()))
            .collect();
        let mut ids: Vec<u64> = view_cards(&v).iter().map(|c| u64::from(c.id())).collect();
        if json {
            // The whole serialized view, so no field can leak a card unnoticed.
            card_ids(&serde_json::to_value(&v).unwrap(), &mut ids);
        }
        for id in ids {
            assert!(!hidden.contains(&id), "{viewer:?} sees hidden card {id}");
        }
        assert_eq!(v.hand.is_some(), viewer.seat().is_some());
        assert_eq!(v.draw_pile, g.pile.len());
    }
}

/// Plays one seeded random game, checking every property at every step. Returns the
/// action log and the end reason.
fn random_game(i: u64, thorough: bool) -> (Vec<(Seat, Action)>, EndReason) {
    let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
    g.start_round(&Seed::from_u64(i)).unwrap();
    let mut r = Seed::from_u64(i ^ 0x5eed_0000_0000).rng();
    let mut log = Vec::new();
    let mut steps = 0;
    while g.phase() == Phase::Playing {
        steps += 1;
        assert!(steps <= MAX_TURNS, "game did not end");
        check_invariants(&g, thorough);
        let seat = g.to_act()[0];
        assert_eq!(g.to_act().len(), 1);
        let legal = g.legal_actions_for(seat);
        assert!(!legal.is_empty());
        assert!(g.legal_actions_for(1 - seat).is_empty());
        // Pass appears only alone.
        assert!(legal.len() == 1 || !legal.contains(&Action::Pass));
        if thorough {
            for a in &legal {
                let mut h = g.clone();
                h.apply(seat, a)
                    .unwrap_or_else(|e| panic!("legal {a:?} refused: {e}"));
            }
        }
        // Random actions: accepted exactly when listed; refused ones change nothing.
        for _ in 0..if thorough { 20 } else { 3 } {
            let a = random_action(&mut r, g.columns.len());
            let before = g.clone();
            let mut h = g.clone();
            match h.apply(seat, &a) {
                Ok(_) => assert!(legal.contains(&a), "unlisted {a:?} accepted"),
                Err(e) => {
                    assert!(!legal.contains(&a), "listed {a:?} refused: {e}");
                    assert_eq!(h, before, "refused {a:?} changed the state");
                }
            }
            let mut w = g.clone();
            let e = w.apply(1 - seat, &a).unwrap_err();
            assert_eq!(e.code, codes::NOT_YOUR_TURN);
            assert_eq!(w, before);
        }
        let a = legal[r.below(legal.len())].clone();
        let events = g.apply(seat, &a).unwrap();
        // Events never name a drawn card.
        for ev in &events {
            if let Event::Drew { .. } = ev {
                let mut ids = Vec::new();
                card_ids(&serde_json::to_value(ev).unwrap(), &mut ids);
                assert!(ids.is_empty());
            }
        }
        log.push((seat, a));
    }
    check_invariants(&g, thorough);
    let out = g.outcome().expect("finished game has an outcome");
    let v = g.view_for(Viewer::Spectator);
    let reason = v.result.unwrap().reason;
    match reason {
        EndReason::EmptiedHand => {
            assert_eq!(out.winners.len(), 1);
            assert_eq!(g.hands[out.winners[0]].len(), 0);
        }
        _ => assert!(out.winners.is_empty()),
    }
    (log, reason)
}

#[test]
fn property_random_games_thorough() {
    // Debug builds run a tenth of the games; the full loops run with `--release`.
    let n = if cfg!(debug_assertions) { 30 } else { 300 };
    for i in 0..n {
        random_game(i, true);
    }
}

#[test]
fn property_random_games_many() {
    let mut reasons = std::collections::BTreeMap::new();
    let mut lens = Vec::new();
    let n = if cfg!(debug_assertions) { 300 } else { 3000 };
    for i in 1000..1000 + n {
        let (log, why) = random_game(i, false);
        lens.push(log.len());
        *reasons.entry(format!("{why:?}")).or_insert(0) += 1;
    }
    lens.sort_unstable();
    eprintln!(
        "end reasons over {n} random games: {reasons:?}; length median {} p99 {} max {}",
        lens[lens.len() / 2],
        lens[lens.len() * 99 / 100],
        lens[lens.len() - 1]
    );
    // Most random games end with a winner; the bound is a safety net.
    let won = reasons.get("EmptiedHand").copied().unwrap_or(0);
    assert!(won * 10 > n * 9, "{reasons:?}");
}

#[test]
fn deterministic_replay() {
    for i in [3u64, 17, 99] {
        let (log, _) = random_game(i, false);
        let play = || {
            let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
            let mut evs = g.start_round(&Seed::from_u64(i)).unwrap();
            for (s, a) in &log {
                evs.extend(g.apply(*s, a).unwrap());
            }
            (g, evs)
        };
        let (a, ea) = play();
        let (b, eb) = play();
        assert_eq!(a, b);
        assert_eq!(ea, eb);
        assert_eq!(a.deal_record(), b.deal_record());
        for viewer in [Viewer::Player(0), Viewer::Player(1), Viewer::Spectator] {
            assert_eq!(a.view_for(viewer), b.view_for(viewer));
        }
        assert_eq!(a.outcome(), b.outcome());
    }
}

/// The short example of web/rules/fibfib.html, move by move.
#[test]
fn rules_page_example() {
    let ann = vec![
        joker(0),
        k(Two, Spades),
        k(Three, Spades),
        k(Eight, Hearts),
        six(0),
    ];
    let bob = vec![
        six(1),
        k(Seven, Hearts),
        k(Five, Clubs),
        k(Two, Clubs),
        k(Three, Clubs),
    ];
    let mut g = game(ann, bob, filler());
    g.apply(
        0,
        &Action::PlayJoker {
            card: joker(0),
            bonus: Some(Bonus {
                card: k(Two, Spades),
                side: 0,
                value: None,
            }),
        },
    )
    .unwrap();
    g.apply(1, &Action::Draw).unwrap();
    g.apply(0, &run(k(Three, Spades), 0, 0)).unwrap();
    g.apply(1, &six_run(six(1), 0, 0, 5)).unwrap();
    g.apply(0, &run(k(Eight, Hearts), 0, 0)).unwrap();
    assert!(g.columns[0].sides[0].closed());
    g.apply(
        1,
        &Action::PlayReaction {
            card: k(Seven, Hearts),
        },
    )
    .unwrap();
    let ev = g
        .apply(
            0,
            &Action::PlayRestart {
                card: six(0),
                column: 0,
                side: 0,
            },
        )
        .unwrap();
    assert_eq!(
        ev.last(),
        Some(&Event::GameOver {
            winner: Some(0),
            reason: EndReason::EmptiedHand
        })
    );
}

/// `from_view_and_hidden` rebuilds a state whose view for the seat is exactly the real
/// one, whatever the guess of the hidden cards; a guess with wrong counts or a card in two
/// places is refused.
#[test]
fn from_view_and_hidden_keeps_the_view() {
    for i in 0..40u64 {
        let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
        g.start_round(&Seed::from_u64(i)).unwrap();
        let mut r = Seed::from_u64(i ^ 0xb07).rng();
        while g.phase() == Phase::Playing {
            let seat = g.to_act()[0];
            let view = g.view_for(Viewer::Player(seat));
            let mut hidden: Vec<Card> = g.hands[1 - seat].clone();
            hidden.extend(&g.pile);
            r.shuffle(&mut hidden);
            let pile = hidden.split_off(g.hands[1 - seat].len());
            let s = FibFib::from_view_and_hidden(
                &view,
                hidden.clone(),
                pile.clone(),
                &Seed::from_u64(i),
            )
            .unwrap();
            assert_eq!(s.view_for(Viewer::Player(seat)), view);
            assert_eq!(s.view_for(Viewer::Spectator), g.view_for(Viewer::Spectator));
            for a in &view.legal {
                s.clone().apply(seat, a).unwrap();
            }
            if let Some(&c) = pile.first() {
                let mut twice = hidden.clone();
                twice.pop();
                twice.push(c);
                if !hidden.is_empty() {
                    let e = FibFib::from_view_and_hidden(
                        &view,
                        twice,
                        pile.clone(),
                        &Seed::from_u64(i),
                    );
                    assert_eq!(e.unwrap_err().code, codes::BAD_OPTIONS);
                }
                let e = FibFib::from_view_and_hidden(
                    &view,
                    hidden.clone(),
                    pile[1..].to_vec(),
                    &Seed::from_u64(i),
                );
                assert_eq!(e.unwrap_err().code, codes::BAD_OPTIONS);
            }
            let a = view.legal[r.below(view.legal.len())].clone();
            g.apply(seat, &a).unwrap();
        }
    }
}

// ---------- R-0: pinned deals, explicit positions ----------

/// R-0, R-1, R-41: published seeds must keep reproducing published deals. Seed 2028 is
/// pinned to its exact deal record (the pairs drawn for the dealer: two 6s and two 3s tie
/// before a 7 beats a 2; the dealer; both hands and the whole draw pile, by card id): a
/// change to the shuffle or the dealing breaks this test.
#[test]
fn r0_fixed_seed_reproduces_the_published_deal() {
    let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
    g.start_round(&Seed::from_u64(2028)).unwrap();
    let rec = g.deal_record();
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_u64().unwrap())
            .collect()
    };
    let list = |v: &serde_json::Value| -> Vec<Vec<u64>> {
        v.as_array().unwrap().iter().map(ids).collect()
    };
    assert_eq!(
        list(&rec["dealer_draw"]),
        [vec![25, 24], vec![8, 18], vec![5, 2]]
    );
    assert_eq!(rec["dealer"], 0);
    assert_eq!(
        list(&rec["hands"]),
        [vec![10, 5, 20, 1, 25], vec![0, 3, 21, 23, 17]]
    );
    assert_eq!(
        ids(&rec["draw_pile"]),
        [9, 8, 13, 6, 11, 15, 18, 12, 24, 7, 16, 22, 19, 4, 2, 14]
    );
    // The non-dealer plays first; the live pile is the record's, top last.
    assert_eq!(g.to_act(), vec![1]);
    let top_first: Vec<u64> = g.pile.iter().rev().map(|c| u64::from(c.id())).collect();
    assert_eq!(top_first, ids(&rec["draw_pile"]));
}

/// R-45, in the 7 → 8 direction: a 7 laid as a run card lets the opponent set the 8 of
/// the same suit beside that run on the very next turn (and no other 8).
#[test]
fn r45_a_laid_seven_is_answered_by_the_eight_of_its_suit() {
    let column = Column {
        base: Some(joker(0)),
        sides: [
            Side {
                run: vec![
                    Placed {
                        card: k(Two, Hearts),
                        value: 2,
                    },
                    Placed {
                        card: k(Five, Hearts),
                        value: 5,
                    },
                ],
                ..Side::default()
            },
            Side::default(),
        ],
        reactions: Vec::new(),
    };
    let mut g = FibFib::from_position(&Position {
        hands: [
            vec![k(Seven, Diamonds), k(Two, Clubs)],
            vec![k(Eight, Diamonds), k(Eight, Clubs), k(Seven, Clubs)],
        ],
        pile_top_first: vec![k(Three, Spades), k(Three, Hearts)],
        columns: vec![column],
        turn: 0,
        refill_seed: Seed::from_u64(1),
    })
    .unwrap();
    g.apply(0, &run(k(Seven, Diamonds), 0, 0)).unwrap();
    let v = g.view_for(Viewer::Player(1));
    assert_eq!(
        v.reaction,
        Some(ReactionChance {
            seat: 1,
            laid: k(Seven, Diamonds),
            column: 0,
            side: 0
        })
    );
    let answer = Action::PlayReaction {
        card: k(Eight, Diamonds),
    };
    let reactions: Vec<&Action> = v
        .legal
        .iter()
        .filter(|a| matches!(a, Action::PlayReaction { .. }))
        .collect();
    assert_eq!(reactions, vec![&answer]);
    refused(
        &mut g,
        1,
        Action::PlayReaction {
            card: k(Eight, Clubs),
        },
        WRONG_REACTION_CARD,
    );
    refused(
        &mut g,
        1,
        Action::PlayReaction {
            card: k(Seven, Clubs),
        },
        WRONG_REACTION_CARD,
    );
    g.apply(1, &answer).unwrap();
    assert_eq!(
        g.columns[0].reactions,
        vec![Reaction {
            card: k(Eight, Diamonds),
            side: 0
        }]
    );
    for (card, partner) in [
        (k(Seven, Spades), Some(k(Eight, Spades))),
        (k(Eight, Hearts), Some(k(Seven, Hearts))),
        (k(Seven, Clubs), Some(k(Eight, Clubs))),
        (k(Five, Clubs), None),
        (joker(1), None),
    ] {
        assert_eq!(card.reaction_partner(), partner, "{card:?}");
    }
}

/// R-42: the joker's optional bonus in the legal list: every 2 and 3 in hand on either
/// side, a 6 as 0, 1, 2 or 3 on either side, nothing else (not a 5, 7, 8, 4 or the
/// other joker), and the joker alone.
#[test]
fn r42_legal_joker_bonuses_are_exactly_the_low_cards_on_either_side() {
    let g = game(
        vec![
            joker(0),
            k(Two, Clubs),
            k(Three, Hearts),
            six(0),
            k(Five, Spades),
            k(Eight, Clubs),
            four(0),
            joker(1),
        ],
        vec![k(Two, Spades)],
        filler(),
    );
    let mut jokers: Vec<Action> = legal(&g, 0)
        .into_iter()
        .filter(|a| matches!(a, Action::PlayJoker { card, .. } if *card == joker(0)))
        .collect();
    let mut expected = vec![jk(joker(0))];
    for side in 0..2 {
        for (card, value) in [
            (k(Two, Clubs), None),
            (k(Three, Hearts), None),
            (six(0), Some(0)),
            (six(0), Some(1)),
            (six(0), Some(2)),
            (six(0), Some(3)),
        ] {
            expected.push(Action::PlayJoker {
                card: joker(0),
                bonus: Some(Bonus { card, side, value }),
            });
        }
    }
    let key = |a: &Action| serde_json::to_string(a).unwrap();
    jokers.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(jokers, expected);
    // Each of them is accepted.
    for a in &expected {
        g.clone().apply(0, a).unwrap();
    }
}

/// R-46: passing is refused while the player could play (a joker, a run card) or draw,
/// allowed only when stuck; the check uses the same legal list the view shows.
#[test]
fn r46_pass_check_matches_the_legal_list() {
    // Stuck: an 8 fits nowhere, the pile is empty and the table has nothing to shuffle.
    let open = Column {
        base: None,
        sides: [
            Side {
                run: vec![Placed {
                    card: k(Two, Hearts),
                    value: 2,
                }],
                ..Side::default()
            },
            Side::default(),
        ],
        reactions: Vec::new(),
    };
    let stuck = |hand: Vec<Card>| {
        FibFib::from_position(&Position {
            hands: [hand, vec![k(Eight, Spades)]],
            pile_top_first: Vec::new(),
            columns: vec![open.clone()],
            turn: 0,
            refill_seed: Seed::from_u64(2),
        })
        .unwrap()
    };
    let mut g = stuck(vec![k(Eight, Hearts)]);
    assert_eq!(legal(&g, 0), vec![Action::Pass]);
    g.apply(0, &Action::Pass).unwrap();
    // A 3 continues 2 (second card 3-5): no pass.
    let mut g = stuck(vec![k(Three, Spades)]);
    assert_eq!(legal(&g, 0), vec![run(k(Three, Spades), 0, 0)]);
    refused(&mut g, 0, Action::Pass, PASS_NOT_ALLOWED);
    // A 4 may replace the 2: no pass.
    let mut g = stuck(vec![four(1)]);
    refused(&mut g, 0, Action::Pass, PASS_NOT_ALLOWED);
    // Seat 1 is not on turn: its pass is refused as such.
    refused(&mut g, 1, Action::Pass, codes::NOT_YOUR_TURN);
}

#[test]
fn from_position_refuses_a_card_twice_and_a_seat_not_at_the_table() {
    let p = Position {
        hands: [vec![k(Two, Spades)], vec![k(Three, Spades)]],
        pile_top_first: vec![k(Five, Spades)],
        columns: Vec::new(),
        turn: 1,
        refill_seed: Seed::from_u64(3),
    };
    let g = FibFib::from_position(&p).unwrap();
    assert_eq!(
        (g.to_act(), g.phase(), g.dealer),
        (vec![1], Phase::Playing, 0)
    );
    assert_eq!(g.players(), 2);
    let mut q = p.clone();
    q.turn = 2;
    assert_eq!(FibFib::from_position(&q).unwrap_err().code, codes::BAD_SEAT);
    let mut q = p.clone();
    q.pile_top_first.push(k(Two, Spades));
    assert_eq!(
        FibFib::from_position(&q).unwrap_err().code,
        codes::BAD_OPTIONS
    );
    let mut q = p.clone();
    q.hands[1].push(k(Two, Spades));
    assert_eq!(
        FibFib::from_position(&q).unwrap_err().code,
        codes::BAD_OPTIONS
    );
    let mut q = p.clone();
    q.columns.push(Column {
        base: Some(k(Five, Spades)),
        ..Column::default()
    });
    assert_eq!(
        FibFib::from_position(&q).unwrap_err().code,
        codes::BAD_OPTIONS
    );
}

/// The bots' constructor refuses views it cannot complete and guesses that do not fit.
#[test]
fn from_view_and_hidden_refuses_what_does_not_fit_the_view() {
    let mut g = FibFib::new_match(&Options::default(), 2).unwrap();
    g.start_round(&Seed::from_u64(9)).unwrap();
    let seat = g.to_act()[0];
    let view = g.view_for(Viewer::Player(seat));
    let other = g.hands[1 - seat].clone();
    let pile: Vec<Card> = g.pile.iter().rev().copied().collect();
    let seed = Seed::from_u64(1);
    let build = |v: &FibFibView, o: &[Card], p: &[Card]| {
        FibFib::from_view_and_hidden(v, o.to_vec(), p.to_vec(), &seed)
    };
    let h = build(&view, &other, &pile).unwrap();
    assert_eq!(h.view_for(Viewer::Player(seat)), view);
    assert_eq!(
        h.view_for(Viewer::Player(1 - seat)),
        g.view_for(Viewer::Player(1 - seat))
    );
    let bad = |v: &FibFibView, o: &[Card], p: &[Card]| {
        assert_eq!(build(v, o, p).unwrap_err().code, codes::BAD_OPTIONS);
    };
    bad(&g.view_for(Viewer::Spectator), &other, &pile);
    bad(&g.view_for(Viewer::Player(2)), &other, &pile);
    let mut v = view.clone();
    v.phase = Phase::Finished;
    bad(&v, &other, &pile);
    let mut v = view.clone();
    v.turn = None;
    bad(&v, &other, &pile);
    let mut v = view.clone();
    v.hand = None;
    bad(&v, &other, &pile);
    // The opponent's hand one card short, the card moved to the pile.
    let mut more = pile.clone();
    more.push(other[0]);
    bad(&view, &other[1..], &more);
    // One card of the opponent's hand swapped for one of the viewer's.
    let mut o = other.clone();
    o[0] = view.hand.as_ref().unwrap()[0];
    bad(&view, &o, &pile);
}
