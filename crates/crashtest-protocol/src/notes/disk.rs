//! The simulated disk's notes: one per operation that reaches a node's disk, per crash it
//! settles, and per running fault that damages data.
//!
//! A disk note also carries a text for people (`write inode 3: 512 bytes at 0`); the words
//! say what it was for programs. The first word is the operation's code, so every disk note
//! has the one source `disk`.

/// A note of the simulated disk (recorded on the node whose disk it is).
///
/// ```
/// use crashtest_protocol::DiskNote;
/// let write = DiskNote::Write { ino: 3, offset: 512 };
/// assert_eq!(write.encode(), ("disk", [3, 3, 512]));
/// assert_eq!(DiskNote::decode("disk", [3, 3, 512]), Some(write));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskNote {
    /// A file was opened.
    Open {
        /// Its inode.
        ino: u64,
    },
    /// A file was read.
    Read {
        /// Its inode.
        ino: u64,
        /// Where the read began.
        offset: u64,
    },
    /// A file was written.
    Write {
        /// Its inode.
        ino: u64,
        /// Where the write began.
        offset: u64,
    },
    /// A file's length was set.
    SetLen {
        /// Its inode.
        ino: u64,
        /// The new length.
        len: u64,
    },
    /// A file's or a directory's permission bits were set.
    SetMode {
        /// The inode.
        ino: u64,
        /// The bits set.
        mode: u64,
    },
    /// A file's modification time was set.
    SetModified {
        /// The inode.
        ino: u64,
        /// The time, in nanoseconds since the Unix epoch (an `i64`'s bits).
        ns: u64,
    },
    /// A file's data or a directory's entries were synced.
    Sync {
        /// The inode.
        ino: u64,
        /// Whether it is a directory.
        dir: bool,
    },
    /// The namespace changed (a create, rename, removal; the text says which).
    Namespace,
    /// A crash settled the node's unsynced state.
    Crash {
        /// Files whose unsynced writes it judged.
        files: u64,
        /// Directory changes it undid.
        dir_changes_dropped: u64,
    },
    /// A running fault damaged data (the text says how).
    Fault {
        /// The inode.
        ino: u64,
        /// Where the damage is.
        offset: u64,
    },
}

/// The operation codes of the first word (stable: they are hashed into fingerprints).
mod code {
    pub(super) const OPEN: u64 = 1;
    pub(super) const READ: u64 = 2;
    pub(super) const WRITE: u64 = 3;
    pub(super) const SET_LEN: u64 = 4;
    pub(super) const SYNC: u64 = 5;
    pub(super) const NAMESPACE: u64 = 6;
    pub(super) const CRASH: u64 = 7;
    pub(super) const FAULT: u64 = 8;
    pub(super) const SET_MODE: u64 = 9;
    pub(super) const SET_MODIFIED: u64 = 10;
}

/// The source of every disk note.
const SOURCE: &str = "disk";

impl DiskNote {
    /// The source and words the note is recorded as.
    #[inline]
    pub fn encode(self) -> (&'static str, [u64; 3]) {
        let words = match self {
            DiskNote::Open { ino } => [code::OPEN, ino, 0],
            DiskNote::Read { ino, offset } => [code::READ, ino, offset],
            DiskNote::Write { ino, offset } => [code::WRITE, ino, offset],
            DiskNote::SetLen { ino, len } => [code::SET_LEN, ino, len],
            DiskNote::Sync { ino, dir } => [code::SYNC, ino, u64::from(dir)],
            DiskNote::Namespace => [code::NAMESPACE, 0, 0],
            DiskNote::Crash {
                files,
                dir_changes_dropped,
            } => [code::CRASH, files, dir_changes_dropped],
            DiskNote::Fault { ino, offset } => [code::FAULT, ino, offset],
            DiskNote::SetMode { ino, mode } => [code::SET_MODE, ino, mode],
            DiskNote::SetModified { ino, ns } => [code::SET_MODIFIED, ino, ns],
        };
        (SOURCE, words)
    }

    /// The note recorded as `source` with `words`, if the disk records one so.
    pub fn decode(source: &str, words: [u64; 3]) -> Option<DiskNote> {
        if source != SOURCE {
            return None;
        }
        let [op, a, b] = words;
        let note = match op {
            code::OPEN if b == 0 => DiskNote::Open { ino: a },
            code::READ => DiskNote::Read { ino: a, offset: b },
            code::WRITE => DiskNote::Write { ino: a, offset: b },
            code::SET_LEN => DiskNote::SetLen { ino: a, len: b },
            code::SYNC if b <= 1 => DiskNote::Sync {
                ino: a,
                dir: b == 1,
            },
            code::NAMESPACE if a == 0 && b == 0 => DiskNote::Namespace,
            code::CRASH => DiskNote::Crash {
                files: a,
                dir_changes_dropped: b,
            },
            code::FAULT => DiskNote::Fault { ino: a, offset: b },
            code::SET_MODE => DiskNote::SetMode { ino: a, mode: b },
            code::SET_MODIFIED => DiskNote::SetModified { ino: a, ns: b },
            _ => return None,
        };
        Some(note)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn every_note() -> Vec<DiskNote> {
        vec![
            DiskNote::Open { ino: 2 },
            DiskNote::Read { ino: 2, offset: 7 },
            DiskNote::Write { ino: 2, offset: 7 },
            DiskNote::SetLen { ino: 2, len: 7 },
            DiskNote::Sync { ino: 2, dir: false },
            DiskNote::Sync { ino: 1, dir: true },
            DiskNote::Namespace,
            DiskNote::Crash {
                files: 3,
                dir_changes_dropped: 1,
            },
            DiskNote::Fault { ino: 2, offset: 7 },
            DiskNote::SetMode {
                ino: 2,
                mode: 0o600,
            },
            DiskNote::SetModified { ino: 2, ns: 7 },
        ]
    }

    #[test]
    fn unknown_codes_decode_to_nothing() {
        assert_eq!(DiskNote::decode("disk", [0, 1, 2]), None);
        assert_eq!(DiskNote::decode("disk", [11, 1, 2]), None);
        assert_eq!(DiskNote::decode("disk", [5, 1, 2]), None);
    }
}
