//! Inside a simulation, OS randomness and clocks come from the seed: the same seed gives the
//! same fingerprint, in this process and in another, and different seeds differ. Each leak
//! source (std's `HashMap`, `rand` 0.8, getrandom 0.3, libc's own calls, `Instant`,
//! `SystemTime`) is tested on its own, so the crate docs say truthfully what is covered.

#![cfg(guards)]
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "these tests call what the guards make deterministic"
)]

use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crashtest_core::trace::EventKind;
use crashtest_core::{Config, Sim, node, plumbing, time};
use rand::{Rng as _, RngCore as _};

/// Runs `body` under `seed` on a fresh thread (so std's and rand's per-thread seeds are drawn
/// inside the simulation) and returns the fingerprint.
fn fingerprint<Fut: Future<Output = ()> + 'static>(seed: u64, body: fn() -> Fut) -> u64 {
    crashtest_guard::on_fresh_thread(move || Sim::new(seed).run(body()).unwrap().fingerprint)
}

/// Like [`fingerprint`], with the values the run recorded. The fingerprint alone cannot tell
/// seeds apart by what they observed: it folds in the seed itself.
fn observe<Fut: Future<Output = ()> + 'static>(seed: u64, body: fn() -> Fut) -> (u64, Vec<u64>) {
    crashtest_guard::on_fresh_thread(move || {
        let config = Config::default().record_trace(true);
        let summary = Sim::with_config(seed, config).run(body()).unwrap();
        let events = summary.trace.unwrap();
        let values = events
            .into_iter()
            .filter_map(|event| match event.kind {
                EventKind::Note { words, .. } => Some(words),
                _ => None,
            })
            .flatten()
            .collect();
        (summary.fingerprint, values)
    })
}

/// Asserts that `body` observes the same values (and gives the same fingerprint) on every
/// run of a seed, and different values under different seeds.
fn assert_follows_the_seed<Fut: Future<Output = ()> + 'static>(body: fn() -> Fut) {
    for seed in 0..3 {
        assert_eq!(observe(seed, body), observe(seed, body), "seed {seed}");
    }
    let observed: BTreeSet<Vec<u64>> = (0..6).map(|seed| observe(seed, body).1).collect();
    assert_eq!(
        observed.len(),
        6,
        "different seeds observed the same values"
    );
}

fn record(source: &'static str, value: u64) {
    plumbing::notes::record(source, [value, 0, 0], String::new());
}

fn hashmap_order() -> u64 {
    let map: std::collections::HashMap<u64, ()> = (0..64).map(|k| (k, ())).collect();
    map.keys()
        .fold(0, |h, &k| h.wrapping_mul(0x100_0000_01b3) ^ k)
}

#[test]
fn std_hashmap_iteration_order_follows_the_seed() {
    assert_follows_the_seed(|| async { record("hashmap", hashmap_order()) });
}

#[test]
fn rand_thread_rng_follows_the_seed() {
    assert_follows_the_seed(|| async {
        let mut rng = rand::thread_rng();
        record("thread_rng", rng.r#gen());
        record("thread_rng", rng.gen_range(0..1_000_000));
    });
}

#[test]
fn rand_os_rng_follows_the_seed() {
    assert_follows_the_seed(|| async { record("os_rng", rand::rngs::OsRng.next_u64()) });
}

#[test]
fn getrandom_03_follows_the_seed() {
    assert_follows_the_seed(|| async {
        let mut bytes = [0; 8];
        getrandom_03::fill(&mut bytes).unwrap();
        record("getrandom 0.3", u64::from_le_bytes(bytes));
    });
}

#[test]
fn libc_getrandom_and_getentropy_follow_the_seed() {
    assert_follows_the_seed(|| async {
        let mut bytes = [0u8; 8];
        // SAFETY: the buffer is valid for its length.
        let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
        assert_eq!(filled, 8);
        record("getrandom", u64::from_le_bytes(bytes));
        // SAFETY: as above.
        let got = unsafe { libc::getentropy(bytes.as_mut_ptr().cast(), bytes.len()) };
        assert_eq!(got, 0);
        record("getentropy", u64::from_le_bytes(bytes));
    });
}

/// What `rand`'s `thread_rng` draws first and the order of a map, with the map made first.
async fn map_then_rand() {
    let order = hashmap_order();
    record("thread_rng", rand::thread_rng().r#gen());
    record("hashmap", order);
}

/// The same, with the generator seeded first.
async fn rand_then_map() {
    record("thread_rng", rand::thread_rng().r#gen());
    record("hashmap", hashmap_order());
}

#[test]
fn making_a_map_first_shifts_neither_rands_seed_nor_the_maps_order() {
    for seed in 0..3 {
        assert_eq!(
            observe(seed, map_then_rand).1,
            observe(seed, rand_then_map).1
        );
    }
}

/// The first eight bytes seed 2 gives a `getrandom` with `flags`, through libc's function or,
/// with `raw`, through `syscall(SYS_getrandom, ...)` (as std calls it when it finds no libc
/// function).
fn first_bytes(flags: libc::c_uint, raw: bool) -> u64 {
    crashtest_guard::on_fresh_thread(move || {
        let out = std::rc::Rc::new(std::cell::Cell::new(0));
        let got = out.clone();
        Sim::new(2)
            .run(async move {
                let mut bytes = [0u8; 8];
                let filled = if raw {
                    // SAFETY: the buffer is valid for its length.
                    unsafe {
                        libc::syscall(libc::SYS_getrandom, bytes.as_mut_ptr(), bytes.len(), flags)
                            as isize
                    }
                } else {
                    // SAFETY: as above.
                    unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), flags) }
                };
                assert_eq!(filled, 8);
                got.set(u64::from_le_bytes(bytes));
            })
            .unwrap();
        out.get()
    })
}

#[test]
fn map_key_requests_draw_from_their_own_stream_through_either_entry() {
    let insecure = first_bytes(libc::GRND_INSECURE, false);
    assert_eq!(first_bytes(libc::GRND_INSECURE, true), insecure);
    assert_eq!(first_bytes(0, true), first_bytes(0, false));
    assert_ne!(
        first_bytes(0, false),
        insecure,
        "the map keys' stream is not os-random"
    );
}

#[test]
fn getentropy_refuses_more_than_256_bytes_as_libc_does() {
    crashtest_guard::on_fresh_thread(|| {
        Sim::new(1)
            .run(async {
                let mut bytes = [0u8; 257];
                // SAFETY: the buffer is valid for its length.
                let result = unsafe { libc::getentropy(bytes.as_mut_ptr().cast(), bytes.len()) };
                assert_eq!(result, -1);
                assert_eq!(
                    std::io::Error::last_os_error().raw_os_error(),
                    Some(libc::EIO)
                );
            })
            .unwrap();
    });
}

#[test]
fn instant_now_is_virtual_time_from_a_fixed_base() {
    crashtest_guard::on_fresh_thread(|| {
        Sim::new(1)
            .run(async {
                let start = Instant::now();
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: `ts` is valid for writes.
                let got = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
                assert_eq!(got, 0);
                assert_eq!((ts.tv_sec, ts.tv_nsec), (1_000_000, 0));
                time::sleep(Duration::from_millis(1500)).await;
                assert_eq!(start.elapsed(), Duration::from_millis(1500));
                assert_eq!(
                    Instant::now() - start,
                    Duration::from_nanos(time::Instant::now().as_nanos_since_start())
                );
            })
            .unwrap();
    });
}

#[test]
fn system_time_now_is_the_calling_nodes_wall_clock() {
    crashtest_guard::on_fresh_thread(|| {
        Sim::new(1)
            .run(async {
                assert_eq!(SystemTime::now(), time::system_time());
                let supervisor_start = SystemTime::now();
                let checked = std::rc::Rc::new(std::cell::Cell::new(false));
                let done = checked.clone();
                node::Builder::new("skewed")
                    .clock_offset_ns(-3_000_000_000)
                    .build(move || {
                        let done = done.clone();
                        async move {
                            time::sleep(Duration::from_secs(2)).await;
                            assert_eq!(SystemTime::now(), time::system_time());
                            let secs = time::system_time().duration_since(UNIX_EPOCH).unwrap();
                            let mut tv = libc::timeval {
                                tv_sec: 0,
                                tv_usec: 0,
                            };
                            // SAFETY: `tv` is valid for writes; a null time zone is allowed.
                            let got = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
                            assert_eq!(got, 0);
                            assert_eq!(tv.tv_sec as u64, secs.as_secs());
                            assert_eq!(tv.tv_usec as u32, secs.subsec_micros());
                            // SAFETY: a null result pointer is allowed.
                            let time = unsafe { libc::time(std::ptr::null_mut()) };
                            assert_eq!(time as u64, secs.as_secs());
                            // Two seconds later, three seconds behind the supervisor's clock.
                            assert_eq!(
                                SystemTime::now() + Duration::from_secs(1),
                                supervisor_start
                            );
                            done.set(true);
                        }
                    });
                time::sleep(Duration::from_secs(3)).await;
                assert!(checked.get(), "the node checked its clock");
            })
            .unwrap();
    });
}

#[test]
fn cpu_time_clocks_stay_real_inside_a_simulation() {
    crashtest_guard::on_fresh_thread(|| {
        Sim::new(1)
            .run(async {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: `ts` is valid for writes.
                let got = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
                assert_eq!(got, 0);
                assert!(
                    ts.tv_sec > 0 || ts.tv_nsec > 0,
                    "the thread has used CPU time"
                );
            })
            .unwrap();
    });
}

/// A program that leans on every guarded source at once.
async fn uses_hashmap_rand_and_clocks() {
    let start = Instant::now();
    let keeper = node::create("keeper", || async {
        let mut rng = rand::thread_rng();
        loop {
            time::sleep(Duration::from_millis(rng.gen_range(1..100))).await;
            record("keeper hashmap", hashmap_order());
        }
    });
    for round in 0..5 {
        let pause = rand::thread_rng().gen_range(10..500);
        time::sleep(Duration::from_millis(pause)).await;
        let nanos = Instant::now().duration_since(start).as_nanos() as u64;
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        plumbing::notes::record("round", [round, nanos, wall], String::new());
    }
    keeper.kill();
}

#[test]
fn a_program_using_hashmap_rand_and_clocks_gives_the_same_fingerprint_for_the_same_seed() {
    assert_follows_the_seed(uses_hashmap_rand_and_clocks);
}

/// Set in the child processes of the cross-process test.
const CHILD_SEEDS: &str = "CRASHTEST_GUARD_CHILD_SEEDS";

#[test]
#[ignore = "run in child processes by the_same_seed_gives_the_same_fingerprint_in_another_process"]
fn print_fingerprints_for_a_parent_process() {
    let seeds = std::env::var(CHILD_SEEDS).expect("run by the cross-process test");
    for seed in seeds.split(',').map(|s| s.parse::<u64>().unwrap()) {
        println!(
            "fingerprint {seed} {}",
            fingerprint(seed, uses_hashmap_rand_and_clocks)
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_fingerprint_in_another_process() {
    let seeds = [3u64, 4, 5];
    let child = || {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "print_fingerprints_for_a_parent_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_SEEDS, "3,4,5")
            .output()
            .unwrap();
        assert!(output.status.success(), "child failed: {output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let prints: Vec<(u64, u64)> = stdout
            .lines()
            // libtest prints the test's name on the line the first fingerprint continues.
            .filter_map(|line| line.split_once("fingerprint ").map(|(_, rest)| rest))
            .map(|rest| {
                let (seed, print) = rest.split_once(' ').unwrap();
                (seed.parse().unwrap(), print.parse().unwrap())
            })
            .collect();
        assert_eq!(prints.len(), seeds.len(), "child printed {stdout}");
        prints
    };
    let here: Vec<(u64, u64)> = seeds
        .iter()
        .map(|&seed| (seed, fingerprint(seed, uses_hashmap_rand_and_clocks)))
        .collect();
    assert_eq!(child(), here);
    assert_eq!(child(), here);
}
