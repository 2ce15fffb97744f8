//! The oracles: what every node reports as it runs, and the Raft properties checked on it.
//!
//! Nodes report their role after every step, every entry they apply, and the storage of their
//! current life. Election safety (at most one leader per term) and state-machine safety (no
//! two nodes ever apply different entries at one index, and each node applies indexes in
//! order from 1) are checked as the reports arrive, so an invariant fails the run at the step
//! that broke them; log matching and the prefix property of the applied sequences are checked
//! over the final state by [`Oracle::check_final`].

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use raft::eraftpb::Entry;
use raft::storage::MemStorage;
use raft::{GetEntriesContext, Storage};

/// An applied entry: index, term, payload (empty for a leader's no-op).
pub type Applied = (u64, u64, Vec<u8>);

/// The shared record of the run (the test and the nodes hold it through an `Rc`).
#[derive(Default)]
pub struct Oracle {
    state: RefCell<State>,
}

impl std::fmt::Debug for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.borrow();
        f.debug_struct("Oracle")
            .field("leaders", &state.leaders)
            .field("first_applied", &state.first_applied.len())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// The leader each term had, from the first node seen leading it.
    leaders: BTreeMap<u64, u64>,
    /// What was first applied at each index, by any node in any life.
    first_applied: BTreeMap<u64, (u64, Vec<u8>)>,
    /// Per node: what its current life has applied, in order.
    applied: BTreeMap<u64, Vec<Applied>>,
    /// Per node: the payloads its current life has applied, for the liveness phase's
    /// questions (asked every few milliseconds, of a log that may be thousands long).
    payloads: BTreeMap<u64, BTreeSet<Vec<u8>>>,
    /// How many times any node's payload set changed (a boot empties one, an apply may add
    /// to one): the liveness phase's answer stands while it does not move.
    payload_changes: u64,
    /// Per node: the storage of its current life.
    storage: BTreeMap<u64, MemStorage>,
    election_violation: Option<String>,
    apply_violation: Option<String>,
}

impl Oracle {
    /// A fresh record, with the two running invariants installed in the simulation.
    pub fn install() -> Rc<Oracle> {
        let oracle = Rc::new(Oracle::default());
        let watched = oracle.clone();
        crashtest::check::invariant::always("one leader per term", move || {
            watched
                .state
                .borrow()
                .election_violation
                .clone()
                .map_or(Ok(()), Err)
        });
        let watched = oracle.clone();
        crashtest::check::invariant::always("state-machine safety", move || {
            watched
                .state
                .borrow()
                .apply_violation
                .clone()
                .map_or(Ok(()), Err)
        });
        oracle
    }

    /// Node `id` starts a life with `storage`: its state machine starts empty and is rebuilt
    /// from index 1 (the cluster persists the log, not the state machine).
    pub(crate) fn boot(&self, id: u64, storage: MemStorage) {
        let mut state = self.state.borrow_mut();
        state.applied.insert(id, Vec::new());
        state.payloads.insert(id, BTreeSet::new());
        state.payload_changes += 1;
        state.storage.insert(id, storage);
    }

    /// Node `id` is leader of `term`.
    pub(crate) fn leading(&self, id: u64, term: u64) {
        let mut state = self.state.borrow_mut();
        let first = *state.leaders.entry(term).or_insert(id);
        if first != id && state.election_violation.is_none() {
            state.election_violation = Some(format!(
                "nodes {first} and {id} were both leader of term {term}"
            ));
        }
    }

    /// Node `id` applied `entry`.
    pub(crate) fn apply(&self, id: u64, entry: &Entry) {
        let mut state = self.state.borrow_mut();
        let State {
            first_applied,
            applied,
            payloads,
            payload_changes,
            apply_violation,
            ..
        } = &mut *state;
        let mine = applied
            .get_mut(&id)
            .expect("a node boots before it applies");
        let expected = mine.last().map_or(1, |(index, _, _)| index + 1);
        let first = first_applied
            .entry(entry.index)
            .or_insert_with(|| (entry.term, entry.data.to_vec()));
        let problem = if entry.index != expected {
            Some(format!(
                "node {id} applied index {} where {expected} was next",
                entry.index
            ))
        } else if first.0 != entry.term || first.1[..] != entry.data[..] {
            Some(format!(
                "node {id} applied (term {}, {:?}) at index {}, where (term {}, {:?}) was applied before",
                entry.term, entry.data, entry.index, first.0, first.1
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            apply_violation.get_or_insert(problem);
        }
        mine.push((entry.index, entry.term, entry.data.to_vec()));
        let payloads = payloads.entry(id).or_default();
        if !payloads.contains(&entry.data[..]) {
            payloads.insert(entry.data.to_vec());
            *payload_changes += 1;
        }
    }

    /// A counter that moves whenever some node's set of applied payloads changes: while it
    /// stands still, every [`Oracle::not_applied`] answer stands too.
    pub fn payload_changes(&self) -> u64 {
        self.state.borrow().payload_changes
    }

    /// The node that most recently claimed to lead the highest term, if any.
    pub(crate) fn latest_leader(&self) -> Option<u64> {
        self.state
            .borrow()
            .leaders
            .last_key_value()
            .map(|(_, leader)| *leader)
    }

    /// The indices in `commands` of those node `id`'s current life has not applied.
    pub fn not_applied(&self, id: u64, commands: &[Vec<u8>]) -> Vec<usize> {
        let state = self.state.borrow();
        let payloads = state.payloads.get(&id);
        (0..commands.len())
            .filter(|&k| !payloads.is_some_and(|p| p.contains(&commands[k])))
            .collect()
    }

    /// Whether any node ever applied `command`.
    pub fn applied_anywhere(&self, command: &[u8]) -> bool {
        self.state
            .borrow()
            .first_applied
            .values()
            .any(|(_, data)| data == command)
    }

    /// How many terms had a leader.
    pub fn terms_with_leader(&self) -> usize {
        self.state.borrow().leaders.len()
    }

    /// The end-of-run checks: every node's applied sequence is a prefix of every other's, the
    /// logs satisfy log matching, and committed prefixes agree. Returns what is wrong.
    pub fn check_final(&self) -> Result<(), String> {
        let state = self.state.borrow();
        let applied: Vec<(&u64, &Vec<Applied>)> = state.applied.iter().collect();
        for (i, (a, left)) in applied.iter().enumerate() {
            for (b, right) in &applied[i + 1..] {
                let common = left.len().min(right.len());
                if left[..common] != right[..common] {
                    return Err(format!(
                        "the applied sequences of nodes {a} and {b} are not prefixes of each other"
                    ));
                }
            }
        }
        let logs: Vec<(u64, Vec<Entry>, u64)> = state
            .storage
            .iter()
            .map(|(id, storage)| (*id, log_of(storage), storage.rl().hard_state().commit))
            .collect();
        for (i, (a, left, commit_a)) in logs.iter().enumerate() {
            for (b, right, commit_b) in &logs[i + 1..] {
                check_pair(*a, left, *commit_a, *b, right, *commit_b)?;
            }
        }
        Ok(())
    }
}

/// The whole log held by `storage` (the cluster never compacts, so it starts at index 1).
fn log_of(storage: &MemStorage) -> Vec<Entry> {
    let first = storage
        .first_index()
        .expect("a memory log has a first index");
    let last = storage.last_index().expect("a memory log has a last index");
    assert_eq!(first, 1, "the cluster never compacts its log");
    storage
        .entries(first, last + 1, None, GetEntriesContext::empty(false))
        .expect("a memory log holds its own range")
}

/// Log matching: if two logs hold an entry with the same index and term, they are identical
/// up to it. And the entries both nodes know as committed are the same.
fn check_pair(
    a: u64,
    left: &[Entry],
    commit_a: u64,
    b: u64,
    right: &[Entry],
    commit_b: u64,
) -> Result<(), String> {
    let same = |x: &Entry, y: &Entry| (x.index, x.term, &x.data) == (y.index, y.term, &y.data);
    let matched = left
        .iter()
        .zip(right)
        .rposition(|(x, y)| x.term == y.term)
        .map_or(0, |at| at + 1);
    if let Some(at) = (0..matched).find(|&at| !same(&left[at], &right[at])) {
        return Err(format!(
            "log matching: nodes {a} and {b} agree on the term at index {matched} but differ at index {}",
            at + 1
        ));
    }
    let committed = usize::try_from(commit_a.min(commit_b)).expect("index fits usize");
    let both = committed.min(left.len()).min(right.len());
    if let Some(at) = (0..both).find(|&at| !same(&left[at], &right[at])) {
        return Err(format!(
            "nodes {a} and {b} both committed index {} with different entries",
            at + 1
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
        let mut entry = Entry::default();
        (entry.index, entry.term, entry.data) = (index, term, data.to_vec().into());
        entry
    }

    #[test]
    fn two_leaders_of_one_term_fail_the_run() {
        let failure = crashtest::Sim::new(1)
            .run(async {
                let oracle = Oracle::install();
                oracle.leading(1, 5);
                oracle.leading(2, 5);
                crashtest::task::yield_now().await;
            })
            .unwrap_err();
        assert!(
            failure.to_string().contains("one leader per term"),
            "{failure}"
        );
    }

    #[test]
    fn different_entries_applied_at_one_index_fail_the_run() {
        let failure = crashtest::Sim::new(1)
            .run(async {
                let oracle = Oracle::install();
                oracle.boot(1, MemStorage::new());
                oracle.boot(2, MemStorage::new());
                oracle.apply(1, &entry(1, 1, b"a"));
                oracle.apply(2, &entry(1, 1, b"b"));
                crashtest::task::yield_now().await;
            })
            .unwrap_err();
        assert!(
            failure.to_string().contains("state-machine safety"),
            "{failure}"
        );
    }

    #[test]
    fn not_applied_names_what_the_current_life_lacks() {
        crashtest::Sim::new(1)
            .run(async {
                let oracle = Oracle::install();
                let commands = [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
                assert_eq!(oracle.not_applied(1, &commands), [0, 1, 2]);
                oracle.boot(1, MemStorage::new());
                oracle.apply(1, &entry(1, 1, b""));
                oracle.apply(1, &entry(2, 1, b"c"));
                oracle.apply(1, &entry(3, 1, b"a"));
                assert_eq!(oracle.not_applied(1, &commands), [1]);
                let before = oracle.payload_changes();
                oracle.apply(1, &entry(4, 1, b"c"));
                assert_eq!(oracle.payload_changes(), before, "a payload applied again");
                oracle.boot(1, MemStorage::new());
                assert!(oracle.payload_changes() > before, "a boot empties the set");
                assert_eq!(oracle.not_applied(1, &commands), [0, 1, 2]);
            })
            .unwrap();
    }

    #[test]
    fn logs_that_agree_on_a_term_but_differ_before_it_break_log_matching() {
        let left = [entry(1, 1, b"a"), entry(2, 2, b"x")];
        let right = [entry(1, 1, b"b"), entry(2, 2, b"x")];
        let problem = check_pair(1, &left, 0, 2, &right, 0).unwrap_err();
        assert!(problem.starts_with("log matching"), "{problem}");
        let diverging_tail = [entry(1, 1, b"a"), entry(2, 3, b"y")];
        assert_eq!(check_pair(1, &left, 1, 2, &diverging_tail, 1), Ok(()));
        assert!(check_pair(1, &left, 2, 2, &diverging_tail, 2).is_err());
    }
}
