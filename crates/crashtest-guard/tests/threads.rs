//! Inside a simulation an OS thread cannot start: the run fails with a message that says why
//! and what to do instead.

#![cfg(guards)]
#![allow(
    clippy::disallowed_methods,
    reason = "these tests start OS threads on purpose"
)]

mod common;

use crashtest_core::Sim;

fn assert_fails_naming_the_fix(failure: &crashtest_core::RunFailure) {
    common::assert_refused_with(
        failure,
        &[
            "an OS thread was started inside the simulation",
            "Use crashtest::spawn for concurrent work",
            "configure it without threads, or run it outside the simulation",
        ],
    );
}

#[test]
fn std_thread_spawn_inside_a_simulation_fails_the_run_naming_the_fix() {
    crashtest_guard::install();
    let failure = Sim::new(1)
        .run(async {
            std::thread::spawn(|| ());
        })
        .unwrap_err();
    assert_fails_naming_the_fix(&failure);
    assert_eq!(failure.node.as_deref(), Some("supervisor"));
}

#[test]
fn a_thread_refused_inside_a_simulation_is_an_error_and_never_runs() {
    crashtest_guard::install();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let failure = Sim::new(1)
        .run(async move {
            let spawned = std::thread::Builder::new()
                .spawn(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
            let error = spawned.unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::WouldBlock);
            // Code that carries on after the error still fails the run.
            crashtest_core::time::sleep(std::time::Duration::from_secs(1)).await;
        })
        .unwrap_err();
    assert_fails_naming_the_fix(&failure);
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn a_scoped_thread_in_a_node_fails_the_run() {
    crashtest_guard::install();
    let failure = Sim::new(1)
        .run(async {
            crashtest_core::node::create("pool", || async {
                std::thread::scope(|s| {
                    s.spawn(|| ());
                });
            });
            std::future::pending::<()>().await;
        })
        .unwrap_err();
    assert_fails_naming_the_fix(&failure);
    assert_eq!(failure.node.as_deref(), Some("pool"));
    // The message names where the program started the thread: this test's closure, in
    // this file.
    let message = failure.to_string();
    assert!(
        message.contains("The thread was started from threads::a_scoped_thread_in_a_node")
            && message.contains("tests/threads.rs:"),
        "{message}"
    );
}

#[test]
fn on_fresh_thread_refuses_to_run_inside_a_simulation() {
    let failure = Sim::new(1)
        .run(async {
            crashtest_guard::on_fresh_thread(|| ());
        })
        .unwrap_err();
    assert!(
        failure
            .to_string()
            .contains("call it outside the simulation")
    );
}

#[test]
fn a_thread_starts_after_the_simulation_on_its_thread_ended() {
    crashtest_guard::install();
    assert!(
        Sim::new(1)
            .run(async {
                std::thread::spawn(|| ());
            })
            .is_err()
    );
    assert_eq!(std::thread::spawn(|| 3).join().unwrap(), 3);
}
