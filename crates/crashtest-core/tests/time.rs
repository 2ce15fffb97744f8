//! Virtual time: sleeps, timeouts, intervals and the nodes' wall clocks.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use crashtest_core::time::{self, Instant};
use crashtest_core::{Sim, node, task};

#[test]
fn a_minute_of_sleeps_by_a_thousand_tasks_ends_at_one_minute() {
    let summary = Sim::new(3)
        .run(async {
            let handles: Vec<_> = (0..1000u64)
                .map(|i| {
                    task::spawn_local(async move {
                        let period = Duration::from_millis(1 + (i * 7919) % 1000);
                        let end = Instant::now() + Duration::from_secs(60);
                        while Instant::now() + period <= end {
                            time::sleep(period).await;
                        }
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        })
        .unwrap();
    assert!(summary.elapsed <= Duration::from_secs(60));
    assert!(summary.elapsed > Duration::from_secs(59));
}

#[test]
fn sleeps_wake_in_deadline_order() {
    let order = Rc::new(RefCell::new(Vec::new()));
    let seen = order.clone();
    Sim::new(9)
        .run(async move {
            let handles: Vec<_> = [30u64, 10, 20]
                .into_iter()
                .map(|ms| {
                    let seen = seen.clone();
                    task::spawn_local(async move {
                        time::sleep(Duration::from_millis(ms)).await;
                        seen.borrow_mut().push(ms);
                    })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        })
        .unwrap();
    assert_eq!(*order.borrow(), [10, 20, 30]);
}

#[test]
fn a_cancelled_sleep_does_not_keep_the_run_alive() {
    // If the lost branch's timer stayed armed, the run would jump to it (a day later).
    let summary = Sim::new(1)
        .run(async {
            tokio::select! {
                biased;
                _ = time::sleep(Duration::from_secs(1)) => {}
                _ = time::sleep(Duration::from_secs(86_000)) => unreachable!(),
            }
        })
        .unwrap();
    assert_eq!(summary.elapsed, Duration::from_secs(1));
}

#[test]
fn timeout_elapses_or_passes_the_output_through() {
    Sim::new(1)
        .run(async {
            let slow = time::timeout(Duration::from_secs(1), time::sleep(Duration::from_secs(2)));
            assert!(slow.await.is_err());
            assert_eq!(Instant::now().as_nanos_since_start(), 1_000_000_000);
            let quick = time::timeout(Duration::from_secs(1), async { "ok" });
            assert_eq!(quick.await, Ok("ok"));
        })
        .unwrap();
}

#[test]
fn node_wall_clocks_follow_offset_and_drift() {
    Sim::new(1)
        .run(async {
            let sample = Rc::new(RefCell::new(Vec::new()));
            let fast = {
                let sample = sample.clone();
                node::Builder::new("fast")
                    .clock_drift_ppm(1000)
                    .clock_offset_ns(5_000_000_000)
                    .build(move || {
                        let sample = sample.clone();
                        async move {
                            loop {
                                sample.borrow_mut().push(time::system_time());
                                time::sleep(Duration::from_secs(100)).await;
                            }
                        }
                    })
            };
            let supervisor_start = time::system_time();
            time::sleep(Duration::from_secs(150)).await;
            let samples = sample.borrow().clone();
            let ahead = samples[0].duration_since(supervisor_start).unwrap();
            assert_eq!(ahead, Duration::from_secs(5));
            // 100 s of true time is 100.1 s on a clock drifting 1000 ppm fast.
            let step = samples[1].duration_since(samples[0]).unwrap();
            assert_eq!(step, Duration::from_millis(100_100));
            fast.set_clock_offset_ns(-10_000_000_000);
            time::sleep(Duration::from_secs(100)).await;
            let after_jump = sample.borrow()[2];
            // Another 100.1 s of drifting time, minus the 15 s jump from +5 s to -10 s.
            assert_eq!(
                after_jump,
                samples[1] + Duration::from_millis(100_100) - Duration::from_secs(15)
            );
            assert!(
                supervisor_start
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    > 1_767_225_600 - 1
            );
        })
        .unwrap();
}

#[test]
fn the_epoch_is_drawn_from_the_seed() {
    let epoch = |seed| {
        let out = Rc::new(RefCell::new(None));
        let slot = out.clone();
        Sim::new(seed)
            .run(async move { *slot.borrow_mut() = Some(time::system_time()) })
            .unwrap();
        out.take().unwrap()
    };
    assert_eq!(epoch(1), epoch(1));
    assert_ne!(epoch(1), epoch(2));
}

#[test]
fn a_drift_change_skews_the_clock_without_a_jump() {
    Sim::new(1)
        .run(async {
            let node = node::create("skewed", std::future::pending);
            let read = || {
                let id = node.id();
                let sample = Rc::new(RefCell::new(None));
                let slot = sample.clone();
                crashtest_core::plumbing::life::spawn_on(id, "read", async move {
                    *slot.borrow_mut() = Some(time::system_time());
                });
                sample
            };
            let first = read();
            time::sleep(Duration::from_secs(100)).await;
            node.set_clock_drift_ppm(10_000);
            let second = read();
            time::sleep(Duration::from_secs(100)).await;
            let third = read();
            time::sleep(Duration::from_millis(1)).await;
            let at = |s: &Rc<RefCell<Option<std::time::SystemTime>>>| s.borrow().unwrap();
            // No drift for the first 100 s; 1% fast for the next 100 s (+1 s), no jump.
            assert_eq!(
                at(&second).duration_since(at(&first)).unwrap(),
                Duration::from_secs(100)
            );
            assert_eq!(
                at(&third).duration_since(at(&second)).unwrap(),
                Duration::from_secs(101)
            );
        })
        .unwrap();
}

#[test]
fn outside_a_simulation_sleeps_run_on_tokio_and_can_be_reset() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let start = Instant::now();
        time::sleep(Duration::from_millis(5)).await;
        assert!(Instant::now() >= start + Duration::from_millis(5));
        let mut long = std::pin::pin!(time::sleep(Duration::from_secs(3600)));
        let soon = Instant::now() + Duration::from_millis(5);
        long.as_mut().reset(soon);
        assert_eq!(long.deadline(), soon);
        long.await;
        assert!(Instant::now() >= soon);
        time::sleep_until(Instant::now() + Duration::from_millis(1)).await;
    });
}

/// What the function timers of the tests below saw, in firing order.
mod function_timers {
    use std::cell::RefCell;

    thread_local! {
        pub(crate) static FIRED: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
    }

    /// A function timer: records its word with the virtual time it ran at.
    pub(crate) fn record(word: u64) {
        let now = crashtest_core::plumbing::timers::now_ns().expect("inside a simulation");
        FIRED.with(|fired| fired.borrow_mut().push((now, word)));
        crashtest_core::plumbing::notes::record("test.timer", [word, now, 0], String::new());
    }

    pub(crate) fn take() -> Vec<(u64, u64)> {
        FIRED.with(|fired| fired.take())
    }
}

#[test]
fn function_timers_run_at_their_deadline_with_their_word_in_arming_order_among_closures() {
    use crashtest_core::plumbing::timers;
    let closures = Rc::new(RefCell::new(Vec::new()));
    let seen = closures.clone();
    Sim::new(4)
        .run(async move {
            timers::call_function_at(2_000, function_timers::record, 1);
            let order = seen.clone();
            timers::call_at(1_000, move || order.borrow_mut().push(("closure", 2)));
            timers::call_function_at(1_000, function_timers::record, 3);
            let order = seen.clone();
            timers::call_at(1_000, move || order.borrow_mut().push(("closure", 4)));
            let cancelled = timers::call_function_at(1_500, function_timers::record, 5);
            timers::cancel(cancelled);
            time::sleep(Duration::from_micros(3)).await;
        })
        .unwrap();
    // Words 3 and 1 ran at their deadlines; 5 was cancelled.
    assert_eq!(function_timers::take(), [(1_000, 3), (2_000, 1)]);
    assert_eq!(*closures.borrow(), [("closure", 2), ("closure", 4)]);
}

#[test]
fn a_function_timer_armed_in_the_past_runs_now() {
    Sim::new(4)
        .run(async {
            time::sleep(Duration::from_micros(5)).await;
            crashtest_core::plumbing::timers::call_function_at(0, function_timers::record, 9);
            time::sleep(Duration::from_nanos(1)).await;
        })
        .unwrap();
    assert_eq!(function_timers::take(), [(5_000, 9)]);
}

#[test]
fn a_panicking_function_timer_fails_the_run_with_its_message() {
    fn boom(word: u64) {
        panic!("function timer {word} went off");
    }
    let failure = Sim::new(4)
        .run(async {
            crashtest_core::plumbing::timers::call_function_at(1_000, boom, 7);
            time::sleep(Duration::from_micros(2)).await;
        })
        .unwrap_err();
    assert!(
        failure.to_string().contains("function timer 7 went off"),
        "{failure}"
    );
}

#[test]
fn function_timers_at_drawn_deadlines_give_the_same_fingerprint_for_a_seed() {
    use crashtest_core::plumbing::timers;
    let run = |seed| {
        let summary = Sim::new(seed)
            .run(async {
                let mut rng = crashtest_core::rng::node_rng();
                for word in 0..50 {
                    let at = rng.next_u64() % 1_000_000;
                    timers::call_function_at(at, function_timers::record, word);
                }
                time::sleep(Duration::from_millis(2)).await;
            })
            .unwrap();
        (summary.fingerprint, function_timers::take())
    };
    let (first, fired) = run(11);
    assert_eq!(fired.len(), 50);
    assert!(fired.is_sorted_by_key(|&(at, _)| at), "fired out of order");
    assert_eq!(run(11), (first, fired.clone()));
    let (other, other_fired) = run(12);
    assert_ne!(other, first);
    assert_ne!(other_fired, fired);
}

#[test]
fn a_failure_report_leaves_clock_jumps_out_of_its_last_events_and_counts_them() {
    let failure = Sim::new(1)
        .run(async {
            for _ in 0..3 {
                time::sleep(Duration::from_millis(5)).await;
            }
            panic!("after three sleeps");
        })
        .unwrap_err();
    let jumps = failure
        .tail
        .iter()
        .filter(|event| matches!(event.kind, crashtest_core::trace::EventKind::ClockJump))
        .count();
    assert_eq!(jumps, 3, "the tail keeps every event: {:?}", failure.tail);
    let text = failure.to_string();
    assert!(
        text.contains(&format!(
            "last {} events, 3 clock jumps left out",
            failure.tail.len()
        )),
        "{text}"
    );
    assert!(!text.contains("clock jump\n"), "{text}");
    assert!(
        text.contains("PANIC in t0"),
        "the other events are all shown: {text}"
    );
}
