//! Blocking sleeps: `nanosleep`, `clock_nanosleep`, `usleep` and `sleep`.
//!
//! A simulation runs every node on one OS thread and moves virtual time only between polls.
//! A blocking sleep inside a poll would stop every node for real time while no virtual time
//! passes, so the wait it stands for never happens: the program would pass, slowly, having
//! waited for nothing. Inside a simulation each of these calls fails the run with a message
//! that names the async sleep to use, and returns at once as if it had slept, so that no
//! caller loops on an error (std's `thread::sleep` retries on EINTR and asserts on any
//! other error).
//!
//! All four are guarded because glibc's `usleep` and `sleep` reach the kernel through
//! glibc's internal names, which a guard on `nanosleep` does not see; std's `thread::sleep`
//! calls `nanosleep`.

use std::ffi::{c_int, c_uint};

use libc::{clockid_t, timespec};

use super::next::Next;

/// Why the run failed, and what to do instead, for the guarded `call`.
fn message(call: &str) -> String {
    format!(
        "{call} was called inside the simulation (std::thread::sleep, or a library's blocking \
         sleep). A blocking sleep stops every simulated node for real time while no virtual \
         time passes, so the wait it stands for never happens. Use an async sleep: \
         tokio::time::sleep(..).await through crashtest's tokio stand-in, or \
         crashtest::time::sleep(..).await; in blocking code (a spawn_blocking closure), move \
         the wait to the async code around it."
    )
}

type NanosleepFn = unsafe extern "C" fn(*const timespec, *mut timespec) -> c_int;
type ClockNanosleepFn =
    unsafe extern "C" fn(clockid_t, c_int, *const timespec, *mut timespec) -> c_int;
type UsleepFn = unsafe extern "C" fn(libc::useconds_t) -> c_int;
type SleepFn = unsafe extern "C" fn(c_uint) -> c_uint;

// SAFETY: the types are the C declarations of these glibc functions.
static REAL_NANOSLEEP: Next<NanosleepFn> = unsafe { Next::new(c"nanosleep") };
// SAFETY: as above.
static REAL_CLOCK_NANOSLEEP: Next<ClockNanosleepFn> = unsafe { Next::new(c"clock_nanosleep") };
// SAFETY: as above.
static REAL_USLEEP: Next<UsleepFn> = unsafe { Next::new(c"usleep") };
// SAFETY: as above.
static REAL_SLEEP: Next<SleepFn> = unsafe { Next::new(c"sleep") };

/// Fails the run for `call` if a simulation runs on this thread; true if it did.
fn refused(call: &str) -> bool {
    if !super::in_simulation() {
        return false;
    }
    super::fail(message(call));
    true
}

/// `nanosleep(2)`: inside a simulation, fails the run and returns 0 at once.
///
/// # Safety
///
/// As for the C function: `req` is valid for reads, `rem` is null or valid for writes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int {
    if refused("nanosleep") {
        return 0;
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_NANOSLEEP.get()(req, rem) }
}

/// `clock_nanosleep(2)`: inside a simulation, fails the run and returns 0 at once.
///
/// # Safety
///
/// As for the C function: `req` is valid for reads, `rem` is null or valid for writes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn clock_nanosleep(
    clock: clockid_t,
    flags: c_int,
    req: *const timespec,
    rem: *mut timespec,
) -> c_int {
    if refused("clock_nanosleep") {
        return 0;
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_CLOCK_NANOSLEEP.get()(clock, flags, req, rem) }
}

/// `usleep(3)`: inside a simulation, fails the run and returns 0 at once.
///
/// # Safety
///
/// None beyond the C function's: it takes no pointer.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn usleep(micros: libc::useconds_t) -> c_int {
    if refused("usleep") {
        return 0;
    }
    // SAFETY: the caller's argument, unchanged, to the function this one hides.
    unsafe { REAL_USLEEP.get()(micros) }
}

/// `sleep(3)`: inside a simulation, fails the run and returns 0 (nothing left to sleep).
///
/// # Safety
///
/// None beyond the C function's: it takes no pointer.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn sleep(secs: c_uint) -> c_uint {
    if refused("sleep") {
        return 0;
    }
    // SAFETY: the caller's argument, unchanged, to the function this one hides.
    unsafe { REAL_SLEEP.get()(secs) }
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> [*const (); 4] {
    [
        nanosleep as *const (),
        clock_nanosleep as *const (),
        usleep as *const (),
        sleep as *const (),
    ]
}
