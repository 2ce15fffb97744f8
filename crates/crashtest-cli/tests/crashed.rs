//! A seed that takes its process down (abort, segfault, `process::exit`, the watchdog) still
//! leaves its trace up to its death: `replay`, `view` and `minimize` show those events.

mod common;

use common::{assert_contains, crashtest_with, exe, stdout, tempdir};

const DIES: &str = "process::dies_after_many_events";

/// `replay` of seed 3 (an unlucky one) of the dying test, dying by `how`.
fn replay_dying(how: &str) -> String {
    let run = crashtest_with(
        &["replay", DIES, "3", "--exe", &exe()],
        &[("CRASHTEST_FIXTURE_DEATH", how)],
    );
    let text = stdout(&run);
    assert_eq!(run.status.code(), Some(1), "{text}{}", common::stderr(&run));
    text
}

/// The replay shows the kill (a flush point), and the events after it up to the note written
/// just before the death (only the dying process's own handlers can have written those).
fn assert_trace_up_to_the_death(text: &str) {
    assert_contains(text, "CRASHED");
    assert_contains(text, "X KILLED");
    assert_contains(text, "fixture: last words");
    assert_contains(text, "the process crashed after event #");
    let last_event = text
        .lines()
        .rev()
        .find(|l| l.contains("fixture: last words"))
        .unwrap();
    assert!(!last_event.contains('~'), "{last_event}");
}

#[test]
fn an_aborted_seed_replays_up_to_its_abort() {
    assert_trace_up_to_the_death(&replay_dying("abort"));
}

#[test]
fn a_segfaulted_seed_replays_up_to_its_fault() {
    assert_trace_up_to_the_death(&replay_dying("segfault"));
}

#[test]
fn a_seed_that_exits_the_process_replays_up_to_its_exit() {
    assert_trace_up_to_the_death(&replay_dying("exit"));
}

#[test]
fn a_seed_the_watchdog_aborts_replays_up_to_its_stuck_poll() {
    let run = crashtest_with(
        &[
            "replay",
            "spins_forever_on_some_seeds",
            "8",
            "--exe",
            &exe(),
        ],
        &[("CRASHTEST_POLL_TIMEOUT_SECS", "1")],
    );
    let text = stdout(&run);
    assert_contains(&text, "CRASHED");
    assert_contains(&text, "the process crashed after event #");
    assert!(
        !text.contains("wrote no trace"),
        "{text}{}",
        common::stderr(&run)
    );
}

#[test]
fn view_draws_a_crashed_seed_up_to_its_death() {
    let dir = tempdir("view-crashed");
    let out = dir.join("crashed.html");
    let run = crashtest_with(
        &[
            "view",
            DIES,
            "3",
            "--exe",
            &exe(),
            "-o",
            out.to_str().unwrap(),
        ],
        &[("CRASHTEST_FIXTURE_DEATH", "abort")],
    );
    assert!(run.status.success(), "{}", common::stderr(&run));
    let html = std::fs::read_to_string(&out).unwrap();
    assert_contains(&html, "last words");
    assert_contains(&html, "the process crashed after event #");
}

#[test]
fn minimize_shows_a_crashed_seeds_faults_and_last_events() {
    let run = crashtest_with(
        &["minimize", DIES, "3", "--exe", &exe()],
        &[("CRASHTEST_FIXTURE_DEATH", "abort")],
    );
    let text = stdout(&run);
    assert_eq!(run.status.code(), Some(2), "{}", common::stderr(&run));
    assert_contains(&text, "seed 3 crashed its process; its trace shows");
    assert_contains(&text, "fixture: last words");
    assert_contains(&common::stderr(&run), "no results line says which faults");
}
