//! Post-match analysis (issue #32): every decision of every seat of a finished match,
//! judged twice.
//!
//! * With every hand open (the whole deal is known once the match is over, from its
//!   seeds: hands, stock order, Fibonachos' face-down spicy order): the best available
//!   action and the round score it leads to, and the cost of the action taken against it.
//!   Exact where a search finishes (the trick-taking games' remaining tricks, a paranoid
//!   alpha-beta search with a transposition table, [`exact`]); an estimate by seeded
//!   rollouts with the normal bots where it does not ([`rollout`]), with its standard
//!   error.
//! * With only what the seat could see: what the hard bot would have chosen
//!   (`bots::decide` at level hard, a fixed sample budget) and the round score it expects
//!   of it (the seat's view determinized `bot_samples` times, the bot's action played and
//!   the round rolled out).
//!
//! Values are round scores: each seat's points for the current round at the round's end.
//! Budgets are node and sample counts, never time, so the same input and settings give
//! the same analysis. The method, formulas and costs are in `docs/analysis.md`.

pub mod exact;
pub mod games;
pub mod record;
pub mod rollout;
pub mod trick;

use std::fmt;

use bots::{Budget, Level};
use game_core::{Game, Phase, Seed, Viewer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::exact::{Position, Solver};
use crate::games::Analysed;
use crate::rollout::{Estimate, Policy, estimate, in_round, play_out, round_scores};

/// A finished match as the store keeps it.
#[derive(Clone, Debug)]
pub struct MatchInput {
    /// The game's kind: "trump", "nachos", "fibfib", "rummy".
    pub game: String,
    /// The table's options JSON (`null`: the defaults).
    pub options: Value,
    pub players: usize,
    /// One seed per round, in order.
    pub seeds: Vec<Seed>,
    /// `(round_no (1-based), seat, action JSON)` in log order.
    pub actions: Vec<(u32, usize, Value)>,
}

/// How much work an analysis may do. Counts, never time: the same input and settings give
/// the same analysis on any machine. Read from JSON, a missing field takes its default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Node budget of one exact search (all the alternatives of one decision together; one
    /// seat's value of one chart point). Over it, that decision falls back to rollouts.
    pub exact_nodes: u64,
    /// Rollouts per alternative where the value is estimated.
    pub rollouts: u32,
    /// Determinizations of the hard bot's search, and of its expected result.
    pub bot_samples: u32,
    /// Most alternatives evaluated per decision (the taken one and the bot's always).
    pub max_alternatives: usize,
    /// Seeds every rollout and bot decision.
    pub seed: u64,
}

impl Default for Settings {
    /// Measured in docs/analysis.md ("Cost").
    fn default() -> Self {
        Settings {
            exact_nodes: 200_000,
            rollouts: 8,
            bot_samples: 8,
            max_alternatives: 24,
            seed: 0,
        }
    }
}

/// Why a match could not be analysed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalysisError {
    UnknownGame(String),
    BadOptions(String),
    /// The log does not replay (or does not finish its rounds).
    BadLog(String),
    /// `progress` asked to stop.
    Cancelled,
}

impl fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalysisError::UnknownGame(k) => write!(f, "unknown game `{k}`"),
            AnalysisError::BadOptions(m) => write!(f, "bad options: {m}"),
            AnalysisError::BadLog(m) => write!(f, "the log does not replay: {m}"),
            AnalysisError::Cancelled => write!(f, "cancelled"),
        }
    }
}

impl std::error::Error for AnalysisError {}

/// The version of [`MatchAnalysis`]'s JSON.
pub const VERSION: u32 = 1;

/// The analysis of one match (serialized for the web page, see docs/analysis.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchAnalysis {
    pub version: u32,
    pub game: String,
    pub players: usize,
    pub settings: Settings,
    pub seats: Vec<SeatSummary>,
    pub rounds: Vec<RoundAnalysis>,
    pub steps: Vec<StepAnalysis>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeatSummary {
    pub seat: usize,
    /// 0–100, see docs/analysis.md.
    pub accuracy: f64,
    /// The seat's steps (forced ones included).
    pub decisions: usize,
    /// Sum of the costs of its steps, in round points.
    pub total_cost: f64,
    /// Step indices, biggest cost first, at most 5, cost > 0 only.
    pub mistakes: Vec<usize>,
    /// Sum over rounds of the seat's all-open value at the deal less the seats' average
    /// (in the direction where more is better for the seat).
    pub luck: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundAnalysis {
    pub round: u32,
    pub first_step: usize,
    /// Per replay step from `first_step` on: every seat's expected final round score after
    /// that step (entry 0: the deal).
    pub chart: Vec<Vec<f64>>,
    /// "exact", "rollouts" or "mixed".
    pub chart_method: String,
    pub r#final: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    pub action: Value,
    pub value: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BotChoice {
    pub action: Value,
    pub expected: f64,
    pub samples: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepAnalysis {
    pub step: usize,
    pub round: u32,
    pub seat: usize,
    pub taken: Value,
    /// Legal actions the seat had.
    pub options: usize,
    /// Only one legal action (not counted in accuracy).
    pub forced: bool,
    /// "exact" or "rollouts".
    pub method: String,
    /// Standard error of the values for rollouts (the larger of the best's and the taken
    /// one's), 0 for exact.
    pub error: f64,
    pub best: Value,
    pub best_value: f64,
    pub taken_value: f64,
    pub cost: f64,
    /// Every evaluated action, best first.
    pub alternatives: Vec<Alternative>,
    /// The hard bot from the seat's own view. Off turn its choice is what a bot
    /// seat is asked there (`bots::decide_off_turn`, no search), `null` when it would
    /// wait.
    pub bot: Option<BotChoice>,
    /// `null`, "inaccuracy", "mistake" or "blunder".
    pub flag: Option<String>,
}

/// Number of decisions `analyse` evaluates (every logged action), for a progress bar.
pub fn decisions(input: &MatchInput) -> usize {
    input.actions.len()
}

/// Analyses a finished match. `progress(done, total)` is called after each decision;
/// returning false cancels ([`AnalysisError::Cancelled`]).
pub fn analyse(
    input: &MatchInput,
    settings: &Settings,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<MatchAnalysis, AnalysisError> {
    macro_rules! dispatch {
        ($t:ty) => {
            if input.game == <$t as Game>::KIND {
                return run::<$t>(input, settings, progress);
            }
        };
    }
    dispatch!(trump::Trump);
    dispatch!(nachos::NachosMatch);
    dispatch!(fibfib::FibFib);
    dispatch!(rummy::Rummy);
    Err(AnalysisError::UnknownGame(input.game.clone()))
}

/// The next decision of a match in progress, evaluated as [`analyse`] evaluates it.
#[derive(Clone, Debug, PartialEq)]
pub struct NextDecision {
    /// `(action, value)` for the seat on turn, best first.
    pub alternatives: Vec<(Value, f64)>,
    /// Whether the values are exact (else rollout estimates).
    pub exact: bool,
}

/// The next decision of a match in progress (`input` holds the seeds of the rounds begun
/// and the actions so far), valued exactly as [`analyse`] values that step (when the
/// legal actions are within `max_alternatives`). `None` when no seat is on turn.
pub fn next_decision(
    input: &MatchInput,
    settings: &Settings,
) -> Result<Option<NextDecision>, AnalysisError> {
    macro_rules! dispatch {
        ($t:ty) => {
            if input.game == <$t as Game>::KIND {
                return next_typed::<$t>(input, settings);
            }
        };
    }
    dispatch!(trump::Trump);
    dispatch!(nachos::NachosMatch);
    dispatch!(fibfib::FibFib);
    dispatch!(rummy::Rummy);
    Err(AnalysisError::UnknownGame(input.game.clone()))
}

fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("game types serialize to JSON")
}

fn new_game<G: Analysed>(input: &MatchInput) -> Result<G, AnalysisError> {
    ::games::check_options(&input.game, &input.options, input.players)
        .map_err(|e| AnalysisError::BadOptions(e.to_string()))?;
    let opts: G::Options = if input.options.is_null() {
        Default::default()
    } else {
        serde_json::from_value(input.options.clone())
            .map_err(|e| AnalysisError::BadOptions(e.to_string()))?
    };
    G::new_match(&opts, input.players).map_err(|e| AnalysisError::BadOptions(e.to_string()))
}

fn decode<G: Game>(a: &Value, step: usize) -> Result<G::Action, AnalysisError> {
    serde_json::from_value(a.clone())
        .map_err(|e| AnalysisError::BadLog(format!("step {step}: {e}")))
}

/// A seed for step `step`'s rollouts or bot, from the settings' seed.
fn step_seed(settings: &Settings, step: usize, salt: u64) -> u64 {
    settings
        .seed
        .wrapping_mul(0x2545_F491_4F6C_DD1D)
        .wrapping_add((step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        ^ salt
}

/// Every seat's value of a position, and whether it is exact.
struct SeatValues {
    values: Vec<f64>,
    exact: bool,
}

struct Ctx<'a, G: Analysed> {
    settings: &'a Settings,
    solver: Solver,
    players: usize,
    sign: f64,
    _g: std::marker::PhantomData<G>,
}

/// One decision evaluated.
struct Evaluated<G: Analysed> {
    legal: Vec<G::Action>,
    /// Indices into `legal`, with their values for the seat (and, for rollouts, estimates).
    cands: Vec<usize>,
    values: Vec<f64>,
    estimates: Vec<Option<Estimate>>,
    exact: bool,
    bot: Option<BotChoice>,
}

impl<'a, G: Analysed> Ctx<'a, G> {
    fn new(settings: &'a Settings, players: usize) -> Self {
        Ctx {
            settings,
            solver: Solver::new(),
            players,
            sign: if G::lower_is_better(players) {
                -1.0
            } else {
                1.0
            },
            _g: std::marker::PhantomData,
        }
    }

    fn rollouts(&self) -> u32 {
        self.settings.rollouts.max(1)
    }

    /// A position's exact values for every seat, if the search finishes.
    fn exact_all(&mut self, pos: &G::Pos) -> Option<Vec<f64>> {
        if pos.cards_left() > G::exact_cards(self.players) {
            return None;
        }
        let mut out = Vec::with_capacity(self.players);
        for s in 0..self.players {
            self.solver.budget(self.settings.exact_nodes);
            out.push(f64::from(self.solver.value(pos, s).ok()?));
        }
        Some(out)
    }

    /// Every seat's value of `g` (round begun with scores `start`).
    fn position_values(&mut self, g: &G, start: &[i64], step: usize) -> SeatValues {
        if !in_round(g, g.round()) {
            return SeatValues {
                values: round_scores(g, start),
                exact: true,
            };
        }
        if let Some(pos) = G::position(g)
            && let Some(values) = self.exact_all(&pos)
        {
            return SeatValues {
                values,
                exact: true,
            };
        }
        let e = estimate(
            g,
            start,
            self.rollouts(),
            step_seed(self.settings, step, 1),
            Policy::Noisy,
        );
        SeatValues {
            values: e.mean,
            exact: false,
        }
    }

    /// Evaluates `seat`'s decision in `g` (`taken`: the action logged, if known).
    fn evaluate(
        &mut self,
        g: &G,
        start: &[i64],
        seat: usize,
        taken: Option<usize>,
        step: usize,
    ) -> Evaluated<G> {
        self.solver.clear();
        let view = g.view_for(Viewer::Player(seat));
        let legal = G::legal_actions(&view);
        let on_turn = g.to_act().contains(&seat);
        let bot_action = if on_turn {
            bots::decide::<G>(
                &view,
                Level::Hard,
                step_seed(self.settings, step, 2),
                Budget::samples(self.settings.bot_samples.max(1)),
            )
        } else {
            // What a bot seat is asked off turn: no search at any level.
            bots::decide_off_turn::<G>(&view, Level::Hard)
        };
        let bot_i = bot_action
            .as_ref()
            .and_then(|b| legal.iter().position(|a| a == b));
        // Candidates: taken, the bot's, the normal bot's, then the moves the hard bot
        // would consider, then the rest, in the rules crate's order.
        let mut cands: Vec<usize> = Vec::new();
        let push = |i: usize, c: &mut Vec<usize>| {
            if !c.contains(&i) {
                c.push(i);
            }
        };
        if let Some(t) = taken {
            push(t, &mut cands);
        }
        if let Some(b) = bot_i {
            push(b, &mut cands);
        }
        if !legal.is_empty() {
            let mut rng = bots::BotRng::new(step_seed(self.settings, step, 3));
            push(G::normal(&view, &legal, &mut rng), &mut cands);
        }
        let cap = self.settings.max_alternatives.max(cands.len());
        for (i, a) in legal.iter().enumerate() {
            if G::worth_trying(&view, a) {
                push(i, &mut cands);
            }
        }
        for i in 0..legal.len() {
            push(i, &mut cands);
        }
        cands.truncate(cap);

        let mut values = Vec::new();
        let mut estimates = Vec::new();
        let mut exact = false;
        // Exact: the compact position, every candidate's child searched for `seat`.
        if on_turn
            && let Some(pos) = G::position(g)
            && pos.cards_left() <= G::exact_cards(self.players)
        {
            self.solver.budget(self.settings.exact_nodes);
            let mut ok = true;
            // Searched in the rules crate's order, whatever the candidates' order, so that
            // the table (and so the node count) evolves alike whichever action was taken.
            let mut by_legal: Vec<usize> = (0..cands.len()).collect();
            by_legal.sort_by_key(|&k| cands[k]);
            values = vec![f64::NAN; cands.len()];
            for k in by_legal {
                let i = cands[k];
                let Some(m) = G::action_move(&legal[i]) else {
                    ok = false;
                    break;
                };
                let mut c = pos.clone();
                c.play(m);
                match self.solver.value(&c, seat) {
                    Ok(v) => values[k] = f64::from(v),
                    Err(_) => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                exact = true;
                estimates = vec![None; cands.len()];
            } else {
                values.clear();
            }
        }
        if !exact {
            // Rollouts, every candidate on the same streams (common random numbers).
            let seed = step_seed(self.settings, step, 4);
            for &i in &cands {
                let mut c = g.clone();
                if c.apply(seat, &legal[i]).is_err() {
                    values.push(f64::NAN);
                    estimates.push(None);
                    continue;
                }
                let e = estimate(&c, start, self.rollouts(), seed, Policy::Noisy);
                values.push(e.mean[seat]);
                estimates.push(Some(e));
            }
        }
        let bot = bot_action.map(|b| {
            let expected = self.bot_expected(&view, &b, seat, step);
            BotChoice {
                action: to_json(&b),
                expected: expected.unwrap_or_else(|| {
                    bot_i
                        .and_then(|bi| cands.iter().position(|&c| c == bi))
                        .map_or(f64::NAN, |k| values[k])
                }),
                samples: self.settings.bot_samples.max(1),
            }
        });
        Evaluated {
            legal,
            cands,
            values,
            estimates,
            exact,
            bot,
        }
    }

    /// The round score the seat can expect of `action` from its own view: the view's
    /// unseen cards dealt at random `bot_samples` times, the action played, the round
    /// rolled out with the normal bots; the mean.
    fn bot_expected(
        &self,
        view: &G::View,
        action: &G::Action,
        seat: usize,
        step: usize,
    ) -> Option<f64> {
        let mut rng = bots::BotRng::new(step_seed(self.settings, step, 5));
        let (mut sum, mut k) = (0.0, 0u32);
        for _ in 0..self.settings.bot_samples.max(1) {
            let mut d = G::determinize(view, &mut rng)?;
            let before = d.scores();
            if d.apply(seat, action).is_err() {
                continue;
            }
            play_out(&mut d, Policy::Noisy, &mut rng);
            sum += round_scores(&d, &before)[seat];
            k += 1;
        }
        (k > 0).then(|| sum / f64::from(k))
    }

    /// The values after the taken candidate, for the chart.
    fn after_taken(
        &mut self,
        g_after: &G,
        start: &[i64],
        ev: &Evaluated<G>,
        seat: usize,
        step: usize,
    ) -> SeatValues {
        if !in_round(g_after, g_after.round()) {
            return SeatValues {
                values: round_scores(g_after, start),
                exact: true,
            };
        }
        if ev.exact
            && let Some(pos) = G::position(g_after)
        {
            let mut values = vec![0.0; self.players];
            values[seat] = ev.values[0];
            let mut ok = true;
            for (s, v) in values.iter_mut().enumerate() {
                if s == seat {
                    continue;
                }
                self.solver.budget(self.settings.exact_nodes);
                match self.solver.value(&pos, s) {
                    Ok(x) => *v = f64::from(x),
                    Err(_) => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                return SeatValues {
                    values,
                    exact: true,
                };
            }
        }
        if let Some(Some(e)) = ev.estimates.first() {
            return SeatValues {
                values: e.mean.clone(),
                exact: false,
            };
        }
        self.position_values(g_after, start, step)
    }

    fn oriented(&self, v: f64) -> f64 {
        if v.is_nan() {
            f64::NEG_INFINITY
        } else {
            self.sign * v
        }
    }

    /// `(alternatives best first, index in cands of the best)`.
    fn ranked(&self, ev: &Evaluated<G>) -> (Vec<(Value, f64)>, usize) {
        let mut order: Vec<usize> = (0..ev.cands.len()).collect();
        // Stable: among equal values the candidate order (the taken action first) wins.
        order.sort_by(|&a, &b| {
            self.oriented(ev.values[b])
                .partial_cmp(&self.oriented(ev.values[a]))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let alts = order
            .iter()
            .filter(|&&k| !ev.values[k].is_nan())
            .map(|&k| (to_json(&ev.legal[ev.cands[k]]), ev.values[k]))
            .collect();
        (alts, order[0])
    }
}

fn replay_start<G: Analysed>(
    g: &mut G,
    seed: &Seed,
    round_no: u32,
) -> Result<Vec<i64>, AnalysisError> {
    if g.phase() != Phase::AwaitingRound {
        return Err(AnalysisError::BadLog(format!(
            "round {round_no} has a seed but the match is not between rounds"
        )));
    }
    g.start_round(seed)
        .map_err(|e| AnalysisError::BadLog(format!("round {round_no}: {e}")))?;
    Ok(g.scores())
}

fn next_typed<G: Analysed>(
    input: &MatchInput,
    settings: &Settings,
) -> Result<Option<NextDecision>, AnalysisError> {
    let mut g = new_game::<G>(input)?;
    let mut step = 0usize;
    let mut start = Vec::new();
    let mut acts = input.actions.iter().peekable();
    for (ri, seed) in input.seeds.iter().enumerate() {
        let round_no = ri as u32 + 1;
        start = replay_start(&mut g, seed, round_no)?;
        step += 1;
        while let Some((_, seat, a)) = acts.next_if(|a| a.0 == round_no) {
            let action = decode::<G>(a, step)?;
            g.apply(*seat, &action)
                .map_err(|e| AnalysisError::BadLog(format!("step {step}: {e}")))?;
            step += 1;
        }
    }
    let Some(&seat) = g.to_act().first() else {
        return Ok(None);
    };
    let mut ctx = Ctx::<G>::new(settings, input.players);
    let ev = ctx.evaluate(&g, &start, seat, None, step);
    if ev.cands.is_empty() {
        return Ok(None);
    }
    Ok(Some(NextDecision {
        alternatives: ctx.ranked(&ev).0,
        exact: ev.exact,
    }))
}

fn run<G: Analysed>(
    input: &MatchInput,
    settings: &Settings,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> Result<MatchAnalysis, AnalysisError> {
    let mut g = new_game::<G>(input)?;
    let n = input.players;
    let total = input.actions.len();
    let mut ctx = Ctx::<G>::new(settings, n);
    let mut steps: Vec<StepAnalysis> = Vec::new();
    let mut rounds: Vec<RoundAnalysis> = Vec::new();
    let mut step = 0usize;
    let mut done = 0usize;
    let mut luck = vec![0.0; n];
    let mut acts = input.actions.iter().peekable();
    for (ri, seed) in input.seeds.iter().enumerate() {
        let round_no = ri as u32 + 1;
        let start = replay_start(&mut g, seed, round_no)?;
        let first_step = step;
        let deal = ctx.position_values(&g, &start, step);
        let avg = deal.values.iter().sum::<f64>() / n as f64;
        for (s, l) in luck.iter_mut().enumerate() {
            *l += ctx.sign * (deal.values[s] - avg);
        }
        let (mut any_exact, mut any_rollouts) = (deal.exact, !deal.exact);
        let mut chart = vec![deal.values];
        let first_step_entry = steps.len();
        step += 1;
        while let Some((_, seat, a)) = acts.next_if(|a| a.0 == round_no) {
            let seat = *seat;
            if seat >= n {
                return Err(AnalysisError::BadLog(format!(
                    "step {step}: no seat {seat}"
                )));
            }
            let action = decode::<G>(a, step)?;
            let legal = G::legal_actions(&g.view_for(Viewer::Player(seat)));
            let taken = legal.iter().position(|l| *l == action).ok_or_else(|| {
                AnalysisError::BadLog(format!("step {step}: the logged action is not legal"))
            })?;
            let ev = ctx.evaluate(&g, &start, seat, Some(taken), step);
            let mut after = g.clone();
            after
                .apply(seat, &action)
                .map_err(|e| AnalysisError::BadLog(format!("step {step}: {e}")))?;
            let chart_now = ctx.after_taken(&after, &start, &ev, seat, step);
            // The round's result is exact whatever the method: it does not count.
            if in_round(&after, round_no) {
                any_exact |= chart_now.exact;
                any_rollouts |= !chart_now.exact;
            }
            chart.push(chart_now.values);
            let (alts, best_k) = ctx.ranked(&ev);
            let best_value = ev.values[best_k];
            let taken_value = ev.values[0];
            let cost = (ctx.oriented(best_value) - ctx.oriented(taken_value)).max(0.0);
            let error = if ev.exact {
                0.0
            } else {
                let se = |k: usize| {
                    ev.estimates[k]
                        .as_ref()
                        .map_or(0.0, |e: &Estimate| e.se[seat])
                };
                se(best_k).max(se(0))
            };
            // The taken action is cands[0]; its best equal is reported as best.
            let best = if cost == 0.0 {
                a.clone()
            } else {
                to_json(&ev.legal[ev.cands[best_k]])
            };
            steps.push(StepAnalysis {
                step,
                round: round_no,
                seat,
                taken: a.clone(),
                options: ev.legal.len(),
                forced: ev.legal.len() == 1,
                method: if ev.exact { "exact" } else { "rollouts" }.to_string(),
                error,
                best,
                best_value,
                taken_value,
                cost,
                alternatives: alts
                    .into_iter()
                    .map(|(action, value)| Alternative { action, value })
                    .collect(),
                bot: ev.bot,
                flag: None,
            });
            g = after;
            step += 1;
            done += 1;
            if !progress(done, total) {
                return Err(AnalysisError::Cancelled);
            }
        }
        if in_round(&g, round_no) {
            return Err(AnalysisError::BadLog(format!(
                "round {round_no}: the log stops before the round ends"
            )));
        }
        let fin: Vec<i64> = round_scores(&g, &start).iter().map(|&v| v as i64).collect();
        let stakes = stakes(&fin);
        for s in &mut steps[first_step_entry..] {
            s.flag = flag(s.cost, s.error, stakes, s.forced).map(str::to_string);
        }
        rounds.push(RoundAnalysis {
            round: round_no,
            first_step,
            chart,
            chart_method: match (any_exact, any_rollouts) {
                (true, false) => "exact",
                (false, _) => "rollouts",
                (true, true) => "mixed",
            }
            .to_string(),
            r#final: fin,
        });
    }
    if let Some((r, _, _)) = acts.next() {
        return Err(AnalysisError::BadLog(format!(
            "an action of round {r}, which has no seed"
        )));
    }
    let seats = (0..n)
        .map(|s| summarize(s, &steps, luck[s]))
        .collect::<Vec<_>>();
    Ok(MatchAnalysis {
        version: VERSION,
        game: input.game.clone(),
        players: n,
        settings: settings.clone(),
        seats,
        rounds,
        steps,
    })
}

/// A round's stakes: the largest absolute round score any seat made in it, at least 1.
pub fn stakes(fin: &[i64]) -> f64 {
    fin.iter()
        .map(|v| v.unsigned_abs())
        .max()
        .unwrap_or(0)
        .max(1) as f64
}

/// Share of a round's stakes from which a cost is a mistake, and a blunder.
pub const MISTAKE: f64 = 0.10;
pub const BLUNDER: f64 = 0.25;

/// The flag of a step's cost (see docs/analysis.md, "Accuracy and flags").
pub fn flag(cost: f64, error: f64, stakes: f64, forced: bool) -> Option<&'static str> {
    // A rollout cost within two standard errors of nothing is not told apart from noise.
    if forced || cost <= 0.0 || cost <= 2.0 * error {
        return None;
    }
    Some(if cost >= BLUNDER * stakes {
        "blunder"
    } else if cost >= MISTAKE * stakes {
        "mistake"
    } else {
        "inaccuracy"
    })
}

/// Per-decision score: 1 − max(0, cost − 2·error) / spread, where the spread is the gap
/// between the best and the worst evaluated alternative (1 when all are equal) and the
/// error is the rollouts' standard error (0 when exact, so the cost counts whole);
/// accuracy is its mean over the seat's unforced decisions, × 100 (100 with none).
fn summarize(seat: usize, steps: &[StepAnalysis], luck: f64) -> SeatSummary {
    let mine: Vec<&StepAnalysis> = steps.iter().filter(|s| s.seat == seat).collect();
    let counted: Vec<f64> = mine
        .iter()
        .filter(|s| !s.forced)
        .map(|s| {
            let vals = s.alternatives.iter().map(|a| a.value);
            let hi = vals.clone().fold(f64::NEG_INFINITY, f64::max);
            let lo = vals.fold(f64::INFINITY, f64::min);
            let spread = hi - lo;
            if spread > 0.0 {
                (1.0 - (s.cost - 2.0 * s.error).max(0.0) / spread).clamp(0.0, 1.0)
            } else {
                1.0
            }
        })
        .collect();
    let accuracy = if counted.is_empty() {
        100.0
    } else {
        100.0 * counted.iter().sum::<f64>() / counted.len() as f64
    };
    let mut costly: Vec<&&StepAnalysis> = mine.iter().filter(|s| s.cost > 0.0).collect();
    costly.sort_by(|a, b| {
        b.cost
            .partial_cmp(&a.cost)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.step.cmp(&b.step))
    });
    SeatSummary {
        seat,
        accuracy: (accuracy * 100.0).round() / 100.0,
        decisions: mine.len(),
        total_cost: mine.iter().map(|s| s.cost).sum(),
        mistakes: costly.iter().take(5).map(|s| s.step).collect(),
        luck,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_the_documented_thresholds() {
        // Stakes: the largest absolute round score, at least 1.
        assert_eq!(stakes(&[13, 5]), 13.0);
        assert_eq!(stakes(&[0, 0]), 1.0);
        assert_eq!(stakes(&[-30, 2]), 30.0);
        assert_eq!(flag(0.0, 0.0, 20.0, false), None);
        assert_eq!(flag(1.0, 0.0, 20.0, false), Some("inaccuracy"));
        assert_eq!(flag(2.0, 0.0, 20.0, false), Some("mistake"));
        assert_eq!(flag(5.0, 0.0, 20.0, false), Some("blunder"));
        assert_eq!(flag(5.0, 0.0, 20.0, true), None);
        // A rollout cost within two standard errors is noise.
        assert_eq!(flag(5.0, 2.5, 20.0, false), None);
        assert_eq!(flag(5.0, 2.4, 20.0, false), Some("blunder"));
    }

    fn step(seat: usize, step: usize, cost: f64, error: f64, values: &[f64]) -> StepAnalysis {
        StepAnalysis {
            step,
            round: 1,
            seat,
            taken: Value::Null,
            options: values.len(),
            forced: values.len() == 1,
            method: "exact".into(),
            error,
            best: Value::Null,
            best_value: 0.0,
            taken_value: 0.0,
            cost,
            alternatives: values
                .iter()
                .map(|&value| Alternative {
                    action: Value::Null,
                    value,
                })
                .collect(),
            bot: None,
            flag: None,
        }
    }

    #[test]
    fn accuracy_is_the_mean_share_of_the_spread_kept() {
        let steps = vec![
            step(0, 1, 0.0, 0.0, &[5.0, 3.0]),      // best: 1
            step(0, 2, 2.0, 0.0, &[5.0, 3.0]),      // worst: 0
            step(0, 3, 1.0, 0.0, &[4.0, 3.0, 2.0]), // half: 0.5
            step(0, 4, 0.0, 0.0, &[7.0]),           // forced: not counted
            step(0, 5, 3.0, 1.0, &[6.0, 0.0]),      // rollouts: (3 − 2) / 6 lost
            step(1, 6, 0.0, 0.0, &[1.0, 0.0]),
        ];
        let s = summarize(0, &steps, 0.0);
        let want = 100.0 * (1.0 + 0.0 + 0.5 + (1.0 - 1.0 / 6.0)) / 4.0;
        assert!((s.accuracy - want).abs() < 0.01, "{} {want}", s.accuracy);
        assert_eq!(s.decisions, 5);
        assert_eq!(s.total_cost, 6.0);
        assert_eq!(s.mistakes, vec![5, 2, 3]);
        assert_eq!(summarize(1, &steps, 0.0).accuracy, 100.0);
    }
}

#[cfg(test)]
mod settings_tests {
    use super::*;

    #[test]
    fn settings_read_from_partial_json() {
        let s: Settings = serde_json::from_value(serde_json::json!({"rollouts": 3})).unwrap();
        assert_eq!(
            s,
            Settings {
                rollouts: 3,
                ..Settings::default()
            }
        );
        let back: Settings = serde_json::from_value(to_json(&s)).unwrap();
        assert_eq!(back, s);
    }
}
