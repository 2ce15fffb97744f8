//! Linearizable histories made to order, for the randomized tests and the benchmark.
//!
//! A sequential object runs every operation at a drawn linearization point; each operation's
//! invocation comes strictly before its point and its return at or after it, so the recorded
//! history is linearizable by construction whatever the overlaps. Clients run one operation
//! at a time with a think time between, as real clients do. Some operations end with an
//! unknown outcome (taking effect or not, drawn) and some fail (never taking effect).
//!
//! Everything is drawn from one seeded `Rng`, so a seed always makes the same history.

use std::collections::BTreeMap;

use crashtest_check::{History, KvOp, KvOutput, RegisterOp, RegisterOutput};
use crashtest_core::rng::{Ratio, Rng};

/// The shape of a generated workload.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Operations in the history.
    pub(crate) ops: usize,
    /// Clients running at once.
    pub(crate) clients: u64,
    /// Keys (for the map workload).
    pub(crate) keys: u64,
    /// How often a client does not learn the outcome.
    pub(crate) unknown: Ratio,
    /// How often an operation fails without effect.
    pub(crate) failed: Ratio,
}

/// A sequential object and the operations a workload draws for it.
pub(crate) trait Workload: Default {
    /// An operation.
    type Input;
    /// What it returns.
    type Output;
    /// Draws the next operation.
    fn draw(&mut self, rng: &mut Rng, shape: &Shape) -> Self::Input;
    /// Applies an operation to the object and returns its output.
    fn apply(&mut self, input: &Self::Input) -> Self::Output;
}

/// A map of `u64` keys to distinct `u64` values: half gets, the rest puts and some deletes.
#[derive(Default)]
pub(crate) struct KvWorkload {
    map: BTreeMap<u64, u64>,
    next_value: u64,
}

impl Workload for KvWorkload {
    type Input = KvOp<u64, u64>;
    type Output = KvOutput<u64>;

    fn draw(&mut self, rng: &mut Rng, shape: &Shape) -> KvOp<u64, u64> {
        let key = rng.below_inclusive(shape.keys - 1);
        match rng.below_inclusive(9) {
            0..=4 => KvOp::Get(key),
            5..=8 => {
                self.next_value += 1;
                KvOp::Put(key, self.next_value)
            }
            _ => KvOp::Delete(key),
        }
    }

    fn apply(&mut self, op: &KvOp<u64, u64>) -> KvOutput<u64> {
        match op {
            KvOp::Get(key) => KvOutput::Value(self.map.get(key).copied()),
            KvOp::Put(key, value) => {
                self.map.insert(*key, *value);
                KvOutput::Done
            }
            KvOp::Delete(key) => {
                self.map.remove(key);
                KvOutput::Done
            }
            KvOp::CompareAndSet { key, expected, new } => {
                let swapped = self.map.get(key) == expected.as_ref();
                if swapped {
                    match new {
                        Some(value) => self.map.insert(*key, *value),
                        None => self.map.remove(key),
                    };
                }
                KvOutput::Swapped(swapped)
            }
        }
    }
}

/// One `u64` register: half reads, the rest writes of distinct values and some
/// compare-and-sets.
#[derive(Default)]
pub(crate) struct RegisterWorkload {
    value: u64,
    next_value: u64,
}

impl Workload for RegisterWorkload {
    type Input = RegisterOp<u64>;
    type Output = RegisterOutput<u64>;

    fn draw(&mut self, rng: &mut Rng, _: &Shape) -> RegisterOp<u64> {
        self.next_value += 1;
        match rng.below_inclusive(9) {
            0..=4 => RegisterOp::Read,
            5..=7 => RegisterOp::Write(self.next_value),
            // Expect a recent value, so that some swaps succeed.
            _ => RegisterOp::CompareAndSet {
                expected: self.next_value.saturating_sub(rng.below_inclusive(3)),
                new: self.next_value,
            },
        }
    }

    fn apply(&mut self, op: &RegisterOp<u64>) -> RegisterOutput<u64> {
        match op {
            RegisterOp::Read => RegisterOutput::Value(self.value),
            RegisterOp::Write(value) => {
                self.value = *value;
                RegisterOutput::Written
            }
            RegisterOp::CompareAndSet { expected, new } => {
                let swapped = self.value == *expected;
                if swapped {
                    self.value = *new;
                }
                RegisterOutput::Swapped(swapped)
            }
        }
    }
}

/// How an operation ends in the generated history.
enum End<O> {
    Ok(O),
    Unknown,
    Failed,
}

/// When an operation runs.
struct Timing {
    client: u64,
    invoked_ns: u64,
    point_ns: u64,
    returned_ns: u64,
}

/// Draws when each operation runs: the client free earliest goes next, thinks, invokes,
/// reaches the linearization point, and returns.
fn schedule(rng: &mut Rng, shape: &Shape) -> Vec<Timing> {
    assert!(
        shape.clients > 0 && shape.keys > 0,
        "a workload needs clients and keys"
    );
    let mut free_at_ns = vec![0u64; shape.clients as usize];
    (0..shape.ops)
        .map(|_| {
            let client = (0..free_at_ns.len())
                .min_by_key(|&c| free_at_ns[c])
                .expect("a client");
            let invoked_ns = free_at_ns[client] + rng.below_inclusive(50);
            let point_ns = invoked_ns + rng.range_inclusive(1, 100);
            let returned_ns = point_ns + rng.below_inclusive(100);
            free_at_ns[client] = returned_ns;
            Timing {
                client: client as u64,
                invoked_ns,
                point_ns,
                returned_ns,
            }
        })
        .collect()
}

/// A linearizable history of `shape.ops` operations of workload `W`, drawn from `seed`.
pub(crate) fn history<W: Workload>(seed: u64, shape: Shape) -> History<W::Input, W::Output> {
    let mut rng = Rng::seed_from(seed);
    let mut workload = W::default();
    let timings = schedule(&mut rng, &shape);
    let inputs: Vec<W::Input> = timings
        .iter()
        .map(|_| workload.draw(&mut rng, &shape))
        .collect();

    // Run the object in linearization order.
    let mut by_point: Vec<usize> = (0..timings.len()).collect();
    by_point.sort_by_key(|&i| (timings[i].point_ns, i));
    let mut ends: Vec<Option<End<W::Output>>> = timings.iter().map(|_| None).collect();
    for i in by_point {
        ends[i] = Some(if rng.chance(shape.failed) {
            End::Failed
        } else if rng.chance(shape.unknown) {
            if rng.boolean() {
                workload.apply(&inputs[i]);
            }
            End::Unknown
        } else {
            End::Ok(workload.apply(&inputs[i]))
        });
    }

    // Record the events in time order; at equal times returns go first, which the
    // linearization points allow (a point is strictly after its invocation).
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(timings.len() * 2);
    for (i, timing) in timings.iter().enumerate() {
        events.push((timing.invoked_ns, true, i));
        events.push((timing.returned_ns, false, i));
    }
    events.sort_unstable();
    let history = History::new();
    let mut inputs: Vec<Option<W::Input>> = inputs.into_iter().map(Some).collect();
    let mut ids = vec![None; timings.len()];
    for (_, is_invocation, i) in events {
        if is_invocation {
            let input = inputs[i].take().expect("invoked once");
            ids[i] = Some(history.invoke(timings[i].client, input));
        } else {
            let id = ids[i].expect("invoked before returning");
            match ends[i].take().expect("every operation ran once") {
                End::Ok(output) => history.ok(id, output),
                End::Unknown => history.unknown(id),
                End::Failed => history.fail(id),
            }
        }
    }
    history
}
