//! Regression files: a failing seed is saved, runs first on every later run, and stops
//! running when its line is removed.

use std::path::PathBuf;
use std::sync::Mutex;

use crashtest::runner::regressions::{Regression, Regressions};
use crashtest::runner::{RegressionPolicy, Settings, TestSpec, run_with_regressions};

fn spec() -> TestSpec {
    TestSpec {
        name: "never_eleven",
        module_path: "planted",
        package: "planted",
        crate_name: "planted",
        seeds: None,
        seed: None,
        config: crashtest::Config::default,
        env: &[],
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crashtest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every seed the planted body ran, in order.
static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());
/// The tests share `RAN`, so they take turns.
static SERIAL: Mutex<()> = Mutex::new(());

/// Fails seeds ending in 11 (11, 111, 211, ...).
async fn planted() {
    let seed = crashtest::rand::seed().unwrap();
    RAN.lock().unwrap().push(seed);
    assert_ne!(seed % 100, 11, "the planted bug");
}

fn settings(start: u64) -> Settings {
    Settings {
        start,
        count: 20,
        threads: 1,
        check_determinism: false,
        ..Settings::default()
    }
}

#[test]
fn a_failing_seed_is_saved_then_runs_first_until_its_line_is_removed() {
    let root = scratch("regressions-cycle");
    let policy = RegressionPolicy::from_env(&spec(), &root, &|_| None);
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let body = planted;
    let none = |_: &str| None;

    // The first run finds seed 11 and saves it.
    let report = run_with_regressions(&spec(), &settings(0), &policy, &none, &body).unwrap_err();
    assert_eq!(report.seed, 11);
    let file = root.join("crashtest-regressions/planted.never_eleven.txt");
    let text = std::fs::read_to_string(&file).unwrap();
    let line = text.lines().find(|l| l.starts_with("seed ")).unwrap();
    assert!(line.starts_with("seed 11 # "), "{line}");
    assert!(line.contains("the planted bug"), "{line}");

    // A later run of other seeds, all passing, runs seed 11 first and fails on it.
    RAN.lock().unwrap().clear();
    let report = run_with_regressions(&spec(), &settings(150), &policy, &none, &body).unwrap_err();
    assert_eq!(report.seed, 11);
    assert_eq!(RAN.lock().unwrap()[0], 11, "the saved seed ran first");

    // With its line removed, only the range runs, and passes.
    std::fs::write(&file, text.replace(line, "")).unwrap();
    RAN.lock().unwrap().clear();
    run_with_regressions(&spec(), &settings(150), &policy, &none, &body).unwrap();
    assert!(!RAN.lock().unwrap().contains(&11));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_saved_seed_runs_only_under_the_environment_it_failed_in() {
    let root = scratch("regressions-env");
    let file = Regressions::of(&spec(), &root);
    file.append(&Regression {
        seed: 311,
        env: vec![("PLANTED_BUG".into(), "on".into())],
        reason: "the planted bug".into(),
    })
    .unwrap();
    let policy = RegressionPolicy {
        file,
        run_first: true,
        save: false,
    };
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let body = planted;
    let off = |_: &str| None;
    run_with_regressions(&spec(), &settings(150), &policy, &off, &body).unwrap();
    let on = |name: &str| (name == "PLANTED_BUG").then(|| "on".to_owned());
    let report = run_with_regressions(&spec(), &settings(150), &policy, &on, &body).unwrap_err();
    assert_eq!(report.seed, 311);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_saved_seed_records_the_declared_environment_it_failed_in() {
    let root = scratch("regressions-declared");
    let spec = TestSpec {
        env: &["PLANTED_BUG", "PLANTED_UNSET"],
        ..spec()
    };
    let policy = RegressionPolicy {
        file: Regressions::of(&spec, &root),
        run_first: true,
        save: true,
    };
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let body = planted;
    let on = |name: &str| (name == "PLANTED_BUG").then(|| "on".to_owned());
    let report = run_with_regressions(&spec, &settings(0), &policy, &on, &body).unwrap_err();
    assert_eq!(report.seed, 11);
    let text = std::fs::read_to_string(root.join("crashtest-regressions/planted.never_eleven.txt"))
        .unwrap();
    let line = text.lines().find(|l| l.starts_with("seed ")).unwrap();
    assert!(
        line.starts_with("seed 11 PLANTED_BUG=on PLANTED_UNSET='' # "),
        "{line}"
    );
    // Under another value the saved seed stays out of the run; under the same it runs first.
    let off = |_: &str| None;
    RAN.lock().unwrap().clear();
    run_with_regressions(&spec, &settings(150), &policy, &off, &body).unwrap();
    assert!(!RAN.lock().unwrap().contains(&11));
    RAN.lock().unwrap().clear();
    let report = run_with_regressions(&spec, &settings(150), &policy, &on, &body).unwrap_err();
    assert_eq!((report.seed, RAN.lock().unwrap()[0]), (11, 11));
    std::fs::remove_dir_all(&root).unwrap();
}

/// Fails seeds 3 and 7, each with a message of its own.
async fn two_bugs() {
    let seed = crashtest::rand::seed().unwrap();
    assert_ne!(seed, 3, "bug three");
    assert_ne!(seed, 7, "bug seven");
}

#[test]
fn each_saved_seed_keeps_the_failure_it_had() {
    let root = scratch("regressions-reasons");
    let policy = RegressionPolicy::from_env(&spec(), &root, &|_| None);
    let none = |_: &str| None;
    let every = Settings {
        stop_on_failure: false,
        ..settings(0)
    };
    let report = run_with_regressions(&spec(), &every, &policy, &none, &two_bugs).unwrap_err();
    assert_eq!(
        report.failed.iter().map(|f| f.seed).collect::<Vec<_>>(),
        [3, 7]
    );
    let text = std::fs::read_to_string(root.join("crashtest-regressions/planted.never_eleven.txt"))
        .unwrap();
    let line = |seed: u64| {
        text.lines()
            .find(|l| l.starts_with(&format!("seed {seed} ")))
            .unwrap()
            .to_owned()
    };
    assert!(line(3).contains("bug three"), "{text}");
    assert!(line(7).contains("bug seven"), "{text}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn saved_seeds_run_lowest_first_whatever_order_they_were_saved_in() {
    let root = scratch("regressions-order");
    let policy = RegressionPolicy::from_env(&spec(), &root, &|_| None);
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for seed in [211, 11, 111] {
        policy
            .file
            .append(&Regression {
                seed,
                env: Vec::new(),
                reason: "saved by hand".into(),
            })
            .unwrap();
    }
    RAN.lock().unwrap().clear();
    let none = |_: &str| None;
    let report =
        run_with_regressions(&spec(), &settings(150), &policy, &none, &planted).unwrap_err();
    assert_eq!(
        report.seed, 11,
        "the lowest saved seed ran, and failed, first"
    );
    assert_eq!(RAN.lock().unwrap()[0], 11);
    std::fs::remove_dir_all(&root).unwrap();
}
