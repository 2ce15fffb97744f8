//! Checks and per-run state for components: invariants run between polls, failing the run,
//! and *extensions* (one value per type per run, created on first use).

use std::any::Any;
use std::rc::Rc;

use crate::report::FailureKind;
use crate::world;

/// Runs `check` after every `every` polls for the rest of the run (an invariant); an `Err`
/// or a panic fails the run with the check's name.
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// let failed = crashtest_core::Sim::new(1).run(async {
///     let balance = Rc::new(Cell::new(10i64));
///     let seen = balance.clone();
///     crashtest_core::plumbing::checks::add_step_check("balance >= 0", 1, move || {
///         if seen.get() < 0 { Err(format!("balance is {}", seen.get())) } else { Ok(()) }
///     });
///     balance.set(-5);
///     crashtest_core::task::yield_now().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("balance is -5"));
/// ```
pub fn add_step_check(
    name: impl Into<String>,
    every: u64,
    check: impl Fn() -> Result<(), String> + 'static,
) {
    assert!(every > 0, "a step check runs at least every poll");
    let name = name.into();
    // A failed check is reported by its name: "invariant \"\": ..." would say nothing.
    assert!(!name.is_empty(), "a step check has a name");
    world::with(|w| w.add_step_check(name, every, Rc::new(check)))
        .expect("plumbing::checks::add_step_check is only available inside a simulation");
}

/// Fails the running simulation with `message` (a broken invariant found by a component).
/// The run stops at the next scheduling point.
///
/// ```
/// let failed = crashtest_core::Sim::new(1).run(async {
///     crashtest_core::plumbing::checks::fail("replicas diverged".into());
///     std::future::pending::<()>().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("replicas diverged"));
/// ```
pub fn fail(message: String) {
    assert!(!message.is_empty(), "a failure says what broke");
    world::with(|w| w.fail(FailureKind::Check { message }));
}

/// The running simulation's extension of type `T`, created with `T::default()` on first use.
///
/// ```
/// use std::cell::Cell;
/// crashtest_core::Sim::new(1).run(async {
///     #[derive(Default)]
///     struct Counter(Cell<u32>);
///     let a = crashtest_core::plumbing::checks::extension::<Counter>().unwrap();
///     a.0.set(5);
///     let b = crashtest_core::plumbing::checks::extension::<Counter>().unwrap();
///     assert_eq!(b.0.get(), 5);
/// }).unwrap();
/// ```
pub fn extension<T: Any + Default>() -> Option<Rc<T>> {
    let extension = world::with(|w| w.extension::<T>())?;
    // The world keeps its own handle: a second call must find this same value.
    assert!(
        Rc::strong_count(&extension) >= 2,
        "an extension handed out is not kept by the run"
    );
    Some(extension)
}
