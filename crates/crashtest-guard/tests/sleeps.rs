//! Inside a simulation a blocking sleep fails the run with a message that names the async
//! sleep to use, and returns at once instead of stopping the simulator for real time.
//! Outside a simulation it sleeps (`outside.rs`).

#![cfg(guards)]
#![allow(
    clippy::disallowed_methods,
    reason = "these tests time real sleeps from outside the simulation"
)]

mod common;

use std::time::{Duration, Instant};

use crashtest_core::{RunFailure, Sim};

/// Far longer than a refused sleep may take, so a sleep that went through is plain to see.
const LONG: Duration = Duration::from_secs(30);

/// Runs `body` under seed 1 and returns its failure and the real time the run took.
fn run_failing(body: impl std::future::Future<Output = ()> + 'static) -> (RunFailure, Duration) {
    crashtest_guard::install();
    let start = Instant::now();
    let failure = Sim::new(1).run(body).expect_err("the run must fail");
    (*failure, start.elapsed())
}

fn assert_refused(failure: &RunFailure, call: &str) {
    common::assert_refused_with(
        failure,
        &[
            &format!("{call} was called inside the simulation"),
            "no virtual time passes",
            "tokio::time::sleep(..).await",
            "crashtest::time::sleep(..).await",
        ],
    );
}

#[test]
fn std_thread_sleep_inside_a_simulation_fails_the_run_and_returns_at_once() {
    let (failure, took) = run_failing(async {
        std::thread::sleep(LONG);
    });
    assert_refused(&failure, "nanosleep");
    assert!(took < LONG / 2, "the refused sleep took {took:?}");
}

#[test]
fn a_sleep_in_a_node_names_the_node_and_code_after_it_does_not_hide_the_failure() {
    let (failure, _) = run_failing(async {
        crashtest_core::node::create("backoff", || async {
            std::thread::sleep(Duration::from_millis(10));
            crashtest_core::time::sleep(Duration::from_secs(1)).await;
        });
        std::future::pending::<()>().await;
    });
    assert_refused(&failure, "nanosleep");
    assert_eq!(failure.node.as_deref(), Some("backoff"));
}

#[test]
fn libc_usleep_sleep_and_clock_nanosleep_are_refused_too() {
    let (failure, took) = run_failing(async {
        // SAFETY: no pointers.
        assert_eq!(unsafe { libc::usleep(30_000_000) }, 0);
    });
    assert_refused(&failure, "usleep");
    assert!(took < LONG / 2, "the refused usleep took {took:?}");

    let (failure, _) = run_failing(async {
        // SAFETY: no pointers.
        assert_eq!(unsafe { libc::sleep(30) }, 0);
    });
    assert_refused(&failure, "sleep");

    let (failure, _) = run_failing(async {
        let request = libc::timespec {
            tv_sec: 30,
            tv_nsec: 0,
        };
        // SAFETY: `request` is valid for reads; no remainder is asked for.
        let slept = unsafe {
            libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &request, std::ptr::null_mut())
        };
        assert_eq!(slept, 0);
    });
    assert_refused(&failure, "clock_nanosleep");
}

#[test]
fn the_same_seed_fails_the_same_way() {
    let failures: Vec<String> = (0..2)
        .map(|_| {
            let (failure, _) = run_failing(async {
                crashtest_core::time::sleep(Duration::from_millis(3)).await;
                std::thread::sleep(Duration::from_millis(1));
            });
            failure.to_string()
        })
        .collect();
    assert_eq!(failures[0], failures[1]);
}
