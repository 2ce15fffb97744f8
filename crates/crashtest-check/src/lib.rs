//! crashtest's oracles: what decides that a run went wrong.
//!
//! **Invariants** ([`invariant`]) are checked between the steps of a run; the **liveness
//! phase** ([`liveness::converge`]) heals every fault and requires the system to converge by a
//! virtual deadline.
//!
//! **Linearizability.** Clients record what they asked a shared object and what they saw in a
//! [`History`]; [`History::check`] then searches for an order of the operations, each placed
//! between its invocation and its return, that a sequential [`Model`] accepts. Operations
//! whose outcome the client never learned (timeouts, crashes) may have taken effect at any
//! point after their invocation, or never. The search is Wing & Gong's, with Lowe's
//! just-in-time linearization and memoisation, run per partition of the model (per key for a
//! map). When no order exists, the error shows a smallest window of operations that no order
//! explains.
//!
//! Ready models: [`Register`], [`KvMap`], [`Queue`]; implement [`Model`] for your own object.
//!
//! Cost: checking linearizability is NP-complete in general; the memoised search is fast when
//! each partition's operations overlap a few at a time. A map of many keys is many small
//! searches (100,000 operations from eight clients over 100 keys check in tens of milliseconds
//! in release builds). Reads of unknown outcome cost nothing; writes of unknown outcome stay
//! candidates for the rest of their partition, so the work grows with the square of how many
//! are pending (one register, eight clients, 1% of outcomes unknown: 10,000 operations in
//! about a second, 30,000 in minutes). A queue is one partition and its cost grows fast with
//! overlapping enqueues (see [`Queue`]).
//!
//! ```
//! # mod crashtest { pub use crashtest_core::*; pub use crashtest_check as check; }
//! use crashtest::check::{History, KvMap, KvOp, KvOutput};
//! use crashtest::{node, time, Sim};
//! use std::{cell::RefCell, collections::BTreeMap, rc::Rc, time::Duration};
//!
//! Sim::new(1).run(async {
//!     let store = Rc::new(RefCell::new(BTreeMap::new()));
//!     let history = History::new();
//!     for client in 0..3 {
//!         let (store, history) = (store.clone(), history.clone());
//!         node::create(format!("client-{client}"), move || {
//!             let (store, history) = (store.clone(), history.clone());
//!             async move {
//!                 let op = history.invoke(client, KvOp::Put("x", client));
//!                 time::sleep(Duration::from_millis(client + 1)).await;
//!                 store.borrow_mut().insert("x", client);
//!                 history.ok(op, KvOutput::Done);
//!                 let op = history.invoke(client, KvOp::Get("x"));
//!                 let seen = store.borrow().get("x").copied();
//!                 history.ok(op, KvOutput::Value(seen));
//!             }
//!         });
//!     }
//!     time::sleep(Duration::from_secs(1)).await;
//!     history.check(&KvMap::new()).unwrap();
//! }).unwrap();
//! ```
// The crate-level example is written as users write it, with the facade's paths
// (`crashtest::...`). The facade depends on this crate, so depending on it here, even for
// doc tests, would be a cycle: the example's hidden first line maps those paths onto the
// crates the facade re-exports instead.

mod history;
pub mod invariant;
mod linearizability;
pub mod liveness;
mod model;
mod models;

pub use history::{History, OpId, Operation, Outcome, Stamp};
pub use linearizability::{NonLinearizable, WindowOp};
pub use model::{Effect, Model};
pub use models::{
    KvMap, KvOp, KvOutput, Queue, QueueOp, QueueOutput, Register, RegisterOp, RegisterOutput,
};
