//! Every planted bug is found within a bounded number of seeds under the strong crash model;
//! the torn-write bugs are invisible to the weak model; the correct engine passes both, and
//! replays exactly.

use std::collections::BTreeSet;

use crashtest::fs::CrashModel;
use crashtest::runner::Cause;
use workflow::{Bug, Setup, hunt};

/// Seeds searched for a bug before the test gives up (each is found within a few today).
const CAP: u64 = 200;

/// Searches seeds `0..CAP` of `bug` under the strong model and checks that the first failure
/// shows one of `symptoms`.
fn found(bug: Bug, symptoms: &[&str]) {
    let setup = Setup {
        bug,
        crash_model: CrashModel::Strong,
    };
    let failure = hunt::first_failure(setup, 0..CAP, 2)
        .unwrap_or_else(|| panic!("{bug} not found in {CAP} seeds"));
    let message = failure.detail();
    println!("{bug}: seed {}: {message}", failure.seed);
    assert!(
        symptoms.contains(&hunt::symptom(&message)),
        "{bug} failed with {message:?}, expected one of {symptoms:?}"
    );
    assert!(
        failure
            .command
            .contains(&format!("CRASHTEST_SEED={} ", failure.seed))
    );
}

#[test]
fn effect_before_intent_repeats_an_effect() {
    found(Bug::EffectBeforeIntent, &["repeated"]);
}

#[test]
fn no_journal_fsync_repeats_an_effect() {
    found(Bug::NoJournalFsync, &["repeated"]);
}

#[test]
fn no_checksum_feeds_a_torn_output_to_the_next_step() {
    found(Bug::NoChecksum, &["wrong input", "repeated"]);
}

#[test]
fn no_tail_truncation_loses_the_records_behind_a_torn_tail() {
    found(Bug::NoTailTruncation, &["repeated"]);
}

#[test]
fn rename_without_dir_sync_brings_back_an_old_segment() {
    found(Bug::RenameWithoutDirSync, &["repeated"]);
}

#[test]
fn nondeterministic_replay_runs_steps_out_of_order() {
    found(
        Bug::NondeterministicReplay,
        &["reordered", "wrong input", "repeated"],
    );
}

#[test]
fn key_per_attempt_repeats_an_effect() {
    found(Bug::KeyPerAttempt, &["repeated"]);
}

#[test]
fn the_weak_crash_model_never_tears_a_record() {
    for bug in [Bug::NoChecksum, Bug::NoTailTruncation] {
        let setup = Setup {
            bug,
            crash_model: CrashModel::Weak,
        };
        if let Some(failure) = hunt::first_failure(setup, 0..100, 2) {
            panic!("{bug} failed under the weak model: {failure}");
        }
    }
}

#[test]
fn the_correct_engine_survives_the_weak_crash_model() {
    let setup = Setup {
        bug: Bug::None,
        crash_model: CrashModel::Weak,
    };
    if let Some(failure) = hunt::first_failure(setup, 0..200, 2) {
        panic!("{failure}");
    }
}

#[test]
fn a_seed_replays_exactly_even_with_a_hashmap_in_the_engine() {
    // The runner's determinism check runs each seed twice and compares every event; the
    // HashMap's order comes from the seed (crashtest's guards), so the bug is replayable.
    let setup = Setup {
        bug: Bug::NondeterministicReplay,
        crash_model: CrashModel::Strong,
    };
    for seed in 0..4 {
        let settings = crashtest::runner::Settings {
            start: seed,
            count: 1,
            ..crashtest::runner::Settings::default()
        };
        let result =
            crashtest::runner::run_seeds(&hunt::REPLAY_TEST, &settings, &|| workflow::run(setup));
        if let Err(report) = result {
            assert!(matches!(report.cause, Cause::Run(_)), "{report}");
        }
    }
}

#[test]
fn different_seeds_run_differently() {
    let fingerprints: BTreeSet<u64> = (0..6)
        .map(|seed| {
            crashtest::Sim::new(seed)
                .run(workflow::run(Setup::default()))
                .unwrap()
                .fingerprint
        })
        .collect();
    assert_eq!(fingerprints.len(), 6);
}

#[test]
fn a_minimized_failure_keeps_few_faults_and_still_fails() {
    let setup = Setup {
        bug: Bug::EffectBeforeIntent,
        crash_model: CrashModel::Strong,
    };
    let failure = hunt::first_failure(setup, 0..CAP, 2).expect("found, as above");
    let Cause::Run(run) = &failure.cause else {
        panic!("{failure}");
    };
    let minimized = hunt::minimize(setup, &failure).expect("a run failure minimizes");
    let faults = minimized.report.faults();
    println!("{}\n{faults:#?}", minimized.command);
    assert!(faults.len() < run.faults.len());
    assert!(
        minimized
            .report
            .signature()
            .same_failure(&failure.signature())
    );
    assert_eq!(
        hunt::symptom(&minimized.report.detail()),
        hunt::symptom(&failure.detail())
    );
    let kept = faults.iter().filter(|f| f.id.is_some()).count();
    assert!(kept <= 5, "{kept} faults kept: {faults:#?}");
}
