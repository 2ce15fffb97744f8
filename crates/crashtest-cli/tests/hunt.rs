//! `crashtest hunt` on the fixture: a deep failure found by branching, replayed in a fresh
//! process from its reproduce line, and taken by `replay --branch`; a correct test passes.

mod common;

use std::process::Command;

use common::{crashtest, exe, stdout, tempdir};

const DEEP: &str = "deep::six_in_a_row";

#[test]
fn a_hunted_failure_replays_from_its_reproduce_line_in_a_fresh_process() {
    let dir = tempdir("hunt-deep");
    let out = dir.join("hunt.jsonl");
    let args = ["hunt", DEEP, "--exe", &exe(), "--runs", "1500", "-j", "2"];
    let mut with_out = args.to_vec();
    let out_arg = out.display().to_string();
    with_out.extend(["--out", &out_arg]);
    let run = crashtest(&with_out);
    let text = stdout(&run);
    assert_eq!(
        run.status.code(),
        Some(1),
        "a found failure exits 1: {text}"
    );
    assert!(text.contains("FAILED at seed"), "{text}");
    let summary = &common::results(&out)[0];
    // Named as a sweep names it, with the panic's place.
    assert!(
        summary["failure"]
            .as_str()
            .unwrap()
            .starts_with("panicked at "),
        "{summary}"
    );
    let seed = summary["seed"].as_u64().unwrap().to_string();
    let path = summary["branch_path"].as_str().unwrap().to_owned();
    assert!(!path.is_empty(), "found by branching: {summary}");
    let reproduce = summary["reproduce"].as_str().unwrap();
    assert!(
        reproduce.starts_with(&format!("CRASHTEST_SEED={seed} CRASHTEST_EXPLORE={path} ")),
        "{reproduce}"
    );
    assert!(text.contains(&format!("reproduce: {reproduce}")), "{text}");
    assert_eq!(
        summary["replayed_fresh"], true,
        "the tool ran the line in a fresh process and saw the same run: {summary}"
    );
    assert!(!text.contains("warning"), "{text}");

    let results = dir.join("replay.jsonl");
    let replay = Command::new(exe())
        .args([DEEP, "--exact", "--test-threads=1"])
        .env("CRASHTEST_SEED", &seed)
        .env("CRASHTEST_EXPLORE", &path)
        .env("CRASHTEST_RESULTS", &results)
        .output()
        .unwrap();
    assert!(!replay.status.success(), "the replay fails too");
    let line = &common::results(&results)[0];
    assert_eq!(line["status"], "fail");
    assert_eq!(line["fingerprint"], summary["fingerprint"], "the same run");
    assert!(
        line["failure"]
            .as_str()
            .unwrap()
            .contains("6 deep draws in a row"),
        "{line}"
    );

    let shown = crashtest(&["replay", DEEP, &seed, "--branch", &path, "--exe", &exe()]);
    let shown_text = stdout(&shown);
    assert_eq!(shown.status.code(), Some(1), "{shown_text}");
    assert!(shown_text.contains("6 deep draws in a row"), "{shown_text}");
    assert!(
        shown_text.contains(&format!("CRASHTEST_EXPLORE={path}")),
        "{shown_text}"
    );
    let without_cpu = |text: &str| -> String {
        let cut = |line: &str| line.split(" features").next().unwrap_or(line).to_owned();
        text.lines().map(cut).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(
        without_cpu(&stdout(&crashtest(&args))),
        without_cpu(&text),
        "the same search every time"
    );
}

#[test]
fn a_correct_test_passes_the_hunt() {
    let run = crashtest(&[
        "hunt",
        "deep::never_that_deep",
        "--exe",
        &exe(),
        "--runs",
        "60",
    ]);
    let text = stdout(&run);
    assert_eq!(run.status.code(), Some(0), "{text}");
    assert!(text.contains("60 runs"), "{text}");
    assert!(text.contains("no failure found"), "{text}");
}

#[test]
fn a_malformed_branch_path_is_refused_with_what_to_write() {
    let run = crashtest(&["replay", DEEP, "3", "--branch", "9:1,5:2", "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(common::stderr(&run).contains("points in time order"));
}
