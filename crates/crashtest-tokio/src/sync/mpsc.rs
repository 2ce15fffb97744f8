//! `mpsc`: tokio's channels, with a bounded sender whose `send_timeout` runs on the
//! stand-in's clock.
//!
//! tokio's channels need no runtime, except for one call: `Sender::send_timeout` waits under
//! tokio's own timer, which does not exist inside a simulation (tokio panics: no reactor).
//! So the bounded channel's sender, and the two types that hand a sender back (`WeakSender`
//! and `OwnedPermit`), wrap tokio's, and `send_timeout` waits for a slot under the
//! stand-in's [`timeout`](crate::time::timeout): on the virtual clock inside a simulation,
//! on tokio's outside. `blocking_send` inside a simulation, from a blocking closure, sends if
//! a slot is free and is refused if not (waiting would hang every node); from async code it
//! is refused, where tokio panics. Every other call goes to tokio's sender
//! unchanged; the receiver,
//! the permits that borrow a sender and the unbounded channel are tokio's own.

use std::fmt;
use std::time::Duration;

use real::sync::mpsc as tokio_mpsc;
pub use real::sync::mpsc::{
    Permit, PermitIterator, Receiver, UnboundedReceiver, UnboundedSender, WeakUnboundedSender,
    error, unbounded_channel,
};

use error::{SendError, SendTimeoutError, TrySendError};

use crate::seam;

/// Makes a bounded channel of `buffer` messages, like `tokio::sync::mpsc::channel`.
///
/// # Panics
///
/// Panics if `buffer` is 0, as tokio does.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// use tokio::sync::mpsc::error::SendTimeoutError;
/// crashtest::Sim::new(1).run(async {
///     let (tx, mut rx) = tokio::sync::mpsc::channel(1);
///     tx.send_timeout(1, Duration::from_secs(1)).await.unwrap();
///     // Full: the second send gives up after a virtual second.
///     let start = tokio::time::Instant::now();
///     let refused = tx.send_timeout(2, Duration::from_secs(1)).await;
///     assert!(matches!(refused, Err(SendTimeoutError::Timeout(2))));
///     assert_eq!(start.elapsed(), Duration::from_secs(1));
///     assert_eq!(rx.recv().await, Some(1));
/// }).unwrap();
/// ```
#[track_caller]
pub fn channel<T>(buffer: usize) -> (Sender<T>, Receiver<T>) {
    let (real, receiver) = tokio_mpsc::channel(buffer);
    (Sender { real }, receiver)
}

/// The sending half of a bounded channel, like `tokio::sync::mpsc::Sender`.
pub struct Sender<T> {
    real: tokio_mpsc::Sender<T>,
}

/// A sender that does not keep the channel open, like `tokio::sync::mpsc::WeakSender`.
pub struct WeakSender<T> {
    real: tokio_mpsc::WeakSender<T>,
}

/// A reserved slot that owns its sender, like `tokio::sync::mpsc::OwnedPermit`.
pub struct OwnedPermit<T> {
    real: tokio_mpsc::OwnedPermit<T>,
}

impl<T> Sender<T> {
    /// Waits for a slot, then sends `value`.
    ///
    /// # Errors
    ///
    /// When the receiver is gone; the error holds `value`.
    pub async fn send(&self, value: T) -> Result<(), SendError<T>> {
        self.real.send(value).await
    }

    /// Completes once the receiver is gone.
    pub async fn closed(&self) {
        self.real.closed().await;
    }

    /// Sends `message` if a slot is free now.
    ///
    /// # Errors
    ///
    /// When the channel is full or closed; the error holds `message`.
    pub fn try_send(&self, message: T) -> Result<(), TrySendError<T>> {
        self.real.try_send(message)
    }

    /// Waits up to `timeout` for a slot, then sends `value`, as tokio's does; the wait is on
    /// the virtual clock inside a simulation.
    ///
    /// # Errors
    ///
    /// When no slot came free in time, or the receiver is gone; the error holds `value`.
    pub async fn send_timeout(
        &self,
        value: T,
        timeout: Duration,
    ) -> Result<(), SendTimeoutError<T>> {
        match crate::time::timeout(timeout, self.real.reserve()).await {
            Err(_) => Err(SendTimeoutError::Timeout(value)),
            Ok(Err(_)) => Err(SendTimeoutError::Closed(value)),
            Ok(Ok(permit)) => {
                permit.send(value);
                Ok(())
            }
        }
    }

    /// Sends from blocking code, waiting for a slot.
    ///
    /// Inside a simulation blocking code (a `spawn_blocking` or `block_in_place` closure)
    /// runs on the one thread every node shares, so no receiver could ever free a slot while
    /// it waits: a send that finds the channel full is refused (the run fails naming the
    /// call) instead of hanging. A call from async code is refused too, where tokio panics.
    ///
    /// # Errors
    ///
    /// When the receiver is gone; the error holds `value`.
    ///
    /// # Panics
    ///
    /// In async code, as tokio's does; inside a simulation, also when the channel is full.
    #[track_caller]
    pub fn blocking_send(&self, value: T) -> Result<(), SendError<T>> {
        if seam::sim().is_none() {
            return self.real.blocking_send(value);
        }
        if !crate::task::blocking::inside() {
            seam::refuse(
                "tokio::sync::mpsc::Sender::blocking_send in async code",
                "tokio panics here (it cannot block a thread that runs async tasks); call \
                 send(..).await, or send from a spawn_blocking closure",
            );
        }
        match self.real.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Closed(value)) => Err(SendError(value)),
            Err(TrySendError::Full(_)) => seam::refuse(
                "tokio::sync::mpsc::Sender::blocking_send on a full channel",
                "it would block the one thread every simulated node runs on, so the receiver \
                 could never free a slot; send from async code with send(..).await",
            ),
        }
    }

    /// True once the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.real.is_closed()
    }

    /// Waits for a slot and holds it.
    ///
    /// # Errors
    ///
    /// When the receiver is gone.
    pub async fn reserve(&self) -> Result<Permit<'_, T>, SendError<()>> {
        self.real.reserve().await
    }

    /// Waits for `n` slots and holds them.
    ///
    /// # Errors
    ///
    /// When the receiver is gone, or `n` exceeds the channel's capacity.
    pub async fn reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, SendError<()>> {
        self.real.reserve_many(n).await
    }

    /// Waits for a slot and holds it with this sender.
    ///
    /// # Errors
    ///
    /// When the receiver is gone.
    pub async fn reserve_owned(self) -> Result<OwnedPermit<T>, SendError<()>> {
        let real = self.real.reserve_owned().await?;
        Ok(OwnedPermit { real })
    }

    /// Holds a slot if one is free now.
    ///
    /// # Errors
    ///
    /// When the channel is full or closed.
    pub fn try_reserve(&self) -> Result<Permit<'_, T>, TrySendError<()>> {
        self.real.try_reserve()
    }

    /// Holds `n` slots if they are free now.
    ///
    /// # Errors
    ///
    /// When the channel has fewer free slots, or is closed.
    pub fn try_reserve_many(&self, n: usize) -> Result<PermitIterator<'_, T>, TrySendError<()>> {
        self.real.try_reserve_many(n)
    }

    /// Holds a slot with this sender if one is free now.
    ///
    /// # Errors
    ///
    /// When the channel is full or closed; the error holds this sender.
    pub fn try_reserve_owned(self) -> Result<OwnedPermit<T>, TrySendError<Sender<T>>> {
        match self.real.try_reserve_owned() {
            Ok(real) => Ok(OwnedPermit { real }),
            Err(TrySendError::Full(real)) => Err(TrySendError::Full(Sender { real })),
            Err(TrySendError::Closed(real)) => Err(TrySendError::Closed(Sender { real })),
        }
    }

    /// True if both senders belong to one channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.real.same_channel(&other.real)
    }

    /// The slots free now.
    pub fn capacity(&self) -> usize {
        self.real.capacity()
    }

    /// A sender that does not keep the channel open.
    pub fn downgrade(&self) -> WeakSender<T> {
        WeakSender {
            real: self.real.downgrade(),
        }
    }

    /// The channel's size, as made.
    pub fn max_capacity(&self) -> usize {
        self.real.max_capacity()
    }

    /// How many senders keep the channel open.
    pub fn strong_count(&self) -> usize {
        self.real.strong_count()
    }

    /// How many weak senders the channel has.
    pub fn weak_count(&self) -> usize {
        self.real.weak_count()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
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

impl<T> WeakSender<T> {
    /// A sender, if the channel is still open.
    pub fn upgrade(&self) -> Option<Sender<T>> {
        self.real.upgrade().map(|real| Sender { real })
    }

    /// How many senders keep the channel open.
    pub fn strong_count(&self) -> usize {
        self.real.strong_count()
    }

    /// How many weak senders the channel has.
    pub fn weak_count(&self) -> usize {
        self.real.weak_count()
    }
}

impl<T> Clone for WeakSender<T> {
    fn clone(&self) -> Self {
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

impl<T> OwnedPermit<T> {
    /// Sends `value` in the held slot and hands the sender back.
    pub fn send(self, value: T) -> Sender<T> {
        Sender {
            real: self.real.send(value),
        }
    }

    /// Frees the slot unused and hands the sender back.
    pub fn release(self) -> Sender<T> {
        Sender {
            real: self.real.release(),
        }
    }

    /// True if both permits belong to one channel.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.real.same_channel(&other.real)
    }

    /// True if this permit belongs to `sender`'s channel.
    pub fn same_channel_as_sender(&self, sender: &Sender<T>) -> bool {
        self.real.same_channel_as_sender(&sender.real)
    }
}

impl<T> fmt::Debug for OwnedPermit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<F: Send>(_: &F) {}

    #[test]
    fn send_timeouts_future_is_send_for_a_send_value_as_tokios_is() {
        let (tx, _rx) = channel::<u32>(1);
        let sending = tx.send_timeout(1, Duration::from_secs(1));
        assert_send(&sending);
    }
}
