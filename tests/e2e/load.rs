//! A short smoke of the load generator (`crates/loadgen`) against the real server, on every
//! database, so that it keeps working as the protocol moves. Its figures are not asserted
//! (timing belongs to `loadgen run` and docs/performance.md); what is asserted is that its
//! real clients played through the public protocol and saw nothing wrong.

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_generator_smoke_on_every_database() {
    for db in databases().await {
        let server = Server::start_with(&db, |c| {
            c.bot_delay_ms = 0;
            c.ws_messages_per_second = 100_000;
        })
        .await;
        let report = loadgen::run(loadgen::Options::smoke(&server.base))
            .await
            .unwrap_or_else(|e| panic!("{}: the load generator failed: {e}", db.label));
        let play = report.play.as_ref().expect("a flat run reports play");
        assert!(
            play.our_moves > 0,
            "{}: the clients made no move: {report:?}",
            db.label
        );
        assert!(report.problems.is_empty(), "{}:\n{report}", db.label);
        server.stop().await;
    }
}

/// `loadgen run --against B --rounds N`: every build spawned once per round, in turns,
/// each on a fresh SQLite file, and the summary made from their figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_generator_compares_builds_in_turns() {
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_e2e-server"));
    let mut opts = loadgen::Options::new(
        loadgen::Mode::Flat,
        loadgen::Target::Spawn {
            bin: bin.clone(),
            database_url: None,
            bot_budget_ms: None,
        },
    );
    (opts.tables, opts.seconds) = (2, 1.0);
    let c = loadgen::compare::compare(opts, vec![bin.clone(), bin], 2)
        .await
        .unwrap_or_else(|e| panic!("the comparison failed: {e}"));
    let ran: Vec<(usize, usize)> = c.samples.iter().map(|s| (s.round, s.build)).collect();
    assert_eq!(ran, vec![(0, 0), (0, 1), (1, 1), (1, 0)], "A B, then B A");
    for s in &c.samples {
        assert!(
            s.report.problems.is_empty(),
            "round {} build {}:\n{}",
            s.round,
            s.build,
            s.report
        );
        let moves = s
            .figures
            .actions_per_sec
            .expect("a flat run counts actions");
        assert!(moves > 0.0, "round {} build {}: no move", s.round, s.build);
        assert!(s.figures.server_cpu_us_per_action.is_some());
    }
    let text = c.to_string();
    assert!(text.contains("medians over 2 rounds"), "{text}");
    assert!(text.contains("against A per round"), "{text}");
}

/// `scripts/idle-cluster.sh`: several nodes on one Postgres, each loaded by its own load
/// generator process at once, every socket open at the same moment, the nodes stopped
/// cleanly. A small run (2 nodes × 200 sockets, held 5 s) of the script that measures 50k
/// idle sockets on this machine (docs/performance.md); only Postgres runs several nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_over_several_nodes() {
    let Some(db) = postgres_db().await else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/idle-cluster.sh");
    let child = tokio::process::Command::new("bash")
        .args([script, &db.url, "2", "200", "5"])
        .env("FIB_SERVER_BIN", env!("CARGO_BIN_EXE_e2e-server"))
        .env("FIB_LOADGEN_BIN", env!("CARGO_BIN_EXE_e2e-loadgen"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs the script");
    let pid = child.id().expect("a running script");
    let Ok(out) = tokio::time::timeout(
        std::time::Duration::from_secs(240),
        child.wait_with_output(),
    )
    .await
    else {
        // A SIGTERM lets the script stop its nodes and load generators (its EXIT trap).
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
        panic!("the script did not finish within 240 s");
    };
    let out = out.expect("the script's output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the script failed:\n{said}");
    assert!(
        stdout.contains("sockets open at once: 400 of 400 wanted"),
        "{said}"
    );
    assert_eq!(
        stdout.matches("problems:            none").count(),
        2,
        "{said}"
    );
    assert!(stdout.contains("node logs: no warning or error"), "{said}");
}
