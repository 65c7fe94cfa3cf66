//! What one viewer sees. In Rust every display value is there (the trick, counts,
//! the winning seat), for bots and tests; on the wire only what does not follow from the
//! rest ([`TrumpViewWire`]), so that a move's patch is the one card played.

use game_core::{Phase, Seat, Viewer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cards::{Card, Colour, Symbol, cards_of};
use crate::{Options, Trump};

/// One card played into a trick, by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrickPlay {
    pub seat: Seat,
    pub card: Card,
}

/// A finished trick.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CompletedTrick {
    pub leader: Seat,
    pub winner: Seat,
    /// In playing order, starting with the leader.
    pub cards: Vec<TrickPlay>,
}

/// The scoring of a finished round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoundResult {
    pub round: u32,
    /// Winner of the last trick: took both indicators, deals and leads next.
    pub last_trick_winner: Seat,
    /// The cards of the round's last trick, in playing order: the next round's deal,
    /// usually in the same message, empties the view's `plays`, and this is where the
    /// round's last card is said. Empty in results recorded before it was.
    #[serde(default)]
    pub last_trick: Vec<Card>,
    pub trump_colour: Colour,
    /// The symbol that scored.
    pub symbol: Symbol,
    /// Cards won per seat, indicators included.
    pub won_counts: Vec<u32>,
    /// Won cards bearing the round's symbol, per seat.
    pub symbol_counts: Vec<u32>,
    /// Points of this round per seat.
    pub points: Vec<i64>,
    /// Match totals after this round.
    pub totals: Vec<i64>,
}

/// Everything one viewer may see.
///
/// On the wire (its `Serialize`, what a client holds and each move's patch changes) a view
/// is the round's facts that nothing else says: who led the first trick and `plays`,
/// every card played this round in playing order, besides the deal's facts, the hand, the
/// scores and results. Everything a client would otherwise be sent again at each move
/// (the trick on the table and its leader, whose turn, the led colour, the winning card,
/// the last trick, the played cards, the counts per seat) follows from those by R-32 and
/// is left out: [`TrumpViewWire`] is what is written, and reading one back derives the
/// rest (`From<TrumpViewWire>`), so the fields below are all there for bots and tests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "TrumpViewWire")]
pub struct TrumpView {
    pub options: Options,
    pub players: usize,
    pub viewer: Viewer,
    pub phase: Phase,
    /// Current (or last) round, 1-based; 0 before the first.
    pub round: u32,
    /// Dealer of the current (or last) round.
    pub dealer: Option<Seat>,
    /// Dealer of the next round once known (R-31: the last trick's winner).
    pub next_dealer: Option<Seat>,
    /// The face-up indicators of the current (or last) round.
    pub trump_indicator: Option<Card>,
    pub symbol_indicator: Option<Card>,
    pub trump_colour: Option<Colour>,
    pub symbol: Option<Symbol>,
    /// Cards dealt to each seat in the current (or last) round; 0 before the first.
    pub hand_size: u32,
    /// Who led the first trick of the current (or last) round; `null` before the
    /// first round.
    pub first_leader: Option<Seat>,
    /// Every card played in the current (or last) round, in playing order: trick after
    /// trick, each from its leader (the first trick's is `first_leader`, each next one's
    /// the winner of the one before, R-32). The last `len mod players` are the trick on
    /// the table.
    pub plays: Vec<Card>,
    /// Leader of the trick on the table. Derived (not on the wire).
    #[serde(skip_serializing)]
    pub leader: Option<Seat>,
    /// The seat whose turn it is, while a round is in progress. Derived.
    #[serde(skip_serializing)]
    pub turn: Option<Seat>,
    /// The trick on the table, in playing order. Derived.
    #[serde(skip_serializing)]
    pub trick: Vec<TrickPlay>,
    /// Colour of the trick's first card. Derived.
    #[serde(skip_serializing)]
    pub led_colour: Option<Colour>,
    /// The seat whose card wins the trick on the table so far (R-32: the highest trump,
    /// else the highest card of the led colour); `null` when no card is on the table.
    /// Derived.
    #[serde(skip_serializing)]
    pub winning: Option<Seat>,
    /// The viewer's hand, sorted (colour-major, then number). `null` for a spectator. The
    /// cards it may play now are its legal actions ([`TrumpView::playable`]), not repeated
    /// here.
    pub hand: Option<Vec<Card>>,
    /// Cards in each seat's hand. Derived.
    #[serde(skip_serializing)]
    pub hand_counts: Vec<u32>,
    /// Tricks won this round, per seat. Derived.
    #[serde(skip_serializing)]
    pub tricks_won: Vec<u32>,
    /// Cards won this round, per seat (indicators included once taken). Derived.
    #[serde(skip_serializing)]
    pub won_counts: Vec<u32>,
    /// Won cards bearing the round's symbol, per seat. Derived.
    #[serde(skip_serializing)]
    pub symbol_counts: Vec<u32>,
    /// Tricks completed this round. Derived.
    #[serde(skip_serializing)]
    pub tricks_played: u32,
    /// The last completed trick of this round. Derived.
    #[serde(skip_serializing)]
    pub last_trick: Option<CompletedTrick>,
    /// Every card of this round's completed tricks, sorted (colour-major, then number):
    /// each was played face up, so anyone could remember them (the indicators are not
    /// listed, even once taken). Empty between rounds. Derived.
    #[serde(skip_serializing)]
    pub played: Vec<Card>,
    /// The result of the last finished round.
    pub last_round: Option<RoundResult>,
    /// Match totals.
    pub scores: Vec<i64>,
    pub match_over: bool,
    /// Winners once the match is over.
    pub winners: Vec<Seat>,
}

/// What one viewer may see, as it is written on the wire (protocol.md §6.4): the round's
/// first leader and every card played in it, not the trick, turn, counts or last trick
/// that follow from them. In Rust, read into a `TrumpView`, which derives them.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TrumpViewWire {
    pub options: Options,
    pub players: usize,
    /// Whose view this is: equals the socket's `you`.
    pub viewer: Viewer,
    pub phase: Phase,
    /// Current (or last) round, 1-based; 0 before the first.
    pub round: u32,
    /// Dealer of the current (or last) round.
    pub dealer: Option<Seat>,
    /// Between rounds and after the match: the last trick's winner, who deals next.
    /// `null` during play.
    pub next_dealer: Option<Seat>,
    /// The face-up indicators of the current (or last) round.
    pub trump_indicator: Option<Card>,
    pub symbol_indicator: Option<Card>,
    /// The trump colour: the trump indicator's colour.
    pub trump_colour: Option<Colour>,
    /// The symbol that scores: the symbol indicator's symbol.
    pub symbol: Option<Symbol>,
    /// Cards dealt to each seat in the current (or last) round; 0 before the first. A
    /// seat holds this many less the cards it played (`plays`).
    pub hand_size: u32,
    /// Who led the first trick of the current (or last) round; `null` before the
    /// first round.
    pub first_leader: Option<Seat>,
    /// Every card played in the current (or last) round, in playing order, trick after
    /// trick (`players` cards each): each trick from its leader and on round the table,
    /// the first trick's leader `first_leader`, each next one's the winner of the trick
    /// before (R-32: the highest trump, else the highest card of the led colour). The last
    /// `length mod players` cards are the trick on the table; the seat to play is the one
    /// after its last card's (its leader when it is empty) while `phase` is `playing`.
    pub plays: Vec<Card>,
    /// The viewer's hand, sorted (colour-major, then number). `null` for a spectator. The
    /// cards it may play now are its legal actions, not repeated here.
    pub hand: Option<Vec<Card>>,
    /// The result of the last finished round.
    pub last_round: Option<RoundResult>,
    /// Match totals.
    pub scores: Vec<i64>,
    pub match_over: bool,
    /// Winners once the match is over.
    pub winners: Vec<Seat>,
}

impl JsonSchema for TrumpView {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TrumpView".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TrumpViewWire::json_schema(generator)
    }
}

/// The seat of each of a round's `plays` (R-32: each trick from its leader, the first
/// trick's `first_leader`, each next one's the winner of the trick before).
pub fn seats_of_plays(plays: &[Card], first_leader: Seat, trump: Colour, n: usize) -> Vec<Seat> {
    let mut seats = Vec::with_capacity(plays.len());
    let mut leader = first_leader;
    for trick in plays.chunks(n.max(1)) {
        seats.extend((0..trick.len()).map(|i| (leader + i) % n));
        if trick.len() == n {
            leader = (leader + Trump::trick_winner_pos(trick, trump)) % n;
        }
    }
    seats
}

impl From<TrumpViewWire> for TrumpView {
    /// Derives what the wire leaves out, as [`view_for`] computes it from the game.
    fn from(w: TrumpViewWire) -> TrumpView {
        let n = w.players.max(1);
        let playing = w.phase == Phase::Playing;
        let in_round = w.first_leader.is_some();
        let mut leader = w.first_leader.unwrap_or(0);
        let mut tricks_won = vec![0u32; n];
        let mut won = vec![0u64; n];
        let mut last_trick = None;
        let complete = w.plays.len() / n;
        for cards in w.plays.chunks_exact(n) {
            let pos = w
                .trump_colour
                .map_or(0, |t| Trump::trick_winner_pos(cards, t));
            let winner = (leader + pos) % n;
            tricks_won[winner] += 1;
            won[winner] |= cards.iter().fold(0, |a, c| a | c.bit());
            last_trick = Some(CompletedTrick {
                leader,
                winner,
                cards: cards
                    .iter()
                    .enumerate()
                    .map(|(i, &card)| TrickPlay {
                        seat: (leader + i) % n,
                        card,
                    })
                    .collect(),
            });
            leader = winner;
        }
        let played: Vec<Card> = if playing {
            cards_of(won.iter().fold(0, |a, w| a | w)).collect()
        } else {
            Vec::new()
        };
        // Once a round is over its last trick's winner holds both indicators.
        if in_round
            && !playing
            && let (Some(t), Some(ti), Some(si)) =
                (&last_trick, w.trump_indicator, w.symbol_indicator)
        {
            won[t.winner] |= ti.bit() | si.bit();
        }
        let trick: Vec<TrickPlay> = w.plays[complete * n..]
            .iter()
            .enumerate()
            .map(|(i, &card)| TrickPlay {
                seat: (leader + i) % n,
                card,
            })
            .collect();
        let winning = match (trick.first(), w.trump_colour) {
            (Some(_), Some(t)) => {
                let cards: Vec<Card> = trick.iter().map(|p| p.card).collect();
                Some(trick[Trump::trick_winner_pos(&cards, t)].seat)
            }
            _ => None,
        };
        let on_table = |s: Seat| trick.iter().any(|p| p.seat == s);
        let hand_counts = (0..n)
            .map(|s| match in_round {
                true => w.hand_size - complete as u32 - u32::from(on_table(s)),
                false => 0,
            })
            .collect();
        let sym = w.symbol.map_or(0, |y| y.mask());
        TrumpView {
            leader: Some(leader).filter(|_| playing),
            turn: Some((leader + trick.len()) % n).filter(|_| playing),
            led_colour: trick.first().map(|p| p.card.colour()),
            winning,
            hand_counts,
            tricks_won,
            won_counts: won.iter().map(|w| w.count_ones()).collect(),
            symbol_counts: won.iter().map(|w| (w & sym).count_ones()).collect(),
            tricks_played: complete as u32,
            last_trick,
            played,
            trick,
            options: w.options,
            players: w.players,
            viewer: w.viewer,
            phase: w.phase,
            round: w.round,
            dealer: w.dealer,
            next_dealer: w.next_dealer,
            trump_indicator: w.trump_indicator,
            symbol_indicator: w.symbol_indicator,
            trump_colour: w.trump_colour,
            symbol: w.symbol,
            hand_size: w.hand_size,
            first_leader: w.first_leader,
            plays: w.plays,
            hand: w.hand,
            last_round: w.last_round,
            scores: w.scores,
            match_over: w.match_over,
            winners: w.winners,
        }
    }
}

impl TrumpView {
    /// The cards the viewer may play now: on its turn, the cards of the led colour
    /// it holds, or its whole hand when it holds none or leads; otherwise none. What the
    /// legal actions list, read from the view alone.
    pub fn playable(&self) -> Vec<Card> {
        let (Some(hand), Some(me)) = (&self.hand, self.viewer.seat()) else {
            return Vec::new();
        };
        if self.phase != Phase::Playing || self.turn != Some(me) {
            return Vec::new();
        }
        match self.led_colour {
            Some(led) if hand.iter().any(|c| c.colour() == led) => {
                hand.iter().copied().filter(|c| c.colour() == led).collect()
            }
            _ => hand.clone(),
        }
    }
}

pub(crate) fn view_for(g: &Trump, viewer: Viewer) -> TrumpView {
    let n = g.players;
    let me = viewer.seat().filter(|&s| s < n);
    let playing = g.phase == Phase::Playing;
    let r = g.round.as_ref();
    let per_seat = |f: &dyn Fn(Seat) -> u32| -> Vec<u32> {
        match r {
            Some(_) => (0..n).map(f).collect(),
            None => vec![0; n],
        }
    };
    let hand = match (r, me) {
        (Some(r), Some(s)) => Some(cards_of(r.hands[s]).collect()),
        (None, Some(_)) => Some(Vec::new()),
        _ => None,
    };
    TrumpView {
        options: g.options.clone(),
        players: n,
        viewer,
        phase: g.phase,
        round: g.round_no,
        hand_size: r.map_or(0, |r| r.dealt[0].count_ones()),
        first_leader: r.map(|r| r.first_leader),
        plays: r
            .map(|r| r.plays[..r.tricks_played as usize * n + r.trick_len as usize].to_vec())
            .unwrap_or_default(),
        dealer: r.map(|r| r.dealer),
        next_dealer: if playing { None } else { g.next_dealer },
        trump_indicator: r.map(|r| r.trump_indicator),
        symbol_indicator: r.map(|r| r.symbol_indicator),
        trump_colour: r.map(|r| r.trump),
        symbol: r.map(|r| r.symbol),
        leader: r.filter(|_| playing).map(|r| r.leader),
        turn: r.filter(|_| playing).map(|r| r.turn),
        trick: r
            .map(|r| {
                (0..r.trick_len as usize)
                    .map(|i| TrickPlay {
                        seat: (r.leader + i) % n,
                        card: r.trick[i],
                    })
                    .collect()
            })
            .unwrap_or_default(),
        led_colour: r.filter(|r| r.trick_len > 0).map(|r| r.trick[0].colour()),
        // R-32, as the trick would end if nobody else played.
        winning: r.filter(|r| r.trick_len > 0).map(|r| {
            let pos = Trump::trick_winner_pos(&r.trick[..r.trick_len as usize], r.trump);
            (r.leader + pos) % n
        }),
        hand,
        hand_counts: per_seat(&|s| r.map_or(0, |r| r.hands[s].count_ones())),
        tricks_won: per_seat(&|s| r.map_or(0, |r| u32::from(r.tricks_won[s]))),
        won_counts: per_seat(&|s| r.map_or(0, |r| r.won[s].count_ones())),
        symbol_counts: per_seat(&|s| r.map_or(0, |r| (r.won[s] & r.symbol.mask()).count_ones())),
        tricks_played: r.map_or(0, |r| u32::from(r.tricks_played)),
        last_trick: r.and_then(|r| r.last_trick.clone()),
        played: r
            .filter(|_| playing)
            .map(|r| cards_of(r.played()).collect())
            .unwrap_or_default(),
        last_round: g.last_result.clone(),
        scores: g.scores.clone(),
        match_over: g.phase == Phase::Finished,
        winners: g
            .outcome
            .as_ref()
            .map(|o| o.winners.clone())
            .unwrap_or_default(),
    }
}
