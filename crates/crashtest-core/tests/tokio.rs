//! tokio next to a simulation: a simulation refuses to start inside a tokio runtime, and a
//! run that fails with tokio's "no runtime" panic says what to do about it.

use crashtest_core::{FailureKind, Sim};

/// The panic message of `f`.
fn panic_of(f: impl FnOnce()) -> String {
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
    match panic.downcast::<String>() {
        Ok(message) => *message,
        Err(panic) => panic.downcast::<&str>().map(|m| m.to_string()).unwrap(),
    }
}

fn assert_refused_inside_tokio(message: &str) {
    for needle in [
        "crashtest::Sim::run was called inside a tokio runtime",
        "use #[crashtest::test] instead of #[tokio::test]",
        "crashtest::on_fresh_thread",
    ] {
        assert!(
            message.contains(needle),
            "{needle:?} missing from {message:?}"
        );
    }
}

#[tokio::test]
async fn a_simulation_inside_a_tokio_test_fails_at_once() {
    let ran = std::rc::Rc::new(std::cell::Cell::new(false));
    let body_ran = ran.clone();
    let message = panic_of(|| {
        let _ = Sim::new(1).run(async move { body_ran.set(true) });
    });
    assert_refused_inside_tokio(&message);
    assert!(!ran.get(), "the body never starts");
}

#[test]
fn a_simulation_inside_an_entered_runtime_fails_at_once() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let entered = runtime.enter();
    let message = panic_of(|| {
        let _ = Sim::new(1).run(async {});
    });
    assert_refused_inside_tokio(&message);
    drop(entered);
    assert!(
        Sim::new(1).run(async {}).is_ok(),
        "outside the runtime it runs"
    );
}

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
        "crashtest's tokio stand-in, adopt it (see the README section on running tokio code)",
        "crashtest::{spawn, time, net}",
        "With it, the call reached a tokio that the stand-in does not replace",
        "`cargo tree -i tokio` lists every copy",
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
