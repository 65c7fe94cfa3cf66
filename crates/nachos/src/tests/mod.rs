//! Tests: one scenario per ruling (`scenarios`) and properties over thousands of seeded
//! random matches (`properties`). Shared helpers live here.

mod positions;
mod properties;
mod scenarios;

use game_core::{Game, RuleError, Seat};

use crate::{Action, Card, Event, NachosMatch, Suit};

pub(crate) const R: Suit = Suit::Red;
pub(crate) const G: Suit = Suit::Green;
pub(crate) const Y: Suit = Suit::Yellow;

pub(crate) fn c(suit: Suit, number: u8) -> Card {
    Card::new(suit, number)
}

pub(crate) fn play(m: &mut NachosMatch, seat: Seat, card: Card) -> Vec<Event> {
    m.apply(seat, &Action::Play { card })
        .unwrap_or_else(|e| panic!("seat {seat} playing {card:?}: {e}"))
}

/// Applies an action that must be refused, checks the state did not change, and
/// returns the error.
pub(crate) fn refused(m: &mut NachosMatch, seat: Seat, card: Card) -> RuleError {
    let before = m.clone();
    let err = m
        .apply(seat, &Action::Play { card })
        .expect_err("action should be refused");
    assert_eq!(*m, before, "state changed after refused action {err}");
    assert!(!err.message.is_empty());
    err
}

/// The view is built from the state, so the state's module names nothing of the view's:
/// what goes the other way (`from_view_and_hidden`) lives in `guess` (ARCHITECTURE.md).
/// An import back would make the two modules one circle again.
#[test]
fn the_state_module_does_not_import_the_view_module() {
    let state = include_str!("../state.rs");
    for name in ["crate::view", "super::view", "NachosView"] {
        assert!(
            !state.contains(name),
            "state.rs names `{name}`: the state would depend on its own view"
        );
    }
}
