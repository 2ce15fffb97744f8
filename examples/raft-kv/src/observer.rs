//! Cluster-wide invariants, checked from outside the servers: Raft's election safety (at most
//! one leader per term) and state machine safety (no two servers apply different entries at
//! the same index).
//!
//! The servers report to a shared [`Observer`] (a test hook: the simulation runs every node on
//! one thread, so an `Rc` reaches them all). It remembers across crashes what no single server
//! can: who led each term, and the one sequence of entries every server must apply. A broken
//! invariant is kept as a violation, and [`Observer::install`] registers a step check that
//! fails the run with it right after the step that broke it. The observer also tells the
//! liveness phase which servers have not caught up yet.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::raft::log::Entry;

/// What the servers reported.
#[derive(Debug, Default)]
pub struct Observer {
    state: RefCell<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The leader of each term.
    leaders: BTreeMap<u64, usize>,
    /// The entry applied at each index (from 1), by whichever server applied it first.
    applied_log: Vec<Entry>,
    /// How far each server's current incarnation has applied.
    applied: BTreeMap<usize, u64>,
    /// The first invariant found broken.
    violation: Option<String>,
}

impl Observer {
    /// Registers the invariants as a step check of the running simulation: the run fails
    /// with the first violation.
    ///
    /// ```
    /// crashtest::Sim::new(1).run(async {
    ///     std::rc::Rc::new(raft_kv::observer::Observer::default()).install();
    /// }).unwrap();
    /// ```
    pub fn install(self: &Rc<Self>) {
        let observer = self.clone();
        crashtest::check::invariant::always("raft safety", move || observer.check());
    }

    /// `Err` with the first broken invariant, if any.
    ///
    /// ```
    /// assert!(raft_kv::observer::Observer::default().check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), String> {
        match &self.state.borrow().violation {
            Some(violation) => Err(violation.clone()),
            None => Ok(()),
        }
    }

    /// How many elections were won.
    ///
    /// ```
    /// assert_eq!(raft_kv::observer::Observer::default().leaders(), 0);
    /// ```
    pub fn leaders(&self) -> usize {
        self.state.borrow().leaders.len()
    }

    /// The leader of the latest term that elected one, as `(term, server)`.
    ///
    /// ```
    /// assert_eq!(raft_kv::observer::Observer::default().latest_leader(), None);
    /// ```
    pub fn latest_leader(&self) -> Option<(u64, usize)> {
        let state = self.state.borrow();
        state
            .leaders
            .last_key_value()
            .map(|(term, id)| (*term, *id))
    }

    /// How many entries some server has applied (the length of the one applied log).
    ///
    /// ```
    /// assert_eq!(raft_kv::observer::Observer::default().applied_entries(), 0);
    /// ```
    pub fn applied_entries(&self) -> u64 {
        self.state.borrow().applied_log.len() as u64
    }

    /// The servers that have applied fewer entries than another one, as "s1 applied 3 of 5".
    ///
    /// ```
    /// assert!(raft_kv::observer::Observer::default().lagging().is_empty());
    /// ```
    pub fn lagging(&self) -> Vec<String> {
        let state = self.state.borrow();
        let most = state.applied.values().copied().max().unwrap_or(0);
        state
            .applied
            .iter()
            .filter(|(_, applied)| **applied < most)
            .map(|(server, applied)| format!("s{server} applied {applied} of {most} entries"))
            .collect()
    }

    fn violated(state: &mut State, violation: String) {
        state.violation.get_or_insert(violation);
    }

    /// Server `id` (re)started: it applies the log again from the start.
    pub(crate) fn started(&self, id: usize) {
        self.state.borrow_mut().applied.insert(id, 0);
    }

    /// Server `id` won the election of `term`.
    pub(crate) fn became_leader(&self, term: u64, id: usize) {
        let mut state = self.state.borrow_mut();
        if let Some(other) = state.leaders.insert(term, id)
            && other != id
        {
            let violation = format!("two leaders in term {term}: s{other} and s{id}");
            Observer::violated(&mut state, violation);
        }
    }

    /// Server `id` applied `entry` at `index`.
    pub(crate) fn applied(&self, id: usize, index: u64, entry: &Entry) {
        let mut state = self.state.borrow_mut();
        let previous = state.applied.insert(id, index);
        assert_eq!(
            previous,
            Some(index - 1),
            "s{id} applied entry {index} out of order"
        );
        match state.applied_log.get(index as usize - 1) {
            None => state.applied_log.push(entry.clone()),
            Some(first) if first != entry => {
                let violation = format!(
                    "s{id} applied {entry:?} at index {index}, where another server applied {first:?}"
                );
                Observer::violated(&mut state, violation);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::Command;

    fn entry(term: u64, value: u64) -> Entry {
        Entry {
            term,
            command: Some(Command::Put(0, value)),
        }
    }

    #[test]
    fn two_leaders_of_one_term_are_a_violation() {
        let observer = Observer::default();
        observer.became_leader(3, 0);
        observer.became_leader(3, 0);
        assert!(observer.check().is_ok());
        observer.became_leader(3, 2);
        assert_eq!(
            observer.check().unwrap_err(),
            "two leaders in term 3: s0 and s2"
        );
    }

    #[test]
    fn different_entries_at_one_index_are_a_violation() {
        let observer = Observer::default();
        observer.started(0);
        observer.started(1);
        observer.applied(0, 1, &entry(1, 1));
        observer.applied(1, 1, &entry(1, 1));
        assert!(observer.check().is_ok());
        observer.applied(1, 2, &entry(2, 7));
        observer.applied(0, 2, &entry(1, 8));
        assert!(observer.check().unwrap_err().contains("at index 2"));
        assert!(observer.lagging().is_empty());
    }

    #[test]
    fn a_restarted_server_lags_until_it_applies_again() {
        let observer = Observer::default();
        observer.started(0);
        observer.started(1);
        observer.applied(0, 1, &entry(1, 1));
        assert_eq!(observer.lagging(), ["s1 applied 0 of 1 entries"]);
    }
}
