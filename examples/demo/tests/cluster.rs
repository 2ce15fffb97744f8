//! The demo cluster under many seeds, through `#[crashtest::test]`.

use std::time::Duration;

use crashtest_demo::{Plan, cluster};

#[crashtest::test(seeds = 64)]
async fn every_node_hears_every_other_after_a_crash_and_restart() {
    cluster(Plan {
        nodes: 4,
        duration: Duration::from_secs(30),
    })
    .await;
}
