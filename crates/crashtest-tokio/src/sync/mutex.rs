//! `Mutex`: tokio's, with `blocking_lock` switched inside a simulation.
//!
//! tokio's mutex needs no runtime and hands the lock to its waiters in the order they came,
//! so every call but the blocking ones is tokio's unchanged. `blocking_lock` parks the
//! thread until the lock is free; inside a simulation the holder runs on that same thread,
//! so a held lock would never be released; in async code tokio panics, and a simulation must
//! not pass what production refuses. So inside a simulation, from a blocking closure
//! (`spawn_blocking`, `block_in_place`) it takes a free lock and is refused where it would
//! wait, and from async code it is refused, as tokio refuses it.
//!
//! The wrapper is `repr(transparent)` over tokio's, so the guards are tokio's own and an
//! `Arc` of it is an `Arc` of tokio's for the owned calls. One difference follows: a guard's
//! way back to its lock (`MutexGuard::mutex`, `OwnedMutexGuard::mutex`) gives tokio's
//! mutex, not this one, so code that compares it with its own `Mutex` does not compile (no
//! crate among tokio's common users calls it).

use std::sync::Arc;

use real::sync::{MutexGuard, OwnedMutexGuard, TryLockError};

use crate::seam;

/// An async mutex, like `tokio::sync::Mutex`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::sync::Arc;
/// crashtest::Sim::new(1).run(async {
///     let count = Arc::new(tokio::sync::Mutex::new(0));
///     let other = count.clone();
///     tokio::spawn(async move { *other.lock().await += 1 }).await.unwrap();
///     *count.lock().await += 1;
///     assert_eq!(*count.lock().await, 2);
/// }).unwrap();
/// ```
#[repr(transparent)]
pub struct Mutex<T: ?Sized> {
    real: real::sync::Mutex<T>,
}

impl<T: ?Sized> Mutex<T> {
    /// A mutex holding `value`, unlocked.
    #[track_caller]
    pub fn new(value: T) -> Mutex<T>
    where
        T: Sized,
    {
        Mutex {
            real: real::sync::Mutex::new(value),
        }
    }

    /// A mutex holding `value`, unlocked, in a constant.
    pub const fn const_new(value: T) -> Mutex<T>
    where
        T: Sized,
    {
        Mutex {
            real: real::sync::Mutex::const_new(value),
        }
    }

    /// Waits for the lock, then holds it until the guard drops.
    pub async fn lock(&self) -> MutexGuard<'_, T> {
        self.real.lock().await
    }

    /// Locks from blocking code, like tokio's.
    ///
    /// Inside a simulation, from a blocking closure, it takes the lock if it is free; where it
    /// would wait, the run fails instead of hanging (the holder runs on the thread this call
    /// would park).
    ///
    /// # Panics
    ///
    /// In async code, as tokio's does; inside a simulation, also when the lock is held.
    #[track_caller]
    pub fn blocking_lock(&self) -> MutexGuard<'_, T> {
        if seam::sim().is_none() {
            return self.real.blocking_lock();
        }
        refuse_blocking("blocking_lock");
        // A `match`, not `unwrap_or_else`: a closure would hide the caller's location, which
        // the refusal names.
        match self.real.try_lock() {
            Ok(guard) => guard,
            Err(_) => refuse_held("blocking_lock"),
        }
    }

    /// [`Mutex::blocking_lock`] for a mutex in an `Arc`, giving an owned guard.
    ///
    /// # Panics
    ///
    /// As [`Mutex::blocking_lock`].
    #[track_caller]
    pub fn blocking_lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        if seam::sim().is_none() {
            return into_real(self).blocking_lock_owned();
        }
        refuse_blocking("blocking_lock_owned");
        match into_real(self).try_lock_owned() {
            Ok(guard) => guard,
            Err(_) => refuse_held("blocking_lock_owned"),
        }
    }

    /// Waits for the lock of a mutex in an `Arc`, then holds it until the owned guard drops.
    pub async fn lock_owned(self: Arc<Self>) -> OwnedMutexGuard<T> {
        into_real(self).lock_owned().await
    }

    /// The lock if it is free now.
    ///
    /// # Errors
    ///
    /// When the lock is held.
    pub fn try_lock(&self) -> Result<MutexGuard<'_, T>, TryLockError> {
        self.real.try_lock()
    }

    /// The lock of a mutex in an `Arc`, as an owned guard, if it is free now.
    ///
    /// # Errors
    ///
    /// When the lock is held.
    pub fn try_lock_owned(self: Arc<Self>) -> Result<OwnedMutexGuard<T>, TryLockError> {
        into_real(self).try_lock_owned()
    }

    /// The value, through the exclusive borrow that makes locking needless.
    pub fn get_mut(&mut self) -> &mut T {
        self.real.get_mut()
    }

    /// The value, consuming the mutex.
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.real.into_inner()
    }
}

transparent_lock!(Mutex, real::sync::Mutex<T>);

/// Refuses a blocking lock made from async code inside a simulation.
#[track_caller]
fn refuse_blocking(call: &str) {
    crate::task::blocking::refuse_in_async_code(
        &format!("tokio::sync::Mutex::{call}"),
        "lock().await, or lock from a spawn_blocking closure",
    );
}

/// Refuses a blocking lock that would wait inside a simulation.
#[track_caller]
fn refuse_held(call: &str) -> ! {
    crate::task::blocking::refuse_wait(
        &format!("tokio::sync::Mutex::{call} on a held lock"),
        "the holder could never release it",
        "lock from async code with lock().await",
    )
}
