//! Scenario tests per ruling (R-1, R-30..R-34), deterministic replay, and properties over
//! thousands of seeded random games.

use game_core::{DeckRng, Game, Phase, RuleError, Seed, Viewer, codes};
use serde_json::{Value, json};

use crate::cards::{Card, Colour, DECK_SIZE, FULL_DECK, Symbol, cards_of};
use crate::{
    Action, Event, MUST_FOLLOW_COLOUR, Options, Position, SYMBOL_POINTS, Trump, TrumpView,
};

use Colour::{Blue, Green, Purple, Red, Yellow};

fn c(colour: Colour, number: u8) -> Card {
    Card::new(colour, number)
}

fn bits(cards: &[Card]) -> u64 {
    cards.iter().fold(0, |a, c| a | c.bit())
}

fn play(card: Card) -> Action {
    Action::Play { card }
}

/// A match whose current round has explicit hands and indicators, through the public
/// [`Trump::from_position`]. `round_one` selects R-31's first-lead rule (lowest trump)
/// instead of "the dealer leads".
fn with_hands(
    hands: &[&[Card]],
    trump_ind: Card,
    symbol_ind: Card,
    dealer: usize,
    round_one: bool,
) -> Trump {
    let position = Position {
        hands: hands.iter().map(|h| h.to_vec()).collect(),
        trump_indicator: trump_ind,
        symbol_indicator: symbol_ind,
        dealer,
        round: if round_one { 1 } else { 2 },
        scores: Vec::new(),
    };
    Trump::from_position(&Options::default(), &position).unwrap()
}

/// Applies and expects success.
fn ok(g: &mut Trump, seat: usize, card: Card) -> Vec<Event> {
    g.apply(seat, &play(card))
        .unwrap_or_else(|e| panic!("seat {seat} playing {card}: {e}"))
}

/// Applies, expects the error `code`, and checks that nothing changed.
fn refused(g: &mut Trump, seat: usize, action: &Action, code: &str) -> RuleError {
    let before = g.clone();
    let e = g.apply(seat, action).expect_err("must be refused");
    assert_eq!(e.code, code, "{e}");
    assert_eq!(*g, before, "state changed by a refused action");
    e
}

/// Plays random legal moves (chosen from the view's legal actions) until the round ends.
fn random_round(g: &mut Trump, rng: &mut DeckRng, log: &mut Vec<(usize, Action)>) {
    while g.phase() == Phase::Playing {
        let seat = g.to_act()[0];
        let legal = g.legal_actions_for(seat);
        let a = legal[rng.below(legal.len())].clone();
        g.apply(seat, &a).unwrap();
        log.push((seat, a));
    }
}

// ---------------------------------------------------------------- the deal

#[test]
fn r30_deal_sizes_order_and_indicators() {
    for players in 2..=4 {
        for s in 0..200 {
            let mut g = Trump::new_match(&Options::default(), players).unwrap();
            let ev = g.start_round(&Seed::from_u64(s)).unwrap();
            let r = g.round.as_ref().unwrap();
            let size = 48 / players;
            for seat in 0..players {
                assert_eq!(r.hands[seat].count_ones() as usize, size);
            }
            // One at a time, starting with the seat after the dealer.
            for (i, card) in r.deck[..48].iter().enumerate() {
                assert_ne!(r.hands[(r.dealer + 1 + i) % players] & card.bit(), 0);
            }
            assert_eq!(r.trump_indicator, r.deck[48]);
            assert_eq!(r.symbol_indicator, r.deck[49]);
            assert_eq!(r.trump, r.deck[48].colour());
            assert_eq!(r.symbol, r.deck[49].symbol());
            assert_eq!(g.all_cards(), Some(FULL_DECK));
            let Event::RoundStarted {
                round,
                dealer,
                leader,
                hand_size,
                trump_indicator,
                symbol_indicator,
                trump_colour,
                symbol,
                ..
            } = &ev[0]
            else {
                panic!("{ev:?}")
            };
            assert_eq!(
                (*round, *dealer, *leader, *hand_size),
                (1, r.dealer, r.leader, size)
            );
            assert_eq!(
                (*trump_indicator, *symbol_indicator),
                (r.deck[48], r.deck[49])
            );
            assert_eq!((*trump_colour, *symbol), (r.trump, r.symbol));
        }
    }
}

#[test]
fn r1_first_dealer_is_drawn_highest_card_ties_redraw() {
    let mut dealers = [0usize; 4];
    let mut redraws = 0;
    for s in 0..400 {
        let mut g = Trump::new_match(&Options::default(), 4).unwrap();
        g.start_round(&Seed::from_u64(s)).unwrap();
        let r = g.round.as_ref().unwrap();
        dealers[r.dealer] += 1;
        let draw = &r.dealer_draw;
        assert!(draw.len() >= 4);
        // The last stage: the dealer drew the strictly highest number of that stage.
        let first = &draw[..4];
        let best = first.iter().map(|d| d.card.number()).max().unwrap();
        let top: Vec<usize> = first
            .iter()
            .filter(|d| d.card.number() == best)
            .map(|d| d.seat)
            .collect();
        if top.len() == 1 {
            assert_eq!(draw.len(), 4);
            assert_eq!(top[0], r.dealer);
        } else {
            redraws += 1;
            // The re-draw is among the tied seats only.
            assert!(draw[4..].iter().all(|d| top.contains(&d.seat)));
            assert!(top.contains(&r.dealer));
        }
        // Same seed, same dealer.
        let mut g2 = Trump::new_match(&Options::default(), 4).unwrap();
        g2.start_round(&Seed::from_u64(s)).unwrap();
        assert_eq!(g2, g);
    }
    assert!(dealers.iter().all(|&d| d > 50), "{dealers:?}");
    assert!(redraws > 0);
}

// ---------------------------------------------------------------- who leads

#[test]
fn r31_lowest_trump_in_any_hand_leads_round_one() {
    // Trump is blue (indicator blue 7); seat 2 holds blue 2, the lowest blue in a hand.
    let g = with_hands(
        &[
            &[c(Red, 1), c(Blue, 5)],
            &[c(Blue, 3), c(Yellow, 1)],
            &[c(Blue, 2), c(Red, 2)],
        ],
        c(Blue, 7),
        c(Green, 4),
        0,
        true,
    );
    assert_eq!(g.turn(), Some(2));
    assert_eq!(g.to_act(), vec![2]);
}

#[test]
fn r31_indicator_cards_are_skipped_for_the_first_lead() {
    // Red 1 and red 2 are the indicators: red 3 leads (the rulebook's own example).
    let g = with_hands(
        &[&[c(Red, 4), c(Green, 1)], &[c(Red, 3), c(Yellow, 1)]],
        c(Red, 1),
        c(Red, 2),
        1,
        true,
    );
    assert_eq!(g.turn(), Some(1));
    // And on seeded deals: the leader always holds the lowest trump held by anyone.
    for s in 0..500 {
        let players = 2 + (s as usize % 3);
        let mut g = Trump::new_match(&Options::default(), players).unwrap();
        g.start_round(&Seed::from_u64(s)).unwrap();
        let r = g.round.as_ref().unwrap();
        let mask = r.trump.mask();
        let lowest = (0..players)
            .map(|p| (r.hands[p] & mask).trailing_zeros())
            .min()
            .unwrap();
        assert_eq!((r.hands[r.leader] & mask).trailing_zeros(), lowest);
        let held = cards_of(r.hands[r.leader] & mask).next().unwrap();
        // Every lower trump lies as an indicator: only those are passed over.
        for n in 1..held.number() {
            let lower = c(r.trump, n);
            assert!(lower == r.trump_indicator || lower == r.symbol_indicator);
        }
    }
}

#[test]
fn r31_last_trick_winner_takes_indicators_deals_and_leads_next() {
    // Two players, two tricks. Symbol indicator yellow 3 bears a star (index 2+1 = 3).
    let star = Symbol::Star;
    let sym_ind = c(Yellow, 3);
    assert_eq!(sym_ind.symbol(), star);
    let trump_ind = c(Red, 9);
    let mut g = with_hands(
        &[&[c(Green, 1), c(Green, 5)], &[c(Green, 2), c(Blue, 1)]],
        trump_ind,
        sym_ind,
        1,
        false,
    );
    // Later-round rule: the dealer leads.
    assert_eq!(g.turn(), Some(1));
    ok(&mut g, 1, c(Green, 2));
    ok(&mut g, 0, c(Green, 5)); // seat 0 wins trick 1
    assert_eq!(g.turn(), Some(0));
    let v = g.view_for(Viewer::Spectator);
    assert_eq!((v.tricks_played, v.tricks_won.clone()), (1, vec![1, 0]));
    ok(&mut g, 0, c(Green, 1));
    let ev = ok(&mut g, 1, c(Blue, 1)); // off-colour, not trump: seat 0 wins the last trick
    let Some(Event::RoundEnded(res)) = ev.iter().find(|e| matches!(e, Event::RoundEnded(_))) else {
        panic!("{ev:?}")
    };
    assert_eq!(res.last_trick_winner, 0);
    let r = g.round.as_ref().unwrap();
    assert!(r.indicators_taken);
    assert_ne!(r.won[0] & trump_ind.bit(), 0);
    assert_ne!(r.won[0] & sym_ind.bit(), 0);
    assert_eq!(res.won_counts, vec![6, 0]);
    // Stars among seat 0's won cards: green 2 (1+2=3 → star), the symbol indicator.
    let expect = bits(&[
        c(Green, 1),
        c(Green, 5),
        c(Green, 2),
        c(Blue, 1),
        trump_ind,
        sym_ind,
    ]) & star.mask();
    assert_eq!(res.symbol_counts[0], expect.count_ones());
    assert_eq!(g.phase(), Phase::AwaitingRound);
    let v = g.view_for(Viewer::Spectator);
    assert_eq!(v.next_dealer, Some(0));
    assert_eq!(v.won_counts, vec![6, 0]);
    // Next round: seat 0 deals and leads, and the deal starts with seat 1.
    let ev = g.start_round(&Seed::from_u64(5)).unwrap();
    assert!(
        matches!(ev[0], Event::RoundStarted { dealer: 0, leader: 0, round: 3, ref dealer_draw, .. } if dealer_draw.is_empty())
    );
    let r = g.round.as_ref().unwrap();
    assert_ne!(r.hands[1] & r.deck[0].bit(), 0);
    assert_eq!(g.turn(), Some(0));
}

// ---------------------------------------------------------------- trick play

#[test]
fn r32_must_follow_colour_if_able() {
    let mut g = with_hands(
        &[
            &[c(Green, 4), c(Blue, 1)],
            &[c(Green, 2), c(Red, 9)],
            &[c(Yellow, 5), c(Purple, 1)],
        ],
        c(Red, 1),
        c(Red, 2),
        2,
        false,
    );
    assert_eq!(g.turn(), Some(2));
    ok(&mut g, 2, c(Yellow, 5));
    // Seat 0 has no yellow: anything goes, the view says so.
    let v = g.view_for(Viewer::Player(0));
    assert_eq!(v.playable(), vec![c(Green, 4), c(Blue, 1)]);
    assert_eq!(v.led_colour, Some(Yellow));
    ok(&mut g, 0, c(Green, 4));
    ok(&mut g, 1, c(Green, 2));
    // Nobody followed yellow and no trump: the led yellow 5 wins although green is higher.
    assert_eq!(g.turn(), Some(2));
    ok(&mut g, 2, c(Purple, 1));
    ok(&mut g, 0, c(Blue, 1));
    // A hand that holds the led colour must follow.
    let mut g = with_hands(
        &[&[c(Green, 4), c(Blue, 1)], &[c(Green, 2), c(Red, 9)]],
        c(Red, 1),
        c(Red, 2),
        0,
        false,
    );
    ok(&mut g, 0, c(Green, 4));
    let v = g.view_for(Viewer::Player(1));
    assert_eq!(v.playable(), vec![c(Green, 2)]);
    assert_eq!(Trump::legal_actions(&v), vec![play(c(Green, 2))]);
    let e = refused(&mut g, 1, &play(c(Red, 9)), MUST_FOLLOW_COLOUR);
    assert!(
        e.message.contains("green") && e.message.contains("red 9"),
        "{e}"
    );
    ok(&mut g, 1, c(Green, 2));
}

#[test]
fn r32_highest_trump_wins_else_highest_of_led_colour() {
    let trick = |cards: &[Card], trump: Colour| Trump::trick_winner_pos(cards, trump);
    // A low trump beats the led colour.
    assert_eq!(trick(&[c(Green, 10), c(Red, 1), c(Green, 9)], Red), 1);
    // Highest trump among several.
    assert_eq!(
        trick(&[c(Green, 10), c(Red, 3), c(Red, 8), c(Red, 5)], Red),
        2
    );
    // No trump: highest of the led colour; other colours never win.
    assert_eq!(
        trick(&[c(Green, 2), c(Blue, 10), c(Green, 7), c(Yellow, 9)], Red),
        2
    );
    assert_eq!(trick(&[c(Green, 2), c(Blue, 10)], Red), 0);
    // Trump led: highest trump.
    assert_eq!(trick(&[c(Red, 2), c(Red, 10), c(Blue, 10)], Red), 1);
    // Through play: the winner leads next.
    let mut g = with_hands(
        &[
            &[c(Green, 10), c(Blue, 2)],
            &[c(Yellow, 3), c(Blue, 4)],
            &[c(Green, 1), c(Blue, 9)],
        ],
        c(Yellow, 1),
        c(Red, 2),
        0,
        false,
    );
    assert_eq!(g.view_for(Viewer::Spectator).winning, None);
    ok(&mut g, 0, c(Green, 10));
    assert_eq!(g.view_for(Viewer::Spectator).winning, Some(0));
    ok(&mut g, 1, c(Yellow, 3)); // void in green, trumps
    // The view marks the trump as winning so far, for every viewer alike.
    assert_eq!(g.view_for(Viewer::Player(2)).winning, Some(1));
    // A card played and a trick won are no events: the view's `plays` says both.
    let ev = ok(&mut g, 2, c(Green, 1));
    assert!(ev.is_empty(), "{ev:?}");
    assert_eq!(g.turn(), Some(1));
    let v = g.view_for(Viewer::Player(2));
    assert_eq!(v.last_trick.as_ref().unwrap().winner, 1);
    // The trick's cards are in the view's `last_trick`, not repeated in the event.
    let cards: Vec<_> = v
        .last_trick
        .as_ref()
        .unwrap()
        .cards
        .iter()
        .map(|p| (p.seat, p.card))
        .collect();
    assert_eq!(
        cards,
        vec![(0, c(Green, 10)), (1, c(Yellow, 3)), (2, c(Green, 1))]
    );
    assert_eq!(v.tricks_won, vec![0, 1, 0]);
    assert_eq!(v.won_counts, vec![0, 3, 0]);
    assert!(v.trick.is_empty());
}

// ---------------------------------------------------------------- scoring

#[test]
fn r33_symbol_score_table() {
    assert_eq!(SYMBOL_POINTS, [0, 0, 1, 1, 2, 3, 5, 8, 13, 21, 34]);
    // The symbol indicator yellow 5 bears a circled plus ((5 - 1 + 1) mod 5 = 0); the
    // trump indicator red 4 a star.
    let sym_ind = c(Yellow, 5);
    assert_eq!(sym_ind.symbol(), Symbol::CircledPlus);
    assert_eq!(c(Red, 4).symbol(), Symbol::Star);
    let pool: Vec<Card> = cards_of(Symbol::CircledPlus.mask())
        .filter(|&x| x != sym_ind)
        .collect();
    assert_eq!(pool.len(), 9);
    // Seat 0 has won k of the other nine circled-plus cards, seat 1 the rest; seat 1 wins
    // the last trick (red 9 is trump) and so also takes the symbol indicator:
    // seat 0 counts k, seat 1 counts 10 - k. Over k = 0..=9 every count 0..=10 is scored.
    for k in 0..=9usize {
        let mut g = with_hands(
            &[&[c(Blue, 10)], &[c(Red, 9)]],
            c(Red, 4),
            sym_ind,
            1,
            false,
        );
        let r = g.round.as_mut().unwrap();
        r.won[0] = bits(&pool[..k]);
        r.won[1] = bits(&pool[k..]);
        ok(&mut g, 1, c(Red, 9));
        let ev = ok(&mut g, 0, c(Blue, 10));
        let Some(Event::RoundEnded(res)) = ev.first() else {
            panic!("{ev:?}")
        };
        assert_eq!(res.symbol_counts, vec![k as u32, 10 - k as u32]);
        assert_eq!(
            res.points,
            vec![SYMBOL_POINTS[k], SYMBOL_POINTS[10 - k]],
            "k = {k}"
        );
        assert_eq!(g.scores(), res.points);
        assert_eq!(res.totals, res.points);
        // Other cards (the blue 10, red 9, red 4) do not score.
        assert_eq!(res.won_counts, vec![k as u32, 9 - k as u32 + 4]);
        let v = g.view_for(Viewer::Spectator);
        assert_eq!(v.symbol_counts, res.symbol_counts);
        assert_eq!(v.last_round.as_ref(), Some(res));
    }
}

// ---------------------------------------------------------------- the match

/// A two-player round with one trick left that seat 1 wins, the given totals before it,
/// and symbol cards already won: seat 0 ends with `seat0_won`, seat 1 with `seat1_won`
/// (the symbol indicator it takes included).
fn last_trick_game(totals: [i64; 2], seat0_won: usize, seat1_won: usize) -> Trump {
    let sym_ind = c(Yellow, 5); // circled plus
    let mut g = with_hands(
        &[&[c(Blue, 10)], &[c(Red, 9)]],
        c(Red, 4),
        sym_ind,
        1,
        false,
    );
    let pool: Vec<Card> = cards_of(Symbol::CircledPlus.mask())
        .filter(|&x| x != sym_ind)
        .collect();
    let r = g.round.as_mut().unwrap();
    r.won[0] = bits(&pool[..seat0_won]);
    r.won[1] = bits(&pool[seat0_won..seat0_won + seat1_won - 1]);
    g.scores = totals.to_vec();
    g
}

#[test]
fn r34_race_to_144_highest_total_wins() {
    // Exactly the target, alone at the top: seat 1 wins.
    let mut g = last_trick_game([100, 142], 0, 4); // seat 1: 4 symbols, +2 = 144
    ok(&mut g, 1, c(Red, 9));
    ok(&mut g, 0, c(Blue, 10));
    assert_eq!(g.scores(), vec![100, 144]);
    assert_eq!(g.outcome().unwrap().winners, vec![1]);
    // Below the target: play on.
    let mut g = last_trick_game([100, 100], 0, 4); // seat 1 scores 2
    ok(&mut g, 1, c(Red, 9));
    ok(&mut g, 0, c(Blue, 10));
    assert_eq!(g.scores(), vec![100, 102]);
    assert_eq!(g.phase(), Phase::AwaitingRound);
    assert_eq!(g.outcome(), None);
    // Seat 1 reaches 144 but seat 0 is higher: seat 0 wins (highest total, R-34).
    let mut g = last_trick_game([150, 141], 0, 6); // seat 1: 6 symbols, +5 = 146
    ok(&mut g, 1, c(Red, 9));
    let ev = ok(&mut g, 0, c(Blue, 10));
    assert_eq!(g.scores(), vec![150, 146]);
    assert_eq!(g.phase(), Phase::Finished);
    assert_eq!(g.outcome().unwrap().winners, vec![0]);
    assert_eq!(
        ev.last(),
        Some(&Event::MatchEnded {
            winners: vec![0],
            scores: vec![150, 146]
        })
    );
    let v = g.view_for(Viewer::Player(1));
    assert!(v.match_over);
    assert_eq!(v.winners, vec![0]);
    assert!(v.playable().is_empty());
    // Nothing more can happen.
    assert_eq!(
        g.start_round(&Seed::from_u64(1)).unwrap_err().code,
        codes::WRONG_PHASE
    );
    refused(&mut g, 0, &play(c(Blue, 10)), codes::NO_ROUND);
}

#[test]
fn r34_tie_for_highest_plays_another_round() {
    // Seat 0 stands at 145, seat 1 at 144 and scores 1: tie at 145 → another round.
    let mut g = last_trick_game([145, 143], 0, 2);
    ok(&mut g, 1, c(Red, 9));
    ok(&mut g, 0, c(Blue, 10));
    assert_eq!(g.scores(), vec![145, 144]);
    let mut g = last_trick_game([145, 144], 0, 2);
    ok(&mut g, 1, c(Red, 9));
    let ev = ok(&mut g, 0, c(Blue, 10));
    assert_eq!(g.scores(), vec![145, 145]);
    assert_eq!(g.phase(), Phase::AwaitingRound);
    assert!(!ev.iter().any(|e| matches!(e, Event::MatchEnded { .. })));
    // The next round breaks the tie (or not) and the match goes on until it does.
    g.start_round(&Seed::from_u64(9)).unwrap();
    assert_eq!(g.round(), 3);
    let mut rng = Seed::from_u64(10).rng();
    let mut s = 10;
    while g.phase() != Phase::Finished {
        random_round(&mut g, &mut rng, &mut Vec::new());
        if g.phase() == Phase::AwaitingRound {
            s += 1;
            g.start_round(&Seed::from_u64(s)).unwrap();
        }
    }
    let sc = g.scores();
    let o = g.outcome().unwrap();
    assert_eq!(o.winners.len(), 1);
    assert!(sc[o.winners[0]] > sc[1 - o.winners[0]]);
}

#[test]
fn r34_tie_below_the_top_does_not_matter() {
    // Three players: seat 2 alone highest over the target, seats 0 and 1 tied below.
    let mut g = with_hands(
        &[&[c(Blue, 1)], &[c(Blue, 2)], &[c(Red, 9)]],
        c(Red, 4),
        c(Yellow, 5),
        2,
        false,
    );
    g.scores = vec![150, 150, 160];
    ok(&mut g, 2, c(Red, 9));
    ok(&mut g, 0, c(Blue, 1));
    ok(&mut g, 1, c(Blue, 2));
    assert_eq!(g.outcome().unwrap().winners, vec![2]);
}

// ---------------------------------------------------------------- wire format, errors

#[test]
fn action_and_option_wire_format() {
    let a: Action =
        serde_json::from_value(json!({"type":"play","card":{"colour":"purple","number":10}}))
            .unwrap();
    assert_eq!(a, play(c(Purple, 10)));
    let back = serde_json::to_value(&a).unwrap();
    // Written as the card's code alone; read in both forms.
    assert_eq!(back, json!("p10"));
    assert_eq!(serde_json::from_value::<Action>(back).unwrap(), a);
    let object = json!({"type":"play","card":"p10"});
    assert_eq!(serde_json::from_value::<Action>(object).unwrap(), a);
    // The object form with its symbol, as earlier versions wrote it (stored action logs).
    let old = json!({"type":"play","card":{"colour":"purple","number":10,"symbol":"star"}});
    assert_eq!(serde_json::from_value::<Action>(old).unwrap(), a);
    for bad in [
        json!({"type":"play","card":"p11"}),
        json!("p11"),
        json!("play"),
        json!(7),
        json!({"type":"play","card":"purple 10"}),
        json!({"type":"play","card":{"colour":"purple","number":10},"x":1}),
        json!({"type":"pass"}),
        json!({"type":"play"}),
        json!({"type":"play","card":{"colour":"purple","number":10,"symbol":"square"}}),
    ] {
        assert!(
            serde_json::from_value::<Action>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    assert_eq!(
        serde_json::from_value::<Options>(json!({})).unwrap(),
        Options { target: 144 }
    );
    assert!(serde_json::from_value::<Options>(json!({"targte": 3})).is_err());
    assert_eq!(
        Trump::new_match(&Options { target: 0 }, 2)
            .unwrap_err()
            .code,
        codes::BAD_OPTIONS
    );
    for n in [0, 1, 5] {
        assert_eq!(
            Trump::new_match(&Options::default(), n).unwrap_err().code,
            codes::BAD_PLAYER_COUNT
        );
    }
    assert_eq!(Trump::player_range(&Options::default()), (2, 4));
    assert_eq!(Trump::KIND, "trump");
    // Schemas exist for the server's API docs.
    let _ = schemars::schema_for!(TrumpView);
    let _ = schemars::schema_for!(Event);
}

#[test]
fn basic_errors_leave_state_unchanged() {
    let mut g = Trump::new_match(&Options::default(), 3).unwrap();
    refused(&mut g, 0, &play(c(Red, 1)), codes::NO_ROUND);
    refused(&mut g, 3, &play(c(Red, 1)), codes::BAD_SEAT);
    g.start_round(&Seed::from_u64(3)).unwrap();
    assert_eq!(g.players(), 3);
    let e = g.start_round(&Seed::from_u64(4)).unwrap_err();
    assert_eq!(e.code, codes::WRONG_PHASE);
    assert_eq!(e.message, "a round is already in progress");
    let turn = g.turn().unwrap();
    let other = (turn + 1) % 3;
    let their = cards_of(g.round.as_ref().unwrap().hands[other])
        .next()
        .unwrap();
    refused(&mut g, other, &play(their), codes::NOT_YOUR_TURN);
    refused(&mut g, turn, &play(their), codes::CARD_NOT_IN_HAND);
    refused(&mut g, 7, &play(their), codes::BAD_SEAT);
}

// ---------------------------------------------------------------- replay

/// Plays a whole random match; returns the per-round (seed, actions) log.
/// Per-round `(round seed, [(seat, action)])`, as the server logs a match.
type MatchLog = Vec<(u64, Vec<(usize, Action)>)>;

fn random_match(players: usize, opts: &Options, seed: u64) -> (Trump, MatchLog) {
    let mut g = Trump::new_match(opts, players).unwrap();
    let mut rng = Seed::from_u64(seed ^ 0xdead_beef).rng();
    let mut log = Vec::new();
    let mut k = 0;
    while g.phase() == Phase::AwaitingRound {
        let round_seed = seed * 1000 + k;
        k += 1;
        g.start_round(&Seed::from_u64(round_seed)).unwrap();
        let mut actions = Vec::new();
        random_round(&mut g, &mut rng, &mut actions);
        log.push((round_seed, actions));
        assert!(k < 1000, "match does not end");
    }
    (g, log)
}

#[test]
fn deterministic_replay_from_seeds_and_actions() {
    for (players, seed) in [(2, 1), (3, 2), (4, 3)] {
        let (g, log) = random_match(players, &Options::default(), seed);
        // Replay through JSON, as the server stores the log.
        let json = serde_json::to_string(&log).unwrap();
        let log2: MatchLog = serde_json::from_str(&json).unwrap();
        let mut h = Trump::new_match(&Options::default(), players).unwrap();
        for (round_seed, actions) in &log2 {
            h.start_round(&Seed::from_u64(*round_seed)).unwrap();
            for (seat, a) in actions {
                h.apply(*seat, a).unwrap();
            }
        }
        assert_eq!(h, g);
        assert_eq!(h.scores(), g.scores());
        assert_eq!(h.outcome(), g.outcome());
        for v in [Viewer::Spectator, Viewer::Player(0)] {
            assert_eq!(
                serde_json::to_value(h.view_for(v)).unwrap(),
                serde_json::to_value(g.view_for(v)).unwrap()
            );
        }
        assert_eq!(h.deal_record(), g.deal_record());
    }
}

// ---------------------------------------------------------------- properties

/// Every card object (`{"colour":…,"number":…}`) anywhere in a JSON value.
fn cards_in_json(v: &Value, out: &mut Vec<Card>) {
    match v {
        Value::Object(m) => {
            if m.contains_key("colour") && m.contains_key("number") {
                out.push(serde_json::from_value(v.clone()).unwrap());
            } else {
                m.values().for_each(|x| cards_in_json(x, out));
            }
        }
        Value::Array(a) => a.iter().for_each(|x| cards_in_json(x, out)),
        _ => {}
    }
}

/// no view shows a card from a hand other than the viewer's; the viewer's hand is
/// exactly its hand, sorted; counts match.
fn check_views(g: &Trump) {
    let r = g.round.as_ref().unwrap();
    let n = g.players;
    let viewers = (0..n).map(Viewer::Player).chain([Viewer::Spectator]);
    for viewer in viewers {
        let v = g.view_for(viewer);
        let hidden = (0..n)
            .filter(|&s| Some(s) != viewer.seat())
            .fold(0, |a, s| a | r.hands[s]);
        let mut seen = Vec::new();
        cards_in_json(&serde_json::to_value(&v).unwrap(), &mut seen);
        for card in seen {
            assert_eq!(card.bit() & hidden, 0, "{viewer:?} sees hidden {card}");
        }
        match viewer.seat() {
            Some(s) => {
                let hand = v.hand.as_ref().unwrap();
                assert_eq!(*hand, cards_of(r.hands[s]).collect::<Vec<_>>());
                assert!(hand.windows(2).all(|w| w[0] < w[1]));
            }
            None => {
                assert!(v.hand.is_none());
                assert!(v.playable().is_empty());
            }
        }
        assert_eq!(
            v.hand_counts,
            (0..n).map(|s| r.hands[s].count_ones()).collect::<Vec<_>>()
        );
        // The played cards are exactly the cards of the completed tricks, for everyone.
        if g.phase == Phase::Playing {
            let tricks = r.tricks_played as usize * n;
            assert_eq!(v.played.len(), tricks);
            assert_eq!(v.played, cards_of(r.played()).collect::<Vec<_>>());
            assert_eq!(
                r.played() & (r.trump_indicator.bit() | r.symbol_indicator.bit()),
                0
            );
        } else {
            assert!(v.played.is_empty());
        }
        // The view round-trips through JSON (clients and bots get it that way).
        let back: TrumpView = serde_json::from_value(serde_json::to_value(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }
}

#[test]
fn properties_over_seeded_random_games() {
    let games = 2000u64;
    let mut total_rounds = 0;
    for seed in 0..games {
        let players = 2 + (seed % 3) as usize;
        // Short races keep the loop fast; every 250th game is the full race to 144 (the
        // replay test plays more of those).
        let target = if seed % 250 == 0 {
            144
        } else {
            1 + (seed % 5) as u32
        };
        let opts = Options { target };
        let mut g = Trump::new_match(&opts, players).unwrap();
        let mut rng = Seed::from_u64(seed ^ 0x5eed).rng();
        let deep = seed < 30; // exhaustive legality and view checks on some games
        let mut round_seed = seed * 1000;
        let mut steps = 0;
        while g.phase() != Phase::Finished {
            assert_eq!(g.phase(), Phase::AwaitingRound);
            assert!(g.to_act().is_empty());
            // Between rounds every play is refused with nothing changed.
            let card = Card::from_index(rng.below(DECK_SIZE));
            refused(&mut g, rng.below(players), &play(card), codes::NO_ROUND);
            round_seed += 1;
            g.start_round(&Seed::from_u64(round_seed)).unwrap();
            while g.phase() == Phase::Playing {
                steps += 1;
                assert!(steps < 100_000, "match does not end");
                // Every card is somewhere, exactly once.
                assert_eq!(g.all_cards(), Some(FULL_DECK));
                if deep || steps % 13 == 0 {
                    check_views(&g);
                }
                let seat = g.turn().unwrap();
                assert_eq!(g.to_act(), vec![seat]);
                let legal = g.legal_actions_for(seat);
                assert!(!legal.is_empty());
                // The view's playable cards (read from hand and trick) are the rules' own.
                let mask = Trump::playable_mask(g.round.as_ref().unwrap());
                assert_eq!(legal, cards_of(mask).map(play).collect::<Vec<_>>());
                for other in (0..players).filter(|&s| s != seat) {
                    assert!(g.legal_actions_for(other).is_empty());
                }
                if deep {
                    // legal_actions is exactly the set of accepted plays.
                    for i in 0..DECK_SIZE {
                        let a = play(Card::from_index(i));
                        let mut h = g.clone();
                        let accepted = h.apply(seat, &a).is_ok();
                        assert_eq!(accepted, legal.contains(&a), "{a:?}");
                        if !accepted {
                            assert_eq!(h, g);
                        }
                    }
                } else {
                    let a = &legal[rng.below(legal.len())];
                    g.clone().apply(seat, a).unwrap();
                }
                // A random invalid attempt: random seat (maybe off the table), random card.
                let bad_seat = rng.below(players + 1);
                let a = play(Card::from_index(rng.below(DECK_SIZE)));
                let is_legal = bad_seat == seat && legal.contains(&a);
                if !is_legal {
                    let before = g.clone();
                    assert!(g.apply(bad_seat, &a).is_err());
                    assert_eq!(g, before);
                }
                let a = legal[rng.below(legal.len())].clone();
                let events = g.apply(seat, &a).unwrap();
                // Events show only played cards and the (face-up) indicators.
                let r = g.round.as_ref().unwrap();
                let in_hands = (0..players).fold(0, |acc, s| acc | r.hands[s]);
                let mut seen = Vec::new();
                cards_in_json(&serde_json::to_value(&events).unwrap(), &mut seen);
                assert!(seen.iter().all(|c| c.bit() & in_hands == 0), "{events:?}");
            }
            // Round over: all 50 cards are in won piles, indicators included.
            let r = g.round.as_ref().unwrap();
            assert!(r.indicators_taken);
            assert_eq!(g.all_cards(), Some(FULL_DECK));
            assert_eq!(r.hands, [0; 4]);
            let res = g.last_result.as_ref().unwrap();
            assert_eq!(res.won_counts.iter().sum::<u32>(), 50);
            assert_eq!(res.symbol_counts.iter().sum::<u32>(), 10);
            assert_eq!(res.totals, g.scores());
            check_views(&g);
        }
        total_rounds += g.round();
        let o = g.outcome().unwrap();
        assert_eq!(o.winners.len(), 1);
        let best = *o.scores.iter().max().unwrap();
        assert!(best >= i64::from(target));
        assert_eq!(o.scores.iter().filter(|&&s| s == best).count(), 1);
        assert_eq!(o.scores[o.winners[0]], best);
    }
    // The loop really covered thousands of rounds.
    assert!(total_rounds > 3 * games as u32 / 2, "{total_rounds}");
}

/// The rules page's symbol table matches R-30 as the code computes it.
#[test]
fn rules_page_symbol_table_matches_r30() {
    let page = include_str!("../../../web/rules/trump.html");
    let glyph = |s: Symbol| match s {
        Symbol::CircledPlus => "⊕",
        Symbol::Circle => "○",
        Symbol::Square => "□",
        Symbol::Star => "☆",
        Symbol::Waves => "≋",
    };
    for n in 1..=5u8 {
        let row: String = Colour::ALL
            .iter()
            .map(|&col| format!("<td>{}</td>", glyph(c(col, n).symbol())))
            .collect();
        let row = format!("<tr><td>{n} and {}</td>{row}</tr>", n + 5);
        assert!(page.contains(&row), "missing {row}");
    }
}

// ---------------------------------------------------------------- pinned deals

/// A deal record with every card as its canonical index (`10 × colour + number − 1`).
struct PinnedDeal {
    dealer_draw: Vec<(usize, usize)>,
    dealer: usize,
    deck: Vec<usize>,
    hands: Vec<Vec<usize>>,
    trump_indicator: usize,
    symbol_indicator: usize,
    first_leader: usize,
}

fn pinned_deal(g: &Trump) -> PinnedDeal {
    let rec = g.deal_record();
    let idx = |v: &Value| serde_json::from_value::<Card>(v.clone()).unwrap().index();
    let list = |v: &Value| v.as_array().unwrap().iter().map(idx).collect::<Vec<_>>();
    let seat = |v: &Value| v.as_u64().unwrap() as usize;
    PinnedDeal {
        dealer_draw: rec["dealer_draw"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (seat(&d["seat"]), idx(&d["card"])))
            .collect(),
        dealer: seat(&rec["dealer"]),
        deck: list(&rec["deck"]),
        hands: rec["hands"].as_array().unwrap().iter().map(list).collect(),
        trump_indicator: idx(&rec["trump_indicator"]),
        symbol_indicator: idx(&rec["symbol_indicator"]),
        first_leader: seat(&rec["first_leader"]),
    }
}

/// published seeds must keep reproducing published deals. Seed 2068
/// at a table of four is pinned to its exact deal record: a change to the shuffle, the
/// dealer draw (this one ties twice: two 9s, then two 4s, before yellow 9 beats green 1),
/// the dealing order or the indicators breaks this test.
#[test]
fn r0_fixed_seed_reproduces_the_published_deal() {
    let mut g = Trump::new_match(&Options::default(), 4).unwrap();
    g.start_round(&Seed::from_u64(2068)).unwrap();
    let d = pinned_deal(&g);
    assert_eq!(
        d.dealer_draw,
        [
            (0, 11),
            (1, 8),
            (2, 48),
            (3, 10),
            (1, 33),
            (2, 3),
            (1, 20),
            (2, 28)
        ]
    );
    assert_eq!(d.dealer, 2);
    assert_eq!(
        d.deck,
        [
            43, 26, 48, 15, 31, 11, 25, 1, 10, 45, 23, 44, 47, 6, 24, 13, 27, 34, 28, 5, 32, 16,
            17, 30, 33, 38, 12, 2, 4, 19, 37, 0, 14, 41, 8, 22, 29, 49, 18, 3, 7, 20, 39, 42, 9,
            36, 21, 40, 46, 35
        ]
    );
    assert_eq!(
        d.hands,
        [
            vec![6, 11, 16, 19, 20, 26, 34, 36, 38, 41, 45, 49],
            vec![8, 12, 17, 18, 21, 23, 24, 25, 28, 37, 39, 48],
            vec![0, 1, 2, 3, 5, 13, 15, 22, 30, 40, 42, 44],
            vec![4, 7, 9, 10, 14, 27, 29, 31, 32, 33, 43, 47]
        ]
    );
    // Purple 7 sets trump, blue 6's symbol (a star) is collected; seat 2 holds purple 1.
    assert_eq!((d.trump_indicator, d.symbol_indicator), (46, 35));
    assert_eq!(d.first_leader, 2);
    // The live state is the record: the hands in play are the dealt ones.
    let r = g.round.as_ref().unwrap();
    for (s, h) in d.hands.iter().enumerate() {
        assert_eq!(
            cards_of(r.hands[s]).map(Card::index).collect::<Vec<_>>(),
            *h
        );
    }
}

// ---------------------------------------------------------------- explicit positions

/// A change to a position, for the refusal cases.
type Edit<'a> = &'a dyn Fn(&mut Position);

#[test]
fn from_position_refuses_inconsistent_hands() {
    let good = Position {
        hands: vec![vec![c(Red, 1), c(Red, 2)], vec![c(Blue, 1), c(Blue, 2)]],
        trump_indicator: c(Green, 1),
        symbol_indicator: c(Green, 2),
        dealer: 1,
        round: 1,
        scores: Vec::new(),
    };
    let g = Trump::from_position(&Options::default(), &good).unwrap();
    assert_eq!(
        (g.round(), g.phase(), g.scores()),
        (1, Phase::Playing, vec![0, 0])
    );
    let code = |f: &dyn Fn(&mut Position), opts: &Options| {
        let mut p = good.clone();
        f(&mut p);
        Trump::from_position(opts, &p).unwrap_err().code
    };
    let d = Options::default();
    let cases: [(Edit, &str); 9] = [
        (&|p| p.hands.truncate(1), codes::BAD_PLAYER_COUNT),
        (
            &|p| p.hands = vec![vec![c(Red, 3)]; 5],
            codes::BAD_PLAYER_COUNT,
        ),
        (&|p| p.hands[1].pop().map(drop).unwrap(), codes::BAD_OPTIONS),
        (
            &|p| p.hands = vec![Vec::new(), Vec::new()],
            codes::BAD_OPTIONS,
        ),
        (&|p| p.hands[1][0] = c(Red, 1), codes::BAD_OPTIONS),
        (&|p| p.symbol_indicator = c(Blue, 2), codes::BAD_OPTIONS),
        (&|p| p.dealer = 2, codes::BAD_OPTIONS),
        (&|p| p.round = 0, codes::BAD_OPTIONS),
        (&|p| p.scores = vec![3], codes::BAD_OPTIONS),
    ];
    for (i, (f, expected)) in cases.iter().enumerate() {
        assert_eq!(code(*f, &d), *expected, "case {i}");
    }
    assert_eq!(code(&|_| {}, &Options { target: 0 }), codes::BAD_OPTIONS);
    // Given scores are the match totals the round adds to; the options are kept.
    let mut p = good.clone();
    p.scores = vec![10, 20];
    let g = Trump::from_position(&Options { target: 55 }, &p).unwrap();
    assert_eq!(g.scores(), vec![10, 20]);
    assert_eq!(g.options(), &Options { target: 55 });
    // Later rounds: the dealer leads.
    p.round = 4;
    let g = Trump::from_position(&d, &p).unwrap();
    assert_eq!((g.round(), g.turn()), (4, Some(1)));
}

/// A real game in mid-round with its hidden cards, for `from_view_and_hidden`.
fn mid_round(players: usize, seed: u64, plays: usize) -> (Trump, Vec<Vec<Card>>, Vec<Vec<Card>>) {
    let mut g = Trump::new_match(&Options::default(), players).unwrap();
    g.start_round(&Seed::from_u64(seed)).unwrap();
    let mut rng = Seed::from_u64(seed + 1).rng();
    for _ in 0..plays {
        let seat = g.to_act()[0];
        let legal = g.legal_actions_for(seat);
        g.apply(seat, &legal[rng.below(legal.len())]).unwrap();
    }
    let r = g.round.as_ref().unwrap();
    let hands = (0..players)
        .map(|s| cards_of(r.hands[s]).collect())
        .collect();
    let won = (0..players).map(|s| cards_of(r.won[s]).collect()).collect();
    (g, hands, won)
}

/// The bots' constructor: the true hidden cards rebuild a state that looks and plays
/// exactly as the real one; every inconsistent guess is refused.
#[test]
fn from_view_and_hidden_rebuilds_the_truth_and_refuses_inconsistent_guesses() {
    // 9 plays at 3 seats: three tricks done, nothing on the table; 10: one card on it.
    for plays in [9, 10, 17] {
        let (g, hands, won) = mid_round(3, 40 + plays as u64, plays);
        let me = 1;
        let view = g.view_for(Viewer::Player(me));
        let h = Trump::from_view_and_hidden(&view, &hands, &won).unwrap();
        for s in 0..3 {
            assert_eq!(h.view_for(Viewer::Player(s)), g.view_for(Viewer::Player(s)));
        }
        // Both play on identically.
        let (mut a, mut b) = (g.clone(), h);
        let mut rng = Seed::from_u64(7).rng();
        while a.phase() == Phase::Playing {
            let seat = a.to_act()[0];
            let legal = a.legal_actions_for(seat);
            assert_eq!(legal, b.legal_actions_for(seat));
            let act = &legal[rng.below(legal.len())];
            assert_eq!(a.apply(seat, act).unwrap(), b.apply(seat, act).unwrap());
        }
        assert_eq!(a.scores(), b.scores());

        let bad = |v: &TrumpView, hs: &[Vec<Card>], ws: &[Vec<Card>]| {
            assert_eq!(
                Trump::from_view_and_hidden(v, hs, ws).unwrap_err().code,
                codes::BAD_OPTIONS
            );
        };
        let other = (me + 1) % 3;
        // A spectator knows no hand; a finished round is no round in progress.
        bad(&g.view_for(Viewer::Spectator), &hands, &won);
        let mut v = view.clone();
        v.phase = Phase::AwaitingRound;
        bad(&v, &hands, &won);
        bad(&view, &hands[..2], &won);
        bad(&view, &hands, &won[..2]);
        for f in [
            |v: &mut TrumpView| v.trump_indicator = None,
            |v: &mut TrumpView| v.symbol_indicator = None,
            |v: &mut TrumpView| v.leader = None,
            |v: &mut TrumpView| v.turn = None,
        ] {
            let mut v = view.clone();
            f(&mut v);
            bad(&v, &hands, &won);
        }
        // Swap one hidden card between two other seats' hands: counts hold, the viewer's
        // hand does not change, so this is a valid guess.
        let third = (me + 2) % 3;
        let mut swapped = hands.clone();
        let (x, y) = (swapped[other][0], swapped[third][0]);
        swapped[other][0] = y;
        swapped[third][0] = x;
        assert!(Trump::from_view_and_hidden(&view, &swapped, &won).is_ok());
        // A hand one card short (the card goes missing).
        let mut short = hands.clone();
        short[other].pop();
        bad(&view, &short, &won);
        // One card moved from a hand to another: counts differ.
        let mut moved = hands.clone();
        let card = moved[other].pop().unwrap();
        moved[third].push(card);
        bad(&view, &moved, &won);
        // A card in two hands (counts hold, a card goes missing).
        let mut twice = hands.clone();
        twice[other][0] = twice[third][0];
        bad(&view, &twice, &won);
        // A hand holding an indicator, or a card on the table.
        let mut ind = hands.clone();
        ind[other][0] = view.trump_indicator.unwrap();
        bad(&view, &ind, &won);
        if let Some(p) = view.trick.first() {
            let mut on_table = hands.clone();
            on_table[other][0] = p.card;
            bad(&view, &on_table, &won);
        }
        // The viewer's own hand must be the real one.
        let mut mine = hands.clone();
        let (m0, o0) = (mine[me][0], mine[other][0]);
        mine[me][0] = o0;
        mine[other][0] = m0;
        bad(&view, &mine, &won);
        // Won piles: another seat's pile swapped with a hand card keeps every count
        // only if the symbols agree; a pile with a card never played is refused.
        if let Some(wc) = won.iter().flatten().next().copied() {
            let owner = won.iter().position(|w| w.contains(&wc)).unwrap();
            let hand_seat = if owner == me { other } else { owner };
            let hc = hands[hand_seat]
                .iter()
                .copied()
                .find(|c| {
                    c.symbol() == wc.symbol()
                        || view.symbol != Some(c.symbol()) && view.symbol != Some(wc.symbol())
                })
                .filter(|_| hand_seat != me);
            if let Some(hc) = hc {
                let mut hs = hands.clone();
                let mut ws = won.clone();
                let i = ws[owner].iter().position(|&c| c == wc).unwrap();
                ws[owner][i] = hc;
                let j = hs[hand_seat].iter().position(|&c| c == hc).unwrap();
                hs[hand_seat][j] = wc;
                bad(&view, &hs, &ws);
            }
            // A won card in the wrong seat's pile: the counts change.
            let mut ws = won.clone();
            let i = ws[owner].iter().position(|&c| c == wc).unwrap();
            ws[owner].remove(i);
            ws[(owner + 1) % 3].push(wc);
            bad(&view, &hands, &ws);
        }
    }
}

/// in round 1 nobody may hold a trump (a position with few cards); then the dealer
/// leads. The lowest trump is looked for among trumps only, not the lowest card.
#[test]
fn r31_round_one_without_trumps_in_hands_the_dealer_leads() {
    let p = Position {
        hands: vec![vec![c(Red, 1), c(Yellow, 2)], vec![c(Red, 3), c(Green, 9)]],
        trump_indicator: c(Blue, 7),
        symbol_indicator: c(Green, 4),
        dealer: 1,
        round: 1,
        scores: Vec::new(),
    };
    let g = Trump::from_position(&Options::default(), &p).unwrap();
    assert_eq!(g.turn(), Some(1));
    let mut q = p.clone();
    q.hands[1][1] = c(Blue, 9);
    q.dealer = 0;
    assert_eq!(
        Trump::from_position(&Options::default(), &q)
            .unwrap()
            .turn(),
        Some(1)
    );
}

/// a seat not at the table sees what a spectator sees; before the first round a
/// seat's hand is empty, a spectator's absent.
#[test]
fn r4_views_of_seats_outside_the_table_and_before_the_first_round() {
    let mut g = Trump::new_match(&Options::default(), 3).unwrap();
    assert_eq!(g.view_for(Viewer::Player(0)).hand, Some(Vec::new()));
    assert_eq!(g.view_for(Viewer::Spectator).hand, None);
    g.start_round(&Seed::from_u64(8)).unwrap();
    let outside = g.view_for(Viewer::Player(3));
    assert_eq!(outside.hand, None);
    assert!(outside.playable().is_empty());
    let turn = g.turn().unwrap();
    for s in 0..3 {
        let v = g.view_for(Viewer::Player(s));
        assert_eq!(v.playable().is_empty(), s != turn, "seat {s}");
    }
}

/// a dealer draw that runs through its deck shuffles a fresh one exactly when the
/// rest cannot give every tied seat a card, and not before. The real deck (50 cards) runs
/// out only after a long run of ties, so this drives the draw with small decks of mostly
/// equal numbers, where ties are the rule.
#[test]
fn r1_dealer_draw_reshuffles_only_when_the_deck_cannot_serve_every_tied_seat() {
    let mut reshuffles_seen = 0;
    for (len, players) in [(4, 2), (5, 2), (5, 3), (6, 3), (6, 4), (7, 4)] {
        for s in 0..40 {
            // One 9, the rest 5s (of distinct colours, so distinct cards while `len` ≤ 6,
            // and a repeated one at 7 does not matter to the draw): ties are the rule.
            let small: Vec<Card> = (0..len)
                .map(|i| {
                    if i == 0 {
                        c(Blue, 9)
                    } else {
                        c(Colour::ALL[i % 5], 5)
                    }
                })
                .collect();
            let mut fresh_decks = 0;
            let mut record = Vec::new();
            let mut rng = Seed::from_u64(s).rng();
            let dealer = crate::deal::draw_dealer(&mut rng, players, &mut record, &mut || {
                fresh_decks += 1;
                small.clone()
            });
            // Replay the stages from the record: who drew in each stage and where in the
            // deck; a fresh deck is due exactly when the rest is too short.
            let mut expected_decks = 1;
            let mut pos = 0;
            let mut contenders: Vec<usize> = (0..players).collect();
            let mut i = 0;
            loop {
                if pos + contenders.len() > len {
                    expected_decks += 1;
                    pos = 0;
                }
                let stage = &record[i..i + contenders.len()];
                assert_eq!(stage.iter().map(|d| d.seat).collect::<Vec<_>>(), contenders);
                i += contenders.len();
                pos += contenders.len();
                let best = stage.iter().map(|d| d.card.number()).max().unwrap();
                contenders = stage
                    .iter()
                    .filter(|d| d.card.number() == best)
                    .map(|d| d.seat)
                    .collect();
                if contenders.len() == 1 {
                    break;
                }
            }
            assert_eq!(i, record.len());
            assert_eq!(dealer, contenders[0]);
            assert_eq!(
                fresh_decks, expected_decks,
                "deck of {len}, {players} seats, seed {s}"
            );
            reshuffles_seen += expected_decks - 1;
        }
    }
    assert!(reshuffles_seen > 20, "{reshuffles_seen}");
}

/// The trick on the table in a view names who played each card, clockwise from the
/// leader and wrapping past the last seat.
#[test]
fn r2_the_trick_in_a_view_names_its_players_clockwise_from_the_leader() {
    let mut g = with_hands(
        &[
            &[c(Red, 1), c(Red, 2)],
            &[c(Red, 3), c(Red, 4)],
            &[c(Red, 5), c(Red, 6)],
        ],
        c(Blue, 1),
        c(Blue, 2),
        2,
        false,
    );
    assert_eq!(g.turn(), Some(2));
    ok(&mut g, 2, c(Red, 5));
    ok(&mut g, 0, c(Red, 1));
    let v = g.view_for(Viewer::Spectator);
    let seats: Vec<usize> = v.trick.iter().map(|p| p.seat).collect();
    assert_eq!(seats, vec![2, 0]);
    assert_eq!(v.trick[1].card, c(Red, 1));
    assert_eq!(v.led_colour, Some(Red));
}
