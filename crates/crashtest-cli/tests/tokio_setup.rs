//! `crashtest tokio setup` on a tokio program, for the oldest and the newest supported tokio:
//! the program's simulation tests and its tests on real tokio pass through the stand-in.
//!
//! Each version's workspace lives in the target directory (`tokio-setup/`) and builds in the
//! fixtures' (see `nested`).

mod nested;

use std::path::{Path, PathBuf};

/// Where the fixture workspaces go: `<target>/tokio-setup`.
fn base() -> PathBuf {
    nested::target().join("tokio-setup")
}

/// Writes the fixture pinned to `tokio`, sets it up, tests it, and returns the test output.
fn set_up_and_test(tokio: &str) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tokio-fixture");
    let crashtest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashtest");
    let workspace = base().join(format!("tokio-{tokio}"));
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    let manifest = std::fs::read_to_string(fixture.join("Cargo.toml.in"))
        .unwrap()
        .replace("CRASHTEST", &crashtest.to_string_lossy())
        .replace("TOKIO", tokio);
    std::fs::write(workspace.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(fixture.join("src/lib.rs"), workspace.join("src/lib.rs")).unwrap();

    let said = nested::setup(&workspace.join("Cargo.toml"), &[]);
    assert!(said.contains(&format!(
        "tokio {tokio} now resolves to crashtest's stand-in"
    )));
    let patched = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    assert!(patched.contains("[patch.crates-io]"), "{patched}");
    nested::cargo_test(&workspace.join("Cargo.toml"))
}

fn check(tokio: &str) {
    let out = set_up_and_test(tokio);
    assert!(
        out.contains("the_count_goes_up_in_a_simulation ... ok"),
        "{out}"
    );
    assert!(
        out.contains("the_count_goes_up_on_real_tokio ... ok"),
        "{out}"
    );
    assert!(
        out.contains("a_task_tracker_waits_for_its_tasks_in_a_simulation ... ok"),
        "{out}"
    );
    let lock = std::fs::read_to_string(base().join(format!("tokio-{tokio}/Cargo.lock"))).unwrap();
    assert!(
        lock.contains("name = \"crashtest-real-tokio\""),
        "the stand-in is not in the graph"
    );
}

#[test]
fn the_oldest_supported_tokio_runs_through_the_stand_in() {
    check("1.47.1");
}

#[test]
fn the_newest_supported_tokio_runs_through_the_stand_in() {
    check("1.54.1");
}
