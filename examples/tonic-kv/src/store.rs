//! The durable map: every put appends a record to a log file and syncs it before the put is
//! acknowledged; opening the store replays the log.
//!
//! A record is `[length u32][crc32 u32][key length u32][key][value]`, big-endian. A crash may
//! leave the last record torn (unsynced bytes are anything the writes could have made them),
//! so replay stops at the first record whose length or checksum is wrong and cuts the log
//! there before appending again.
//!
//! A put runs on a task of its own, so that a request that is cancelled halfway (tonic drops
//! the handler of a request whose client went away or whose deadline passed) does not stop an
//! append halfway. A put whose write or sync fails may still leave part of a record behind,
//! so each put writes at the end of the last whole record, over whatever a failed put left:
//! no record ever follows a broken one, which replay would lose. (The simulation found, in
//! this store's first version, a new directory whose own entry was never synced.)

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncSeekExt, AsyncWriteExt};
use tokio::sync::Mutex;

use crate::server::Bug;

/// The map and its log.
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    bug: Option<Bug>,
}

#[derive(Debug)]
struct Inner {
    map: BTreeMap<String, String>,
    log: tokio::fs::File,
    /// Where the last whole record ends: the next put writes there.
    end: u64,
}

impl Store {
    /// Opens the store in `dir` (created if missing), replaying its log.
    pub async fn open(dir: &Path, bug: Option<Bug>) -> io::Result<Store> {
        let path = log_path(dir);
        let fresh = !tokio::fs::try_exists(&path).await?;
        if fresh {
            tokio::fs::create_dir_all(dir).await?;
        }
        let bytes = if fresh {
            Vec::new()
        } else {
            tokio::fs::read(&path).await?
        };
        let (map, valid) = replay(&bytes);
        let log = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .await?;
        if valid < bytes.len() {
            log.set_len(valid as u64).await?;
            log.sync_all().await?;
        }
        if fresh {
            // A new name is durable only once its directory is synced: the log's in `dir`,
            // and `dir`'s own in its parent (it may be new too).
            log.sync_all().await?;
            tokio::fs::File::open(dir).await?.sync_all().await?;
            if let Some(parent) = dir.parent() {
                tokio::fs::File::open(parent).await?.sync_all().await?;
            }
        }
        Ok(Store {
            inner: Mutex::new(Inner {
                map,
                log,
                end: valid as u64,
            }),
            bug,
        })
    }

    /// Stores `value` under `key`; returns once it is durable. The append goes on if the
    /// caller goes away.
    pub async fn put(self: &Arc<Self>, key: &str, value: &str) -> io::Result<()> {
        let store = self.clone();
        let (key, value) = (key.to_owned(), value.to_owned());
        tokio::spawn(async move { store.append(&key, &value).await }).await?
    }

    async fn append(&self, key: &str, value: &str) -> io::Result<()> {
        let mut inner = self.inner.lock().await;
        let record = encode(key, value);
        let end = inner.end;
        inner.log.seek(io::SeekFrom::Start(end)).await?;
        inner.log.write_all(&record).await?;
        if self.bug != Some(Bug::UnsyncedAck) {
            // The last write's failure is reported by a flush, never by the sync.
            inner.log.flush().await?;
            inner.log.sync_data().await?;
        }
        inner.end = end + record.len() as u64;
        inner.map.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// The value under `key`.
    pub async fn get(&self, key: &str) -> Option<String> {
        self.inner.lock().await.map.get(key).cloned()
    }
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("kv.log")
}

fn encode(key: &str, value: &str) -> Vec<u8> {
    let mut payload = Vec::with_capacity(4 + key.len() + value.len());
    payload.extend_from_slice(&(key.len() as u32).to_be_bytes());
    payload.extend_from_slice(key.as_bytes());
    payload.extend_from_slice(value.as_bytes());
    let mut record = Vec::with_capacity(8 + payload.len());
    record.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    record.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
    record.extend_from_slice(&payload);
    record
}

/// The map the log's whole records make, and how many bytes they span.
fn replay(bytes: &[u8]) -> (BTreeMap<String, String>, usize) {
    let mut map = BTreeMap::new();
    let mut at = 0;
    while let Some((key, value, next)) = record_at(bytes, at) {
        map.insert(key, value);
        at = next;
    }
    (map, at)
}

/// The record at `at`, if it is whole: its key, value and where the next one starts.
fn record_at(bytes: &[u8], at: usize) -> Option<(String, String, usize)> {
    let header = bytes.get(at..at + 8)?;
    let len = u32::from_be_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_be_bytes(header[4..].try_into().ok()?);
    let payload = bytes.get(at + 8..at + 8 + len)?;
    if crc32fast::hash(payload) != crc || payload.len() < 4 {
        return None;
    }
    let key_len = u32::from_be_bytes(payload[..4].try_into().ok()?) as usize;
    let key = std::str::from_utf8(payload.get(4..4 + key_len)?).ok()?;
    let value = std::str::from_utf8(payload.get(4 + key_len..)?).ok()?;
    Some((key.to_owned(), value.to_owned(), at + 8 + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_keeps_whole_records_and_stops_at_a_torn_one() {
        let mut log = encode("a", "1");
        log.extend(encode("b", "2"));
        let whole = log.len();
        log.extend(&encode("c", "3")[..5]);
        let (map, valid) = replay(&log);
        assert_eq!(valid, whole);
        assert_eq!(map.len(), 2);
        let mut flipped = encode("a", "1");
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(replay(&flipped).1, 0);
    }
}
