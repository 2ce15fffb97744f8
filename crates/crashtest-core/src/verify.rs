//! The verify switch: assertions that cost O(n) run only when asked.
//!
//! The simulator asserts its invariants as it goes. Checks that cost O(1) (a bound, a state
//! transition, a pre- or postcondition) are always on, release builds included: a simulator
//! that runs on in a wrong state hides the very bug it exists to find. Checks that walk a
//! whole structure (every armed timer, every task slot, every fault of the ledger) would turn
//! an O(1) step into an O(n) one, so they run only when the `verify` cargo feature is on.
//!
//! The workspace's tests turn it on: each crate lists `crashtest-core` with `verify` among its
//! dev-dependencies, so `cargo test` builds the core with every check, while `cargo run
//! --release` of a benchmark or a user's binary builds it without them. [`enabled`] is a
//! constant, so a check behind it costs nothing when the feature is off: the compiler drops it.
//! A user's own test suite turns it on with the facade's feature of the same name.

/// True when the O(n) checks run (the `verify` feature, or this crate's own unit tests).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// // This crate's tests build it with `verify` on.
/// assert!(crashtest::verify::enabled());
/// ```
#[inline(always)]
pub const fn enabled() -> bool {
    cfg!(any(test, feature = "verify"))
}
