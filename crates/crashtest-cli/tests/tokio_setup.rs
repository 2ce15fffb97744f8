//! `crashtest tokio setup` on a tokio program, for the oldest and the newest supported tokio:
//! the program's simulation tests and its tests on real tokio pass through the stand-in.
//!
//! Each version's workspace lives in the target directory (`tokio-setup/`), and they build in
//! the fixtures' shared target directory (`fixtures/`, without incremental data), so a rerun
//! rebuilds little and the disk holds one copy of the common dependencies.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's target directory.
fn target() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_crashtest"))
        .parent()
        .and_then(Path::parent)
        .expect("the binary lives in <target>/<profile>/")
        .to_owned()
}

/// Where the fixture workspaces go: `<target>/tokio-setup`.
fn base() -> PathBuf {
    target().join("tokio-setup")
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

    let setup = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(["tokio", "setup", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target().join("fixtures"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&setup.stderr);
    assert!(setup.status.success(), "setup failed: {said}");
    assert!(said.contains(&format!(
        "tokio {tokio} now resolves to crashtest's stand-in"
    )));
    let patched = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    assert!(patched.contains("[patch.crates-io]"), "{patched}");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let test = Command::new(cargo)
        .args(["test", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target().join("fixtures"))
        .env("CARGO_INCREMENTAL", "0")
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(
        test.status.success(),
        "the fixture's tests failed on tokio {tokio}:\n{out}"
    );
    out
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
