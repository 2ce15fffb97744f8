//! `watch`: tokio's channel, with its receivers woken in an order the seed decides.
//!
//! tokio's receivers wait on one of eight lists, drawn for each wait from tokio's own
//! per-thread generator, which no simulation can seed (it is seeded from a process-wide
//! counter and std's random keys). Several tasks awaiting `changed()` on one channel, as in a
//! graceful shutdown, then wake in a different order on each run of the same seed. So a
//! channel made inside a simulation keeps one wait list of its own, a `Notify` that wakes
//! its waiters in the order they came: every change wakes them in that order, and the
//! scheduler's seeded draws alone decide who runs first. The value, its versions and the
//! counts stay in tokio's channel, which this one wraps.
//!
//! A channel made outside a simulation is tokio's throughout (its waits spread over tokio's
//! lists, as built for many receivers on many threads), at the cost of one check of its kind
//! per wait.
//!
//! Invariant: every receiver and sender of a simulated channel share its one list, and every
//! change to the value (a send, a modification, the last sender's drop) wakes that list
//! after tokio's channel holds the change, so a woken receiver finds it. A waiting receiver
//! joins the list before it looks at the version, so a change between the two still wakes
//! it.

use std::fmt;
use std::mem::ManuallyDrop;
use std::pin::pin;
use std::sync::Arc;

use real::sync::Notify;
use real::sync::watch as tokio_watch;
pub use real::sync::watch::{Ref, error};

use crate::seam;

/// Makes a channel holding `init`, like `tokio::sync::watch::channel`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let (tx, mut rx) = tokio::sync::watch::channel("starting");
///     let waiter = tokio::spawn(async move {
///         rx.changed().await.unwrap();
///         *rx.borrow_and_update()
///     });
///     tx.send("running").unwrap();
///     assert_eq!(waiter.await.unwrap(), "running");
/// }).unwrap();
/// ```
pub fn channel<T>(init: T) -> (Sender<T>, Receiver<T>) {
    let (sender, receiver) = tokio_watch::channel(init);
    let waiters = seam::sim().is_some().then(|| Arc::new(Notify::new()));
    let receiver = Receiver {
        real: receiver,
        waiters: waiters.clone(),
    };
    let sender = Sender {
        real: ManuallyDrop::new(sender),
        waiters,
    };
    (sender, receiver)
}

/// The sending half, like `tokio::sync::watch::Sender`.
pub struct Sender<T> {
    /// Dropped by hand, before the waiters are woken: a receiver woken by the last sender's
    /// drop must find the channel closed.
    real: ManuallyDrop<tokio_watch::Sender<T>>,
    /// The channel's own wait list, for a channel made inside a simulation.
    waiters: Option<Arc<Notify>>,
}

/// The receiving half, like `tokio::sync::watch::Receiver`.
pub struct Receiver<T> {
    real: tokio_watch::Receiver<T>,
    waiters: Option<Arc<Notify>>,
}

impl<T> Sender<T> {
    /// A channel's sender with no receiver yet, like `tokio::sync::watch::Sender::new`.
    pub fn new(init: T) -> Sender<T> {
        channel(init).0
    }

    /// Sends a new value, like tokio's: fails, giving it back, when no receiver is left.
    pub fn send(&self, value: T) -> Result<(), error::SendError<T>> {
        let sent = self.real.send(value);
        self.wake();
        sent
    }

    /// Modifies the value in place and tells the receivers, like tokio's.
    pub fn send_modify<F>(&self, modify: F)
    where
        F: FnOnce(&mut T),
    {
        self.real.send_modify(modify);
        self.wake();
    }

    /// Modifies the value in place and tells the receivers if `modify` says it changed it,
    /// like tokio's.
    pub fn send_if_modified<F>(&self, modify: F) -> bool
    where
        F: FnOnce(&mut T) -> bool,
    {
        let modified = self.real.send_if_modified(modify);
        if modified {
            self.wake();
        }
        modified
    }

    /// Replaces the value, returning the old one, even with no receiver, like tokio's.
    pub fn send_replace(&self, value: T) -> T {
        let old = self.real.send_replace(value);
        self.wake();
        old
    }

    /// The current value, like tokio's.
    pub fn borrow(&self) -> Ref<'_, T> {
        self.real.borrow()
    }

    /// True once every receiver is gone, like tokio's.
    pub fn is_closed(&self) -> bool {
        self.real.is_closed()
    }

    /// Waits until every receiver is gone, like tokio's (one wait list, which tokio wakes in
    /// order).
    pub async fn closed(&self) {
        self.real.closed().await;
    }

    /// A new receiver, which has seen the current value, like tokio's.
    pub fn subscribe(&self) -> Receiver<T> {
        Receiver {
            real: self.real.subscribe(),
            waiters: self.waiters.clone(),
        }
    }

    /// How many receivers the channel has, like tokio's.
    pub fn receiver_count(&self) -> usize {
        self.real.receiver_count()
    }

    /// How many senders the channel has, like tokio's.
    pub fn sender_count(&self) -> usize {
        self.real.sender_count()
    }

    /// True if both send on the same channel, like tokio's.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.real.same_channel(&other.real)
    }

    /// Wakes the receivers waiting on a simulated channel, after a change.
    fn wake(&self) {
        if let Some(waiters) = &self.waiters {
            waiters.notify_waiters();
        }
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            real: ManuallyDrop::new(tokio_watch::Sender::clone(&self.real)),
            waiters: self.waiters.clone(),
        }
    }
}

impl<T: Default> Default for Sender<T> {
    fn default() -> Self {
        Sender::new(T::default())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let last = self.real.sender_count() == 1;
        // SAFETY: `real` is dropped here once and never used again: this is the sender's drop.
        unsafe { ManuallyDrop::drop(&mut self.real) };
        if last {
            // The channel is closed now: its waiting receivers wake to an error.
            self.wake();
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.real, f)
    }
}

impl<T> Receiver<T> {
    /// The current value, not marking it seen, like tokio's.
    pub fn borrow(&self) -> Ref<'_, T> {
        self.real.borrow()
    }

    /// The current value, marking it seen, like tokio's.
    pub fn borrow_and_update(&mut self) -> Ref<'_, T> {
        self.real.borrow_and_update()
    }

    /// Whether a value not yet seen is there; an error once the channel is closed, like
    /// tokio's.
    pub fn has_changed(&self) -> Result<bool, error::RecvError> {
        self.real.has_changed()
    }

    /// True once every sender is gone, like tokio's.
    pub fn is_closed(&self) -> bool {
        self.real.has_changed().is_err()
    }

    /// Marks the value as not seen, like tokio's.
    pub fn mark_changed(&mut self) {
        self.real.mark_changed();
    }

    /// Marks the value as seen, like tokio's.
    pub fn mark_unchanged(&mut self) {
        self.real.mark_unchanged();
    }

    /// Waits for a value not yet seen and marks it seen, like tokio's; an error once the
    /// channel is closed and its last value seen.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let (tx, mut rx) = tokio::sync::watch::channel(0);
    ///     tokio::spawn(async move { tx.send(1).unwrap() });
    ///     rx.changed().await.unwrap();
    ///     assert_eq!(*rx.borrow(), 1);
    ///     assert!(rx.changed().await.is_err(), "the sender is gone");
    /// }).unwrap();
    /// ```
    pub async fn changed(&mut self) -> Result<(), error::RecvError> {
        match &self.waiters {
            None => self.real.changed().await,
            Some(waiters) => changed_in_order(&mut self.real, waiters).await,
        }
    }

    /// Waits until `f` holds for the value, marking each value looked at seen, and returns
    /// that value, like tokio's; an error once the channel is closed and `f` held for none.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let (tx, mut rx) = tokio::sync::watch::channel(0);
    ///     tokio::spawn(async move {
    ///         for n in 1..=5 {
    ///             tx.send(n).unwrap();
    ///             tokio::task::yield_now().await;
    ///         }
    ///     });
    ///     // The first value seen that holds: 3, or a later one if the sender ran ahead.
    ///     assert!(*rx.wait_for(|n| *n >= 3).await.unwrap() >= 3);
    /// }).unwrap();
    /// ```
    pub async fn wait_for(
        &mut self,
        mut f: impl FnMut(&T) -> bool,
    ) -> Result<Ref<'_, T>, error::RecvError> {
        let Some(waiters) = self.waiters.clone() else {
            return self.real.wait_for(f).await;
        };
        let mut closed = false;
        loop {
            // tokio's order: look at the value (marking it seen) before waiting, and after the
            // channel closed only at a value not looked at yet.
            let holds = {
                let value = self.real.borrow();
                (!closed || value.has_changed()) && f(&value)
            };
            if holds {
                return Ok(self.real.borrow_and_update());
            }
            self.real.mark_unchanged();
            if closed {
                return Err(self.real.has_changed().expect_err("the channel is closed"));
            }
            closed = changed_in_order(&mut self.real, &waiters).await.is_err();
        }
    }

    /// True if both receive from the same channel, like tokio's.
    pub fn same_channel(&self, other: &Self) -> bool {
        self.real.same_channel(&other.real)
    }
}

/// `changed` on a simulated channel: waits on the channel's own list, joined before the
/// version is looked at.
async fn changed_in_order<T>(
    real: &mut tokio_watch::Receiver<T>,
    waiters: &Notify,
) -> Result<(), error::RecvError> {
    loop {
        let mut notified = pin!(waiters.notified());
        notified.as_mut().enable();
        // A new value counts even after the senders are gone, as in tokio's `changed`.
        if real.borrow().has_changed() {
            real.mark_unchanged();
            return Ok(());
        }
        real.has_changed()?;
        notified.await;
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        Receiver {
            real: self.real.clone(),
            waiters: self.waiters.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.real, f)
    }
}
