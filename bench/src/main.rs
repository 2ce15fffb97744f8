//! Benchmarks of the simulator: each workload runs a few times and prints one JSON line with
//! its median wall time and rate.
//!
//! The workloads are the figures users compare simulators by: request/reply round trips,
//! timer events, task spawns, whole simulations per second, and how long an hour of virtual
//! sleeping takes. Run in release: `cargo run --release -p crashtest-bench`.

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
    rate: f64,
    rate_unit: &'static str,
    virtual_s: f64,
    virtual_per_wall: f64,
    peak_rss_mib: Option<f64>,
}

/// The process's peak resident memory, from Linux's `/proc/self/status` (`VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let chosen = if args.workloads.is_empty() {
        workloads::Workload::ALL.to_vec()
    } else {
        args.workloads
    };
    for workload in chosen {
        let mut walls = Vec::new();
        let mut measured = None;
        for _ in 0..args.runs {
            let m = workload.run();
            walls.push(m.wall);
            measured = Some(m);
        }
        walls.sort();
        let median: Duration = walls[walls.len() / 2];
        let m = measured.expect("at least one run");
        let wall_s = median.as_secs_f64();
        let line = Line {
            workload: workload.name(),
            what: m.what,
            runs: args.runs,
            median_wall_s: wall_s,
            rate: m.units as f64 / wall_s,
            rate_unit: m.unit,
            virtual_s: m.virtual_time.as_secs_f64(),
            virtual_per_wall: m.virtual_time.as_secs_f64() / wall_s,
            peak_rss_mib: peak_rss_mib(),
        };
        println!(
            "{}",
            serde_json::to_string(&line).expect("a line serializes")
        );
    }
    ExitCode::SUCCESS
}
