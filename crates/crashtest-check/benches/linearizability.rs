//! Checker time on linearizable histories of 1k, 10k and 100k operations.
//!
//! The histories come from the test suite's generator (a sequential object run at drawn
//! linearization points, eight clients with overlapping operations, 1% of outcomes unknown and
//! 1% failed), so every figure is the time to *accept* a history, which is the common case.
//! One JSON line per model and size:
//! `{"bench":"linearizability","model":"kv","ops":1000,"clients":8,"seconds":...}`.
//!
//! The map has 100 keys, so it is 100 independent searches; the register is one search over
//! every operation, and stops at 10k: a timed-out write may take effect at any later point, so
//! every dead end of the search retries every pending one, and the work grows with the square
//! of the history (30k operations take minutes). Queues are left out: a queue is one partition
//! whose search grows fast with overlapping enqueues (their order shows only when the first
//! item reaches the front).
//!
//! Run with `cargo bench -p crashtest-check --bench linearizability`.

#[path = "../tests/linearizability/support.rs"]
mod support;

use crashtest_check::{History, KvMap, Model, Register};
use crashtest_core::rng::Ratio;

use support::{KvWorkload, RegisterWorkload, Shape, Workload, history};

/// The seed every history is drawn from.
const SEED: u64 = 0x0062_656e_6368;

fn shape(ops: usize) -> Shape {
    Shape {
        ops,
        clients: 8,
        keys: 100,
        unknown: Ratio::new(1, 100),
        failed: Ratio::new(1, 100),
    }
}

/// Checks one generated history and prints its line.
fn measure<W, M>(name: &str, model: &M, ops: usize)
where
    W: Workload,
    M: Model<Input = W::Input, Output = W::Output>,
{
    let recorded: History<W::Input, W::Output> = history::<W>(SEED, shape(ops));
    #[allow(clippy::disallowed_methods, reason = "a benchmark measures real time")]
    let start = std::time::Instant::now();
    let verdict = recorded.check(model);
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        verdict.is_ok(),
        "a generated history is linearizable: {verdict:?}"
    );
    println!(
        "{{\"bench\":\"linearizability\",\"model\":\"{name}\",\"ops\":{ops},\"clients\":8,\"seconds\":{seconds:.6}}}"
    );
}

fn main() {
    for ops in [1_000, 10_000, 100_000] {
        measure::<KvWorkload, _>("kv", &KvMap::new(), ops);
    }
    for ops in [1_000, 10_000] {
        measure::<RegisterWorkload, _>("register", &Register::new(0), ops);
    }
}
