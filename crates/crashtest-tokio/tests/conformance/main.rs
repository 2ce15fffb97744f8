//! The conformance suite: each script runs on tokio itself (a current-thread runtime with a
//! paused clock, so time is exact there too) and inside crashtest simulations through the
//! stand-in, and what it observes must be the same.
//!
//! A script is a macro that expands to a future given the tokio crate to use, so the very
//! same code compiles once against `real` (the registry's tokio) and once against
//! `crashtest_tokio`. Scripts observe what tokio defines (outputs, errors, deadlines, the
//! order of events separated in time), not what it leaves to the scheduler.

#[macro_use]
mod harness;
mod fs;
mod locks;
mod mpsc;
mod net;
mod select;
mod tasks;
mod time;
mod watch;
