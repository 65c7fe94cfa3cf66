//! The browser test: headless Chromium (Debian's, driven by Playwright from
//! `tests/browser/play.mjs`) plays through the real client against a server started here.
//! Skipped loudly when Chromium or the npm packages are missing, unless `FIB_REQUIRE_ALL=1`.

use std::path::Path;

use crate::support::{Server, scratch_dir, skip, sqlite_db};

fn chromium() -> Option<String> {
    let p = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    Path::new(&p).exists().then_some(p)
}

/// Two players create and join a Trump table through the UI and play until a round ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_play_a_round_in_chromium() {
    run_script("play.mjs").await;
}

/// A live table's clock counts down in both pages, and a player's presence changes (away,
/// then disconnected) show at the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_clock_and_presence_in_chromium() {
    run_script("online.mjs").await;
}

/// Chat in the lobby and at a table through the real client (`tests/browser/chat.mjs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_in_chromium() {
    run_script("chat.mjs").await;
}

/// A finished match's shared replay link, stepped through (tests/browser/replay.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_in_chromium() {
    run_script("replay.mjs").await;
}

/// A finished match analysed from its replay page (tests/browser/analysis.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_in_chromium() {
    run_script("analysis.mjs").await;
}

/// A cold first load stays within its budget (tests/browser/budget.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_load_budget_in_chromium() {
    run_script("budget.mjs").await;
}

/// A rematch from the end of a match (tests/browser/rematch.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rematch_in_chromium() {
    run_script("rematch.mjs").await;
}

/// A profile with its rating chart, linking to a replay (tests/browser/profile.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_in_chromium() {
    run_script("profile.mjs").await;
}

/// "Play now" with bots filling the seats after the wait (a server with a one-second bot
/// fill), and "play bots now" on a phone (tests/browser/quickplay.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_play_in_chromium() {
    run_script_with("quickplay.mjs", |c| c.bot_fill_s = 1).await;
}

/// Claiming an account, signing in on a second browser, and signing that one out from the
/// first (tests/browser/account.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_in_chromium() {
    run_script("account.mjs").await;
}

/// A bot account made and its API token created, used and revoked on the account page; a
/// house bot challenged from the lobby on a phone; a person challenged from their profile,
/// declined, then accepted, both landing at the table (tests/browser/challenge.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_and_challenges_in_chromium() {
    run_script("challenge.mjs").await;
}

/// A Trump round by keyboard only, a refusal in words, the winning card marked, the live
/// region, sound with a remembered mute, motion and reduced motion
/// (tests/browser/trump_table.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trump_table_by_keyboard_in_chromium() {
    run_script("trump_table.mjs").await;
}

/// A tournament joined from its page: the first game opens by itself, is played, and
/// the standings move (tests/browser/tournament.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tournament_in_chromium() {
    run_script("tournament.mjs").await;
}

/// Focus and screen-reader announcements over time: Solitaire and quick play from the
/// keyboard, the chat's newest line, the title after a table (tests/browser/keyboard.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyboard_and_screen_reader_in_chromium() {
    run_script("keyboard.mjs").await;
}

/// axe-core on every page at desktop and phone size (tests/browser/a11y.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accessibility_in_chromium() {
    run_script("a11y.mjs").await;
}

/// The lobby draws the first tables the server shows and says how many more there are; a
/// game picked asks for that game's (tests/browser/lobby_window.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lobby_window_in_chromium() {
    run_script_with("lobby_window.mjs", |c| c.lobby_shown = 2).await;
}

/// A link that dies without closing: the page finds it, reconnects, and says what became
/// of the move made into it (tests/browser/dead_link.mjs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_link_in_chromium() {
    run_script_with("dead_link.mjs", |c| c.abandon_after_s = 20).await;
}

/// Typed text as others' pages draw it: wide names, an official tournament's mark, broken
/// links, right-to-left names (tests/browser/names.mjs). The server schedules one event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_names_in_chromium() {
    let file = scratch_dir("names-schedule").join("schedule.json");
    std::fs::write(
        &file,
        serde_json::json!([{"key": "hourly", "every_minutes": 60, "announce_minutes": 120,
            "tournament": {"name": "Official Hourly", "game": "trump",
                "kind": {"type": "swiss", "rounds": 2}, "table_size": 2}}])
        .to_string(),
    )
    .unwrap();
    run_script_with("names.mjs", |c| c.tournaments_file = Some(file.clone())).await;
}

/// Starts a server on a fresh SQLite database and runs `tests/browser/<script> <base-url>`
/// with Node; the script must exit 0.
pub async fn run_script(script: &str) {
    run_script_with(script, |_| {}).await;
}

/// [`run_script`] with a server configured by `tweak`.
pub async fn run_script_with(script: &str, tweak: impl FnOnce(&mut server::Config)) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser");
    let Some(chrome) = chromium() else {
        skip(
            "browser test",
            "install Debian's chromium (apt-get install chromium)",
        );
        return;
    };
    if !dir.join("node_modules/playwright-core").exists() {
        skip("browser test", "run `npm ci` in tests/browser");
        return;
    }
    let db = sqlite_db();
    let server = Server::start_with(&db, tweak).await;
    let out = tokio::process::Command::new("node")
        .arg(dir.join(script))
        .arg(&server.base)
        .env("CHROMIUM", chrome)
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "the browser test failed:\n{stdout}\n{stderr}"
    );
    server.stop().await;
}
