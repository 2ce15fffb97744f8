//! The journal: the engine's durable memory, a log of records in segment files.
//!
//! Each record is framed as `length (u32) | crc32 of the payload (u32) | payload`, and each
//! append is synced before the engine acts on it, so after a crash every record but the last
//! is whole, and the last may be torn (the disk keeps, drops or garbles unsynced bytes).
//! Recovery reads records until the first one whose length or checksum is wrong, and cuts the
//! file there (synced, so the torn bytes cannot come back under later appends).
//!
//! The journal lives in a directory of segments named `seg-<number>.log`; the newest is the
//! journal. Once a segment holds [`SEGMENT_RECORDS`] appends, [`Journal::compact`] writes the
//! live records to the next segment under a temporary name, syncs it, renames it into place
//! and syncs the directory (a rename is durable only then), and only then removes the old
//! segment. Recovery takes the newest segment and removes the rest and any temporary file.
//!
//! Four planted bugs live here: [`Bug::NoJournalFsync`] skips the sync of appends,
//! [`Bug::NoChecksum`] skips the checksum test on recovery, [`Bug::NoTailTruncation`] leaves
//! a torn tail in place, and [`Bug::RenameWithoutDirSync`] skips the directory sync after a
//! rename.

use std::io;
use std::path::{Path, PathBuf};

use crashtest::fs::{self, File, OpenOptions};
use tokio::io::AsyncWriteExt;

use crate::bug::Bug;

/// Appends to a segment before it is compacted into the next one.
pub const SEGMENT_RECORDS: usize = 32;

/// Bytes of a record's frame header: its payload's length and checksum.
const HEADER: usize = 8;
/// Bytes of every payload: kind, workflow, step, key, value.
const PAYLOAD: usize = 1 + 4 + 4 + 8 + 8;

/// One fact the engine remembers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A step is about to be applied with this idempotency key and input.
    Intent {
        /// The workflow.
        workflow: u32,
        /// The step's index.
        step: u32,
        /// The idempotency key the service sees.
        key: u64,
        /// The step's input.
        input: u64,
    },
    /// A step took effect and the service answered `output`.
    Done {
        /// The workflow.
        workflow: u32,
        /// The step's index.
        step: u32,
        /// The step's idempotency key.
        key: u64,
        /// The service's answer.
        output: u64,
    },
    /// Every step of a workflow took effect; `output` is the last step's.
    Finished {
        /// The workflow.
        workflow: u32,
        /// The last step's output.
        output: u64,
    },
}

impl Record {
    /// The record's frame: header and payload.
    fn encode(&self) -> Vec<u8> {
        let (kind, workflow, step, key, value) = match *self {
            Record::Intent {
                workflow,
                step,
                key,
                input,
            } => (1u8, workflow, step, key, input),
            Record::Done {
                workflow,
                step,
                key,
                output,
            } => (2, workflow, step, key, output),
            Record::Finished { workflow, output } => (3, workflow, 0, 0, output),
        };
        let mut payload = Vec::with_capacity(PAYLOAD);
        payload.push(kind);
        payload.extend_from_slice(&workflow.to_le_bytes());
        payload.extend_from_slice(&step.to_le_bytes());
        payload.extend_from_slice(&key.to_le_bytes());
        payload.extend_from_slice(&value.to_le_bytes());
        assert_eq!(payload.len(), PAYLOAD);
        let mut frame = Vec::with_capacity(HEADER + PAYLOAD);
        frame.extend_from_slice(&(PAYLOAD as u32).to_le_bytes());
        frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        frame.extend_from_slice(&payload);
        frame
    }

    /// Reads a payload; `None` if its kind is unknown.
    fn decode(payload: &[u8; PAYLOAD]) -> Option<Record> {
        let u32_at = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().expect("4"));
        let u64_at = |at: usize| u64::from_le_bytes(payload[at..at + 8].try_into().expect("8"));
        let (workflow, step, key, value) = (u32_at(1), u32_at(5), u64_at(9), u64_at(17));
        match payload[0] {
            1 => Some(Record::Intent {
                workflow,
                step,
                key,
                input: value,
            }),
            2 => Some(Record::Done {
                workflow,
                step,
                key,
                output: value,
            }),
            3 => Some(Record::Finished {
                workflow,
                output: value,
            }),
            _ => None,
        }
    }
}

/// Reads the whole records at the start of `bytes`: the records, and the length of the prefix
/// they fill. A record ends the prefix if its length is wrong, it is cut short, its checksum
/// does not match (unless `verify` is off) or its kind is unknown.
fn parse(bytes: &[u8], verify: bool) -> (Vec<Record>, usize) {
    let mut records = Vec::new();
    let mut at = 0;
    while let Some(frame) = bytes.get(at..at + HEADER + PAYLOAD) {
        let length = u32::from_le_bytes(frame[..4].try_into().expect("4"));
        let checksum = u32::from_le_bytes(frame[4..8].try_into().expect("4"));
        let payload: &[u8; PAYLOAD] = frame[HEADER..].try_into().expect("sized by the range");
        if length as usize != PAYLOAD || (verify && crc32fast::hash(payload) != checksum) {
            break;
        }
        let Some(record) = Record::decode(payload) else {
            break;
        };
        records.push(record);
        at += HEADER + PAYLOAD;
    }
    (records, at)
}

/// The open journal: the newest segment, appended to.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    segment: u64,
    file: File,
    appended: usize,
    bug: Bug,
}

fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("seg-{number:08}.log"))
}

fn temporary_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("seg-{number:08}.tmp"))
}

fn segment_number(name: &str) -> Option<u64> {
    name.strip_prefix("seg-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

impl Journal {
    /// Opens the journal in `dir` (created if missing) and returns the records it holds:
    /// those of the newest segment, up to the first torn one, which is cut off.
    pub async fn recover(dir: &Path, bug: Bug) -> io::Result<(Journal, Vec<Record>)> {
        if !fs::try_exists(dir).await? {
            fs::create_dir_all(dir).await?;
            fs::sync_dir(dir.parent().unwrap_or(Path::new("/"))).await?;
        }
        let mut segments = Vec::new();
        let mut leftover_compaction = false;
        let mut entries = fs::read_dir(dir).await?;
        while let Some(entry) = entries.next_entry().await? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                leftover_compaction = true;
                fs::remove_file(entry.path()).await?;
            } else if let Some(number) = segment_number(&name) {
                segments.push(number);
            }
        }
        segments.sort_unstable();
        let Some((&newest, older)) = segments.split_last() else {
            let journal = Journal::install(dir, 0, &[], bug).await?;
            return Ok((journal, Vec::new()));
        };
        for &number in older {
            fs::remove_file(segment_path(dir, number)).await?;
        }
        let path = segment_path(dir, newest);
        let bytes = fs::read(&path).await?;
        let (records, valid) = parse(&bytes, bug != Bug::NoChecksum);
        // What a guided search counts as new behaviour (`crashtest::explore::state`): what
        // recovery had to clean up (a torn tail, a compaction cut short, segments a
        // compaction left behind) and, in powers of two, how much journal it found.
        let found = usize::BITS - records.len().leading_zeros();
        crashtest::explore::state(
            "journal recovery",
            (
                valid < bytes.len(),
                leftover_compaction,
                !older.is_empty(),
                found.min(8),
            ),
        );
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .await?;
        if valid < bytes.len() && bug != Bug::NoTailTruncation {
            file.set_len(valid as u64).await?;
            file.sync_all().await?;
        }
        let journal = Journal {
            dir: dir.to_owned(),
            segment: newest,
            file,
            appended: records.len(),
            bug,
        };
        Ok((journal, records))
    }

    /// Appends `record`; once this returns, the record survives crashes.
    pub async fn append(&mut self, record: &Record) -> io::Result<()> {
        self.file.write_all(&record.encode()).await?;
        if self.bug != Bug::NoJournalFsync {
            // The last write's failure is reported by a flush, never by the sync.
            self.file.flush().await?;
            self.file.sync_data().await?;
        }
        self.appended += 1;
        Ok(())
    }

    /// Whether the segment is due for [`Journal::compact`].
    pub fn is_full(&self) -> bool {
        self.appended >= SEGMENT_RECORDS
    }

    /// Replaces the journal by a new segment holding only `live`, which must say everything
    /// the journal says (the engine's summary of it).
    pub async fn compact(&mut self, live: &[Record]) -> io::Result<()> {
        let old = self.segment;
        *self = Journal::install(&self.dir, old + 1, live, self.bug).await?;
        fs::remove_file(segment_path(&self.dir, old)).await
    }

    /// Writes segment `number` holding `records` under a temporary name, syncs it and renames
    /// it into place: it appears whole or not at all.
    async fn install(dir: &Path, number: u64, records: &[Record], bug: Bug) -> io::Result<Journal> {
        let temporary = temporary_path(dir, number);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)
            .await?;
        let bytes: Vec<u8> = records.iter().flat_map(Record::encode).collect();
        file.write_all(&bytes).await?;
        file.flush().await?;
        file.sync_all().await?;
        fs::rename(&temporary, segment_path(dir, number)).await?;
        if bug != Bug::RenameWithoutDirSync {
            fs::sync_dir(dir).await?;
        }
        Ok(Journal {
            dir: dir.to_owned(),
            segment: number,
            file,
            appended: 0,
            bug,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Record> {
        vec![
            Record::Intent {
                workflow: 1,
                step: 0,
                key: 7,
                input: 99,
            },
            Record::Done {
                workflow: 1,
                step: 0,
                key: 7,
                output: 1234,
            },
            Record::Finished {
                workflow: 1,
                output: 1234,
            },
        ]
    }

    #[test]
    fn records_read_back_as_written() {
        let bytes: Vec<u8> = sample().iter().flat_map(Record::encode).collect();
        assert_eq!(parse(&bytes, true), (sample(), bytes.len()));
    }

    #[test]
    fn a_torn_last_record_ends_the_journal_when_checksums_are_verified() {
        let mut bytes: Vec<u8> = sample().iter().flat_map(Record::encode).collect();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let whole = 2 * (HEADER + PAYLOAD);
        assert_eq!(parse(&bytes, true), (sample()[..2].to_vec(), whole));
        let (unverified, _) = parse(&bytes, false);
        assert_eq!(
            unverified.len(),
            3,
            "without checksums the torn record is accepted"
        );
    }

    #[test]
    fn a_short_tail_ends_the_journal() {
        let bytes: Vec<u8> = sample().iter().flat_map(Record::encode).collect();
        let cut = bytes.len() - 3;
        assert_eq!(parse(&bytes[..cut], false).0.len(), 2);
    }

    #[test]
    fn only_log_files_are_segments() {
        assert_eq!(segment_number("seg-00000012.log"), Some(12));
        assert_eq!(segment_number("seg-00000012.tmp"), None);
    }
}
