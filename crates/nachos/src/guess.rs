//! A match rebuilt from one seat's view of a round in progress and a guess at what that
//! seat cannot see: the states a search bot samples (`bots`). Apart from `state`, whose
//! types the view is built from, so that the state's module does not depend on the view's.

use game_core::{Phase, RuleError, codes};

use crate::cards::{Card, canonical_deck};
use crate::state::{NachosMatch, Played};

impl NachosMatch {
    /// A state consistent with `view` (a seat's view of a round in progress) in which what
    /// the viewer cannot see is as guessed: `hands` (every seat's hand, the viewer's own
    /// the real one), `set_aside` (the unseen cards, R-52) and `spicy_rest` (the face-down
    /// spicy cards, top first). A search bot samples such states; the cards the guesses
    /// leave over must be the view's `played` cards, and the deal record is absent.
    pub fn from_view_and_hidden(
        view: &crate::view::NachosView,
        hands: Vec<Vec<Card>>,
        set_aside: Vec<Card>,
        spicy_rest: Vec<u8>,
    ) -> Result<NachosMatch, RuleError> {
        let bad = |m: &str| RuleError::new(codes::BAD_OPTIONS, m.to_string());
        let n = view.players;
        let (Some(me), Some(leader), Some(turn), Phase::Playing) =
            (view.viewer, view.leader, view.turn, view.phase)
        else {
            return Err(bad("needs a player's view of a round in progress"));
        };
        if hands.len() != n
            || (0..n).any(|s| hands[s].len() != view.hand_counts[s])
            || set_aside.len() != view.set_aside_count
            || spicy_rest.len() != view.spicy_remaining
        {
            return Err(bad("the guess does not match the view's counts"));
        }
        let own: Vec<Card> = view.hand.iter().flatten().map(|c| c.card()).collect();
        let mut mine = hands[me].clone();
        mine.sort_unstable();
        if mine != own {
            return Err(bad("the viewer's hand differs"));
        }
        let trick: Vec<Played> = view
            .trick
            .iter()
            .map(|p| Played {
                seat: p.seat,
                card: p.card.card(),
            })
            .collect();
        let mut used = [false; crate::cards::NACHO_COUNT];
        for c in hands
            .iter()
            .flatten()
            .chain(&set_aside)
            .chain(trick.iter().map(|p| &p.card))
        {
            if !c.is_valid() || std::mem::replace(&mut used[c.index()], true) {
                return Err(bad("a card is in two places or does not exist"));
            }
        }
        let mut played: Vec<Card> = canonical_deck()
            .into_iter()
            .filter(|c| !used[c.index()])
            .collect();
        played.sort_unstable();
        let mut shown: Vec<Card> = view.played.iter().map(|c| c.card()).collect();
        shown.sort_unstable();
        if played != shown {
            return Err(bad("the guess leaves out other cards than the played ones"));
        }
        let piles: Vec<Vec<u8>> = view.spicy_piles.iter().map(|p| p.cards.clone()).collect();
        let mut spicy_order: Vec<u8> = piles.iter().flatten().copied().collect();
        spicy_order.extend(view.spicy_at_stake);
        let spicy_next = spicy_order.len();
        spicy_order.extend(spicy_rest);
        let mut hands = hands;
        for h in &mut hands {
            h.sort_unstable();
        }
        Ok(NachosMatch {
            players: n,
            phase: Phase::Playing,
            round: view.round,
            dealer: view.dealer.unwrap_or(0),
            leader,
            turn,
            hands,
            set_aside,
            spicy_order,
            spicy_next,
            at_stake: view.spicy_at_stake,
            trick,
            played,
            piles,
            last_trick: view.last_trick.clone(),
            last_round: view.last_round.clone(),
            round_scores: view.round_scores.clone(),
            totals: view.totals.clone(),
            deal: None,
        })
    }
}
