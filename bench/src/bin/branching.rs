//! What branching costs: 64 futures drawn from a point late in a long run.
//!
//! A cluster of nodes exchanging timed work runs `--virtual-secs` of virtual time; the point
//! is at 90% of it. Four measurements per round, in rotating order:
//! - `prefix`: the run cut at the point (the prefix alone),
//! - `whole`: one whole run (prefix and one future),
//! - `forked`: `runner::branch::branch` with 64 sub-seeds, one process at a time,
//! - `replayed`: the 64 futures as 64 fresh runs with a one-point branch path.
//!
//! The ideal cost of 64 futures is `prefix + 64 * (whole - prefix)`. The figures are
//! forked / ideal from the sides' medians (target at most 1.5), the medians over rounds of
//! the per-round ratios forked / ideal (with min and max) and replayed / ideal, and the
//! forked speed-up over replaying.
//!
//! One future is a small difference of two short runs (`whole - prefix`, about a millisecond),
//! which one preemption of a busy machine swamps, and the ideal multiplies it by 64. So in each
//! round every side is timed `--reps` times and counts its fastest: each side is the same
//! deterministic work every time, so its fastest time is the one least disturbed by the rest
//! of the machine, and all four sides are measured alike.
//!
//! Each side is also timed in CPU time (this process's threads and the branch processes it
//! reaped: `CLOCK_PROCESS_CPUTIME_ID` plus `RUSAGE_CHILDREN`), reported beside the wall
//! figures as `cpu_*`. On a busy machine each forked branch also waits for a core before it
//! starts, a wait the other sides, which run on a thread already scheduled, never pay: the
//! CPU figures leave it out, the wall figures keep it.
//!
//! A branch's process costs about 0.4 ms of CPU on top of its future: the fork, and the
//! child's first touch of the few megabytes of simulation state it shares copy-on-write with
//! its parent (faulted in and copied, into caches that do not hold them yet), which a run
//! going on in its own thread has at hand.
//!
//! `cargo run --release -p crashtest-bench --bin branching [-- --rounds N]`

use std::time::Duration;

use clap::Parser;
use crashtest::runner::branch;
use crashtest::{Config, node, time};
use serde::Serialize;

/// Measure branching a run by fork against replaying its prefix.
#[derive(Debug, Parser)]
struct Args {
    /// Rounds (each measures every side once, in rotating order).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Futures drawn from the point.
    #[arg(long, default_value_t = 64)]
    futures: u64,
    /// Virtual length of the run, in seconds. The default, 600 s, makes a long run (about
    /// 20 ms of CPU, more than a whole raft-kv seed) whose futures (60 s each) cost a few
    /// times the fixed cost of starting a branch's process; `--virtual-secs 120` shows that
    /// fixed cost against futures that cost about as much.
    #[arg(long, default_value_t = 600)]
    virtual_secs: u64,
    /// Timings of each side per round; the round counts the fastest.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    reps: u32,
}

#[derive(Debug, Serialize)]
struct Line {
    bench: &'static str,
    rounds: u32,
    reps: u32,
    futures: u64,
    virtual_secs: u64,
    branch_at_secs: f64,
    prefix_median_s: f64,
    whole_median_s: f64,
    forked_median_s: f64,
    replayed_median_s: f64,
    /// forked / (prefix + futures * (whole - prefix)), from the sides' medians.
    forked_over_ideal: f64,
    /// The same ratio per round: median, min, max.
    forked_over_ideal_median: f64,
    forked_over_ideal_min: f64,
    forked_over_ideal_max: f64,
    replayed_over_ideal_median: f64,
    replayed_over_forked_median: f64,
    /// The CPU-time medians of the sides, in seconds.
    cpu_prefix_median_s: f64,
    cpu_whole_median_s: f64,
    cpu_forked_median_s: f64,
    /// forked / ideal in CPU time, per round: median, min, max.
    cpu_forked_over_ideal_median: f64,
    cpu_forked_over_ideal_min: f64,
    cpu_forked_over_ideal_max: f64,
    /// The load average over the last minute when the benchmark ended.
    load_average: f64,
}

/// CPU time so far of this process's threads and of the child processes it reaped.
fn cpu_now() -> f64 {
    crashtest::runner::usage::cpu_time_with_children()
        .expect("the benchmark measures CPU time on Unix")
        .as_secs_f64()
}

/// The load average over the last minute.
fn load_average() -> f64 {
    let mut loads = [0.0f64; 3];
    // SAFETY: `loads` has room for the three averages asked for.
    let got = unsafe { libc::getloadavg(loads.as_mut_ptr(), 3) };
    if got < 1 { f64::NAN } else { loads[0] }
}

/// Nodes doing timed work at random intervals for `secs` of virtual time.
async fn cluster(secs: u64) {
    for i in 0..5 {
        node::create(format!("n{i}"), || async {
            let mut done = 0u64;
            loop {
                let ms = crashtest::rand::rng().with(|r| r.range_inclusive(1, 20));
                time::sleep(Duration::from_millis(ms)).await;
                done = std::hint::black_box(done.wrapping_add(ms));
            }
        });
    }
    time::sleep(Duration::from_secs(secs)).await;
}

/// A measured side: its name and what it runs.
type Side<'a> = (&'static str, Box<dyn Fn() + 'a>);

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args = Args::parse();
    let secs = args.virtual_secs;
    let at_ns = secs * 900_000_000;
    let subs: Vec<u64> = (1..=args.futures).collect();
    let seed = 11;
    let body = move || cluster(secs);
    let prefix_body = move || cluster(at_ns / 1_000_000_000);
    // The fastest of `reps` runs, in wall time and in CPU time.
    let timed = |f: &dyn Fn()| {
        (0..args.reps)
            .map(|_| {
                #[allow(
                    clippy::disallowed_methods,
                    reason = "a benchmark measures wall time, outside any simulation"
                )]
                let start = std::time::Instant::now();
                let cpu = cpu_now();
                f();
                (start.elapsed().as_secs_f64(), cpu_now() - cpu)
            })
            .fold((f64::INFINITY, f64::INFINITY), |(wall, cpu), (w, c)| {
                (wall.min(w), cpu.min(c))
            })
    };
    let sides: [Side<'_>; 4] = [
        (
            "prefix",
            Box::new(|| {
                branch::run_one(seed, Config::default(), &prefix_body);
            }),
        ),
        (
            "whole",
            Box::new(|| {
                branch::run_one(seed, Config::default(), &body);
            }),
        ),
        (
            "forked",
            Box::new(|| {
                let futures = branch::branch(seed, Config::default(), &[], at_ns, &subs, 1, &body);
                assert_eq!(futures.len(), subs.len());
                let failed = futures.iter().filter(|f| f.failure.is_some()).count();
                assert_eq!(failed, 0, "every future runs to its end: {:?}", futures[0]);
                assert!(futures.iter().all(|f| f.elapsed_ns == secs * 1_000_000_000));
            }),
        ),
        (
            "replayed",
            Box::new(|| {
                for &sub in &subs {
                    branch::run_one(
                        seed,
                        branch::with_path(Config::default(), &[(at_ns, sub)]),
                        &body,
                    );
                }
            }),
        ),
    ];
    let mut times = vec![Vec::new(); sides.len()];
    let mut cpu_times = vec![Vec::new(); sides.len()];
    let mut forked_ratio = Vec::new();
    let mut cpu_forked_ratio = Vec::new();
    let mut replayed_ratio = Vec::new();
    let mut replayed_over_forked = Vec::new();
    let ideal = |t: &[f64; 4]| t[0] + args.futures as f64 * (t[1] - t[0]).max(0.0);
    for round in 0..args.rounds as usize {
        let (mut this, mut cpu) = ([0.0; 4], [0.0; 4]);
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            (this[i], cpu[i]) = timed(&*sides[i].1);
            times[i].push(this[i]);
            cpu_times[i].push(cpu[i]);
        }
        forked_ratio.push(this[2] / ideal(&this));
        cpu_forked_ratio.push(cpu[2] / ideal(&cpu));
        replayed_ratio.push(this[3] / ideal(&this));
        replayed_over_forked.push(this[3] / this[2]);
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let line = Line {
        bench: "branching",
        rounds: args.rounds,
        reps: args.reps,
        futures: args.futures,
        virtual_secs: secs,
        branch_at_secs: at_ns as f64 / 1e9,
        prefix_median_s: median(&mut times[0]),
        whole_median_s: median(&mut times[1]),
        forked_over_ideal: median(&mut times[2])
            / (median(&mut times[0])
                + args.futures as f64 * (median(&mut times[1]) - median(&mut times[0])).max(0.0)),
        forked_median_s: median(&mut times[2]),
        replayed_median_s: median(&mut times[3]),
        forked_over_ideal_median: median(&mut forked_ratio.clone()),
        forked_over_ideal_min: min(&forked_ratio),
        forked_over_ideal_max: max(&forked_ratio),
        replayed_over_ideal_median: median(&mut replayed_ratio),
        replayed_over_forked_median: median(&mut replayed_over_forked),
        cpu_prefix_median_s: median(&mut cpu_times[0]),
        cpu_whole_median_s: median(&mut cpu_times[1]),
        cpu_forked_median_s: median(&mut cpu_times[2]),
        cpu_forked_over_ideal_median: median(&mut cpu_forked_ratio.clone()),
        cpu_forked_over_ideal_min: min(&cpu_forked_ratio),
        cpu_forked_over_ideal_max: max(&cpu_forked_ratio),
        load_average: load_average(),
    };
    println!(
        "{}",
        serde_json::to_string(&line).expect("a line serializes")
    );
}
