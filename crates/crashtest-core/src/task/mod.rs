//! Tasks: `spawn`, `JoinHandle`, `yield_now`, shaped like `tokio::task`.
//!
//! Inside a simulation a task belongs to the node that spawned it and lives in the world's
//! task table; the scheduler picks among ready tasks with its seeded stream. Outside a
//! simulation the same calls go to tokio, so code written against this module runs unchanged
//! in production.
//!
//! A panic in a simulated task fails the whole run (a simulator that carried on would hide
//! the bug it exists to find), so a `JoinHandle` never reports a panic inside a simulation.

mod ready;
mod slab;
pub(crate) mod waker;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

pub(crate) use ready::{DEFAULT_WINDOW, ReadyQueue};
pub(crate) use slab::{
    Label, LabelRef, Outcome, TaskCell, TaskFuture, TaskSlot, TaskState, TaskTable,
};

use crate::world;

/// Identifies a task within one run.
///
/// The serial number counts spawns from the start of the run, so `t12` is the thirteenth
/// task spawned; it is stable across replays of the same seed.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let id = crashtest::task::id();
/// assert_eq!(id.to_string(), "t0");
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub(crate) slot: u32,
    pub(crate) serial: u32,
}

// `TaskId::to_u64` packs the slot and the serial into one word, losing nothing.
const _: () = assert!(std::mem::size_of::<TaskId>() == std::mem::size_of::<u64>());

impl TaskId {
    /// The id as one integer (for hashing and output formats).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let id = crashtest::task::id();
    /// assert_eq!(id.to_u64() >> 32, u64::from(id.serial()));
    /// # }).unwrap();
    /// ```
    pub fn to_u64(self) -> u64 {
        let bits = (u64::from(self.serial) << 32) | u64::from(self.slot);
        // The trace and the tokio stand-in's seam read the word back as a task: it must name
        // this very one (every spawn and poll packs one: debug builds only).
        debug_assert_eq!(
            (bits as u32, (bits >> 32) as u32),
            (self.slot, self.serial),
            "task {self} does not round-trip through its word"
        );
        bits
    }

    /// The spawn serial number of the task.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// // The test body is the first task of a run.
    /// assert_eq!(crashtest::task::id().serial(), 0);
    /// # }).unwrap();
    /// ```
    pub fn serial(self) -> u32 {
        self.serial
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.serial)
    }
}

/// The id of the task being polled.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let me = crashtest::task::id();
/// let child = crashtest::spawn(async { crashtest::task::id() });
/// assert_ne!(child.await.unwrap(), me);
/// # }).unwrap();
/// ```
pub fn id() -> TaskId {
    world::with(|w| w.current_task())
        .flatten()
        .expect("task::id() is only meaningful inside a simulated task")
}

/// Why awaiting a [`JoinHandle`] gave no output.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let handle = crashtest::spawn(std::future::pending::<()>());
/// handle.abort();
/// let error = handle.await.unwrap_err();
/// assert_eq!(error.to_string(), "task was cancelled");
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct JoinError {
    repr: JoinErrorRepr,
}

#[derive(Debug)]
enum JoinErrorRepr {
    Cancelled,
    Real(tokio::task::JoinError),
}

impl JoinError {
    /// True if the task was aborted, or dropped because its node was killed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let handle = crashtest::spawn(std::future::pending::<()>());
    /// handle.abort();
    /// assert!(handle.await.unwrap_err().is_cancelled());
    /// # }).unwrap();
    /// ```
    pub fn is_cancelled(&self) -> bool {
        match &self.repr {
            JoinErrorRepr::Cancelled => true,
            JoinErrorRepr::Real(e) => {
                // tokio's join error is one of the two: the answers here rely on it.
                assert_ne!(
                    e.is_cancelled(),
                    e.is_panic(),
                    "a tokio join error is a cancel or a panic"
                );
                e.is_cancelled()
            }
        }
    }

    /// True if the task panicked. Only possible outside a simulation: inside one, a panic
    /// fails the run.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let handle = crashtest::spawn(std::future::pending::<()>());
    /// handle.abort();
    /// assert!(!handle.await.unwrap_err().is_panic());
    /// # }).unwrap();
    /// ```
    pub fn is_panic(&self) -> bool {
        match &self.repr {
            JoinErrorRepr::Cancelled => false,
            JoinErrorRepr::Real(e) => e.is_panic(),
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            JoinErrorRepr::Cancelled => write!(f, "task was cancelled"),
            JoinErrorRepr::Real(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for JoinError {}

/// An owned permission to await a task's output; dropping it detaches the task.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let handle = crashtest::spawn(async { 6 * 7 });
/// assert_eq!(handle.await.unwrap(), 42);
/// # }).unwrap();
/// ```
pub struct JoinHandle<T> {
    inner: JoinInner<T>,
}

enum JoinInner<T> {
    Sim {
        run: u32,
        id: TaskId,
        taken: bool,
        _output: PhantomData<fn() -> T>,
    },
    Real(tokio::task::JoinHandle<T>),
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            JoinInner::Sim { id, .. } => f.debug_tuple("JoinHandle").field(id).finish(),
            JoinInner::Real(h) => f.debug_tuple("JoinHandle").field(&h.id()).finish(),
        }
    }
}

impl<T> JoinHandle<T> {
    /// Cancels the task: its future is dropped at once (or, if the task aborts itself, when
    /// its poll returns). Awaiting the handle then gives a cancelled [`JoinError`].
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let handle = crashtest::spawn(std::future::pending::<()>());
    /// handle.abort();
    /// assert!(handle.is_finished());
    /// # }).unwrap();
    /// ```
    pub fn abort(&self) {
        match &self.inner {
            JoinInner::Sim { run, id, .. } => {
                world::try_with(|w| {
                    if !w.same_run(*run) {
                        return;
                    }
                    w.abort(*id);
                    // A task that aborts itself ends when its poll returns; any other ends now.
                    assert!(
                        w.is_finished(*id) || w.current_task() == Some(*id),
                        "task {id} outlived its abort"
                    );
                });
            }
            JoinInner::Real(h) => h.abort(),
        }
    }

    /// True once the task completed or was cancelled.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let handle = crashtest::spawn(async {});
    /// assert!(!handle.is_finished());
    /// crashtest::task::yield_now().await;
    /// crashtest::task::yield_now().await;
    /// # let _ = handle.await;
    /// # }).unwrap();
    /// ```
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            JoinInner::Sim { run, id, taken, .. } => {
                let finished =
                    world::try_with(|w| !w.same_run(*run) || w.is_finished(*id)).unwrap_or(true);
                // A handle that took its task's output freed the task.
                debug_assert!(
                    !*taken || finished,
                    "task {id} was joined but is not finished"
                );
                *taken || finished
            }
            JoinInner::Real(h) => h.is_finished(),
        }
    }
}

impl<T: 'static> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY-free projection: `JoinHandle` is `Unpin` (no field is pinned).
        let this = self.get_mut();
        match &mut this.inner {
            JoinInner::Sim { run, id, taken, .. } => {
                assert!(!*taken, "JoinHandle polled after it returned its output");
                let polled = world::with(|w| {
                    assert!(
                        w.same_run(*run),
                        "JoinHandle awaited in another simulation run"
                    );
                    let polled = w.poll_join::<T>(*id, cx);
                    // A handle that took its outcome freed its task: the id is stale now.
                    debug_assert!(polled.is_pending() || w.is_finished(*id));
                    // And one that waits, waits for a task that has not finished (a second look
                    // into the task table on every join: debug builds only).
                    debug_assert!(
                        polled.is_ready() || !w.is_finished(*id),
                        "JoinHandle of finished task {id} is pending"
                    );
                    polled
                })
                .expect("a simulated task's JoinHandle was awaited outside its simulation");
                match polled {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(output) => {
                        *taken = true;
                        Poll::Ready(output.ok_or(JoinError {
                            repr: JoinErrorRepr::Cancelled,
                        }))
                    }
                }
            }
            JoinInner::Real(h) => Pin::new(h).poll(cx).map(|r| {
                r.map_err(|e| JoinError {
                    repr: JoinErrorRepr::Real(e),
                })
            }),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let JoinInner::Sim {
            run,
            id,
            taken: false,
            ..
        } = &self.inner
        {
            world::try_with(|w| w.same_run(*run).then(|| w.detach(*id)));
        }
    }
}

/// Spawns a task on the current node (inside a simulation) or on tokio (outside one).
///
/// The bounds are tokio's, so code that compiles here compiles against tokio.
///
/// # Panics
///
/// Outside a simulation, panics if no tokio runtime is running (as `tokio::spawn` does).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let handle = crashtest::spawn(async { "done" });
/// assert_eq!(handle.await.unwrap(), "done");
/// # }).unwrap();
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Builder::new().spawn(future)
}

/// Spawns a task that need not be `Send` (tokio's `spawn_local`; outside a simulation it
/// needs a `tokio::task::LocalSet`).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let shared = std::rc::Rc::new(5);
/// let handle = crashtest::task::spawn_local(async move { *shared + 1 });
/// assert_eq!(handle.await.unwrap(), 6);
/// # }).unwrap();
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    Builder::new().spawn_local(future)
}

/// Builds a task with a name, which appears in traces and failure reports.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let handle = crashtest::task::Builder::new().name("flusher").spawn(async { 1 });
/// assert_eq!(handle.await.unwrap(), 1);
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct Builder<'a> {
    name: Option<&'a str>,
}

impl<'a> Builder<'a> {
    /// A builder with no name.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::task::Builder::new();
    /// ```
    pub fn new() -> Builder<'a> {
        Builder { name: None }
    }

    /// Names the task.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::task::Builder::new().name("gossip");
    /// ```
    pub fn name(self, name: &'a str) -> Builder<'a> {
        Builder { name: Some(name) }
    }

    /// Spawns a `Send` task; see [`spawn`].
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let h = crashtest::task::Builder::new().name("x").spawn(async { 2 });
    /// assert_eq!(h.await.unwrap(), 2);
    /// # }).unwrap();
    /// ```
    #[track_caller]
    pub fn spawn<F>(self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if world::is_simulation() {
            return self.spawn_sim(future);
        }
        assert!(
            tokio::runtime::Handle::try_current().is_ok(),
            "crashtest::spawn was called outside a simulation and outside a tokio runtime: \
             run the code inside crashtest::Sim::run (tests) or a tokio runtime (production)"
        );
        JoinHandle {
            inner: JoinInner::Real(tokio::spawn(future)),
        }
    }

    /// Spawns a task that need not be `Send`; see [`spawn_local`].
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let h = crashtest::task::Builder::new().spawn_local(async { 3 });
    /// assert_eq!(h.await.unwrap(), 3);
    /// # }).unwrap();
    /// ```
    #[track_caller]
    pub fn spawn_local<F>(self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        if world::is_simulation() {
            return self.spawn_sim(future);
        }
        JoinHandle {
            inner: JoinInner::Real(tokio::task::spawn_local(future)),
        }
    }

    #[track_caller]
    fn spawn_sim<F>(self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let node = world::with(|w| w.current_node()).expect("checked inside a simulation");
        // Reports call the task by its name and where the program spawned it.
        let label = Label::spawned(self.name, std::panic::Location::caller());
        spawn_sim_on(node, label, future)
    }
}

/// Yields to the scheduler once: the task goes back to the ready queue, and the scheduler may
/// pick another ready task first.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::task::yield_now().await;
/// # }).unwrap();
/// ```
pub async fn yield_now() {
    if !world::is_simulation() {
        return tokio::task::yield_now().await;
    }
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

pub(crate) fn spawn_sim_on<F>(
    node: crate::node::NodeId,
    label: Label,
    future: F,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let (run, id) = world::with(|w| (w.run_tag(), w.spawn_on(node, label, future)))
        .expect("simulated tasks are spawned inside a simulation");
    JoinHandle {
        inner: JoinInner::Sim {
            run,
            id,
            taken: false,
            _output: PhantomData,
        },
    }
}

/// A task's future before it is spawned, when it is made outside the world (a run's body, a
/// node's main task): boxed, since its type is erased until the world spawns it.
pub(crate) type BoxedUnit = Pin<Box<dyn Future<Output = ()>>>;
