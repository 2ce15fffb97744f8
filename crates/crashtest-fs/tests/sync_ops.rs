//! The synchronous free functions (`crashtest_fs::sync::{write, rename, read_dir, ...}`)
//! against `std::fs`: the same script, run inside a simulation and on the real file system
//! outside one (where each is `std::fs`'s), must see the same results call by call, errors
//! included; and a seed replays a script of them exactly.

mod common;

use std::path::{Path, PathBuf};

use common::outcome;
use crashtest_core::Sim;
use crashtest_fs::sync;

/// A storage engine's directory work, as blocking code does it: a data directory, a
/// manifest replaced by rename, a listing, and the errors of calls that must fail.
fn engine_directory(root: &Path) -> Vec<String> {
    let data = root.join("data");
    let wal = data.join("wal");
    let mut log = vec![
        outcome("create_dir_all", sync::create_dir_all(&wal)),
        outcome("create_dir again", sync::create_dir(&wal)),
        outcome("create_dir_all again", sync::create_dir_all(&wal)),
        outcome("write segment 1", sync::write(wal.join("1"), b"first")),
        outcome("write segment 2", sync::write(wal.join("2"), b"second!")),
        outcome("write manifest", sync::write(data.join("MANIFEST"), b"v1")),
        outcome(
            "write manifest.tmp",
            sync::write(data.join("MANIFEST.tmp"), b"v2"),
        ),
        outcome(
            "rename over manifest",
            sync::rename(data.join("MANIFEST.tmp"), data.join("MANIFEST")),
        ),
        outcome("read manifest", sync::read_to_string(data.join("MANIFEST"))),
        outcome("tmp exists", sync::exists(data.join("MANIFEST.tmp"))),
        outcome("sync_dir", sync::sync_dir(&data)),
        outcome(
            "segment 2 len",
            sync::metadata(wal.join("2")).map(|m| m.len()),
        ),
        outcome("wal is dir", sync::metadata(&wal).map(|m| m.is_dir())),
    ];
    let listing = sync::read_dir(&data).and_then(|entries| {
        let mut seen = entries
            .map(|entry| {
                let entry = entry?;
                Ok((entry.file_name(), entry.file_type()?.is_dir()))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        seen.sort();
        Ok(seen)
    });
    log.push(outcome("read_dir data", listing));
    log.extend([
        outcome("remove non-empty dir", sync::remove_dir(&wal)),
        outcome("remove missing file", sync::remove_file(wal.join("3"))),
        outcome("read missing", sync::read(wal.join("3"))),
        outcome("remove_file on a dir", sync::remove_file(&wal)),
        outcome(
            "write under a file",
            sync::write(wal.join("1").join("x"), b""),
        ),
        outcome("not utf-8", sync::write(wal.join("bin"), [0xff, 0xfe])),
        outcome("read_to_string bin", sync::read_to_string(wal.join("bin"))),
    ]);
    for segment in ["1", "2", "bin"] {
        log.push(outcome(
            &format!("remove segment {segment}"),
            sync::remove_file(wal.join(segment)),
        ));
    }
    log.push(outcome("remove empty wal", sync::remove_dir(&wal)));
    log.push(outcome("wal exists", sync::exists(&wal)));
    let backup = root.join("backup");
    log.extend([
        outcome(
            "create backup dir",
            sync::create_dir_all(backup.join("deep")),
        ),
        outcome(
            "copy manifest",
            sync::copy(data.join("MANIFEST"), backup.join("deep").join("MANIFEST")),
        ),
        outcome(
            "copied",
            sync::read_to_string(backup.join("deep").join("MANIFEST")),
        ),
        outcome("copy a directory", sync::copy(&backup, root.join("x"))),
        outcome("copy missing", sync::copy(wal.join("3"), root.join("x"))),
        outcome(
            "remove_dir_all a file",
            sync::remove_dir_all(data.join("MANIFEST")),
        ),
        outcome("remove_dir_all", sync::remove_dir_all(&backup)),
        outcome("backup exists", sync::exists(&backup)),
        outcome("remove_dir_all missing", sync::remove_dir_all(&backup)),
    ]);
    log
}

/// Runs `script` inside a simulation (in the node's root) and on `std::fs` (in a fresh
/// directory of the real file system), asserts both logged the same, and returns the log.
fn on_both(name: &str, script: fn(&Path) -> Vec<String>) -> Vec<String> {
    let simulated = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = simulated.clone();
    Sim::new(1)
        .run(async move {
            *out.borrow_mut() = script(&PathBuf::from("/"));
        })
        .unwrap();
    let dir = std::env::temp_dir().join(format!("crashtest-fs-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let real = script(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(*simulated.borrow(), real);
    real
}

#[test]
fn directory_calls_succeed_and_fail_as_std_fs_does() {
    let real = on_both("sync-ops", engine_directory);
    for expected in [
        "rename over manifest: ok ()",
        "read manifest: ok \"v2\"",
        "remove non-empty dir: DirectoryNotEmpty",
        "remove missing file: NotFound",
        "read_to_string bin: InvalidData",
    ] {
        assert!(
            real.iter().any(|line| line.starts_with(expected)),
            "{expected:?} missing from {real:#?}"
        );
    }
}

/// The fingerprint of a run that does `engine_directory`'s work on a node that is then
/// killed, restarted, and lists what survived.
fn crash_run(seed: u64) -> (u64, Vec<String>) {
    let survived = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let out = survived.clone();
    let summary = Sim::new(seed)
        .run(async move {
            let booted = std::rc::Rc::new(std::cell::Cell::new(0));
            let node = crashtest_core::node::create("store", move || {
                let (booted, out) = (booted.clone(), out.clone());
                async move {
                    booted.set(booted.get() + 1);
                    if booted.get() == 1 {
                        engine_directory(Path::new("/"));
                    } else {
                        let names = sync::read_dir("/data").map(|entries| {
                            let mut names: Vec<_> = entries
                                .map(|e| e.unwrap().file_name().into_string().unwrap())
                                .collect();
                            names.sort();
                            names
                        });
                        *out.borrow_mut() = names.unwrap_or_default();
                    }
                }
            });
            crashtest_core::time::sleep(std::time::Duration::from_millis(1)).await;
            node.restart();
            crashtest_core::time::sleep(std::time::Duration::from_secs(1)).await;
        })
        .unwrap();
    (summary.fingerprint, survived.take())
}

#[test]
fn a_seed_replays_synchronous_calls_and_their_crash_exactly() {
    assert_eq!(crash_run(3), crash_run(3));
    let fingerprints: std::collections::BTreeSet<u64> =
        (0..8).map(|seed| crash_run(seed).0).collect();
    assert!(fingerprints.len() > 1, "every seed gave one fingerprint");
}
