//! Scenario tests, one or more per ruling (R-0, R-1, R-3, R-4, R-50..R-54), built from
//! hand-made states (`NachosMatch::from_hands`) and seeded deals.

use game_core::{Game, Phase, RuleError, Seed, Viewer, codes};

use super::{G, R, Y, c, play, refused};
use crate::{
    Action, Card, Event, MUST_FOLLOW_SUIT, NO_SUCH_CARD, NachosMatch, NachosOptions, SPICY_DECK,
    Scoring, canonical_deck, round_score,
};

fn new(players: usize) -> NachosMatch {
    NachosMatch::new_match(&NachosOptions::default(), players).unwrap()
}

#[test]
fn r50_nacho_deck_and_fibonachos() {
    let deck = canonical_deck();
    assert_eq!(deck.len(), 45);
    for (i, card) in deck.iter().enumerate() {
        assert_eq!(card.index(), i);
        assert!(card.is_valid());
    }
    let mut sorted = deck.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted, deck,
        "canonical order is sorted and has no duplicates"
    );
    for suit in [R, G, Y] {
        let in_suit: Vec<_> = deck.iter().filter(|c| c.suit == suit).collect();
        assert_eq!(in_suit.len(), 15);
        assert_eq!(in_suit.iter().filter(|c| c.number == 1).count(), 2);
        let fibs: Vec<u8> = in_suit
            .iter()
            .filter(|c| c.is_fibonacho())
            .map(|c| c.number)
            .collect();
        assert_eq!(fibs, vec![1, 1, 2, 3, 5, 8, 13]);
    }
    assert!(!Card::new(R, 0).is_valid());
    assert!(!Card::new(R, 15).is_valid());
    assert!(
        !Card {
            suit: R,
            number: 2,
            copy: 1
        }
        .is_valid()
    );
    assert!(
        !Card {
            suit: R,
            number: 1,
            copy: 2
        }
        .is_valid()
    );
}

#[test]
fn r50_card_wire_format() {
    let one = Card::second_one(G);
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        r#"{"suit":"green","number":1,"copy":1}"#
    );
    let a: Action =
        serde_json::from_str(r#"{"type":"play","card":{"suit":"red","number":7}}"#).unwrap();
    assert_eq!(a, Action::Play { card: c(R, 7) });
    let a: Action =
        serde_json::from_str(r#"{"type":"play","card":{"suit":"yellow","number":1,"copy":1}}"#)
            .unwrap();
    assert_eq!(
        a,
        Action::Play {
            card: Card::second_one(Y)
        }
    );
    for bad in [
        r#"{"type":"play","card":{"suit":"red","number":7},"extra":1}"#,
        r#"{"type":"play","card":{"suit":"red","number":7,"colour":"red"}}"#,
        r#"{"type":"play","card":{"suit":"blue","number":7}}"#,
        r#"{"type":"pass"}"#,
        r#"{"card":{"suit":"red","number":7}}"#,
    ] {
        assert!(
            serde_json::from_str::<Action>(bad).is_err(),
            "{bad} accepted"
        );
    }
    // View cards carry the fibonacho flag.
    let m = NachosMatch::from_hands(
        vec![vec![c(R, 8), c(R, 9)], vec![c(G, 4), c(G, 5)]],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    let hand = m.view_for(Viewer::Player(0)).hand.unwrap();
    assert!(hand[0].fibonacho && !hand[1].fibonacho);
}

#[test]
fn r50_the_two_ones_are_distinct_cards() {
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 1), Card::second_one(R)], vec![c(G, 4), c(G, 6)]],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, Card::second_one(R));
    assert_eq!(m.hands[0], vec![c(R, 1)]);
    // The copy just played is gone: playing it again is refused.
    play(&mut m, 1, c(G, 4));
    let e = refused(&mut m, 0, Card::second_one(R));
    assert_eq!(e.code, codes::CARD_NOT_IN_HAND);
}

#[test]
fn r51_spicy_deck_composition_and_reshuffle() {
    assert_eq!(SPICY_DECK.len(), 15);
    assert_eq!(SPICY_DECK.iter().map(|&v| u32::from(v)).sum::<u32>(), 35);
    for (value, count) in [(1, 5), (2, 4), (3, 3), (4, 2), (5, 1)] {
        assert_eq!(SPICY_DECK.iter().filter(|&&v| v == value).count(), count);
    }
    let mut orders = std::collections::HashSet::new();
    for s in 0..20 {
        let mut m = new(3);
        let events = m.start_round(&Seed::from_u64(s)).unwrap();
        let order = m.spicy_order.clone();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, SPICY_DECK.to_vec());
        // The first spicy card is turned up at once, for the first leader.
        assert!(events.contains(&Event::SpicyRevealed {
            seat: m.leader,
            spicy: order[0],
            remaining: 14
        }));
        assert_eq!(m.view_for(Viewer::Spectator).spicy_at_stake, Some(order[0]));
        orders.insert(order);
    }
    assert!(orders.len() > 15, "spicy order should depend on the seed");
}

#[test]
fn r52_deal_sizes_for_2_to_5_players() {
    for (players, size, aside) in [(2, 15, 15), (3, 15, 0), (4, 11, 1), (5, 9, 0)] {
        let mut m = new(players);
        let events = m.start_round(&Seed::from_u64(players as u64)).unwrap();
        assert!(matches!(
            events[0],
            Event::RoundStarted { hand_size, set_aside, .. } if hand_size == size && set_aside == aside
        ));
        for h in &m.hands {
            assert_eq!(h.len(), size);
        }
        assert_eq!(m.set_aside.len(), aside);
        let v = m.view_for(Viewer::Spectator);
        assert_eq!(v.hand_counts, vec![size; players]);
        assert_eq!(v.set_aside_count, aside);
        assert_eq!(v.hand_size, size);
        assert!(
            size <= SPICY_DECK.len(),
            "never more tricks than spicy cards"
        );
    }
    assert_eq!(new_err(1), codes::BAD_PLAYER_COUNT);
    assert_eq!(new_err(6), codes::BAD_PLAYER_COUNT);
}

fn new_err(players: usize) -> &'static str {
    NachosMatch::new_match(&NachosOptions::default(), players)
        .err()
        .unwrap()
        .code
}

#[test]
fn r53_must_follow_lead_suit_if_able() {
    let mut m = NachosMatch::from_hands(
        vec![
            vec![c(R, 5), c(G, 7)],
            vec![c(R, 9), c(G, 3)],
            vec![c(Y, 4), c(G, 10)],
        ],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, c(R, 5));
    let e = refused(&mut m, 1, c(G, 3));
    assert_eq!(e.code, MUST_FOLLOW_SUIT);
    let hand = m.view_for(Viewer::Player(1)).hand.unwrap();
    assert_eq!(
        hand.iter().map(|h| h.playable).collect::<Vec<_>>(),
        vec![true, false]
    );
    play(&mut m, 1, c(R, 9));
    // Seat 2 has no red: anything goes.
    let legal = NachosMatch::legal_actions(&m.view_for(Viewer::Player(2)));
    assert_eq!(legal.len(), 2);
    play(&mut m, 2, c(G, 10));
}

#[test]
fn r53_highest_of_lead_suit_wins_and_off_suit_never_wins() {
    let mut m = NachosMatch::from_hands(
        vec![
            vec![c(R, 4), c(R, 6)],
            vec![c(G, 14), c(G, 12)],
            vec![c(R, 6 + 1), c(Y, 12)],
        ],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, c(R, 4));
    play(&mut m, 1, c(G, 14));
    let ev = play(&mut m, 2, c(R, 7));
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::TrickWon {
            seat: 2,
            fibonachos_active: false,
            ..
        }
    )));
    // Now seat 2 leads a lone red among off-suit cards: the lead card wins.
    play(&mut m, 2, c(Y, 12));
    play(&mut m, 0, c(R, 6));
    let ev = play(&mut m, 1, c(G, 12));
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::TrickWon {
            seat: 2,
            fibonachos_active: false,
            ..
        }
    )));
}

#[test]
fn r53_two_fibonachos_make_an_off_suit_fibonacho_win() {
    let mut m = NachosMatch::from_hands(
        vec![
            vec![c(R, 2), c(R, 4)],
            vec![c(G, 3), c(G, 4)],
            vec![c(R, 14), c(R, 12)],
        ],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, c(R, 2));
    let v = m.view_for(Viewer::Spectator);
    assert!(!v.fibonachos_active);
    assert_eq!(v.trick_winning, Some(0));
    play(&mut m, 1, c(G, 3)); // off-suit fibonacho: now two fibonachos are in the trick
    let v = m.view_for(Viewer::Spectator);
    assert!(v.fibonachos_active);
    assert_eq!(v.trick_winning, Some(1));
    let ev = play(&mut m, 2, c(R, 14));
    let won = ev
        .iter()
        .find(|e| matches!(e, Event::TrickWon { .. }))
        .unwrap();
    assert!(matches!(
        won,
        Event::TrickWon {
            seat: 1,
            fibonachos_active: true,
            ..
        }
    ));
    let last = m.view_for(Viewer::Spectator).last_trick.unwrap();
    assert_eq!(
        (last.winner, last.fibonachos_active, last.cards.len()),
        (1, true, 3)
    );
}

#[test]
fn r53_a_single_fibonacho_is_no_trump() {
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 7)], vec![c(G, 13)], vec![c(R, 9)]],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, c(R, 7));
    play(&mut m, 1, c(G, 13));
    let ev = play(&mut m, 2, c(R, 9));
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::TrickWon {
            seat: 2,
            fibonachos_active: false,
            ..
        }
    )));
}

#[test]
fn r53_tied_fibonachos_go_to_the_last_played() {
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 8)], vec![c(G, 8)], vec![c(R, 10)]],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, c(R, 8));
    play(&mut m, 1, c(G, 8));
    let ev = play(&mut m, 2, c(R, 10));
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::TrickWon {
            seat: 1,
            fibonachos_active: true,
            ..
        }
    )));

    // The two 1s of the lead suit: the one played last wins.
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 1)], vec![Card::second_one(R)]],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, c(R, 1));
    let ev = play(&mut m, 1, Card::second_one(R));
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::TrickWon { seat: 1, .. }))
    );
    // And the other way round.
    let mut m = NachosMatch::from_hands(
        vec![vec![Card::second_one(Y)], vec![c(Y, 1)]],
        0,
        SPICY_DECK.to_vec(),
        1,
    );
    play(&mut m, 0, Card::second_one(Y));
    let ev = play(&mut m, 1, c(Y, 1));
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::TrickWon { seat: 1, .. }))
    );
}

#[test]
fn r53_winner_takes_the_spicy_card_and_leads_next() {
    let mut spicy = SPICY_DECK.to_vec();
    spicy.swap(0, 14); // 5 on top, then 1
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 4), c(Y, 9)], vec![c(R, 11), c(G, 6)]],
        0,
        spicy,
        1,
    );
    assert_eq!(m.view_for(Viewer::Player(0)).spicy_at_stake, Some(5));
    play(&mut m, 0, c(R, 4));
    let ev = play(&mut m, 1, c(R, 11));
    assert_eq!(ev.len(), 3);
    assert!(matches!(ev[0], Event::CardPlayed { seat: 1, .. }));
    assert!(matches!(
        ev[1],
        Event::TrickWon {
            seat: 1,
            spicy: 5,
            ..
        }
    ));
    assert_eq!(
        ev[2],
        Event::SpicyRevealed {
            seat: 1,
            spicy: 1,
            remaining: 13
        }
    );
    let v = m.view_for(Viewer::Player(1));
    assert_eq!(v.spicy_piles[1].cards, vec![5]);
    assert_eq!(v.spicy_piles[1].total, 5);
    assert_eq!(
        (v.leader, v.turn, v.spicy_at_stake),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(refused(&mut m, 0, c(Y, 9)).code, codes::NOT_YOUR_TURN);
}

#[test]
fn r54_scoring_table() {
    assert_eq!(round_score(0, 0), (34, Scoring::NoTricks));
    for (raw, bonus) in [
        (1, 2),
        (2, 3),
        (3, 5),
        (5, 8),
        (8, 13),
        (13, 21),
        (21, 34),
        (34, 55),
    ] {
        assert_eq!(
            round_score(1, raw),
            (bonus, Scoring::FibonacciBonus),
            "{raw}"
        );
    }
    for raw in [4, 6, 7, 9, 10, 11, 12, 14, 20, 22, 33, 35] {
        assert_eq!(round_score(2, raw), (i64::from(raw), Scoring::Plain));
    }
}

/// Seat 0 wins both tricks for 5 + 3 = 8 spicy and scores 13; seat 1 wins none: 34.
#[test]
fn r54_eight_spicy_scores_13_and_no_tricks_scores_34() {
    let spicy = vec![5, 3];
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 10), c(R, 11)], vec![c(G, 4), c(G, 6)]],
        0,
        spicy,
        1,
    );
    play(&mut m, 0, c(R, 10));
    play(&mut m, 1, c(G, 4));
    play(&mut m, 0, c(R, 11));
    let ev = play(&mut m, 1, c(G, 6));
    let Some(Event::RoundEnded {
        round,
        results,
        totals,
    }) = ev.last()
    else {
        panic!("{ev:?}")
    };
    assert_eq!(*round, 1);
    assert_eq!((results[0].tricks, results[0].spicy_total), (2, 8));
    assert_eq!(
        (results[0].scoring, results[0].score),
        (Scoring::FibonacciBonus, 13)
    );
    assert_eq!((results[1].tricks, results[1].spicy_total), (0, 0));
    assert_eq!(
        (results[1].scoring, results[1].score),
        (Scoring::NoTricks, 34)
    );
    assert_eq!(totals, &vec![13, 34]);
    assert_eq!(m.phase(), Phase::AwaitingRound);
    assert_eq!(m.scores(), vec![13, 34]);
    let v = m.view_for(Viewer::Spectator);
    assert_eq!(v.round_scores, vec![vec![13, 34]]);
    assert_eq!(v.last_round.unwrap().results[0].score, 13);
    assert_eq!(m.to_act(), Vec::<usize>::new());
    assert_eq!(refused(&mut m, 0, c(R, 10)).code, codes::NO_ROUND);
}

#[test]
fn r54_plain_total_scores_as_is() {
    let spicy = vec![4, 3];
    let mut m = NachosMatch::from_hands(
        vec![vec![c(R, 10), c(R, 11)], vec![c(G, 4), c(G, 6)]],
        0,
        spicy,
        1,
    );
    for (s, card) in [(0, c(R, 10)), (1, c(G, 4)), (0, c(R, 11)), (1, c(G, 6))] {
        play(&mut m, s, card);
    }
    assert_eq!(m.scores(), vec![7, 34]);
}

#[test]
fn r54_three_rounds_deal_passes_clockwise_and_seat_after_dealer_leads() {
    for players in 2..=5 {
        let mut m = new(players);
        let mut dealers = Vec::new();
        let mut rng = Seed::from_u64(99).rng();
        while m.phase() != Phase::Finished {
            let ev = m
                .start_round(&Seed::from_u64(500 + m.round() as u64))
                .unwrap();
            let Event::RoundStarted { dealer, leader, .. } = ev[0] else {
                panic!()
            };
            assert_eq!(leader, (dealer + 1) % players);
            assert_eq!(m.to_act(), vec![leader]);
            dealers.push(dealer);
            while m.phase() == Phase::Playing {
                let seat = m.to_act()[0];
                let legal = m.legal_actions_for(seat);
                let a = legal[rng.below(legal.len())];
                m.apply(seat, &a).unwrap();
            }
        }
        assert_eq!(dealers.len(), 3);
        assert_eq!(dealers[1], (dealers[0] + 1) % players);
        assert_eq!(dealers[2], (dealers[1] + 1) % players);
        let v = m.view_for(Viewer::Spectator);
        assert_eq!(v.round_scores.len(), 3);
        let sums: Vec<i64> = (0..players)
            .map(|s| v.round_scores.iter().map(|r| r[s]).sum())
            .collect();
        assert_eq!(m.scores(), sums);
        let out = m.outcome().unwrap();
        let best = *sums.iter().max().unwrap();
        let winners: Vec<usize> = (0..players).filter(|&s| sums[s] == best).collect();
        assert_eq!(out.winners, winners);
        assert_eq!(v.winners, Some(winners));
        assert_eq!(
            m.start_round(&Seed::from_u64(1)).unwrap_err().code,
            codes::WRONG_PHASE
        );
        assert_eq!(m.legal_actions_for(0), vec![]);
    }
}

#[test]
fn r54_ties_share_the_win() {
    let spicy = vec![4];
    let mut m = NachosMatch::from_hands(vec![vec![c(R, 10)], vec![c(G, 5)]], 0, spicy, 3);
    m.round_scores = vec![vec![20, 5], vec![20, 5]];
    m.totals = vec![40, 10];
    play(&mut m, 0, c(R, 10));
    let ev = play(&mut m, 1, c(G, 5));
    assert_eq!(m.phase(), Phase::Finished);
    assert_eq!(m.scores(), vec![44, 44]);
    assert_eq!(
        ev.last(),
        Some(&Event::MatchEnded {
            winners: vec![0, 1],
            totals: vec![44, 44]
        })
    );
    assert_eq!(m.outcome().unwrap().winners, vec![0, 1]);
}

#[test]
fn r1_first_dealer_is_drawn_from_the_seed() {
    let mut seen = [false; 4];
    for s in 0..200 {
        let mut a = new(4);
        let mut b = new(4);
        a.start_round(&Seed::from_u64(s)).unwrap();
        b.start_round(&Seed::from_u64(s)).unwrap();
        assert_eq!(a, b);
        seen[a.dealer] = true;
        let record = a.deal_record();
        let draws = record["dealer_draw"].as_array().unwrap();
        let last = draws.last().unwrap().as_array().unwrap();
        // The last draw has a single highest card, drawn by the dealer.
        let high = last
            .iter()
            .map(|d| d[1]["number"].as_u64().unwrap())
            .max()
            .unwrap();
        let top: Vec<_> = last.iter().filter(|d| d[1]["number"] == high).collect();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0][0].as_u64().unwrap() as usize, a.dealer);
        assert_eq!(draws[0].as_array().unwrap().len(), 4);
    }
    assert_eq!(seen, [true; 4]);
}

#[test]
fn r0_deal_record_holds_the_whole_deal() {
    let mut m = new(4);
    m.start_round(&Seed::from_u64(12)).unwrap();
    let rec: crate::DealRecord = serde_json::from_value(m.deal_record()).unwrap();
    assert_eq!(rec.hands, m.hands);
    assert_eq!(rec.set_aside, m.set_aside);
    assert_eq!(rec.spicy_order, m.spicy_order);
    assert_eq!((rec.round, rec.dealer), (1, m.dealer));
    // Round 2 is dealt by the next seat, with no dealer draw.
    while m.phase() == Phase::Playing {
        let seat = m.to_act()[0];
        let a = m.legal_actions_for(seat)[0];
        m.apply(seat, &a).unwrap();
    }
    m.start_round(&Seed::from_u64(13)).unwrap();
    let rec: crate::DealRecord = serde_json::from_value(m.deal_record()).unwrap();
    assert_eq!(rec.round, 2);
    assert!(rec.dealer_draw.is_empty());
}

#[test]
fn r3_errors_have_codes_and_leave_state_unchanged() {
    let mut m = new(3);
    assert_eq!(refused(&mut m, 0, c(R, 4)).code, codes::NO_ROUND);
    m.start_round(&Seed::from_u64(5)).unwrap();
    assert_eq!(
        m.start_round(&Seed::from_u64(6)).unwrap_err().code,
        codes::WRONG_PHASE
    );
    let turn = m.turn;
    let other = (turn + 1) % 3;
    let mine = m.hands[turn][0];
    let theirs = m.hands[other][0];
    assert_eq!(refused(&mut m, 3, mine).code, codes::BAD_SEAT);
    assert_eq!(refused(&mut m, other, theirs).code, codes::NOT_YOUR_TURN);
    assert_eq!(refused(&mut m, turn, theirs).code, codes::CARD_NOT_IN_HAND);
    assert_eq!(refused(&mut m, turn, c(R, 15)).code, NO_SUCH_CARD);
    assert_eq!(
        refused(
            &mut m,
            turn,
            Card {
                suit: G,
                number: 4,
                copy: 1
            }
        )
        .code,
        NO_SUCH_CARD
    );
    let e: RuleError = refused(&mut m, turn, c(R, 0));
    assert_eq!(e.code, NO_SUCH_CARD);
}

#[test]
fn r4_views_hide_other_hands_and_spectators_have_no_hand() {
    let mut m = new(2);
    m.start_round(&Seed::from_u64(77)).unwrap();
    let spectator = m.view_for(Viewer::Spectator);
    assert!(spectator.hand.is_none());
    assert_eq!(NachosMatch::legal_actions(&spectator), vec![]);
    let v0 = m.view_for(Viewer::Player(0));
    assert_eq!(
        v0.hand
            .as_ref()
            .unwrap()
            .iter()
            .map(|h| Card {
                suit: h.suit,
                number: h.number,
                copy: h.copy
            })
            .collect::<Vec<_>>(),
        m.hands[0]
    );
    let json = serde_json::to_string(&v0).unwrap();
    for hidden in m.hands[1].iter().chain(&m.set_aside) {
        let needle = serde_json::to_string(&crate::CardView::from(*hidden)).unwrap();
        assert!(!json.contains(&needle), "{needle} leaked");
    }
    assert_eq!(v0.spicy_remaining, 14);
    // A viewer seat that is not at the table sees only public information.
    assert!(m.view_for(Viewer::Player(9)).hand.is_none());
}

#[test]
fn wire_schemas_and_examples() {
    for schema in [
        serde_json::to_value(schemars::schema_for!(Action)).unwrap(),
        serde_json::to_value(schemars::schema_for!(crate::NachosView)).unwrap(),
        serde_json::to_value(schemars::schema_for!(Event)).unwrap(),
        serde_json::to_value(schemars::schema_for!(NachosOptions)).unwrap(),
    ] {
        assert!(schema.is_object());
    }
    let o: NachosOptions = serde_json::from_str("{}").unwrap();
    assert_eq!(o, NachosOptions::default());
    let ev = Event::CardPlayed {
        seat: 1,
        card: c(G, 8).into(),
    };
    assert_eq!(
        serde_json::to_string(&ev).unwrap(),
        r#"{"type":"card_played","seat":1,"card":{"suit":"green","number":8,"copy":0,"fibonacho":true}}"#
    );
}
