//! The bug-hunt benchmark: for every planted bug, under the strong and the weak crash model,
//! how many seeds and how much CPU time it takes crashtest to find it; and how many seeds the
//! correct engine passes.
//!
//! For each (bug, model) it runs seeds 0, 1, 2... until the first failure or `--cap` seeds,
//! and prints one JSON line: the seeds run, the failing seed, the CPU seconds (user + system
//! time of this process from `getrusage`, summed over the seed threads), the failure, and the
//! command that reproduces it. For the correct engine it runs `--correct-seeds` seeds per
//! model and reports the failures (there should be none). Each line also gives the failing
//! fraction of the first `--rate-seeds` seeds, which tells how hard a model hits a bug once
//! both find it on the first seeds. With `--minimize`, each found
//! failure's faults are shrunk by delta debugging, and the line also holds the smallest
//! failing fault set and its reproduce command.
//!
//! ```sh
//! cargo run --release -p workflow-example --bin workflow_bug_hunt -- --minimize
//! ```

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use crashtest::fs::CrashModel;
use crashtest::runner::{Settings, run_seeds};
use serde_json::{Value, json};
use workflow::{Bug, Setup, hunt};

/// Hunt every planted bug of the workflow engine under both crash models.
#[derive(Debug, Parser)]
struct Args {
    /// Most seeds tried per bug and model.
    #[arg(long, default_value_t = 100_000)]
    cap: u64,
    /// Seeds the correct engine runs per model.
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
    /// Shrink each failure's faults and print the smallest failing set.
    #[arg(long)]
    minimize: bool,
}

/// CPU time (user and system) this process has used so far.
fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; getrusage fills it and has no other
    // effect, and RUSAGE_SELF is always a valid target.
    let status = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(status, 0, "getrusage(RUSAGE_SELF) cannot fail");
    // SAFETY: getrusage returned 0, so it initialized `usage`.
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn model_name(model: CrashModel) -> &'static str {
    match model {
        CrashModel::Strong => "strong",
        CrashModel::Weak => "weak",
    }
}

/// How many of `seeds` fail, read from the runner's results file (one JSON line per seed).
fn failing_seeds(setup: Setup, seeds: u64, threads: usize) -> u64 {
    let path = std::env::temp_dir().join(format!(
        "workflow-bug-hunt-{}-{}-{}.jsonl",
        std::process::id(),
        setup.bug,
        model_name(setup.crash_model)
    ));
    let settings = Settings {
        count: seeds,
        threads,
        check_determinism: false,
        stop_on_failure: false,
        results: Some(path.clone()),
        ..Settings::default()
    };
    let _ = run_seeds(&hunt::REPLAY_TEST, &settings, &|| workflow::run(setup));
    let lines = std::fs::read_to_string(&path).expect("the runner wrote the results file");
    std::fs::remove_file(&path).expect("the results file can be removed");
    let failed = lines
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a results line is JSON"))
        .filter(|line| line["status"] != "pass")
        .count();
    failed as u64
}

/// Hunts one setup and describes the result as a JSON object.
fn hunt_one(setup: Setup, seeds: u64, args: &Args) -> Value {
    let start = cpu_time();
    let failure = hunt::first_failure(setup, 0..seeds, args.threads);
    let cpu_seconds = (cpu_time() - start).as_secs_f64();
    let mut line = json!({
        "bug": setup.bug.name(),
        "model": model_name(setup.crash_model),
        "cpu_seconds": (cpu_seconds * 1000.0).round() / 1000.0,
    });
    if args.rate_seeds > 0 {
        let failed = failing_seeds(setup, args.rate_seeds, args.threads);
        line["failing_fraction"] = json!(format!("{failed}/{}", args.rate_seeds));
    }
    let Some(failure) = failure else {
        line["found"] = json!(false);
        line["seeds_run"] = json!(seeds);
        return line;
    };
    line["found"] = json!(true);
    line["seeds_run"] = json!(failure.seed + 1);
    line["failing_seed"] = json!(failure.seed);
    line["failure"] = json!(failure.detail());
    line["reproduce"] = json!(format!("{setup} {}", failure.command));
    if args.minimize
        && let Some(minimized) = hunt::minimize(setup, &failure)
    {
        let report = &minimized.report;
        let faults: Vec<String> = report.faults().iter().map(ToString::to_string).collect();
        line["minimized"] = json!({
            "faults": faults,
            "mask": minimized.mask,
            "failure": report.detail(),
            "reproduce": format!("{setup} {}", minimized.command),
        });
    }
    line
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
            let line = hunt_one(setup, seeds, &args);
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
    if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
