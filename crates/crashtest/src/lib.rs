//! crashtest: deterministic simulation testing for Rust.
//!
//! Write the program against `crashtest`'s tokio-shaped modules ([`spawn`], [`time`],
//! [`task`], [`net`], [`fs`]) and tokio's runtime-agnostic parts (`tokio::sync`, `futures`). In production those
//! calls go to tokio. Under test, a simulation runs the whole cluster on one thread, in a
//! world that owns the scheduler, the clocks and randomness: one seed replays a run exactly,
//! and virtual time makes an hour of sleeping cost nothing.
//!
//! ```
//! use crashtest::{node, time};
//! use std::time::Duration;
//!
//! #[crashtest::test(seeds = 8)]
//! async fn a_restarted_node_runs_its_main_again() {
//!     let starts = std::rc::Rc::new(std::cell::Cell::new(0));
//!     let counter = starts.clone();
//!     let server = node::create("server", move || {
//!         counter.set(counter.get() + 1);
//!         std::future::pending()
//!     });
//!     time::sleep(Duration::from_secs(1)).await;
//!     server.kill();
//!     server.restart();
//!     assert_eq!(starts.get(), 2);
//! }
//! ```
//!
//! The [`runner`] module documents the environment variables (`CRASHTEST_SEED`,
//! `CRASHTEST_SEEDS`, ...) and what a failure report holds.

/// The nemesis: a schedule of process, network and clock faults drawn from the seed.
pub use crashtest_nemesis::nemesis;

/// Swarm testing: each seed draws which kinds of fault are on and how hard they hit.
pub use crashtest_nemesis::swarm;

/// The test runner behind `#[crashtest::test]`: many seeds, several threads, one clear report;
/// its settings come from the attribute and the `CRASHTEST_*` environment variables.
pub use crashtest_runner as runner;

/// Runs `f` on a fresh OS thread with the determinism guards linked in, and returns its
/// result. Use it around [`Sim::run`] outside the test runner (which does this for every
/// seed): std's `HashMap` keys and `rand`'s thread generator are drawn once per thread, so
/// only a fresh thread lets the simulation's seed decide them.
///
/// ```
/// use std::{cell::RefCell, collections::HashMap, rc::Rc};
///
/// let iteration_order = |seed| crashtest::on_fresh_thread(move || {
///     let keys = Rc::new(RefCell::new(Vec::new()));
///     let out = keys.clone();
///     crashtest::Sim::new(seed).run(async move {
///         let map: HashMap<u32, ()> = (0..16).map(|k| (k, ())).collect();
///         out.borrow_mut().extend(map.keys().copied());
///     }).unwrap();
///     keys.take()
/// });
/// assert_eq!(iteration_order(1), iteration_order(1));
/// ```
pub use crashtest_guard::on_fresh_thread;

/// Runs `f` with the host's files open to changes, even inside a simulation.
///
/// With the determinism guards (the `guards` feature, on by default), code inside a
/// simulation that creates, writes, renames or removes a host file fails the run: the
/// change would outlive the run and no simulated crash would touch it. A node's files
/// belong on its simulated disk (`crashtest::fs`, or `tokio::fs` through the tokio
/// stand-in). Wrap a change that is meant for the host, such as a debug dump that the run
/// never reads back, in this.
///
/// ```
/// let dump = std::env::temp_dir().join(format!("crashtest-dump-{}", std::process::id()));
/// let written = dump.clone();
/// crashtest::Sim::new(1).run(async move {
///     crashtest::with_host_files(|| std::fs::write(&written, "state at the failure")).unwrap();
/// }).unwrap();
/// std::fs::remove_file(&dump).unwrap();
/// ```
pub use crashtest_guard::with_host_files;

pub use crashtest_core::{
    Config, Divergence, FailureKind, InjectedFault, JoinHandle, RunFailure, RunSummary, buggify,
    coverage, explore, fault, node, probe, report, sometimes, spawn, task, time, trace,
};

/// The components' seam, for crates and fixtures that build simulator parts on the facade
/// alone; user code never needs it (see `crashtest_core::plumbing`).
#[doc(hidden)]
pub use crashtest_core::plumbing;
pub use crashtest_macros::test;
pub use crashtest_runner::{Sim, check_determinism};

/// Oracles: invariants checked between steps, the liveness phase (heal everything, then
/// require convergence by a deadline), and a linearizability checker for recorded histories.
pub use crashtest_check as check;

/// The simulated network: TCP streams and UDP sockets shaped like `tokio::net`, node names
/// resolved like DNS, and a fault model (latency tails, loss, duplication, reordering,
/// partitions, clogging, resets, partial writes) drawn from the seed.
pub use crashtest_net as net;

/// The simulated disk: a per-node file system shaped like `tokio::fs`, whose crash model tears
/// and drops unsynced writes (see the crate's contract for what a correct program may assume).
pub use crashtest_fs as fs;

/// Seeded randomness: the calling node's stream, the generator, integer ratios, the run's seed.
pub mod rand {
    pub use crashtest_core::rng::{NodeRng, Ratio, Rng, node_rng as rng, seed};
}
