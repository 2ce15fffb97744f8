//! The store under the nemesis's fault patterns (`RAFT_PATTERNS=on`): a second crash while a
//! restarted server recovers its log, a crash in its first sync after a restart, a partition
//! when a server stands for election. The correct store survives them, and each shows in a
//! run's coverage as its probe.

mod common;

use common::run;
use crashtest::RunSummary;
use raft_kv::Setup;

const PATTERNS: Setup = Setup {
    bug: raft_kv::Bug::None,
    crash_model: crashtest::fs::CrashModel::Strong,
    workload: raft_kv::Workload::Linearizable,
    patterns: true,
    silent_kills: false,
};

#[test]
fn the_correct_store_survives_the_fault_patterns_and_each_is_probed() {
    let runs: Vec<RunSummary> = (0..24).map(|seed| run(seed, PATTERNS)).collect();
    for probe in [
        "nemesis: crash during recovery",
        "nemesis: crash during the first sync after a restart",
        "nemesis: partition during an election",
    ] {
        let hits: u64 = runs.iter().map(|summary| summary.reached(probe)).sum();
        assert!(hits > 0, "{probe:?} never struck in 24 seeds");
    }
    let plain = run(0, Setup::default());
    assert_eq!(
        plain.reached("nemesis: crash during recovery"),
        0,
        "without RAFT_PATTERNS the nemesis draws no patterns"
    );
}

#[test]
fn a_seed_with_patterns_replays_exactly_and_differs_from_one_without() {
    assert_eq!(run(3, PATTERNS).fingerprint, run(3, PATTERNS).fingerprint);
    assert_ne!(run(3, PATTERNS).fingerprint, run(4, PATTERNS).fingerprint);
    assert_ne!(
        run(3, PATTERNS).fingerprint,
        run(3, Setup::default()).fingerprint
    );
}

#[test]
fn the_setup_line_names_the_patterns_only_when_on() {
    assert!(PATTERNS.to_string().ends_with(" RAFT_PATTERNS=on"));
    assert!(!Setup::default().to_string().contains("RAFT_PATTERNS"));
}
