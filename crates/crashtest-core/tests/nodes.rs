//! Nodes: killing mid-operation, restarting, upgrading, pausing.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::node::{self, NodeStatus};
use crashtest_core::{Sim, task, time};

/// Pushes its label into a log when dropped: shows a task's future was dropped.
struct DropGuard(&'static str, Rc<RefCell<Vec<String>>>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.1.borrow_mut().push(format!("dropped {}", self.0));
    }
}

#[test]
fn killing_a_node_mid_operation_drops_its_tasks_and_restart_runs_main_again() {
    let log = Rc::new(RefCell::new(Vec::<String>::new()));
    let starts = Rc::new(Cell::new(0));
    let (seen, counted) = (log.clone(), starts.clone());
    Sim::new(11)
        .run(async move {
            let server = node::create("server", move || {
                counted.set(counted.get() + 1);
                let log = seen.clone();
                async move {
                    let incarnation = format!("incarnation {}", counted_label(&log));
                    let _guard = DropGuard("main", log.clone());
                    let helper_log = log.clone();
                    task::spawn_local(async move {
                        let _guard = DropGuard("helper", helper_log);
                        std::future::pending::<()>().await;
                    });
                    // A two-step operation that a crash can cut in half.
                    log.borrow_mut().push(format!("{incarnation}: step 1"));
                    time::sleep(Duration::from_secs(10)).await;
                    log.borrow_mut().push(format!("{incarnation}: step 2"));
                    std::future::pending::<()>().await;
                }
            });
            time::sleep(Duration::from_secs(5)).await;
            server.kill();
            assert_eq!(server.status(), NodeStatus::Dead);
            time::sleep(Duration::from_secs(20)).await;
            server.restart();
            time::sleep(Duration::from_secs(20)).await;
        })
        .unwrap();
    assert_eq!(starts.get(), 2);
    let log = log.borrow();
    let expected = [
        "incarnation 0: step 1",
        "dropped helper",
        "dropped main",
        "incarnation 1: step 1",
        "incarnation 1: step 2",
    ];
    // The run's end drops the second incarnation's tasks too; look at what came before.
    let mut before_end = log[..expected.len()].to_vec();
    // The two drops at the kill happen in slot order; compare them as a set.
    before_end[1..3].sort();
    assert_eq!(before_end, expected);
}

/// Counts the "step 1" lines so far: the incarnation number of the starting main.
fn counted_label(log: &Rc<RefCell<Vec<String>>>) -> usize {
    log.borrow()
        .iter()
        .filter(|l| l.ends_with("step 1"))
        .count()
}

#[test]
fn a_node_can_kill_itself() {
    let reached = Rc::new(Cell::new(false));
    let flag = reached.clone();
    Sim::new(1)
        .run(async move {
            let n = node::create("suicidal", move || {
                let flag = flag.clone();
                async move {
                    time::sleep(Duration::from_secs(1)).await;
                    node::current().kill();
                    task::yield_now().await;
                    flag.set(true);
                }
            });
            time::sleep(Duration::from_secs(2)).await;
            assert_eq!(n.status(), NodeStatus::Dead);
        })
        .unwrap();
    assert!(!reached.get());
}

#[test]
fn upgrade_restarts_with_the_new_factory() {
    let versions = Rc::new(RefCell::new(Vec::new()));
    let (v1, v2) = (versions.clone(), versions.clone());
    Sim::new(1)
        .run(async move {
            let n = node::create("db", move || {
                let v1 = v1.clone();
                async move { v1.borrow_mut().push(1) }
            });
            time::sleep(Duration::from_secs(1)).await;
            n.upgrade(move || {
                let v2 = v2.clone();
                async move { v2.borrow_mut().push(2) }
            });
            time::sleep(Duration::from_secs(1)).await;
            n.restart();
            time::sleep(Duration::from_secs(1)).await;
        })
        .unwrap();
    assert_eq!(*versions.borrow(), [1, 2, 2]);
}

#[test]
fn a_paused_node_runs_nothing_until_resumed() {
    let ticks = Rc::new(RefCell::new(Vec::new()));
    let seen = ticks.clone();
    Sim::new(1)
        .run(async move {
            let n = node::create("ticker", move || {
                let seen = seen.clone();
                async move {
                    let mut every = time::interval(Duration::from_secs(1));
                    loop {
                        every.tick().await;
                        seen.borrow_mut()
                            .push(time::Instant::now().as_nanos_since_start() / 1_000_000_000);
                    }
                }
            });
            time::sleep(Duration::from_millis(2500)).await;
            n.pause();
            time::sleep(Duration::from_secs(5)).await;
            n.resume();
            time::sleep(Duration::from_millis(1600)).await;
        })
        .unwrap();
    // Ticks at 0, 1, 2; nothing while paused (2.5 s to 7.5 s); the missed ticks burst at
    // 7.5 s (interval's default), then 8 and 9.
    assert_eq!(*ticks.borrow(), [0, 1, 2, 7, 7, 7, 7, 7, 8, 9]);
}

#[test]
fn the_supervisor_cannot_be_killed() {
    let failure = Sim::new(1)
        .run(async { node::current().kill() })
        .unwrap_err();
    assert!(failure.to_string().contains("supervisor"), "{failure}");
}

#[test]
fn node_names_are_unique_and_resolvable() {
    Sim::new(1)
        .run(async {
            let a = node::create("a", || async {});
            assert_eq!(node::lookup("a"), Some(a));
            let dup = task::spawn_local(async { node::create("a", || async {}) });
            let _ = dup.await;
        })
        .map(|_| panic!("a second node named `a` must fail the run"))
        .unwrap_err();
}

#[test]
fn a_panic_after_the_node_was_killed_in_the_same_poll_is_the_crash_not_a_bug() {
    Sim::new(1)
        .run(async {
            let n = node::create("doomed", || async {
                time::sleep(Duration::from_secs(1)).await;
                node::current().kill();
                panic!("the write failed because the node died");
            });
            time::sleep(Duration::from_secs(2)).await;
            assert_eq!(n.status(), NodeStatus::Dead);
        })
        .unwrap();
}

/// Restarts a node once when dropped: a task's destructor that brings its killed node back.
struct RestartOnDrop(Rc<Cell<Option<node::Node>>>, Rc<Cell<bool>>);

impl Drop for RestartOnDrop {
    fn drop(&mut self) {
        if let Some(me) = self.0.get()
            && !self.1.replace(true)
        {
            me.restart();
        }
    }
}

#[test]
fn a_destructor_that_restarts_its_killed_node_starts_a_new_process() {
    let starts = Rc::new(Cell::new(0));
    let counted = starts.clone();
    Sim::new(5)
        .run(async move {
            let me = Rc::new(Cell::new(None));
            let restarted = Rc::new(Cell::new(false));
            let (handle, once) = (me.clone(), restarted.clone());
            let phoenix = node::create("phoenix", move || {
                counted.set(counted.get() + 1);
                let guard = RestartOnDrop(handle.clone(), once.clone());
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                }
            });
            me.set(Some(phoenix));
            time::sleep(Duration::from_secs(1)).await;
            phoenix.kill();
            assert!(
                restarted.get(),
                "the dying main's destructor restarted the node"
            );
            assert_eq!(phoenix.status(), NodeStatus::Running);
            time::sleep(Duration::from_secs(1)).await;
        })
        .unwrap();
    assert_eq!(starts.get(), 2, "main ran once per process");
}

#[test]
fn a_simulation_refuses_a_node_past_its_limit_with_a_clear_message() {
    let failure = Sim::new(2)
        .run(async {
            for i in 0..65_535u32 {
                node::create(format!("n{i}"), || async {});
            }
            node::create("one too many", || async {});
        })
        .unwrap_err();
    let text = failure.to_string();
    assert!(
        text.contains("at most 65,535 nodes besides the test body's"),
        "{text}"
    );
}

/// A node whose main task holds what `guard` makes and waits forever, as servers do.
fn node_holding<G: 'static>(name: &str, guard: impl Fn() -> G + 'static) -> node::Node {
    node::create(name, move || {
        let held = guard();
        async move {
            let _held = held;
            std::future::pending::<()>().await
        }
    })
}

/// Spawns a task when dropped, which logs the node it runs on: a destructor that starts
/// cleanup work, as connection pools and guards do.
struct SpawnsOnDrop(Rc<RefCell<Vec<String>>>);

impl Drop for SpawnsOnDrop {
    fn drop(&mut self) {
        let log = self.0.clone();
        log.borrow_mut()
            .push(format!("destructor on {}", node::current().name()));
        task::spawn_local(async move {
            log.borrow_mut()
                .push(format!("cleanup ran on {}", node::current().name()));
        });
    }
}

#[test]
fn a_killed_nodes_destructors_run_as_that_node_and_what_they_spawn_dies_with_it() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    Sim::new(5)
        .run(async move {
            let victim = node_holding("victim", move || SpawnsOnDrop(seen.clone()));
            time::sleep(Duration::from_millis(1)).await;
            // Killed from the supervisor, and from a task of another node.
            victim.kill();
            time::sleep(Duration::from_millis(1)).await;
            victim.restart();
            time::sleep(Duration::from_millis(1)).await;
            let killer = node::create("killer", move || async move { victim.kill() });
            time::sleep(Duration::from_millis(1)).await;
            assert_eq!(killer.status(), NodeStatus::Running);
        })
        .unwrap();
    assert_eq!(
        *log.borrow(),
        ["destructor on victim", "destructor on victim"],
        "a dead process runs nothing, its destructors' spawns included"
    );
}

#[test]
fn a_kill_between_polls_runs_the_destructors_as_the_dead_node_too() {
    let log = Rc::new(RefCell::new(Vec::new()));
    let seen = log.clone();
    Sim::new(6)
        .run(async move {
            let victim = node_holding("victim", move || SpawnsOnDrop(seen.clone()));
            // A timer callback kills it: no task is being polled.
            crashtest_core::plumbing::timers::call_at(1_000_000, move || victim.kill());
            time::sleep(Duration::from_millis(2)).await;
            assert_eq!(victim.status(), NodeStatus::Dead);
        })
        .unwrap();
    assert_eq!(*log.borrow(), ["destructor on victim"]);
}

/// Logs, when dropped, whether it is dropped inside the simulation and as which node, and
/// spawns a task that logs if it ever runs.
struct EndOfRunGuard(Rc<RefCell<Vec<String>>>);

impl Drop for EndOfRunGuard {
    fn drop(&mut self) {
        let log = self.0.clone();
        let inside = crashtest_core::plumbing::is_simulation();
        log.borrow_mut().push(format!(
            "dropped inside: {inside}, as {}",
            node::current().name()
        ));
        task::spawn_local(async move { log.borrow_mut().push("spawned task ran".into()) });
    }
}

#[test]
fn tasks_left_when_the_run_ends_are_dropped_inside_it_as_their_node_and_spawn_nothing() {
    let run = |guarded: bool| {
        let log = Rc::new(RefCell::new(Vec::new()));
        let seen = log.clone();
        let summary = Sim::new(8)
            .run(async move {
                // A server that waits forever, as most do when a test body ends.
                node_holding("server", move || {
                    guarded.then(|| EndOfRunGuard(seen.clone()))
                });
                time::sleep(Duration::from_millis(1)).await;
            })
            .unwrap();
        (summary.fingerprint, log.take())
    };
    let (fingerprint, log) = run(true);
    assert_eq!(log, ["dropped inside: true, as server"]);
    // What the destructors did after the end is not part of the run.
    assert_eq!(run(false).0, fingerprint);
}

/// Panics when dropped.
struct PanicsWhenDropped;

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("a destructor that panics at the end");
    }
}

#[test]
fn a_destructor_that_panics_after_the_run_fails_it_instead_of_escaping() {
    let failure = Sim::new(8)
        .run(async {
            node_holding("server", || PanicsWhenDropped);
            time::sleep(Duration::from_millis(1)).await;
        })
        .unwrap_err();
    assert!(
        matches!(&failure.kind, crashtest_core::FailureKind::Panic { message, .. }
        if message.contains(
            "a task's destructor panicked: a destructor that panics at the end (a task of server)"
        )),
        "{failure}"
    );
    assert!(
        failure
            .tail
            .iter()
            .all(|event| event.index < failure.summary.events),
        "the tail is the run's"
    );
}
