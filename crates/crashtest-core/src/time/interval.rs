//! `interval`: a stream of evenly spaced ticks, shaped like `tokio::time::Interval`.

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Instant, Sleep, sleep_until};

/// What an [`Interval`] does with ticks it missed because its task was late.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// use crashtest::time::{interval, MissedTickBehavior};
/// let mut ticks = interval(std::time::Duration::from_secs(1));
/// ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// Fire the missed ticks at once, then keep the original schedule.
    #[default]
    Burst,
    /// Start a new schedule one period after the late tick.
    Delay,
    /// Drop the missed ticks and keep to the original schedule's next tick.
    Skip,
}

/// Ticks every `period`, the first tick at once.
///
/// # Panics
///
/// Panics if `period` is zero.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{time, Sim};
/// use std::time::Duration;
///
/// Sim::new(1).run(async {
///     let mut ticks = time::interval(Duration::from_millis(10));
///     ticks.tick().await; // at 0 ms
///     ticks.tick().await; // at 10 ms
///     let t = ticks.tick().await; // at 20 ms
///     assert_eq!(t.as_nanos_since_start(), 20_000_000);
/// }).unwrap();
/// ```
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// Ticks every `period`, the first tick at `start`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// use crashtest::time::{self, Instant};
/// use std::time::Duration;
/// let start = Instant::now() + Duration::from_secs(1);
/// let mut ticks = time::interval_at(start, Duration::from_secs(1));
/// assert_eq!(ticks.tick().await, start);
/// # }).unwrap();
/// ```
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "an interval's period must be more than zero"
    );
    Interval {
        next: start,
        period,
        behavior: MissedTickBehavior::default(),
        sleep: Box::pin(sleep_until(start)),
    }
}

/// The stream returned by [`interval`] and [`interval_at`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let mut ticks = crashtest::time::interval(std::time::Duration::from_millis(100));
/// for _ in 0..3 {
///     ticks.tick().await;
/// }
/// assert_eq!(crashtest::time::Instant::now().as_nanos_since_start(), 200_000_000);
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Interval {
    next: Instant,
    period: Duration,
    behavior: MissedTickBehavior,
    sleep: Pin<Box<Sleep>>,
}

impl Interval {
    /// Waits for the next tick and returns when it was due.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let mut i = crashtest::time::interval(std::time::Duration::from_secs(1));
    /// assert_eq!(i.tick().await.as_nanos_since_start(), 0);
    /// # }).unwrap();
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick; `Ready` with the tick's due time.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let mut i = crashtest::time::interval(std::time::Duration::from_secs(1));
    /// let t = std::future::poll_fn(|cx| i.poll_tick(cx)).await;
    /// assert_eq!(t.as_nanos_since_start(), 0);
    /// # }).unwrap();
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        // The sleep waits for the next tick (set together in `interval_at` and `reset`).
        assert_eq!(self.sleep.deadline(), self.next);
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let due = self.next;
        let now = Instant::now();
        // A tick is never early: its sleep ends at its due time or later.
        assert!(now >= due, "an interval ticked before its tick was due");
        let next = match self.behavior {
            MissedTickBehavior::Burst => due + self.period,
            MissedTickBehavior::Delay => now + self.period,
            MissedTickBehavior::Skip => {
                // Whole periods in nanoseconds, not `Duration * u32`: a short period far
                // behind skips more than `u32::MAX` of them.
                let late = now.saturating_duration_since(due).as_nanos();
                let period = self.period.as_nanos();
                let skipped = (late / period + 1) * period;
                let next = due
                    + Duration::from_nanos(
                        u64::try_from(skipped).expect("virtual time fits in u64 nanoseconds"),
                    );
                assert!(next > now, "a skipping interval's next tick is already due");
                assert!(
                    next <= now + self.period,
                    "a skipping interval skipped a tick still ahead"
                );
                next
            }
        };
        // The schedule moves forward by at least a period (never zero, see `interval_at`).
        assert!(next > due, "an interval's next tick is not after its last");
        // Burst and Skip keep the original schedule: the next tick is whole periods on.
        assert!(
            self.behavior == MissedTickBehavior::Delay
                || next.duration_since(due).as_nanos() % self.period.as_nanos() == 0,
            "a {:?} interval left its schedule",
            self.behavior
        );
        self.next = next;
        self.sleep.as_mut().reset(next);
        Poll::Ready(due)
    }

    /// Starts the schedule again: the next tick is one period from now.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let mut i = crashtest::time::interval(std::time::Duration::from_secs(1));
    /// i.reset();
    /// assert_eq!(i.tick().await.as_nanos_since_start(), 1_000_000_000);
    /// # }).unwrap();
    /// ```
    pub fn reset(&mut self) {
        self.next = Instant::now() + self.period;
        self.sleep.as_mut().reset(self.next);
    }

    /// The period.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let i = crashtest::time::interval(std::time::Duration::from_secs(2));
    /// assert_eq!(i.period().as_secs(), 2);
    /// # }).unwrap();
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What the interval does with missed ticks.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::time::{interval, MissedTickBehavior};
    /// let i = interval(std::time::Duration::from_secs(2));
    /// assert_eq!(i.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// # }).unwrap();
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.behavior
    }

    /// Sets what the interval does with missed ticks.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::time::{interval, MissedTickBehavior};
    /// let mut i = interval(std::time::Duration::from_secs(2));
    /// i.set_missed_tick_behavior(MissedTickBehavior::Skip);
    /// # }).unwrap();
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.behavior = behavior;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipping_more_than_u32_max_periods_lands_on_the_next_tick_ahead() {
        crate::Sim::new(1)
            .run(async {
                let period = Duration::from_micros(1);
                let mut ticks = interval(period);
                ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
                ticks.tick().await;
                // More than u32::MAX periods late.
                let late = Duration::from_secs(4_400);
                crate::time::sleep(late).await;
                let start = crate::time::Instant::now() - late;
                let due = ticks.tick().await;
                assert_eq!(due, start + period, "the late tick is the one missed first");
                let next = ticks.tick().await;
                assert_eq!(
                    next,
                    start + late + period,
                    "the next tick is the schedule's first one ahead, not an immediate one"
                );
                assert_eq!(crate::time::Instant::now(), next);
            })
            .unwrap();
    }
}
