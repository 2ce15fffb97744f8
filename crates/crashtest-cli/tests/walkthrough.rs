//! The failure walkthrough end to end, as a user follows it: sweep, then run the lines the
//! sweep prints (replay, minimize, view), and pin it as a regression that
//! the next `cargo test` runs first. Run in the fixture package's directory, where its planted
//! bug (a store that acknowledges writes it has not synced) fails some seeds.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{STORE, assert_contains, fixture, stderr, stdout, tempdir};

/// Runs a line the tool printed (`crashtest ...`, or `VAR=value ... cargo test ...`) as a
/// shell would, in the fixture's directory.
fn run_printed(line: &str, dir: &Path) -> Output {
    let mut words = line.split_whitespace().peekable();
    let mut env = Vec::new();
    while let Some(word) = words.peek() {
        match word.split_once('=') {
            Some((name, value)) if name.chars().all(|c| c.is_ascii_uppercase() || c == '_') => {
                env.push((name.to_owned(), value.to_owned()));
                words.next();
            }
            _ => break,
        }
    }
    let program = match words.next().unwrap() {
        "crashtest" => env!("CARGO_BIN_EXE_crashtest").to_owned(),
        other => other.to_owned(),
    };
    Command::new(program)
        .args(words)
        .envs(env)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &fixture().target_dir)
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .unwrap()
}

/// What a run printed, both streams (libtest prints a failing test's output on stdout).
fn everything(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

/// The line after `prefix` in `text`.
fn printed<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(str::trim_start)
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
}

#[test]
fn the_failure_walkthrough_runs_from_sweep_to_a_pinned_regression() {
    let package = fixture().manifest.parent().unwrap().to_owned();
    let pinned = package.join("crashtest-regressions");
    let _ = std::fs::remove_dir_all(&pinned);
    let work = tempdir("walkthrough");
    let results = work.join("results.jsonl");

    // 1. Sweep, saving the failing seeds.
    let sweep = run_printed(
        &format!(
            "crashtest sweep {STORE} -p crashtest-cli-fixture --seeds 0..16 --save-failures -o {}",
            results.display()
        ),
        &package,
    );
    let text = stdout(&sweep);
    assert_eq!(sweep.status.code(), Some(1), "{text}{}", stderr(&sweep));
    let reproduce = printed(&text, "reproduce the lowest: ");
    let seed: u64 = reproduce
        .strip_prefix("CRASHTEST_SEED=")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();

    // 2. The printed reproduce line fails, on that seed.
    let again = run_printed(reproduce, &package);
    assert!(!again.status.success(), "the reproduce line reproduces");
    assert_contains(&everything(&again), &format!("seed {seed} failed"));

    // 3. The printed replay and minimize lines.
    let replay = printed(&text, "replay it: ");
    let minimize = printed(&text, "minimize it: ");
    let replayed = run_printed(replay, &package);
    assert_eq!(replayed.status.code(), Some(1), "{}", stderr(&replayed));
    assert_contains(&stdout(&replayed), "X KILLED");
    let minimized = run_printed(minimize, &package);
    let minimized = stdout(&minimized);
    assert_contains(&minimized, "still fails the same way");
    let masked = printed(&minimized, "reproduce: ");
    assert!(!run_printed(masked, &package).status.success(), "{masked}");

    // 4. The printed view line, drawn into a page of the test's choosing.
    let page = work.join("seed.html");
    let view = run_printed(
        &format!("{} -o {}", printed(&text, "view it: "), page.display()),
        &package,
    );
    assert!(view.status.success(), "{}", stderr(&view));
    assert_contains(&std::fs::read_to_string(&page).unwrap(), "to-failure");

    // 5. Pinned: the sweep saved the seed, and a plain cargo test of other seeds runs it
    //    first and fails on it.
    let saved = std::fs::read_dir(&pinned)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_contains(
        &std::fs::read_to_string(&saved).unwrap(),
        &format!("seed {seed} "),
    );
    let later = run_printed(
        &format!(
            "CRASHTEST_SEED_START=1000000 CRASHTEST_SEEDS=1 cargo test -p crashtest-cli-fixture --lib -- {STORE} --exact"
        ),
        &package,
    );
    std::fs::remove_dir_all(&pinned).unwrap();
    let said = everything(&later);
    assert!(!later.status.success(), "{said}");
    assert_contains(&said, &format!("seed {seed} of the regression file"));
}

#[test]
fn a_sweep_writes_a_relative_results_path_where_it_was_started() {
    // Workers run in the fixture package's directory; the path is the user's, from here.
    let work = tempdir("relative-results");
    let sweep = run_printed(
        &format!(
            "crashtest sweep {STORE} --manifest-path {} --seeds 0..4 -o results.jsonl",
            fixture().manifest.display()
        ),
        &work,
    );
    let text = stdout(&sweep);
    assert!(!text.contains("crashed"), "{text}{}", stderr(&sweep));
    let written = std::fs::read_to_string(work.join("results.jsonl")).unwrap();
    assert_eq!(
        written.lines().filter(|l| l.contains("\"seed\"")).count(),
        4,
        "{written}"
    );
}
