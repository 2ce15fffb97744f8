//! `Timeout`: tokio's outside a simulation; inside one, a future raced against a simulated
//! sleep (the future is polled first, so one that is ready in time wins a tie).

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use super::error::Elapsed;
use super::sleep::sleep_in;
use super::{Instant, Sleep, sleep_until};
use crate::seam;

/// Requires `future` to complete within `duration`, like `tokio::time::timeout`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let quick = tokio::time::timeout(Duration::from_secs(1), async { 7 });
///     assert_eq!(quick.await, Ok(7));
///     let slow = tokio::time::sleep(Duration::from_secs(2));
///     assert!(tokio::time::timeout(Duration::from_secs(1), slow).await.is_err());
/// }).unwrap();
/// ```
#[track_caller]
pub fn timeout<F>(duration: Duration, future: F) -> Timeout<F::IntoFuture>
where
    F: IntoFuture,
{
    let value = future.into_future();
    match seam::sim() {
        None => Timeout::real(real::time::timeout(duration, value)),
        // A deadline past the virtual clock's end (584 years) is never reached either way.
        Some(sim) => Timeout::sim(value, Some(sleep_in(sim, duration))),
    }
}

/// Requires `future` to complete before `deadline`, like `tokio::time::timeout_at`.
#[track_caller]
pub fn timeout_at<F>(deadline: Instant, future: F) -> Timeout<F::IntoFuture>
where
    F: IntoFuture,
{
    let value = future.into_future();
    match seam::sim() {
        None => Timeout::real(real::time::timeout_at(deadline.into_real(), value)),
        Some(_) => Timeout::sim(value, Some(sleep_until(deadline))),
    }
}

pin_project! {
    /// The future of [`timeout`] and [`timeout_at`], like `tokio::time::Timeout`.
    #[derive(Debug)]
    pub struct Timeout<T> {
        #[pin]
        inner: Inner<T>,
    }
}

pin_project! {
    #[derive(Debug)]
    #[project = InnerProj]
    enum Inner<T> {
        Real { #[pin] timeout: real::time::Timeout<T> },
        // No delay when the deadline does not fit in an `Instant`: it never comes.
        Sim { #[pin] value: T, #[pin] delay: Option<Sleep> },
    }
}

impl<T> Timeout<T> {
    fn real(timeout: real::time::Timeout<T>) -> Timeout<T> {
        Timeout {
            inner: Inner::Real { timeout },
        }
    }

    fn sim(value: T, delay: Option<Sleep>) -> Timeout<T> {
        Timeout {
            inner: Inner::Sim { value, delay },
        }
    }

    /// The inner future.
    pub fn get_ref(&self) -> &T {
        match &self.inner {
            Inner::Real { timeout } => timeout.get_ref(),
            Inner::Sim { value, .. } => value,
        }
    }

    /// The inner future, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        match &mut self.inner {
            Inner::Real { timeout } => timeout.get_mut(),
            Inner::Sim { value, .. } => value,
        }
    }

    /// The inner future, without the timeout.
    pub fn into_inner(self) -> T {
        match self.inner {
            Inner::Real { timeout } => timeout.into_inner(),
            Inner::Sim { value, .. } => value,
        }
    }
}

impl<T: Future> Future for Timeout<T> {
    type Output = Result<T::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().inner.project() {
            InnerProj::Real { timeout } => timeout.poll(cx).map_err(|_| Elapsed::new()),
            InnerProj::Sim { value, delay } => {
                if let Poll::Ready(output) = value.poll(cx) {
                    return Poll::Ready(Ok(output));
                }
                match delay.as_pin_mut() {
                    Some(delay) => delay.poll(cx).map(|()| Err(Elapsed::new())),
                    None => Poll::Pending,
                }
            }
        }
    }
}
