//! Outside a simulation the guards pass every call through: real time advances, random bytes
//! are random, threads start. Also on a thread where a simulation ran and ended.

#![cfg(guards)]
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "these tests call the real clock, OS randomness and threads"
)]

use std::hash::BuildHasher as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crashtest_core::Sim;
use rand::Rng as _;

/// Seconds of wall time read straight from the kernel, past every libc symbol.
fn kernel_realtime_secs() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes. `syscall` is guarded too, but passes this call on.
    let got = unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_REALTIME, &mut ts) };
    assert_eq!(got, 0);
    ts.tv_sec
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: the buffer is valid for its length.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), 8, 0) };
    assert_eq!(filled, 8);
    u64::from_le_bytes(bytes)
}

fn after_a_simulation_ended_on_this_thread() {
    crashtest_guard::install();
    Sim::new(1).run(async {}).unwrap();
}

#[test]
fn real_time_advances_outside_a_simulation() {
    after_a_simulation_ended_on_this_thread();
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(5));
    assert!(start.elapsed() >= Duration::from_millis(5));
}

#[test]
fn wall_clocks_read_the_real_time_outside_a_simulation() {
    after_a_simulation_ended_on_this_thread();
    let kernel = kernel_realtime_secs();
    let system = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // SAFETY: a null result pointer is allowed.
    let time = unsafe { libc::time(std::ptr::null_mut()) };
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is valid for writes; a null time zone is allowed.
    let got = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    assert_eq!(got, 0);
    for secs in [system, time, tv.tv_sec] {
        assert!(
            (secs - kernel).abs() <= 2,
            "{secs} vs the kernel's {kernel}"
        );
    }
}

#[test]
fn random_bytes_are_random_outside_a_simulation() {
    after_a_simulation_ended_on_this_thread();
    assert_ne!(random_u64(), random_u64());
    let mut bytes = [[0u8; 16]; 2];
    for b in &mut bytes {
        // SAFETY: the buffer is valid for its length.
        assert_eq!(unsafe { libc::getentropy(b.as_mut_ptr().cast(), 16) }, 0);
    }
    assert_ne!(bytes[0], bytes[1]);
}

#[test]
fn hashmap_keys_and_thread_rng_differ_between_threads_outside_a_simulation() {
    after_a_simulation_ended_on_this_thread();
    let draw = || {
        std::thread::spawn(|| {
            let keys = std::collections::hash_map::RandomState::new().hash_one(42u64);
            (keys, rand::thread_rng().r#gen::<u64>())
        })
        .join()
        .unwrap()
    };
    let (a, b) = (draw(), draw());
    assert_ne!(a.0, b.0);
    assert_ne!(a.1, b.1);
}

#[test]
fn host_files_change_outside_a_simulation() {
    after_a_simulation_ended_on_this_thread();
    let dir = std::env::temp_dir().join(format!("crashtest-guard-outside-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a"), b"written").unwrap();
    std::fs::rename(dir.join("a"), dir.join("b")).unwrap();
    assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"written");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!dir.exists());
}

#[test]
fn threads_start_outside_a_simulation() {
    after_a_simulation_ended_on_this_thread();
    assert_eq!(std::thread::spawn(|| 6 * 7).join().unwrap(), 42);
    let scoped = std::thread::scope(|s| s.spawn(|| "scoped").join().unwrap());
    assert_eq!(scoped, "scoped");
}

/// Reads the clock from its destructor, at thread exit.
struct ReadsTheClockWhenDropped;

impl Drop for ReadsTheClockWhenDropped {
    fn drop(&mut self) {
        assert!(SystemTime::now() > UNIX_EPOCH);
    }
}

thread_local! {
    static READS_THE_CLOCK_WHEN_DROPPED: ReadsTheClockWhenDropped =
        const { ReadsTheClockWhenDropped };
}

#[test]
fn a_clock_read_by_a_thread_local_destructor_after_a_simulation_passes_through() {
    // The destructor is registered before the core's thread-local, so it runs after that one
    // is gone; the guard must answer "no simulation" rather than abort the process.
    crashtest_guard::on_fresh_thread(|| {
        READS_THE_CLOCK_WHEN_DROPPED.with(|_| ());
        Sim::new(1).run(async {}).unwrap();
    });
}
