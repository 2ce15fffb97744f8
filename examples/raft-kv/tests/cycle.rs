//! FoundationDB's Cycle workload on the store: the correct store keeps the ring whole under
//! faults, and a store that loses acknowledged entries breaks it.

use raft_kv::{Bug, Setup, Workload, hunt};

#[crashtest::test(seeds = 100)]
async fn the_ring_stays_one_cycle_under_faults() {
    raft_kv::run(Setup {
        workload: Workload::Cycle,
        ..Setup::default()
    })
    .await;
}

#[test]
fn losing_acknowledged_entries_is_caught_by_the_cycle_workload() {
    let setup = Setup {
        bug: Bug::AckBeforeFsync,
        workload: Workload::Cycle,
        ..Setup::default()
    };
    let failure = hunt::first_failure(setup, 0..200, 2).expect("found within 200 seeds");
    let message = failure.detail();
    assert!(
        ["diverged", "broken ring", "lost commit"].contains(&hunt::symptom(&message)),
        "{message}"
    );
}
