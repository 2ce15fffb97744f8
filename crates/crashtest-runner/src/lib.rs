//! The test runner behind `#[crashtest::test]`: many seeds, several threads, one clear report.
//!
//! Every seed runs on a fresh OS thread with the determinism guards linked in (see
//! `crashtest_guard`): std's `HashMap` keys and `rand`'s thread generator are drawn once per
//! thread, so only a fresh thread lets the simulation's seed decide them.
//!
//! Seeds are handed out to worker threads from a shared counter; each seed is a whole
//! simulation on its thread, so workers share nothing but the counter and the list of
//! failures. The first seed is run twice and compared event by event (a determinism check
//! that costs one extra run per test). After a failure no new seed starts, and the report
//! shows the lowest failing seed: the one a rerun with the same settings finds first.

pub mod branch;
mod exhaustive;
pub mod guided;
pub mod hunt;
pub mod minimize;
pub mod regressions;
mod reproduce;
pub mod results;
mod settings;
mod sim;
mod tokio_seam;
mod trace_file;
pub mod usage;

/// The protocol this runner speaks with the `crashtest` tool: results lines, trace lines, the
/// environment variables, typed trace notes.
pub use crashtest_protocol as protocol;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crashtest_core::coverage::CoverageReport;
use crashtest_core::{Divergence, FailureKind, InjectedFault, RunFailure, RunSummary};
use crashtest_protocol::describe::TestInfo;
use crashtest_protocol::results::Signature;
use results::Sink;

pub use exhaustive::run_exhaustive;
pub use reproduce::TestSpec;
pub use settings::{BadSetting, DEFAULT_SEEDS, Settings};
pub use sim::{Sim, check_determinism};
pub use tokio_seam::register_tokio_seam;

/// What a passing test run did.
///
/// ```
/// use crashtest::runner::{run_seeds, Settings, TestSpec};
/// let spec = TestSpec {
///     name: "works",
///     module_path: "demo",
///     package: "demo",
///     crate_name: "demo",
///     seeds: None,
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// let settings = Settings { start: 10, count: 3, ..Settings::default() };
/// let outcome = run_seeds(&spec, &settings, &|| async {}).unwrap();
/// assert_eq!((outcome.start, outcome.seeds), (10, 3));
/// ```
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The first seed run.
    pub start: u64,
    /// How many seeds ran.
    pub seeds: u64,
    /// The fingerprint of the first seed (the same on every run of this code).
    pub first_fingerprint: u64,
    /// Whether the first seed was run twice and matched.
    pub determinism_checked: bool,
    /// Coverage summed over the seeds.
    pub coverage: CoverageReport,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} passed ({}..={}); seed {} fingerprint {:016x}{}",
            count_of(self.seeds, "seed"),
            self.start,
            self.start + (self.seeds - 1),
            self.start,
            self.first_fingerprint,
            if self.determinism_checked {
                ", deterministic"
            } else {
                ""
            }
        )
    }
}

/// What went wrong, with what it takes to reproduce it.
///
/// ```
/// use crashtest::runner::{run_seeds, Settings, TestSpec};
/// let spec = TestSpec {
///     name: "works",
///     module_path: "demo",
///     package: "demo",
///     crate_name: "demo",
///     seeds: None,
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// let settings = Settings { start: 0, count: 1, check_determinism: false, ..Settings::default() };
/// let report = run_seeds(&spec, &settings, &|| async { panic!("bad") }).unwrap_err();
/// assert_eq!(report.seed, 0);
/// assert_eq!(report.test, "works");
/// ```
#[derive(Debug)]
pub struct FailureReport {
    /// The failing seed.
    pub seed: u64,
    /// The commit the failure was found on.
    pub commit: String,
    /// The command that runs exactly this seed.
    pub command: String,
    /// The test, as libtest names it.
    pub test: String,
    /// The failure itself.
    pub cause: Cause,
    /// Every seed that failed and what it failed with, lowest first (all of the range's
    /// failures when the run does not stop on the first).
    pub failed: Vec<FailedSeed>,
}

/// One failing seed of a run, and what it failed with in one line (as
/// [`FailureReport::message`] says it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedSeed {
    /// The seed.
    pub seed: u64,
    /// What failed: the panic message, the check, the deadlock.
    pub message: String,
}

impl FailureReport {
    /// What failed, in one line: the panic message, the check that failed, the deadlock.
    ///
    /// ```
    /// use crashtest::runner::{run_seeds, Settings, TestSpec};
    /// let spec = TestSpec {
    ///     name: "t", module_path: "m", package: "p", crate_name: "m",
    ///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
    /// };
    /// let settings = Settings { count: 1, check_determinism: false, ..Settings::default() };
    /// let report = run_seeds(&spec, &settings, &|| async { panic!("lost a write") }).unwrap_err();
    /// assert!(report.message().ends_with("lost a write"));
    /// ```
    pub fn message(&self) -> String {
        match &self.cause {
            Cause::Run(failure) => failure.kind.to_string(),
            Cause::Nondeterminism(divergence) => results::divergence_signature(divergence).headline,
        }
    }

    /// What the program said: a panic's or a failed check's own message, without the kind
    /// and the place; for other failures, what [`FailureReport::message`] says.
    ///
    /// ```
    /// use crashtest::runner::{run_seeds, Settings, TestSpec};
    /// let spec = TestSpec {
    ///     name: "t", module_path: "m", package: "p", crate_name: "m",
    ///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
    /// };
    /// let settings = Settings { count: 1, check_determinism: false, ..Settings::default() };
    /// let report = run_seeds(&spec, &settings, &|| async { panic!("lost a write") }).unwrap_err();
    /// assert_eq!(report.detail(), "lost a write");
    /// ```
    pub fn detail(&self) -> String {
        match &self.cause {
            Cause::Run(failure) => match &failure.kind {
                FailureKind::Panic { message, .. }
                | FailureKind::Check { message, .. }
                | FailureKind::Refused { message } => message.clone(),
                other => other.to_string(),
            },
            Cause::Nondeterminism(divergence) => divergence.to_string(),
        }
    }

    /// What failed, as two failures are compared: kind, node, panic location.
    ///
    /// ```
    /// use crashtest::runner::{run_seeds, Settings, TestSpec};
    /// let spec = TestSpec {
    ///     name: "t", module_path: "m", package: "p", crate_name: "m",
    ///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
    /// };
    /// let settings = Settings { count: 2, check_determinism: false, stop_on_failure: false, ..Settings::default() };
    /// let report = run_seeds(&spec, &settings, &|| async { panic!("lost a write") }).unwrap_err();
    /// assert!(report.signature().same_failure(&report.signature()));
    /// ```
    pub fn signature(&self) -> Signature {
        match &self.cause {
            Cause::Run(failure) => results::signature(failure),
            Cause::Nondeterminism(divergence) => results::divergence_signature(divergence),
        }
    }

    /// The faults the failing run applied, oldest first (none for a nondeterminism).
    pub fn faults(&self) -> &[InjectedFault] {
        match &self.cause {
            Cause::Run(failure) => &failure.faults,
            Cause::Nondeterminism(_) => &[],
        }
    }
}

/// Why a seed failed.
///
/// ```
/// use crashtest::runner::{run_seeds, Cause, Settings, TestSpec};
/// let spec = TestSpec {
///     name: "works",
///     module_path: "demo",
///     package: "demo",
///     crate_name: "demo",
///     seeds: None,
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// let settings = Settings { start: 0, count: 1, check_determinism: false, ..Settings::default() };
/// let report = run_seeds(&spec, &settings, &|| async { panic!("bad") }).unwrap_err();
/// assert!(matches!(report.cause, Cause::Run(_)));
/// ```
#[derive(Debug)]
pub enum Cause {
    /// The run failed (panic, deadlock, livelock, time limit, a failed check).
    Run(Box<RunFailure>),
    /// Two runs of the seed did different things.
    Nondeterminism(Box<Divergence>),
}

impl fmt::Display for FailureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "crashtest: test {} FAILED", self.test)?;
        match &self.cause {
            Cause::Run(failure) => write!(f, "{failure}")?,
            Cause::Nondeterminism(divergence) => write!(f, "{divergence}")?,
        }
        writeln!(f, "  commit:    {}", self.commit)?;
        writeln!(f, "  reproduce: {}", self.command)
    }
}

/// Runs a test's seeds with settings from its attribute and the environment, and panics with
/// the failure report if a seed fails. This is what `#[crashtest::test]` expands to.
///
/// # Panics
///
/// Panics if a seed fails, or if an environment variable is malformed.
///
/// ```
/// use crashtest::runner::{run_test, TestSpec};
///
/// async fn body() {
///     crashtest::time::sleep(std::time::Duration::from_secs(1)).await;
/// }
/// let spec = TestSpec {
///     name: "sleeps",
///     module_path: "doc",
///     package: "crashtest",
///     crate_name: "doc",
///     seeds: Some(4),
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// run_test(spec, body);
/// ```
pub fn run_test<F, Fut>(spec: TestSpec, body: F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    if describe_if_asked(&spec.info()) {
        return;
    }
    let lookup = |name: &str| std::env::var(name).ok();
    // The package's root: cargo runs a test there, and `crashtest` sets it for its workers.
    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    let policy = RegressionPolicy::from_env(&spec, &root, &lookup);
    if let Some((seed, stuck)) = stuck_before(&spec) {
        // A stuck seed fails the test as any failing seed does: saved, it runs first next
        // time, and the watchdog reports it again at once.
        if policy.save {
            let reason = stuck.lines().nth(1).unwrap_or_default().to_owned();
            save_failure(&spec, &policy, &lookup, seed, reason);
        }
        // The report says where the test got stuck; a backtrace of this line would not.
        eprintln!("{stuck}");
        std::panic::resume_unwind(Box::new(stuck));
    }
    let settings = Settings::resolve(spec.seeds, spec.seed, &lookup)
        .unwrap_or_else(|e| panic!("crashtest: {e}"));
    if let Some(runs) = settings.hunt {
        return run_guided(&spec, &settings, runs, &body);
    }
    match run_with_regressions(&spec, &settings, &policy, &lookup, &body) {
        // Named, since libtest interleaves the lines of tests that run at once.
        Ok(outcome) => println!("crashtest: {}: {outcome}", spec.test_path()),
        Err(report) => fail_test(&report, &settings),
    }
}

/// [`run_test`] for a `#[should_panic]` test: the same run, but its failing seeds are
/// expected, so its regression file is neither run nor written.
pub fn run_test_expecting_panic<F, Fut>(spec: TestSpec, body: F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    if describe_if_asked(&spec.info()) {
        return;
    }
    if let Some((_, stuck)) = stuck_before(&spec) {
        // Returning fails a test that should panic, as a stuck test must.
        eprintln!("{stuck}");
        return;
    }
    let settings = Settings::resolve(spec.seeds, spec.seed, &|name| std::env::var(name).ok())
        .unwrap_or_else(|e| panic!("crashtest: {e}"));
    match run_seeds(&spec, &settings, &body) {
        Ok(outcome) => println!("crashtest: {}: {outcome}", spec.test_path()),
        Err(report) => fail_test(&report, &settings),
    }
}

/// Writes what the test is to the file `CRASHTEST_DESCRIBE` names, if it names one: the tool
/// asks so before a sweep, and then no seed runs.
pub(crate) fn describe_if_asked(info: &TestInfo) -> bool {
    let Some(path) = std::env::var_os(crashtest_protocol::env::DESCRIBE) else {
        return false;
    };
    let info = serde_json::to_vec(info).expect("a test's description serializes");
    std::fs::write(&path, info).unwrap_or_else(|e| {
        panic!("crashtest: cannot write the test's description to {path:?}: {e}")
    });
    true
}

/// Why `spec` must fail at once, if a poll of it got stuck in an earlier run of this test
/// binary and the watchdog ran the binary again without it (see `crashtest_core`'s watchdog).
/// Returns the stuck seed and the message the test fails with.
pub(crate) fn stuck_before(spec: &TestSpec) -> Option<(u64, String)> {
    let test = spec.test_path();
    crashtest_core::plumbing::stuck_before(&test).map(|stuck| {
        let message = format!(
            "crashtest: `{test}` is not run again: it got stuck in the earlier run of this \
             test binary, which the watchdog ended.\n{}",
            stuck.report
        );
        (stuck.seed, message)
    })
}

/// Fails the calling test with what failed, in one line, and `report`'s reproduce line: the
/// panic message holds the failure's own words, so that `#[should_panic(expected = ...)]`
/// can name them.
fn fail_test(report: &FailureReport, settings: &Settings) -> ! {
    eprintln!("{report}");
    let what = report.message();
    let message = format!(
        "crashtest: seed {} failed: {}; reproduce with: {}",
        report.seed,
        what.lines().next().unwrap_or_default(),
        report.command
    );
    if settings.results.is_some() {
        // A worker of the `crashtest` tool, which reads the results file: unwinding
        // without the panic hook fails the test without a backtrace, which under
        // RUST_BACKTRACE would cost each worker process a third of a second of
        // symbolization that nobody reads.
        eprintln!("{message}");
        std::panic::resume_unwind(Box::new(message));
    }
    panic!("{message}");
}

/// How a test's regression file takes part in a run (see [`regressions`]).
#[derive(Clone, Debug)]
pub struct RegressionPolicy {
    /// The test's regression file.
    pub file: regressions::Regressions,
    /// Run its seeds before the others.
    pub run_first: bool,
    /// Append the seeds that fail to it.
    pub save: bool,
}

impl RegressionPolicy {
    /// The policy of a run of `spec` in the package at `root`, from the environment: the
    /// file's seeds run first unless the run is one seed (`CRASHTEST_SEED`), a sweep's worker
    /// (`CRASHTEST_RESULTS`) or turned off (`CRASHTEST_REGRESSIONS=0`); failures are saved
    /// by a plain `cargo test`, and by a worker only when `CRASHTEST_SAVE_FAILURES=1`.
    ///
    /// ```
    /// use crashtest::runner::{RegressionPolicy, TestSpec};
    /// let spec = TestSpec {
    ///     name: "t", module_path: "tests", package: "p", crate_name: "tests",
    ///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
    /// };
    /// let plain = RegressionPolicy::from_env(&spec, "/repo".as_ref(), &|_| None);
    /// assert!(plain.run_first && plain.save);
    /// assert!(plain.file.path().ends_with("crashtest-regressions/tests.t.txt"));
    /// let worker = |name: &str| (name == "CRASHTEST_RESULTS").then(|| "r.jsonl".to_owned());
    /// let worker = RegressionPolicy::from_env(&spec, "/repo".as_ref(), &worker);
    /// assert!(!worker.run_first && !worker.save);
    /// let replay = |name: &str| (name == "CRASHTEST_SEED").then(|| "6".to_owned());
    /// let replay = RegressionPolicy::from_env(&spec, "/repo".as_ref(), &replay);
    /// assert!(!replay.run_first && !replay.save);
    /// ```
    pub fn from_env(
        spec: &TestSpec,
        root: &std::path::Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> RegressionPolicy {
        use crashtest_protocol::env;
        let worker = lookup(env::RESULTS).is_some();
        let one_seed = lookup(env::SEED).is_some() || spec.seed.is_some();
        // A replay of a chosen seed, or one changed by a mask or an exploration, finds
        // nothing new: the seed came from somewhere, and a changed run is not the seed.
        let replay = one_seed
            || [env::MASK, env::KEEP, env::EXPLORE]
                .iter()
                .any(|v| lookup(v).is_some());
        let save = match lookup(env::SAVE_FAILURES).as_deref() {
            Some("1") => true,
            Some(_) => false,
            None => !worker && !replay,
        };
        RegressionPolicy {
            file: regressions::Regressions::of(spec, root),
            run_first: !worker && !one_seed && lookup(env::REGRESSIONS).as_deref() != Some("0"),
            save,
        }
    }
}

/// [`run_seeds`], with the test's regression file: its seeds run first (a seed whose saved
/// environment differs from this one's is skipped with a note), and the seeds that fail are
/// appended to it, as `policy` says.
///
/// ```
/// use crashtest::runner::regressions::Regressions;
/// use crashtest::runner::{run_with_regressions, RegressionPolicy, Settings, TestSpec};
///
/// let spec = TestSpec {
///     name: "never_five", module_path: "dice", package: "dice", crate_name: "dice",
///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// };
/// let dir = std::env::temp_dir().join(format!("regressions-run-{}", std::process::id()));
/// let policy = RegressionPolicy { file: Regressions::at(dir.join("t.txt")), run_first: true, save: true };
/// let body = || async { assert_ne!(crashtest::rand::seed(), Some(5), "five") };
/// let first = Settings { start: 0, count: 8, check_determinism: false, ..Settings::default() };
/// assert_eq!(run_with_regressions(&spec, &first, &policy, &|_| None, &body).unwrap_err().seed, 5);
/// // Seeds 100..108 all pass, but the saved seed 5 runs first, and fails again.
/// let later = Settings { start: 100, ..first };
/// assert_eq!(run_with_regressions(&spec, &later, &policy, &|_| None, &body).unwrap_err().seed, 5);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Errors
///
/// The first regression seed that fails, else what [`run_seeds`] returns.
///
/// # Panics
///
/// If the regression file cannot be read or written, or has a line that is not a seed line.
pub fn run_with_regressions<F, Fut>(
    spec: &TestSpec,
    settings: &Settings,
    policy: &RegressionPolicy,
    lookup: &dyn Fn(&str) -> Option<String>,
    body: &F,
) -> Result<Outcome, Box<FailureReport>>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let path = policy.file.path().display();
    if policy.run_first {
        let mut saved = policy
            .file
            .read()
            .unwrap_or_else(|e| panic!("crashtest: cannot use the regression file: {e}"));
        // Lowest first, as a sweep reports them: a sweep's workers append their seeds in
        // the order they failed.
        saved.sort_by_key(|regression| regression.seed);
        let mut ran = 0;
        // Seeds saved under other values of the declared variables, by those values: one line
        // each, however many seeds a sweep saved under them.
        let mut skipped: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for regression in &saved {
            let unmet = regression.unmet(spec.env, lookup);
            if !unmet.is_empty() {
                skipped
                    .entry(unmet.join(" "))
                    .or_default()
                    .push(regression.seed);
                continue;
            }
            let one = Settings {
                start: regression.seed,
                count: 1,
                threads: 1,
                check_determinism: false,
                ..settings.clone()
            };
            if let Err(report) = run_seeds(spec, &one, body) {
                let now = report.failed.first().map_or("", |f| f.message.as_str());
                if regression.same_reason(now) {
                    eprintln!(
                        "crashtest: seed {} of the regression file {path} fails again (it failed before: {})",
                        regression.seed, regression.reason
                    );
                } else if let Some((then, moved)) = regression.moved_panic(now) {
                    eprintln!(
                        "crashtest: seed {} of the regression file {path} fails again, with the same panic raised at {moved} where it was raised at {then} when saved (the code above it changed)",
                        regression.seed
                    );
                } else {
                    // The code or the seed's settings changed since: say so, rather than
                    // call another failure the old one.
                    eprintln!(
                        "crashtest: seed {} of the regression file {path} fails, and not as it failed when saved (then: {}; now: {})",
                        regression.seed,
                        regression.reason,
                        now.lines().next().unwrap_or("")
                    );
                }
                return Err(report);
            }
            ran += 1;
        }
        for (unmet, seeds) in &skipped {
            println!(
                "crashtest: {} of {path} skipped: {} under {unmet}",
                count_of(seeds.len() as u64, "regression seed"),
                if seeds.len() == 1 {
                    format!("seed {} failed", seeds[0])
                } else {
                    format!("seeds {} failed", seed_list(seeds))
                }
            );
        }
        if ran > 0 {
            println!(
                "crashtest: {} of {path} pass",
                count_of(ran as u64, "regression seed")
            );
        }
    }
    let result = run_seeds(spec, settings, body);
    if let (Err(report), true) = (&result, policy.save) {
        for failed in &report.failed {
            save_failure(spec, policy, lookup, failed.seed, failed.message.clone());
        }
    }
    result
}

/// Appends failing `seed` to the test's regression file, with the declared variables as
/// they are (an unset one as empty), so that the line runs again only where the test would
/// select the same behaviour.
fn save_failure(
    spec: &TestSpec,
    policy: &RegressionPolicy,
    lookup: &dyn Fn(&str) -> Option<String>,
    seed: u64,
    reason: String,
) {
    let path = policy.file.path().display();
    let env = spec
        .env
        .iter()
        .map(|name| ((*name).to_owned(), lookup(name).unwrap_or_default()))
        .collect();
    let regression = regressions::Regression { seed, env, reason };
    match policy.file.append(&regression) {
        Ok(true) => eprintln!(
            "crashtest: seed {seed} saved to {path}: every later run of this test runs it first (delete its line to stop)"
        ),
        Ok(false) => {}
        Err(e) => eprintln!("crashtest: could not save seed {seed} to {path}: {e}"),
    }
}

/// The wall clock, for pacing the progress lines only: nothing simulated reads it.
#[allow(
    clippy::disallowed_methods,
    reason = "progress is paced by wall time, outside every simulation"
)]
fn wall_clock_now() -> std::time::Instant {
    std::time::Instant::now()
}

/// How often a guided search writes its progress to the results file.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// `CRASHTEST_HUNT=RUNS`: a guided search instead of the seed range; its summary goes to
/// stdout and, as one JSON line, to the results file, after the `{"progress": ...}` lines
/// the search writes there as it goes; a failure panics with its reproduce line.
fn run_guided<F, Fut>(spec: &TestSpec, settings: &Settings, runs: u64, body: &F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let guide = guided::Guide {
        runs,
        start: settings.start,
        jobs: settings.threads,
        ..guided::Guide::default()
    };
    // The tool shows the search's progress from the results file: a line every so often,
    // and the summary last.
    let mut last_told: Option<std::time::Instant> = None;
    let mut tell = |tally: guided::Tally| {
        let Some(path) = &settings.results else {
            return;
        };
        if last_told.is_some_and(|at| at.elapsed() < PROGRESS_EVERY) {
            return;
        }
        last_told = Some(wall_clock_now());
        let line = serde_json::json!({ "progress": {
            "runs": tally.runs,
            "of": runs,
            "fresh_seeds": tally.fresh_seeds,
            "branch_points": tally.branch_points,
            "corpus": tally.corpus,
            "features": tally.features,
        }});
        // Progress is only shown: a line that cannot be written loses nothing found.
        let _ = results::append_line(path, &line.to_string());
    };
    let found = guided::guided_telling(spec, &guide, body, &mut tell);
    let line = found.json(&[("test", &spec.test_path())], "");
    if let Some(path) = &settings.results {
        results::append_line(path, &line.to_string()).unwrap_or_else(|e| {
            panic!("crashtest: cannot append to the CRASHTEST_RESULTS file {path:?}: {e}")
        });
    }
    match &found.failure {
        None => println!(
            "crashtest: guided search of {} runs ({} fresh seeds, {} branch points) found \
             no failure; corpus {}, features {}",
            found.runs, found.fresh_seeds, found.branch_points, found.corpus, found.features
        ),
        Some(failure) => {
            eprintln!("{}", failure.report);
            panic!(
                "crashtest: guided search failed after {} runs at seed {} branch path {}; \
                 reproduce with: {}",
                found.runs, failure.seed, failure.path, failure.report.command
            );
        }
    }
}

/// Runs the seeds of `settings` and returns what happened (the library form of [`run_test`]).
///
/// ```
/// use crashtest::runner::{run_seeds, Settings, TestSpec};
///
/// async fn body() {
///     let roll = crashtest::rand::rng().next_u64() % 6;
///     assert!(roll != 5, "rolled a six");
/// }
/// let spec = TestSpec {
///     name: "never_six",
///     module_path: "dice",
///     package: "dice",
///     crate_name: "dice",
///     seeds: None,
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// let settings = Settings { start: 0, count: 100, threads: 2, ..Settings::default() };
/// let report = run_seeds(&spec, &settings, &body).unwrap_err();
/// assert!(report.to_string().contains("rolled a six"));
/// assert!(report.command.starts_with(&format!("CRASHTEST_SEED={} ", report.seed)));
/// ```
pub fn run_seeds<F, Fut>(
    spec: &TestSpec,
    settings: &Settings,
    body: &F,
) -> Result<Outcome, Box<FailureReport>>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let mut config = (spec.config)().mask_faults(settings.mask.iter().copied());
    if let Some(keep) = &settings.keep {
        config = config.keep_only_faults(keep.iter().copied());
    }
    for &(at, sub_seed) in &settings.explore {
        config = config.explore_from(at, sub_seed);
    }
    // The first seed's trace goes to its file as the run goes, so a run that takes the
    // process down still leaves its events up to that point.
    let trace_file = settings
        .trace
        .as_deref()
        .map(trace_file::TraceFile::create_or_fail);
    let test = spec.test_path();
    let sink = Sink::open(settings.results.as_deref()).unwrap_or_else(|e| {
        panic!(
            "crashtest: cannot open the CRASHTEST_RESULTS file {:?}: {e}",
            settings.results
        )
    });
    let report = |seed, cause| {
        let mut report = Box::new(FailureReport {
            seed,
            commit: reproduce::commit(),
            command: spec.reproduce_line(&settings.run_env(seed)),
            test: test.clone(),
            cause,
            failed: Vec::new(),
        });
        report.failed.push(FailedSeed {
            seed,
            message: report.message(),
        });
        report
    };
    crashtest_guard::install();
    let first = settings.start;
    let first_config = match &trace_file {
        Some(file) => config.clone().stream_trace(file.clone()),
        None => config.clone(),
    };
    let first_result = if settings.check_determinism {
        // Its runs take the caller on threads of their own.
        watch_as(spec, settings, first);
        match check_determinism(first, first_config, body) {
            Ok(result) => result,
            Err(divergence) => {
                sink.write(&results::divergence_result(&test, &divergence));
                return Err(report(first, Cause::Nondeterminism(divergence)));
            }
        }
    } else {
        crashtest_guard::on_fresh_thread(|| {
            watch_as(spec, settings, first);
            Sim::with_config(first, first_config).run(body())
        })
    };
    if let (Some(file), Some(path)) = (trace_file, &settings.trace) {
        file.finish_or_fail(path);
    }
    let coverage = Mutex::new(CoverageReport::new());
    let failures: Mutex<Vec<Box<RunFailure>>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let record = |result: Result<RunSummary, Box<RunFailure>>, list_every_site: bool| {
        let mut line = results::seed_result(&test, &result);
        if list_every_site {
            results::list_unreached_sites(&mut line);
        }
        sink.write(&line);
        match result {
            Ok(summary) => lock(&coverage).add(&summary.coverage),
            Err(failure) => {
                stop.store(settings.stop_on_failure, Ordering::Relaxed);
                lock(&failures).push(failure);
            }
        }
    };
    let first_fingerprint = match &first_result {
        Ok(summary) => summary.fingerprint,
        Err(failure) => failure.summary.fingerprint,
    };
    // The first line of a process also lists the linked sites this seed never reached (with
    // zero counts), so a tool summing results files knows every site there is.
    record(first_result, true);
    let next = AtomicU64::new(1);
    std::thread::scope(|scope| {
        for _ in 0..settings.threads {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= settings.count {
                        break;
                    }
                    let seed = settings.start + index;
                    let result = crashtest_guard::on_fresh_thread(|| {
                        watch_as(spec, settings, seed);
                        Sim::with_config(seed, config.clone()).run(body())
                    });
                    record(result, false);
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort_by_key(|f| f.summary.seed);
    let failed: Vec<FailedSeed> = failures
        .iter()
        .map(|f| FailedSeed {
            seed: f.summary.seed,
            message: f.kind.to_string(),
        })
        .collect();
    match failures.into_iter().next() {
        Some(failure) => {
            let mut report = report(failure.summary.seed, Cause::Run(failure));
            report.failed = failed;
            Err(report)
        }
        None => Ok(Outcome {
            start: settings.start,
            seeds: settings.count,
            first_fingerprint,
            determinism_checked: settings.check_determinism,
            coverage: coverage.into_inner().unwrap_or_else(|e| e.into_inner()),
        }),
    }
}

/// Tells the watchdog how to reproduce `seed` as `settings` run it, for its report if a poll
/// of the seed gets stuck (the next simulation on this thread takes it).
fn watch_as(spec: &TestSpec, settings: &Settings, seed: u64) {
    crashtest_core::plumbing::reproduce_with(
        &spec.test_path(),
        spec.reproduce_line(&settings.run_env(seed)),
    );
}

/// Locks a mutex, ignoring poisoning: a panicking worker thread leaves data that is still
/// whole (each push or add completes before any panic can happen).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `n` and the noun, plural unless `n` is one: `1 regression seed`, `3 regression seeds`.
fn count_of(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Seeds as a short list: all of a few, the first few and how many more of many.
fn seed_list(seeds: &[u64]) -> String {
    const SHOWN: usize = 5;
    let shown: Vec<String> = seeds.iter().take(SHOWN).map(u64::to_string).collect();
    match seeds.len().checked_sub(SHOWN) {
        Some(more) if more > 0 => format!("{} and {more} more", shown.join(", ")),
        _ => shown.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_counts_its_seeds_with_their_noun() {
        let outcome = |seeds| Outcome {
            start: 5,
            seeds,
            first_fingerprint: 0xab,
            determinism_checked: false,
            coverage: CoverageReport::new(),
        };
        assert_eq!(
            outcome(1).to_string(),
            "1 seed passed (5..=5); seed 5 fingerprint 00000000000000ab"
        );
        assert!(
            outcome(200)
                .to_string()
                .starts_with("200 seeds passed (5..=204)")
        );
    }

    #[test]
    fn skipped_seeds_are_counted_with_their_noun_and_listed_briefly() {
        assert_eq!(count_of(1, "regression seed"), "1 regression seed");
        assert_eq!(count_of(286, "regression seed"), "286 regression seeds");
        assert_eq!(seed_list(&[3, 9]), "3, 9");
        assert_eq!(seed_list(&[0, 1, 2, 3, 4]), "0, 1, 2, 3, 4");
        assert_eq!(
            seed_list(&(0..286).collect::<Vec<_>>()),
            "0, 1, 2, 3, 4 and 281 more"
        );
    }
}
