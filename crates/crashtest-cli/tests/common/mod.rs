//! Shared by the integration tests: the fixture package (built once per test binary, into a
//! target directory of its own under the workspace's so that reruns are fast), and running
//! the `crashtest` binary.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The fixture: its manifest, its target directory, and its test executable.
pub struct Fixture {
    pub manifest: PathBuf,
    pub target_dir: PathBuf,
    pub exe: PathBuf,
}

/// Builds the fixture (once per test binary) and returns where it is.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture/Cargo.toml");
        // <target>/debug/crashtest -> <target>/fixtures, shared with the facade's fixture so
        // that the dependencies both build on are compiled once.
        let target_dir = Path::new(env!("CARGO_BIN_EXE_crashtest"))
            .parent()
            .and_then(Path::parent)
            .expect("the binary lives in <target>/<profile>/")
            .join("fixtures");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let output = Command::new(cargo)
            .args([
                "test",
                "--no-run",
                "--message-format=json",
                "--manifest-path",
            ])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", &target_dir)
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "the fixture does not build:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let exe = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo built the fixture's test executable");
        Fixture {
            manifest,
            target_dir,
            exe,
        }
    })
}

/// Runs `crashtest` with `args`, against the fixture's target directory.
pub fn crashtest(args: &[&str]) -> Output {
    crashtest_with(args, &[])
}

/// Runs `crashtest` with `args` and extra environment variables.
pub fn crashtest_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let fixture = fixture();
    Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(args)
        .env("CARGO_TARGET_DIR", &fixture.target_dir)
        .envs(env.iter().copied())
        .output()
        .expect("crashtest runs")
}

/// The fixture's executable as a `--exe` argument pair.
pub fn exe() -> String {
    fixture().exe.display().to_string()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts that `text` (a command's output) contains `needle`, printing `text` if not.
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not in:\n{text}");
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The results lines of a results file (its header left out).
pub fn results(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .filter(|line: &serde_json::Value| line.get("crashtest_results").is_none())
        .collect()
}

/// The header line of a results file.
pub fn header(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let first = text.lines().next().expect("a results file has a header");
    let header: serde_json::Value = serde_json::from_str(first).unwrap();
    assert!(header.get("crashtest_results").is_some(), "{first}");
    header
}

/// `(seed, status, fingerprint)` of each line, sorted by seed.
pub fn outcomes(path: &Path) -> Vec<(u64, String, String)> {
    let mut out: Vec<(u64, String, String)> = results(path)
        .iter()
        .map(|r| {
            (
                r["seed"].as_u64().unwrap(),
                r["status"].as_str().unwrap().to_owned(),
                r["fingerprint"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

/// A fresh, empty directory for one test, removed with everything in it when dropped (at
/// the end of the test, passed or failed), so that test runs leave nothing behind.
pub fn tempdir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("crashtest-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A directory of [`tempdir`]'s: a path, removed on drop.
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The planted bug of the fixture.
pub const STORE: &str = "store::acknowledged_writes_survive_kills";

/// The results line of the lowest seed on which the planted bug fails with at least one
/// harmless fault beside the kill (so that minimization has something to remove), found by
/// running the fixture directly: which seeds fail depends on the generator, not on the tool.
pub fn failing_store_seed() -> &'static serde_json::Value {
    static FOUND: OnceLock<serde_json::Value> = OnceLock::new();
    FOUND.get_or_init(|| {
        let dir = tempdir("failing-seed");
        let results_path = dir.join("results.jsonl");
        Command::new(&fixture().exe)
            .args([STORE, "--exact", "--test-threads=1"])
            .env("CRASHTEST_SEED_START", "0")
            .env("CRASHTEST_SEEDS", "60")
            .env("CRASHTEST_CHECK_DETERMINISM", "0")
            .env("CRASHTEST_STOP_ON_FAILURE", "0")
            .env("CRASHTEST_RESULTS", &results_path)
            .output()
            .expect("the fixture runs");
        let mut lines = results(&results_path);
        lines.sort_by_key(|l| l["seed"].as_u64());
        lines
            .into_iter()
            .find(|l| {
                let faults = l["faults"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                l["status"] == "fail"
                    && faults.iter().any(|f| f["text"] == "kill store")
                    && faults
                        .iter()
                        .any(|f| f["text"] != "kill store" && f["id"].is_u64())
            })
            .expect("the planted bug fails on some of 60 seeds")
    })
}
