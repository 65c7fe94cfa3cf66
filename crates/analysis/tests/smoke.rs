use analysis::{Settings, analyse, record::bot_match};
use games::BotLevel;
use serde_json::{Value, json};

#[test]
fn smoke() {
    for (kind, opts, n) in [
        ("trump", json!({"target": 5}), 2),
        ("nachos", Value::Null, 3),
        ("fibfib", Value::Null, 2),
        ("rummy", Value::Null, 2),
    ] {
        let t = std::time::Instant::now();
        let m = bot_match(kind, &opts, &vec![BotLevel::Normal; n], 1, 2).unwrap();
        let s = Settings {
            rollouts: 4,
            bot_samples: 2,
            ..Settings::default()
        };
        let a = analyse(&m, &s, &mut |_, _| true).unwrap();
        let exact = a.steps.iter().filter(|s| s.method == "exact").count();
        eprintln!(
            "{kind}: {} steps ({exact} exact), {:?}, seats {:?}",
            a.steps.len(),
            t.elapsed(),
            a.seats
        );
    }
}
