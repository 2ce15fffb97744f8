//! Fault patterns that independent random draws rarely combine, drawn on purpose.
//!
//! A bug that needs a crash *during recovery from* a crash, or a partition that falls while
//! a leader election is under way, needs two rare events to line up; independent faults at
//! random times multiply their rarities. A nemesis with [`Patterns`] draws them together:
//!
//! - **crash during recovery**: after a restart of a node the nemesis may touch (whoever
//!   restarted it: the nemesis, the program's own power failures, another pattern), the node
//!   is killed again while it recovers: at the program's hint ([`hint`] with
//!   [`Hint::Recovery`], from the code that replays a log or repairs a disk) or, failing one,
//!   at a drawn moment shortly after the restart;
//! - **crash during the first sync after a restart**: the disk kills the node inside its
//!   next sync (`crashtest_fs::on_next_sync`), so its recovery's own writes are torn;
//! - **partition during an election**: when a node hints [`Hint::Election`] (it became a
//!   candidate), it is cut off from the rest for a while;
//! - **clock jump during a lease**: when a node hints [`Hint::Lease`] (it took or trusts a
//!   lease, or arms a timeout it relies on), its wall clock jumps;
//! - **swizzle-clog** is the nemesis's swizzle action (clog nodes one by one, unclog in
//!   another order); it is probed like the others.
//!
//! The restart patterns follow every restart, not only the nemesis's own: a program that
//! also crashes its nodes itself (whole-cluster power failures, say) restarts them too, and
//! a restart the nemesis did not make recovers from a crash all the same. A kill of a
//! pattern still keeps the nemesis's bound on nodes down.
//!
//! Each pattern is a fault in the ledger (numbered, maskable) and a coverage probe named
//! `nemesis: ...`, so a sweep shows how often it happened. Hints cost one thread-local look
//! when no nemesis with patterns runs, and never change a run by themselves.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::node::{Node, NodeId, NodeStatus};
use crashtest_core::rng::{Ratio, Stream};
use crashtest_core::{fault, plumbing, probe, time};

use crate::split::Split;

/// How often each pattern is drawn when its moment comes. A ratio of zero turns it off.
///
/// ```
/// use crashtest::nemesis::{Nemesis, Patterns};
/// use crashtest::rand::Ratio;
/// let nemesis = Nemesis::default().patterns(Patterns {
///     crash_in_recovery: Ratio::new(1, 2),
///     ..Patterns::default()
/// });
/// assert!(nemesis.to_string().contains("patterns"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patterns {
    /// After a kill's restart: kill the node again while it recovers.
    pub crash_in_recovery: Ratio,
    /// The latest the second kill comes after the restart when the program gives no hint.
    pub recovery_window: Duration,
    /// After a kill's restart: crash the node inside its first sync.
    pub crash_at_first_sync: Ratio,
    /// At [`Hint::Election`]: cut the node off.
    pub partition_in_election: Ratio,
    /// At [`Hint::Lease`]: jump the node's wall clock.
    pub clock_jump_in_lease: Ratio,
}

impl Default for Patterns {
    /// Each pattern one time in four; the second kill within 50 ms of a restart.
    fn default() -> Patterns {
        Patterns {
            crash_in_recovery: Ratio::new(1, 4),
            recovery_window: Duration::from_millis(50),
            crash_at_first_sync: Ratio::new(1, 4),
            partition_in_election: Ratio::new(1, 4),
            clock_jump_in_lease: Ratio::new(1, 4),
        }
    }
}

/// A moment a program declares, at which a pattern may strike the current node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// The node is recovering: replaying its log, repairing its disk.
    Recovery,
    /// The node started a leader election (it became a candidate).
    Election,
    /// The node took, renewed or relies on a lease or a timeout.
    Lease,
}

/// Declares that the current node reached `moment`: a nemesis with [`Patterns`] may strike
/// it now. Outside a simulation, or with no such nemesis, it does nothing.
///
/// ```
/// use crashtest::nemesis::{hint, Hint};
/// hint(Hint::Election); // outside a simulation: nothing
/// ```
pub fn hint(moment: Hint) {
    let Some(node) = plumbing::current_node() else {
        return;
    };
    let Some(slot) = plumbing::checks::extension::<HintSlot>() else {
        return;
    };
    let handler = slot.0.borrow().clone();
    if let Some(handler) = handler {
        handler.strike(moment, node);
    }
}

/// The run's pattern handler, if a nemesis with patterns started.
#[derive(Default)]
struct HintSlot(RefCell<Option<Rc<Striker>>>);

/// What the patterns need of the nemesis that runs them.
pub(crate) struct Striker {
    patterns: Patterns,
    nodes: Vec<Node>,
    /// Nodes a kill may not touch.
    protected: BTreeSet<NodeId>,
    down: Rc<RefCell<BTreeSet<NodeId>>>,
    max_down: usize,
    lasting: (Duration, Duration),
    max_clock_jump: Duration,
    /// Nodes restarted and waiting for their second kill.
    recovering: RefCell<BTreeSet<NodeId>>,
    /// Nodes a pattern's kill counts in `down` until it restarts them.
    held: RefCell<BTreeSet<NodeId>>,
    /// Nodes cut off by an election partition, not yet healed.
    cut_off: Rc<RefCell<BTreeSet<NodeId>>>,
}

impl Striker {
    /// Registers the patterns for the run's hints and restarts; they act on their own from
    /// then on.
    pub(crate) fn install(
        patterns: Patterns,
        nodes: &[Node],
        protected: BTreeSet<NodeId>,
        down: Rc<RefCell<BTreeSet<NodeId>>>,
        max_down: usize,
        lasting: (Duration, Duration),
        max_clock_jump: Duration,
    ) {
        let striker = Rc::new(Striker {
            patterns,
            nodes: nodes.to_vec(),
            protected,
            down,
            max_down,
            lasting,
            max_clock_jump,
            recovering: RefCell::default(),
            held: RefCell::default(),
            cut_off: Rc::default(),
        });
        if let Some(slot) = plumbing::checks::extension::<HintSlot>() {
            *slot.0.borrow_mut() = Some(striker.clone());
        }
        plumbing::life::add_node_hook(Rc::new(Restarts(striker)));
    }

    /// Whether one more node may go down for a pattern: the bound leaves room, or `id` is
    /// already counted as down.
    fn has_room(&self, id: NodeId) -> bool {
        let down = self.down.borrow();
        down.len() < self.max_down || down.contains(&id)
    }

    /// Whether a pattern may kill `id`: a node of the nemesis, not protected.
    fn may_kill(&self, id: NodeId) -> bool {
        !self.protected.contains(&id) && self.nodes.iter().any(|n| n.id() == id)
    }

    /// Called after any restart of `id` (see [`Restarts`]): arms the recovery patterns.
    async fn after_restart(self: Rc<Self>, id: NodeId) {
        assert!(
            self.may_kill(id),
            "recovery patterns armed for {id}, which they may not kill"
        );
        if !fault::enabled() {
            return;
        }
        let describe = || "nemesis crash at the first sync after a restart".to_owned();
        if fault::draw(
            Stream::Nemesis,
            id,
            self.patterns.crash_at_first_sync,
            describe,
        ) {
            let striker = self.clone();
            crashtest_fs::on_next_sync(id, move || striker.crash_in_sync(id));
        }
        let describe = || "nemesis crash during recovery".to_owned();
        if !fault::draw(
            Stream::Nemesis,
            id,
            self.patterns.crash_in_recovery,
            describe,
        ) {
            return;
        }
        let window = self.patterns.recovery_window;
        let delay = crate::nemesis::draw(|rng| {
            let max = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
            Duration::from_nanos(rng.below_inclusive(max))
        });
        if !self.recovering.borrow_mut().insert(id) {
            // A recovery already waits for its second kill: one is enough.
            return;
        }
        time::sleep(delay).await;
        if self.recovering.borrow_mut().remove(&id) {
            self.kill_in_recovery(id);
        }
    }

    /// Stops counting `id` as down for a pattern's kill; false if it was not.
    fn release(&self, id: NodeId) -> bool {
        let held = self.held.borrow_mut().remove(&id);
        if held {
            let counted = self.down.borrow_mut().remove(&id);
            assert!(
                counted,
                "a node held down by a pattern was not counted as down"
            );
        }
        held
    }

    /// The second kill, if the node still runs and the bound on nodes down leaves room.
    fn kill_in_recovery(self: Rc<Self>, id: NodeId) {
        if node_status(id) != NodeStatus::Running || !self.has_room(id) {
            return;
        }
        probe!("nemesis: crash during recovery");
        self.kill_and_hold(id);
    }

    /// Kills `id` for a pattern and counts it as down until it restarts: by the supervisor
    /// task spawned here after a drawn while, or by any restart that comes first (the
    /// [`Restarts`] hook releases it then, and the task finds nothing left to restart).
    fn kill_and_hold(self: Rc<Self>, id: NodeId) {
        assert!(
            node_status(id) == NodeStatus::Running && self.has_room(id),
            "a pattern kills {id} without room for it or while it is not running"
        );
        plumbing::life::kill(id);
        if self.down.borrow_mut().insert(id) {
            self.held.borrow_mut().insert(id);
        }
        assert!(
            self.down.borrow().len() <= self.max_down,
            "a pattern's kill took more than {} nodes down",
            self.max_down
        );
        // Restarted from a supervisor task: the node's own tasks died with it.
        let lasting = crate::nemesis::draw(|rng| crate::nemesis::duration_in(rng, self.lasting));
        plumbing::life::spawn_on(NodeId::SUPERVISOR, "nemesis restart", async move {
            time::sleep(lasting).await;
            if self.release(id) && node_status(id) == NodeStatus::Dead {
                plumbing::life::restart(id);
            }
        });
    }

    /// Which pattern a hint may trigger, and triggers it.
    fn strike(self: Rc<Self>, moment: Hint, node: NodeId) {
        if !fault::enabled() {
            return;
        }
        match moment {
            Hint::Recovery => {
                if self.recovering.borrow_mut().remove(&node) {
                    self.kill_in_recovery(node);
                }
            }
            Hint::Election => self.partition_in_election(node),
            Hint::Lease => self.clock_jump_in_lease(node),
        }
    }

    /// The disk's trap at the node's first sync after its restart.
    fn crash_in_sync(self: Rc<Self>, id: NodeId) {
        if node_status(id) != NodeStatus::Running || !self.has_room(id) || !fault::enabled() {
            return;
        }
        probe!("nemesis: crash during the first sync after a restart");
        self.kill_and_hold(id);
    }

    fn partition_in_election(&self, id: NodeId) {
        if self.cut_off.borrow().contains(&id) {
            return;
        }
        let describe = || "nemesis partition during an election".to_owned();
        if !fault::draw(
            Stream::Nemesis,
            id,
            self.patterns.partition_in_election,
            describe,
        ) {
            return;
        }
        let (side, rest): (Vec<Node>, Vec<Node>) =
            self.nodes.iter().copied().partition(|n| n.id() == id);
        if side.is_empty() || rest.is_empty() {
            return;
        }
        probe!("nemesis: partition during an election");
        let split = Split::new(side, rest, false);
        split.cut();
        self.cut_off.borrow_mut().insert(id);
        let lasting = crate::nemesis::draw(|rng| crate::nemesis::duration_in(rng, self.lasting));
        let cut_off = self.cut_off.clone();
        plumbing::life::spawn_on(NodeId::SUPERVISOR, "nemesis heal", async move {
            time::sleep(lasting).await;
            split.heal();
            cut_off.borrow_mut().remove(&id);
        });
    }

    fn clock_jump_in_lease(&self, id: NodeId) {
        if self.protected.contains(&id) {
            return;
        }
        let describe = || "nemesis clock jump during a lease".to_owned();
        if !fault::draw(
            Stream::Nemesis,
            id,
            self.patterns.clock_jump_in_lease,
            describe,
        ) {
            return;
        }
        let Some(node) = self.nodes.iter().find(|n| n.id() == id) else {
            return;
        };
        probe!("nemesis: clock jump during a lease");
        let max = u64::try_from(self.max_clock_jump.as_nanos()).unwrap_or(u64::MAX / 4);
        let offset =
            crate::nemesis::draw(|rng| rng.range_inclusive(0, 2 * max) as i64 - max as i64);
        node.set_clock_offset_ns(offset);
    }
}

/// Tells the patterns of every restart of a node they may kill.
struct Restarts(Rc<Striker>);

impl plumbing::life::NodeHook for Restarts {
    fn node_restarted(&self, node: NodeId) {
        // Up again, whoever restarted it: a pattern's kill no longer holds it down.
        self.0.release(node);
        if self.0.may_kill(node) && fault::enabled() {
            let striker = self.0.clone();
            plumbing::life::spawn_on(
                NodeId::SUPERVISOR,
                "nemesis recovery patterns",
                striker.after_restart(node),
            );
        }
    }
}

fn node_status(id: NodeId) -> NodeStatus {
    plumbing::life::node_status(id).unwrap_or(NodeStatus::Dead)
}
