//! Fault minimization in the test's own process: replay a failing seed with faults masked,
//! through [`run_seeds`], until a 1-minimal failing set is left (without any one of its faults
//! the seed no longer fails the same way).
//!
//! The search is `crashtest_minimize`'s, the same one `crashtest minimize` runs across worker
//! processes; here each replay is a run of the seed on a fresh thread, as the runner runs
//! every seed. A bug hunt that found a failure with [`run_seeds`] shrinks it with
//! [`minimize`] and prints the line that replays that set.

use std::future::Future;

use crashtest_minimize::{Failing, Found, Mask, Replay};
use crashtest_protocol::{env, reproduce};

use crate::{Cause, FailureReport, Settings, TestSpec, run_seeds};

/// A failure reduced to a few faults.
#[derive(Debug)]
pub struct Minimized {
    /// The fault ids to mask: the seed replayed with them masked fails the same way.
    pub mask: Vec<u64>,
    /// The replay with that mask: its faults are the 1-minimal failing set found.
    pub report: Box<FailureReport>,
    /// The variables that select the replay: `CRASHTEST_SEED=.. CRASHTEST_MASK=..`.
    pub env: String,
    /// The command that runs it.
    pub command: String,
}

/// Shrinks the faults of `failure` (a failure of `body` under `spec`, found by [`run_seeds`]
/// with `settings`) to a set with which the seed still fails the same way: the same kind, on
/// the same node, at the same place. `None` if the failure is a nondeterminism, which has no
/// faults to shrink.
///
/// ```
/// use crashtest::runner::{minimize::minimize, run_seeds, Settings, TestSpec};
/// use crashtest::{fault, node::NodeId, rand::Ratio};
///
/// async fn body() {
///     let mut kills = 0;
///     for _ in 0..20 {
///         crashtest::time::sleep(std::time::Duration::from_millis(1)).await;
///         if fault::inject(NodeId::SUPERVISOR, Ratio::new(1, 2), || "kill".into()) {
///             kills += 1;
///         }
///     }
///     assert!(kills < 3, "three kills break it");
/// }
/// let spec = TestSpec {
///     name: "t", module_path: "m", package: "p", crate_name: "m",
///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// };
/// let settings = Settings { count: 20, check_determinism: false, ..Settings::default() };
/// let failure = run_seeds(&spec, &settings, &body).unwrap_err();
/// let smallest = minimize(&spec, &settings, &body, &failure).unwrap();
/// assert_eq!(smallest.report.faults().len(), 3);
/// assert!(smallest.command.starts_with(&format!("CRASHTEST_SEED={} CRASHTEST_MASK=", failure.seed)));
/// ```
pub fn minimize<F, Fut>(
    spec: &TestSpec,
    settings: &Settings,
    body: &F,
    failure: &FailureReport,
) -> Option<Minimized>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let Cause::Run(_) = &failure.cause else {
        return None;
    };
    let mut replay = InProcess {
        spec,
        settings,
        body,
        original: failure,
    };
    let original = Failing {
        applied: applied(failure),
        run: None,
    };
    let found = crashtest_minimize::minimize(&mut replay, original)
        .unwrap_or_else(|never: std::convert::Infallible| match never {});
    let mask: Vec<u64> = found.mask.into_iter().collect();
    let report = match found.last.run {
        Some(report) => report,
        None => replay.run(&Mask::new())?,
    };
    let mut variables = vec![(env::SEED, failure.seed.to_string())];
    if !mask.is_empty() {
        variables.push((env::MASK, env::encode_ids(mask.iter().copied())));
    }
    let env = reproduce::assignments(variables);
    Some(Minimized {
        command: spec.reproduce_line(&env),
        env,
        mask,
        report,
    })
}

/// The ids of the maskable faults a failing run applied.
fn applied(report: &FailureReport) -> Vec<u64> {
    report.faults().iter().filter_map(|f| f.id).collect()
}

/// Replays of the failing seed in this process.
struct InProcess<'a, F> {
    spec: &'a TestSpec,
    settings: &'a Settings,
    body: &'a F,
    original: &'a FailureReport,
}

impl<F, Fut> InProcess<'_, F>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    /// Replays the seed with `mask`; its report if it fails the same way as the original.
    fn run(&self, mask: &Mask) -> Option<Box<FailureReport>> {
        let settings = Settings {
            start: self.original.seed,
            count: 1,
            threads: 1,
            check_determinism: false,
            results: None,
            trace: None,
            mask: mask.iter().copied().collect(),
            ..self.settings.clone()
        };
        let replayed = run_seeds(self.spec, &settings, self.body).err()?;
        let same = matches!(replayed.cause, Cause::Run(_))
            && replayed
                .signature()
                .same_failure(&self.original.signature());
        same.then_some(replayed)
    }
}

impl<F, Fut> Replay for InProcess<'_, F>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    type Run = Option<Box<FailureReport>>;
    type Error = std::convert::Infallible;

    fn first_failing(
        &mut self,
        masks: &[Mask],
        at_most: usize,
    ) -> Result<Found<Self::Run>, Self::Error> {
        Ok(masks.iter().enumerate().find_map(|(position, mask)| {
            let report = self.run(mask)?;
            let failing = Failing {
                applied: applied(&report),
                run: Some(report),
            };
            (failing.applied.len() <= at_most).then_some((position, failing))
        }))
    }
}
