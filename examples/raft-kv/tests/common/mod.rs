//! Shared by the tests that run the correct store under one setup and compare its runs.

use crashtest::{RunSummary, Sim};
use raft_kv::Setup;

/// Runs the correct store's `setup` under `seed` on a fresh thread (so that std's seeds are
/// the run's); panics if it fails.
pub(crate) fn run(seed: u64, setup: Setup) -> RunSummary {
    crashtest::on_fresh_thread(move || Sim::new(seed).run(raft_kv::run(setup)))
        .unwrap_or_else(|failure| panic!("the correct store failed seed {seed}: {failure}"))
}
