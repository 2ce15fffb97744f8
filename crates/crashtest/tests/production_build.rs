//! A crate that depends on crashtest with `default-features = false` and keeps the defaults
//! in its dev-dependencies (the README's "Production builds") gets a production binary
//! without the determinism guards and a test build with every one of them. The fixture is
//! built with cargo, as a user's project is built.

#![cfg(all(
    target_os = "linux",
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

use std::path::Path;
use std::process::{Command, Output};

/// Runs cargo `args` on the fixture and returns its output, having checked that it succeeded.
fn cargo(args: &[&str]) -> Output {
    let manifest =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/production-fixture/Cargo.toml");
    // <target>/tmp -> <target>/fixtures, shared with the command-line tool's fixture so that
    // the dependencies both build on are compiled once.
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the temporary directory lives in <target>/")
        .join("fixtures");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(args)
        .arg("--manifest-path")
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target_dir)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn a_production_build_leaves_the_guards_out_and_its_test_build_keeps_them() {
    let production = cargo(&["run", "--quiet"]);
    assert_eq!(
        String::from_utf8_lossy(&production.stdout),
        "guards: absent\n"
    );
    let tests = cargo(&["test", "--quiet"]);
    let report = String::from_utf8_lossy(&tests.stdout);
    assert!(report.contains("1 passed"), "{report}");
}
