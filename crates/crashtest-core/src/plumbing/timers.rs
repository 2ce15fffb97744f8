//! Virtual time and timers for components: callbacks at a virtual deadline (a packet
//! arriving), their cancellation, and the clocks.
//!
//! A callback runs from the run loop between polls, never inside one, and a panic in it fails
//! the run like a panic in a task.

pub use crate::time::timer_heap::TimerKey;
use crate::world;

/// Virtual time of the running simulation, in nanoseconds since its start.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     assert_eq!(crashtest_core::plumbing::timers::now_ns(), Some(0));
/// }).unwrap();
/// ```
pub fn now_ns() -> Option<u64> {
    world::with(|w| w.now_ns())
}

/// The calling node's wall clock in nanoseconds since the Unix epoch (what
/// [`crate::time::system_time`] returns), or `None` outside a simulation.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let ns = crashtest_core::plumbing::timers::wall_clock_ns().unwrap();
///     assert!(ns > 1_767_225_600 * 1_000_000_000 - 1);
/// }).unwrap();
/// ```
pub fn wall_clock_ns() -> Option<i64> {
    world::with(|w| w.nodes.borrow().wall_clock_ns(w.current_node(), w.now_ns()))
}

/// `node`'s wall clock in nanoseconds since the Unix epoch, or `None` outside a simulation:
/// for a component acting on a node's behalf from elsewhere (a disk stamping a file's time).
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("n", || async {});
///     let of_n = crashtest_core::plumbing::timers::wall_clock_ns_of(n.id()).unwrap();
///     assert!(of_n > 1_767_225_600 * 1_000_000_000 - 1);
/// }).unwrap();
/// ```
pub fn wall_clock_ns_of(node: crate::node::NodeId) -> Option<i64> {
    world::with(|w| w.nodes.borrow().wall_clock_ns(node, w.now_ns()))
}

/// Runs `callback` when virtual time reaches `deadline_ns` (at once if that is past), between
/// polls, on the supervisor. Cheaper than a task per event: the simulated network delivers
/// packets this way. A panic in the callback fails the run.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// crashtest_core::Sim::new(1).run(async {
///     let fired = Rc::new(Cell::new(false));
///     let f = fired.clone();
///     crashtest_core::plumbing::timers::call_at(1_000, move || f.set(true));
///     crashtest_core::time::sleep(std::time::Duration::from_micros(2)).await;
///     assert!(fired.get());
/// }).unwrap();
/// ```
pub fn call_at(deadline_ns: u64, callback: impl FnOnce() + 'static) -> TimerKey {
    world::with(|w| w.call_at(deadline_ns, Box::new(callback)))
        .expect("plumbing::timers::call_at is only available inside a simulation")
}

/// Runs `function(argument)` when virtual time reaches `deadline_ns`, like [`call_at`] but
/// without a closure: the timer holds the function and the word, so arming it allocates
/// nothing. For callbacks armed on every packet, which find their state from the word.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// use std::cell::Cell;
/// thread_local! { static FIRED: Cell<u64> = const { Cell::new(0) }; }
/// crashtest_core::Sim::new(1).run(async {
///     crashtest_core::plumbing::timers::call_function_at(1_000, |n| FIRED.set(n), 7);
///     crashtest_core::time::sleep(std::time::Duration::from_micros(2)).await;
///     assert_eq!(FIRED.get(), 7);
/// }).unwrap();
/// ```
pub fn call_function_at(deadline_ns: u64, function: fn(u64), argument: u64) -> TimerKey {
    world::with(|w| w.call_function_at(deadline_ns, function, argument))
        .expect("plumbing::timers::call_function_at is only available inside a simulation")
}

/// Disarms a timer from [`call_at`] or [`call_function_at`]; a key that already fired is ignored.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let key = crashtest_core::plumbing::timers::call_at(1_000, || panic!("cancelled"));
///     crashtest_core::plumbing::timers::cancel(key);
///     crashtest_core::time::sleep(std::time::Duration::from_micros(2)).await;
/// }).unwrap();
/// ```
pub fn cancel(key: TimerKey) {
    world::with(|w| w.cancel_timer(key));
}
