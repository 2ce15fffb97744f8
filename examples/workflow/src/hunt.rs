//! Bug hunting: run seeds of a [`Setup`] until one fails, and shrink the failing run's
//! faults to a small set that still fails.
//!
//! Seeds run through crashtest's runner (`crashtest::runner::hunt`), so each runs on a fresh thread with
//! the determinism guards on (the seeded `HashMap` order that [`crate::Bug::NondeterministicReplay`]
//! trips over depends on it), and a failure comes with the command that replays it: the
//! `every_step_takes_effect_exactly_once` test of `tests/engine.rs`, which runs the setup that
//! `WORKFLOW_BUG` and `WORKFLOW_CRASH_MODEL` name.
//!
//! Minimization is crashtest's own (`crashtest::runner::minimize`, the search `crashtest
//! minimize` runs): delta debugging over the ids of the faults the failing run applied, each
//! candidate replayed with the other faults masked (`CRASHTEST_MASK`). Masked faults are still
//! drawn, so a replay stays aligned with the original until the program reacts differently;
//! faults a changed replay draws anew stay in play, and a candidate counts only if the replay
//! fails the same way (the same kind of failure, on the same node, at the same place).

use std::ops::Range;

use crashtest::Config;
use crashtest::runner::guided::{self, Guide, Guided};
use crashtest::runner::minimize::{self, Minimized};
use crashtest::runner::{FailureReport, Settings, TestSpec, hunt};

use crate::scenario::{self, Setup};

/// The test that replays a seed of the setup named by the environment.
pub const REPLAY_TEST: TestSpec = TestSpec {
    name: "every_step_takes_effect_exactly_once",
    module_path: "engine",
    package: "workflow-example",
    crate_name: "engine",
    seeds: None,
    seed: None,
    config: Config::default,
    env: &[],
};

/// Runs the seeds `seeds` of `setup` on `threads` threads and returns the first failure (the
/// lowest failing seed), or `None` if every seed passed.
///
/// ```
/// use workflow::{hunt, Setup};
/// assert!(hunt::first_failure(Setup::default(), 0..2, 1).is_none());
/// ```
pub fn first_failure(
    setup: Setup,
    seeds: Range<u64>,
    threads: usize,
) -> Option<Box<FailureReport>> {
    hunt::first_failure(&REPLAY_TEST, seeds, threads, &|| scenario::run(setup))
}

/// Runs a guided search of `runs` runs of `setup` from seed 0, `jobs` processes at once
/// (`crashtest::runner::guided`): its fresh runs are the seeds a random search runs, the
/// others (a share that ramps up towards half) branch from the runs that reached something
/// new.
pub fn guided(setup: Setup, runs: u64, jobs: usize) -> Guided {
    let guide = Guide {
        runs,
        jobs,
        ..Guide::default()
    };
    guided::guided(&REPLAY_TEST, &guide, &|| scenario::run(setup))
}

/// What a run's failure says, in one word, so that a replay with fewer faults counts only if
/// it fails the same way.
///
/// ```
/// assert_eq!(workflow::hunt::symptom("workflow 1 step 0 (ChargeCard) took effect 2 times"), "repeated");
/// ```
pub fn symptom(message: &str) -> &'static str {
    if message.contains("took effect 0 times") {
        "lost"
    } else if message.contains("took effect") {
        "repeated"
    } else if message.contains("not in step order") {
        "reordered"
    } else if message.contains("ran with input") {
        "wrong input"
    } else if message.contains("no convergence") {
        "stuck"
    } else {
        "other"
    }
}

/// Shrinks the faults of `failure`, a failure of `setup`, to a set that still fails the same
/// way (see `crashtest::runner::minimize`); `None` if the failure is a nondeterminism.
pub fn minimize(setup: Setup, failure: &FailureReport) -> Option<Minimized> {
    let settings = Settings::range(failure.seed..failure.seed + 1, 1);
    minimize::minimize(&REPLAY_TEST, &settings, &|| scenario::run(setup), failure)
}
