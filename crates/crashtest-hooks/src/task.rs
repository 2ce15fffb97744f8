//! Type-erased tasks and the ids of tasks and timers.
//!
//! The stand-in hands a task to the simulator by value, without its type: a [`RawTask`] names
//! the task's bytes, their layout, and a [`TaskVtable`] of what can be done with them. The
//! simulator moves the bytes into its own task storage (its arena, for the common sizes), so
//! a spawn through the stand-in costs no allocation of its own, as a spawn through the
//! simulator's API costs none. Which storage is a constant of the task's type
//! ([`storage_class`]), computed by the stand-in when it compiles, not per spawn. From then on
//! the simulator polls the task in place, and when it finishes moves the output straight into
//! the join handle's slot. The output type is known only to the stand-in: hence pointers, not
//! `dyn Any` (tokio's `JoinHandle<T>` is a future for every `T`, not only `T: 'static`).

use std::alloc::Layout;
use std::task::{Context, Poll};

/// What the simulator may do with a task's bytes.
///
/// # Safety
///
/// Each function is called only with a pointer to bytes that a [`RawTask`] carrying this vtable
/// handed over, moved but otherwise untouched, aligned as the task's layout says; `poll` only
/// until it returns `Ready`; `take_output` at most once, after that; and `drop` exactly once,
/// last, which ends the task. The task keeps its own stage (the simulator keeps none), so
/// each function checks the stage it needs. After `poll` first returns `Ready` the bytes may
/// be moved again (the task has dropped its future and holds only its output), before that
/// never.
#[derive(Debug)]
pub struct TaskVtable {
    /// Moves the task's bytes from the first pointer to the second (a `RawTask`'s bytes into
    /// the simulator's storage): a copy of the task's type, whose size the compiler knows,
    /// instead of a copy of a size known only at run time.
    pub move_to: unsafe fn(*const u8, *mut u8),
    /// Polls the task's future; once it completes, the task drops the future and keeps its
    /// output.
    pub poll: unsafe fn(*mut u8, &mut Context<'_>) -> Poll<()>,
    /// Moves a completed task's output into the second pointer, an `Option<T>`, leaving the
    /// task finished with nothing in it (its `drop` still runs, and drops nothing).
    pub take_output: unsafe fn(*mut u8, *mut ()),
    /// Drops the task in place (its future, its output, or nothing once it was taken).
    pub drop: unsafe fn(*mut u8),
}

/// The words of the simulator's inline task storage sizes, smallest first: storage class `i`
/// holds a task of up to `STORAGE_WORDS[i]` 8-byte words, aligned to at most 8; the class after
/// the last (`STORAGE_WORDS.len()`) is the heap.
pub const STORAGE_WORDS: [usize; 14] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64];

/// The smallest storage class that holds a task of `layout` (see [`STORAGE_WORDS`]).
///
/// ```
/// use std::alloc::Layout;
/// use crashtest_hooks::{STORAGE_WORDS, storage_class};
/// assert_eq!(storage_class(Layout::new::<u64>()), 0);
/// assert_eq!(storage_class(Layout::new::<[u64; 3]>()), 2);
/// assert_eq!(storage_class(Layout::new::<[u64; 7]>()), 6);
/// assert_eq!(storage_class(Layout::new::<[u64; 65]>()), STORAGE_WORDS.len() as u32);
/// ```
pub const fn storage_class(layout: Layout) -> u32 {
    let heap = STORAGE_WORDS.len() as u32;
    if layout.align() > 8 {
        return heap;
    }
    let words = layout.size().div_ceil(8);
    let mut class = 0;
    while class < STORAGE_WORDS.len() {
        if words <= STORAGE_WORDS[class] {
            return class as u32;
        }
        class += 1;
    }
    heap
}

/// A task handed over by value: where its bytes are, their layout and storage class, and its
/// vtable.
///
/// The simulator moves the task from `bytes` into storage of its own (through the vtable's
/// `move_to`) before `spawn` returns; the caller must then forget its copy
/// (`std::mem::forget`) and never use or drop it.
#[derive(Debug)]
pub struct RawTask {
    /// The task's bytes, valid for reads of `layout.size()` bytes.
    pub bytes: *const u8,
    /// The task's layout.
    pub layout: Layout,
    /// `storage_class(layout)`, computed once per task type.
    pub class: u32,
    /// What may be done with the bytes.
    pub vtable: &'static TaskVtable,
}

/// Names a simulated task: the run it belongs to, the simulator's id for it, and the kind of
/// storage the simulator keeps it in.
///
/// ```
/// let task = crashtest_hooks::TaskRef::new(3, 7);
/// assert_eq!((task.run(), task.id()), (3, 7));
/// assert_eq!(size_of::<crashtest_hooks::TaskRef>(), 12);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskRef {
    run: u32,
    /// The id's low and high halves: 4-byte aligned, so that a join handle holding a
    /// `TaskRef`, a flag and an enum tag fits in 16 bytes (a simulation may keep a great
    /// many of them).
    id: [u32; 2],
}

impl TaskRef {
    /// A task of run `run` that the simulator calls `id`.
    pub fn new(run: u32, id: u64) -> TaskRef {
        TaskRef {
            run,
            id: [id as u32, (id >> 32) as u32],
        }
    }

    /// The run the task belongs to.
    pub fn run(self) -> u32 {
        self.run
    }

    /// The simulator's id of the task (unique among the run's live tasks).
    pub fn id(self) -> u64 {
        u64::from(self.id[0]) | (u64::from(self.id[1]) << 32)
    }
}

/// Names an armed timer: the run it belongs to and the simulator's key for it.
///
/// ```
/// let timer = crashtest_hooks::TimerRef::new(3, 9);
/// assert_eq!((timer.run(), timer.key()), (3, 9));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerRef {
    run: u32,
    key: u64,
}

impl TimerRef {
    /// A timer of run `run` that the simulator keys `key`.
    pub fn new(run: u32, key: u64) -> TimerRef {
        TimerRef { run, key }
    }

    /// The run the timer belongs to.
    pub fn run(self) -> u32 {
        self.run
    }

    /// The simulator's key of the timer.
    pub fn key(self) -> u64 {
        self.key
    }
}
