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
mod datagrams;
mod disk;
mod files;
pub(crate) mod fork;
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

// SAFETY: the C declaration of glibc's `fstat`.
static HOST_FSTAT: next::Next<unsafe extern "C" fn(libc::c_int, *mut libc::stat) -> libc::c_int> =
    unsafe { next::Next::new(c"fstat") };

/// What libc's own `fstat` (past the guards, which answer a simulated file's from the disk)
/// says of the file `fd` refers to; `None` if `fd` is not open.
fn host_stat(fd: libc::c_int) -> Option<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `stat` is valid for writing a `struct stat`; fstat writes it only on success.
    if unsafe { HOST_FSTAT.get()(fd, stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: fstat succeeded, so it filled `stat`.
    Some(unsafe { stat.assume_init() })
}

/// The identity of the file `fd` refers to, its device and inode: a descriptor number can be
/// closed and reused behind the guards' back, the identity of an open file cannot; `None` if
/// `fd` is not open.
fn identity(fd: libc::c_int) -> Option<(u64, u64)> {
    host_stat(fd).map(|stat| (stat.st_dev, stat.st_ino))
}

/// The path `fd` was opened at, as the kernel keeps it under `/proc/self/fd` (the same from
/// run to run, where the descriptor's number need not be); `None` if it cannot be read.
fn descriptor_path(fd: libc::c_int) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let link = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: a NUL-terminated path and a buffer valid for its length; readlink is no guard.
    let len = unsafe { libc::readlink(link.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let len = usize::try_from(len).ok().filter(|&len| len < buf.len())?;
    Some(std::ffi::OsStr::from_bytes(&buf[..len]).into())
}

/// The calling node's index inside a simulation; `None` outside one, or while the
/// simulator's state is in use (a descriptor closed as a task is dropped), when no node can
/// be asked for.
fn calling_node() -> Option<usize> {
    panic::catch_unwind(crashtest_core::plumbing::current_node)
        .ok()
        .flatten()
        .map(|node| node.index())
}

/// The calling thread's `errno`.
fn errno() -> libc::c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
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
        &fork::symbols()[..],
    ];
    std::hint::black_box(symbols);
}
