//! Rough apply throughput: records random 4-player matches, then replays their action logs
//! and reports applied actions per second on one core.
//! `cargo run --release -p trump --example trump_throughput`

use std::time::Instant;

use game_core::{Game, Phase, Seed};
use trump::{Action, Options, Trump};

fn main() {
    let mut logs = Vec::new();
    for m in 0..50u64 {
        let mut g = Trump::new_match(&Options::default(), 4).unwrap();
        let mut rng = Seed::from_u64(m).rng();
        let mut rounds = Vec::new();
        let mut k = 0;
        while g.phase() == Phase::AwaitingRound {
            k += 1;
            let seed = Seed::from_u64(m * 10_000 + k);
            g.start_round(&seed).unwrap();
            let mut actions: Vec<(usize, Action)> = Vec::new();
            while g.phase() == Phase::Playing {
                let seat = g.to_act()[0];
                let legal = g.legal_actions_for(seat);
                let a = legal[rng.below(legal.len())].clone();
                g.apply(seat, &a).unwrap();
                actions.push((seat, a));
            }
            rounds.push((seed, actions));
        }
        logs.push(rounds);
    }
    let start = Instant::now();
    let mut applied = 0u64;
    for _ in 0..5 {
        for rounds in &logs {
            let mut g = Trump::new_match(&Options::default(), 4).unwrap();
            for (seed, actions) in rounds {
                g.start_round(seed).unwrap();
                for (seat, a) in actions {
                    g.apply(*seat, a).unwrap();
                    applied += 1;
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{applied} actions in {secs:.3} s: {:.2} M actions/s (deals included)",
        applied as f64 / secs / 1e6
    );
}
