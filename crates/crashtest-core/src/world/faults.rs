//! The world's side of the fault ledger: faults noted in the trace and listed for the
//! report as the ledger rules, `buggify!` sites, and the heal.
//!
//! Invariant: every fault the run applies is in the ledger's list and noted in the trace,
//! with its id when it has one; a masked fault is only noted.

use super::*;
use crate::fault::ledger::ListedFault;

impl World {
    pub(crate) fn add_healer(&self, healer: Rc<dyn Healer>) {
        self.healers.borrow_mut().push(healer);
    }

    pub(crate) fn faults_enabled(&self) -> bool {
        self.ledger.borrow().enabled()
    }

    /// Ends every fault: no more are applied, dead nodes restart, paused nodes resume, and
    /// each healer ends its own (partitions, clogs).
    pub(crate) fn heal(&self) {
        self.ledger.borrow_mut().heal();
        // From here on no drawn fault applies (`fault` answers `Healed`).
        assert!(!self.faults_enabled(), "faults are still on after the heal");
        self.record(EventKind::Note {
            source: "heal",
            words: [0; 3],
            text: "heal all faults".into(),
        });
        let nodes: Vec<(NodeId, NodeStatus)> = {
            let table = self.nodes.borrow();
            (1..table.len())
                .map(|i| NodeId(i as u32))
                .map(|n| (n, table.status(n)))
                .collect()
        };
        for (node, status) in nodes {
            match status {
                NodeStatus::Dead => self.restart_node(node, None),
                NodeStatus::Paused => self.resume_node(node),
                NodeStatus::Running => {}
            }
        }
        let healers = self.healers.borrow().clone();
        // A healer ends its faults through the world (a partition's links, its notes).
        assert!(
            self.healers.try_borrow_mut().is_ok() && self.nodes.try_borrow_mut().is_ok(),
            "the healers were told under a borrow of the world"
        );
        for healer in healers {
            healer.heal();
        }
        if crate::verify::enabled() {
            let table = self.nodes.borrow();
            let down = (1..table.len())
                .map(|i| NodeId(i as u32))
                .find(|&n| table.status(n) != NodeStatus::Running);
            assert!(down.is_none(), "node {down:?} is down after the heal");
        }
    }

    /// A fault came up on `node`, drawn from `stream`: the ledger numbers it and decides; an
    /// applied fault is noted in the trace and listed for the report, a masked one only noted.
    pub(crate) fn fault(
        &self,
        stream: Stream,
        node: NodeId,
        cause: Cause,
        describe: impl FnOnce() -> String,
    ) -> bool {
        // The executor's and the epoch's streams are not the faults': a coin drawn there
        // would move the schedule, so masking the fault could not replay the run.
        assert!(
            !matches!(stream, Stream::Scheduler | Stream::Clock),
            "a fault drawn from the {stream} stream"
        );
        // A probe's poll is a look at a stuck task, not part of the run.
        if self.probing.get() {
            self.probe_went_on();
            return false;
        }
        let verdict = self.ledger.borrow_mut().come_up(cause);
        assert!(
            verdict != Verdict::Healed || (cause == Cause::Drawn && !self.faults_enabled()),
            "only a drawn fault is stopped, and only by the heal"
        );
        match verdict {
            Verdict::Healed => false,
            Verdict::Masked(id) => {
                // Only a replay masks faults: by id, or by keeping only some.
                assert!(
                    !self.config.masked_faults.is_empty() || self.config.kept_faults.is_some(),
                    "fault #{id} masked in a run that masks none"
                );
                let (source, words) = FaultNote::Masked { id }.encode();
                self.note_with(node, source, words, |note| {
                    note.push("masked fault #").number(id);
                });
                false
            }
            Verdict::Applied(id) => {
                // `describe` is the caller's code, which may draw another fault.
                assert!(
                    self.ledger.try_borrow_mut().is_ok(),
                    "fault #{id} is described under the ledger's borrow"
                );
                self.list_fault(node, Some(id), Some(stream), describe());
                true
            }
        }
    }

    /// Notes a fault the test applied itself (a kill, an explicit partition): no id, no draw.
    pub(crate) fn note_fault(&self, node: NodeId, text: String) {
        self.list_fault(node, None, None, text);
    }

    pub(super) fn list_fault(
        &self,
        node: NodeId,
        id: Option<u64>,
        stream: Option<Stream>,
        text: String,
    ) {
        assert_eq!(
            id.is_some(),
            stream.is_some(),
            "a numbered fault names its stream, an explicit one neither"
        );
        if self.probing.get() {
            return self.probe_went_on();
        }
        let (source, words) = FaultNote::Applied { id }.encode();
        self.note_with(node, source, words, |note| {
            note.push(&text);
        });
        let fault = ListedFault {
            id,
            stream,
            time_ns: self.now_ns.get(),
            node,
            text,
        };
        self.ledger.borrow_mut().list(fault);
    }

    /// Whether a `buggify!` site is on for this run (decided once per site and run).
    pub(crate) fn buggify_site_enabled(&self, site: &Site) -> bool {
        let enabled = self.ledger.borrow_mut().site_enabled(site);
        // `Config::buggify(false)` turns every site off.
        assert!(
            !enabled || self.config.buggify,
            "buggify! site {site} is on in a run without buggify"
        );
        enabled
    }
}
