//! Cells for tasks whose type the core cannot name: the tokio stand-in's, handed over as bytes
//! and a vtable (`crashtest_hooks::RawTask`).
//!
//! The task table's cells are generic over the future type, which the stand-in cannot name
//! across the seam; boxing each task instead would cost an allocation per spawn that the
//! core's own spawns do not pay. So a raw task is moved once, straight from the spawner's
//! stack into an arena block (by its vtable's `move_to`, a copy of its own type), inside a
//! [`Raw`] cell of one of a few fixed sizes (`crashtest_hooks::STORAGE_WORDS`, chosen by the
//! task's storage class), and polled there in place through the task's vtable. Only a task
//! larger than the largest size, or aligned to more than 8 bytes, goes to a heap block of its
//! own ([`RawOnHeap`]).
//!
//! A raw cell is its vtable pointer and the task's bytes, nothing more: a simulation with
//! many live tasks streams through their cells, and each word of header is a word of every
//! cell. The task's own type keeps its stage (running, finished with its output, output
//! taken), so the cell keeps none: completing copies nothing, the join handle's side moves the
//! output out through the vtable's `take_output` ([`TaskCell::take_raw_output`]), and the
//! cell's drop always ends the task through the vtable's `drop`.
//!
//! Invariant: a raw task's bytes are ended through its vtable exactly once, by `drop` when
//! its cell is dropped (joined, aborted, detached, or never joined); the executor polls it
//! only while its slot says it runs and takes its output at most once, after it finished.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crashtest_hooks::{RawTask, STORAGE_WORDS, TaskVtable};

use super::arena::{CellArena, CellBox};
use super::cell::TaskCell;

/// A raw task's bytes in `WORDS` words of its cell, after its vtable.
pub(crate) struct Raw<const WORDS: usize> {
    vtable: &'static TaskVtable,
    /// In an `UnsafeCell`: the task's future keeps references into its own state, which a
    /// shared reference to the cell (the arena reads its size through one) must not freeze.
    words: UnsafeCell<[MaybeUninit<u64>; WORDS]>,
}

// One word of header: the vtable (see the module docs).
const _: () = assert!(size_of::<Raw<2>>() == 3 * size_of::<u64>());

impl<const WORDS: usize> Raw<WORDS> {
    /// Builds the cell for `task` at `cell`, copying the task's bytes there.
    ///
    /// # Safety
    ///
    /// `cell` is valid for writes of a `Raw<WORDS>`; `task` is a live task (the `RawTask`
    /// contract) that fits `WORDS` words and 8-byte alignment.
    unsafe fn write(cell: *mut Raw<WORDS>, task: &RawTask) {
        assert!(
            task.layout.size() <= WORDS * 8 && task.layout.align() <= 8,
            "a raw task stored in a class it does not fit"
        );
        // And in its own class, not a larger one: the class names the cell type.
        debug_assert_eq!(
            STORAGE_WORDS.get(task.class as usize),
            Some(&WORDS),
            "a raw task of class {} stored in a cell of {WORDS} words",
            task.class
        );
        // SAFETY: `cell` is writable (the caller's promise); the task is live and moved once,
        // into the words, which fit it (checked) and do not overlap it.
        unsafe {
            (&raw mut (*cell).vtable).write(task.vtable);
            (task.vtable.move_to)(task.bytes, (&raw mut (*cell).words).cast::<u8>());
        }
    }

    fn bytes(&self) -> *mut u8 {
        self.words.get().cast()
    }
}

impl<const WORDS: usize> TaskCell for Raw<WORDS> {
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the task's bytes stay in the pinned cell, in place since they were stored
        // and aligned as their layout says; the executor polls only a running task.
        unsafe { (self.vtable.poll)(self.bytes(), cx) }
    }

    unsafe fn take_raw_output(self: Pin<&mut Self>, out: *mut ()) -> bool {
        // The task's vtable writes the output through `out`: it must point somewhere (the
        // join handle's slot), or the write is to nowhere.
        debug_assert!(!out.is_null(), "a raw task's output taken into no slot");
        // SAFETY: the task finished (the executor takes only a finished task's output, once)
        // and `out` is its output's slot (the caller's promise).
        unsafe { (self.vtable.take_output)(self.bytes(), out) };
        true
    }
}

impl<const WORDS: usize> Drop for Raw<WORDS> {
    fn drop(&mut self) {
        // SAFETY: the task's bytes are live (written by `write`) and dropped once, here.
        unsafe { (self.vtable.drop)(self.bytes()) };
    }
}

/// A raw task's bytes in a heap block of their own.
pub(crate) struct RawOnHeap {
    vtable: &'static TaskVtable,
    block: NonNull<u8>,
    layout: Layout,
}

impl RawOnHeap {
    /// Builds the cell for `task` at `cell`, copying the task's bytes to a new heap block.
    ///
    /// # Safety
    ///
    /// `cell` is valid for writes of a `RawOnHeap`; `task` is a live task.
    unsafe fn write(cell: *mut RawOnHeap, task: &RawTask) {
        assert!(
            task.layout.size() > 0,
            "a task has at least its state's tag"
        );
        // Only a task that no class holds pays for a heap block of its own.
        assert!(
            task.layout.align() > 8 || task.layout.size() > STORAGE_WORDS[HEAP as usize - 1] * 8,
            "a raw task that fits a storage class went to the heap"
        );
        // SAFETY: the layout's size is not zero.
        let raw = unsafe { std::alloc::alloc(task.layout) };
        let block =
            NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(task.layout));
        // SAFETY: the task is live and moved once, into the new block of its layout, which
        // does not overlap it; `cell` is writable (the caller's promise).
        unsafe {
            (task.vtable.move_to)(task.bytes, block.as_ptr());
            cell.write(RawOnHeap {
                vtable: task.vtable,
                block,
                layout: task.layout,
            });
        }
    }
}

impl TaskCell for RawOnHeap {
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: the task lives in its block, which never moves; the executor polls only a
        // running task.
        unsafe { (self.vtable.poll)(self.block.as_ptr(), cx) }
    }

    unsafe fn take_raw_output(self: Pin<&mut Self>, out: *mut ()) -> bool {
        debug_assert!(!out.is_null(), "a raw task's output taken into no slot");
        // SAFETY: as for an inline raw cell.
        unsafe { (self.vtable.take_output)(self.block.as_ptr(), out) };
        true
    }
}

impl Drop for RawOnHeap {
    fn drop(&mut self) {
        // SAFETY: the task in the block is live and dropped once, here; the block was
        // allocated with this layout and is freed after it.
        unsafe {
            (self.vtable.drop)(self.block.as_ptr());
            std::alloc::dealloc(self.block.as_ptr(), self.layout);
        }
    }
}

const HEAP: u32 = STORAGE_WORDS.len() as u32;
const _: () = assert!(HEAP == 14, "alloc names one cell type per storage class");

/// Moves `task`'s bytes into a cell of its storage class in `arena`: one copy, no allocation
/// unless the task is too large or too aligned for the arena's classes.
#[inline]
pub(crate) fn alloc(arena: &mut CellArena, task: &RawTask) -> CellBox {
    fn inline<const WORDS: usize>(arena: &mut CellArena, task: &RawTask) -> CellBox {
        // SAFETY: `write` initializes the whole cell it is given, which the arena made
        // writable; the task is live (the `RawTask` contract) and fits its class's words.
        unsafe { arena.alloc_in_place(|cell| Raw::<WORDS>::write(cell, task)) }
    }
    // The class the seam computed is the one its layout names (`storage_class`).
    debug_assert_eq!(task.class, crashtest_hooks::storage_class(task.layout));
    match task.class {
        0 => inline::<{ STORAGE_WORDS[0] }>(arena, task),
        1 => inline::<{ STORAGE_WORDS[1] }>(arena, task),
        2 => inline::<{ STORAGE_WORDS[2] }>(arena, task),
        3 => inline::<{ STORAGE_WORDS[3] }>(arena, task),
        4 => inline::<{ STORAGE_WORDS[4] }>(arena, task),
        5 => inline::<{ STORAGE_WORDS[5] }>(arena, task),
        6 => inline::<{ STORAGE_WORDS[6] }>(arena, task),
        7 => inline::<{ STORAGE_WORDS[7] }>(arena, task),
        8 => inline::<{ STORAGE_WORDS[8] }>(arena, task),
        9 => inline::<{ STORAGE_WORDS[9] }>(arena, task),
        10 => inline::<{ STORAGE_WORDS[10] }>(arena, task),
        11 => inline::<{ STORAGE_WORDS[11] }>(arena, task),
        12 => inline::<{ STORAGE_WORDS[12] }>(arena, task),
        13 => inline::<{ STORAGE_WORDS[13] }>(arena, task),
        // SAFETY: as above.
        HEAP => unsafe { arena.alloc_in_place(|cell| RawOnHeap::write(cell, task)) },
        other => panic!("no storage class {other}"),
    }
}
