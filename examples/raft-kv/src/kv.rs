//! The replicated state machine: a map from `u64` keys to `u64` values, and the commands
//! that change it.
//!
//! Every server applies the same committed commands in the same order, so every server's map
//! goes through the same states; that is all the consensus layer promises and all this module
//! relies on. Commands are deterministic functions of the map. [`Command::Cas`] checks and
//! writes several keys in one step: it is the transaction the Cycle workload runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A client's request to the store.
///
/// ```
/// use raft_kv::kv::{Command, Kv, Output};
///
/// let mut kv = Kv::default();
/// assert_eq!(kv.apply(&Command::Put(1, 10)), Output::Done);
/// assert_eq!(kv.apply(&Command::Get(vec![1, 2])), Output::Values(vec![Some(10), None]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Read these keys, all at one point of the log.
    Get(Vec<u64>),
    /// Set a key.
    Put(u64, u64),
    /// Remove a key.
    Delete(u64),
    /// If every `expect`ed key holds the expected value (`None`: absent), write every `set`;
    /// otherwise change nothing.
    Cas {
        /// The values the keys must hold.
        expect: Vec<(u64, Option<u64>)>,
        /// The writes made if they do.
        set: Vec<(u64, u64)>,
    },
}

/// What a command returns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Output {
    /// The values of a [`Command::Get`]'s keys, in its order.
    Values(Vec<Option<u64>>),
    /// A put or delete was applied.
    Done,
    /// Whether a [`Command::Cas`] found its expected values and wrote.
    Cas(bool),
}

/// The state machine's state.
///
/// ```
/// use raft_kv::kv::{Command, Kv, Output};
///
/// let mut kv = Kv::default();
/// let swap = Command::Cas { expect: vec![(1, None)], set: vec![(1, 5)] };
/// assert_eq!(kv.apply(&swap), Output::Cas(true));
/// assert_eq!(kv.apply(&swap), Output::Cas(false));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kv {
    map: BTreeMap<u64, u64>,
}

impl Kv {
    /// Applies a committed command and returns what the client is told.
    pub fn apply(&mut self, command: &Command) -> Output {
        match command {
            Command::Get(keys) => self.read(keys),
            Command::Put(key, value) => {
                self.map.insert(*key, *value);
                Output::Done
            }
            Command::Delete(key) => {
                self.map.remove(key);
                Output::Done
            }
            Command::Cas { expect, set } => {
                let holds = expect
                    .iter()
                    .all(|(key, value)| self.map.get(key) == value.as_ref());
                if holds {
                    self.map.extend(set.iter().copied());
                }
                Output::Cas(holds)
            }
        }
    }

    /// The current values of `keys`, without going through the log.
    ///
    /// ```
    /// let kv = raft_kv::kv::Kv::default();
    /// assert_eq!(kv.read(&[3]), raft_kv::kv::Output::Values(vec![None]));
    /// ```
    pub fn read(&self, keys: &[u64]) -> Output {
        Output::Values(keys.iter().map(|key| self.map.get(key).copied()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_cas_changes_nothing() {
        let mut kv = Kv::default();
        kv.apply(&Command::Put(1, 1));
        let cas = Command::Cas {
            expect: vec![(1, Some(1)), (2, Some(2))],
            set: vec![(1, 9), (2, 9)],
        };
        assert_eq!(kv.apply(&cas), Output::Cas(false));
        assert_eq!(kv.read(&[1, 2]), Output::Values(vec![Some(1), None]));
    }

    #[test]
    fn a_delete_makes_a_key_absent() {
        let mut kv = Kv::default();
        kv.apply(&Command::Put(4, 1));
        kv.apply(&Command::Delete(4));
        assert_eq!(kv.read(&[4]), Output::Values(vec![None]));
    }
}
