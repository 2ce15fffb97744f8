//! The seam between crashtest's tokio stand-in and the simulator.
//!
//! The stand-in (`crashtest-tokio`) is compiled under the package name `tokio` in a user's
//! workspace, so every crate that depends on tokio, crashtest's own crates included, gets it.
//! It therefore cannot depend on the simulator (the simulator depends on tokio: a cycle).
//! This crate breaks the cycle: it depends on nothing, the stand-in calls through it, and the
//! simulator fills it in.
//!
//! Three parts:
//! - Per thread, the running simulation: [`current`] answers "is a simulation running on this
//!   thread, and if so, which calls serve it?" with one thread-local read, and [`running`]
//!   gives the run's clock anchor with it in the same read. The simulator's core sets it for
//!   the duration of a run ([`enter`]). Outside a simulation it is `None`, and the stand-in
//!   goes straight to real tokio.
//! - Per thread, whether the running code may change the host's files inside a simulation
//!   ([`with_host_files`]): the determinism guards refuse such changes otherwise, and the
//!   stand-in, which cannot depend on the guards, opens the scope where it must. Such
//!   per-thread scopes are [`Nesting`]s, which the stand-in's blocking region shares.
//! - Per process, the simulated network, disk and socket adoption ([`register_network`],
//!   [`register_disk`], [`register_socket_adopter`]): components built on top of the core,
//!   registered once by the `crashtest` facade before its first run. They keep their
//!   per-run state in the running simulation, so one registration serves every run.
//!
//! The calls are byte-level and type-erased (no tokio types; the one generic piece is the
//! task cell both sides build, `FutureCell`, handed over as bytes and a vtable), so that the
//! stand-in and the simulator agree on this crate alone. Everything here is used only from
//! the thread of the run it belongs to; the `Send` and `Sync` bounds exist because the
//! stand-in's types must be `Send` and `Sync` like tokio's.
//!
//! ```
//! // Outside a simulation nothing is current: the stand-in calls real tokio.
//! assert!(crashtest_hooks::current().is_none());
//! assert!(crashtest_hooks::anchor().is_none());
//! ```

pub mod epoch;
pub mod fs;
mod host_files;
mod nesting;
pub mod net;
mod registry;
mod task;

use std::cell::Cell;
use std::fmt;
use std::panic::Location;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

pub use host_files::{host_files_allowed, with_host_files};
pub use nesting::Nesting;
pub use registry::{
    disk, network, register_disk, register_network, register_socket_adopter, socket_adopter,
};
pub use task::{FutureCell, RawTask, TaskCell, TaskRef, TimerRef};

/// What the simulator's core does for the stand-in: tasks, timers, the seeded stream, and
/// failing the run. Implemented once, by `crashtest-core`.
///
/// Tasks and timers are named by plain ids ([`TaskRef`], [`TimerRef`]) that carry the run
/// they belong to: an id from another run (a handle smuggled out in a static) names nothing,
/// and calls with it do nothing or report the task finished.
pub trait Simulator: Sync {
    /// Spawns `task` on the calling node (the supervisor when called from the test body).
    /// The task's bytes are moved into the simulator's storage before this returns (see
    /// [`RawTask`]); the stand-in calls it through [`RawTask::spawn`]. Reports call the task
    /// by its name and `origin`, where the program spawned it.
    fn spawn(
        &self,
        name: Option<&str>,
        origin: &'static Location<'static>,
        task: RawTask<'_>,
    ) -> TaskRef;

    /// Once the task finished: `Ready(true)` after moving its output into `out` (through
    /// [`TaskCell::take_output`]), or `Ready(false)` if the task was cancelled. `Pending` after
    /// registering `cx`'s waker.
    ///
    /// # Safety
    ///
    /// `out` points to a live `Option<T>`, `T` the output type of the task's future.
    ///
    /// # Panics
    ///
    /// Panics if the task's outcome was already taken.
    unsafe fn poll_join(&self, task: TaskRef, cx: &mut Context<'_>, out: *mut ()) -> Poll<bool>;

    /// Cancels the task: its future is dropped now, or when its current poll returns.
    fn abort(&self, task: TaskRef);

    /// Nobody will join the task: its output is dropped when it finishes.
    fn detach(&self, task: TaskRef);

    /// True once the task completed or was cancelled.
    fn is_finished(&self, task: TaskRef) -> bool;

    /// The id of the task being polled, if any (the same number `crashtest::task::id()`
    /// gives as `to_u64`).
    fn current_task(&self) -> Option<u64>;

    /// Virtual nanoseconds since the run began.
    fn now_ns(&self) -> u64;

    /// When a sleep until `deadline_ns` really fires: the deadline, or later when the run
    /// stretches sleeps (a fault that a correct program tolerates).
    fn fire_time(&self, deadline_ns: u64) -> u64;

    /// A sleep of `delay_ns` from now, in one call: its deadline (saturating) and when it
    /// really fires (see [`Simulator::fire_time`]).
    fn sleep_for(&self, delay_ns: u64) -> (u64, u64);

    /// Polls a sleep that fires at `at_ns`: `Ready` once the virtual clock reached it;
    /// otherwise its timer (`armed`, armed here if `None` or fired) wakes `waker` then.
    fn poll_timer(&self, at_ns: u64, armed: &mut Option<TimerRef>, waker: &Waker) -> Poll<()>;

    /// Disarms a timer (nothing happens if it fired already).
    fn cancel_timer(&self, timer: TimerRef);

    /// A number in `0..bound` from the run's seeded `"tokio"` stream.
    ///
    /// # Panics
    ///
    /// Panics if `bound` is zero.
    fn draw_below(&self, bound: u64) -> u64;

    /// Fails the run with `message` (the first failure of a run is the one reported).
    fn refuse(&self, message: String);

    /// The next number of a count the run keeps for the stand-in's ids (a `LocalSet`'s),
    /// from 1: unique in the run and drawn from nothing random, so that handing one out
    /// shifts no draw of the run's.
    fn next_serial(&self) -> u64;
}

impl fmt::Debug for dyn Simulator + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Simulator")
    }
}

/// The simulation running on this thread and its clock's anchor, as one thread-local holds
/// them.
///
/// ```
/// assert!(crashtest_hooks::running().is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Running {
    /// The calls that serve the simulation.
    pub sim: &'static dyn Simulator,
    /// The std `Instant` at which its virtual clock reads zero (see [`anchor`]).
    pub anchor: Instant,
    /// The simulation's virtual clock, in nanoseconds; read only through [`now_ns`], while
    /// this value is the thread's current one (see [`enter`]).
    clock: *const Cell<u64>,
}

thread_local! {
    /// The simulation running on this thread, with its anchor. A `Copy` value with a constant
    /// initializer, so reading it is a plain load: it is the one check the stand-in pays per
    /// call outside a simulation.
    static CURRENT: Cell<Option<Running>> = const { Cell::new(None) };
}

/// The simulation running on this thread, if any.
///
/// ```
/// assert!(crashtest_hooks::current().is_none());
/// ```
#[inline]
pub fn current() -> Option<&'static dyn Simulator> {
    CURRENT.with(|cell| cell.get().map(|running| running.sim))
}

/// The simulation running on this thread and its anchor, in one thread-local read.
///
/// ```
/// assert!(crashtest_hooks::running().is_none());
/// ```
#[inline]
pub fn running() -> Option<Running> {
    CURRENT.with(Cell::get)
}

/// The virtual clock of the simulation running on this thread, in nanoseconds since it began:
/// one thread-local read and one load, no call into the simulator (sleeps check it on every
/// poll).
///
/// ```
/// assert!(crashtest_hooks::now_ns().is_none());
/// ```
#[inline]
pub fn now_ns() -> Option<u64> {
    CURRENT.with(|cell| {
        cell.get().map(|running| {
            // SAFETY: the thread's current value's clock is valid until the `Entered` guard
            // that set it drops and clears it (the contract of `enter`), and it is read here,
            // on this thread, while it is current.
            unsafe { (*running.clock).get() }
        })
    })
}

/// The running simulation's anchor (see [`anchor`]) and its virtual clock (see [`now_ns`]),
/// in one thread-local read.
///
/// ```
/// assert!(crashtest_hooks::anchored_now().is_none());
/// ```
#[inline]
pub fn anchored_now() -> Option<(Instant, u64)> {
    CURRENT.with(|cell| {
        cell.get().map(|running| {
            // SAFETY: as in `now_ns`.
            (running.anchor, unsafe { (*running.clock).get() })
        })
    })
}

/// The std `Instant` that virtual time zero of the running simulation maps to.
///
/// Taken from `std::time::Instant::now()` when the run began. With crashtest's determinism
/// guards linked, std's monotonic clock reads virtual time on a fixed base inside a
/// simulation, so `anchor + virtual now` equals `std::time::Instant::now()` exactly, and a
/// deadline a library computes from std's clock converts to the right virtual time. Without
/// the guards it still gives one consistent mapping for the run.
///
/// ```
/// assert!(crashtest_hooks::anchor().is_none());
/// ```
#[inline]
pub fn anchor() -> Option<Instant> {
    CURRENT.with(|cell| cell.get().map(|running| running.anchor))
}

/// Makes `simulator` this thread's current simulation until the returned guard drops (on
/// every exit path, panics included), with `clock` its virtual clock in nanoseconds. Called by
/// the simulator's core when a run begins, once the run's virtual clock reads zero.
///
/// # Safety
///
/// `clock` stays valid, and is changed only on this thread, until the guard drops.
///
/// # Panics
///
/// Panics if a simulation is already current on this thread.
///
/// ```
/// use std::task::{Context, Poll, Waker};
/// use crashtest_hooks::{RawTask, Simulator, TaskRef, TimerRef};
///
/// struct Stopped;
/// impl Simulator for Stopped {
///     fn spawn(
///         &self,
///         _: Option<&str>,
///         _: &'static std::panic::Location<'static>,
///         _: RawTask<'_>,
///     ) -> TaskRef {
///         unimplemented!()
///     }
///     unsafe fn poll_join(&self, _: TaskRef, _: &mut Context<'_>, _: *mut ()) -> Poll<bool> {
///         Poll::Ready(false)
///     }
///     fn abort(&self, _: TaskRef) {}
///     fn detach(&self, _: TaskRef) {}
///     fn is_finished(&self, _: TaskRef) -> bool { true }
///     fn current_task(&self) -> Option<u64> { None }
///     fn now_ns(&self) -> u64 { 0 }
///     fn fire_time(&self, deadline_ns: u64) -> u64 { deadline_ns }
///     fn sleep_for(&self, delay_ns: u64) -> (u64, u64) { (delay_ns, delay_ns) }
///     fn poll_timer(&self, _: u64, _: &mut Option<TimerRef>, _: &Waker) -> Poll<()> {
///         Poll::Ready(())
///     }
///     fn cancel_timer(&self, _: TimerRef) {}
///     fn draw_below(&self, _: u64) -> u64 { 0 }
///     fn refuse(&self, _: String) {}
///     fn next_serial(&self) -> u64 { 1 }
/// }
///
/// static STOPPED: Stopped = Stopped;
/// let clock = std::cell::Cell::new(7);
/// {
///     // SAFETY: `clock` outlives the guard.
///     let _entered = unsafe { crashtest_hooks::enter(&STOPPED, &clock) };
///     assert!(crashtest_hooks::current().is_some());
///     assert_eq!(crashtest_hooks::now_ns(), Some(7));
/// }
/// assert!(crashtest_hooks::current().is_none());
/// ```
pub unsafe fn enter(simulator: &'static dyn Simulator, clock: *const Cell<u64>) -> Entered {
    assert!(
        current().is_none(),
        "a simulation is already current on this thread"
    );
    #[allow(
        clippy::disallowed_methods,
        reason = "the anchor is std's clock at virtual zero: the guards make it virtual"
    )]
    let anchor = Instant::now();
    CURRENT.with(|cell| {
        cell.set(Some(Running {
            sim: simulator,
            anchor,
            clock,
        }));
    });
    Entered { _private: () }
}

/// Keeps a simulation current; dropping it clears the thread's current simulation.
#[derive(Debug)]
#[must_use = "the simulation stops being current when the guard drops"]
pub struct Entered {
    _private: (),
}

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|cell| cell.set(None));
    }
}
