//! What a run tells its caller: a summary when it passes, a failure report when it does not.
//!
//! A failure report holds everything needed to understand and replay the failure without
//! running it again: the seed, what failed and where (node, task, virtual time), and the last
//! events of the trace. The test runner adds the commit and the command that reproduces it.

use std::fmt;
use std::time::Duration;

use crate::coverage::{Counts, SiteKey};
use crate::trace::{Event, EventKind};

/// The result of a run that ended because its body completed.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let summary = crashtest::Sim::new(3).run(async {}).unwrap();
/// assert_eq!(summary.seed, 3);
/// assert!(summary.to_string().starts_with("seed 3 passed"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSummary {
    /// The root seed of the run.
    pub seed: u64,
    /// Virtual time reached when the run ended.
    pub elapsed: Duration,
    /// Events recorded in the trace.
    pub events: u64,
    /// Task polls the scheduler made.
    pub polls: u64,
    /// The 64-bit hash of every event: same seed, same fingerprint.
    pub fingerprint: u64,
    /// Every event of the run, when the run was configured to record them.
    pub trace: Option<Vec<Event>>,
    /// How often each coverage site was reached and fired in this run.
    pub coverage: Vec<(SiteKey, Counts)>,
    /// Node names by node id (`n0` is the supervisor), to read the trace.
    pub node_names: Vec<String>,
}

/// A fault applied to the run, as the failure report lists it.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let failure = crashtest::Sim::new(1).run(async {
///     let n = crashtest::node::create("db", || std::future::pending());
///     n.kill();
///     panic!("after the kill");
/// }).unwrap_err();
/// let kill = &failure.faults[0];
/// assert_eq!((kill.id, kill.node.as_str(), kill.text.as_str()), (None, "db", "kill"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InjectedFault {
    /// The fault's id when it was drawn from the seed (maskable); `None` for faults the test
    /// applied by itself, and for those that are part of a numbered one (the kill a nemesis
    /// kill makes).
    pub id: Option<u64>,
    /// The random stream the fault was drawn from (`"network"`, `"nemesis"`, `"buggify"`),
    /// so that a minimizer can work on one kind of fault; `None` with `id`.
    pub stream: Option<String>,
    /// Virtual time of the fault.
    pub time: Duration,
    /// The node it hit.
    pub node: String,
    /// What it was.
    pub text: String,
}

impl fmt::Display for InjectedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(id) = self.id {
            write!(f, "#{id} ")?;
        }
        write!(f, "{:?} {}: {}", self.time, self.node, self.text)
    }
}

impl RunSummary {
    /// How many times the run reached the coverage sites named `name` (a `probe!`, a
    /// `sometimes!`, a `buggify!`), wherever in the code they sit.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let summary = crashtest::Sim::new(1)
    ///     .run(async {
    ///         for _ in 0..3 {
    ///             crashtest::probe!("a retry");
    ///         }
    ///     })
    ///     .unwrap();
    /// assert_eq!(summary.reached("a retry"), 3);
    /// assert_eq!(summary.reached("never placed"), 0);
    /// ```
    pub fn reached(&self, name: &str) -> u64 {
        self.coverage
            .iter()
            .filter(|(key, _)| key.name == name)
            .map(|(key, counts)| {
                // A site fires only when reached: a count above that is a corrupt summary.
                assert!(
                    counts.fired <= counts.reached,
                    "{key} fired {} times but was reached {} times",
                    counts.fired,
                    counts.reached
                );
                counts.reached
            })
            .sum()
    }
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {} passed: virtual time {:?}, {} events, {} polls, fingerprint {:016x}",
            self.seed, self.elapsed, self.events, self.polls, self.fingerprint
        )
    }
}

/// What went wrong in a failed run.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{FailureKind, Sim};
/// let failure = Sim::new(1).run(std::future::pending()).unwrap_err();
/// assert!(matches!(failure.kind, FailureKind::Deadlock { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// A task panicked (an assertion in user code, or an `unwrap` on an injected error).
    Panic {
        /// The panic message.
        message: String,
        /// Where the panic was raised (`file:line:column`), when known.
        location: Option<String>,
    },
    /// The body is waiting, but no task is ready and no timer is armed: nothing can ever
    /// happen again.
    Deadlock {
        /// The tasks still waiting, described as `task (name) on node`.
        waiting: Vec<String>,
    },
    /// Virtual time reached the configured limit before the body completed.
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// Tasks were polled over and over while the clock never moved: a task that wakes itself
    /// forever without waiting on anything.
    Livelock {
        /// How many polls ran without the clock moving.
        polls: u64,
    },
    /// A check registered by a simulator component or the user failed.
    Check {
        /// The name of the check that failed (an `invariant::always`'s, or a component's
        /// such as the liveness phase's `liveness`): what tells this failure from another
        /// check's.
        invariant: String,
        /// What the check found.
        message: String,
    },
    /// The program made a call that a simulation cannot own (an OS thread, a change to a host
    /// file, a real socket, a tokio runtime, a wait that would block the simulation's one
    /// thread): not a broken invariant of the program, but a use the simulation refuses.
    Refused {
        /// The call, what to use instead, and where the program made it.
        message: String,
    },
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureKind::Panic {
                message,
                location: Some(location),
            } => {
                write!(f, "panicked at {location}: {message}")
            }
            FailureKind::Panic {
                message,
                location: None,
            } => write!(f, "panicked: {message}"),
            FailureKind::Deadlock { waiting } => {
                // The first line stands alone: a one-line summary (a results file, a
                // regression file's reason) keeps only it. It counts nothing: the list below
                // stops after its first tasks, and a count would make one deadlock read
                // differently whenever a replay that masks a fault leaves fewer tasks.
                write!(
                    f,
                    "deadlock: no task is ready and no timer is armed, so nothing can run again"
                )?;
                for task in waiting {
                    write!(f, "\n    {task}")?;
                }
                Ok(())
            }
            FailureKind::TimeLimit { limit } => write!(
                f,
                "time limit: virtual time reached {limit:?} before the test body finished \
                 (raise it with Config::time_limit if the test needs longer)"
            ),
            FailureKind::Livelock { polls } => write!(
                f,
                "livelock: {polls} polls ran while virtual time stood still; a task is waking \
                 itself in a loop without awaiting a timer or another task"
            ),
            FailureKind::Check { message, .. } => write!(f, "check failed: {message}"),
            FailureKind::Refused { message } => write!(f, "refused: {message}"),
        }
    }
}

impl FailureKind {
    /// What to do about a failure whose cause the report can name beyond its message.
    fn hint(&self) -> Option<&'static str> {
        let FailureKind::Panic { message, .. } = self else {
            return None;
        };
        // tokio's panics when it is called where no tokio runtime runs ("there is no reactor
        // running, must be called from the context of a Tokio 1.x runtime", and its timer's
        // and `spawn_local`'s variants).
        let outside_tokio = (message.contains("must be called from the context of")
            && message.contains("Tokio"))
            || message.contains("`spawn_local` called from outside of a `task::LocalSet`");
        // The report cannot tell whether the stand-in is in place, so it says what to do in
        // either case.
        outside_tokio.then_some(
            "tokio was called inside the simulation, where no tokio runtime runs. Without \
             crashtest's tokio stand-in, adopt it (see the README section on running tokio \
             code), which runs tokio's spawn, time and net in the simulation, or call \
             crashtest::{spawn, time, net} instead. With it, the call reached a tokio that \
             the stand-in does not replace (a crate on another tokio major version: `cargo \
             tree -i tokio` lists every copy), or one of the few calls the README's table \
             does not simulate.",
        )
    }
}

/// A failed run: what failed, where, and the end of its trace.
///
/// Its `Debug` form is the readable report, so that `.unwrap()` on a failed run prints
/// something a person can act on.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let failure = crashtest::Sim::new(4).run(async { panic!("invariant broken") }).unwrap_err();
/// assert_eq!(failure.summary.seed, 4);
/// assert_eq!(failure.node.as_deref(), Some("supervisor"));
/// assert!(failure.to_string().contains("invariant broken"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RunFailure {
    /// The run's figures up to the failure.
    pub summary: RunSummary,
    /// What went wrong.
    pub kind: FailureKind,
    /// The node on which it went wrong, by name.
    pub node: Option<String>,
    /// The task in which it went wrong, as `t12 (name)`.
    pub task: Option<String>,
    /// The last events before the failure, oldest first.
    pub tail: Vec<Event>,
    /// The faults applied before the failure, oldest first.
    pub faults: Vec<InjectedFault>,
    /// How the run was set up (the swarm profile, the nemesis), one line each.
    pub context: Vec<String>,
}

impl fmt::Display for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {} FAILED at virtual time {:?}",
            self.summary.seed, self.summary.elapsed
        )?;
        if let Some(node) = &self.node {
            write!(f, "  node {node}")?;
            if let Some(task) = &self.task {
                write!(f, ", task {task}")?;
            }
            writeln!(f)?;
        }
        writeln!(f, "  {}", self.kind)?;
        if let Some(hint) = self.kind.hint() {
            writeln!(f, "  hint: {hint}")?;
        }
        writeln!(
            f,
            "  {} events, {} polls, fingerprint {:016x}",
            self.summary.events, self.summary.polls, self.summary.fingerprint
        )?;
        for line in &self.context {
            writeln!(f, "  {line}")?;
        }
        if !self.faults.is_empty() {
            let count = self.faults.len();
            let noun = if count == 1 { "fault" } else { "faults" };
            // Only drawn faults have a number (a minimizer can mask those); the others are
            // parts of them (a clog's links, a kill's restart) or the test's own.
            let numbered = self
                .faults
                .iter()
                .filter(|fault| fault.id.is_some())
                .count();
            if numbered == count {
                writeln!(f, "  {count} {noun} injected:")?;
            } else {
                writeln!(
                    f,
                    "  {count} {noun} injected ({numbered} numbered, which can be masked; the \
                     others are parts of them or the test's own):"
                )?;
            }
            // A lossy network makes thousands of faults; the first and the last are the
            // ones a reader starts from (all of them are in `faults` and the results file).
            let (head, tail) = (10, 30);
            if self.faults.len() <= head + tail {
                for fault in &self.faults {
                    writeln!(f, "    {fault}")?;
                }
            } else {
                for fault in &self.faults[..head] {
                    writeln!(f, "    {fault}")?;
                }
                writeln!(f, "    ... {} more ...", self.faults.len() - head - tail)?;
                for fault in &self.faults[self.faults.len() - tail..] {
                    writeln!(f, "    {fault}")?;
                }
            }
        }
        if !self.tail.is_empty() {
            let names = self
                .summary
                .node_names
                .iter()
                .enumerate()
                .map(|(i, name)| format!("n{i}={name}"))
                .collect::<Vec<_>>()
                .join(" ");
            // A clock jump is the step between two events' times, which each line shows:
            // printed, the jumps took a third of the lines a reader looks at.
            let shown = || {
                self.tail
                    .iter()
                    .filter(|event| !matches!(event.kind, EventKind::ClockJump))
            };
            let jumps = self.tail.len() - shown().count();
            write!(f, "  last {} events", self.tail.len())?;
            match jumps {
                0 => {}
                1 => write!(f, ", 1 clock jump left out")?,
                _ => write!(f, ", {jumps} clock jumps left out")?,
            }
            writeln!(f, " ({names}):")?;
            for event in shown() {
                writeln!(f, "    {event}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for RunFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for RunFailure {}

/// Adds a line describing how the run was set up (a swarm profile, a nemesis schedule); the
/// failure report prints these lines.
///
/// # Panics
///
/// Panics if `line` is empty or holds a line break: the report indents each line under the
/// failure, and one of several lines would break its layout.
///
/// ```
/// let failed = crashtest_core::Sim::new(1).run(async {
///     crashtest_core::report::add_context("swarm: packet loss on, 3/100".into());
///     panic!("lost a write");
/// });
/// assert!(failed.unwrap_err().to_string().contains("swarm: packet loss on"));
/// ```
pub fn add_context(line: String) {
    // The report prints each context line indented under the failure: one that is empty or
    // spans lines would break its layout.
    assert!(
        !line.is_empty() && !line.contains('\n'),
        "a context line is one line of text: {line:?}"
    );
    crate::world::with(|w| w.add_context(line));
}
