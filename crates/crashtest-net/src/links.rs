//! The state of the links between nodes: which directions are cut and which are clogged.
//!
//! A *partition* cuts a direction (`from` → `to`) until it is healed: what is sent across is
//! lost (datagrams) or stalls (TCP, which retransmits). A *clog* holds a direction, or every
//! link of a node, until a deadline: nothing is lost, it arrives when the clog lifts (FoundationDB's
//! clogging, TigerBeetle's `clogged_till`). Both are checked when a packet is due to arrive, so
//! packets already in flight are caught too.
//!
//! A node that is *down* (killed as a machine that loses its power, with
//! `NetConfig::kill_resets` off, and not started again) receives nothing: every direction
//! towards it stalls as a cut one does, so a peer's TCP retransmits until the node is back
//! (and answers with an RST, knowing no such connection) or its TCP timeout runs out. Its own
//! packets already in flight still arrive. A heal does not bring a node up; only its restart
//! does.
//!
//! Invariant: a node is never cut from or clogged towards itself (loopback never fails).
//! Nodes are named by their index (`NodeId::index`) to keep the keys small and ordered.

use std::collections::{BTreeMap, BTreeSet};

/// Whether a packet due now on a direction may arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Open,
    /// Held until this time (a clog).
    HeldUntil(u64),
    /// Cut (a partition, or a receiver that is down).
    Cut,
}

#[derive(Debug, Default)]
pub(crate) struct Links {
    cut: BTreeSet<(u32, u32)>,
    link_clogs: BTreeMap<(u32, u32), u64>,
    node_clogs: BTreeMap<u32, u64>,
    down: BTreeSet<u32>,
}

impl Links {
    /// True when no partition, clog or node that is down is recorded: the fast path of
    /// every delivery.
    #[inline]
    pub(crate) fn is_clear(&self) -> bool {
        self.no_partition_or_clog() && self.down.is_empty()
    }

    /// True when no partition or clog is recorded (a heal leaves no other).
    #[inline]
    fn no_partition_or_clog(&self) -> bool {
        self.cut.is_empty() && self.link_clogs.is_empty() && self.node_clogs.is_empty()
    }

    /// What happens to a packet due at `now` on `from` → `to`.
    #[inline]
    pub(crate) fn verdict(&self, from: u32, to: u32, now: u64) -> Verdict {
        if from == to || self.is_clear() {
            return Verdict::Open;
        }
        if self.is_cut(from, to) || self.down.contains(&to) {
            return Verdict::Cut;
        }
        match self.clogged_until(from, to) {
            Some(until) if until > now => Verdict::HeldUntil(until),
            _ => Verdict::Open,
        }
    }

    pub(crate) fn is_cut(&self, from: u32, to: u32) -> bool {
        from != to && self.cut.contains(&(from, to))
    }

    fn clogged_until(&self, from: u32, to: u32) -> Option<u64> {
        [
            self.link_clogs.get(&(from, to)),
            self.node_clogs.get(&from),
            self.node_clogs.get(&to),
        ]
        .into_iter()
        .flatten()
        .copied()
        .max()
    }

    /// Cuts `from` → `to`; false if it was already cut.
    pub(crate) fn cut(&mut self, from: u32, to: u32) -> bool {
        assert_ne!(from, to, "a node cannot be partitioned from itself");
        self.cut.insert((from, to))
    }

    /// Heals `from` → `to`; false if it was not cut.
    pub(crate) fn heal(&mut self, from: u32, to: u32) -> bool {
        self.cut.remove(&(from, to))
    }

    /// Clogs `from` → `to` until `until` (a later clog wins; an earlier one changes nothing).
    pub(crate) fn clog_link(&mut self, from: u32, to: u32, until: u64) {
        assert_ne!(from, to, "a node's loopback cannot be clogged");
        let entry = self.link_clogs.entry((from, to)).or_insert(until);
        *entry = (*entry).max(until);
    }

    /// Clogs every link to and from `node` until `until`.
    pub(crate) fn clog_node(&mut self, node: u32, until: u64) {
        let entry = self.node_clogs.entry(node).or_insert(until);
        *entry = (*entry).max(until);
    }

    /// Forgets clogs that have lifted by `now`, so that the fast path stays fast.
    pub(crate) fn prune(&mut self, now: u64) {
        self.link_clogs.retain(|_, until| *until > now);
        self.node_clogs.retain(|_, until| *until > now);
        assert!(
            self.link_clogs
                .values()
                .chain(self.node_clogs.values())
                .all(|&until| until > now),
            "only clogs still in force are kept"
        );
    }

    /// Node `node` went down: nothing reaches it until [`Links::up`].
    pub(crate) fn down(&mut self, node: u32) {
        self.down.insert(node);
    }

    /// True while node `node` is down.
    pub(crate) fn is_down(&self, node: u32) -> bool {
        self.down.contains(&node)
    }

    /// Node `node` is up again: true if it was down.
    pub(crate) fn up(&mut self, node: u32) -> bool {
        self.down.remove(&node)
    }

    /// Lifts every partition and clog; a node that is down stays down.
    pub(crate) fn clear(&mut self) {
        self.cut.clear();
        self.link_clogs.clear();
        self.node_clogs.clear();
        assert!(
            self.no_partition_or_clog(),
            "a cleared network has no partition or clog left"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_direction_is_cut_one_way_only() {
        let mut links = Links::default();
        assert!(links.cut(1, 2));
        assert!(!links.cut(1, 2));
        assert_eq!(links.verdict(1, 2, 0), Verdict::Cut);
        assert_eq!(links.verdict(2, 1, 0), Verdict::Open);
        assert_eq!(links.verdict(1, 1, 0), Verdict::Open);
        assert!(links.heal(1, 2) && !links.heal(1, 2));
        assert!(links.is_clear());
    }

    #[test]
    fn a_node_that_is_down_receives_nothing_until_it_is_up_and_a_heal_does_not_lift_it() {
        let mut links = Links::default();
        links.down(2);
        assert_eq!(links.verdict(1, 2, 0), Verdict::Cut);
        assert_eq!(
            links.verdict(2, 1, 0),
            Verdict::Open,
            "its packets in flight arrive"
        );
        links.clear();
        assert_eq!(links.verdict(1, 2, 0), Verdict::Cut);
        assert!(links.up(2) && !links.up(2));
        assert_eq!(links.verdict(1, 2, 0), Verdict::Open);
        assert!(links.is_clear());
    }

    #[test]
    fn clogs_hold_until_the_latest_deadline_then_prune() {
        let mut links = Links::default();
        links.clog_link(1, 2, 100);
        links.clog_node(2, 300);
        links.clog_link(1, 2, 50);
        assert_eq!(links.verdict(1, 2, 10), Verdict::HeldUntil(300));
        assert_eq!(links.verdict(3, 2, 10), Verdict::HeldUntil(300));
        assert_eq!(links.verdict(1, 3, 10), Verdict::Open);
        assert_eq!(links.verdict(1, 2, 300), Verdict::Open);
        links.prune(300);
        assert!(links.is_clear());
    }
}
