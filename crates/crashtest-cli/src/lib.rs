//! The `crashtest` command-line tool: from millions of seeds in CI to an understood bug.
//!
//! `#[crashtest::test]` tests are ordinary libtest tests whose runner speaks a small
//! protocol (`crashtest_protocol`): environment variables in (`CRASHTEST_SEED_START`,
//! `CRASHTEST_RESULTS`, `CRASHTEST_TRACE`, `CRASHTEST_MASK`, `CRASHTEST_EXPLORE`, ...),
//! results lines and trace lines out. This tool builds the test executable with cargo, runs
//! it as worker processes speaking that protocol, and reads what they write:
//!
//! - `sweep`: many seeds on many processes, results as JSON lines, resumable, shardable,
//!   with crash and hang attribution;
//! - `replay`: a seed's trace as per-node columns;
//! - `minimize`: a 1-minimal failing set of injected faults, by masking;
//! - `explore`: one prefix of a run, many re-drawn futures;
//! - `hunt`: a guided search, branching from the runs that did something new;
//! - `view`: an HTML space-time diagram;
//! - `merge`: the results files of shards, resumed runs and machines as one sweep;
//! - `tokio setup`: crashtest's tokio stand-in in place of tokio, for unmodified tokio
//!   programs and their dependencies.
//!
//! The library exists so that the two binaries (`crashtest`, and `cargo-crashtest` for
//! `cargo crashtest`) share one entry point, [`run`]; everything else is private.

mod cli;
mod determinism;
mod duration;
mod explore;
mod header;
mod hunt;
mod lock;
mod merge;
mod messages;
mod minimize;
mod pool;
mod progress;
mod replay;
mod results;
mod seeds;
mod single;
mod summary;
mod sweep;
mod target;
mod tokio_shim;
mod trace;
mod view;
mod worker;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Runs the tool on command-line arguments (the program name first) and returns its exit
/// code: 0 when every seed passed, 1 when some failed, 2 for bad input or a broken
/// environment (the message says which), 130 after Ctrl-C.
///
/// ```
/// let code = crashtest_cli::run(["crashtest", "sweep", "some_test", "--seeds", "9..3"]);
/// assert_eq!(code, std::process::ExitCode::from(2));
/// ```
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let outcome = match &cli.command {
        cli::Command::Sweep(args) => sweep::run(args),
        cli::Command::Replay(args) => replay::run(args),
        cli::Command::Minimize(args) => minimize::run(args),
        cli::Command::Explore(args) => explore::run(args),
        cli::Command::Hunt(args) => hunt::run(args),
        cli::Command::View(args) => view::run(args),
        cli::Command::Merge(args) => merge::run(args),
        cli::Command::List(args) => list(args),
        cli::Command::Tokio(args) => match &args.command {
            cli::TokioCommand::Setup(setup) => tokio_shim::setup(setup),
        },
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("crashtest: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// The arguments of `cargo crashtest ...`: cargo runs `cargo-crashtest crashtest ...`; the
/// second argument (the subcommand's name) is dropped, and the program is named
/// `cargo crashtest` in help and errors.
///
/// ```
/// let args = crashtest_cli::cargo_subcommand_args(["cargo-crashtest", "crashtest", "list"]);
/// assert_eq!(args, ["cargo crashtest", "list"]);
/// let direct = crashtest_cli::cargo_subcommand_args(["cargo-crashtest", "list"]);
/// assert_eq!(direct, ["cargo crashtest", "list"]);
/// ```
pub fn cargo_subcommand_args<I, T>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).is_some_and(|a| a == "crashtest") {
        args.remove(1);
    }
    match args.first_mut() {
        Some(program) => *program = OsString::from("cargo crashtest"),
        None => args.push(OsString::from("cargo crashtest")),
    }
    args
}

/// `crashtest list`: every test of the selected executables.
fn list(args: &cli::ListArgs) -> anyhow::Result<ExitCode> {
    for listed in target::list(&args.select)? {
        println!("{}  ({})", listed.test, listed.label);
    }
    Ok(ExitCode::SUCCESS)
}

/// Worker processes to run at once by default: one per core.
fn cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}
