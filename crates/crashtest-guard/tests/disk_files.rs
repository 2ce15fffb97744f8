//! Inside a simulation std's file calls go to the calling node's simulated disk, with its
//! crash model: a program written against `std::fs` runs unchanged, and what it did not sync
//! may be gone after a kill. Nothing reaches the host.

#![cfg(guards)]

mod common;

use std::cell::RefCell;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::{Sim, node, time};

/// Runs `body` under `seed`, which must pass.
fn run(seed: u64, body: impl std::future::Future<Output = ()> + 'static) {
    crashtest_guard::install();
    Sim::new(seed).run(body).expect("the run passes");
}

#[test]
fn std_files_and_directories_work_on_the_nodes_disk() {
    run(1, async {
        std::fs::create_dir_all("/data/wal").unwrap();
        let mut file = std::fs::File::create("/data/wal/1").unwrap();
        file.write_all(b"hello world").unwrap();
        file.sync_all().unwrap();
        assert_eq!(std::fs::read("/data/wal/1").unwrap(), b"hello world");

        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/data/wal/1")
            .unwrap();
        file.seek(SeekFrom::Start(6)).unwrap();
        let mut tail = String::new();
        file.read_to_string(&mut tail).unwrap();
        assert_eq!(tail, "world");
        std::os::unix::fs::FileExt::write_all_at(&file, b"W", 6).unwrap();
        file.set_len(8).unwrap();
        assert_eq!(std::fs::read("/data/wal/1").unwrap(), b"hello Wo");
        let metadata = file.metadata().unwrap();
        assert!(metadata.is_file());
        assert_eq!(metadata.len(), 8);

        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open("/data/log")
            .unwrap();
        log.write_all(b"a").unwrap();
        log.write_all(b"b").unwrap();
        assert_eq!(std::fs::read("/data/log").unwrap(), b"ab");
        assert_eq!(
            std::fs::metadata("/data/log").unwrap().mode() & 0o777,
            0o600
        );

        let names: Vec<_> = std::fs::read_dir("/data")
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(names, ["log", "wal"]);

        std::fs::rename("/data/wal/1", "/data/wal/2").unwrap();
        assert!(!Path::new("/data/wal/1").exists());
        std::fs::copy("/data/wal/2", "/data/wal/3").unwrap();
        assert_eq!(std::fs::read("/data/wal/3").unwrap(), b"hello Wo");
        std::fs::hard_link("/data/wal/3", "/data/wal/4").unwrap();
        assert_eq!(std::fs::metadata("/data/wal/4").unwrap().nlink(), 2);
        assert_eq!(
            std::fs::canonicalize("/data/./wal/../wal/2").unwrap(),
            Path::new("/data/wal/2")
        );
        let missing = std::fs::File::open("/data/nothing").unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let busy = std::fs::remove_dir("/data").unwrap_err();
        assert_eq!(busy.kind(), ErrorKind::DirectoryNotEmpty);
        std::fs::remove_dir_all("/data").unwrap();
        assert!(!Path::new("/data").exists());
    });
}

#[test]
fn a_duplicated_descriptor_shares_the_cursor_and_a_lock_is_the_open_files() {
    run(1, async {
        std::fs::write("/f", b"0123456789").unwrap();
        let mut first = std::fs::File::open("/f").unwrap();
        let mut second = first.try_clone().unwrap();
        let mut buf = [0; 3];
        first.read_exact(&mut buf).unwrap();
        second.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"345", "a duplicate reads on from the shared cursor");

        first.lock().unwrap();
        let other = std::fs::File::open("/f").unwrap();
        assert!(
            other.try_lock_shared().is_err(),
            "another open file is locked out"
        );
        second.unlock().unwrap();
        other.try_lock().expect("free once the holder unlocks");
    });
}

#[test]
fn a_temporary_directory_from_tempfile_lives_on_the_disk() {
    let host_path = Rc::new(RefCell::new(None));
    let seen = host_path.clone();
    run(1, async move {
        let dir = tempfile::tempdir().expect("a temporary directory on the disk");
        std::fs::write(dir.path().join("db"), b"rows").unwrap();
        let mut named = tempfile::NamedTempFile::new_in(dir.path()).unwrap();
        named.write_all(b"scratch").unwrap();
        named.persist(dir.path().join("kept")).unwrap();
        assert_eq!(std::fs::read(dir.path().join("kept")).unwrap(), b"scratch");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        let mut unnamed = tempfile::tempfile().expect("a named file stands in for O_TMPFILE");
        unnamed.write_all(b"anonymous").unwrap();
        *seen.borrow_mut() = Some(dir.path().to_path_buf());
    });
    let path = host_path
        .borrow()
        .clone()
        .expect("the run made a directory");
    assert!(
        !path.exists(),
        "the temporary directory reached the host: {path:?}"
    );
}

/// Runs a node that writes a synced and an unsynced file through `std::fs`, is killed, and
/// reports after its restart what it finds: (the synced file's contents, whether the unsynced
/// file survived intact).
fn after_a_kill(seed: u64) -> (Vec<u8>, bool) {
    let found = Rc::new(RefCell::new(None));
    let out = found.clone();
    run(seed, async move {
        let db = node::create("db", move || {
            let out = out.clone();
            async move {
                if Path::new("/db/synced").exists() {
                    let synced = std::fs::read("/db/synced").unwrap();
                    let unsynced = std::fs::read("/db/unsynced").ok();
                    *out.borrow_mut() = Some((synced, unsynced.as_deref() == Some(b"maybe")));
                    return;
                }
                std::fs::create_dir("/db").unwrap();
                std::fs::File::open("/").unwrap().sync_all().unwrap();
                let mut synced = std::fs::File::create("/db/synced").unwrap();
                synced.write_all(b"durable").unwrap();
                synced.sync_all().unwrap();
                std::fs::write("/db/unsynced", b"maybe").unwrap();
                std::fs::File::open("/db").unwrap().sync_all().unwrap();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/db/unsynced")
                    .unwrap()
                    .set_len(2)
                    .unwrap();
                std::future::pending::<()>().await;
            }
        });
        time::sleep(Duration::from_secs(1)).await;
        db.restart();
        time::sleep(Duration::from_secs(1)).await;
    });
    found.take().expect("the node recovered")
}

#[test]
fn a_kill_keeps_what_std_synced_and_may_undo_what_it_did_not() {
    let outcomes: Vec<_> = (0..40).map(after_a_kill).collect();
    assert!(
        outcomes.iter().all(|(synced, _)| synced == b"durable"),
        "a synced file survives every kill"
    );
    let kept = outcomes.iter().filter(|(_, intact)| *intact).count();
    assert!(
        kept > 0 && kept < outcomes.len(),
        "an unsynced truncate is kept by some seeds and not others ({kept} of 40)"
    );
}

/// The fingerprint of a run that writes, renames and lists through `std::fs`.
fn fingerprint(seed: u64) -> u64 {
    crashtest_guard::install();
    let summary = Sim::new(seed)
        .run(async {
            std::fs::create_dir("/d").unwrap();
            for name in ["a", "b", "c", "d", "e"] {
                std::fs::write(Path::new("/d").join(name), name).unwrap();
            }
            std::fs::rename("/d/a", "/d/z").unwrap();
            // The listing's order is the seed's: the run waits as long as it says.
            let mut wait = 0;
            for entry in std::fs::read_dir("/d").unwrap() {
                let name = entry.unwrap().file_name();
                wait = wait * 7 + u64::from(name.as_encoded_bytes()[0]);
            }
            time::sleep(Duration::from_millis(wait)).await;
        })
        .expect("the run passes");
    summary.fingerprint
}

#[test]
fn the_same_seed_gives_the_same_fingerprint_and_different_seeds_differ() {
    assert_eq!(fingerprint(3), fingerprint(3));
    assert_ne!(fingerprint(3), fingerprint(4));
}

#[test]
fn mapping_a_simulated_file_fails_the_run() {
    crashtest_guard::install();
    let failure = Sim::new(1)
        .run(async {
            let file = std::fs::File::create("/mapped").unwrap();
            file.set_len(4096).unwrap();
            // SAFETY: a shared read-only mapping of an open file's first page.
            let mapped = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    std::os::fd::AsRawFd::as_raw_fd(&file),
                    0,
                )
            };
            assert_eq!(mapped, libc::MAP_FAILED);
        })
        .expect_err("the mapping fails the run");
    common::assert_refused_with(&failure, &["mmap of \"/mapped\"", "pread/pwrite"]);
}

#[test]
fn a_lock_that_would_block_fails_the_run_instead_of_hanging_it() {
    crashtest_guard::install();
    let failure = Sim::new(1)
        .run(async {
            std::fs::write("/lock", b"").unwrap();
            let holder = std::fs::File::open("/lock").unwrap();
            holder.lock().unwrap();
            let waiter = std::fs::File::open("/lock").unwrap();
            assert!(waiter.lock().is_err());
        })
        .expect_err("the blocking lock fails the run");
    common::assert_refused_with(&failure, &["flock(\"/lock\") would wait", "LOCK_NB"]);
}
