//! A small append-only log, the kind of program the disk model exists to test.
//!
//! Each record is appended and synced before it is acknowledged; recovery reads records
//! until the first one that does not check out. With checksums and that fsync discipline the
//! program is correct, so it must pass every seed (a failure would be a false positive of
//! the disk model). Without checksums, recovery cannot tell a torn record from a good one,
//! and the strong crash model must catch it returning one; the weak model (crash between
//! operations, no tearing) cannot.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::{Sim, node, time};
use crashtest_fs::{CrashModel, DiskConfig};
use tokio::io::AsyncWriteExt;

const RECORDS: usize = 3;

/// FNV-1a, 64 bits: enough to tell a torn record from a good one in a test.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn payload(seed: u64, index: usize) -> Vec<u8> {
    // 300 to 900 bytes, so that records straddle sector boundaries.
    let len = 300 + ((seed as usize).wrapping_mul(31) + index * 197) % 600;
    (0..len).map(|i| (i as u8) ^ (index as u8 + 1)).collect()
}

fn encode(record: &[u8], checksums: bool) -> Vec<u8> {
    let mut out = (record.len() as u32).to_le_bytes().to_vec();
    if checksums {
        out.extend(checksum(record).to_le_bytes());
    }
    out.extend(record);
    out
}

/// Reads records until the first that is short or (with checksums) does not match.
fn decode(mut log: &[u8], checksums: bool) -> Vec<Vec<u8>> {
    let header = if checksums { 12 } else { 4 };
    let mut records = Vec::new();
    while log.len() >= header {
        let len = u32::from_le_bytes(log[..4].try_into().unwrap()) as usize;
        if log.len() - header < len {
            break;
        }
        let record = &log[header..header + len];
        if checksums && u64::from_le_bytes(log[4..12].try_into().unwrap()) != checksum(record) {
            break;
        }
        records.push(record.to_vec());
        log = &log[header + len..];
    }
    records
}

/// One seed: append records until killed at a seed-drawn moment, restart, recover, check.
fn run_log(seed: u64, checksums: bool, model: CrashModel) -> Result<(), String> {
    let restarted = Rc::new(Cell::new(false));
    let acked = Rc::new(Cell::new(0usize));
    let checked = Rc::new(Cell::new(false));
    let (r, a, c) = (restarted.clone(), acked.clone(), checked.clone());
    let result = Sim::new(seed).run(async move {
        crashtest_fs::configure(DiskConfig::default().crash_model(model));
        let log = node::create("log", move || {
            let (restarted, acked, checked) = (r.clone(), a.clone(), c.clone());
            async move {
                if !restarted.get() {
                    let mut file = crashtest_fs::File::create_new("/log").await.unwrap();
                    file.sync_all().await.unwrap();
                    crashtest_fs::sync_dir("/").await.unwrap();
                    for i in 0..RECORDS {
                        file.write_all(&encode(&payload(seed, i), checksums))
                            .await
                            .unwrap();
                        file.sync_data().await.unwrap();
                        acked.set(i + 1);
                    }
                    return;
                }
                let log = match crashtest_fs::read("/log").await {
                    Ok(log) => log,
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(error) => panic!("recovery cannot read the log: {error}"),
                };
                let records = decode(&log, checksums);
                assert!(
                    records.len() >= acked.get(),
                    "lost an acknowledged record: {} recovered, {} acknowledged",
                    records.len(),
                    acked.get()
                );
                for (i, record) in records.iter().enumerate() {
                    assert!(i < RECORDS, "recovered a record never written");
                    assert!(*record == payload(seed, i), "recovered a torn record {i}");
                }
                checked.set(true);
            }
        });
        let kill_at = Duration::from_micros(seed.wrapping_mul(7919) % 14_000);
        time::sleep(kill_at).await;
        restarted.set(true);
        log.restart();
        time::sleep(Duration::from_secs(1)).await;
    });
    match result {
        Ok(_) if checked.get() => Ok(()),
        Ok(_) => Err(format!("seed {seed}: recovery did not run")),
        Err(failure) => Err(failure.to_string()),
    }
}

#[test]
fn a_checksummed_log_with_fsync_discipline_recovers_on_10000_seeds() {
    for seed in 0..10_000 {
        if let Err(failure) = run_log(seed, true, CrashModel::Strong) {
            panic!("false positive on a correct log:\n{failure}");
        }
    }
}

#[test]
fn a_log_without_checksums_is_caught_returning_a_torn_record() {
    let caught = (0..2_000).find_map(|seed| run_log(seed, false, CrashModel::Strong).err());
    let failure = caught.expect("the strong model tears a record within 2000 seeds");
    assert!(failure.contains("torn record"), "{failure}");
}

#[test]
fn the_weak_model_misses_the_torn_record() {
    for seed in 0..2_000 {
        if let Err(failure) = run_log(seed, false, CrashModel::Weak) {
            panic!("the weak model never tears, yet:\n{failure}");
        }
    }
}
