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

pub mod hunt;
pub mod minimize;
mod reproduce;
pub mod results;
mod settings;
mod sim;
mod tokio_seam;
mod trace_file;

/// The protocol this runner speaks with the `crashtest` tool: results lines, trace lines, the
/// environment variables, typed trace notes.
pub use crashtest_protocol as protocol;

use std::fmt;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crashtest_core::coverage::CoverageReport;
use crashtest_core::{Divergence, FailureKind, InjectedFault, RunFailure, RunSummary};
use crashtest_protocol::results::Signature;
use results::Sink;

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
///     config: crashtest::Config::default,
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
            "crashtest: {} seeds passed ({}..={}); seed {} fingerprint {:016x}{}",
            self.seeds,
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
///     config: crashtest::Config::default,
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
    /// Every seed that failed, lowest first (all of the range's failures when the run does
    /// not stop on the first).
    pub failed_seeds: Vec<u64>,
}

impl FailureReport {
    /// What failed, in one line: the panic message, the check that failed, the deadlock.
    ///
    /// ```
    /// use crashtest::runner::{run_seeds, Settings, TestSpec};
    /// let spec = TestSpec {
    ///     name: "t", module_path: "m", package: "p", crate_name: "m",
    ///     seeds: None, seed: None, config: crashtest::Config::default,
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
    ///     seeds: None, seed: None, config: crashtest::Config::default,
    /// };
    /// let settings = Settings { count: 1, check_determinism: false, ..Settings::default() };
    /// let report = run_seeds(&spec, &settings, &|| async { panic!("lost a write") }).unwrap_err();
    /// assert_eq!(report.detail(), "lost a write");
    /// ```
    pub fn detail(&self) -> String {
        match &self.cause {
            Cause::Run(failure) => match &failure.kind {
                FailureKind::Panic { message, .. } | FailureKind::Check { message } => {
                    message.clone()
                }
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
    ///     seeds: None, seed: None, config: crashtest::Config::default,
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
///     config: crashtest::Config::default,
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
///     config: crashtest::Config::default,
/// };
/// run_test(spec, body);
/// ```
pub fn run_test<F, Fut>(spec: TestSpec, body: F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let settings = Settings::resolve(spec.seeds, spec.seed, &|name| std::env::var(name).ok())
        .unwrap_or_else(|e| panic!("crashtest: {e}"));
    match run_seeds(&spec, &settings, &body) {
        Ok(outcome) => println!("{outcome}"),
        Err(report) => {
            eprintln!("{report}");
            panic!(
                "crashtest: seed {} failed; reproduce with: {}",
                report.seed, report.command
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
///     config: crashtest::Config::default,
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
    if let Some((at, sub_seed)) = settings.explore {
        config = config.explore_from(at, sub_seed);
    }
    // The first seed's trace goes to its file as the run goes, so a run that takes the
    // process down still leaves its events up to that point.
    let trace_file = settings.trace.as_deref().map(|path| {
        trace_file::TraceFile::create(path)
            .unwrap_or_else(|e| panic!("crashtest: cannot write the trace to {path:?}: {e}"))
    });
    let test = spec.test_path();
    let sink = Sink::open(settings.results.as_deref()).unwrap_or_else(|e| {
        panic!(
            "crashtest: cannot open the CRASHTEST_RESULTS file {:?}: {e}",
            settings.results
        )
    });
    let report = |seed, cause| {
        Box::new(FailureReport {
            seed,
            commit: reproduce::commit(),
            command: spec.reproduce_command(seed),
            test: test.clone(),
            cause,
            failed_seeds: vec![seed],
        })
    };
    crashtest_guard::install();
    let first = settings.start;
    let first_config = match &trace_file {
        Some(file) => config.clone().stream_trace(file.clone()),
        None => config.clone(),
    };
    let first_result = if settings.check_determinism {
        match check_determinism(first, first_config, body) {
            Ok(result) => result,
            Err(divergence) => {
                sink.write(&results::divergence_result(&test, &divergence));
                return Err(report(first, Cause::Nondeterminism(divergence)));
            }
        }
    } else {
        crashtest_guard::on_fresh_thread(|| Sim::with_config(first, first_config).run(body()))
    };
    if let (Some(file), Some(path)) = (trace_file, &settings.trace) {
        file.finish()
            .unwrap_or_else(|e| panic!("crashtest: cannot write the trace to {path:?}: {e}"));
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
                        Sim::with_config(seed, config.clone()).run(body())
                    });
                    record(result, false);
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort_by_key(|f| f.summary.seed);
    let failed_seeds: Vec<u64> = failures.iter().map(|f| f.summary.seed).collect();
    match failures.into_iter().next() {
        Some(failure) => {
            let mut report = report(failure.summary.seed, Cause::Run(failure));
            report.failed_seeds = failed_seeds;
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

/// Locks a mutex, ignoring poisoning: a panicking worker thread leaves data that is still
/// whole (each push or add completes before any panic can happen).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
