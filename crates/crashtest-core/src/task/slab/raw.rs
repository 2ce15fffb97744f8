//! Cells for tasks whose type the core cannot name: the tokio stand-in's, handed over as bytes
//! and a vtable (`crashtest_hooks::RawTask`).
//!
//! The task table's cells are generic over the future type, which the stand-in cannot name
//! across the seam; boxing each task instead would cost an allocation per spawn that the
//! core's own spawns do not pay. So a raw task is moved once, straight from the spawner's
//! stack into an arena block (by its vtable's `move_to`, a copy of its own type), inside a [`Raw`] cell of one of a few fixed sizes
//! (`crashtest_hooks::STORAGE_WORDS`, chosen by the task's storage class), and polled there in
//! place through the task's vtable. Only a task larger than the largest size, or aligned to
//! more than 8 bytes, goes to a heap block of its own ([`RawOnHeap`]).
//!
//! A raw task keeps its output where its future was (the stand-in's task type does that), so
//! completing copies nothing; the join handle's side moves the output out through the
//! vtable's `take_output`, reaching the cell through [`RawTask`]'s `&mut dyn Any` (see
//! [`RawOutput`]) as a typed cell's output is reached.
//!
//! Invariant: a raw task is ended through its vtable exactly once: by `take_output` (the
//! join), or by `drop` when the cell is dropped first (aborted, detached, or never joined).

use std::alloc::Layout;
use std::any::Any;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crashtest_hooks::{RawTask, STORAGE_WORDS, TaskVtable};

use super::arena::{CellArena, CellBox};
use super::cell::TaskCell;

/// Where a raw task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Running,
    /// Completed: the task's bytes hold its output.
    Finished,
    /// The output was moved out: nothing of the task is left.
    Over,
}

/// What a raw cell gives the join handle's side, as `&mut dyn Any`: the task's bytes and
/// what may be done with them.
pub(crate) struct RawOutput {
    vtable: &'static TaskVtable,
    /// The task's bytes; set when the output is asked for (the cell does not move then).
    bytes: *mut u8,
    stage: Stage,
}

impl RawOutput {
    /// Moves the completed task's output into `out`, which ends the task.
    ///
    /// # Safety
    ///
    /// `out` is a live `Option<T>`, `T` the output type of the task's vtable.
    ///
    /// # Panics
    ///
    /// Panics if the task did not complete or its output was taken.
    pub(crate) unsafe fn take(&mut self, out: *mut ()) {
        assert_eq!(
            self.stage,
            Stage::Finished,
            "a raw task's output is taken once"
        );
        // The bytes are located when the output is asked for (`output`), before any take.
        assert!(
            !self.bytes.is_null(),
            "a raw task's output was taken before it was asked for"
        );
        // The output is written through `out`: a null slot is no `Option<T>`.
        assert!(!out.is_null(), "a raw task's output taken into no slot");
        self.stage = Stage::Over;
        // SAFETY: the task completed and its bytes are live (checked), `out` is its output's
        // slot (the caller's promise); the stage now says the task is over.
        unsafe { (self.vtable.take_output)(self.bytes, out) };
    }

    fn poll(&mut self, bytes: *mut u8, cx: &mut Context<'_>) -> Poll<()> {
        assert_eq!(
            self.stage,
            Stage::Running,
            "a completed raw task is not polled again"
        );
        // SAFETY: `bytes` are the running task's, in place since they were stored, aligned
        // as its layout says (the cell's contract).
        let polled = unsafe { (self.vtable.poll)(bytes, cx) };
        if polled.is_ready() {
            self.stage = Stage::Finished;
        }
        polled
    }

    fn output(&mut self, bytes: *mut u8) -> &mut dyn Any {
        assert_eq!(
            self.stage,
            Stage::Finished,
            "a running task has no output yet"
        );
        self.bytes = bytes;
        self
    }

    /// Ends the task through its vtable unless its output was taken.
    fn end(&mut self, bytes: *mut u8) {
        if self.stage != Stage::Over {
            self.stage = Stage::Over;
            // SAFETY: the task's bytes are live and not ended yet (its stage said so).
            unsafe { (self.vtable.drop)(bytes) };
        }
    }
}

/// A raw task's bytes in `WORDS` words of its cell.
pub(crate) struct Raw<const WORDS: usize> {
    task: RawOutput,
    /// In an `UnsafeCell`: the task's future keeps references into its own state, which a
    /// shared reference to the cell (the arena reads its size through one) must not freeze.
    words: UnsafeCell<[MaybeUninit<u64>; WORDS]>,
}

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
            (&raw mut (*cell).task).write(RawOutput {
                vtable: task.vtable,
                bytes: std::ptr::null_mut(),
                stage: Stage::Running,
            });
            (task.vtable.move_to)(task.bytes, (&raw mut (*cell).words).cast::<u8>());
        }
    }

    fn parts(self: Pin<&mut Self>) -> (&mut RawOutput, *mut u8) {
        // SAFETY: the task's bytes are never moved out of the words; only the header is
        // handed out by reference.
        let this = unsafe { self.get_unchecked_mut() };
        (&mut this.task, this.words.get().cast())
    }
}

impl<const WORDS: usize> TaskCell for Raw<WORDS> {
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let (task, bytes) = self.parts();
        task.poll(bytes, cx)
    }

    fn output(self: Pin<&mut Self>) -> &mut dyn Any {
        let (task, bytes) = self.parts();
        task.output(bytes)
    }
}

impl<const WORDS: usize> Drop for Raw<WORDS> {
    fn drop(&mut self) {
        self.task.end(self.words.get().cast());
    }
}

/// A raw task's bytes in a heap block of their own.
pub(crate) struct RawOnHeap {
    task: RawOutput,
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
                task: RawOutput {
                    vtable: task.vtable,
                    bytes: std::ptr::null_mut(),
                    stage: Stage::Running,
                },
                block,
                layout: task.layout,
            });
        }
    }
}

impl TaskCell for RawOnHeap {
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // The task lives in its block, which never moves; the cell itself is not pinned data.
        let this = self.get_mut();
        this.task.poll(this.block.as_ptr(), cx)
    }

    fn output(self: Pin<&mut Self>) -> &mut dyn Any {
        let this = self.get_mut();
        this.task.output(this.block.as_ptr())
    }
}

impl Drop for RawOnHeap {
    fn drop(&mut self) {
        self.task.end(self.block.as_ptr());
        // SAFETY: the block was allocated with this layout and the task in it is over.
        unsafe { std::alloc::dealloc(self.block.as_ptr(), self.layout) };
    }
}

const HEAP: u32 = STORAGE_WORDS.len() as u32;
const _: () = assert!(HEAP == 10, "alloc names one cell type per storage class");

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
        // SAFETY: as above.
        HEAP => unsafe { arena.alloc_in_place(|cell| RawOnHeap::write(cell, task)) },
        other => panic!("no storage class {other}"),
    }
}
