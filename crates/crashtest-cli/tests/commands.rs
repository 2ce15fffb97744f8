//! `replay`, `minimize`, `explore` and `list` (through `cargo crashtest`) on the fixture.

mod common;

use std::process::Command;

use common::{
    STORE, assert_contains, crashtest, crashtest_with, exe, failing_store_seed, fixture, stdout,
};

/// The failing seed, as an argument.
fn seed() -> String {
    failing_store_seed()["seed"].to_string()
}

/// When the failing seed's first kill happened, in nanoseconds.
fn first_kill_ns() -> u64 {
    failing_store_seed()["faults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["text"] == "kill store")
        .unwrap()["time_ns"]
        .as_u64()
        .unwrap()
}

#[test]
fn replay_shows_each_node_in_its_column_with_fault_markers() {
    let seed = seed();
    let run = crashtest(&["replay", STORE, &seed, "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(1), "a failing seed exits 1");
    let text = stdout(&run);
    let header = text.lines().nth(1).unwrap();
    assert!(
        header.contains("supervisor") && header.contains("store"),
        "{header}"
    );
    let store_column = header.find("store").unwrap();
    let kill = text.lines().find(|l| l.contains("X KILLED")).unwrap();
    assert_eq!(kill.find("X KILLED"), Some(store_column), "{text}");
    assert!(text.contains("* fault: kill store"), "{text}");
    assert!(text.contains("^ RESTARTED"), "{text}");
    assert!(text.contains("! PANIC"), "{text}");
    assert!(text.contains("was lost"), "{text}");
    assert!(
        text.contains(&format!("reproduce: CRASHTEST_SEED={seed} ")),
        "{text}"
    );
}

#[test]
fn replay_filters_by_node_and_time() {
    let seed = seed();
    let kill = format!("{}ns", first_kill_ns());
    let run = crashtest(&[
        "replay",
        STORE,
        &seed,
        "--exe",
        &exe(),
        "--node",
        "store",
        "--from",
        &kill,
        "--until",
        &kill,
    ]);
    let text = stdout(&run);
    let header = text.lines().nth(1).unwrap();
    assert!(!header.contains("supervisor"), "{header}");
    let rows: Vec<&str> = text
        .split("\n---")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .collect();
    assert!(rows.iter().any(|r| r.contains("X KILLED")), "{text}");
    assert!(
        rows.iter()
            .all(|r| !r.contains("PANIC") && !r.contains("created")),
        "{text}"
    );
    let unknown = crashtest(&["replay", STORE, &seed, "--exe", &exe(), "--node", "ghost"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(common::stderr(&unknown).contains("no node \"ghost\""));
}

#[test]
fn minimize_keeps_only_kills_and_its_reproduce_line_fails() {
    let seed = seed();
    let run = crashtest(&["minimize", STORE, &seed, "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let text = stdout(&run);
    let applied = failing_store_seed()["faults"].as_array().unwrap();
    let maskable = applied.iter().filter(|f| f["id"].is_u64()).count();
    let want = format!(
        "seed {seed} fails with {} faults applied ({maskable} maskable)",
        applied.len()
    );
    assert!(text.contains(&want), "{text}");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    assert!(!kept.is_empty() && kept.len() < maskable, "{text}");
    // Masking the other faults leaves the kills where they were: the set is the original's.
    let summary = format!(
        "of the {maskable} maskable faults the original applied; without any one of them the \
         seed no longer fails the same way"
    );
    assert!(text.contains(&summary), "{text}");
    // A few faults isolated: no word that the failure needs its schedule as a whole.
    assert!(!text.contains("note: most faults stay"), "{text}");
    assert!(
        kept.iter().all(|k| k.contains("kill store")),
        "only kills matter:\n{text}"
    );
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("reproduce: "))
        .unwrap();
    assert!(
        line.starts_with(&format!("CRASHTEST_SEED={seed} CRASHTEST_MASK=")),
        "{line}"
    );
    let mask = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("CRASHTEST_MASK="))
        .unwrap();
    let kept_ids: Vec<&str> = kept
        .iter()
        .map(|k| k.trim_start()[1..].split_whitespace().next().unwrap())
        .collect();
    let run_seed = |mask: &str| {
        Command::new(&fixture().exe)
            .args([STORE, "--exact", "--test-threads=1"])
            .env("CRASHTEST_SEED", &seed)
            .env("CRASHTEST_MASK", mask)
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(!run_seed(mask), "the minimized run still fails");
    let all = format!("{mask},{}", kept_ids.join(","));
    assert!(run_seed(&all), "masking the kept faults too passes");
}

#[test]
fn explore_draws_futures_from_one_prefix_and_some_fail() {
    let seed = seed();
    let args = [
        "explore",
        STORE,
        &seed,
        "--at",
        "10ms",
        "-k",
        "16",
        "--exe",
        &exe(),
    ];
    let run = crashtest(&args);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let text = stdout(&run);
    assert!(
        text.contains("prefix 0s..10ms kept, then 16 futures re-drawn"),
        "{text}"
    );
    let branches: Vec<&str> = text.lines().filter(|l| l.contains("sub-seed")).collect();
    assert_eq!(branches.len(), 16, "{text}");
    assert!(branches.iter().any(|b| b.contains(" pass ")), "{text}");
    assert!(branches.iter().any(|b| b.contains(" FAIL ")), "{text}");
    assert!(text.contains("CRASHTEST_EXPLORE=10000000:"), "{text}");
    assert_eq!(stdout(&crashtest(&args)), text, "the same tree every time");
}

#[test]
fn cargo_crashtest_resolves_tests_through_cargo() {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_cargo-crashtest"))
        .parent()
        .unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let run = Command::new(cargo)
        .args(["crashtest", "list", "--manifest-path"])
        .arg(&fixture().manifest)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &fixture().target_dir)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", common::stderr(&run));
    let want = format!("{STORE}  (crashtest-cli-fixture --lib)");
    assert!(stdout(&run).contains(&want), "{}", stdout(&run));
}

#[test]
fn a_sweep_through_cargo_prints_a_cargo_reproduce_line() {
    let dir = common::tempdir("commands-cargo");
    let out = dir.join("results.jsonl");
    let manifest = fixture().manifest.display().to_string();
    let run = crashtest(&[
        "sweep",
        "acknowledged_writes_survive_kills",
        "--manifest-path",
        &manifest,
        "--seeds",
        "0..30",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", common::stderr(&run));
    let text = stdout(&run);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("reproduce the lowest: "))
        .unwrap();
    let want = format!(
        " cargo test -p crashtest-cli-fixture --lib --manifest-path {manifest} -- {STORE} --exact"
    );
    assert!(
        line.starts_with("CRASHTEST_SEED=") && line.ends_with(&want),
        "{line}"
    );
    let seed = line
        .strip_prefix("CRASHTEST_SEED=")
        .and_then(|rest| rest.split(' ').next())
        .unwrap();
    let selection = format!("-p crashtest-cli-fixture --lib --manifest-path {manifest}");
    for (label, command) in [
        ("replay it:   ", "replay"),
        ("minimize it: ", "minimize"),
        ("view it:     ", "view"),
    ] {
        let want = format!("crashtest {command} {STORE} {seed} {selection}");
        common::assert_contains(&text, &format!("{label}{want}"));
    }
}

#[test]
fn minimize_of_a_failure_without_faults_says_there_is_nothing_to_minimize() {
    let test = "selected::fails_on_odd_seeds_when_selected";
    let run = crashtest_with(
        &["minimize", test, "1", "--exe", &exe()],
        &[("FIXTURE_BUG", "odd")],
    );
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let text = stdout(&run);
    assert_contains(&text, "fails with 0 faults applied (0 maskable)");
    assert!(!text.contains("CRASHTEST_MASK"), "nothing to mask:\n{text}");
    assert_contains(
        &text,
        "nothing to minimize: the seed drew no maskable fault",
    );
    assert!(!text.contains("1-minimal"), "{text}");
    assert_contains(&text, "reproduce: FIXTURE_BUG=odd CRASHTEST_SEED=1 ");
}

#[test]
fn minimize_keeps_the_original_failure_unless_told_any_will_do() {
    let test = "two_bugs::either_fault_breaks_it";
    let run = crashtest(&["minimize", test, "0", "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let text = stdout(&run);
    assert_contains(&text, "2 faults applied (2 maskable): ");
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(kept.len(), 1, "{text}");
    assert_contains(kept[0], "drop a write");
    assert_contains(&text, "still fails the same way: ");
    assert_contains(&text, "a dropped write was lost");
    let any = crashtest(&["minimize", test, "0", "--exe", &exe(), "--any-failure"]);
    let text = stdout(&any);
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(kept.len(), 1, "{text}");
    assert_contains(kept[0], "reorder the writes");
    assert_contains(&text, "reordered writes came back out of order");
}

#[test]
fn minimize_never_trades_a_fault_for_as_many_a_replay_draws_anew() {
    let test = "masked::a_masked_fault_brings_another";
    let run = crashtest(&["minimize", test, "0", "--exe", &exe()]);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let text = stdout(&run);
    assert_contains(&text, "seed 0 fails with 1 fault applied (1 maskable): ");
    assert_contains(
        &text,
        "a 1-minimal failing set (1 run): 1 of the 1 maskable faults the original applied; \
         without any one of them the seed no longer fails the same way with fewer faults",
    );
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .collect();
    assert_eq!(kept.len(), 1, "{text}");
    assert_contains(kept[0], "break the disk");
    assert!(!text.contains("never applied"), "{text}");
    assert_contains(&text, "still fails the same way: ");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("reproduce: "))
        .unwrap();
    assert!(
        line.starts_with("CRASHTEST_SEED=0 ") && !line.contains("CRASHTEST_MASK"),
        "the seed alone replays the original's set: {line}"
    );
}
