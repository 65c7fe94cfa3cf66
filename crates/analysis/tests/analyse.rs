//! Whole analyses: planted mistakes are found, the same input gives the same analysis,
//! every game analyses a bot match, and step indices follow the replay's numbering.

use analysis::record::{bot_match, round_seed};
use analysis::{AnalysisError, MatchInput, Settings, analyse, next_decision};
use game_core::Phase;
use games::BotLevel;
use serde_json::{Value, json};

fn quick() -> Settings {
    Settings {
        exact_nodes: 50_000,
        rollouts: 2,
        bot_samples: 1,
        max_alternatives: 6,
        seed: 3,
    }
}

/// A Fibonachos match of three: seat 1 plays the analysis's best action at every step,
/// seat 0 too except at planted steps where it plays the worst evaluated one, seat 2 is
/// a normal bot. The analysis flags exactly the planted steps of seat 0, none of seat 1
/// (whose accuracy is 100), and only steps that cost something.
#[test]
fn planted_mistakes_are_found() {
    let settings = Settings {
        max_alternatives: 15,
        ..quick()
    };
    let mut input = MatchInput {
        game: "nachos".into(),
        options: Value::Null,
        players: 3,
        seeds: Vec::new(),
        actions: Vec::new(),
    };
    let (mut g, _) = games::new_match("nachos", &Value::Null, 3).unwrap();
    let (mut step, mut seat0, mut planted) = (0usize, 0usize, Vec::new());
    let targets = [3usize, 9, 16, 24];
    loop {
        match g.phase() {
            Phase::Finished => break,
            Phase::AwaitingRound => {
                let seed = round_seed(77, g.round() + 1);
                g.start_round(&seed).unwrap();
                input.seeds.push(seed);
                step += 1;
            }
            Phase::Playing => {
                let seat = g.to_act()[0];
                let a = if seat == 2 {
                    g.bot_action(
                        seat,
                        BotLevel::Normal,
                        step as u64,
                        games::BotBudget::samples(1),
                    )
                    .unwrap()
                } else {
                    let next = next_decision(&input, &settings).unwrap().unwrap();
                    let alts = next.alternatives;
                    let spread = alts[0].1 - alts[alts.len() - 1].1;
                    // Planted where the values are exact: a rollout's cost within two
                    // standard errors is (rightly) not flagged.
                    let plant = seat == 0
                        && next.exact
                        && spread > 0.0
                        && targets.get(planted.len()).is_some_and(|&t| seat0 >= t);
                    if seat == 0 {
                        seat0 += 1;
                    }
                    if plant {
                        planted.push(step);
                        alts[alts.len() - 1].0.clone()
                    } else {
                        alts[0].0.clone()
                    }
                };
                g.apply_json(seat, &a).unwrap();
                input.actions.push((g.round(), seat, a));
                step += 1;
            }
        }
    }
    assert_eq!(planted.len(), targets.len());
    let an = analyse(&input, &settings, &mut |_, _| true).unwrap();
    let flagged = |seat: usize| -> Vec<usize> {
        an.steps
            .iter()
            .filter(|s| s.seat == seat && s.flag.is_some())
            .map(|s| s.step)
            .collect()
    };
    assert_eq!(flagged(0), planted);
    assert_eq!(flagged(1), Vec::<usize>::new());
    for s in &an.steps {
        assert!(
            s.flag.is_none() || s.cost > 0.0,
            "step {} flagged at no cost",
            s.step
        );
        if s.seat < 2 && !planted.contains(&s.step) {
            assert_eq!(s.cost, 0.0, "step {}", s.step);
        }
    }
    assert_eq!(an.seats[1].accuracy, 100.0);
    assert_eq!(an.seats[1].total_cost, 0.0);
    assert!(an.seats[0].accuracy < 100.0);
    let mut m = an.seats[0].mistakes.clone();
    m.sort();
    assert_eq!(m, planted);
    // Both methods took part.
    assert!(an.steps.iter().any(|s| s.method == "exact"));
    assert!(an.steps.iter().any(|s| s.method == "rollouts"));
}

/// The replay's numbering (crates/server/src/replay.rs): per round one step at its start,
/// then one per logged action; `Some((round, seat, action))` for the actions.
fn replay_steps(input: &MatchInput) -> Vec<Option<(u32, usize, Value)>> {
    let mut out = Vec::new();
    for r in 1..=input.seeds.len() as u32 {
        out.push(None);
        for a in input.actions.iter().filter(|a| a.0 == r) {
            out.push(Some(a.clone()));
        }
    }
    out
}

fn check_shape(input: &MatchInput, settings: &Settings) {
    let an = analyse(input, settings, &mut |_, _| true)
        .unwrap_or_else(|e| panic!("{}: {e}", input.game));
    let replay = replay_steps(input);
    // Every action has its step, at the replay's index, and nothing else has one.
    assert_eq!(an.steps.len(), input.actions.len());
    for s in &an.steps {
        let (round, seat, action) = replay[s.step].clone().expect("an action's step");
        assert_eq!((s.round, s.seat, &s.taken), (round, seat, &action));
        assert!(s.cost >= 0.0 && s.alternatives.len() <= s.options);
        assert!(s.alternatives.iter().any(|a| a.action == s.best));
    }
    for r in &an.rounds {
        assert!(replay[r.first_step].is_none());
        let len = replay[r.first_step + 1..]
            .iter()
            .take_while(|x| x.is_some())
            .count();
        assert_eq!(r.chart.len(), len + 1, "{} round {}", input.game, r.round);
        assert!(r.chart.iter().all(|c| c.len() == input.players));
        // After the round's last step the chart is the round's result.
        let last: Vec<i64> = r.chart.last().unwrap().iter().map(|&v| v as i64).collect();
        assert_eq!(last, r.r#final);
    }
    let v = serde_json::to_value(&an).unwrap();
    for key in [
        "version", "game", "players", "settings", "seats", "rounds", "steps",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
    assert!(v["rounds"][0].get("final").is_some());
    assert!(v["steps"][0].get("flag").is_some());
}

#[test]
fn every_game_analyses_a_bot_match_in_replay_numbering() {
    for (kind, options, levels) in [
        ("trump", json!({"target": 3}), vec![BotLevel::Normal; 3]),
        (
            "nachos",
            Value::Null,
            vec![BotLevel::Easy, BotLevel::Normal],
        ),
        (
            "fibfib",
            Value::Null,
            vec![BotLevel::Normal, BotLevel::Easy],
        ),
        ("rummy", json!({"target": 8}), vec![BotLevel::Normal; 2]),
        ("rummy", json!({"target": 8}), vec![BotLevel::Normal]),
    ] {
        let input = bot_match(kind, &options, &levels, 5, 1).unwrap();
        check_shape(&input, &quick());
    }
}

#[test]
fn the_same_input_gives_the_same_analysis() {
    for (kind, options, n) in [
        ("trump", json!({"target": 3}), 2),
        ("fibfib", Value::Null, 2),
    ] {
        let input = bot_match(kind, &options, &vec![BotLevel::Normal; n], 9, 1).unwrap();
        let a = serde_json::to_string(&analyse(&input, &quick(), &mut |_, _| true).unwrap());
        let b = serde_json::to_string(&analyse(&input, &quick(), &mut |_, _| true).unwrap());
        assert_eq!(a.unwrap(), b.unwrap());
    }
}

#[test]
fn progress_counts_decisions_and_can_cancel() {
    let input = bot_match("fibfib", &Value::Null, &[BotLevel::Normal; 2], 2, 1).unwrap();
    let total = analysis::decisions(&input);
    let mut seen = Vec::new();
    analyse(&input, &quick(), &mut |d, t| {
        seen.push((d, t));
        true
    })
    .unwrap();
    assert_eq!(seen.len(), total);
    assert_eq!(seen.last(), Some(&(total, total)));
    let r = analyse(&input, &quick(), &mut |d, _| d < 3);
    assert_eq!(r.unwrap_err(), AnalysisError::Cancelled);
}

#[test]
fn bad_input_is_refused() {
    let mut input = bot_match("fibfib", &Value::Null, &[BotLevel::Normal; 2], 2, 1).unwrap();
    input.game = "chess".into();
    assert!(matches!(
        analyse(&input, &quick(), &mut |_, _| true),
        Err(AnalysisError::UnknownGame(_))
    ));
    input.game = "fibfib".into();
    input.actions.truncate(3);
    assert!(matches!(
        analyse(&input, &quick(), &mut |_, _| true),
        Err(AnalysisError::BadLog(_))
    ));
    input.actions.insert(0, (1, 1, json!({"type": "fly"})));
    assert!(matches!(
        analyse(&input, &quick(), &mut |_, _| true),
        Err(AnalysisError::BadLog(_))
    ));
}

/// A rummy match with a move made off turn: it is a decision like any other; the
/// bot's choice there is what a bot seat is asked off turn (`decide_off_turn`, no search),
/// `null` when it would wait.
#[test]
fn off_turn_moves_are_analysed() {
    let options = json!({"target": 8});
    // Seed 33: one of the first seeds whose hard bots make an off-turn move.
    let input = bot_match("rummy", &options, &[BotLevel::Hard, BotLevel::Hard], 33, 1).unwrap();
    let (mut g, _) = games::new_match("rummy", &options, 2).unwrap();
    let mut off_turn = Vec::new();
    let mut step = 0;
    let mut acts = input.actions.iter().peekable();
    for (i, seed) in input.seeds.iter().enumerate() {
        g.start_round(seed).unwrap();
        step += 1;
        while let Some((_, seat, a)) = acts.next_if(|a| a.0 == i as u32 + 1) {
            if !g.to_act().contains(seat) {
                off_turn.push((step, g.bot_off_turn_action(*seat, BotLevel::Hard)));
            }
            g.apply_json(*seat, a).unwrap();
            step += 1;
        }
    }
    assert!(!off_turn.is_empty());
    check_shape(&input, &quick());
    let an = analyse(&input, &quick(), &mut |_, _| true).unwrap();
    for (step, bot) in off_turn {
        let s = an.steps.iter().find(|s| s.step == step).unwrap();
        assert_eq!(s.method, "rollouts");
        assert_eq!(s.bot.as_ref().map(|b| b.action.clone()), bot, "step {step}");
    }
}
