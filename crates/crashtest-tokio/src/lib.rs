//! A stand-in for tokio 1.x: inside a crashtest simulation, tasks, time, the network and the
//! disk go to the simulated world; outside one, every call is real tokio's.
//!
//! A user puts it in place of tokio with one step (`crashtest tokio setup`, which writes a
//! `[patch.crates-io]` entry), and then their code and every crate they depend on that uses
//! tokio (hyper, h2, tonic, axum, reqwest, tower, tokio-util...) compile against this crate
//! under the name `tokio`, with no fork and no cfg flag. The real tokio underneath is the
//! registry's, unmodified, under the name `real`.
//!
//! # How a call is switched
//!
//! The public surface is real tokio's (`pub use real::*`), with modules shadowed where a call
//! must reach the simulation: [`spawn`], [`task`], [`runtime`], [`time`], [`net`], [`fs`],
//! [`io`] (only `stdin`), [`process`] and [`signal`], [`sync`] (`watch`, and the calls that
//! block a thread or wait on tokio's timer), and the [`select!`] macro. Each
//! function that makes something (a task, a sleep, a socket, a file) asks
//! `crashtest_hooks::current()`, one thread-local read, whether a simulation runs on this
//! thread; if not, it makes real tokio's and the object stays real for life (its methods pay a
//! match on its variant, no thread-local). Inside a simulation it makes a simulated one
//! through the hooks, which the simulator fills in.
//!
//! The rest of `sync` (see [`sync`] for what is switched and why), the `io` traits and
//! helpers, `join!`, `pin!` and `task_local!` are real tokio's: they need no runtime and
//! behave the same in a simulation.
//!
//! # What a simulation refuses
//!
//! What the simulation cannot own fails the run with a message naming the call and what to
//! do instead: spawning processes, OS signals other than waiting for them, reading stdin,
//! building a tokio runtime or blocking on one, and the few socket and file calls that would
//! reach the real machine (see each module). A refusal is never a hang or a silent pass.
//!
//! ```
//! use crashtest_tokio as tokio;
//! use std::time::Duration;
//!
//! // The same code runs on real tokio...
//! let program = || async {
//!     let sleeper = tokio::spawn(async {
//!         tokio::time::sleep(Duration::from_secs(3600)).await;
//!         "an hour later"
//!     });
//!     sleeper.await.unwrap()
//! };
//! let real = tokio::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .start_paused(true)
//!     .build()
//!     .unwrap()
//!     .block_on(program());
//! // ...and inside a simulation, where the hour is virtual.
//! let summary = crashtest::Sim::new(1).run(async move {
//!     assert_eq!(program().await, real);
//! }).unwrap();
//! assert_eq!(summary.elapsed, Duration::from_secs(3600));
//! ```

#![allow(
    clippy::module_name_repetitions,
    reason = "the names are tokio's, kept so that user code compiles unchanged"
)]

pub use real::*;

pub mod fs;
pub mod io;
pub mod net;
#[cfg(feature = "process")]
pub mod process;
pub mod runtime;
mod seam;
mod select;
#[cfg(feature = "signal")]
pub mod signal;
pub mod sync;
pub mod task;
pub mod time;

pub use task::spawn;

/// What the stand-in's macros expand to. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::select::{select_start, simulated};
    pub use real;
}
