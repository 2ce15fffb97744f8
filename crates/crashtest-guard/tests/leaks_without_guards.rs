//! The control group: this test binary never names `crashtest_guard`, so the guards are not
//! linked into it, and every source they cover leaks. It shows that the tests of the guards
//! (`determinism.rs`, `threads.rs`) would fail without them.

#![cfg(all(
    target_os = "linux",
    target_env = "gnu",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "these tests call what the guards would make deterministic"
)]

use std::future::Future;
use std::time::Instant;

use crashtest_core::{Sim, plumbing};
use rand::Rng as _;

/// Runs `body` under `seed` on a fresh thread, as the guarded tests do.
fn fingerprint<Fut: Future<Output = ()> + 'static>(seed: u64, body: fn() -> Fut) -> u64 {
    std::thread::scope(|scope| {
        scope
            .spawn(move || Sim::new(seed).run(body()).unwrap().fingerprint)
            .join()
            .unwrap()
    })
}

fn record(source: &'static str, value: u64) {
    plumbing::notes::record(source, [value, 0, 0], String::new());
}

/// Whether a `dlsym` lookup of `name` (the one std and the getrandom crate make) finds
/// libc's definition rather than one in this executable.
fn lookup_finds_libc(name: &std::ffi::CStr) -> bool {
    // SAFETY: dlopen with RTLD_NOLOAD only returns a handle to the already loaded libc; the
    // names are NUL-terminated.
    unsafe {
        let libc = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!libc.is_null());
        libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) == libc::dlsym(libc, name.as_ptr())
    }
}

#[test]
fn the_guards_are_not_linked_into_this_binary() {
    for name in [
        c"getrandom",
        c"clock_gettime",
        c"pthread_create",
        c"syscall",
        c"socket",
        c"connect",
        c"close",
        c"getaddrinfo",
    ] {
        assert!(lookup_finds_libc(name), "{name:?}");
    }
}

#[test]
fn without_the_guards_std_hashmap_order_differs_between_runs_of_one_seed() {
    let body = || async {
        let map: std::collections::HashMap<u64, ()> = (0..64).map(|k| (k, ())).collect();
        record(
            "hashmap",
            map.keys().fold(0, |h, &k| h.wrapping_mul(31) ^ k),
        );
    };
    assert_ne!(fingerprint(1, body), fingerprint(1, body));
}

#[test]
fn without_the_guards_rand_thread_rng_differs_between_runs_of_one_seed() {
    let body = || async { record("thread_rng", rand::thread_rng().r#gen()) };
    assert_ne!(fingerprint(1, body), fingerprint(1, body));
}

#[test]
fn without_the_guards_instant_now_reads_the_real_clock() {
    // Taken before either run: each run records how much real time has passed since.
    static BEFORE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    BEFORE.get_or_init(Instant::now);
    let body = || async {
        let since = BEFORE.get().unwrap().elapsed();
        record("instant", since.as_nanos() as u64);
    };
    assert_ne!(fingerprint(1, body), fingerprint(1, body));
}

#[test]
fn without_the_guards_a_thread_starts_inside_a_simulation() {
    Sim::new(1)
        .run(async {
            assert_eq!(std::thread::spawn(|| 7).join().unwrap(), 7);
        })
        .unwrap();
}
