//! The bug-hunt benchmark: for every planted bug, under the strong and the weak crash model,
//! how many seeds and how much CPU time it takes crashtest to find it; and how many seeds the
//! correct engine passes.
//!
//! For each (bug, model) it runs seeds 0, 1, 2... until the first failure or `--cap` seeds,
//! and prints one JSON line (`crashtest::runner::hunt`): the seeds run, the failing seed, the
//! CPU seconds (user + system time of this process, summed over the seed threads), the
//! failure, and the command that reproduces it. For the correct engine it runs `--correct-seeds` seeds per
//! model and reports the failures (there should be none). Each line also gives the failing
//! fraction of the first `--rate-seeds` seeds, which tells how hard a model hits a bug once
//! both find it on the first seeds. With `--minimize`, each found
//! failure's faults are shrunk by delta debugging, and the line also holds the smallest
//! failing fault set and its reproduce command.
//!
//! With `--guided`, each setup also gets a guided search (`crashtest::runner::guided`) of the
//! same cap in runs, printed as a second line with `"search": "guided"`: its `runs` and
//! `cpu_seconds` (the search's process and its branches' processes) to the first failure,
//! beside the random search's `seeds_run`.
//!
//! ```sh
//! cargo run --release -p workflow-example --bin workflow_bug_hunt -- --minimize
//! cargo run --release -p workflow-example --bin workflow_bug_hunt -- --guided --rate-seeds 0
//! ```

use std::process::ExitCode;

use clap::Parser;
use crashtest::fs::CrashModel;
use crashtest::runner::hunt;
use serde_json::{Value, json};
use workflow::hunt::REPLAY_TEST;
use workflow::{Bug, Setup};

/// Hunt every planted bug of the workflow engine under both crash models.
#[derive(Debug, Parser)]
struct Args {
    /// Most seeds tried per bug and model.
    #[arg(long, default_value_t = 100_000)]
    cap: u64,
    /// Seeds the correct engine runs per model (0: skip it).
    #[arg(long, default_value_t = 10_000)]
    correct_seeds: u64,
    /// Seeds over which each line counts the failing ones (0: skip).
    #[arg(long, default_value_t = 1_000)]
    rate_seeds: u64,
    /// Threads running seeds at once (CPU time is summed over them).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Only these bugs (by `WORKFLOW_BUG` name; `none` is the correct engine).
    #[arg(long = "bug")]
    bugs: Vec<Bug>,
    /// Shrink each failure's faults and print a 1-minimal failing set.
    #[arg(long)]
    minimize: bool,
    /// Also run a guided search (`crashtest::runner::guided`) with the same cap of runs,
    /// one line per setup with `"search": "guided"` beside the random one.
    #[arg(long)]
    guided: bool,
    /// With `--guided`, skip the random search (to measure the guided column alone).
    #[arg(long, requires = "guided")]
    guided_only: bool,
}

fn model_name(model: CrashModel) -> &'static str {
    match model {
        CrashModel::Strong => "strong",
        CrashModel::Weak => "weak",
    }
}

/// Hunts one setup and describes the result as a JSON object, with the failing fraction
/// of the first `--rate-seeds` seeds.
fn hunt_one(setup: Setup, seeds: u64, args: &Args) -> Value {
    let labels = [
        ("bug", setup.bug.name()),
        ("model", model_name(setup.crash_model)),
    ];
    let body = || workflow::run(setup);
    let found = hunt::hunt(
        &REPLAY_TEST,
        0..seeds,
        args.threads,
        args.minimize,
        &setup.to_string(),
        &body,
    );
    let mut line = found.json(&labels);
    line["search"] = json!("random");
    if args.rate_seeds > 0 {
        let failed = hunt::failing_seeds(&REPLAY_TEST, 0..args.rate_seeds, args.threads, &body);
        line["failing_fraction"] = json!(format!("{failed}/{}", args.rate_seeds));
    }
    line
}

/// The guided search of one setup, as a JSON object.
fn guided_one(setup: Setup, runs: u64, args: &Args) -> Value {
    let labels = [
        ("bug", setup.bug.name()),
        ("model", model_name(setup.crash_model)),
        ("search", "guided"),
    ];
    workflow::hunt::guided(setup, runs, args.threads).json(&labels, &setup.to_string())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let bugs = if args.bugs.is_empty() {
        Bug::ALL.to_vec()
    } else {
        args.bugs.clone()
    };
    let mut healthy = true;
    for bug in bugs {
        for crash_model in [CrashModel::Strong, CrashModel::Weak] {
            let setup = Setup { bug, crash_model };
            let seeds = if bug == Bug::None {
                args.correct_seeds
            } else {
                args.cap
            };
            if seeds == 0 {
                // `--correct-seeds 0` (or `--cap 0`) skips the setup.
                continue;
            }
            let mut lines = Vec::new();
            if !args.guided_only {
                lines.push(hunt_one(setup, seeds, &args));
            }
            if args.guided {
                lines.push(guided_one(setup, seeds, &args));
            }
            for line in lines {
                // A failure of the correct engine, or a bug the strong model misses, is news.
                let found = line["found"] == json!(true);
                if bug == Bug::None {
                    healthy &= !found;
                } else if crash_model == CrashModel::Strong {
                    healthy &= found;
                }
                println!("{line}");
            }
        }
    }
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
