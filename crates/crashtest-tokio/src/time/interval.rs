//! `Interval`: tokio's outside a simulation; inside one, ticks on a simulated sleep.
//!
//! The simulated interval follows tokio's rules: the first tick is due at the start; a tick
//! counts as missed when it is taken more than 5 ms after it was due (below that, the next
//! tick is simply one period after the last), and a missed tick is followed by the next one
//! as [`MissedTickBehavior`] says: `Burst` keeps the schedule (ticks at once until caught
//! up), `Delay` restarts it a period after now, and `Skip` jumps to the next multiple of the
//! period on the original schedule. The conformance suite checks each against tokio.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::{Instant, MissedTickBehavior, Sleep, sleep_until};
use crate::seam;

/// Ticks once every `period`, the first tick at once, like `tokio::time::interval`.
///
/// # Panics
///
/// Panics if `period` is zero.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let start = tokio::time::Instant::now();
///     let mut every = tokio::time::interval(Duration::from_secs(1));
///     for expected in 0..3 {
///         let tick = every.tick().await;
///         assert_eq!(tick - start, Duration::from_secs(expected));
///     }
/// }).unwrap();
/// ```
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    match seam::sim() {
        None => Interval::real(real::time::interval(period)),
        Some(_) => Interval::sim(Instant::now(), period),
    }
}

/// Ticks once every `period`, the first tick at `start`, like `tokio::time::interval_at`.
///
/// # Panics
///
/// Panics if `period` is zero.
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(period > Duration::ZERO, "`period` must be non-zero.");
    match seam::sim() {
        None => Interval::real(real::time::interval_at(start.into_real(), period)),
        Some(_) => Interval::sim(start, period),
    }
}

/// The stream of ticks of [`interval`], like `tokio::time::Interval`.
#[derive(Debug)]
pub struct Interval {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Real(real::time::Interval),
    Sim {
        delay: Pin<Box<Sleep>>,
        period: Duration,
        behavior: MissedTickBehavior,
    },
}

impl Interval {
    fn real(interval: real::time::Interval) -> Interval {
        Interval {
            inner: Inner::Real(interval),
        }
    }

    fn sim(start: Instant, period: Duration) -> Interval {
        Interval {
            inner: Inner::Sim {
                delay: Box::pin(sleep_until(start)),
                period,
                behavior: MissedTickBehavior::default(),
            },
        }
    }

    /// Waits for the next tick; returns when it was due.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick; `Ready` with when it was due.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let (delay, period, behavior) = match &mut self.inner {
            Inner::Real(interval) => return interval.poll_tick(cx).map(Instant::from_real),
            Inner::Sim {
                delay,
                period,
                behavior,
            } => (delay, *period, *behavior),
        };
        ready!(delay.as_mut().poll(cx));
        let due = delay.deadline();
        let now = Instant::now();
        let next = if now > due + Duration::from_millis(5) {
            after_missed(behavior, due, now, period)
        } else {
            due.checked_add(period).unwrap_or_else(Instant::far_future)
        };
        delay.as_mut().reset(next);
        Poll::Ready(due)
    }

    /// Restarts the schedule: the next tick one period from now.
    pub fn reset(&mut self) {
        let period = self.period();
        self.reset_to(|interval| interval.reset(), Instant::now() + period);
    }

    /// Restarts the schedule: the next tick at once.
    pub fn reset_immediately(&mut self) {
        self.reset_to(real::time::Interval::reset_immediately, Instant::now());
    }

    /// Restarts the schedule: the next tick `after` from now.
    pub fn reset_after(&mut self, after: Duration) {
        self.reset_to(
            |interval| interval.reset_after(after),
            Instant::now() + after,
        );
    }

    /// Restarts the schedule: the next tick at `deadline`.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.reset_to(|interval| interval.reset_at(deadline.into_real()), deadline);
    }

    fn reset_to(&mut self, real: impl FnOnce(&mut real::time::Interval), next: Instant) {
        match &mut self.inner {
            Inner::Real(interval) => real(interval),
            Inner::Sim { delay, .. } => delay.as_mut().reset(next),
        }
    }

    /// What happens after a missed tick.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        match &self.inner {
            Inner::Real(interval) => interval.missed_tick_behavior(),
            Inner::Sim { behavior, .. } => *behavior,
        }
    }

    /// Sets what happens after a missed tick.
    pub fn set_missed_tick_behavior(&mut self, new: MissedTickBehavior) {
        match &mut self.inner {
            Inner::Real(interval) => interval.set_missed_tick_behavior(new),
            Inner::Sim { behavior, .. } => *behavior = new,
        }
    }

    /// The period.
    pub fn period(&self) -> Duration {
        match &self.inner {
            Inner::Real(interval) => interval.period(),
            Inner::Sim { period, .. } => *period,
        }
    }
}

/// The tick after one that was due at `due` and taken, late, at `now`.
fn after_missed(
    behavior: MissedTickBehavior,
    due: Instant,
    now: Instant,
    period: Duration,
) -> Instant {
    match behavior {
        MissedTickBehavior::Burst => due + period,
        MissedTickBehavior::Delay => now + period,
        // The next point of the original schedule after now.
        MissedTickBehavior::Skip => {
            let late = (now - due).as_nanos();
            let into_period = late % period.as_nanos();
            let into_period = u64::try_from(into_period).expect("less than one period");
            now + (period - Duration::from_nanos(into_period))
        }
    }
}
