//! A run of the store is a function of its seed: the same seed gives the same fingerprint,
//! and other seeds give other runs.

use crashtest::fs::CrashModel;
use crashtest::{Config, Sim, check_determinism};
use raft_kv::{Setup, Workload};

fn fingerprint(seed: u64, setup: Setup) -> u64 {
    Sim::new(seed)
        .run(raft_kv::run(setup))
        .expect("the correct store passes")
        .fingerprint
}

#[test]
fn the_same_seed_gives_the_same_run_and_other_seeds_differ() {
    let setup = Setup::default();
    assert_eq!(fingerprint(7, setup), fingerprint(7, setup));
    assert_ne!(fingerprint(7, setup), fingerprint(8, setup));
}

#[test]
fn the_cycle_workload_under_the_weak_model_replays_event_by_event() {
    let setup = Setup {
        crash_model: CrashModel::Weak,
        workload: Workload::Cycle,
        ..Setup::default()
    };
    let result = check_determinism(3, Config::default(), || raft_kv::run(setup))
        .expect("two runs of seed 3 agree event by event");
    assert!(result.is_ok(), "the correct store passes seed 3");
}

#[crashtest::test(seeds = 50)]
async fn the_correct_store_passes_under_the_weak_crash_model() {
    raft_kv::run(Setup {
        crash_model: CrashModel::Weak,
        ..Setup::default()
    })
    .await;
}
