//! What the server does per viewer after each move, timed two ways in one process: the
//! view and legal actions built as a tree of `serde_json::Value`s and diffed as trees (how
//! the server worked until 2026-11-25), and built as JSON text and diffed by comparing text,
//! the patch's values left as text, every viewer's view diffed together
//! (`protocol::patch::diff_docs_at`, how it works now).
//! Both make the same patches, byte for byte.
//!
//! ```sh
//! cargo run --release -p games --example view_diff_bench -- [game] [players] [matches]
//! ```
//! (defaults: trump 2 20). Prints µs per move for each way, over every seat and the
//! spectators, alternating the two ways three times so that a busy machine shows as
//! spread, not as a difference.

use std::time::{Duration, Instant};

use game_core::{Phase, Seed, Viewer};
use games::{BotLevel, DynGame, new_match};
use protocol::patch::Doc;
use protocol::{PatchOp, patch};
use serde_json::Value;

/// Every position of `matches` seeded matches, played by easy bots.
fn positions(kind: &str, players: usize, matches: u64) -> Vec<Box<dyn DynGame>> {
    let mut out = Vec::new();
    for m in 0..matches {
        let (mut g, _) = new_match(kind, &Value::Null, players).expect("a game");
        let mut step = 0u64;
        while g.phase() != Phase::Finished && step < 2_000 {
            if g.phase() == Phase::AwaitingRound {
                g.start_round(&Seed::from_u64(m * 10_000 + step))
                    .expect("starts");
            } else {
                let seat = g.to_act()[0];
                let a = g
                    .bot_action(seat, BotLevel::Easy, m + step, bots::Budget::samples(1))
                    .expect("a legal move");
                g.apply_json(seat, &a).expect("legal");
            }
            out.push(g.clone_box());
            step += 1;
        }
    }
    out
}

fn viewers(players: usize) -> Vec<Viewer> {
    (0..players)
        .map(Viewer::Player)
        .chain([Viewer::Spectator])
        .collect()
}

/// Builds each viewer's document at every position with `build`, diffs it against the
/// one before with `diff` and writes the patch: the time taken and the patches' bytes.
fn timed<D, O: serde::Serialize>(
    games: &[Box<dyn DynGame>],
    players: usize,
    build: impl Fn(&dyn DynGame, Viewer) -> D,
    diff: impl Fn(&D, &D, &mut Vec<O>),
) -> (Duration, usize) {
    let start = Instant::now();
    let mut bytes = 0;
    for v in viewers(players) {
        let mut held: Option<D> = None;
        for g in games {
            let now = build(g.as_ref(), v);
            if let Some(old) = &held {
                let mut ops = Vec::new();
                diff(old, &now, &mut ops);
                bytes += serde_json::to_string(&ops).expect("serializes").len();
            }
            held = Some(now);
        }
    }
    (start.elapsed(), bytes)
}

/// Trees of values (view, legal actions).
fn as_values(games: &[Box<dyn DynGame>], players: usize) -> (Duration, usize) {
    let build = |g: &dyn DynGame, v: Viewer| match v {
        Viewer::Player(s) => {
            let (view, legal) = g.seat_json(s);
            (view, Value::Array(legal))
        }
        Viewer::Spectator => (g.view_json(v), Value::Array(vec![])),
    };
    timed(games, players, build, |old, new, ops: &mut Vec<PatchOp>| {
        patch::diff_at("/view", &old.0, &new.0, ops);
        patch::diff_at("/legal", &old.1, &new.1, ops);
    })
}

/// JSON text (view, legal actions), as the server holds them: every viewer's view diffed
/// together (`patch::diff_docs_at`, changes that viewers share diffed once), each viewer's
/// patch written as text (`patch::write_ops`).
fn as_text(games: &[Box<dyn DynGame>], players: usize) -> (Duration, usize) {
    let none = Doc::of(&[0u8; 0]);
    let build = |g: &dyn DynGame, v: Viewer| match v {
        Viewer::Player(s) => g.seat_doc(s),
        Viewer::Spectator => (g.view_doc(v), none.clone()),
    };
    let viewers = viewers(players);
    let start = Instant::now();
    let mut bytes = 0;
    let mut held: Option<Vec<(Doc, Doc)>> = None;
    for g in games {
        let now: Vec<(Doc, Doc)> = viewers.iter().map(|&v| build(g.as_ref(), v)).collect();
        if let Some(old) = &held {
            let mut ops = vec![Vec::new(); viewers.len()];
            let views: Vec<(&Doc, &Doc)> =
                old.iter().zip(&now).map(|(o, n)| (&o.0, &n.0)).collect();
            patch::diff_docs_at("/view", &views, &mut ops);
            for ((o, n), ops) in old.iter().zip(&now).zip(ops.iter_mut()) {
                patch::diff_docs_at("/legal", &[(&o.1, &n.1)], std::slice::from_mut(ops));
                let mut text = String::new();
                patch::write_ops(&mut text, ops);
                bytes += text.len();
            }
        }
        held = Some(now);
    }
    (start.elapsed(), bytes)
}

/// Building one seat's view alone, both ways.
fn build_only(games: &[Box<dyn DynGame>]) {
    let t = Instant::now();
    for g in games {
        std::hint::black_box(g.seat_json(0));
    }
    let a = t.elapsed();
    let t = Instant::now();
    let mut len = 0;
    for g in games {
        len += g.seat_doc(0).0.text().len();
    }
    let b = t.elapsed();
    println!(
        "building a view: values {:.1} µs, text {:.1} µs; {} bytes of text",
        a.as_secs_f64() * 1e6 / games.len() as f64,
        b.as_secs_f64() * 1e6 / games.len() as f64,
        len / games.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.first().map_or("trump", String::as_str);
    let players: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let matches: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20);
    let games = positions(kind, players, matches);
    let moves = games.len() as f64;
    println!(
        "{kind} for {players}: {} positions, {} viewers each",
        games.len(),
        players + 1
    );
    build_only(&games);
    for round in 1..=3 {
        let (tv, bv) = as_values(&games, players);
        let (tt, bt) = as_text(&games, players);
        // The same patches, so the same bytes.
        assert_eq!(bv, bt, "the two ways made different patches");
        println!(
            "run {round}: values {:.1} µs/move, text {:.1} µs/move ({:.2}× faster); patches {:.0} bytes/move",
            tv.as_secs_f64() * 1e6 / moves,
            tt.as_secs_f64() * 1e6 / moves,
            tv.as_secs_f64() / tt.as_secs_f64(),
            bv as f64 / moves,
        );
    }
}
