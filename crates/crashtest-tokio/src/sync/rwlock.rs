//! `RwLock`: tokio's, with `blocking_read` and `blocking_write` switched inside a simulation.
//!
//! As with [`Mutex`](super::Mutex): tokio's lock needs no runtime and serves its waiters in
//! the order they came, so every call is tokio's but the blocking ones. Inside a simulation,
//! from a blocking closure, those take a free lock and are refused where they would wait (the
//! holder runs on the thread they would park); from async code they are refused, where tokio
//! panics. The wrapper is `repr(transparent)` over tokio's, so the guards are tokio's own; an
//! owned guard's way back to its lock (`rwlock()`) gives tokio's lock, not this one.

use std::sync::Arc;

use real::sync::{
    OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLockReadGuard, RwLockWriteGuard, TryLockError,
};

use crate::seam;

/// An async reader-writer lock, like `tokio::sync::RwLock`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let lock = tokio::sync::RwLock::new(5);
///     {
///         let (a, b) = (lock.read().await, lock.read().await);
///         assert_eq!(*a + *b, 10);
///     }
///     *lock.write().await += 1;
///     assert_eq!(*lock.read().await, 6);
/// }).unwrap();
/// ```
#[repr(transparent)]
pub struct RwLock<T: ?Sized> {
    real: real::sync::RwLock<T>,
}

impl<T: ?Sized> RwLock<T> {
    /// A lock holding `value`, unlocked.
    #[track_caller]
    pub fn new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            real: real::sync::RwLock::new(value),
        }
    }

    /// A lock holding `value` that at most `max_reads` readers hold at once.
    ///
    /// # Panics
    ///
    /// As tokio's: if `max_reads` is 0 or above `u32::MAX >> 3`.
    #[track_caller]
    pub fn with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            real: real::sync::RwLock::with_max_readers(value, max_reads),
        }
    }

    /// A lock holding `value`, unlocked, in a constant.
    pub const fn const_new(value: T) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            real: real::sync::RwLock::const_new(value),
        }
    }

    /// [`RwLock::with_max_readers`] in a constant.
    ///
    /// # Panics
    ///
    /// As [`RwLock::with_max_readers`].
    pub const fn const_with_max_readers(value: T, max_reads: u32) -> RwLock<T>
    where
        T: Sized,
    {
        RwLock {
            real: real::sync::RwLock::const_with_max_readers(value, max_reads),
        }
    }

    /// Waits for shared access, held until the guard drops.
    pub async fn read(&self) -> RwLockReadGuard<'_, T> {
        self.real.read().await
    }

    /// Shared access from blocking code, like tokio's.
    ///
    /// Inside a simulation, from a blocking closure, it reads if no writer holds or waits;
    /// where it would wait, the run fails instead of hanging.
    ///
    /// # Panics
    ///
    /// In async code, as tokio's does; inside a simulation, also where it would wait.
    #[track_caller]
    pub fn blocking_read(&self) -> RwLockReadGuard<'_, T> {
        if seam::sim().is_none() {
            return self.real.blocking_read();
        }
        refuse_blocking("blocking_read", "read().await");
        match self.real.try_read() {
            Ok(guard) => guard,
            Err(_) => refuse_held("blocking_read", "read().await"),
        }
    }

    /// Waits for shared access to a lock in an `Arc`, held until the owned guard drops.
    pub async fn read_owned(self: Arc<Self>) -> OwnedRwLockReadGuard<T> {
        into_real(self).read_owned().await
    }

    /// Shared access if it can be had now.
    ///
    /// # Errors
    ///
    /// When a writer holds the lock or waits for it.
    pub fn try_read(&self) -> Result<RwLockReadGuard<'_, T>, TryLockError> {
        self.real.try_read()
    }

    /// Shared access to a lock in an `Arc`, as an owned guard, if it can be had now.
    ///
    /// # Errors
    ///
    /// As [`RwLock::try_read`].
    pub fn try_read_owned(self: Arc<Self>) -> Result<OwnedRwLockReadGuard<T>, TryLockError> {
        into_real(self).try_read_owned()
    }

    /// Waits for exclusive access, held until the guard drops.
    pub async fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.real.write().await
    }

    /// Exclusive access from blocking code, like tokio's.
    ///
    /// Inside a simulation, from a blocking closure, it writes if nobody holds the lock;
    /// where it would wait, the run fails instead of hanging.
    ///
    /// # Panics
    ///
    /// In async code, as tokio's does; inside a simulation, also where it would wait.
    #[track_caller]
    pub fn blocking_write(&self) -> RwLockWriteGuard<'_, T> {
        if seam::sim().is_none() {
            return self.real.blocking_write();
        }
        refuse_blocking("blocking_write", "write().await");
        match self.real.try_write() {
            Ok(guard) => guard,
            Err(_) => refuse_held("blocking_write", "write().await"),
        }
    }

    /// Waits for exclusive access to a lock in an `Arc`, held until the owned guard drops.
    pub async fn write_owned(self: Arc<Self>) -> OwnedRwLockWriteGuard<T> {
        into_real(self).write_owned().await
    }

    /// Exclusive access if it can be had now.
    ///
    /// # Errors
    ///
    /// When anyone holds the lock.
    pub fn try_write(&self) -> Result<RwLockWriteGuard<'_, T>, TryLockError> {
        self.real.try_write()
    }

    /// Exclusive access to a lock in an `Arc`, as an owned guard, if it can be had now.
    ///
    /// # Errors
    ///
    /// As [`RwLock::try_write`].
    pub fn try_write_owned(self: Arc<Self>) -> Result<OwnedRwLockWriteGuard<T>, TryLockError> {
        into_real(self).try_write_owned()
    }

    /// The value, through the exclusive borrow that makes locking needless.
    pub fn get_mut(&mut self) -> &mut T {
        self.real.get_mut()
    }

    /// The value, consuming the lock.
    pub fn into_inner(self) -> T
    where
        T: Sized,
    {
        self.real.into_inner()
    }
}

transparent_lock!(RwLock, real::sync::RwLock<T>);

/// Refuses a blocking call made from async code inside a simulation.
#[track_caller]
fn refuse_blocking(call: &str, instead: &str) {
    crate::task::blocking::refuse_in_async_code(
        &format!("tokio::sync::RwLock::{call}"),
        &format!("{instead}, or lock from a spawn_blocking closure"),
    );
}

/// Refuses a blocking call that would wait inside a simulation.
#[track_caller]
fn refuse_held(call: &str, instead: &str) -> ! {
    crate::task::blocking::refuse_wait(
        &format!("tokio::sync::RwLock::{call} on a held lock"),
        "the holder could never release it",
        &format!("lock from async code with {instead}"),
    )
}
