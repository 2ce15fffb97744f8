//! tikv's `raft` crate (raft-rs) from crates.io, unmodified, as a three-node cluster under
//! crashtest.
//!
//! raft-rs is a pure state machine (tick, step, ready); [`node::run`] gives it a body: the
//! simulated clock ticks it, its messages travel as protobuf datagrams over
//! [`crashtest::net::UdpSocket`] (Raft tolerates their loss, duplication and reordering),
//! and its log and hard state are made durable in a checksummed file on
//! [`crashtest::fs`] before the messages that depend on them leave. [`cluster::run`] puts
//! three members under a nemesis (kills, pauses, partitions, clogs, swizzles, clock jumps,
//! one member down at most) while a client proposes commands, then heals everything and
//! requires every command applied on every member. [`oracle::Oracle`] checks election
//! safety and state-machine safety at every step and log matching at the end.
//!
//! ```
//! use raft_rs_cluster::{Plan, run};
//!
//! // One seed, on a fresh thread so that raft-rs's `rand::thread_rng()` is seeded by it.
//! let outcome = crashtest::on_fresh_thread(|| {
//!     let out = std::rc::Rc::new(std::cell::RefCell::new(None));
//!     let keep = out.clone();
//!     crashtest::Sim::new(42)
//!         .run(async move { *keep.borrow_mut() = Some(run(Plan::default()).await) })
//!         .unwrap();
//!     out.take().unwrap()
//! });
//! assert!(outcome.terms_with_leader >= 1);
//! ```

pub mod cluster;
mod disk_log;
pub mod node;
pub mod oracle;

pub use cluster::{Outcome, Plan, run};
