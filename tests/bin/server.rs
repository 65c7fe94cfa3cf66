//! The server's command line, built inside the e2e package so tests can start it as a
//! child process and kill it with SIGKILL.

// The same allocator as the real binary (crates/server/src/main.rs).
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    server::cli::main()
}
