//! The engine under crashes and network faults, as one test a user would run. Without
//! `WORKFLOW_BUG` it tests the correct engine; with it (and `WORKFLOW_CRASH_MODEL`) it replays
//! the seed of a planted bug that a failure report names.

use workflow::Setup;

#[crashtest::test(seeds = 500, env = ["WORKFLOW_BUG", "WORKFLOW_CRASH_MODEL"])]
async fn every_step_takes_effect_exactly_once() {
    workflow::run(Setup::from_env()).await;
}
