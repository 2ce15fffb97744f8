//! The node's durable Raft state: one append-only file of checksummed records.
//!
//! Each record is `[length u32][crc32 u32][kind u8][protobuf bytes]`: an entry (which
//! replaces any entry at its index and after, as a follower's conflicting append does) or a
//! hard state (term, vote, commit). Recovery replays records up to the first one that is torn
//! or missing, then cuts the file there and syncs the cut, so that a later record can never
//! follow garbage (nor a stale whole record that survived beyond a torn one). A batch of
//! records is durable once [`DiskLog::append`] returns: it writes them and `sync_all`s, which
//! is what the disk's contract makes durable; nothing else is trusted.

use std::io;

use crashtest::fs;
use protobuf::Message as _;
use raft::eraftpb::{Entry, HardState};
use tokio::io::AsyncWriteExt;

/// Where the log lives on the node's disk.
const PATH: &str = "/raft.log";
/// Bytes before a record's payload: its length and its checksum.
const HEADER: usize = 8;
const KIND_ENTRY: u8 = 1;
const KIND_HARD_STATE: u8 = 2;

/// What recovery found on the disk.
#[derive(Debug, Default)]
pub(crate) struct Recovered {
    /// The log, contiguous from index 1.
    pub(crate) entries: Vec<Entry>,
    /// The last hard state written, or the default (term 0, no vote, commit 0).
    pub(crate) hard_state: HardState,
}

/// The open log file, positioned after its last whole record.
#[derive(Debug)]
pub(crate) struct DiskLog {
    file: fs::File,
}

impl DiskLog {
    /// Opens (or creates) the log, replays it and cuts off any torn tail.
    pub(crate) async fn open() -> io::Result<(DiskLog, Recovered)> {
        let bytes = if fs::try_exists(PATH).await? {
            fs::read(PATH).await?
        } else {
            Vec::new()
        };
        let (recovered, valid) = replay(&bytes);
        let file = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(PATH)
            .await?;
        if valid < bytes.len() {
            file.set_len(valid as u64).await?;
        }
        file.sync_all().await?;
        // The file's entry is durable only once its directory is synced.
        fs::sync_dir("/").await?;
        Ok((DiskLog { file }, recovered))
    }

    /// Appends `entries` and then `hard_state` (if any) and makes them durable.
    pub(crate) async fn append(
        &mut self,
        entries: &[Entry],
        hard_state: Option<&HardState>,
    ) -> io::Result<()> {
        let mut batch = Vec::new();
        for entry in entries {
            push_record(
                &mut batch,
                KIND_ENTRY,
                &entry.write_to_bytes().map_err(to_io)?,
            );
        }
        if let Some(hs) = hard_state {
            push_record(
                &mut batch,
                KIND_HARD_STATE,
                &hs.write_to_bytes().map_err(to_io)?,
            );
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.file.write_all(&batch).await?;
        // The last write's failure is reported by a flush, never by the sync.
        self.file.flush().await?;
        self.file.sync_all().await
    }
}

fn to_io(e: protobuf::ProtobufError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn push_record(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let mut body = Vec::with_capacity(payload.len() + 1);
    body.push(kind);
    body.extend_from_slice(payload);
    let length = u32::try_from(body.len()).expect("a record fits in 4 GiB");
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    out.extend_from_slice(&body);
}

/// Replays whole records from the start of `bytes`; returns the state and the length of the
/// valid prefix.
fn replay(bytes: &[u8]) -> (Recovered, usize) {
    let mut recovered = Recovered::default();
    let mut at = 0;
    while let Some((kind, payload)) = record_at(bytes, at) {
        match kind {
            KIND_ENTRY => {
                let Ok(entry) = Entry::parse_from_bytes(payload) else {
                    break;
                };
                let keep = usize::try_from(entry.index).expect("index fits usize") - 1;
                assert!(
                    keep <= recovered.entries.len(),
                    "entry {} would leave a gap after {} entries",
                    entry.index,
                    recovered.entries.len()
                );
                recovered.entries.truncate(keep);
                recovered.entries.push(entry);
            }
            KIND_HARD_STATE => {
                let Ok(hs) = HardState::parse_from_bytes(payload) else {
                    break;
                };
                recovered.hard_state = hs;
            }
            _ => break,
        }
        at += HEADER + 1 + payload.len();
    }
    (recovered, at)
}

/// The record starting at `at`, if it is whole and its checksum matches.
fn record_at(bytes: &[u8], at: usize) -> Option<(u8, &[u8])> {
    let header = bytes.get(at..at + HEADER)?;
    let length = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..].try_into().ok()?);
    let body = bytes.get(at + HEADER..(at + HEADER).checked_add(length)?)?;
    let (&kind, payload) = body.split_first()?;
    (crc32fast::hash(body) == crc).then_some((kind, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, term: u64) -> Entry {
        let mut entry = Entry::default();
        (entry.index, entry.term) = (index, term);
        entry
    }

    fn encode(records: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (kind, payload) in records {
            push_record(&mut out, *kind, payload);
        }
        out
    }

    #[test]
    fn a_later_entry_replaces_the_tail_from_its_index() {
        let bytes = encode(&[
            (KIND_ENTRY, entry(1, 1).write_to_bytes().unwrap()),
            (KIND_ENTRY, entry(2, 1).write_to_bytes().unwrap()),
            (KIND_ENTRY, entry(3, 1).write_to_bytes().unwrap()),
            (KIND_ENTRY, entry(2, 2).write_to_bytes().unwrap()),
        ]);
        let (recovered, valid) = replay(&bytes);
        let terms: Vec<(u64, u64)> = recovered
            .entries
            .iter()
            .map(|e| (e.index, e.term))
            .collect();
        assert_eq!((terms, valid), (vec![(1, 1), (2, 2)], bytes.len()));
    }

    #[test]
    fn replay_stops_at_a_torn_record_even_if_a_whole_one_follows() {
        let mut hs = HardState::default();
        (hs.term, hs.vote, hs.commit) = (3, 2, 1);
        let first = encode(&[(KIND_ENTRY, entry(1, 1).write_to_bytes().unwrap())]);
        let mut bytes = first.clone();
        let torn_at = bytes.len();
        bytes.extend(encode(&[(KIND_HARD_STATE, hs.write_to_bytes().unwrap())]));
        bytes[torn_at + HEADER + 1] ^= 0xff;
        bytes.extend(encode(&[(KIND_HARD_STATE, hs.write_to_bytes().unwrap())]));
        let (recovered, valid) = replay(&bytes);
        assert_eq!(valid, first.len());
        assert_eq!(recovered.hard_state, HardState::default());
        assert_eq!(recovered.entries.len(), 1);
    }
}
