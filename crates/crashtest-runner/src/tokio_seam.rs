//! What the tokio stand-in needs registered before a run.
//!
//! The stand-in (`crashtest tokio setup`) reaches the simulated network and disk through
//! `crashtest-hooks`, where they must be registered; the core cannot do it (the network and
//! the disk depend on the core). The runner does, for every test, and the facade's `Sim` and
//! `check_determinism` do, for runs started by hand.

/// Registers the simulated network and disk with the tokio stand-in (once per process; later
/// calls do nothing).
///
/// ```
/// crashtest_runner::register_tokio_seam();
/// assert!(crashtest_hooks::network().is_some() && crashtest_hooks::disk().is_some());
/// ```
pub fn register_tokio_seam() {
    crashtest_net::register_tokio_seam();
    crashtest_fs::register_tokio_seam();
}
