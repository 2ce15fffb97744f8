//! `RAFT_KILLS=silent`: every kill cuts a server's power for the network too, so its peers
//! and clients learn of it only from their own timeouts (or the RST of its restart). The
//! correct store, whose every call has a timeout, survives it; planted bugs still show; and
//! the runs replay exactly.

use std::collections::BTreeSet;

mod common;

use common::run;
use crashtest::{Config, check_determinism};
use raft_kv::{Bug, Setup, hunt};

const SILENT: Setup = Setup {
    bug: Bug::None,
    crash_model: crashtest::fs::CrashModel::Strong,
    workload: raft_kv::Workload::Linearizable,
    patterns: false,
    silent_kills: true,
};

#[test]
fn the_correct_store_survives_silent_kills() {
    for seed in 0..16 {
        run(seed, SILENT);
    }
}

#[test]
fn silent_kills_change_the_runs_and_replay_exactly() {
    let changed = (0..4)
        .filter(|&seed| run(seed, SILENT).fingerprint != run(seed, Setup::default()).fingerprint)
        .count();
    assert!(changed > 0, "silent kills changed no run");
    let replayed = check_determinism(2, Config::default(), || raft_kv::run(SILENT));
    assert!(replayed.expect("no divergence").is_ok());
    let fingerprints: BTreeSet<u64> = (0..4).map(|seed| run(seed, SILENT).fingerprint).collect();
    assert!(fingerprints.len() > 1, "every seed gave one fingerprint");
}

#[test]
fn a_planted_bug_still_shows_with_silent_kills() {
    let setup = Setup {
        bug: Bug::VoteWithoutLogCheck,
        ..SILENT
    };
    let failure = hunt::first_failure(setup, 0..50, 2).expect("found in 50 seeds");
    let message = failure.detail();
    assert!(
        ["lost commit", "diverged", "not linearizable"].contains(&hunt::symptom(&message)),
        "{message}"
    );
}

#[test]
fn the_environment_names_silent_kills() {
    assert!(SILENT.to_string().ends_with(" RAFT_KILLS=silent"));
    assert!(!Setup::default().to_string().contains("RAFT_KILLS"));
}
