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
        assert!(
            report.problems.is_empty(),
            "{}: {:?}",
            db.label,
            report.problems
        );
        server.stop().await;
    }
}
