//! `tokio::task`, with spawning, joining and yielding switched to the simulation inside one.
//!
//! Inside a simulation a task spawned here is a task of the world, on the calling node: the
//! scheduler picks it with its seeded stream, a kill of the node cancels it, and its panic
//! fails the run. `spawn_blocking` runs its closure as such a task (the simulation has no
//! threads; the closure runs when the task is first polled), and `block_in_place` calls its
//! closure at once. Everything else (`coop`, `unconstrained`, `task_local!`, `LocalKey`)
//! is tokio's: it needs no runtime.

pub(crate) mod blocking;
mod join;
mod join_set;
mod local;

pub use real::task::*;

pub use join::{AbortHandle, Id, JoinError, JoinHandle};
pub use join_set::JoinSet;
pub use local::{LocalEnterGuard, LocalSet};

pub(crate) use join::spawn_sim;

use std::future::Future;
use std::task::Poll;

use crate::seam;

/// Spawns a task, like `tokio::spawn`: on the calling simulated node inside a simulation, on
/// the current tokio runtime outside one.
///
/// # Panics
///
/// Outside a simulation, panics if no tokio runtime is running (as tokio does).
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let handle = tokio::spawn(async { "done" });
///     assert_eq!(handle.await.unwrap(), "done");
/// }).unwrap();
/// ```
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match seam::sim() {
        None => JoinHandle::real(real::task::spawn(future)),
        Some(sim) => spawn_sim(sim, None, future),
    }
}

/// Spawns a task that need not be `Send`, like `tokio::task::spawn_local`. Outside a
/// simulation it must run inside a `LocalSet` (as with tokio); inside one it may run
/// anywhere: the simulation is one thread.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let shared = std::rc::Rc::new(5);
///     let handle = tokio::task::spawn_local(async move { *shared + 1 });
///     assert_eq!(handle.await.unwrap(), 6);
/// }).unwrap();
/// ```
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    match seam::sim() {
        None => JoinHandle::real(real::task::spawn_local(future)),
        Some(sim) => spawn_sim(sim, None, future),
    }
}

/// Runs a blocking closure, like `tokio::task::spawn_blocking`. Inside a simulation it runs
/// as a simulated task of the calling node, when that task is first polled; a closure that
/// really blocks (sleeps the thread, waits on a channel filled by another task) blocks the
/// whole simulation, which the watchdog then reports.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let sum = tokio::task::spawn_blocking(|| (1..=10).sum::<u32>()).await.unwrap();
///     assert_eq!(sum, 55);
/// }).unwrap();
/// ```
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match seam::sim() {
        None => JoinHandle::real(real::task::spawn_blocking(f)),
        Some(sim) => spawn_sim(sim, Some("spawn_blocking"), blocking::task(f)),
    }
}

/// Runs a blocking closure in place, like `tokio::task::block_in_place` (with the
/// `rt-multi-thread` feature, as tokio's); inside a simulation it simply calls it.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     assert_eq!(tokio::task::block_in_place(|| 7), 7);
/// }).unwrap();
/// ```
#[cfg(feature = "rt-multi-thread")]
#[track_caller]
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    match seam::sim() {
        None => real::task::block_in_place(f),
        Some(_) => blocking::run(f),
    }
}

/// Yields to the scheduler once, like `tokio::task::yield_now`: inside a simulation the task
/// goes back to the ready queue and the seeded scheduler may pick another first.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::task::yield_now().await;
/// }).unwrap();
/// ```
pub async fn yield_now() {
    if seam::sim().is_none() {
        return real::task::yield_now().await;
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
    .await;
}

/// The id of the running task, like `tokio::task::id`.
///
/// # Panics
///
/// Panics if called outside a task.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let child = tokio::spawn(async { tokio::task::id() });
///     assert_ne!(child.await.unwrap(), tokio::task::id());
///     // Numbered from 1, as tokio's are: the run's body, its first task, is not 0.
///     assert_eq!(tokio::task::id().to_string(), "1");
/// }).unwrap();
/// ```
#[track_caller]
pub fn id() -> Id {
    try_id().expect("can't get a task id when not inside a task")
}

/// The id of the running task, if called from one, like `tokio::task::try_id`.
///
/// ```
/// assert!(crashtest_tokio::task::try_id().is_none());
/// ```
pub fn try_id() -> Option<Id> {
    match seam::sim() {
        None => real::task::try_id().map(Id::real),
        Some(sim) => sim.current_task().map(Id::sim),
    }
}
