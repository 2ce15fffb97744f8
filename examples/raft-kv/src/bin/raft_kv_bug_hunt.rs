//! The bug-hunt benchmark: for every planted bug, under the strong and the weak crash model,
//! how many seeds and how much CPU time it takes crashtest to find it; and how many seeds the
//! correct store passes.
//!
//! For each (bug, model) it runs seeds 0, 1, 2... until the first failure or `--cap` seeds,
//! and prints one JSON line (`crashtest::runner::hunt`): the seeds run, the failing seed, the
//! CPU seconds (user + system time of this process, summed over the seed threads), the
//! failure, and the command that reproduces it. For the correct store it runs `--correct-seeds` seeds per
//! model and reports the failures (there must be none). With `--minimize`, each found
//! failure's faults are shrunk by delta debugging, and the line also holds the smallest
//! failing fault set and its reproduce command.
//!
//! With `--guided`, each setup also gets a guided search (`crashtest::runner::guided`) of the
//! same cap in runs, printed as a second line with `"search": "guided"`: its `runs` and
//! `cpu_seconds` (the search's process and its branches' processes) to the first failure,
//! beside the random search's `seeds_run`.
//!
//! ```sh
//! cargo run --release -p raft-kv-example --bin raft_kv_bug_hunt -- --minimize
//! cargo run --release -p raft-kv-example --bin raft_kv_bug_hunt -- --guided \
//!     --bug commit_by_counting_old_term --cap 30000
//! ```

use std::process::ExitCode;

use clap::Parser;
use crashtest::fs::CrashModel;
use crashtest::runner::hunt;
use raft_kv::hunt::REPLAY_TEST;
use raft_kv::scenario::model_name;
use raft_kv::{Bug, Setup, Workload};
use serde_json::{Value, json};

/// Hunt every planted bug of the Raft store under both crash models.
#[derive(Debug, Parser)]
struct Args {
    /// Most seeds tried per bug and model.
    #[arg(long, default_value_t = 100_000)]
    cap: u64,
    /// Seeds the correct store runs per model (0: skip it).
    #[arg(long, default_value_t = 10_000)]
    correct_seeds: u64,
    /// Threads running seeds at once (CPU time is summed over them).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Only these bugs (by `RAFT_BUG` name; `none` is the correct store).
    #[arg(long = "bug")]
    bugs: Vec<Bug>,
    /// The workload: `linearizable` or `cycle`.
    #[arg(long, default_value = "linearizable")]
    workload: Workload,
    /// Let the nemesis draw the fault patterns too (`RAFT_PATTERNS=on`).
    #[arg(long)]
    patterns: bool,
    /// Kill servers as machines that lose their power, network included
    /// (`RAFT_KILLS=silent`).
    #[arg(long)]
    silent_kills: bool,
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

/// `RAFT_KILLS`'s value for `setup`.
fn kills_name(setup: Setup) -> &'static str {
    if setup.silent_kills {
        "silent"
    } else {
        "reset"
    }
}

/// Hunts one setup and describes the result as a JSON object.
fn hunt_one(setup: Setup, seeds: u64, args: &Args) -> Value {
    let labels = [
        ("bug", setup.bug.name()),
        ("model", model_name(setup.crash_model)),
        ("workload", setup.workload.name()),
        ("patterns", if setup.patterns { "on" } else { "off" }),
        ("kills", kills_name(setup)),
    ];
    let (env, body) = (setup.to_string(), || raft_kv::run(setup));
    let mut line = hunt::hunt(
        &REPLAY_TEST,
        0..seeds,
        args.threads,
        args.minimize,
        &env,
        &body,
    )
    .json(&labels);
    line["search"] = json!("random");
    line
}

/// The guided search of one setup, as a JSON object.
fn guided_one(setup: Setup, runs: u64, args: &Args) -> Value {
    let labels = [
        ("bug", setup.bug.name()),
        ("model", model_name(setup.crash_model)),
        ("workload", setup.workload.name()),
        ("patterns", if setup.patterns { "on" } else { "off" }),
        ("kills", kills_name(setup)),
        ("search", "guided"),
    ];
    raft_kv::hunt::guided(setup, runs, args.threads).json(&labels, &setup.to_string())
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
            let setup = Setup {
                bug,
                crash_model,
                workload: args.workload,
                patterns: args.patterns,
                silent_kills: args.silent_kills,
            };
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
                // A failure of the correct store, or a bug the strong model misses, is news.
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
