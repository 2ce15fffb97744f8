//! `crashtest`: sweep seeds across processes, replay, minimize, explore and view runs.

fn main() -> std::process::ExitCode {
    crashtest_cli::run(std::env::args_os())
}
