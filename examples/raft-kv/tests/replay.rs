//! The store under faults, as one test a user would run. Without `RAFT_BUG` it tests the
//! correct store on the linearizability workload; with it (and `RAFT_CRASH_MODEL`,
//! `RAFT_WORKLOAD`, `RAFT_PATTERNS`) it replays the seed of a planted bug that a failure
//! report names.

use raft_kv::Setup;

#[crashtest::test(
    seeds = 300,
    env = ["RAFT_BUG", "RAFT_CRASH_MODEL", "RAFT_WORKLOAD", "RAFT_PATTERNS", "RAFT_KILLS"]
)]
async fn the_store_the_environment_names_survives_faults() {
    raft_kv::run(Setup::from_env()).await;
}
