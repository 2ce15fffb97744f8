//! The seam for simulator components built outside this crate (network, disk, oracles).
//!
//! User code never needs this module. A component such as the simulated network keeps its
//! per-run state in an *extension* (one value per type per run, created on first use), draws
//! from its [`Stream`] of the run's registry, records its events in the trace, and learns of node kills and
//! restarts through a [`NodeHook`], all through the functions here.

use std::any::Any;
use std::rc::Rc;

use crate::node::NodeId;
use crate::node::NodeStatus;
use crate::report::FailureKind;
use crate::rng::{Rng, Stream};
pub use crate::time::timer_heap::TimerKey;
pub use crate::watchdog::reproduce_with;
use crate::world;

/// Told of node life-cycle changes, after the change is done.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{node::NodeId, plumbing::{self, NodeHook}};
/// use std::{cell::Cell, rc::Rc};
///
/// #[derive(Default)]
/// struct Kills(Cell<u32>);
/// impl NodeHook for Kills {
///     fn node_killed(&self, _: NodeId) {
///         self.0.set(self.0.get() + 1);
///     }
/// }
/// crashtest::Sim::new(1).run(async {
///     let kills = Rc::new(Kills::default());
///     plumbing::add_node_hook(kills.clone());
///     crashtest::node::create("a", || std::future::pending()).kill();
///     assert_eq!(kills.0.get(), 1);
/// }).unwrap();
/// ```
pub trait NodeHook {
    /// The node was killed (its tasks are already dropped).
    fn node_killed(&self, node: NodeId) {
        let _ = node;
    }
    /// The node was started again (before its main task runs).
    fn node_restarted(&self, node: NodeId) {
        let _ = node;
    }
    /// The node was paused.
    fn node_paused(&self, node: NodeId) {
        let _ = node;
    }
    /// The node was resumed.
    fn node_resumed(&self, node: NodeId) {
        let _ = node;
    }
}

/// Ends a component's faults when the run heals (the liveness phase): partitions, clogs,
/// degraded disks.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use std::{cell::Cell, rc::Rc};
/// use crashtest::plumbing::{self, Healer};
///
/// struct Clogs(Cell<u32>);
/// impl Healer for Clogs {
///     fn heal(&self) {
///         self.0.set(0);
///     }
/// }
/// crashtest::Sim::new(1).run(async {
///     let clogs = Rc::new(Clogs(Cell::new(3)));
///     plumbing::add_healer(clogs.clone());
///     plumbing::heal_all();
///     assert_eq!(clogs.0.get(), 0);
/// }).unwrap();
/// ```
pub trait Healer {
    /// Ends every fault this component has applied, and applies no new ones.
    fn heal(&self);
}

/// True while a simulation runs on this thread.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// assert!(!crashtest::plumbing::is_simulation());
/// crashtest::Sim::new(1).run(async {
///     assert!(crashtest::plumbing::is_simulation());
/// }).unwrap();
/// ```
pub fn is_simulation() -> bool {
    world::is_simulation()
}

/// The root seed of the running simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(77).run(async {
///     assert_eq!(crashtest::plumbing::seed(), Some(77));
/// }).unwrap();
/// ```
pub fn seed() -> Option<u64> {
    world::with(|w| w.seed())
}

/// The node the running task belongs to (the supervisor outside any task).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let n = crashtest::plumbing::current_node();
///     assert_eq!(n, Some(crashtest::node::NodeId::SUPERVISOR));
/// }).unwrap();
/// ```
pub fn current_node() -> Option<NodeId> {
    world::with(|w| w.current_node())
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

/// Records an event in the trace (and so in the fingerprint) of the running simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     crashtest::plumbing::record("net", [1, 2, 0], "packet dropped".into());
/// }).unwrap();
/// ```
pub fn record(source: &'static str, words: [u64; 3], text: String) {
    world::with(|w| w.note(w.current_node(), source, words, text));
}

/// The running simulation's extension of type `T`, created with `T::default()` on first use.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use std::cell::Cell;
/// crashtest::Sim::new(1).run(async {
///     #[derive(Default)]
///     struct Counter(Cell<u32>);
///     let a = crashtest::plumbing::extension::<Counter>().unwrap();
///     a.0.set(5);
///     let b = crashtest::plumbing::extension::<Counter>().unwrap();
///     assert_eq!(b.0.get(), 5);
/// }).unwrap();
/// ```
pub fn extension<T: Any + Default>() -> Option<Rc<T>> {
    world::with(|w| w.extension::<T>())
}

/// Registers a hook told of node life-cycle changes for the rest of the run.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{node::NodeId, plumbing::{self, NodeHook}};
/// struct Log;
/// impl NodeHook for Log {
///     fn node_killed(&self, node: NodeId) {
///         plumbing::record("log", [node.index() as u64, 0, 0], "saw a kill".into());
///     }
/// }
/// crashtest::Sim::new(1).run(async {
///     plumbing::add_node_hook(std::rc::Rc::new(Log));
///     crashtest::node::create("a", || std::future::pending()).kill();
/// }).unwrap();
/// ```
pub fn add_node_hook(hook: Rc<dyn NodeHook>) {
    world::with(|w| w.add_hook(hook));
}

/// Fails the running simulation with `message` (a broken invariant found by a component).
/// The run stops at the next scheduling point.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let failed = crashtest::Sim::new(1).run(async {
///     crashtest::plumbing::fail("replicas diverged".into());
///     std::future::pending::<()>().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("replicas diverged"));
/// ```
pub fn fail(message: String) {
    world::with(|w| w.fail(FailureKind::Check { message }));
}

/// Virtual time of the running simulation, in nanoseconds since its start.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     assert_eq!(crashtest::plumbing::now_ns(), Some(0));
/// }).unwrap();
/// ```
pub fn now_ns() -> Option<u64> {
    world::with(|w| w.now_ns())
}

/// Runs `callback` when virtual time reaches `deadline_ns` (at once if that is past), between
/// polls, on the supervisor. Cheaper than a task per event: the simulated network delivers
/// packets this way. A panic in the callback fails the run.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use std::{cell::Cell, rc::Rc};
/// crashtest::Sim::new(1).run(async {
///     let fired = Rc::new(Cell::new(false));
///     let f = fired.clone();
///     crashtest::plumbing::call_at(1_000, move || f.set(true));
///     crashtest::time::sleep(std::time::Duration::from_micros(2)).await;
///     assert!(fired.get());
/// }).unwrap();
/// ```
pub fn call_at(deadline_ns: u64, callback: impl FnOnce() + 'static) -> TimerKey {
    world::with(|w| w.call_at(deadline_ns, Box::new(callback)))
        .expect("plumbing::call_at is only available inside a simulation")
}

/// Disarms a timer from [`call_at`]; a key that already fired is ignored.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let key = crashtest::plumbing::call_at(1_000, || panic!("cancelled"));
///     crashtest::plumbing::cancel(key);
///     crashtest::time::sleep(std::time::Duration::from_micros(2)).await;
/// }).unwrap();
/// ```
pub fn cancel(key: TimerKey) {
    world::with(|w| w.cancel_timer(key));
}

/// Records an event on behalf of `node` (for events that happen between polls, such as a
/// packet arriving).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let n = crashtest::node::create("a", || async {});
///     crashtest::plumbing::record_for(n.id(), "net", [0; 3], "arrived".into());
/// }).unwrap();
/// ```
pub fn record_for(node: NodeId, source: &'static str, words: [u64; 3], text: String) {
    world::with(|w| w.note(node, source, words, text));
}

/// The status of `node` in the running simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::node::{self, NodeStatus};
/// crashtest::Sim::new(1).run(async {
///     let n = node::create("a", || async {});
///     n.pause();
///     assert_eq!(crashtest::plumbing::node_status(n.id()), Some(NodeStatus::Paused));
/// }).unwrap();
/// ```
pub fn node_status(node: NodeId) -> Option<NodeStatus> {
    world::with(|w| w.nodes.borrow().status(node))
}

/// The name of `node` in the running simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let n = crashtest::node::create("db", || async {});
///     assert_eq!(crashtest::plumbing::node_name(n.id()).as_deref(), Some("db"));
/// }).unwrap();
/// ```
pub fn node_name(node: NodeId) -> Option<String> {
    world::with(|w| w.nodes.borrow().name(node).to_owned())
}

/// Spawns a task on `node` (a simulator component's helper task, such as a connection's
/// reader on the node that owns it). The task dies with the node.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let n = crashtest::node::create("a", || std::future::pending());
///     let h = crashtest::plumbing::spawn_on(n.id(), "helper", async { 5 });
///     assert_eq!(h.await.unwrap(), 5);
/// }).unwrap();
/// ```
pub fn spawn_on<F>(node: NodeId, name: &str, future: F) -> crate::task::JoinHandle<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    crate::task::spawn_sim_on(node, Some(name), future)
}

/// The calling node's wall clock in nanoseconds since the Unix epoch (what
/// [`crate::time::system_time`] returns), or `None` outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let ns = crashtest::plumbing::wall_clock_ns().unwrap();
///     assert!(ns > 1_767_225_600 * 1_000_000_000 - 1);
/// }).unwrap();
/// ```
pub fn wall_clock_ns() -> Option<i64> {
    world::with(|w| w.nodes.borrow().wall_clock_ns(w.current_node(), w.now_ns()))
}

/// Runs `check` after every `every` polls for the rest of the run (an invariant); an `Err`
/// or a panic fails the run with the check's name.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use std::{cell::Cell, rc::Rc};
/// let failed = crashtest::Sim::new(1).run(async {
///     let balance = Rc::new(Cell::new(10i64));
///     let seen = balance.clone();
///     crashtest::plumbing::add_step_check("balance >= 0", 1, move || {
///         if seen.get() < 0 { Err(format!("balance is {}", seen.get())) } else { Ok(()) }
///     });
///     balance.set(-5);
///     crashtest::task::yield_now().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("balance is -5"));
/// ```
pub fn add_step_check(
    name: impl Into<String>,
    every: u64,
    check: impl Fn() -> Result<(), String> + 'static,
) {
    world::with(|w| w.add_step_check(name.into(), every, Rc::new(check)))
        .expect("plumbing::add_step_check is only available inside a simulation");
}

/// Registers a component that ends its faults when the run heals.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use std::{cell::Cell, rc::Rc};
/// struct Partitions(Cell<bool>);
/// impl crashtest::plumbing::Healer for Partitions {
///     fn heal(&self) { self.0.set(false) }
/// }
/// crashtest::Sim::new(1).run(async {
///     let partitions = Rc::new(Partitions(Cell::new(true)));
///     crashtest::plumbing::add_healer(partitions.clone());
///     crashtest::plumbing::heal_all();
///     assert!(!partitions.0.get());
/// }).unwrap();
/// ```
pub fn add_healer(healer: Rc<dyn Healer>) {
    world::with(|w| w.add_healer(healer));
}

/// Ends every fault of the running simulation: no fault is applied from now on, dead nodes
/// restart, paused nodes resume, and every healer ends its own (the liveness phase).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::node::{self, NodeStatus};
/// crashtest::Sim::new(1).run(async {
///     let n = node::create("a", || std::future::pending());
///     n.kill();
///     crashtest::plumbing::heal_all();
///     assert_eq!(n.status(), NodeStatus::Running);
///     assert!(!crashtest::plumbing::faults_enabled());
/// }).unwrap();
/// ```
pub fn heal_all() {
    world::with(|w| w.heal());
}

/// False once the run has healed: components should stop applying faults.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     assert!(crashtest::plumbing::faults_enabled());
/// }).unwrap();
/// ```
pub fn faults_enabled() -> bool {
    world::with(|w| w.faults_enabled()).unwrap_or(false)
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
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     crashtest::plumbing::set_scheduling_window(1);
/// }).unwrap();
/// ```
pub fn set_scheduling_window(tasks: usize) {
    world::with(|w| w.set_scheduling_window(tasks));
}

/// Adds a line describing how the run was set up (a swarm profile, a nemesis schedule); the
/// failure report prints these lines.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let failed = crashtest::Sim::new(1).run(async {
///     crashtest::plumbing::add_context("swarm: packet loss on, 3/100".into());
///     panic!("lost a write");
/// });
/// assert!(failed.unwrap_err().to_string().contains("swarm: packet loss on"));
/// ```
pub fn add_context(line: String) {
    world::with(|w| w.add_context(line));
}

/// Kills `node` without noting a fault: for a component that drew the kill through
/// [`crate::fault::inject`], which already noted it (and can mask it).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::node::{self, NodeStatus};
/// crashtest::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     crashtest::plumbing::kill(n.id());
///     assert_eq!(n.status(), NodeStatus::Dead);
///     crashtest::plumbing::restart(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn kill(node: NodeId) {
    world::with(|w| w.kill_node(node));
}

/// Restarts `node` from its factory (killing it first if it is alive), noting no fault.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::node::{self, NodeStatus};
/// crashtest::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     crashtest::plumbing::restart(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn restart(node: NodeId) {
    world::with(|w| w.restart_node(node, None));
}

/// Pauses `node` without noting a fault (see [`kill`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::node::{self, NodeStatus};
/// crashtest::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     crashtest::plumbing::pause(n.id());
///     assert_eq!(n.status(), NodeStatus::Paused);
///     crashtest::plumbing::resume(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn pause(node: NodeId) {
    world::with(|w| w.pause_node(node));
}

/// Resumes a paused `node`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::node::{self, NodeStatus};
/// crashtest::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     n.pause();
///     crashtest::plumbing::resume(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn resume(node: NodeId) {
    world::with(|w| w.resume_node(node));
}

/// The node with index `index` in the running simulation (0 is the supervisor), if it exists.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let n = crashtest::node::create("a", std::future::pending);
///     assert_eq!(crashtest::plumbing::node_by_index(1), Some(n.id()));
///     assert_eq!(crashtest::plumbing::node_by_index(2), None);
/// }).unwrap();
/// ```
pub fn node_by_index(index: usize) -> Option<NodeId> {
    world::with(|w| (index < w.nodes.borrow().len()).then_some(NodeId(index as u32))).flatten()
}
