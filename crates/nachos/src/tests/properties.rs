//! Properties over thousands of seeded random matches (random legal moves drawn with
//! `DeckRng`): no panic, every card accounted for, nothing hidden in any view or event,
//! legal actions agree with `apply`, invalid actions are refused with the state unchanged,
//! every match ends, and replay is deterministic.

use game_core::{DeckRng, Game, Phase, Seat, Seed, Viewer};
use serde_json::Value;

use crate::{Action, Card, Event, NachosMatch, NachosOptions, SPICY_DECK, canonical_deck};

/// Seeds of one match's rounds.
fn round_seed(game: u64, round: u32) -> Seed {
    Seed::from_u64(game * 8 + u64::from(round))
}

fn players_for(game: u64) -> usize {
    2 + (game % 4) as usize
}

/// Every nacho card is in exactly one place; the spicy cards likewise.
fn check_accounting(m: &NachosMatch) {
    if m.round == 0 {
        return;
    }
    let mut all: Vec<Card> = m.hands.iter().flatten().copied().collect();
    all.extend(m.trick.iter().map(|p| p.card));
    all.extend(&m.played);
    all.extend(&m.set_aside);
    all.sort();
    assert_eq!(all, canonical_deck(), "nacho cards not accounted for");
    let mut spicy: Vec<u8> = m.piles.iter().flatten().copied().collect();
    spicy.extend(m.at_stake);
    spicy.extend(&m.spicy_order[m.spicy_next..]);
    spicy.sort();
    assert_eq!(spicy, SPICY_DECK.to_vec(), "spicy cards not accounted for");
    for h in &m.hands {
        assert!(h.is_sorted(), "hand not sorted");
    }
}

/// All card-shaped objects (with "suit" and "number") anywhere in a JSON value.
fn cards_in(v: &Value, out: &mut Vec<Card>) {
    match v {
        Value::Object(map) => {
            if let (Some(s), Some(n)) = (map.get("suit"), map.get("number")) {
                let mut obj = serde_json::Map::new();
                obj.insert("suit".into(), s.clone());
                obj.insert("number".into(), n.clone());
                if let Some(c) = map.get("copy") {
                    obj.insert("copy".into(), c.clone());
                }
                out.push(serde_json::from_value(Value::Object(obj)).expect("card-shaped"));
            }
            map.values().for_each(|x| cards_in(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| cards_in(x, out)),
        _ => {}
    }
}

/// Cards hidden from `viewer`: other seats' hands and the set-aside cards.
fn hidden_from(m: &NachosMatch, viewer: Viewer) -> Vec<Card> {
    let mut hidden: Vec<Card> = m.set_aside.clone();
    for (s, h) in m.hands.iter().enumerate() {
        if viewer.seat() != Some(s) {
            hidden.extend(h);
        }
    }
    hidden
}

fn check_views(m: &NachosMatch) {
    let mut viewers: Vec<Viewer> = (0..m.players).map(Viewer::Player).collect();
    viewers.push(Viewer::Spectator);
    for viewer in viewers {
        let view = m.view_for(viewer);
        let json = serde_json::to_value(&view).unwrap();
        let mut seen = Vec::new();
        cards_in(&json, &mut seen);
        let hidden = hidden_from(m, viewer);
        for card in &seen {
            assert!(!hidden.contains(card), "{viewer:?} sees hidden {card:?}");
        }
        // Face-down spicy order is not in the view: only the count.
        assert_eq!(view.spicy_remaining, m.spicy_order.len() - m.spicy_next);
        assert!(json.get("spicy_order").is_none() && json.get("deal").is_none());
        match viewer {
            Viewer::Spectator => assert!(view.hand.is_none()),
            Viewer::Player(s) => assert_eq!(view.hand.as_ref().unwrap().len(), m.hands[s].len()),
        }
        // The played cards are exactly the cards of the completed tricks, sorted.
        let mut played = m.played.clone();
        played.sort_unstable();
        if m.phase != game_core::Phase::Playing {
            played.clear();
        }
        assert_eq!(
            view.played.iter().map(|c| c.card()).collect::<Vec<_>>(),
            played
        );
        // The view round-trips through JSON.
        let back: crate::NachosView = serde_json::from_value(json).unwrap();
        assert_eq!(back, view);
    }
}

/// Events carry no card that is still hidden anywhere.
fn check_events(m: &NachosMatch, events: &[Event]) {
    let json = serde_json::to_value(events).unwrap();
    let mut seen = Vec::new();
    cards_in(&json, &mut seen);
    let hidden = hidden_from(m, Viewer::Spectator);
    for card in &seen {
        assert!(!hidden.contains(card), "event reveals {card:?}");
    }
}

/// The legal set from the view equals the set of hand cards `apply` accepts; off-turn
/// seats have no legal action and are refused.
fn check_legal(m: &NachosMatch) {
    let turn = m.turn;
    for seat in 0..m.players {
        let legal = m.legal_actions_for(seat);
        if seat != turn {
            assert!(legal.is_empty());
            if let Some(&card) = m.hands[seat].first() {
                let mut probe = m.clone();
                let e = probe.apply(seat, &Action::Play { card }).unwrap_err();
                assert_eq!(e.code, game_core::codes::NOT_YOUR_TURN);
                assert_eq!(probe, *m);
            }
            continue;
        }
        assert!(!legal.is_empty(), "seat on turn has no move");
        let fast: Vec<Action> = m
            .playable_cards(seat)
            .map(|card| Action::Play { card })
            .collect();
        assert_eq!(fast, legal);
        for &card in &m.hands[seat] {
            let action = Action::Play { card };
            let mut probe = m.clone();
            let result = probe.apply(seat, &action);
            assert_eq!(result.is_ok(), legal.contains(&action), "{card:?}");
            if let Err(e) = result {
                assert_eq!(e.code, crate::MUST_FOLLOW_SUIT);
                assert_eq!(probe, *m);
            }
        }
    }
}

/// A random action that must be refused, with the state unchanged.
fn check_random_invalid(m: &NachosMatch, rng: &mut DeckRng) {
    let n = m.players;
    let (seat, card) = match rng.below(4) {
        0 => (
            n + rng.below(3),
            m.hands[m.turn]
                .first()
                .copied()
                .unwrap_or(Card::new(crate::Suit::Red, 2)),
        ),
        1 => {
            let number = [0u8, 15, 200][rng.below(3)];
            (m.turn, Card::new(crate::Suit::ALL[rng.below(3)], number))
        }
        2 => {
            // A card the seat on turn does not hold.
            let deck = canonical_deck();
            let missing: Vec<Card> = deck
                .into_iter()
                .filter(|c| !m.hands[m.turn].contains(c))
                .collect();
            (m.turn, missing[rng.below(missing.len())])
        }
        _ => (
            (m.turn + 1 + rng.below(n - 1)) % n,
            canonical_deck()[rng.below(45)],
        ),
    };
    let mut probe = m.clone();
    assert!(
        probe.apply(seat, &Action::Play { card }).is_err(),
        "{seat} {card:?}"
    );
    assert_eq!(probe, *m);
}

/// Plays one random match; `full` turns on the expensive per-step checks. Returns the
/// action log and every event.
fn random_match(game: u64, full: bool) -> (NachosMatch, Vec<(Seat, Action)>, Vec<Event>) {
    let players = players_for(game);
    let mut m = NachosMatch::new_match(&NachosOptions::default(), players).unwrap();
    let mut rng = Seed::from_u64(1_000_000 + game).rng();
    let mut log = Vec::new();
    let mut all_events = Vec::new();
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 200, "match does not end");
        match m.phase() {
            Phase::AwaitingRound => {
                let ev = m.start_round(&round_seed(game, m.round() + 1)).unwrap();
                check_events(&m, &ev);
                all_events.extend(ev);
            }
            Phase::Playing => {
                let seat = m.to_act()[0];
                if full {
                    check_legal(&m);
                    check_views(&m);
                }
                check_random_invalid(&m, &mut rng);
                let legal: Vec<Card> = m.playable_cards(seat).collect();
                let action = Action::Play {
                    card: legal[rng.below(legal.len())],
                };
                let ev = m.apply(seat, &action).unwrap();
                check_events(&m, &ev);
                log.push((seat, action));
                all_events.extend(ev);
            }
            Phase::Finished => break,
        }
        check_accounting(&m);
    }
    if full {
        check_views(&m);
    }
    let out = m.outcome().unwrap();
    assert!(!out.winners.is_empty());
    assert_eq!(out.scores, m.scores());
    assert_eq!(m.round(), 3);
    (m, log, all_events)
}

#[test]
fn property_random_matches_keep_every_invariant() {
    for game in 0..3_000 {
        random_match(game, game < 400);
    }
}

#[test]
fn property_replay_is_deterministic() {
    for game in 0..200 {
        let (played, log, events) = random_match(game, false);
        let mut m = NachosMatch::new_match(&NachosOptions::default(), players_for(game)).unwrap();
        let mut replayed_events = Vec::new();
        let mut actions = log.iter();
        while m.phase() != Phase::Finished {
            if m.phase() == Phase::AwaitingRound {
                replayed_events.extend(m.start_round(&round_seed(game, m.round() + 1)).unwrap());
            } else {
                let (seat, a) = actions.next().expect("log too short");
                replayed_events.extend(m.apply(*seat, a).unwrap());
            }
        }
        assert!(actions.next().is_none());
        assert_eq!(m, played);
        assert_eq!(replayed_events, events);
        for s in 0..m.players() {
            assert_eq!(
                m.view_for(Viewer::Player(s)),
                played.view_for(Viewer::Player(s))
            );
        }
        assert_eq!(m.deal_record(), played.deal_record());
    }
}
