//! A game rebuilt from one seat's view of a round in progress and a guess at what that
//! seat cannot see: the states a search bot samples (`bots`). Apart from `state`, whose
//! types the view is built from, so that the state's module does not depend on the view's.

use game_core::{Phase, RuleError, Seed};

use crate::cards::{Card, deck};
use crate::state::{Round, Rummy, SeatState, StreamRng};
use crate::view::SetView;

impl Rummy {
    /// A state consistent with `view` (a seat's view of a round in progress) in which what
    /// the viewer cannot see is as guessed: `hands` (every seat's hand, the viewer's own
    /// the real one), `stock_top_last`, `discard_below_top` (the discard pile under its
    /// visible top, bottom first) and `stream` (the R-21 reshuffle's stream). With the
    /// tables and the discard top they must hold every card of the deck once. A search bot
    /// samples such states; the deal record is absent.
    pub fn from_view_and_hidden(
        view: &crate::View,
        hands: Vec<Vec<Card>>,
        stock_top_last: Vec<Card>,
        discard_below_top: Vec<Card>,
        stream: &Seed,
    ) -> Result<Rummy, RuleError> {
        let bad = |m: &str| RuleError::new(game_core::codes::BAD_OPTIONS, m.to_string());
        let n = view.players;
        let (Some(me), Some(turn), Some(stage), Some(own), Phase::Playing) = (
            view.viewer.seat().filter(|&s| s < n),
            view.turn,
            view.stage,
            view.hand.as_ref(),
            view.phase,
        ) else {
            return Err(bad("needs a player's view of a round in progress"));
        };
        let top = view.discard_top;
        if hands.len() != n
            || (0..n).any(|s| hands[s].len() != view.tables[s].hand_count)
            || stock_top_last.len() != view.stock_count
            || discard_below_top.len() + usize::from(top.is_some()) != view.discard_count
        {
            return Err(bad("the guess does not match the view's counts"));
        }
        let ids = |cs: &[Card]| {
            let mut v: Vec<u8> = cs.iter().map(|c| c.id).collect();
            v.sort_unstable();
            v
        };
        if ids(&hands[me]) != ids(own) {
            return Err(bad("the viewer's hand differs"));
        }
        let mut all: Vec<Card> = hands.iter().flatten().copied().collect();
        all.extend(&stock_top_last);
        all.extend(&discard_below_top);
        all.extend(top);
        for t in &view.tables {
            all.extend(t.sets.iter().flat_map(|s| s.cards.iter().map(|p| p.card)));
        }
        if ids(&all) != ids(&deck(view.target)) {
            return Err(bad("a card is missing or in two places"));
        }
        let seats = hands
            .into_iter()
            .zip(&view.tables)
            .map(|(mut hand, t)| {
                hand.sort_by_key(|c| c.sort_key());
                SeatState {
                    hand,
                    sets: t.sets.iter().map(SetView::to_table_set).collect(),
                    opened: t.opened,
                }
            })
            .collect();
        let mut discard = discard_below_top;
        discard.extend(top);
        Ok(Rummy {
            options: view.options.clone(),
            players: n,
            phase: Phase::Playing,
            round_no: view.round,
            scores: view.scores.clone(),
            round: Some(Round {
                stock: stock_top_last,
                discard,
                seats,
                dealer: view.dealer.unwrap_or(0),
                turn,
                stage,
                reshuffled: view.reshuffled,
                rng: StreamRng(stream.rng()),
                deal: serde_json::Value::Null,
            }),
            last: view.last_round.clone(),
            outcome: None,
        })
    }
}
