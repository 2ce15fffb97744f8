//! A task that never yields is reported by the watchdog instead of hanging the run.
//!
//! The stuck run must abort its process, so the test runs it in a child process: this test
//! binary again, asked to run only the ignored `never_yielding_child` test.

use std::process::Command;
use std::time::Duration;

use crashtest_core::{Config, Sim, node, time};

#[test]
#[ignore = "run in a child process by a_task_that_never_yields_is_reported"]
fn never_yielding_child() {
    let config = Config::default().poll_timeout(Duration::from_secs(1));
    crashtest_core::plumbing::reproduce_with("MY_BUG=spin CRASHTEST_SEED=21 cargo test".into());
    let _ = Sim::with_config(21, config).run(async {
        node::create("spinner", || async {
            let mut spins = 0u64;
            loop {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
        });
        time::sleep(Duration::from_secs(1)).await;
    });
}

#[test]
fn a_task_that_never_yields_is_reported() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "never_yielding_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("the test binary runs again");
    assert!(!out.status.success(), "a stuck run must not pass");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("seed 21 is stuck"), "{stderr}");
    assert!(stderr.contains("on node spinner (n1)"), "{stderr}");
    assert!(
        stderr.contains("Reproduce with: MY_BUG=spin CRASHTEST_SEED=21 cargo test"),
        "{stderr}"
    );
}
