//! `fibonacci-cards`: the game server's binary (see `server::cli`).

/// jemalloc rather than the system allocator: the server allocates and frees many small
/// JSON values per move from several threads, where glibc's malloc spent a third of the
/// CPU (and its arena locks more), and glibc kept every page of closed sockets for ever.
/// jemalloc's background thread hands freed memory back to the OS (`server::alloc`).
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    server::cli::main()
}
