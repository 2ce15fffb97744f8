//! `broadcast`: tokio's channel, with the receiver's `blocking_recv` switched inside a
//! simulation.
//!
//! tokio's broadcast channel needs no runtime and wakes its waiting receivers in the order
//! they came, so every call but `blocking_recv` is tokio's. `blocking_recv` parks the thread
//! until a value comes; inside a simulation every sender runs on that same thread, so none
//! would ever send. So inside a simulation, from a blocking closure, it takes a value already
//! sent (or reports the channel closed, or the receiver lagging) and is refused where it
//! would wait; from async code it is refused, where tokio panics.
//!
//! The receiver wraps tokio's, and so do the two types that make receivers or hand back a
//! sender that does (`Sender::subscribe`, `WeakSender::upgrade`); each is one field over
//! tokio's, with every other call passed through.

use std::fmt;

pub use real::sync::broadcast::error;

use error::{RecvError, SendError, TryRecvError};

/// Makes a channel that keeps the last `capacity` values for every receiver, like
/// `tokio::sync::broadcast::channel`.
///
/// # Panics
///
/// As tokio's: if `capacity` is 0 or too large.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let (tx, mut first) = tokio::sync::broadcast::channel(4);
///     let mut second = tx.subscribe();
///     tokio::spawn(async move { tx.send(7).unwrap() });
///     assert_eq!((first.recv().await, second.recv().await), (Ok(7), Ok(7)));
/// }).unwrap();
/// ```
#[track_caller]
pub fn channel<T: Clone>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let (real, receiver) = real::sync::broadcast::channel(capacity);
    (Sender { real }, Receiver { real: receiver })
}

/// The sending half, like `tokio::sync::broadcast::Sender`.
pub struct Sender<T> {
    real: real::sync::broadcast::Sender<T>,
}

impl<T> Sender<T> {
    /// A sender of a new channel that has no receiver yet.
    ///
    /// # Panics
    ///
    /// As [`channel`].
    #[track_caller]
    pub fn new(capacity: usize) -> Sender<T> {
        Sender {
            real: real::sync::broadcast::Sender::new(capacity),
        }
    }

    /// Sends `value` to every receiver, and says how many there are.
    ///
    /// # Errors
    ///
    /// When there is no receiver; the value comes back.
    pub fn send(&self, value: T) -> Result<usize, SendError<T>> {
        self.real.send(value)
    }

    /// A new receiver, of the values sent from now on.
    pub fn subscribe(&self) -> Receiver<T> {
        Receiver {
            real: self.real.subscribe(),
        }
    }

    /// A sender that does not keep the channel open.
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            real: self.real.downgrade(),
        }
    }

    /// How many values the slowest receiver has not received yet.
    pub fn len(&self) -> usize {
        self.real.len()
    }

    /// True if every receiver received every value.
    pub fn is_empty(&self) -> bool {
        self.real.is_empty()
    }

    /// How many receivers there are.
    pub fn receiver_count(&self) -> usize {
        self.real.receiver_count()
    }

    /// True if both send into the same channel.
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        self.real.same_channel(&other.real)
    }

    /// Waits until every receiver is gone.
    pub async fn closed(&self) {
        self.real.closed().await;
    }

    /// How many senders keep the channel open.
    pub fn strong_count(&self) -> usize {
        self.real.strong_count()
    }

    /// How many weak senders there are.
    pub fn weak_count(&self) -> usize {
        self.real.weak_count()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Sender<T> {
        Sender {
            real: self.real.clone(),
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}

/// A sender that does not keep the channel open, like `tokio::sync::broadcast::WeakSender`.
pub struct WeakSender<T> {
    real: real::sync::broadcast::WeakSender<T>,
}

impl<T> WeakSender<T> {
    /// A sender, if some sender still keeps the channel open.
    pub fn upgrade(&self) -> Option<Sender<T>> {
        self.real.upgrade().map(|real| Sender { real })
    }

    /// How many senders keep the channel open.
    pub fn strong_count(&self) -> usize {
        self.real.strong_count()
    }

    /// How many weak senders there are.
    pub fn weak_count(&self) -> usize {
        self.real.weak_count()
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> WeakSender<T> {
        WeakSender {
            real: self.real.clone(),
        }
    }
}

impl<T> fmt::Debug for WeakSender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}

/// The receiving half, like `tokio::sync::broadcast::Receiver`.
pub struct Receiver<T> {
    real: real::sync::broadcast::Receiver<T>,
}

impl<T> Receiver<T> {
    /// How many values wait for this receiver.
    pub fn len(&self) -> usize {
        self.real.len()
    }

    /// True if no value waits for this receiver.
    pub fn is_empty(&self) -> bool {
        self.real.is_empty()
    }

    /// True if both receive from the same channel.
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        self.real.same_channel(&other.real)
    }

    /// How many senders keep the channel open.
    pub fn sender_strong_count(&self) -> usize {
        self.real.sender_strong_count()
    }

    /// How many weak senders there are.
    pub fn sender_weak_count(&self) -> usize {
        self.real.sender_weak_count()
    }

    /// True once every sender is gone.
    pub fn is_closed(&self) -> bool {
        self.real.is_closed()
    }
}

impl<T: Clone> Receiver<T> {
    /// A new receiver of the same channel, of the values sent from now on.
    pub fn resubscribe(&self) -> Receiver<T> {
        Receiver {
            real: self.real.resubscribe(),
        }
    }

    /// Waits for the next value.
    ///
    /// # Errors
    ///
    /// When every sender is gone, or the receiver fell behind and missed values.
    pub async fn recv(&mut self) -> Result<T, RecvError> {
        self.real.recv().await
    }

    /// The next value if one waits.
    ///
    /// # Errors
    ///
    /// When none waits, every sender is gone, or the receiver missed values.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.real.try_recv()
    }

    /// Waits for the next value from blocking code, like tokio's.
    ///
    /// Inside a simulation, from a blocking closure, it takes a value already sent, or
    /// reports the channel closed or the receiver lagging; where it would wait, the run fails
    /// instead of hanging.
    ///
    /// # Errors
    ///
    /// As [`Receiver::recv`].
    ///
    /// # Panics
    ///
    /// In async code, as tokio's does; inside a simulation, also where it would wait.
    #[track_caller]
    pub fn blocking_recv(&mut self) -> Result<T, RecvError> {
        if crate::seam::sim().is_none() {
            return self.real.blocking_recv();
        }
        crate::task::blocking::refuse_in_async_code(
            "tokio::sync::broadcast::Receiver::blocking_recv",
            "recv().await, or receive from a spawn_blocking closure",
        );
        match self.real.try_recv() {
            Ok(value) => Ok(value),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
            Err(TryRecvError::Lagged(missed)) => Err(RecvError::Lagged(missed)),
            Err(TryRecvError::Empty) => crate::task::blocking::refuse_wait(
                "tokio::sync::broadcast::Receiver::blocking_recv on an empty channel",
                "no sender could ever send",
                "receive from async code with recv().await",
            ),
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}
