//! Randomized histories that are linearizable by construction (a sequential object run at
//! drawn points, with invocations and returns spread around them) must always be accepted.
//!
//! Proptest runs from a fixed seed, so every run of the suite checks the same cases.

use std::collections::VecDeque;

use crashtest_check::{KvMap, Queue, QueueOp, QueueOutput, Register};
use crashtest_core::rng::{Ratio, Rng};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

use super::support::{KvWorkload, RegisterWorkload, Shape, Workload, history};

/// A FIFO queue of distinct items: half enqueues, half dequeues.
#[derive(Default)]
struct QueueWorkload {
    items: VecDeque<u64>,
    next_item: u64,
}

impl Workload for QueueWorkload {
    type Input = QueueOp<u64>;
    type Output = QueueOutput<u64>;

    fn draw(&mut self, rng: &mut Rng, _: &Shape) -> QueueOp<u64> {
        if rng.boolean() {
            self.next_item += 1;
            QueueOp::Enqueue(self.next_item)
        } else {
            QueueOp::Dequeue
        }
    }

    fn apply(&mut self, op: &QueueOp<u64>) -> QueueOutput<u64> {
        match op {
            QueueOp::Enqueue(item) => {
                self.items.push_back(*item);
                QueueOutput::Enqueued
            }
            QueueOp::Dequeue => QueueOutput::Dequeued(self.items.pop_front()),
        }
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 64,
        rng_seed: RngSeed::Fixed(0x6c69_6e65),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn shape(max_ops: usize, max_clients: u64, max_unknown: u64) -> impl Strategy<Value = Shape> {
    (
        1..=max_ops,
        1..=max_clients,
        1u64..4,
        0..=max_unknown,
        0u64..3,
    )
        .prop_map(|(ops, clients, keys, unknown, failed)| Shape {
            ops,
            clients,
            keys,
            unknown: Ratio::new(unknown, 16),
            failed: Ratio::new(failed, 16),
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn generated_register_histories_are_accepted(seed in any::<u64>(), shape in shape(150, 5, 3)) {
        let checked = history::<RegisterWorkload>(seed, shape).check(&Register::new(0));
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }

    #[test]
    fn generated_kv_histories_are_accepted(seed in any::<u64>(), shape in shape(150, 5, 3)) {
        let checked = history::<KvWorkload>(seed, shape).check(&KvMap::new());
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }

    // A queue is one partition, and the order of two overlapping enqueues shows only when the
    // first item reaches the front, so the search's work grows fast with overlapping enqueues
    // and with outcomes left unknown: queue histories stay small here.
    #[test]
    fn generated_queue_histories_are_accepted(seed in any::<u64>(), shape in shape(60, 3, 1)) {
        let checked = history::<QueueWorkload>(seed, shape).check(&Queue::new());
        prop_assert!(checked.is_ok(), "{:?}", checked);
    }
}

#[test]
fn a_generated_history_is_the_same_for_the_same_seed() {
    let shape = Shape {
        ops: 200,
        clients: 4,
        keys: 3,
        unknown: Ratio::new(1, 10),
        failed: Ratio::new(1, 10),
    };
    // Outside a simulation the stamps carry real time, so compare everything else.
    let events = |seed| {
        let ops = history::<KvWorkload>(seed, shape).operations();
        let events: Vec<_> = ops
            .into_iter()
            .map(|op| {
                (
                    op.client,
                    op.input,
                    op.outcome,
                    op.invoked.seq,
                    op.completed.map(|c| c.seq),
                )
            })
            .collect();
        events
    };
    assert_eq!(events(5), events(5));
    assert_ne!(events(5), events(6));
}

#[test]
fn a_history_of_thousands_of_operations_checks_in_seconds() {
    let shape = Shape {
        ops: 5_000,
        clients: 8,
        keys: 50,
        unknown: Ratio::new(1, 100),
        failed: Ratio::new(1, 100),
    };
    #[allow(
        clippy::disallowed_methods,
        reason = "measures the checker's real running time"
    )]
    let start = std::time::Instant::now();
    assert!(
        history::<KvWorkload>(11, shape)
            .check(&KvMap::new())
            .is_ok()
    );
    assert!(start.elapsed().as_secs() < 10, "took {:?}", start.elapsed());
}
