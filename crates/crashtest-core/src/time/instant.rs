//! `Instant`: a point on the monotonic clock, virtual inside a simulation.
//!
//! Inside a simulation an `Instant` counts nanoseconds of virtual time since the run began,
//! so it is the same in every replay. Outside one it counts real time since a base taken once
//! per process, so code that measures durations works in production unchanged.

use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::sync::OnceLock;
use std::time::Duration;

use crate::world;

/// The base of real-time instants, taken the first time one is asked for.
/// The origin of the real clock's counts. The real clock is tokio's: the system's monotonic
/// clock, or, under tokio's `test-util`, the runtime's clock when a test pauses it, so that
/// `sleep`, `interval` and `timeout` keep time with tokio's own timers there. The origin is an
/// hour before the first use, because a runtime's paused clock starts at the real time the
/// runtime was built, which may come before that first use.
fn real_base() -> tokio::time::Instant {
    static BASE: OnceLock<tokio::time::Instant> = OnceLock::new();
    *BASE.get_or_init(|| {
        #[allow(
            clippy::disallowed_methods,
            reason = "real time, used only outside simulations"
        )]
        let now = std::time::Instant::now();
        let base = now.checked_sub(Duration::from_secs(3600)).unwrap_or(now);
        tokio::time::Instant::from_std(base)
    })
}

/// A measurement of the monotonic clock, shaped like `tokio::time::Instant`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{time::{self, Instant}, Sim};
/// use std::time::Duration;
///
/// Sim::new(1).run(async {
///     let start = Instant::now();
///     time::sleep(Duration::from_secs(5)).await;
///     assert_eq!(start.elapsed(), Duration::from_secs(5));
/// }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// The current instant: virtual time inside a simulation, real time outside.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// assert_eq!(crashtest::time::Instant::now().as_nanos_since_start(), 0);
    /// # }).unwrap();
    /// ```
    pub fn now() -> Instant {
        match world::with(|w| w.now_ns()) {
            Some(nanos) => Instant { nanos },
            None => {
                let elapsed = tokio::time::Instant::now().saturating_duration_since(real_base());
                Instant {
                    nanos: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
                }
            }
        }
    }

    #[inline]
    pub(crate) fn from_nanos(nanos: u64) -> Instant {
        Instant { nanos }
    }

    /// Nanoseconds since the start of the run (or since the process's time base outside a
    /// simulation).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::time::sleep(std::time::Duration::from_micros(3)).await;
    /// assert_eq!(crashtest::time::Instant::now().as_nanos_since_start(), 3_000);
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn as_nanos_since_start(self) -> u64 {
        self.nanos
    }

    pub(crate) fn to_std(self) -> std::time::Instant {
        let base = real_base();
        let real = (base + Duration::from_nanos(self.nanos)).into_std();
        // A tokio sleep outside a simulation waits for this instant: it must be the same
        // count of nanoseconds past the origin, none lost on the way to the real clock.
        assert_eq!(
            real.checked_duration_since(base.into_std()),
            Some(Duration::from_nanos(self.nanos)),
            "an instant of {} ns moved on its way to the real clock",
            self.nanos
        );
        real
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::time::Instant;
    /// let a = Instant::now();
    /// let b = a + std::time::Duration::from_secs(1);
    /// assert_eq!(b.duration_since(a).as_secs(), 1);
    /// assert_eq!(a.duration_since(b).as_secs(), 0);
    /// # }).unwrap();
    /// ```
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        let since = self.saturating_duration_since(earlier);
        // The time since `earlier`, added back to it, lands on `self` (on `earlier` itself
        // when it is the later one).
        assert_eq!(
            earlier.checked_add(since),
            Some((*self).max(earlier)),
            "{since:?} after {earlier:?} is not {self:?}"
        );
        since
    }

    /// The time from `earlier` to `self`, or `None` if `earlier` is later.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::time::Instant;
    /// let a = Instant::now();
    /// assert!(a.checked_duration_since(a + std::time::Duration::from_secs(1)).is_none());
    /// # }).unwrap();
    /// ```
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        let since = self
            .nanos
            .checked_sub(earlier.nanos)
            .map(Duration::from_nanos);
        // There is a duration exactly when the instants are in order.
        assert_eq!(
            since.is_some(),
            earlier <= *self,
            "the time from {earlier:?} to {self:?} disagrees with their order"
        );
        since
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::time::Instant;
    /// let a = Instant::now();
    /// assert_eq!(a.saturating_duration_since(a).as_nanos(), 0);
    /// # }).unwrap();
    /// ```
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        let since = self.checked_duration_since(earlier).unwrap_or_default();
        // Zero when `earlier` is not before `self`, and only then.
        assert_eq!(
            since.is_zero(),
            *self <= earlier,
            "the time from {earlier:?} to {self:?} is {since:?}"
        );
        since
    }

    /// The time since `self`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let a = crashtest::time::Instant::now();
    /// crashtest::time::sleep(std::time::Duration::from_millis(2)).await;
    /// assert_eq!(a.elapsed().as_millis(), 2);
    /// # }).unwrap();
    /// ```
    pub fn elapsed(&self) -> Duration {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(*self);
        // No more time has passed since an instant than since the clock's start.
        assert!(
            elapsed.as_nanos() <= u128::from(now.nanos),
            "{elapsed:?} elapsed since {self:?}, at {now:?}"
        );
        elapsed
    }

    /// `self + duration`, or `None` on overflow.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let a = crashtest::time::Instant::now();
    /// assert!(a.checked_add(std::time::Duration::from_secs(1)).is_some());
    /// # }).unwrap();
    /// ```
    #[inline]
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        let sum = u64::try_from(duration.as_nanos())
            .ok()
            .and_then(|nanos| self.nanos.checked_add(nanos))
            .map(|nanos| Instant { nanos });
        // `None` exactly when the sum, taken wide, is past the clock's last nanosecond. Every
        // simulated sleep computes its deadline here: debug builds only.
        debug_assert_eq!(
            sum.is_none(),
            u128::from(self.nanos) + duration.as_nanos() > u128::from(u64::MAX),
            "{self:?} + {duration:?} overflowed differently from the wide sum"
        );
        sum
    }

    /// `self - duration`, or `None` if that is before the clock's start.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let a = crashtest::time::Instant::now();
    /// assert!(a.checked_sub(std::time::Duration::from_secs(1)).is_none());
    /// # }).unwrap();
    /// ```
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        let difference = u64::try_from(duration.as_nanos())
            .ok()
            .and_then(|nanos| self.nanos.checked_sub(nanos))
            .map(|nanos| Instant { nanos });
        // `None` exactly when the duration reaches back past the clock's start.
        assert_eq!(
            difference.is_none(),
            duration.as_nanos() > u128::from(self.nanos),
            "{self:?} - {duration:?} underflowed differently from the wide difference"
        );
        difference
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, rhs: Duration) -> Instant {
        let sum = self
            .checked_add(rhs)
            .expect("overflow when adding a duration to an instant");
        // Measuring back from `self` gives the duration added.
        assert_eq!(
            sum.checked_duration_since(self),
            Some(rhs),
            "{self:?} + {rhs:?} is not {rhs:?} after it"
        );
        sum
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, rhs: Duration) -> Instant {
        let difference = self
            .checked_sub(rhs)
            .expect("instant before the clock's start");
        // Adding the duration back returns to `self`.
        assert_eq!(
            difference.checked_add(rhs),
            Some(self),
            "{self:?} - {rhs:?} does not lead back to it"
        );
        difference
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}
