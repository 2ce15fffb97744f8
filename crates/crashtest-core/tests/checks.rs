//! Step checks (invariants run between polls) and healing.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::node::{self, NodeStatus};
use crashtest_core::{FailureKind, Sim, fault, plumbing, rng::Ratio, task, time};

#[test]
fn a_step_check_runs_every_n_polls_and_catches_the_first_violation() {
    let runs = Rc::new(Cell::new(0u64));
    let counted = runs.clone();
    let summary = Sim::new(1)
        .run(async move {
            plumbing::checks::add_step_check("counts", 10, move || {
                counted.set(counted.get() + 1);
                Ok(())
            });
            for _ in 0..100 {
                task::yield_now().await;
            }
        })
        .unwrap();
    assert_eq!(runs.get(), summary.polls / 10);

    let failure = Sim::new(1)
        .run(async {
            let value = Rc::new(Cell::new(0));
            let seen = value.clone();
            plumbing::checks::add_step_check("value < 3", 1, move || {
                (seen.get() < 3)
                    .then_some(())
                    .ok_or(format!("value is {}", seen.get()))
            });
            loop {
                value.set(value.get() + 1);
                time::sleep(Duration::from_secs(1)).await;
            }
        })
        .unwrap_err();
    assert_eq!(
        failure.kind,
        FailureKind::Check {
            invariant: "value < 3".into(),
            message: "invariant \"value < 3\": value is 3".into()
        }
    );
    assert_eq!(failure.summary.elapsed, Duration::from_secs(2));
}

#[test]
fn a_step_check_may_add_another_which_first_runs_at_the_next_step() {
    let order = Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = order.clone();
    Sim::new(1)
        .run(async move {
            let added = Rc::new(Cell::new(false));
            let outer = seen.clone();
            plumbing::checks::add_step_check("adds", 1, move || {
                outer.borrow_mut().push("adds");
                if !added.replace(true) {
                    let inner = outer.clone();
                    plumbing::checks::add_step_check("added", 1, move || {
                        inner.borrow_mut().push("added");
                        Ok(())
                    });
                }
                Ok(())
            });
            for _ in 0..2 {
                task::yield_now().await;
            }
        })
        .unwrap();
    let order = order.borrow();
    assert_eq!(order[..3], ["adds", "adds", "added"]);
    assert!(
        order.len() >= 5,
        "both checks ran at every later step: {order:?}"
    );
}

#[test]
fn healing_restarts_the_dead_resumes_the_paused_and_stops_faults() {
    Sim::new(1)
        .run(async {
            let dead = node::create("dead", std::future::pending);
            let paused = node::create("paused", std::future::pending);
            dead.kill();
            paused.pause();
            assert!(fault::inject(dead.id(), Ratio::ALWAYS, || "drop".into()));
            crashtest_core::fault::heal_all();
            assert_eq!(dead.status(), NodeStatus::Running);
            assert_eq!(paused.status(), NodeStatus::Running);
            assert!(!fault::inject(dead.id(), Ratio::ALWAYS, || "drop".into()));
        })
        .unwrap();
}
