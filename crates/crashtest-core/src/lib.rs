//! The deterministic core of crashtest.
//!
//! A simulation runs the real program on one OS thread, in a world that owns every source of
//! nondeterminism: the scheduler picks among ready tasks with a seeded stream, the clock is
//! virtual and jumps to the next timer, randomness comes from a closed registry of streams of
//! one root seed, and nodes (simulated processes) are killed, restarted and paused at the
//! test's command.
//! Every decision is an event in the trace, and the events hash to the run's fingerprint:
//! the same seed gives the same fingerprint, byte for byte, on every run.
//!
//! Most users depend on the `crashtest` facade, which re-exports this crate's public API.
//!
//! Layout:
//! - [`world`](crate) (private): the executor and the run loop; all per-run state.
//! - [`task`]: `spawn`, `JoinHandle`, `yield_now`.
//! - [`time`]: `sleep`, `timeout`, `interval`, `Instant`, the nodes' wall clocks.
//! - [`rng`]: the generator, the stream registry, integer ratios, the nodes' random sources.
//! - [`node`]: nodes and their life cycle.
//! - [`trace`]: events and the fingerprint.
//! - [`report`]: run summaries and failure reports.
//! - [`plumbing`]: the seam for simulator components (network, disk).
//! - [`fault`]: the fault ledger and its verbs (drawn always, numbered, maskable), `buggify!`.
//! - [`coverage`]: `probe!`, `sometimes!` and the coverage report.
//! - [`verify`]: the switch for O(n) invariant checks (on in the workspace's tests).
//!
//! ```
//! # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
//! use crashtest::{node, spawn, time, Sim};
//! use std::time::Duration;
//!
//! let summary = Sim::new(1)
//!     .run(async {
//!         let (tx, mut rx) = tokio::sync::mpsc::channel(8);
//!         node::create("producer", move || {
//!             let tx = tx.clone();
//!             async move {
//!                 for i in 0..3 {
//!                     time::sleep(Duration::from_millis(10)).await;
//!                     tx.send(i).await.unwrap();
//!                 }
//!             }
//!         });
//!         let consumer = spawn(async move {
//!             let mut got = Vec::new();
//!             for _ in 0..3 {
//!                 got.push(rx.recv().await.unwrap());
//!             }
//!             got
//!         });
//!         assert_eq!(consumer.await.unwrap(), [0, 1, 2]);
//!     })
//!     .unwrap();
//! assert_eq!(summary.elapsed, Duration::from_millis(30));
//! ```

pub mod coverage;
pub mod explore;
pub mod fault;
pub mod node;
mod panic_capture;
pub mod plumbing;
mod prefetch;
pub mod report;
pub mod rng;
mod sim;
pub mod task;
pub mod time;
mod tokio_seam;
pub mod trace;
pub mod verify;
mod watchdog;
mod world;

pub use report::{FailureKind, InjectedFault, RunFailure, RunSummary};
pub use sim::{Config, Divergence, Sim, check_determinism};
pub use task::{JoinHandle, spawn};
