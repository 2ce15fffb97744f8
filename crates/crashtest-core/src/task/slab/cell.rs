//! A task's one allocation: its future, then, once it completes, its output.
//!
//! The cell is generic over the future, so a spawn costs one allocation and the output needs
//! none of its own: when the future completes, the cell drops it in place and keeps the
//! output where the future was, until the join handle takes it through `&mut dyn Any` (an
//! `Option<T>` it downcasts). The executor sees cells only as `dyn TaskCell`, which the raw
//! cells of the tokio stand-in's tasks (`raw`) implement too.

use std::any::Any;
use std::cell::UnsafeCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The stages of a task's life inside its allocation.
enum Stage<F: Future> {
    Running(F),
    Finished(Option<F::Output>),
}

/// A task's future, then its output.
///
/// The stage sits in an `UnsafeCell`: the arena reads a live cell's size through a shared
/// reference (`Layout::for_value`) before dropping it, and under Rust's aliasing rules a
/// shared reference to plain memory would freeze it, invalidating the `&mut`s a future keeps
/// into its own state. Interior mutability tells the compiler the memory may still change.
pub(crate) struct Cell<F: Future> {
    stage: UnsafeCell<Stage<F>>,
}

impl<F: Future> Cell<F> {
    pub(crate) fn new(future: F) -> Cell<F> {
        Cell {
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
}

/// What the executor and the join handle do with a cell.
pub(crate) trait TaskCell {
    /// Polls the future; when it completes, drops it and keeps its output.
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;

    /// The output, as `&mut Option<F::Output>`, for the join handle to take; a raw cell
    /// (`raw`) has none to give this way, and answers `None`.
    ///
    /// # Panics
    ///
    /// Panics if the future has not completed.
    fn output(self: Pin<&mut Self>) -> Option<&mut dyn Any> {
        None
    }

    /// For a raw cell: moves the finished task's output into `out` through the task's vtable
    /// and returns true. A typed cell returns false: its output is reached by [`output`].
    ///
    /// # Safety
    ///
    /// The task finished and its output was not taken; `out` is a live `Option<T>`, `T` the
    /// task's output type.
    ///
    /// [`output`]: TaskCell::output
    unsafe fn take_raw_output(self: Pin<&mut Self>, out: *mut ()) -> bool {
        let _ = out;
        false
    }
}

impl<F> TaskCell for Cell<F>
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

    fn output(self: Pin<&mut Self>) -> Option<&mut dyn Any> {
        match self.stage() {
            Stage::Finished(output) => {
                // The join handle takes the output once, then the cell is dropped.
                assert!(
                    output.is_some(),
                    "a task's output was asked for after it was taken"
                );
                Some(output)
            }
            Stage::Running(_) => panic!("a running task has no output yet"),
        }
    }
}
