//! The replicated log in memory: entries numbered from 1, each with the term of the leader
//! that created it.
//!
//! Invariants (asserted): indices are dense from 1; terms never decrease along the log. Index 0
//! stands for the empty prefix, whose term is 0, so that "the entry before the first" needs no
//! special case. The durable copy lives in [`super::storage`]; the server changes both
//! together.

use serde::{Deserialize, Serialize};

use crate::kv::Command;

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The term of the leader that appended it.
    pub term: u64,
    /// The command to apply once it is committed; `None` for the no-op a new leader appends
    /// so that the entries of earlier terms commit (Raft's section 8).
    pub command: Option<Command>,
}

/// The log.
#[derive(Debug, Default)]
pub(crate) struct Log {
    entries: Vec<Entry>,
}

impl Log {
    /// A log holding `entries` (recovered from disk) from index 1 on.
    pub(crate) fn new(entries: Vec<Entry>) -> Log {
        let mut log = Log::default();
        for entry in entries {
            log.push(entry);
        }
        log
    }

    /// The index of the last entry (0 when empty).
    pub(crate) fn last_index(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The term of the last entry (0 when empty).
    pub(crate) fn last_term(&self) -> u64 {
        self.entries.last().map_or(0, |entry| entry.term)
    }

    /// The term of the entry at `index` (0 for index 0), `None` past the end.
    pub(crate) fn term_at(&self, index: u64) -> Option<u64> {
        match index {
            0 => Some(0),
            _ => self.entries.get(index as usize - 1).map(|entry| entry.term),
        }
    }

    /// The entry at `index`.
    ///
    /// # Panics
    ///
    /// If there is none: callers only ask for entries they know exist.
    pub(crate) fn get(&self, index: u64) -> &Entry {
        assert!(
            (1..=self.last_index()).contains(&index),
            "no entry {index} in a log of {}",
            self.last_index()
        );
        &self.entries[index as usize - 1]
    }

    /// Up to `max` entries from `index` on.
    pub(crate) fn slice(&self, index: u64, max: usize) -> Vec<Entry> {
        let start = (index.max(1) as usize - 1).min(self.entries.len());
        self.entries[start..].iter().take(max).cloned().collect()
    }

    /// Appends an entry after the last one.
    pub(crate) fn push(&mut self, entry: Entry) {
        assert!(
            entry.term >= self.last_term(),
            "log terms must not decrease: entry {} has term {} after term {}",
            self.last_index() + 1,
            entry.term,
            self.last_term()
        );
        self.entries.push(entry);
    }

    /// Keeps the first `len` entries and drops the rest.
    pub(crate) fn truncate(&mut self, len: u64) {
        self.entries.truncate(len as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(term: u64) -> Entry {
        Entry {
            term,
            command: Some(Command::Put(0, term)),
        }
    }

    #[test]
    fn index_zero_is_the_empty_prefix() {
        let log = Log::new(vec![entry(1), entry(2)]);
        assert_eq!(log.term_at(0), Some(0));
        assert_eq!(log.term_at(2), Some(2));
        assert_eq!(log.term_at(3), None);
        assert_eq!((log.last_index(), log.last_term()), (2, 2));
    }

    #[test]
    fn slices_start_at_their_index() {
        let log = Log::new(vec![entry(1), entry(1), entry(3)]);
        assert_eq!(log.slice(2, 10), [entry(1), entry(3)]);
        assert_eq!(log.slice(3, 1), [entry(3)]);
        assert!(log.slice(4, 10).is_empty());
    }

    #[test]
    #[should_panic(expected = "log terms must not decrease")]
    fn a_term_going_backwards_is_refused() {
        Log::new(vec![entry(2), entry(1)]);
    }
}
