//! Shared by the integration tests that expect a guard to fail the run.

use crashtest_core::{FailureKind, RunFailure};

/// Asserts that `failure` is a refusal (how a guard fails a run) whose report contains every
/// one of `needles`.
pub(crate) fn assert_refused_with(failure: &RunFailure, needles: &[&str]) {
    assert!(
        matches!(failure.kind, FailureKind::Refused { .. }),
        "{:?}",
        failure.kind
    );
    let report = failure.to_string();
    for needle in needles {
        assert!(
            report.contains(needle),
            "{needle:?} missing from:\n{report}"
        );
    }
}
