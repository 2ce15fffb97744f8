//! Node life cycle: kill, restart, pause and resume, and the hooks told of each.
//!
//! Invariants: the supervisor is never killed, restarted or paused; when a kill returns no
//! task of the dead node can run again; only a dead node starts again; hooks are told after
//! the change, with no borrow held.

use super::*;

impl World {
    /// Opens the stream of a node just created.
    pub(crate) fn open_node_stream(&self, node: NodeId, name: &str) {
        // Opened as the node is created: it is the newest node of the table.
        assert_eq!(
            node.index() + 1,
            self.nodes.borrow().len(),
            "a stream opened for {node}, which is not the node just created"
        );
        let mut streams = self.streams.borrow_mut();
        streams.add_node(node, name);
        assert_eq!(
            streams.node_count(),
            self.nodes.borrow().len(),
            "every node has its stream, and only nodes do"
        );
    }

    pub(crate) fn add_hook(&self, hook: Rc<dyn NodeHook>) {
        self.hooks.borrow_mut().push(hook);
    }

    pub(super) fn hooks(&self) -> Vec<Rc<dyn NodeHook>> {
        self.hooks.borrow().clone()
    }

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
        if crate::verify::enabled() && self.nodes.borrow().status(node) == NodeStatus::Dead {
            // Not only the victims: no task at all of the still dead node may run again.
            for (id, slot) in tasks.iter_unfinished() {
                assert!(
                    slot.node() != node || slot.cancel_requested(),
                    "task {id} of dead node {node} can still run"
                );
            }
        }
        drop(tasks);
        // A hook may act on the world (spawn, kill, note): nothing of it is borrowed now.
        assert!(
            self.nodes.try_borrow_mut().is_ok() && self.tasks.try_borrow_mut().is_ok(),
            "node hooks were told under a borrow of the world"
        );
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
        // A hook may act on the world (spawn, kill, note): nothing of it is borrowed now.
        assert!(
            self.nodes.try_borrow_mut().is_ok() && self.tasks.try_borrow_mut().is_ok(),
            "node hooks were told under a borrow of the world"
        );
        for hook in self.hooks() {
            hook.node_restarted(node);
        }
        let main = self.spawn_on(node, Label::own("main"), (factory.0)());
        // The new process runs its main task, unless a hook or the factory killed it again
        // (its task then died at birth).
        assert_eq!(
            self.is_finished(main),
            self.nodes.borrow().status(node) == NodeStatus::Dead,
            "the main task of restarted {node} does not match its life"
        );
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
        // A hook may act on the world (spawn, kill, note): nothing of it is borrowed now.
        assert!(
            self.nodes.try_borrow_mut().is_ok() && self.tasks.try_borrow_mut().is_ok(),
            "node hooks were told under a borrow of the world"
        );
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
        if crate::verify::enabled() {
            // A parked task was queued when its poll was put off; it stays queued until it
            // runs, or ends if aborted meanwhile (its slot may then serve another task).
            let tasks = self.tasks.borrow();
            for &id in &parked {
                assert!(
                    tasks.get(id).is_none_or(|slot| slot.node() == node
                        && matches!(slot.state, TaskState::Queued | TaskState::Done)),
                    "parked task {id} is not a queued task of {node}"
                );
            }
            // A parked task was taken off the ready queue to be parked, and a queued task is
            // not queued again: one both parked and waiting would run twice.
            let waiting: std::collections::BTreeSet<TaskId> =
                self.ready.borrow().waiting().iter().copied().collect();
            assert!(
                parked.iter().all(|id| !waiting.contains(id)),
                "a parked task of {node} also waits in the ready queue"
            );
        }
        let (waiting, resumed) = (self.ready.borrow().waiting().len(), parked.len());
        self.ready.borrow_mut().extend(parked);
        // Every parked task goes back to the queue, none lost on the way.
        assert_eq!(
            self.ready.borrow().waiting().len(),
            waiting + resumed,
            "parked tasks of {node} were lost as it resumed"
        );
        self.record(EventKind::NodeResume { node });
        // A hook may act on the world (spawn, kill, note): nothing of it is borrowed now.
        assert!(
            self.nodes.try_borrow_mut().is_ok() && self.tasks.try_borrow_mut().is_ok(),
            "node hooks were told under a borrow of the world"
        );
        for hook in self.hooks() {
            hook.node_resumed(node);
        }
    }
}
