//! Throughput of each rules engine: whole random playouts per second (a round dealt and
//! played to its end by easy bots) and applied actions per second (the same playout's
//! actions replayed from a log, so only `apply` is timed).
//!
//! `cargo bench -p bots --bench engines`

use std::hint::black_box;

use bots::{BotGame, Budget, Level, decide};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use game_core::{Phase, Seat, Seed, Viewer};

/// One round from `seed`, played by easy bots: the actions in order.
fn playout<G: BotGame>(
    options: &G::Options,
    players: usize,
    seed: u64,
) -> (G, Vec<(Seat, G::Action)>) {
    let mut g = G::new_match(options, players).expect("valid table");
    g.start_round(&Seed::from_u64(seed)).expect("deal");
    let start = g.clone();
    let mut log = Vec::new();
    let mut i = 0;
    while g.phase() == Phase::Playing {
        let seat = g.to_act()[0];
        let view = g.view_for(Viewer::Player(seat));
        let a = decide::<G>(&view, Level::Easy, seed ^ i, Budget::samples(1)).expect("a move");
        g.apply(seat, &a).expect("legal");
        log.push((seat, a));
        i += 1;
    }
    (start, log)
}

fn bench_game<G: BotGame>(c: &mut Criterion, name: &str, options: G::Options, players: usize) {
    let mut group = c.benchmark_group(name);
    let mut seed = 0u64;
    group.throughput(Throughput::Elements(1));
    group.bench_function("random_playout", |b| {
        b.iter(|| {
            seed += 1;
            black_box(playout::<G>(&options, players, seed).1.len())
        })
    });
    let (start, log) = playout::<G>(&options, players, 12345);
    group.throughput(Throughput::Elements(log.len() as u64));
    group.bench_function("apply", |b| {
        b.iter(|| {
            let mut g = start.clone();
            for (seat, a) in &log {
                black_box(g.apply(*seat, a).is_ok());
            }
            g
        })
    });
    group.finish();
}

fn engines(c: &mut Criterion) {
    bench_game::<trump::Trump>(c, "trump_4p", Default::default(), 4);
    bench_game::<nachos::NachosMatch>(c, "nachos_4p", Default::default(), 4);
    bench_game::<fibfib::FibFib>(c, "fibfib_2p", Default::default(), 2);
    bench_game::<rummy::Rummy>(c, "rummy21_2p", Default::default(), 2);
    bench_game::<rummy::Rummy>(c, "solitaire", Default::default(), 1);
}

criterion_group!(benches, engines);
criterion_main!(benches);
