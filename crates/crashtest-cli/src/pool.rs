//! The sweep's worker pool: threads that each drive one worker process at a time, taking
//! batches of seeds from a shared queue and sending every result to the sweep as it comes.
//!
//! A batch whose worker died is split: the first seed without a result is the one the worker
//! was running (it runs its seeds in order on one thread), so it is recorded as `hung` at
//! once if the worker went silent, or re-run alone to confirm a crash; the seeds after it go
//! back to the front of the queue. A driver waits while the queue is empty but batches are
//! still running, since those may put seeds back.
//!
//! Batches are cut from the queue's ranges as drivers take them, at a size learned from the
//! seeds' measured wall time ([`Sizing`]) unless `--batch` fixed it: fast seeds get long
//! batches, so that starting a process costs little beside them, and slow ones short batches,
//! so that the workers still finish together.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::results::SeedResult;
use crate::seeds::{self, SeedRange};
use crate::target::Target;
use crate::worker::{End, Job};
use crashtest_protocol::Status;

/// What drivers tell the sweep.
pub(crate) enum Message {
    Result(String, Box<SeedResult>),
    Error(anyhow::Error),
}

/// A batch's wall time aimed at when sizing from measurements: long beside a process's start,
/// short beside a sweep.
const BATCH_TIME: Duration = Duration::from_secs(4);
/// Batches at most this many seeds, however fast they are.
pub(crate) const MAX_BATCH: u64 = 1000;
/// A batch grows at most this many times over from one measurement to the next: the first
/// batches of a process pay its start, and one fast batch is not the rule yet.
const GROWTH: u64 = 4;

/// How many seeds the next batch takes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizing {
    /// The current size.
    size: u64,
    /// Whether the size was given (`--batch`) and is not learned.
    fixed: bool,
    /// Workers sharing the queue: a batch takes at most its share of the seeds left.
    jobs: u64,
}

impl Sizing {
    /// A size fixed by the user.
    pub(crate) fn fixed(size: u64) -> Sizing {
        Sizing {
            size,
            fixed: true,
            jobs: 1,
        }
    }

    /// A learned size, starting at about eight batches per worker.
    pub(crate) fn learned(seeds: u64, jobs: u64) -> Sizing {
        Sizing {
            size: (seeds / (jobs * 8)).clamp(1, MAX_BATCH),
            fixed: false,
            jobs,
        }
    }

    /// Takes in that a batch finished `seeds` seeds in `took` of wall time (its process's
    /// start included).
    fn observe(&mut self, seeds: u64, took: Duration) {
        if self.fixed || seeds == 0 {
            return;
        }
        let per_seed = took.as_secs_f64() / seeds as f64;
        let wanted = (BATCH_TIME.as_secs_f64() / per_seed.max(1e-9)) as u64;
        self.size = wanted.clamp(1, self.size.saturating_mul(GROWTH).min(MAX_BATCH));
    }

    /// The size of the next batch when `left` seeds wait in the queue.
    fn next(&self, left: u64) -> u64 {
        if self.fixed {
            return self.size;
        }
        self.size.min(left.div_ceil(self.jobs)).max(1)
    }
}

/// Seeds waiting to run, as contiguous ranges cut into batches when taken.
pub(crate) struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

struct QueueState {
    ranges: VecDeque<SeedRange>,
    /// Batches being run: they may put seeds back in the queue.
    running: usize,
    sizing: Sizing,
}

impl Queue {
    pub(crate) fn new(ranges: Vec<SeedRange>, sizing: Sizing) -> Queue {
        Queue {
            state: Mutex::new(QueueState {
                ranges: ranges.into(),
                running: 0,
                sizing,
            }),
            changed: Condvar::new(),
        }
    }

    /// Wakes drivers waiting for a batch (to see that the sweep stops).
    pub(crate) fn wake_all(&self) {
        self.changed.notify_all();
    }
}

/// One worker slot: takes batches from the queue and runs them until none are left.
pub(crate) struct Driver<'a> {
    pub(crate) target: &'a Target,
    pub(crate) queue: &'a Queue,
    /// Set to stop every driver (and kill their workers).
    pub(crate) stop: &'a AtomicBool,
    /// Whether a failing seed stops the sweep: set `stop` as soon as one is seen, before
    /// this driver can start another batch.
    pub(crate) stop_on_failure: bool,
    pub(crate) tx: Sender<Message>,
    /// Where the workers' files go.
    pub(crate) dir: &'a Path,
    /// This driver's number, for file names.
    pub(crate) worker: u64,
    pub(crate) silence: Duration,
    /// Protocol variables every worker gets.
    pub(crate) env: &'a [(&'static str, String)],
}

impl Driver<'_> {
    /// Runs batches until the queue is empty or the sweep stops; an error is sent to the
    /// sweep and stops every driver.
    pub(crate) fn run(&self) {
        if let Err(error) = self.drive() {
            let _ = self.tx.send(Message::Error(error));
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn drive(&self) -> anyhow::Result<()> {
        let mut runs = 0u64;
        while let Some(batch) = self.next_batch() {
            runs += 1;
            let started = crate::worker::now();
            let result = self.run_batch(batch, runs);
            let mut state = lock(&self.queue.state);
            state.running -= 1;
            if let Ok((requeue, finished)) = &result {
                state.sizing.observe(*finished, started.elapsed());
                for seeds in requeue.iter().rev() {
                    state.ranges.push_front(*seeds);
                }
            }
            drop(state);
            self.queue.changed.notify_all();
            result?;
        }
        Ok(())
    }

    /// The next batch, waiting while other batches run (they may put seeds back).
    fn next_batch(&self) -> Option<SeedRange> {
        let mut state = lock(&self.queue.state);
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(range) = state.ranges.pop_front() {
                let left: u64 = range.len() + state.ranges.iter().map(|r| r.len()).sum::<u64>();
                let size = state.sizing.next(left).min(range.len());
                let batch = SeedRange {
                    start: range.start,
                    last: range.start + (size - 1),
                };
                if batch.last < range.last {
                    state.ranges.push_front(SeedRange {
                        start: batch.last + 1,
                        last: range.last,
                    });
                }
                state.running += 1;
                return Some(batch);
            }
            if state.running == 0 {
                return None;
            }
            state = self
                .queue
                .changed
                .wait_timeout(state, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Runs one batch; returns the seeds to run again, and how many finished.
    fn run_batch(&self, seeds: SeedRange, run: u64) -> anyhow::Result<(Vec<SeedRange>, u64)> {
        let job = Job {
            seeds,
            env: self.env.to_vec(),
            results: self.dir.join(format!(
                "{}-{}-{run}.jsonl",
                std::process::id(),
                self.worker
            )),
            silence: self.silence,
        };
        let mut seen = BTreeSet::new();
        let end = job.run(self.target, self.stop, |line| {
            match serde_json::from_str::<SeedResult>(&line) {
                Ok(result) if seeds.contains(result.seed) && result.test == self.target.test => {
                    seen.insert(result.seed);
                    if self.stop_on_failure && !result.passed() {
                        self.stop.store(true, Ordering::Relaxed);
                    }
                    let _ = self.tx.send(Message::Result(line, Box::new(result)));
                }
                _ => {}
            }
        })?;
        let missing: Vec<u64> = (seeds.start..=seeds.last)
            .filter(|s| !seen.contains(s))
            .collect();
        let seen_count = seen.len() as u64;
        let Some(&first) = missing.first() else {
            job.clean_up();
            return Ok((Vec::new(), seen_count));
        };
        if matches!(end, End::Stopped) || self.stop.load(Ordering::Relaxed) {
            job.clean_up();
            return Ok((Vec::new(), seen_count));
        }
        let single = SeedRange::single(first);
        let clean = matches!(end, End::Exited(exit) if exit.success());
        let status = match end {
            End::Hung => Some(Status::Hung),
            End::Exited(_) if seeds.len() == 1 || clean => Some(Status::Crashed),
            End::Exited(_) | End::Stopped => None,
        };
        let mut again = Vec::new();
        match status {
            Some(status) => {
                let result = job.lost_seed(self.target, first, &end, status);
                let line = serde_json::to_string(&result).expect("a result serializes");
                let _ = self.tx.send(Message::Result(line, Box::new(result)));
            }
            None => again.push(single),
        }
        job.clean_up();
        if first < seeds.last {
            let finished: Vec<u64> = seen.into_iter().filter(|s| *s > first).collect();
            let after = SeedRange {
                start: first + 1,
                last: seeds.last,
            };
            again.extend(seeds::batches(after, &finished, seeds.len()));
        }
        Ok((again, seen_count))
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_seeds_grow_batches_and_slow_seeds_shrink_them() {
        let mut sizing = Sizing::learned(1500, 2);
        assert_eq!(sizing.next(1500), 93);
        // 93 seeds in 0.1 s: about 3,700 would take the batch time; growth is capped.
        sizing.observe(93, Duration::from_millis(100));
        assert_eq!(sizing.next(1500), 372);
        sizing.observe(372, Duration::from_millis(200));
        assert_eq!(sizing.next(4000), MAX_BATCH);
        // Never more than a worker's share of what is left, so that workers end together.
        assert_eq!(sizing.next(600), 300);
        sizing.observe(10, Duration::from_secs(20));
        assert_eq!(sizing.next(1500), 2);
        let mut fixed = Sizing::fixed(750);
        fixed.observe(1, Duration::from_secs(100));
        assert_eq!(fixed.next(10), 750);
    }
}
