//! Exhaustive tests: `#[crashtest::test(exhaustive)]` runs every crash point and crash
//! outcome of one seed (the disk's [`Explorer`]) in place of a range of seeds.
//!
//! A failing case is reported as a failing seed is, with the commit and a line that runs that
//! case alone: `CRASHTEST_CASE` holds the case's choices (and `CRASHTEST_SEED` the seed, when
//! the environment chose it). The enumeration's order is fixed, so a rerun finds the same
//! first failing case: an exhaustive test keeps no regression file.
//!
//! The variables that select one sampled run (a mask, kept faults, a branch path, a hunt, a
//! results file) mean nothing to an exploration, and are refused rather than ignored, so that
//! a run never does something other than what was asked without saying so. Those that shape
//! a whole `cargo test` run (a seed count, the first seed, threads, stopping at a failure)
//! are for the binary's seeded tests and leave an exhaustive one as it is.
//!
//! A failing case is run again alone before its line is printed (as a seeded test runs its
//! first seed twice; `CRASHTEST_CHECK_DETERMINISM=0` skips it): a case that does something
//! else alone is reported as not deterministic, since no line would reproduce it. Each case
//! tells the watchdog, on its own thread, how to run the test again, so that a poll stuck in
//! a case is reported and the binary's other tests still run, as for a seeded test.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;

use crashtest_core::RunFailure;
use crashtest_fs::exhaustive::{Explorer, FailedCase};
use crashtest_protocol::describe::TestInfo;
use crashtest_protocol::env;

use crate::settings::{BadSetting, ids, parse};
use crate::{
    TestSpec, describe_if_asked, register_tokio_seam, reproduce, stuck_before, trace_file,
};

/// The variables that select one sampled run, each refused by an exhaustive test.
const SAMPLED_ONLY: [&str; 5] = [env::MASK, env::KEEP, env::EXPLORE, env::HUNT, env::RESULTS];

/// What the environment asks of an exhaustive test.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Plan {
    /// The seed every case runs with, if the environment or the attribute chose one (else
    /// the explorer's own).
    seed: Option<u64>,
    /// Whether `CRASHTEST_SEED` chose it (then a reproduce line says it again).
    seed_from_env: bool,
    /// Run only the case with these choices.
    case: Option<Vec<u64>>,
    /// Where to write the trace of that case.
    trace: Option<PathBuf>,
    /// Whether a failing case runs again alone before its line is printed.
    check_determinism: bool,
}

/// A variable an exhaustive test cannot take, or a value it cannot read.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Refusal(String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<BadSetting> for Refusal {
    fn from(bad: BadSetting) -> Refusal {
        Refusal(bad.to_string())
    }
}

impl Plan {
    fn resolve(spec: &TestSpec, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Plan, Refusal> {
        let test = spec.test_path();
        if let Some(variable) = SAMPLED_ONLY.iter().find(|name| lookup(name).is_some()) {
            return Err(Refusal(format!(
                "`{test}` is an exhaustive test: it runs every crash case of one seed, so \
                 {variable}, which selects one sampled run, means nothing to it; unset it \
                 (CRASHTEST_SEED picks the seed, CRASHTEST_CASE runs one case; the `crashtest` \
                 tool's sweeps, hunts and minimizing are for seeded tests)"
            )));
        }
        let env_seed = parse::<u64>(
            lookup,
            env::SEED,
            "the seed the cases run with (a u64)",
            |_| true,
        )?;
        let case = ids(
            lookup,
            env::CASE,
            "a case's choices, numbers separated by commas (such as 1,0,3), as a failing \
             exhaustive test prints them",
        )?;
        let trace = lookup(env::TRACE).map(PathBuf::from);
        if trace.is_some() && case.is_none() {
            return Err(Refusal(format!(
                "`{test}` is an exhaustive test: {} traces one run, so it needs {} too (the \
                 case a failure printed)",
                env::TRACE,
                env::CASE
            )));
        }
        let check = parse::<u8>(lookup, env::CHECK_DETERMINISM, "0 or 1", |n| *n <= 1)?;
        Ok(Plan {
            seed: env_seed.or(spec.seed),
            seed_from_env: env_seed.is_some(),
            case,
            trace,
            check_determinism: check != Some(0),
        })
    }

    /// The variable of the seed, when the environment chose it (else none).
    fn seed_env(&self) -> String {
        match (self.seed_from_env, self.seed) {
            (true, Some(seed)) => crashtest_protocol::reproduce::seed(seed),
            _ => String::new(),
        }
    }

    /// The variables that run the case with `choices` as this plan runs cases.
    fn case_env(&self, choices: &[u64]) -> String {
        let case = crashtest_protocol::reproduce::assignments([(
            env::CASE,
            env::encode_ids(choices.iter().copied()),
        )]);
        crashtest_protocol::reproduce::join(&self.seed_env(), &case)
    }
}

/// Explores every crash case of a test: what `#[crashtest::test(exhaustive)]` expands to.
/// `explorer` gives the exploration's settings (tears, case limit, configuration); the
/// attribute's or `CRASHTEST_SEED`'s seed replaces its seed. With `CRASHTEST_CASE` set, only
/// that case runs (with `CRASHTEST_TRACE`, traced).
///
/// # Panics
///
/// Panics with the failing case, its commit and the line that runs it alone if a case fails;
/// and if a variable of a sampled run is set, or one of its own is malformed.
///
/// ```
/// use crashtest::fs::exhaustive::{crash_scope, Explorer};
/// use crashtest::runner::{run_exhaustive, TestSpec};
/// use crashtest::node;
/// use std::time::Duration;
///
/// async fn body() {
///     let db = node::create("db", || async {
///         let _scope = crash_scope();
///         crashtest::fs::write("/a", b"x").await.unwrap();
///     });
///     crashtest::time::sleep(Duration::from_secs(1)).await;
///     db.kill();
/// }
/// let spec = TestSpec {
///     name: "writes",
///     module_path: "doc",
///     package: "crashtest",
///     crate_name: "doc",
///     seeds: None,
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// run_exhaustive(spec, || Explorer::new().tears(false), body);
/// ```
pub fn run_exhaustive<F, Fut>(spec: TestSpec, explorer: fn() -> Explorer, body: F)
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let info = TestInfo {
        exhaustive: true,
        ..spec.info()
    };
    if describe_if_asked(&info) {
        return;
    }
    if let Some((_, stuck)) = stuck_before(&spec) {
        eprintln!("{stuck}");
        std::panic::resume_unwind(Box::new(stuck));
    }
    let plan = Plan::resolve(&spec, &|name| std::env::var(name).ok())
        .unwrap_or_else(|e| panic!("crashtest: {e}"));
    register_tokio_seam();
    crashtest_guard::install();
    let mut explorer = explorer();
    if let Some(seed) = plan.seed {
        explorer = explorer.seed(seed);
    }
    let test = spec.test_path();
    let line = match &plan.case {
        Some(choices) => spec.reproduce_line(&plan.case_env(choices)),
        None => spec.reproduce_line(&plan.seed_env()),
    };
    let line = line.trim_start().to_owned();
    // The watchdog takes the caller from the thread of the next simulation, and each case
    // runs on a thread of its own: the scenario, called there first, tells it.
    let scenario = || {
        crashtest_core::plumbing::reproduce_with(&test, line.clone());
        body()
    };
    match &plan.case {
        Some(choices) => {
            let trace = plan
                .trace
                .as_deref()
                .map(|path| (trace_file::TraceFile::create_or_fail(path), path));
            let replayer = match &trace {
                Some((file, _)) => {
                    let config = explorer.config().clone().stream_trace(file.clone());
                    explorer.clone().sim_config(config)
                }
                None => explorer.clone(),
            };
            let result = replayer.replay(choices, scenario);
            if let Some((file, path)) = trace {
                file.finish_or_fail(path);
            }
            match result {
                Ok(summary) => println!(
                    "crashtest: {test}: case [{}] of seed {} passed, fingerprint {:016x}",
                    env::encode_ids(choices.iter().copied()),
                    summary.seed,
                    summary.fingerprint
                ),
                Err(failure) => fail(&spec, &plan, "the case", choices, &failure),
            }
        }
        None => {
            let exploration = explorer.run(scenario);
            if let Some(found) = exploration.failure {
                let which = format!("exhaustive case {}", found.case);
                if plan.check_determinism {
                    fail_unless_it_replays(&test, &which, &explorer, &found, scenario);
                }
                fail(&spec, &plan, &which, &found.choices, &found.failure);
            }
            let verdict = if exploration.exhausted {
                "every case passed"
            } else {
                "passed, not exhausted: the case limit (Explorer::max_cases) stopped it"
            };
            println!("crashtest: {test}: {} cases, {verdict}", exploration.cases);
        }
    }
}

/// Fails the test as not deterministic unless the failing case `found` (named `which`), run
/// again alone by `explorer`, fails with the same fingerprint: no line would reproduce it.
fn fail_unless_it_replays<F, Fut>(
    test: &str,
    which: &str,
    explorer: &Explorer,
    found: &FailedCase,
    scenario: F,
) where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        explorer.replay(&found.choices, scenario)
    }));
    let expected = found.failure.summary.fingerprint;
    let what = match &again {
        Ok(Err(failure)) if failure.summary.fingerprint == expected => return,
        Ok(Err(failure)) => format!(
            "failed with fingerprint {:016x}",
            failure.summary.fingerprint
        ),
        Ok(Ok(_)) => "passed".to_owned(),
        Err(_) => "took another path".to_owned(),
    };
    eprintln!(
        "crashtest: test {test} FAILED\n{which} failed\n{}",
        found.failure
    );
    panic!(
        "crashtest: {which} failed (fingerprint {expected:016x}), but run again alone it \
         {what}: the test does not do the same thing twice (a clock, randomness or state kept \
         between runs that the simulation does not own), so no line would reproduce the case; \
         CRASHTEST_CHECK_DETERMINISM=0 prints it anyway"
    );
}

/// Fails the test with the failing case `which` (its choices `choices`): the report on
/// stderr, and a panic message in one line with the line that runs the case alone.
fn fail(spec: &TestSpec, plan: &Plan, which: &str, choices: &[u64], failure: &RunFailure) -> ! {
    let line = spec.reproduce_line(&plan.case_env(choices));
    eprintln!(
        "crashtest: test {} FAILED\n{which} failed, choices [{}]\n{failure}  commit:    {}\n  \
         reproduce: {line}",
        spec.test_path(),
        env::encode_ids(choices.iter().copied()),
        reproduce::commit()
    );
    panic!(
        "crashtest: {which} failed: {}; reproduce with: {line}",
        failure.kind.to_string().lines().next().unwrap_or_default()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TestSpec {
        TestSpec {
            name: "t",
            module_path: "m",
            package: "p",
            crate_name: "m",
            seeds: None,
            seed: Some(4),
            config: crashtest_core::Config::default,
            env: &[],
        }
    }

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environments_seed_replaces_the_attributes_and_goes_into_the_line() {
        let plan = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_SEED", "9")])).unwrap();
        assert_eq!(plan.seed, Some(9));
        assert_eq!(
            plan.case_env(&[1, 0, 3]),
            "CRASHTEST_SEED=9 CRASHTEST_CASE=1,0,3"
        );
        let plan = Plan::resolve(&spec(), &lookup(&[])).unwrap();
        assert_eq!(plan.seed, Some(4));
        assert_eq!(plan.case_env(&[2]), "CRASHTEST_CASE=2");
    }

    #[test]
    fn a_case_with_no_choices_is_written_so_that_a_shell_reads_it_back_empty() {
        let plan = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_CASE", "")])).unwrap();
        assert_eq!(plan.case, Some(Vec::new()));
        assert_eq!(plan.case_env(&[]), "CRASHTEST_CASE=''");
    }

    #[test]
    fn a_sampled_runs_variable_is_refused_with_what_to_do() {
        let refusal = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_MASK", "1")])).unwrap_err();
        assert!(
            refusal
                .0
                .contains("CRASHTEST_MASK, which selects one sampled run, means nothing"),
            "{refusal}"
        );
        assert!(
            refusal.0.contains("CRASHTEST_CASE runs one case"),
            "{refusal}"
        );
    }

    #[test]
    fn a_whole_runs_settings_leave_an_exhaustive_test_as_it_is() {
        let whole = lookup(&[
            ("CRASHTEST_SEEDS", "1000"),
            ("CRASHTEST_THREADS", "2"),
            ("CRASHTEST_STOP_ON_FAILURE", "0"),
        ]);
        assert_eq!(
            Plan::resolve(&spec(), &whole).unwrap(),
            Plan::resolve(&spec(), &lookup(&[])).unwrap()
        );
        let unchecked = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_CHECK_DETERMINISM", "0")]));
        assert!(!unchecked.unwrap().check_determinism);
    }

    #[test]
    fn malformed_values_and_a_trace_without_a_case_are_refused() {
        let bad_case = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_CASE", "1;2")])).unwrap_err();
        assert!(
            bad_case.0.contains("CRASHTEST_CASE=\"1;2\" is not valid"),
            "{bad_case}"
        );
        let bad_seed = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_SEED", "x")])).unwrap_err();
        assert!(bad_seed.0.contains("CRASHTEST_SEED=\"x\""), "{bad_seed}");
        let trace = Plan::resolve(&spec(), &lookup(&[("CRASHTEST_TRACE", "/t")])).unwrap_err();
        assert!(trace.0.contains("needs CRASHTEST_CASE"), "{trace}");
    }
}
