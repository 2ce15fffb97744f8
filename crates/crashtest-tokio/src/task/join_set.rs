//! `JoinSet`: tokio's outside a simulation, a set of simulated tasks inside one.
//!
//! A simulated set joins its tasks in the order they finish, as tokio's does: each task
//! carries a guard that, when the task's future is dropped (it completed, or it was
//! cancelled), queues the task's key and wakes the set's waiter. The world is one thread, so
//! the order is the simulation's, the same in every replay. Keys are kept in a `BTreeMap`,
//! never iterated in an address-dependent order.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::{Future, poll_fn};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use super::{AbortHandle, Id, JoinError, JoinHandle, LocalSet, spawn_sim};
use crate::runtime::Handle;
use crate::seam;

/// A set of tasks joined in the order they finish, like `tokio::task::JoinSet`. Dropping the
/// set aborts its tasks.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let mut set = tokio::task::JoinSet::new();
///     for ms in [30, 10, 20] {
///         set.spawn(async move {
///             tokio::time::sleep(Duration::from_millis(ms)).await;
///             ms
///         });
///     }
///     let mut order = Vec::new();
///     while let Some(done) = set.join_next().await {
///         order.push(done.unwrap());
///     }
///     assert_eq!(order, [10, 20, 30]);
/// }).unwrap();
/// ```
pub struct JoinSet<T> {
    inner: Set<T>,
}

enum Set<T> {
    Real(real::task::JoinSet<T>),
    Sim(SimSet<T>),
}

struct SimSet<T> {
    tasks: BTreeMap<u64, JoinHandle<T>>,
    finished: Arc<Mutex<Finished>>,
    next_key: u64,
}

/// The keys of the tasks that finished and were not joined yet, in finishing order.
#[derive(Default)]
struct Finished {
    keys: VecDeque<u64>,
    waiter: Option<Waker>,
}

/// Queues its task's key when the task's future is dropped.
struct OnFinish {
    finished: Arc<Mutex<Finished>>,
    key: u64,
}

impl Drop for OnFinish {
    fn drop(&mut self) {
        let waiter = {
            let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
            finished.keys.push_back(self.key);
            finished.waiter.take()
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

impl<T> JoinSet<T> {
    /// An empty set, of simulated tasks if made inside a simulation.
    pub fn new() -> JoinSet<T> {
        let inner = match seam::sim() {
            None => Set::Real(real::task::JoinSet::new()),
            Some(_) => Set::Sim(SimSet {
                tasks: BTreeMap::new(),
                finished: Arc::default(),
                next_key: 0,
            }),
        };
        JoinSet { inner }
    }

    /// The tasks not joined yet (running or finished).
    pub fn len(&self) -> usize {
        match &self.inner {
            Set::Real(set) => set.len(),
            Set::Sim(set) => set.tasks.len(),
        }
    }

    /// True if no task is left to join.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: 'static> JoinSet<T> {
    /// Spawns a task into the set.
    #[track_caller]
    pub fn spawn<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        match &mut self.inner {
            Set::Real(set) => AbortHandle::real(set.spawn(task)),
            Set::Sim(set) => set.spawn(None, task),
        }
    }

    /// Spawns a task into the set on `handle`'s runtime (inside a simulation, on the calling
    /// node).
    #[track_caller]
    pub fn spawn_on<F>(&mut self, task: F, handle: &Handle) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        match (&mut self.inner, handle.real()) {
            (Set::Real(set), Some(handle)) => AbortHandle::real(set.spawn_on(task, handle)),
            (Set::Real(set), None) => AbortHandle::real(set.spawn(task)),
            (Set::Sim(set), _) => set.spawn(None, task),
        }
    }

    /// Spawns a task that need not be `Send` into the set.
    #[track_caller]
    pub fn spawn_local<F>(&mut self, task: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        match &mut self.inner {
            Set::Real(set) => AbortHandle::real(set.spawn_local(task)),
            Set::Sim(set) => set.spawn(None, task),
        }
    }

    /// Spawns a task that need not be `Send` into the set, on `local_set`.
    #[track_caller]
    pub fn spawn_local_on<F>(&mut self, task: F, local_set: &LocalSet) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        match (&mut self.inner, local_set.real()) {
            (Set::Real(set), Some(local)) => AbortHandle::real(set.spawn_local_on(task, local)),
            (Set::Real(set), None) => AbortHandle::real(set.spawn_local(task)),
            (Set::Sim(set), _) => set.spawn(None, task),
        }
    }

    /// Runs a blocking closure as a task of the set (see `spawn_blocking`).
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        match &mut self.inner {
            Set::Real(set) => AbortHandle::real(set.spawn_blocking(f)),
            Set::Sim(set) => set.spawn(Some("spawn_blocking"), super::blocking::task(f)),
        }
    }

    /// Runs a blocking closure as a task of the set, on `handle`'s runtime (inside a
    /// simulation, as a task of the calling node).
    #[track_caller]
    pub fn spawn_blocking_on<F>(&mut self, f: F, handle: &Handle) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        match (&mut self.inner, handle.real()) {
            (Set::Real(set), Some(handle)) => AbortHandle::real(set.spawn_blocking_on(f, handle)),
            (Set::Real(set), None) => AbortHandle::real(set.spawn_blocking(f)),
            (Set::Sim(set), _) => set.spawn(Some("spawn_blocking"), super::blocking::task(f)),
        }
    }

    /// Waits for the next task to finish; `None` when the set is empty.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// Waits for the next task to finish, with its id; `None` when the set is empty.
    pub async fn join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        poll_fn(|cx| self.poll_join_next_with_id(cx)).await
    }

    /// The next finished task, if one finished already.
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        self.try_join_next_with_id()
            .map(|joined| joined.map(|(_, output)| output))
    }

    /// The next finished task with its id, if one finished already.
    pub fn try_join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        match &mut self.inner {
            Set::Real(set) => set.try_join_next_with_id().map(from_real),
            Set::Sim(set) => {
                let waker = Waker::noop();
                match set.poll_next(&mut Context::from_waker(waker), false) {
                    Poll::Ready(joined) => joined,
                    Poll::Pending => None,
                }
            }
        }
    }

    /// Polls for the next task to finish.
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_with_id(cx)
            .map(|joined| joined.map(|result| result.map(|(_, output)| output)))
    }

    /// Polls for the next task to finish, with its id.
    pub fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        match &mut self.inner {
            Set::Real(set) => set
                .poll_join_next_with_id(cx)
                .map(|joined| joined.map(from_real)),
            Set::Sim(set) => set.poll_next(cx, true),
        }
    }

    /// Aborts every task and waits for them all to end.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }

    /// Waits for every task and returns their outputs in finishing order.
    ///
    /// # Panics
    ///
    /// Panics if a task failed (the remaining tasks are aborted).
    pub async fn join_all(mut self) -> Vec<T> {
        let mut outputs = Vec::with_capacity(self.len());
        while let Some(joined) = self.join_next().await {
            match joined {
                Ok(output) => outputs.push(output),
                Err(error) => match error.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    Err(error) => panic!("a task of the JoinSet failed: {error}"),
                },
            }
        }
        outputs
    }

    /// Aborts every task; they stay in the set until joined.
    pub fn abort_all(&mut self) {
        match &mut self.inner {
            Set::Real(set) => set.abort_all(),
            Set::Sim(set) => set.tasks.values().for_each(JoinHandle::abort),
        }
    }

    /// Removes every task from the set without aborting it.
    pub fn detach_all(&mut self) {
        match &mut self.inner {
            Set::Real(set) => set.detach_all(),
            Set::Sim(set) => set.tasks.clear(),
        }
    }
}

fn from_real<T>(
    joined: Result<(real::task::Id, T), real::task::JoinError>,
) -> Result<(Id, T), JoinError> {
    joined
        .map(|(id, output)| (Id::real(id), output))
        .map_err(JoinError::real)
}

impl<T: 'static> SimSet<T> {
    #[track_caller]
    fn spawn<F>(&mut self, name: Option<&str>, task: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        let sim = seam::sim().unwrap_or_else(|| seam::outside("JoinSet"));
        let key = self.next_key;
        self.next_key += 1;
        let on_finish = OnFinish {
            finished: self.finished.clone(),
            key,
        };
        let handle = spawn_sim(sim, name, async move {
            let _on_finish = on_finish;
            task.await
        });
        let abort = handle.abort_handle();
        self.tasks.insert(key, handle);
        abort
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        register: bool,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        loop {
            let key = {
                let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
                let key = finished.keys.pop_front();
                if key.is_none() && register && !self.tasks.is_empty() {
                    finished.waiter = Some(cx.waker().clone());
                }
                key
            };
            let Some(key) = key else {
                return if self.tasks.is_empty() {
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                };
            };
            // A detached task's key comes back too: skip it.
            let Some(mut handle) = self.tasks.remove(&key) else {
                continue;
            };
            let id = handle.id();
            match std::pin::Pin::new(&mut handle).poll(cx) {
                Poll::Ready(result) => return Poll::Ready(Some(result.map(|output| (id, output)))),
                Poll::Pending => {
                    // Not reachable: a task's future is dropped only once the task finished.
                    // Kept correct anyway: the handle woke us when it finishes.
                    self.tasks.insert(key, handle);
                    self.finished
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .keys
                        .push_front(key);
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<T> Drop for JoinSet<T> {
    fn drop(&mut self) {
        if let Set::Sim(set) = &self.inner {
            set.tasks.values().for_each(JoinHandle::abort);
        }
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> JoinSet<T> {
        JoinSet::new()
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len()).finish()
    }
}

impl<T, F> FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    /// Reports place the tasks where `from_iter` was called; through `collect`, which does
    /// not pass its caller on, that is inside the standard library.
    #[track_caller]
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> JoinSet<T> {
        let mut set = JoinSet::new();
        set.extend(iter);
        set
    }
}

impl<T, F> Extend<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    #[track_caller]
    fn extend<I: IntoIterator<Item = F>>(&mut self, iter: I) {
        for task in iter {
            self.spawn(task);
        }
    }
}
