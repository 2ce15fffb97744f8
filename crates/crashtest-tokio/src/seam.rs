//! The stand-in's side of the seam: the per-call check, the registered components, refusals.
//!
//! [`sim`] is the one check a call pays outside a simulation (a thread-local read). The
//! network and the disk are registered by the `crashtest` facade; a simulation started
//! without it (through `crashtest_core::Sim` directly) has neither, and a stand-in network or
//! file call there is refused with a message saying so.

use std::io;
use std::mem::MaybeUninit;
use std::task::Poll;

use crashtest_hooks::Simulator;
use crashtest_hooks::fs::Disk;
use crashtest_hooks::net::Network;
use real::io::ReadBuf;

/// The simulation running on this thread, if any.
#[inline]
pub(crate) fn sim() -> Option<&'static dyn Simulator> {
    crashtest_hooks::current()
}

/// The simulation running on this thread with its clock's anchor, in the same one read.
#[inline]
pub(crate) fn running() -> Option<crashtest_hooks::Running> {
    crashtest_hooks::running()
}

/// Fails the running simulation (if any) because `call` cannot be simulated, then panics,
/// which ends the calling task; the run reports the refusal, not the panic. The message
/// ends with where the program made the call (the stand-in's calls pass their caller on).
#[cold]
#[track_caller]
pub(crate) fn refuse(call: &str, instead: &str) -> ! {
    panic!("{}", refused_error(call, instead));
}

/// Fails the running simulation because `call` cannot be simulated, as [`refuse`] does, and
/// returns the refusal as an error instead of panicking: for a call that returns
/// `io::Result`, so that a library that makes it under a lock (quinn's connection driver
/// around `try_io`) carries on to the end of the poll, where the run ends with the refusal,
/// instead of unwinding through its lock, poisoning it, and aborting the process from a
/// destructor that unwraps it.
#[cold]
#[track_caller]
pub(crate) fn refused_error(call: &str, instead: &str) -> io::Error {
    let at = std::panic::Location::caller();
    let message =
        format!("{call} cannot run inside a crashtest simulation: {instead} (called at {at})");
    if let Some(sim) = sim() {
        sim.refuse(message.clone());
    }
    io::Error::new(io::ErrorKind::Unsupported, message)
}

/// The simulated network; refuses `call` if none is registered.
#[track_caller]
pub(crate) fn network(call: &str) -> &'static dyn Network {
    // A `match`, not `unwrap_or_else`: a closure would hide the caller's location.
    match crashtest_hooks::network() {
        Some(network) => network,
        None => refuse(call, UNREGISTERED),
    }
}

/// The simulated disk; refuses `call` if none is registered.
#[track_caller]
pub(crate) fn disk(call: &str) -> &'static dyn Disk {
    match crashtest_hooks::disk() {
        Some(disk) => disk,
        None => refuse(call, UNREGISTERED),
    }
}

const UNREGISTERED: &str = "the simulated network and disk are registered by the `crashtest` \
     crate; run the simulation with #[crashtest::test] or crashtest::Sim (not crashtest_core::Sim)";

/// Reads through the seam into tokio's buffer: `read` writes into the buffer's unfilled part
/// and returns how many bytes it wrote (and what else it reads, such as a sender), which are
/// then marked filled. The seam's readers write only initialized bytes, so no byte is zeroed
/// first.
pub(crate) fn read_into<R>(
    buf: &mut ReadBuf<'_>,
    read: impl FnOnce(&mut [MaybeUninit<u8>]) -> Poll<io::Result<(usize, R)>>,
) -> Poll<io::Result<R>> {
    // SAFETY: the seam's readers only write initialized bytes into the slice (the hooks'
    // contract), so none that was initialized becomes uninitialized.
    let unfilled = unsafe { buf.unfilled_mut() };
    match read(unfilled) {
        Poll::Ready(Ok((n, extra))) => {
            // SAFETY: the reader wrote `n` bytes at the start of the unfilled part.
            unsafe { buf.assume_init(n) };
            buf.advance(n);
            Poll::Ready(Ok(extra))
        }
        Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
        Poll::Pending => Poll::Pending,
    }
}

/// A simulated object was used after its simulation ended (or on another thread).
#[cold]
#[track_caller]
pub(crate) fn outside(what: &str) -> ! {
    panic!("a simulated {what} was used outside the simulation that made it")
}
