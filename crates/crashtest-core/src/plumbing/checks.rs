//! Checks and per-run state for components: invariants run between polls, failing the run,
//! naming what tasks wait on when the run deadlocks, and *extensions* (one value per type per
//! run, created on first use).

use std::any::Any;
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::task::Waker;

use crate::report::FailureKind;
use crate::world;

/// Runs `check` after every `every` polls for the rest of the run (an invariant); an `Err`
/// or a panic fails the run with the check's name.
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// let failed = crashtest_core::Sim::new(1).run(async {
///     let balance = Rc::new(Cell::new(10i64));
///     let seen = balance.clone();
///     crashtest_core::plumbing::checks::add_step_check("balance >= 0", 1, move || {
///         if seen.get() < 0 { Err(format!("balance is {}", seen.get())) } else { Ok(()) }
///     });
///     balance.set(-5);
///     crashtest_core::task::yield_now().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("balance is -5"));
/// ```
pub fn add_step_check(
    name: impl Into<String>,
    every: u64,
    check: impl Fn() -> Result<(), String> + 'static,
) {
    assert!(every > 0, "a step check runs at least every poll");
    let name = name.into();
    // A failed check is reported by its name: "invariant \"\": ..." would say nothing.
    assert!(!name.is_empty(), "a step check has a name");
    world::with(|w| w.add_step_check(name, every, Rc::new(check)))
        .expect("plumbing::checks::add_step_check is only available inside a simulation");
}

/// A component that holds the wakers of tasks waiting on it (a socket's readers, a
/// listener's acceptors), so that a deadlock's report can say what each task waits on: the
/// simulator sees only that a task waits, not on what.
pub trait WaitWitness {
    /// Calls `waiting` with each waker a task left with this component and what the task
    /// waits for there (`"reading tcp 10.0.0.1:4 <- 10.0.0.2:7"`).
    fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str));
}

/// Registers a component whose waiting tasks a deadlock's report names, for the rest of the
/// run.
///
/// ```
/// use std::{cell::RefCell, future::poll_fn, rc::Rc, task::{Poll, Waker}};
/// use crashtest_core::{plumbing::checks, FailureKind};
/// struct Doorbell(RefCell<Option<Waker>>);
/// impl checks::WaitWitness for Doorbell {
///     fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str)) {
///         if let Some(waker) = &*self.0.borrow() {
///             waiting(waker, "the doorbell");
///         }
///     }
/// }
/// let failure = crashtest_core::Sim::new(1).run(async {
///     let bell = Rc::new(Doorbell(RefCell::new(None)));
///     checks::add_wait_witness(bell.clone());
///     poll_fn(|cx| {
///         *bell.0.borrow_mut() = Some(cx.waker().clone());
///         Poll::<()>::Pending
///     })
///     .await;
/// }).unwrap_err();
/// let FailureKind::Deadlock { waiting } = &failure.kind else { panic!("{failure}") };
/// assert!(waiting[0].contains(", waiting on the doorbell"), "{waiting:?}");
/// ```
pub fn add_wait_witness(witness: Rc<dyn WaitWitness>) {
    world::with(|w| w.add_wait_witness(witness))
        .expect("plumbing::checks::add_wait_witness is only available inside a simulation");
}

/// Fails the running simulation with `message` (a broken invariant found by a component),
/// as the check named `check`: the name is what tells this failure from another check's when
/// a failure is compared with the one a seed was saved for, or one `minimize` keeps. The run
/// stops at the next scheduling point.
///
/// ```
/// use crashtest_core::report::FailureKind;
/// let failed = crashtest_core::Sim::new(1).run(async {
///     crashtest_core::plumbing::checks::fail("replication", "replicas diverged".into());
///     std::future::pending::<()>().await;
/// });
/// let failure = failed.unwrap_err();
/// assert!(failure.to_string().contains("replicas diverged"));
/// let FailureKind::Check { invariant, .. } = &failure.kind else { panic!("{failure}") };
/// assert_eq!(invariant, "replication");
/// ```
pub fn fail(check: &str, message: String) {
    assert!(!check.is_empty(), "a failed check has a name");
    assert!(!message.is_empty(), "a failure says what broke");
    world::with(|w| {
        w.fail(FailureKind::Check {
            invariant: check.to_owned(),
            message,
        })
    });
}

/// Fails the running simulation because the program made a call that a simulation cannot own;
/// `message` names the call and what to use instead. The determinism guards and the tokio
/// stand-in refuse through this. The run stops at the next scheduling point.
///
/// ```
/// let failed = crashtest_core::Sim::new(1).run(async {
///     crashtest_core::plumbing::checks::refuse("std::thread::spawn cannot run here".into());
///     std::future::pending::<()>().await;
/// });
/// assert!(failed.unwrap_err().to_string().contains("refused: std::thread::spawn"));
/// ```
pub fn refuse(message: String) {
    world::with(|w| w.refuse(message));
}

/// The running simulation's extension of type `T`, created with `T::default()` on first use.
///
/// ```
/// use std::cell::Cell;
/// crashtest_core::Sim::new(1).run(async {
///     #[derive(Default)]
///     struct Counter(Cell<u32>);
///     let a = crashtest_core::plumbing::checks::extension::<Counter>().unwrap();
///     a.0.set(5);
///     let b = crashtest_core::plumbing::checks::extension::<Counter>().unwrap();
///     assert_eq!(b.0.get(), 5);
/// }).unwrap();
/// ```
pub fn extension<T: Any + Default>() -> Option<Rc<T>> {
    let extension = world::with(|w| w.extension::<T>())?;
    // The world keeps its own handle: a second call must find this same value.
    assert!(
        Rc::strong_count(&extension) >= 2,
        "an extension handed out is not kept by the run"
    );
    Some(extension)
}

/// A per-thread cache of one extension of the run going on on the thread, for components
/// whose every call needs theirs (the network's sockets, the disk's files): a look at a weak
/// handle instead of [`extension`]'s search by type and downcast.
///
/// The handle is weak: the run's world owns the extension, so when the run ends and its world
/// is dropped the cache empties itself, and the next run on the thread fills it with its own.
///
/// ```
/// use std::cell::Cell;
/// use crashtest_core::plumbing::checks::ExtensionCache;
/// #[derive(Default)]
/// struct Counter(Cell<u32>);
/// thread_local! {
///     static COUNTER: ExtensionCache<Counter> = const { ExtensionCache::new() };
/// }
/// for _ in 0..2 {
///     crashtest_core::Sim::new(1).run(async {
///         let fills = Cell::new(0);
///         let a = COUNTER.with(|c| c.get(|_| fills.set(fills.get() + 1))).unwrap();
///         a.0.set(a.0.get() + 1);
///         let b = COUNTER.with(|c| c.get(|_| fills.set(fills.get() + 1))).unwrap();
///         // Each run has its own, filled once.
///         assert_eq!((b.0.get(), fills.get()), (1, 1));
///     }).unwrap();
/// }
/// ```
#[derive(Debug, Default)]
pub struct ExtensionCache<T>(RefCell<Weak<T>>);

impl<T: Any + Default> ExtensionCache<T> {
    /// An empty cache.
    #[must_use]
    pub const fn new() -> ExtensionCache<T> {
        ExtensionCache(RefCell::new(Weak::new()))
    }

    /// The run's extension of type `T` (see [`extension`]); `None` when no run's world is
    /// current. `on_fill` sees it when the cache takes it up, once per run.
    #[inline]
    pub fn get(&self, on_fill: impl FnOnce(&Rc<T>)) -> Option<Rc<T>> {
        let cached = self.0.borrow().upgrade();
        match cached {
            Some(value) => {
                debug_assert!(
                    extension::<T>().is_some_and(|own| Rc::ptr_eq(&own, &value)),
                    "a cached extension belongs to another run"
                );
                Some(value)
            }
            None => self.fill(on_fill),
        }
    }

    #[cold]
    fn fill(&self, on_fill: impl FnOnce(&Rc<T>)) -> Option<Rc<T>> {
        let value = extension::<T>()?;
        on_fill(&value);
        // `on_fill` must not ask this cache again: it would have filled it, and run twice.
        assert!(
            self.0.borrow().upgrade().is_none(),
            "an extension cache was filled while being filled"
        );
        *self.0.borrow_mut() = Rc::downgrade(&value);
        assert!(
            self.0
                .borrow()
                .upgrade()
                .is_some_and(|cached| Rc::ptr_eq(&cached, &value)),
            "an extension cache does not hold what it was filled with"
        );
        Some(value)
    }
}
