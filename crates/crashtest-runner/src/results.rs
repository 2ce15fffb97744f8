//! Machine-readable output: one results line per finished seed, in the form
//! `crashtest_protocol` defines (a run's trace lines are `trace_file`'s).
//!
//! This is the runner's side of the protocol with the `crashtest` tool, which runs test
//! binaries as worker processes: here a run's summary or failure becomes a line. Each line is
//! written whole with one `write` on a file opened for appending, so several workers may share
//! a file, and a worker that dies loses only the seed it was running: everything already
//! finished is on disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use crashtest_core::{Divergence, FailureKind, RunFailure, RunSummary};
use crashtest_protocol::results::{FailureClass, Signature};
use crashtest_protocol::{CoverageLine, FaultLine, SeedResult, Status};

/// The results line of a finished run.
///
/// ```
/// use crashtest::runner::results::seed_result;
/// use crashtest::runner::protocol::Status;
///
/// let passed = crashtest::Sim::new(2).run(async {});
/// assert_eq!((seed_result("t", &passed).seed, seed_result("t", &passed).status), (2, Status::Pass));
///
/// let failed = crashtest::Sim::new(2).run(async {
///     crashtest::node::create("a", std::future::pending).kill();
///     crashtest::probe!("p");
///     panic!("no");
/// });
/// let line = seed_result("t", &failed);
/// assert_eq!(line.status, Status::Fail);
/// assert!(line.failure.unwrap().contains("no"));
/// assert_eq!((line.faults[0].node.as_str(), line.faults[0].text.as_str()), ("a", "kill"));
/// assert_eq!((line.coverage[0].kind.as_str(), line.coverage[0].fired), ("probe", 1));
/// ```
pub fn seed_result(test: &str, result: &Result<RunSummary, Box<RunFailure>>) -> SeedResult {
    let (summary, failure) = match result {
        Ok(summary) => (summary, None),
        Err(failure) => (&failure.summary, Some(failure)),
    };
    SeedResult {
        test: test.to_owned(),
        seed: summary.seed,
        status: if failure.is_some() {
            Status::Fail
        } else {
            Status::Pass
        },
        fingerprint: format!("{:016x}", summary.fingerprint),
        elapsed_ns: u64::try_from(summary.elapsed.as_nanos()).unwrap_or(u64::MAX),
        events: summary.events,
        polls: summary.polls,
        failure: failure.map(|f| f.to_string()),
        signature: failure.map(|f| signature(f)),
        faults: failure.map_or_else(Vec::new, |f| {
            f.faults
                .iter()
                .map(|fault| FaultLine {
                    id: fault.id,
                    stream: fault.stream.clone(),
                    time_ns: u64::try_from(fault.time.as_nanos()).unwrap_or(u64::MAX),
                    node: fault.node.clone(),
                    text: fault.text.clone(),
                })
                .collect()
        }),
        coverage: summary
            .coverage
            .iter()
            .map(|(site, counts)| CoverageLine {
                kind: site.kind.to_string(),
                name: site.name.to_owned(),
                location: format!("{}:{}", site.file, site.line),
                reached: counts.reached,
                fired: counts.fired,
            })
            .collect(),
        seed_timeout_ns: None,
    }
}

/// Appends one line (a guided search's summary) to `path`, whole.
pub(crate) fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())
}

/// What a failed run failed of, for comparing it with another run's failure: its kind, node
/// and place. A panic's place is where it was raised; a failed invariant's is its name, so
/// that another invariant failing is another failure (the liveness phase's check is named
/// `liveness`).
///
/// ```
/// use crashtest::runner::protocol::results::FailureClass;
/// let failure = crashtest::Sim::new(1).run(async { panic!("lost a write") }).unwrap_err();
/// let signature = crashtest::runner::results::signature(&failure);
/// assert_eq!(signature.class, FailureClass::Panic);
/// assert!(signature.location.unwrap().contains(".rs:"));
/// assert!(signature.headline.ends_with("lost a write"));
/// ```
pub fn signature(failure: &RunFailure) -> Signature {
    let (class, location) = match &failure.kind {
        FailureKind::Panic { location, .. } => (FailureClass::Panic, location.clone()),
        FailureKind::Deadlock { .. } => (FailureClass::Deadlock, None),
        FailureKind::TimeLimit { .. } => (FailureClass::TimeLimit, None),
        FailureKind::Livelock { .. } => (FailureClass::Livelock, None),
        FailureKind::Check { invariant, .. } => (
            FailureClass::Check,
            Some(format!("invariant {invariant:?}")),
        ),
        FailureKind::Refused { .. } => (FailureClass::Refused, None),
        _ => (FailureClass::Other, None),
    };
    let kind = failure.kind.to_string();
    Signature {
        class,
        node: failure.node.clone(),
        location,
        headline: kind.lines().next().unwrap_or_default().to_owned(),
    }
}

/// Adds every coverage site linked into the program that this run never reached, with
/// zero counts, so that a reader summing many lines learns of sites no seed reached.
///
/// ```
/// use crashtest::runner::results::{list_unreached_sites, seed_result};
/// let mut line = seed_result("t", &crashtest::Sim::new(1).run(async {}));
/// list_unreached_sites(&mut line);
/// assert!(line.coverage.iter().all(|site| site.reached == 0));
/// ```
pub fn list_unreached_sites(line: &mut SeedResult) {
    for site in crashtest_core::coverage::SITES.iter() {
        let location = format!("{}:{}", site.file(), site.line());
        let known = line
            .coverage
            .iter()
            .any(|c| c.name == site.name() && c.location == location);
        if !known {
            line.coverage.push(CoverageLine {
                kind: site.kind().to_string(),
                name: site.name().to_owned(),
                location,
                reached: 0,
                fired: 0,
            });
        }
    }
}

/// The results line of a seed whose two runs differed.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// static RUNS: AtomicU64 = AtomicU64::new(0);
/// let divergence = crashtest::check_determinism(1, Default::default(), || async {
///     let n = RUNS.fetch_add(1, Ordering::SeqCst);
///     crashtest::time::sleep(std::time::Duration::from_millis(1 + n)).await;
/// })
/// .unwrap_err();
/// let line = crashtest::runner::results::divergence_result("t", &divergence);
/// assert_eq!(line.status, crashtest::runner::protocol::Status::Nondeterministic);
/// ```
pub fn divergence_result(test: &str, divergence: &Divergence) -> SeedResult {
    SeedResult {
        test: test.to_owned(),
        seed: divergence.seed,
        status: Status::Nondeterministic,
        events: divergence.index,
        failure: Some(divergence.to_string()),
        signature: Some(divergence_signature(divergence)),
        ..SeedResult::default()
    }
}

/// The signature of a nondeterminism: two runs part at an event.
pub(crate) fn divergence_signature(divergence: &Divergence) -> Signature {
    Signature {
        class: FailureClass::Nondeterminism,
        node: None,
        location: None,
        headline: format!(
            "nondeterminism: two runs part at event #{}",
            divergence.index
        ),
    }
}

/// The results file, shared by the runner's threads.
#[derive(Debug)]
pub(crate) struct Sink {
    file: Option<Mutex<File>>,
}

impl Sink {
    /// Opens `path` for appending, or a sink that writes nothing.
    pub(crate) fn open(path: Option<&Path>) -> io::Result<Sink> {
        let file = match path {
            Some(path) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(Sink { file })
    }

    /// Appends one line; the write is whole or fails the test loudly (a lost result would be
    /// silently missing from a sweep).
    pub(crate) fn write(&self, result: &SeedResult) {
        let Some(file) = &self.file else { return };
        let mut line = serde_json::to_vec(result).expect("a seed result serializes");
        line.push(b'\n');
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(&line)
            .expect("crashtest: could not write to CRASHTEST_RESULTS");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_core::plumbing::checks;

    /// The signature of a run in which the invariant `name` fails with `message`.
    fn failed_invariant(name: &'static str, message: &'static str) -> Signature {
        let failure = crashtest_core::Sim::new(1)
            .run(async move {
                checks::add_step_check(name, 1, move || Err(message.to_owned()));
                crashtest_core::task::yield_now().await;
            })
            .unwrap_err();
        signature(&failure)
    }

    #[test]
    fn a_failed_invariants_place_is_its_name() {
        let leaders = failed_invariant("one leader per term", "term 3 has two");
        assert_eq!(leaders.class, FailureClass::Check);
        assert_eq!(
            leaders.location.as_deref(),
            Some("invariant \"one leader per term\"")
        );
        let later = failed_invariant("one leader per term", "term 9 has two");
        assert!(leaders.same_failure(&later), "the message may differ");
        let other = failed_invariant("committed entries stay", "entry 4 changed");
        assert!(!leaders.same_failure(&other), "another invariant failed");
    }

    #[test]
    fn an_invariant_name_with_quotes_is_read_whole() {
        let quoted = failed_invariant("the \"head\": ok", "no");
        assert_eq!(
            quoted.location.as_deref(),
            Some(r#"invariant "the \"head\": ok""#)
        );
    }
}
