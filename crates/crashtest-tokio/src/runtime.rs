//! `tokio::runtime`: `Handle` reaches the simulation inside one; `Builder`, `Runtime` and
//! (with a tokio that has it) `LocalRuntime` are tokio's, and refused inside a simulation.
//!
//! `#[tokio::main]` and `#[tokio::test]` expand to `tokio::runtime::Builder`, so in
//! production they build a real runtime through this module exactly as with tokio (including
//! `start_paused`, with the `test-util` feature). Inside a simulation a runtime would run
//! real threads and real I/O beside the simulated world, so building one, or blocking the
//! simulation's only thread on one, fails the run with a message saying what to do instead.
//! `Handle::current()` there is a handle to the simulation: its `spawn` and `spawn_blocking`
//! spawn simulated tasks.

use std::fmt;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::time::Duration;

pub use real::runtime::*;

use crate::seam;
use crate::task::{self, JoinHandle};

/// A handle to the runtime a task runs on, like `tokio::runtime::Handle`: tokio's, or the
/// simulation's.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let handle = tokio::runtime::Handle::current();
///     let task = handle.spawn(async { 1 + 1 });
///     assert_eq!(task.await.unwrap(), 2);
/// }).unwrap();
/// ```
#[derive(Clone)]
pub struct Handle {
    inner: HandleInner,
}

#[derive(Clone)]
enum HandleInner {
    Real(real::runtime::Handle),
    Sim,
}

impl Handle {
    pub(crate) fn real(&self) -> Option<&real::runtime::Handle> {
        match &self.inner {
            HandleInner::Real(handle) => Some(handle),
            HandleInner::Sim => None,
        }
    }

    /// The handle of the running runtime, or of the running simulation.
    ///
    /// # Panics
    ///
    /// Panics outside both (as tokio does outside a runtime).
    #[track_caller]
    pub fn current() -> Handle {
        match seam::sim() {
            None => Handle::from(real::runtime::Handle::current()),
            Some(_) => Handle {
                inner: HandleInner::Sim,
            },
        }
    }

    /// The handle of the running runtime or simulation, if any.
    ///
    /// # Errors
    ///
    /// tokio's error outside both.
    pub fn try_current() -> Result<Handle, TryCurrentError> {
        match seam::sim() {
            None => real::runtime::Handle::try_current().map(Handle::from),
            Some(_) => Ok(Handle {
                inner: HandleInner::Sim,
            }),
        }
    }

    /// Makes the runtime current until the guard drops (a simulation is current already).
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            _real: self.real().map(real::runtime::Handle::enter),
            _handle: PhantomData,
        }
    }

    /// Spawns a task on the runtime, or on the calling simulated node.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.inner {
            HandleInner::Real(handle) => JoinHandle::real(handle.spawn(future)),
            HandleInner::Sim => task::spawn(future),
        }
    }

    /// Runs a blocking closure on the runtime's blocking pool, or as a simulated task.
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        match &self.inner {
            HandleInner::Real(handle) => JoinHandle::real(handle.spawn_blocking(f)),
            HandleInner::Sim => task::spawn_blocking(f),
        }
    }

    /// Runs `future` to completion on this thread. Refused inside a simulation.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        if seam::sim().is_some() {
            seam::refuse(
                "tokio::runtime::Handle::block_on",
                "it would block the simulation's only thread, where the future's task would \
                 have to run; await the future instead, and from blocking code (a \
                 spawn_blocking closure) do the async part in a task before or after the \
                 closure and pass its result in or out",
            );
        }
        match &self.inner {
            HandleInner::Real(handle) => handle.block_on(future),
            HandleInner::Sim => seam::outside("runtime Handle"),
        }
    }

    /// The runtime's name, if its builder gave one; a simulation's handle has none.
    #[cfg(real_tokio_1_51)]
    pub fn name(&self) -> Option<&str> {
        match &self.inner {
            HandleInner::Real(handle) => handle.name(),
            HandleInner::Sim => None,
        }
    }

    /// The runtime's id; a simulation's handle gives the simulation's, the same for every
    /// handle of a run.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let id = tokio::runtime::Handle::current().id();
    ///     assert_eq!(tokio::spawn(async { tokio::runtime::Handle::current().id() }).await.unwrap(), id);
    /// }).unwrap();
    /// ```
    #[cfg(real_tokio_1_49)]
    pub fn id(&self) -> Id {
        match &self.inner {
            HandleInner::Real(handle) => Id::real(handle.id()),
            HandleInner::Sim => Id::sim(Id::SIMULATION),
        }
    }

    /// The kind of runtime: a simulation is a current-thread one.
    pub fn runtime_flavor(&self) -> RuntimeFlavor {
        match &self.inner {
            HandleInner::Real(handle) => handle.runtime_flavor(),
            HandleInner::Sim => RuntimeFlavor::CurrentThread,
        }
    }

    /// The runtime's metrics. Refused for a simulation's handle (it has no tokio runtime).
    #[track_caller]
    pub fn metrics(&self) -> RuntimeMetrics {
        match &self.inner {
            HandleInner::Real(handle) => handle.metrics(),
            HandleInner::Sim => seam::refuse(
                "tokio::runtime::Handle::metrics",
                "a simulation has no tokio runtime to measure; read crashtest's run summary",
            ),
        }
    }
}

/// The index of the worker the caller runs on, like `tokio::runtime::worker_index`: inside a
/// simulation, a current-thread runtime's one worker, `Some(0)`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     assert_eq!(tokio::spawn(async { tokio::runtime::worker_index() }).await.unwrap(), Some(0));
/// }).unwrap();
/// ```
#[cfg(real_tokio_1_54)]
pub fn worker_index() -> Option<usize> {
    match seam::sim() {
        Some(_) => Some(0),
        None => real::runtime::worker_index(),
    }
}

/// The id of a runtime or a `LocalSet`, like `tokio::runtime::Id`: tokio's, or one of a
/// simulation (its runtime's, 1 in every run, and each simulated `LocalSet`'s, numbered in
/// the run).
#[cfg(real_tokio_1_49)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Id(IdRepr);

#[cfg(real_tokio_1_49)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum IdRepr {
    Real(real::runtime::Id),
    Sim(std::num::NonZeroU64),
}

#[cfg(real_tokio_1_49)]
impl Id {
    /// The simulated runtime's id (a simulated `LocalSet`'s is never it).
    pub(crate) const SIMULATION: std::num::NonZeroU64 = std::num::NonZeroU64::MIN;

    pub(crate) fn real(id: real::runtime::Id) -> Id {
        Id(IdRepr::Real(id))
    }

    pub(crate) fn sim(id: std::num::NonZeroU64) -> Id {
        Id(IdRepr::Sim(id))
    }
}

#[cfg(real_tokio_1_49)]
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IdRepr::Real(id) => id.fmt(f),
            IdRepr::Sim(id) => id.fmt(f),
        }
    }
}

#[cfg(real_tokio_1_49)]
impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IdRepr::Real(id) => id.fmt(f),
            IdRepr::Sim(id) => write!(f, "Id({id})"),
        }
    }
}

impl From<real::runtime::Handle> for Handle {
    fn from(handle: real::runtime::Handle) -> Handle {
        Handle {
            inner: HandleInner::Real(handle),
        }
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            HandleInner::Real(handle) => handle.fmt(f),
            HandleInner::Sim => f.write_str("Handle(simulation)"),
        }
    }
}

/// Returned by [`Handle::enter`] and [`Runtime::enter`].
pub struct EnterGuard<'a> {
    _real: Option<real::runtime::EnterGuard<'a>>,
    _handle: PhantomData<&'a Handle>,
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnterGuard")
    }
}

/// tokio's runtime, like `tokio::runtime::Runtime`; only outside a simulation.
///
/// ```
/// let rt = crashtest_tokio::runtime::Runtime::new().unwrap();
/// assert_eq!(rt.block_on(async { crashtest_tokio::spawn(async { 3 }).await.unwrap() }), 3);
/// ```
#[derive(Debug)]
pub struct Runtime {
    real: real::runtime::Runtime,
    handle: Handle,
}

impl Runtime {
    pub(crate) fn real(&self) -> &real::runtime::Runtime {
        &self.real
    }

    /// A multi-threaded runtime with every driver on. Refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's, if the runtime cannot start.
    #[cfg(feature = "rt-multi-thread")]
    #[track_caller]
    pub fn new() -> io::Result<Runtime> {
        refuse_inside("tokio::runtime::Runtime::new");
        real::runtime::Runtime::new().map(Runtime::wrap)
    }

    /// Spawns a task on the runtime.
    #[track_caller]
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        JoinHandle::real(self.real.spawn(future))
    }
}

/// The calls tokio's runtimes share, on the stand-in's wrapper of one (`real`, with its
/// `handle` as the stand-in's).
macro_rules! runtime_calls {
    ($($(#[$attr:meta])* $runtime:ident($real:ty) => $name:literal;)*) => {$(
        $(#[$attr])*
        impl $runtime {
            /// Wraps tokio's runtime, with its handle as the stand-in's.
            fn wrap(real: $real) -> $runtime {
                let handle = Handle::from(real.handle().clone());
                $runtime { real, handle }
            }

            /// The runtime's handle.
            pub fn handle(&self) -> &Handle {
                &self.handle
            }

            /// Runs a blocking closure on the runtime's blocking pool.
            #[track_caller]
            pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
            where
                F: FnOnce() -> R + Send + 'static,
                R: Send + 'static,
            {
                JoinHandle::real(self.real.spawn_blocking(f))
            }

            /// Runs `future` to completion on the runtime. Refused inside a simulation.
            #[track_caller]
            pub fn block_on<F: Future>(&self, future: F) -> F::Output {
                refuse_inside(concat!("tokio::runtime::", $name, "::block_on"));
                self.real.block_on(future)
            }

            /// Makes the runtime current until the guard drops.
            pub fn enter(&self) -> EnterGuard<'_> {
                EnterGuard {
                    _real: Some(self.real.enter()),
                    _handle: PhantomData,
                }
            }

            /// Shuts the runtime down, waiting up to `duration` for its blocking tasks.
            pub fn shutdown_timeout(self, duration: Duration) {
                self.real.shutdown_timeout(duration);
            }

            /// Shuts the runtime down without waiting.
            pub fn shutdown_background(self) {
                self.real.shutdown_background();
            }

            /// The runtime's metrics.
            pub fn metrics(&self) -> RuntimeMetrics {
                self.real.metrics()
            }
        }
    )*};
}

runtime_calls! {
    Runtime(real::runtime::Runtime) => "Runtime";
    #[cfg(real_tokio_1_51)]
    LocalRuntime(real::runtime::LocalRuntime) => "LocalRuntime";
}

#[track_caller]
fn refuse_inside(call: &str) {
    if seam::sim().is_some() {
        seam::refuse(
            call,
            "a tokio runtime would run real threads and I/O beside the simulated world; \
             spawn tasks with tokio::spawn, which the simulation runs",
        );
    }
}

/// Builds tokio's runtime, like `tokio::runtime::Builder` (what `#[tokio::main]` and
/// `#[tokio::test]` expand to). `build` is refused inside a simulation.
///
/// ```
/// let rt = crashtest_tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// assert_eq!(rt.block_on(async { 5 }), 5);
/// ```
pub struct Builder {
    real: real::runtime::Builder,
}

/// Forwards builder methods to tokio's builder.
macro_rules! forward {
    ($($(#[$attr:meta])* fn $name:ident $(<$g:ident>)? (&mut self $(, $arg:ident: $ty:ty)*) $(where [$($bound:tt)*])?;)*) => {$(
        $(#[$attr])*
        pub fn $name $(<$g>)? (&mut self $(, $arg: $ty)*) -> &mut Builder $(where $($bound)*)? {
            self.real.$name($($arg),*);
            self
        }
    )*};
}

impl Builder {
    /// A builder for a runtime on the current thread.
    pub fn new_current_thread() -> Builder {
        Builder {
            real: real::runtime::Builder::new_current_thread(),
        }
    }

    /// A builder for a multi-threaded runtime.
    #[cfg(feature = "rt-multi-thread")]
    pub fn new_multi_thread() -> Builder {
        Builder {
            real: real::runtime::Builder::new_multi_thread(),
        }
    }

    forward! {
        /// Turns on the I/O and time drivers.
        fn enable_all(&mut self);
        /// Turns on the I/O driver.
        fn enable_io(&mut self);
        /// Turns on the time driver.
        fn enable_time(&mut self);
        /// Sets the number of worker threads.
        fn worker_threads(&mut self, val: usize);
        /// Sets the most threads the blocking pool may start.
        fn max_blocking_threads(&mut self, val: usize);
        /// Names the runtime's threads.
        fn thread_name(&mut self, val: impl Into<String>);
        /// Names the runtime's threads with a function.
        fn thread_name_fn<F>(&mut self, f: F) where [F: Fn() -> String + Send + Sync + 'static];
        /// Sets the threads' stack size.
        fn thread_stack_size(&mut self, val: usize);
        /// Runs a function on each new thread.
        fn on_thread_start<F>(&mut self, f: F) where [F: Fn() + Send + Sync + 'static];
        /// Runs a function on each thread before it stops.
        fn on_thread_stop<F>(&mut self, f: F) where [F: Fn() + Send + Sync + 'static];
        /// Runs a function on each worker before it parks.
        fn on_thread_park<F>(&mut self, f: F) where [F: Fn() + Send + Sync + 'static];
        /// Runs a function on each worker after it unparks.
        fn on_thread_unpark<F>(&mut self, f: F) where [F: Fn() + Send + Sync + 'static];
        /// Sets how long idle blocking threads live.
        fn thread_keep_alive(&mut self, duration: Duration);
        /// Sets how often the global queue is polled.
        fn global_queue_interval(&mut self, val: u32);
        /// Sets how often the drivers are polled.
        fn event_interval(&mut self, val: u32);
        /// Sets the most I/O events handled per tick.
        fn max_io_events_per_tick(&mut self, capacity: usize);
        /// Names the runtime (`#[tokio::main(name = ...)]`).
        #[cfg(real_tokio_1_51)]
        fn name(&mut self, val: impl Into<String>);
        /// Sets the most I/O events handled per tick while the runtime is busy.
        #[cfg(real_tokio_1_54)]
        fn max_io_events_per_busy_tick(&mut self, capacity: usize);
    }

    /// Starts the runtime's clock paused (tokio's `test-util`).
    #[cfg(feature = "test-util")]
    pub fn start_paused(&mut self, start_paused: bool) -> &mut Builder {
        self.real.start_paused(start_paused);
        self
    }

    /// Builds the runtime. Refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's, if the runtime cannot start.
    #[track_caller]
    pub fn build(&mut self) -> io::Result<Runtime> {
        refuse_inside("tokio::runtime::Builder::build");
        self.real.build().map(Runtime::wrap)
    }

    /// Builds a runtime whose tasks need not be `Send`. Refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's, if the runtime cannot start.
    #[cfg(real_tokio_1_51)]
    #[track_caller]
    pub fn build_local(&mut self, options: LocalOptions) -> io::Result<LocalRuntime> {
        refuse_inside("tokio::runtime::Builder::build_local");
        self.real.build_local(options).map(LocalRuntime::wrap)
    }
}

/// tokio's runtime for tasks that need not be `Send`, like `tokio::runtime::LocalRuntime`;
/// only outside a simulation. Its handle is the stand-in's, as every handle is (tokio-util's
/// pinned pool passes it on as one).
///
/// ```
/// let rt = crashtest_tokio::runtime::LocalRuntime::new().unwrap();
/// let task = rt.spawn_local(async { std::rc::Rc::new(4) });
/// assert_eq!(*rt.block_on(task).unwrap(), 4);
/// ```
#[cfg(real_tokio_1_51)]
#[derive(Debug)]
pub struct LocalRuntime {
    real: real::runtime::LocalRuntime,
    handle: Handle,
}

#[cfg(real_tokio_1_51)]
impl LocalRuntime {
    /// A runtime on the current thread with every driver on. Refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's, if the runtime cannot start.
    #[track_caller]
    pub fn new() -> io::Result<LocalRuntime> {
        refuse_inside("tokio::runtime::LocalRuntime::new");
        real::runtime::LocalRuntime::new().map(LocalRuntime::wrap)
    }

    /// Spawns a task that need not be `Send` on the runtime.
    #[track_caller]
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        JoinHandle::real(self.real.spawn_local(future))
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}
