//! The search's memory of configurations already explored (Lowe's memoisation), with dominance
//! for operations of unknown outcome.
//!
//! A configuration is the set of operations linearized so far plus the model state they led
//! to. Two configurations with the same set and state have the same future, so the second is
//! pruned. Operations of unknown outcome never return, so they stay available for ever: a
//! configuration that has linearized a *subset* of another's unknown operations (same definite
//! set, same state) has every option the other has and more. The memo therefore keys on the
//! definite set and the state, and keeps, per key, the minimal unknown sets seen; a new
//! configuration is pruned if one of them is a subset of its own. This is what keeps histories
//! with many timed-out writes from blowing up: linearizing a read of unknown outcome (no effect
//! on the state) is pruned at once, and so is every reordering of unknown writes that ends in
//! the same state.
//!
//! The definite set is a bitset stored compactly: the search linearizes operations roughly in
//! invocation order, so the set is almost always "every operation below p, plus a few above".
//! The key keeps p's word index and only the words from there to the last set bit, which makes
//! a key a few words long even for a partition of 100,000 operations.
//!
//! The table is only ever probed, never iterated, and hashes with a fixed seed, so the search
//! does the same work in every run.

use std::hash::{BuildHasher, Hash};

use foldhash::fast::FixedState;
use hashbrown::HashTable;

/// A set of operation indices `0..len`, kept with the two landmarks its compact key needs.
#[derive(Debug)]
pub(super) struct LinearizedSet {
    words: Vec<u64>,
    len: usize,
    /// Words `0..full` have every bit set (for the last word: every bit below `len`).
    full: usize,
    /// Words `top..` are all zero.
    top: usize,
}

impl LinearizedSet {
    pub(super) fn new(len: usize) -> LinearizedSet {
        LinearizedSet {
            words: vec![0; len.div_ceil(64)],
            len,
            full: 0,
            top: 0,
        }
    }

    fn complete_word(&self, word: usize) -> u64 {
        let bits = self.len - word * 64;
        if bits >= 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        }
    }

    pub(super) fn insert(&mut self, index: usize) {
        assert!(index < self.len, "operation {index} is outside the set");
        let (word, bit) = (index / 64, 1u64 << (index % 64));
        assert!(
            self.words[word] & bit == 0,
            "operation {index} linearized twice"
        );
        self.words[word] |= bit;
        self.top = self.top.max(word + 1);
        while self.full < self.words.len() && self.words[self.full] == self.complete_word(self.full)
        {
            self.full += 1;
        }
    }

    pub(super) fn remove(&mut self, index: usize) {
        let (word, bit) = (index / 64, 1u64 << (index % 64));
        assert!(
            self.words[word] & bit != 0,
            "operation {index} was not linearized"
        );
        self.words[word] &= !bit;
        self.full = self.full.min(word);
        while self.top > 0 && self.words[self.top - 1] == 0 {
            self.top -= 1;
        }
    }

    /// The canonical compact form: the number of complete leading words and the words after
    /// them up to the last set bit. Equal sets give equal keys.
    fn key(&self) -> (usize, &[u64]) {
        (self.full, &self.words[self.full..self.top.max(self.full)])
    }
}

struct Entry<S> {
    full: usize,
    words: Box<[u64]>,
    state: S,
    /// The minimal sets of unknown operations (sorted indices) seen with this key; none is a
    /// subset of another.
    unknown_sets: Vec<Box<[u32]>>,
}

/// Configurations already explored.
pub(super) struct Memo<S> {
    table: HashTable<Entry<S>>,
    hasher: FixedState,
}

/// The seed of the memo's hasher: any constant will do, a constant one keeps runs identical.
const HASH_SEED: u64 = 0x6c69_6e65_6172_697a;

impl<S: Eq + Hash + Clone> Memo<S> {
    pub(super) fn new() -> Memo<S> {
        Memo {
            table: HashTable::new(),
            hasher: FixedState::with_seed(HASH_SEED),
        }
    }

    /// Records the configuration; false if it, or one that dominates it, was explored before.
    /// `unknown` holds the linearized unknown operations, sorted.
    pub(super) fn first_visit(
        &mut self,
        definite: &LinearizedSet,
        state: &S,
        unknown: &[u32],
    ) -> bool {
        assert!(unknown.is_sorted(), "unknown sets are kept sorted");
        let (full, words) = definite.key();
        let hasher = &self.hasher;
        let hash = hasher.hash_one((full, words, state));
        let found = self.table.find_mut(hash, |entry| {
            entry.full == full && *entry.words == *words && entry.state == *state
        });
        match found {
            Some(entry) => {
                if entry
                    .unknown_sets
                    .iter()
                    .any(|seen| is_subset(seen, unknown))
                {
                    return false;
                }
                entry.unknown_sets.retain(|seen| !is_subset(unknown, seen));
                entry.unknown_sets.push(unknown.into());
            }
            None => {
                let entry = Entry {
                    full,
                    words: words.into(),
                    state: state.clone(),
                    unknown_sets: vec![unknown.into()],
                };
                self.table.insert_unique(hash, entry, |entry| {
                    hasher.hash_one((entry.full, &*entry.words, &entry.state))
                });
            }
        }
        true
    }
}

/// True if every element of the sorted `small` is in the sorted `large`.
fn is_subset(small: &[u32], large: &[u32]) -> bool {
    if small.len() > large.len() {
        return false;
    }
    let mut rest = large.iter();
    small.iter().all(|item| rest.any(|other| other == item))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_sets_built_in_different_orders_have_equal_keys() {
        let mut a = LinearizedSet::new(200);
        let mut b = LinearizedSet::new(200);
        for i in 0..130 {
            a.insert(i);
        }
        a.insert(150);
        b.insert(150);
        for i in (0..130).rev() {
            b.insert(i);
        }
        assert_eq!(a.key(), b.key());
        assert_eq!(
            a.key().0,
            2,
            "the two complete words are left out of the key"
        );
        assert_eq!(a.key().1.len(), 1);
    }

    #[test]
    fn removing_brings_the_key_back() {
        let mut set = LinearizedSet::new(70);
        set.insert(5);
        let before = (set.key().0, set.key().1.to_vec());
        set.insert(69);
        set.remove(69);
        assert_eq!((set.key().0, set.key().1.to_vec()), before);
    }

    #[test]
    fn a_full_set_has_an_empty_tail() {
        let mut set = LinearizedSet::new(65);
        for i in 0..65 {
            set.insert(i);
        }
        assert_eq!(set.key(), (2, &[][..]));
        set.remove(3);
        assert_eq!(set.key().0, 0);
    }

    #[test]
    fn a_configuration_is_pruned_the_second_time() {
        let mut memo = Memo::new();
        let mut set = LinearizedSet::new(10);
        set.insert(2);
        assert!(memo.first_visit(&set, &7u8, &[]));
        assert!(!memo.first_visit(&set, &7u8, &[]));
        assert!(memo.first_visit(&set, &8u8, &[]));
    }

    #[test]
    fn more_unknown_operations_linearized_is_dominated() {
        let mut memo = Memo::new();
        let set = LinearizedSet::new(4);
        assert!(memo.first_visit(&set, &0u8, &[1, 3]));
        assert!(
            !memo.first_visit(&set, &0u8, &[1, 2, 3]),
            "a superset is dominated"
        );
        assert!(
            memo.first_visit(&set, &0u8, &[2]),
            "an unrelated set is not"
        );
        assert!(
            memo.first_visit(&set, &0u8, &[]),
            "a subset dominates the others"
        );
        assert!(!memo.first_visit(&set, &0u8, &[2]));
    }

    #[test]
    fn subsets_of_sorted_slices() {
        assert!(is_subset(&[], &[1]));
        assert!(is_subset(&[1, 4], &[0, 1, 2, 4]));
        assert!(!is_subset(&[1, 5], &[0, 1, 2, 4]));
        assert!(!is_subset(&[1, 2], &[2]));
    }
}
