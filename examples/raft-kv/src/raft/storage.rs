//! Raft's persistent state on the node's disk: the current term and vote in one file, the log
//! in another, both as checksummed records.
//!
//! A record is `len: u32 | crc32(payload): u32 | payload`, the payload bincode-encoded. Both
//! files only grow by appending records, except that a log truncation cuts the log file back
//! to the end of the last entry kept. Recovery reads records until the first one that is
//! short, fails its checksum or does not decode, and cuts the file there: a crash can tear
//! only writes that were never synced, and those are at the tail. Cutting the tail before
//! appending again matters: a new record behind a torn one would be unreadable.
//!
//! Durability follows the crashtest-fs contract: a file's data survives a crash once synced,
//! and a new file's name once its directory is synced, so both files are created and their
//! directory synced before anything is written to them. The server syncs before it acts on
//! what it wrote (a vote before replying, entries before acknowledging them) unless a planted
//! bug says otherwise. A disk error is fatal: after a failed fsync the only safe reaction is
//! to crash and recover from what is durable, so storage calls panic on errors.

use std::io::{self, SeekFrom};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncSeekExt, AsyncWriteExt};

use crashtest::fs::{self, File, OpenOptions};

use super::log::Entry;
use crate::bugs::Bug;

/// The file holding `(term, voted_for)` records; the last whole one is current.
const META: &str = "/raft.meta";
/// The file holding log entries, one record each, from index 1.
const LOG: &str = "/raft.log";
/// Bytes before a record's payload: its length and its checksum.
const HEADER: usize = 8;

/// What recovery found on the disk.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub(crate) term: u64,
    pub(crate) voted_for: Option<usize>,
    pub(crate) entries: Vec<Entry>,
}

/// The open files and where their records end.
#[derive(Debug)]
pub(crate) struct Storage {
    meta: File,
    meta_end: u64,
    log: File,
    /// `ends[i]` is the byte offset just past entry `i + 1`.
    ends: Vec<u64>,
}

/// Unwraps a disk operation's result; see the module docs for why errors are fatal.
fn disk<T>(result: io::Result<T>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("fatal disk error while {what}: {e}"))
}

/// One record's bytes.
fn record(payload: &impl Serialize) -> Vec<u8> {
    let payload = bincode::serialize(payload).expect("records encode");
    let len = u32::try_from(payload.len()).expect("a record fits in 4 GiB");
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&payload);
    bytes
}

/// The whole records at the start of `bytes`, each with the offset just past it, and the
/// offset where the whole records end. `check` says whether checksums are verified.
fn parse<T: DeserializeOwned>(bytes: &[u8], check: bool) -> (Vec<(u64, T)>, u64) {
    let mut records = Vec::new();
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + HEADER) {
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        let Some(payload) = bytes.get(at + HEADER..at + HEADER + len) else {
            break;
        };
        if check && crc32fast::hash(payload) != crc {
            break;
        }
        let Ok(value) = bincode::deserialize(payload) else {
            break;
        };
        at += HEADER + len;
        records.push((at as u64, value));
    }
    (records, at as u64)
}

/// Opens (creating if needed) the record file at `path`, reads its whole records and cuts
/// off whatever follows them.
async fn open_records<T: DeserializeOwned>(path: &str, check: bool) -> (File, Vec<(u64, T)>) {
    let existed = disk(fs::try_exists(path).await, "looking for a file");
    let file = disk(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .open(path)
            .await,
        "opening a file",
    );
    if !existed {
        disk(file.sync_all().await, "syncing a new file");
        disk(fs::sync_dir("/").await, "syncing the directory");
    }
    let bytes = disk(fs::read(path).await, "reading a file");
    let (records, end) = parse(&bytes, check);
    if end < bytes.len() as u64 {
        disk(file.set_len(end).await, "cutting a torn tail");
        disk(file.sync_all().await, "syncing a cut tail");
    }
    (file, records)
}

/// Writes `bytes` at offset `at` of `file`.
async fn write_at(file: &mut File, at: u64, bytes: &[u8]) {
    disk(file.seek(SeekFrom::Start(at)).await, "seeking");
    disk(file.write_all(bytes).await, "writing");
}

impl Storage {
    /// Opens the node's files and recovers what they hold. Under
    /// [`Bug::TornRecordAccepted`] checksums are not verified.
    pub(crate) async fn open(bug: Bug) -> (Storage, Recovered) {
        crashtest::nemesis::hint(crashtest::nemesis::Hint::Recovery);
        let check = bug != Bug::TornRecordAccepted;
        let (meta, metas) = open_records::<(u64, Option<usize>)>(META, check).await;
        let (log, entries) = open_records::<Entry>(LOG, check).await;
        let meta_end = metas.last().map_or(0, |(end, _)| *end);
        let (term, voted_for) = metas.last().map_or((0, None), |(_, meta)| *meta);
        let (ends, entries) = entries.into_iter().unzip();
        let storage = Storage {
            meta,
            meta_end,
            log,
            ends,
        };
        let recovered = Recovered {
            term,
            voted_for,
            entries,
        };
        (storage, recovered)
    }

    /// Records the term and vote; synced unless `sync` is false.
    pub(crate) async fn save_meta(&mut self, term: u64, voted_for: Option<usize>, sync: bool) {
        let bytes = record(&(term, voted_for));
        write_at(&mut self.meta, self.meta_end, &bytes).await;
        self.meta_end += bytes.len() as u64;
        if sync {
            // The last write's failure is reported by a flush, never by the sync.
            disk(self.meta.flush().await, "writing the term and vote");
            disk(self.meta.sync_all().await, "syncing the term and vote");
        }
    }

    /// Appends entries after the last one; synced unless `sync` is false.
    pub(crate) async fn append(&mut self, entries: &[Entry], sync: bool) {
        let mut end = self.ends.last().copied().unwrap_or(0);
        let start = end;
        let mut bytes = Vec::new();
        for entry in entries {
            bytes.extend(record(entry));
            end = start + bytes.len() as u64;
            self.ends.push(end);
        }
        write_at(&mut self.log, start, &bytes).await;
        if sync {
            self.sync_log().await;
        }
    }

    /// Keeps the first `len` entries, durably, before anything else is appended: entries
    /// written after an unsynced cut could come back behind stale ones.
    pub(crate) async fn truncate(&mut self, len: u64) {
        self.ends.truncate(len as usize);
        let end = self.ends.last().copied().unwrap_or(0);
        disk(self.log.set_len(end).await, "truncating the log");
        self.sync_log().await;
    }

    /// Makes every entry written so far durable.
    pub(crate) async fn sync_log(&mut self) {
        // The last write's failure is reported by a flush, never by the sync.
        disk(self.log.flush().await, "writing the log");
        disk(self.log.sync_all().await, "syncing the log");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_stops_at_a_torn_record() {
        let mut bytes = record(&(1u64, Some(2usize)));
        let whole = bytes.len() as u64;
        let mut torn = record(&(2u64, Some(0usize)));
        let last = torn.len() - 1;
        torn[last] ^= 0xff;
        bytes.extend(torn);
        let (records, end) = parse::<(u64, Option<usize>)>(&bytes, true);
        assert_eq!(records, [(whole, (1, Some(2)))]);
        assert_eq!(end, whole);
    }

    #[test]
    fn without_the_checksum_a_torn_record_is_read_back() {
        let mut bytes = record(&(7u64, Some(1usize)));
        // The vote is the last 8 bytes, little-endian: change its low byte.
        let low = bytes.len() - 8;
        bytes[low] = 3;
        let (records, _) = parse::<(u64, Option<usize>)>(&bytes, false);
        assert_eq!(records[0].1, (7, Some(3)));
    }

    #[test]
    fn a_short_tail_is_not_a_record() {
        let bytes = record(&(1u64, None::<usize>));
        let (records, end) = parse::<(u64, Option<usize>)>(&bytes[..bytes.len() - 1], true);
        assert!(records.is_empty());
        assert_eq!(end, 0);
    }
}
