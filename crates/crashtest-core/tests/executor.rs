//! The executor: spawning, joining, cancelling, scheduling order, and how runs fail.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::{FailureKind, Sim, node, spawn, task, time};

#[test]
fn join_handles_return_outputs_and_abort_cancels() {
    Sim::new(1)
        .run(async {
            let answer = spawn(async { 40 + 2 });
            assert_eq!(answer.await.unwrap(), 42);
            let forever = spawn(std::future::pending::<()>());
            forever.abort();
            assert!(forever.await.unwrap_err().is_cancelled());
            let sleeper = spawn(time::sleep(Duration::from_secs(5)));
            time::sleep(Duration::from_secs(1)).await;
            assert!(!sleeper.is_finished());
            sleeper.abort();
            assert!(sleeper.is_finished());
        })
        .unwrap();
}

#[test]
fn a_detached_task_keeps_running() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    Sim::new(1)
        .run(async move {
            let inner = seen.clone();
            drop(task::spawn_local(async move {
                time::sleep(Duration::from_millis(5)).await;
                inner.borrow_mut().push("detached ran");
            }));
            time::sleep(Duration::from_millis(10)).await;
        })
        .unwrap();
    assert_eq!(*log.borrow(), ["detached ran"]);
}

#[test]
fn a_task_aborting_itself_stops_at_its_next_await() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    Sim::new(1)
        .run(async move {
            let (tx, rx) = tokio::sync::oneshot::channel::<task::JoinHandle<()>>();
            let inner = seen.clone();
            let handle = task::spawn_local(async move {
                let me = rx.await.unwrap();
                me.abort();
                inner.borrow_mut().push("after abort, same poll");
                task::yield_now().await;
                inner.borrow_mut().push("never");
            });
            tx.send(handle).unwrap();
            time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap();
    assert_eq!(*log.borrow(), ["after abort, same poll"]);
}

/// The order in which three ready tasks first run, for a seed.
/// Spawns a task when dropped: a destructor that needs the executor.
struct SpawnsOnDrop(Rc<RefCell<Vec<&'static str>>>);

impl Drop for SpawnsOnDrop {
    fn drop(&mut self) {
        let log = self.0.clone();
        drop(task::spawn_local(async move {
            log.borrow_mut().push("spawned by a destructor")
        }));
    }
}

#[test]
fn destructors_of_outputs_and_cancelled_futures_may_use_the_executor() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    Sim::new(3)
        .run(async move {
            // An output nobody reads, a future cancelled by abort, and one by a node kill:
            // each destructor runs with no table borrow held and spawns a task (the killed
            // node's task dies at birth, with its node).
            let unread = task::spawn_local({
                let log = log.clone();
                async move { SpawnsOnDrop(log) }
            });
            drop(unread);
            let guard = SpawnsOnDrop(log.clone());
            let aborted = task::spawn_local(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            });
            task::yield_now().await;
            aborted.abort();
            let for_node = log.clone();
            let victim = node::create("victim", move || {
                let guard = SpawnsOnDrop(for_node.clone());
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await
                }
            });
            time::sleep(Duration::from_millis(1)).await;
            victim.kill();
            // Many short tasks reuse the memory of the finished ones.
            for round in 0..100u64 {
                let handles: Vec<_> = (0..50).map(|i| spawn(async move { i * round })).collect();
                for (i, handle) in handles.into_iter().enumerate() {
                    assert_eq!(handle.await.unwrap(), i as u64 * round);
                }
            }
        })
        .unwrap();
    assert_eq!(seen.borrow().len(), 2, "{:?}", seen.borrow());
}

#[test]
fn destructors_run_when_a_task_ends_may_ask_for_its_id() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    Sim::new(4)
        .run(async move {
            // An output whose handle was dropped goes when its task finishes, and the future
            // of a task that aborts itself when its poll returns: each destructor asks which
            // task it runs in, and it is the task that ended.
            let unread = task::spawn_local({
                let log = log.clone();
                async move {
                    log.borrow_mut().push(("ran", task::id()));
                    AsksItsId(log)
                }
            });
            drop(unread);
            let (tx, rx) = tokio::sync::oneshot::channel::<task::JoinHandle<()>>();
            let guard = AsksItsId(log.clone());
            let inner = log.clone();
            let aborting = task::spawn_local(async move {
                let _guard = guard;
                let me = rx.await.unwrap();
                inner.borrow_mut().push(("ran", task::id()));
                me.abort();
                task::yield_now().await;
            });
            tx.send(aborting).unwrap();
            time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap();
    let log = seen.borrow();
    let ran: Vec<_> = log
        .iter()
        .filter(|(what, _)| *what == "ran")
        .map(|e| e.1)
        .collect();
    let dropped: Vec<_> = log
        .iter()
        .filter(|(what, _)| *what == "dropped")
        .map(|e| e.1)
        .collect();
    assert_eq!((ran.len(), dropped), (2, ran.clone()), "{log:?}");
}

/// Records the id of the task it is dropped in.
struct AsksItsId(Rc<RefCell<Vec<(&'static str, task::TaskId)>>>);

impl Drop for AsksItsId {
    fn drop(&mut self) {
        self.0.borrow_mut().push(("dropped", task::id()));
    }
}

/// Panics when dropped.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("a destructor that panics");
    }
}

#[test]
fn a_destructor_panicking_on_abort_fails_the_run_instead_of_escaping_it() {
    let failure = Sim::new(4)
        .run(async {
            let guard = PanicsOnDrop;
            let handle = task::spawn_local(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            });
            task::yield_now().await;
            handle.abort();
            task::yield_now().await;
        })
        .unwrap_err();
    assert!(
        matches!(&failure.kind, FailureKind::Panic { message, .. }
            if message.contains("a task's destructor panicked: a destructor that panics")),
        "{failure}"
    );
}

#[test]
fn a_killed_nodes_destructors_may_panic() {
    Sim::new(5)
        .run(async {
            let victim = node::create("victim", || {
                let guard = PanicsOnDrop;
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await
                }
            });
            time::sleep(Duration::from_millis(1)).await;
            victim.kill();
            time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap();
}

#[test]
fn a_join_handle_from_a_run_on_another_thread_is_refused() {
    let stash: std::sync::Arc<std::sync::Mutex<Option<task::JoinHandle<u32>>>> = Default::default();
    let first = stash.clone();
    // Each run is the first on its own thread, as the runner's seeds are.
    std::thread::scope(|scope| {
        scope.spawn(move || {
            Sim::new(1)
                .run(async move {
                    *first.lock().unwrap() = Some(spawn(async { 5 }));
                })
                .unwrap();
        });
    });
    let failure = std::thread::scope(|scope| {
        scope
            .spawn(move || {
                Sim::new(1)
                    .run(async move {
                        let mine = spawn(async { 7 });
                        let foreign = stash.lock().unwrap().take().unwrap();
                        let _ = foreign.await;
                        let _ = mine.await;
                    })
                    .unwrap_err()
                    .to_string()
            })
            .join()
            .unwrap()
    });
    assert!(
        failure.contains("JoinHandle awaited in another simulation run"),
        "{failure}"
    );
}

fn first_poll_order(seed: u64) -> Vec<u32> {
    let order = Rc::new(RefCell::new(Vec::new()));
    let seen = order.clone();
    Sim::new(seed)
        .run(async move {
            let handles: Vec<_> = (0..3)
                .map(|i| {
                    let seen = seen.clone();
                    task::spawn_local(async move { seen.borrow_mut().push(i) })
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        })
        .unwrap();
    order.take()
}

#[test]
fn the_scheduler_picks_among_ready_tasks_by_seed() {
    let orders: std::collections::BTreeSet<Vec<u32>> = (0..40).map(first_poll_order).collect();
    assert!(
        orders.len() >= 4,
        "only {} distinct orders over 40 seeds",
        orders.len()
    );
    assert_eq!(first_poll_order(7), first_poll_order(7));
}

#[test]
fn a_panic_fails_the_run_and_names_node_and_task() {
    let failure = Sim::new(5)
        .run(async {
            node::create("storage", || async {
                task::Builder::new()
                    .name("compactor")
                    .spawn_local(async {
                        time::sleep(Duration::from_millis(3)).await;
                        panic!("checksum mismatch in segment 7");
                    })
                    .await
                    .unwrap();
            });
            time::sleep(Duration::from_secs(1)).await;
        })
        .unwrap_err();
    assert_eq!(failure.node.as_deref(), Some("storage"));
    assert!(failure.task.as_deref().unwrap().contains("compactor"));
    let FailureKind::Panic { message, location } = &failure.kind else {
        panic!("expected a panic, got {:?}", failure.kind);
    };
    assert_eq!(message, "checksum mismatch in segment 7");
    assert!(location.as_deref().unwrap().contains("executor.rs"));
    assert_eq!(failure.summary.elapsed, Duration::from_millis(3));
    let report = failure.to_string();
    assert!(report.contains("seed 5 FAILED"), "{report}");
    assert!(
        report.contains("PANIC"),
        "the trace tail shows the panic: {report}"
    );
}

#[test]
fn a_body_waiting_on_nothing_is_a_deadlock() {
    let failure = Sim::new(1)
        .run(async {
            let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
            task::Builder::new()
                .name("waiter")
                .spawn_local(std::future::pending::<()>());
            let _ = rx.await;
        })
        .unwrap_err();
    let FailureKind::Deadlock { waiting } = &failure.kind else {
        panic!("expected a deadlock, got {:?}", failure.kind);
    };
    assert!(waiting.iter().any(|w| w.contains("waiter")), "{waiting:?}");
    assert!(waiting.iter().any(|w| w.contains("body")), "{waiting:?}");
}

#[test]
fn a_deadlocks_first_line_stands_alone_and_the_tasks_follow() {
    let failure = Sim::new(1)
        .run(async {
            task::Builder::new()
                .name("waiter")
                .spawn_local(std::future::pending::<()>());
            std::future::pending::<()>().await;
        })
        .unwrap_err();
    // A results file and a regression file keep only the first line of a failure.
    let text = failure.kind.to_string();
    let first = text.lines().next().expect("a failure has a headline");
    assert_eq!(
        first,
        "deadlock: no task is ready and no timer is armed, so nothing can run again"
    );
    assert!(
        text.contains(&format!("(waiter, spawned at {}:", file!())),
        "{text}"
    );
}

#[test]
fn an_unnamed_task_is_reported_by_where_it_was_spawned() {
    let spawned_at = std::rc::Rc::new(std::cell::RefCell::new(None));
    let keep = spawned_at.clone();
    let failure = Sim::new(1)
        .run(async move {
            let line = line!() + 1;
            let stuck = crashtest_core::spawn(std::future::pending::<()>());
            *keep.borrow_mut() = Some(format!("{}:{line}:", file!()));
            let _ = stuck.await;
        })
        .unwrap_err();
    let FailureKind::Deadlock { waiting } = &failure.kind else {
        panic!("expected a deadlock, got {:?}", failure.kind);
    };
    let place = spawned_at.borrow().clone().unwrap();
    assert!(
        waiting
            .iter()
            .any(|w| w.starts_with("t1 (spawned at ") && w.contains(&place)),
        "{waiting:?}"
    );
    assert!(
        waiting
            .iter()
            .any(|w| w.contains(&format!("awaiting the end of t1 (spawned at {place}"))),
        "{waiting:?}"
    );
}

#[test]
fn a_deadlock_report_lists_the_first_tasks_and_counts_the_rest() {
    let failure = Sim::new(1)
        .run(async {
            for _ in 0..40 {
                task::spawn_local(std::future::pending::<()>());
            }
            std::future::pending::<()>().await;
        })
        .unwrap_err();
    let FailureKind::Deadlock { waiting } = &failure.kind else {
        panic!("expected a deadlock, got {:?}", failure.kind);
    };
    // The body and 40 tasks: 32 listed, 9 counted.
    assert_eq!(waiting.len(), 33, "{waiting:?}");
    assert_eq!(waiting.last().map(String::as_str), Some("... and 9 more"));
}

#[test]
fn a_deadlock_report_says_which_tasks_await_which() {
    let failure = Sim::new(1)
        .run(async {
            let stuck = task::Builder::new()
                .name("stuck")
                .spawn_local(std::future::pending::<()>());
            let middle = task::Builder::new().name("middle").spawn_local(stuck);
            let _ = middle.await;
        })
        .unwrap_err();
    let FailureKind::Deadlock { waiting } = &failure.kind else {
        panic!("expected a deadlock, got {:?}", failure.kind);
    };
    let line = |name: &str| {
        waiting
            .iter()
            .find(|w| {
                // The line's own task: `tN (name...` at its start.
                w.split_once(" (")
                    .is_some_and(|(_, label)| label.starts_with(name))
            })
            .unwrap_or_else(|| panic!("no line for {name}: {waiting:?}"))
    };
    // A named task is called by its name and where the program spawned it.
    let here = format!("spawned at {}:", file!());
    assert!(
        line("body").contains(&format!("awaiting the end of t2 (middle, {here}")),
        "{waiting:?}"
    );
    assert!(
        line("middle").contains(&format!("awaiting the end of t1 (stuck, {here}")),
        "{waiting:?}"
    );
    assert!(!line("stuck").contains("awaiting"), "{waiting:?}");
}

#[test]
fn a_task_yielding_forever_is_a_livelock() {
    let config = crashtest_core::Config::default().livelock_polls(10_000);
    let failure = Sim::with_config(1, config)
        .run(async {
            task::Builder::new().name("spinner").spawn_local(async {
                loop {
                    task::yield_now().await;
                }
            });
            time::sleep(Duration::from_secs(1)).await;
        })
        .unwrap_err();
    assert!(
        matches!(failure.kind, FailureKind::Livelock { .. }),
        "{:?}",
        failure.kind
    );
    assert!(failure.task.unwrap().contains("spinner"));
}

#[test]
fn virtual_time_is_bounded_by_the_time_limit() {
    let config = crashtest_core::Config::default().time_limit(Duration::from_secs(60));
    let failure = Sim::with_config(1, config)
        .run(async {
            let mut ticks = time::interval(Duration::from_secs(1));
            loop {
                ticks.tick().await;
            }
        })
        .unwrap_err();
    assert!(matches!(failure.kind, FailureKind::TimeLimit { .. }));
    assert_eq!(failure.summary.elapsed, Duration::from_secs(60));
}

#[test]
fn spawn_outside_a_simulation_uses_tokio() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let handle = spawn(async {
            time::sleep(Duration::from_millis(1)).await;
            5
        });
        handle.await.unwrap()
    });
    assert_eq!(got, 5);
}
