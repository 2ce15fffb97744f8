//! Which seeds a sweep runs: a range from the command line, cut into shards for machines and
//! into batches for worker processes.
//!
//! A shard is a contiguous block of the range (shard `K/N` takes the K-th of N nearly equal
//! blocks), so that the shards of one range partition it exactly whatever N is, and a
//! shard's seeds batch into few, long worker runs.

use std::fmt;

/// Seeds `start..=last` (never empty). The last seed is kept inclusive so that a range can
/// end at `u64::MAX`, which an exclusive end cannot name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SeedRange {
    pub(crate) start: u64,
    pub(crate) last: u64,
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
        let empty = || {
            format!(
                "bad seed range {text:?}: it holds no seeds (the end of A..B is exclusive: 0..10 runs ten; A..=B includes B)"
            )
        };
        let (start, last) = if let Some((a, b)) = text.split_once("..=") {
            (number(a)?, number(b)?)
        } else if let Some((a, b)) = text.split_once("..") {
            let end = number(b)?;
            (number(a)?, end.checked_sub(1).ok_or_else(empty)?)
        } else {
            (0, number(text)?.checked_sub(1).ok_or_else(empty)?)
        };
        if start > last {
            return Err(empty());
        }
        if start == 0 && last == u64::MAX {
            return Err(format!(
                "bad seed range {text:?}: it holds 2^64 seeds, one more than a count can say; start at 1 or end at 2^64-2"
            ));
        }
        Ok(SeedRange { start, last })
    }

    /// One seed.
    pub(crate) fn single(seed: u64) -> SeedRange {
        SeedRange {
            start: seed,
            last: seed,
        }
    }

    /// How many seeds.
    pub(crate) fn len(self) -> u64 {
        self.last - self.start + 1
    }

    /// Whether `seed` is in the range.
    pub(crate) fn contains(self, seed: u64) -> bool {
        (self.start..=self.last).contains(&seed)
    }

    /// The part of the range that shard `shard` runs (possibly empty when there are more
    /// shards than seeds).
    pub(crate) fn shard(self, shard: Shard) -> Option<SeedRange> {
        let len = u128::from(self.len());
        // Offsets from the start of the K-th block's first seed, exclusive of the next.
        let cut = |k: u64| len * u128::from(k) / u128::from(shard.count);
        let (from, to) = (cut(shard.index - 1), cut(shard.index));
        (from < to).then(|| {
            let at = |offset: u128| {
                self.start + u64::try_from(offset).expect("an offset within the range")
            };
            SeedRange {
                start: at(from),
                last: at(to - 1),
            }
        })
    }
}

impl fmt::Display for SeedRange {
    /// `A..B` as users write it, or `A..=u64::MAX` when the exclusive end would not fit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.last.checked_add(1) {
            Some(end) => write!(f, "{}..{end}", self.start),
            None => write!(f, "{}..={}", self.start, self.last),
        }
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
    // Seeds `from..=to`, cut into batches.
    let mut push_gap = |from: u64, to: u64| {
        let mut at = from;
        loop {
            let last = to.min(at.saturating_add(batch - 1));
            out.push(SeedRange { start: at, last });
            if last == to {
                break;
            }
            at = last + 1;
        }
    };
    let mut next = Some(range.start);
    for &seed in done.iter().filter(|s| range.contains(**s)) {
        if let Some(from) = next
            && from < seed
        {
            push_gap(from, seed - 1);
        }
        if next.is_some_and(|from| from <= seed) {
            next = seed.checked_add(1);
        }
    }
    if let Some(from) = next.filter(|from| *from <= range.last) {
        push_gap(from, range.last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_in_three_forms() {
        assert_eq!(SeedRange::parse("10"), Ok(SeedRange { start: 0, last: 9 }));
        assert_eq!(
            SeedRange::parse("5..8"),
            Ok(SeedRange { start: 5, last: 7 })
        );
        assert_eq!(
            SeedRange::parse("5..=8"),
            Ok(SeedRange { start: 5, last: 8 })
        );
    }

    #[test]
    fn seeds_run_up_to_the_last_u64_without_overflow() {
        let top = SeedRange::parse("18446744073709551610..=18446744073709551615").unwrap();
        assert_eq!((top.len(), top.last), (6, u64::MAX));
        assert!(top.contains(u64::MAX));
        assert_eq!(
            top.to_string(),
            "18446744073709551610..=18446744073709551615"
        );
        let got: Vec<(u64, u64)> = batches(top, &[u64::MAX - 3], 2)
            .iter()
            .map(|r| (r.start, r.last))
            .collect();
        assert_eq!(
            got,
            [
                (u64::MAX - 5, u64::MAX - 4),
                (u64::MAX - 2, u64::MAX - 1),
                (u64::MAX, u64::MAX)
            ]
        );
        let halves: Vec<SeedRange> = (1..=2)
            .filter_map(|index| top.shard(Shard { index, count: 2 }))
            .collect();
        assert_eq!(halves[1].last, u64::MAX);
        assert_eq!(halves[0].len() + halves[1].len(), 6);
        assert_eq!(
            SeedRange::parse("1..=18446744073709551615").unwrap().start,
            1
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
            "5..=4",
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
            last: 1106,
        };
        for count in [1, 2, 3, 7, 1007, 2000] {
            let mut next = range.start;
            for index in 1..=count {
                if let Some(part) = range.shard(Shard { index, count }) {
                    assert_eq!(part.start, next);
                    next = part.last + 1;
                }
            }
            assert_eq!(next, range.last + 1, "{count} shards");
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
        let range = SeedRange { start: 0, last: 9 };
        let got = batches(range, &[2, 3, 7, 42], 3);
        let want = [(0, 1), (4, 6), (8, 9)];
        let got: Vec<(u64, u64)> = got.iter().map(|r| (r.start, r.last)).collect();
        assert_eq!(got, want);
        assert_eq!(batches(range, &[], 4).len(), 3);
    }
}
