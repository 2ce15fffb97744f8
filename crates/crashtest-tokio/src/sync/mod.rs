//! `tokio::sync`: tokio's primitives, which need no runtime and wake their waiters in the
//! order they came, so they behave the same inside a simulation. Switched are [`watch`],
//! because tokio spreads its receivers over wait lists drawn at random; [`mpsc`]'s bounded
//! sender, whose `send_timeout` waits under tokio's timer; and the calls that park the
//! thread until another task acts (`blocking_send` and `blocking_recv` of [`mpsc`],
//! [`Mutex::blocking_lock`], [`RwLock`]'s `blocking_read` and `blocking_write`,
//! [`oneshot::Receiver::blocking_recv`], [`broadcast::Receiver::blocking_recv`]): inside a
//! simulation that task runs on the same thread, so they act where they need not wait and
//! fail the run where they would.

pub use real::sync::*;

pub mod broadcast;
pub mod mpsc;
mod mutex;
pub mod oneshot;
mod rwlock;
pub mod watch;

pub use mutex::Mutex;
pub use rwlock::RwLock;
