//! Where the world keeps a stand-in task: its bytes moved into the task's own cell.
//!
//! The world's task cells are generic over the future type, which the stand-in cannot name
//! across the seam; boxing each task instead would cost an allocation per spawn that the
//! core's own spawns do not pay (the general-purpose allocator is slow for a simulation's
//! bursts of short-lived tasks, which is why the core has an arena). So a stand-in task's bytes
//! go into a cell of one of a few fixed sizes, [`Inline`], in the arena like any task, and
//! only a task larger than the largest size, or aligned to more than 8 bytes, goes to the
//! heap, [`OnHeap`]. The size is the task's storage class, carried in its `TaskRef` so that
//! joining it names the same cell type.
//!
//! Both are futures whose output is the task itself, moved out once complete (the task has
//! dropped its future by then and may move): the cell keeps it until the join handle takes the
//! output through the task's vtable, which ends the task. Each ends the task (through the
//! vtable) exactly once: the running form unless it handed the task to its output, the output
//! form by handing the output over or, if nobody takes it, by dropping it.

use std::alloc::Layout;
use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crashtest_hooks::{RawTask, TaskVtable};

/// What the seam needs of a stored task.
pub(super) trait Stored {
    /// Moves `task`'s bytes in.
    fn store(task: RawTask) -> Self;

    /// Moves the completed task's output into `out`, which ends the task.
    ///
    /// # Safety
    ///
    /// The task completed (this is the cell's output form), and `out` is a live `Option<T>`
    /// of its output type.
    unsafe fn take_output(&mut self, out: *mut ());
}

/// A task's bytes in `WORDS` words of the cell itself.
pub(super) struct Inline<const WORDS: usize> {
    words: [MaybeUninit<u64>; WORDS],
    vtable: &'static TaskVtable,
    /// This value owns the task (false once it handed it to its output).
    owns: bool,
    /// The task is polled in place: the cell never moves it while it runs.
    _pinned: PhantomPinned,
}

impl<const WORDS: usize> Stored for Inline<WORDS> {
    fn store(task: RawTask) -> Inline<WORDS> {
        assert!(
            task.layout.size() <= WORDS * 8 && task.layout.align() <= 8,
            "a task stored in a class it does not fit"
        );
        let mut words = [MaybeUninit::uninit(); WORDS];
        // SAFETY: `task.bytes` is valid for reads of `layout.size()` bytes (the `RawTask`
        // contract), which fit in `words`; the two do not overlap (`words` is new). The caller
        // forgets its copy, so the task now lives here only.
        unsafe {
            std::ptr::copy_nonoverlapping(
                task.bytes,
                words.as_mut_ptr().cast::<u8>(),
                task.layout.size(),
            );
        }
        Inline {
            words,
            vtable: task.vtable,
            owns: true,
            _pinned: PhantomPinned,
        }
    }

    unsafe fn take_output(&mut self, out: *mut ()) {
        assert!(self.owns, "a stand-in task's output is taken once");
        self.owns = false;
        // SAFETY: the task completed and is owned here (checked), `out` is its output's slot.
        unsafe { (self.vtable.take_output)(self.bytes(), out) };
    }
}

impl<const WORDS: usize> Inline<WORDS> {
    fn bytes(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }
}

impl<const WORDS: usize> Future for Inline<WORDS> {
    type Output = Inline<WORDS>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Inline<WORDS>> {
        // SAFETY: the task's bytes are not moved here while it runs; they move only below,
        // once `poll` returned `Ready` (allowed by the vtable's contract).
        let this = unsafe { self.get_unchecked_mut() };
        assert!(this.owns, "a completed stand-in task is not polled again");
        // SAFETY: the bytes are the task's, in place since it was stored, 8-aligned.
        let polled = unsafe { (this.vtable.poll)(this.bytes(), cx) };
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.owns = false;
                Poll::Ready(Inline {
                    words: this.words,
                    vtable: this.vtable,
                    owns: true,
                    _pinned: PhantomPinned,
                })
            }
        }
    }
}

impl<const WORDS: usize> Drop for Inline<WORDS> {
    fn drop(&mut self) {
        if self.owns {
            // SAFETY: this value owns the task, which is dropped once, here.
            unsafe { (self.vtable.drop)(self.bytes()) };
        }
    }
}

/// A task's bytes on the heap.
pub(super) struct OnHeap {
    bytes: NonNull<u8>,
    layout: Layout,
    vtable: &'static TaskVtable,
    owns: bool,
}

impl Stored for OnHeap {
    fn store(task: RawTask) -> OnHeap {
        assert!(
            task.layout.size() > 0,
            "a task has at least its state's tag"
        );
        // SAFETY: the layout's size is not zero.
        let raw = unsafe { std::alloc::alloc(task.layout) };
        let bytes =
            NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(task.layout));
        // SAFETY: as for `Inline`: `task.bytes` is readable for the layout's size, and the new
        // block is as large and does not overlap it.
        unsafe { std::ptr::copy_nonoverlapping(task.bytes, bytes.as_ptr(), task.layout.size()) };
        OnHeap {
            bytes,
            layout: task.layout,
            vtable: task.vtable,
            owns: true,
        }
    }

    unsafe fn take_output(&mut self, out: *mut ()) {
        assert!(self.owns, "a stand-in task's output is taken once");
        self.owns = false;
        // SAFETY: the task completed and is owned here (checked), `out` is its output's slot;
        // the task is over then, and its block, allocated with this layout, is freed.
        unsafe {
            (self.vtable.take_output)(self.bytes(), out);
            std::alloc::dealloc(self.bytes.as_ptr(), self.layout);
        }
    }
}

impl OnHeap {
    fn bytes(&mut self) -> *mut u8 {
        self.bytes.as_ptr()
    }
}

impl Future for OnHeap {
    type Output = OnHeap;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<OnHeap> {
        // The task lives in its block, which does not move: `OnHeap` itself may.
        let this = self.get_mut();
        assert!(this.owns, "a completed stand-in task is not polled again");
        // SAFETY: the bytes are the task's, in their block since it was stored.
        let polled = unsafe { (this.vtable.poll)(this.bytes(), cx) };
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => {
                this.owns = false;
                Poll::Ready(OnHeap {
                    bytes: this.bytes,
                    layout: this.layout,
                    vtable: this.vtable,
                    owns: true,
                })
            }
        }
    }
}

impl Drop for OnHeap {
    fn drop(&mut self) {
        if self.owns {
            // SAFETY: this value owns the task and its block: the task is dropped once, then
            // the block, allocated with this layout, is freed.
            unsafe {
                (self.vtable.drop)(self.bytes());
                std::alloc::dealloc(self.bytes.as_ptr(), self.layout);
            }
        }
    }
}
