//! The environment variables a test binary reads, and how their values are written.
//!
//! | variable | meaning |
//! |---|---|
//! | `CRASHTEST_SEED` | run exactly this seed (replay a failure) |
//! | `CRASHTEST_SEEDS` | how many seeds to run |
//! | `CRASHTEST_SEED_START` | the first seed of the range (default 0) |
//! | `CRASHTEST_THREADS` | threads running seeds at once (default: one per core) |
//! | `CRASHTEST_CHECK_DETERMINISM` | `0` turns off the double run of the first seed |
//! | `CRASHTEST_STOP_ON_FAILURE` | `0` runs every seed even after a failure (sweeps) |
//! | `CRASHTEST_RESULTS` | append one JSON line per finished seed to this file |
//! | `CRASHTEST_TRACE` | write every event of the run as JSON lines to this file |
//! | `CRASHTEST_MASK` | fault ids to mask, comma-separated (`3,7`) |
//! | `CRASHTEST_KEEP` | fault ids to keep, comma-separated: every other fault is masked |
//! | `CRASHTEST_EXPLORE` | `TIME_NS:SUB_SEED[,TIME_NS:SUB_SEED...]`: a branch path, re-draw the future from each virtual time |
//! | `CRASHTEST_HUNT` | `RUNS`: a guided search of that many runs instead of a seed range |
//! | `CRASHTEST_CASE` | `CHOICE[,CHOICE...]`: an exhaustive test runs only the case with these choices |
//! | `CRASHTEST_COMMIT` | the commit a failure report names (default: asked of git) |
//! | `CRASHTEST_DESCRIBE` | write what the test is ([`crate::describe::TestInfo`]) to this file and run nothing |
//! | `CRASHTEST_STUCK` | tests whose poll got stuck in an earlier run of this test binary: they fail at once (set by the watchdog when it runs the binary again) |
//!
//! The tool clears every variable of [`WORKER`] before it starts a worker and sets the ones
//! it means, so that the user's shell cannot change what a worker runs. A value list such as
//! a mask is written by [`encode_ids`] and read by [`decode_ids`]; an exploration point by
//! [`Explore`]'s `Display` and `FromStr`, a branch path by [`BranchPath`]'s.

use std::fmt;
use std::str::FromStr;

/// Run exactly this seed.
pub const SEED: &str = "CRASHTEST_SEED";
/// How many seeds to run.
pub const SEEDS: &str = "CRASHTEST_SEEDS";
/// The first seed of the range.
pub const SEED_START: &str = "CRASHTEST_SEED_START";
/// Threads running seeds at once.
pub const THREADS: &str = "CRASHTEST_THREADS";
/// `0` turns off the double run of the first seed.
pub const CHECK_DETERMINISM: &str = "CRASHTEST_CHECK_DETERMINISM";
/// `0` runs every seed even after a failure.
pub const STOP_ON_FAILURE: &str = "CRASHTEST_STOP_ON_FAILURE";
/// Append one results line per finished seed to this file.
pub const RESULTS: &str = "CRASHTEST_RESULTS";
/// Write every event of the run as trace lines to this file.
pub const TRACE: &str = "CRASHTEST_TRACE";
/// Fault ids to mask.
pub const MASK: &str = "CRASHTEST_MASK";
/// Fault ids to keep: every other fault is masked.
pub const KEEP: &str = "CRASHTEST_KEEP";
/// Re-draw the future from each point of a branch path ([`BranchPath`]).
pub const EXPLORE: &str = "CRASHTEST_EXPLORE";
/// Run a guided search of this many runs.
pub const HUNT: &str = "CRASHTEST_HUNT";
/// An exhaustive test runs only the case with these choices (comma-separated, as its
/// failure prints them) instead of exploring every case.
pub const CASE: &str = "CRASHTEST_CASE";
/// The commit a failure report names.
pub const COMMIT: &str = "CRASHTEST_COMMIT";
/// Write what the test is to this file, and run no seed.
pub const DESCRIBE: &str = "CRASHTEST_DESCRIBE";
/// `1` saves a test's failing seeds to its regression file, `0` never; unset, a plain
/// `cargo test` saves them and a sweep's workers do not (`crashtest sweep --save-failures`
/// sets it).
pub const SAVE_FAILURES: &str = "CRASHTEST_SAVE_FAILURES";
/// `0` skips the seeds of a test's regression file, which otherwise run first.
pub const REGRESSIONS: &str = "CRASHTEST_REGRESSIONS";
/// The tests whose poll got stuck in an earlier run of this test binary, each with the
/// watchdog's report: the watchdog sets it when it runs the binary again without them, and
/// those tests fail at once there instead of running.
pub const STUCK: &str = "CRASHTEST_STUCK";

/// The variables that decide what a worker runs, cleared before each worker starts.
///
/// ```
/// assert!(crashtest_protocol::env::WORKER.contains(&crashtest_protocol::env::MASK));
/// ```
pub const WORKER: [&str; 17] = [
    SEED,
    SEEDS,
    SEED_START,
    THREADS,
    CHECK_DETERMINISM,
    STOP_ON_FAILURE,
    RESULTS,
    TRACE,
    MASK,
    KEEP,
    EXPLORE,
    DESCRIBE,
    SAVE_FAILURES,
    REGRESSIONS,
    HUNT,
    CASE,
    STUCK,
];

/// Fault ids as a variable holds them: `3,7`.
///
/// ```
/// use crashtest_protocol::env::{decode_ids, encode_ids};
/// assert_eq!(encode_ids([3, 7]), "3,7");
/// assert_eq!(decode_ids(&encode_ids([3, 7])), Ok(vec![3, 7]));
/// ```
pub fn encode_ids(ids: impl IntoIterator<Item = u64>) -> String {
    let ids: Vec<String> = ids.into_iter().map(|id| id.to_string()).collect();
    ids.join(",")
}

/// Reads a list of fault ids such as `3, 7` (spaces and empty parts are allowed).
///
/// # Errors
///
/// A part that is not a `u64`.
///
/// ```
/// use crashtest_protocol::env::decode_ids;
/// assert_eq!(decode_ids(" 3, 7,"), Ok(vec![3, 7]));
/// assert!(decode_ids("3;7").is_err());
/// ```
pub fn decode_ids(value: &str) -> Result<Vec<u64>, std::num::ParseIntError> {
    value
        .split(',')
        .filter(|part| !part.trim().is_empty())
        .map(|part| part.trim().parse::<u64>())
        .collect()
}

/// A point to explore from: the run is the seed's own up to `at_ns` of virtual time, and
/// everything random after it is re-drawn from `sub_seed`.
///
/// ```
/// use crashtest_protocol::env::Explore;
/// let point = Explore { at_ns: 1_500_000_000, sub_seed: 7 };
/// assert_eq!(point.to_string(), "1500000000:7");
/// assert_eq!("1500000000:7".parse(), Ok(point));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Explore {
    /// Virtual time of the branch point, in nanoseconds.
    pub at_ns: u64,
    /// The seed of the re-drawn future.
    pub sub_seed: u64,
}

impl fmt::Display for Explore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.at_ns, self.sub_seed)
    }
}

/// A value that is not `TIME_NS:SUB_SEED`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadExplore;

impl fmt::Display for BadExplore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not TIME_NS:SUB_SEED")
    }
}

impl std::error::Error for BadExplore {}

impl FromStr for Explore {
    type Err = BadExplore;

    fn from_str(value: &str) -> Result<Explore, BadExplore> {
        let (time, sub) = value.split_once(':').ok_or(BadExplore)?;
        Ok(Explore {
            at_ns: time.trim().parse().map_err(|_| BadExplore)?,
            sub_seed: sub.trim().parse().map_err(|_| BadExplore)?,
        })
    }
}

/// A branch path: points in time order, the future re-drawn at each (empty: the seed's own
/// run).
///
/// ```
/// use crashtest_protocol::env::{BranchPath, Explore};
/// let path = BranchPath(vec![
///     Explore { at_ns: 1_000, sub_seed: 7 },
///     Explore { at_ns: 5_000, sub_seed: 2 },
/// ]);
/// assert_eq!(path.to_string(), "1000:7,5000:2");
/// assert_eq!("1000:7,5000:2".parse(), Ok(path));
/// assert!("5000:2,1000:7".parse::<BranchPath>().is_err(), "out of time order");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BranchPath(pub Vec<Explore>);

impl fmt::Display for BranchPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, point) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{point}")?;
        }
        Ok(())
    }
}

impl FromStr for BranchPath {
    type Err = BadExplore;

    fn from_str(value: &str) -> Result<BranchPath, BadExplore> {
        let points = value
            .split(',')
            .map(str::parse)
            .collect::<Result<Vec<Explore>, _>>()?;
        if points.windows(2).any(|pair| pair[1].at_ns < pair[0].at_ns) {
            return Err(BadExplore);
        }
        Ok(BranchPath(points))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_variable_is_distinct_and_prefixed() {
        let mut names = WORKER.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WORKER.len());
        assert!(names.iter().all(|name| name.starts_with("CRASHTEST_")));
        assert!(
            !WORKER.contains(&COMMIT),
            "the commit names a report, not a run"
        );
    }

    #[test]
    fn malformed_exploration_points_are_rejected() {
        for bad in ["soon", "1:", ":2", "1:2:3", "-1:2"] {
            assert_eq!(bad.parse::<Explore>(), Err(BadExplore), "{bad}");
        }
    }
}
