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
//!
//! Outside a simulation, tokio's sleep is made on the first poll (or reset), from the
//! deadline taken when the sleep was made, so a `Sleep` is always built from a few plain
//! values. Built with tokio's 112-byte sleep inside on one of two paths, it was assembled on
//! the stack and copied into the awaiting future whole, with wide loads of just-written narrow
//! stores that the CPU cannot forward: a tenth of a simulated sleep's cost. Tokio itself
//! registers a sleep's timer only when it is first polled or reset, so what is deferred is
//! taking the runtime's handle: a sleep belongs to the runtime of the thread that first polls
//! or resets it (the one that made it, unless it was sent elsewhere untouched), and one made
//! outside any runtime, or on a runtime without timers, panics there, at a line of this file,
//! where tokio's panics where it is made (for the same reason, with `tokio_unstable` tracing,
//! a sleep's span names that line, not the caller's). A sleep of over thirty years, where
//! tokio's versions compute the deadline differently, asks tokio's own sleep for it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crashtest_hooks::{Simulator, TimerRef};
use pin_project_lite::pin_project;

use super::Instant;
use super::instant::FAR_FUTURE;
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
pub fn sleep(duration: Duration) -> Sleep {
    match seam::sim() {
        None => Sleep::unmade(real_deadline(duration)),
        Some(sim) => sleep_in(sim, duration),
    }
}

/// The deadline of a sleep of `duration` on tokio's clock (paused or not); out of line, so
/// that [`sleep`] stays small enough to inline.
#[inline(never)]
fn real_deadline(duration: Duration) -> Instant {
    let now = real::time::Instant::now();
    match now.checked_add(duration) {
        Some(deadline) if duration <= FAR_FUTURE => Instant::from_real(deadline),
        // Past thirty years tokio's versions differ (1.47 adds and saturates there on
        // overflow, later ones cap the delay there): its own sleep says, runtime and all.
        _ => Instant::from_real(real::time::sleep(duration).deadline()),
    }
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
pub fn sleep_until(deadline: Instant) -> Sleep {
    match seam::running() {
        None => Sleep::unmade(deadline),
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
        // Outside a simulation, until the first poll makes tokio's sleep.
        Unmade { deadline: Instant },
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
    #[inline]
    fn unmade(deadline: Instant) -> Sleep {
        Sleep {
            inner: Inner::Unmade { deadline },
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
            Inner::Unmade { deadline } => *deadline,
            Inner::Real { sleep } => Instant::from_real(sleep.deadline()),
            Inner::Sim { timer } => Instant::from_virtual_ns(timer.deadline_ns),
        }
    }

    /// True once the sleep's time has come.
    pub fn is_elapsed(&self) -> bool {
        match &self.inner {
            // As tokio's: not elapsed before its first poll registered it.
            Inner::Unmade { .. } => false,
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
        let mut inner = self.project().inner;
        match inner.as_mut().project() {
            // Tokio registers a sleep's timer when it is reset, polled or not, so that it
            // elapses by itself: tokio's sleep is made here.
            InnerProj::Unmade { .. } => {
                let deadline = deadline.into_real();
                make_real(inner, deadline).reset(deadline);
            }
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
        let mut inner = self.project().inner;
        match inner.as_mut().project() {
            InnerProj::Unmade { deadline } => {
                let deadline = deadline.into_real();
                make_real(inner, deadline).poll(cx)
            }
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

/// Makes tokio's sleep until `deadline` in `inner`, on the first poll or reset of a sleep
/// made outside a simulation. Inlined: out of line, the call and the move of tokio's sleep out
/// of it cost a sleep outside a simulation about 5% more than tokio's.
#[inline]
fn make_real(
    mut inner: Pin<&mut Inner>,
    deadline: real::time::Instant,
) -> Pin<&mut real::time::Sleep> {
    inner.set(Inner::Real {
        sleep: real::time::sleep_until(deadline),
    });
    match inner.project() {
        InnerProj::Real { sleep } => sleep,
        _ => unreachable!("tokio's sleep was just made"),
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .finish_non_exhaustive()
    }
}
