//! `Sleep`: a timer of the simulated world, or tokio's sleep.
//!
//! A simulated sleep arms its timer on the first poll before its deadline, refreshes the
//! timer's waker on later polls, and disarms it when dropped early, so a lost `select!`
//! branch or a completed `timeout` leaves nothing behind, as with the core's own sleep.
//!
//! Sleeps are the hottest calls of most simulated programs, so a simulated one costs one
//! thread-local read and one call to the simulator when made (its deadline and its fire time
//! come back together); a poll reads the virtual clock through the hooks' thread-local, and
//! calls the simulator (the one the sleep was made in) only to arm or refresh its timer.

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
#[inline]
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    match seam::sim() {
        None => real_sleep(duration),
        Some(sim) => sleep_in(sim, duration),
    }
}

/// tokio's sleep, kept out of line so that [`sleep`] stays small enough to inline: the
/// caller then builds a simulated sleep itself instead of receiving it from a call.
#[inline(never)]
#[track_caller]
fn real_sleep(duration: Duration) -> Sleep {
    Sleep::real(real::time::sleep(duration))
}

/// tokio's `sleep_until`, out of line for the same reason as [`real_sleep`].
#[inline(never)]
#[track_caller]
fn real_sleep_until(deadline: Instant) -> Sleep {
    Sleep::real(real::time::sleep_until(deadline.into_real()))
}

/// A sleep of `duration` in the simulation `sim`, on the virtual clock directly: no std
/// `Instant` until one is asked for.
#[inline]
pub(crate) fn sleep_in(sim: &'static dyn Simulator, duration: Duration) -> Sleep {
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let (deadline_ns, fire_at_ns) = sim.sleep_for(nanos);
    Sleep::sim(sim, deadline_ns, fire_at_ns)
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
#[inline]
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    match seam::running() {
        None => real_sleep_until(deadline),
        Some(running) => {
            let deadline_ns = deadline.virtual_ns_after(running.anchor);
            Sleep::sim(running.sim, deadline_ns, running.sim.fire_time(deadline_ns))
        }
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
    /// The simulation the sleep was made in.
    sim: &'static dyn Simulator,
    /// The deadline on the virtual clock.
    deadline_ns: u64,
    /// When the timer fires: the deadline, or later if the run stretches sleeps.
    fire_at_ns: u64,
    armed: Option<TimerRef>,
}

impl Drop for SimTimer {
    fn drop(&mut self) {
        // The simulator ignores a timer of a run that is over.
        if let Some(timer) = self.armed {
            self.sim.cancel_timer(timer);
        }
    }
}

impl Sleep {
    fn real(sleep: real::time::Sleep) -> Sleep {
        Sleep {
            inner: Inner::Real { sleep },
        }
    }

    #[inline]
    fn sim(sim: &'static dyn Simulator, deadline_ns: u64, fire_at_ns: u64) -> Sleep {
        Sleep {
            inner: Inner::Sim {
                timer: SimTimer {
                    sim,
                    deadline_ns,
                    fire_at_ns,
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
            Inner::Sim { timer } => {
                crashtest_hooks::now_ns().is_some_and(|now| now >= timer.fire_at_ns)
            }
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
                let sim = timer.sim;
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

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.project().inner.project() {
            InnerProj::Real { sleep } => sleep.poll(cx),
            InnerProj::Sim { timer } => match crashtest_hooks::now_ns() {
                // Due: the simulator fired the timer before it polled this task, so nothing
                // is left armed. No call into the simulator for it.
                Some(now) if now >= timer.fire_at_ns => {
                    timer.armed = None;
                    Poll::Ready(())
                }
                Some(_) => timer
                    .sim
                    .poll_timer(timer.fire_at_ns, &mut timer.armed, cx.waker()),
                None => seam::outside("Sleep"),
            },
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
