//! Which seeds a sweep runs: a range from the command line, cut into shards for machines and
//! into batches for worker processes.
//!
//! A shard is a contiguous block of the range (shard `K/N` takes the K-th of N nearly equal
//! blocks), so that the shards of one range partition it exactly whatever N is, and a
//! shard's seeds batch into few, long worker runs.

use std::fmt;

/// Seeds `start..end` (end exclusive; never empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SeedRange {
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl SeedRange {
    /// Parses `N` (seeds `0..N`), `A..B` or `A..=B`.
    pub(crate) fn parse(text: &str) -> Result<SeedRange, String> {
        let text = text.trim();
        let number = |part: &str| {
            part.trim().parse::<u64>().map_err(|_| {
                format!("bad seed range {text:?}: {part:?} is not a seed (a whole number from 0 to 2^64-1); write N, A..B or A..=B")
            })
        };
        let (start, end) = if let Some((a, b)) = text.split_once("..=") {
            let end = number(b)?
                .checked_add(1)
                .ok_or_else(|| format!("bad seed range {text:?}: it runs past the last seed"))?;
            (number(a)?, end)
        } else if let Some((a, b)) = text.split_once("..") {
            (number(a)?, number(b)?)
        } else {
            (0, number(text)?)
        };
        if start >= end {
            return Err(format!(
                "bad seed range {text:?}: it holds no seeds (the end is exclusive: 0..10 runs ten)"
            ));
        }
        Ok(SeedRange { start, end })
    }

    /// How many seeds.
    pub(crate) fn len(self) -> u64 {
        self.end - self.start
    }

    /// Whether `seed` is in the range.
    pub(crate) fn contains(self, seed: u64) -> bool {
        (self.start..self.end).contains(&seed)
    }

    /// The part of the range that shard `shard` runs (possibly empty when there are more
    /// shards than seeds).
    pub(crate) fn shard(self, shard: Shard) -> Option<SeedRange> {
        let len = u128::from(self.len());
        let cut = |k: u64| {
            let offset = len * u128::from(k) / u128::from(shard.count);
            self.start + u64::try_from(offset).expect("an offset within the range")
        };
        let part = SeedRange {
            start: cut(shard.index - 1),
            end: cut(shard.index),
        };
        (part.start < part.end).then_some(part)
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// Shard `index` of `count` (both from 1, as `--shard 2/8` reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shard {
    pub(crate) index: u64,
    pub(crate) count: u64,
}

impl Shard {
    /// Parses `K/N` with `1 <= K <= N`.
    pub(crate) fn parse(text: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "bad shard {text:?}: write K/N with 1 <= K <= N, such as 3/8 (a Kubernetes indexed Job passes $((JOB_COMPLETION_INDEX + 1))/N)"
            )
        };
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: u64 = k.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Cuts the seeds of `range` not in `done` (sorted) into batches of at most `batch` seeds,
/// each contiguous.
pub(crate) fn batches(range: SeedRange, done: &[u64], batch: u64) -> Vec<SeedRange> {
    assert!(batch > 0, "a batch holds at least one seed");
    assert!(done.is_sorted(), "done seeds come sorted");
    let mut out = Vec::new();
    let mut push_gap = |start: u64, end: u64| {
        let mut at = start;
        while at < end {
            let stop = end.min(at.saturating_add(batch));
            out.push(SeedRange {
                start: at,
                end: stop,
            });
            at = stop;
        }
    };
    let mut next = range.start;
    for &seed in done.iter().filter(|s| range.contains(**s)) {
        push_gap(next, seed);
        next = next.max(seed + 1);
    }
    push_gap(next, range.end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_in_three_forms() {
        assert_eq!(SeedRange::parse("10"), Ok(SeedRange { start: 0, end: 10 }));
        assert_eq!(SeedRange::parse("5..8"), Ok(SeedRange { start: 5, end: 8 }));
        assert_eq!(
            SeedRange::parse("5..=8"),
            Ok(SeedRange { start: 5, end: 9 })
        );
    }

    #[test]
    fn bad_ranges_are_explained() {
        for text in [
            "0",
            "8..5",
            "5..5",
            "x..9",
            "-1..3",
            "0..=18446744073709551615",
            "",
        ] {
            let error = SeedRange::parse(text).unwrap_err();
            assert!(error.starts_with("bad seed range"), "{text}: {error}");
        }
    }

    #[test]
    fn shards_partition_the_range_exactly() {
        let range = SeedRange {
            start: 100,
            end: 1107,
        };
        for count in [1, 2, 3, 7, 1007, 2000] {
            let mut next = range.start;
            for index in 1..=count {
                if let Some(part) = range.shard(Shard { index, count }) {
                    assert_eq!(part.start, next);
                    next = part.end;
                }
            }
            assert_eq!(next, range.end, "{count} shards");
        }
    }

    #[test]
    fn shard_syntax_is_one_based() {
        assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, count: 4 }));
        for text in ["0/4", "5/4", "4", "a/b", "1/0"] {
            assert!(Shard::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn batches_skip_done_seeds_and_stay_contiguous() {
        let range = SeedRange { start: 0, end: 10 };
        let got = batches(range, &[2, 3, 7, 42], 3);
        let want = [(0, 2), (4, 7), (8, 10)];
        let got: Vec<(u64, u64)> = got.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(got, want);
        assert_eq!(batches(range, &[], 4).len(), 3);
    }
}
