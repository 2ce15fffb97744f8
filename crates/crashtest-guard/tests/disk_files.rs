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

#[test]
fn a_listing_dropped_after_its_run_closes_cleanly() {
    crashtest_guard::install();
    let kept = Rc::new(RefCell::new(None));
    let keep = kept.clone();
    Sim::new(1)
        .run(async move {
            std::fs::create_dir("/d").unwrap();
            std::fs::write("/d/a", b"").unwrap();
            *keep.borrow_mut() = Some(std::fs::read_dir("/d").unwrap());
        })
        .expect("the run passes");
    let listing = kept.take().expect("the run kept its listing");
    let names: Vec<_> = listing.map(|entry| entry.unwrap().file_name()).collect();
    assert_eq!(
        names,
        ["a"],
        "the listing taken in the run reads on after it"
    );
}

#[test]
fn a_number_closed_behind_the_guards_back_and_reused_is_the_hosts_again() {
    let exe = std::env::current_exe().unwrap();
    run(1, async move {
        std::fs::write("/simulated", b"SIMULATED").unwrap();
        let file = std::fs::File::open("/simulated").unwrap();
        let fd = std::os::fd::IntoRawFd::into_raw_fd(file);
        let host = std::fs::File::open(&exe).unwrap();
        // SAFETY: a raw system call puts the host file at the simulated file's number without
        // the guards seeing it (closing the memfd there), as a `close_range` and a reuse of
        // the number would; atomically, so no other thread can take the number meanwhile.
        let moved = unsafe {
            libc::syscall(
                libc::SYS_dup3,
                std::os::fd::AsRawFd::as_raw_fd(&host),
                fd,
                0,
            )
        };
        assert_eq!(moved, i64::from(fd), "{}", std::io::Error::last_os_error());
        // SAFETY: `fd` is open (the duplicate just made) and owned by nothing else.
        let mut reused = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let mut head = [0; 4];
        reused.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"\x7fELF", "the host's file, not the simulated one");
        std::fs::File::open("/simulated").expect("the next simulated open works");
    });
}

#[test]
fn vectored_positioned_calls_and_status_flags_behave_as_on_linux() {
    use std::os::fd::AsRawFd;
    run(1, async {
        std::fs::write("/f", b"0123456789").unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open("/f")
            .unwrap();
        let fd = file.as_raw_fd();
        let (mut a, mut b) = ([0u8; 3], [0u8; 4]);
        let iov = [
            libc::iovec {
                iov_base: a.as_mut_ptr().cast(),
                iov_len: 3,
            },
            libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: 4,
            },
        ];
        // SAFETY: two buffers of the stated lengths.
        assert_eq!(unsafe { libc::preadv(fd, iov.as_ptr(), 2, 2) }, 7);
        assert_eq!((&a, &b), (b"234", b"5678"));

        // SAFETY: fcntl with F_GETFL and F_SETFL on an open descriptor.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            assert_ne!(flags & libc::O_APPEND, 0);
            assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_APPEND), 0);
        }
        let mut writer = &file;
        writer.seek(SeekFrom::Start(0)).unwrap();
        writer.write_all(b"XY").unwrap();
        assert_eq!(
            std::fs::read("/f").unwrap(),
            b"XY23456789",
            "append mode is off"
        );

        writer.seek(SeekFrom::Start(1000)).unwrap();
        assert_eq!(writer.write(b"").unwrap(), 0);
        assert_eq!(
            file.metadata().unwrap().len(),
            10,
            "writing nothing grows nothing"
        );

        let long = format!("/{}", "n".repeat(256));
        let error = std::fs::write(&long, b"").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENAMETOOLONG));
    });
}

#[test]
fn open_file_description_locks_conflict_between_opens_of_a_file() {
    use std::os::fd::AsRawFd;
    run(1, async {
        std::fs::write("/lock", b"").unwrap();
        let (first, second) = (
            std::fs::OpenOptions::new()
                .write(true)
                .open("/lock")
                .unwrap(),
            std::fs::OpenOptions::new()
                .write(true)
                .open("/lock")
                .unwrap(),
        );
        let whole = |kind: libc::c_int| libc::flock {
            l_type: kind as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: 0,
            l_len: 0,
            l_pid: 0,
        };
        let mut lock = whole(libc::F_WRLCK);
        // SAFETY: F_OFD_* take a pointer to a `struct flock`.
        unsafe {
            assert_eq!(
                libc::fcntl(first.as_raw_fd(), libc::F_OFD_SETLK, &mut lock),
                0
            );
            let mut other = whole(libc::F_WRLCK);
            assert_eq!(
                libc::fcntl(second.as_raw_fd(), libc::F_OFD_SETLK, &mut other),
                -1
            );
            assert_eq!(
                libc::fcntl(second.as_raw_fd(), libc::F_OFD_GETLK, &mut other),
                0
            );
            assert_eq!(c_int_of(other.l_type), libc::F_WRLCK);
            let mut unlock = whole(libc::F_UNLCK);
            assert_eq!(
                libc::fcntl(first.as_raw_fd(), libc::F_OFD_SETLK, &mut unlock),
                0
            );
            let mut again = whole(libc::F_WRLCK);
            assert_eq!(
                libc::fcntl(second.as_raw_fd(), libc::F_OFD_SETLK, &mut again),
                0
            );
        }
    });
}

fn c_int_of(kind: libc::c_short) -> libc::c_int {
    libc::c_int::from(kind)
}

#[test]
fn free_space_is_the_disks() {
    run(1, async {
        std::fs::write("/f", [0u8; 8192]).unwrap();
        let path = std::ffi::CString::new("/f").unwrap();
        let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: a NUL-terminated path and a buffer for one `statvfs`.
        let status = unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) };
        assert_eq!(status, 0);
        // SAFETY: statvfs succeeded.
        let stat = unsafe { stat.assume_init() };
        assert_eq!(stat.f_bsize, 4096);
        assert_eq!(stat.f_blocks - stat.f_bfree, 2, "two blocks of file data");
    });
}

#[test]
fn host_files_show_through_a_directory_the_disk_took_from_the_host() {
    let host = std::env::temp_dir().join(format!("crashtest-disk-files-{}", std::process::id()));
    std::fs::write(&host, b"host state").unwrap();
    let inside = host.clone();
    run(1, async move {
        let before = std::fs::read(&inside).expect("a host file reads before the disk has /tmp");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("own"), b"the node's").unwrap();
        assert_eq!(
            std::fs::read(&inside).expect("and after: the disk took /tmp, not what is in it"),
            before
        );
        let missing = std::fs::read(dir.path().join("nothing")).unwrap_err();
        assert_eq!(
            missing.kind(),
            ErrorKind::NotFound,
            "the node's own directory is the disk's"
        );
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(
            &exe[..4],
            b"\x7fELF",
            "the program's executable is the host's"
        );
    });
    std::fs::remove_file(&host).unwrap();
}

#[test]
fn a_call_relative_to_a_moved_directory_fails_the_run() {
    crashtest_guard::install();
    let failure = Sim::new(1)
        .run(async {
            std::fs::create_dir("/d").unwrap();
            std::fs::write("/d/f", b"").unwrap();
            let dir = std::fs::File::open("/d").unwrap();
            std::fs::rename("/d", "/g").unwrap();
            let name = std::ffi::CString::new("f").unwrap();
            // SAFETY: a directory descriptor and a NUL-terminated name.
            unsafe {
                libc::unlinkat(std::os::fd::AsRawFd::as_raw_fd(&dir), name.as_ptr(), 0);
            }
        })
        .expect_err("the call fails the run");
    common::assert_refused_with(
        &failure,
        &["renamed or removed since it was opened", "\"/d\""],
    );
}

/// A killed node's destructors run as the dead node: a call relative to a directory handle
/// it held (an atomic-write crate's drop removes its temporary file so) fails with `EIO`, as
/// every call of a dead process does, and is no sign of a moved directory.
#[test]
fn a_dead_nodes_call_relative_to_its_directory_handle_fails_with_eio() {
    struct RemovesOnDrop(std::fs::File, Rc<RefCell<Vec<i32>>>);
    impl Drop for RemovesOnDrop {
        fn drop(&mut self) {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&self.0);
            let name = std::ffi::CString::new("tmp").unwrap();
            let other = std::ffi::CString::new("other").unwrap();
            // SAFETY: a directory descriptor and NUL-terminated names.
            let results = unsafe {
                [
                    libc::unlinkat(fd, name.as_ptr(), 0),
                    libc::renameat(fd, name.as_ptr(), fd, other.as_ptr()),
                    libc::openat(fd, name.as_ptr(), libc::O_RDONLY),
                ]
            };
            let mut errors = self.1.borrow_mut();
            for result in results {
                assert_eq!(result, -1, "a dead node's call fails");
                errors.push(std::io::Error::last_os_error().raw_os_error().unwrap());
            }
        }
    }
    let errors = Rc::new(RefCell::new(Vec::new()));
    let seen = errors.clone();
    run(1, async move {
        let app = node::create("app", move || {
            let errors = seen.clone();
            async move {
                std::fs::create_dir("/app").unwrap();
                std::fs::write("/app/tmp", b"x").unwrap();
                let _held = RemovesOnDrop(std::fs::File::open("/app").unwrap(), errors);
                std::future::pending::<()>().await
            }
        });
        time::sleep(Duration::from_millis(10)).await;
        app.kill();
        time::sleep(Duration::from_millis(10)).await;
    });
    assert_eq!(*errors.borrow(), [libc::EIO; 3]);
}

#[test]
fn c_stdio_on_a_file_of_the_disk_fails_the_run() {
    crashtest_guard::install();
    let failure = Sim::new(1)
        .run(async {
            std::fs::create_dir("/data").unwrap();
            std::fs::write("/data/x", b"on the disk").unwrap();
            // SAFETY: NUL-terminated path and mode.
            let stream = unsafe { libc::fopen(c"/data/x".as_ptr(), c"r".as_ptr()) };
            assert!(stream.is_null());
        })
        .expect_err("stdio on the disk fails the run");
    common::assert_refused_with(&failure, &["fopen(\"/data/x\")", "C's stdio"]);
}

#[test]
fn each_nodes_disk_is_a_device_of_its_own() {
    use std::os::unix::fs::MetadataExt;
    let devices = Rc::new(RefCell::new(Vec::new()));
    let seen = devices.clone();
    run(1, async move {
        for name in ["a", "b"] {
            let seen = seen.clone();
            node::create(name, move || {
                let seen = seen.clone();
                async move {
                    std::fs::write("/f", b"x").unwrap();
                    let by_path = std::fs::metadata("/f").unwrap();
                    let by_file = std::fs::File::open("/f").unwrap().metadata().unwrap();
                    assert_eq!(by_path.dev(), by_file.dev(), "one disk, one device");
                    assert_eq!(by_path.ino(), by_file.ino());
                    seen.borrow_mut().push((by_path.dev(), by_path.ino()));
                }
            });
        }
        time::sleep(Duration::from_millis(1)).await;
    });
    let devices = devices.take();
    assert_eq!(devices.len(), 2);
    assert_eq!(devices[0].1, devices[1].1, "alike inode numbers");
    assert_ne!(
        devices[0].0, devices[1].0,
        "two machines' files are two files"
    );
}

#[test]
fn a_file_the_program_removed_is_never_read_from_the_host() {
    let path = std::env::temp_dir().join(format!("crashtest-own-{}", std::process::id()));
    std::fs::write(&path, b"host state").unwrap();
    let inside = path.clone();
    run(1, async move {
        std::fs::write(&inside, b"the node's").unwrap();
        assert_eq!(std::fs::read(&inside).unwrap(), b"the node's");
        std::fs::remove_file(&inside).unwrap();
        let gone = std::fs::read(&inside).expect_err("the program removed its file");
        assert_eq!(gone.kind(), ErrorKind::NotFound);
    });
    assert_eq!(std::fs::read(&path).unwrap(), b"host state");
    std::fs::remove_file(&path).unwrap();
}

/// Boots a node that opens the temporary directory before making anything in it, makes a
/// file there, syncs the file and the directory through that early handle, and is killed:
/// whether the file is there after the restart.
fn survives_with_an_early_directory_handle(seed: u64) -> bool {
    let found = Rc::new(RefCell::new(None));
    let out = found.clone();
    run(seed, async move {
        let db = node::create("db", move || {
            let out = out.clone();
            async move {
                let name = std::env::temp_dir().join("crashtest-early-handle");
                if out.borrow().is_some() || Path::new(&name).exists() {
                    *out.borrow_mut() = Some(Path::new(&name).exists());
                    return;
                }
                *out.borrow_mut() = None;
                let dir = std::fs::File::open(std::env::temp_dir()).unwrap();
                let mut file = std::fs::File::create(&name).unwrap();
                file.write_all(b"x").unwrap();
                file.sync_all().unwrap();
                dir.sync_all().unwrap();
                std::future::pending::<()>().await;
            }
        });
        time::sleep(Duration::from_secs(1)).await;
        db.restart();
        time::sleep(Duration::from_secs(1)).await;
    });
    found.take().unwrap_or(false)
}

#[test]
fn a_directory_opened_before_the_disk_took_it_syncs_the_disks() {
    assert!((0..20).all(survives_with_an_early_directory_handle));
}

#[test]
fn c_idioms_create_read_only_and_walk_a_stream() {
    run(1, async {
        let lock = std::ffi::CString::new("/lockfile").unwrap();
        // SAFETY: a NUL-terminated path; the descriptor is closed once.
        unsafe {
            let fd = libc::open(lock.as_ptr(), libc::O_RDONLY | libc::O_CREAT, 0o644);
            assert!(fd >= 0, "{}", std::io::Error::last_os_error());
            libc::close(fd);
        }
        assert!(Path::new("/lockfile").exists());

        std::fs::create_dir("/d").unwrap();
        std::fs::write("/d/a", b"").unwrap();
        let dir = std::ffi::CString::new("/d").unwrap();
        // SAFETY: a stream opened here, read with buffers of the right types, closed once.
        unsafe {
            let stream = libc::opendir(dir.as_ptr());
            assert!(!stream.is_null());
            let start = libc::telldir(stream);
            let mut entry: libc::dirent64 = std::mem::zeroed();
            let mut result = std::ptr::null_mut();
            let mut names = Vec::new();
            while libc::readdir64_r(stream, &mut entry, &mut result) == 0 && !result.is_null() {
                names.push(std::ffi::CStr::from_ptr(entry.d_name.as_ptr()).to_owned());
            }
            assert_eq!(names.len(), 3, ". .. and a: {names:?}");
            libc::seekdir(stream, start);
            assert!(!libc::readdir64(stream).is_null(), "back at the start");
            libc::closedir(stream);
        }

        let parent = std::fs::File::open(std::env::temp_dir()).unwrap();
        let name = std::ffi::CString::new("crashtest-relative").unwrap();
        // SAFETY: a directory descriptor and a NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                std::os::fd::AsRawFd::as_raw_fd(&parent),
                name.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT,
                0o644,
            )
        };
        assert!(
            fd >= 0,
            "a file relative to a host directory lands on the disk"
        );
        // SAFETY: the descriptor just opened.
        unsafe { libc::close(fd) };
        assert!(std::env::temp_dir().join("crashtest-relative").exists());
    });
    assert!(!std::env::temp_dir().join("crashtest-relative").exists());
}

/// The fingerprint of a run that names a temporary directory with tempfile (fastrand).
fn tempfile_fingerprint(seed: u64) -> u64 {
    crashtest_guard::install();
    let summary = Sim::new(seed)
        .run(async {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("x"), b"").unwrap();
        })
        .expect("the run passes");
    summary.fingerprint
}

#[test]
fn tempfile_names_are_the_seeds_on_any_thread_and_in_any_run() {
    let first = crashtest_guard::on_fresh_thread(|| tempfile_fingerprint(4));
    let second = crashtest_guard::on_fresh_thread(|| tempfile_fingerprint(4));
    assert_eq!(first, second, "two threads");
    let again =
        crashtest_guard::on_fresh_thread(|| (tempfile_fingerprint(4), tempfile_fingerprint(4)));
    assert_eq!(again, (first, first), "one thread, two runs");
    assert_ne!(
        crashtest_guard::on_fresh_thread(|| tempfile_fingerprint(5)),
        first
    );
}

#[test]
fn rustix_038s_file_calls_reach_the_disk_and_not_the_host() {
    use rustix_038::fs::{Mode, OFlags};
    let dir = std::env::temp_dir().join(format!("crashtest-rustix-038-{}", std::process::id()));
    let inside = dir.clone();
    run(1, async move {
        std::fs::create_dir_all(&inside).unwrap();
        let file = rustix_038::fs::open(
            inside.join("new"),
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_bits_truncate(0o644),
        )
        .expect("rustix 0.38 creates the file on the disk");
        rustix_038::io::write(&file, b"through libc").unwrap();
        rustix_038::fs::fsync(&file).unwrap();
        // atomicwrites' replace: a rename relative to a directory descriptor std opened.
        let directory = std::fs::File::open(&inside).unwrap();
        rustix_038::fs::renameat(&directory, "new", &directory, "kept")
            .expect("a rename relative to a simulated directory");
        assert_eq!(std::fs::read(inside.join("kept")).unwrap(), b"through libc");
    });
    assert!(!dir.exists(), "rustix 0.38 reached the host: {dir:?}");
}

#[test]
fn a_change_that_fails_leaves_host_files_readable() {
    let host = std::env::temp_dir().join(format!("crashtest-failed-change-{}", std::process::id()));
    std::fs::write(&host, b"host state").unwrap();
    let inside = host.clone();
    run(1, async move {
        std::fs::create_dir_all(std::env::temp_dir()).unwrap();
        let exists = std::fs::create_dir(std::env::temp_dir()).unwrap_err();
        assert_eq!(exists.kind(), ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&inside).unwrap(), b"host state");
    });
    std::fs::remove_file(&host).unwrap();
}

#[test]
fn a_killed_nodes_locks_are_released_though_its_file_leaked() {
    run(1, async {
        let db = node::create("db", || async {
            std::fs::create_dir_all("/var/lib/lk").unwrap();
            let file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open("/var/lib/lk/LOCK")
                .unwrap();
            file.try_lock()
                .expect("a killed incarnation's lock is gone");
            // Held for the process's life, as a lock file often is.
            std::mem::forget(file);
            time::sleep(Duration::from_secs(100)).await;
        });
        time::sleep(Duration::from_millis(5)).await;
        db.restart();
        time::sleep(Duration::from_millis(5)).await;
    });
}

#[test]
fn owners_times_and_attributes_of_an_entry_of_the_disk() {
    use std::os::fd::AsRawFd;
    run(1, async {
        std::fs::write("/f", b"x").unwrap();
        std::os::unix::fs::chown("/f", Some(0), Some(0)).expect("an owner is accepted");
        let file = std::fs::File::open("/f").unwrap();
        std::os::unix::fs::fchown(&file, Some(0), None).expect("through the file too");
        let path = std::ffi::CString::new("/f").unwrap();
        let times = [
            libc::timeval {
                tv_sec: 10,
                tv_usec: 0,
            },
            libc::timeval {
                tv_sec: 1_000,
                tv_usec: 500_000,
            },
        ];
        // SAFETY: a NUL-terminated path and two `timeval`s.
        assert_eq!(unsafe { libc::utimes(path.as_ptr(), times.as_ptr()) }, 0);
        let modified = std::fs::metadata("/f").unwrap().modified().unwrap();
        assert_eq!(
            modified,
            std::time::SystemTime::UNIX_EPOCH + Duration::from_micros(1_000_500_000)
        );
        let bad = [
            times[0],
            libc::timeval {
                tv_sec: 1,
                tv_usec: 1_000_000,
            },
        ];
        // SAFETY: as above.
        assert_eq!(unsafe { libc::utimes(path.as_ptr(), bad.as_ptr()) }, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EINVAL)
        );
        let value = b"v";
        // SAFETY: an open descriptor, a NUL-terminated name, a value of the stated length.
        let set = unsafe {
            libc::fsetxattr(
                file.as_raw_fd(),
                c"user.x".as_ptr(),
                value.as_ptr().cast(),
                1,
                0,
            )
        };
        assert_eq!(set, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EOPNOTSUPP)
        );
    });
}
