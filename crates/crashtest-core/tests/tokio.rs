//! tokio next to a simulation: a run that fails with tokio's "no runtime" panic says what to
//! do about it.

use crashtest_core::{FailureKind, Sim};

#[test]
fn tokios_no_runtime_panic_is_explained_in_the_failure_report() {
    let failure = Sim::new(1)
        .run(async {
            tokio::spawn(async {});
        })
        .unwrap_err();
    assert!(matches!(failure.kind, FailureKind::Panic { .. }));
    let report = failure.to_string();
    for needle in [
        "there is no reactor running",
        "hint: tokio was called inside the simulation",
        "crashtest's tokio stand-in (see the README section on running tokio code)",
        "crashtest::{spawn, time, net}",
    ] {
        assert!(
            report.contains(needle),
            "{needle:?} missing from:\n{report}"
        );
    }
}

#[test]
fn other_panics_get_no_tokio_hint() {
    let failure = Sim::new(1).run(async { panic!("boom") }).unwrap_err();
    assert!(!failure.to_string().contains("hint:"));
}
