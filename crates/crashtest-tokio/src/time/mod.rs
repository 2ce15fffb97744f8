//! `tokio::time`: sleeps, intervals and timeouts on the simulation's virtual clock inside
//! one, on tokio's timer outside.
//!
//! [`Instant`] wraps std's `Instant`, as tokio's does. Inside a simulation "now" is the run's
//! anchor (`crashtest_hooks::anchor`, std's clock when the run began) plus virtual time, so
//! an `Instant` that a library computed from `std::time::Instant::now()` (hyper's deadlines)
//! lands at the right virtual time: with crashtest's determinism guards, std's clock reads
//! the same virtual time. A sleep made inside a simulation is a timer of the world: it fires
//! when the virtual clock reaches its deadline, and stretches like any simulated sleep when
//! the run stretches sleeps. [`Interval`] follows tokio's rules for missed ticks, checked by
//! the conformance suite against tokio itself. Outside a simulation every type here is a thin
//! wrapper of tokio's, chosen when it is made.

mod instant;
mod interval;
mod sleep;
mod timeout;

pub use real::time::*;

pub use instant::Instant;
pub use interval::{Interval, interval, interval_at};
pub use sleep::{Sleep, sleep, sleep_until};
pub use timeout::{Timeout, timeout, timeout_at};

/// Pauses tokio's clock (`test-util`); inside a simulation the clock is virtual already, and
/// this does nothing.
///
/// # Panics
///
/// As tokio's, outside a simulation.
#[cfg(feature = "test-util")]
#[track_caller]
pub fn pause() {
    if crate::seam::sim().is_none() {
        real::time::pause();
    }
}

/// Resumes tokio's paused clock (`test-util`); does nothing inside a simulation.
///
/// # Panics
///
/// As tokio's, outside a simulation.
#[cfg(feature = "test-util")]
#[track_caller]
pub fn resume() {
    if crate::seam::sim().is_none() {
        real::time::resume();
    }
}

/// Moves tokio's paused clock forward (`test-util`); inside a simulation, sleeps for
/// `duration` of virtual time, which moves the clock the same way.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// let summary = crashtest::Sim::new(1).run(async {
///     tokio::time::pause();
///     tokio::time::advance(Duration::from_secs(90)).await;
/// }).unwrap();
/// assert_eq!(summary.elapsed, Duration::from_secs(90));
/// ```
#[cfg(feature = "test-util")]
pub async fn advance(duration: Duration) {
    match crate::seam::sim() {
        None => real::time::advance(duration).await,
        Some(_) => sleep(duration).await,
    }
}

/// Errors of the time module, like `tokio::time::error`.
pub mod error {
    pub use real::time::error::*;

    use std::fmt;

    /// A timeout elapsed before its future completed, like `tokio::time::error::Elapsed`.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// use std::time::Duration;
    /// crashtest::Sim::new(1).run(async {
    ///     let late = tokio::time::timeout(Duration::from_secs(1), std::future::pending::<()>());
    ///     let elapsed = late.await.unwrap_err();
    ///     assert_eq!(elapsed.to_string(), "deadline has elapsed");
    ///     assert_eq!(std::io::Error::from(elapsed).kind(), std::io::ErrorKind::TimedOut);
    /// }).unwrap();
    /// ```
    #[derive(Debug, PartialEq, Eq)]
    pub struct Elapsed(());

    impl Elapsed {
        pub(crate) fn new() -> Elapsed {
            Elapsed(())
        }
    }

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
}
