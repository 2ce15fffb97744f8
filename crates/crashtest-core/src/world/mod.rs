//! The world of one run: its state, and the thread-local that makes it reachable.
//!
//! One run is one OS thread and one `World`, reachable from user code through a thread-local
//! set for the duration of [`World::run`]. Nothing here is global, so many runs may go on at
//! once on many threads. The world's behaviour is split by concern:
//! - `executor`: the run loop, polling, waking, spawning, cancelling and joining tasks;
//! - `clock`: virtual time, timers, the stretch of sleeps, a poll's virtual CPU cost;
//! - `faults`: the fault ledger's rulings noted in the trace and listed, `buggify!` sites,
//!   the heal;
//! - `nodes`: the node life cycle and the hooks told of it;
//! - `checks`: step checks, the run's first failure, context lines, extensions;
//! - `probe`: where a deadlocked run's tasks wait, asked by polling each once more.
//!
//! This file keeps what spans them: creating and finishing a run, the stream registry (and
//! exploration's reseed), and the trace's two verbs, `record` and `note`.
//!
//! Invariants:
//! - Each piece of state sits in its own `RefCell`, and no borrow is held while user code runs
//!   (a poll or a `Drop`): futures are taken out of the task table to be polled or dropped.
//! - The run ends when the body (the first task) finishes, or on the first failure.

mod checks;
mod clock;
mod executor;
mod faults;
mod nodes;
mod probe;

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
use crate::plumbing::checks::WaitWitness;
use crate::plumbing::faults::Healer;
use crate::plumbing::life::NodeHook;
use crate::plumbing::notes::Text;
use crate::report::{FailureKind, InjectedFault, RunFailure, RunSummary};
use crate::rng::{Rng, Stream, Streams};
use crate::sim::Config;
use crate::task::waker::waker_for;
use crate::task::{
    BoxedUnit, Label, Outcome, ReadyQueue, TaskFuture, TaskId, TaskSlot, TaskState, TaskTable,
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
    /// Runs a simulator component's function on a word it chose: a callback that captures
    /// nothing, so arming it allocates nothing (a segment's delivery, armed for every write).
    Function { function: fn(u64), argument: u64 },
}

// A third kind of alarm costs no space: the timer slots stay three words of alarm.
const _: () = assert!(size_of::<Alarm>() == 3 * size_of::<u64>());
const _: () = assert!(size_of::<Option<Alarm>>() == size_of::<Alarm>());

/// An invariant: `Err` says what is broken.
type Check = Rc<dyn Fn() -> Result<(), String>>;

/// A check run every `every` polls; `countdown` polls remain until the next run.
struct StepCheck {
    /// Shared, so that a check that is due costs no copy of its name.
    name: Rc<str>,
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
        // The tokio stand-in reads the clock through the hooks, not the world: from here on it
        // must read this run's.
        assert_eq!(
            crashtest_hooks::now_ns(),
            Some(world.now_ns.get()),
            "the tokio stand-in reads another clock than the run's"
        );
        // A world runs once: entered fresh, before its body is spawned.
        assert!(
            world.polls.get() == 0 && world.body.get().is_none(),
            "a world was entered a second time"
        );
        Enter {
            world: Some(world),
            seam: Some(seam),
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        // A run leaves between polls (not while a panic unwinds: the panic says what broke).
        assert!(
            std::thread::panicking()
                || self
                    .world
                    .as_ref()
                    .is_some_and(|world| world.current_task.get().is_none()),
            "a run was left inside a poll"
        );
        CURRENT.with(|current| {
            assert!(
                self.world
                    .as_ref()
                    .is_some_and(|world| std::ptr::eq(current.get(), Rc::as_ptr(world))),
                "the run that leaves is the one that entered"
            );
            current.set(std::ptr::null());
        });
        drop(self.seam.take());
        // The run ended its leftover tasks inside the world (`end_leftover_tasks`); what is
        // dropped now is their unread outputs and the world's own state.
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
    /// The node whose code runs: a polled task's, a dropped task's while its destructors run,
    /// the supervisor's otherwise.
    current_node: Cell<NodeId>,
    /// The run is over (its result decided): what is spawned now dies at birth.
    ended: Cell<bool>,
    /// Task destructors running now (nested when one drops another task's handle or cell):
    /// between polls they are the only code that acts for a node other than the supervisor.
    destructors: Cell<u32>,
    /// A deadlock's probe is polling a task (see `probe`): what that code does is no part of
    /// the run, so it records no event or note, reaches no coverage site and applies no fault.
    probing: Cell<bool>,
    /// Where the task a probe polls first did something of the run's (see `probe`).
    probe_progress: RefCell<Option<std::backtrace::Backtrace>>,
    failure: RefCell<Option<Failed>>,
    polls: Cell<u64>,
    polls_since_clock_moved: Cell<u64>,
    /// The last number handed out by the tokio stand-in's seam for its ids.
    serials: Cell<u64>,
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
    /// Asked what tasks wait on, when the run deadlocks.
    witnesses: RefCell<Vec<Rc<dyn WaitWitness>>>,
    /// Lines that describe how this run was set up (a swarm profile), for failure reports.
    context: RefCell<Vec<String>>,
    pub(crate) watch: Arc<Watch>,
}

impl World {
    /// The next of the run's serial numbers, from 1 (the tokio stand-in's ids).
    pub(crate) fn next_serial(&self) -> u64 {
        let next = self.serials.get() + 1;
        self.serials.set(next);
        next
    }

    fn new(seed: u64, config: Config) -> World {
        // What the run loop and the clock assume of the configuration (its setters refuse the
        // rest, but the fields are the crate's to write).
        assert!(
            config.poll_cost_ns.0 <= config.poll_cost_ns.1,
            "the poll cost range is empty"
        );
        assert!(
            config.livelock_polls > 0,
            "the livelock bound allows no poll"
        );
        // The fork point comes after the whole branch path (`run_loop` reseeds the fork at
        // the path's length).
        assert!(
            config.fork.as_ref().is_none_or(|fork| config
                .explore
                .last()
                .is_none_or(|&(at_ns, _)| at_ns <= fork.at_ns)),
            "the fork point comes before the branch path's end"
        );
        if crate::verify::enabled() {
            assert!(
                config.explore.windows(2).all(|pair| pair[0].0 <= pair[1].0),
                "a branch path's points are out of time order"
            );
        }
        let run_tag = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
        let mut streams = Streams::new(seed);
        let trace = Trace::new(
            seed,
            config.record_trace,
            config.record_hashes,
            config.stream.clone(),
        );
        let nodes = NodeTable::new(&mut streams);
        assert_eq!(nodes.len(), 1, "a run starts with the supervisor alone");
        assert_eq!(
            streams.node_count(),
            nodes.len(),
            "the node table and the stream registry start with the supervisor alone"
        );
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
            ended: Cell::new(false),
            destructors: Cell::new(0),
            probing: Cell::new(false),
            probe_progress: RefCell::new(None),
            failure: RefCell::new(None),
            polls: Cell::new(0),
            polls_since_clock_moved: Cell::new(0),
            serials: Cell::new(0),
            body: Cell::new(None),
            body_done: Cell::new(false),
            extensions: RefCell::new(Vec::new()),
            hooks: RefCell::new(Vec::new()),
            ledger: RefCell::new(Ledger::new(seed, &config)),
            coverage: RefCell::new(RunCoverage::default()),
            step_checks: RefCell::new(Vec::new()),
            healers: RefCell::new(Vec::new()),
            witnesses: RefCell::new(Vec::new()),
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
        seed_fastrand(seed);
        let world = Rc::new(World::new(seed, config));
        let _enter = Enter::new(world.clone());
        let body = world.spawn_on(NodeId::SUPERVISOR, Label::own("body"), body);
        // Task ids count spawns from the run's start, and the body is the first (`t0`).
        assert_eq!(body.serial, 0, "the run's body is not its first task");
        world.body.set(Some(body));
        world.run_loop();
        assert!(
            world.body_done.get() || world.failure.borrow().is_some(),
            "a run ends when its body is done or on a failure"
        );
        let result = world.finish();
        let hashes = world.trace.borrow_mut().take_hashes();
        world.trace.borrow_mut().end();
        let result = world.end_leftover_tasks(result);
        // A determinism check compares the hashes of two runs: asked for, they are there.
        assert_eq!(
            hashes.is_some(),
            world.config.record_hashes,
            "the per-event hashes are kept exactly when asked for"
        );
        (result, hashes)
    }

    /// Re-draws every random stream from `sub_seed`: the run so far is the original seed's,
    /// the future a fresh one (exploring from a point in a run's past). `depth` counts the
    /// branch path's points before this one.
    fn reseed(&self, depth: usize, sub_seed: u64) {
        assert!(
            depth <= self.config.explore.len(),
            "reseed depth {depth} is past the branch path and its fork point"
        );
        // The future is re-drawn between polls, by the run loop, not by a task.
        assert!(
            self.current_task.get().is_none(),
            "the streams were re-drawn inside a poll"
        );
        self.streams.borrow_mut().reseed(depth, sub_seed);
        let text = format!("explore: future re-drawn from sub-seed {sub_seed}");
        self.record(EventKind::Note {
            source: "explore",
            words: [sub_seed, depth as u64, 0],
            text,
        });
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
        let node = self.current_node.get();
        // Read on every spawn: a debug assertion (it re-checks what the run loop sets).
        debug_assert!(
            self.acts_as_it_should(),
            "between polls the supervisor acts, not {node}"
        );
        node
    }

    /// Whether the node acting now is one that may: a polled task's, the supervisor between
    /// polls, or a dropped task's node while its destructors run (see `drop_cell`).
    pub(crate) fn acts_as_it_should(&self) -> bool {
        self.current_task.get().is_some()
            || self.current_node.get() == NodeId::SUPERVISOR
            || self.destructors.get() > 0
    }

    /// Records an event on the current node. Always inlined: the kind is then known at each
    /// call site and packs into registers (see `trace`).
    #[inline(always)]
    pub(crate) fn record(&self, kind: EventKind) {
        if self.probing.get() {
            return self.probe_went_on();
        }
        // The event goes down as the current node's: between polls that is the supervisor
        // (re-checked on every event: debug builds only).
        debug_assert!(
            self.acts_as_it_should(),
            "an event between polls recorded on {}",
            self.current_node.get()
        );
        self.trace
            .borrow_mut()
            .record(self.now_ns.get(), self.current_node.get(), kind);
    }

    /// Records a note on behalf of `node` (the network's hot path records two per message).
    #[inline]
    pub(crate) fn note(&self, node: NodeId, source: &'static str, words: [u64; 3], text: String) {
        self.assert_note_node(node);
        if self.probing.get() {
            return self.probe_went_on();
        }
        let mut trace = self.trace.borrow_mut();
        if text.is_empty() {
            trace.note_words(self.now_ns.get(), node, source, words);
        } else {
            trace.note(self.now_ns.get(), node, source, words, text);
        }
    }

    /// Records a note on behalf of `node` whose text `write` builds in the trace's own
    /// buffer (see `Trace::note_with`).
    #[inline]
    pub(crate) fn note_with(
        &self,
        node: NodeId,
        source: &'static str,
        words: [u64; 3],
        write: impl FnOnce(&mut Text<'_>),
    ) {
        self.assert_note_node(node);
        if self.probing.get() {
            return self.probe_went_on();
        }
        self.trace
            .borrow_mut()
            .note_with(self.now_ns.get(), node, source, words, |buf| {
                write(&mut Text::new(buf));
            });
    }

    /// A note is made on behalf of a node of the run, whichever way its text comes.
    #[inline]
    fn assert_note_node(&self, node: NodeId) {
        assert!(
            node.index() < self.nodes.borrow().len(),
            "a note on behalf of {node}, which is not a node of the run"
        );
    }

    /// Counts a coverage site reached (and whether it fired), unless a probe is polling.
    #[inline]
    pub(crate) fn count_coverage(&self, site: &'static Site, fired: bool) {
        if self.probing.get() {
            return self.probe_went_on();
        }
        self.coverage.borrow_mut().count(site, fired);
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

    fn summary(&self) -> RunSummary {
        let mut trace = self.trace.borrow_mut();
        assert!(
            trace.event_count() >= self.polls.get(),
            "every poll is an event of the trace"
        );
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
        assert!(
            self.current_task.get().is_none() && !self.ended.get(),
            "a run's result is taken once, between polls"
        );
        let failure = self.failure.borrow_mut().take();
        let summary = self.summary();
        match failure {
            None => Ok(summary),
            Some(failure) => Err(self.report(summary, failure)),
        }
    }

    /// Ends the tasks still alive once the run is over (servers that wait forever, nodes
    /// never stopped), inside the world and each as code of its node, so that their
    /// destructors reach the simulation they were written for and not the host: a spawn gets
    /// a task that dies at birth instead of a call into a tokio runtime that is not there,
    /// and nothing unwinds out of the run. `result` is decided and fingerprinted already
    /// (what the destructors do is in no trace); a destructor that panics here still fails a
    /// run that passed.
    fn end_leftover_tasks(
        &self,
        result: Result<RunSummary, Box<RunFailure>>,
    ) -> Result<RunSummary, Box<RunFailure>> {
        assert!(
            self.current_task.get().is_none() && self.failure.borrow().is_none(),
            "leftover tasks are ended between polls, after the run's result is taken"
        );
        self.ended.set(true);
        // Only waiting tasks hold their futures: a task whose poll panicked, which ended a
        // failed run, lost its future then.
        let waiting = |state: TaskState| matches!(state, TaskState::Idle | TaskState::Queued);
        let leftovers: Vec<TaskId> = self
            .tasks
            .borrow()
            .iter_unfinished()
            .filter(|(_, slot)| waiting(slot.state))
            .map(|(id, _)| id)
            .collect();
        for id in leftovers {
            self.abort(id);
        }
        assert!(
            self.tasks
                .borrow()
                .iter_unfinished()
                .all(|(_, slot)| !waiting(slot.state)),
            "a task outlived the end of its run"
        );
        let late = self.failure.borrow_mut().take();
        match (result, late) {
            (Ok(summary), Some(failure)) => {
                let mut report = self.report(summary, failure);
                // The tail shows the run, whose result this is: not the spawns and closes of
                // the destructors that ran after it.
                let events = report.summary.events;
                report.tail.retain(|event| event.index < events);
                Err(report)
            }
            (result, _) => result,
        }
    }

    /// The failure report of a run that ended with `failure`.
    fn report(&self, summary: RunSummary, (kind, node, task): Failed) -> Box<RunFailure> {
        let nodes = self.nodes.borrow();
        assert!(
            node.is_none_or(|n| n.index() < nodes.len()),
            "the failed node {node:?} is a node of the run"
        );
        // A failure inside a poll names the task and its node, one between polls neither.
        assert_eq!(
            node.is_some(),
            task.is_some(),
            "a failure names a task without its node, or a node without its task"
        );
        let task = task.map(|id| self.tasks.borrow().called(id));
        Box::new(RunFailure {
            summary,
            kind,
            node: node.map(|n| nodes.name(n).to_owned()),
            task,
            tail: self.trace.borrow().tail(),
            faults: self
                .ledger
                .borrow()
                .applied()
                .iter()
                .map(|fault| InjectedFault {
                    id: fault.id,
                    stream: fault.stream.map(|s| s.to_string()),
                    time: Duration::from_nanos(fault.time_ns),
                    node: nodes.name(fault.node).to_owned(),
                    text: fault.text.clone(),
                })
                .collect(),
            context: self.context.borrow().clone(),
        })
    }
}

/// Seeds fastrand's generator on this thread from the run's seed. fastrand seeds it, once per
/// thread, from a hash of the thread's id, which differs from run to run of a seed; and a
/// thread that runs two simulations would carry its state from one into the other. Libraries
/// draw names from it (tempfile's `.tmpXXXXXX`), so each run starts it from its own seed,
/// without a draw from the run's streams (the runs of programs that never use it are
/// unchanged).
fn seed_fastrand(seed: u64) {
    fastrand::seed(seed ^ 0xfa57_7a4d_5eed_0001);
}
