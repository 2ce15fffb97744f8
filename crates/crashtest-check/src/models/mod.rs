//! Ready-made sequential models: a register, a key-value map and a FIFO queue.
//!
//! Each model panics when an output does not belong to its input (a read answered with
//! `Written`): that is a mistake in the test's recording, not a finding about the system, and
//! reporting it as non-linearizable would send the reader after a bug that is not there.

mod kv_map;
mod queue;
mod register;

pub use kv_map::{KvMap, KvOp, KvOutput};
pub use queue::{Queue, QueueOp, QueueOutput};
pub use register::{Register, RegisterOp, RegisterOutput};
