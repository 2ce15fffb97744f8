//! The results file as the record of one sweep: locked while a sweep writes it, headed by
//! what the sweep ran, and resumable only by the same sweep.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    STORE, assert_contains, crashtest, crashtest_with, exe, header, outcomes, stderr, stdout,
    tempdir,
};

const SELECTED: &str = "selected::fails_on_odd_seeds_when_selected";

fn sweep_args<'a>(test: &'a str, exe: &'a str, seeds: &'a str, out: &'a Path) -> Vec<&'a str> {
    vec![
        "sweep",
        test,
        "--exe",
        exe,
        "--seeds",
        seeds,
        "-o",
        out.to_str().unwrap(),
    ]
}

#[test]
fn a_second_sweep_on_a_file_in_use_is_refused_and_a_dead_sweeps_lock_is_taken_over() {
    let dir = tempdir("results-lock");
    let out = dir.join("results.jsonl");
    let exe = exe();
    let mut first = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(sweep_args(STORE, &exe, "0..10000000", &out))
        .args(["-j", "1"])
        .env("CARGO_TARGET_DIR", &common::fixture().target_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let note = dir.join("results.jsonl.lock");
    while !note.exists() || std::fs::read_to_string(&note).unwrap().is_empty() {
        assert!(first.try_wait().unwrap().is_none(), "the first sweep ended");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut args = sweep_args(STORE, &exe, "0..10000000", &out);
    args.push("--resume");
    let second = crashtest(&args);
    assert_eq!(second.status.code(), Some(2));
    let refusal = stderr(&second);
    assert_contains(&refusal, "is in use by another sweep");
    assert_contains(&refusal, &format!("process {}", first.id()));
    first.kill().unwrap();
    first.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // The same sweep, resumed for a moment: long enough to run its first seeds.
    let mut args = sweep_args(STORE, &exe, "0..10000000", &out);
    args.extend(["--resume", "--time-budget", "2s"]);
    let taken_over = crashtest(&args);
    assert_contains(&stderr(&taken_over), "taking over");
    assert_eq!(taken_over.status.code(), Some(1), "{}", stderr(&taken_over));
    let mut seeds: Vec<u64> = outcomes(&out)
        .iter()
        .map(|o| o.0)
        .filter(|s| *s < 10)
        .collect();
    seeds.dedup();
    assert_eq!(seeds, (0..10).collect::<Vec<_>>());
    assert!(!note.exists(), "the note goes when the sweep ends");
}

#[test]
fn the_header_says_what_the_sweep_ran_and_a_resume_must_match_it() {
    let dir = tempdir("results-header");
    let out = dir.join("results.jsonl");
    let exe = exe();
    let bug = [("FIXTURE_BUG", "odd"), ("CRASHTEST_COMMIT", "c0ffee")];
    let run = crashtest_with(&sweep_args(SELECTED, &exe, "0..4", &out), &bug);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let head = header(&out);
    assert_eq!(head["test"], SELECTED);
    assert_eq!(head["commit"], "c0ffee");
    assert_eq!(head["env"]["FIXTURE_BUG"], "odd");
    assert_eq!(head["seeds"], "0..4");
    assert_eq!(head["version"], env!("CARGO_PKG_VERSION"));
    let text = stdout(&run);
    assert_contains(
        &text,
        "reproduce the lowest: FIXTURE_BUG=odd CRASHTEST_SEED=1 ",
    );
    assert_contains(
        &text,
        "replay it:   FIXTURE_BUG=odd crashtest replay selected::fails_on_odd_seeds_when_selected 1 --exe ",
    );
    let resume = |env: &[(&str, &str)], seeds: &str, extra: &[&str]| {
        let mut args = sweep_args(SELECTED, &exe, seeds, &out);
        args.push("--resume");
        args.extend(extra);
        crashtest_with(&args, env)
    };
    let unset = resume(&[("CRASHTEST_COMMIT", "c0ffee")], "0..8", &[]);
    assert_eq!(unset.status.code(), Some(2));
    assert_contains(
        &stderr(&unset),
        "environment: FIXTURE_BUG=odd (in the file) vs FIXTURE_BUG unset (now)",
    );
    let moved = resume(
        &[("FIXTURE_BUG", "odd"), ("CRASHTEST_COMMIT", "beef")],
        "0..8",
        &[],
    );
    assert_eq!(moved.status.code(), Some(2));
    assert_contains(
        &stderr(&moved),
        "commit: c0ffee (in the file) vs beef (now)",
    );
    let shard = resume(&bug, "0..8", &["--shard", "2/2"]);
    assert_eq!(shard.status.code(), Some(2));
    assert_contains(&stderr(&shard), "shard: none (in the file) vs 2/2 (now)");
    // More seeds are another sweep's, in a file of their own: the header names the seeds.
    let wider = resume(&bug, "0..8", &[]);
    assert_eq!(wider.status.code(), Some(2));
    assert_contains(&stderr(&wider), "seeds: 0..4 (in the file) vs 0..8 (now)");
    assert_contains(
        &stderr(&wider),
        "sweep them into a file of their own (--seeds 4..8 --out OTHER) and read both files as one with `crashtest merge`",
    );
    let same = resume(&bug, "0..4", &[]);
    assert_eq!(same.status.code(), Some(1), "{}", stderr(&same));
    assert_contains(&stdout(&same), "0 to run, 4 already done");
    let got: Vec<(u64, String)> = outcomes(&out).into_iter().map(|o| (o.0, o.1)).collect();
    let want: Vec<(u64, String)> = (0..4)
        .map(|s| (s, if s % 2 == 1 { "fail" } else { "pass" }.to_owned()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(header(&out)["seeds"], "0..4");
}

#[test]
fn a_file_without_a_header_is_not_resumed_blindly() {
    let dir = tempdir("results-old");
    let out = dir.join("results.jsonl");
    let text = format!("{{\"test\":\"{STORE}\",\"seed\":0,\"status\":\"pass\"}}\n");
    std::fs::write(&out, &text).unwrap();
    let exe = exe();
    let mut args = sweep_args(STORE, &exe, "0..4", &out);
    args.push("--resume");
    let run = crashtest(&args);
    assert_eq!(run.status.code(), Some(2));
    assert_contains(&stderr(&run), "has no header line");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}

#[test]
fn outside_git_the_executable_names_the_code_so_a_changed_build_is_not_resumed() {
    let dir = tempdir("results-no-git");
    let out = dir.join("results.jsonl");
    let copy = dir.join("fixture-test");
    std::fs::copy(exe(), &copy).unwrap();
    let copy_arg = copy.to_str().unwrap().to_owned();
    let no_git = [("GIT_DIR", "/nonexistent"), ("FIXTURE_BUG", "odd")];
    let sweep = |extra: &[&str]| {
        let mut args = sweep_args(SELECTED, &copy_arg, "0..4", &out);
        args.extend(extra);
        crashtest_with(&args, &no_git)
    };
    let first = sweep(&[]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let commit = header(&out)["commit"].as_str().unwrap().to_owned();
    assert!(
        commit.starts_with("unknown commit, executable "),
        "{commit}"
    );
    let same = sweep(&["--resume"]);
    assert_eq!(same.status.code(), Some(1), "{}", stderr(&same));
    // A rebuild after a change: the executable's bytes differ.
    let mut bytes = std::fs::read(&copy).unwrap();
    bytes.extend_from_slice(b"changed");
    std::fs::write(&copy, bytes).unwrap();
    let changed = sweep(&["--resume"]);
    assert_eq!(changed.status.code(), Some(2), "{}", stdout(&changed));
    assert_contains(
        &stderr(&changed),
        &format!("commit: {commit} (in the file) vs unknown commit, executable "),
    );
}

#[test]
fn replace_starts_a_results_file_anew_and_resume_with_it_is_refused() {
    let dir = tempdir("results-replace");
    let out = dir.join("results.jsonl");
    let exe = exe();
    let bug = [("FIXTURE_BUG", "odd"), ("CRASHTEST_COMMIT", "old")];
    let first = crashtest_with(&sweep_args(SELECTED, &exe, "0..4", &out), &bug);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    let again = crashtest_with(&sweep_args(SELECTED, &exe, "0..4", &out), &bug);
    assert_eq!(again.status.code(), Some(2));
    assert_contains(&stderr(&again), "--replace to start it anew");

    let fixed = [("CRASHTEST_COMMIT", "new")];
    let mut args = sweep_args(SELECTED, &exe, "10..12", &out);
    args.push("--replace");
    let replaced = crashtest_with(&args, &fixed);
    assert_eq!(replaced.status.code(), Some(0), "{}", stderr(&replaced));
    assert_eq!(header(&out)["commit"], "new");
    let seeds: Vec<u64> = outcomes(&out).iter().map(|o| o.0).collect();
    assert_eq!(seeds, [10, 11], "only the new sweep's results remain");

    args.push("--resume");
    let both = crashtest_with(&args, &fixed);
    assert_eq!(both.status.code(), Some(2));
    assert_contains(&stderr(&both), "cannot be used with");
}
