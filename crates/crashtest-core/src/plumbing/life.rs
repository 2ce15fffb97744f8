//! Node life cycle for components: hooks told of kills, restarts, pauses and resumes, the
//! verbs that cause them, and what a component may ask about a node.
//!
//! A hook is told after the change is done, with no borrow of the world held, so it may use
//! the world (close a killed node's sockets, wake their peers).

use std::rc::Rc;

use crate::node::{NodeId, NodeStatus};
use crate::world;

/// Told of node life-cycle changes, after the change is done.
///
/// ```
/// use crashtest_core::{node::NodeId, plumbing::{self, life::NodeHook}};
/// use std::{cell::Cell, rc::Rc};
///
/// #[derive(Default)]
/// struct Kills(Cell<u32>);
/// impl NodeHook for Kills {
///     fn node_killed(&self, _: NodeId) {
///         self.0.set(self.0.get() + 1);
///     }
/// }
/// crashtest_core::Sim::new(1).run(async {
///     let kills = Rc::new(Kills::default());
///     plumbing::life::add_node_hook(kills.clone());
///     crashtest_core::node::create("a", || std::future::pending()).kill();
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

/// Registers a hook told of node life-cycle changes for the rest of the run.
///
/// ```
/// use crashtest_core::{node::NodeId, plumbing::{self, life::NodeHook}};
/// struct Log;
/// impl NodeHook for Log {
///     fn node_killed(&self, node: NodeId) {
///         plumbing::notes::record("log", [node.index() as u64, 0, 0], "saw a kill".into());
///     }
/// }
/// crashtest_core::Sim::new(1).run(async {
///     plumbing::life::add_node_hook(std::rc::Rc::new(Log));
///     crashtest_core::node::create("a", || std::future::pending()).kill();
/// }).unwrap();
/// ```
pub fn add_node_hook(hook: Rc<dyn NodeHook>) {
    let added = world::with(|w| w.add_hook(hook));
    assert!(
        added.is_some(),
        "a node hook is added for the rest of a run: inside a simulation"
    );
}

/// Kills `node` without noting a fault: for a component that drew the kill through
/// [`crate::fault::inject`], which already noted it (and can mask it).
///
/// ```
/// use crashtest_core::node::{self, NodeStatus};
/// crashtest_core::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     crashtest_core::plumbing::life::kill(n.id());
///     assert_eq!(n.status(), NodeStatus::Dead);
///     crashtest_core::plumbing::life::restart(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn kill(node: NodeId) {
    assert_ne!(node, NodeId::SUPERVISOR, "the supervisor cannot be killed");
    world::with(|w| w.kill_node(node));
}

/// Restarts `node` from its factory (killing it first if it is alive), noting no fault.
///
/// ```
/// use crashtest_core::node::{self, NodeStatus};
/// crashtest_core::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     crashtest_core::plumbing::life::restart(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn restart(node: NodeId) {
    assert_ne!(
        node,
        NodeId::SUPERVISOR,
        "the supervisor cannot be restarted"
    );
    world::with(|w| w.restart_node(node, None));
}

/// Pauses `node` without noting a fault (see [`kill`]).
///
/// ```
/// use crashtest_core::node::{self, NodeStatus};
/// crashtest_core::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     crashtest_core::plumbing::life::pause(n.id());
///     assert_eq!(n.status(), NodeStatus::Paused);
///     crashtest_core::plumbing::life::resume(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn pause(node: NodeId) {
    assert_ne!(node, NodeId::SUPERVISOR, "the supervisor cannot be paused");
    world::with(|w| w.pause_node(node));
}

/// Resumes a paused `node`.
///
/// ```
/// use crashtest_core::node::{self, NodeStatus};
/// crashtest_core::Sim::new(1).run(async {
///     let n = node::create("a", std::future::pending);
///     n.pause();
///     crashtest_core::plumbing::life::resume(n.id());
///     assert_eq!(n.status(), NodeStatus::Running);
/// }).unwrap();
/// ```
pub fn resume(node: NodeId) {
    // The supervisor is never paused: a component resuming it has lost track of its pauses.
    assert_ne!(node, NodeId::SUPERVISOR, "the supervisor cannot be resumed");
    world::with(|w| w.resume_node(node));
}

/// The status of `node` in the running simulation.
///
/// ```
/// use crashtest_core::node::{self, NodeStatus};
/// crashtest_core::Sim::new(1).run(async {
///     let n = node::create("a", || async {});
///     n.pause();
///     assert_eq!(crashtest_core::plumbing::life::node_status(n.id()), Some(NodeStatus::Paused));
/// }).unwrap();
/// ```
pub fn node_status(node: NodeId) -> Option<NodeStatus> {
    world::with(|w| w.nodes.borrow().status(node))
}

/// The name of `node` in the running simulation.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("db", || async {});
///     assert_eq!(crashtest_core::plumbing::life::node_name(n.id()).as_deref(), Some("db"));
/// }).unwrap();
/// ```
pub fn node_name(node: NodeId) -> Option<String> {
    world::with(|w| w.nodes.borrow().name(node).to_owned())
}

/// Spawns a task on `node` (a simulator component's helper task, such as a connection's
/// reader on the node that owns it). The task dies with the node.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("a", || std::future::pending());
///     let h = crashtest_core::plumbing::life::spawn_on(n.id(), "helper", async { 5 });
///     assert_eq!(h.await.unwrap(), 5);
/// }).unwrap();
/// ```
pub fn spawn_on<F>(node: NodeId, name: &str, future: F) -> crate::task::JoinHandle<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    // The name is what traces and failure reports call the task by.
    assert!(!name.is_empty(), "a helper task on {node} has a name");
    crate::task::spawn_sim_on(node, crate::task::Label::own(name), future)
}
