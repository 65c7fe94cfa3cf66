//! `fibonacci-cards`: the game server's binary (see `server::cli`).

fn main() -> std::process::ExitCode {
    server::cli::main()
}
