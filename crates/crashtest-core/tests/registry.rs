//! Every random draw of a run goes through the stream registry: no simulator crate makes a
//! generator of its own, which a reseed (exploration) could not re-draw.
//!
//! The type already makes a named stream impossible (`plumbing::with_stream` takes a
//! `Stream`; see its `compile_fail` example); this test closes the other door, a component
//! seeding a generator of its own from one draw, as the network once did.

use std::fs;
use std::path::{Path, PathBuf};

/// Ways to make a generator outside the registry.
const GENERATOR_MAKERS: [&str; 5] = [
    "Rng::seed_from(",
    "seed_from_u64(",
    "from_entropy(",
    "from_os_rng(",
    "thread_rng(",
];

/// Files allowed to make generators, and why.
const ALLOWED: [(&str, &str); 3] = [
    ("crashtest-core/src/rng.rs", "the registry itself"),
    (
        "crashtest-core/src/fault/ledger.rs",
        "a buggify site's enablement: a keyed draw from the run's seed, part of its configuration",
    ),
    (
        "crashtest-runner/src/guided.rs",
        "the guided search's choice of which timeline to branch next: made between runs, outside \
         any simulation, from the search's own start seed, and recorded in each run's branch path",
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a source file that runs in simulations: unit tests and doc comments cut away.
fn simulated_code(text: &str) -> String {
    let body = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    body.lines()
        .filter(|line| {
            let line = line.trim_start();
            !line.starts_with("///") && !line.starts_with("//!")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_simulator_crate_makes_a_generator_outside_the_registry() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for name in [
        "crashtest-core",
        "crashtest-net",
        "crashtest-fs",
        "crashtest-nemesis",
        "crashtest-guard",
        "crashtest-tokio",
        "crashtest-check",
        "crashtest-runner",
    ] {
        rust_files(&crates.join(name).join("src"), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut offenders = Vec::new();
    for file in &files {
        let shown = file
            .strip_prefix(&crates)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if ALLOWED.iter().any(|(allowed, _)| shown == *allowed) {
            continue;
        }
        let code = simulated_code(&fs::read_to_string(file).unwrap());
        for maker in GENERATOR_MAKERS {
            if code.contains(maker) {
                offenders.push(format!("{shown}: {maker}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these make a generator the stream registry cannot re-draw; draw from a `Stream` \
         through `plumbing::with_stream` instead:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_scan_sees_a_private_generator() {
    let code = simulated_code("fn f() {\n    let rng = Rng::seed_from(draw());\n}\n");
    assert!(code.contains(GENERATOR_MAKERS[0]));
    let tests_only = simulated_code("#[cfg(test)]\nmod tests {\n    Rng::seed_from(1);\n}\n");
    assert!(!tests_only.contains(GENERATOR_MAKERS[0]));
}
