//! What every game's rules crate shares: the [`Game`] trait the server drives, seats and
//! viewers, the round seed with its public commitment, the documented seeded shuffle, and
//! the rule error every refused action carries.
//!
//! This crate and every rules crate built on it are pure: no I/O, no clock, no thread-local
//! randomness. Everything random in a round comes from the round's [`Seed`], so a
//! match is reproduced exactly from its options, player count and per-round
//! `(seed, actions)` log.

use std::fmt;

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};

/// A seat at the table, `0..players`. "Clockwise" is increasing seat number, wrapping.
pub type Seat = usize;

/// The seat after `seat` clockwise.
pub fn next_seat(seat: Seat, players: usize) -> Seat {
    (seat + 1) % players
}

/// Who is looking at the game. A spectator gets the public view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "seat", rename_all = "snake_case")]
pub enum Viewer {
    Player(Seat),
    Spectator,
}

impl Viewer {
    pub fn seat(self) -> Option<Seat> {
        match self {
            Viewer::Player(s) => Some(s),
            Viewer::Spectator => None,
        }
    }
}

/// Where a match stands, as the server needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Between rounds (or before the first): the server must call
    /// [`Game::start_round`] with a fresh seed.
    AwaitingRound,
    /// A round is in progress; [`Game::to_act`] says whom it waits for.
    Playing,
    /// The match is over; [`Game::outcome`] is `Some`.
    Finished,
}

/// The result of a finished match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Outcome {
    /// Seats that won. Several when a tie shares the win (Fibonachos, R-54); empty for a
    /// drawn game (Fib-Fibonacci, R-46) or a lost solitaire.
    pub winners: Vec<Seat>,
    /// Final match score per seat (the game says what a score means).
    pub scores: Vec<i64>,
}

/// A refused action or setup. The state is unchanged whenever this is returned.
///
/// `code` is a stable snake_case identifier clients can switch on; `message` is a
/// human-readable reason. Each rules crate documents its codes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleError {
    pub code: &'static str,
    pub message: String,
}

impl RuleError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        RuleError {
            code,
            message: message.into(),
        }
    }
    /// The seat acted while the game waits for someone else.
    pub fn not_your_turn(seat: Seat) -> Self {
        Self::new(
            codes::NOT_YOUR_TURN,
            format!("it is not seat {seat}'s turn"),
        )
    }
    /// No round is in progress (between rounds or after the match).
    pub fn no_round() -> Self {
        Self::new(codes::NO_ROUND, "no round is in progress")
    }
    /// A seat number outside the table.
    pub fn bad_seat(seat: Seat, players: usize) -> Self {
        Self::new(
            codes::BAD_SEAT,
            format!("seat {seat} does not exist at a table of {players}"),
        )
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for RuleError {}

/// The JSON text of each of `N` values, written once: for a type of few values (a deck's
/// cards) that every view writes dozens of times, after every move, for every viewer. Its
/// `Serialize` then hands serde the text ([`RawValue`], which serde_json writes as it is,
/// and parses into a `Value`); another format would see serde_json's private raw-value
/// struct, and the workspace uses no other.
pub fn json_texts<T: Serialize, const N: usize>(
    value: impl Fn(usize) -> T,
) -> [Box<serde_json::value::RawValue>; N] {
    std::array::from_fn(|i| {
        serde_json::value::to_raw_value(&value(i)).expect("plain data serializes to JSON")
    })
}

/// Error codes shared by all games. Games add their own, documented in their crates.
pub mod codes {
    pub const NOT_YOUR_TURN: &str = "not_your_turn";
    pub const NO_ROUND: &str = "no_round_in_progress";
    pub const BAD_SEAT: &str = "bad_seat";
    pub const BAD_OPTIONS: &str = "bad_options";
    pub const BAD_PLAYER_COUNT: &str = "bad_player_count";
    pub const CARD_NOT_IN_HAND: &str = "card_not_in_hand";
    pub const ILLEGAL_MOVE: &str = "illegal_move";
    pub const WRONG_PHASE: &str = "wrong_phase";
}

/// A pure, deterministic game: the rules of one game as a state machine over a whole match
/// (all its rounds). The server owns one value per live table and is its only writer.
///
/// Lifecycle: [`Game::new_match`]; then, whenever [`Game::phase`] is
/// [`Phase::AwaitingRound`], [`Game::start_round`] with a fresh seed; then
/// [`Game::apply`] actions in arrival order until the phase changes. Replaying the same
/// seeds and actions in the same order reproduces the same state, views and events.
pub trait Game: Clone + Send + Sync + 'static {
    /// Table options chosen at creation. `Default` is the game's standard table.
    type Options: Clone
        + fmt::Debug
        + Default
        + PartialEq
        + Serialize
        + DeserializeOwned
        + JsonSchema
        + Send
        + Sync;
    /// Something a seat asks to do.
    type Action: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned + JsonSchema + Send;
    /// Everything one viewer may see, and nothing more.
    type View: Clone + fmt::Debug + Serialize + DeserializeOwned + JsonSchema + Send;
    /// A public record of something that happened. Never carries information hidden from
    /// any seat (a draw from the stock says that a card was drawn, not which).
    type Event: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned + JsonSchema + Send;

    /// Stable identifier of the game on the wire and in storage, e.g. `"trump"`.
    const KIND: &'static str;
    /// Bumped whenever a rules change would make old logs replay differently.
    const RULES_VERSION: u32;

    /// Allowed player counts for these options, inclusive.
    fn player_range(options: &Self::Options) -> (usize, usize);

    /// A new match before its first round. Refuses bad options or player counts.
    fn new_match(options: &Self::Options, players: usize) -> Result<Self, RuleError>;

    fn players(&self) -> usize;
    fn phase(&self) -> Phase;
    /// Number of the current (or last) round, 1-based; 0 before the first.
    fn round(&self) -> u32;

    /// Deals a new round from `seed`. Only in [`Phase::AwaitingRound`].
    fn start_round(&mut self, seed: &Seed) -> Result<Vec<Self::Event>, RuleError>;

    /// Seats the game is waiting for. Empty between rounds and after the match. Seats not
    /// listed may still have legal actions (out-of-turn moves, R-18).
    fn to_act(&self) -> Vec<Seat>;

    /// Applies one action by `seat`. On `Err`, the state is exactly as before.
    fn apply(&mut self, seat: Seat, action: &Self::Action) -> Result<Vec<Self::Event>, RuleError>;

    /// What `viewer` may see now.
    fn view_for(&self, viewer: Viewer) -> Self::View;

    /// Every action the viewing seat may take now, computed from that seat's view alone, so
    /// a bot or client that holds only its view knows its moves. Empty for spectators.
    fn legal_actions(view: &Self::View) -> Vec<Self::Action>;

    /// Cumulative match score per seat.
    fn scores(&self) -> Vec<i64>;

    /// `Some` once the match is over.
    fn outcome(&self) -> Option<Outcome>;

    /// Everything the current (or just ended) round's seed fixed: every hand, the stock
    /// order, face-down cards, and any later shuffle of the round. For verifying a deal
    /// after the round has ended; it stays valid once the round is over, and the
    /// server only publishes it then.
    fn deal_record(&self) -> serde_json::Value;

    /// The actions `seat` may take now (from its own view).
    fn legal_actions_for(&self, seat: Seat) -> Vec<Self::Action> {
        Self::legal_actions(&self.view_for(Viewer::Player(seat)))
    }
}

/// The 256-bit seed of one round. Drawn by the server from the OS's CSPRNG; its
/// SHA-256 is published when the round starts and the seed itself when it ends.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seed(pub [u8; 32]);

impl Seed {
    /// A seed from a small number, for tests and simulations.
    pub fn from_u64(n: u64) -> Self {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&n.to_le_bytes());
        Seed(b)
    }
    /// Lower-case hex, 64 characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
    pub fn from_hex(s: &str) -> Option<Self> {
        let v = hex::decode(s).ok()?;
        Some(Seed(v.try_into().ok()?))
    }
    /// The public commitment: lower-case hex SHA-256 of the 32 seed bytes.
    pub fn commitment(&self) -> String {
        hex::encode(Sha256::digest(self.0))
    }
    /// The round's random stream.
    pub fn rng(&self) -> DeckRng {
        DeckRng(ChaCha20Rng::from_seed(self.0))
    }
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a live seed by accident: show only the commitment's prefix.
        write!(f, "Seed(sha256:{}…)", &self.commitment()[..12])
    }
}

/// The documented deterministic random stream of a round: ChaCha20 (20 rounds, the 32-byte
/// seed as key, nonce and stream 0) as `rand_chacha::ChaCha20Rng` produces it, read as
/// little-endian `u64` words.
#[derive(Clone, Debug)]
pub struct DeckRng(ChaCha20Rng);

impl DeckRng {
    /// A uniform integer in `0..n` (n ≥ 1), by rejection so there is no modulo bias: draw
    /// a `u64` `x`, reject while `x >= zone` where `zone = 2^64 - (2^64 mod n)`, answer
    /// `x mod n`.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n + 1) % n;
        loop {
            let x = self.0.next_u64();
            if x <= zone {
                return (x % n) as usize;
            }
        }
    }

    /// Fisher–Yates: for `i` from `len-1` down to 1, swap item `i` with item
    /// `below(i + 1)`. The deck's order before shuffling is the game's documented
    /// canonical order.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_hex_round_trip_and_commitment() {
        let s = Seed::from_u64(42);
        assert_eq!(Seed::from_hex(&s.to_hex()), Some(s));
        assert_eq!(s.commitment().len(), 64);
        assert_ne!(s.commitment(), s.to_hex());
        assert_eq!(Seed::from_hex("zz"), None);
        assert_eq!(Seed::from_hex("00"), None);
    }

    #[test]
    fn shuffle_is_deterministic_and_a_permutation() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        Seed::from_u64(7).rng().shuffle(&mut a);
        Seed::from_u64(7).rng().shuffle(&mut b);
        assert_eq!(a, b);
        let mut c = a.clone();
        c.sort();
        assert_eq!(c, (0..50).collect::<Vec<_>>());
        let mut d: Vec<u32> = (0..50).collect();
        Seed::from_u64(8).rng().shuffle(&mut d);
        assert_ne!(a, d);
    }

    /// Pins the documented algorithm: a change here breaks every published deal.
    #[test]
    fn shuffle_is_pinned() {
        const PINNED: [u32; 10] = [1, 6, 9, 4, 5, 3, 0, 2, 8, 7];
        let mut a: Vec<u32> = (0..10).collect();
        Seed::from_u64(1).rng().shuffle(&mut a);
        let pinned = PINNED.to_vec();
        assert_eq!(a, pinned, "shuffle of 0..10 with Seed::from_u64(1) changed");
        let mut again: Vec<u32> = (0..10).collect();
        Seed::from_u64(1).rng().shuffle(&mut again);
        assert_eq!(again, pinned);
        // With the all-zero seed the stream is RFC 7539's ChaCha20 test vector (zero key,
        // zero nonce, block 0): bytes 76 b8 e0 ad a0 f1 3d 90, read little-endian.
        let mut r = Seed([0; 32]).rng();
        assert_eq!(r.0.next_u64(), 0x903d_f1a0_ade0_b876);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = Seed::from_u64(3).rng();
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[r.below(3)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn debug_does_not_print_the_seed() {
        let s = Seed::from_u64(99);
        let shown = format!("{s:?}");
        assert!(!shown.contains(&s.to_hex()));
        // What it shows instead: the commitment's prefix, enough to tell seeds apart.
        assert_eq!(shown, format!("Seed(sha256:{}…)", &s.commitment()[..12]));
    }

    /// `below` is the documented rejection sampling, checked against a separate
    /// reading of the documentation in 128-bit arithmetic on the same ChaCha20 words. The
    /// huge bounds are where rejection is frequent (about half the words for 2^63 + 1,
    /// and a wrong zone would reject half of them for 2^63), so a wrong zone shows at once;
    /// with the small ones the common case is covered too.
    #[test]
    fn r0_below_rejects_exactly_the_documented_zone() {
        for n in [1usize, 3, 10, 1 << 63, (1 << 63) + 1, usize::MAX] {
            let mut rng = Seed::from_u64(5).rng();
            let mut words = ChaCha20Rng::from_seed(Seed::from_u64(5).0);
            let modulus = n as u128;
            // Accept x < 2^64 - (2^64 mod n).
            let zone = (1u128 << 64) - (1u128 << 64) % modulus;
            let (mut rejected, mut draws) = (0, 0);
            for _ in 0..200 {
                let expected = loop {
                    let x = u128::from(words.next_u64());
                    draws += 1;
                    if x < zone {
                        break (x % modulus) as usize;
                    }
                    rejected += 1;
                };
                assert_eq!(rng.below(n), expected, "below({n})");
            }
            if n == (1 << 63) + 1 {
                assert!(rejected > 50, "{rejected} of {draws} words rejected");
            }
        }
    }

    /// clockwise is increasing seat number, wrapping around.
    #[test]
    fn r2_next_seat_is_clockwise_and_wraps() {
        assert_eq!(next_seat(0, 3), 1);
        assert_eq!(next_seat(1, 3), 2);
        assert_eq!(next_seat(2, 3), 0);
        assert_eq!(next_seat(3, 4), 0);
        assert_eq!(next_seat(0, 1), 0);
    }

    #[test]
    fn viewer_seat_and_rule_error_display() {
        assert_eq!(Viewer::Player(2).seat(), Some(2));
        assert_eq!(Viewer::Player(0).seat(), Some(0));
        assert_eq!(Viewer::Spectator.seat(), None);
        let e = RuleError::not_your_turn(3);
        assert_eq!(e.to_string(), "not_your_turn: it is not seat 3's turn");
        assert_eq!(
            RuleError::bad_seat(5, 4).to_string(),
            "bad_seat: seat 5 does not exist at a table of 4"
        );
        assert_eq!(RuleError::no_round().code, codes::NO_ROUND);
    }

    /// The smallest real game on the trait: a pile of counters, each player in turn takes
    /// one or two, whoever takes the last wins. It exists to test the trait's provided
    /// method, `legal_actions_for`, which must answer from the seat's own view.
    #[derive(Clone, Debug)]
    struct Nim {
        left: u8,
        turn: Seat,
        winner: Option<Seat>,
    }

    impl Game for Nim {
        type Options = ();
        type Action = u8;
        /// Counters left, and whether it is the viewer's turn.
        type View = (u8, bool);
        type Event = u8;
        const KIND: &'static str = "nim";
        const RULES_VERSION: u32 = 1;
        fn player_range(_: &()) -> (usize, usize) {
            (2, 2)
        }
        fn new_match(_: &(), players: usize) -> Result<Self, RuleError> {
            if players != 2 {
                return Err(RuleError::new(codes::BAD_PLAYER_COUNT, "two players"));
            }
            Ok(Nim {
                left: 0,
                turn: 0,
                winner: None,
            })
        }
        fn players(&self) -> usize {
            2
        }
        fn phase(&self) -> Phase {
            match (self.left, self.winner) {
                (_, Some(_)) => Phase::Finished,
                (0, None) => Phase::AwaitingRound,
                _ => Phase::Playing,
            }
        }
        fn round(&self) -> u32 {
            u32::from(self.left > 0 || self.winner.is_some())
        }
        fn start_round(&mut self, seed: &Seed) -> Result<Vec<u8>, RuleError> {
            self.left = 5 + seed.rng().below(5) as u8;
            Ok(vec![self.left])
        }
        fn to_act(&self) -> Vec<Seat> {
            if self.phase() == Phase::Playing {
                vec![self.turn]
            } else {
                Vec::new()
            }
        }
        fn apply(&mut self, seat: Seat, take: &u8) -> Result<Vec<u8>, RuleError> {
            if seat != self.turn {
                return Err(RuleError::not_your_turn(seat));
            }
            if !Self::legal_actions(&self.view_for(Viewer::Player(seat))).contains(take) {
                return Err(RuleError::new(codes::ILLEGAL_MOVE, "take 1 or 2"));
            }
            self.left -= take;
            if self.left == 0 {
                self.winner = Some(seat);
            }
            self.turn = next_seat(seat, 2);
            Ok(vec![*take])
        }
        fn view_for(&self, viewer: Viewer) -> (u8, bool) {
            let on_turn = self.phase() == Phase::Playing && viewer.seat() == Some(self.turn);
            (self.left, on_turn)
        }
        fn legal_actions(view: &(u8, bool)) -> Vec<u8> {
            match view {
                (left, true) => (1..=(*left).min(2)).collect(),
                _ => Vec::new(),
            }
        }
        fn scores(&self) -> Vec<i64> {
            (0..2).map(|s| i64::from(self.winner == Some(s))).collect()
        }
        fn outcome(&self) -> Option<Outcome> {
            self.winner.map(|w| Outcome {
                winners: vec![w],
                scores: self.scores(),
            })
        }
        fn deal_record(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    #[test]
    fn legal_actions_for_answers_from_the_seats_own_view() {
        let mut g = Nim::new_match(&(), 2).unwrap();
        g.start_round(&Seed::from_u64(1)).unwrap();
        assert_eq!(g.legal_actions_for(0), vec![1, 2]);
        assert_eq!(g.legal_actions_for(1), Vec::<u8>::new());
        while g.left > 1 {
            let seat = g.to_act()[0];
            g.apply(seat, &2.min(g.left - 1)).unwrap();
        }
        let seat = g.to_act()[0];
        assert_eq!(g.legal_actions_for(seat), vec![1]);
        g.apply(seat, &1).unwrap();
        assert_eq!(g.outcome().unwrap().winners, vec![seat]);
        assert!(g.legal_actions_for(0).is_empty() && g.legal_actions_for(1).is_empty());
    }
}
