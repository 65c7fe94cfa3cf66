//! Rough single-core throughput of `apply`: plays seeded random matches (moves picked with
//! `DeckRng` from `playable_cards`) and prints applied actions per second.
//! `cargo run --release -p nachos --example nachos_throughput`

use std::time::Instant;

use game_core::{Game, Phase, Seed};
use nachos::{Action, Card, NachosMatch, NachosOptions};

fn main() {
    let games = 200_000u64;
    let mut actions = 0u64;
    let mut rng = Seed::from_u64(42).rng();
    let mut moves: Vec<Card> = Vec::with_capacity(15);
    let mut apply_time = std::time::Duration::ZERO;
    let start = Instant::now();
    for g in 0..games {
        let players = 2 + (g % 4) as usize;
        let mut m = NachosMatch::new_match(&NachosOptions::default(), players).unwrap();
        loop {
            match m.phase() {
                Phase::AwaitingRound => {
                    m.start_round(&Seed::from_u64(g * 4 + u64::from(m.round())))
                        .unwrap();
                }
                Phase::Playing => {
                    let seat = m.to_act()[0];
                    moves.clear();
                    moves.extend(m.playable_cards(seat));
                    let card = moves[rng.below(moves.len())];
                    let t = Instant::now();
                    m.apply(seat, &Action::Play { card }).unwrap();
                    apply_time += t.elapsed();
                    actions += 1;
                }
                Phase::Finished => break,
            }
        }
    }
    let total = start.elapsed().as_secs_f64();
    println!(
        "{actions} actions in {total:.2}s overall ({:.0}/s incl. deals and move choice); \
         apply alone ~{:.0}/s",
        actions as f64 / total,
        actions as f64 / apply_time.as_secs_f64()
    );
}
