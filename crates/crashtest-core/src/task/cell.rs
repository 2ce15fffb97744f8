//! A task's one allocation: its future, then, once it completes, its output.
//!
//! The cell is generic over the future, so a spawn costs one allocation and the output needs
//! none of its own: when the future completes, the cell drops it in place and keeps the
//! output where the future was, until the join handle takes it through `&mut dyn Any` (an
//! `Option<T>` it downcasts). The executor sees cells only as `dyn TaskCell`.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// The stages of a task's life inside its allocation.
    #[project = StageProjection]
    enum Stage<F: Future> {
        Running { #[pin] future: F },
        Finished { output: Option<F::Output> },
    }
}

pin_project_lite::pin_project! {
    /// A task's future, then its output.
    pub(crate) struct Cell<F: Future> {
        #[pin]
        stage: Stage<F>,
    }
}

impl<F: Future> Cell<F> {
    pub(crate) fn new(future: F) -> Cell<F> {
        Cell {
            stage: Stage::Running { future },
        }
    }
}

/// What the executor and the join handle do with a cell.
pub(crate) trait TaskCell {
    /// Polls the future; when it completes, drops it and keeps its output.
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;

    /// The output, as `&mut Option<F::Output>`, for the join handle to take.
    ///
    /// # Panics
    ///
    /// Panics if the future has not completed.
    fn output(self: Pin<&mut Self>) -> &mut dyn Any;
}

impl<F> TaskCell for Cell<F>
where
    F: Future,
    F::Output: 'static,
{
    fn poll_task(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut stage = self.project().stage;
        let output = match stage.as_mut().project() {
            StageProjection::Running { future } => match future.poll(cx) {
                Poll::Ready(output) => output,
                Poll::Pending => return Poll::Pending,
            },
            StageProjection::Finished { .. } => panic!("a finished task was polled again"),
        };
        stage.set(Stage::Finished {
            output: Some(output),
        });
        Poll::Ready(())
    }

    fn output(self: Pin<&mut Self>) -> &mut dyn Any {
        match self.project().stage.project() {
            StageProjection::Finished { output } => output,
            StageProjection::Running { .. } => panic!("a running task has no output yet"),
        }
    }
}
