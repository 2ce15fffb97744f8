//! Which seeds a test runs and on how many threads: attribute values, overridden by the
//! environment variables of `crashtest_protocol::env` (`CRASHTEST_SEED`, `CRASHTEST_SEEDS`,
//! `CRASHTEST_SEED_START`, `CRASHTEST_THREADS`, and those the `crashtest` tool sets for its
//! workers: `CRASHTEST_RESULTS`, `CRASHTEST_TRACE`, `CRASHTEST_MASK`, `CRASHTEST_KEEP`,
//! `CRASHTEST_EXPLORE`, ...; the table is in [`crate::protocol::env`]).
//!
//! A malformed value is an error that names the variable and what it takes: a silent default
//! would run other seeds than the user asked for.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use crashtest_protocol::env::{self, BranchPath};

/// Seeds a `#[crashtest::test]` runs when neither the attribute nor the environment says.
///
/// ```
/// let settings = crashtest::runner::Settings::resolve(None, None, &|_| None).unwrap();
/// assert_eq!(settings.count, crashtest::runner::DEFAULT_SEEDS);
/// ```
pub const DEFAULT_SEEDS: u64 = 16;

/// The resolved plan of a test run.
///
/// ```
/// let settings = crashtest::runner::Settings::resolve(Some(8), None, &|_| None).unwrap();
/// assert_eq!((settings.start, settings.count), (0, 8));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The first seed.
    pub start: u64,
    /// How many consecutive seeds from `start`.
    pub count: u64,
    /// Threads running seeds at once.
    pub threads: usize,
    /// Whether the first seed runs twice to check determinism.
    pub check_determinism: bool,
    /// Whether a failure stops the run from starting more seeds.
    pub stop_on_failure: bool,
    /// Where to append one JSON line per finished seed.
    pub results: Option<PathBuf>,
    /// Where to write every event of the run (for one seed).
    pub trace: Option<PathBuf>,
    /// Fault ids to mask.
    pub mask: Vec<u64>,
    /// If set, the only fault ids applied.
    pub keep: Option<Vec<u64>>,
    /// The branch path: re-draw the future from each virtual time with its sub-seed.
    pub explore: Vec<(Duration, u64)>,
    /// Run a guided search of this many runs instead of the seed range.
    pub hunt: Option<u64>,
}

impl Default for Settings {
    /// Seeds `0..DEFAULT_SEEDS` on one thread, determinism checked, no outputs.
    fn default() -> Settings {
        Settings {
            start: 0,
            count: DEFAULT_SEEDS,
            threads: 1,
            check_determinism: true,
            stop_on_failure: true,
            results: None,
            trace: None,
            mask: Vec::new(),
            keep: None,
            explore: Vec::new(),
            hunt: None,
        }
    }
}

/// An environment variable with a value it cannot take.
///
/// ```
/// let env = |name: &str| (name == "CRASHTEST_THREADS").then(|| "lots".to_owned());
/// let error = crashtest::runner::Settings::resolve(None, None, &env).unwrap_err();
/// assert!(error.to_string().contains("CRASHTEST_THREADS=\"lots\""));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadSetting {
    variable: &'static str,
    value: String,
    expected: &'static str,
}

impl fmt::Display for BadSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?} is not valid: it takes {}; unset it or fix its value",
            self.variable, self.value, self.expected
        )
    }
}

impl std::error::Error for BadSetting {}

/// The value of `variable`, if it is set: one `valid` value of `T`, or an error saying what it
/// takes (`expected`).
pub(crate) fn parse<T: std::str::FromStr>(
    lookup: &dyn Fn(&str) -> Option<String>,
    variable: &'static str,
    expected: &'static str,
    valid: impl Fn(&T) -> bool,
) -> Result<Option<T>, BadSetting> {
    let Some(value) = lookup(variable) else {
        return Ok(None);
    };
    match value.trim().parse::<T>() {
        Ok(parsed) if valid(&parsed) => Ok(Some(parsed)),
        _ => Err(BadSetting {
            variable,
            value,
            expected,
        }),
    }
}

/// A list of numbers such as `3,7` (what `expected` says they are), if the variable is set.
pub(crate) fn ids(
    lookup: &dyn Fn(&str) -> Option<String>,
    variable: &'static str,
    expected: &'static str,
) -> Result<Option<Vec<u64>>, BadSetting> {
    let Some(value) = lookup(variable) else {
        return Ok(None);
    };
    env::decode_ids(&value).map(Some).map_err(|_| BadSetting {
        variable,
        value,
        expected,
    })
}

/// What a list of fault ids takes.
const FAULT_IDS: &str = "fault ids separated by commas, such as 3,7";

impl Settings {
    /// The variables that select `seed`'s run as these settings run it: the seed, and the
    /// faults masked or kept and the branch path when they are set, since a reproduce line
    /// without them runs another timeline.
    ///
    /// ```
    /// let mut settings = crashtest::runner::Settings::range(0..1, 1);
    /// assert_eq!(settings.run_env(3), "CRASHTEST_SEED=3");
    /// settings.mask = vec![1, 4];
    /// settings.explore = vec![(std::time::Duration::from_nanos(1500), 9)];
    /// assert_eq!(
    ///     settings.run_env(3),
    ///     "CRASHTEST_SEED=3 CRASHTEST_MASK=1,4 CRASHTEST_EXPLORE=1500:9"
    /// );
    /// ```
    pub fn run_env(&self, seed: u64) -> String {
        let mut pairs = vec![(env::SEED, seed.to_string())];
        if !self.mask.is_empty() {
            pairs.push((env::MASK, env::encode_ids(self.mask.iter().copied())));
        }
        if let Some(keep) = &self.keep {
            pairs.push((env::KEEP, env::encode_ids(keep.iter().copied())));
        }
        if !self.explore.is_empty() {
            let path = BranchPath(
                self.explore
                    .iter()
                    .map(|&(at, sub_seed)| env::Explore {
                        at_ns: u64::try_from(at.as_nanos()).unwrap_or(u64::MAX),
                        sub_seed,
                    })
                    .collect(),
            );
            pairs.push((env::EXPLORE, path.to_string()));
        }
        crashtest_protocol::reproduce::assignments(pairs)
    }

    /// The seeds of `range` on `threads` threads, every failure recorded and no determinism
    /// check: a bug hunt's plan (it stops at the first failure, as a test does).
    ///
    /// ```
    /// let settings = crashtest::runner::Settings::range(100..150, 2);
    /// assert_eq!((settings.start, settings.count, settings.threads), (100, 50, 2));
    /// assert!(!settings.check_determinism);
    /// ```
    ///
    /// # Panics
    ///
    /// Panics if the range is empty or `threads` is 0.
    pub fn range(range: Range<u64>, threads: usize) -> Settings {
        assert!(
            !range.is_empty(),
            "a hunt runs at least one seed, not {range:?}"
        );
        assert!(threads > 0, "a hunt runs on at least one thread");
        Settings {
            start: range.start,
            count: range.end - range.start,
            threads,
            check_determinism: false,
            ..Settings::default()
        }
    }

    /// Resolves the plan from the attribute's values and an environment lookup.
    ///
    /// ```
    /// use crashtest::runner::Settings;
    ///
    /// let env = |name: &str| (name == "CRASHTEST_SEEDS").then(|| "5".to_owned());
    /// let settings = Settings::resolve(Some(100), None, &env).unwrap();
    /// assert_eq!((settings.start, settings.count), (0, 5));
    ///
    /// let env = |name: &str| (name == "CRASHTEST_SEEDS").then(|| "many".to_owned());
    /// let error = Settings::resolve(None, None, &env).unwrap_err();
    /// assert!(error.to_string().contains("CRASHTEST_SEEDS"));
    /// ```
    pub fn resolve(
        attr_seeds: Option<u64>,
        attr_seed: Option<u64>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, BadSetting> {
        let env_seed = parse::<u64>(lookup, env::SEED, "a seed (a u64)", |_| true)?;
        let env_seeds = parse::<u64>(lookup, env::SEEDS, "a count of seeds, at least 1", |n| {
            *n > 0
        })?;
        let env_start = parse::<u64>(lookup, env::SEED_START, "a first seed (a u64)", |_| true)?;
        let env_threads =
            parse::<usize>(lookup, env::THREADS, "a thread count, at least 1", |n| {
                *n > 0
            })?;
        let env_check = parse::<u8>(lookup, env::CHECK_DETERMINISM, "0 or 1", |n| *n <= 1)?;
        let env_stop = parse::<u8>(lookup, env::STOP_ON_FAILURE, "0 or 1", |n| *n <= 1)?;
        let mask = ids(lookup, env::MASK, FAULT_IDS)?.unwrap_or_default();
        let keep = ids(lookup, env::KEEP, FAULT_IDS)?;
        let explore = match lookup(env::EXPLORE) {
            None => Vec::new(),
            Some(value) => match value.parse::<BranchPath>() {
                Ok(path) => path
                    .0
                    .iter()
                    .map(|point| (Duration::from_nanos(point.at_ns), point.sub_seed))
                    .collect(),
                Err(_) => {
                    return Err(BadSetting {
                        variable: env::EXPLORE,
                        value,
                        expected: "TIME_NS:SUB_SEED points in time order, comma-separated, \
                                   such as 1500000000:7 or 1500000000:7,2000000000:3",
                    });
                }
            },
        };
        let hunt = parse::<u64>(lookup, env::HUNT, "a count of runs, at least 1", |n| *n > 0)?;
        let (start, count) = match (env_seed, env_seeds, attr_seed) {
            (Some(seed), _, _) => (seed, 1),
            (None, Some(count), _) => (env_start.unwrap_or(0), count),
            (None, None, Some(seed)) => (seed, 1),
            (None, None, None) => (env_start.unwrap_or(0), attr_seeds.unwrap_or(DEFAULT_SEEDS)),
        };
        assert!(count > 0, "a test runs at least one seed");
        assert!(
            start.checked_add(count - 1).is_some(),
            "seed range {start}+{count} overflows u64"
        );
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = env_threads
            .unwrap_or(cores)
            .min(usize::try_from(count).unwrap_or(usize::MAX));
        Ok(Settings {
            start,
            count,
            threads,
            check_determinism: env_check != Some(0),
            stop_on_failure: env_stop != Some(0),
            results: lookup(env::RESULTS).map(PathBuf::from),
            trace: lookup(env::TRACE).map(PathBuf::from),
            mask,
            keep,
            explore,
            hunt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn env_seed_overrides_everything() {
        let s = Settings::resolve(Some(50), Some(3), &env(&[("CRASHTEST_SEED", "77")])).unwrap();
        assert_eq!((s.start, s.count), (77, 1));
    }

    #[test]
    fn attribute_seed_runs_one_seed() {
        let s = Settings::resolve(Some(50), Some(3), &env(&[])).unwrap();
        assert_eq!((s.start, s.count), (3, 1));
    }

    #[test]
    fn env_count_and_start_make_a_range() {
        let vars = [("CRASHTEST_SEEDS", "10"), ("CRASHTEST_SEED_START", "1000")];
        let s = Settings::resolve(Some(50), None, &env(&vars)).unwrap();
        assert_eq!((s.start, s.count), (1000, 10));
    }

    #[test]
    fn defaults_apply_without_attribute_or_env() {
        let s = Settings::resolve(None, None, &env(&[])).unwrap();
        assert_eq!((s.start, s.count), (0, DEFAULT_SEEDS));
        assert!(s.check_determinism);
    }

    #[test]
    fn malformed_values_name_the_variable() {
        for (var, value) in [
            ("CRASHTEST_SEED", "-1"),
            ("CRASHTEST_SEEDS", "0"),
            ("CRASHTEST_THREADS", "x"),
            ("CRASHTEST_CHECK_DETERMINISM", "yes"),
        ] {
            let error = Settings::resolve(None, None, &env(&[(var, value)])).unwrap_err();
            assert!(error.to_string().contains(var), "{error}");
        }
    }

    #[test]
    fn the_tool_protocol_is_parsed() {
        let vars = [
            ("CRASHTEST_MASK", "3, 7"),
            ("CRASHTEST_EXPLORE", "1500:9"),
            ("CRASHTEST_RESULTS", "/tmp/r.jsonl"),
            ("CRASHTEST_STOP_ON_FAILURE", "0"),
        ];
        let s = Settings::resolve(None, None, &env(&vars)).unwrap();
        assert_eq!(s.mask, [3, 7]);
        assert_eq!(s.explore, [(Duration::from_nanos(1500), 9)]);
        let path = [
            ("CRASHTEST_EXPLORE", "1500:9,2000:4"),
            ("CRASHTEST_HUNT", "300"),
        ];
        let branched = Settings::resolve(None, None, &env(&path)).unwrap();
        assert_eq!(branched.explore[1], (Duration::from_nanos(2000), 4));
        assert_eq!(branched.hunt, Some(300));
        assert_eq!(
            s.results.as_deref(),
            Some(std::path::Path::new("/tmp/r.jsonl"))
        );
        assert!(!s.stop_on_failure);
        for (var, value) in [
            ("CRASHTEST_MASK", "3;7"),
            ("CRASHTEST_EXPLORE", "soon"),
            ("CRASHTEST_EXPLORE", "2000:1,1500:9"),
            ("CRASHTEST_HUNT", "0"),
        ] {
            let error = Settings::resolve(None, None, &env(&[(var, value)])).unwrap_err();
            assert!(error.to_string().contains(var), "{error}");
        }
    }

    #[test]
    fn threads_never_exceed_seeds() {
        let s = Settings::resolve(Some(1), None, &env(&[("CRASHTEST_THREADS", "8")])).unwrap();
        assert_eq!(s.threads, 1);
    }
}
