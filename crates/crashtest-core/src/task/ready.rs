//! The ready queue: the tasks that may be polled next, and the scheduler's pick among them.
//!
//! The scheduler picks uniformly at random among the *oldest `window`* ready tasks. While no
//! more than `window` tasks are ready (nearly always, in a cluster simulation) that is a
//! uniform pick among all of them; the window only matters when a program readies thousands
//! of tasks at once, and there it buys two things:
//! - **No starvation by newer tasks.** The window always holds the oldest ready tasks, so a
//!   task reaches it once fewer than `window` older ones remain, and from then on each pick
//!   takes it with probability at least `1/window`, however many tasks are readied after it.
//! - **Locality.** Tasks readied together (spawned in a loop, woken by one event) sit next to
//!   each other in the task table, so polling them in a shuffled window touches a few cache
//!   lines, where a uniform pick over a million ready tasks misses the cache on every poll.
//!
//! Invariant: the pick is the only place the scheduler stream is drawn here, once per pick, so
//! the draw sequence depends only on the sequence of pushes and picks. Removal keeps the order
//! of the rest up to one swap: below the window size a pick replaces the chosen task with the
//! newest (as `Vec::swap_remove` does), above it with the oldest, which slides the window
//! forward in readiness order.

use super::TaskId;
use crate::rng::Rng;

/// The scheduler's default window: big enough that every ready set of a realistic cluster
/// simulation fits in it (each pick uniform over all ready tasks), small enough that a window
/// of tasks and their futures stays in the CPU's L1/L2 caches.
pub(crate) const DEFAULT_WINDOW: usize = 256;
const _: () = assert!(DEFAULT_WINDOW > 0, "the default window refuses every task");

/// Ready task ids in readiness order, with a seeded windowed pick.
///
/// The ids are `queue[start..]`: a vector with a moving front, cheaper on the hot path than a
/// ring buffer (no wrap-around arithmetic). The consumed prefix is dropped once it is at
/// least half the vector, so memory stays within twice the ready set (amortised O(1)), or
/// the capacity a past run on the thread left (see `spare`).
#[derive(Debug)]
pub(crate) struct ReadyQueue {
    queue: Vec<TaskId>,
    start: usize,
    window: usize,
}

impl Drop for ReadyQueue {
    /// Keeps the queue's memory for the thread's next run (see `spare`).
    fn drop(&mut self) {
        super::slab::keep_ready(std::mem::take(&mut self.queue));
    }
}

impl ReadyQueue {
    /// An empty queue whose picks choose among the oldest `window` tasks.
    ///
    /// # Panics
    ///
    /// Panics if `window` is zero.
    pub(crate) fn new(window: usize) -> ReadyQueue {
        assert!(window > 0, "the scheduling window holds at least one task");
        ReadyQueue {
            queue: super::slab::take_ready(),
            start: 0,
            window,
        }
    }

    /// Picks among the oldest `window` tasks from now on.
    ///
    /// # Panics
    ///
    /// Panics if `window` is zero.
    pub(crate) fn set_window(&mut self, window: usize) {
        assert!(window > 0, "the scheduling window holds at least one task");
        self.window = window;
    }

    #[inline]
    pub(crate) fn push(&mut self, id: TaskId) {
        self.queue.push(id);
        // Each live task is queued at most once (`World::verify_queues` checks it), so the
        // ready set is no larger than the table.
        debug_assert!(self.len() <= super::waker::MAX_SLOTS as usize);
    }

    pub(crate) fn extend(&mut self, ids: impl IntoIterator<Item = TaskId>) {
        for id in ids {
            self.push(id);
        }
    }

    /// The ready task ids, oldest first (stale ones included: see `world::executor`).
    pub(crate) fn waiting(&self) -> &[TaskId] {
        &self.queue[self.start..]
    }

    /// Ready tasks.
    #[inline]
    fn len(&self) -> usize {
        debug_assert!(self.start <= self.queue.len());
        self.queue.len() - self.start
    }

    /// Removes and returns a task drawn uniformly from the oldest `window` ready ones, or
    /// `None` (without a draw) if none is ready.
    #[inline]
    pub(crate) fn pick(&mut self, scheduler: &mut Rng) -> Option<TaskId> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        let picked = if len <= self.window {
            // The chosen task's place goes to the newest (`Vec::swap_remove`).
            let index = self.start + scheduler.index(len);
            self.queue.swap_remove(index)
        } else {
            // The chosen task's place goes to the oldest, and the front moves on.
            let index = self.start + scheduler.index(self.window);
            // The draw stays in the window: past it, a newer task could jump the queue.
            debug_assert!(index < self.start + self.window);
            self.queue.swap(index, self.start);
            self.start += 1;
            let picked = self.queue[self.start - 1];
            if self.start >= 1024 && self.start * 2 >= self.queue.len() {
                self.queue.drain(..self.start);
                self.start = 0;
            }
            picked
        };
        if self.start == self.queue.len() {
            self.queue.clear();
            self.start = 0;
        }
        debug_assert_eq!(self.len(), len - 1);
        Some(picked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> TaskId {
        TaskId { slot: n, serial: n }
    }

    fn drain(window: usize, n: u32, seed: u64) -> Vec<u32> {
        let mut queue = ReadyQueue::new(window);
        queue.extend((0..n).map(id));
        let mut rng = Rng::seed_from(seed);
        std::iter::from_fn(|| queue.pick(&mut rng).map(|t| t.slot)).collect()
    }

    #[test]
    fn below_the_window_a_pick_is_a_uniform_swap_remove() {
        let mut expected: Vec<u32> = (0..10).collect();
        let mut rng = Rng::seed_from(7);
        let mut order = Vec::new();
        while !expected.is_empty() {
            let index = rng.index(expected.len());
            order.push(expected.swap_remove(index));
        }
        assert_eq!(drain(16, 10, 7), order);
    }

    #[test]
    fn every_task_is_picked_once() {
        let mut order = drain(8, 1000, 3);
        order.sort_unstable();
        assert_eq!(order, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_pick_only_takes_a_task_from_the_oldest_window() {
        let window = 8;
        let order = drain(window, 1000, 11);
        for (picks_before, &task) in order.iter().enumerate() {
            assert!(
                (task as usize) < picks_before + window,
                "task {task} was picked after only {picks_before} picks"
            );
        }
    }

    #[test]
    fn a_window_of_one_is_fifo() {
        assert_eq!(drain(1, 100, 5), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn same_seed_same_order_and_different_seeds_differ() {
        assert_eq!(drain(32, 500, 1), drain(32, 500, 1));
        assert_ne!(drain(32, 500, 1), drain(32, 500, 2));
    }
}
