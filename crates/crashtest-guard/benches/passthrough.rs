//! What the guards cost code outside a simulation, printed as one JSON line.
//!
//! Three ways to read the monotonic clock, timed in interleaved rounds in a rotating order:
//! - `guarded`: `clock_gettime` as the program calls it, which is the guard when the guards
//!   are linked (a thread-local read, then libc's function);
//! - `libc`: libc's `clock_gettime` called directly, which is what every call costs in a
//!   build without the guards;
//! - `instant`: `Instant::now()` then `elapsed()`, two clock reads as programs make them.
//!
//! ```sh
//! cargo bench -p crashtest-guard --bench passthrough                        # guards linked
//! cargo bench -p crashtest-guard --bench passthrough --no-default-features  # none
//! ```
//!
//! In the second build `guards_linked` is false and `guarded` is libc's function: that is a
//! production build with the `crashtest` facade's `guards` feature off.

#![allow(
    clippy::disallowed_methods,
    reason = "a benchmark of the real clock, outside any simulation"
)]

/// The guards and this benchmark exist on Linux with glibc only.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod linux {
    use std::hint::black_box;
    use std::time::Instant;

    /// Timed rounds; each times every way once.
    const ROUNDS: usize = 15;
    /// Clock reads per way per round.
    const CALLS: u32 = 2_000_000;

    type ClockGettimeFn = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;

    /// The `clock_gettime` the program's calls reach, and libc's own.
    fn clock_functions() -> (ClockGettimeFn, ClockGettimeFn) {
        let lookup = |handle| {
            // SAFETY: the name is NUL-terminated; RTLD_DEFAULT and RTLD_NEXT are valid handles.
            let address = unsafe { libc::dlsym(handle, c"clock_gettime".as_ptr()) };
            assert!(!address.is_null(), "clock_gettime is defined");
            // SAFETY: the symbol is a function with clock_gettime's C signature.
            unsafe { std::mem::transmute::<*mut libc::c_void, ClockGettimeFn>(address) }
        };
        // From the executable, RTLD_NEXT skips the executable's own definitions: libc's.
        (lookup(libc::RTLD_DEFAULT), lookup(libc::RTLD_NEXT))
    }

    /// Nanoseconds per read through `read`.
    fn time_reads(read: ClockGettimeFn) -> f64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let start = Instant::now();
        for _ in 0..CALLS {
            // SAFETY: `ts` is valid for writes.
            unsafe { black_box(read)(libc::CLOCK_MONOTONIC, black_box(&mut ts)) };
        }
        start.elapsed().as_nanos() as f64 / f64::from(CALLS)
    }

    /// Nanoseconds per `Instant::now()` + `elapsed()`.
    fn time_instants() -> f64 {
        let start = Instant::now();
        for _ in 0..CALLS {
            black_box(black_box(Instant::now()).elapsed());
        }
        start.elapsed().as_nanos() as f64 / f64::from(CALLS)
    }

    /// `{"median":..,"min":..,"max":..}` of `values`.
    fn summary(values: &mut [f64]) -> String {
        values.sort_by(f64::total_cmp);
        format!(
            "{{\"median\":{:.2},\"min\":{:.2},\"max\":{:.2}}}",
            values[values.len() / 2],
            values[0],
            values[values.len() - 1]
        )
    }

    pub(super) fn main() {
        crashtest_guard::install();
        let (guarded, libc_own) = clock_functions();
        let guards_linked = guarded as usize != libc_own as usize;
        // Warm up: the first call through a guard looks libc's function up.
        time_reads(guarded);
        time_reads(libc_own);
        let (mut through, mut direct, mut instants, mut ratios) = (vec![], vec![], vec![], vec![]);
        for round in 0..ROUNDS {
            let (mut g, mut l) = (0.0, 0.0);
            for way in (0..3).map(|i| (i + round) % 3) {
                match way {
                    0 => g = time_reads(guarded),
                    1 => l = time_reads(libc_own),
                    _ => instants.push(time_instants()),
                }
            }
            through.push(g);
            direct.push(l);
            ratios.push(g / l);
        }
        println!(
            "{{\"bench\":\"passthrough\",\"guards_linked\":{guards_linked},\"rounds\":{ROUNDS},\
             \"calls_per_round\":{CALLS},\"clock_gettime_guarded_ns\":{},\
             \"clock_gettime_libc_ns\":{},\"instant_now_elapsed_ns\":{},\"guarded_over_libc\":{}}}",
            summary(&mut through),
            summary(&mut direct),
            summary(&mut instants),
            summary(&mut ratios)
        );
    }
}

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    linux::main();
}
