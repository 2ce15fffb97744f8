//! `Sim` and `check_determinism`: the core's, plus what a tokio program needs.
//!
//! The tokio stand-in (`crashtest tokio setup`) reaches the simulated network and disk
//! through `crashtest-hooks`, where they must be registered before a run; the core cannot
//! do it (the network and the disk depend on the core). So these entry points, which the
//! facade re-exports and the runner uses for every seed, register them once per process,
//! then run exactly what the core's would.

use std::future::Future;

use crashtest_core::{Config, Divergence, RunFailure, RunSummary};

use crate::register_tokio_seam;

/// One simulation: a seed and a configuration (the core's `Sim`, with the network and disk
/// registered for the tokio stand-in).
///
/// ```
/// use crashtest::{node, time, Sim};
/// use std::time::Duration;
///
/// let summary = Sim::new(42).run(async {
///     let n = node::create("ticker", || async {
///         let mut i = time::interval(Duration::from_secs(1));
///         loop { i.tick().await; }
///     });
///     time::sleep(Duration::from_secs(10)).await;
///     n.kill();
/// }).unwrap();
/// assert_eq!(summary.elapsed, Duration::from_secs(10));
/// ```
#[derive(Clone, Debug)]
pub struct Sim {
    core: crashtest_core::Sim,
}

impl Sim {
    /// A simulation of `seed` with the default configuration.
    ///
    /// ```
    /// assert_eq!(crashtest::Sim::new(9).run(async {}).unwrap().seed, 9);
    /// ```
    pub fn new(seed: u64) -> Sim {
        Sim {
            core: crashtest_core::Sim::new(seed),
        }
    }

    /// A simulation of `seed` with `config`.
    ///
    /// ```
    /// let sim = crashtest::Sim::with_config(9, crashtest::Config::default());
    /// assert!(sim.run(async {}).is_ok());
    /// ```
    pub fn with_config(seed: u64, config: Config) -> Sim {
        Sim {
            core: crashtest_core::Sim::with_config(seed, config),
        }
    }

    /// Runs `body` as the first task until it finishes or the run fails (see
    /// `crashtest_core::Sim::run`).
    ///
    /// ```
    /// let failed = crashtest::Sim::new(1).run(async { panic!("boom") });
    /// assert!(failed.unwrap_err().to_string().contains("boom"));
    /// ```
    pub fn run<F>(&self, body: F) -> Result<RunSummary, Box<RunFailure>>
    where
        F: Future<Output = ()> + 'static,
    {
        register_tokio_seam();
        self.core.run(body)
    }
}

/// Runs `seed` twice on fresh threads and compares the runs event by event (see
/// `crashtest_core::check_determinism`).
///
/// ```
/// use crashtest::{check_determinism, time, Config};
/// use std::time::Duration;
///
/// let result = check_determinism(7, Config::default(), || async {
///     time::sleep(Duration::from_millis(5)).await;
/// });
/// assert!(result.is_ok());
/// ```
///
/// # Errors
///
/// The divergence, if the two runs part.
pub fn check_determinism<F, Fut>(
    seed: u64,
    config: Config,
    body: F,
) -> Result<Result<RunSummary, Box<RunFailure>>, Box<Divergence>>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    register_tokio_seam();
    crashtest_core::check_determinism(seed, config, body)
}
