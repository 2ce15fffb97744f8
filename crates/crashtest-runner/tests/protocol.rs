//! The output protocol the `crashtest` tool reads: results lines and trace files.

use std::time::Duration;

use crashtest::runner::protocol::results::FailureClass;
use crashtest::runner::protocol::{SeedResult, Status};
use crashtest::runner::{Settings, TestSpec, run_seeds};
use crashtest::{Config, fault, node, rand::Ratio, time};

fn spec() -> TestSpec {
    TestSpec {
        name: "protocol",
        module_path: "protocol",
        package: "crashtest",
        crate_name: "protocol",
        seeds: None,
        seed: None,
        config: Config::default,
        env: &[],
    }
}

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

async fn flaky() {
    if time::Instant::now().as_nanos_since_start() == u64::MAX {
        crashtest::probe!("a probe no seed reaches");
    }
    let n = node::create("db", std::future::pending);
    time::sleep(Duration::from_millis(10)).await;
    if fault::inject(n.id(), Ratio::new(1, 3), || "kill db".into()) {
        n.kill();
        panic!("db died");
    }
}

#[test]
fn every_seed_writes_one_results_line_even_after_failures() {
    let dir = tempdir();
    let results = dir.path().join("results.jsonl");
    let settings = Settings {
        count: 30,
        threads: 2,
        stop_on_failure: false,
        results: Some(results.clone()),
        ..Settings::default()
    };
    let report = run_seeds(&spec(), &settings, &flaky).unwrap_err();
    let lines = lines(&results);
    // The first seed is checked for determinism (two runs) but written once.
    assert_eq!(lines.len(), 30);
    let mut seeds: Vec<u64> = lines.iter().map(|l| l["seed"].as_u64().unwrap()).collect();
    seeds.sort();
    assert_eq!(seeds, (0..30).collect::<Vec<_>>());
    let failed: Vec<_> = lines.iter().filter(|l| l["status"] == "fail").collect();
    assert!(!failed.is_empty() && failed.len() < 30);
    assert!(
        failed
            .iter()
            .all(|l| l["failure"].as_str().unwrap().contains("db died"))
    );
    assert!(
        failed
            .iter()
            .all(|l| l["faults"][0]["id"].as_u64().is_some())
    );
    let lowest = failed
        .iter()
        .map(|l| l["seed"].as_u64().unwrap())
        .min()
        .unwrap();
    assert_eq!(report.seed, lowest);
}

#[test]
fn a_failing_line_names_its_failure_for_comparison() {
    let dir = tempdir();
    let results = dir.path().join("results.jsonl");
    let settings = Settings {
        count: 30,
        stop_on_failure: false,
        check_determinism: false,
        results: Some(results.clone()),
        ..Settings::default()
    };
    let _ = run_seeds(&spec(), &settings, &flaky);
    let text = std::fs::read_to_string(&results).unwrap();
    let read: Vec<SeedResult> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed: Vec<&SeedResult> = read.iter().filter(|r| r.status == Status::Fail).collect();
    assert!(!failed.is_empty());
    for result in &failed {
        let signature = result
            .signature
            .as_ref()
            .expect("a failure has a signature");
        assert_eq!(signature.class, FailureClass::Panic);
        assert!(
            signature.headline.ends_with("db died"),
            "{}",
            signature.headline
        );
        assert!(signature.same_failure(failed[0].signature.as_ref().unwrap()));
    }
    assert!(
        read.iter()
            .filter(|r| r.passed())
            .all(|r| r.signature.is_none())
    );
}

#[test]
fn masking_the_failing_fault_makes_the_seed_pass() {
    let dir = tempdir();
    let results = dir.path().join("results.jsonl");
    let failing = (0..100)
        .find(|seed| {
            let settings = Settings {
                start: *seed,
                count: 1,
                ..Settings::default()
            };
            run_seeds(&spec(), &settings, &flaky).is_err()
        })
        .expect("a third of seeds fail");
    let settings = Settings {
        start: failing,
        count: 1,
        results: Some(results.clone()),
        ..Settings::default()
    };
    run_seeds(&spec(), &settings, &flaky).unwrap_err();
    let id = lines(&results)[0]["faults"][0]["id"].as_u64().unwrap();
    let masked = Settings {
        start: failing,
        count: 1,
        mask: vec![id],
        ..Settings::default()
    };
    assert!(run_seeds(&spec(), &masked, &flaky).is_ok());
}

#[test]
fn a_trace_file_holds_every_event_with_node_names() {
    let dir = tempdir();
    let trace = dir.path().join("trace.jsonl");
    let settings = Settings {
        start: 4,
        count: 1,
        trace: Some(trace.clone()),
        ..Settings::default()
    };
    let _ = run_seeds(&spec(), &settings, &flaky);
    let events = lines(&trace);
    assert!(events.len() > 5);
    assert_eq!(events[0]["index"], 0);
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "create" && e["node_name"] == "supervisor")
    );
    assert!(events.iter().any(|e| e["node_name"] == "db"));
}

/// A fresh directory in the system temp directory, removed with its files when the test ends.
fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("crashtest-protocol-")
        .tempdir()
        .expect("a temporary directory")
}

#[test]
fn a_failure_reproduce_line_carries_the_declared_variables_and_the_profile() {
    // Cargo sets CARGO_PKG_NAME for the tests it runs: a declared variable that is set.
    let spec = TestSpec {
        env: &["CARGO_PKG_NAME", "CRASHTEST_PROTOCOL_TEST_UNSET"],
        ..spec()
    };
    let settings = Settings {
        count: 1,
        check_determinism: false,
        ..Settings::default()
    };
    let report = run_seeds(&spec, &settings, &|| async { panic!("boom") }).unwrap_err();
    assert!(
        report
            .command
            .starts_with("CARGO_PKG_NAME=crashtest-runner CRASHTEST_SEED=0 cargo test -p crashtest --test protocol"),
        "{}",
        report.command
    );
    assert!(!report.command.contains("CRASHTEST_PROTOCOL_TEST_UNSET"));
    assert_eq!(
        report.command.contains(" --release "),
        !cfg!(debug_assertions),
        "{}",
        report.command
    );
}

#[test]
fn a_failure_reproduce_line_carries_the_masked_kept_and_explored_faults() {
    let settings = Settings {
        count: 1,
        check_determinism: false,
        mask: vec![2, 5],
        keep: Some(vec![7]),
        explore: vec![(Duration::from_millis(3), 11)],
        ..Settings::default()
    };
    let report = run_seeds(&spec(), &settings, &|| async { panic!("boom") }).unwrap_err();
    assert!(
        report.command.starts_with(
            "CRASHTEST_SEED=0 CRASHTEST_MASK=2,5 CRASHTEST_KEEP=7 CRASHTEST_EXPLORE=3000000:11 cargo test"
        ),
        "{}",
        report.command
    );
}
