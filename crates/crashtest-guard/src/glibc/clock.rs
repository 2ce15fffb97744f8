//! Clocks: `clock_gettime`, `gettimeofday` and `time`.
//!
//! Inside a simulation:
//! - The monotonic clocks (`CLOCK_MONOTONIC`, `_RAW`, `_COARSE`, `CLOCK_BOOTTIME`, `_ALARM`)
//!   read virtual time plus [`MONOTONIC_BASE_NS`], so `std::time::Instant::now()` advances
//!   exactly as `crashtest::time::Instant` does. The base is fixed, not zero, because code
//!   subtracts durations from "now" (a deadline in the past, a window start) and a monotonic
//!   clock read as zero would underflow.
//! - The wall clocks (`CLOCK_REALTIME`, `_COARSE`, `_ALARM`, `CLOCK_TAI`), `gettimeofday` and
//!   `time` read the calling node's simulated wall clock, so `std::time::SystemTime::now()`
//!   equals `crashtest::time::system_time()`, skew and drift included.
//! - The CPU-time clocks (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`, and the ids
//!   from `pthread_getcpuclockid`) and unknown ids go to libc: they measure real work, which
//!   no seed decides; code that branches on them is not deterministic.
//!
//! A null result pointer is EFAULT for `clock_gettime`, as the kernel reports it.

use std::ffi::{c_int, c_void};

use libc::{clockid_t, time_t, timespec, timeval};

use super::next::Next;

/// Where the simulated monotonic clocks start: 1,000,000 s (about eleven and a half days of
/// uptime), far enough from zero for any subtraction a program makes from "now".
const MONOTONIC_BASE_NS: i128 = 1_000_000 * NANOS_PER_SEC;

/// TAI is ahead of UTC by 37 s since 2017-01-01 (IERS Bulletin C); CLOCK_TAI reads the wall
/// clock plus this.
const TAI_AHEAD_OF_UTC_NS: i128 = 37 * NANOS_PER_SEC;

const NANOS_PER_SEC: i128 = 1_000_000_000;

type ClockGettimeFn = unsafe extern "C" fn(clockid_t, *mut timespec) -> c_int;
type GettimeofdayFn = unsafe extern "C" fn(*mut timeval, *mut c_void) -> c_int;
type TimeFn = unsafe extern "C" fn(*mut time_t) -> time_t;

// SAFETY: the types are the C declarations of these glibc functions.
static REAL_CLOCK_GETTIME: Next<ClockGettimeFn> = unsafe { Next::new(c"clock_gettime") };
// SAFETY: as above.
static REAL_GETTIMEOFDAY: Next<GettimeofdayFn> = unsafe { Next::new(c"gettimeofday") };
// SAFETY: as above.
static REAL_TIME: Next<TimeFn> = unsafe { Next::new(c"time") };

/// What a clock id reads inside a simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Virtual time since the run began, plus [`MONOTONIC_BASE_NS`].
    Monotonic,
    /// The calling node's wall clock, plus an offset.
    Wall { offset_ns: i128 },
    /// The real clock (CPU time, unknown ids).
    Real,
}

fn source_of(clock: clockid_t) -> Source {
    match clock {
        libc::CLOCK_MONOTONIC
        | libc::CLOCK_MONOTONIC_RAW
        | libc::CLOCK_MONOTONIC_COARSE
        | libc::CLOCK_BOOTTIME
        | libc::CLOCK_BOOTTIME_ALARM => Source::Monotonic,
        libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE | libc::CLOCK_REALTIME_ALARM => {
            Source::Wall { offset_ns: 0 }
        }
        libc::CLOCK_TAI => Source::Wall {
            offset_ns: TAI_AHEAD_OF_UTC_NS,
        },
        _ => Source::Real,
    }
}

/// The simulated reading of `source` in nanoseconds. Call only inside a simulation.
fn simulated_ns(source: Source) -> i128 {
    let sim = "simulated clocks are read only inside a simulation";
    match source {
        Source::Monotonic => {
            let now = crashtest_core::plumbing::timers::now_ns().expect(sim);
            MONOTONIC_BASE_NS + i128::from(now)
        }
        Source::Wall { offset_ns } => {
            let wall = crashtest_core::plumbing::timers::wall_clock_ns().expect(sim);
            i128::from(wall) + offset_ns
        }
        Source::Real => unreachable!("a real clock has no simulated reading"),
    }
}

/// Whole seconds (rounded down, as the kernel does before the epoch) and the nanoseconds past.
fn split(ns: i128) -> (time_t, i64) {
    let secs = time_t::try_from(ns.div_euclid(NANOS_PER_SEC)).expect("the clock fits a time_t");
    let nanos = ns.rem_euclid(NANOS_PER_SEC) as i64;
    (secs, nanos)
}

/// The node's wall clock as seconds and nanoseconds, or `None` with the run failed.
fn wall_clock(call: &str) -> Option<(time_t, i64)> {
    super::answer(call, || split(simulated_ns(Source::Wall { offset_ns: 0 })))
}

/// `clock_gettime(2)`: virtual time for the monotonic clocks and the node's wall clock for
/// the wall clocks, inside a simulation.
///
/// # Safety
///
/// As for the C function: `ts` is null or valid for writing a `timespec`.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn clock_gettime(clock: clockid_t, ts: *mut timespec) -> c_int {
    let source = source_of(clock);
    if source == Source::Real || !super::in_simulation() {
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        return unsafe { REAL_CLOCK_GETTIME.get()(clock, ts) };
    }
    if ts.is_null() {
        super::set_errno(libc::EFAULT);
        return -1;
    }
    match super::answer("clock_gettime", || split(simulated_ns(source))) {
        Some((tv_sec, tv_nsec)) => {
            // SAFETY: `ts` is non-null and the caller passes it valid for writes.
            unsafe { ts.write(timespec { tv_sec, tv_nsec }) };
            0
        }
        None => {
            super::set_errno(libc::EINVAL);
            -1
        }
    }
}

/// `gettimeofday(2)`: the node's wall clock inside a simulation; a time zone asked for is
/// UTC (both fields zero, as Linux keeps it unless told otherwise).
///
/// # Safety
///
/// As for the C function: `tv` is null or valid for writing a `timeval`, `tz` is null or
/// valid for writing a `struct timezone`.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    if !super::in_simulation() {
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        return unsafe { REAL_GETTIMEOFDAY.get()(tv, tz) };
    }
    let Some((tv_sec, nanos)) = wall_clock("gettimeofday") else {
        super::set_errno(libc::EINVAL);
        return -1;
    };
    if !tv.is_null() {
        let tv_usec = nanos / 1_000;
        // SAFETY: `tv` is non-null and the caller passes it valid for writes.
        unsafe { tv.write(timeval { tv_sec, tv_usec }) };
    }
    if !tz.is_null() {
        // SAFETY: `struct timezone` is two ints (minutes west of UTC, DST kind), and the
        // caller passes `tz` valid for writing one.
        unsafe { tz.cast::<[c_int; 2]>().write([0, 0]) };
    }
    0
}

/// `time(2)`: the node's wall clock in whole seconds inside a simulation.
///
/// # Safety
///
/// As for the C function: `tloc` is null or valid for writing a `time_t`.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn time(tloc: *mut time_t) -> time_t {
    if !super::in_simulation() {
        // SAFETY: the caller's argument, unchanged, to the function this one hides.
        return unsafe { REAL_TIME.get()(tloc) };
    }
    let Some((secs, _)) = wall_clock("time") else {
        super::set_errno(libc::EINVAL);
        return -1;
    };
    if !tloc.is_null() {
        // SAFETY: `tloc` is non-null and the caller passes it valid for writes.
        unsafe { tloc.write(secs) };
    }
    secs
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> [*const (); 3] {
    [
        clock_gettime as *const (),
        gettimeofday as *const (),
        time as *const (),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clocks_are_virtual_and_wall_clocks_are_the_nodes() {
        for clock in [
            libc::CLOCK_MONOTONIC,
            libc::CLOCK_MONOTONIC_RAW,
            libc::CLOCK_MONOTONIC_COARSE,
            libc::CLOCK_BOOTTIME,
        ] {
            assert_eq!(source_of(clock), Source::Monotonic, "clock {clock}");
        }
        for clock in [libc::CLOCK_REALTIME, libc::CLOCK_REALTIME_COARSE] {
            assert_eq!(source_of(clock), Source::Wall { offset_ns: 0 });
        }
        assert_eq!(
            source_of(libc::CLOCK_TAI),
            Source::Wall {
                offset_ns: 37_000_000_000
            }
        );
    }

    #[test]
    fn cpu_time_clocks_stay_real() {
        assert_eq!(source_of(libc::CLOCK_PROCESS_CPUTIME_ID), Source::Real);
        assert_eq!(source_of(libc::CLOCK_THREAD_CPUTIME_ID), Source::Real);
        // pthread_getcpuclockid hands out negative ids.
        assert_eq!(source_of(-6), Source::Real);
    }

    #[test]
    fn split_rounds_down_before_the_epoch() {
        assert_eq!(split(1_500_000_000), (1, 500_000_000));
        assert_eq!(split(-1), (-1, 999_999_999));
        assert_eq!(split(0), (0, 0));
    }
}
