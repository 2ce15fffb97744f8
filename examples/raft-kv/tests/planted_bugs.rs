//! Every planted bug is found within a bounded number of seeds under the strong crash model,
//! failing the way it should; a torn record needs the strong model to show.

use crashtest::fs::CrashModel;
use raft_kv::{Bug, Setup, hunt};

/// Seeds searched for a bug before the test gives up (each is found well within it today).
const CAP: u64 = 400;

/// Searches seeds `0..CAP` of `bug` under `crash_model` and checks that the first failure
/// shows one of `symptoms` and names the command that replays it.
fn found(bug: Bug, crash_model: CrashModel, symptoms: &[&str]) {
    let setup = Setup {
        bug,
        crash_model,
        ..Setup::default()
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
fn a_vote_not_persisted_is_given_twice_or_leaves_the_disk_inconsistent() {
    found(
        Bug::VoteNotPersisted,
        CrashModel::Strong,
        &["two leaders", "bad recovery"],
    );
}

#[test]
fn voting_without_the_log_check_elects_a_leader_that_overwrites_commits() {
    found(
        Bug::VoteWithoutLogCheck,
        CrashModel::Strong,
        &["lost commit", "diverged", "not linearizable"],
    );
}

#[test]
fn truncating_one_entry_too_late_lets_replicas_diverge() {
    found(
        Bug::TruncateOffByOne,
        CrashModel::Strong,
        &["diverged", "not linearizable"],
    );
}

#[test]
fn a_deposed_leader_serving_reads_is_not_linearizable() {
    found(
        Bug::StaleLeaderRead,
        CrashModel::Strong,
        &["not linearizable"],
    );
}

#[test]
fn acknowledging_before_fsync_loses_committed_entries() {
    found(
        Bug::AckBeforeFsync,
        CrashModel::Strong,
        &["diverged", "not linearizable", "lost commit"],
    );
}

#[test]
fn accepting_torn_records_applies_garbage() {
    found(
        Bug::TornRecordAccepted,
        CrashModel::Strong,
        &["diverged", "not linearizable", "bad recovery"],
    );
}

#[test]
fn torn_records_never_happen_under_the_weak_model() {
    let setup = Setup {
        bug: Bug::TornRecordAccepted,
        crash_model: CrashModel::Weak,
        ..Setup::default()
    };
    assert!(hunt::first_failure(setup, 0..100, 2).is_none());
}
