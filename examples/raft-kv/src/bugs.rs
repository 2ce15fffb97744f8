//! The planted bugs: each a mistake that real Raft implementations have made, switched on at
//! run time so that one binary holds the correct store and every broken one.
//!
//! The switch is a value of [`Bug`] in a server's configuration; tests and the bug hunt set
//! it in code, and a reproduce line sets it with the `RAFT_BUG` environment variable (read by
//! [`Bug::from_env`]), whose values are the names [`Bug::name`] gives. Without it the store is
//! correct. Each variant's documentation says where the mistake sits and what it breaks.

use std::fmt;
use std::str::FromStr;

/// Which mistake the servers make, if any.
///
/// ```
/// use raft_kv::Bug;
///
/// assert_eq!("stale_leader_read".parse::<Bug>(), Ok(Bug::StaleLeaderRead));
/// assert_eq!(Bug::StaleLeaderRead.to_string(), "stale_leader_read");
/// assert_eq!(Bug::default(), Bug::None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bug {
    /// The correct store.
    #[default]
    None,
    /// A server answers a RequestVote before syncing the term and vote it just recorded: a
    /// crash takes both back, and the server, in an older term with no vote, may vote again
    /// in a term it already voted in, electing a second leader.
    VoteNotPersisted,
    /// Voters skip Raft's election restriction (a vote only for a candidate whose log is at
    /// least as up to date): a server that missed committed entries can win an election and
    /// overwrite them on the others.
    VoteWithoutLogCheck,
    /// A follower that finds a conflicting entry truncates its log one entry too late,
    /// keeping the first conflicting entry: its log no longer matches the leader's, and it
    /// applies a command that was never committed at that index.
    TruncateOffByOne,
    /// A leader answers reads from its own state machine without checking that it is still
    /// the leader: a deposed leader cut off from the others serves stale values.
    StaleLeaderRead,
    /// Log entries are acknowledged (and counted toward commit) once written, and synced by a
    /// background flusher later: a crash of a majority loses committed entries.
    AckBeforeFsync,
    /// Recovery reads disk records without checking their checksums: a record torn by a crash
    /// comes back as a log entry with garbage in it.
    TornRecordAccepted,
    /// The Raft paper's Figure 8: a new leader appends no entry of its own term and commits
    /// the highest index a majority holds whatever its term, by counting replicas. An entry
    /// of an earlier term that the leader brings to a majority is then committed (and
    /// applied) while a server whose log ends in a newer term can still win an election
    /// without it and overwrite it: a committed entry is lost. The paper's rule, what the
    /// correct store does, is to commit by counting only entries of the leader's own term,
    /// with the no-op a new leader appends carrying the earlier ones.
    CommitByCountingOldTerm,
}

impl Bug {
    /// Every value, the correct store first.
    pub const ALL: [Bug; 8] = [
        Bug::None,
        Bug::VoteNotPersisted,
        Bug::VoteWithoutLogCheck,
        Bug::TruncateOffByOne,
        Bug::StaleLeaderRead,
        Bug::AckBeforeFsync,
        Bug::TornRecordAccepted,
        Bug::CommitByCountingOldTerm,
    ];

    /// The name `RAFT_BUG` takes for this value.
    ///
    /// ```
    /// assert_eq!(raft_kv::Bug::AckBeforeFsync.name(), "ack_before_fsync");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Bug::None => "none",
            Bug::VoteNotPersisted => "vote_not_persisted",
            Bug::VoteWithoutLogCheck => "vote_without_log_check",
            Bug::TruncateOffByOne => "truncate_off_by_one",
            Bug::StaleLeaderRead => "stale_leader_read",
            Bug::AckBeforeFsync => "ack_before_fsync",
            Bug::TornRecordAccepted => "torn_record_accepted",
            Bug::CommitByCountingOldTerm => "commit_by_counting_old_term",
        }
    }

    /// The bug named by the `RAFT_BUG` environment variable, [`Bug::None`] if it is unset.
    ///
    /// # Panics
    ///
    /// Panics if the variable names no bug: a typo must not silently test the correct store.
    ///
    /// ```
    /// // Unset in doc tests: the correct store.
    /// assert_eq!(raft_kv::Bug::from_env(), raft_kv::Bug::None);
    /// ```
    pub fn from_env() -> Bug {
        match std::env::var("RAFT_BUG") {
            Ok(name) => name.parse().unwrap_or_else(|e| panic!("RAFT_BUG: {e}")),
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
        assert!(error.contains("ack_before_fsync"), "{error}");
    }
}
