//! Histories recorded inside a simulation: clients on their own nodes use a store, a nemesis
//! kills and restarts them mid-operation, and the history is checked at the end of the run.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use crashtest_check::{History, KvMap, KvOp, KvOutput, Operation, Outcome};
use crashtest_core::{RunSummary, Sim, node, plumbing, rng, time};

type KvHistory = History<KvOp<u8, u64>, KvOutput<u64>>;

/// A store whose reads go to a replica; with `lag` the replica applies writes that much later.
#[derive(Default)]
struct Store {
    primary: BTreeMap<u8, u64>,
    replica: Rc<RefCell<BTreeMap<u8, u64>>>,
    lag: Option<Duration>,
}

impl Store {
    fn apply(&mut self, op: &KvOp<u8, u64>) -> KvOutput<u64> {
        if let KvOp::Get(key) = op {
            return KvOutput::Value(self.replica.borrow().get(key).copied());
        }
        match op {
            KvOp::Put(key, value) => self.primary.insert(*key, *value),
            KvOp::Delete(key) => self.primary.remove(key),
            KvOp::Get(_) => unreachable!("reads returned above"),
            KvOp::CompareAndSet { .. } => unreachable!("this store's clients do not swap"),
        };
        let snapshot = self.primary.clone();
        let replica = self.replica.clone();
        match self.lag {
            None => *replica.borrow_mut() = snapshot,
            Some(lag) => {
                let due =
                    plumbing::timers::now_ns().expect("in a simulation") + lag.as_nanos() as u64;
                plumbing::timers::call_at(due, move || *replica.borrow_mut() = snapshot);
            }
        }
        KvOutput::Done
    }
}

fn latency() -> Duration {
    Duration::from_micros(rng::node_rng().with(|r| r.range_inclusive(100, 3_000)))
}

/// Three clients run 40 operations each on two keys while a nemesis kills and restarts them.
/// Returns the run's summary or failure report, and the history.
fn run(
    seed: u64,
    lag: Option<Duration>,
    check_inside: bool,
) -> (Result<RunSummary, String>, KvHistory) {
    let history = KvHistory::new();
    let recorded = history.clone();
    let result = Sim::new(seed).run(async move {
        let history = recorded;
        let store = Rc::new(RefCell::new(Store {
            lag,
            ..Store::default()
        }));
        let next_value = Rc::new(RefCell::new(0u64));
        let mut clients = Vec::new();
        for client in 0..3u64 {
            let (history, store, next_value) = (history.clone(), store.clone(), next_value.clone());
            clients.push(node::create(format!("client-{client}"), move || {
                let (history, store, next_value) =
                    (history.clone(), store.clone(), next_value.clone());
                async move {
                    for _ in 0..40 {
                        let key = rng::node_rng().with(|r| r.below_inclusive(1)) as u8;
                        let input = match rng::node_rng().with(|r| r.below_inclusive(3)) {
                            0 | 1 => KvOp::Get(key),
                            2 => {
                                *next_value.borrow_mut() += 1;
                                KvOp::Put(key, *next_value.borrow())
                            }
                            _ => KvOp::Delete(key),
                        };
                        let op = history.invoke(client, input.clone());
                        time::sleep(latency()).await;
                        let output = store.borrow_mut().apply(&input);
                        time::sleep(latency()).await;
                        history.ok(op, output);
                    }
                }
            }));
        }
        for _ in 0..4 {
            time::sleep(latency() * 5).await;
            let victim = &clients[rng::node_rng().with(|r| r.index(clients.len()))];
            victim.kill();
            time::sleep(latency()).await;
            victim.restart();
        }
        time::sleep(Duration::from_secs(10)).await;
        if check_inside {
            history.check(&KvMap::new()).unwrap();
        }
    });
    (result.map_err(|failure| failure.to_string()), history)
}

fn pending(ops: &[Operation<KvOp<u8, u64>, KvOutput<u64>>]) -> usize {
    ops.iter()
        .filter(|op| op.outcome == Outcome::Pending)
        .count()
}

#[test]
fn a_history_recorded_with_crashing_clients_is_linearizable() {
    for seed in 1..=4 {
        let (result, history) = run(seed, None, true);
        result.unwrap();
        let ops = history.operations();
        assert!(
            ops.len() > 120,
            "restarted clients run again: {} operations",
            ops.len()
        );
        assert!(
            pending(&ops) > 0,
            "seed {seed}: a killed client leaves its operation pending"
        );
        assert!(history.check(&KvMap::new()).is_ok());
    }
}

#[test]
fn the_same_seed_records_the_same_history_and_other_seeds_do_not() {
    let (first, first_history) = run(7, None, false);
    let (second, second_history) = run(7, None, false);
    let (other, other_history) = run(8, None, false);
    assert_eq!(first_history.operations(), second_history.operations());
    assert_eq!(first.unwrap().fingerprint, second.unwrap().fingerprint);
    assert_ne!(first_history.operations(), other_history.operations());
    assert!(other.is_ok());
}

#[test]
fn events_carry_the_virtual_time_they_happened_at() {
    let (result, history) = run(3, None, false);
    let elapsed = result.unwrap().elapsed;
    let ops = history.operations();
    let last = ops
        .iter()
        .filter_map(|op| op.completed)
        .map(|c| c.at)
        .max()
        .unwrap();
    assert!(last.as_nanos_since_start() > 0);
    assert!(Duration::from_nanos(last.as_nanos_since_start()) <= elapsed);
    assert!(
        ops.windows(2)
            .all(|pair| pair[0].invoked.at <= pair[1].invoked.at)
    );
}

#[test]
fn a_store_whose_replica_lags_is_caught_and_the_run_fails_with_the_window() {
    let (result, history) = run(1, Some(Duration::from_millis(20)), true);
    let report = history.check(&KvMap::new()).unwrap_err();
    let last = report.window().last().unwrap();
    assert!(
        last.operation.starts_with("Get("),
        "a stale read closes the window: {report}"
    );
    let failure = result.unwrap_err();
    assert!(failure.contains("history is not linearizable"), "{failure}");
}
