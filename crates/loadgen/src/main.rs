//! `loadgen`: the command line of the load generator (see the library's header and
//! `crates/loadgen/README.md`). `loadgen echo` is the baseline server; `loadgen run` runs
//! the baseline and the game server side by side and prints what it measured.

/// jemalloc, as in the server: the clients allocate and free a document's worth of small
/// values per move, and the load generator's own cost is taken from the cores the server
/// is measured on.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    loadgen::cli::main()
}
