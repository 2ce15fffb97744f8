//! A poll that never returns under a plain `cargo test`: the watchdog reports it, and the
//! test binary's other tests still run and report, with libtest's summary.

mod common;

use std::process::{Command, Output};

use common::{assert_contains, fixture, tempdir};

/// Runs the fixture's test binary as `cargo test` would, with libtest arguments `args` and a
/// one-second watchdog, in a fresh directory `dir`.
fn cargo_test(dir: &str, args: &[&str]) -> Output {
    cargo_test_with(dir, args, &[])
}

/// As [`cargo_test`], with crashtest variables `vars` set too.
fn cargo_test_with(dir: &str, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let dir = tempdir(dir);
    let mut command = Command::new(&fixture().exe);
    for (name, _) in std::env::vars() {
        if name.starts_with("CRASHTEST_") {
            command.env_remove(name);
        }
    }
    command
        .envs(vars.iter().copied())
        .args(args)
        .current_dir(&dir)
        .env("CRASHTEST_POLL_TIMEOUT_SECS", "1")
        .env("CRASHTEST_REGRESSIONS", "0")
        .env("CRASHTEST_SAVE_FAILURES", "0")
        .output()
        .expect("the fixture's test binary runs")
}

#[test]
fn a_stuck_test_fails_and_the_binarys_other_tests_still_run_and_report() {
    let run = cargo_test(
        "stuck-filters",
        &["always_passes", "spins_forever", "--test-threads=2"],
    );
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(101), "{out}\n{err}");
    // The watchdog's report, as the user sees it.
    assert_contains(&err, "seed 3 is stuck");
    assert_contains(
        &err,
        "Reproduce with: CRASHTEST_SEED=3 cargo test -p crashtest-cli-fixture --lib -- process::spins_forever_on_some_seeds --exact",
    );
    assert_contains(&err, "this test binary runs again with the same arguments");
    // The run again: every test the filters select reports, and the stuck one fails with the
    // report.
    assert_contains(&out, "test busy::always_passes ... ok");
    assert_contains(&out, "test unstable::always_passes ... ok");
    assert_contains(&out, "test process::spins_forever_on_some_seeds ... FAILED");
    assert_contains(
        &out,
        "`process::spins_forever_on_some_seeds` is not run again: it got stuck",
    );
    assert_contains(
        &out,
        "seed 3 is stuck: task t0 (body) on node supervisor (n0)",
    );
    assert_contains(&out, "test result: FAILED. 2 passed; 1 failed;");
}

#[test]
fn a_stuck_exhaustive_case_fails_its_test_and_the_binarys_other_tests_still_run() {
    let run = cargo_test(
        "stuck-exhaustive",
        &["always_passes", "never_yields", "--test-threads=2"],
    );
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(101), "{out}\n{err}");
    assert_contains(
        &err,
        "Reproduce with: cargo test -p crashtest-cli-fixture --lib -- \
         exhaustive::a_case_that_never_yields --exact",
    );
    assert_contains(&out, "test busy::always_passes ... ok");
    assert_contains(&out, "test exhaustive::a_case_that_never_yields ... FAILED");
    assert_contains(
        &out,
        "`exhaustive::a_case_that_never_yields` is not run again: it got stuck",
    );
    assert_contains(&out, "test result: FAILED. 2 passed; 1 failed;");
}

#[test]
fn the_run_again_keeps_the_users_exact_filters() {
    let run = cargo_test(
        "stuck-exact",
        &[
            "--exact",
            "process::spins_forever_on_some_seeds",
            "busy::always_passes",
        ],
    );
    let out = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(101), "{out}");
    assert_contains(&out, "test busy::always_passes ... ok");
    assert!(!out.contains("unstable::always_passes"), "{out}");
    assert_contains(&out, "test process::spins_forever_on_some_seeds ... FAILED");
    assert_contains(&out, "test result: FAILED. 1 passed; 1 failed;");
}

#[test]
fn a_poll_stuck_in_the_first_seeds_determinism_check_also_fails_only_its_test() {
    // Seed 3 spins; starting there makes it the first seed, which runs twice to check
    // determinism, each run on a thread of its own.
    let run = cargo_test_with(
        "stuck-first-seed",
        &["always_passes", "spins_forever", "--test-threads=2"],
        &[("CRASHTEST_SEED_START", "3")],
    );
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(101), "{out}\n{err}");
    assert_contains(
        &err,
        "Reproduce with: CRASHTEST_SEED=3 cargo test -p crashtest-cli-fixture --lib -- process::spins_forever_on_some_seeds --exact",
    );
    assert_contains(&err, "this test binary runs again with the same arguments");
    assert_contains(&out, "test process::spins_forever_on_some_seeds ... FAILED");
    assert_contains(&out, "test result: FAILED. 2 passed; 1 failed;");
}

#[test]
fn a_stuck_seed_is_saved_to_the_regression_file_as_any_failing_seed() {
    let dir = tempdir("stuck-saved");
    let mut command = Command::new(&fixture().exe);
    for (name, _) in std::env::vars() {
        if name.starts_with("CRASHTEST_") {
            command.env_remove(name);
        }
    }
    let run = command
        .args(["--exact", "process::spins_forever_on_some_seeds"])
        .current_dir(&dir)
        .env("CARGO_MANIFEST_DIR", &*dir)
        .env("CRASHTEST_POLL_TIMEOUT_SECS", "1")
        .env("CRASHTEST_REGRESSIONS", "0")
        .output()
        .expect("the fixture's test binary runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(101), "{err}");
    let saved = std::fs::read_dir(dir.join("crashtest-regressions"))
        .unwrap_or_else(|e| panic!("no regression directory ({e}): {err}"))
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect::<String>();
    assert_contains(
        &saved,
        "seed 3 # seed 3 is stuck: task t0 (body) on node supervisor (n0)",
    );
}
