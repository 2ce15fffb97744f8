//! `LocalSet`: tokio's outside a simulation; inside one, a group of `!Send` tasks of the
//! calling node.
//!
//! The simulation is one thread, so `!Send` tasks need no set of their own there: a
//! simulated `LocalSet` spawns ordinary simulated tasks, remembers them so that dropping the
//! set cancels them (as tokio's does), and, awaited, completes once they all have finished.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::{AbortHandle, JoinHandle, spawn_sim};
use crate::runtime::Runtime;
use crate::seam;

/// A set of `!Send` tasks, like `tokio::task::LocalSet`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::rc::Rc;
/// crashtest::Sim::new(1).run(async {
///     let local = tokio::task::LocalSet::new();
///     let shared = Rc::new(3);
///     let copy = shared.clone();
///     let handle = local.spawn_local(async move { *copy * 2 });
///     let doubled = local.run_until(async move { handle.await.unwrap() }).await;
///     assert_eq!(doubled, 6);
///     local.await;
/// }).unwrap();
/// ```
pub struct LocalSet {
    inner: Local,
}

enum Local {
    Real(real::task::LocalSet),
    Sim(Rc<RefCell<Members>>),
}

/// The simulated set's tasks that have not finished, and who waits for them all.
#[derive(Default)]
struct Members {
    tasks: Vec<AbortHandle>,
    waiter: Option<Waker>,
    /// The set's id, numbered when first asked for.
    #[cfg(real_tokio_1_49)]
    id: Option<std::num::NonZeroU64>,
}

impl Members {
    fn unfinished(&mut self) -> bool {
        self.tasks.retain(|task| !task.is_finished());
        !self.tasks.is_empty()
    }
}

/// Wakes the set's waiter when one of its tasks ends (completes or is cancelled).
struct Leaving(Rc<RefCell<Members>>);

impl Drop for Leaving {
    fn drop(&mut self) {
        let waiter = self.0.borrow_mut().waiter.take();
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

impl LocalSet {
    /// An empty set, simulated if made inside a simulation.
    pub fn new() -> LocalSet {
        let inner = match seam::sim() {
            None => Local::Real(real::task::LocalSet::new()),
            Some(_) => Local::Sim(Rc::default()),
        };
        LocalSet { inner }
    }

    /// The set's id, like tokio's `LocalSet::id`. A simulated set's is numbered when first
    /// asked for, from a count the run keeps (so reading one draws nothing random and
    /// shifts no later draw): distinct from the simulated runtime's and every other set's.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let (a, b) = (tokio::task::LocalSet::new(), tokio::task::LocalSet::new());
    ///     assert_eq!(a.id(), a.id());
    ///     assert_ne!(a.id(), b.id());
    ///     assert_ne!(a.id(), tokio::runtime::Handle::current().id());
    /// }).unwrap();
    /// ```
    #[cfg(real_tokio_1_49)]
    pub fn id(&self) -> crate::runtime::Id {
        use crate::runtime::Id;
        match &self.inner {
            Local::Real(local) => Id::real(local.id()),
            Local::Sim(members) => {
                let mut members = members.borrow_mut();
                let id = *members.id.get_or_insert_with(|| {
                    let sim = seam::sim().expect("a simulated set is used inside its simulation");
                    let serial = sim.next_serial().saturating_add(Id::SIMULATION.get());
                    std::num::NonZeroU64::new(serial).expect("numbered from 2 up")
                });
                assert_ne!(id, Id::SIMULATION, "a set's id is not the runtime's");
                Id::sim(id)
            }
        }
    }

    pub(crate) fn real(&self) -> Option<&real::task::LocalSet> {
        match &self.inner {
            Local::Real(local) => Some(local),
            Local::Sim(_) => None,
        }
    }

    /// Makes the set current for `spawn_local` until the guard drops (inside a simulation
    /// `spawn_local` works anywhere, and the guard does nothing).
    pub fn enter(&self) -> LocalEnterGuard {
        LocalEnterGuard {
            _real: self.real().map(real::task::LocalSet::enter),
        }
    }

    /// Spawns a `!Send` task on the set.
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        match &self.inner {
            Local::Real(local) => JoinHandle::real(local.spawn_local(future)),
            Local::Sim(members) => {
                let sim = seam::sim().unwrap_or_else(|| seam::outside("LocalSet"));
                let leaving = Leaving(members.clone());
                let handle = spawn_sim(sim, None, async move {
                    let _leaving = leaving;
                    future.await
                });
                members.borrow_mut().tasks.push(handle.abort_handle());
                handle
            }
        }
    }

    /// Runs `future` on `rt` with the set's tasks. Refused inside a simulation: it would block
    /// the simulation's only thread.
    #[track_caller]
    pub fn block_on<F>(&self, rt: &Runtime, future: F) -> F::Output
    where
        F: Future,
    {
        match &self.inner {
            Local::Real(local) => local.block_on(rt.real(), future),
            Local::Sim(_) => seam::refuse(
                "tokio::task::LocalSet::block_on",
                "it would block the simulation's only thread; await `run_until` instead",
            ),
        }
    }

    /// Runs `future` to completion while the set's tasks run too.
    pub async fn run_until<F>(&self, future: F) -> F::Output
    where
        F: Future,
    {
        match &self.inner {
            Local::Real(local) => local.run_until(future).await,
            Local::Sim(_) => future.await,
        }
    }
}

impl Future for LocalSet {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.get_mut().inner {
            Local::Real(local) => Pin::new(local).poll(cx),
            Local::Sim(members) => {
                let mut members = members.borrow_mut();
                if !members.unfinished() {
                    return Poll::Ready(());
                }
                members.waiter = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        if let Local::Sim(members) = &self.inner {
            let tasks = std::mem::take(&mut members.borrow_mut().tasks);
            tasks.iter().for_each(AbortHandle::abort);
        }
    }
}

impl Default for LocalSet {
    fn default() -> LocalSet {
        LocalSet::new()
    }
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Local::Real(local) => local.fmt(f),
            Local::Sim(_) => f.write_str("LocalSet(simulated)"),
        }
    }
}

/// Returned by [`LocalSet::enter`].
pub struct LocalEnterGuard {
    _real: Option<real::task::LocalEnterGuard>,
}

impl fmt::Debug for LocalEnterGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalEnterGuard")
    }
}
