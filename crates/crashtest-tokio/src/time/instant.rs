//! `Instant`: std's `Instant`, read from the virtual clock inside a simulation.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

use crate::seam;

/// A point on the monotonic clock, like `tokio::time::Instant`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let start = tokio::time::Instant::now();
///     tokio::time::sleep(Duration::from_secs(5)).await;
///     assert_eq!(start.elapsed(), Duration::from_secs(5));
/// }).unwrap();
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    std: std::time::Instant,
}

/// How far "never" is: a deadline thirty years out, as tokio uses for sleeps that overflow.
pub(crate) const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

impl Instant {
    /// Now: virtual time inside a simulation, tokio's clock outside (paused or not).
    pub fn now() -> Instant {
        match crashtest_hooks::anchored_now() {
            None => Instant::from_std(real::time::Instant::now().into_std()),
            Some((anchor, now_ns)) => Instant::at_virtual_ns(anchor, now_ns),
        }
    }

    /// The instant that std's `Instant` names.
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant { std }
    }

    /// The std `Instant` this is.
    pub fn into_std(self) -> std::time::Instant {
        self.std
    }

    pub(crate) fn into_real(self) -> real::time::Instant {
        real::time::Instant::from_std(self.std)
    }

    pub(crate) fn from_real(real: real::time::Instant) -> Instant {
        Instant::from_std(real.into_std())
    }

    pub(crate) fn far_future() -> Instant {
        Instant::now() + FAR_FUTURE
    }

    /// The instant at `nanos` of the running simulation's virtual clock.
    pub(crate) fn from_virtual_ns(nanos: u64) -> Instant {
        Instant::at_virtual_ns(anchor(), nanos)
    }

    /// The instant at `nanos` of a virtual clock that reads zero at `anchor`.
    fn at_virtual_ns(anchor: std::time::Instant, nanos: u64) -> Instant {
        let std = anchor
            .checked_add(Duration::from_nanos(nanos))
            .unwrap_or(anchor + FAR_FUTURE);
        Instant { std }
    }

    /// This instant on the running simulation's virtual clock (zero if it is before the run).
    pub(crate) fn to_virtual_ns(self) -> u64 {
        self.virtual_ns_after(anchor())
    }

    /// This instant on a virtual clock that reads zero at `anchor` (zero if before it).
    pub(crate) fn virtual_ns_after(self, anchor: std::time::Instant) -> u64 {
        let since = self.std.saturating_duration_since(anchor);
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// The time from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.std.checked_duration_since(earlier.std)
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// The time since this instant.
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + duration`, or `None` if it does not fit.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_add(duration).map(Instant::from_std)
    }

    /// `self - duration`, or `None` if it does not fit.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_sub(duration).map(Instant::from_std)
    }
}

/// The running simulation's anchor.
fn anchor() -> std::time::Instant {
    crashtest_hooks::anchor().unwrap_or_else(|| seam::outside("clock reading"))
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant::from_std(std)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(instant: Instant) -> std::time::Instant {
        instant.std
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, duration: Duration) -> Instant {
        Instant::from_std(self.std + duration)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, duration: Duration) {
        *self = *self + duration;
    }
}

impl Sub for Instant {
    type Output = Duration;

    fn sub(self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, duration: Duration) -> Instant {
        Instant::from_std(self.std - duration)
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, duration: Duration) {
        *self = *self - duration;
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.std.fmt(f)
    }
}
