//! A durable workflow engine (durable execution) tested with crashtest, with planted bugs.
//!
//! A worker runs workflows, each a list of steps that act on the outside world (charge a
//! card, reserve a seat, send an email), and must make every step take effect exactly once
//! and in order although it is killed at any moment. It journals each step's intent, with an
//! idempotency key, to a checksummed, synced journal before acting, journals the outcome
//! after, and on restart replays the journal to resume where it stopped; the side-effect
//! service deduplicates by key.
//!
//! Every piece is written against crashtest's public API only (`crashtest::{fs, net, time,
//! node, rand, nemesis}`), as a user's program would be.
//!
//! - [`workflow`]: workflow definitions.
//! - [`journal`]: the journal's records, segments, recovery and compaction.
//! - [`history`]: the journal's meaning, per workflow.
//! - [`engine`]: the worker's main.
//! - [`protocol`], [`client`], [`service`]: the side-effect service and how to reach it.
//! - [`oracle`]: what the world must have seen.
//! - [`scenario`]: one simulated run: faults, liveness, oracle.
//! - [`bug`]: the planted bugs and their switch.
//! - [`hunt`]: running seeds until a failure, and shrinking its faults.
//!
//! ```
//! use workflow::{Bug, Setup};
//!
//! // The correct engine survives a seed; a planted bug is a value away.
//! crashtest::Sim::new(3).run(workflow::run(Setup::default())).unwrap();
//! let _broken = Setup { bug: Bug::NoJournalFsync, ..Setup::default() };
//! ```

pub mod bug;
pub mod client;
pub mod engine;
pub mod history;
pub mod hunt;
pub mod journal;
pub mod oracle;
pub mod protocol;
pub mod scenario;
pub mod service;
pub mod workflow;

pub use bug::Bug;
pub use scenario::{Setup, run};
pub use workflow::{Action, Workflow};

/// A new idempotency key, drawn from the calling node's seeded stream (the OS's random
/// source in production).
pub(crate) fn fresh_key() -> u64 {
    crashtest::rand::rng().next_u64()
}
