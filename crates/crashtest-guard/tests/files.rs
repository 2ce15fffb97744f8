//! Inside a simulation no call changes the host's files: std's changes go to the node's
//! simulated disk (`disk_files.rs` tests the disk's side), and a change the disk does not
//! model (a symbolic link, an owner, an extended attribute, a FIFO, a change through a host
//! file's descriptor, C's stdio writes, `mkstemp`) fails the run with a message that names
//! the call and the path, and the caller gets `EROFS`. Reads of host files pass, and so does a
//! change made inside `with_host_files`. Outside a simulation every call works
//! (`outside.rs`).

#![cfg(guards)]

mod common;

use std::cell::Cell;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::rc::Rc;

use crashtest_core::{RunFailure, Sim};

/// A fresh host path, unique to this test and process.
fn scratch(name: &str) -> PathBuf {
    // Not the temporary directory: inside a simulation that is the disk's, even to read.
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "crashtest-guard-files-{}-{name}",
        std::process::id()
    ))
}

/// Runs `body` under `seed`, which must fail, and returns the failure.
fn run_failing(seed: u64, body: impl std::future::Future<Output = ()> + 'static) -> RunFailure {
    crashtest_guard::install();
    *Sim::new(seed).run(body).expect_err("the run must fail")
}

/// Asserts that `failure` is the refusal of `call` on `path`.
fn assert_refused(failure: &RunFailure, call: &str, path: &std::path::Path) {
    common::assert_refused_with(
        failure,
        &[
            &format!(
                "{call}({:?}) was called inside the simulation",
                path.display().to_string()
            ),
            "change the host's files",
            "tokio::fs",
            "crashtest::fs",
            "crashtest::with_host_files",
        ],
    );
}

/// Runs `body` under `seed`, which must pass.
fn run_passing(seed: u64, body: impl std::future::Future<Output = ()> + 'static) {
    crashtest_guard::install();
    Sim::new(seed).run(body).expect("the run passes");
}

#[test]
fn creating_a_file_in_a_host_directory_writes_the_nodes_disk_and_leaves_no_host_file() {
    let path = scratch("create");
    let inside = path.clone();
    run_passing(1, async move {
        std::fs::write(&inside, b"acknowledged").expect("the write goes to the disk");
        assert_eq!(std::fs::read(&inside).unwrap(), b"acknowledged");
        assert!(
            !crashtest_guard::with_host_files(|| inside.exists()),
            "the host has no such file"
        );
    });
    assert!(!path.exists(), "the write reached the host at {path:?}");
}

#[test]
fn renaming_removing_and_making_directories_change_the_disk_and_never_the_host() {
    let file = scratch("kept");
    std::fs::write(&file, b"made outside").expect("written outside the simulation");
    let moved = scratch("moved");
    let dir = scratch("dir");

    let (from, to, inside_dir) = (file.clone(), moved.clone(), dir.clone());
    run_passing(1, async move {
        // The host's file is not the disk's: the disk starts empty.
        let missing = std::fs::rename(&from, &to).expect_err("the disk has no such file");
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        let missing = std::fs::remove_file(&from).expect_err("the disk has no such file");
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        std::fs::create_dir(&inside_dir).expect("made on the disk");
        std::fs::write(inside_dir.join("f"), b"x").unwrap();
        std::fs::rename(inside_dir.join("f"), &to).expect("renamed on the disk");
        assert!(std::fs::metadata(&inside_dir).unwrap().is_dir());
        std::fs::remove_dir(&inside_dir).expect("removed from the disk");
    });
    assert_eq!(std::fs::read(&file).unwrap(), b"made outside");
    assert!(!moved.exists() && !dir.exists());
    std::fs::remove_file(&file).expect("removed outside the simulation");
}

#[test]
fn a_call_the_disk_does_not_model_fails_the_run_naming_the_node_and_each_seed_replays_its_own_run()
{
    let path = scratch("node");
    let run = |seed: u64| {
        let inside = path.clone();
        run_failing(seed, async move {
            crashtest_core::node::create("storage", move || {
                let inside = inside.clone();
                async move {
                    crashtest_core::time::sleep(std::time::Duration::from_millis(5)).await;
                    let _ = std::os::unix::fs::symlink("target", &inside);
                }
            });
            std::future::pending::<()>().await;
        })
    };
    let first = run(7);
    assert_refused(&first, "symlink", &path);
    assert_eq!(first.node.as_deref(), Some("storage"));
    let again = run(7);
    assert_eq!(again.to_string(), first.to_string());
    assert_eq!(again.summary.fingerprint, first.summary.fingerprint);
    let other = run(8);
    assert_refused(&other, "symlink", &path);
    assert_ne!(other.summary.fingerprint, first.summary.fingerprint);
    assert!(
        std::fs::symlink_metadata(&path).is_err(),
        "no link on the host"
    );
}

#[test]
fn a_path_through_dev_is_the_disks_unless_it_names_a_stateless_device() {
    let path = scratch("through-dev");
    let through_dev = format!("/dev/..{}", path.display());
    let inside = through_dev.clone();
    let moved = path.clone();
    run_passing(1, async move {
        std::fs::write(&inside, b"kept on the disk")
            .expect("a write through /dev/.. is the disk's");
        let across = std::fs::rename("/dev/null", &moved).expect_err("the device is the host's");
        assert_eq!(across.kind(), ErrorKind::CrossesDevices);
    });
    assert!(!path.exists(), "the write escaped through /dev/..");
}

#[test]
fn reading_host_files_and_writing_dev_null_pass() {
    crashtest_guard::install();
    let read = Rc::new(Cell::new(0));
    let seen = read.clone();
    Sim::new(1)
        .run(async move {
            let manifest =
                std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
                    .expect("a host file reads inside a simulation");
            seen.set(manifest.len());
            let mut null = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .expect("/dev/null opens for writing");
            std::io::Write::write_all(&mut null, b"gone").expect("/dev/null takes bytes");
        })
        .expect("reads and /dev/null pass");
    assert!(read.get() > 0);
}

#[test]
fn a_change_inside_with_host_files_goes_through() {
    crashtest_guard::install();
    let path = scratch("dump");
    let inside = path.clone();
    Sim::new(1)
        .run(async move {
            crashtest_guard::with_host_files(|| std::fs::write(&inside, b"a debug dump"))
                .expect("the scope lets the write through");
        })
        .expect("a change in the scope does not fail the run");
    assert_eq!(
        std::fs::read(&path).expect("the dump is there"),
        b"a debug dump"
    );
    std::fs::remove_file(&path).expect("removed outside the simulation");
}

/// Runs `change` on `path` inside a simulation: it must fail the run with a refusal that
/// names `call`, and give its caller `EROFS`.
fn refused_change(
    path: &std::path::Path,
    call: &str,
    change: impl FnOnce(&std::path::Path) -> std::io::Result<()> + 'static,
) {
    let inside = path.to_owned();
    let failure = run_failing(1, async move {
        let err = change(&inside).expect_err("the change is refused");
        assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    });
    common::assert_refused_with(
        &failure,
        &[
            &format!("{call}("),
            "was called inside the simulation",
            "crashtest::with_host_files",
        ],
    );
}

/// A C string of `path`, for the libc calls std does not wrap.
fn c_path(path: &std::path::Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in a path")
}

/// The result of a libc call that returns -1 and sets `errno` on failure.
fn c_result(returned: libc::c_int) -> std::io::Result<()> {
    if returned == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[test]
fn changing_a_host_files_mode_owner_or_times_is_refused_through_a_reader_and_misses_by_path() {
    use std::os::unix::fs::PermissionsExt;
    let path = scratch("metadata");
    std::fs::write(&path, b"made outside").expect("written outside the simulation");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();

    refused_change(&path, "fchmod", |path| {
        std::fs::File::open(path)?.set_permissions(std::fs::Permissions::from_mode(0o600))
    });
    refused_change(&path, "futimens", |path| {
        std::fs::File::open(path)?.set_modified(std::time::SystemTime::UNIX_EPOCH)
    });
    refused_change(&path, "fchown", |path| {
        std::os::unix::fs::fchown(&std::fs::File::open(path)?, None, None)
    });
    // By path, a change is the disk's, where the host's file is not.
    let inside = path.clone();
    run_passing(1, async move {
        let error = std::os::unix::fs::chown(&inside, None, None).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound);
        let name = c_path(&inside);
        let value = b"v";
        // SAFETY: NUL-terminated path and name; the value's pointer and length agree.
        let set = c_result(unsafe {
            libc::setxattr(
                name.as_ptr(),
                c"user.crashtest".as_ptr(),
                value.as_ptr().cast(),
                1,
                0,
            )
        });
        assert_eq!(set.unwrap_err().kind(), ErrorKind::NotFound);
    });

    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(
        after.permissions().mode() & 0o7777,
        0o644,
        "the mode changed"
    );
    assert_eq!(after.modified().unwrap(), modified, "the times changed");
    std::fs::remove_file(&path).expect("removed outside the simulation");
}

#[test]
fn making_fifos_stdio_files_and_temporary_files_on_the_host_is_refused() {
    let fifo = scratch("fifo");
    refused_change(&fifo, "mkfifo", |path| {
        let path = c_path(path);
        // SAFETY: a NUL-terminated path.
        c_result(unsafe { libc::mkfifo(path.as_ptr(), 0o600) })
    });
    assert!(!fifo.exists(), "the refused mkfifo left {fifo:?}");

    let written = scratch("stdio");
    refused_change(&written, "fopen", |path| {
        let path = c_path(path);
        // SAFETY: NUL-terminated path and mode.
        let file = unsafe { libc::fopen(path.as_ptr(), c"w".as_ptr()) };
        assert!(file.is_null(), "a refused fopen returns no stream");
        Err(std::io::Error::last_os_error())
    });
    assert!(!written.exists(), "the refused fopen left {written:?}");

    let template = scratch("temp-XXXXXX");
    refused_change(&template, "mkstemp", |path| {
        let mut template = c_path(path).into_bytes_with_nul();
        // SAFETY: a writable NUL-terminated template ending in XXXXXX.
        c_result(unsafe { libc::mkstemp(template.as_mut_ptr().cast()) })
    });
    refused_change(&template, "mkdtemp", |path| {
        let mut template = c_path(path).into_bytes_with_nul();
        // SAFETY: as for mkstemp.
        let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
        assert!(made.is_null(), "a refused mkdtemp names no directory");
        Err(std::io::Error::last_os_error())
    });
}

#[test]
fn reading_a_host_file_through_stdio_passes() {
    crashtest_guard::install();
    Sim::new(1)
        .run(async {
            let manifest = c_path(std::path::Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/Cargo.toml"
            )));
            // SAFETY: NUL-terminated path and mode; the stream is closed once.
            unsafe {
                let file = libc::fopen(manifest.as_ptr(), c"r".as_ptr());
                assert!(!file.is_null(), "a host file opens for reading");
                libc::fclose(file);
            }
        })
        .expect("a read through stdio passes");
}

#[test]
fn a_descriptor_change_is_judged_by_the_path_it_was_opened_at() {
    use std::os::unix::fs::PermissionsExt;
    let path = scratch("by-descriptor");
    std::fs::write(&path, b"made outside").expect("written outside the simulation");
    let inside = path.clone();
    let failure = run_failing(1, async move {
        let file = std::fs::File::open(&inside).unwrap();
        assert!(
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .is_err()
        );
    });
    // The report names the file, not the descriptor's number, which varies between runs.
    assert_refused(&failure, "fchmod", &path);

    crashtest_guard::install();
    Sim::new(1)
        .run(async {
            let null = std::fs::File::open("/dev/null").unwrap();
            null.set_modified(std::time::SystemTime::UNIX_EPOCH)
                .expect("a stateless device's times may change");
        })
        .expect("a change through a /dev/null descriptor passes");

    let inside = path.clone();
    let failure = run_failing(1, async move {
        let path = c_path(&inside);
        // SAFETY: NUL-terminated path and modes; the stream is closed once.
        unsafe {
            let stream = libc::fopen(path.as_ptr(), c"r".as_ptr());
            assert!(!stream.is_null(), "a host file opens for reading");
            let reopened = libc::freopen(std::ptr::null(), c"w".as_ptr(), stream);
            assert!(
                reopened.is_null(),
                "reopening the stream's file to write is refused"
            );
            libc::fclose(stream);
        }
    });
    assert_refused(&failure, "freopen", &path);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"made outside",
        "the file was not cut"
    );
    std::fs::remove_file(&path).expect("removed outside the simulation");
}
