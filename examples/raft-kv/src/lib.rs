//! A replicated key-value store over a compact Raft, tested with crashtest, with planted bugs.
//!
//! Three servers elect a leader, replicate a log of commands over simulated TCP, persist
//! their term, vote and log to the simulated disk with checksums and fsync, and apply
//! committed commands to a key-value map. Clients find the leader and run puts, gets, deletes
//! and multi-key compare-and-set transactions. Two workloads drive it: one whose history is
//! checked for linearizability, and FoundationDB's Cycle. Every piece is written against
//! crashtest's public API only (`crashtest::{fs, net, time, node, rand, nemesis, fault}`), as
//! a user's program would be.
//!
//! - [`raft`]: the servers (election, replication, storage, the in-memory log).
//! - [`kv`]: the state machine and its commands.
//! - [`wire`]: the protocol and its framing.
//! - [`client`]: finding the leader, retries, and what an outcome means.
//! - [`workload`], [`cycle`]: the two workloads and their checks.
//! - [`observer`]: cluster-wide invariants (one leader per term, one applied log).
//! - [`scenario`]: one simulated run: faults, liveness, oracle.
//! - [`bugs`]: the planted bugs and their switch (`RAFT_BUG`).
//! - [`hunt`]: running seeds until a failure, and shrinking its faults.
//!
//! ```
//! use raft_kv::{Bug, Setup};
//!
//! // The correct store survives a seed; a planted bug is a value away.
//! crashtest::Sim::new(3).run(raft_kv::run(Setup::default())).unwrap();
//! let _broken = Setup { bug: Bug::StaleLeaderRead, ..Setup::default() };
//! ```

pub mod bugs;
pub mod client;
pub mod cycle;
pub mod hunt;
pub mod kv;
pub mod observer;
pub mod raft;
pub mod scenario;
pub mod wire;
pub mod workload;

pub use bugs::Bug;
pub use scenario::{Setup, Workload, run};
