//! `Sleep`: a timer of the simulated world, or tokio's sleep.
//!
//! A simulated sleep arms its timer on the first poll before its deadline, refreshes the
//! timer's waker on later polls, and disarms it when dropped early, so a lost `select!`
//! branch or a completed `timeout` leaves nothing behind, as with the core's own sleep.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crashtest_hooks::{Simulator, TimerRef};
use pin_project_lite::pin_project;

use super::Instant;
use crate::seam;

/// Waits until `duration` has passed, like `tokio::time::sleep`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// let summary = crashtest::Sim::new(1).run(async {
///     tokio::time::sleep(Duration::from_secs(3600)).await; // an hour, in no time
/// }).unwrap();
/// assert_eq!(summary.elapsed, Duration::from_secs(3600));
/// ```
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    match seam::sim() {
        None => Sleep::real(real::time::sleep(duration)),
        Some(sim) => {
            // On the virtual clock directly: no std `Instant` until one is asked for.
            let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
            Sleep::sim(sim, sim.now_ns().saturating_add(nanos))
        }
    }
}

/// Waits until `deadline`, like `tokio::time::sleep_until`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let deadline = tokio::time::Instant::now() + Duration::from_millis(5);
///     tokio::time::sleep_until(deadline).await;
///     assert_eq!(tokio::time::Instant::now(), deadline);
/// }).unwrap();
/// ```
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    match seam::sim() {
        None => Sleep::real(real::time::sleep_until(deadline.into_real())),
        Some(sim) => Sleep::sim(sim, deadline.to_virtual_ns()),
    }
}

pin_project! {
    /// The future of [`sleep`] and [`sleep_until`], like `tokio::time::Sleep`.
    pub struct Sleep {
        #[pin]
        inner: Inner,
    }
}

pin_project! {
    #[project = InnerProj]
    enum Inner {
        Real { #[pin] sleep: real::time::Sleep },
        Sim { timer: SimTimer },
    }
}

/// A simulated sleep's state; disarms its timer when dropped.
struct SimTimer {
    /// The deadline on the virtual clock.
    deadline_ns: u64,
    /// When the timer fires: the deadline, or later if the run stretches sleeps.
    fire_at_ns: u64,
    armed: Option<TimerRef>,
}

impl Drop for SimTimer {
    fn drop(&mut self) {
        if let (Some(timer), Some(sim)) = (self.armed, seam::sim()) {
            sim.cancel_timer(timer);
        }
    }
}

impl Sleep {
    fn real(sleep: real::time::Sleep) -> Sleep {
        Sleep {
            inner: Inner::Real { sleep },
        }
    }

    fn sim(sim: &dyn Simulator, deadline_ns: u64) -> Sleep {
        Sleep {
            inner: Inner::Sim {
                timer: SimTimer {
                    deadline_ns,
                    fire_at_ns: sim.fire_time(deadline_ns),
                    armed: None,
                },
            },
        }
    }

    /// When the sleep completes.
    pub fn deadline(&self) -> Instant {
        match &self.inner {
            Inner::Real { sleep } => Instant::from_real(sleep.deadline()),
            Inner::Sim { timer } => Instant::from_virtual_ns(timer.deadline_ns),
        }
    }

    /// True once the sleep's time has come.
    pub fn is_elapsed(&self) -> bool {
        match &self.inner {
            Inner::Real { sleep } => sleep.is_elapsed(),
            Inner::Sim { timer } => seam::sim().is_some_and(|sim| sim.now_ns() >= timer.fire_at_ns),
        }
    }

    /// Moves the deadline; the sleep can be awaited again.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// use std::time::Duration;
    /// crashtest::Sim::new(1).run(async {
    ///     let start = tokio::time::Instant::now();
    ///     let mut sleep = Box::pin(tokio::time::sleep(Duration::from_secs(10)));
    ///     sleep.as_mut().reset(start + Duration::from_secs(1));
    ///     sleep.await;
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1));
    /// }).unwrap();
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        match self.project().inner.project() {
            InnerProj::Real { sleep } => sleep.reset(deadline.into_real()),
            InnerProj::Sim { timer } => {
                let sim = seam::sim().unwrap_or_else(|| seam::outside("Sleep"));
                if let Some(armed) = timer.armed.take() {
                    sim.cancel_timer(armed);
                }
                timer.deadline_ns = deadline.to_virtual_ns();
                timer.fire_at_ns = sim.fire_time(timer.deadline_ns);
            }
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.project().inner.project() {
            InnerProj::Real { sleep } => sleep.poll(cx),
            InnerProj::Sim { timer } => {
                let sim = seam::sim().unwrap_or_else(|| seam::outside("Sleep"));
                sim.poll_timer(timer.fire_at_ns, &mut timer.armed, cx.waker())
            }
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .finish_non_exhaustive()
    }
}
