//! Fault minimization: a 1-minimal set of injected faults with which a seed still fails.
//!
//! Every fault decision is drawn whether or not it is applied, and each fault that comes up
//! has an id, so a seed can be replayed with some faults masked and stay aligned with the
//! original until the program reacts differently (`CRASHTEST_MASK`, `Config::mask_faults`).
//! The search is delta debugging (Zeller and Hildebrandt, "Simplifying and isolating
//! failure-inducing input", TSE 2002) over the ids of the applied faults: try keeping one
//! part of them (masking the rest), then all but one part, on finer and finer parts, and
//! keep whatever still fails.
//!
//! Masking changes what comes later, so a replay may apply faults the original never drew.
//! A failing replay is taken only if it applies fewer faults than the current set (a
//! shrinker's rule: smaller, or not at all): masking the faults a failure needs often lets the
//! run go on, draw others and fail at the same place later through more of them, and a
//! search that took such a replay ended with a set larger and later than the original's.
//! Each replay taken is the new current set: faults masked once stay masked, faults that
//! appeared stay in play and are minimized in turn, and the result is exactly what the last
//! replay taken applied. The search goes on until no smaller failing set is found by masking
//! one more part: the seed replayed without any one of its faults no longer fails the same
//! way with fewer faults.
//!
//! One search serves every caller: the `crashtest` tool replays in worker processes, a bug
//! hunt in the test's own process. A caller supplies a [`Replay`]: it runs the seed under a
//! list of masks (in parallel if it likes) and says which is the first, in the order given,
//! that fails *the same way* as the original with at most a given number of faults. What
//! "the same way" means is the caller's: the tool and the runner compare failure signatures
//! (kind, node, panic location).
//!
//! Invariants: each replay taken applies fewer faults than the set before it, and never one
//! its mask names, so the search ends; the result is never larger than the original's set;
//! every replay the search accepts failed the same way; the result is 1-minimal in the sense
//! above; and the search is deterministic: the same replays give the same result, whatever
//! order they finish in.

use std::collections::BTreeSet;

/// Fault ids to mask.
pub type Mask = BTreeSet<u64>;

/// A replay that failed the same way as the original.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failing<R> {
    /// The ids of the maskable faults it applied, oldest first.
    pub applied: Vec<u64>,
    /// The replay itself (its report, its results line), for the caller.
    pub run: R,
}

/// The first replay of a list that failed the same way: its position in the list, and the
/// replay; `None` if none did.
pub type Found<R> = Option<(usize, Failing<R>)>;

/// Replays a failing seed with faults masked.
pub trait Replay {
    /// What a replay gives back.
    type Run;
    /// Why replaying could not go on (a process that cannot start, a broken build).
    type Error;

    /// Replays the seed once per mask and returns the first, in the order given, that fails
    /// the same way as the original applying at most `at_most` maskable faults, with its
    /// position; `None` if none does. The replays may run in parallel, but the answer must
    /// not depend on which finishes first.
    ///
    /// # Errors
    ///
    /// Whatever stops the replays; the search stops with it.
    fn first_failing(
        &mut self,
        masks: &[Mask],
        at_most: usize,
    ) -> Result<Found<Self::Run>, Self::Error>;
}

/// What a search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Minimized<R> {
    /// The fault ids to mask: the seed replayed with this mask fails the same way.
    pub mask: Mask,
    /// The last failing replay (with that mask), or the original if no replay failed: its
    /// `applied` faults are the 1-minimal failing set found.
    pub last: Failing<R>,
}

/// Searches for a 1-minimal set of faults with which the seed of `original` still fails (no
/// one of them can be masked), by replaying it through `replay`.
///
/// # Errors
///
/// The first error of `replay`.
///
/// ```
/// use crashtest_minimize::{Failing, Found, Mask, Replay, minimize};
///
/// /// A seed whose failure needs faults 3 and 7 together; masking never draws new faults.
/// struct Needs37;
///
/// impl Replay for Needs37 {
///     type Run = ();
///     type Error = std::convert::Infallible;
///     fn first_failing(&mut self, masks: &[Mask], at_most: usize) -> Result<Found<()>, Self::Error> {
///         Ok(masks.iter().enumerate().find_map(|(i, mask)| {
///             let applied: Vec<u64> = (0..10).filter(|id| !mask.contains(id)).collect();
///             let fails = applied.contains(&3) && applied.contains(&7);
///             (fails && applied.len() <= at_most).then(|| (i, Failing { applied, run: () }))
///         }))
///     }
/// }
///
/// let original = Failing { applied: (0..10).collect(), run: () };
/// let found = minimize(&mut Needs37, original).unwrap();
/// assert_eq!(found.last.applied, [3, 7]);
/// ```
pub fn minimize<P: Replay>(
    replay: &mut P,
    original: Failing<P::Run>,
) -> Result<Minimized<P::Run>, P::Error> {
    let mut mask = Mask::new();
    let mut last = original;
    let mut parts = 2;
    // First: does the failure need any of the faults at all? Most do; it costs one replay.
    let mut try_none = true;
    while !last.applied.is_empty() {
        let current = last.applied.clone();
        let at_most = current.len() - 1;
        if try_none || current.len() == 1 {
            try_none = false;
            let none = masked(&mask, current.iter());
            if let Some((_, failing)) =
                replay.first_failing(std::slice::from_ref(&none), at_most)?
            {
                last = accepted(&none, at_most, failing);
                (mask, parts) = (none, 2);
                continue;
            }
            if current.len() == 1 {
                break;
            }
        }
        parts = parts.min(current.len());
        let chunks = split(&current, parts);
        let mut candidates: Vec<Mask> = chunks
            .iter()
            .map(|chunk| masked(&mask, current.iter().filter(|id| !chunk.contains(id))))
            .collect();
        if parts > 2 {
            candidates.extend(chunks.iter().map(|chunk| masked(&mask, chunk.iter())));
        }
        match replay.first_failing(&candidates, at_most)? {
            Some((position, failing)) => {
                mask = candidates.swap_remove(position);
                last = accepted(&mask, at_most, failing);
                parts = if position < chunks.len() {
                    2
                } else {
                    (parts - 1).max(2)
                };
            }
            // Every fault was tried alone and without: the set is 1-minimal.
            None if parts >= current.len() => break,
            None => parts = (parts * 2).min(current.len()),
        }
    }
    Ok(Minimized { mask, last })
}

/// A replay the search takes, checked against the mask it ran with and the bound it was
/// asked for: the current set shrinks with each one taken (so the search ends, with a set no
/// larger than the original's) only if a replay applies at most `at_most` faults, none of
/// them masked.
fn accepted<R>(mask: &Mask, at_most: usize, failing: Failing<R>) -> Failing<R> {
    assert!(
        failing.applied.iter().all(|id| !mask.contains(id)),
        "a replay applied a fault its mask names: {:?} under {mask:?}",
        failing.applied
    );
    assert!(
        failing.applied.len() <= at_most,
        "a replay taken applies at most {at_most} faults, fewer than the set before it: {:?}",
        failing.applied
    );
    failing
}

/// `mask` with `more` added.
fn masked<'a>(mask: &Mask, more: impl Iterator<Item = &'a u64>) -> Mask {
    let mut out = mask.clone();
    out.extend(more.copied());
    out
}

/// `items` cut into `parts` nearly equal consecutive chunks.
fn split(items: &[u64], parts: usize) -> Vec<Vec<u64>> {
    assert!(
        parts >= 1 && parts <= items.len(),
        "{parts} parts of {} items",
        items.len()
    );
    (0..parts)
        .map(|k| items[k * items.len() / parts..(k + 1) * items.len() / parts].to_vec())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seed with a fixed set of faults `0..len`, failing while every id of `needed` is
    /// applied; masking draws no new faults.
    struct Fixed {
        len: u64,
        needed: Vec<u64>,
        runs: u64,
    }

    impl Fixed {
        fn applied(&self, mask: &Mask) -> Vec<u64> {
            (0..self.len).filter(|id| !mask.contains(id)).collect()
        }
    }

    impl Replay for Fixed {
        type Run = ();
        type Error = std::convert::Infallible;

        fn first_failing(
            &mut self,
            masks: &[Mask],
            at_most: usize,
        ) -> Result<Found<()>, Self::Error> {
            for (position, mask) in masks.iter().enumerate() {
                self.runs += 1;
                let applied = self.applied(mask);
                if self.needed.iter().all(|id| applied.contains(id)) && applied.len() <= at_most {
                    return Ok(Some((position, Failing { applied, run: () })));
                }
            }
            Ok(None)
        }
    }

    /// A tiny generator for the cases (the search itself draws nothing).
    fn next(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        *state >> 33
    }

    #[test]
    fn over_a_fixed_set_the_result_fails_and_is_one_minimal() {
        let mut state = 5;
        for _ in 0..300 {
            let len = next(&mut state) % 41;
            let needed: Vec<u64> = (0..next(&mut state) % 5)
                .map(|_| next(&mut state) % len.max(1))
                .filter(|id| *id < len)
                .collect();
            let mut fixed = Fixed {
                len,
                needed: needed.clone(),
                runs: 0,
            };
            let original = Failing {
                applied: (0..len).collect(),
                run: (),
            };
            let found = minimize(&mut fixed, original).unwrap();
            let mut wanted = needed.clone();
            wanted.sort_unstable();
            wanted.dedup();
            assert_eq!(found.last.applied, wanted, "needed {needed:?} of {len}");
            assert_eq!(fixed.applied(&found.mask), found.last.applied);
        }
    }

    /// A seed that applies faults `0..10`; once any of them is masked the program takes
    /// another path and also draws faults 20 and 21. It fails while fault 5 or fault 20 is
    /// applied: masking everything the original applied still fails, through fault 20.
    struct Diverging;

    impl Diverging {
        fn applied(mask: &Mask) -> Vec<u64> {
            let mut applied: Vec<u64> = (0..10).filter(|id| !mask.contains(id)).collect();
            if (0..10).any(|id| mask.contains(&id)) {
                applied.extend([20, 21].into_iter().filter(|id| !mask.contains(id)));
            }
            applied
        }
    }

    impl Replay for Diverging {
        type Run = ();
        type Error = std::convert::Infallible;

        fn first_failing(
            &mut self,
            masks: &[Mask],
            at_most: usize,
        ) -> Result<Found<()>, Self::Error> {
            Ok(masks.iter().enumerate().find_map(|(position, mask)| {
                let applied = Diverging::applied(mask);
                let fails = applied.contains(&5) || applied.contains(&20);
                (fails && applied.len() <= at_most)
                    .then_some((position, Failing { applied, run: () }))
            }))
        }
    }

    #[test]
    fn faults_a_replay_draws_anew_are_taken_when_they_make_the_set_smaller() {
        let original = Failing {
            applied: (0..10).collect(),
            run: (),
        };
        let found = minimize(&mut Diverging, original).unwrap();
        assert_eq!(found.last.applied, [20], "{:?}", found.last.applied);
        assert_eq!(Diverging::applied(&found.mask), found.last.applied);
    }

    /// A failure that needs faults 0 and 1 together, at its first moment; with either
    /// masked the run goes on and fails at the same place later, through faults 4, 42 and
    /// 59 that the original never drew.
    struct NeedsBoth;

    impl Replay for NeedsBoth {
        type Run = ();
        type Error = std::convert::Infallible;

        fn first_failing(
            &mut self,
            masks: &[Mask],
            at_most: usize,
        ) -> Result<Found<()>, Self::Error> {
            Ok(masks.iter().enumerate().find_map(|(position, mask)| {
                let both = !mask.contains(&0) && !mask.contains(&1);
                let applied: Vec<u64> = if both {
                    vec![0, 1]
                } else {
                    [0, 1, 4, 42, 59]
                        .into_iter()
                        .filter(|id| !mask.contains(id))
                        .collect()
                };
                let fails = both || [4, 42, 59].iter().all(|id| applied.contains(id));
                (fails && applied.len() <= at_most)
                    .then_some((position, Failing { applied, run: () }))
            }))
        }
    }

    #[test]
    fn a_result_is_never_larger_than_the_set_it_started_from() {
        let original = Failing {
            applied: vec![0, 1],
            run: (),
        };
        let found = minimize(&mut NeedsBoth, original).unwrap();
        assert_eq!(found.last.applied, [0, 1]);
        assert!(
            found.mask.is_empty(),
            "no replay was taken: {:?}",
            found.mask
        );
    }

    #[test]
    fn a_single_fault_left_is_tried_without() {
        let mut fixed = Fixed {
            len: 4,
            needed: vec![2],
            runs: 0,
        };
        let original = Failing {
            applied: vec![0, 1, 2, 3],
            run: (),
        };
        assert_eq!(minimize(&mut fixed, original).unwrap().last.applied, [2]);
        let mut none = Fixed {
            len: 1,
            needed: Vec::new(),
            runs: 0,
        };
        let original = Failing {
            applied: vec![0],
            run: (),
        };
        assert!(
            minimize(&mut none, original)
                .unwrap()
                .last
                .applied
                .is_empty()
        );
    }

    #[test]
    fn a_failure_that_needs_no_fault_masks_them_all_in_one_run() {
        let mut fixed = Fixed {
            len: 3,
            needed: Vec::new(),
            runs: 0,
        };
        let original = Failing {
            applied: vec![0, 1, 2],
            run: (),
        };
        let found = minimize(&mut fixed, original).unwrap();
        assert!(found.last.applied.is_empty());
        assert_eq!((found.mask.len(), fixed.runs), (3, 1));
    }

    #[test]
    fn chunks_cover_the_items_in_order() {
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), [vec![1, 2], vec![3, 4, 5]]);
        assert_eq!(split(&[1, 2, 3], 3), [vec![1], vec![2], vec![3]]);
    }
}
