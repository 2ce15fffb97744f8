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

use std::panic::Location;
use std::task::{Context, Poll, Waker};

use crashtest_hooks::{RawTask, Simulator, TaskRef, TimerRef};

use crate::task::{Label, TaskId};
use crate::time::timer_heap::TimerKey;
use crate::world::{self, World};

/// The seam every run makes current.
pub(crate) static SEAM: Seam = Seam;

/// The simulator as the stand-in sees it.
pub(crate) struct Seam;

fn task_id(task: TaskRef) -> TaskId {
    let id = task.id();
    let task = TaskId {
        slot: id as u32,
        serial: (id >> 32) as u32,
    };
    assert_eq!(task.to_u64(), id, "a task id crosses the seam intact");
    task
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
    fn spawn(
        &self,
        name: Option<&str>,
        origin: &'static Location<'static>,
        task: RawTask<'_>,
    ) -> TaskRef {
        with_world(|w| {
            let node = w.current_node();
            let stillborn = w.spawns_die_at_birth(node);
            let label = Label::spawned(name, origin);
            let id = w.spawn_raw_on(node, label, task);
            // Only a dead node's task, or one spawned once the run is over, ends at birth.
            assert_eq!(
                w.is_finished(id),
                stillborn,
                "task {id} finished before its first poll"
            );
            TaskRef::new(w.run_tag(), id.to_u64())
        })
    }

    unsafe fn poll_join(&self, task: TaskRef, cx: &mut Context<'_>, out: *mut ()) -> Poll<bool> {
        with_run(task.run(), |w| {
            let id = task_id(task);
            let joined = w
                .poll_join_with(id, cx, |cell| {
                    // SAFETY: the task finished (the executor takes only a finished task's
                    // output, once) and the caller passes the output slot of its type.
                    unsafe { cell.take_output(out) };
                    Some(())
                })
                .map(|taken| taken.is_some());
            assert!(
                joined.is_pending() || w.is_finished(id),
                "task {id} joined before it finished"
            );
            joined
        })
        .expect("a simulated task's JoinHandle was awaited outside its simulation")
    }

    fn abort(&self, task: TaskRef) {
        with_run(task.run(), |w| {
            let id = task_id(task);
            w.abort(id);
            // A task that aborts itself ends when its poll returns; any other ends now.
            assert!(
                w.is_finished(id) || w.current_task() == Some(id),
                "task {id} outlived its abort"
            );
        });
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
        let now_ns = with_world(World::now_ns);
        // The stand-in also reads the clock straight through the hooks (a due sleep's fast
        // path): both ways must read this run's clock.
        assert_eq!(
            crashtest_hooks::now_ns(),
            Some(now_ns),
            "the hooks' clock is not the world's"
        );
        now_ns
    }

    fn fire_time(&self, deadline_ns: u64) -> u64 {
        // `stretched_deadline` asserts that a stretch only delays.
        with_world(|w| w.stretched_deadline(deadline_ns))
    }

    fn sleep_for(&self, delay_ns: u64) -> (u64, u64) {
        with_world(|w| {
            let deadline_ns = w.now_ns().saturating_add(delay_ns);
            let fire_at_ns = w.stretched_deadline(deadline_ns);
            // The stand-in's sleep is ready once the clock reaches `fire_at_ns`, and reports
            // its deadline as reached then: the fire time is never before the deadline, nor
            // the deadline before now.
            debug_assert!(
                w.now_ns() <= deadline_ns && deadline_ns <= fire_at_ns,
                "a sleep of {delay_ns} ns from {} fires at {fire_at_ns} for {deadline_ns}",
                w.now_ns()
            );
            (deadline_ns, fire_at_ns)
        })
    }

    fn poll_timer(&self, at_ns: u64, armed: &mut Option<TimerRef>, waker: &Waker) -> Poll<()> {
        // One visit to the world, as the core's own sleep makes: sleeps are the hottest call.
        with_world(|w| {
            if w.now_ns() >= at_ns {
                // Due timers fire before any task is polled: nothing is left armed.
                if crate::verify::enabled() {
                    assert!(
                        armed.is_none_or(|timer| !w.same_run(timer.run())
                            || !w.timer_armed(TimerKey::from_bits(timer.key()))),
                        "a due sleep's timer is still armed"
                    );
                }
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
            if crate::verify::enabled() {
                // A pending sleep is woken by its timer: one must be armed, in this run.
                assert!(
                    armed.is_some_and(|timer| w.same_run(timer.run())
                        && w.timer_armed(TimerKey::from_bits(timer.key()))),
                    "a pending sleep has no armed timer"
                );
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
        let draw = with_world(|w| {
            w.with_stream(crate::rng::Stream::Tokio, |rng| {
                rng.below_inclusive(bound - 1)
            })
        });
        assert!(draw < bound, "{draw} drawn out of 0..{bound}");
        draw
    }

    fn next_serial(&self) -> u64 {
        with_world(World::next_serial)
    }

    fn refuse(&self, message: String) {
        with_world(|w| w.refuse(message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sim;
    use crate::report::FailureKind;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A future that completes with its value on its first poll; `PAD` bytes give it any
    /// size. It counts its drops, and its output's (an `Output`).
    struct Ready<const PAD: usize> {
        value: u32,
        _pad: [u8; PAD],
        drops: Rc<Cell<u32>>,
    }

    impl<const PAD: usize> Future for Ready<PAD> {
        type Output = Output;

        fn poll(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Output> {
            Poll::Ready(Output {
                value: self.value,
                drops: self.drops.clone(),
            })
        }
    }

    impl<const PAD: usize> Drop for Ready<PAD> {
        fn drop(&mut self) {
            self.drops.set(self.drops.get() + 1);
        }
    }

    struct Output {
        value: u32,
        drops: Rc<Cell<u32>>,
    }

    impl Drop for Output {
        fn drop(&mut self) {
            self.drops.set(self.drops.get() + 1);
        }
    }

    /// Spawns a `Ready<PAD>` of `value` through the seam, as the stand-in spawns.
    fn spawn_ready<const PAD: usize>(value: u32, drops: &Rc<Cell<u32>>) -> TaskRef {
        let future = Ready::<PAD> {
            value,
            _pad: [0; PAD],
            drops: drops.clone(),
        };
        let seam = crashtest_hooks::current().unwrap();
        RawTask::spawn(seam, Some("raw"), crashtest_hooks::FutureCell::new(future))
    }

    /// Joins a spawned `Ready`: its value, or `None` if it was cancelled.
    async fn join(task: TaskRef) -> Option<u32> {
        let seam = crashtest_hooks::current().unwrap();
        let mut output: Option<Output> = None;
        let completed = std::future::poll_fn(|cx| {
            // SAFETY: a `Ready`'s output is an `Output`.
            unsafe { seam.poll_join(task, cx, (&raw mut output).cast()) }
        })
        .await;
        assert_eq!(completed, output.is_some());
        output.map(|output| output.value)
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
    fn seam_tasks_of_every_size_run_in_the_world_and_hand_their_output_back_once() {
        let drops = Rc::new(Cell::new(0));
        let counted = drops.clone();
        Sim::new(1)
            .run(async move {
                // A small cell, a large one the arena still holds, and one larger than its
                // largest class (512 bytes), on the heap.
                let small = spawn_ready::<0>(1, &counted);
                let large = spawn_ready::<300>(2, &counted);
                let heap = spawn_ready::<1000>(3, &counted);
                assert_eq!(join(small).await, Some(1));
                assert_eq!(join(large).await, Some(2));
                assert_eq!(join(heap).await, Some(3));
                assert_eq!(
                    counted.get(),
                    6,
                    "each future is dropped once as it completes, each output once joined"
                );
            })
            .unwrap();
        assert_eq!(drops.get(), 6);
    }

    /// A cell of no size, aligned past every arena class: it lives behind a dangling
    /// pointer, as a box of it would.
    #[repr(align(64))]
    struct EmptyCell;

    impl crashtest_hooks::TaskCell for EmptyCell {
        fn poll_task(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Ready(())
        }

        fn output(self: std::pin::Pin<&mut Self>) -> &mut dyn std::any::Any {
            self.get_mut()
        }

        unsafe fn take_output(self: std::pin::Pin<&mut Self>, _: *mut ()) {}
    }

    #[test]
    fn a_seam_cell_of_no_size_and_wide_alignment_runs_and_is_dropped() {
        Sim::new(1)
            .run(async {
                let seam = crashtest_hooks::current().unwrap();
                let task = RawTask::spawn(seam, None, EmptyCell);
                crate::task::yield_now().await;
                assert!(seam.is_finished(task));
                seam.detach(task);
            })
            .unwrap();
    }

    #[test]
    fn an_aborted_seam_task_joins_as_cancelled_and_is_dropped_once() {
        let drops = Rc::new(Cell::new(0));
        let counted = drops.clone();
        Sim::new(1)
            .run(async move {
                let seam = crashtest_hooks::current().unwrap();
                for task in [
                    spawn_ready::<0>(1, &counted),
                    spawn_ready::<1000>(2, &counted),
                ] {
                    seam.abort(task);
                    assert!(seam.is_finished(task));
                    assert_eq!(join(task).await, None);
                }
                assert_eq!(counted.get(), 2, "an aborted future is dropped once");
                // A detached task that completes drops its future, then its output.
                let detached = spawn_ready::<100>(3, &counted);
                seam.detach(detached);
                crate::task::yield_now().await;
                crate::task::yield_now().await;
            })
            .unwrap();
        assert_eq!(drops.get(), 4);
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
    fn a_seam_refusal_fails_the_run_as_a_refusal_with_its_message() {
        let failure = Sim::new(1)
            .run(async {
                crashtest_hooks::current()
                    .unwrap()
                    .refuse("tokio::process cannot run here".into());
            })
            .unwrap_err();
        assert!(
            matches!(&failure.kind, FailureKind::Refused { message }
                if message == "tokio::process cannot run here"),
            "{failure}"
        );
        assert!(failure.to_string().contains("refused: tokio::process"));
    }
}
