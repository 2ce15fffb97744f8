//! The seam for simulator components built outside this crate (network, disk, nemesis,
//! oracles), one module per concern.
//!
//! User code never needs this module; the facade does not re-export it. A component keeps
//! its per-run state in an extension and registers checks ([`checks`]), draws from its
//! [`Stream`] of the run's registry ([`with_stream`]), records trace notes ([`notes`]), arms
//! timers ([`timers`]), learns of and causes node life-cycle changes ([`life`]), ends its own
//! faults when the run heals ([`faults`]), and decides faults through [`crate::fault`]'s
//! verbs. A report that names a place in the program's code reads it off a backtrace
//! ([`call_site`]).

pub mod call_site;
pub mod checks;
pub mod faults;
pub mod life;
pub mod notes;
pub mod timers;

use crate::node::NodeId;
use crate::rng::{Rng, Stream};
use crate::world;

pub use crate::watchdog::{Stuck, reproduce_with, stuck_before};

/// True while a simulation runs on this thread.
///
/// ```
/// assert!(!crashtest_core::plumbing::is_simulation());
/// crashtest_core::Sim::new(1).run(async {
///     assert!(crashtest_core::plumbing::is_simulation());
/// }).unwrap();
/// ```
pub fn is_simulation() -> bool {
    world::is_simulation()
}

/// The running simulation's tag, which no other run of this process shares (wakers, timers
/// and join handles carry it), so that a handle kept past its run (in a `static`) is told
/// from one of the current run's; `None` outside a simulation.
///
/// ```
/// let tag = std::rc::Rc::new(std::cell::Cell::new(None));
/// let keep = tag.clone();
/// for _ in 0..2 {
///     let earlier = tag.get();
///     let keep = keep.clone();
///     crashtest_core::Sim::new(1)
///         .run(async move { keep.set(crashtest_core::plumbing::run_tag()) })
///         .unwrap();
///     assert!(tag.get().is_some() && tag.get() != earlier);
/// }
/// assert_eq!(crashtest_core::plumbing::run_tag(), None);
/// ```
pub fn run_tag() -> Option<u32> {
    world::try_with(|w| w.run_tag())
}

/// The node the running task belongs to (the supervisor outside any task).
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::plumbing::current_node();
///     assert_eq!(n, Some(crashtest_core::node::NodeId::SUPERVISOR));
/// }).unwrap();
/// ```
pub fn current_node() -> Option<NodeId> {
    world::with(|w| {
        let node = w.current_node();
        assert!(
            node.index() < w.nodes.borrow().len(),
            "the current node {node} is a node of the run"
        );
        node
    })
}

/// Draws from `stream` of the running simulation's registry; `None` outside a simulation.
/// `f` must not draw again: the registry is borrowed while it runs.
///
/// ```
/// use crashtest_core::rng::Stream;
///
/// crashtest_core::Sim::new(1).run(async {
///     let x = crashtest_core::plumbing::with_stream(Stream::Network, |rng| rng.next_u64());
///     assert!(x.is_some());
/// }).unwrap();
/// ```
///
/// A stream is a [`Stream`], never a name: there is no stream outside the registry.
///
/// ```compile_fail
/// crashtest_core::plumbing::with_stream("network", |rng| rng.next_u64());
/// ```
#[inline]
pub fn with_stream<R>(stream: Stream, f: impl FnOnce(&mut Rng) -> R) -> Option<R> {
    world::with(|w| w.with_stream(stream, f))
}

/// Changes the scheduling window of the running simulation from now on (see
/// [`Config::scheduling_window`](crate::Config::scheduling_window)), and records the change
/// in the trace. A swarm profile draws it; a window of 1 runs ready tasks first in, first out.
///
/// # Panics
///
/// Panics if `tasks` is zero.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     crashtest_core::plumbing::set_scheduling_window(1);
/// }).unwrap();
/// ```
pub fn set_scheduling_window(tasks: usize) {
    // Checked here too, so that a bad window panics outside a simulation as documented.
    assert!(tasks > 0, "the scheduling window holds at least one task");
    world::with(|w| w.set_scheduling_window(tasks));
}
