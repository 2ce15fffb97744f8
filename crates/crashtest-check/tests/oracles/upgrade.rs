//! An upgrade test, FoundationDB's restart test in one binary: version 1 of a node writes
//! records to its disk and is killed; version 2 starts on the same disk and must read them.
//! Version 2 with a compatible reader passes; a version 2 that changed the record format
//! without reading the old one is caught.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::{Sim, node, time};
use tokio::io::AsyncWriteExt;

const PATH: &str = "/data/records";

/// What version 1 did: the values it started writing, and those whose sync completed.
#[derive(Default)]
struct Written {
    attempted: Vec<u32>,
    synced: Vec<u32>,
}

/// Version 1: records are `value as u32 little-endian`.
async fn v1(written: Rc<RefCell<Written>>) {
    crashtest_fs::create_dir_all("/data").await.unwrap();
    crashtest_fs::sync_dir("/").await.unwrap();
    // Appends, each synced. (Rewriting the whole file with `fs::write` each time is not
    // crash-safe: the truncate can survive a crash while the new contents do not, which the
    // simulated disk shows on some seeds.)
    let mut file = crashtest_fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PATH)
        .await
        .unwrap();
    crashtest_fs::sync_dir("/data").await.unwrap();
    for value in 1..=10u32 {
        written.borrow_mut().attempted.push(value);
        file.write_all(&value.to_le_bytes()).await.unwrap();
        file.sync_all().await.unwrap();
        written.borrow_mut().synced.push(value);
        time::sleep(Duration::from_millis(10)).await;
    }
    std::future::pending::<()>().await;
}

/// Version 2 reads what is on disk. The compatible reader knows v1's format; the
/// incompatible one assumes the new format (u64 records) for old files too.
async fn v2(compatible: bool, written: Rc<RefCell<Written>>) {
    let bytes = crashtest_fs::read(PATH).await.unwrap();
    let read: Vec<u32> = if compatible {
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    } else {
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()) as u32)
            .collect()
    };
    // Everything synced must be there; the write in flight at the kill may be there or not.
    let written = written.borrow();
    assert!(
        read.starts_with(&written.synced) && written.attempted.starts_with(&read),
        "version 2 read back something else than version 1 wrote: read {read:?}, synced {:?}",
        written.synced
    );
}

async fn upgrade(compatible: bool) {
    let written: Rc<RefCell<Written>> = Rc::default();
    let for_v1 = written.clone();
    let db = node::create("db", move || v1(for_v1.clone()));
    time::sleep(Duration::from_millis(55)).await;
    db.kill();
    let for_v2 = written.clone();
    db.upgrade(move || v2(compatible, for_v2.clone()));
    time::sleep(Duration::from_secs(1)).await;
}

#[test]
fn a_compatible_upgrade_reads_what_the_old_version_wrote() {
    for seed in 0..50 {
        Sim::new(seed)
            .run(upgrade(true))
            .unwrap_or_else(|failure| panic!("{failure}"));
    }
}

#[test]
fn an_incompatible_format_change_is_caught_by_the_upgrade_test() {
    let failure = Sim::new(1).run(upgrade(false)).unwrap_err();
    let report = failure.to_string();
    assert!(
        report.contains("version 2 read back something else"),
        "{report}"
    );
    assert_eq!(failure.node.as_deref(), Some("db"));
}
