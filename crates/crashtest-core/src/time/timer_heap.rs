//! The timer queue: a min-heap of alarms keyed by `(deadline, sequence)`.
//!
//! An alarm is whatever the caller stores (the world stores a waker or a callback).
//!
//! Timers fire in deadline order, and timers with the same deadline fire in the order they
//! were armed (the sequence number), so the order never depends on the heap's layout.
//!
//! Cancellation frees the timer's slot at once (its alarm is dropped and the slot reused);
//! the heap entry left behind is recognised as stale by its generation and skipped when it
//! reaches the top. Stale entries are bounded: when they outnumber the live ones the heap is
//! rebuilt without them, so a program that arms and cancels many timeouts keeps the heap at
//! most twice its live size (amortised O(1) per cancel). This beats an indexed heap, whose
//! every sift step must also update a position table: the simulator's hottest loop is
//! arm-then-fire, which pays nothing here for cancellation.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Identifies an armed timer (opaque).
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let key: crashtest_core::plumbing::TimerKey = crashtest_core::plumbing::call_at(5, || {});
///     crashtest_core::plumbing::cancel(key);
/// }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerKey {
    slot: u32,
    generation: u32,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    /// The alarm while the timer is armed; `None` when the slot is free.
    alarm: Option<T>,
}

/// A heap entry. It is ordered by `order` alone: the deadline in the high 64 bits and the
/// arming sequence in the low 64, one integer comparison per sift step.
#[derive(Clone, Copy, Debug)]
struct Entry {
    order: u128,
    slot: u32,
    generation: u32,
}

impl Entry {
    fn deadline_ns(&self) -> u64 {
        (self.order >> 64) as u64
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.order == other.order
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> std::cmp::Ordering {
        self.order.cmp(&other.order)
    }
}

#[derive(Debug)]
pub(crate) struct TimerHeap<T> {
    heap: BinaryHeap<Reverse<Entry>>,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    next_sequence: u64,
    /// Entries in `heap` whose timer was cancelled.
    stale: usize,
}

impl<T> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            next_sequence: 0,
            stale: 0,
        }
    }
}

/// Below this many stale entries the heap is never rebuilt (rebuilding a tiny heap often
/// would cost more than skipping its stale entries).
const STALE_FLOOR: usize = 64;

impl<T> TimerHeap<T> {
    /// Armed timers.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len() - self.stale
    }

    /// The earliest deadline, if any timer is armed.
    #[inline]
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        self.drop_stale_top();
        self.heap.peek().map(|Reverse(e)| e.deadline_ns())
    }

    /// Arms a timer that gives back `alarm` at `deadline_ns`.
    pub(crate) fn insert(&mut self, deadline_ns: u64, alarm: T) -> TimerKey {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(self.slots.len()).expect("more than 2^32 timers armed");
                self.slots.push(Slot {
                    generation: 0,
                    alarm: None,
                });
                slot
            }
        };
        let entry = &mut self.slots[slot as usize];
        assert!(entry.alarm.is_none(), "armed a timer in a busy slot");
        entry.alarm = Some(alarm);
        let generation = entry.generation;
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let order = (u128::from(deadline_ns) << 64) | u128::from(sequence);
        self.heap.push(Reverse(Entry {
            order,
            slot,
            generation,
        }));
        TimerKey { slot, generation }
    }

    /// Whether `key` names a timer that is still armed.
    #[inline]
    pub(crate) fn is_armed(&self, key: TimerKey) -> bool {
        self.slots
            .get(key.slot as usize)
            .is_some_and(|s| s.generation == key.generation && s.alarm.is_some())
    }

    /// The alarm of an armed timer; `None` if it already fired or was removed.
    pub(crate) fn alarm_mut(&mut self, key: TimerKey) -> Option<&mut T> {
        if !self.is_armed(key) {
            return None;
        }
        self.slots[key.slot as usize].alarm.as_mut()
    }

    /// Disarms a timer and returns its alarm. A stale key (already fired or removed) is
    /// ignored.
    pub(crate) fn remove(&mut self, key: TimerKey) -> Option<T> {
        if !self.is_armed(key) {
            return None;
        }
        let alarm = self.release(key.slot);
        self.stale += 1;
        if self.stale > STALE_FLOOR && self.stale * 2 > self.heap.len() {
            let slots = &self.slots;
            self.heap
                .retain(|Reverse(e)| slots[e.slot as usize].generation == e.generation);
            self.stale = 0;
        }
        Some(alarm)
    }

    /// Removes and returns the alarm of the earliest timer if its deadline is `<= now_ns`.
    #[inline]
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<T> {
        self.drop_stale_top();
        let Reverse(first) = self.heap.peek()?;
        if first.deadline_ns() > now_ns {
            return None;
        }
        let Reverse(entry) = self.heap.pop().expect("peeked");
        Some(self.release(entry.slot))
    }

    /// Pops cancelled entries off the top, so that the top is a live timer.
    #[inline]
    fn drop_stale_top(&mut self) {
        while let Some(Reverse(top)) = self.heap.peek() {
            if self.slots[top.slot as usize].generation == top.generation {
                return;
            }
            self.heap.pop();
            self.stale -= 1;
        }
    }

    /// Frees an armed slot and returns its alarm; the slot's generation moves on, so entries
    /// and keys naming the old generation become stale.
    fn release(&mut self, slot: u32) -> T {
        let entry = &mut self.slots[slot as usize];
        let alarm = entry.alarm.take().expect("released an armed slot");
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(slot);
        alarm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pop_all(heap: &mut TimerHeap<u64>) -> Vec<u64> {
        std::iter::from_fn(|| heap.pop_due(u64::MAX)).collect()
    }

    #[test]
    fn fires_in_deadline_then_arming_order() {
        let mut heap = TimerHeap::<u64>::default();
        for (tag, deadline) in [(1, 30), (2, 10), (3, 30), (4, 20), (5, 10)] {
            heap.insert(deadline, tag);
        }
        assert_eq!(pop_all(&mut heap), [2, 5, 4, 1, 3]);
    }

    #[test]
    fn removal_is_real_and_stale_keys_are_ignored() {
        let mut heap = TimerHeap::<u64>::default();
        let keys: Vec<_> = (0..100).map(|i| heap.insert(1000 - i, i)).collect();
        for key in keys.iter().step_by(2) {
            assert!(heap.remove(*key).is_some());
        }
        assert_eq!(heap.len(), 50);
        assert!(heap.remove(keys[0]).is_none());
        assert_eq!(heap.len(), 50);
        let fired = pop_all(&mut heap);
        let want: Vec<u64> = (0..100).rev().filter(|i| i % 2 == 1).collect();
        assert_eq!(fired, want);
        // Slots are reused; old keys must not touch the new timers.
        let fresh = heap.insert(5, 7);
        assert!(heap.remove(keys[1]).is_none(), "key 1 already fired");
        assert!(heap.is_armed(fresh));
    }

    #[test]
    fn pop_due_respects_now() {
        let mut heap = TimerHeap::<u64>::default();
        heap.insert(10, 1);
        assert!(heap.pop_due(9).is_none());
        assert!(heap.pop_due(10).is_some());
        assert_eq!(heap.next_deadline(), None);
    }

    #[test]
    fn many_cancellations_do_not_pile_up() {
        let mut heap = TimerHeap::<u64>::default();
        let keep = heap.insert(u64::MAX, 0);
        for i in 0..100_000 {
            let key = heap.insert(1_000 + i, i);
            assert_eq!(heap.remove(key), Some(i));
            assert!(heap.heap.len() <= 2 * heap.len() + STALE_FLOOR + 1);
        }
        assert!(heap.is_armed(keep));
        assert_eq!(heap.next_deadline(), Some(u64::MAX));
    }
}
