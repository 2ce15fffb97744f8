//! The planted bugs: each one a mistake that real durable-execution code makes, switched on
//! at run time so that one binary holds the correct engine and every broken one.
//!
//! The switch is a value of [`Bug`] in the engine's [`crate::Setup`]; tests and the bug hunt
//! set it in code, and a reproduce line sets it with the `WORKFLOW_BUG` environment variable
//! (read by [`Bug::from_env`]), whose values are the names [`Bug::name`] gives. Without it the
//! engine is correct.

use std::fmt;
use std::str::FromStr;

/// Which mistake the engine makes, if any.
///
/// ```
/// use workflow::Bug;
///
/// assert_eq!("no_checksum".parse::<Bug>(), Ok(Bug::NoChecksum));
/// assert_eq!(Bug::NoChecksum.to_string(), "no_checksum");
/// assert_eq!(Bug::default(), Bug::None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bug {
    /// The correct engine: intent journaled and synced before the effect, completion after.
    #[default]
    None,
    /// The effect is requested before its intent (and idempotency key) is journaled: a crash
    /// in between forgets the key, and the replay applies the effect again under a new one.
    EffectBeforeIntent,
    /// Journal appends are never synced: a crash drops intents whose effects already
    /// happened.
    NoJournalFsync,
    /// Records carry no checksum, so recovery accepts a torn last record, e.g. a completion
    /// whose step output is half garbage, and feeds that output to the next step.
    NoChecksum,
    /// Recovery stops at a torn last record but leaves its bytes in the file: new records
    /// are appended behind the garbage, and the next recovery, stopping there again, loses
    /// them all.
    NoTailTruncation,
    /// A compacted journal segment is renamed into place without syncing its directory:
    /// after a crash the old segment is back, and every record appended since is gone.
    RenameWithoutDirSync,
    /// Recovery collects a resumed workflow's remaining steps in a `HashMap` and runs them in
    /// its iteration order (seeded per run under crashtest), not in step order.
    NondeterministicReplay,
    /// The client draws a fresh idempotency key for every attempt instead of sending the
    /// journaled one, so a retry after a lost reply, or a replay after a crash, applies the
    /// effect again.
    KeyPerAttempt,
}

impl Bug {
    /// Every value, the correct engine first.
    pub const ALL: [Bug; 8] = [
        Bug::None,
        Bug::EffectBeforeIntent,
        Bug::NoJournalFsync,
        Bug::NoChecksum,
        Bug::NoTailTruncation,
        Bug::RenameWithoutDirSync,
        Bug::NondeterministicReplay,
        Bug::KeyPerAttempt,
    ];

    /// The name `WORKFLOW_BUG` takes for this value.
    ///
    /// ```
    /// assert_eq!(workflow::Bug::RenameWithoutDirSync.name(), "rename_without_dir_sync");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Bug::None => "none",
            Bug::EffectBeforeIntent => "effect_before_intent",
            Bug::NoJournalFsync => "no_journal_fsync",
            Bug::NoChecksum => "no_checksum",
            Bug::NoTailTruncation => "no_tail_truncation",
            Bug::RenameWithoutDirSync => "rename_without_dir_sync",
            Bug::NondeterministicReplay => "nondeterministic_replay",
            Bug::KeyPerAttempt => "key_per_attempt",
        }
    }

    /// The bug named by the `WORKFLOW_BUG` environment variable, [`Bug::None`] if it is unset.
    ///
    /// # Panics
    ///
    /// Panics if the variable names no bug: a typo must not silently test the correct engine.
    ///
    /// ```
    /// // Unset in doc tests: the correct engine.
    /// assert_eq!(workflow::Bug::from_env(), workflow::Bug::None);
    /// ```
    pub fn from_env() -> Bug {
        match std::env::var("WORKFLOW_BUG") {
            Ok(name) => name.parse().unwrap_or_else(|e| panic!("WORKFLOW_BUG: {e}")),
            Err(_) => Bug::None,
        }
    }
}

impl fmt::Display for Bug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Bug {
    type Err = String;

    fn from_str(name: &str) -> Result<Bug, String> {
        Bug::ALL
            .into_iter()
            .find(|bug| bug.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Bug::ALL.iter().map(|bug| bug.name()).collect();
                format!(
                    "no bug is called {name:?}; the bugs are {}",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bug_parses_from_its_name() {
        for bug in Bug::ALL {
            assert_eq!(bug.name().parse::<Bug>(), Ok(bug));
        }
    }

    #[test]
    fn an_unknown_name_lists_the_bugs() {
        let error = "no_fsync".parse::<Bug>().unwrap_err();
        assert!(error.contains("no_journal_fsync"), "{error}");
    }
}
