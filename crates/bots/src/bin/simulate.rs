//! `simulate`: plays N seeded matches of a game between bot levels, in parallel on every
//! core, and prints per level and per seat: wins with a 95% confidence interval, average
//! score, average match length, matches per second; for Solitaire the average and the
//! distribution of the final discard count.
//!
//! ```text
//! cargo run --release -p bots --bin simulate -- --game trump --levels hard,normal --games 1000 --samples 8
//! ```
//! Options: `--game trump|nachos|fibfib|rummy|solitaire`, `--levels a,b[,…]` (one per
//! seat; the lineup rotates by one seat every match), `--games N` (matches 0..N) and
//! `--first K` (start at match K), `--samples S` (the hard bot's determinizations per
//! move; no clock, so results are reproducible), `--budget-ms MS` (instead: the hard bot
//! thinks MS milliseconds per move, as on the server; results then depend on the machine
//! and its load), `--threads T` (default: all cores),
//! `--target 21|13|8` (rummy family).

use std::process::ExitCode;
use std::time::Instant;

use bots::sim::{MatchResult, by_level, by_seat, run};
use bots::{BotGame, Budget, Level};

struct Args {
    game: String,
    levels: Vec<Level>,
    games: u64,
    first: u64,
    samples: u32,
    budget_ms: Option<u64>,
    threads: usize,
    target: u8,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        game: "trump".into(),
        levels: vec![Level::Normal, Level::Easy],
        games: 1000,
        first: 0,
        samples: 8,
        budget_ms: None,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        target: 21,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--game" => a.game = v,
            "--levels" => {
                a.levels = v
                    .split(',')
                    .map(|s| Level::parse(s).ok_or(format!("unknown level {s}")))
                    .collect::<Result<_, _>>()?
            }
            "--games" => a.games = num(&v)?,
            "--first" => a.first = num(&v)?,
            "--samples" => a.samples = num(&v)? as u32,
            "--budget-ms" => a.budget_ms = Some(num(&v)?),
            "--threads" => a.threads = num(&v)? as usize,
            "--target" => a.target = num(&v)? as u8,
            _ => return Err(format!("unknown option {k}")),
        }
    }
    Ok(a)
}

fn sim<G: BotGame>(a: &Args, options: &G::Options) -> Result<(Vec<MatchResult>, f64), String> {
    let games: Vec<u64> = (a.first..a.first + a.games).collect();
    let t = Instant::now();
    let r = run::<G>(
        options,
        &a.levels,
        &games,
        match a.budget_ms {
            Some(ms) => Budget {
                time: Some(std::time::Duration::from_millis(ms)),
                samples: None,
            },
            None => Budget::samples(a.samples),
        },
        a.threads,
    )?;
    Ok((r, t.elapsed().as_secs_f64()))
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("simulate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rummy_options = rummy::Options {
        target: a.target,
        ..Default::default()
    };
    let out = match a.game.as_str() {
        "trump" => sim::<trump::Trump>(&a, &Default::default()),
        "nachos" => sim::<nachos::NachosMatch>(&a, &Default::default()),
        "fibfib" => sim::<fibfib::FibFib>(&a, &Default::default()),
        "rummy" | "solitaire" => sim::<rummy::Rummy>(&a, &rummy_options),
        g => Err(format!("unknown game {g}")),
    };
    let (results, secs) = match out {
        Ok(x) => x,
        Err(e) => {
            eprintln!("simulate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let n = results.len() as f64;
    let lineup: Vec<&str> = a.levels.iter().map(|l| l.name()).collect();
    let budget = match a.budget_ms {
        Some(ms) => format!("hard budget {ms} ms/move"),
        None => format!("hard samples/move {}", a.samples),
    };
    println!(
        "game {} | lineup {} | matches {}..{} | {budget} | threads {}",
        a.game,
        lineup.join(","),
        a.first,
        a.first + a.games,
        a.threads
    );
    let (decisions, samples) = bots::hard_stats();
    if decisions > 0 {
        println!(
            "hard: {decisions} decisions with a choice, {:.1} samples per decision",
            samples as f64 / decisions as f64
        );
    }
    println!(
        "avg match length: {:.1} actions ({:.2} off turn), {:.2} rounds | {:.1} matches/s",
        results.iter().map(|r| r.actions as f64).sum::<f64>() / n,
        results.iter().map(|r| r.off_turn as f64).sum::<f64>() / n,
        results.iter().map(|r| f64::from(r.rounds)).sum::<f64>() / n,
        n / secs
    );
    println!();
    println!("| level | seats | win rate | 95% CI | avg score |");
    println!("|---|---|---|---|---|");
    for (l, t) in by_level(&results) {
        println!(
            "| {} | {} | {:.1}% | ±{:.1}% | {:.2} |",
            l.name(),
            t.seats,
            100.0 * t.win_rate(),
            100.0 * t.ci95(),
            t.avg_score()
        );
    }
    println!();
    println!("| seat | level | matches | win rate | 95% CI | avg score |");
    println!("|---|---|---|---|---|---|");
    for ((s, l), t) in by_seat(&results) {
        println!(
            "| {s} | {} | {} | {:.1}% | ±{:.1}% | {:.2} |",
            l.name(),
            t.seats,
            100.0 * t.win_rate(),
            100.0 * t.ci95(),
            t.avg_score()
        );
    }
    if a.levels.len() == 1 {
        // Solitaire (R-25): the score is the discard count; a lost game scores the deck.
        let mut counts: Vec<i64> = results.iter().map(|r| r.scores[0]).collect();
        counts.sort_unstable();
        let won: Vec<i64> = results
            .iter()
            .filter(|r| !r.winners.is_empty())
            .map(|r| r.scores[0])
            .collect();
        println!();
        println!(
            "solitaire: finished {}/{} | avg discard count (finished) {:.2} | median (all) {}",
            won.len(),
            results.len(),
            won.iter().sum::<i64>() as f64 / won.len().max(1) as f64,
            counts[counts.len() / 2]
        );
        println!("| discards | games |");
        println!("|---|---|");
        let mut i = 0;
        while i < counts.len() {
            let v = counts[i];
            let k = counts[i..].iter().take_while(|&&x| x == v).count();
            println!("| {v} | {k} |");
            i += k;
        }
    }
    ExitCode::SUCCESS
}
