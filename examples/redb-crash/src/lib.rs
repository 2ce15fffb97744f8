//! The published `redb` crate, unmodified, on crashtest's simulated disk.
//!
//! [`SimBackend`] implements redb's `StorageBackend` on [`crashtest::fs::sync::File`], so
//! every page redb writes goes through the disk's crash model: unsynced pages are kept,
//! dropped or torn sector by sector when the node dies, and only `sync_data` makes them
//! durable. [`crash_and_recover`] commits transactions, cuts the power at a seeded write (or
//! kills the node between transactions), reopens the database and checks redb's promise:
//! every commit that returned with `Durability::Immediate` is there, whole, and nothing of an
//! uncommitted or aborted transaction is visible.

mod backend;
pub mod model;
mod workload;

pub use backend::{PowerSwitch, SimBackend};
pub use workload::{Ledger, Plan, crash_and_recover};
