//! The simulated `File` against tokio's: the same script, run inside a simulation and on the
//! real file system outside one (where `crashtest_fs::File` is `tokio::fs::File`), must see
//! the same results call by call.

mod common;

use std::path::{Path, PathBuf};

use common::outcome;
use crashtest_core::Sim;
use crashtest_fs::{File, OpenOptions};
use tokio::io::AsyncWriteExt;

/// A write that fails (on a handle opened for reading only, so `EBADF` on both sides) and
/// is then synced: a sync waits for the write in flight but does not report its failure; the
/// next flush does, once. A write that succeeds before a sync is in what the sync covers.
async fn sync_after_writes(dir: &Path) -> Vec<String> {
    let path = dir.join("f");
    let mut log = Vec::new();
    log.push(outcome(
        "write file",
        crashtest_fs::write(&path, b"abc").await,
    ));
    let mut read_only = File::open(&path).await.unwrap();
    log.push(outcome("write", read_only.write(b"x").await));
    log.push(outcome("sync_all", read_only.sync_all().await));
    log.push(outcome("flush", read_only.flush().await));
    log.push(outcome("flush again", read_only.flush().await));
    log.push(outcome("write", read_only.write(b"y").await));
    log.push(outcome("sync_data", read_only.sync_data().await));
    log.push(outcome("write after", read_only.write(b"z").await));
    log.push(outcome("flush", read_only.flush().await));
    drop(read_only);
    let mut writer = OpenOptions::new().append(true).open(&path).await.unwrap();
    log.push(outcome("append", writer.write_all(b"def").await));
    log.push(outcome("sync_data", writer.sync_data().await));
    log.push(outcome("flush", writer.flush().await));
    drop(writer);
    log.push(outcome(
        "read",
        crashtest_fs::read(&path).await.map(String::from_utf8),
    ));
    log
}

/// Runs `script` inside a simulation (in the node's root) and on tokio (in a fresh directory
/// of the real file system), asserts both logged the same, and returns the log.
fn on_both<Fut: Future<Output = Vec<String>> + 'static>(
    name: &str,
    script: fn(PathBuf) -> Fut,
) -> Vec<String> {
    let simulated = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = simulated.clone();
    Sim::new(1)
        .run(async move {
            *out.borrow_mut() = script(PathBuf::from("/")).await;
        })
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("crashtest-fs-{name}-{}", std::process::id()));
    let real = runtime.block_on(async {
        crashtest_fs::create_dir_all(&dir).await.unwrap();
        let log = script(dir.clone()).await;
        std::fs::remove_dir_all(&dir).unwrap();
        log
    });
    assert_eq!(*simulated.borrow(), real);
    real
}

#[test]
fn a_sync_reports_no_failed_write_and_the_next_flush_does_as_on_tokio() {
    let real = on_both("parity", |dir| async move { sync_after_writes(&dir).await });
    assert!(
        real.iter()
            .any(|line| line.starts_with("flush: Uncategorized")),
        "the script exercises a failed write: {real:?}"
    );
}

/// A second `start_seek` before the first is completed is refused, and the first still
/// completes where it was asked to.
async fn seek_twice(dir: &Path) -> Vec<String> {
    use std::io::SeekFrom;
    use std::pin::Pin;
    use tokio::io::{AsyncReadExt, AsyncSeek, AsyncSeekExt};

    let path = dir.join("s");
    crashtest_fs::write(&path, b"0123456789").await.unwrap();
    let mut file = File::open(&path).await.unwrap();
    let mut log = vec![
        outcome(
            "start_seek 2",
            Pin::new(&mut file).start_seek(SeekFrom::Start(2)),
        ),
        outcome(
            "start_seek 5",
            Pin::new(&mut file).start_seek(SeekFrom::Start(5)),
        ),
    ];
    log.push(outcome(
        "poll_complete",
        std::future::poll_fn(|cx| Pin::new(&mut file).poll_complete(cx)).await,
    ));
    let mut two = [0; 2];
    log.push(outcome(
        "read",
        file.read_exact(&mut two).await.map(|_| two),
    ));
    log.push(outcome("seek 8", file.seek(SeekFrom::Start(8)).await));
    let mut rest = String::new();
    log.push(outcome(
        "read rest",
        file.read_to_string(&mut rest).await.map(|_| rest),
    ));
    log
}

#[test]
fn a_second_seek_before_the_first_completes_is_refused_as_on_tokio() {
    let real = on_both("seek", |dir| async move { seek_twice(&dir).await });
    assert!(
        real[1].starts_with("start_seek 5: Other"),
        "tokio refuses the second seek: {real:?}"
    );
}
