//! `tokio::signal`: tokio's outside a simulation; inside one, signals that never come.
//!
//! A simulated node is not an OS process and receives no signals, so waiting for one waits
//! forever, as a real process waits for a signal nobody sends: the usual graceful-shutdown
//! idiom (`serve(..).with_graceful_shutdown(tokio::signal::ctrl_c())`) runs unchanged, and
//! the simulation stops a node by killing it. Registering does not touch the process's real
//! signal handlers.

use std::io;

#[cfg(windows)]
pub use real::signal::windows;

use crate::seam;

/// Waits for Ctrl-C, like `tokio::signal::ctrl_c`; never completes inside a simulation.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let waited = tokio::time::timeout(Duration::from_secs(60), tokio::signal::ctrl_c()).await;
///     assert!(waited.is_err());
/// }).unwrap();
/// ```
///
/// # Errors
///
/// tokio's, outside a simulation.
pub async fn ctrl_c() -> io::Result<()> {
    if seam::sim().is_some() {
        return std::future::pending().await;
    }
    real::signal::ctrl_c().await
}

/// Unix signals, like `tokio::signal::unix`.
#[cfg(unix)]
pub mod unix {
    use std::io;
    use std::task::{Context, Poll};

    pub use real::signal::unix::*;

    use crate::seam;

    /// Listens for `kind`, like `tokio::signal::unix::signal`; inside a simulation the
    /// listener never receives anything.
    ///
    /// # Errors
    ///
    /// tokio's, outside a simulation.
    pub fn signal(kind: SignalKind) -> io::Result<Signal> {
        let real = match seam::sim() {
            None => Some(real::signal::unix::signal(kind)?),
            Some(_) => None,
        };
        Ok(Signal { real })
    }

    /// A signal listener, like `tokio::signal::unix::Signal`.
    #[derive(Debug)]
    pub struct Signal {
        /// tokio's listener; none inside a simulation.
        real: Option<real::signal::unix::Signal>,
    }

    impl Signal {
        /// Waits for the next signal.
        pub async fn recv(&mut self) -> Option<()> {
            std::future::poll_fn(|cx| self.poll_recv(cx)).await
        }

        /// Polls for the next signal.
        pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
            match &mut self.real {
                Some(real) => real.poll_recv(cx),
                None => Poll::Pending,
            }
        }
    }
}
