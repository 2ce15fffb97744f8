//! `oneshot`: tokio's channel, with the receiver's `blocking_recv` switched inside a
//! simulation.
//!
//! tokio's oneshot needs no runtime, so the sender and every receiving call but
//! `blocking_recv` are tokio's. `blocking_recv` parks the thread until the value comes;
//! inside a simulation the sender runs on that same thread, so it would never send. So inside
//! a simulation, from a blocking closure, it takes a value already sent (or reports the
//! sender gone) and is refused where it would wait; from async code it is refused, where
//! tokio panics.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

pub use real::sync::oneshot::{Sender, error};

use error::{RecvError, TryRecvError};

use crate::seam;

/// Makes a channel for one value, like `tokio::sync::oneshot::channel`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let (tx, rx) = tokio::sync::oneshot::channel();
///     tokio::spawn(async move { tx.send(7).unwrap() });
///     assert_eq!(rx.await, Ok(7));
/// }).unwrap();
/// ```
#[track_caller]
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let (sender, real) = real::sync::oneshot::channel();
    (sender, Receiver { real })
}

/// The receiving half, like `tokio::sync::oneshot::Receiver`: a future of the value.
pub struct Receiver<T> {
    real: real::sync::oneshot::Receiver<T>,
}

impl<T> Receiver<T> {
    /// Stops the sender from sending; a value already sent can still be received.
    pub fn close(&mut self) {
        self.real.close();
    }

    /// True once the value was received or the channel closed, and awaiting would panic.
    pub fn is_terminated(&self) -> bool {
        self.real.is_terminated()
    }

    /// True if no value waits to be received.
    pub fn is_empty(&self) -> bool {
        self.real.is_empty()
    }

    /// The value if it was sent.
    ///
    /// # Errors
    ///
    /// When no value waits yet, or the sender is gone.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.real.try_recv()
    }

    /// Waits for the value from blocking code, like tokio's.
    ///
    /// Inside a simulation, from a blocking closure, it takes a value already sent, or
    /// reports the sender gone; where it would wait, the run fails instead of hanging.
    ///
    /// # Errors
    ///
    /// When the sender is gone without sending.
    ///
    /// # Panics
    ///
    /// In async code, as tokio's does; inside a simulation, also where it would wait.
    #[track_caller]
    pub fn blocking_recv(mut self) -> Result<T, RecvError> {
        if seam::sim().is_none() {
            return self.real.blocking_recv();
        }
        crate::task::blocking::refuse_in_async_code(
            "tokio::sync::oneshot::Receiver::blocking_recv",
            "rx.await, or receive from a spawn_blocking closure",
        );
        // One poll with a waker nobody keeps: a sent value or a gone sender is ready now.
        match Pin::new(&mut self.real).poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(received) => received,
            Poll::Pending => crate::task::blocking::refuse_wait(
                "tokio::sync::oneshot::Receiver::blocking_recv before the value is sent",
                "the sender could never send it",
                "receive from async code with rx.await",
            ),
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = Result<T, RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.real).poll(cx)
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}
