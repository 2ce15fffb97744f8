//! Bug hunting: run seeds of a [`Setup`] until one fails, and shrink the failing run's
//! faults to a small set that still fails.
//!
//! Seeds run through crashtest's runner ([`run_seeds`]), so each runs on a fresh thread with
//! the determinism guards on (the seeded `HashMap` order that [`crate::Bug::NondeterministicReplay`]
//! trips over depends on it), and a failure comes with the command that replays it: the
//! `every_step_takes_effect_exactly_once` test of `tests/engine.rs`, which runs the setup that
//! `WORKFLOW_BUG` and `WORKFLOW_CRASH_MODEL` name.
//!
//! Minimization is delta debugging (Zeller's ddmin) over the ids of the faults the failing
//! run drew: a candidate set is tried by replaying the seed with every other fault of the
//! original run masked (`CRASHTEST_MASK`); masked faults are still drawn, so the run stays
//! aligned with the original until the program reacts differently. From there on it may draw
//! faults the original did not, under ids the mask does not name; those join the candidates
//! and the set is shrunk again, until the replay applies only the faults kept.

use std::collections::BTreeSet;
use std::ops::Range;

use crashtest::minimize::ddmin;
use crashtest::runner::{Cause, FailureReport, Settings, TestSpec, run_seeds};
use crashtest::{Config, FailureKind, InjectedFault};

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
    let settings = Settings {
        start: seeds.start,
        count: seeds.end - seeds.start,
        threads,
        check_determinism: false,
        ..Settings::default()
    };
    run_seeds(&REPLAY_TEST, &settings, &|| scenario::run(setup)).err()
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

/// The failure's message: the panic's, or the kind's.
pub fn message(failure: &FailureReport) -> String {
    match &failure.cause {
        Cause::Run(run) => match &run.kind {
            FailureKind::Panic { message, .. } => message.clone(),
            other => other.to_string(),
        },
        Cause::Nondeterminism(divergence) => divergence.to_string(),
    }
}

/// Rounds of shrinking before [`minimize`] settles for what it has.
const MINIMIZE_ROUNDS: usize = 8;

/// A failing run reduced to a few faults.
#[derive(Debug)]
pub struct Minimized {
    /// The fault ids to mask: every candidate (the faults of the original run, and those
    /// replays drew anew) but the kept ones.
    pub mask: Vec<u64>,
    /// The faults the replay with that mask applied, in order.
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
    let seed = failure.seed;
    let wanted = symptom(&message(failure));
    // Replays the seed with every fault of `pool` but `kept` masked; `Some` if it fails the
    // same way.
    let replay = |pool: &BTreeSet<u64>, kept: &[u64]| {
        let mask: Vec<u64> = pool
            .iter()
            .copied()
            .filter(|id| !kept.contains(id))
            .collect();
        let settings = Settings {
            start: seed,
            count: 1,
            threads: 1,
            check_determinism: false,
            mask: mask.clone(),
            ..Settings::default()
        };
        let failure = run_seeds(&REPLAY_TEST, &settings, &|| scenario::run(setup)).err()?;
        (symptom(&message(&failure)) == wanted).then_some((mask, failure))
    };
    let applied = |failure: &FailureReport| -> Vec<u64> {
        match &failure.cause {
            Cause::Run(run) => run.faults.iter().filter_map(|f| f.id).collect(),
            Cause::Nondeterminism(_) => Vec::new(),
        }
    };
    // A run that reacts differently to fewer faults draws new ones, under new ids: add them
    // to the pool and shrink again, until the replay applies only the faults kept.
    let mut pool: BTreeSet<u64> = run.faults.iter().filter_map(|f| f.id).collect();
    let mut rounds = 0;
    let (mask, replayed) = loop {
        let candidates: Vec<u64> = pool.iter().copied().collect();
        let kept = ddmin(candidates, |kept| replay(&pool, kept).is_some());
        let (mask, replayed) = replay(&pool, &kept).expect("ddmin keeps a failing set");
        let new: Vec<u64> = applied(&replayed)
            .into_iter()
            .filter(|id| !pool.contains(id))
            .collect();
        rounds += 1;
        if new.is_empty() || rounds == MINIMIZE_ROUNDS {
            break (mask, replayed);
        }
        pool.extend(new);
    };
    let faults = match &replayed.cause {
        Cause::Run(run) => run.faults.clone(),
        Cause::Nondeterminism(_) => Vec::new(),
    };
    let ids: Vec<String> = mask.iter().map(u64::to_string).collect();
    let masked = if ids.is_empty() {
        String::new()
    } else {
        format!(" CRASHTEST_MASK={}", ids.join(","))
    };
    Some(Minimized {
        faults,
        message: message(&replayed),
        command: format!("{setup}{masked} {}", replayed.command),
        mask,
    })
}
