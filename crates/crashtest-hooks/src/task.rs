//! Tasks handed to the simulator, and the ids of tasks and timers.
//!
//! A task lives in one [`FutureCell`]: its future, then, once the future completes, its
//! output in the same place. The simulator polls and drops cells only through [`TaskCell`],
//! so a cell whose type it cannot name (the tokio stand-in's, generic over the user's future)
//! is as good to it as its own: the stand-in builds the cell and hands it over by value as a
//! [`RawTask`] (its bytes, its layout, and how to view bytes at an address as the cell), and
//! the simulator moves the bytes into its own task storage. From then on a stand-in task is
//! the same kind of cell, behind the same kind of pointer, as a task spawned through the
//! simulator's API: one allocation from the simulator's arena, one dynamic call per poll, no
//! header of its own. The output type is known only to the spawner, so the join side moves
//! the output out through a pointer to the handle's slot ([`TaskCell::take_output`]): tokio's
//! `JoinHandle<T>` is a future for every `T`, not only `T: 'static`, so `dyn Any` cannot be
//! its only way.

use std::alloc::Layout;
use std::any::Any;
use std::cell::UnsafeCell;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// What the simulator does with a task's cell: poll it in place until it completes, then move
/// its output out; dropping the cell ends the task (its future, its output, or nothing once
/// the output was taken).
pub trait TaskCell {
    /// Polls the future; when it completes, drops it and keeps its output.
    ///
    /// # Panics
    ///
    /// Panics if the future already completed.
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;

    /// The output, as `&mut Option<Output>` behind `dyn Any`, for a join handle that knows
    /// its type to take.
    ///
    /// # Panics
    ///
    /// Panics if the future has not completed.
    fn output(self: Pin<&mut Self>) -> &mut dyn Any;

    /// Moves the output into `out`, leaving the cell finished with nothing in it.
    ///
    /// # Safety
    ///
    /// `out` points to a live `Option<Output>`, `Output` the cell's future's output type.
    ///
    /// # Panics
    ///
    /// Panics if the future has not completed, or its output was taken.
    unsafe fn take_output(self: Pin<&mut Self>, out: *mut ());
}

/// The stages of a task's life inside its cell.
enum Stage<F: Future> {
    Running(F),
    Finished(Option<F::Output>),
}

/// A task's one allocation: its future, then its output.
///
/// The stage sits in an `UnsafeCell`: the simulator reads a live cell's size through a
/// shared reference (`Layout::for_value`) before dropping it, and under Rust's aliasing rules
/// a shared reference to plain memory would freeze it, invalidating the `&mut`s a future
/// keeps into its own state. Interior mutability tells the compiler the memory may still
/// change.
///
/// ```
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
/// use crashtest_hooks::{FutureCell, TaskCell};
///
/// let mut cell = pin!(FutureCell::new(async { 6 * 7 }));
/// let mut cx = Context::from_waker(Waker::noop());
/// assert_eq!(cell.as_mut().poll_task(&mut cx), Poll::Ready(()));
/// let output = cell.as_mut().output().downcast_mut::<Option<i32>>().unwrap();
/// assert_eq!(output.take(), Some(42));
/// ```
pub struct FutureCell<F: Future> {
    stage: UnsafeCell<Stage<F>>,
}

impl<F: Future> FutureCell<F> {
    /// A cell running `future`.
    pub fn new(future: F) -> FutureCell<F> {
        FutureCell {
            stage: UnsafeCell::new(Stage::Running(future)),
        }
    }

    /// The stage, mutably, still pinned in place.
    fn stage(self: Pin<&mut Self>) -> &mut Stage<F> {
        // SAFETY: `&mut self` is exclusive, so no other reference to the stage exists; the
        // caller keeps the pin's promise: the future is only ever polled in place (through
        // `Pin::new_unchecked` below) and dropped in place (by assignment), never moved out.
        unsafe { &mut *self.get_unchecked_mut().stage.get() }
    }

    /// The finished task's output slot.
    fn finished(self: Pin<&mut Self>) -> &mut Option<F::Output> {
        match self.stage() {
            Stage::Finished(output) => {
                // A join takes the output once, then the cell is dropped.
                assert!(
                    output.is_some(),
                    "a task's output was asked for after it was taken"
                );
                output
            }
            Stage::Running(_) => panic!("a running task has no output yet"),
        }
    }
}

impl<F: Future> std::fmt::Debug for FutureCell<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FutureCell").finish_non_exhaustive()
    }
}

impl<F> TaskCell for FutureCell<F>
where
    F: Future,
    F::Output: 'static,
{
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let stage = self.stage();
        let output = match stage {
            Stage::Running(future) => {
                // SAFETY: the future lives in the pinned cell and is never moved out of it
                // (see `stage`).
                match unsafe { Pin::new_unchecked(future) }.poll(cx) {
                    Poll::Ready(output) => output,
                    Poll::Pending => return Poll::Pending,
                }
            }
            Stage::Finished(_) => panic!("a finished task was polled again"),
        };
        // Drops the future in place, as `Pin::set` does, and keeps the output where it was.
        *stage = Stage::Finished(Some(output));
        Poll::Ready(())
    }

    fn output(self: Pin<&mut Self>) -> &mut dyn Any {
        self.finished()
    }

    unsafe fn take_output(self: Pin<&mut Self>, out: *mut ()) {
        let output = self.finished().take();
        // SAFETY: `out` is a live `Option<F::Output>` (the caller's promise).
        unsafe { *out.cast::<Option<F::Output>>() = output };
    }
}

/// A task cell handed over by value: where its bytes are, their layout, and how to view bytes
/// at an address as the cell (a pointer with the cell type's vtable, made where the type is
/// known).
///
/// Made only by [`RawTask::spawn`], which forgets its copy of the cell and lends the bytes to
/// the simulator's `spawn` for that call alone (the lifetime `'a`). The simulator moves them
/// with [`RawTask::move_to`], which consumes the `RawTask`, so they move at most once; if
/// `spawn` returns without moving them, the task leaks, never runs, and is never dropped.
#[derive(Debug)]
pub struct RawTask<'a> {
    bytes: NonNull<u8>,
    /// Two words in all, so that the `RawTask` passes in registers: written to memory and
    /// read back in wider loads, it stalled every spawn.
    kind: &'static CellKind,
    /// The bytes are the spawner's, borrowed for the call to `spawn`.
    _borrowed: PhantomData<&'a mut u8>,
}

/// What is known of a cell type: its layout, and how to view bytes at an address as it.
#[derive(Debug)]
struct CellKind {
    layout: Layout,
    at: fn(*mut u8) -> *mut dyn TaskCell,
}

/// The [`CellKind`] of `C`, a constant (so a `&'static` to it costs nothing per spawn).
struct KindOf<C>(PhantomData<C>);

impl<C: TaskCell + 'static> KindOf<C> {
    const KIND: CellKind = CellKind {
        layout: Layout::new::<C>(),
        at: Self::at,
    };

    /// The cell at `bytes`, as the simulator keeps it (valid where `bytes` holds a `C`).
    fn at(bytes: *mut u8) -> *mut dyn TaskCell {
        bytes.cast::<C>()
    }
}

impl RawTask<'_> {
    /// Spawns `cell` in `sim` under `name`, known in reports also by where its caller was
    /// called (the program's spawn): hands its bytes to the simulator, which moves them into
    /// its own storage. The task then runs and is dropped by the simulator alone.
    #[track_caller]
    pub fn spawn<C: TaskCell + 'static>(
        sim: &dyn crate::Simulator,
        name: Option<&str>,
        cell: C,
    ) -> TaskRef {
        // Never dropped here: its bytes move into the simulator, which owns the task from
        // then on (and if `spawn` unwinds first, the task leaks rather than dropping twice).
        let mut cell = ManuallyDrop::new(cell);
        sim.spawn(
            name,
            std::panic::Location::caller(),
            RawTask::lend(&mut cell),
        )
    }

    /// Lends `cell`'s bytes for as long as the borrow.
    fn lend<C: TaskCell + 'static>(cell: &mut ManuallyDrop<C>) -> RawTask<'_> {
        RawTask {
            bytes: NonNull::from(&mut **cell).cast(),
            kind: &KindOf::<C>::KIND,
            _borrowed: PhantomData,
        }
    }

    /// The cell's size and alignment.
    pub fn layout(&self) -> Layout {
        self.kind.layout
    }

    /// Moves the cell's bytes to `to` and returns the cell there.
    ///
    /// # Safety
    ///
    /// `to` is valid for writes of the cell's layout, aligned to it, and does not overlap the
    /// bytes. The returned cell is live, pinned at `to`, and must be dropped there exactly
    /// once.
    pub unsafe fn move_to(self, to: NonNull<u8>) -> NonNull<dyn TaskCell> {
        // SAFETY: the bytes are a live cell of `layout`, borrowed for as long as `self` lives
        // and moved nowhere yet (`spawn` made `self` from them, and moving consumes it), and
        // `to` fits them without overlap (the caller's promise); `at` views them as their own
        // type, whose pointer is not null.
        unsafe {
            std::ptr::copy_nonoverlapping(self.bytes.as_ptr(), to.as_ptr(), self.layout().size());
            NonNull::new_unchecked((self.kind.at)(to.as_ptr()))
        }
    }
}

/// Names a simulated task: the run it belongs to and the simulator's id for it.
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
    /// `TaskRef` and an enum tag fits in 16 bytes (a simulation may keep a great many of
    /// them).
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
