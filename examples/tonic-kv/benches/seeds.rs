//! The simulated deployment of `tests/common`, seed after seed, measured as a sweep runs it:
//! each seed on a fresh thread, the correct store, seeds `0..SEEDS`.
//!
//! Prints one JSON line: the seeds, the wall and process CPU time they took (every thread's,
//! so other work on a shared machine does not count), the virtual time they covered, a digest
//! of their fingerprints in seed order (equal digests before and after a change say every run
//! stayed as it was) and the peak resident memory. `crashtest-bench --workload tonic-kv` in
//! the main workspace runs it and reports it beside the other examples; it lives here because
//! only this workspace's tokio is the stand-in. Every seed must pass: a failure is a bug.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::Setup;

/// Seeds per measurement: about a CPU-second in a release build.
const SEEDS: u64 = 300;

/// CPU time this process has used so far, on every thread, live or finished.
fn process_cpu_time() -> Duration {
    crashtest::runner::usage::process_cpu_time().expect("the benchmark measures CPU time on Unix")
}

fn main() {
    let setup = Setup {
        bug: None,
        ..Setup::default()
    };
    #[allow(
        clippy::disallowed_methods,
        reason = "the benchmark measures real time"
    )]
    let wall_start = std::time::Instant::now();
    let cpu_start = process_cpu_time();
    let (covered, digest) = (0..SEEDS).fold((Duration::ZERO, 0u64), |(covered, digest), seed| {
        let summary =
            crashtest::on_fresh_thread(move || crashtest::Sim::new(seed).run(common::run(setup)))
                .unwrap_or_else(|failure| panic!("tonic-kv seed {seed} failed: {failure}"));
        (
            covered + summary.elapsed,
            digest.rotate_left(7) ^ summary.fingerprint.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        )
    });
    let (cpu, wall) = (process_cpu_time() - cpu_start, wall_start.elapsed());
    let peak = crashtest::runner::usage::peak_rss_mib()
        .map_or("null".to_owned(), |mib| format!("{mib:.1}"));
    println!(
        "{{\"seeds\":{SEEDS},\"wall_s\":{},\"cpu_s\":{},\"virtual_s\":{},\
         \"fingerprints\":\"{digest:016x}\",\"peak_rss_mib\":{peak}}}",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        covered.as_secs_f64(),
    );
}
