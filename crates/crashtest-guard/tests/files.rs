//! Inside a simulation a change to the host's files fails the run with a message that names
//! the call, the path and the simulated disk to use instead, and the caller gets `EROFS`:
//! the host is read-only to a simulated node. Reads pass, and so does a change made inside
//! `with_host_files`. Outside a simulation every call works (`outside.rs`).

#![cfg(guards)]

mod common;

use std::cell::Cell;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::rc::Rc;

use crashtest_core::{RunFailure, Sim};

/// A fresh path in the host's temporary directory, unique to this test and process.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
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

#[test]
fn creating_a_host_file_fails_the_run_with_erofs_and_leaves_no_file() {
    let path = scratch("create");
    let inside = path.clone();
    let failure = run_failing(1, async move {
        let err = std::fs::write(&inside, b"acknowledged").expect_err("the write is refused");
        assert_eq!(err.kind(), ErrorKind::ReadOnlyFilesystem);
    });
    assert_refused(&failure, "open64", &path);
    assert!(!path.exists(), "the refused write left {path:?}");
}

#[test]
fn renaming_removing_and_making_directories_on_the_host_are_refused() {
    let file = scratch("kept");
    std::fs::write(&file, b"made outside").expect("written outside the simulation");
    let moved = scratch("moved");
    let dir = scratch("dir");

    let (from, to) = (file.clone(), moved.clone());
    let failure = run_failing(1, async move {
        assert!(std::fs::rename(&from, &to).is_err());
    });
    common::assert_refused_with(
        &failure,
        &[&format!(
            "rename({:?}, {:?}) was called inside the simulation",
            file.display().to_string(),
            moved.display().to_string()
        )],
    );

    let inside = file.clone();
    let failure = run_failing(1, async move {
        assert!(std::fs::remove_file(&inside).is_err());
    });
    assert_refused(&failure, "unlink", &file);

    let inside = dir.clone();
    let failure = run_failing(1, async move {
        assert!(std::fs::create_dir(&inside).is_err());
    });
    assert_refused(&failure, "mkdir", &dir);

    let inside = file.clone();
    let failure = run_failing(1, async move {
        let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
        assert!(std::fs::set_permissions(&inside, mode).is_err());
    });
    assert_refused(&failure, "chmod", &file);

    assert_eq!(std::fs::read(&file).expect("still there"), b"made outside");
    assert!(!moved.exists() && !dir.exists());
    std::fs::remove_file(&file).expect("removed outside the simulation");
}

#[test]
fn the_failure_names_the_node_and_each_seed_replays_its_own_run() {
    let path = scratch("node");
    let run = |seed: u64| {
        let inside = path.clone();
        run_failing(seed, async move {
            crashtest_core::node::create("storage", move || {
                let inside = inside.clone();
                async move {
                    crashtest_core::time::sleep(std::time::Duration::from_millis(5)).await;
                    let _ = std::fs::File::create(&inside);
                }
            });
            std::future::pending::<()>().await;
        })
    };
    let first = run(7);
    assert_refused(&first, "open64", &path);
    assert_eq!(first.node.as_deref(), Some("storage"));
    let again = run(7);
    assert_eq!(again.to_string(), first.to_string());
    assert_eq!(again.summary.fingerprint, first.summary.fingerprint);
    let other = run(8);
    assert_refused(&other, "open64", &path);
    assert_ne!(other.summary.fingerprint, first.summary.fingerprint);
}

#[test]
fn a_path_through_dev_is_host_state_unless_it_names_a_stateless_device() {
    let path = scratch("through-dev");
    let through_dev = format!("/dev/..{}", path.display());
    let inside = through_dev.clone();
    let failure = run_failing(1, async move {
        assert!(std::fs::write(&inside, b"escaped").is_err());
    });
    assert_refused(&failure, "open64", std::path::Path::new(&through_dev));
    assert!(!path.exists(), "the write escaped through /dev/..");

    let inside = path.clone();
    let failure = run_failing(1, async move {
        assert!(std::fs::rename("/dev/null", &inside).is_err());
    });
    common::assert_refused_with(&failure, &["rename(\"/dev/null\""]);
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
