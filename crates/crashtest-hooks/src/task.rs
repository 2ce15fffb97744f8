//! Type-erased tasks and the ids of tasks and timers.
//!
//! The stand-in spawns a task as a [`BoxTask`]: its future, then its output, behind one
//! object. The simulator polls it as it polls its own tasks and hands it back to the join
//! handle when it finishes, which takes the output out through [`Task::output`]. The output
//! type is known only to the stand-in, which put it there: a pointer, not `dyn Any`, because
//! tokio's `JoinHandle<T>` is a future for every `T`, not only `T: 'static`.

use std::pin::Pin;
use std::task::{Context, Poll};

/// A task's future and, once it completed, its output.
pub trait Task {
    /// Polls the future; once it completes, drops it and keeps its output.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;

    /// A pointer to the `Option<T>` that holds the output, for the join handle (which knows
    /// `T`) to take it; valid while the task is.
    ///
    /// # Panics
    ///
    /// Panics if the future has not completed.
    fn output(self: Pin<&mut Self>) -> *mut ();
}

/// A task as the simulator holds it.
pub type BoxTask = Pin<Box<dyn Task>>;

/// Names a simulated task: the run it belongs to and the simulator's words for it.
///
/// ```
/// let task = crashtest_hooks::TaskRef::new(3, 7);
/// assert_eq!((task.run(), task.id()), (3, 7));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskRef {
    run: u32,
    id: u64,
}

impl TaskRef {
    /// A task of run `run` that the simulator calls `id`.
    pub fn new(run: u32, id: u64) -> TaskRef {
        TaskRef { run, id }
    }

    /// The run the task belongs to.
    pub fn run(self) -> u32 {
        self.run
    }

    /// The simulator's id of the task.
    pub fn id(self) -> u64 {
        self.id
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
