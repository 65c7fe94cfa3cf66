//! The server's command line, built inside the e2e package so tests can start it as a
//! child process and kill it with SIGKILL.

fn main() -> std::process::ExitCode {
    server::cli::main()
}
