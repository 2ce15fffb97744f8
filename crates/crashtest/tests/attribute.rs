//! `#[crashtest::test]` as users write it.

use std::time::Duration;

use crashtest::{Config, node, time};

#[crashtest::test]
async fn a_plain_test_runs_its_body() {
    time::sleep(Duration::from_secs(1)).await;
    assert_eq!(time::Instant::now().as_nanos_since_start(), 1_000_000_000);
}

#[crashtest::test(seeds = 32)]
async fn many_seeds_run_the_body_each_time() {
    let n = node::create("worker", || async {
        time::sleep(Duration::from_millis(
            crashtest::rand::rng().next_u64() % 100,
        ))
        .await;
    });
    time::sleep(Duration::from_secs(1)).await;
    n.kill();
}

#[crashtest::test(seed = 1234)]
async fn a_fixed_seed_is_the_seed_of_the_run() {
    assert_eq!(crashtest_core::rng::seed(), Some(1234));
}

fn short_runs() -> Config {
    Config::default().time_limit(Duration::from_secs(10))
}

#[crashtest::test(config = short_runs)]
#[should_panic(expected = "reproduce with: CRASHTEST_SEED=")]
async fn a_failing_seed_panics_with_the_reproduce_line() {
    time::sleep(Duration::from_secs(60)).await;
}

#[crashtest::test(seeds = 4)]
#[should_panic(expected = "failed: panicked at")]
async fn a_failing_seed_panics_with_what_failed_so_should_panic_can_name_it() {
    panic!("the words should_panic looks for");
}

#[crashtest::test(seeds = 4)]
#[should_panic(expected = "the words should_panic looks for; reproduce with:")]
async fn the_failure_a_panic_names_is_the_programs_own() {
    panic!("the words should_panic looks for");
}

#[crashtest::test(seeds = 64)]
#[should_panic(
    expected = "cargo test -p crashtest --test attribute -- a_rare_bug_is_found_and_named --exact"
)]
async fn a_rare_bug_is_found_and_named() {
    let roll = crashtest::rand::rng().with(|r| r.below_inclusive(19));
    assert_ne!(roll, 0, "one seed in twenty hits the bug");
}
