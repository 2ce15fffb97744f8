//! Bug hunting: run seeds of a [`Setup`] until one fails, and shrink the failing run's faults
//! to a small set that still fails.
//!
//! Seeds run through crashtest's runner (`crashtest::runner::hunt`), so a failure comes with the command
//! that replays it: the test of `tests/replay.rs`, which runs the setup that `RAFT_BUG`,
//! `RAFT_CRASH_MODEL`, `RAFT_WORKLOAD` and `RAFT_PATTERNS` name.
//!
//! Minimization is crashtest's own (`crashtest::runner::minimize`, the search `crashtest
//! minimize` runs): delta debugging over the ids of the faults the failing run applied, each
//! candidate replayed with the other faults masked, counting only if the replay fails the same
//! way (the same kind of failure, on the same node, at the same place).

use std::ops::Range;

use crashtest::Config;
use crashtest::runner::guided::{self, Guide, Guided};
use crashtest::runner::minimize::{self, Minimized};
use crashtest::runner::{FailureReport, Settings, TestSpec, hunt};

use crate::scenario::{self, Setup};

/// The test that replays a seed of the setup named by the environment.
pub const REPLAY_TEST: TestSpec = TestSpec {
    name: "the_store_the_environment_names_survives_faults",
    module_path: "replay",
    package: "raft-kv-example",
    crate_name: "replay",
    seeds: None,
    seed: None,
    config: Config::default,
    env: &[],
};

/// Runs the seeds `seeds` of `setup` on `threads` threads and returns the first failure (the
/// lowest failing seed), or `None` if every seed passed.
///
/// ```
/// use raft_kv::{hunt, Setup};
/// assert!(hunt::first_failure(Setup::default(), 0..1, 1).is_none());
/// ```
pub fn first_failure(
    setup: Setup,
    seeds: Range<u64>,
    threads: usize,
) -> Option<Box<FailureReport>> {
    hunt::first_failure(&REPLAY_TEST, seeds, threads, &|| scenario::run(setup))
}

/// Runs a guided search of `runs` runs of `setup` from seed 0, `jobs` processes at once
/// (`crashtest::runner::guided`): it branches from the runs that reached something new,
/// such as a state of the servers' `raft` abstraction no run had before.
pub fn guided(setup: Setup, runs: u64, jobs: usize) -> Guided {
    let guide = Guide {
        runs,
        jobs,
        ..Guide::default()
    };
    guided::guided(&REPLAY_TEST, &guide, &|| scenario::run(setup))
}

/// What a failure says, in a few words, so that a replay with fewer faults counts only if it
/// fails the same way.
///
/// ```
/// assert_eq!(raft_kv::hunt::symptom("two leaders in term 4: s0 and s2"), "two leaders");
/// ```
pub fn symptom(message: &str) -> &'static str {
    const SYMPTOMS: [(&str, &str); 9] = [
        ("two leaders", "two leaders"),
        ("where another server applied", "diverged"),
        ("not linearizable", "not linearizable"),
        ("ring is broken", "broken ring"),
        ("cycle: key", "broken ring"),
        ("no convergence", "stuck"),
        ("recovered an entry", "bad recovery"),
        ("log terms must not decrease", "bad recovery"),
        ("truncate committed entry", "lost commit"),
    ];
    SYMPTOMS
        .iter()
        .find(|(needle, _)| message.contains(needle))
        .map_or("other", |(_, symptom)| symptom)
}

/// Shrinks the faults of `failure`, a failure of `setup`, to a set that still fails the same
/// way (see `crashtest::runner::minimize`); `None` if the failure is a nondeterminism.
pub fn minimize(setup: Setup, failure: &FailureReport) -> Option<Minimized> {
    let settings = Settings::range(failure.seed..failure.seed + 1, 1);
    minimize::minimize(&REPLAY_TEST, &settings, &|| scenario::run(setup), failure)
}
