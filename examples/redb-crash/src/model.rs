//! What the table must hold after the first `t` transactions of the workload, and nothing
//! else: the oracle compares the recovered database with it entry for entry.
//!
//! Transaction `t` (from 1) sets `0 → t`, inserts `t → value(t)` and removes the key that
//! leaves the window of the last [`WINDOW`] inserts, so the state after `t` is a pure function
//! of `t`: a recovered database either equals one of these states or is wrong. Values vary in
//! length (up to a few kilobytes) so that commits span several pages and split the B-tree.

use std::collections::BTreeMap;

/// The table every transaction writes.
pub const TABLE: redb::TableDefinition<'static, u64, &'static [u8]> =
    redb::TableDefinition::new("kv");

/// How many of the latest inserted keys stay in the table.
pub const WINDOW: u64 = 16;

/// The key holding the number of the last committed transaction.
pub const COUNTER: u64 = 0;

/// Keys at or above this one are written only by aborted transactions, so must never be seen.
pub const ABORTED_BASE: u64 = 1 << 40;

/// The value transaction `t` inserts under key `t`.
///
/// ```
/// assert_eq!(redb_crash::model::value(3), redb_crash::model::value(3));
/// assert_ne!(redb_crash::model::value(3), redb_crash::model::value(4));
/// ```
pub fn value(t: u64) -> Vec<u8> {
    let len = 64 + (t * 389) % 3000;
    (0..len).map(|i| (t.wrapping_mul(31) ^ i) as u8).collect()
}

/// The counter's encoding.
///
/// ```
/// assert_eq!(redb_crash::model::counter(1).len(), 8);
/// ```
pub fn counter(t: u64) -> Vec<u8> {
    t.to_le_bytes().to_vec()
}

/// The key transaction `t` removes, if any: the one falling out of the window.
///
/// ```
/// assert_eq!(redb_crash::model::evicted(1), None);
/// assert_eq!(redb_crash::model::evicted(17), Some(1));
/// ```
pub fn evicted(t: u64) -> Option<u64> {
    t.checked_sub(WINDOW).filter(|&k| k >= 1)
}

/// The whole table after transactions `1..=t` committed.
///
/// ```
/// let state = redb_crash::model::after(20);
/// assert_eq!(state.len(), 1 + 16);
/// assert!(redb_crash::model::after(0).is_empty());
/// ```
pub fn after(t: u64) -> BTreeMap<u64, Vec<u8>> {
    let mut state = BTreeMap::new();
    if t == 0 {
        return state;
    }
    state.insert(COUNTER, counter(t));
    for k in t.saturating_sub(WINDOW - 1).max(1)..=t {
        state.insert(k, value(k));
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_follows_from_the_previous_by_the_transactions_writes() {
        for t in 1..40 {
            let mut state = after(t - 1);
            state.insert(COUNTER, counter(t));
            state.insert(t, value(t));
            if let Some(k) = evicted(t) {
                state.remove(&k);
            }
            assert_eq!(state, after(t), "transaction {t}");
        }
    }
}
