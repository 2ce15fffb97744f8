//! Delta debugging: shrink a failing set (of fault ids, of operations) to a small one that
//! still fails.
//!
//! [`ddmin`] is Zeller and Hildebrandt's algorithm ("Simplifying and isolating
//! failure-inducing input", TSE 2002): try each of `n` chunks alone, then each complement of
//! a chunk, at finer and finer `n`, keeping whatever still fails. The result is 1-minimal:
//! removing any single element of it makes the failure go away. A bug-hunt harness replays a
//! seed with only the kept faults (`CRASHTEST_KEEP`) or with the others masked
//! (`CRASHTEST_MASK`) inside `fails`; `crashtest minimize` runs the same search across
//! processes.

/// A 1-minimal subset of `items` for which `fails` holds, assuming it holds for `items`
/// (the empty set if it holds for that). Elements keep their order; `fails` is called with
/// candidate subsets, deterministically, so the same inputs give the same result.
///
/// ```
/// // Fails when both 3 and 7 are in.
/// let kept = crashtest::minimize::ddmin((0..10).collect(), |s: &[u64]| s.contains(&3) && s.contains(&7));
/// assert_eq!(kept, [3, 7]);
/// ```
pub fn ddmin<T: Clone>(mut items: Vec<T>, mut fails: impl FnMut(&[T]) -> bool) -> Vec<T> {
    if fails(&[]) {
        return Vec::new();
    }
    let mut parts = 2;
    while items.len() >= 2 {
        let size = items.len().div_ceil(parts);
        let chunks: Vec<&[T]> = items.chunks(size).collect();
        if let Some(chunk) = chunks.iter().find(|chunk| fails(chunk)) {
            items = chunk.to_vec();
            parts = 2;
            continue;
        }
        let complement = |skip: usize| -> Vec<T> {
            let kept = chunks.iter().enumerate().filter(|(i, _)| *i != skip);
            kept.flat_map(|(_, chunk)| chunk.iter().cloned()).collect()
        };
        let smaller = (chunks.len() > 2)
            .then(|| (0..chunks.len()).map(complement).find(|c| fails(c)))
            .flatten();
        if let Some(smaller) = smaller {
            items = smaller;
            parts = (parts - 1).max(2);
            continue;
        }
        if parts >= items.len() {
            break;
        }
        parts = (parts * 2).min(items.len());
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_core::rng::Rng;

    #[test]
    fn the_result_fails_and_is_one_minimal() {
        let mut rng = Rng::seed_from(5);
        for _ in 0..300 {
            let len = rng.range_inclusive(0, 40);
            let needed: Vec<u64> = (0..rng.range_inclusive(0, 4))
                .map(|_| rng.below_inclusive(len.max(1) - 1))
                .collect();
            let fails = |s: &[u64]| needed.iter().all(|n| s.contains(n));
            let items: Vec<u64> = (0..len).collect();
            if !fails(&items) {
                continue;
            }
            let kept = ddmin(items, fails);
            assert!(fails(&kept));
            for skip in 0..kept.len() {
                let mut fewer = kept.clone();
                fewer.remove(skip);
                assert!(!fails(&fewer), "{kept:?} is not 1-minimal for {needed:?}");
            }
        }
    }

    #[test]
    fn a_failure_that_needs_nothing_keeps_nothing() {
        let mut calls = 0;
        let kept = ddmin(vec![1, 2, 3], |_: &[i32]| {
            calls += 1;
            true
        });
        assert!(kept.is_empty());
        assert_eq!(calls, 1);
    }
}
