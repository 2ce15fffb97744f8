//! `#[crashtest::test(exhaustive)]`: every crash case of one seed, and the line that runs a
//! failing case alone.

#![allow(
    clippy::disallowed_types,
    reason = "a user's program iterates a HashSet, whose order a case's thread must decide"
)]

use std::collections::HashSet;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crashtest::fs::exhaustive::{Explorer, crash_scope};
use crashtest::{node, time};

/// A node that writes `files` files, each created, written and synced inside a crash scope,
/// in the order a `HashSet` of their names iterates (drawn from the seed, on a fresh thread);
/// with `sync_dir`, the directory too. After a crash it restarts and checks that every file
/// whose write completed is still there: without the directory sync, a new name may be lost.
async fn write_files(files: usize, sync_dir: bool) {
    let written = Arc::new(Mutex::new(Vec::<String>::new()));
    let boots = Arc::new(Mutex::new(0u32));
    let (w, b) = (written.clone(), boots.clone());
    let db = node::create("db", move || {
        let (written, boots) = (w.clone(), b.clone());
        async move {
            let boot = {
                let mut boots = boots.lock().unwrap();
                *boots += 1;
                *boots
            };
            if boot > 1 {
                let synced = written.lock().unwrap().clone();
                for name in synced {
                    assert!(
                        crashtest::fs::metadata(format!("/{name}")).await.is_ok(),
                        "lost {name}, written and synced before the crash"
                    );
                }
                return;
            }
            let names: HashSet<String> = (0..files).map(|i| format!("f{i}")).collect();
            let _scope = crash_scope();
            for name in names {
                let path = format!("/{name}");
                crashtest::fs::write(&path, name.as_bytes()).await.unwrap();
                let file = crashtest::fs::File::open(&path).await.unwrap();
                file.sync_all().await.unwrap();
                if sync_dir {
                    crashtest::fs::sync_dir("/").await.unwrap();
                }
                written.lock().unwrap().push(name);
            }
        }
    });
    time::sleep(Duration::from_secs(1)).await;
    db.restart();
    time::sleep(Duration::from_secs(1)).await;
}

fn without_tears() -> Explorer {
    Explorer::new().tears(false)
}

#[crashtest::test(exhaustive = without_tears)]
async fn a_store_that_syncs_its_directory_passes_every_case() {
    write_files(2, true).await;
}

#[crashtest::test(exhaustive = without_tears)]
#[should_panic(
    expected = "reproduce with: CRASHTEST_CASE=0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1 cargo test -p \
                crashtest --test \
                exhaustive -- a_lost_directory_entry_fails_with_the_line_of_its_case --exact"
)]
async fn a_lost_directory_entry_fails_with_the_line_of_its_case() {
    write_files(6, false).await;
}

#[crashtest::test(exhaustive, seed = 3)]
async fn the_default_explorer_tears_sectors_too() {
    write_files(1, true).await;
}

/// Runs `test` of this binary alone, output shown, with `env` and no other crashtest
/// variable; returns its stdout and stderr (whether the test passed or not).
fn run_alone(test: &str, env: &[(&str, &str)]) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    for (name, _) in std::env::vars() {
        if name.starts_with("CRASHTEST_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    let output = command.output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// The value after `key` in `output`, up to the next space or line end.
fn after<'a>(output: &'a str, key: &str) -> &'a str {
    let start = output
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {output}"))
        + key.len();
    output[start..]
        .split([' ', '\n'])
        .next()
        .expect("split yields one part at least")
}

#[test]
fn the_printed_case_runs_alone_and_fails_the_same_way_with_the_same_fingerprint() {
    let test = "a_lost_directory_entry_fails_with_the_line_of_its_case";
    let explored = run_alone(test, &[]);
    let case = after(&explored, "reproduce: CRASHTEST_CASE=");
    let alone = run_alone(test, &[("CRASHTEST_CASE", case)]);
    assert_eq!(
        after(&alone, "fingerprint "),
        after(&explored, "fingerprint "),
        "explored:\n{explored}\nalone:\n{alone}"
    );
    // The lost name is the one the case's HashSet put last: a case explored after others on
    // one thread would take its hash keys from them, and name another.
    assert_eq!(after(&alone, "lost "), after(&explored, "lost "));
    assert!(alone.contains(&format!("reproduce: CRASHTEST_CASE={case} cargo test")));
}

#[test]
fn a_case_run_alone_writes_its_trace_when_asked() {
    let test = "a_lost_directory_entry_fails_with_the_line_of_its_case";
    let explored = run_alone(test, &[]);
    let case = after(&explored, "reproduce: CRASHTEST_CASE=");
    let path =
        std::env::temp_dir().join(format!("crashtest-exhaustive-{}.trace", std::process::id()));
    let path_text = path.to_str().unwrap();
    run_alone(
        test,
        &[("CRASHTEST_CASE", case), ("CRASHTEST_TRACE", path_text)],
    );
    let trace = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(trace.lines().count() > 10, "{trace}");
    assert!(
        trace.lines().last().unwrap().contains("\"kind\":\"panic\""),
        "the trace ends with the failure: {trace}"
    );
}

#[test]
fn another_seed_from_the_environment_runs_the_cases_under_it_and_says_so() {
    let test = "a_lost_directory_entry_fails_with_the_line_of_its_case";
    let seed_0 = run_alone(test, &[]);
    let seed_7 = run_alone(test, &[("CRASHTEST_SEED", "7")]);
    assert!(seed_7.contains("seed 7 FAILED"), "{seed_7}");
    assert!(
        seed_7.contains("reproduce: CRASHTEST_SEED=7 CRASHTEST_CASE="),
        "{seed_7}"
    );
    assert_ne!(
        after(&seed_7, "fingerprint "),
        after(&seed_0, "fingerprint ")
    );
}

#[test]
fn a_sampled_runs_variable_fails_an_exhaustive_test_with_what_to_do() {
    let test = "a_store_that_syncs_its_directory_passes_every_case";
    let masked = run_alone(test, &[("CRASHTEST_MASK", "1")]);
    assert!(
        masked.contains("CRASHTEST_MASK, which selects one sampled run, means nothing to it"),
        "{masked}"
    );
    // A whole run's seed count is for the binary's seeded tests.
    let counted = run_alone(test, &[("CRASHTEST_SEEDS", "100")]);
    assert!(counted.contains("every case passed"), "{counted}");
}

/// Cases run by this test so far, in this process: state kept between runs, which the
/// simulation does not own.
static CASES_RUN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

#[crashtest::test(exhaustive = without_tears)]
#[should_panic(
    expected = "but run again alone it passed: the test does not do the same thing twice"
)]
async fn a_case_that_fails_only_in_the_exploration_is_reported_as_not_deterministic() {
    let run = CASES_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    write_files(1, true).await;
    assert_ne!(run, 1, "the second case run fails, whichever case it is");
}

fn one_second_runs() -> crashtest::Config {
    crashtest::Config::default().time_limit(Duration::from_secs(1))
}

#[crashtest::test(exhaustive, config = one_second_runs)]
#[should_panic(expected = "exhaustive case 0 failed: time limit: virtual time reached 1s")]
async fn the_bare_attribute_runs_its_cases_under_the_config_given() {
    write_files(1, true).await;
}
