//! A task that never yields is reported by the watchdog instead of hanging the run, and the
//! test binary's other tests still run and report.
//!
//! The stuck run ends its process, so the test runs it in a child process: this test binary
//! again, asked to run only the ignored `child_` tests.

use std::process::Command;
use std::time::Duration;

use crashtest_core::{Config, Sim, node, plumbing, time};

/// What the test runner does before a test's seeds, and before each seed: fail at once if the
/// test got stuck in an earlier run of the binary, and tell the watchdog how to reproduce.
fn start_as_the_runner_does(test: &str, reproduce: &str) {
    if let Some(stuck) = plumbing::stuck_before(test) {
        panic!("stuck before: {}", stuck.report);
    }
    plumbing::reproduce_with(test, reproduce.into());
}

/// Runs this test binary again, as a plain `cargo test` would, with only the ignored tests
/// `filter` selects: the children whose stuck runs end their process.
fn run_children(filter: &str) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", filter, "--test-threads=1"])
        .env_remove("CRASHTEST_STUCK")
        .env_remove("CRASHTEST_RESULTS")
        .output()
        .expect("the test binary runs again")
}

#[test]
#[ignore = "run in a child process by a_task_that_never_yields_is_reported"]
fn child_never_yields() {
    start_as_the_runner_does(
        "child_never_yields",
        "MY_BUG=spin CRASHTEST_SEED=21 cargo test",
    );
    let config = Config::default().poll_timeout(Duration::from_secs(1));
    let _ = Sim::with_config(21, config).run(async {
        node::create("spinner", || async {
            // A task the program spawned: the report says where.
            crashtest_core::task::spawn_local(async {
                let mut spins = 0u64;
                loop {
                    spins = std::hint::black_box(spins.wrapping_add(1));
                }
            });
            std::future::pending::<()>().await
        });
        time::sleep(Duration::from_secs(1)).await;
    });
}

#[test]
#[ignore = "run in a child process by a_task_that_never_yields_is_reported"]
fn child_passes() {
    assert!(Sim::new(3).run(async {}).is_ok());
}

#[test]
fn a_task_that_never_yields_is_reported() {
    let out = run_children("child_");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "a stuck run fails:\n{stderr}");
    assert!(stderr.contains("seed 21 is stuck"), "{stderr}");
    let place = format!("(spawned at {}:", file!());
    assert!(
        stderr.contains(&place) && stderr.contains("on node spinner (n1)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Reproduce with: MY_BUG=spin CRASHTEST_SEED=21 cargo test"),
        "{stderr}"
    );
    // The run again: the stuck test fails at once with the report, the other one passes,
    // and libtest prints its summary.
    assert!(stdout.contains("test child_passes ... ok"), "{stdout}");
    assert!(
        stdout.contains("test child_never_yields ... FAILED"),
        "{stdout}"
    );
    assert!(
        stdout.contains("stuck before: seed 21 is stuck"),
        "{stdout}"
    );
    assert!(
        stdout.contains("test result: FAILED. 1 passed; 1 failed"),
        "{stdout}"
    );
}

#[test]
#[ignore = "run in a child process by a_task_blocked_on_a_futex_is_reported_as_a_blocking_wait"]
fn blocked_on_a_std_channel_in_a_child() {
    start_as_the_runner_does(
        "blocked_on_a_std_channel_in_a_child",
        "CRASHTEST_SEED=22 cargo test",
    );
    // A limit far above the futex wait's sixth of it, so that the report must come early.
    let config = Config::default().poll_timeout(Duration::from_secs(30));
    let _ = Sim::with_config(22, config).run(async {
        node::create("waiter", || async {
            let (sender, receiver) = std::sync::mpsc::channel::<()>();
            // Blocks the simulation's one thread: no task can ever send.
            let _ = receiver.recv();
            drop(sender);
        });
        time::sleep(Duration::from_secs(1)).await;
    });
}

#[test]
fn a_task_blocked_on_a_futex_is_reported_as_a_blocking_wait() {
    let out = run_children("blocked_on_a_std_channel");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "a stuck run fails:\n{stderr}");
    assert!(
        stderr.contains(
            "seed 22 is stuck: task t1 (main) on node waiter (n1) has waited in the kernel on a futex"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("a `std::sync::mpsc`"), "{stderr}");
    assert!(
        stderr.contains("Reproduce with: CRASHTEST_SEED=22 cargo test"),
        "{stderr}"
    );
    // Reported after a sixth of the 30 s limit (5 s), not the whole of it.
    let waited: f64 = stderr
        .split("on a futex for ")
        .nth(1)
        .and_then(|rest| rest.split("s of wall time").next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("the report says how long: {stderr}"));
    assert!((5.0..10.0).contains(&waited), "reported after {waited} s");
}

#[test]
#[ignore = "run in a child process by a_wait_after_a_refused_call_is_reported_with_the_refusal"]
fn refused_then_blocked_in_a_child() {
    start_as_the_runner_does(
        "refused_then_blocked_in_a_child",
        "CRASHTEST_SEED=23 cargo test",
    );
    let config = Config::default().poll_timeout(Duration::from_secs(30));
    let _ = Sim::with_config(23, config).run(async {
        node::create("pool", || async {
            // A thread pool as sled's: its thread is refused, it ignores the error and waits
            // for the thread's first word, which never comes.
            plumbing::checks::refuse("an OS thread was started inside the simulation".into());
            let (sender, receiver) = std::sync::mpsc::channel::<()>();
            let _ = receiver.recv();
            drop(sender);
        });
        time::sleep(Duration::from_secs(1)).await;
    });
}

#[test]
fn a_wait_after_a_refused_call_is_reported_with_the_refusal() {
    let out = run_children("refused_then_blocked");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "a stuck run fails:\n{stderr}");
    let report = stderr
        .split("crashtest: seed 23 is stuck")
        .nth(1)
        .unwrap_or_else(|| panic!("the stuck report: {stderr}"));
    let cause = report
        .find("refused: an OS thread was started inside the simulation")
        .unwrap_or_else(|| panic!("the report names the refusal: {report}"));
    let advice = report
        .find("Look for `futures::executor::block_on`")
        .unwrap_or_else(|| panic!("the report still gives its advice: {report}"));
    assert!(cause < advice, "the refusal comes first: {report}");
}
