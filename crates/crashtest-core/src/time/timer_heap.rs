//! The timer queue: a radix heap of alarms keyed by deadline, first armed first out.
//!
//! An alarm is whatever the caller stores (the world stores a waker or a callback).
//!
//! Timers fire in deadline order, and timers with the same deadline fire in the order they
//! were armed, so the order never depends on the queue's layout.
//!
//! Virtual time never goes backwards, so the queue is *monotone*: no timer is armed before
//! the deadline last taken out. A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster
//! algorithms for the shortest path problem", JACM 1990) exploits that, here with 6-bit
//! digits, which makes it a hierarchical timing wheel anchored at the queue's `floor` (a
//! lower bound of every deadline). An entry whose deadline equals the floor waits in `due`;
//! any other sits in the bucket named by the highest 6-bit digit in which its deadline differs
//! from the floor (the *level*) and its own value of that digit (the *slot*). Arming is a
//! push. The lowest occupied bucket holds the earliest deadlines, and taking the next timer
//! spreads that bucket into lower levels around a new floor, so an entry moves at most
//! eleven times, and for deadlines up to a second away at most five. A binary heap would
//! instead sift through `log2(n)` unpredictable comparisons on every fire, and a one-bit
//! radix heap would move an entry once per bit of its distance.
//!
//! Invariants:
//! - `floor <= deadline` of every entry. An entry at level `l` has the same bits as `floor`
//!   above digit `l`, and a larger digit `l`, which is its slot.
//! - Every bucket, and `due`, holds its entries in arming order. Arming appends the newest
//!   timer; spreading moves the lowest bucket, in order, into buckets that were all empty
//!   (every bucket below the lowest occupied one is empty). So the order comes free, and an
//!   entry needs no sequence number to break ties, nor `due` a sort.
//! - `due` holds entries whose deadline is `floor`.
//! - `floor` only grows: `pop_due(now)` moves it to at most `now`, and `next_deadline` to the
//!   earliest deadline, to which the run loop then moves the clock.
//!
//! Cancellation frees the timer's slot at once (its alarm is dropped and the slot reused);
//! the entry left behind is recognised as stale by its generation and skipped when it is
//! reached. Stale entries are bounded: when they outnumber the live ones the buckets are
//! rebuilt without them, so a program that arms and cancels many timeouts keeps the queue at
//! most twice its live size (amortised O(1) per cancel).

use std::collections::VecDeque;

/// Identifies an armed timer (opaque).
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     let key: crashtest_core::plumbing::timers::TimerKey = crashtest_core::plumbing::timers::call_at(5, || {});
///     crashtest_core::plumbing::timers::cancel(key);
/// }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerKey {
    slot: u32,
    generation: u32,
}

impl TimerKey {
    /// The key as one word, for seams that cannot name this type (the tokio stand-in's).
    pub(crate) fn to_bits(self) -> u64 {
        let bits = (u64::from(self.generation) << 32) | u64::from(self.slot);
        // The seam hands the word back as it got it: it must name this very timer.
        debug_assert_eq!(TimerKey::from_bits(bits), self);
        bits
    }

    /// The key [`TimerKey::to_bits`] gave.
    pub(crate) fn from_bits(bits: u64) -> TimerKey {
        TimerKey {
            slot: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    /// The alarm while the timer is armed; `None` when the slot is free.
    alarm: Option<T>,
}

/// A queued timer: its deadline, and the slot and generation that say whether it is still
/// armed. Sixteen bytes: an entry moves a few times before it fires.
#[derive(Clone, Copy, Debug)]
struct Entry {
    deadline_ns: u64,
    slot: u32,
    generation: u32,
}

impl Entry {
    /// Whether the timer is still armed: its slot has not moved on to a later generation.
    #[inline]
    fn is_live<T>(&self, slots: &[Slot<T>]) -> bool {
        slots[self.slot as usize].generation == self.generation
    }
}

/// Bits per digit, slots per level, and levels (enough digits for 64 bits).
const DIGIT_BITS: u32 = 6;
const SLOTS: usize = 1 << DIGIT_BITS;
const LEVELS: usize = 64_usize.div_ceil(DIGIT_BITS as usize);

const _: () = assert!(std::mem::size_of::<Entry>() == 16);
// `TimerKey::to_bits` packs the key into one word, losing nothing.
const _: () = assert!(std::mem::size_of::<TimerKey>() == std::mem::size_of::<u64>());
// A level's occupied slots are the bits of one `u64`, and the levels the bits of one `u32`.
const _: () = assert!(SLOTS <= 64 && LEVELS <= 32);

#[derive(Debug)]
pub(crate) struct TimerHeap<T> {
    floor: u64,
    due: VecDeque<Entry>,
    /// `buckets[level * SLOTS + slot]`.
    buckets: Box<[Vec<Entry>]>,
    /// Per level, bit `slot` is set when that bucket is not empty.
    occupied: [u64; LEVELS],
    /// Bit `level` is set when any bucket of that level is not empty.
    occupied_levels: u32,
    /// Entries in `due` and the buckets, live or stale.
    entries: usize,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    /// Entries whose timer was cancelled.
    stale: usize,
    /// A lower bound of every bucketed deadline, from the last failed spread: until the clock
    /// reaches it, `pop_due` with `due` empty answers at once instead of searching the buckets
    /// (the run loop asks before every poll). Arming lowers it.
    quiet_until: u64,
}

impl<T> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap {
            floor: 0,
            due: VecDeque::new(),
            buckets: (0..LEVELS * SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            occupied_levels: 0,
            entries: 0,
            slots: Vec::new(),
            free: Vec::new(),
            stale: 0,
            quiet_until: 0,
        }
    }
}

impl<T> Drop for TimerHeap<T> {
    /// Checks the queue a last time as its run ends (not while a panic unwinds: a check
    /// that failed mid-change has already said what broke).
    fn drop(&mut self) {
        if crate::verify::enabled() && !std::thread::panicking() {
            self.verify();
        }
    }
}

/// Entries a bucket keeps room for once spread; larger allocations are given back.
const KEPT_CAPACITY: usize = 256;

/// Below this many stale entries the queue is never rebuilt (rebuilding a tiny queue often
/// would cost more than skipping its stale entries).
const STALE_FLOOR: usize = 64;

/// The level and slot of `deadline` around `floor`: the highest digit in which they differ,
/// and the deadline's value of that digit.
#[inline]
fn bucket_of(floor: u64, deadline: u64) -> (usize, usize) {
    debug_assert!(deadline > floor);
    let level = (63 - (deadline ^ floor).leading_zeros()) / DIGIT_BITS;
    let slot = (deadline >> (level * DIGIT_BITS)) as usize & (SLOTS - 1);
    // The bucket's digit is above the floor's (the two differ first there): spreading the
    // lowest bucket therefore only ever moves entries down a level.
    debug_assert!(slot > (floor >> (level * DIGIT_BITS)) as usize & (SLOTS - 1));
    (level as usize, slot)
}

/// The smallest deadline bucket `(level, slot)` around `floor` can hold.
#[inline]
fn bucket_low(floor: u64, level: usize, slot: usize) -> u64 {
    assert!(level < LEVELS && slot < SLOTS);
    let shift = level as u32 * DIGIT_BITS;
    let above = (floor >> shift).checked_shr(DIGIT_BITS).unwrap_or(0) << DIGIT_BITS;
    (above | slot as u64) << shift
}

impl<T> TimerHeap<T> {
    /// Armed timers.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries - self.stale
    }

    /// The earliest deadline, if any timer is armed.
    ///
    /// Moves the floor up to it: the caller must arm no timer before the deadline returned
    /// (the run loop moves the clock there at once).
    #[inline]
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        let floor = self.floor;
        loop {
            self.drop_stale_due();
            if let Some(first) = self.due.front() {
                // What is returned is a live timer's deadline, not a cancelled one's.
                debug_assert!(
                    first.is_live(&self.slots),
                    "the earliest timer is a cancelled one"
                );
                return Some(self.floor);
            }
            if !self.spread_lowest(u64::MAX) {
                // Only stale entries were left, and the floor may have followed them past the
                // clock; the queue is empty now, so the old floor bounds it again.
                debug_assert_eq!(self.entries, 0);
                assert_eq!(self.stale, 0, "stale timers left in an empty queue");
                self.floor = floor;
                return None;
            }
            assert!(
                self.floor >= floor,
                "the timer queue's floor went backwards"
            );
        }
    }

    /// Arms a timer that gives back `alarm` at `deadline_ns` (the tests' shorthand; the world
    /// arms through `insert_with`).
    #[cfg(test)]
    fn insert(&mut self, deadline_ns: u64, alarm: T) -> TimerKey {
        self.insert_with(deadline_ns, || alarm)
    }

    /// Arms a timer that gives back the alarm `make` builds, at `deadline_ns`.
    ///
    /// The alarm is built in the timer's slot: passed in already built, it would be copied
    /// through the stack, and a wide load of the narrow stores that built it stalls the CPU.
    /// `make` runs once a slot is taken and must not panic (the slot would be lost).
    ///
    /// # Panics
    ///
    /// Panics if `deadline_ns` is before a deadline already reached (time went backwards).
    #[inline(always)]
    pub(crate) fn insert_with(&mut self, deadline_ns: u64, make: impl FnOnce() -> T) -> TimerKey {
        assert!(
            deadline_ns >= self.floor,
            "a timer armed at {deadline_ns} ns, before the queue's floor {} ns",
            self.floor
        );
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
        entry.alarm = Some(make());
        let generation = entry.generation;
        self.place(Entry {
            deadline_ns,
            slot,
            generation,
        });
        self.entries += 1;
        self.quiet_until = self.quiet_until.min(deadline_ns);
        // Live entries and armed slots are counted apart and must agree (on every timer: in
        // debug builds, and in every build by `verify`'s walk).
        debug_assert_eq!(
            self.entries - self.stale,
            self.slots.len() - self.free.len(),
            "the timer queue's live entries and armed slots differ"
        );
        TimerKey { slot, generation }
    }

    /// Puts an entry in its bucket around the current floor. Always inlined: it is the body
    /// of both arming and spreading, and a call per entry moved costs a fifth of the queue.
    #[inline(always)]
    fn place(&mut self, entry: Entry) {
        debug_assert!(
            entry.deadline_ns >= self.floor,
            "a timer below the queue's floor"
        );
        if entry.deadline_ns == self.floor {
            // The entry fires soon, and firing reads its slot: start loading it now, so the
            // timers that share a deadline wait for their slots together, not one by one.
            if let Some(slot) = self.slots.get(entry.slot as usize) {
                crate::prefetch::prefetch(slot);
            }
            self.due.push_back(entry);
        } else {
            let (level, slot) = bucket_of(self.floor, entry.deadline_ns);
            self.buckets[level * SLOTS + slot].push(entry);
            self.occupied[level] |= 1 << slot;
            self.occupied_levels |= 1 << level;
        }
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
        // Each stale entry is one of the queue's entries, left behind by its removal.
        assert!(
            self.stale <= self.entries,
            "more stale timers than queued ones"
        );
        if self.stale > STALE_FLOOR && self.stale * 2 > self.entries {
            self.drop_all_stale();
        }
        debug_assert_eq!(
            self.entries - self.stale,
            self.slots.len() - self.free.len(),
            "the timer queue's live entries and armed slots differ"
        );
        Some(alarm)
    }

    /// Removes and returns the alarm of the earliest timer if its deadline is `<= now_ns`.
    #[inline]
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<T> {
        // The clock never lags the floor: `next_deadline` moves the floor only to where the
        // run loop then moves the clock.
        assert!(
            self.floor <= now_ns,
            "the clock at {now_ns} ns is behind the timer queue's floor {} ns",
            self.floor
        );
        loop {
            self.drop_stale_due();
            if let Some(first) = self.due.front() {
                if first.deadline_ns > now_ns {
                    return None;
                }
                let entry = self.due.pop_front().expect("looked at the front");
                // A stale entry's slot may hold a newer timer, whose alarm this would hand out.
                debug_assert!(entry.is_live(&self.slots), "a cancelled timer fired");
                // `due` holds the entries at the floor (placed there, or spread there).
                assert_eq!(entry.deadline_ns, self.floor);
                self.entries -= 1;
                let alarm = self.release(entry.slot);
                assert_eq!(
                    self.entries - self.stale,
                    self.slots.len() - self.free.len(),
                    "the timer queue's live entries and armed slots differ"
                );
                return Some(alarm);
            }
            if now_ns < self.quiet_until || !self.spread_lowest(now_ns) {
                return None;
            }
        }
    }

    /// Pops cancelled entries off the front of `due`.
    #[inline]
    fn drop_stale_due(&mut self) {
        while let Some(front) = self.due.front() {
            if front.is_live(&self.slots) {
                return;
            }
            self.due.pop_front();
            assert!(self.stale > 0, "a cancelled timer was not counted as stale");
            self.entries -= 1;
            self.stale -= 1;
        }
    }

    /// Empties the lowest non-empty bucket into lower levels around a new floor: its earliest
    /// deadline (of a live or a stale entry), or `limit` if that is earlier (the floor never passes the clock in
    /// `pop_due`). Returns false, changing nothing, if no bucket holds entries or the lowest
    /// cannot hold a deadline up to `limit`. Requires `due` to be empty.
    fn spread_lowest(&mut self, limit: u64) -> bool {
        assert!(self.due.is_empty());
        if self.occupied_levels == 0 {
            self.quiet_until = u64::MAX;
            return false;
        }
        let level = self.occupied_levels.trailing_zeros() as usize;
        let slot = self.occupied[level].trailing_zeros() as usize;
        let low = bucket_low(self.floor, level, slot);
        // Buckets hold only deadlines above the floor (the floor's own wait in `due`).
        assert!(low > self.floor, "a bucket at or below the queue's floor");
        // And its smallest deadline belongs in it: `bucket_low` and `bucket_of` read the
        // same digits (a re-check of the layout on every spread: debug builds only).
        debug_assert_eq!(
            bucket_of(self.floor, low),
            (level, slot),
            "bucket {level}/{slot}'s lowest deadline {low} belongs elsewhere"
        );
        if low > limit {
            // Every other bucket lies above this one.
            self.quiet_until = low;
            return false;
        }
        let bucket = level * SLOTS + slot;
        self.occupied[level] &= !(1 << slot);
        if self.occupied[level] == 0 {
            self.occupied_levels &= !(1 << level);
        }
        if let [only] = self.buckets[bucket][..] {
            // One timer, the common case when timers are spread out in time: the new floor is
            // its deadline (or `limit`), as below, with no bucket taken out and given back.
            self.buckets[bucket].clear();
            let floor = only.deadline_ns.min(limit);
            assert!(
                floor >= low && floor >= self.floor,
                "the timer queue's floor went backwards"
            );
            self.floor = floor;
            self.place(only);
            return true;
        }
        // Spreading never places an entry back in this bucket (only at lower levels), so it
        // can be taken out and given back with its allocation.
        let mut spread = std::mem::take(&mut self.buckets[bucket]);
        // Stale entries move along with live ones: checking each against its slot here would
        // cost a random access per entry per move; `due` drops them when they reach its front.
        let earliest = spread
            .iter()
            .map(|e| e.deadline_ns)
            .min()
            .expect("an occupied bucket holds entries");
        let floor = earliest.min(limit);
        assert!(
            floor >= low && floor >= self.floor,
            "the timer queue's floor went backwards"
        );
        self.floor = floor;
        for &entry in &spread {
            self.place(entry);
        }
        // The bucket's allocation goes back below: an entry placed into it meanwhile would be
        // overwritten, its timer lost.
        assert!(
            self.buckets[bucket].is_empty(),
            "spreading bucket {level}/{slot} put an entry back into it"
        );
        // The new floor is the earliest deadline spread, unless `limit` came first: either
        // an entry sits in `due` now, or none is due by `limit`.
        assert!(
            !self.due.is_empty() || floor == limit,
            "a spread left nothing due"
        );
        spread.clear();
        if spread.capacity() > KEPT_CAPACITY {
            // A bucket of a high level fills once per lap of the level below and then sits
            // empty for a long time: keeping every such allocation would hold memory for
            // many times the timers armed.
            spread = Vec::new();
        }
        self.buckets[bucket] = spread;
        true
    }

    /// Rebuilds the queue without its stale entries.
    fn drop_all_stale(&mut self) {
        assert!(self.stale <= self.entries);
        let slots = &self.slots;
        let live = |entry: &Entry| entry.is_live(slots);
        self.due.retain(live);
        let mut queued = self.due.len();
        // Only the occupied buckets hold entries: the bits name them, so the walk skips the
        // hundreds of empty ones (a program that cancels many timeouts comes here often).
        let mut levels = self.occupied_levels;
        while levels != 0 {
            let level = levels.trailing_zeros() as usize;
            levels &= levels - 1;
            let mut bits = self.occupied[level];
            while bits != 0 {
                let slot = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let bucket = &mut self.buckets[level * SLOTS + slot];
                bucket.retain(live);
                queued += bucket.len();
                if bucket.is_empty() {
                    self.occupied[level] &= !(1 << slot);
                }
            }
            if self.occupied[level] == 0 {
                self.occupied_levels &= !(1 << level);
            }
        }
        self.entries -= self.stale;
        self.stale = 0;
        // Without stale entries, every entry is an armed timer.
        assert_eq!(
            self.entries,
            self.slots.len() - self.free.len(),
            "a live timer was dropped with the stale ones"
        );
        // Counted on the way: every entry left sits in `due` or in an occupied bucket.
        assert_eq!(
            queued, self.entries,
            "the timer queue lost count of its entries"
        );
        if crate::verify::enabled() {
            self.verify();
        }
    }

    /// Checks the whole queue against the module's invariants (O(n), behind the verify
    /// switch): every entry in the bucket its deadline names around the floor, the occupied
    /// bits naming exactly the non-empty buckets, and the counts of entries, stale entries
    /// and armed slots agreeing.
    fn verify(&self) {
        assert!(self.due.iter().all(|e| e.deadline_ns == self.floor));
        let mut stale = self.due.iter().filter(|e| !e.is_live(&self.slots)).count();
        let mut queued = self.due.len();
        for (index, bucket) in self.buckets.iter().enumerate() {
            let (level, slot) = (index / SLOTS, index % SLOTS);
            let marked = self.occupied[level] & (1 << slot) != 0;
            assert_eq!(
                marked,
                !bucket.is_empty(),
                "bucket {level}/{slot} is marked wrong"
            );
            for entry in bucket {
                assert_eq!(bucket_of(self.floor, entry.deadline_ns), (level, slot));
                assert!(entry.deadline_ns >= self.quiet_until);
            }
            stale += bucket.iter().filter(|e| !e.is_live(&self.slots)).count();
            queued += bucket.len();
        }
        for (level, &slots) in self.occupied.iter().enumerate() {
            let marked = self.occupied_levels & (1 << level) != 0;
            assert_eq!(marked, slots != 0, "level {level} is marked wrong");
        }
        assert_eq!(queued, self.entries);
        assert_eq!(stale, self.stale);
        let armed = self.slots.iter().filter(|s| s.alarm.is_some()).count();
        assert_eq!(
            armed,
            self.entries - self.stale,
            "armed slots and live entries differ"
        );
        assert_eq!(armed + self.free.len(), self.slots.len(), "a slot is lost");
        // The free list is exactly the unarmed slots, each once (a slot freed twice would
        // be handed to two timers).
        assert!(
            self.free
                .iter()
                .all(|&slot| self.slots[slot as usize].alarm.is_none()),
            "an armed timer's slot is on the free list"
        );
        let mut free = self.free.clone();
        free.sort_unstable();
        free.dedup();
        assert_eq!(free.len(), self.free.len(), "a timer slot is free twice");
    }

    /// Frees an armed slot and returns its alarm; the slot's generation moves on, so entries
    /// and keys naming the old generation become stale.
    fn release(&mut self, slot: u32) -> T {
        let entry = &mut self.slots[slot as usize];
        let alarm = entry.alarm.take().expect("released an armed slot");
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(slot);
        // Every free slot was armed once: the free list never outgrows the slots.
        debug_assert!(self.free.len() <= self.slots.len());
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
        let fresh = heap.insert(2000, 7);
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
            assert!(heap.entries <= 2 * heap.len() + STALE_FLOOR + 1);
        }
        assert!(heap.is_armed(keep));
        assert_eq!(heap.next_deadline(), Some(u64::MAX));
    }

    #[test]
    fn matches_a_sorted_model_under_random_arming_cancelling_and_firing() {
        use std::collections::BTreeMap;
        for seed in 0..20 {
            let mut rng = crate::rng::Rng::seed_from(seed);
            let mut heap = TimerHeap::<u64>::default();
            let mut model = BTreeMap::new();
            let mut keys = Vec::new();
            let mut now = 0u64;
            for step in 0..5_000u64 {
                match rng.below_inclusive(9) {
                    0..=4 => {
                        let spans = [0, 1, 1_000, 1 << 20, 1 << 40];
                        let span = spans[rng.index(spans.len())];
                        let mut deadline = now + rng.below_inclusive(span);
                        if rng.below_inclusive(1) == 0 {
                            // Whole "milliseconds": many timers share a distant deadline,
                            // armed at different times, so ties cross several spreads.
                            deadline = deadline.next_multiple_of(1 << 16);
                        }
                        keys.push((heap.insert(deadline, step), deadline, step));
                        model.insert((deadline, step), step);
                    }
                    5 if !keys.is_empty() => {
                        let (key, deadline, tag) = keys.swap_remove(rng.index(keys.len()));
                        let removed = heap.remove(key);
                        assert_eq!(removed, model.remove(&(deadline, tag)));
                    }
                    6 => {
                        assert_eq!(heap.next_deadline(), model.keys().next().map(|k| k.0));
                        if let Some(&(deadline, _)) = model.keys().next() {
                            now = deadline;
                        }
                    }
                    _ => {
                        now += rng.below_inclusive(1 << 21);
                        while let Some(tag) = heap.pop_due(now) {
                            let (&first, &want) = model.iter().next().expect("model has it");
                            assert!(first.0 <= now);
                            assert_eq!(tag, want, "seed {seed} step {step}");
                            model.remove(&first);
                        }
                        assert!(model.keys().next().is_none_or(|k| k.0 > now));
                    }
                }
                assert_eq!(heap.len(), model.len());
                if step % 100 == 0 {
                    heap.verify();
                }
            }
        }
    }
}
