//! The workloads' fixed parameters and their one source of randomness.
//!
//! The sizes and seeds match `bench/src/workloads.rs` (crashtest's own benchmark), so a rate
//! measured here compares with crashtest's rate for the same workload name. Every random
//! choice a workload makes (a sleep's length, a message's destination) comes from a
//! [`WorkloadRng`] keyed by the run's seed and a stream number (the task's or node's index),
//! never from the simulator's generator: each task's draws are then the same on every
//! simulator whatever order its scheduler runs the tasks in, so the logical work is
//! identical, not merely alike in distribution.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One-way latency of every simulated link.
pub const LATENCY: Duration = Duration::from_millis(1);

/// Bytes in every request, reply and fanout message.
pub const MESSAGE_BYTES: usize = 64;

/// The TCP port every benchmark server listens on.
pub const PORT: u16 = 7000;

/// Sequential request/reply round trips in the pingpong workload.
pub const PINGPONG_ROUND_TRIPS: u64 = 200_000;
/// Seed of the pingpong simulation.
pub const PINGPONG_SEED: u64 = 1;

/// Sleeping tasks in the timers workload.
pub const TIMER_TASKS: u64 = 10_000;
/// Sleeps each timers task makes, one after another.
pub const SLEEPS_PER_TASK: u64 = 100;
/// Shortest sleep, in milliseconds.
pub const SLEEP_MIN_MS: u64 = 1;
/// Longest sleep, in milliseconds.
pub const SLEEP_MAX_MS: u64 = 1_000;
/// Seed of the timers simulation.
pub const TIMERS_SEED: u64 = 2;

/// Trivial tasks spawned and joined in the spawn workload.
pub const SPAWN_TASKS: u64 = 1_000_000;
/// Seed of the spawn simulation.
pub const SPAWN_SEED: u64 = 3;

/// Nodes in the fanout workload; each connects to every other one.
pub const FANOUT_NODES: u64 = 10;
/// Messages each fanout node sends, each to a random other node.
pub const FANOUT_MESSAGES_PER_NODE: u64 = 20_000;
/// Seed of the fanout simulation (crashtest's `hour` workload holds seed 4).
pub const FANOUT_SEED: u64 = 5;

/// The jittered fanout's link latency: each message's drawn by the simulator's own seeded
/// generator, uniformly from `LATENCY - LATENCY_JITTER` to `LATENCY + LATENCY_JITTER`.
pub const LATENCY_JITTER: Duration = Duration::from_micros(500);
/// The jittered fanout's pause after each message a node sends. It is at least the span of
/// the jitter (2 x `LATENCY_JITTER`), so on every stream each message is due strictly after
/// the one before it: it is its own delivery in every simulator, never merged into a
/// segment with its neighbours however the latencies fall.
pub const FANOUT_JITTER_GAP: Duration = Duration::from_millis(1);
/// Seed of the jittered fanout simulation.
pub const FANOUT_JITTER_SEED: u64 = 6;

/// Separate simulations in the seeds workload; simulation `i` uses seed `i`.
pub const SEEDS: u64 = 200;
/// Round trips in each of the seeds workload's simulations.
pub const SEED_ROUND_TRIPS: u64 = 1_000;

/// OS threads of one process the seeds-threads workload spreads the seeds workload over.
pub const SWEEP_THREADS: u64 = 2;

/// Runs `simulate(seed)` for every seed of the seeds workload on `threads` OS threads of this
/// process, each thread taking the next seed no other has taken (as a sweep runner hands
/// out seeds), and returns the virtual time of all the simulations together.
pub fn on_threads(threads: u64, simulate: impl Fn(u64) -> Duration + Sync) -> Duration {
    assert!(threads > 0, "at least one thread");
    let next = AtomicU64::new(0);
    let worker = || {
        let mut covered = Duration::ZERO;
        loop {
            let seed = next.fetch_add(1, Ordering::Relaxed);
            if seed >= SEEDS {
                return covered;
            }
            covered += simulate(seed);
        }
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads).map(|_| scope.spawn(worker)).collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a sweep thread panicked"))
            .sum()
    })
}

/// The shortest link latency of the jittered fanout.
pub fn jitter_min() -> Duration {
    LATENCY - LATENCY_JITTER
}

/// The longest link latency of the jittered fanout.
pub fn jitter_max() -> Duration {
    LATENCY + LATENCY_JITTER
}

/// Virtual time no workload comes near; simulators that stop at a time limit get this one.
pub const VIRTUAL_TIME_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// A message: its sequence number in the first eight bytes (little endian), zeros after.
pub fn frame(number: u64) -> [u8; MESSAGE_BYTES] {
    let mut frame = [0; MESSAGE_BYTES];
    frame[..8].copy_from_slice(&number.to_le_bytes());
    frame
}

/// The sequence number a [`frame`] carries.
pub fn frame_number(frame: &[u8; MESSAGE_BYTES]) -> u64 {
    let mut number = [0; 8];
    number.copy_from_slice(&frame[..8]);
    u64::from_le_bytes(number)
}

/// The fanout node that sender `from` picks when its generator draws `pick` in
/// `0..FANOUT_NODES - 1`: every node but itself, equally likely.
pub fn fanout_destination(from: u64, pick: u64) -> u64 {
    assert!(from < FANOUT_NODES && pick < FANOUT_NODES - 1);
    if pick >= from { pick + 1 } else { pick }
}

/// A SplitMix64 generator (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014) keyed by a run's seed and a stream number.
///
/// Each task or node owns one stream, so its draws depend only on `(seed, stream)`. It is a
/// benchmark's generator: fast and well mixed, not meant for anything else.
#[derive(Clone, Debug)]
pub struct WorkloadRng {
    state: u64,
}

const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl WorkloadRng {
    /// The generator of `stream` in the run seeded `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        Self {
            state: mix(seed) ^ mix(stream.wrapping_add(GOLDEN_GAMMA)),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// A draw from `low..=high` (multiply-shift: the bias is below 2^-50 for these spans).
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high);
        let span = u128::from(high - low) + 1;
        low + ((u128::from(self.next_u64()) * span) >> 64) as u64
    }

    /// A sleep of the timers workload: whole milliseconds in `SLEEP_MIN_MS..=SLEEP_MAX_MS`.
    pub fn sleep(&mut self) -> Duration {
        Duration::from_millis(self.range_inclusive(SLEEP_MIN_MS, SLEEP_MAX_MS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_give_the_same_draws_and_others_differ() {
        let draws = |seed, stream| {
            let mut rng = WorkloadRng::new(seed, stream);
            (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draws(2, 7), draws(2, 7));
        assert_ne!(draws(2, 7), draws(2, 8));
        assert_ne!(draws(2, 7), draws(3, 7));
    }

    #[test]
    fn sleeps_stay_within_the_range_and_reach_both_ends() {
        let mut rng = WorkloadRng::new(0, 0);
        let sleeps: Vec<u64> = (0..100_000)
            .map(|_| rng.sleep().as_millis() as u64)
            .collect();
        assert!(
            sleeps
                .iter()
                .all(|&ms| (SLEEP_MIN_MS..=SLEEP_MAX_MS).contains(&ms))
        );
        assert!(sleeps.contains(&SLEEP_MIN_MS) && sleeps.contains(&SLEEP_MAX_MS));
    }

    #[test]
    fn fanout_never_picks_the_sender_and_reaches_every_other_node() {
        for from in 0..FANOUT_NODES {
            let targets: Vec<u64> = (0..FANOUT_NODES - 1)
                .map(|pick| fanout_destination(from, pick))
                .collect();
            assert!(!targets.contains(&from));
            let mut sorted = targets.clone();
            sorted.dedup();
            assert_eq!(sorted.len() as u64, FANOUT_NODES - 1);
        }
    }

    #[test]
    fn on_threads_runs_every_seed_once() {
        let seen = std::sync::Mutex::new(Vec::new());
        let covered = on_threads(3, |seed| {
            seen.lock().unwrap().push(seed);
            Duration::from_millis(1)
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, (0..SEEDS).collect::<Vec<_>>());
        assert_eq!(covered, Duration::from_millis(SEEDS));
    }

    #[test]
    fn the_jittered_fanout_gap_covers_the_jitter_span() {
        assert!(FANOUT_JITTER_GAP >= jitter_max() - jitter_min());
        assert!(jitter_min() > Duration::ZERO);
    }

    #[test]
    fn a_frame_carries_its_number() {
        assert_eq!(frame_number(&frame(123_456_789)), 123_456_789);
    }
}
