//! Benchmarks of the simulator: each workload runs a few times and prints one JSON line with
//! its median wall and CPU time and rate, and its first (cold) run's beside them.
//!
//! The workloads are the figures users compare simulators by: request/reply round trips,
//! timer events, task spawns, whole simulations per second, and how long an hour of virtual
//! sleeping takes; and the whole-cluster tests users live in (the raft-kv, redb-crash,
//! raft-rs-cluster and tonic-kv examples), in seeds per CPU-second. Run in release:
//! `cargo run --release -p crashtest-bench`.
//!
//! The first run of a workload in a process is cold: the thread's simulation buffers, the
//! allocator's pools and the caches are empty, as they are for every seed of a sweep that
//! runs each seed on a fresh thread. Later runs reuse them, so the median is a warm figure.

mod clusters;
/// The comparison suite's shared spec: the same file the madsim and turmoil benchmarks
/// build, so all three do the same work with the same draws.
#[path = "../compare/common/src/spec.rs"]
#[allow(
    unreachable_pub,
    dead_code,
    reason = "the spec is written for the comparison crates, which use all of it publicly"
)]
mod spec;
mod workloads;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use serde::Serialize;

/// Measure the crashtest simulator; prints one JSON line per workload.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Run only these workloads (default: all).
    #[arg(long = "workload", value_enum)]
    workloads: Vec<workloads::Workload>,
    /// Runs of each workload; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
}

/// One workload's result line.
#[derive(Debug, Serialize)]
struct Line {
    workload: &'static str,
    what: &'static str,
    runs: u32,
    median_wall_s: f64,
    /// The process's CPU time (every thread's) of the median-CPU run.
    median_cpu_s: f64,
    /// Units per wall second at the median, or per CPU second for a `/CPU-s` unit.
    rate: f64,
    rate_unit: &'static str,
    /// The first run's wall time: cold, as a sweep's fresh thread is.
    cold_wall_s: f64,
    /// The first run's CPU time.
    cold_cpu_s: f64,
    /// The first run's rate, by the same clock as `rate`.
    cold_rate: f64,
    virtual_s: f64,
    virtual_per_wall: f64,
    peak_rss_mib: Option<f64>,
    /// For a cluster example, a digest of every seed's fingerprint (hex): a change to the
    /// simulator that leaves it equal left every run as it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprints: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let chosen = if args.workloads.is_empty() {
        workloads::Workload::ALL.to_vec()
    } else {
        args.workloads
    };
    for workload in chosen {
        let runs: Vec<_> = (0..args.runs).map(|_| workload.run()).collect();
        let first = &runs[0];
        let median = |clock: fn(&workloads::Measured) -> Duration| {
            let mut times: Vec<Duration> = runs.iter().map(clock).collect();
            times.sort();
            times[times.len() / 2].as_secs_f64()
        };
        let (wall_s, cpu_s) = (median(|m| m.wall), median(|m| m.cpu));
        let (rate_s, cold_s) = if first.per_cpu {
            (cpu_s, first.cpu.as_secs_f64())
        } else {
            (wall_s, first.wall.as_secs_f64())
        };
        let line = Line {
            workload: workload.name(),
            what: first.what,
            runs: args.runs,
            median_wall_s: wall_s,
            median_cpu_s: cpu_s,
            rate: first.units as f64 / rate_s,
            rate_unit: first.unit,
            cold_wall_s: first.wall.as_secs_f64(),
            cold_cpu_s: first.cpu.as_secs_f64(),
            cold_rate: first.units as f64 / cold_s,
            virtual_s: first.virtual_time.as_secs_f64(),
            virtual_per_wall: first.virtual_time.as_secs_f64() / wall_s,
            peak_rss_mib: runs
                .iter()
                .filter_map(|run| run.peak_rss_mib)
                .reduce(f64::max)
                .or_else(crashtest::runner::usage::peak_rss_mib),
            fingerprints: first.fingerprints.map(|digest| format!("{digest:016x}")),
        };
        println!(
            "{}",
            serde_json::to_string(&line).expect("a line serializes")
        );
    }
    ExitCode::SUCCESS
}
