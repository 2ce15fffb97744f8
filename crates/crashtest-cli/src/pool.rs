//! The sweep's worker pool: threads that each drive one worker process at a time, taking
//! batches of seeds from a shared queue and sending every result to the sweep as it comes.
//!
//! A batch whose worker died is split: the first seed without a result is the one the worker
//! was running (it runs its seeds in order on one thread), so it is recorded as `hung` at
//! once if the worker went silent, or re-run alone to confirm a crash; the seeds after it go
//! back to the front of the queue. A driver waits while the queue is empty but batches are
//! still running, since those may put seeds back.

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

/// Batches waiting to run.
pub(crate) struct Queue {
    state: Mutex<QueueState>,
    changed: Condvar,
}

struct QueueState {
    batches: VecDeque<SeedRange>,
    /// Batches being run: they may put seeds back in the queue.
    running: usize,
}

impl Queue {
    pub(crate) fn new(batches: Vec<SeedRange>) -> Queue {
        Queue {
            state: Mutex::new(QueueState {
                batches: batches.into(),
                running: 0,
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
            let result = self.run_batch(batch, runs);
            let mut state = lock(&self.queue.state);
            state.running -= 1;
            if let Ok(requeue) = &result {
                for seeds in requeue.iter().rev() {
                    state.batches.push_front(*seeds);
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
            if let Some(batch) = state.batches.pop_front() {
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

    /// Runs one batch; returns the seeds to run again.
    fn run_batch(&self, seeds: SeedRange, run: u64) -> anyhow::Result<Vec<SeedRange>> {
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
                    let _ = self.tx.send(Message::Result(line, Box::new(result)));
                }
                _ => {}
            }
        })?;
        let missing: Vec<u64> = (seeds.start..seeds.end)
            .filter(|s| !seen.contains(s))
            .collect();
        let Some(&first) = missing.first() else {
            job.clean_up();
            return Ok(Vec::new());
        };
        if matches!(end, End::Stopped) || self.stop.load(Ordering::Relaxed) {
            job.clean_up();
            return Ok(Vec::new());
        }
        let single = SeedRange {
            start: first,
            end: first + 1,
        };
        let clean = matches!(end, End::Exited(exit) if exit.success());
        let status = match end {
            End::Hung => Some(Status::Hung),
            End::Exited(_) if seeds.len() == 1 || clean => Some(Status::Crashed),
            End::Exited(_) | End::Stopped => None,
        };
        let mut again = Vec::new();
        match status {
            Some(status) => {
                let result = job.lost_seed(self.target, first, &end, status)?;
                let line = serde_json::to_string(&result).expect("a result serializes");
                let _ = self.tx.send(Message::Result(line, Box::new(result)));
            }
            None => again.push(single),
        }
        job.clean_up();
        if first + 1 < seeds.end {
            let finished: Vec<u64> = seen.into_iter().filter(|s| *s > first).collect();
            let after = SeedRange {
                start: first + 1,
                end: seeds.end,
            };
            again.extend(seeds::batches(after, &finished, seeds.len()));
        }
        Ok(again)
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
