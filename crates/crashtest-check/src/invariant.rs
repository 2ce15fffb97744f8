//! Invariants: properties checked between the steps of a run, not only at its end.
//!
//! An invariant checked after every poll catches a violation at the step that made it, with
//! the trace tail showing how: at most one leader per term, balances never negative, a replica
//! never applying an uncommitted entry. For costly checks, run them every `n` polls.

use crashtest_core::plumbing;

/// Checks `check` after every poll for the rest of the run; an `Err` (what is wrong) or a
/// panic fails the run, naming the invariant.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::invariant::always;
/// use std::{cell::Cell, rc::Rc};
///
/// let failed = crashtest::Sim::new(1).run(async {
///     let leaders = Rc::new(Cell::new(1u32));
///     let seen = leaders.clone();
///     always("at most one leader", move || {
///         if seen.get() <= 1 { Ok(()) } else { Err(format!("{} leaders", seen.get())) }
///     });
///     leaders.set(2);
///     crashtest::task::yield_now().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("at most one leader"));
/// ```
pub fn always(name: &str, check: impl Fn() -> Result<(), String> + 'static) {
    every(name, 1, check);
}

/// Checks `check` after every `polls` polls (for checks too costly to run at every step).
///
/// # Panics
///
/// Panics outside a simulation, or if `polls` is zero.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// crashtest::Sim::new(1).run(async {
///     crashtest::check::invariant::every("log is sorted", 100, || Ok(()));
/// }).unwrap();
/// ```
pub fn every(name: &str, polls: u64, check: impl Fn() -> Result<(), String> + 'static) {
    assert!(polls > 0, "an invariant runs at least every poll");
    plumbing::checks::add_step_check(name, polls, check);
}
