//! What a search costs the machine: CPU time and peak memory, as the bug hunts, guided
//! searches and benchmarks report them.
//!
//! CPU time rather than wall time, because other work on a shared machine does not count in
//! it: the process's own threads, live or finished (`CLOCK_PROCESS_CPUTIME_ID`), and, for a
//! search that forks its branches, the child processes it has reaped (`getrusage`). Both are
//! Unix clocks; elsewhere the figures are `None`, never a guess.

use std::time::Duration;

/// CPU time (user and system) this process's threads have used so far, finished threads
/// included: a sweep runs every seed on a thread of its own.
///
/// ```
/// let before = crashtest::runner::usage::process_cpu_time().unwrap();
/// let spent: u64 = (0..100_000u64).map(std::hint::black_box).sum();
/// assert!(spent > 0);
/// assert!(crashtest::runner::usage::process_cpu_time().unwrap() >= before);
/// ```
#[cfg(unix)]
pub fn process_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec, and CLOCK_PROCESS_CPUTIME_ID is a clock
    // every Linux and BSD kernel has.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    if status != 0 {
        return None;
    }
    let nanos = u32::try_from(now.tv_nsec).ok()?;
    assert!(
        nanos < 1_000_000_000,
        "a timespec holds under a second of nanoseconds"
    );
    Some(Duration::new(u64::try_from(now.tv_sec).ok()?, nanos))
}

/// CPU time is measured on Unix only.
#[cfg(not(unix))]
pub fn process_cpu_time() -> Option<Duration> {
    None
}

/// [`process_cpu_time`] plus the CPU time of the child processes this process has reaped (a
/// guided search's forked branches): what a search that forks costs in all.
///
/// ```
/// let own = crashtest::runner::usage::process_cpu_time().unwrap();
/// assert!(crashtest::runner::usage::cpu_time_with_children().unwrap() >= own);
/// ```
#[cfg(unix)]
pub fn cpu_time_with_children() -> Option<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable `rusage`; getrusage fills it and has no other
    // effect, and RUSAGE_CHILDREN is always a valid target.
    let status = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    // SAFETY: getrusage returned 0, so it initialized `usage`.
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| {
        Some(
            Duration::from_secs(u64::try_from(t.tv_sec).ok()?)
                + Duration::from_micros(u64::try_from(t.tv_usec).ok()?),
        )
    };
    Some(process_cpu_time()? + time(usage.ru_utime)? + time(usage.ru_stime)?)
}

/// CPU time is measured on Unix only.
#[cfg(not(unix))]
pub fn cpu_time_with_children() -> Option<Duration> {
    None
}

/// The process's peak resident memory in MiB, from Linux's `/proc/self/status` (`VmHWM`, a
/// high-water mark that never goes down); `None` where there is no such file.
///
/// ```
/// if let Some(peak) = crashtest::runner::usage::peak_rss_mib() {
///     assert!(peak > 0.0);
/// }
/// ```
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
