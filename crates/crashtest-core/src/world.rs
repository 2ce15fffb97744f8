//! The world of one run and its executor: tasks, the ready queue, timers, nodes, the clock.
//!
//! One run is one OS thread and one `World`, reachable from user code through a thread-local
//! set for the duration of [`World::run`]. Nothing here is global, so many runs may go on at
//! once on many threads.
//!
//! The run loop: fire every timer that is due; if tasks are ready, the scheduler stream picks
//! one uniformly among the oldest few (see `task::ready`) and polls it; if none is ready, the
//! clock jumps to the next timer; if there is no timer either, the run is deadlocked. The run ends when the body (the first task)
//! finishes, or on the first failure.
//!
//! Invariants:
//! - Each piece of state sits in its own `RefCell`, and no borrow is held while user code runs
//!   (a poll or a `Drop`): futures are taken out of the task table to be polled or dropped.
//! - A task id is in the ready queue at most once while its state is `Queued`; stale ids
//!   (freed or reused slots) are skipped when popped.
//! - Virtual time never goes backwards.

use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crashtest_protocol::FaultNote;

use crate::coverage::{RunCoverage, Site};
use crate::fault::ledger::{Cause, Ledger, Verdict};
use crate::node::{NodeId, NodeStatus, NodeTable};
use crate::panic_capture;
use crate::plumbing::faults::Healer;
use crate::plumbing::life::NodeHook;
use crate::report::{FailureKind, InjectedFault, RunFailure, RunSummary};
use crate::rng::{Rng, Stream, Streams};
use crate::sim::Config;
use crate::task::waker::waker_for;
use crate::task::{
    BoxedUnit, Outcome, ReadyQueue, TaskFuture, TaskId, TaskSlot, TaskState, TaskTable,
};
use crate::time::timer_heap::{TimerHeap, TimerKey};
use crate::trace::{EventKind, Trace};
use crate::watchdog::Watch;

/// What a timer does when it fires.
enum Alarm {
    /// Wakes a task (a `Sleep`).
    Wake(Waker),
    /// Runs a simulator component's callback (a packet arriving).
    Call(Box<dyn FnOnce()>),
}

/// An invariant: `Err` says what is broken.
type Check = Rc<dyn Fn() -> Result<(), String>>;

/// A check run every `every` polls; `countdown` polls remain until the next run.
struct StepCheck {
    name: String,
    every: u64,
    countdown: u64,
    check: Check,
}

/// The first failure of a run: what, and on which node and task.
type Failed = (FailureKind, Option<NodeId>, Option<TaskId>);

/// Numbers the runs of the process, so that a join handle or a sleep made in one run and
/// used in another (on any thread) is recognised as foreign; it wraps after four billion
/// runs. Wakers carry only its low 16 bits: a waker smuggled into another run whose number
/// matches them may wake a task there spuriously, which a future must tolerate anyway.
static NEXT_RUN: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// The world of the run going on on this thread, or null. A plain pointer (the run's
    /// `Enter` guard owns the world) makes every access a single load: the simulator reads it
    /// several times per poll, and a thread-local with a destructor would also check its
    /// destructor's state on every read.
    static CURRENT: Cell<*const World> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` on the world of the run going on on this thread, if any.
#[inline]
pub(crate) fn with<R>(f: impl FnOnce(&World) -> R) -> Option<R> {
    let world = CURRENT.with(Cell::get);
    // SAFETY: `CURRENT` is non-null only between `Enter::new` and `Enter::drop`, while the
    // `Enter` guard holds the `Rc` that keeps this world alive; it is a thread-local, and a
    // world never leaves its thread (`World` is not `Send`).
    (!world.is_null()).then(|| f(unsafe { &*world }))
}

/// Like [`with`], for callers that do nothing outside a simulation.
#[inline]
pub(crate) fn try_with<R>(f: impl FnOnce(&World) -> R) -> Option<R> {
    with(f)
}

/// True while a simulation runs on this thread.
#[inline]
pub(crate) fn is_simulation() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// Makes a world this thread's current one for the duration of a run, and clears it on every
/// exit path, panics included.
struct Enter {
    world: Option<Rc<World>>,
    /// Makes the tokio stand-in's seam current (see `tokio_seam`) while the world is.
    seam: Option<crashtest_hooks::Entered>,
}

impl Enter {
    fn new(world: Rc<World>) -> Enter {
        CURRENT.with(|current| {
            assert!(
                current.get().is_null(),
                "a simulation is already running on this thread"
            );
            current.set(Rc::as_ptr(&world));
        });
        // SAFETY: the world, and so its clock, lives until this guard drops, which drops the
        // seam's guard first; a world never leaves its thread.
        let seam = unsafe { crashtest_hooks::enter(&crate::tokio_seam::SEAM, &world.now_ns) };
        Enter {
            world: Some(world),
            seam: Some(seam),
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        CURRENT.with(|current| current.set(std::ptr::null()));
        drop(self.seam.take());
        // Dropping the world drops every remaining task, whose destructors may look for the
        // world: they find none and do nothing.
        drop(self.world.take());
    }
}

pub(crate) struct World {
    /// This run's number in the process (see `NEXT_RUN`).
    run_tag: u32,
    seed: u64,
    config: Config,
    now_ns: Cell<u64>,
    /// Every random generator of the run (see `rng::Streams`).
    streams: RefCell<Streams>,
    tasks: RefCell<TaskTable>,
    ready: RefCell<ReadyQueue>,
    timers: RefCell<TimerHeap<Alarm>>,
    pub(crate) nodes: RefCell<NodeTable>,
    trace: RefCell<Trace>,
    current_task: Cell<Option<TaskId>>,
    current_node: Cell<NodeId>,
    failure: RefCell<Option<Failed>>,
    polls: Cell<u64>,
    polls_since_clock_moved: Cell<u64>,
    body: Cell<Option<TaskId>>,
    body_done: Cell<bool>,
    extensions: RefCell<Vec<(TypeId, Rc<dyn Any>)>>,
    hooks: RefCell<Vec<Rc<dyn NodeHook>>>,
    /// Every fault of the run: ids, masking, the heal, `buggify!` sites.
    ledger: RefCell<Ledger>,
    pub(crate) coverage: RefCell<RunCoverage>,
    /// Checks run between polls (invariants), in registration order.
    step_checks: RefCell<Vec<StepCheck>>,
    /// Told to end their faults when the run heals.
    healers: RefCell<Vec<Rc<dyn Healer>>>,
    /// Lines that describe how this run was set up (a swarm profile), for failure reports.
    context: RefCell<Vec<String>>,
    pub(crate) watch: Arc<Watch>,
}

impl World {
    fn new(seed: u64, config: Config) -> World {
        let run_tag = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let mut streams = Streams::new(seed);
        let trace = Trace::new(
            seed,
            config.record_trace,
            config.record_hashes,
            config.stream.clone(),
        );
        let nodes = NodeTable::new(&mut streams);
        trace.name_node(NodeId::SUPERVISOR, nodes.name(NodeId::SUPERVISOR));
        World {
            run_tag,
            seed,
            now_ns: Cell::new(0),
            streams: RefCell::new(streams),
            tasks: RefCell::new(TaskTable::new()),
            ready: RefCell::new(ReadyQueue::new(config.scheduling_window)),
            timers: RefCell::new(TimerHeap::default()),
            nodes: RefCell::new(nodes),
            trace: RefCell::new(trace),
            current_task: Cell::new(None),
            current_node: Cell::new(NodeId::SUPERVISOR),
            failure: RefCell::new(None),
            polls: Cell::new(0),
            polls_since_clock_moved: Cell::new(0),
            body: Cell::new(None),
            body_done: Cell::new(false),
            extensions: RefCell::new(Vec::new()),
            hooks: RefCell::new(Vec::new()),
            ledger: RefCell::new(Ledger::new(seed, &config)),
            coverage: RefCell::new(RunCoverage::default()),
            step_checks: RefCell::new(Vec::new()),
            healers: RefCell::new(Vec::new()),
            context: RefCell::new(Vec::new()),
            watch: Watch::register(seed, config.poll_timeout),
            config,
        }
    }

    /// Runs `body` as the first task of a new world seeded with `seed`, to its end. Returns
    /// the per-event hashes too when the configuration records them.
    pub(crate) fn run(
        seed: u64,
        config: Config,
        body: BoxedUnit,
    ) -> (Result<RunSummary, Box<RunFailure>>, Option<Vec<u64>>) {
        panic_capture::install();
        let world = Rc::new(World::new(seed, config));
        let _enter = Enter::new(world.clone());
        let body = world.spawn_on(NodeId::SUPERVISOR, Some("body".into()), body);
        world.body.set(Some(body));
        world.run_loop();
        let result = world.finish();
        world.trace.borrow().flush_stream();
        let hashes = world.trace.borrow_mut().take_hashes();
        (result, hashes)
    }

    fn run_loop(&self) {
        let limit_ns = u64::try_from(self.config.time_limit.as_nanos()).unwrap_or(u64::MAX);
        let mut explore = self.config.explore;
        while !self.body_done.get() && self.failure.borrow().is_none() {
            if let Some((at_ns, sub_seed)) = explore
                && self.now_ns.get() >= at_ns
            {
                self.reseed(sub_seed);
                explore = None;
            }
            self.fire_due_timers();
            let next = self
                .ready
                .borrow_mut()
                .pick(self.streams.borrow_mut().get(Stream::Scheduler));
            if let Some(id) = next {
                self.poll_task(id);
                continue;
            }
            let next_deadline = self.timers.borrow_mut().next_deadline();
            match next_deadline {
                Some(deadline) if deadline > limit_ns => {
                    self.now_ns.set(limit_ns.max(self.now_ns.get()));
                    self.fail(FailureKind::TimeLimit {
                        limit: self.config.time_limit,
                    });
                }
                Some(deadline) => {
                    assert!(
                        deadline >= self.now_ns.get(),
                        "a timer is armed in the past"
                    );
                    self.now_ns.set(deadline);
                    self.polls_since_clock_moved.set(0);
                    self.record(EventKind::ClockJump);
                }
                None => {
                    let waiting = self.describe_waiting();
                    self.fail(FailureKind::Deadlock { waiting });
                }
            }
        }
    }

    fn fire_due_timers(&self) {
        let now = self.now_ns.get();
        loop {
            let alarm = self.timers.borrow_mut().pop_due(now);
            let Some(alarm) = alarm else { break };
            self.polls_since_clock_moved.set(0);
            match alarm {
                // A simulator waker names its task: wake it here, without the call through
                // the waker's vtable and the thread-local that leads back to this world.
                Alarm::Wake(waker) => match crate::task::waker::task_of(&waker) {
                    Some((run, slot, serial_low)) => self.wake_packed(run, slot, serial_low),
                    None => waker.wake(),
                },
                Alarm::Call(callback) => {
                    if let Err(panic) = panic_capture::catch(callback) {
                        self.fail(FailureKind::Panic {
                            message: panic.message,
                            location: panic.location,
                        });
                    }
                }
            }
        }
    }

    fn poll_task(&self, id: TaskId) {
        let taken = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.get_mut(id) else {
                return;
            };
            if slot.state != TaskState::Queued {
                return;
            }
            let node = slot.node();
            let status = self.nodes.borrow().status(node);
            if status == NodeStatus::Paused {
                self.nodes.borrow_mut().park(node, id);
                return;
            }
            slot.state = TaskState::Running;
            slot.take_future().map(|future| (future, node))
        };
        let Some((mut future, node)) = taken else {
            panic!("queued task {id} has no future");
        };
        self.current_task.set(Some(id));
        self.current_node.set(node);
        self.record(EventKind::Poll { task: id });
        let waker = waker_for(self.run_tag as u16, id);
        let mut cx = Context::from_waker(&waker);
        self.watch.enter_poll(node.0, id.serial);
        let polled = panic_capture::catch(|| future.as_mut().poll_task(&mut cx));
        self.watch.leave_poll();
        self.polls.set(self.polls.get() + 1);
        let since = self.polls_since_clock_moved.get() + 1;
        self.polls_since_clock_moved.set(since);
        match polled {
            Ok(Poll::Ready(())) => {
                let leftover = self.finish_task(id, Outcome::Output(future));
                self.drop_outcome(leftover, node);
            }
            Ok(Poll::Pending) => self.after_pending(id, future),
            Err(_) if self.cancel_requested(id) => {
                // The task's node was killed (or the task aborted) during this very poll,
                // and the task then panicked, typically unwrapping the error of a call cut
                // off by the crash. A dead process's last panic is not a bug: it is the
                // crash, so the task ends cancelled.
                let leftover = self.finish_task(id, Outcome::Cancelled);
                self.drop_panicked_cell(future);
                self.drop_outcome(leftover, node);
            }
            Err(panic) => {
                self.record(EventKind::Panic { task: id });
                if self.failure.borrow().is_none() {
                    *self.failure.borrow_mut() = Some((
                        FailureKind::Panic {
                            message: panic.message,
                            location: panic.location,
                        },
                        Some(node),
                        Some(id),
                    ));
                }
                self.drop_panicked_cell(future);
            }
        }
        self.current_task.set(None);
        self.current_node.set(NodeId::SUPERVISOR);
        self.charge_poll_cost();
        self.run_step_checks();
        if since > self.config.livelock_polls && self.failure.borrow().is_none() {
            *self.failure.borrow_mut() =
                Some((FailureKind::Livelock { polls: since }, Some(node), Some(id)));
        }
    }

    fn cancel_requested(&self, id: TaskId) -> bool {
        self.tasks
            .borrow()
            .get(id)
            .is_some_and(|slot| slot.cancel_requested())
    }

    fn after_pending(&self, id: TaskId, future: TaskFuture) {
        let node = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = tasks.get_mut(id).expect("a running task keeps its slot");
            if slot.cancel_requested() {
                slot.node()
            } else {
                match slot.state {
                    TaskState::Running => slot.state = TaskState::Idle,
                    TaskState::RunningWoken => {
                        slot.state = TaskState::Queued;
                        self.ready.borrow_mut().push(id);
                    }
                    state => panic!("task {id} left its poll in state {state:?}"),
                }
                slot.put_future(future);
                return;
            }
        };
        let leftover = self.finish_task(id, Outcome::Cancelled);
        self.drop_cell(future, node);
        self.drop_outcome(leftover, node);
    }

    /// Re-draws every random stream from `sub_seed`: the run so far is the original seed's,
    /// the future a fresh one (exploring from a point in a run's past).
    fn reseed(&self, sub_seed: u64) {
        self.streams.borrow_mut().reseed(sub_seed);
        let text = format!("explore: future re-drawn from sub-seed {sub_seed}");
        self.record(EventKind::Note {
            source: "explore",
            words: [sub_seed, 0, 0],
            text,
        });
    }

    /// Runs the step checks that are due; the first that fails fails the run.
    fn run_step_checks(&self) {
        let due: Vec<(String, Check)> = {
            let mut checks = self.step_checks.borrow_mut();
            if checks.is_empty() {
                return;
            }
            checks
                .iter_mut()
                .filter_map(|c| {
                    c.countdown -= 1;
                    (c.countdown == 0).then(|| {
                        c.countdown = c.every;
                        (c.name.clone(), c.check.clone())
                    })
                })
                .collect()
        };
        for (name, check) in due {
            match panic_capture::catch(|| check()) {
                Ok(Ok(())) => {}
                Ok(Err(message)) => self.fail(FailureKind::Check {
                    message: format!("invariant {name:?}: {message}"),
                }),
                Err(panic) => self.fail(FailureKind::Panic {
                    message: format!("invariant {name:?} panicked: {}", panic.message),
                    location: panic.location,
                }),
            }
        }
    }

    pub(crate) fn add_step_check(&self, name: String, every: u64, check: Check) {
        assert!(every > 0, "a step check runs at least every poll");
        self.step_checks.borrow_mut().push(StepCheck {
            name,
            every,
            countdown: every,
            check,
        });
    }

    pub(crate) fn add_healer(&self, healer: Rc<dyn Healer>) {
        self.healers.borrow_mut().push(healer);
    }

    pub(crate) fn set_scheduling_window(&self, tasks: usize) {
        self.ready.borrow_mut().set_window(tasks);
        self.record(EventKind::Note {
            source: "scheduler",
            words: [tasks as u64, 0, 0],
            text: String::new(),
        });
    }

    pub(crate) fn add_context(&self, line: String) {
        self.context.borrow_mut().push(line);
    }

    pub(crate) fn faults_enabled(&self) -> bool {
        self.ledger.borrow().enabled()
    }

    /// Ends every fault: no more are applied, dead nodes restart, paused nodes resume, and
    /// each healer ends its own (partitions, clogs).
    pub(crate) fn heal(&self) {
        self.ledger.borrow_mut().heal();
        self.record(EventKind::Note {
            source: "heal",
            words: [0; 3],
            text: "heal all faults".into(),
        });
        let nodes: Vec<(NodeId, NodeStatus)> = {
            let table = self.nodes.borrow();
            (1..table.len())
                .map(|i| NodeId(i as u32))
                .map(|n| (n, table.status(n)))
                .collect()
        };
        for (node, status) in nodes {
            match status {
                NodeStatus::Dead => self.restart_node(node, None),
                NodeStatus::Paused => self.resume_node(node),
                NodeStatus::Running => {}
            }
        }
        let healers = self.healers.borrow().clone();
        for healer in healers {
            healer.heal();
        }
    }

    /// Advances the clock by the configured per-poll cost of virtual CPU time.
    fn charge_poll_cost(&self) {
        let (min, max) = self.config.poll_cost_ns;
        if max > 0 {
            let cost = self
                .streams
                .borrow_mut()
                .get(Stream::Scheduler)
                .range_inclusive(min, max);
            self.now_ns.set(self.now_ns.get() + cost);
        }
    }

    /// Marks a task done and hands its outcome to its handle. Returns what must be dropped
    /// once no borrow is held (an output nobody will read).
    #[must_use]
    fn finish_task(&self, id: TaskId, outcome: Outcome) -> Option<Outcome> {
        let kind = match outcome {
            Outcome::Output(_) => EventKind::Complete { task: id },
            Outcome::Cancelled => EventKind::Cancel { task: id },
        };
        self.record(kind);
        if self.body.get() == Some(id) {
            self.body_done.set(true);
        }
        let mut tasks = self.tasks.borrow_mut();
        let slot = tasks.get_mut(id).expect("finishing a live task");
        assert_ne!(slot.state, TaskState::Done, "task {id} finished twice");
        slot.state = TaskState::Done;
        if slot.handle_alive() {
            slot.set_outcome(outcome);
            let waker = tasks.take_join_waker(id);
            drop(tasks);
            if let Some(waker) = waker {
                waker.wake();
            }
            None
        } else {
            tasks.free(id);
            Some(outcome)
        }
    }

    /// Drops a task's cell, which may run user code, with no borrow held, then reuses its
    /// memory.
    ///
    /// A destructor that panics fails the run, like a panic in a poll, unless the task's
    /// `node` is dead: a killed process runs no destructors, and those the simulator runs to
    /// free its tasks may fail as they like (typically unwrapping an error from the dead
    /// disk). The block of a cell whose destructor panicked is not reused.
    fn drop_cell(&self, cell: TaskFuture, node: NodeId) {
        match panic_capture::catch(|| cell.drop_in_place()) {
            Ok(Some(block)) => self.tasks.borrow_mut().give_back(block),
            Ok(None) => {}
            Err(_) if self.nodes.borrow().status(node) == NodeStatus::Dead => {}
            Err(panic) => self.fail(FailureKind::Panic {
                message: format!("a task's destructor panicked: {}", panic.message),
                location: panic.location,
            }),
        }
    }

    /// Drops the cell of a future that panicked in its poll: its state is unknown, so its
    /// destructor may panic too, and that second panic is not reported.
    fn drop_panicked_cell(&self, cell: TaskFuture) {
        if let Ok(Some(block)) = panic_capture::catch(|| cell.drop_in_place()) {
            self.tasks.borrow_mut().give_back(block);
        }
    }

    /// Drops what `finish_task` left over (an output nobody will read).
    fn drop_outcome(&self, leftover: Option<Outcome>, node: NodeId) {
        if let Some(Outcome::Output(cell)) = leftover {
            self.drop_cell(cell, node);
        }
    }

    pub(crate) fn spawn_on<F>(&self, node: NodeId, name: Option<Box<str>>, future: F) -> TaskId
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let status = self.nodes.borrow().status(node);
        let id = self.tasks.borrow_mut().insert(node, name, future);
        self.record(EventKind::Spawn { task: id, node });
        if status == NodeStatus::Dead {
            // A task spawned by the destructor of a killed node's task dies with the node.
            self.abort(id);
        } else {
            self.ready.borrow_mut().push(id);
        }
        id
    }

    #[inline]
    pub(crate) fn wake_packed(&self, run: u16, slot: u32, serial_low: u32) {
        if run != self.run_tag as u16 {
            return;
        }
        let mut tasks = self.tasks.borrow_mut();
        if let Some((id, slot)) = tasks.resolve(slot, serial_low) {
            self.wake_slot(id, slot);
        }
    }

    #[inline]
    fn wake_slot(&self, id: TaskId, slot: &mut TaskSlot) {
        match slot.state {
            TaskState::Idle => {
                slot.state = TaskState::Queued;
                slot.prefetch_future();
                self.ready.borrow_mut().push(id);
            }
            TaskState::Running => slot.state = TaskState::RunningWoken,
            TaskState::Queued | TaskState::RunningWoken | TaskState::Done => {}
        }
    }

    /// Cancels a task: drops its future now, or after its poll if it is running.
    pub(crate) fn abort(&self, id: TaskId) {
        let (future, node) = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.get_mut(id) else {
                return;
            };
            match slot.state {
                TaskState::Done => return,
                TaskState::Running | TaskState::RunningWoken => {
                    slot.request_cancel();
                    return;
                }
                TaskState::Idle | TaskState::Queued => {}
            }
            let node = slot.node();
            let future = slot
                .take_future()
                .expect("an idle or queued task holds its future");
            (future, node)
        };
        let leftover = self.finish_task(id, Outcome::Cancelled);
        self.drop_cell(future, node);
        self.drop_outcome(leftover, node);
    }

    /// The output of a finished task (`None` if it was cancelled), or `Pending` after
    /// registering the handle's waker.
    pub(crate) fn poll_join<T: 'static>(
        &self,
        id: TaskId,
        cx: &mut Context<'_>,
    ) -> Poll<Option<T>> {
        let mut tasks = self.tasks.borrow_mut();
        let slot = tasks
            .get_mut(id)
            .expect("a join handle keeps its task's slot");
        if slot.state == TaskState::Done {
            let node = slot.node();
            let outcome = slot.take_outcome();
            tasks.free(id);
            let Outcome::Output(mut cell) = outcome else {
                return Poll::Ready(None);
            };
            let output = cell
                .as_mut()
                .output()
                .downcast_mut::<Option<T>>()
                .and_then(Option::take);
            if output.is_some() {
                // The future is gone and its output taken: dropping the cell runs no user code.
                tasks.recycle(cell);
            } else {
                // Not reachable through the API (run numbers keep handles in their run); if
                // it were, the cell's drop must not run user code under the borrow.
                drop(tasks);
                self.drop_cell(cell, node);
            }
            return Poll::Ready(Some(
                output.expect("a task's output has the handle's type and is taken once"),
            ));
        }
        tasks.set_join_waker(id, cx.waker());
        Poll::Pending
    }

    pub(crate) fn detach(&self, id: TaskId) {
        let (leftover, node) = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.get_mut(id) else {
                return;
            };
            let node = slot.node();
            if slot.state == TaskState::Done {
                let outcome = slot.take_outcome();
                tasks.free(id);
                (Some(outcome), node)
            } else {
                slot.detach();
                (None, node)
            }
        };
        self.drop_outcome(leftover, node);
    }

    pub(crate) fn is_finished(&self, id: TaskId) -> bool {
        self.tasks
            .borrow()
            .get(id)
            .is_none_or(|slot| slot.state == TaskState::Done)
    }

    #[inline]
    pub(crate) fn same_run(&self, run: u32) -> bool {
        run == self.run_tag
    }

    #[inline]
    pub(crate) fn run_tag(&self) -> u32 {
        self.run_tag
    }

    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    pub(crate) fn current_task(&self) -> Option<TaskId> {
        self.current_task.get()
    }

    #[inline]
    pub(crate) fn current_node(&self) -> NodeId {
        self.current_node.get()
    }

    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.now_ns.get()
    }

    /// Records an event on the current node. Always inlined: the kind is then known at each
    /// call site and packs into registers (see `trace`).
    #[inline(always)]
    pub(crate) fn record(&self, kind: EventKind) {
        self.trace
            .borrow_mut()
            .record(self.now_ns.get(), self.current_node.get(), kind);
    }

    /// Records a note on behalf of `node` (the network's hot path records two per message).
    #[inline]
    pub(crate) fn note(&self, node: NodeId, source: &'static str, words: [u64; 3], text: String) {
        let mut trace = self.trace.borrow_mut();
        if text.is_empty() {
            trace.note_words(self.now_ns.get(), node, source, words);
        } else {
            trace.note(self.now_ns.get(), node, source, words, text);
        }
    }

    /// Tells a streamed trace the name of a node about to act.
    pub(crate) fn name_node_in_trace(&self, node: NodeId) {
        self.trace
            .borrow()
            .name_node(node, self.nodes.borrow().name(node));
    }

    /// Draws from `stream`; `f` must not draw again (the registry is borrowed while it runs).
    #[inline]
    pub(crate) fn with_stream<R>(&self, stream: Stream, f: impl FnOnce(&mut Rng) -> R) -> R {
        f(self.streams.borrow_mut().get(stream))
    }

    /// Opens the stream of a node just created.
    pub(crate) fn open_node_stream(&self, node: NodeId, name: &str) {
        self.streams.borrow_mut().add_node(node, name);
    }

    #[inline]
    pub(crate) fn arm_timer(&self, deadline_ns: u64, waker: Waker) -> TimerKey {
        assert!(
            deadline_ns >= self.now_ns.get(),
            "a timer armed in the past"
        );
        self.timers
            .borrow_mut()
            .insert_with(deadline_ns, || Alarm::Wake(waker))
    }

    /// Replaces the waker of an armed sleep; false if the timer already fired.
    #[inline]
    pub(crate) fn refresh_timer(&self, key: TimerKey, waker: &Waker) -> bool {
        match self.timers.borrow_mut().alarm_mut(key) {
            Some(Alarm::Wake(current)) => {
                if !current.will_wake(waker) {
                    *current = waker.clone();
                }
                true
            }
            Some(Alarm::Call(_)) => panic!("a sleep's key names a callback timer"),
            None => false,
        }
    }

    pub(crate) fn call_at(&self, deadline_ns: u64, callback: Box<dyn FnOnce()>) -> TimerKey {
        let deadline_ns = deadline_ns.max(self.now_ns.get());
        self.timers
            .borrow_mut()
            .insert_with(deadline_ns, || Alarm::Call(callback))
    }

    /// Disarms a timer. What it held is dropped after the borrow ends: a callback's captures
    /// may have destructors that use the world.
    #[inline]
    pub(crate) fn cancel_timer(&self, key: TimerKey) {
        let removed = self.timers.borrow_mut().remove(key);
        drop(removed);
    }

    /// Records the first failure of the run; later ones are consequences and are dropped.
    pub(crate) fn fail(&self, kind: FailureKind) {
        let mut failure = self.failure.borrow_mut();
        if failure.is_none() {
            let node = self.current_task.get().map(|_| self.current_node.get());
            *failure = Some((kind, node, self.current_task.get()));
        }
    }

    pub(crate) fn extension<T: Any + Default>(&self) -> Rc<T> {
        let key = TypeId::of::<T>();
        let found = self
            .extensions
            .borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone());
        let any = found.unwrap_or_else(|| {
            let value: Rc<dyn Any> = Rc::new(T::default());
            self.extensions.borrow_mut().push((key, value.clone()));
            value
        });
        any.downcast::<T>()
            .unwrap_or_else(|_| unreachable!("extension stored under its TypeId"))
    }

    /// A fault came up on `node`, drawn from `stream`: the ledger numbers it and decides; an
    /// applied fault is noted in the trace and listed for the report, a masked one only noted.
    pub(crate) fn fault(
        &self,
        stream: Stream,
        node: NodeId,
        cause: Cause,
        describe: impl FnOnce() -> String,
    ) -> bool {
        let verdict = self.ledger.borrow_mut().come_up(cause);
        match verdict {
            Verdict::Healed => false,
            Verdict::Masked(id) => {
                let (source, words) = FaultNote::Masked { id }.encode();
                self.note(node, source, words, format!("masked fault #{id}"));
                false
            }
            Verdict::Applied(id) => {
                self.list_fault(node, Some(id), Some(stream), describe());
                true
            }
        }
    }

    /// Notes a fault the test applied itself (a kill, an explicit partition): no id, no draw.
    pub(crate) fn note_fault(&self, node: NodeId, text: String) {
        self.list_fault(node, None, None, text);
    }

    fn list_fault(&self, node: NodeId, id: Option<u64>, stream: Option<Stream>, text: String) {
        let (source, words) = FaultNote::Applied { id }.encode();
        self.note(node, source, words, text.clone());
        let fault = InjectedFault {
            id,
            stream: stream.map(|s| s.to_string()),
            time: Duration::from_nanos(self.now_ns.get()),
            node: self.nodes.borrow().name(node).to_owned(),
            text,
        };
        self.ledger.borrow_mut().list(fault);
    }

    /// Whether a `buggify!` site is on for this run (decided once per site and run).
    pub(crate) fn buggify_site_enabled(&self, site: &Site) -> bool {
        self.ledger.borrow_mut().site_enabled(site)
    }

    /// The deadline a sleep really fires at: stretched now and then when the run says so.
    #[inline]
    pub(crate) fn stretched_deadline(&self, deadline_ns: u64) -> u64 {
        match self.config.sleep_stretch {
            None => deadline_ns,
            Some(max) => self.stretch(deadline_ns, max),
        }
    }

    #[cold]
    fn stretch(&self, deadline_ns: u64, max: Duration) -> u64 {
        let extra = self.with_stream(Stream::Buggify, |rng| {
            rng.chance(crate::fault::STRETCH_CHANCE)
                .then(|| crate::fault::stretch(rng, max))
        });
        let extra_ns = extra.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        deadline_ns.saturating_add(extra_ns)
    }

    pub(crate) fn add_hook(&self, hook: Rc<dyn NodeHook>) {
        self.hooks.borrow_mut().push(hook);
    }

    fn hooks(&self) -> Vec<Rc<dyn NodeHook>> {
        self.hooks.borrow().clone()
    }

    // ----- nodes -----

    pub(crate) fn kill_node(&self, node: NodeId) {
        assert_ne!(
            node,
            NodeId::SUPERVISOR,
            "the supervisor (test body) cannot be killed"
        );
        if self.nodes.borrow().status(node) == NodeStatus::Dead {
            return;
        }
        self.nodes.borrow_mut().mark_dead(node);
        self.record(EventKind::NodeKill { node });
        let victims = self.tasks.borrow().unfinished_on(node);
        for &id in &victims {
            self.abort(id);
        }
        // No task of the dead process may run again: each is finished now, or is being polled
        // and ends cancelled when its poll returns. (Tasks spawned meanwhile are not victims:
        // on the dead node they were cancelled at birth, and a destructor that restarted the
        // node started a new process.)
        let tasks = self.tasks.borrow();
        for &id in &victims {
            assert!(
                tasks
                    .get(id)
                    .is_none_or(|slot| slot.state == TaskState::Done || slot.cancel_requested()),
                "task {id} outlived the kill of its node"
            );
        }
        drop(tasks);
        for hook in self.hooks() {
            hook.node_killed(node);
        }
    }

    pub(crate) fn restart_node(&self, node: NodeId, upgrade: Option<crate::node::Factory>) {
        assert_ne!(
            node,
            NodeId::SUPERVISOR,
            "the supervisor (test body) cannot be restarted"
        );
        self.kill_node(node);
        let factory = {
            let mut nodes = self.nodes.borrow_mut();
            if let Some(factory) = upgrade {
                nodes.set_factory(node, factory);
            }
            nodes.mark_running(node);
            nodes.factory(node)
        };
        let kind = if factory.1 {
            EventKind::NodeUpgrade { node }
        } else {
            EventKind::NodeRestart { node }
        };
        self.record(kind);
        for hook in self.hooks() {
            hook.node_restarted(node);
        }
        self.spawn_on(node, Some("main".into()), (factory.0)());
    }

    pub(crate) fn pause_node(&self, node: NodeId) {
        assert_ne!(
            node,
            NodeId::SUPERVISOR,
            "the supervisor (test body) cannot be paused"
        );
        if self.nodes.borrow().status(node) != NodeStatus::Running {
            return;
        }
        self.nodes.borrow_mut().set_status(node, NodeStatus::Paused);
        self.record(EventKind::NodePause { node });
        for hook in self.hooks() {
            hook.node_paused(node);
        }
    }

    pub(crate) fn resume_node(&self, node: NodeId) {
        if self.nodes.borrow().status(node) != NodeStatus::Paused {
            return;
        }
        let parked = {
            let mut nodes = self.nodes.borrow_mut();
            nodes.set_status(node, NodeStatus::Running);
            nodes.take_parked(node)
        };
        self.ready.borrow_mut().extend(parked);
        self.record(EventKind::NodeResume { node });
        for hook in self.hooks() {
            hook.node_resumed(node);
        }
    }

    // ----- end of run -----

    fn describe_waiting(&self) -> Vec<String> {
        let tasks = self.tasks.borrow();
        let nodes = self.nodes.borrow();
        tasks
            .iter_unfinished()
            .take(32)
            .map(|(id, slot)| {
                let name = tasks.name(id).unwrap_or("unnamed");
                format!("{id} ({name}) on {}", nodes.name(slot.node()))
            })
            .collect()
    }

    fn summary(&self) -> RunSummary {
        let mut trace = self.trace.borrow_mut();
        RunSummary {
            seed: self.seed,
            elapsed: Duration::from_nanos(self.now_ns.get()),
            events: trace.event_count(),
            polls: self.polls.get(),
            fingerprint: trace.fingerprint(),
            trace: trace.take_full(),
            coverage: self.coverage.borrow().snapshot(),
            node_names: self.nodes.borrow().names(),
        }
    }

    fn finish(&self) -> Result<RunSummary, Box<RunFailure>> {
        let failure = self.failure.borrow_mut().take();
        let summary = self.summary();
        let Some((kind, node, task)) = failure else {
            return Ok(summary);
        };
        let nodes = self.nodes.borrow();
        let task = task.map(|id| {
            let tasks = self.tasks.borrow();
            match tasks.name(id) {
                Some(name) => format!("{id} ({name})"),
                None => id.to_string(),
            }
        });
        Err(Box::new(RunFailure {
            summary,
            kind,
            node: node.map(|n| nodes.name(n).to_owned()),
            task,
            tail: self.trace.borrow().tail(),
            faults: self.ledger.borrow().applied().to_vec(),
            context: self.context.borrow().clone(),
        }))
    }
}
