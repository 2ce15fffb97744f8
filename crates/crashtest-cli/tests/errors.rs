//! Bad input is a clear error (exit code 2) that says what to do, and nothing is lost.

mod common;

use common::{STORE, assert_contains, crashtest, exe, stderr, tempdir};

#[test]
fn an_unknown_test_lists_the_candidates() {
    let run = crashtest(&["sweep", "store::no_such_test", "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(2));
    let text = stderr(&run);
    assert!(
        text.contains("unknown test \"store::no_such_test\""),
        "{text}"
    );
    assert!(text.contains(STORE), "{text}");
}

#[test]
fn an_ambiguous_name_lists_every_match() {
    let run = crashtest(&["replay", "always_passes", "1", "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(2));
    let text = stderr(&run);
    assert!(text.contains("ambiguous test \"always_passes\""), "{text}");
    assert!(text.contains("busy::always_passes") && text.contains("unstable::always_passes"));
}

#[test]
fn an_exhaustive_test_is_refused_with_the_command_that_runs_it() {
    let exe = exe();
    for command in ["sweep", "replay"] {
        let mut args = vec![command, "exhaustive::explores_every_crash_case"];
        if command == "replay" {
            args.push("0");
        }
        args.extend(["--exe", &exe]);
        let run = crashtest(&args);
        assert_eq!(run.status.code(), Some(2));
        let text = stderr(&run);
        assert_contains(&text, "is an exhaustive test");
        assert_contains(&text, "exhaustive::explores_every_crash_case --exact`");
    }
}

#[test]
fn a_bad_seed_range_or_shard_is_explained() {
    for (flag, value, want) in [
        ("--seeds", "9..3", "bad seed range"),
        ("--seeds", "x", "bad seed range"),
        ("--shard", "4/3", "bad shard"),
        ("--time-budget", "soon", "is not a duration"),
    ] {
        let run = crashtest(&["sweep", STORE, "--exe", &exe(), flag, value]);
        assert_eq!(run.status.code(), Some(2));
        assert!(
            stderr(&run).contains(want),
            "{flag} {value}: {}",
            stderr(&run)
        );
    }
}

#[test]
fn a_corrupt_results_file_is_named_and_left_untouched() {
    let dir = tempdir("errors-corrupt");
    let out = dir.join("results.jsonl");
    let text = "{\"test\":\"store::acknowledged_writes_survive_kills\",\"seed\":0,\"status\":\"pass\"}\nnot json\n{\"test\":\"store::acknowledged_writes_survive_kills\",\"seed\":1,\"status\":\"pass\"}\n";
    std::fs::write(&out, text).unwrap();
    let run = crashtest(&[
        "sweep",
        STORE,
        "--exe",
        &exe(),
        "--seeds",
        "4",
        "--resume",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert_contains(&stderr(&run), "corrupt results file");
    assert_contains(&stderr(&run), "line 2 is not a seed result");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}

#[test]
fn an_existing_results_file_is_never_overwritten() {
    let dir = tempdir("errors-exists");
    let out = dir.join("results.jsonl");
    let text =
        "{\"test\":\"store::acknowledged_writes_survive_kills\",\"seed\":0,\"status\":\"pass\"}\n";
    std::fs::write(&out, text).unwrap();
    let run = crashtest(&[
        "sweep",
        STORE,
        "--exe",
        &exe(),
        "--seeds",
        "4",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("pass --resume"), "{}", stderr(&run));
    let other = crashtest(&[
        "sweep",
        "unstable::always_passes",
        "--exe",
        &exe(),
        "--resume",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(other.status.code(), Some(2));
    assert_contains(&stderr(&other), "holds results of test");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}

#[test]
fn a_passing_seed_has_nothing_to_minimize() {
    let run = crashtest(&["minimize", "unstable::always_passes", "3", "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(2));
    assert_contains(&stderr(&run), "passes: there is no failure to minimize");
}

#[test]
fn a_test_that_writes_no_results_is_named_not_counted_as_crashes() {
    let dir = tempdir("errors-plain");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "plain_test_without_seeds",
        "--exe",
        &exe(),
        "--seeds",
        "3",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert_contains(&stderr(&run), "is it a #[crashtest::test]?");
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default(), "");
}
