//! The timer queue: a min-heap of alarms keyed by `(deadline, sequence)` with real removal.
//!
//! An alarm is whatever the caller stores (the world stores a waker or a callback).
//!
//! Timers fire in deadline order, and timers with the same deadline fire in the order they
//! were armed (the sequence number), so the order never depends on the heap's layout.
//!
//! Cancellation removes the entry at once (an indexed heap: each armed timer knows its heap
//! position through a slot table), so a program that arms and cancels many timeouts does not
//! pile up tombstones. A [`TimerKey`] carries a generation so that a stale key (of a timer that
//! already fired) is recognised and ignored instead of cancelling a newer timer in its slot.

/// Identifies an armed timer (opaque).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerKey {
    slot: u32,
    generation: u32,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    /// Position in `heap`, or `None` when the slot is free.
    position: Option<u32>,
    alarm: Option<T>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    deadline_ns: u64,
    sequence: u64,
    slot: u32,
}

impl Entry {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.deadline_ns, self.sequence)
    }
}

#[derive(Debug)]
pub(crate) struct TimerHeap<T> {
    heap: Vec<Entry>,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    next_sequence: u64,
}

impl<T> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap {
            heap: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
            next_sequence: 0,
        }
    }
}

impl<T> TimerHeap<T> {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }

    /// The earliest deadline, if any timer is armed.
    #[inline]
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.heap.first().map(|e| e.deadline_ns)
    }

    /// Arms a timer that gives back `alarm` at `deadline_ns`.
    pub(crate) fn insert(&mut self, deadline_ns: u64, alarm: T) -> TimerKey {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(self.slots.len()).expect("more than 2^32 timers armed");
                self.slots.push(Slot {
                    generation: 0,
                    position: None,
                    alarm: None,
                });
                slot
            }
        };
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let position = self.heap.len();
        self.heap.push(Entry {
            deadline_ns,
            sequence,
            slot,
        });
        let entry = &mut self.slots[slot as usize];
        assert!(entry.position.is_none(), "armed a timer in a busy slot");
        entry.position = Some(position as u32);
        entry.alarm = Some(alarm);
        let generation = entry.generation;
        self.sift_up(position);
        TimerKey { slot, generation }
    }

    /// Whether `key` names a timer that is still armed.
    #[inline]
    pub(crate) fn is_armed(&self, key: TimerKey) -> bool {
        self.slots
            .get(key.slot as usize)
            .is_some_and(|s| s.generation == key.generation && s.position.is_some())
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
        let position = self.slots[key.slot as usize].position.expect("armed") as usize;
        Some(self.remove_at(position))
    }

    /// Removes and returns the alarm of the earliest timer if its deadline is `<= now_ns`.
    #[inline]
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<T> {
        let first = self.heap.first()?;
        if first.deadline_ns > now_ns {
            return None;
        }
        Some(self.remove_at(0))
    }

    fn remove_at(&mut self, position: usize) -> T {
        let removed = self.heap.swap_remove(position);
        if position < self.heap.len() {
            let moved = self.heap[position].slot;
            self.slots[moved as usize].position = Some(position as u32);
            self.sift_down(position);
            self.sift_up(position);
        }
        let slot = &mut self.slots[removed.slot as usize];
        slot.position = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(removed.slot);
        slot.alarm.take().expect("an armed timer has an alarm")
    }

    fn sift_up(&mut self, mut position: usize) {
        while position > 0 {
            let parent = (position - 1) / 2;
            if self.heap[parent].key() <= self.heap[position].key() {
                break;
            }
            self.swap(parent, position);
            position = parent;
        }
    }

    fn sift_down(&mut self, mut position: usize) {
        let len = self.heap.len();
        loop {
            let left = 2 * position + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let smallest = if right < len && self.heap[right].key() < self.heap[left].key() {
                right
            } else {
                left
            };
            if self.heap[position].key() <= self.heap[smallest].key() {
                break;
            }
            self.swap(position, smallest);
            position = smallest;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.slots[self.heap[a].slot as usize].position = Some(a as u32);
        self.slots[self.heap[b].slot as usize].position = Some(b as u32);
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
}
