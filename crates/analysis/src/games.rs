//! What the analysis needs of each game beyond `bots::BotGame`: its compact position for
//! the exact search (the trick-taking games only), how a search move maps to an action,
//! which way round scores point, and whether its rollout policy draws on randomness.

use fibfib::FibFib;
use nachos::NachosMatch;
use rummy::Rummy;
use trump::Trump;

use crate::exact::Position;
use crate::trick::{NachosPos, TrumpPos};

/// No exact search: the positions of a game that has none.
#[derive(Clone, Debug)]
pub enum NoExact {}

impl Position for NoExact {
    fn to_move(&self) -> usize {
        match *self {}
    }
    fn is_over(&self) -> bool {
        match *self {}
    }
    fn all_moves(&self, _out: &mut Vec<u8>) {
        match *self {}
    }
    fn play(&mut self, _m: u8) {
        match *self {}
    }
    fn score(&self, _seat: usize) -> i32 {
        match *self {}
    }
    fn key(&self, _persp: usize) -> [u64; 7] {
        match *self {}
    }
    fn cards_left(&self) -> usize {
        match *self {}
    }
}

/// A game the analysis knows.
pub trait Analysed: bots::BotGame {
    /// The exact search's position type ([`NoExact`] for games without one).
    type Pos: Position;
    /// The round in play as a position for the exact search, if the game has one.
    fn position(_g: &Self) -> Option<Self::Pos> {
        None
    }
    /// The action of a search move, and back.
    fn move_action(_m: u8) -> Option<Self::Action> {
        None
    }
    fn action_move(_a: &Self::Action) -> Option<u8> {
        None
    }
    /// An exact search is tried only when at most this many cards are still to be played
    /// in the round (a pure function of the position, so a step's analysis never depends
    /// on the steps analysed before it). Above it the search would run out of any
    /// reasonable node budget anyway (measured: docs/analysis.md).
    fn exact_cards(_players: usize) -> usize {
        0
    }
    /// Lower round scores are better (Solitaire counts its discards, R-25).
    fn lower_is_better(_players: usize) -> bool {
        false
    }
}

impl Analysed for Trump {
    type Pos = TrumpPos;
    fn position(g: &Self) -> Option<TrumpPos> {
        TrumpPos::from_game(g)
    }
    fn move_action(m: u8) -> Option<trump::Action> {
        Some(TrumpPos::action(m))
    }
    fn action_move(a: &trump::Action) -> Option<u8> {
        Some(TrumpPos::move_of(a))
    }
    fn exact_cards(players: usize) -> usize {
        match players {
            2 => 21,
            3 => 21,
            _ => 24,
        }
    }
}

impl Analysed for NachosMatch {
    type Pos = NachosPos;
    fn position(g: &Self) -> Option<NachosPos> {
        NachosPos::from_game(g)
    }
    fn move_action(m: u8) -> Option<nachos::Action> {
        Some(NachosPos::action(m))
    }
    fn action_move(a: &nachos::Action) -> Option<u8> {
        Some(NachosPos::move_of(a))
    }
    fn exact_cards(players: usize) -> usize {
        match players {
            2 => 18,
            3 => 22,
            4 => 23,
            _ => 25,
        }
    }
}

impl Analysed for FibFib {
    type Pos = NoExact;
}

impl Analysed for Rummy {
    type Pos = NoExact;
    fn lower_is_better(players: usize) -> bool {
        players == 1
    }
}
