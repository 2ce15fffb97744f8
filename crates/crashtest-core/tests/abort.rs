//! A panic that Rust cannot unwind from (a destructor that panics while its task unwinds from
//! another panic) aborts the process; before it does, the first panic, which is the failure,
//! and those that came of it are printed, since no report will be.
//!
//! The abort ends its process, so the test runs it in a child process: this test binary
//! again, asked to run only the ignored child test.

use std::process::Command;
use std::sync::{Arc, Mutex};

use crashtest_core::{Sim, task};

/// Unwraps a lock in its destructor, as a connection handle does that deregisters itself.
struct LocksOnDrop(Arc<Mutex<u32>>);

impl Drop for LocksOnDrop {
    fn drop(&mut self) {
        *self.0.lock().unwrap() += 1;
    }
}

/// Aborts a task when dropped, as a `JoinSet` does: the task's cell is dropped in a catch of
/// its own, nested in the unwinding poll's.
struct AbortsOnDrop(task::JoinHandle<()>);

impl Drop for AbortsOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[test]
#[ignore = "run in a child process by a_panic_under_a_lock_that_aborts_prints_its_cause"]
fn child_panics_under_a_lock() {
    let _ = Sim::new(17).run(async {
        let state = Arc::new(Mutex::new(0));
        let _owner = LocksOnDrop(state.clone());
        let _held = state.lock().unwrap();
        panic!("the cause, which the abort must not hide");
    });
}

#[test]
#[ignore = "run in a child process by a_panic_under_a_lock_that_aborts_prints_its_cause"]
fn child_panics_under_a_lock_with_a_task_aborted_on_the_way() {
    let _ = Sim::new(17).run(async {
        let state = Arc::new(Mutex::new(0));
        let _owner = LocksOnDrop(state.clone());
        let _aborter = AbortsOnDrop(task::spawn_local(std::future::pending::<()>()));
        let _held = state.lock().unwrap();
        panic!("the cause, which the abort must not hide");
    });
}

#[test]
fn a_panic_under_a_lock_that_aborts_prints_its_cause() {
    for child in [
        "child_panics_under_a_lock",
        "child_panics_under_a_lock_with_a_task_aborted_on_the_way",
    ] {
        assert_the_abort_names_the_cause(child);
    }
}

fn assert_the_abort_names_the_cause(child: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", child])
        .output()
        .expect("the test binary runs again");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child aborts:\n{stderr}");
    let told = stderr
        .find("crashtest: the process aborts at seed 17 on a panic that cannot unwind")
        .unwrap_or_else(|| panic!("no word of the abort:\n{stderr}"));
    let cause = stderr
        .find("the cause, which the abort must not hide")
        .unwrap_or_else(|| panic!("the first panic is not shown:\n{stderr}"));
    let poisoned = stderr
        .find("PoisonError")
        .unwrap_or_else(|| panic!("the destructor's panic is not shown:\n{stderr}"));
    assert!(told < cause && cause < poisoned, "{stderr}");
}
