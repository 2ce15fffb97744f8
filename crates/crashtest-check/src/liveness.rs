//! The liveness phase: heal every fault, then require the system to converge by a deadline.
//!
//! Safety checks say nothing bad happened; they pass for a system that does nothing. The
//! liveness phase asks for the good thing: after the faults end, every pending request must
//! complete and the replicas must agree, within a virtual deadline. A bug that only stalls
//! (a node that never retries after a partition, a lost wake-up) fails here as "no
//! convergence", with what was still pending. FoundationDB's and TigerBeetle's simulators both
//! end their runs with such a phase.

use std::time::Duration;

use crashtest_core::{plumbing, time};

/// How often the condition is checked while waiting, in virtual time.
const POLL: Duration = Duration::from_millis(10);

/// Heals every fault ([`crashtest_core::fault::heal_all`]: no more faults, the dead restart, the paused
/// resume, partitions and clogs end), then waits until `pending()` returns an empty list.
/// If it still lists something after `within` of virtual time, the run fails with
/// "no convergence" and the list.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::liveness::converge;
/// use crashtest::{node, time, Sim};
/// use std::{cell::Cell, rc::Rc, time::Duration};
///
/// let result = Sim::new(1).run(async {
///     let done = Rc::new(Cell::new(false));
///     {
///         let done = done.clone();
///         let worker = node::create("worker", move || {
///             let done = done.clone();
///             async move {
///                 time::sleep(Duration::from_secs(3)).await;
///                 done.set(true);
///             }
///         });
///         worker.kill(); // a fault: the work never finishes unless the node restarts
///     }
///     converge(Duration::from_secs(10), || {
///         if done.get() { vec![] } else { vec!["the worker's job".into()] }
///     })
///     .await;
/// });
/// // Healing restarted the worker, which finished within the deadline.
/// assert!(result.is_ok());
/// ```
pub async fn converge(within: Duration, mut pending: impl FnMut() -> Vec<String>) {
    assert!(
        plumbing::is_simulation(),
        "the liveness phase runs inside a simulation"
    );
    crashtest_core::fault::heal_all();
    let deadline = time::Instant::now() + within;
    loop {
        let still = pending();
        if still.is_empty() {
            return;
        }
        if time::Instant::now() >= deadline {
            plumbing::checks::fail(
                "liveness",
                format!(
                    "no convergence within {within:?} after healing every fault; still pending: {}",
                    still.join("; ")
                ),
            );
            // The run stops at the next scheduling point; nothing after this may run.
            std::future::pending::<()>().await;
        }
        time::sleep(POLL).await;
    }
}
