//! Sweep throughput on one worker and on two: run with
//! `cargo test -p crashtest-cli --test throughput -- --ignored --nocapture` on an idle
//! machine with at least two cores (the issue asks for at least 1.8x).

mod common;

use common::{crashtest, exe, tempdir};

/// Seconds a sweep of the CPU-bound fixture test takes on `jobs` workers.
fn sweep_seconds(jobs: &str) -> f64 {
    let dir = tempdir(&format!("throughput-{jobs}"));
    let out = dir.join("results.jsonl");
    let run = crashtest(&[
        "sweep",
        "many_tasks_compute",
        "--exe",
        &exe(),
        "--seeds",
        "400",
        "--batch",
        "20",
        "-j",
        jobs,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0));
    let text = common::stdout(&run);
    let line = text.lines().find(|l| l.contains("this run")).unwrap();
    println!("{jobs} worker(s): {line}");
    let seconds = line
        .split(" seeds in ")
        .nth(1)
        .unwrap()
        .split('s')
        .next()
        .unwrap();
    seconds.parse().unwrap()
}

#[test]
#[ignore = "a benchmark: needs an idle machine with two cores"]
fn two_workers_sweep_at_least_1_8_times_as_fast_as_one() {
    let one = sweep_seconds("1");
    let two = sweep_seconds("2");
    let speedup = one / two;
    println!("speedup with 2 workers: {speedup:.2}x");
    assert!(speedup >= 1.8, "{speedup:.2}x");
}
