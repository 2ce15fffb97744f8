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
