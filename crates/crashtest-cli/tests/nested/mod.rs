//! Shared by the tests of workspaces whose tokio is the stand-in (`tokio_setup.rs`,
//! `tonic_kv.rs`): running `crashtest tokio setup` on one, then its tests, in the fixtures'
//! shared target directory without incremental data (one copy of the common dependencies on
//! the disk, and little to rebuild on a rerun).

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's target directory.
pub fn target() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_crashtest"))
        .parent()
        .and_then(Path::parent)
        .expect("the binary lives in <target>/<profile>/")
        .to_owned()
}

/// Where the nested workspaces build: `<target>/fixtures`.
pub fn fixtures() -> PathBuf {
    target().join("fixtures")
}

/// Runs `crashtest tokio setup` on the workspace of `manifest` with `extra` arguments, and
/// returns what it said; panics with it if the setup failed.
pub fn setup(manifest: &Path, extra: &[&std::ffi::OsStr]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(["tokio", "setup", "--manifest-path"])
        .arg(manifest)
        .args(extra)
        .env("CARGO_TARGET_DIR", fixtures())
        .output()
        .expect("crashtest runs");
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "setup failed: {said}");
    said
}

/// Runs `cargo test` on the workspace of `manifest` and returns its output; panics with it if
/// the tests failed.
pub fn cargo_test(manifest: &Path) -> String {
    cargo_test_with(manifest, &[])
}

/// Runs `cargo test` with `extra` arguments (which targets) on the workspace of `manifest`,
/// as [`cargo_test`] does.
pub fn cargo_test_with(manifest: &Path, extra: &[&str]) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["test", "--manifest-path"])
        .arg(manifest)
        .args(extra)
        .env("CARGO_TARGET_DIR", fixtures())
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("TONIC_KV_BUG")
        .output()
        .expect("cargo runs");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the tests of {} failed:\n{out}",
        manifest.display()
    );
    out
}
