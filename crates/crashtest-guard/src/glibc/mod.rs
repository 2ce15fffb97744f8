//! The guards: symbols of the executable that hide libc's, on Linux with glibc.
//!
//! A function defined in the executable takes the place of libc's function of the same name
//! for every caller: the executable is first in the dynamic linker's lookup order, and the
//! static linker exports such a symbol (one that a linked shared library also defines) in
//! the executable's dynamic symbol table, so even `dlsym` lookups (std and the getrandom
//! crate find `getrandom` that way) see it. Each guard asks whether a simulation runs on the
//! calling thread; if not, it forwards to libc's function ([`next`]); if so, it answers
//! from the simulation.
//!
//! Invariants:
//! - A guard never re-enters a guard: the check reads the core's thread-local and takes no
//!   lock, and nothing a guard does inside a simulation (a stream draw, a clock read, failing
//!   the run) calls a guarded function.
//! - A guard never unwinds. It is an `extern "C"` function, so a panic in it would abort the
//!   process, and inside a poll without a word (the core's panic hook keeps the message for
//!   the failure report that the abort prevents). Each way a guard can panic is caught: see
//!   [`in_simulation`], [`answer`] and [`fail`].

mod clock;
mod disk;
mod files;
mod metadata;
mod next;
mod placeholders;
mod random;
mod resolver;
mod sleep;
mod sockets;
mod threads;

pub(crate) use sockets::adopt;

use std::panic::{self, AssertUnwindSafe};

/// True while a simulation runs on the calling thread.
///
/// The core's check reads a thread-local, and reading a thread-local after its thread has
/// destroyed it panics; guards are called that late when another thread-local's destructor
/// reads the clock. Such a panic is read as "no simulation" (no simulation runs on an exiting
/// thread); it is the only way the check fails.
#[inline]
fn in_simulation() -> bool {
    panic::catch_unwind(crashtest_core::plumbing::is_simulation).unwrap_or(false)
}

/// Computes a guard's answer inside a simulation, or fails the run and returns `None`.
///
/// The answer reads the simulator's state, which panics if the caller already holds it: a
/// clock read or a new `HashMap` inside a closure that the core runs with its state borrowed
/// (`crashtest::rand::rng().with(..)`). The guard then returns its C error, and the run fails
/// with a message that says what happened.
fn answer<R>(call: &str, compute: impl FnOnce() -> R) -> Option<R> {
    match panic::catch_unwind(AssertUnwindSafe(compute)) {
        Ok(value) => Some(value),
        Err(_) => {
            fail(format!(
                "{call} was called while the simulator's state was in use, inside a closure \
                 that the simulator runs (such as one given to crashtest::rand::rng().with); \
                 read the clock or draw OS randomness before or after that closure"
            ));
            None
        }
    }
}

/// Fails the running simulation with `message`, the way every guard refuses a call.
///
/// Failing the run records the failure in the simulator's state; should that panic (the
/// state already in use), the panic stops here instead of crossing the guard's `extern "C"`
/// boundary: the guard still returns its C error, and the run fails on the error the caller
/// then meets.
fn fail(message: String) {
    let recorded = panic::catch_unwind(|| crashtest_core::plumbing::checks::refuse(message));
    drop(recorded);
}

/// Sets the calling thread's `errno`, as a failing C function does.
fn set_errno(code: libc::c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno, valid for writes for the
    // thread's life.
    unsafe { *libc::__errno_location() = code };
}

/// Makes the linker keep every guard. A guard is an unreferenced function in an rlib, and
/// the linker keeps only the parts of an rlib that something refers to; this refers to all
/// of them.
#[inline(never)]
pub(crate) fn link() {
    let symbols = [
        &random::symbols()[..],
        &clock::symbols()[..],
        &threads::symbols()[..],
        &sockets::symbols()[..],
        &resolver::symbols()[..],
        &sleep::symbols()[..],
        &files::symbols()[..],
        &metadata::symbols()[..],
        &disk::symbols()[..],
    ];
    std::hint::black_box(symbols);
}
