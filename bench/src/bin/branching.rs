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
    /// Virtual length of the run, in seconds.
    #[arg(long, default_value_t = 120)]
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
    let timed = |f: &dyn Fn()| {
        (0..args.reps)
            .map(|_| {
                #[allow(
                    clippy::disallowed_methods,
                    reason = "a benchmark measures wall time, outside any simulation"
                )]
                let start = std::time::Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
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
    let mut forked_ratio = Vec::new();
    let mut replayed_ratio = Vec::new();
    let mut replayed_over_forked = Vec::new();
    for round in 0..args.rounds as usize {
        let mut this = [0.0; 4];
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            this[i] = timed(&*sides[i].1);
            times[i].push(this[i]);
        }
        let ideal = this[0] + args.futures as f64 * (this[1] - this[0]).max(0.0);
        forked_ratio.push(this[2] / ideal);
        replayed_ratio.push(this[3] / ideal);
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
    };
    println!(
        "{}",
        serde_json::to_string(&line).expect("a line serializes")
    );
}
