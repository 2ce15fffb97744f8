//! `cargo crashtest ...`: cargo runs `cargo-crashtest crashtest ...`; the second argument is
//! the subcommand's own name, dropped here so that the rest reads as `crashtest ...`.

fn main() -> std::process::ExitCode {
    crashtest_cli::run(crashtest_cli::cargo_subcommand_args(std::env::args_os()))
}
