//! `fibonacci-cards`: the game server's binary (see `server::cli`).

/// mimalloc rather than the system allocator: the server allocates and frees many small
/// JSON values per move from several threads, where glibc's malloc spent a third of the
/// CPU (and its arena locks more); mimalloc also hands freed memory back to the OS.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    server::cli::main()
}
