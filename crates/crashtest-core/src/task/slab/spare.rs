//! Memory one run leaves behind for the next run on the same thread.
//!
//! A benchmark or a test loop runs simulations one after another on a thread, and a big run grows
//! big buffers: the task table, the ready queue, the cell arena's chunks. Handing them back to
//! the allocator when a run ends and taking them again in the next run makes the kernel fault
//! in and zero every page again: a run that spawns a million tasks spent a quarter of its time
//! there. So a world's buffers go to this per-thread store when it drops, and the next world
//! on the thread takes them, emptied, with their capacity.
//!
//! Invariants:
//! - Only empty vectors are stored (their capacity is what is kept), and a stored chunk holds
//!   no live cell.
//! - A thread's store holds at most [`LIMIT`] bytes, and all threads' stores together at most
//!   [`PROCESS_LIMIT`]; what does not fit goes back to the allocator, so a thread that once
//!   ran a huge simulation keeps at most that much, and a pool of such threads no more than
//!   the process limit. (`crashtest`'s own sweeps run each seed on a fresh thread, whose store
//!   goes with it.)
//! - Nothing here changes what a run does: no order depends on which memory a run got.

use std::alloc::{self, Layout};
use std::cell::RefCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::table::SlotEntry;
use crate::task::TaskId;

/// The most bytes a thread keeps between runs.
pub(crate) const LIMIT: usize = 128 << 20;

/// The most bytes all threads' stores keep together.
pub(crate) const PROCESS_LIMIT: usize = 256 << 20;

/// Bytes kept in all threads' stores.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// Bytes in one arena chunk.
pub(crate) const CHUNK: usize = 64 * 1024;

/// The alignment of a chunk (and of every arena block carved from one).
pub(crate) const CHUNK_ALIGN: usize = 16;

const _: () = assert!(CHUNK.is_power_of_two() && CHUNK_ALIGN.is_power_of_two());
// A thread keeps no more than all threads together may.
const _: () = assert!(LIMIT <= PROCESS_LIMIT && LIMIT >= CHUNK);

fn chunk_layout() -> Layout {
    Layout::from_size_align(CHUNK, CHUNK_ALIGN).expect("the chunk layout is valid")
}

#[derive(Default)]
struct Store {
    bytes: usize,
    chunks: Vec<NonNull<u8>>,
    slots: Vec<SlotEntry>,
    ready: Vec<TaskId>,
}

impl Store {
    /// Counts `bytes` more as kept, if both limits allow it.
    fn reserve(&mut self, bytes: usize) -> bool {
        assert!(self.bytes <= LIMIT, "a thread keeps more than its limit");
        if self.bytes + bytes > LIMIT {
            return false;
        }
        let process = KEPT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |kept| {
            (kept + bytes <= PROCESS_LIMIT).then_some(kept + bytes)
        });
        if process.is_err() {
            return false;
        }
        self.bytes += bytes;
        true
    }

    /// Counts `bytes` fewer as kept.
    fn release(&mut self, bytes: usize) {
        assert!(bytes <= self.bytes, "released more than the thread keeps");
        self.bytes -= bytes;
        let before = KEPT.fetch_sub(bytes, Ordering::Relaxed);
        // Every thread's bytes are in the process's count too.
        assert!(
            before >= bytes,
            "the process's count of kept bytes fell below zero"
        );
    }

    /// Checks that the count of kept bytes is what the store holds (`reserve` counts bytes
    /// before they are stored, so this holds between the store's operations).
    fn check_count(&self) {
        let held = self.chunks.len() * CHUNK + bytes_of(&self.slots) + bytes_of(&self.ready);
        assert_eq!(self.bytes, held, "the store's count of kept bytes drifted");
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.check_count();
        let before = KEPT.fetch_sub(self.bytes, Ordering::Relaxed);
        assert!(
            before >= self.bytes,
            "a thread kept bytes the process did not count"
        );
        for chunk in self.chunks.drain(..) {
            // SAFETY: every stored chunk came from `new_chunk` (allocated with
            // `chunk_layout()`) and was given back by an arena that no longer uses it.
            unsafe { alloc::dealloc(chunk.as_ptr(), chunk_layout()) };
        }
    }
}

thread_local! {
    static STORE: RefCell<Store> = RefCell::new(Store::default());
}

/// A chunk of [`CHUNK`] bytes aligned to [`CHUNK_ALIGN`]: one a past run left, or a new one.
/// Its contents are unspecified.
pub(crate) fn new_chunk() -> NonNull<u8> {
    let kept = STORE
        .try_with(|store| {
            let mut store = store.borrow_mut();
            let chunk = store.chunks.pop()?;
            store.release(CHUNK);
            store.check_count();
            Some(chunk)
        })
        .ok()
        .flatten();
    let chunk = kept.unwrap_or_else(|| {
        // SAFETY: the chunk layout has a non-zero size.
        let chunk = unsafe { alloc::alloc(chunk_layout()) };
        NonNull::new(chunk).unwrap_or_else(|| alloc::handle_alloc_error(chunk_layout()))
    });
    // The arena carves blocks of up to this alignment from the chunk's start.
    assert!((chunk.as_ptr() as usize).is_multiple_of(CHUNK_ALIGN));
    chunk
}

/// Keeps a chunk for a later run, or frees it if the store is full.
///
/// # Safety
///
/// `chunk` came from [`new_chunk`], and nothing uses its memory any more.
pub(crate) unsafe fn drop_chunk(chunk: NonNull<u8>) {
    // A chunk from `new_chunk` is aligned; one that is not came from elsewhere, and freeing
    // it with the chunk layout would corrupt the heap.
    assert!((chunk.as_ptr() as usize).is_multiple_of(CHUNK_ALIGN));
    let kept = STORE
        .try_with(|store| {
            let mut store = store.borrow_mut();
            if !store.reserve(CHUNK) {
                return false;
            }
            store.chunks.push(chunk);
            store.check_count();
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: the caller promises the chunk came from `new_chunk` (so from
        // `alloc::alloc(chunk_layout())` or the store, which holds only such chunks) and is
        // unused.
        unsafe { alloc::dealloc(chunk.as_ptr(), chunk_layout()) };
    }
}

/// An empty vector, with the capacity a past run left if there is one.
fn take<T>(field: fn(&mut Store) -> &mut Vec<T>) -> Vec<T> {
    let vec = STORE
        .try_with(|store| {
            let mut store = store.borrow_mut();
            let vec = std::mem::take(field(&mut store));
            store.release(bytes_of(&vec));
            store.check_count();
            vec
        })
        .unwrap_or_default();
    // `keep` empties what it stores: a run must not start with a past run's entries.
    assert!(vec.is_empty(), "a kept vector was handed on with entries");
    vec
}

/// Empties `vec` and keeps it for a later run if it is bigger than the one kept and fits.
fn keep<T>(mut vec: Vec<T>, field: fn(&mut Store) -> &mut Vec<T>) {
    vec.clear();
    // An unkept vector is freed when the closure drops it (the store's borrow ends first).
    let _unkept = STORE.try_with(move |store| {
        let mut store = store.borrow_mut();
        let kept = bytes_of(field(&mut store));
        let offered = bytes_of(&vec);
        if offered <= kept || !store.reserve(offered - kept) {
            return Some(vec);
        }
        let old = std::mem::replace(field(&mut store), vec);
        store.check_count();
        drop(store);
        drop(old);
        None
    });
}

fn bytes_of<T>(vec: &Vec<T>) -> usize {
    vec.capacity() * size_of::<T>()
}

pub(crate) fn take_slots() -> Vec<SlotEntry> {
    take(|store| &mut store.slots)
}

pub(crate) fn keep_slots(slots: Vec<SlotEntry>) {
    keep(slots, |store| &mut store.slots);
}

pub(crate) fn take_ready() -> Vec<TaskId> {
    take(|store| &mut store.ready)
}

pub(crate) fn keep_ready(ready: Vec<TaskId>) {
    keep(ready, |store| &mut store.ready);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_vector_comes_back_empty_with_its_capacity() {
        let mut ready = take_ready();
        ready.extend((0..1000).map(|n| TaskId { slot: n, serial: n }));
        let capacity = ready.capacity();
        keep_ready(ready);
        let again = take_ready();
        assert!(again.is_empty());
        assert_eq!(again.capacity(), capacity);
        assert!(
            take_ready().capacity() == 0,
            "a kept vector is handed out once"
        );
        keep_ready(again);
    }

    #[test]
    fn a_smaller_vector_does_not_replace_a_bigger_one() {
        keep_ready(Vec::with_capacity(1000));
        keep_ready(Vec::with_capacity(10));
        assert!(take_ready().capacity() >= 1000);
    }

    #[test]
    fn the_store_never_holds_more_than_its_limit() {
        let chunks: Vec<_> = (0..LIMIT / CHUNK + 8).map(|_| new_chunk()).collect();
        for chunk in chunks {
            // SAFETY: each chunk came from `new_chunk` and is unused.
            unsafe { drop_chunk(chunk) };
        }
        keep_slots(Vec::with_capacity(1 << 20));
        STORE.with(|store| {
            let store = store.borrow();
            assert!(store.bytes <= LIMIT);
            assert!(store.chunks.len() <= LIMIT / CHUNK);
        });
        assert!(KEPT.load(Ordering::Relaxed) <= PROCESS_LIMIT);
    }
}
