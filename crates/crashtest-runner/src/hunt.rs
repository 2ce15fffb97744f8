//! Bug hunts: run seeds until the first failure, measure what finding it cost, and shrink it.
//!
//! A planted-bug benchmark asks the same questions of every bug: how many seeds and how much
//! CPU time until the first failure, what the failure says, the line that replays it, and the
//! 1-minimal set of faults with which it still fails. [`hunt`] answers them through
//! [`run_seeds`] and [`crate::minimize`], and [`Hunt::json`] writes them as one JSON object,
//! so that each benchmark adds only what names its setup.

use std::future::Future;
use std::ops::Range;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{FailureReport, Settings, TestSpec, minimize, run_seeds};

/// The lowest failing seed of `seeds`, run on `threads` threads; `None` if every seed passed.
///
/// ```
/// use crashtest::runner::{hunt, TestSpec};
/// let spec = TestSpec {
///     name: "t", module_path: "m", package: "p", crate_name: "m",
///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// };
/// let body = || async { assert!(crashtest::rand::rng().next_u64() % 4 != 0, "one in four") };
/// let failure = hunt::first_failure(&spec, 0..100, 2, &body).unwrap();
/// assert_eq!(failure.failed[0].seed, failure.seed, "the lowest failing seed");
/// ```
pub fn first_failure<F, Fut>(
    spec: &TestSpec,
    seeds: Range<u64>,
    threads: usize,
    body: &F,
) -> Option<Box<FailureReport>>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    run_seeds(spec, &Settings::range(seeds, threads), body).err()
}

/// How many seeds of `seeds` fail, every one run whatever the others did.
///
/// ```
/// use crashtest::runner::{hunt, TestSpec};
/// let spec = TestSpec {
///     name: "t", module_path: "m", package: "p", crate_name: "m",
///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// };
/// let body = || async { assert!(crashtest_core::rng::seed().unwrap() % 10 != 3) };
/// assert_eq!(hunt::failing_seeds(&spec, 0..100, 2, &body), 10);
/// ```
pub fn failing_seeds<F, Fut>(spec: &TestSpec, seeds: Range<u64>, threads: usize, body: &F) -> u64
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let settings = Settings {
        stop_on_failure: false,
        ..Settings::range(seeds, threads)
    };
    run_seeds(spec, &settings, body).map_or_else(|report| report.failed.len() as u64, |_| 0)
}

/// What a hunt found, and what it cost.
#[derive(Debug)]
pub struct Hunt {
    /// Seeds run: up to and including the first failing one, or every seed of the range.
    pub seeds_run: u64,
    /// CPU time (user and system) the process spent, summed over its threads; `None` where
    /// the platform does not say.
    pub cpu: Option<Duration>,
    /// The first failure, if a seed failed.
    pub failure: Option<Box<FailureReport>>,
    /// Its 1-minimal failing fault set, if asked for.
    pub minimized: Option<minimize::Minimized>,
    /// The variables that select the setup, put in front of every reproduce line.
    env: String,
}

/// Runs the seeds of `seeds` on `threads` threads until one fails, measuring the CPU time it
/// takes, and (with `minimize`) shrinks the failure's faults. `env` holds the variables that
/// select the setup the body runs (such as `RAFT_BUG=...`), for the reproduce lines.
///
/// ```
/// use crashtest::runner::{hunt, TestSpec};
/// let spec = TestSpec {
///     name: "t", module_path: "m", package: "p", crate_name: "m",
///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// };
/// let body = || async { assert!(crashtest::rand::rng().next_u64() % 4 != 0, "one in four") };
/// let found = hunt::hunt(&spec, 0..100, 1, false, "MY_BUG=1", &body);
/// let line = found.json(&[("bug", "one in four")]);
/// assert_eq!((&line["bug"], &line["found"]), (&"one in four".into(), &true.into()));
/// assert!(line["reproduce"].as_str().unwrap().starts_with("MY_BUG=1 CRASHTEST_SEED="));
/// ```
pub fn hunt<F, Fut>(
    spec: &TestSpec,
    seeds: Range<u64>,
    threads: usize,
    minimize: bool,
    env: &str,
    body: &F,
) -> Hunt
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let range = seeds.clone();
    let started = crate::usage::cpu_time_with_children();
    let failure = first_failure(spec, seeds, threads, body);
    let cpu = crate::usage::cpu_time_with_children()
        .zip(started)
        .map(|(end, start)| end - start);
    let minimized = failure.as_ref().filter(|_| minimize).and_then(|failure| {
        let settings = Settings::range(failure.seed..failure.seed + 1, 1);
        minimize::minimize(spec, &settings, body, failure)
    });
    Hunt {
        seeds_run: failure
            .as_ref()
            .map_or(range.end - range.start, |f| f.seed - range.start + 1),
        cpu,
        failure,
        minimized,
        env: env.to_owned(),
    }
}

impl Hunt {
    /// The hunt as one JSON object: the `labels` that name the setup, `found`, `seeds_run`,
    /// `cpu_seconds`, and for a failure `failing_seed`, `failure`, `reproduce` and (if
    /// minimized) `minimized` with its `faults`, `mask`, `failure` and `reproduce`.
    pub fn json(&self, labels: &[(&str, &str)]) -> Value {
        let mut line = json!({
            "found": self.failure.is_some(),
            "seeds_run": self.seeds_run,
            "cpu_seconds": self.cpu.map(|cpu| (cpu.as_secs_f64() * 1000.0).round() / 1000.0),
        });
        for (key, value) in labels {
            line[*key] = json!(value);
        }
        if let Some(failure) = &self.failure {
            line["failing_seed"] = json!(failure.seed);
            line["failure"] = json!(failure.detail());
            line["reproduce"] = json!(format!("{} {}", self.env, failure.command));
        }
        if let Some(minimized) = &self.minimized {
            let report = &minimized.report;
            let faults: Vec<String> = report.faults().iter().map(ToString::to_string).collect();
            line["minimized"] = json!({
                "faults": faults,
                "mask": minimized.mask,
                "failure": report.detail(),
                "reproduce": format!("{} {}", self.env, minimized.command),
            });
        }
        line
    }
}
