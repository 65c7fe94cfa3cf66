//! What an analysis costs: seeded bot-vs-bot matches of every game analysed with the
//! default settings, one core. `cargo run --release -p analysis --example cost [matches]`;
//! `-- dump KIND` prints one analysis as JSON.

use std::time::Instant;

use analysis::record::bot_match;
use analysis::{Settings, analyse};
use games::BotLevel;
use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = Settings::default();
    if args.first().map(String::as_str) == Some("dump") {
        let kind = args.get(1).map_or("trump", String::as_str);
        let n = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(2);
        let input = bot_match(kind, &Value::Null, &vec![BotLevel::Normal; n], 1, 8).unwrap();
        let a = analyse(&input, &settings, &mut |_, _| true).unwrap();
        println!("{}", serde_json::to_string_pretty(&a).unwrap());
        return;
    }
    let matches: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(3);
    println!("settings: {settings:?}");
    let hard = BotLevel::Hard;
    let normal = BotLevel::Normal;
    for (kind, options, levels) in [
        ("trump", Value::Null, vec![hard, normal]),
        ("trump", Value::Null, vec![hard, normal, normal]),
        ("trump", Value::Null, vec![hard, normal, normal, normal]),
        ("nachos", Value::Null, vec![hard, normal]),
        ("nachos", Value::Null, vec![hard, normal, normal]),
        (
            "nachos",
            Value::Null,
            vec![hard, normal, normal, normal, normal],
        ),
        ("fibfib", Value::Null, vec![hard, normal]),
        ("rummy", Value::Null, vec![hard, normal]),
        ("rummy", json!({"target": 13}), vec![hard, normal, normal]),
        ("rummy", Value::Null, vec![hard]),
    ] {
        let (mut secs, mut steps, mut exact, mut worst) = (0.0, 0, 0, 0.0f64);
        let (mut acc_hard, mut acc_normal, mut n_normal) = (0.0, 0.0, 0usize);
        for m in 0..matches {
            let input = bot_match(kind, &options, &levels, 100 + m, 8).unwrap();
            let t = Instant::now();
            let a = analyse(&input, &settings, &mut |_, _| true).unwrap();
            let s = t.elapsed().as_secs_f64();
            secs += s;
            worst = worst.max(s);
            steps += a.steps.len();
            exact += a.steps.iter().filter(|s| s.method == "exact").count();
            acc_hard += a.seats[0].accuracy;
            for s in &a.seats[1..] {
                acc_normal += s.accuracy;
                n_normal += 1;
            }
        }
        println!(
            "{kind:6} {} players {options}: {:.2} s per match (worst {worst:.2} s), {:.0} decisions per match, {:.1} ms per decision, {:.0}% exact; accuracy: hard seat {:.1}, normal seats {:.1}",
            levels.len(),
            secs / matches as f64,
            steps as f64 / matches as f64,
            1000.0 * secs / steps.max(1) as f64,
            100.0 * exact as f64 / steps.max(1) as f64,
            acc_hard / matches as f64,
            acc_normal / n_normal.max(1) as f64,
        );
    }
}
