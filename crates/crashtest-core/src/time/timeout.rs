//! `timeout`: bounds the time a future may take.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Instant, Sleep, sleep, sleep_until};

/// The error of a [`timeout`] whose deadline passed first.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// use crashtest::time;
/// let late = time::timeout(std::time::Duration::ZERO, std::future::pending::<()>()).await;
/// let error: time::Elapsed = late.unwrap_err();
/// assert_eq!(std::io::Error::from(error).kind(), std::io::ErrorKind::TimedOut);
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(_: Elapsed) -> std::io::Error {
        std::io::ErrorKind::TimedOut.into()
    }
}

/// Runs `future` for at most `duration`; `Err(Elapsed)` if it did not finish in time.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{time, Sim};
/// use std::time::Duration;
///
/// Sim::new(1).run(async {
///     let slow = time::sleep(Duration::from_secs(10));
///     assert!(time::timeout(Duration::from_secs(1), slow).await.is_err());
///     let quick = async { 7 };
///     assert_eq!(time::timeout(Duration::from_secs(1), quick).await, Ok(7));
/// }).unwrap();
/// ```
#[inline]
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep(duration),
    }
}

/// Runs `future` until `deadline` at most; see [`timeout`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// use crashtest::time::{self, Instant};
/// let deadline = Instant::now() + std::time::Duration::from_millis(1);
/// assert!(time::timeout_at(deadline, std::future::pending::<()>()).await.is_err());
/// # }).unwrap();
/// ```
#[inline]
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    let sleep = sleep_until(deadline);
    // The sleep ends the timeout at the caller's deadline (a stretch may delay when it fires,
    // never the deadline it reports).
    assert_eq!(
        sleep.deadline(),
        deadline,
        "a timeout's sleep keeps its deadline"
    );
    Timeout { future, sleep }
}

pin_project_lite::pin_project! {
    /// The future returned by [`timeout`] and [`timeout_at`].
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let t: crashtest::time::Timeout<_> =
    ///     crashtest::time::timeout(std::time::Duration::from_secs(1), async { 1 });
    /// assert_eq!(t.await, Ok(1));
    /// # }).unwrap();
    /// ```
    #[derive(Debug)]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    /// The wrapped future.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let t = crashtest::time::timeout(std::time::Duration::from_secs(1), async { 1 });
    /// let _inner = t.into_inner();
    /// # }).unwrap();
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let sleep = this.sleep;
        Pin::new(&mut *sleep).poll(cx).map(|()| {
            // A timeout elapses at its deadline, not before.
            assert!(sleep.is_elapsed(), "a timeout elapsed before its deadline");
            Err(Elapsed(()))
        })
    }
}
