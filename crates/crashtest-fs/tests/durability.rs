//! The durability model: what a node's disk keeps when the node is killed.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::rng::Ratio;
use crashtest_core::{Sim, node, time};
use crashtest_fs::{CrashModel, DiskConfig, File};
use std::io::SeekFrom;
use tokio::io::{AsyncSeekExt, AsyncWriteExt};

/// Runs `work` on a node's first boot; kills the node after `kill_after` (or once `work` is
/// done, if sooner), restarts it and returns what `recover` returns on the second boot.
fn crash_and_recover<W, WF, R, RF, T>(
    seed: u64,
    config: DiskConfig,
    kill_after: Duration,
    work: W,
    recover: R,
) -> T
where
    W: Fn() -> WF + 'static,
    WF: Future<Output = ()> + 'static,
    R: Fn() -> RF + 'static,
    RF: Future<Output = T> + 'static,
    T: 'static,
{
    let result: Rc<RefCell<Option<T>>> = Rc::default();
    let out = result.clone();
    let restarted = Rc::new(Cell::new(false));
    let done = Rc::new(Cell::new(false));
    let (r, d) = (restarted.clone(), done.clone());
    let work = Rc::new(work);
    let recover = Rc::new(recover);
    Sim::new(seed)
        .run(async move {
            crashtest_fs::configure(config);
            let n = node::create("n", move || {
                let (restarted, done, out) = (r.clone(), d.clone(), out.clone());
                let (work, recover) = (work.clone(), recover.clone());
                async move {
                    if restarted.get() {
                        let value = recover().await;
                        *out.borrow_mut() = Some(value);
                    } else {
                        work().await;
                        done.set(true);
                    }
                }
            });
            let deadline = time::Instant::now() + kill_after;
            while !done.get() && time::Instant::now() < deadline {
                time::sleep(Duration::from_micros(50)).await;
            }
            restarted.set(true);
            n.restart();
            time::sleep(Duration::from_secs(1)).await;
        })
        .unwrap();
    result.take().expect("recovery ran")
}

/// Creates `path` with `bytes`, synced, its entry synced too.
async fn durable_file(path: &str, bytes: &[u8]) -> File {
    let mut file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .await
        .unwrap();
    file.write_all(bytes).await.unwrap();
    file.sync_all().await.unwrap();
    crashtest_fs::sync_dir("/").await.unwrap();
    file
}

#[test]
fn synced_data_always_survives_a_crash() {
    for seed in 0..300 {
        let synced = Rc::new(Cell::new(false));
        let s = synced.clone();
        let kill_after = Duration::from_micros(seed * 37 % 6_000);
        let recovered = crash_and_recover(
            seed,
            DiskConfig::default(),
            kill_after,
            move || {
                let synced = s.clone();
                async move {
                    let mut file = durable_file("/f", &[0xA5; 10_000]).await;
                    synced.set(true);
                    file.write_all(&[0x11; 4000]).await.unwrap();
                    file.set_len(20_000).await.unwrap();
                    file.write_all(&[0x22; 700]).await.unwrap();
                }
            },
            || async { crashtest_fs::read("/f").await.ok() },
        );
        if synced.get() {
            let data = recovered.expect("a synced file with a synced entry exists");
            assert!(data.len() >= 10_000, "seed {seed}: cut to {}", data.len());
            assert!(data[..10_000].iter().all(|&b| b == 0xA5), "seed {seed}");
        }
    }
}

/// How one crash treated an unsynced 8 KiB write over synced zeros, sector by sector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Fates {
    kept: bool,
    lost: bool,
    torn: bool,
}

fn unsynced_write_fates(model: CrashModel, seeds: u64) -> Vec<Fates> {
    (0..seeds)
        .map(|seed| {
            let data = crash_and_recover(
                seed,
                DiskConfig::default().crash_model(model),
                Duration::from_secs(1),
                || async {
                    let mut file = durable_file("/f", &[0; 8192]).await;
                    file.seek(SeekFrom::Start(0)).await.unwrap();
                    file.write_all(&[0xAB; 8192]).await.unwrap();
                },
                || async { crashtest_fs::read("/f").await.unwrap() },
            );
            assert_eq!(data.len(), 8192);
            let mut fates = Fates::default();
            for sector in data.chunks(512) {
                match (
                    sector.iter().all(|&b| b == 0xAB),
                    sector.iter().all(|&b| b == 0),
                ) {
                    (true, _) => fates.kept = true,
                    (_, true) => fates.lost = true,
                    _ => fates.torn = true,
                }
            }
            fates
        })
        .collect()
}

#[test]
fn unsynced_data_is_sometimes_lost_and_sometimes_torn_across_seeds() {
    let fates = unsynced_write_fates(CrashModel::Strong, 200);
    let all_kept = fates
        .iter()
        .filter(|f| f.kept && !f.lost && !f.torn)
        .count();
    let some_lost = fates.iter().filter(|f| f.lost).count();
    let some_torn = fates.iter().filter(|f| f.torn).count();
    assert!(all_kept > 0, "sometimes the whole write survives");
    assert!(some_lost > 0, "sometimes part of it is lost");
    assert!(some_torn > 0, "sometimes a sector is torn");
}

#[test]
fn the_weak_model_keeps_or_drops_each_write_whole() {
    let fates = unsynced_write_fates(CrashModel::Weak, 200);
    assert!(
        fates.iter().all(|f| !(f.torn || f.kept && f.lost)),
        "{fates:?}"
    );
    assert!(fates.iter().any(|f| f.kept) && fates.iter().any(|f| f.lost));
}

fn replace_by_rename(seed: u64, sync_dir: bool) -> Vec<u8> {
    crash_and_recover(
        seed,
        DiskConfig::default(),
        Duration::from_secs(1),
        move || async move {
            durable_file("/current", b"old").await;
            let tmp = durable_file("/tmp", b"new").await;
            drop(tmp);
            crashtest_fs::rename("/tmp", "/current").await.unwrap();
            if sync_dir {
                crashtest_fs::sync_dir("/").await.unwrap();
            }
        },
        || async { crashtest_fs::read("/current").await.unwrap() },
    )
}

#[test]
fn a_rename_without_a_directory_sync_is_sometimes_undone() {
    let seen: BTreeSet<Vec<u8>> = (0..100)
        .map(|seed| replace_by_rename(seed, false))
        .collect();
    assert_eq!(seen, BTreeSet::from([b"old".to_vec(), b"new".to_vec()]));
}

#[test]
fn a_rename_followed_by_a_directory_sync_always_survives() {
    for seed in 0..100 {
        assert_eq!(replace_by_rename(seed, true), b"new", "seed {seed}");
    }
}

/// `replace_by_rename` written as blocking code writes it, with the synchronous calls.
fn replace_by_sync_rename(seed: u64, sync_dir: bool) -> Vec<u8> {
    use crashtest_fs::sync;
    crash_and_recover(
        seed,
        DiskConfig::default(),
        Duration::from_secs(1),
        move || async move {
            for (path, bytes) in [("/current", b"old"), ("/tmp", b"new")] {
                sync::write(path, bytes).unwrap();
                sync::File::open(path).unwrap().sync_all().unwrap();
                sync::sync_dir("/").unwrap();
            }
            sync::rename("/tmp", "/current").unwrap();
            if sync_dir {
                sync::sync_dir("/").unwrap();
            }
        },
        || async { crashtest_fs::sync::read("/current").unwrap() },
    )
}

#[test]
fn a_synchronous_rename_is_undone_by_a_crash_unless_its_directory_was_synced() {
    let unsynced: BTreeSet<Vec<u8>> = (0..100)
        .map(|seed| replace_by_sync_rename(seed, false))
        .collect();
    assert_eq!(unsynced, BTreeSet::from([b"old".to_vec(), b"new".to_vec()]));
    for seed in 0..100 {
        assert_eq!(replace_by_sync_rename(seed, true), b"new", "seed {seed}");
    }
}

#[test]
fn a_new_file_whose_directory_was_not_synced_sometimes_vanishes() {
    let exists: BTreeSet<bool> = (0..100)
        .map(|seed| {
            crash_and_recover(
                seed,
                DiskConfig::default(),
                Duration::from_secs(1),
                || async {
                    let file = File::create("/f").await.unwrap();
                    file.sync_all().await.unwrap();
                },
                || async { crashtest_fs::try_exists("/f").await.unwrap() },
            )
        })
        .collect();
    assert_eq!(exists, BTreeSet::from([false, true]));
}

#[test]
fn after_a_failed_sync_the_unsynced_data_is_gone_for_good() {
    for seed in 0..20 {
        let recovered = crash_and_recover(
            seed,
            DiskConfig::default(),
            Duration::from_secs(1),
            || async {
                let mut file = durable_file("/f", b"old!").await;
                file.write_all(b"new!").await.unwrap();
                crashtest_fs::configure(DiskConfig::default().sync_error(Ratio::ALWAYS));
                let error = file.sync_data().await.unwrap_err();
                assert_eq!(error.raw_os_error(), Some(EIO));
                // The page cache still shows the lost write, as on Linux...
                assert_eq!(crashtest_fs::read("/f").await.unwrap(), b"old!new!");
                // ...and a later sync that succeeds does not bring it back.
                crashtest_fs::configure(DiskConfig::default().all_survive(Ratio::ALWAYS));
                file.sync_data().await.unwrap();
            },
            || async { crashtest_fs::read("/f").await.unwrap() },
        );
        assert_eq!(recovered, b"old!", "seed {seed}");
    }
}

/// `EIO` on Linux, macOS and the BSDs.
const EIO: i32 = 5;

#[test]
fn a_handle_from_before_a_crash_fails_with_eio() {
    let kept: Rc<RefCell<Option<crashtest_fs::sync::File>>> = Rc::default();
    let k = kept.clone();
    let error = crash_and_recover(
        1,
        DiskConfig::default(),
        Duration::from_secs(1),
        move || {
            let kept = k.clone();
            async move {
                durable_file("/f", b"x").await;
                *kept.borrow_mut() = Some(crashtest_fs::sync::File::open("/f").unwrap());
            }
        },
        move || {
            let kept = kept.clone();
            async move {
                let stale = kept.borrow_mut().take().unwrap();
                let mut buf = [0; 1];
                stale.read_at(&mut buf, 0).unwrap_err().raw_os_error()
            }
        },
    );
    assert_eq!(error, Some(EIO));
}

/// The permission bits of `path` after a crash under `seed`, where the first boot made the
/// file durable, set its bits to 0o600 and then, if `sync`, synced it.
fn mode_after_crash(seed: u64, sync: bool) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    crash_and_recover(
        seed,
        DiskConfig::default(),
        Duration::from_secs(5),
        move || async move {
            let file = durable_file("/key", b"secret").await;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .await
                .unwrap();
            assert_eq!(file.metadata().await.unwrap().mode(), 0o600);
            if sync {
                file.sync_all().await.unwrap();
            }
        },
        || async { crashtest_fs::metadata("/key").await.unwrap().mode() },
    )
}

#[test]
fn a_synced_chmod_survives_a_crash_and_an_unsynced_one_may_or_may_not() {
    let mut unsynced = BTreeSet::new();
    for seed in 0..16 {
        assert_eq!(
            mode_after_crash(seed, true),
            0o600,
            "seed {seed}: a synced chmod is kept"
        );
        let mode = mode_after_crash(seed, false);
        assert!(mode == 0o600 || mode == 0o644, "seed {seed}: {mode:o}");
        unsynced.insert(mode);
    }
    assert_eq!(
        unsynced.len(),
        2,
        "an unsynced chmod is sometimes kept, sometimes lost"
    );
}

#[test]
fn a_files_times_survive_a_crash_with_its_unsynced_data_whole_or_not_at_all() {
    let mut outcomes = BTreeSet::new();
    for seed in 0..24 {
        let (contents, stamped_by_write) = crash_and_recover(
            seed,
            DiskConfig::default(),
            Duration::from_secs(120),
            || async {
                let mut file = durable_file("/f", b"old!").await;
                time::sleep(Duration::from_secs(60)).await;
                file.seek(SeekFrom::Start(0)).await.unwrap();
                file.write_all(b"new!").await.unwrap();
                file.flush().await.unwrap();
            },
            || async {
                let meta = crashtest_fs::metadata("/f").await.unwrap();
                let age = meta
                    .modified()
                    .unwrap()
                    .duration_since(meta.created().unwrap());
                let stamped = age.unwrap() >= Duration::from_secs(60);
                (crashtest_fs::read("/f").await.unwrap(), stamped)
            },
        );
        assert_eq!(
            stamped_by_write,
            contents == b"new!",
            "seed {seed}: the write's time survived exactly when all its data did ({contents:?})"
        );
        outcomes.insert(stamped_by_write);
    }
    assert_eq!(
        outcomes.len(),
        2,
        "the unsynced write sometimes survived, sometimes not"
    );
}

#[test]
fn a_directory_chmod_survives_a_crash_once_the_directory_is_synced_and_may_before() {
    use std::os::unix::fs::PermissionsExt;
    let modes = |seed| {
        crash_and_recover(
            seed,
            DiskConfig::default(),
            Duration::from_secs(5),
            || async {
                crashtest_fs::create_dir("/kept").await.unwrap();
                crashtest_fs::create_dir("/lost").await.unwrap();
                crashtest_fs::sync_dir("/").await.unwrap();
                for dir in ["/kept", "/lost"] {
                    crashtest_fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                        .await
                        .unwrap();
                }
                crashtest_fs::sync_dir("/kept").await.unwrap();
            },
            || async {
                let mode = |dir| async move { crashtest_fs::metadata(dir).await.unwrap().mode() };
                (mode("/kept").await, mode("/lost").await)
            },
        )
    };
    let mut unsynced = BTreeSet::new();
    for seed in 0..16 {
        let (kept, lost) = modes(seed);
        assert_eq!(kept, 0o700, "seed {seed}: a synced directory chmod is kept");
        unsynced.insert(lost);
    }
    assert_eq!(
        unsynced,
        BTreeSet::from([0o700, 0o755]),
        "an unsynced one is sometimes kept, sometimes lost"
    );
}

#[test]
fn a_hard_link_survives_a_crash_once_its_directory_is_synced() {
    let names = |seed: u64, synced: bool| {
        crash_and_recover(
            seed,
            DiskConfig::default(),
            Duration::from_secs(5),
            move || async move {
                crashtest_fs::create_dir("/checkpoint").await.unwrap();
                crashtest_fs::sync_dir("/").await.unwrap();
                durable_file("/sst", b"sorted").await;
                crashtest_fs::hard_link("/sst", "/checkpoint/sst")
                    .await
                    .unwrap();
                if synced {
                    crashtest_fs::sync_dir("/checkpoint").await.unwrap();
                }
            },
            || async {
                let read = |path| async move { crashtest_fs::read(path).await.ok() };
                (read("/sst").await, read("/checkpoint/sst").await)
            },
        )
    };
    let sorted = Some(b"sorted".to_vec());
    let mut unsynced_outcomes = BTreeSet::new();
    for seed in 0..16 {
        assert_eq!(
            names(seed, true),
            (sorted.clone(), sorted.clone()),
            "seed {seed}: a synced link is kept"
        );
        let (original, link) = names(seed, false);
        assert_eq!(original, sorted, "seed {seed}: the durable name is kept");
        assert!(
            link.is_none() || link == sorted,
            "seed {seed}: the link is whole or gone"
        );
        unsynced_outcomes.insert(link.is_some());
    }
    assert_eq!(
        unsynced_outcomes.len(),
        2,
        "an unsynced link is sometimes kept and sometimes lost"
    );
}

#[test]
fn a_set_modification_time_survives_a_crash_only_once_the_file_is_synced() {
    let modified_after_crash = |sync: bool| {
        crash_and_recover(
            1,
            DiskConfig::default(),
            Duration::from_secs(5),
            move || async move {
                let file = durable_file("/snapshot", b"state").await;
                let then = std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
                file.set_modified(then).await.unwrap();
                if sync {
                    file.sync_all().await.unwrap();
                }
            },
            || async {
                let meta = crashtest_fs::metadata("/snapshot").await.unwrap();
                meta.modified().unwrap()
                    == std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000)
            },
        )
    };
    assert!(modified_after_crash(true), "a synced time is kept");
    assert!(!modified_after_crash(false), "an unsynced time is lost");
}

#[test]
fn a_crash_that_keeps_a_removed_directory_gone_counts_the_links_left() {
    // The strong model settles each directory's changes on its own: it may keep the rmdir
    // (a change to `/`) and undo the unlink inside (a change to `/d`); the file's other name
    // must then count as its only one.
    for seed in 0..40 {
        let links = crash_and_recover(
            seed,
            DiskConfig::default(),
            Duration::from_secs(5),
            || async {
                crashtest_fs::create_dir("/d").await.unwrap();
                durable_file("/d/f", b"x").await;
                crashtest_fs::sync_dir("/d").await.unwrap();
                crashtest_fs::hard_link("/d/f", "/g").await.unwrap();
                crashtest_fs::sync_dir("/").await.unwrap();
                crashtest_fs::remove_file("/d/f").await.unwrap();
                crashtest_fs::remove_dir("/d").await.unwrap();
            },
            || async {
                let dir_kept = crashtest_fs::try_exists("/d/f").await.unwrap_or(false);
                let meta = crashtest_fs::metadata("/g").await.unwrap();
                (meta.nlink(), dir_kept)
            },
        );
        assert_eq!(links.0, 1 + u64::from(links.1), "seed {seed}: {links:?}");
    }
}

#[test]
fn the_weak_model_keeps_a_chmod_as_any_operation_of_its_prefix() {
    use std::os::unix::fs::PermissionsExt;
    let mut seen = BTreeSet::new();
    for seed in 0..24 {
        let (chmod_kept, later_write_kept) = crash_and_recover(
            seed,
            DiskConfig::default().crash_model(CrashModel::Weak),
            Duration::from_secs(5),
            || async {
                let key = durable_file("/key", b"k").await;
                let mut log = durable_file("/log", b"").await;
                key.set_permissions(std::fs::Permissions::from_mode(0o600))
                    .await
                    .unwrap();
                log.write_all(b"after").await.unwrap();
                log.flush().await.unwrap();
            },
            || async {
                let mode = crashtest_fs::metadata("/key").await.unwrap().mode();
                let log = crashtest_fs::read("/log").await.unwrap();
                (mode == 0o600, !log.is_empty())
            },
        );
        assert!(
            chmod_kept || !later_write_kept,
            "seed {seed}: a write issued after the chmod survived without it"
        );
        seen.insert((chmod_kept, later_write_kept));
    }
    assert!(
        seen.len() >= 2,
        "the cut fell on both sides of the chmod: {seen:?}"
    );
}
