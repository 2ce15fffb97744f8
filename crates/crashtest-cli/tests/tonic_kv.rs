//! The `examples/tonic-kv` workspace, set up with `crashtest tokio setup` and tested: tonic,
//! axum and reqwest, unmodified, in crashtest's simulation and on real tokio.
//!
//! The example is a workspace of its own (its tokio is the stand-in); this test is how
//! `cargo test --workspace` covers it. It builds in the fixtures' shared target directory
//! (`target/fixtures`); its stand-in lives in its own `target/crashtest-tokio`, where its
//! manifest's `[patch.crates-io]` entry points.

use std::path::Path;
use std::process::Command;

#[test]
fn the_tonic_kv_example_passes_through_the_stand_in() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tonic-kv");
    let manifest = example.join("Cargo.toml");
    let before = std::fs::read_to_string(&manifest).unwrap();
    let setup = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(["tokio", "setup", "--manifest-path"])
        .arg(&manifest)
        .arg("--dir")
        .arg(example.join("target/crashtest-tokio"))
        .output()
        .unwrap();
    assert!(
        setup.status.success(),
        "setup failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap(),
        before,
        "the example's manifest carries the setup's patch already"
    );

    let target = Path::new(env!("CARGO_BIN_EXE_crashtest"))
        .parent()
        .and_then(Path::parent)
        .expect("the binary lives in <target>/<profile>/")
        .join("fixtures");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let test = Command::new(cargo)
        .args(["test", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("TONIC_KV_BUG")
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(test.status.success(), "the example's tests failed:\n{out}");
    for name in [
        "acknowledged_puts_survive_kills_partitions_and_clogs ... ok",
        "the_planted_unsynced_ack_is_found ... ok",
        "a_seed_replays_exactly_and_seeds_differ ... ok",
        "the_server_binary_serves_grpc_and_http_on_loopback ... ok",
    ] {
        assert!(out.contains(name), "{name} did not run:\n{out}");
    }
}
