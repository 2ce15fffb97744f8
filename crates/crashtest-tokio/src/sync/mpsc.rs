//! `mpsc`: tokio's channels, with the bounded channel's ends switched for the calls that
//! need a runtime or block.
//!
//! tokio's channels need no runtime, except for `Sender::send_timeout`, which waits under
//! tokio's own timer (absent inside a simulation: tokio panics, no reactor), and the
//! blocking calls, which park the thread. So the bounded channel's sender, both channels'
//! receivers, and the two types that hand a bounded sender back (`WeakSender` and
//! `OwnedPermit`), wrap tokio's:
//! - `send_timeout` waits for a slot under the stand-in's [`timeout`](crate::time::timeout),
//!   on the virtual clock inside a simulation and on tokio's outside;
//! - inside a simulation, from a blocking closure, `blocking_send` sends if a slot is free and
//!   `blocking_recv` takes a waiting message, and each is refused where it would wait (the
//!   one thread every node runs on would never run the other end); from async code both are
//!   refused, where tokio panics.
//!
//! Every other call goes to tokio's channel unchanged; the permits that borrow a sender and
//! the unbounded channel's senders are tokio's own.

use std::fmt;
use std::time::Duration;

use real::sync::mpsc as tokio_mpsc;
pub use real::sync::mpsc::{Permit, PermitIterator, UnboundedSender, WeakUnboundedSender, error};

use std::task::{Context, Poll};

use error::{SendError, SendTimeoutError, TryRecvError, TrySendError};

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
    (Sender { real }, Receiver { real: receiver })
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
        crate::task::blocking::refuse_in_async_code(
            "tokio::sync::mpsc::Sender::blocking_send",
            "send(..).await, or send from a spawn_blocking closure",
        );
        match self.real.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Closed(value)) => Err(SendError(value)),
            Err(TrySendError::Full(_)) => crate::task::blocking::refuse_wait(
                "tokio::sync::mpsc::Sender::blocking_send on a full channel",
                "the receiver could never free a slot",
                "send from async code with send(..).await",
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

/// What to call instead of a blocking receive in async code.
const RECEIVE_INSTEAD: &str = "recv().await, or receive in a spawn_blocking closure";

/// Refuses a blocking receive on an empty channel inside a simulation: no sender could run
/// while the one thread waits.
#[track_caller]
fn refuse_empty(call: &str) -> ! {
    crate::task::blocking::refuse_wait(
        &format!("{call} on an empty channel"),
        "no sender could ever send",
        "receive from async code with recv().await",
    )
}

/// Defines the receiving half `$name` over tokio's `$real`: every call tokio's, but the
/// blocking ones inside a simulation (see the module's docs).
macro_rules! receiver {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        pub struct $name<T> {
            real: tokio_mpsc::$real<T>,
        }

        impl<T> $name<T> {
            /// Waits for the next message; `None` once every sender is gone and the channel
            /// is empty.
            pub async fn recv(&mut self) -> Option<T> {
                self.real.recv().await
            }

            /// Waits for at least one message, then moves up to `limit` into `buffer`; how
            /// many it moved (0 once the channel is closed and empty, or for a `limit` of 0).
            pub async fn recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
                self.real.recv_many(buffer, limit).await
            }

            /// The next message if one is waiting.
            ///
            /// # Errors
            ///
            /// When the channel is empty, or empty and closed.
            pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
                self.real.try_recv()
            }

            /// Receives from blocking code, waiting for a message.
            ///
            /// Inside a simulation, from a blocking closure, it takes a waiting message (or
            /// `None` from a closed, empty channel) and is refused on an empty open channel,
            /// where waiting would hang every node; from async code it is refused, where
            /// tokio panics.
            ///
            /// # Panics
            ///
            /// In async code, as tokio's does; inside a simulation, also on an empty open
            /// channel.
            #[track_caller]
            pub fn blocking_recv(&mut self) -> Option<T> {
                const CALL: &str =
                    concat!("tokio::sync::mpsc::", stringify!($name), "::blocking_recv");
                if seam::sim().is_none() {
                    return self.real.blocking_recv();
                }
                crate::task::blocking::refuse_in_async_code(CALL, RECEIVE_INSTEAD);
                match self.real.try_recv() {
                    Ok(message) => Some(message),
                    Err(TryRecvError::Disconnected) => None,
                    Err(TryRecvError::Empty) => refuse_empty(CALL),
                }
            }

            /// Receives up to `limit` messages from blocking code, as `recv_many`; inside a
            /// simulation refused as `blocking_recv` is.
            ///
            /// # Panics
            ///
            /// In async code, as tokio's does; inside a simulation, also on an empty open
            /// channel.
            #[track_caller]
            pub fn blocking_recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
                const CALL: &str =
                    concat!("tokio::sync::mpsc::", stringify!($name), "::blocking_recv_many");
                if seam::sim().is_none() {
                    return self.real.blocking_recv_many(buffer, limit);
                }
                crate::task::blocking::refuse_in_async_code(CALL, RECEIVE_INSTEAD);
                let mut moved = 0;
                while moved < limit {
                    match self.real.try_recv() {
                        Ok(message) => {
                            buffer.push(message);
                            moved += 1;
                        }
                        Err(TryRecvError::Disconnected) => break,
                        Err(TryRecvError::Empty) if moved == 0 => refuse_empty(CALL),
                        Err(TryRecvError::Empty) => break,
                    }
                }
                moved
            }

            /// Closes the channel to senders; waiting messages can still be received.
            pub fn close(&mut self) {
                self.real.close();
            }

            /// True once the channel is closed (by `close` or the last sender's drop).
            pub fn is_closed(&self) -> bool {
                self.real.is_closed()
            }

            /// True if no message is waiting.
            pub fn is_empty(&self) -> bool {
                self.real.is_empty()
            }

            /// How many messages are waiting.
            pub fn len(&self) -> usize {
                self.real.len()
            }

            /// Polls for the next message, as `recv` awaits it.
            pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
                self.real.poll_recv(cx)
            }

            /// Polls for up to `limit` messages, as `recv_many` awaits them.
            pub fn poll_recv_many(
                &mut self,
                cx: &mut Context<'_>,
                buffer: &mut Vec<T>,
                limit: usize,
            ) -> Poll<usize> {
                self.real.poll_recv_many(cx, buffer, limit)
            }

            /// How many senders keep the channel open.
            pub fn sender_strong_count(&self) -> usize {
                self.real.sender_strong_count()
            }

            /// How many weak senders the channel has.
            pub fn sender_weak_count(&self) -> usize {
                self.real.sender_weak_count()
            }
        }

        impl<T> fmt::Debug for $name<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.real.fmt(f)
            }
        }
    };
}

receiver! {
    /// The receiving half of a bounded channel, like `tokio::sync::mpsc::Receiver`.
    Receiver, Receiver
}

receiver! {
    /// The receiving half of an unbounded channel, like
    /// `tokio::sync::mpsc::UnboundedReceiver`.
    UnboundedReceiver, UnboundedReceiver
}

impl<T> Receiver<T> {
    /// The slots free now.
    pub fn capacity(&self) -> usize {
        self.real.capacity()
    }

    /// The channel's size, as made.
    pub fn max_capacity(&self) -> usize {
        self.real.max_capacity()
    }
}

/// Makes an unbounded channel, like `tokio::sync::mpsc::unbounded_channel`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
///     tx.send("job").unwrap();
///     assert_eq!(rx.recv().await, Some("job"));
/// }).unwrap();
/// ```
pub fn unbounded_channel<T>() -> (UnboundedSender<T>, UnboundedReceiver<T>) {
    let (sender, real) = tokio_mpsc::unbounded_channel();
    (sender, UnboundedReceiver { real })
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
