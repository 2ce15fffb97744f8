//! Bug hunting: run seeds of a [`Setup`] until one fails, and shrink the failing run's faults
//! to a small set that still fails.
//!
//! Seeds run through crashtest's runner ([`run_seeds`]), so a failure comes with the command
//! that replays it: the test of `tests/replay.rs`, which runs the setup that `RAFT_BUG`,
//! `RAFT_CRASH_MODEL` and `RAFT_WORKLOAD` name.
//!
//! Minimization is delta debugging (Zeller's ddmin) over the ids of the faults the failing
//! run drew. A candidate set is tried by replaying the seed with only those faults applied
//! (`Settings::keep`, `CRASHTEST_KEEP`): every other fault is still drawn but masked, so the
//! run stays aligned with the original until the program reacts differently, and faults that
//! come up only in the changed run are masked too. A candidate counts only if the replay
//! fails the same way (the same [`symptom`]).

use std::ops::Range;

use crashtest::minimize::ddmin;
use crashtest::runner::{Cause, FailureReport, Settings, TestSpec, run_seeds};
use crashtest::{Config, FailureKind, InjectedFault};

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
};

fn settings(seeds: Range<u64>, threads: usize) -> Settings {
    Settings {
        start: seeds.start,
        count: seeds.end - seeds.start,
        threads,
        check_determinism: false,
        ..Settings::default()
    }
}

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
    run_seeds(&REPLAY_TEST, &settings(seeds, threads), &|| {
        scenario::run(setup)
    })
    .err()
}

/// The failure's message: the panic's, or the failed check's.
pub fn message(failure: &FailureReport) -> String {
    match &failure.cause {
        Cause::Run(run) => match &run.kind {
            FailureKind::Panic { message, .. } | FailureKind::Check { message } => message.clone(),
            other => other.to_string(),
        },
        Cause::Nondeterminism(divergence) => divergence.to_string(),
    }
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

/// A failing run reduced to a few faults.
#[derive(Debug)]
pub struct Minimized {
    /// The fault ids kept: every other drawn fault is masked.
    pub keep: Vec<u64>,
    /// The faults the replay applied, in order.
    pub faults: Vec<InjectedFault>,
    /// The replay's failure message.
    pub message: String,
    /// The command that replays it.
    pub command: String,
}

/// Shrinks the faults of `failure`, a failure of `setup`, to a set that still fails the same
/// way; `None` if the failure is not a run failure (a nondeterminism).
pub fn minimize(setup: Setup, failure: &FailureReport) -> Option<Minimized> {
    let Cause::Run(run) = &failure.cause else {
        return None;
    };
    let wanted = symptom(&message(failure));
    let replay = |keep: &[u64]| {
        let settings = Settings {
            keep: Some(keep.to_vec()),
            ..settings(failure.seed..failure.seed + 1, 1)
        };
        let replayed = run_seeds(&REPLAY_TEST, &settings, &|| scenario::run(setup)).err()?;
        (symptom(&message(&replayed)) == wanted).then_some(replayed)
    };
    let drawn: Vec<u64> = run.faults.iter().filter_map(|f| f.id).collect();
    let keep = ddmin(drawn, |keep| replay(keep).is_some());
    let replayed = replay(&keep).expect("ddmin keeps a failing set");
    let Cause::Run(run) = &replayed.cause else {
        return None;
    };
    let ids: Vec<String> = keep.iter().map(u64::to_string).collect();
    Some(Minimized {
        faults: run.faults.clone(),
        message: message(&replayed),
        command: format!(
            "{setup} CRASHTEST_KEEP={} {}",
            ids.join(","),
            replayed.command
        ),
        keep,
    })
}
