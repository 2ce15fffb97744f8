//! Machine-readable output: one JSON line per finished seed, and a run's trace as JSON lines.
//!
//! This is the protocol between a test binary and the `crashtest` tool, which runs test
//! binaries as worker processes. Each line is written whole with one `write` on a file opened
//! for appending, so several workers may share a file, and a worker that dies loses only the
//! seed it was running: everything already finished is on disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use crashtest_core::trace::{Event, EventKind};
use crashtest_core::{Divergence, RunFailure, RunSummary};
use serde::Serialize;

/// One finished seed, as a line of the results file.
///
/// ```
/// let result = crashtest::Sim::new(2).run(async {});
/// let line = crashtest::runner::results::SeedResult::from_run("t", &result);
/// assert_eq!((line.seed, line.status), (2, "pass"));
/// ```
#[derive(Debug, Serialize)]
pub struct SeedResult<'a> {
    /// The test, as libtest names it.
    pub test: &'a str,
    /// The seed.
    pub seed: u64,
    /// `pass`, `fail` or `nondeterministic`.
    pub status: &'static str,
    /// The run's fingerprint, in hex.
    pub fingerprint: String,
    /// Virtual time reached, in nanoseconds.
    pub elapsed_ns: u64,
    /// Events in the trace.
    pub events: u64,
    /// Polls made.
    pub polls: u64,
    /// The failure report, if the seed failed.
    pub failure: Option<String>,
    /// The faults applied, for minimization.
    pub faults: Vec<FaultLine>,
    /// Coverage counts of the run.
    pub coverage: Vec<CoverageLine>,
}

/// A fault in a results line.
///
/// ```
/// let result = crashtest::Sim::new(2).run(async {
///     crashtest::node::create("a", std::future::pending).kill();
///     panic!("down");
/// });
/// let line = crashtest::runner::results::SeedResult::from_run("t", &result);
/// let fault: &crashtest::runner::results::FaultLine = &line.faults[0];
/// assert_eq!((fault.node.as_str(), fault.text.as_str()), ("a", "kill"));
/// ```
#[derive(Debug, Serialize)]
pub struct FaultLine {
    /// The fault's id (maskable), if it was drawn from the seed.
    pub id: Option<u64>,
    /// The stream it was drawn from, if it was.
    pub stream: Option<String>,
    /// Virtual time, nanoseconds.
    pub time_ns: u64,
    /// The node it hit.
    pub node: String,
    /// What it was.
    pub text: String,
}

/// A coverage site's counts in a results line.
///
/// ```
/// let result = crashtest::Sim::new(2).run(async { crashtest::probe!("p") });
/// let line = crashtest::runner::results::SeedResult::from_run("t", &result);
/// let site: &crashtest::runner::results::CoverageLine = &line.coverage[0];
/// assert_eq!((site.kind.as_str(), site.name, site.fired), ("probe", "p", 1));
/// ```
#[derive(Debug, Serialize)]
pub struct CoverageLine {
    /// `probe`, `sometimes` or `buggify`.
    pub kind: String,
    /// The site's name.
    pub name: &'static str,
    /// `file:line`.
    pub location: String,
    /// Times reached.
    pub reached: u64,
    /// Times fired.
    pub fired: u64,
}

impl<'a> SeedResult<'a> {
    /// The line for a finished run.
    ///
    /// ```
    /// let failed = crashtest::Sim::new(2).run(async { panic!("no") });
    /// let line = crashtest::runner::results::SeedResult::from_run("t", &failed);
    /// assert_eq!(line.status, "fail");
    /// assert!(line.failure.unwrap().contains("no"));
    /// ```
    pub fn from_run(test: &'a str, result: &Result<RunSummary, Box<RunFailure>>) -> SeedResult<'a> {
        let (summary, failure, faults) = match result {
            Ok(summary) => (summary, None, Vec::new()),
            Err(failure) => (
                &failure.summary,
                Some(failure.to_string()),
                failure.faults.clone(),
            ),
        };
        SeedResult {
            test,
            seed: summary.seed,
            status: if failure.is_some() { "fail" } else { "pass" },
            fingerprint: format!("{:016x}", summary.fingerprint),
            elapsed_ns: u64::try_from(summary.elapsed.as_nanos()).unwrap_or(u64::MAX),
            events: summary.events,
            polls: summary.polls,
            failure,
            faults: faults
                .into_iter()
                .map(|f| FaultLine {
                    id: f.id,
                    stream: f.stream,
                    time_ns: u64::try_from(f.time.as_nanos()).unwrap_or(u64::MAX),
                    node: f.node,
                    text: f.text,
                })
                .collect(),
            coverage: summary
                .coverage
                .iter()
                .map(|(site, counts)| CoverageLine {
                    kind: site.kind.to_string(),
                    name: site.name,
                    location: format!("{}:{}", site.file, site.line),
                    reached: counts.reached,
                    fired: counts.fired,
                })
                .collect(),
        }
    }

    /// Adds every coverage site linked into the program that this run never reached, with
    /// zero counts, so that a reader summing many lines learns of sites no seed reached.
    ///
    /// ```
    /// let result = crashtest::Sim::new(1).run(async {});
    /// let mut line = crashtest::runner::results::SeedResult::from_run("t", &result);
    /// line.list_unreached_sites();
    /// assert!(line.coverage.iter().all(|site| site.reached == 0));
    /// ```
    pub fn list_unreached_sites(&mut self) {
        for site in crashtest_core::coverage::SITES.iter() {
            let location = format!("{}:{}", site.file(), site.line());
            let known = self
                .coverage
                .iter()
                .any(|c| c.name == site.name() && c.location == location);
            if !known {
                self.coverage.push(CoverageLine {
                    kind: site.kind().to_string(),
                    name: site.name(),
                    location,
                    reached: 0,
                    fired: 0,
                });
            }
        }
    }

    /// The line for a seed whose two runs differed.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// static RUNS: AtomicU64 = AtomicU64::new(0);
    /// let divergence = crashtest::check_determinism(1, Default::default(), || async {
    ///     let n = RUNS.fetch_add(1, Ordering::SeqCst);
    ///     crashtest::time::sleep(std::time::Duration::from_millis(1 + n)).await;
    /// })
    /// .unwrap_err();
    /// let line = crashtest::runner::results::SeedResult::from_divergence("t", &divergence);
    /// assert_eq!(line.status, "nondeterministic");
    /// ```
    pub fn from_divergence(test: &'a str, divergence: &Divergence) -> SeedResult<'a> {
        SeedResult {
            test,
            seed: divergence.seed,
            status: "nondeterministic",
            fingerprint: String::new(),
            elapsed_ns: 0,
            events: divergence.index,
            polls: 0,
            failure: Some(divergence.to_string()),
            faults: Vec::new(),
            coverage: Vec::new(),
        }
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
    pub(crate) fn write(&self, result: &SeedResult<'_>) {
        let Some(file) = &self.file else { return };
        let mut line = serde_json::to_vec(result).expect("a seed result serializes");
        line.push(b'\n');
        let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(&line)
            .expect("crashtest: could not write to CRASHTEST_RESULTS");
    }
}

/// One event as a line of a trace file.
#[derive(Debug, Serialize)]
struct EventLine<'a> {
    index: u64,
    time_ns: u64,
    node: usize,
    node_name: &'a str,
    kind: &'static str,
    /// The node the event acts on (the one killed, the one a task is spawned on), if any.
    target: Option<usize>,
    /// What happened, without the index, time and node prefix of `text`.
    detail: String,
    source: Option<&'static str>,
    words: Option<[u64; 3]>,
    text: String,
}

fn kind_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Spawn { .. } => "spawn",
        EventKind::Poll { .. } => "poll",
        EventKind::Complete { .. } => "complete",
        EventKind::Cancel { .. } => "cancel",
        EventKind::ClockJump => "clock_jump",
        EventKind::NodeCreate { .. } => "create",
        EventKind::NodeKill { .. } => "kill",
        EventKind::NodeRestart { .. } => "restart",
        EventKind::NodeUpgrade { .. } => "upgrade",
        EventKind::NodePause { .. } => "pause",
        EventKind::NodeResume { .. } => "resume",
        EventKind::ClockOffset { .. } => "clock_offset",
        EventKind::ClockDrift { .. } => "clock_drift",
        EventKind::Panic { .. } => "panic",
        EventKind::Note { .. } => "note",
        _ => "other",
    }
}

/// Writes every event of a run to `path` as JSON lines.
pub(crate) fn write_trace(path: &Path, events: &[Event], node_names: &[String]) -> io::Result<()> {
    let mut out = io::BufWriter::new(File::create(path)?);
    for event in events {
        let (source, words) = match &event.kind {
            EventKind::Note { source, words, .. } => (Some(*source), Some(*words)),
            _ => (None, None),
        };
        let line = EventLine {
            index: event.index,
            time_ns: event.time_ns,
            node: event.node.index(),
            node_name: node_names
                .get(event.node.index())
                .map_or("?", String::as_str),
            kind: kind_name(&event.kind),
            target: event.kind.target().map(|node| node.index()),
            detail: event.kind.to_string(),
            source,
            words,
            text: event.to_string(),
        };
        serde_json::to_writer(&mut out, &line).map_err(io::Error::other)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
