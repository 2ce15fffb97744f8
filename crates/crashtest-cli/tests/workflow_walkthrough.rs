//! The failure workflow on a real example with a planted bug, as a user runs it: a sweep in
//! two shards, `merge`, then every line the tool prints pasted into a fresh shell at the
//! workspace root (reproduce, replay, minimize, and the minimized reproduce line).
//!
//! The example is `examples/workflow` with `WORKFLOW_BUG=no_journal_fsync`, which fails on
//! most seeds, so that a few seeds are enough. It builds in the fixtures' target directory
//! (see `nested`); the pasted lines reuse that build.

mod nested;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TEST: &str = "every_step_takes_effect_exactly_once";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A shell with nothing of this process's environment but what finds the tools and the
/// shared build: what a user's fresh terminal at the workspace root has.
fn fresh_shell(line: &str) -> Output {
    let cargo = PathBuf::from(std::env::var_os("CARGO").expect("cargo runs the tests"));
    let crashtest = Path::new(env!("CARGO_BIN_EXE_crashtest"));
    let path = std::env::join_paths([
        crashtest.parent().unwrap(),
        cargo.parent().unwrap(),
        Path::new("/usr/bin"),
        Path::new("/bin"),
    ])
    .unwrap();
    let mut command = Command::new("sh");
    command
        .args(["-c", line])
        .current_dir(workspace())
        .env_clear()
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", nested::fixtures())
        .env("CARGO_INCREMENTAL", "0");
    for kept in ["HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(value) = std::env::var_os(kept) {
            command.env(kept, value);
        }
    }
    command.output().expect("sh runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The rest of the line of `output` that starts with `label`.
fn printed(output: &Output, label: &str) -> String {
    let all = text(output);
    all.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{all}"))
        .trim()
        .to_owned()
}

fn sweep(bug: &str, shard: &str, out: &Path) -> Output {
    fresh_shell(&format!(
        "WORKFLOW_BUG={bug} crashtest sweep {TEST} -p workflow-example --test engine --seeds 0..6 --shard {shard} -j 2 -o {}",
        out.display()
    ))
}

#[test]
fn shards_merge_and_every_printed_line_works_pasted_into_a_fresh_shell() {
    let dir = std::env::temp_dir().join(format!("crashtest-walkthrough-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (one, two) = (dir.join("shard-1.jsonl"), dir.join("shard-2.jsonl"));
    let first = sweep("no_journal_fsync", "1/2", &one);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    let second = sweep("no_journal_fsync", "2/2", &two);
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));

    let merged = fresh_shell(&format!(
        "crashtest merge {} {} -o {}",
        one.display(),
        two.display(),
        dir.join("all.jsonl").display()
    ));
    let report = text(&merged);
    assert_eq!(merged.status.code(), Some(1), "{report}");
    assert!(
        report.contains("every seed of 0..6 has a result"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "reproduce: WORKFLOW_BUG=no_journal_fsync CRASHTEST_SEED=0 cargo test -p workflow-example --test engine -- {TEST} --exact"
        )),
        "{report}"
    );
    let other = dir.join("other-bug.jsonl");
    let _ = sweep("key_per_attempt", "2/2", &other);
    let refused = fresh_shell(&format!(
        "crashtest merge {} {}",
        one.display(),
        other.display()
    ));
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("environment: WORKFLOW_BUG=no_journal_fsync"),
        "{}",
        text(&refused)
    );

    let reproduce = fresh_shell(&printed(&first, "reproduce the lowest:"));
    assert_eq!(reproduce.status.code(), Some(101), "{}", text(&reproduce));
    assert!(
        text(&reproduce).contains("took effect"),
        "{}",
        text(&reproduce)
    );
    let replay = fresh_shell(&printed(&first, "replay it:"));
    assert_eq!(replay.status.code(), Some(1), "{}", text(&replay));
    assert!(
        text(&replay).contains("FAIL: panicked"),
        "{}",
        text(&replay)
    );
    let minimize = fresh_shell(&printed(&first, "minimize it:"));
    assert_eq!(minimize.status.code(), Some(0), "{}", text(&minimize));
    let minimized = printed(&minimize, "reproduce:");
    assert!(
        minimized.starts_with("WORKFLOW_BUG=no_journal_fsync "),
        "{minimized}"
    );
    let again = fresh_shell(&minimized);
    assert_eq!(again.status.code(), Some(101), "{}", text(&again));
    assert!(text(&again).contains("took effect"), "{}", text(&again));
    std::fs::remove_dir_all(&dir).unwrap();
}
