//! The core's side of the tokio stand-in's seam: [`crashtest_hooks::Simulator`] over the
//! world of the run on this thread.
//!
//! The stand-in is compiled as the package `tokio`, which this crate depends on, so it calls
//! the simulator only through `crashtest-hooks`. Every run makes [`SEAM`] current there for
//! its duration (see `world::Enter`). The seam holds no state: each call finds the world
//! through the core's own thread-local, exactly as `crashtest_core::spawn` and
//! `crashtest_core::time` do, so a stand-in task or sleep is the same thing in the world as
//! one made through the core's API (same trace events, same scheduling, same sleep
//! stretching), and the same seed gives the same run either way.
//!
//! Ids carry their run's tag: an id used in another run is a foreign one, and is ignored as
//! the core's own handles ignore theirs.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crashtest_hooks::{BoxTask, Simulator, TaskRef, TimerRef};

use crate::report::FailureKind;
use crate::task::TaskId;
use crate::time::timer_heap::TimerKey;
use crate::world::{self, World};

/// The seam every run makes current.
pub(crate) static SEAM: Seam = Seam;

/// The simulator as the stand-in sees it.
pub(crate) struct Seam;

/// A stand-in task as the world holds it: polled through its `Task` object, and handed back
/// whole when it completes, with its output inside (only the stand-in knows its type).
struct Erased(Option<BoxTask>);

impl Future for Erased {
    type Output = BoxTask;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<BoxTask> {
        // `Erased` is `Unpin`: the task is pinned in its own box.
        let this = self.get_mut();
        let task = this
            .0
            .as_mut()
            .expect("a completed task is not polled again");
        match task.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(this.0.take().expect("checked above")),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn task_id(task: TaskRef) -> TaskId {
    let id = task.id();
    TaskId {
        slot: id as u32,
        serial: (id >> 32) as u32,
    }
}

/// Runs `f` on the world of the run going on on this thread.
fn with_world<R>(f: impl FnOnce(&World) -> R) -> R {
    world::with(f).expect("the tokio stand-in called the simulator outside a simulation")
}

/// Runs `f` on the world if `run` is the run going on on this thread.
fn with_run<R>(run: u32, f: impl FnOnce(&World) -> R) -> Option<R> {
    world::with(|w| w.same_run(run).then(|| f(w))).flatten()
}

impl Simulator for Seam {
    fn spawn(&self, name: Option<&str>, task: BoxTask) -> TaskRef {
        with_world(|w| {
            let id = w.spawn_on(w.current_node(), name.map(Box::from), Erased(Some(task)));
            TaskRef::new(w.run_tag(), id.to_u64())
        })
    }

    fn poll_join(&self, task: TaskRef, cx: &mut Context<'_>) -> Poll<Option<BoxTask>> {
        with_run(task.run(), |w| w.poll_join::<BoxTask>(task_id(task), cx))
            .expect("a simulated task's JoinHandle was awaited outside its simulation")
    }

    fn abort(&self, task: TaskRef) {
        with_run(task.run(), |w| w.abort(task_id(task)));
    }

    fn detach(&self, task: TaskRef) {
        with_run(task.run(), |w| w.detach(task_id(task)));
    }

    fn is_finished(&self, task: TaskRef) -> bool {
        with_run(task.run(), |w| w.is_finished(task_id(task))).unwrap_or(true)
    }

    fn current_task(&self) -> Option<u64> {
        with_world(|w| w.current_task().map(TaskId::to_u64))
    }

    fn now_ns(&self) -> u64 {
        with_world(World::now_ns)
    }

    fn fire_time(&self, deadline_ns: u64) -> u64 {
        with_world(|w| w.stretched_deadline(deadline_ns))
    }

    fn poll_timer(&self, at_ns: u64, armed: &mut Option<TimerRef>, waker: &Waker) -> Poll<()> {
        // One visit to the world, as the core's own sleep makes: sleeps are the hottest call.
        with_world(|w| {
            if w.now_ns() >= at_ns {
                // Due timers fire before any task is polled: nothing is left armed.
                *armed = None;
                return Poll::Ready(());
            }
            let refreshed = armed.is_some_and(|timer| {
                w.same_run(timer.run()) && w.refresh_timer(TimerKey::from_bits(timer.key()), waker)
            });
            if !refreshed {
                let key = w.arm_timer(at_ns, waker.clone());
                *armed = Some(TimerRef::new(w.run_tag(), key.to_bits()));
            }
            Poll::Pending
        })
    }

    fn cancel_timer(&self, timer: TimerRef) {
        with_run(timer.run(), |w| {
            w.cancel_timer(TimerKey::from_bits(timer.key()));
        });
    }

    fn draw_below(&self, bound: u64) -> u64 {
        assert!(bound > 0, "a draw below zero");
        with_world(|w| w.with_stream("tokio", |rng| rng.below_inclusive(bound - 1)))
    }

    fn fail(&self, message: String) {
        with_world(|w| w.fail(FailureKind::Check { message }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sim;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A task that completes with `value` on its first poll.
    struct Ready(Option<u32>, Option<u32>);

    impl crashtest_hooks::Task for Ready {
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            let this = self.get_mut();
            this.1 = this.0.take();
            Poll::Ready(())
        }

        fn output(self: Pin<&mut Self>) -> *mut () {
            std::ptr::from_mut(&mut self.get_mut().1).cast()
        }
    }

    #[test]
    fn every_run_makes_the_seam_current_and_clears_it_after() {
        assert!(crashtest_hooks::current().is_none());
        Sim::new(1)
            .run(async {
                let seam = crashtest_hooks::current().expect("the run made the seam current");
                assert_eq!(seam.now_ns(), 0);
                crate::time::sleep(std::time::Duration::from_millis(3)).await;
                assert_eq!(seam.now_ns(), 3_000_000);
            })
            .unwrap();
        assert!(crashtest_hooks::current().is_none());
    }

    #[test]
    fn a_seam_task_runs_in_the_world_and_hands_its_output_back() {
        let got = Rc::new(Cell::new(None));
        let out = got.clone();
        Sim::new(1)
            .run(async move {
                let seam = crashtest_hooks::current().unwrap();
                let task = seam.spawn(Some("erased"), Box::pin(Ready(Some(42), None)));
                let mut done = std::future::poll_fn(|cx| seam.poll_join(task, cx))
                    .await
                    .expect("the task completed");
                // SAFETY: the task's output is an `Option<u32>`, and the task lives on.
                let output = unsafe { &mut *done.as_mut().output().cast::<Option<u32>>() };
                out.set(output.take());
            })
            .unwrap();
        assert_eq!(got.get(), Some(42));
    }

    #[test]
    fn an_aborted_seam_task_joins_as_cancelled() {
        Sim::new(1)
            .run(async {
                let seam = crashtest_hooks::current().unwrap();
                let task = seam.spawn(None, Box::pin(Ready(Some(1), None)));
                seam.abort(task);
                assert!(seam.is_finished(task));
                let joined = std::future::poll_fn(|cx| seam.poll_join(task, cx)).await;
                assert!(joined.is_none());
            })
            .unwrap();
    }

    #[test]
    fn a_seam_timer_wakes_its_task_at_its_deadline() {
        let summary = Sim::new(1)
            .run(async {
                let seam = crashtest_hooks::current().unwrap();
                let mut armed = None;
                std::future::poll_fn(|cx| seam.poll_timer(5_000, &mut armed, cx.waker())).await;
                assert!(armed.is_none(), "a fired timer is not left armed");
            })
            .unwrap();
        assert_eq!(summary.elapsed.as_nanos(), 5_000);
    }

    #[test]
    fn seam_draws_follow_the_seed() {
        let draws = |seed| {
            let got = Rc::new(Cell::new(0));
            let out = got.clone();
            Sim::new(seed)
                .run(async move {
                    let seam = crashtest_hooks::current().unwrap();
                    out.set((0..16).fold(0, |acc, _| acc * 7 + seam.draw_below(7)));
                })
                .unwrap();
            got.get()
        };
        assert_eq!(draws(1), draws(1));
        assert_ne!(draws(1), draws(2));
    }

    #[test]
    fn a_seam_failure_fails_the_run_with_its_message() {
        let failure = Sim::new(1)
            .run(async {
                crashtest_hooks::current()
                    .unwrap()
                    .fail("refused: tokio::process".into());
            })
            .unwrap_err();
        assert!(failure.to_string().contains("refused: tokio::process"));
    }
}
