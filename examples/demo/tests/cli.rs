//! The demo binary, run as a user would: fingerprints across separate processes.

use std::process::Command;

fn fingerprint(seed: u64) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_crashtest-demo"))
        .args([
            "--seed",
            &seed.to_string(),
            "--nodes",
            "4",
            "--seconds",
            "20",
        ])
        .output()
        .expect("the demo binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "seed {seed} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("fingerprint:"))
        .map(|f| f.trim().to_owned())
        .expect("the demo prints its fingerprint")
}

#[test]
fn same_seed_gives_the_same_fingerprint_in_separate_processes() {
    for seed in [1, 2, 99] {
        assert_eq!(fingerprint(seed), fingerprint(seed), "seed {seed}");
    }
}

#[test]
fn different_seeds_give_different_fingerprints() {
    let prints: std::collections::BTreeSet<String> = (10..20).map(fingerprint).collect();
    assert_eq!(prints.len(), 10);
}

#[test]
fn a_bad_flag_is_refused_with_usage() {
    let out = Command::new(env!("CARGO_BIN_EXE_crashtest-demo"))
        .args(["--nodes", "1"])
        .output()
        .expect("the demo binary runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--nodes"));
}
