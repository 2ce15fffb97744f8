//! A deadlock's report says where each waiting task waits, what it awaits there, and when a
//! task was not stuck at all (a lost wakeup).

use std::cell::Cell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use crashtest_core::{FailureKind, RunFailure, RunSummary, Sim, rng, task};

/// The deadlock's lines, or a panic naming what the run gave instead.
fn waiting_lines(result: Result<RunSummary, Box<RunFailure>>) -> Vec<String> {
    let failure = result.expect_err("the run deadlocks");
    let FailureKind::Deadlock { waiting } = failure.kind else {
        panic!("expected a deadlock, got {:?}", failure.kind);
    };
    waiting
}

/// The line of the task named `name` (by its label, before what it waits for).
fn line_of<'a>(waiting: &'a [String], name: &str) -> &'a str {
    waiting
        .iter()
        .find(|line| {
            let label = line
                .split_once(" on ")
                .map_or(line.as_str(), |(label, _)| label);
            label.contains(&format!("({name}"))
        })
        .unwrap_or_else(|| panic!("no line for {name}: {waiting:#?}"))
}

async fn wait_for_the_bell(bell: Rc<tokio::sync::Notify>, line: Rc<Cell<u32>>) {
    line.set(line!() + 1);
    bell.notified().await;
}

#[test]
fn a_deadlock_report_names_the_await_each_task_is_stuck_at_and_what_it_awaits() {
    let line = Rc::new(Cell::new(0));
    let at = line.clone();
    let waiting = waiting_lines(Sim::new(1).run(async move {
        let bell = Rc::new(tokio::sync::Notify::new());
        task::Builder::new()
            .name("listener")
            .spawn_local(wait_for_the_bell(bell.clone(), at));
        std::future::pending::<()>().await;
    }));
    let listener = line_of(&waiting, "listener");
    // The await's line, as std prints a source under the current directory.
    let place = format!("tests/deadlock.rs:{}:", line.get());
    assert!(
        listener.contains("awaiting tokio::sync::notify::Notified at ")
            && listener.contains(&place),
        "{listener}"
    );
}

#[test]
fn a_task_in_a_select_is_reported_awaiting_each_branch() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        let bell = tokio::sync::Notify::new();
        let (_keep, mut letters) = tokio::sync::mpsc::channel::<u8>(1);
        tokio::select! {
            biased;
            _ = bell.notified() => {}
            _ = letters.recv() => {}
        }
    }));
    let body = &waiting[0];
    assert!(
        body.contains("awaiting tokio::sync::notify::Notified or ")
            && body.contains("tokio::sync::mpsc::bounded::Receiver<T>::recv at "),
        "{body}"
    );
}

#[test]
fn a_task_that_keeps_no_waker_is_reported_as_one_nothing_can_wake() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        task::Builder::new()
            .name("forgotten")
            .spawn_local(std::future::pending::<()>());
        let (_keep, never) = tokio::sync::oneshot::channel::<()>();
        let _ = never.await;
    }));
    assert!(
        line_of(&waiting, "forgotten").contains("it kept no way to be woken"),
        "{waiting:#?}"
    );
    // The body awaits a channel whose sender is alive: it waits, not forgotten.
    let body = &waiting[0];
    assert!(
        body.contains("awaiting tokio::sync::oneshot::Receiver<T> at ")
            && body.contains("tests/deadlock.rs:"),
        "{body}"
    );
}

#[test]
fn a_task_that_could_go_on_but_was_never_woken_is_reported_as_a_lost_wakeup() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        let flag = Rc::new(Cell::new(false));
        let seen = flag.clone();
        // Returns Pending without keeping its waker: the setter has no way to wake it.
        task::Builder::new()
            .name("forgetful")
            .spawn_local(poll_fn(move |_| {
                if seen.get() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }));
        task::Builder::new()
            .name("setter")
            .spawn_local(async move { flag.set(true) });
        std::future::pending::<()>().await;
    }));
    let forgetful = line_of(&waiting, "forgetful");
    assert!(forgetful.contains("not stuck"), "{forgetful}");
    assert!(forgetful.contains("a lost wakeup"), "{forgetful}");
}

#[test]
fn a_task_that_panics_when_polled_again_is_reported_with_the_panic() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        let mut polls = 0;
        task::Builder::new()
            .name("brittle")
            .spawn_local(poll_fn(move |cx| {
                polls += 1;
                assert!(polls < 2, "polled twice without a wake");
                let _kept = cx.waker().clone();
                Poll::<()>::Pending
            }));
        std::future::pending::<()>().await;
    }));
    let brittle = line_of(&waiting, "brittle");
    assert!(
        brittle.contains("polled again, it panicked: polled twice without a wake"),
        "{brittle}"
    );
}

#[test]
fn a_seed_reports_the_same_deadlock_on_every_run_and_seeds_differ() {
    let run = |seed| {
        let failure = Sim::new(seed)
            .run(async {
                let bell = Rc::new(tokio::sync::Notify::new());
                for _ in 0..1 + rng::node_rng().next_u64() % 20 {
                    task::spawn_local(wait_for_the_bell(bell.clone(), Rc::default()));
                }
                std::future::pending::<()>().await;
            })
            .unwrap_err();
        (failure.to_string(), failure.summary.fingerprint)
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3).1, run(4).1);
}

#[test]
fn a_task_of_a_node_paused_for_good_is_reported_as_paused() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        let db = crashtest_core::node::create("db", || std::future::ready(()));
        db.pause();
        std::future::pending::<()>().await;
    }));
    assert!(
        waiting
            .iter()
            .any(|line| line.contains("on db (paused, and nothing is left to resume it)")),
        "{waiting:#?}"
    );
}

/// A task that returns `Pending` without keeping its waker until `flag` is set, then runs
/// `then` and ends: a lost wakeup, which the probe lets go on.
fn forgetful(
    flag: Rc<Cell<bool>>,
    then: impl FnOnce() + 'static,
) -> impl std::future::Future<Output = ()> {
    let mut then = Some(then);
    poll_fn(move |_| match flag.get() {
        true => {
            (then.take().expect("ends once"))();
            Poll::Ready(())
        }
        false => Poll::Pending,
    })
}

/// A deadlock whose forgetful task runs `then` when the probe lets it go on.
fn deadlock_going_on_with(then: impl FnOnce() + 'static) -> Box<RunFailure> {
    Sim::new(1)
        .run(async move {
            let flag = Rc::new(Cell::new(false));
            task::Builder::new()
                .name("forgetful")
                .spawn_local(forgetful(flag.clone(), then));
            task::Builder::new()
                .name("setter")
                .spawn_local(async move { flag.set(true) });
            std::future::pending::<()>().await;
        })
        .expect_err("the run deadlocks")
}

#[test]
fn what_a_probed_task_fails_does_not_replace_the_deadlock() {
    let failure = deadlock_going_on_with(|| {
        crashtest_core::plumbing::checks::fail("after the event", "broken after the event".into());
    });
    let FailureKind::Deadlock { waiting } = &failure.kind else {
        panic!("the run deadlocked, but reports {:?}", failure.kind);
    };
    assert!(
        line_of(waiting, "forgetful").contains("a lost wakeup"),
        "{waiting:#?}"
    );
}

#[test]
fn what_a_probed_task_does_is_neither_traced_nor_covered() {
    let quiet = deadlock_going_on_with(|| {});
    let busy = deadlock_going_on_with(|| {
        crashtest_core::probe!("after the event");
        for _ in 0..3 {
            task::spawn_local(async {});
        }
    });
    // The same run up to the deadlock: the same events and fingerprint, whatever the probe
    // let the task do.
    assert_eq!(busy.summary.events, quiet.summary.events);
    assert_eq!(busy.summary.fingerprint, quiet.summary.fingerprint);
    assert!(
        busy.summary
            .coverage
            .iter()
            .all(|(site, _)| site.name != "after the event"),
        "the run's coverage counts the probe's"
    );
}

#[test]
fn a_task_with_no_code_of_the_programs_is_reported_waiting_in_the_library() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        let (_keep, never) = tokio::sync::oneshot::channel::<u8>();
        let task = task::Builder::new().name("bare").spawn_local(never);
        let _ = task.await;
    }));
    // Not at the test's own frames below the executor's poll.
    let bare = line_of(&waiting, "bare");
    assert!(
        bare.ends_with("waiting in tokio::sync::oneshot::Receiver<T>"),
        "{bare}"
    );
}

#[test]
fn a_lost_wakeup_that_goes_on_to_a_sleep_is_not_reported_as_a_wait() {
    let flag = Rc::new(Cell::new(false));
    let waiting = waiting_lines(Sim::new(1).run(async move {
        let seen = flag.clone();
        task::Builder::new()
            .name("forgetful")
            .spawn_local(async move {
                forgetful(seen, || {}).await;
                crashtest_core::time::sleep(std::time::Duration::from_secs(1)).await;
            });
        task::Builder::new()
            .name("setter")
            .spawn_local(async move { flag.set(true) });
        std::future::pending::<()>().await;
    }));
    let forgetful = line_of(&waiting, "forgetful");
    assert!(
        forgetful.contains("not stuck: polled again, it went on (to "),
        "{forgetful}"
    );
    assert!(forgetful.contains("tests/deadlock.rs:"), "{forgetful}");
}

/// A future the program wrote: it keeps its waker, and nothing ever wakes it.
struct Doorbell(Rc<Cell<Option<std::task::Waker>>>);

impl std::future::Future for Doorbell {
    type Output = ();
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        self.0.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

#[test]
fn a_future_the_program_wrote_is_named_as_what_its_await_awaits() {
    let line = Rc::new(Cell::new(0));
    let at = line.clone();
    let waiting = waiting_lines(Sim::new(1).run(async move {
        at.set(line!() + 1);
        Doorbell(Rc::default()).await;
    }));
    let body = &waiting[0];
    let place = format!("tests/deadlock.rs:{}:", line.get());
    // By its type where its `poll` has a symbol of its own, by where that `poll` is where it
    // was inlined.
    let named = body.contains("awaiting deadlock::Doorbell at ");
    let placed =
        body.contains("awaiting a future of the program's (its poll at tests/deadlock.rs:");
    assert!((named || placed) && body.contains(&place), "{body}");
}

#[test]
fn a_task_an_earlier_probe_woke_is_reported_as_such() {
    let waiting = waiting_lines(Sim::new(1).run(async {
        let flag = Rc::new(Cell::new(false));
        let (wake, woken) = tokio::sync::oneshot::channel::<()>();
        // Probed first: it goes on, and its send wakes the listener below.
        task::Builder::new()
            .name("forgetful")
            .spawn_local(forgetful(flag.clone(), move || {
                let _ = wake.send(());
            }));
        task::Builder::new()
            .name("listener")
            .spawn_local(async move {
                let _ = woken.await;
            });
        task::Builder::new()
            .name("setter")
            .spawn_local(async move { flag.set(true) });
        std::future::pending::<()>().await;
    }));
    assert!(
        line_of(&waiting, "listener").contains("woken when the report polled a task above"),
        "{waiting:#?}"
    );
}
