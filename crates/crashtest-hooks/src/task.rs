//! Type-erased tasks and the ids of tasks and timers.
//!
//! The stand-in hands a task to the simulator by value, without its type: a [`RawTask`] names
//! the task's bytes, their layout, and a [`TaskVtable`] of what can be done with them. The
//! simulator moves the bytes into its own task storage (its arena, for the common sizes), so
//! a spawn through the stand-in costs no allocation of its own, as a spawn through the
//! simulator's API costs none. From then on the simulator polls the task in place, and when it
//! finishes hands the join handle a pointer to its output. The output type is known only to the
//! stand-in: hence pointers, not `dyn Any` (tokio's `JoinHandle<T>` is a future for every `T`,
//! not only `T: 'static`).

use std::alloc::Layout;
use std::task::{Context, Poll};

/// What the simulator may do with a task's bytes.
///
/// # Safety
///
/// Each function is called only with a pointer to bytes that a [`RawTask`] carrying this vtable
/// handed over, moved but otherwise untouched, aligned as the task's layout says; `poll` and
/// `output` only while the task has not been dropped, `drop` exactly once. After `poll`
/// first returns `Ready` the bytes may be moved again (the task has dropped its future and
/// holds only its output), before that never.
#[derive(Debug)]
pub struct TaskVtable {
    /// Polls the task's future; once it completes, the task drops the future and keeps its
    /// output.
    pub poll: unsafe fn(*mut u8, &mut Context<'_>) -> Poll<()>,
    /// A pointer to the `Option<T>` holding a completed task's output.
    pub output: unsafe fn(*mut u8) -> *mut (),
    /// Drops the task in place (its future, or its output if one is left).
    pub drop: unsafe fn(*mut u8),
}

/// A task handed over by value: where its bytes are, their layout, and its vtable.
///
/// The simulator copies `layout.size()` bytes from `bytes` into storage of its own before
/// `spawn` returns; the caller must then forget its copy (`std::mem::forget`) and never use or
/// drop it.
#[derive(Debug)]
pub struct RawTask {
    /// The task's bytes, valid for reads of `layout.size()` bytes.
    pub bytes: *const u8,
    /// The task's layout.
    pub layout: Layout,
    /// What may be done with the bytes.
    pub vtable: &'static TaskVtable,
}

/// Names a simulated task: the run it belongs to, the simulator's id for it, and the kind of
/// storage the simulator keeps it in.
///
/// ```
/// let task = crashtest_hooks::TaskRef::new(3, 7, 1);
/// assert_eq!((task.run(), task.id(), task.storage()), (3, 7, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskRef {
    run: u32,
    storage: u32,
    id: u64,
}

impl TaskRef {
    /// A task of run `run` that the simulator calls `id` and keeps in storage `storage`.
    pub fn new(run: u32, id: u64, storage: u32) -> TaskRef {
        TaskRef { run, storage, id }
    }

    /// The run the task belongs to.
    pub fn run(self) -> u32 {
        self.run
    }

    /// The simulator's id of the task (unique among the run's live tasks).
    pub fn id(self) -> u64 {
        self.id
    }

    /// The simulator's word for where it keeps the task.
    pub fn storage(self) -> u32 {
        self.storage
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
