//! Shrinking a non-linearizable partition to a smallest window of operations that still
//! cannot be linearized.
//!
//! A window is the operations invoked from the `relaxed`-th one (in invocation order) up to the
//! event `end`. The history is cut at `end`: an operation that had not returned by then counts
//! as of unknown outcome, as it would if the run had stopped there. The operations before the
//! window are not dropped but *relaxed* to unknown outcome: they may have taken effect at any
//! time after their invocation, or never. Dropping them outright would invent violations (a
//! read of a value whose write was dropped), while relaxing them only removes constraints.
//!
//! So both cuts only ever turn constraints into freedoms: if a window fails, every larger one
//! fails too. That monotonicity makes each end a binary search: first the earliest `end` at
//! which the whole prefix fails, then the latest `relaxed` at which that prefix still fails.
//! The result cannot lose its last event nor its first operation and still fail.
//!
//! Each probe runs under a budget of model steps; a probe that runs out counts as passing, so
//! the window may come out larger than minimal but is always a proven failure.

use super::search::{Verdict, search};
use super::{Ops, cut};
use crate::model::Model;

/// Model steps one probe may take. A probe explores a part of what the full check explored,
/// relaxed operations aside; this bounds the shrinking of a huge partition to seconds.
const PROBE_BUDGET: u64 = 2_000_000;

/// A window of a partition's operations (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Window {
    /// How many of the partition's first operations are relaxed.
    pub(super) relaxed: usize,
    /// The sequence number of the window's last event, a return.
    pub(super) end: u64,
}

/// The smallest failing window of `ops`, a partition whose full check failed.
pub(super) fn smallest<M: Model>(model: &M, ops: Ops<'_, M>) -> Window {
    let fails = |relaxed, end| {
        search(model, &cut(model, ops, relaxed, end), PROBE_BUDGET) == Verdict::NotLinearizable
    };
    let mut returns: Vec<u64> = ops.iter().filter_map(|op| super::returned(op)).collect();
    returns.sort_unstable();
    assert!(
        !returns.is_empty(),
        "a partition that fails has an operation that returned"
    );

    // The full prefix fails: the caller's unlimited check said so.
    let (mut lo, mut hi) = (0, returns.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fails(0, returns[mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let end = returns[hi];

    // Relaxing every operation invoked by `end` leaves nothing to contradict.
    let invoked = ops.iter().take_while(|op| op.invoked.seq <= end).count();
    let (mut failing, mut passing) = (0, invoked);
    while passing - failing > 1 {
        let mid = failing + (passing - failing) / 2;
        if fails(mid, end) {
            failing = mid;
        } else {
            passing = mid;
        }
    }
    Window {
        relaxed: failing,
        end,
    }
}
