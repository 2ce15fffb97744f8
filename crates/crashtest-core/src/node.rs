//! Nodes: the simulated processes of a cluster, with their life cycle and wall clocks.
//!
//! A node has a name, a *factory* (a function that returns its main future), a status and a
//! wall clock. Killing a node drops every task it has, at once: what the process was doing is
//! cut off mid-operation, as a crash would. Restarting calls the factory again (the node's
//! durable state, such as its disk, is what survives); upgrading restarts with another
//! factory, to test new code against old state. Pausing stops scheduling its tasks (timers
//! still fire, their tasks wait) until it is resumed: a stop-the-world pause or a VM freeze.
//!
//! Node 0 is the *supervisor*: the test body and the tasks it spawns. It cannot be killed.
//!
//! Each node's wall clock ([`crate::time::system_time`]) is the run's epoch plus virtual time,
//! scaled by the node's drift and moved by its offset; the monotonic clock
//! ([`crate::time::Instant`]) is shared and never goes backwards.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::rc::Rc;

use crate::rng::{Stream, Streams};
use crate::task::{BoxedUnit, TaskId};
use crate::trace::EventKind;
use crate::world;

/// Identifies a node within one run; node 0 is the supervisor (the test body).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let n = crashtest::node::create("a", || async {});
/// assert_eq!(n.id().to_string(), "n1");
/// assert_ne!(n.id(), crashtest::node::NodeId::SUPERVISOR);
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The supervisor: the test body and the tasks it spawns.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::node::NodeId::SUPERVISOR.index(), 0);
    /// ```
    pub const SUPERVISOR: NodeId = NodeId(0);

    /// The id as an index (0 for the supervisor, then in creation order).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::node::NodeId::SUPERVISOR.index(), 0);
    /// ```
    pub fn index(self) -> usize {
        // Only the node table makes ids, within the 16 bits a task slot keeps its node in (a
        // re-check of `NodeTable::add`, on every node lookup: debug builds only).
        debug_assert!(
            self.0 <= u32::from(u16::MAX),
            "node id {} was not made by a node table",
            self.0
        );
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// Whether a node's tasks run.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// use crashtest::node::{self, NodeStatus};
/// let n = node::create("a", || std::future::pending());
/// assert_eq!(n.status(), NodeStatus::Running);
/// n.kill();
/// assert_eq!(n.status(), NodeStatus::Dead);
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// Scheduled as usual.
    Running,
    /// Alive, but its tasks are not scheduled until it is resumed.
    Paused,
    /// Killed: no tasks; a restart brings it back.
    Dead,
}

/// The main future of a node, made anew at every (re)start.
pub(crate) type Factory = Rc<dyn Fn() -> BoxedUnit>;

/// A wall clock's drift: `ppm` since `since_ns`, on top of what earlier rates gained.
#[derive(Clone, Copy, Debug, Default)]
struct Drift {
    ppm: i64,
    since_ns: i64,
    gained_before_ns: i64,
}

/// A drift rate's bound, exclusive: at a million ppm a clock would stop or run backwards.
const DRIFT_LIMIT_PPM: i64 = 1_000_000;

impl Drift {
    /// Nanoseconds the clock has gained (negative: lost) by virtual time `now`.
    fn gained_ns(&self, now: i64) -> i64 {
        assert!(
            now >= self.since_ns,
            "virtual time went back from {} to {now} ns",
            self.since_ns
        );
        assert!(self.ppm.abs() < DRIFT_LIMIT_PPM, "drift {} ppm", self.ppm);
        let span = i128::from(now - self.since_ns);
        let gained = span * i128::from(self.ppm) / 1_000_000;
        // Under a million ppm a clock gains or loses less than the time that passed: it never
        // stops or runs backwards.
        assert!(
            gained.abs() <= span,
            "a drift gained {gained} ns in {span} ns"
        );
        self.gained_before_ns + i64::try_from(gained).expect("drift fits in i64 nanoseconds")
    }
}

struct NodeRecord {
    name: String,
    status: NodeStatus,
    factory: Option<Factory>,
    upgraded: bool,
    parked: Vec<TaskId>,
    drift: Drift,
    offset_ns: i64,
}

/// Every node of a run, indexed by `NodeId`.
pub(crate) struct NodeTable {
    nodes: Vec<NodeRecord>,
    /// Each node's id by name: creating a node checks its name is free, and `lookup` finds
    /// it, without a walk over every node.
    by_name: BTreeMap<String, NodeId>,
    /// Nanoseconds from the Unix epoch to the run's time zero, drawn from the seed.
    epoch_ns: i64,
}

impl fmt::Debug for NodeTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.nodes.iter().map(|n| (&n.name, n.status)))
            .finish()
    }
}

/// 2026-01-01T00:00:00Z, the earliest epoch a run starts at.
const EPOCH_BASE_S: i64 = 1_767_225_600;
const YEAR_S: u64 = 365 * 24 * 3600;

// The latest epoch, in nanoseconds, fits in i64 with a century of virtual time to spare.
const _: () =
    assert!((EPOCH_BASE_S + YEAR_S as i64 + 100 * YEAR_S as i64) < i64::MAX / 1_000_000_000);

impl NodeTable {
    pub(crate) fn new(streams: &mut Streams) -> NodeTable {
        let offset_s = streams.get(Stream::Clock).below_inclusive(YEAR_S - 1) as i64;
        assert!(
            (0..YEAR_S as i64).contains(&offset_s),
            "the epoch lies within a year of the base"
        );
        let supervisor = NodeRecord {
            name: "supervisor".to_owned(),
            status: NodeStatus::Running,
            factory: None,
            upgraded: false,
            parked: Vec::new(),
            drift: Drift::default(),
            offset_ns: 0,
        };
        NodeTable {
            by_name: BTreeMap::from([(supervisor.name.clone(), NodeId::SUPERVISOR)]),
            nodes: vec![supervisor],
            epoch_ns: (EPOCH_BASE_S + offset_s) * 1_000_000_000,
        }
    }

    #[inline]
    fn get(&self, node: NodeId) -> &NodeRecord {
        self.nodes
            .get(node.index())
            .expect("a node id names a node of this run")
    }

    fn get_mut(&mut self, node: NodeId) -> &mut NodeRecord {
        self.nodes
            .get_mut(node.index())
            .expect("a node id names a node of this run")
    }

    #[inline]
    pub(crate) fn status(&self, node: NodeId) -> NodeStatus {
        let status = self.get(node).status;
        debug_assert!(
            node != NodeId::SUPERVISOR || status == NodeStatus::Running,
            "the supervisor is {status:?}: it always runs"
        );
        status
    }

    pub(crate) fn name(&self, node: NodeId) -> &str {
        let name = &self.get(node).name;
        if crate::verify::enabled() {
            assert_eq!(self.find(name), Some(node), "{name:?} names its node");
        }
        name
    }

    /// Nodes in the run, the supervisor included.
    pub(crate) fn len(&self) -> usize {
        assert_eq!(
            self.nodes.len(),
            self.by_name.len(),
            "every node is indexed by its name"
        );
        self.nodes.len()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        if crate::verify::enabled() {
            for (index, record) in self.nodes.iter().enumerate() {
                assert_eq!(
                    self.by_name.get(&record.name).map(|id| id.index()),
                    Some(index),
                    "node {:?} is indexed under its own id",
                    record.name
                );
            }
        }
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    pub(crate) fn find(&self, name: &str) -> Option<NodeId> {
        let found = self.by_name.get(name).copied();
        // The index is built with the table and names never change (a third compare of the
        // name on every lookup, which a program that names its peers makes per message:
        // checked behind the verify switch).
        if crate::verify::enabled()
            && let Some(id) = found
        {
            assert_eq!(self.get(id).name, name, "the name index points at its node");
        }
        found
    }

    pub(crate) fn park(&mut self, node: NodeId, task: TaskId) {
        assert_ne!(node, NodeId::SUPERVISOR, "the supervisor is never paused");
        let record = self.get_mut(node);
        assert_eq!(
            record.status,
            NodeStatus::Paused,
            "parked a task of a node not paused"
        );
        if crate::verify::enabled() {
            assert!(!record.parked.contains(&task), "task {task} parked twice");
        }
        record.parked.push(task);
    }

    pub(crate) fn take_parked(&mut self, node: NodeId) -> Vec<TaskId> {
        let record = self.get_mut(node);
        assert_eq!(
            record.status,
            NodeStatus::Running,
            "parked tasks go back to the ready queue only once their node runs"
        );
        let parked = std::mem::take(&mut record.parked);
        self.verify();
        parked
    }

    /// Pauses or resumes a live node: the only status changes that are not a death or a
    /// start (see `mark_dead`, `mark_running`).
    pub(crate) fn set_status(&mut self, node: NodeId, status: NodeStatus) {
        assert_ne!(node, NodeId::SUPERVISOR, "the supervisor is never paused");
        let record = self.get_mut(node);
        assert!(
            matches!(
                (record.status, status),
                (NodeStatus::Running, NodeStatus::Paused)
                    | (NodeStatus::Paused, NodeStatus::Running)
            ),
            "node {node} cannot go from {:?} to {status:?}",
            record.status
        );
        // A resume takes back every parked task before the node can pause again: one left
        // over would be queued twice by the next resume.
        assert!(
            status != NodeStatus::Paused || record.parked.is_empty(),
            "node {node} starts a pause still holding parked tasks"
        );
        record.status = status;
        if status == NodeStatus::Paused {
            // A resumed node still holds its parked tasks until `take_parked`, which verifies.
            self.verify();
        }
    }

    /// Checks the whole table (O(n), under the verify switch): the supervisor is node 0 and
    /// runs without a factory, every other node has one, only a paused node holds parked
    /// tasks, and the name index maps each name to its own node.
    fn verify(&self) {
        if !crate::verify::enabled() {
            return;
        }
        let supervisor = &self.nodes[NodeId::SUPERVISOR.index()];
        assert!(
            supervisor.status == NodeStatus::Running && supervisor.factory.is_none(),
            "the supervisor runs the test body, from no factory"
        );
        for (index, record) in self.nodes.iter().enumerate().skip(1) {
            assert!(record.factory.is_some(), "node {index} has no factory");
            assert!(
                record.parked.is_empty() || record.status == NodeStatus::Paused,
                "node {index} is {:?} with parked tasks",
                record.status
            );
            assert!(record.drift.ppm.abs() < DRIFT_LIMIT_PPM);
        }
        assert_eq!(
            self.nodes.len(),
            self.by_name.len(),
            "node names are unique"
        );
    }

    pub(crate) fn mark_dead(&mut self, node: NodeId) {
        assert_ne!(node, NodeId::SUPERVISOR, "the supervisor is never killed");
        let record = self.get_mut(node);
        assert_ne!(record.status, NodeStatus::Dead, "node {node} killed twice");
        record.status = NodeStatus::Dead;
        record.parked.clear();
        self.verify();
    }

    pub(crate) fn mark_running(&mut self, node: NodeId) {
        let record = self.get_mut(node);
        assert_eq!(
            record.status,
            NodeStatus::Dead,
            "only a dead node starts again"
        );
        assert!(
            record.parked.is_empty(),
            "a dead node keeps no parked tasks"
        );
        assert!(
            record.factory.is_some(),
            "node {node} has no factory to start from"
        );
        record.status = NodeStatus::Running;
    }

    pub(crate) fn set_factory(&mut self, node: NodeId, factory: Factory) {
        assert_ne!(
            node,
            NodeId::SUPERVISOR,
            "the supervisor runs the test body, never a factory"
        );
        let record = self.get_mut(node);
        assert_eq!(
            record.status,
            NodeStatus::Dead,
            "node {node} is upgraded between its kill and its start"
        );
        record.factory = Some(factory);
        record.upgraded = true;
    }

    /// The node's factory, and whether it was just replaced by an upgrade.
    pub(crate) fn factory(&mut self, node: NodeId) -> (Factory, bool) {
        let record = self.get_mut(node);
        assert_eq!(
            record.status,
            NodeStatus::Running,
            "node {node}'s factory is called once it is marked running"
        );
        let upgraded = std::mem::take(&mut record.upgraded);
        (
            record
                .factory
                .clone()
                .expect("only the supervisor has no factory"),
            upgraded,
        )
    }

    fn add(&mut self, name: String, factory: Factory, drift_ppm: i64, offset_ns: i64) -> NodeId {
        assert!(
            self.find(&name).is_none(),
            "a node named {name:?} already exists"
        );
        assert!(drift_ppm.abs() < DRIFT_LIMIT_PPM, "drift {drift_ppm} ppm");
        // Task slots keep their node in 16 bits.
        let id = NodeId(
            u16::try_from(self.nodes.len())
                .map(u32::from)
                .expect("a simulation holds at most 65,535 nodes besides the test body's"),
        );
        self.by_name.insert(name.clone(), id);
        self.nodes.push(NodeRecord {
            name,
            status: NodeStatus::Running,
            factory: Some(factory),
            upgraded: false,
            parked: Vec::new(),
            drift: Drift {
                ppm: drift_ppm,
                ..Drift::default()
            },
            offset_ns,
        });
        assert_eq!(id.index() + 1, self.nodes.len(), "node ids are dense");
        assert_eq!(
            self.nodes.len(),
            self.by_name.len(),
            "the new node is indexed"
        );
        id
    }

    /// The node's wall clock at virtual time `now_ns`, in nanoseconds since the Unix epoch.
    pub(crate) fn wall_clock_ns(&self, node: NodeId, now_ns: u64) -> i64 {
        let record = self.get(node);
        let now = i64::try_from(now_ns).expect("virtual time fits in i64 nanoseconds");
        let local = now + record.drift.gained_ns(now);
        // Each rate gains less than the time it ran for, so the node's own time since the
        // epoch is never negative, however its drift changed.
        assert!(local >= 0, "node {node}'s clock ran back past its start");
        self.epoch_ns + local + record.offset_ns
    }

    fn set_drift(&mut self, node: NodeId, ppm: i64, now_ns: u64) {
        assert!(ppm.abs() < DRIFT_LIMIT_PPM, "drift {ppm} ppm");
        let now = i64::try_from(now_ns).expect("virtual time fits in i64 nanoseconds");
        let drift = &mut self.get_mut(node).drift;
        drift.gained_before_ns = drift.gained_ns(now);
        drift.since_ns = now;
        drift.ppm = ppm;
    }

    fn set_offset(&mut self, node: NodeId, offset_ns: i64) {
        self.get_mut(node).offset_ns = offset_ns;
    }
}

fn factory_of<F, Fut>(factory: F) -> Factory
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    Rc::new(move || Box::pin(factory()))
}

fn in_sim<R>(what: &str, f: impl FnOnce(&world::World) -> R) -> R {
    world::with(f).unwrap_or_else(|| panic!("{what} is only available inside a simulation"))
}

/// A handle to a node of the running simulation. It is `Copy`; methods act on the world of
/// the run that is going on on this thread.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{node, time, Sim};
/// use std::time::Duration;
///
/// Sim::new(3).run(async {
///     let server = node::create("server", || async {
///         loop {
///             time::sleep(Duration::from_millis(10)).await;
///         }
///     });
///     time::sleep(Duration::from_millis(25)).await;
///     server.kill();
///     assert_eq!(server.status(), node::NodeStatus::Dead);
///     server.restart();
///     assert_eq!(server.status(), node::NodeStatus::Running);
/// })
/// .unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    id: NodeId,
}

impl Node {
    /// The node's id.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || async {});
    /// assert_eq!(n.id().index(), 1);
    /// # }).unwrap();
    /// ```
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's name.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("db-1", || async {});
    /// assert_eq!(n.name(), "db-1");
    /// # }).unwrap();
    /// ```
    pub fn name(&self) -> String {
        in_sim("Node::name", |w| w.nodes.borrow().name(self.id).to_owned())
    }

    /// Whether the node is running, paused or dead.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || async {});
    /// n.pause();
    /// assert_eq!(n.status(), crashtest::node::NodeStatus::Paused);
    /// # }).unwrap();
    /// ```
    pub fn status(&self) -> NodeStatus {
        in_sim("Node::status", |w| w.nodes.borrow().status(self.id))
    }

    /// The node's status, or `None` once its run is over (a destructor running as the
    /// simulation is torn down) or outside any simulation.
    ///
    /// ```
    /// let node = std::rc::Rc::new(std::cell::Cell::new(None));
    /// let slot = node.clone();
    /// crashtest_core::Sim::new(1).run(async move {
    ///     let n = crashtest_core::node::create("a", || async {});
    ///     assert_eq!(n.try_status(), Some(crashtest_core::node::NodeStatus::Running));
    ///     slot.set(Some(n));
    /// }).unwrap();
    /// assert_eq!(node.get().unwrap().try_status(), None);
    /// ```
    pub fn try_status(&self) -> Option<NodeStatus> {
        world::with(|w| w.nodes.borrow().status(self.id))
    }

    /// Kills the node: every task it has is dropped now (a task killing its own node stops
    /// at its next `.await`). Killing a dead node does nothing.
    ///
    /// The tasks' destructors run as code of the dead node, whoever kills it: a task they
    /// spawn dies at birth, and their calls to the node's disk and network fail, since a
    /// killed process runs nothing more.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || std::future::pending());
    /// n.kill();
    /// assert_eq!(n.status(), crashtest::node::NodeStatus::Dead);
    /// # }).unwrap();
    /// ```
    pub fn kill(&self) {
        assert_ne!(
            self.id,
            NodeId::SUPERVISOR,
            "the supervisor (test body) cannot be killed"
        );
        in_sim("Node::kill", |w| {
            w.note_fault(self.id, "kill".into());
            w.kill_node(self.id);
        });
    }

    /// Starts the node again from its factory; a live node is killed first (a reboot).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || std::future::pending());
    /// n.kill();
    /// n.restart();
    /// assert_eq!(n.status(), crashtest::node::NodeStatus::Running);
    /// # }).unwrap();
    /// ```
    pub fn restart(&self) {
        in_sim("Node::restart", |w| w.restart_node(self.id, None));
    }

    /// Kills the node and starts it with a new factory: new code on the old durable state.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || async { /* version 1 */ });
    /// n.upgrade(|| async { /* version 2 */ });
    /// # }).unwrap();
    /// ```
    pub fn upgrade<F, Fut>(&self, factory: F)
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        in_sim("Node::upgrade", |w| {
            w.restart_node(self.id, Some(factory_of(factory)))
        });
    }

    /// Stops scheduling the node's tasks until [`Node::resume`]. Time goes on meanwhile.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || async {});
    /// n.pause();
    /// n.resume();
    /// # }).unwrap();
    /// ```
    pub fn pause(&self) {
        assert_ne!(
            self.id,
            NodeId::SUPERVISOR,
            "the supervisor (test body) cannot be paused"
        );
        in_sim("Node::pause", |w| {
            w.note_fault(self.id, "pause".into());
            w.pause_node(self.id);
        });
    }

    /// Schedules a paused node's tasks again.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || async {});
    /// n.pause();
    /// n.resume();
    /// assert_eq!(n.status(), crashtest::node::NodeStatus::Running);
    /// # }).unwrap();
    /// ```
    pub fn resume(&self) {
        in_sim("Node::resume", |w| w.resume_node(self.id));
    }

    /// From now on the node's wall clock runs `ppm` parts per million fast (positive) or slow;
    /// what it gained so far stays (a skew, not a jump).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::{node, time, Sim};
    /// use std::time::Duration;
    /// Sim::new(1).run(async {
    ///     let n = node::create("a", std::future::pending);
    ///     n.set_clock_drift_ppm(100_000);
    /// }).unwrap();
    /// ```
    pub fn set_clock_drift_ppm(&self, ppm: i64) {
        assert!(
            ppm.abs() < DRIFT_LIMIT_PPM,
            "a drift of {ppm} ppm would stop or reverse the clock"
        );
        in_sim("Node::set_clock_drift_ppm", |w| {
            let mut nodes = w.nodes.borrow_mut();
            let before = nodes.wall_clock_ns(self.id, w.now_ns());
            nodes.set_drift(self.id, ppm, w.now_ns());
            assert_eq!(
                nodes.wall_clock_ns(self.id, w.now_ns()),
                before,
                "a new drift rate skews the clock from now on; it does not jump"
            );
            drop(nodes);
            w.record(EventKind::ClockDrift { node: self.id, ppm });
        });
    }

    /// Sets the node's wall clock off from true time by `offset_ns` nanoseconds (negative:
    /// behind). Its `Instant`s are not affected: monotonic time never jumps.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::create("a", || async {});
    /// n.set_clock_offset_ns(-2_000_000_000);
    /// # }).unwrap();
    /// ```
    pub fn set_clock_offset_ns(&self, offset_ns: i64) {
        in_sim("Node::set_clock_offset_ns", |w| {
            let mut nodes = w.nodes.borrow_mut();
            let before = nodes.wall_clock_ns(self.id, w.now_ns());
            let jump = offset_ns.checked_sub(nodes.get(self.id).offset_ns);
            nodes.set_offset(self.id, offset_ns);
            assert_eq!(
                jump.and_then(|jump| before.checked_add(jump)),
                Some(nodes.wall_clock_ns(self.id, w.now_ns())),
                "the wall clock moves by the change of offset, no more"
            );
            drop(nodes);
            w.record(EventKind::ClockOffset {
                node: self.id,
                offset_ns,
            });
        });
    }
}

/// Configures a node before creating it.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let n = crashtest::node::Builder::new("clock-skewed")
///     .clock_drift_ppm(200)
///     .clock_offset_ns(1_500_000)
///     .build(|| async {});
/// assert_eq!(n.name(), "clock-skewed");
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Builder {
    name: String,
    drift_ppm: i64,
    offset_ns: i64,
}

impl Builder {
    /// A node called `name` (unique within the run).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::node::Builder::new("n1");
    /// ```
    pub fn new(name: impl Into<String>) -> Builder {
        Builder {
            name: name.into(),
            drift_ppm: 0,
            offset_ns: 0,
        }
    }

    /// The node's wall clock runs faster (positive) or slower by `ppm` parts per million.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::node::Builder::new("n1").clock_drift_ppm(-50);
    /// ```
    pub fn clock_drift_ppm(mut self, ppm: i64) -> Builder {
        assert!(
            ppm.abs() < DRIFT_LIMIT_PPM,
            "a drift of {ppm} ppm would stop or reverse the clock"
        );
        self.drift_ppm = ppm;
        self
    }

    /// The node's wall clock starts `offset_ns` nanoseconds off true time.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::node::Builder::new("n1").clock_offset_ns(10_000);
    /// ```
    pub fn clock_offset_ns(mut self, offset_ns: i64) -> Builder {
        self.offset_ns = offset_ns;
        self
    }

    /// Creates the node and starts its main task from `factory`.
    ///
    /// # Panics
    ///
    /// Panics outside a simulation, if a node of that name exists, or if the simulation
    /// already has 65,535 nodes (besides the test body's).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let n = crashtest::node::Builder::new("n1").build(|| async {});
    /// assert_eq!(n.name(), "n1");
    /// # }).unwrap();
    /// ```
    pub fn build<F, Fut>(self, factory: F) -> Node
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        let factory = factory_of(factory);
        in_sim("node::Builder::build", |w| {
            let name = self.name.clone();
            let id = w.nodes.borrow_mut().add(
                self.name,
                factory.clone(),
                self.drift_ppm,
                self.offset_ns,
            );
            w.watch.name_node(id.0, &name);
            w.name_node_in_trace(id);
            w.open_node_stream(id, &name);
            w.record(EventKind::NodeCreate { node: id });
            w.spawn_on(id, crate::task::Label::own("main"), factory());
            assert_eq!(
                w.nodes.borrow().find(&name),
                Some(id),
                "a new node is found by its name"
            );
            Node { id }
        })
    }
}

/// Creates a node called `name` whose main task is made by `factory`; see [`Builder`].
///
/// # Panics
///
/// As [`Builder::build`]: outside a simulation, if a node of that name exists, or past
/// 65,535 nodes.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let n = crashtest::node::create("worker", || async {});
/// assert_eq!(n.name(), "worker");
/// # }).unwrap();
/// ```
pub fn create<F, Fut>(name: impl Into<String>, factory: F) -> Node
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    Builder::new(name).build(factory)
}

/// The node the calling task runs on.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// assert_eq!(crashtest::node::current().id(), crashtest::node::NodeId::SUPERVISOR);
/// # }).unwrap();
/// ```
pub fn current() -> Node {
    in_sim("node::current", current_in)
}

/// The node the calling task runs on, or `None` outside a simulation (tokio's
/// `Handle::try_current`), for code that runs in both worlds.
///
/// ```
/// assert!(crashtest_core::node::try_current().is_none());
/// # crashtest_core::Sim::new(1).run(async {
/// assert!(crashtest_core::node::try_current().is_some());
/// # }).unwrap();
/// ```
pub fn try_current() -> Option<Node> {
    world::with(current_in)
}

/// The node the world's current task runs on.
fn current_in(w: &world::World) -> Node {
    let id = w.current_node();
    // A borrow of the node table on every call of a hot path: debug builds only.
    debug_assert!(
        id.index() < w.nodes.borrow().len(),
        "the current node {id} is a node of the run"
    );
    Node { id }
}

/// The node called `name`, if there is one.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::node::create("cache", || async {});
/// assert!(crashtest::node::lookup("cache").is_some());
/// assert!(crashtest::node::lookup("nope").is_none());
/// # }).unwrap();
/// ```
pub fn lookup(name: &str) -> Option<Node> {
    in_sim("node::lookup", |w| w.nodes.borrow().find(name)).map(|id| Node { id })
}
