//! The registry of games the server offers, and the type-erased face of a game that the
//! server drives: actions, views and events as JSON, so the server, the store and the
//! protocol need no per-game code.
//!
//! Adding a game is one line in [`for_each_game!`] plus its rules crate (and its
//! `bots::BotGame` impl). A bot's move is computed here from the seat's view alone
//! ([`DynGame::bot_action`], with `bots::decide`): a bot is handed a view, never the game
//! state.

/// A hard bot's thinking budget (re-exported for the server).
pub use bots::Budget as BotBudget;
use game_core::{Game, Outcome, Phase, RuleError, Seat, Seed, Viewer};
use protocol::patch::Doc;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod conformance;
mod strict;

/// Calls `$m!(Type, "Title", min_note)` once per registered game.
#[macro_export]
macro_rules! for_each_game {
    ($m:ident) => {
        $m!(trump::Trump, "Fibonacci's Trump");
        $m!(nachos::NachosMatch, "Fibonachos");
        $m!(fibfib::FibFib, "Fib-Fibonacci");
        $m!(rummy::Rummy, "Fibonacci 21 / 13 / 8 and Solitaire");
    };
}

/// Why a JSON action was refused before or by the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ActionError {
    /// The JSON does not decode as an action of this game (client sees `bad_action`).
    Decode(String),
    /// The action names a field its type does not have, at any depth (client sees
    /// `unknown_field`, with the field and where it was: "unknown field `x` in
    /// `action.card`: expected `colour`, `number`, `symbol`").
    UnknownField(String),
    /// The rules refused it (client sees the rule's own code).
    Rule(RuleError),
}

impl ActionError {
    /// The code a client sees.
    pub fn code(&self) -> &'static str {
        match self {
            ActionError::Decode(_) => "bad_action",
            ActionError::UnknownField(_) => "unknown_field",
            ActionError::Rule(e) => e.code,
        }
    }
}

impl std::fmt::Display for ActionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActionError::Decode(m) => write!(f, "bad_action: {m}"),
            ActionError::UnknownField(m) => write!(f, "unknown_field: {m}"),
            ActionError::Rule(e) => write!(f, "{e}"),
        }
    }
}

/// Decodes `action` as an action of game `kind` without applying it: what `apply_json`
/// checks before the rules see anything (`unknown_field` first, then `bad_action`). The
/// socket's decoder fuzz target drives it; the server itself decodes in `apply_json`.
pub fn decode_action(kind: &str, action: &Value) -> Result<(), ActionError> {
    macro_rules! decode {
        ($t:ty, $title:expr) => {
            if kind == <$t as Game>::KIND {
                return decode_as::<$t>(action).map(|_| ());
            }
        };
    }
    for_each_game!(decode);
    Err(ActionError::Decode(format!("no game `{kind}`")))
}

/// Strictly decodes a JSON action of game `G`: unknown fields anywhere are refused before
/// serde sees the action (serde would ignore them beside a unit variant's tag).
fn decode_as<G: Game>(action: &Value) -> Result<G::Action, ActionError> {
    strict::unknown_field(G::KIND, action).map_err(|r| match r {
        protocol::strict::Refusal::UnknownField(m) => ActionError::UnknownField(m),
        // What serde would have taken for the object (its fields in order): a bad action.
        protocol::strict::Refusal::NotAnObject(m) => ActionError::Decode(m),
    })?;
    // Read from the borrowed value: no copy of the action's tree per move.
    G::Action::deserialize(action).map_err(|e| {
        let m = e.to_string();
        // The schema walk finds every unknown field serde would; should a type's schema
        // and its serde ever disagree, serde's own refusal still gets the specific code.
        if m.starts_with("unknown field") {
            ActionError::UnknownField(m)
        } else {
            ActionError::Decode(m)
        }
    })
}

/// A game the server can run, with everything crossing it as JSON.
pub trait DynGame: Send + Sync {
    fn kind(&self) -> &'static str;
    fn rules_version(&self) -> u32;
    fn players(&self) -> usize;
    fn phase(&self) -> Phase;
    fn round(&self) -> u32;
    fn to_act(&self) -> Vec<Seat>;
    fn start_round(&mut self, seed: &Seed) -> Result<Vec<Value>, RuleError>;
    /// Decodes and applies. On error nothing changed.
    fn apply_json(&mut self, seat: Seat, action: &Value) -> Result<Vec<Value>, ActionError>;
    fn view_json(&self, viewer: Viewer) -> Value;
    /// Legal actions of `seat`, computed from its view.
    fn legal_json(&self, seat: Seat) -> Vec<Value>;
    /// `seat`'s view and its legal actions, the view built once for both (what a seated
    /// connection is sent after every change).
    fn seat_json(&self, seat: Seat) -> (Value, Vec<Value>);
    /// `seat_json` as JSON text (the view, and the legal actions as one array): what the
    /// server holds and diffs per viewer (`protocol::patch::diff_docs_at`), made without a
    /// tree of values, the view's members' places recorded as it is written.
    fn seat_doc(&self, seat: Seat) -> (Doc, Doc) {
        let (view, legal) = self.seat_json(seat);
        (Doc::of(&view), Doc::of(&legal))
    }
    /// `view_json` as JSON text.
    fn view_doc(&self, viewer: Viewer) -> Doc {
        Doc::of(&self.view_json(viewer))
    }
    /// Whether `seat` has any legal action now (no JSON made).
    fn has_legal(&self, seat: Seat) -> bool;
    fn scores(&self) -> Vec<i64>;
    fn outcome(&self) -> Option<Outcome>;
    fn deal_record(&self) -> Value;
    /// A move for a bot of `level` in `seat`, chosen from that seat's view only, with its
    /// own random stream from `seed`; a hard bot searches within `budget`. `None` if the
    /// seat has nothing legal to do.
    fn bot_action(
        &self,
        seat: Seat,
        level: BotLevel,
        seed: u64,
        budget: bots::Budget,
    ) -> Option<Value>;
    /// A move for a bot of `level` in `seat` while another seat is on turn (R-18 in the
    /// rummy family), from that seat's view only; `None` when it wants none.
    fn bot_off_turn_action(&self, seat: Seat, level: BotLevel) -> Option<Value>;
    fn clone_box(&self) -> Box<dyn DynGame>;
}

/// How strong a bot is (see the `bots` crate); the wire type, from `protocol`.
pub use protocol::BotLevel;

/// The `bots` crate's level for a wire level.
fn bot_level(level: BotLevel) -> bots::Level {
    match level {
        BotLevel::Easy => bots::Level::Easy,
        BotLevel::Normal => bots::Level::Normal,
        BotLevel::Hard => bots::Level::Hard,
    }
}

/// The wire form of a viewer.
pub fn wire_viewer(viewer: Viewer) -> protocol::Viewer {
    match viewer {
        Viewer::Player(s) => protocol::Viewer::Player(s),
        Viewer::Spectator => protocol::Viewer::Spectator,
    }
}

/// The whole protocol's JSON Schema: the wire types with every game's own schemas
/// (`docs/protocol.schema.json`).
pub fn protocol_schema() -> Value {
    protocol::schema(schemas())
}

struct Erased<G: Game>(G);

fn to_json<T: Serialize>(v: &T) -> Value {
    // Serializing our own plain data types cannot fail (no maps with non-string keys).
    serde_json::to_value(v).expect("game types serialize to JSON")
}

impl<G: bots::BotGame> DynGame for Erased<G> {
    fn kind(&self) -> &'static str {
        G::KIND
    }
    fn rules_version(&self) -> u32 {
        G::RULES_VERSION
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
    fn start_round(&mut self, seed: &Seed) -> Result<Vec<Value>, RuleError> {
        Ok(self.0.start_round(seed)?.iter().map(to_json).collect())
    }
    fn apply_json(&mut self, seat: Seat, action: &Value) -> Result<Vec<Value>, ActionError> {
        let action = decode_as::<G>(action)?;
        let events = self.0.apply(seat, &action).map_err(ActionError::Rule)?;
        Ok(events.iter().map(to_json).collect())
    }
    fn view_json(&self, viewer: Viewer) -> Value {
        to_json(&self.0.view_for(viewer))
    }
    fn legal_json(&self, seat: Seat) -> Vec<Value> {
        self.0.legal_actions_for(seat).iter().map(to_json).collect()
    }
    fn seat_json(&self, seat: Seat) -> (Value, Vec<Value>) {
        let view = self.0.view_for(Viewer::Player(seat));
        let legal = G::legal_actions(&view).iter().map(to_json).collect();
        (to_json(&view), legal)
    }
    fn seat_doc(&self, seat: Seat) -> (Doc, Doc) {
        let view = self.0.view_for(Viewer::Player(seat));
        (Doc::of(&view), Doc::of(&G::legal_actions(&view)))
    }
    fn view_doc(&self, viewer: Viewer) -> Doc {
        Doc::of(&self.0.view_for(viewer))
    }
    fn has_legal(&self, seat: Seat) -> bool {
        !self.0.legal_actions_for(seat).is_empty()
    }
    fn scores(&self) -> Vec<i64> {
        self.0.scores()
    }
    fn outcome(&self) -> Option<Outcome> {
        self.0.outcome()
    }
    fn deal_record(&self) -> Value {
        self.0.deal_record()
    }
    fn bot_action(
        &self,
        seat: Seat,
        level: BotLevel,
        seed: u64,
        budget: bots::Budget,
    ) -> Option<Value> {
        // The bot gets the seat's view and nothing else: `bots::decide` takes only a view.
        let view = self.0.view_for(Viewer::Player(seat));
        let action = bots::decide::<G>(&view, bot_level(level), seed, budget)?;
        Some(to_json(&action))
    }
    fn bot_off_turn_action(&self, seat: Seat, level: BotLevel) -> Option<Value> {
        let view = self.0.view_for(Viewer::Player(seat));
        let action = bots::decide_off_turn::<G>(&view, bot_level(level))?;
        Some(to_json(&action))
    }
    fn clone_box(&self) -> Box<dyn DynGame> {
        Box::new(Erased(self.0.clone()))
    }
}

/// A registered game, described for the lobby.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct GameInfo {
    pub kind: &'static str,
    pub title: &'static str,
    pub min_players: usize,
    pub max_players: usize,
    /// The default options, as JSON.
    pub default_options: Value,
}

/// Why a table could not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupError {
    UnknownGame(String),
    BadOptions(String),
    Rule(RuleError),
}

impl SetupError {
    /// The error code a client is answered with: `unknown_game`, `bad_options`, or the
    /// rules' own (`bad_player_count`, `bad_options`, …).
    pub fn code(&self) -> &'static str {
        match self {
            SetupError::UnknownGame(_) => "unknown_game",
            SetupError::BadOptions(_) => "bad_options",
            SetupError::Rule(r) => r.code,
        }
    }
}

/// The message for people that goes with [`SetupError::code`].
impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::UnknownGame(g) => {
                write!(f, "there is no game {g:?}; see GET /api/games")
            }
            SetupError::BadOptions(m) => f.write_str(m),
            SetupError::Rule(r) => f.write_str(&r.message),
        }
    }
}

/// Every game the server offers.
pub fn catalogue() -> Vec<GameInfo> {
    let mut out = Vec::new();
    macro_rules! info {
        ($t:ty, $title:expr) => {{
            let o = <<$t as Game>::Options as Default>::default();
            let (min_players, max_players) = <$t as Game>::player_range(&o);
            out.push(GameInfo {
                kind: <$t as Game>::KIND,
                title: $title,
                min_players,
                max_players,
                default_options: to_json(&o),
            });
        }};
    }
    for_each_game!(info);
    out
}

/// Normalizes options JSON for `kind` (fills defaults, refuses unknown fields or values)
/// and checks the player count. Returns the normalized options.
pub fn check_options(kind: &str, options: &Value, players: usize) -> Result<Value, SetupError> {
    new_match(kind, options, players).map(|(_, o)| o)
}

/// A round's deal record of `kind` as the game writes it now, from one saved by any
/// earlier version (Trump's cards as objects before they were codes, protocol.md §6.2):
/// what `verify-match` compares a published deal in.
pub fn current_deal_record(kind: &str, deal: &Value) -> Value {
    match kind {
        "trump" => trump::cards::with_card_codes(deal),
        _ => deal.clone(),
    }
}

/// A new match of `kind`, and its normalized options.
pub fn new_match(
    kind: &str,
    options: &Value,
    players: usize,
) -> Result<(Box<dyn DynGame>, Value), SetupError> {
    macro_rules! make {
        ($t:ty, $title:expr) => {
            if kind == <$t as Game>::KIND {
                let opts: <$t as Game>::Options = if options.is_null() {
                    Default::default()
                } else {
                    // Strictly: an array is no options object, nor is an unknown field
                    // beside a unit variant allowed (`protocol::strict`).
                    protocol::strict::decode(options, "options").map_err(SetupError::BadOptions)?
                };
                let normalized = to_json(&opts);
                refuse_unknown_keys(options, &normalized)?;
                let g = <$t as Game>::new_match(&opts, players).map_err(SetupError::Rule)?;
                return Ok((Box::new(Erased(g)), normalized));
            }
        };
    }
    for_each_game!(make);
    Err(SetupError::UnknownGame(kind.to_string()))
}

/// Serde ignores unknown fields unless told otherwise; a table creator who misspells an
/// option must hear about it rather than get the default silently.
fn refuse_unknown_keys(given: &Value, normalized: &Value) -> Result<(), SetupError> {
    match (given, normalized) {
        (Value::Object(g), Value::Object(n)) => match g.keys().find(|k| !n.contains_key(*k)) {
            Some(k) => Err(SetupError::BadOptions(format!("unknown option `{k}`"))),
            None => Ok(()),
        },
        (Value::Object(g), _) if !g.is_empty() => Err(SetupError::BadOptions(
            "this game takes no options".to_string(),
        )),
        _ => Ok(()),
    }
}

/// JSON Schemas of each game's options, actions, views and events, keyed by kind.
pub fn schemas() -> Value {
    let mut map = serde_json::Map::new();
    macro_rules! schema {
        ($t:ty, $title:expr) => {
            map.insert(
                <$t as Game>::KIND.to_string(),
                serde_json::json!({
                    "title": $title,
                    "options": schemars::schema_for!(<$t as Game>::Options),
                    "action": schemars::schema_for!(<$t as Game>::Action),
                    "view": schemars::schema_for!(<$t as Game>::View),
                    "event": schemars::schema_for!(<$t as Game>::Event),
                }),
            );
        };
    }
    for_each_game!(schema);
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_game_plays_to_the_end_with_random_bots() {
        for (info, level) in catalogue()
            .into_iter()
            .flat_map(|i| [(i.clone(), BotLevel::Easy), (i, BotLevel::Normal)])
        {
            for players in info.min_players..=info.max_players {
                let (mut g, _) = new_match(info.kind, &Value::Null, players).unwrap();
                let mut steps = 0u64;
                while g.phase() != Phase::Finished {
                    if g.phase() == Phase::AwaitingRound {
                        g.start_round(&Seed::from_u64(steps)).unwrap();
                        continue;
                    }
                    let seat = g.to_act()[0];
                    let a = g
                        .bot_action(seat, level, steps, bots::Budget::samples(2))
                        .expect("a legal move");
                    g.apply_json(seat, &a).unwrap();
                    steps += 1;
                    assert!(steps < 1_000_000, "{} does not end", info.kind);
                }
                assert!(g.outcome().is_some());
            }
        }
    }

    /// What a table socket holds of the game: the viewer's view and legal actions.
    fn document(g: &dyn DynGame, viewer: Viewer) -> Value {
        let legal = viewer.seat().map(|s| g.legal_json(s)).unwrap_or_default();
        serde_json::json!({"view": g.view_json(viewer), "legal": legal})
    }

    /// Deltas (R-4 views as patches): for every game and player count, over random seeded
    /// matches, each viewer's document patched step by step from its first one equals the
    /// full document at every step, and a patch never names a path outside the document.
    #[test]
    fn patches_rebuild_every_viewers_document_at_every_step() {
        for info in catalogue() {
            for players in info.min_players..=info.max_players {
                for seed in 0..6u64 {
                    let (mut g, _) = new_match(info.kind, &Value::Null, players).unwrap();
                    let viewers: Vec<Viewer> = (0..players)
                        .map(Viewer::Player)
                        .chain([Viewer::Spectator])
                        .collect();
                    let mut held: Vec<Value> = viewers
                        .iter()
                        .map(|&v| serde_json::json!({"view": g.view_json(v), "legal": []}))
                        .collect();
                    // What the server holds per viewer: the view and legal actions as text.
                    let docs = |g: &dyn DynGame, v: Viewer| match v {
                        Viewer::Player(s) => g.seat_doc(s),
                        Viewer::Spectator => (g.view_doc(v), Doc::of(&[0u8; 0])),
                    };
                    let mut held_docs: Vec<_> =
                        viewers.iter().map(|&v| docs(g.as_ref(), v)).collect();
                    let mut held_by_text = held.clone();
                    // And as a client of the compact form (the default) reads it.
                    let mut held_compact = held.clone();
                    let mut steps = 0u64;
                    while g.phase() != Phase::Finished && steps < 300 {
                        if g.phase() == Phase::AwaitingRound {
                            g.start_round(&Seed::from_u64(seed * 1000 + steps)).unwrap();
                        } else {
                            let seat = g.to_act()[0];
                            let level = if seed % 2 == 0 {
                                BotLevel::Easy
                            } else {
                                BotLevel::Normal
                            };
                            let a = g
                                .bot_action(seat, level, seed + steps, bots::Budget::samples(1))
                                .expect("a legal move");
                            g.apply_json(seat, &a).unwrap();
                        }
                        steps += 1;
                        for (v, doc) in viewers.iter().zip(held.iter_mut()) {
                            let full = document(g.as_ref(), *v);
                            let ops = protocol::patch::diff(doc, &full);
                            protocol::patch::apply(doc, &ops).unwrap_or_else(|e| {
                                panic!("{} seed {seed} step {steps}: {e}", info.kind)
                            });
                            assert_eq!(*doc, full, "{} seed {seed} step {steps}", info.kind);
                        }
                        // The same from the text, every viewer's views diffed together as
                        // the server does (changes that viewers share diffed once).
                        let new: Vec<_> = viewers.iter().map(|&v| docs(g.as_ref(), v)).collect();
                        let mut raw_ops = vec![Vec::new(); viewers.len()];
                        let views: Vec<(&Doc, &Doc)> = held_docs
                            .iter()
                            .zip(&new)
                            .map(|(o, n)| (&o.0, &n.0))
                            .collect();
                        protocol::patch::diff_docs_at("/view", &views, &mut raw_ops);
                        for ((o, n), ops) in held_docs.iter().zip(&new).zip(raw_ops.iter_mut()) {
                            protocol::patch::diff_docs_at(
                                "/legal",
                                &[(&o.1, &n.1)],
                                std::slice::from_mut(ops),
                            );
                        }
                        for ((v, doc), raw_ops) in
                            viewers.iter().zip(held_compact.iter_mut()).zip(&raw_ops)
                        {
                            let mut wire =
                                format!(r#"{{"type":"patch","version":{},"ops":"#, steps + 1);
                            protocol::patch::write_ops_compact(&mut wire, raw_ops);
                            wire.push('}');
                            let m = protocol::patch::PatchMessage::read(&wire)
                                .unwrap_or_else(|| panic!("a compact patch message: {wire}"));
                            assert_eq!(m.from, steps);
                            protocol::patch::apply(doc, &m.ops).unwrap_or_else(|e| {
                                panic!("{} seed {seed} step {steps} (compact): {e}", info.kind)
                            });
                            assert_eq!(
                                *doc,
                                document(g.as_ref(), *v),
                                "{} seed {seed} step {steps} (compact)",
                                info.kind
                            );
                        }
                        for ((v, doc), raw_ops) in
                            viewers.iter().zip(held_by_text.iter_mut()).zip(&raw_ops)
                        {
                            // As a client reads it off the wire.
                            let mut wire = String::new();
                            protocol::patch::write_ops(&mut wire, raw_ops);
                            let ops: Vec<protocol::PatchOp> = serde_json::from_str(&wire).unwrap();
                            protocol::patch::apply(doc, &ops).unwrap_or_else(|e| {
                                panic!("{} seed {seed} step {steps} (text): {e}", info.kind)
                            });
                            assert_eq!(
                                *doc,
                                document(g.as_ref(), *v),
                                "{} seed {seed} step {steps} (text)",
                                info.kind
                            );
                        }
                        held_docs = new;
                    }
                }
            }
        }
    }

    #[test]
    fn checked_in_schema_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/protocol.schema.json"
        );
        let fresh = serde_json::to_string_pretty(&protocol_schema()).unwrap() + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &fresh).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == fresh,
            "docs/protocol.schema.json is stale: run `UPDATE_SCHEMA=1 cargo test -p games`"
        );
    }

    #[test]
    fn seat_json_is_the_view_and_legal_actions() {
        for info in catalogue() {
            let (mut g, _) = new_match(info.kind, &Value::Null, info.min_players).unwrap();
            g.start_round(&Seed::from_u64(7)).unwrap();
            for seat in 0..info.min_players {
                let (view, legal) = g.seat_json(seat);
                assert_eq!(view, g.view_json(Viewer::Player(seat)), "{}", info.kind);
                assert_eq!(legal, g.legal_json(seat), "{}", info.kind);
            }
        }
    }

    #[test]
    fn wire_viewers_serialize_as_the_rules_viewers() {
        for v in [Viewer::Player(0), Viewer::Player(3), Viewer::Spectator] {
            assert_eq!(to_json(&v), to_json(&wire_viewer(v)));
        }
    }

    #[test]
    fn bad_json_action_is_a_decode_error_and_changes_nothing() {
        let (mut g, _) = new_match("trump", &Value::Null, 3).unwrap();
        g.start_round(&Seed::from_u64(1)).unwrap();
        let before = g.view_json(Viewer::Spectator);
        let seat = g.to_act()[0];
        let err = g
            .apply_json(seat, &serde_json::json!({"type": "fly"}))
            .unwrap_err();
        assert!(matches!(err, ActionError::Decode(_)));
        assert_eq!(g.view_json(Viewer::Spectator), before);
    }

    /// `{"type":"draw","x":1}` used to be applied as a draw: serde ignores keys beside a
    /// unit variant's tag. Every unknown field is now refused before the rules run.
    #[test]
    fn unknown_fields_in_actions_are_refused_and_change_nothing() {
        let (mut g, _) = new_match("fibfib", &Value::Null, 2).unwrap();
        g.start_round(&Seed::from_u64(1)).unwrap();
        let seat = g.to_act()[0];
        let before = g.view_json(Viewer::Player(seat));
        let err = g
            .apply_json(seat, &serde_json::json!({"type": "draw", "x": 1}))
            .unwrap_err();
        assert_eq!(err.code(), "unknown_field");
        assert_eq!(
            err,
            ActionError::UnknownField(
                "unknown field `x` in `action`: it takes no other field".into()
            )
        );
        assert_eq!(g.view_json(Viewer::Player(seat)), before);
        assert_eq!(
            decode_action("fibfib", &serde_json::json!({"type": "draw"})),
            Ok(())
        );
        assert_eq!(
            decode_action("trump", &serde_json::json!({"type": "fly"}))
                .unwrap_err()
                .code(),
            "bad_action"
        );
    }

    #[test]
    fn unknown_game_and_bad_options_are_refused() {
        assert!(matches!(
            new_match("chess", &Value::Null, 2),
            Err(SetupError::UnknownGame(_))
        ));
        assert!(matches!(
            new_match("trump", &serde_json::json!({"nonsense": 1}), 2),
            Err(SetupError::BadOptions(_))
        ));
        assert!(matches!(
            new_match("trump", &Value::Null, 9),
            Err(SetupError::Rule(_))
        ));
    }

    /// What a client is told: a code and a message for people, never Rust's debug text.
    #[test]
    fn setup_errors_say_what_is_wrong_in_words() {
        let said = |kind: &str, options: Value, players: usize| {
            let e = check_options(kind, &options, players).unwrap_err();
            (e.code(), e.to_string())
        };
        assert_eq!(
            said("chess", Value::Null, 2),
            (
                "unknown_game",
                "there is no game \"chess\"; see GET /api/games".into()
            )
        );
        assert_eq!(
            said("trump", serde_json::json!({"zz": 1}), 2),
            (
                "bad_options",
                "unknown field `zz` in `options`: expected `target`".into()
            )
        );
        // serde alone took an array for the options' fields in order.
        assert_eq!(
            said("trump", serde_json::json!([8]), 2),
            (
                "bad_options",
                "`options` must be a JSON object, not an array".into()
            )
        );
        assert_eq!(
            said("trump", serde_json::json!({"target": 0}), 2),
            ("bad_options", "the target score must be at least 1".into())
        );
        let (code, message) = said("trump", Value::Null, 9);
        assert_eq!(code, "bad_player_count");
        assert!(!message.contains("RuleError"), "{message}");
    }
}
