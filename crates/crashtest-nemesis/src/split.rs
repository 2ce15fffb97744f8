//! The one way fault orchestration partitions a cluster: a split of nodes into two sides.
//!
//! Both partitioning schedules use it: the nemesis's partition action (one node cut off from
//! the rest) and random partitions (a random split of the cluster). A split cuts every link
//! from its first side to its second, both ways or one way, through the network's explicit
//! partitions, and heals exactly those links.
//!
//! Invariant: the two sides are disjoint and neither is empty.

use crashtest_core::node::{Node, NodeId};

/// Nodes on two sides of a cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    side: Vec<Node>,
    rest: Vec<Node>,
    one_way: bool,
}

impl Split {
    /// The first side cut from the rest; only its packets to the rest if `one_way`.
    ///
    /// # Panics
    ///
    /// Panics if a side is empty or the sides share a node.
    pub(crate) fn new(side: Vec<Node>, rest: Vec<Node>, one_way: bool) -> Split {
        assert!(
            !side.is_empty() && !rest.is_empty(),
            "a split needs a node on each side"
        );
        assert!(
            side.iter().all(|node| !rest.contains(node)),
            "a node cannot be on both sides of a split"
        );
        Split {
            side,
            rest,
            one_way,
        }
    }

    /// The node the split is recorded on: the first of the first side.
    pub(crate) fn first(&self) -> NodeId {
        self.side[0].id()
    }

    /// Cuts every link from the first side to the rest.
    pub(crate) fn cut(&self) {
        for (a, b) in self.links() {
            if self.one_way {
                crashtest_net::partition_one_way(a, b);
            } else {
                crashtest_net::partition(a, b);
            }
        }
    }

    /// Heals every link the split cut.
    pub(crate) fn heal(&self) {
        for (a, b) in self.links() {
            crashtest_net::heal(a, b);
        }
    }

    fn links(&self) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        self.side
            .iter()
            .flat_map(|a| self.rest.iter().map(move |b| (a.id(), b.id())))
    }

    /// `{a,b} <-/-> {c}` (`-/->` for one way).
    pub(crate) fn describe(&self) -> String {
        let names = |nodes: &[Node]| {
            let names: Vec<String> = nodes.iter().map(Node::name).collect();
            names.join(",")
        };
        let arrow = if self.one_way { "-/->" } else { "<-/->" };
        format!(
            "{{{}}} {arrow} {{{}}}",
            names(&self.side),
            names(&self.rest)
        )
    }
}
