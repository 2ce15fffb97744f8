//! `tokio::sync`: tokio's primitives, which need no runtime and wake their waiters in the
//! order they came, so they behave the same inside a simulation. Switched are [`watch`],
//! because tokio spreads its receivers over wait lists drawn at random, and [`Barrier`],
//! which releases its waiters through such a channel; [`mpsc`]'s bounded
//! sender, whose `send_timeout` waits under tokio's timer; and the calls that park the
//! thread until another task acts (`blocking_send` and `blocking_recv` of [`mpsc`],
//! [`Mutex::blocking_lock`], [`RwLock`]'s `blocking_read` and `blocking_write`,
//! [`oneshot::Receiver::blocking_recv`], [`broadcast::Receiver::blocking_recv`]): inside a
//! simulation that task runs on the same thread, so they act where they need not wait and
//! fail the run where they would.

pub use real::sync::*;

/// What the lock wrappers share, for a `repr(transparent)` wrapper `$lock<T>` of tokio's
/// `$real<T>` with its one field `real`: `into_real`, turning an `Arc` of the wrapper into an
/// `Arc` of tokio's lock for the owned calls, and the trait impls tokio's lock has, through
/// the wrapper's `new` and tokio's `Debug`.
macro_rules! transparent_lock {
    ($lock:ident, $real:path) => {
        /// The `Arc` of tokio's lock inside `this`.
        fn into_real<T: ?Sized>(this: std::sync::Arc<$lock<T>>) -> std::sync::Arc<$real> {
            let inner = std::sync::Arc::into_raw(this) as *const $real;
            // SAFETY: the wrapper is `repr(transparent)` over tokio's lock, so the pointer
            // (with the same metadata) is to a value of tokio's type, in the same allocation
            // with the same layout; ownership of the one count moves with it.
            unsafe { std::sync::Arc::from_raw(inner) }
        }

        impl<T> From<T> for $lock<T> {
            fn from(value: T) -> $lock<T> {
                $lock::new(value)
            }
        }

        impl<T: Default> Default for $lock<T> {
            fn default() -> $lock<T> {
                $lock::new(T::default())
            }
        }

        impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for $lock<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.real.fmt(f)
            }
        }
    };
}

mod barrier;
pub mod broadcast;
pub mod mpsc;
mod mutex;
pub mod oneshot;
mod rwlock;
pub mod watch;

pub use barrier::{Barrier, BarrierWaitResult};
pub use mutex::Mutex;
pub use rwlock::RwLock;
