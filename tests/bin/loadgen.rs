//! The load generator's command line, built inside the e2e package so tests can run
//! scripts that start it as a process of its own (`scripts/idle-cluster.sh`).

// The same allocator as the real binary (crates/loadgen/src/main.rs).
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    loadgen::cli::main()
}
