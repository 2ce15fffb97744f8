//! Thread creation: `pthread_create`.
//!
//! A simulation runs every task on one OS thread, in an order the seed decides; a second
//! thread would run at the OS scheduler's whim and make the run unreproducible. Inside a
//! simulation, starting a thread fails the run with a message that names the fix, and the
//! call returns EAGAIN, as when the system is out of threads, so that no thread starts:
//! `std::thread::Builder::spawn` returns the error, `std::thread::spawn` panics with it, and a
//! C library sees its usual failure.
//!
//! `pthread_create` rather than `pthread_attr_init` (which std calls first) because every
//! thread, from std or from C, goes through it, and because failing it is an error that std
//! and C code already handle; an attribute call that fails trips an assertion in std.

use std::ffi::{c_int, c_void};

use crashtest_core::plumbing::call_site;
use libc::{pthread_attr_t, pthread_t};

use super::next::Next;

/// Why the run failed, and what to do about it.
const MESSAGE: &str = "an OS thread was started inside the simulation. A simulation \
    runs every task on one thread so that its seed replays it exactly; a thread of its own \
    would run outside that order. Use crashtest::spawn for concurrent work (through \
    crashtest's tokio stand-in, tokio::spawn and tokio::task::spawn_blocking run as simulated \
    tasks too). If a library starts the thread (a thread \
    pool, a multi-threaded runtime, a C library's workers), configure it without threads, or \
    run it outside the simulation.";

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
type PthreadCreateFn =
    unsafe extern "C" fn(*mut pthread_t, *const pthread_attr_t, StartRoutine, *mut c_void) -> c_int;

// SAFETY: the type is the C declaration of glibc's pthread_create.
static REAL_PTHREAD_CREATE: Next<PthreadCreateFn> = unsafe { Next::new(c"pthread_create") };

/// `pthread_create(3)`: inside a simulation, fails the run and returns EAGAIN.
///
/// # Safety
///
/// As for the C function: `thread` is valid for writes, `attr` is null or initialized, and
/// `start` may be called with `arg` on a new thread.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn pthread_create(
    thread: *mut pthread_t,
    attr: *const pthread_attr_t,
    start: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    if super::in_simulation() {
        let message = match started_from() {
            Some(place) => format!("{MESSAGE} The thread was started from {place}."),
            None => MESSAGE.to_owned(),
        };
        super::fail(message);
        return libc::EAGAIN;
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_PTHREAD_CREATE.get()(thread, attr, start, arg) }
}

/// Where the program started the thread: the innermost frame below this guard outside the
/// standard library, as `spawn_new_thread (at .../sled-0.34.7/src/threadpool.rs:110:5)`, so
/// that a user whose dependency starts a thread learns which one; `None` if the stack has no
/// symbols.
///
/// A refused thread fails the run, so this runs once a run at most: the cost of a backtrace
/// (symbols read from the executable, a host file) is paid only on the way to a failure.
fn started_from() -> Option<String> {
    let frames = call_site::frames(&std::backtrace::Backtrace::force_capture());
    call_site::below(&frames, "pthread_create")
        .iter()
        .find(|frame| !frame.is_runtimes())
        .map(ToString::to_string)
}

/// The guard, for [`super::link`].
pub(super) fn symbols() -> [*const (); 1] {
    [pthread_create as *const ()]
}
