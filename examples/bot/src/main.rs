//! `cargo run -p example-bot -- --server http://127.0.0.1:8080 --token TOKEN
//! [--challenge house:normal --game trump --matches 3]` (README.md).

use clap::Parser;

#[tokio::main]
async fn main() {
    let args = example_bot::Args::parse();
    match example_bot::run(args.into_config()).await {
        Ok(report) => {
            for t in &report.finished {
                println!("finished {t}");
            }
            println!(
                "{} matches finished, {} moves sent",
                report.finished.len(),
                report.moves
            );
        }
        Err(e) => {
            eprintln!("example-bot: {e}");
            std::process::exit(1);
        }
    }
}
