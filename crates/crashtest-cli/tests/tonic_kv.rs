//! The `examples/tonic-kv` workspace, set up with `crashtest tokio setup` and tested: tonic,
//! axum and reqwest, unmodified, in crashtest's simulation and on real tokio.
//!
//! The example is a workspace of its own (its tokio is the stand-in); this test is how
//! `cargo test --workspace` covers it. It builds in the fixtures' target directory (see
//! `nested`); its stand-in lives in its own `target/crashtest-tokio`, where its manifest's
//! `[patch.crates-io]` entry points.

mod nested;

use std::path::Path;

#[test]
fn the_tonic_kv_example_passes_through_the_stand_in() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tonic-kv");
    let manifest = example.join("Cargo.toml");
    let before = std::fs::read_to_string(&manifest).unwrap();
    let stand_in = example.join("target/crashtest-tokio");
    nested::setup(&manifest, &["--dir".as_ref(), stand_in.as_os_str()]);
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap(),
        before,
        "the example's manifest carries the setup's patch already"
    );
    let out = nested::cargo_test(&manifest);
    for name in [
        "acknowledged_puts_survive_kills_partitions_and_clogs ... ok",
        "the_planted_unsynced_ack_is_found ... ok",
        "a_seed_replays_exactly_and_seeds_differ ... ok",
        "the_server_binary_serves_grpc_and_http_on_loopback ... ok",
    ] {
        assert!(out.contains(name), "{name} did not run:\n{out}");
    }
    // The seeds benchmark (`crashtest-bench --workload tonic-kv` runs it in release) passes
    // every seed and prints its line; here in the test profile, which `cargo test` builds.
    let bench = nested::cargo_test_with(&manifest, &["--bench", "seeds"]);
    assert!(
        bench.contains("{\"seeds\":300,"),
        "the seeds benchmark printed no line:\n{bench}"
    );
}
