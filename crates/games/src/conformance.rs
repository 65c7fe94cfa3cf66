//! The contract every game keeps behind [`DynGame`], as a checker: a [`Session`] drives one
//! match through the same JSON face the server uses and checks, after every step, the
//! invariants the server relies on. The property-based state-machine test
//! (`tests/state_machine.rs`, stable, in the normal test suite) and the coverage-guided
//! fuzz target (`fuzz/fuzz_targets/engines.rs`, nightly) both drive games through it, so
//! the two check the same things:
//!
//! - nothing panics, whatever JSON arrives as an action and from whichever seat;
//! - a refused action changes nothing: every viewer's view, every seat's legal actions,
//!   the phase, the seats to act, scores and outcome are as before (and, through the
//!   replay check, nothing hidden either: a changed draw pile would make the replay differ);
//! - an accepted action was one of the seat's legal actions (up to optional fields left
//!   out), the round was in play, and a finished match accepts nothing and offers nothing;
//! - an action naming a field its type lacks is refused `unknown_field`;
//! - no view shows a card of another seat's hand that a spectator has not seen this
//!   round, and no event names a card now in a hand that was not public before;
//! - replaying the same seeds and accepted actions on a fresh game gives the same events
//!   and the same final state.
//!
//! Violations panic with a message naming the game and the step, which is what both a
//! proptest case and a fuzz target report.

use std::collections::BTreeSet;

use game_core::{Phase, Seat, Seed, Viewer};
use serde_json::Value;

use crate::{ActionError, DynGame, SetupError, new_match};

/// One thing done to a match.
#[derive(Clone, Debug)]
pub enum Step {
    /// A legal action: `pick` chooses the seat (among those that have one) and the action.
    Legal { pick: usize },
    /// Up to `count` legal actions in a row, chosen from `salt`.
    Burst { count: u8, salt: u64 },
    /// A legal action of a seat that has one, sent as `seat` (any number, also beyond the
    /// table: those must be refused).
    AsSeat { pick: usize, seat: usize },
    /// A legal action with a field no action has added at the top or inside (`deep`):
    /// must be refused `unknown_field`.
    UnknownField {
        pick: usize,
        deep: bool,
        value: Value,
    },
    /// A legal action with one of its values (chosen by `at`) replaced by `with`.
    Replace { pick: usize, at: usize, with: Value },
    /// A legal action with one of its keys (chosen by `at`) removed.
    Drop { pick: usize, at: usize },
    /// Any JSON at all, from `seat`.
    Raw { seat: usize, action: Value },
    /// An action accepted earlier in the match (chosen by `pick`), sent again by its seat.
    Again { pick: usize },
}

/// What happened, for the replay.
#[derive(Clone, Debug)]
enum Entry {
    Round(Seed, Vec<Value>),
    Act(Seat, Value, Vec<Value>),
}

/// Everything the server can observe of a game, to compare before and after.
#[derive(Clone, Debug, PartialEq)]
struct Snapshot {
    phase: Phase,
    round: u32,
    to_act: Vec<Seat>,
    scores: Vec<i64>,
    outcome: Option<Value>,
    views: Vec<Value>,
    legal: Vec<Vec<Value>>,
}

/// One match under test.
pub struct Session {
    kind: String,
    options: Value,
    players: usize,
    seed: u64,
    game: Box<dyn DynGame>,
    log: Vec<Entry>,
    /// Card keys a spectator has seen this round (views and events).
    public: BTreeSet<String>,
    /// Steps taken, for messages.
    steps: usize,
}

impl Session {
    /// A new match of `kind` (options as the server would get them); `seed` derives every
    /// round's seed. Rounds are dealt whenever the match waits for one, as the server does.
    pub fn new(kind: &str, options: &Value, players: usize, seed: u64) -> Result<Self, SetupError> {
        let (game, options) = new_match(kind, options, players)?;
        Ok(Self::with_game(kind, options, players, seed, game))
    }

    /// A session over a game already set up (the checker's own tests wrap games in faults).
    fn with_game(
        kind: &str,
        options: Value,
        players: usize,
        seed: u64,
        game: Box<dyn DynGame>,
    ) -> Self {
        let mut s = Session {
            kind: kind.to_string(),
            options,
            players,
            seed,
            game,
            log: Vec::new(),
            public: BTreeSet::new(),
            steps: 0,
        };
        s.deal_if_due();
        s
    }

    pub fn game(&self) -> &dyn DynGame {
        self.game.as_ref()
    }

    /// Actions accepted so far.
    pub fn accepted(&self) -> usize {
        self.log
            .iter()
            .filter(|e| matches!(e, Entry::Act(..)))
            .count()
    }

    fn deal_if_due(&mut self) {
        while self.game.phase() == Phase::AwaitingRound {
            let round = u64::from(self.game.round()) + 1;
            let seed = Seed::from_u64(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round);
            let events = self
                .game
                .start_round(&seed)
                .unwrap_or_else(|e| panic!("{}: start_round refused: {e}", self.kind));
            // A new deal: what was public last round says nothing about the new hands. The
            // deal's own events (a first-dealer draw from a separate shuffle, R-1) are
            // public by definition.
            self.public.clear();
            for e in &events {
                collect_cards(e, &mut self.public);
            }
            collect_cards(&self.game.view_json(Viewer::Spectator), &mut self.public);
            self.log.push(Entry::Round(seed, events));
            self.check_consistent();
        }
    }

    fn snapshot(&self) -> Snapshot {
        let g = self.game.as_ref();
        Snapshot {
            phase: g.phase(),
            round: g.round(),
            to_act: g.to_act(),
            scores: g.scores(),
            outcome: g.outcome().map(|o| serde_json::to_value(o).expect("JSON")),
            views: viewers(self.players).map(|v| g.view_json(v)).collect(),
            legal: (0..self.players).map(|s| g.legal_json(s)).collect(),
        }
    }

    /// A legal action chosen by `pick`: its seat and the action. `None` when no seat has one.
    pub fn pick_legal(&self, pick: usize) -> Option<(Seat, Value)> {
        let seats: Vec<(Seat, Vec<Value>)> = (0..self.players)
            .map(|s| (s, self.game.legal_json(s)))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        if seats.is_empty() {
            return None;
        }
        // Mostly the seat on turn, sometimes one with an out-of-turn move.
        let on_turn = self.game.to_act();
        let (seat, legal) = match seats.iter().find(|(s, _)| on_turn.contains(s)) {
            Some(x) if pick % 4 != 3 => x,
            _ => &seats[pick % seats.len()],
        };
        Some((*seat, legal[(pick / 4) % legal.len()].clone()))
    }

    /// Takes one step and checks every invariant.
    pub fn step(&mut self, step: &Step) {
        self.steps += 1;
        match step {
            Step::Legal { pick } => {
                if let Some((seat, a)) = self.pick_legal(*pick) {
                    self.expect_ok(seat, &a);
                }
            }
            Step::Burst { count, salt } => {
                let mut x = *salt;
                for _ in 0..*count {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    match self.pick_legal((x >> 33) as usize) {
                        Some((seat, a)) => self.expect_ok(seat, &a),
                        None => break,
                    }
                }
            }
            Step::AsSeat { pick, seat } => {
                if let Some((_, a)) = self.pick_legal(*pick) {
                    let r = self.attempt(*seat, &a);
                    if *seat >= self.players {
                        assert!(
                            r.is_err(),
                            "{}: seat {seat} is not at the table but {a} was accepted",
                            self.kind
                        );
                    }
                }
            }
            Step::UnknownField { pick, deep, value } => {
                if let Some((seat, mut a)) = self.pick_legal(*pick) {
                    let target = if *deep {
                        deepest_object(&mut a)
                    } else {
                        a.as_object_mut()
                    };
                    let Some(obj) = target else { return };
                    obj.insert("x_not_a_field".into(), value.clone());
                    match self.attempt(seat, &a) {
                        Err(ActionError::UnknownField(_)) => {}
                        other => panic!(
                            "{}: {a} must be refused unknown_field, got {other:?}",
                            self.kind
                        ),
                    }
                }
            }
            Step::Replace { pick, at, with } => {
                if let Some((seat, mut a)) = self.pick_legal(*pick) {
                    let mut slots = Vec::new();
                    leaves(&mut a, &mut slots);
                    if !slots.is_empty() {
                        let n = slots.len();
                        *slots.swap_remove(at % n) = with.clone();
                    }
                    let _ = self.attempt(seat, &a);
                }
            }
            Step::Drop { pick, at } => {
                if let Some((seat, mut a)) = self.pick_legal(*pick) {
                    drop_key(&mut a, *at);
                    let _ = self.attempt(seat, &a);
                }
            }
            Step::Raw { seat, action } => {
                let _ = self.attempt(*seat, action);
            }
            Step::Again { pick } => {
                let acts: Vec<(Seat, Value)> = self
                    .log
                    .iter()
                    .filter_map(|e| match e {
                        Entry::Act(s, a, _) => Some((*s, a.clone())),
                        Entry::Round(..) => None,
                    })
                    .collect();
                if !acts.is_empty() {
                    let (seat, a) = &acts[pick % acts.len()];
                    let _ = self.attempt(*seat, a);
                }
            }
        }
    }

    fn expect_ok(&mut self, seat: Seat, action: &Value) {
        if let Err(e) = self.attempt(seat, action) {
            panic!(
                "{}: legal action {action} of seat {seat} refused: {e}",
                self.kind
            );
        }
    }

    /// Applies `action` as `seat` through the JSON face and checks the invariants.
    pub fn attempt(&mut self, seat: Seat, action: &Value) -> Result<(), ActionError> {
        let before = self.snapshot();
        let legal_before = if seat < self.players {
            self.game.legal_json(seat)
        } else {
            Vec::new()
        };
        let result = self.game.apply_json(seat, action);
        let kind = self.kind.clone();
        let step = self.steps;
        match result {
            Err(e) => {
                let after = self.snapshot();
                assert!(
                    after == before,
                    "{kind} step {step}: the refused action {action} of seat {seat} ({e}) changed the game"
                );
                Err(e)
            }
            Ok(events) => {
                assert_eq!(
                    before.phase,
                    Phase::Playing,
                    "{kind} step {step}: {action} of seat {seat} accepted outside a round"
                );
                assert!(
                    legal_before.iter().any(|l| subsumes(l, action)),
                    "{kind} step {step}: {action} of seat {seat} accepted but not among its legal actions {legal_before:?}"
                );
                self.check_events(&events, action);
                self.log.push(Entry::Act(seat, action.clone(), events));
                self.check_consistent();
                self.deal_if_due();
                Ok(())
            }
        }
    }

    /// Events go to everybody: a card they name that now sits in a hand must have been
    /// public before.
    fn check_events(&mut self, events: &[Value], action: &Value) {
        let mut named = BTreeSet::new();
        for e in events {
            collect_cards(e, &mut named);
        }
        let in_hands = self.hand_cards();
        for c in named.intersection(&in_hands) {
            assert!(
                self.public.contains(c),
                "{} step {}: an event of {action} names {c}, which is in a hand and was not public: {events:?}",
                self.kind,
                self.steps
            );
        }
        self.public.extend(named);
    }

    fn hand_cards(&self) -> BTreeSet<String> {
        let mut all = BTreeSet::new();
        for s in 0..self.players {
            collect_cards(&self.game.view_json(Viewer::Player(s))["hand"], &mut all);
        }
        all
    }

    /// Checks that hold in every state: views hide other seats' hands, legal actions agree
    /// with the seat view, decode, and a finished match offers nothing.
    fn check_consistent(&mut self) {
        let g = self.game.as_ref();
        let (kind, step) = (&self.kind, self.steps);
        let hands: Vec<BTreeSet<String>> = (0..self.players)
            .map(|s| {
                let mut h = BTreeSet::new();
                collect_cards(&g.view_json(Viewer::Player(s))["hand"], &mut h);
                h
            })
            .collect();
        let spectator = g.view_json(Viewer::Spectator);
        let mut seen = BTreeSet::new();
        collect_cards(&spectator, &mut seen);
        for (s, hand) in hands.iter().enumerate() {
            for c in seen.intersection(hand) {
                assert!(
                    self.public.contains(c),
                    "{kind} step {step}: the spectator sees {c} in seat {s}'s hand"
                );
            }
        }
        for v in 0..self.players {
            let view = g.view_json(Viewer::Player(v));
            let mut cards = BTreeSet::new();
            collect_cards(&view, &mut cards);
            for (s, hand) in hands.iter().enumerate().filter(|(s, _)| *s != v) {
                for c in cards.intersection(hand) {
                    assert!(
                        self.public.contains(c) || seen.contains(c),
                        "{kind} step {step}: seat {v} sees {c} of seat {s}'s hand"
                    );
                }
            }
            let (seat_view, legal) = g.seat_json(v);
            assert_eq!(seat_view, view, "{kind} step {step}: seat_json's view");
            assert_eq!(
                legal,
                g.legal_json(v),
                "{kind} step {step}: seat_json's legal"
            );
            // The text the server holds and diffs is the same view and legal actions.
            let (doc_view, doc_legal) = g.seat_doc(v);
            let parse = |d: &protocol::patch::Doc| serde_json::from_str::<Value>(d.text()).unwrap();
            assert_eq!(
                parse(&doc_view),
                view,
                "{kind} step {step}: seat_doc's view"
            );
            assert_eq!(
                parse(&doc_legal),
                Value::Array(legal.clone()),
                "{kind} step {step}: seat_doc's legal"
            );
            assert_eq!(
                g.has_legal(v),
                !legal.is_empty(),
                "{kind} step {step}: has_legal"
            );
            for a in &legal {
                assert_eq!(
                    crate::decode_action(kind, a),
                    Ok(()),
                    "{kind} step {step}: a legal action does not decode"
                );
            }
            if g.phase() == Phase::Finished {
                assert!(
                    legal.is_empty(),
                    "{kind} step {step}: a finished match offers {legal:?}"
                );
            }
        }
        if g.phase() == Phase::Finished {
            assert!(
                g.outcome().is_some(),
                "{kind} step {step}: finished without an outcome"
            );
            assert!(
                g.to_act().is_empty(),
                "{kind} step {step}: finished but waits for seats"
            );
        }
        self.public.extend(seen);
    }

    /// A finished match accepts nothing: every action accepted in it, from every seat.
    pub fn check_finished_refuses(&mut self) {
        if self.game.phase() != Phase::Finished {
            return;
        }
        let acts: Vec<Value> = self
            .log
            .iter()
            .rev()
            .filter_map(|e| match e {
                Entry::Act(_, a, _) => Some(a.clone()),
                Entry::Round(..) => None,
            })
            .take(8)
            .collect();
        for a in acts {
            for seat in 0..self.players {
                let r = self.attempt(seat, &a);
                assert!(
                    r.is_err(),
                    "{}: a finished match accepted {a} from seat {seat}",
                    self.kind
                );
            }
        }
    }

    /// Deterministic replay: the same options, seeds and accepted actions on a fresh game
    /// give the same events at every step and the same final state.
    pub fn check_replay(&self) {
        let (mut g, _) = new_match(&self.kind, &self.options, self.players).expect("set up again");
        for (i, e) in self.log.iter().enumerate() {
            match e {
                Entry::Round(seed, events) => {
                    let again = g.start_round(seed).expect("the replayed round deals");
                    assert_eq!(
                        &again, events,
                        "{}: replay entry {i}: deal events differ",
                        self.kind
                    );
                }
                Entry::Act(seat, a, events) => {
                    let again = g.apply_json(*seat, a).unwrap_or_else(|e| {
                        panic!("{}: replay entry {i}: {a} refused: {e}", self.kind)
                    });
                    assert_eq!(
                        &again, events,
                        "{}: replay entry {i}: events of {a} differ",
                        self.kind
                    );
                }
            }
        }
        let replayed = Session {
            kind: self.kind.clone(),
            options: self.options.clone(),
            players: self.players,
            seed: self.seed,
            game: g,
            log: Vec::new(),
            public: BTreeSet::new(),
            steps: 0,
        };
        assert!(
            replayed.snapshot() == self.snapshot(),
            "{}: the replay ends in another state",
            self.kind
        );
        assert_eq!(
            replayed.game.deal_record(),
            self.game.deal_record(),
            "{}: the replay's deal differs",
            self.kind
        );
    }
}

fn viewers(players: usize) -> impl Iterator<Item = Viewer> {
    (0..players).map(Viewer::Player).chain([Viewer::Spectator])
}

/// Whether `action` is `legal`, or `legal` with optional fields left out (`null` or
/// absent): a client may omit a card's printed symbol or a `copy` of 0.
fn subsumes(legal: &Value, action: &Value) -> bool {
    match (legal, action) {
        // An accepted `null` can only be an optional field left out.
        (Value::Object(l), Value::Object(a)) => a
            .iter()
            .all(|(k, v)| v.is_null() || l.get(k).is_some_and(|lv| subsumes(lv, v))),
        (Value::Array(l), Value::Array(a)) => {
            l.len() == a.len() && l.iter().zip(a).all(|(l, a)| subsumes(l, a))
        }
        (l, a) => l == a,
    }
}

/// The key of a card, whatever game it is from, if `v` is one: its stable `id` (Fib-Fibonacci
/// and the rummy family), colour and number (Trump: its code `"r7"`, or the object form of
/// earlier versions), suit, number and copy (Fibonachos).
fn card_key(v: &Value) -> Option<String> {
    if let Some(code) = v.as_str() {
        let colour = ["red", "yellow", "green", "blue", "purple"]["rygbp".find(code.get(..1)?)?];
        let n = code.get(1..)?;
        let number: u8 = n.parse().ok().filter(|n| (1..=10).contains(n))?;
        return (n == number.to_string()).then(|| format!("{colour} {number}"));
    }
    let o = v.as_object()?;
    if let (Some(id), true) = (
        o.get("id").and_then(Value::as_u64),
        o.contains_key("rank") || o.contains_key("kind"),
    ) {
        return Some(format!("card#{id}"));
    }
    if let (Some(c), Some(n)) = (o.get("colour").and_then(Value::as_str), o.get("number")) {
        return Some(format!("{c} {n}"));
    }
    if let (Some(s), Some(n), Some(c)) = (
        o.get("suit").and_then(Value::as_str),
        o.get("number"),
        o.get("copy"),
    ) {
        return Some(format!("{s} {n}/{c}"));
    }
    None
}

/// Every card anywhere in `v`.
fn collect_cards(v: &Value, out: &mut BTreeSet<String>) {
    if let Some(k) = card_key(v) {
        out.insert(k);
    }
    match v {
        Value::Object(o) => o.values().for_each(|x| collect_cards(x, out)),
        Value::Array(a) => a.iter().for_each(|x| collect_cards(x, out)),
        _ => {}
    }
}

/// The innermost object of an action (a card inside it), or the action itself.
fn deepest_object(v: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let has_inner = match v {
        Value::Object(o) => o.values().any(|x| x.is_object() || x.is_array()),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    if !has_inner {
        return v.as_object_mut();
    }
    match v {
        Value::Object(o) => {
            let k = o
                .iter()
                .find(|(_, x)| x.is_object() || x.as_array().is_some_and(|a| !a.is_empty()))
                .map(|(k, _)| k.clone())?;
            deepest_object(o.get_mut(&k)?)
        }
        Value::Array(a) => deepest_object(a.first_mut()?),
        _ => None,
    }
}

/// Every scalar value inside `v` (the `type` tag included).
fn leaves<'a>(v: &'a mut Value, out: &mut Vec<&'a mut Value>) {
    match v {
        Value::Object(o) => o.values_mut().for_each(|x| leaves(x, out)),
        Value::Array(a) => a.iter_mut().for_each(|x| leaves(x, out)),
        _ => out.push(v),
    }
}

/// Removes the `at`-th key (depth first) of `v`.
fn drop_key(v: &mut Value, at: usize) {
    fn keys(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    path.push(k.clone());
                    out.push(path.clone());
                    keys(x, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    path.push(i.to_string());
                    keys(x, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut all = Vec::new();
    keys(v, &mut Vec::new(), &mut all);
    if all.is_empty() {
        return;
    }
    let path = &all[at % all.len()];
    let (last, parents) = path.split_last().expect("a path has a key");
    let mut cur = v;
    for p in parents {
        cur = match cur {
            Value::Object(o) => o.get_mut(p).expect("the path exists"),
            Value::Array(a) => &mut a[p.parse::<usize>().expect("an index")],
            _ => return,
        };
    }
    if let Value::Object(o) = cur {
        o.remove(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A game with one fault, to show the checker catches it.
    #[derive(Clone, Copy)]
    enum Fault {
        /// Seat 0's view carries seat 1's hand.
        LeakyView,
        /// A refused action still moves the game on (plays a legal move).
        RefusalChangesState,
        /// An action is accepted when it is not legal: the refusal is swallowed.
        AcceptsAnything,
    }

    struct Faulty(Box<dyn DynGame>, Fault);

    impl DynGame for Faulty {
        fn kind(&self) -> &'static str {
            self.0.kind()
        }
        fn rules_version(&self) -> u32 {
            self.0.rules_version()
        }
        fn players(&self) -> usize {
            self.0.players()
        }
        fn phase(&self) -> Phase {
            self.0.phase()
        }
        fn round(&self) -> u32 {
            self.0.round()
        }
        fn to_act(&self) -> Vec<Seat> {
            self.0.to_act()
        }
        fn start_round(&mut self, seed: &Seed) -> Result<Vec<Value>, game_core::RuleError> {
            self.0.start_round(seed)
        }
        fn apply_json(&mut self, seat: Seat, action: &Value) -> Result<Vec<Value>, ActionError> {
            match (self.0.apply_json(seat, action), self.1) {
                (Err(e), Fault::RefusalChangesState) => {
                    let s = self.0.to_act()[0];
                    let a = self.0.legal_json(s)[0].clone();
                    self.0.apply_json(s, &a).unwrap();
                    Err(e)
                }
                (Err(_), Fault::AcceptsAnything) => Ok(vec![]),
                (r, _) => r,
            }
        }
        fn view_json(&self, viewer: Viewer) -> Value {
            let mut v = self.0.view_json(viewer);
            if let (Fault::LeakyView, Viewer::Player(0)) = (self.1, viewer) {
                v["peek"] = self.0.view_json(Viewer::Player(1))["hand"].clone();
            }
            v
        }
        fn legal_json(&self, seat: Seat) -> Vec<Value> {
            self.0.legal_json(seat)
        }
        fn seat_json(&self, seat: Seat) -> (Value, Vec<Value>) {
            (self.view_json(Viewer::Player(seat)), self.legal_json(seat))
        }
        fn has_legal(&self, seat: Seat) -> bool {
            self.0.has_legal(seat)
        }
        fn scores(&self) -> Vec<i64> {
            self.0.scores()
        }
        fn outcome(&self) -> Option<game_core::Outcome> {
            self.0.outcome()
        }
        fn deal_record(&self) -> Value {
            self.0.deal_record()
        }
        fn bot_action(
            &self,
            _: Seat,
            _: crate::BotLevel,
            _: u64,
            _: bots::Budget,
        ) -> Option<Value> {
            None
        }
        fn bot_off_turn_action(&self, _: Seat, _: crate::BotLevel) -> Option<Value> {
            None
        }
        fn clone_box(&self) -> Box<dyn DynGame> {
            Box::new(Faulty(self.0.clone_box(), self.1))
        }
    }

    fn faulty(fault: Fault) -> Session {
        let (g, options) = new_match("trump", &Value::Null, 2).unwrap();
        Session::with_game("trump", options, 2, 1, Box::new(Faulty(g, fault)))
    }

    fn panic_message(f: impl FnOnce()) -> String {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .expect_err("the fault is caught");
        err.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn the_checker_catches_a_view_that_shows_another_hand() {
        let m = panic_message(|| drop(faulty(Fault::LeakyView)));
        assert!(
            m.contains("seat 0 sees") && m.contains("of seat 1's hand"),
            "{m}"
        );
    }

    #[test]
    fn the_checker_catches_a_refusal_that_changes_the_game() {
        let mut s = faulty(Fault::RefusalChangesState);
        let m = panic_message(move || {
            s.step(&Step::Raw {
                seat: 0,
                action: json!({"type": "fly"}),
            })
        });
        assert!(m.contains("changed the game"), "{m}");
    }

    #[test]
    fn the_checker_catches_an_illegal_action_accepted() {
        let mut s = faulty(Fault::AcceptsAnything);
        let m = panic_message(move || {
            s.step(&Step::Raw {
                seat: 1,
                action: json!({"type": "fly"}),
            })
        });
        assert!(m.contains("not among its legal actions"), "{m}");
    }

    #[test]
    fn a_clean_game_passes_and_replays() {
        let mut s = Session::new("fibfib", &Value::Null, 2, 7).unwrap();
        s.step(&Step::Burst { count: 40, salt: 3 });
        s.step(&Step::UnknownField {
            pick: 0,
            deep: false,
            value: Value::Null,
        });
        assert!(s.accepted() > 0);
        s.check_replay();
    }

    #[test]
    fn subsumes_allows_only_left_out_optional_fields() {
        let l = json!({"type": "play", "card": {"colour": "red", "number": 7, "symbol": "star"}});
        assert!(subsumes(&l, &l));
        assert!(subsumes(
            &l,
            &json!({"type": "play", "card": {"colour": "red", "number": 7}})
        ));
        assert!(!subsumes(
            &l,
            &json!({"type": "play", "card": {"colour": "red", "number": 8}})
        ));
        assert!(!subsumes(
            &l,
            &json!({"type": "play", "card": {"colour": "red", "number": 7, "x": 1}})
        ));
        assert!(subsumes(
            &json!({"type": "start_set", "card": 4}),
            &json!({"type": "start_set", "card": 4, "number": null})
        ));
    }

    #[test]
    fn cards_of_every_game_are_recognised() {
        let mut out = BTreeSet::new();
        collect_cards(
            &json!({"hand": [{"colour": "red", "number": 7, "symbol": "star"}, {"id": 3, "rank": "two", "suit": "spades"},
                    {"suit": "red", "number": 1, "copy": 1, "playable": true}, {"id": 88, "kind": "bonus"},
                    "p10", "b3", "r0", "x3", "b03", "red"], "seat": {"id": 4}}),
            &mut out,
        );
        let want: BTreeSet<String> = [
            "red 7",
            "card#3",
            "red 1/1",
            "card#88",
            "purple 10",
            "blue 3",
        ]
        .map(String::from)
        .into();
        assert_eq!(out, want);
    }

    #[test]
    fn drop_and_deepest_reach_inside() {
        let mut a = json!({"type": "open", "sets": [[{"card": 20, "number": 5}]]});
        deepest_object(&mut a).unwrap().insert("x".into(), json!(1));
        assert_eq!(
            a,
            json!({"type": "open", "sets": [[{"card": 20, "number": 5, "x": 1}]]})
        );
        let b = json!({"type": "play", "card": {"colour": "red", "number": 7}});
        let mut dropped: Vec<Value> = (0..4)
            .map(|at| {
                let mut c = b.clone();
                drop_key(&mut c, at);
                c
            })
            .collect();
        dropped.sort_by_key(|v| v.to_string());
        assert_eq!(
            dropped,
            vec![
                json!({"card": {"colour": "red", "number": 7}}),
                json!({"card": {"colour": "red"}, "type": "play"}),
                json!({"card": {"number": 7}, "type": "play"}),
                json!({"type": "play"}),
            ]
        );
    }
}
