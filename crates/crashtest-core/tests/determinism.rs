//! Determinism: same seed, same fingerprint; a leak is caught and located.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crashtest_core::{Config, Sim, check_determinism, node, rng, task, time};

/// A small cluster whose behaviour depends on scheduling, timers and each node's stream.
async fn busy_cluster() {
    for i in 0..4 {
        node::create(format!("n{i}"), || async {
            loop {
                let ms = rng::node_rng().with(|r| r.range_inclusive(1, 50));
                time::sleep(Duration::from_millis(ms)).await;
                task::yield_now().await;
            }
        });
    }
    time::sleep(Duration::from_secs(5)).await;
    node::lookup("n2").unwrap().kill();
    time::sleep(Duration::from_secs(5)).await;
}

#[test]
fn the_same_seed_gives_the_same_fingerprint() {
    for seed in 0..5 {
        let a = Sim::new(seed).run(busy_cluster()).unwrap();
        let b = Sim::new(seed).run(busy_cluster()).unwrap();
        assert_eq!(a, b, "seed {seed}");
    }
}

#[test]
fn different_seeds_give_different_fingerprints() {
    let prints: std::collections::BTreeSet<u64> = (0..20)
        .map(|seed| Sim::new(seed).run(busy_cluster()).unwrap().fingerprint)
        .collect();
    assert_eq!(prints.len(), 20);
}

#[test]
fn poll_cost_changes_the_run_but_stays_deterministic() {
    let config = Config::default().poll_cost(Duration::from_nanos(50), Duration::from_nanos(100));
    let a = Sim::with_config(4, config.clone())
        .run(busy_cluster())
        .unwrap();
    let b = Sim::with_config(4, config).run(busy_cluster()).unwrap();
    let plain = Sim::new(4).run(busy_cluster()).unwrap();
    assert_eq!(a.fingerprint, b.fingerprint);
    assert_ne!(a.fingerprint, plain.fingerprint);
}

/// Spawns and joins many tasks, leaving big buffers behind for the thread's next run.
async fn spawn_crowd() {
    let handles: Vec<_> = (0..50_000u64)
        .map(|i| task::spawn_local(async move { i }))
        .collect();
    for (i, handle) in (0..50_000u64).zip(handles) {
        assert_eq!(handle.await.unwrap(), i);
    }
}

#[test]
fn memory_a_past_run_left_on_the_thread_changes_nothing() {
    let fresh = std::thread::scope(|s| {
        s.spawn(|| Sim::new(7).run(busy_cluster()).unwrap())
            .join()
            .unwrap()
    });
    let after_a_big_run = std::thread::scope(|s| {
        s.spawn(|| {
            Sim::new(1).run(spawn_crowd()).unwrap();
            Sim::new(7).run(busy_cluster()).unwrap()
        })
        .join()
        .unwrap()
    });
    assert_eq!(fresh, after_a_big_run);
}

/// More tasks ready at once than the default scheduling window holds; returns a digest of
/// the order they ran in, and the run's fingerprint.
fn crowd(seed: u64, window: usize) -> (u64, u64) {
    let digest = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let out = digest.clone();
    let config = Config::default().scheduling_window(window);
    let summary = Sim::with_config(seed, config)
        .run(async move {
            let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
            let handles: Vec<_> = (0..1_000u64)
                .map(|i| {
                    let order = order.clone();
                    task::spawn_local(async move {
                        task::yield_now().await;
                        order.borrow_mut().push(i);
                    })
                })
                .collect();
            for handle in handles {
                handle.await.unwrap();
            }
            let digest = order
                .borrow()
                .iter()
                .fold(0u64, |h, &i| h.rotate_left(5) ^ i);
            out.set(digest);
        })
        .unwrap();
    (digest.get(), summary.fingerprint)
}

#[test]
fn every_scheduling_window_is_deterministic_and_only_fifo_ignores_the_seed() {
    for window in [1, 16, 256, usize::MAX] {
        assert_eq!(crowd(7, window), crowd(7, window), "window {window}");
        let (order_7, _) = crowd(7, window);
        let (order_8, _) = crowd(8, window);
        if window == 1 {
            assert_eq!(order_7, order_8, "a window of one is first in, first out");
        } else {
            assert_ne!(order_7, order_8, "window {window}");
        }
    }
    assert_ne!(crowd(7, 16).0, crowd(7, usize::MAX).0);
}

#[test]
fn check_determinism_passes_a_deterministic_run() {
    let summary = check_determinism(3, Config::default(), busy_cluster)
        .unwrap()
        .unwrap();
    assert_eq!(
        summary.fingerprint,
        Sim::new(3).run(busy_cluster()).unwrap().fingerprint
    );
}

/// Global state that survives between runs: the classic determinism leak.
static LEAK: AtomicU64 = AtomicU64::new(0);

async fn leaky() {
    time::sleep(Duration::from_millis(10)).await;
    let runs_before = LEAK.fetch_add(1, Ordering::SeqCst);
    time::sleep(Duration::from_millis(1 + runs_before % 2)).await;
}

#[test]
fn check_determinism_names_the_first_divergent_event() {
    let divergence = check_determinism(8, Config::default(), leaky).unwrap_err();
    assert_eq!(divergence.seed, 8);
    let first = divergence
        .first
        .last()
        .expect("the first run's divergent event");
    let second = divergence
        .second
        .last()
        .expect("the second run's divergent event");
    assert_eq!(first.index, divergence.index);
    assert_eq!(second.index, divergence.index);
    assert_ne!(first, second);
    // The leak repeats at the same point, so the runs that kept their events parted there.
    assert_eq!(divergence.shown_index, Some(divergence.index));
    let report = divergence.to_string();
    assert!(report.contains("nondeterminism"), "{report}");
}

/// A leak that shows once: only the second run of the process differs.
static ONCE: AtomicU64 = AtomicU64::new(0);

async fn leaky_once() {
    time::sleep(Duration::from_millis(10)).await;
    let runs_before = ONCE.fetch_add(1, Ordering::SeqCst);
    time::sleep(Duration::from_millis(if runs_before == 1 { 2 } else { 1 })).await;
}

#[test]
fn a_divergence_that_does_not_recur_says_so_and_still_shows_the_runs() {
    let divergence = check_determinism(8, Config::default(), leaky_once).unwrap_err();
    // The two runs that kept every event were alike: the report says so instead of
    // presenting two equal windows as the difference.
    assert_eq!(divergence.shown_index, None);
    assert_eq!(divergence.first, divergence.second);
    let last = divergence.first.last().expect("the window shows the run");
    assert_eq!(last.index, divergence.index);
    let report = divergence.to_string();
    assert!(report.contains("did not part"), "{report}");
}

/// The fingerprint of one known run. Changing it means every recorded seed and every
/// fingerprint users kept now names a different run: do it only on purpose, and say so.
#[test]
fn a_known_run_keeps_its_fingerprint() {
    let summary = Sim::new(7).run(busy_cluster()).unwrap();
    assert_eq!(
        summary.fingerprint, GOLDEN,
        "got {:#018x}",
        summary.fingerprint
    );
}

const GOLDEN: u64 = 0xac50_b4ed_2c58_aaed;

/// A waker parked in state that outlives a run, as a channel in a `static` holds one.
static PARKED: std::sync::Mutex<Option<std::task::Waker>> = std::sync::Mutex::new(None);

#[test]
fn a_task_of_another_run_woken_from_this_one_fails_it_naming_the_shared_state() {
    Sim::new(1)
        .run(async {
            task::spawn(std::future::poll_fn(|cx| {
                *PARKED.lock().unwrap() = Some(cx.waker().clone());
                std::task::Poll::<()>::Pending
            }));
            time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap();
    let failure = Sim::new(1)
        .run(async {
            let parked = PARKED
                .lock()
                .unwrap()
                .take()
                .expect("the first run parked a waker");
            parked.wake();
            time::sleep(Duration::from_millis(1)).await;
        })
        .expect_err("waking another run's task fails the run");
    let message = failure.to_string();
    assert!(
        message.contains("refused: a task of another simulation was woken from this one")
            && message.contains("`static`"),
        "{message}"
    );
}
