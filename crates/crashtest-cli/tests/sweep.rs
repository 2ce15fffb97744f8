//! `crashtest sweep` on the fixture's planted bug, crashes and hangs.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    STORE, assert_contains, crashtest, crashtest_with, exe, outcomes, results, stderr, stdout,
    tempdir,
};

#[test]
fn a_sweep_writes_one_line_per_seed_and_finds_the_planted_bug() {
    let dir = tempdir("sweep-store");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        STORE,
        "--exe",
        &exe(),
        "--seeds",
        "0..60",
        "-j",
        "2",
        "-o",
        out.to_str().unwrap(),
        "--check-determinism",
        "4",
    ]);
    let text = stdout(&run);
    assert_eq!(run.status.code(), Some(1), "failures exit 1:\n{text}");
    let seeds: Vec<u64> = outcomes(&out).iter().map(|o| o.0).collect();
    assert_eq!(seeds, (0..60).collect::<Vec<_>>());
    let failed = outcomes(&out).iter().filter(|o| o.1 == "fail").count();
    assert!(failed > 0 && failed < 60, "{failed} of 60 fail");
    assert!(text.contains("acknowledged write"), "{text}");
    assert!(
        text.contains("reproduce the lowest: CRASHTEST_SEED="),
        "{text}"
    );
    assert!(text.contains("coverage over 60 seeds"), "{text}");
    assert!(text.contains("\"nothing was acknowledged\""), "{text}");
    assert!(text.contains("NEVER fired"), "{text}");
    assert!(text.contains("every fingerprint matches"), "{text}");
}

#[test]
fn killing_a_sweep_halfway_and_resuming_gives_the_same_results() {
    let dir = tempdir("sweep-resume");
    let straight = dir.join("straight.jsonl");
    let resumed = dir.join("resumed.jsonl");
    let args = |out: &std::path::Path| {
        vec![
            "sweep".to_owned(),
            STORE.to_owned(),
            "--exe".to_owned(),
            exe(),
            "--seeds".to_owned(),
            "0..240".to_owned(),
            "-j".to_owned(),
            "2".to_owned(),
            "--batch".to_owned(),
            "10".to_owned(),
            "-o".to_owned(),
            out.display().to_string(),
        ]
    };
    let run = crashtest(
        &args(&straight)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(run.status.code(), Some(1));
    let mut child = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(args(&resumed))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let finished = || {
        let text = std::fs::read_to_string(&resumed).unwrap_or_default();
        text.matches('\n').count()
    };
    while finished() < 100 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let halfway = finished();
    assert!(halfway < 240, "killed at {halfway} of 240");
    let mut again = args(&resumed);
    again.push("--resume".to_owned());
    let run = crashtest(&again.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.status.code(), Some(1), "{}", stdout(&run));
    assert!(stdout(&run).contains("already done"));
    assert_eq!(outcomes(&resumed), outcomes(&straight));
}

#[test]
fn a_torn_last_line_is_set_aside_and_its_seed_runs_again() {
    let dir = tempdir("sweep-torn");
    let out = dir.join("results.jsonl");
    let first = crashtest(&[
        "sweep",
        STORE,
        "--exe",
        &exe(),
        "--seeds",
        "0..5",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(first.status.code().is_some());
    // The sweep killed while writing its last line: half of it on disk.
    let text = std::fs::read_to_string(&out).unwrap();
    let last = text.trim_end().rfind('\n').unwrap() + 1;
    let torn = &text[..last + (text.len() - last) / 2];
    std::fs::write(&out, torn).unwrap();
    let run = crashtest(&[
        "sweep",
        STORE,
        "--exe",
        &exe(),
        "--seeds",
        "0..5",
        "-o",
        out.to_str().unwrap(),
        "--resume",
    ]);
    assert_contains(&common::stderr(&run), "was cut short");
    assert_contains(&stdout(&run), "1 to run, 4 already done");
    let aside = std::fs::read_to_string(dir.join("results.jsonl.corrupt")).unwrap();
    assert_eq!(aside, format!("{}\n", &torn[last..]));
    let seeds: Vec<u64> = outcomes(&out).iter().map(|o| o.0).collect();
    assert_eq!(seeds, (0..5).collect::<Vec<_>>());
}

#[test]
fn a_crashing_worker_loses_no_result_and_its_seed_is_reported() {
    let dir = tempdir("sweep-crash");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "aborts_on_some_seeds",
        "--exe",
        &exe(),
        "--seeds",
        "0..30",
        "-j",
        "2",
        "--batch",
        "15",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    let lines = results(&out);
    assert_eq!(lines.len(), 30, "every seed has a result");
    let crashed: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["status"] == "crashed").collect();
    let mut crashed_seeds: Vec<u64> = crashed
        .iter()
        .map(|l| l["seed"].as_u64().unwrap())
        .collect();
    crashed_seeds.sort();
    assert_eq!(
        crashed_seeds,
        [3, 8, 13, 18, 23, 28],
        "the seeds that abort"
    );
    for line in &crashed {
        let failure = line["failure"].as_str().unwrap();
        assert!(
            failure.contains("fixture: aborting the process"),
            "{failure}"
        );
        assert!(failure.contains("worker process exited"), "{failure}");
    }
    let passed = lines.iter().filter(|l| l["status"] == "pass").count();
    assert_eq!(passed + crashed.len(), 30);
}

#[test]
fn a_test_that_exits_the_process_is_recorded_as_crashed_and_the_sweep_goes_on() {
    let dir = tempdir("sweep-exit");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "exits_on_some_seeds",
        "--exe",
        &exe(),
        "--seeds",
        "0..20",
        "-j",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    let text = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{text}");
    assert!(!text.contains("wrote no result"), "{text}");
    let crashed: Vec<u64> = outcomes(&out)
        .into_iter()
        .filter(|o| o.1 == "crashed")
        .map(|o| o.0)
        .collect();
    assert_eq!(crashed, [3, 8, 13, 18]);
    assert_eq!(outcomes(&out).len(), 20, "every seed is recorded");
    let line = results(&out).into_iter().find(|l| l["seed"] == 3).unwrap();
    assert_contains(line["failure"].as_str().unwrap(), "std::process::exit");
}

#[test]
fn a_stuck_poll_is_aborted_by_the_watchdog_and_reported() {
    let dir = tempdir("sweep-watchdog");
    let out = dir.join("results.jsonl");
    let run = crashtest_with(
        &[
            "sweep",
            "spins_forever_on_some_seeds",
            "--exe",
            &exe(),
            "--seeds",
            "6..10",
            "-o",
            out.to_str().unwrap(),
        ],
        &[("CRASHTEST_POLL_TIMEOUT_SECS", "1")],
    );
    assert_eq!(run.status.code(), Some(1));
    let lines = results(&out);
    assert_eq!(lines.len(), 4);
    let stuck = lines.iter().find(|l| l["seed"] == 8).unwrap();
    assert_eq!(stuck["status"], "crashed");
    let failure = stuck["failure"].as_str().unwrap();
    assert_contains(failure, "seed 8 is stuck");
    assert_contains(failure, "on node supervisor (n0)");
    assert_contains(
        failure,
        "Reproduce with: CRASHTEST_SEED=8 cargo test -p crashtest-cli-fixture --lib -- process::spins_forever_on_some_seeds --exact",
    );
}

#[test]
fn a_silent_worker_is_killed_and_its_seed_reported_hung_with_its_timeout() {
    let dir = tempdir("sweep-hang");
    let out = dir.join("results.jsonl");
    let exe = exe();
    let sweep = |timeout: &str, extra: &[&str]| {
        let mut args = vec![
            "sweep",
            "spins_forever_on_some_seeds",
            "--exe",
            &exe,
            "--seeds",
            "7..10",
            "--seed-timeout",
            timeout,
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        crashtest(&args)
    };
    let run = sweep("2s", &[]);
    assert_eq!(run.status.code(), Some(1));
    let got: Vec<(u64, String)> = outcomes(&out).into_iter().map(|o| (o.0, o.1)).collect();
    let want = [
        (7, "pass".to_owned()),
        (8, "hung".to_owned()),
        (9, "pass".to_owned()),
    ];
    assert_eq!(got, want);
    let said = "no result within --seed-timeout 2s: the worker finished no seed in that wall time and was killed";
    assert_contains(&stdout(&run), &format!("seed 8        hung      {said}"));
    let hung = |out: &std::path::Path| {
        results(out)
            .into_iter()
            .find(|r| r["status"] == "hung")
            .unwrap()
    };
    let line = hung(&out);
    assert_eq!(line["seed_timeout_ns"], 2_000_000_000u64);
    let failure = line["failure"].as_str().unwrap();
    assert!(failure.starts_with(said), "{failure}");
    assert_contains(failure, "its output ended with:\nrunning 1 test\n");
    assert!(failure.ends_with("fixture: spinning forever"), "{failure}");

    // Resumed with more time, the hung seed runs again; with as much, it is done.
    let longer = sweep("3s", &["--resume"]);
    assert_eq!(longer.status.code(), Some(1));
    assert_contains(
        &stderr(&longer),
        "running again 1 seed that hung under a --seed-timeout shorter than this one (3s)",
    );
    assert_contains(&stdout(&longer), "1 to run, 2 already done");
    assert_eq!(outcomes(&out).len(), 3, "one line per seed");
    assert_eq!(hung(&out)["seed_timeout_ns"], 3_000_000_000u64);
    let same = sweep("3s", &["--resume"]);
    assert_contains(&stdout(&same), "0 to run, 3 already done");
    assert!(
        !stderr(&same).contains("running again"),
        "{}",
        stderr(&same)
    );
}

#[test]
fn a_seed_timeout_too_short_for_a_worker_to_start_is_refused() {
    for timeout in ["0s", "3ms"] {
        let run = crashtest(&["sweep", STORE, "--exe", &exe(), "--seed-timeout", timeout]);
        assert_eq!(run.status.code(), Some(2), "{timeout}");
        assert_contains(&stderr(&run), "is too short");
        assert_contains(&stderr(&run), "give at least 1s");
    }
}

#[test]
fn stop_on_failure_stops_at_the_first_failing_seed() {
    let dir = tempdir("sweep-stop");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        STORE,
        "--exe",
        &exe(),
        "--seeds",
        "0..300",
        "-j",
        "1",
        "--batch",
        "1",
        "--stop-on-failure",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    let got = outcomes(&out);
    assert!(got.len() < 300);
    assert_eq!(got.iter().filter(|o| o.1 != "pass").count(), 1, "{got:?}");
    assert_contains(&stdout(&run), "stopped (--stop-on-failure)");
}

#[test]
fn shards_split_a_range_without_gaps_or_overlaps() {
    let dir = tempdir("sweep-shards");
    let mut seen = BTreeSet::new();
    let mut total = 0;
    for k in 1..=3 {
        let out = dir.join(format!("shard-{k}.jsonl"));
        let shard = format!("{k}/3");
        let run = crashtest(&[
            "sweep",
            "unstable::always_passes",
            "--exe",
            &exe(),
            "--seeds",
            "100..131",
            "--shard",
            &shard,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
        for outcome in outcomes(&out) {
            seen.insert(outcome.0);
            total += 1;
        }
    }
    assert_eq!(total, 31);
    assert_eq!(seen, (100..131).collect());
}

#[test]
fn check_determinism_catches_a_test_that_differs_between_processes() {
    let dir = tempdir("sweep-determinism");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "sleeps_by_a_process_random_amount",
        "--exe",
        &exe(),
        "--seeds",
        "4",
        "--check-determinism",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert_contains(&stdout(&run), "NONDETERMINISTIC seed");
}

#[test]
fn a_time_budget_stops_the_sweep_resumably() {
    let dir = tempdir("sweep-budget");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "many_tasks_compute",
        "--exe",
        &exe(),
        "--seeds",
        "100000",
        "--batch",
        "5",
        "--time-budget",
        "1s",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    assert_contains(&stdout(&run), "stopped (time budget spent)");
    assert!(stdout(&run).contains("--resume"));
    let done = results(&out).len();
    assert!(done > 0 && done < 100000, "{done}");
}

#[test]
fn the_coverage_summary_leaves_out_other_tests_sites() {
    let dir = tempdir("sweep-coverage");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "unstable::always_passes",
        "--exe",
        &exe(),
        "--seeds",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0));
    let text = stdout(&run);
    assert!(!text.contains("nothing was acknowledged"), "{text}");
    assert!(!text.contains("NEVER fired"), "{text}");
}

#[test]
fn a_sweep_runs_the_last_seeds_of_u64() {
    let dir = tempdir("sweep-top");
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "unstable::always_passes",
        "--exe",
        &exe(),
        "--seeds",
        "18446744073709551613..=18446744073709551615",
        "--shard",
        "2/2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let seeds: Vec<u64> = outcomes(&out).iter().map(|o| o.0).collect();
    assert_eq!(seeds, [u64::MAX - 1, u64::MAX]);
}

#[test]
fn save_failures_appends_each_failing_seed_to_the_tests_regression_file() {
    let dir = tempdir("sweep-save-failures");
    let out = dir.join("results.jsonl");
    // With --exe the tool knows no package, so the workers' files go to the working
    // directory (cargo sets CARGO_MANIFEST_DIR for this test; the tool must not see it).
    let run = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .current_dir(&dir)
        .env_remove("CARGO_MANIFEST_DIR")
        .env("CARGO_TARGET_DIR", &common::fixture().target_dir)
        .args([
            "sweep",
            common::STORE,
            "--exe",
            &exe(),
            "--seeds",
            "0..12",
            "--save-failures",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", common::stderr(&run));
    let failed: BTreeSet<u64> = outcomes(&out)
        .into_iter()
        .filter(|o| o.1 == "fail")
        .map(|o| o.0)
        .collect();
    assert!(
        !failed.is_empty(),
        "the planted bug fails some of seeds 0..12"
    );
    let files: Vec<_> = std::fs::read_dir(dir.join("crashtest-regressions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one file for the one test: {files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with("store.acknowledged_writes_survive_kills.txt"),
        "{name}"
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let saved: BTreeSet<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("seed "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(saved, failed, "{text}");
}

/// The processes whose environment mentions `marker` (Linux's /proc), other than this one.
#[cfg(target_os = "linux")]
fn processes_mentioning(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| String::from_utf8_lossy(&env).contains(marker))
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn a_sweep_killed_outright_takes_its_workers_with_it() {
    let dir = tempdir("sweep-sigkill");
    let out = dir.join("results.jsonl");
    let marker = out.display().to_string();
    let mut sweep = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args([
            "sweep",
            "spins_forever_on_some_seeds",
            "--exe",
            &exe(),
            "--seeds",
            "8..9",
            "--seed-timeout",
            "600s",
            "-o",
            &marker,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sweep_pid = sweep.id();
    let workers = loop {
        assert!(
            sweep.try_wait().unwrap().is_none(),
            "the sweep ended before its worker started"
        );
        let workers: Vec<u32> = processes_mentioning(&marker)
            .into_iter()
            .filter(|&pid| pid != sweep_pid)
            .collect();
        if !workers.is_empty() {
            break workers;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    sweep.kill().unwrap();
    sweep.wait().unwrap();
    // Gone, or a zombie waiting for a parent that no longer exists to reap it.
    let gone = |pid: &u32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.contains(") Z "),
        Err(_) => true,
    };
    // The kernel delivers the signal at once; the bound only keeps a regression from hanging.
    for _ in 0..300 {
        if workers.iter().all(gone) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("workers {workers:?} outlived their killed sweep");
}
