//! `JoinHandle`, `AbortHandle`, `JoinError` and task `Id`: tokio's or the simulation's.
//!
//! Each is an enum of the two cases, chosen when the task was spawned, so a handle's methods
//! pay a match and no thread-local. A simulated task is a `crashtest_hooks::FutureCell` (its
//! future, then its output), the same cell the world's own tasks live in, moved into the
//! world's task storage when spawned; its handle holds only the task's [`TaskRef`], and takes
//! the output out of the finished task when awaited.
//!
//! tokio's `JoinError` and `Id` cannot be made outside tokio, so this module has its own,
//! wrapping tokio's when the task was real. A simulated task never reports a panic: a panic
//! in a simulated task fails the run.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crashtest_hooks::{FutureCell, RawTask, Simulator, TaskRef};

use crate::seam;

/// Spawns `future` in the simulation `sim`, on the calling node. The task's cell moves into
/// the simulator's storage: no allocation of the stand-in's own. Reports know the task by
/// where the program spawned it, so every public spawn down to here tracks its caller.
#[track_caller]
pub(crate) fn spawn_sim<F>(
    sim: &'static dyn Simulator,
    name: Option<&str>,
    future: F,
) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    JoinHandle::sim(RawTask::spawn(sim, name, FutureCell::new(future)))
}

/// An owned permission to await a task's output, like `tokio::task::JoinHandle`; dropping it
/// detaches the task.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let handle = tokio::spawn(async { 6 * 7 });
///     assert_eq!(handle.await.unwrap(), 42);
/// }).unwrap();
/// ```
pub struct JoinHandle<T> {
    inner: Join<T>,
}

// Two words, as tokio's own handle is one: a simulation may hold a great many.
const _: () = assert!(size_of::<JoinHandle<()>>() == 16);

enum Join<T> {
    Real(real::task::JoinHandle<T>),
    /// A simulated task whose output is not taken yet.
    Sim(TaskRef, PhantomData<fn() -> T>),
    /// A simulated task whose output was taken (or found cancelled): its slot is gone. A
    /// variant of its own rather than a flag beside the task: a spawn then writes the handle
    /// as its tag and the task's words, where a flag made the compiler copy flag and task
    /// through the stack as one unit, in reads wider than the writes they followed (which
    /// the processor cannot forward from its store buffer, so each such read stalled).
    Taken(TaskRef),
}

impl<T> JoinHandle<T> {
    pub(crate) fn real(handle: real::task::JoinHandle<T>) -> JoinHandle<T> {
        JoinHandle {
            inner: Join::Real(handle),
        }
    }

    pub(crate) fn sim(task: TaskRef) -> JoinHandle<T> {
        JoinHandle {
            inner: Join::Sim(task, PhantomData),
        }
    }

    /// Cancels the task; awaiting the handle then gives a cancelled [`JoinError`] (unless
    /// the task completed first).
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let handle = tokio::spawn(std::future::pending::<()>());
    ///     handle.abort();
    ///     assert!(handle.await.unwrap_err().is_cancelled());
    /// }).unwrap();
    /// ```
    pub fn abort(&self) {
        match &self.inner {
            Join::Real(handle) => handle.abort(),
            Join::Sim(task, _) | Join::Taken(task) => abort_sim(*task),
        }
    }

    /// True once the task completed or was cancelled.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let handle = tokio::spawn(async {});
    ///     assert!(!handle.is_finished());
    ///     handle.abort();
    ///     assert!(handle.is_finished());
    /// }).unwrap();
    /// ```
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            Join::Real(handle) => handle.is_finished(),
            Join::Sim(task, _) => sim_finished(*task),
            Join::Taken(_) => true,
        }
    }

    /// A handle that can abort the task but not await it.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let handle = tokio::spawn(std::future::pending::<()>());
    ///     handle.abort_handle().abort();
    ///     assert!(handle.await.unwrap_err().is_cancelled());
    /// }).unwrap();
    /// ```
    pub fn abort_handle(&self) -> AbortHandle {
        match &self.inner {
            Join::Real(handle) => AbortHandle::real(handle.abort_handle()),
            Join::Sim(task, _) | Join::Taken(task) => AbortHandle {
                inner: Abort::Sim(*task),
            },
        }
    }

    /// The task's id.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let handle = tokio::spawn(async { tokio::task::id() });
    ///     let id = handle.id();
    ///     assert_eq!(handle.await.unwrap(), id);
    /// }).unwrap();
    /// ```
    pub fn id(&self) -> Id {
        match &self.inner {
            Join::Real(handle) => Id::real(handle.id()),
            Join::Sim(task, _) | Join::Taken(task) => Id::sim(task.id()),
        }
    }
}

fn abort_sim(task: TaskRef) {
    if let Some(sim) = seam::sim() {
        sim.abort(task);
    }
}

fn sim_finished(task: TaskRef) -> bool {
    seam::sim().is_none_or(|sim| sim.is_finished(task))
}

impl<T> Unpin for JoinHandle<T> {}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    /// Inlined, with the simulated case in a function of its own, so that outside a
    /// simulation awaiting a handle costs tokio's poll and a match.
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.inner {
            Join::Real(handle) => Pin::new(handle).poll(cx).map_err(JoinError::real),
            Join::Sim(task, _) => {
                let task = *task;
                let joined = ready!(poll_sim_join(task, cx));
                this.inner = Join::Taken(task);
                Poll::Ready(joined)
            }
            Join::Taken(_) => panic!("JoinHandle polled after completion"),
        }
    }
}

/// Polls a simulated task's join: its output once it finished (the handle is then taken).
fn poll_sim_join<T>(task: TaskRef, cx: &mut Context<'_>) -> Poll<Result<T, JoinError>> {
    let sim = seam::sim().unwrap_or_else(|| seam::outside("task's JoinHandle"));
    let mut output: Option<T> = None;
    // SAFETY: the handle was made by `spawn_sim` for a task whose future's output is `T`, and
    // the ids of a run name one task each, so `output` is the slot of that task's output type.
    let completed = ready!(unsafe { sim.poll_join(task, cx, (&raw mut output).cast()) });
    if !completed {
        return Poll::Ready(Err(JoinError::cancelled(Id::sim(task.id()))));
    }
    Poll::Ready(Ok(output.expect("a finished task holds its output once")))
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        if let Join::Sim(task, _) = &self.inner
            && let Some(sim) = seam::sim()
        {
            sim.detach(*task);
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .finish()
    }
}

/// Aborts a task without awaiting it, like `tokio::task::AbortHandle`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let handle = tokio::spawn(std::future::pending::<()>());
///     let abort = handle.abort_handle();
///     assert_eq!(abort.id(), handle.id());
///     abort.abort();
///     assert!(abort.is_finished());
/// }).unwrap();
/// ```
#[derive(Clone)]
pub struct AbortHandle {
    inner: Abort,
}

#[derive(Clone)]
enum Abort {
    Real(real::task::AbortHandle),
    Sim(TaskRef),
}

impl AbortHandle {
    pub(crate) fn real(handle: real::task::AbortHandle) -> AbortHandle {
        AbortHandle {
            inner: Abort::Real(handle),
        }
    }

    /// Cancels the task.
    pub fn abort(&self) {
        match &self.inner {
            Abort::Real(handle) => handle.abort(),
            Abort::Sim(task) => abort_sim(*task),
        }
    }

    /// True once the task completed or was cancelled.
    pub fn is_finished(&self) -> bool {
        match &self.inner {
            Abort::Real(handle) => handle.is_finished(),
            Abort::Sim(task) => sim_finished(*task),
        }
    }

    /// The task's id.
    pub fn id(&self) -> Id {
        match &self.inner {
            Abort::Real(handle) => Id::real(handle.id()),
            Abort::Sim(task) => Id::sim(task.id()),
        }
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id())
            .finish()
    }
}

/// A task's id, like `tokio::task::Id`: unique among the tasks alive at once, and, for a
/// simulated task, the same in every replay of a seed.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let a = tokio::spawn(async {}).id();
///     let b = tokio::spawn(async {}).id();
///     assert_ne!(a, b);
/// }).unwrap();
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Id(IdRepr);

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum IdRepr {
    Real(real::task::Id),
    /// The simulator's task word plus one: tokio's ids start at 1, and code that keeps them
    /// in a `NonZeroU64` (or treats 0 as "no task") must not meet a 0 (the run's body).
    Sim(NonZeroU64),
}

impl Id {
    pub(crate) fn real(id: real::task::Id) -> Id {
        Id(IdRepr::Real(id))
    }

    pub(crate) fn sim(task: u64) -> Id {
        let id = task
            .checked_add(1)
            .and_then(NonZeroU64::new)
            .expect("a task word leaves room for one more (its serial is 32 bits)");
        Id(IdRepr::Sim(id))
    }
}

impl Id {
    /// The id as a number: tokio's shows its number as its `Display` (and older tokio
    /// versions have no `Ord` on it to compare with).
    fn number(self) -> (bool, u64) {
        match self.0 {
            IdRepr::Real(id) => (false, id.to_string().parse().unwrap_or(u64::MAX)),
            IdRepr::Sim(id) => (true, id.get()),
        }
    }
}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Id) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Id {
    fn cmp(&self, other: &Id) -> std::cmp::Ordering {
        self.number().cmp(&other.number())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IdRepr::Real(id) => id.fmt(f),
            IdRepr::Sim(id) => id.fmt(f),
        }
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IdRepr::Real(id) => id.fmt(f),
            IdRepr::Sim(id) => write!(f, "Id({id})"),
        }
    }
}

/// Why a task gave no output, like `tokio::task::JoinError`: it was cancelled, or (outside a
/// simulation) it panicked.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let handle = tokio::spawn(std::future::pending::<()>());
///     handle.abort();
///     let error = handle.await.unwrap_err();
///     assert!(error.is_cancelled() && !error.is_panic());
///     assert!(error.to_string().ends_with("was cancelled"));
/// }).unwrap();
/// ```
pub struct JoinError {
    repr: JoinRepr,
}

enum JoinRepr {
    Real(real::task::JoinError),
    Cancelled(Id),
}

impl JoinError {
    pub(crate) fn real(error: real::task::JoinError) -> JoinError {
        JoinError {
            repr: JoinRepr::Real(error),
        }
    }

    pub(crate) fn cancelled(id: Id) -> JoinError {
        JoinError {
            repr: JoinRepr::Cancelled(id),
        }
    }

    /// True if the task was cancelled (aborted, or its node killed).
    pub fn is_cancelled(&self) -> bool {
        match &self.repr {
            JoinRepr::Real(error) => error.is_cancelled(),
            JoinRepr::Cancelled(_) => true,
        }
    }

    /// True if the task panicked (only outside a simulation: there a panic fails the run).
    pub fn is_panic(&self) -> bool {
        match &self.repr {
            JoinRepr::Real(error) => error.is_panic(),
            JoinRepr::Cancelled(_) => false,
        }
    }

    /// The panic's payload.
    ///
    /// # Panics
    ///
    /// Panics if the task did not panic.
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        self.try_into_panic()
            .expect("`JoinError` reason is not a panic.")
    }

    /// The panic's payload, or the error back if the task did not panic.
    ///
    /// # Errors
    ///
    /// `self` when the task was cancelled.
    pub fn try_into_panic(self) -> Result<Box<dyn std::any::Any + Send + 'static>, JoinError> {
        match self.repr {
            JoinRepr::Real(error) => error.try_into_panic().map_err(JoinError::real),
            JoinRepr::Cancelled(_) => Err(self),
        }
    }

    /// The id of the task that failed.
    pub fn id(&self) -> Id {
        match &self.repr {
            JoinRepr::Real(error) => Id::real(error.id()),
            JoinRepr::Cancelled(id) => *id,
        }
    }
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            JoinRepr::Real(error) => error.fmt(f),
            JoinRepr::Cancelled(id) => write!(f, "task {id} was cancelled"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            JoinRepr::Real(error) => error.fmt(f),
            JoinRepr::Cancelled(id) => write!(f, "JoinError::Cancelled({id:?})"),
        }
    }
}

impl std::error::Error for JoinError {}

impl From<JoinError> for std::io::Error {
    fn from(error: JoinError) -> std::io::Error {
        match error.repr {
            JoinRepr::Real(error) => error.into(),
            JoinRepr::Cancelled(_) => std::io::Error::other("task was cancelled"),
        }
    }
}
