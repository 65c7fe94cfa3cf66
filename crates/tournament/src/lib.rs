//! The pure core of tournaments (issue #31): Swiss events of a fixed number of rounds and
//! arenas of a fixed duration, for any game and table size. `docs/tournaments.md` gives
//! the rules as players read them and the API as the integrator uses it.
//!
//! A [`Tournament`] is made from a [`Config`] and then driven by inputs: [`Tournament::join`],
//! [`Tournament::withdraw`], [`Tournament::start`], [`Tournament::report_result`],
//! [`Tournament::absent`] and [`Tournament::tick`]. Each answers with the [`Effect`]s the
//! server must carry out (create these tables with these players in these seats, a round
//! started, the tournament is over…), or with a [`TournamentError`] and the state
//! unchanged. The same inputs as data ([`Input`], [`Tournament::apply`]) suit a server
//! that logs inputs rather than states. Nothing here reads a clock (times are Unix milliseconds passed in) or draws
//! randomness except from the config's seed, so the same config and inputs give the same
//! pairings, and the whole state is plain serde data the server can keep as JSON and
//! restore after a crash.
//!
//! Error codes ([`TournamentError::code`]): `bad_config`, `bad_rating`, `already_joined`,
//! `not_a_member`, `not_active`, `closed`, `already_started`, `too_few_players`,
//! `tournament_over`, `unknown_table`, `table_closed`, `not_at_table`, `already_absent`,
//! `bad_outcome`.

pub mod pairing;
pub mod points;
mod standings;

use std::fmt;

use game_core::Outcome;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use points::{ArenaResult, Place};
pub use standings::Standing;

/// A player, as the server knows them.
pub type PlayerId = Uuid;

/// A table of this tournament, numbered from 0 in the order they were created. The server
/// maps it to the real table it opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TableId(pub u32);

impl fmt::Display for TableId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "table {}", self.0)
    }
}

/// The two kinds of tournament.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Kind {
    /// A fixed number of rounds, every active player seated (or given a bye) each round.
    Swiss { rounds: u32 },
    /// A fixed duration; whoever is free is paired again at once. No pairing in the last
    /// `stop_pairing_before_ms`, so that the last games can finish.
    Arena {
        duration_ms: u64,
        stop_pairing_before_ms: u64,
    },
}

/// What the tournament is. Fixed at creation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub kind: Kind,
    /// The game's kind on the wire (`"trump"`…); carried for the server.
    pub game: String,
    /// Players per table, the same for the whole event.
    pub table_size: usize,
    /// The smallest table the event may seat when the players do not divide into full
    /// tables; equal to `table_size` for "full tables and byes only".
    pub min_table_size: usize,
    /// Whether the games are rated; carried for the server.
    pub rated: bool,
    /// Where every random choice comes from (tie lots, seat order).
    pub seed: u64,
}

/// Where the tournament stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Players may join and withdraw; nothing is paired yet.
    Registration,
    Running,
    Finished,
}

/// Whether a member is paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlayerStatus {
    /// Paired in coming rounds (Swiss) or whenever free (arena).
    Active,
    /// Left by their own choice; past games stand. In an arena, joining again resumes.
    Withdrawn,
    /// Swiss: absent from two rounds in a row, never paired again.
    Dropped,
    /// Arena: reported absent; not paired until they join again.
    Paused,
}

/// A member of the tournament.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Player {
    pub id: PlayerId,
    /// The rating given at join, in thousandths (rounded): a whole number survives JSON
    /// exactly, a float might come back one ulp off and tip a tie-break. It breaks ties in
    /// pairing and standings.
    pub rating_milli: i64,
    /// A seeded lot, the last tie-break of all (drawn from the seed in join order).
    pub lot: u64,
    pub joined_at: u64,
    /// The Swiss round under way when they joined (0: before the start). Arena: 0.
    pub joined_in_round: u32,
    pub status: PlayerStatus,
    /// Swiss: points in ticks ([`points::TICKS_PER_POINT`]); arena: arena points.
    pub points: u32,
    /// The table they sit at now.
    pub table: Option<TableId>,
    /// Counted games (byes not included).
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Swiss: rounds in which they had a bye.
    pub byes: Vec<u32>,
    /// Swiss: rounds missed in a row (reported absent); two and they are dropped.
    pub missed_in_a_row: u32,
    /// Times reported absent, in all.
    pub absences: u32,
    /// Arena: wins in a row up to now.
    pub streak: u32,
    /// Arena: the tablemates of their last game, not paired with them again at once.
    pub last_mates: Vec<PlayerId>,
}

/// How a table stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TableState {
    Playing,
    /// Its result is counted: per seat, the place ([`Place`]) and the points it earned.
    Finished {
        places: Vec<Place>,
        points: Vec<u32>,
        at: u64,
    },
    /// An arena table still playing when the arena ended: it does not count.
    Uncounted,
}

/// A table of the tournament and its record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    pub id: TableId,
    /// The Swiss round (0 in an arena).
    pub round: u32,
    /// Players in seat order.
    pub players: Vec<PlayerId>,
    /// Per seat, whether the player was reported absent (and forfeits).
    pub absent: Vec<bool>,
    pub created_at: u64,
    pub state: TableState,
}

/// A Swiss bye: a round without a table, scored as a win.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bye {
    pub round: u32,
    pub player: PlayerId,
    /// In ticks.
    pub points: u32,
}

/// What the server must do, or may tell people, after an input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect {
    Joined {
        player: PlayerId,
    },
    Withdrew {
        player: PlayerId,
    },
    Started {
        at: u64,
    },
    /// A Swiss round is paired; its tables follow as [`Effect::CreateTable`].
    RoundStarted {
        round: u32,
        byes: Vec<PlayerId>,
    },
    /// Open a table of the game with these players, seat 0 first.
    CreateTable {
        table: TableId,
        round: u32,
        players: Vec<PlayerId>,
    },
    /// A table's result is counted: per seat, the points earned (Swiss ticks or arena
    /// points).
    TableFinished {
        table: TableId,
        players: Vec<PlayerId>,
        points: Vec<u32>,
    },
    /// Swiss: absent two rounds in a row, dropped from pairing.
    PlayerDropped {
        player: PlayerId,
    },
    RoundEnded {
        round: u32,
    },
    /// The end: the final standings and the first three. `uncounted` lists the arena's
    /// tables still playing at the end; their games do not count (the server may let them
    /// finish as ordinary games).
    Over {
        podium: Vec<PlayerId>,
        standings: Vec<Standing>,
        uncounted: Vec<TableId>,
    },
}

/// Every input as data: what the server logs if it keeps the tournament as its inputs
/// (event sourcing) rather than as its state; [`Tournament::apply`] replays one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "input", rename_all = "snake_case")]
pub enum Input {
    Join {
        player: PlayerId,
        rating: f64,
        at: u64,
    },
    Withdraw {
        player: PlayerId,
        at: u64,
    },
    Start {
        at: u64,
    },
    Result {
        table: TableId,
        outcome: Outcome,
        at: u64,
    },
    Absent {
        player: PlayerId,
        table: TableId,
        at: u64,
    },
    Tick {
        now: u64,
    },
}

/// A refused input. The tournament is unchanged whenever one is returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "code", content = "message", rename_all = "snake_case")]
pub enum TournamentError {
    /// The config is inconsistent or does not fit the game's player range.
    BadConfig(String),
    /// A rating that is not a finite number of at most 10^12 in size.
    BadRating,
    AlreadyJoined,
    /// The player is not a member.
    NotAMember,
    /// The member already withdrew or was dropped.
    NotActive,
    /// Too late to join: the tournament is over, the last Swiss round has begun, or the
    /// arena's pairing has stopped.
    Closed,
    AlreadyStarted,
    /// Fewer active players than the smallest table.
    TooFewPlayers,
    TournamentOver,
    UnknownTable,
    /// The table's result is already counted (or it did not count).
    TableClosed,
    /// The player does not sit at that table.
    NotAtTable,
    AlreadyAbsent,
    /// The outcome does not fit the table (seats, winners).
    BadOutcome(String),
}

impl TournamentError {
    /// The stable snake_case code clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            TournamentError::BadConfig(_) => "bad_config",
            TournamentError::BadRating => "bad_rating",
            TournamentError::AlreadyJoined => "already_joined",
            TournamentError::NotAMember => "not_a_member",
            TournamentError::NotActive => "not_active",
            TournamentError::Closed => "closed",
            TournamentError::AlreadyStarted => "already_started",
            TournamentError::TooFewPlayers => "too_few_players",
            TournamentError::TournamentOver => "tournament_over",
            TournamentError::UnknownTable => "unknown_table",
            TournamentError::TableClosed => "table_closed",
            TournamentError::NotAtTable => "not_at_table",
            TournamentError::AlreadyAbsent => "already_absent",
            TournamentError::BadOutcome(_) => "bad_outcome",
        }
    }
}

/// The message for people that goes with [`TournamentError::code`] (a client shows it).
impl fmt::Display for TournamentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let said = match self {
            TournamentError::BadConfig(m) | TournamentError::BadOutcome(m) => {
                return write!(f, "{}: {m}", self.code());
            }
            TournamentError::BadRating => "a rating is a finite number of at most 10^12 in size",
            TournamentError::AlreadyJoined => "this player is in the tournament already",
            TournamentError::NotAMember => "this player is not in the tournament",
            TournamentError::NotActive => {
                "this player has withdrawn from the tournament, or was dropped from it"
            }
            TournamentError::Closed => {
                "too late to join: the tournament is over, its last Swiss round has begun, \
                 or the arena has stopped pairing"
            }
            TournamentError::AlreadyStarted => "the tournament has started already",
            TournamentError::TooFewPlayers => "too few players are left in for a table",
            TournamentError::TournamentOver => "the tournament is over",
            TournamentError::UnknownTable => "no table of the tournament has this id",
            TournamentError::TableClosed => "this table's result is counted already",
            TournamentError::NotAtTable => "this player does not sit at that table",
            TournamentError::AlreadyAbsent => "this player is marked absent already",
        };
        f.write_str(said)
    }
}

impl std::error::Error for TournamentError {}

type Result<T> = std::result::Result<T, TournamentError>;

/// The random stream of a seed: ChaCha20 keyed by `seed_from_u64(seed)`, on stream
/// `stream`, the `index`-th 64-bit word pair. A pure function, so nothing random is part
/// of the state.
fn draw(seed: u64, stream: u64, index: u64) -> u64 {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng.set_word_pos(u128::from(index) * 2);
    rng.next_u64()
}

const STREAM_LOTS: u64 = 1;
const STREAM_SEATS: u64 = 2;

/// A tournament: its config, members, tables and record. Plain data (serde), driven by
/// the input methods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tournament {
    config: Config,
    phase: Phase,
    /// Members in join order.
    players: Vec<Player>,
    /// Every table ever created; `tables[i].id == TableId(i)`.
    tables: Vec<Table>,
    byes: Vec<Bye>,
    /// Swiss: the current (or last) round, 0 before the start.
    round: u32,
    /// Joins so far, withdrawals before the start included (the lots' index).
    joins: u64,
    started_at: Option<u64>,
    finished_at: Option<u64>,
}

impl Tournament {
    /// A tournament in registration. `player_range` is the game's allowed player counts
    /// (`games::catalogue()`'s `min_players`, `max_players`): every table size the event
    /// may seat must lie within it.
    pub fn new(config: Config, player_range: (usize, usize)) -> Result<Self> {
        let bad = |m: String| Err(TournamentError::BadConfig(m));
        let (k, min) = (config.table_size, config.min_table_size);
        if !(1..=5).contains(&k) {
            return bad(format!("table_size {k} is not within 1 to 5"));
        }
        if min > k || (k > 1 && min < 2) || min == 0 {
            return bad(format!(
                "min_table_size {min} must be within 2 and table_size {k} (1 for Solitaire)"
            ));
        }
        if min < player_range.0 || k > player_range.1 {
            return bad(format!(
                "tables of {min} to {k} do not fit the game's {} to {} players",
                player_range.0, player_range.1
            ));
        }
        match config.kind {
            Kind::Swiss { rounds: 0 } => return bad("rounds must be at least 1".into()),
            Kind::Arena {
                duration_ms,
                stop_pairing_before_ms,
            } if stop_pairing_before_ms >= duration_ms => {
                return bad("stop_pairing_before_ms must be less than duration_ms".into());
            }
            _ => {}
        }
        Ok(Tournament {
            config,
            phase: Phase::Registration,
            players: Vec::new(),
            tables: Vec::new(),
            byes: Vec::new(),
            round: 0,
            joins: 0,
            started_at: None,
            finished_at: None,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }
    /// Swiss: the current (or last) round, 0 before the start.
    pub fn round(&self) -> u32 {
        self.round
    }
    /// Members in join order.
    pub fn players(&self) -> &[Player] {
        &self.players
    }
    pub fn player(&self, id: PlayerId) -> Option<&Player> {
        self.players.iter().find(|p| p.id == id)
    }
    /// Every table created so far, in order.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }
    pub fn table(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id.0 as usize)
    }
    /// Swiss byes so far.
    pub fn byes(&self) -> &[Bye] {
        &self.byes
    }
    pub fn started_at(&self) -> Option<u64> {
        self.started_at
    }
    pub fn finished_at(&self) -> Option<u64> {
        self.finished_at
    }
    /// Arena: when it ends (once started).
    pub fn ends_at(&self) -> Option<u64> {
        match self.config.kind {
            Kind::Arena { duration_ms, .. } => self.started_at.map(|s| s + duration_ms),
            Kind::Swiss { .. } => None,
        }
    }
    /// Arena: from when on nobody is paired any more (once started).
    pub fn pairing_stops_at(&self) -> Option<u64> {
        match self.config.kind {
            Kind::Arena {
                duration_ms,
                stop_pairing_before_ms,
            } => self
                .started_at
                .map(|s| s + duration_ms - stop_pairing_before_ms),
            Kind::Swiss { .. } => None,
        }
    }
    fn is_arena(&self) -> bool {
        matches!(self.config.kind, Kind::Arena { .. })
    }
    fn index(&self, id: PlayerId) -> Option<usize> {
        self.players.iter().position(|p| p.id == id)
    }

    /// The standings now: the Swiss table with its tie-breaks, or the arena's live
    /// leaderboard (see `docs/tournaments.md`). Ranks are 1-based and never shared.
    pub fn standings(&self) -> Vec<Standing> {
        standings::compute(self)
    }

    /// Applies one input: the same as calling its method.
    pub fn apply(&mut self, input: &Input) -> Result<Vec<Effect>> {
        match *input {
            Input::Join { player, rating, at } => self.join(player, rating, at),
            Input::Withdraw { player, at } => self.withdraw(player, at),
            Input::Start { at } => self.start(at),
            Input::Result {
                table,
                ref outcome,
                at,
            } => self.report_result(table, outcome, at),
            Input::Absent { player, table, at } => self.absent(player, table, at),
            Input::Tick { now } => Ok(self.tick(now)),
        }
    }

    /// A player joins with their rating (for the game's pool), at `at`. Before the start,
    /// or late: a Swiss player who joins after the start is paired from the next round
    /// with 0 points; an arena player is paired at once. A withdrawn or paused arena
    /// member who joins again resumes.
    pub fn join(&mut self, player: PlayerId, rating: f64, at: u64) -> Result<Vec<Effect>> {
        if !rating.is_finite() || rating.abs() > 1e12 {
            return Err(TournamentError::BadRating);
        }
        match self.phase {
            Phase::Finished => return Err(TournamentError::Closed),
            Phase::Running => match self.config.kind {
                Kind::Swiss { rounds } if self.round >= rounds => {
                    return Err(TournamentError::Closed);
                }
                Kind::Arena { .. } if Some(at) >= self.pairing_stops_at() => {
                    return Err(TournamentError::Closed);
                }
                _ => {}
            },
            Phase::Registration => {}
        }
        if let Some(i) = self.index(player) {
            let arena = self.is_arena();
            let p = &mut self.players[i];
            if arena && matches!(p.status, PlayerStatus::Withdrawn | PlayerStatus::Paused) {
                p.status = PlayerStatus::Active;
                let mut effects = vec![Effect::Joined { player }];
                if self.phase == Phase::Running {
                    effects.extend(self.pair_arena(at));
                }
                return Ok(effects);
            }
            return Err(TournamentError::AlreadyJoined);
        }
        let lot = draw(self.config.seed, STREAM_LOTS, self.joins);
        self.joins += 1;
        self.players.push(Player {
            id: player,
            rating_milli: (rating * 1000.0).round() as i64,
            lot,
            joined_at: at,
            joined_in_round: self.round,
            status: PlayerStatus::Active,
            points: 0,
            table: None,
            games: 0,
            wins: 0,
            draws: 0,
            losses: 0,
            byes: Vec::new(),
            missed_in_a_row: 0,
            absences: 0,
            streak: 0,
            last_mates: Vec::new(),
        });
        let mut effects = vec![Effect::Joined { player }];
        if self.phase == Phase::Running && self.is_arena() {
            effects.extend(self.pair_arena(at));
        }
        Ok(effects)
    }

    /// A member leaves. Before the start they are simply removed. After it they are never
    /// paired again; their past games stand, and a game they are playing counts when its
    /// result comes.
    pub fn withdraw(&mut self, player: PlayerId, _at: u64) -> Result<Vec<Effect>> {
        if self.phase == Phase::Finished {
            return Err(TournamentError::TournamentOver);
        }
        let i = self.index(player).ok_or(TournamentError::NotAMember)?;
        if self.phase == Phase::Registration {
            self.players.remove(i);
            return Ok(vec![Effect::Withdrew { player }]);
        }
        let p = &mut self.players[i];
        match p.status {
            PlayerStatus::Active | PlayerStatus::Paused => {
                p.status = PlayerStatus::Withdrawn;
                Ok(vec![Effect::Withdrew { player }])
            }
            PlayerStatus::Withdrawn | PlayerStatus::Dropped => Err(TournamentError::NotActive),
        }
    }

    /// Starts the tournament at `at`: a Swiss pairs its first round (it needs at least
    /// `min_table_size` players); an arena pairs whoever has joined.
    pub fn start(&mut self, at: u64) -> Result<Vec<Effect>> {
        match self.phase {
            Phase::Registration => {}
            Phase::Running => return Err(TournamentError::AlreadyStarted),
            Phase::Finished => return Err(TournamentError::TournamentOver),
        }
        if !self.is_arena() && self.players.len() < self.config.min_table_size {
            return Err(TournamentError::TooFewPlayers);
        }
        self.phase = Phase::Running;
        self.started_at = Some(at);
        let mut effects = vec![Effect::Started { at }];
        if self.is_arena() {
            effects.extend(self.pair_arena(at));
        } else {
            effects.extend(self.next_swiss_round(at));
        }
        Ok(effects)
    }

    /// The result of a table's game, at `at`. Seats reported absent forfeit whatever the
    /// outcome says (they come after everyone present). Swiss: the last result of a
    /// round ends it and pairs the next (or ends the tournament). Arena: the players are
    /// free again and paired at once if anyone suits them.
    pub fn report_result(
        &mut self,
        table: TableId,
        outcome: &Outcome,
        at: u64,
    ) -> Result<Vec<Effect>> {
        let t = self.table(table).ok_or(TournamentError::UnknownTable)?;
        if t.state != TableState::Playing {
            return Err(TournamentError::TableClosed);
        }
        points::check_outcome(outcome, t.players.len()).map_err(TournamentError::BadOutcome)?;
        let places = points::places(outcome, &t.absent);
        Ok(self.close_table(table, places, at))
    }

    /// `player` is absent from `table` (the server says so when the table's clock runs
    /// out on them): they forfeit the game, every tablemate present beats them. When at
    /// most one player is left present, the table ends at once. Swiss: two rounds missed
    /// in a row and the player is dropped. Arena: the player is paused until they join
    /// again.
    pub fn absent(&mut self, player: PlayerId, table: TableId, at: u64) -> Result<Vec<Effect>> {
        self.absent_together(&[player], table, at)
    }

    /// Several players absent from `table` at once, as [`Tournament::absent`] for each,
    /// but the table is judged once all are marked: a table abandoned unplayed is a
    /// forfeit for everyone at it, not a win for whoever was reported last. Refused
    /// (nothing changed) if any of them cannot be marked.
    pub fn absent_together(
        &mut self,
        players: &[PlayerId],
        table: TableId,
        at: u64,
    ) -> Result<Vec<Effect>> {
        let t = self.table(table).ok_or(TournamentError::UnknownTable)?;
        if t.state != TableState::Playing {
            return Err(TournamentError::TableClosed);
        }
        let mut seats = Vec::with_capacity(players.len());
        for player in players {
            let seat = t
                .players
                .iter()
                .position(|p| p == player)
                .ok_or(TournamentError::NotAtTable)?;
            if t.absent[seat] || seats.contains(&seat) {
                return Err(TournamentError::AlreadyAbsent);
            }
            seats.push(seat);
        }
        let mut effects = Vec::new();
        let arena = self.is_arena();
        for (&seat, &player) in seats.iter().zip(players) {
            self.tables[table.0 as usize].absent[seat] = true;
            let i = self.index(player).expect("a seated player is a member");
            let p = &mut self.players[i];
            p.absences += 1;
            if arena {
                if p.status == PlayerStatus::Active {
                    p.status = PlayerStatus::Paused;
                }
            } else {
                p.missed_in_a_row += 1;
                if p.missed_in_a_row >= 2 && p.status == PlayerStatus::Active {
                    p.status = PlayerStatus::Dropped;
                    effects.push(Effect::PlayerDropped { player });
                }
            }
        }
        let t = &self.tables[table.0 as usize];
        let present: Vec<usize> = (0..t.players.len()).filter(|&s| !t.absent[s]).collect();
        let seats = t.players.len();
        if present.len() <= 1 && seats > 1 || present.is_empty() {
            // Nobody left to play against: the one present (if any) wins.
            let places = (0..seats)
                .map(|s| present.contains(&s).then_some(0))
                .collect();
            effects.extend(self.close_table(table, places, at));
        }
        Ok(effects)
    }

    /// The passing of time, at `now`. Arena: pairs whoever is free (until pairing stops),
    /// and ends the arena once its time is up. Call it every second or so, and right
    /// after the other inputs if you like; it is harmless at any time (a Swiss, or a
    /// tournament not running, ignores it).
    pub fn tick(&mut self, now: u64) -> Vec<Effect> {
        if self.phase != Phase::Running || !self.is_arena() {
            return Vec::new();
        }
        if Some(now) >= self.ends_at() {
            let mut uncounted = Vec::new();
            for t in &mut self.tables {
                if t.state == TableState::Playing {
                    t.state = TableState::Uncounted;
                    uncounted.push(t.id);
                }
            }
            for p in &mut self.players {
                p.table = None;
            }
            return vec![self.finish(now, uncounted)];
        }
        self.pair_arena(now)
    }

    /// Counts a table's result: points, records, the players free again; then what
    /// follows (the round's end, arena pairing).
    fn close_table(&mut self, table: TableId, places: Vec<Place>, at: u64) -> Vec<Effect> {
        let arena = self.is_arena();
        let k = self.config.table_size;
        let players = self.tables[table.0 as usize].players.clone();
        let mut earned = Vec::with_capacity(players.len());
        for (seat, &id) in players.iter().enumerate() {
            let i = self.index(id).expect("a seated player is a member");
            let p = &mut self.players[i];
            let result = points::arena_result(&places, seat);
            match result {
                ArenaResult::Win => p.wins += 1,
                ArenaResult::Draw => p.draws += 1,
                ArenaResult::Loss => p.losses += 1,
            }
            let gained = if arena {
                let g = points::arena_points(result, p.streak >= 2);
                p.streak = if result == ArenaResult::Win {
                    p.streak + 1
                } else {
                    0
                };
                p.last_mates = players.iter().copied().filter(|&m| m != id).collect();
                g
            } else {
                if places[seat].is_some() {
                    p.missed_in_a_row = 0;
                }
                points::swiss_ticks(&places, seat, k)
            };
            p.points += gained;
            p.games += 1;
            p.table = None;
            earned.push(gained);
        }
        self.tables[table.0 as usize].state = TableState::Finished {
            places,
            points: earned.clone(),
            at,
        };
        let mut effects = vec![Effect::TableFinished {
            table,
            players,
            points: earned,
        }];
        if arena {
            effects.extend(self.pair_arena(at));
        } else if self
            .tables
            .iter()
            .filter(|t| t.round == self.round)
            .all(|t| t.state != TableState::Playing)
        {
            effects.push(Effect::RoundEnded { round: self.round });
            effects.extend(self.next_swiss_round(at));
        }
        effects
    }

    /// Ranks players for pairing: points, then rating, then the seeded lot.
    fn pairing_order(&self, mut who: Vec<usize>) -> Vec<usize> {
        who.sort_by(|&a, &b| {
            let (p, q) = (&self.players[a], &self.players[b]);
            q.points
                .cmp(&p.points)
                .then(q.rating_milli.cmp(&p.rating_milli))
                .then(p.lot.cmp(&q.lot))
                .then(p.id.cmp(&q.id))
        });
        who
    }

    /// Pairs the next Swiss round, or ends the tournament when the rounds are played or
    /// too few active players are left for a table.
    fn next_swiss_round(&mut self, at: u64) -> Vec<Effect> {
        let Kind::Swiss { rounds } = self.config.kind else {
            unreachable!("Swiss only");
        };
        let active: Vec<usize> = (0..self.players.len())
            .filter(|&i| self.players[i].status == PlayerStatus::Active)
            .collect();
        if self.round >= rounds || active.len() < self.config.min_table_size {
            return vec![self.finish(at, Vec::new())];
        }
        self.round += 1;
        let round = self.round;
        let ranked = self.pairing_order(active);
        let (sizes, nbyes) = pairing::table_plan(
            ranked.len(),
            self.config.table_size,
            self.config.min_table_size,
        );
        // Byes: the fewest byes so far first, then the lowest ranked.
        let mut candidates: Vec<usize> = ranked.iter().rev().copied().collect();
        candidates.sort_by_key(|&i| self.players[i].byes.len()); // stable: keeps lowest first
        let bye_players: Vec<usize> = candidates[..nbyes].to_vec();
        let rest: Vec<usize> = ranked
            .iter()
            .copied()
            .filter(|i| !bye_players.contains(i))
            .collect();
        let met = self.met_matrix(&rest);
        let groups = pairing::group(&met, &sizes);
        let bye_ticks = points::bye_ticks(self.config.table_size);
        let mut byes = Vec::new();
        for &i in &bye_players {
            let p = &mut self.players[i];
            p.points += bye_ticks;
            p.byes.push(round);
            self.byes.push(Bye {
                round,
                player: p.id,
                points: bye_ticks,
            });
            byes.push(p.id);
        }
        let mut effects = vec![Effect::RoundStarted { round, byes }];
        for g in groups {
            let members = g.iter().map(|&x| rest[x]).collect();
            effects.push(self.create_table(members, round, at));
        }
        effects
    }

    /// How often each two of `who` (indices of players) sat at one table before.
    fn met_matrix(&self, who: &[usize]) -> pairing::Met {
        let ids: Vec<PlayerId> = who.iter().map(|&i| self.players[i].id).collect();
        let mut met = vec![vec![0u32; who.len()]; who.len()];
        for t in &self.tables {
            let pos: Vec<usize> = t
                .players
                .iter()
                .filter_map(|p| ids.iter().position(|q| q == p))
                .collect();
            for (x, &a) in pos.iter().enumerate() {
                for &b in &pos[x + 1..] {
                    met[a][b] += 1;
                    met[b][a] += 1;
                }
            }
        }
        met
    }

    /// Opens a table for these players (indices), seats in a seeded random order.
    fn create_table(&mut self, mut members: Vec<usize>, round: u32, at: u64) -> Effect {
        let id = TableId(self.tables.len() as u32);
        // Fisher–Yates from the seed's seat stream: who sits first is drawn, not ranked.
        for x in (1..members.len()).rev() {
            let r = draw(
                self.config.seed,
                STREAM_SEATS,
                u64::from(id.0) * 8 + x as u64,
            );
            members.swap(x, (r % (x as u64 + 1)) as usize);
        }
        let players: Vec<PlayerId> = members.iter().map(|&i| self.players[i].id).collect();
        for &i in &members {
            self.players[i].table = Some(id);
        }
        self.tables.push(Table {
            id,
            round,
            absent: vec![false; players.len()],
            players: players.clone(),
            created_at: at,
            state: TableState::Playing,
        });
        Effect::CreateTable {
            table: id,
            round,
            players,
        }
    }

    /// Arena: seats whoever is free (active, at no table) at tables of the event's plan,
    /// nearest in score (then rating); a table's seats go to the next in that order who
    /// did not sit at the last game of anyone already seated there, or, when nobody else
    /// is free, to the next in order. Those left over wait for the next pairing. Nothing
    /// is paired once pairing has stopped.
    fn pair_arena(&mut self, now: u64) -> Vec<Effect> {
        if self.phase != Phase::Running || Some(now) >= self.pairing_stops_at() {
            return Vec::new();
        }
        let free: Vec<usize> = (0..self.players.len())
            .filter(|&i| {
                let p = &self.players[i];
                p.status == PlayerStatus::Active && p.table.is_none()
            })
            .collect();
        let mut pool = self.pairing_order(free);
        let (sizes, _) = pairing::table_plan(
            pool.len(),
            self.config.table_size,
            self.config.min_table_size,
        );
        let mut effects = Vec::new();
        for size in sizes {
            let mut table = vec![pool.remove(0)];
            while table.len() < size {
                // Only the members' last games count (docs/tournaments.md): the candidate's
                // own may be older. Asking both ways kept a player who waited out of every
                // table once their last opponent led the order: they had "just played"
                // the opener, many games ago.
                let fresh = pool.iter().position(|&c| {
                    let candidate = self.players[c].id;
                    table
                        .iter()
                        .all(|&m| !self.players[m].last_mates.contains(&candidate))
                });
                table.push(pool.remove(fresh.unwrap_or(0)));
            }
            effects.push(self.create_table(table, 0, now));
        }
        effects
    }

    fn finish(&mut self, at: u64, uncounted: Vec<TableId>) -> Effect {
        self.phase = Phase::Finished;
        self.finished_at = Some(at);
        let standings = self.standings();
        Effect::Over {
            podium: standings.iter().take(3).map(|s| s.player).collect(),
            standings,
            uncounted,
        }
    }
}
