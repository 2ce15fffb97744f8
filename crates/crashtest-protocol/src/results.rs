//! Results lines: one JSON object per finished seed, appended to the file `CRASHTEST_RESULTS`
//! names.
//!
//! The runner writes a line when a seed finishes (`pass`, `fail`, `nondeterministic`); the
//! tool writes one for a seed whose worker process died (`crashed`) or went silent (`hung`).
//! Each line is written whole by one `write` on a file opened for appending, so several
//! workers may share a file and a worker that dies loses only the seed it was running.
//!
//! Reading is lenient about fields a writer left out (an older writer, or a lost seed's line,
//! which has no fingerprint): every field but `test`, `seed` and `status` has a default.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The first line of a results file the tool writes: what the sweep ran, so that a resumed
/// sweep or a merge of several files can tell results of the same code, test, environment
/// and seeds from results that must not be mixed.
///
/// ```
/// use crashtest_protocol::results::Header;
/// let header = Header { test: "t".into(), commit: "abc".into(), ..Header::default() };
/// let line = serde_json::to_string(&header).unwrap();
/// assert!(Header::is_header(&line));
/// assert!(!Header::is_header(r#"{"test":"t","seed":1,"status":"pass"}"#));
/// assert_eq!(serde_json::from_str::<Header>(&line).unwrap(), header);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The format of the file (marks the line as a header).
    pub crashtest_results: u32,
    /// The version of the tool that wrote the file.
    pub version: String,
    /// The test, as libtest names it.
    pub test: String,
    /// The `cargo test` arguments that build the test's executable (`-p db --test cluster
    /// --release`), when cargo built it.
    #[serde(default)]
    pub cargo_args: Option<String>,
    /// The test executable.
    #[serde(default)]
    pub exe: String,
    /// The commit the sweep ran on (`CRASHTEST_COMMIT`, else git's HEAD, else `unknown commit,
    /// executable <digest>` naming the test executable's bytes).
    pub commit: String,
    /// A digest of the work tree's uncommitted changes to tracked files, when there are some.
    #[serde(default)]
    pub dirty: Option<String>,
    /// The test's declared variables and their values (`null` when unset).
    #[serde(default)]
    pub env: BTreeMap<String, Option<String>>,
    /// The seed range the sweep was given (`A..B`).
    pub seeds: String,
    /// The shard of that range it ran (`K/N`), if any.
    #[serde(default)]
    pub shard: Option<String>,
}

impl Default for Header {
    fn default() -> Header {
        Header {
            crashtest_results: Header::FORMAT,
            version: String::new(),
            test: String::new(),
            cargo_args: None,
            exe: String::new(),
            commit: String::new(),
            dirty: None,
            env: BTreeMap::new(),
            seeds: String::new(),
            shard: None,
        }
    }
}

/// A way two headers differ: what, and the two values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The field (`commit`, `test`, `environment`, ...).
    pub what: &'static str,
    /// Its value in the first header.
    pub was: String,
    /// Its value in the second.
    pub now: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} vs {}", self.what, self.was, self.now)
    }
}

impl Header {
    /// The format this crate writes.
    pub const FORMAT: u32 = 1;

    /// Whether a line of a results file is a header (results lines start with `"test"`).
    pub fn is_header(line: &str) -> bool {
        line.trim_start().starts_with("{\"crashtest_results\"")
    }

    /// The commit with its uncommitted changes: `abc123`, or `abc123 + changes 9f2c...`.
    pub fn code(&self) -> String {
        match &self.dirty {
            Some(digest) => format!("{} + uncommitted changes {digest}", self.commit),
            None => self.commit.clone(),
        }
    }

    /// The declared variables as `A=1 B=(unset)`, or `(none declared)`.
    pub fn env_text(&self) -> String {
        if self.env.is_empty() {
            return "(none declared)".to_owned();
        }
        let parts: Vec<String> = self
            .env
            .iter()
            .map(|(name, value)| match value {
                Some(value) => format!("{name}={value}"),
                None => format!("{name} unset"),
            })
            .collect();
        parts.join(" ")
    }

    /// The shell line that reproduces a run of this header's test with the protocol
    /// variables `env`: the declared variables' values first, then `cargo test` with the
    /// recorded build, or the executable itself.
    ///
    /// ```
    /// use crashtest_protocol::results::Header;
    /// let mut header = Header { test: "agree".into(), cargo_args: Some("-p db --lib".into()), ..Header::default() };
    /// header.env.insert("DB_BUG".into(), Some("torn".into()));
    /// assert_eq!(header.reproduce("CRASHTEST_SEED=4"), "DB_BUG=torn CRASHTEST_SEED=4 cargo test -p db --lib -- agree --exact");
    /// ```
    pub fn reproduce(&self, env: &str) -> String {
        let declared: Vec<(String, Option<String>)> = self
            .env
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let env = crate::reproduce::join(&crate::reproduce::declared(&declared), env);
        match &self.cargo_args {
            Some(args) => crate::reproduce::cargo_test(&env, args, &self.test),
            None => crate::reproduce::executable(&env, &self.exe, &self.test),
        }
    }

    /// How `self` and `other` differ in what decides a seed's outcome: the code, the test,
    /// its build, its environment, the tool's version; with `same_seeds`, also the seeds
    /// (range and shard).
    ///
    /// ```
    /// use crashtest_protocol::results::Header;
    /// let a = Header { test: "t".into(), commit: "abc".into(), ..Header::default() };
    /// let b = Header { commit: "def".into(), shard: Some("2/4".into()), ..a.clone() };
    /// let found = a.differences(&b, false);
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].to_string(), "commit: abc vs def");
    /// assert_eq!(a.differences(&b, true).len(), 2);
    /// ```
    pub fn differences(&self, other: &Header, same_seeds: bool) -> Vec<Difference> {
        let mut found = Vec::new();
        let mut check = |what: &'static str, was: String, now: String| {
            if was != now {
                found.push(Difference { what, was, now });
            }
        };
        let or_none = |value: &Option<String>| value.clone().unwrap_or_else(|| "none".into());
        check("commit", self.code(), other.code());
        check("test", self.test.clone(), other.test.clone());
        check(
            "build",
            or_none(&self.cargo_args),
            or_none(&other.cargo_args),
        );
        check("environment", self.env_text(), other.env_text());
        check(
            "crashtest version",
            self.version.clone(),
            other.version.clone(),
        );
        if same_seeds {
            check("seeds", self.seeds.clone(), other.seeds.clone());
            check("shard", or_none(&self.shard), or_none(&other.shard));
        }
        found
    }
}

/// How a seed ended.
///
/// ```
/// use crashtest_protocol::Status;
/// assert_eq!(serde_json::to_string(&Status::Nondeterministic).unwrap(), "\"nondeterministic\"");
/// assert_eq!(Status::Hung.to_string(), "hung");
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every oracle held.
    #[default]
    Pass,
    /// The run failed: a panic, a failed check, a deadlock, a livelock or the time limit.
    Fail,
    /// Two runs of the seed in one process did different things.
    Nondeterministic,
    /// The worker process died while running the seed (abort, segfault, exit).
    Crashed,
    /// The worker process went silent while running the seed and was killed.
    Hung,
}

impl Status {
    /// Every status, in the order summaries list them.
    pub const ALL: [Status; 5] = [
        Status::Pass,
        Status::Fail,
        Status::Nondeterministic,
        Status::Crashed,
        Status::Hung,
    ];

    /// The name a results line gives it.
    ///
    /// ```
    /// assert_eq!(crashtest_protocol::Status::Crashed.name(), "crashed");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Nondeterministic => "nondeterministic",
            Status::Crashed => "crashed",
            Status::Hung => "hung",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of failure a run ended in.
///
/// ```
/// use crashtest_protocol::results::FailureClass;
/// assert_eq!(serde_json::to_string(&FailureClass::TimeLimit).unwrap(), "\"time_limit\"");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// A task panicked.
    Panic,
    /// No task was ready and no timer armed.
    Deadlock,
    /// Virtual time reached the limit.
    TimeLimit,
    /// Polls without the clock moving.
    Livelock,
    /// A registered check failed.
    Check,
    /// The program made a call the simulation refuses.
    Refused,
    /// Two runs of the seed differed.
    Nondeterminism,
    /// A failure this protocol has no name for (from a newer simulator).
    Other,
}

/// A failure as two runs are compared by: the same kind, on the same node, at the same place
/// (a panic's place in the code, a failed invariant's name), is the same failure (the message
/// may differ: it often holds values drawn from the seed).
///
/// ```
/// use crashtest_protocol::results::{FailureClass, Signature};
/// let at = |line: u32| Signature {
///     class: FailureClass::Panic,
///     node: Some("n1".into()),
///     location: Some(format!("src/raft.rs:{line}:9")),
///     headline: "panicked: two leaders".into(),
/// };
/// assert!(at(10).same_failure(&at(10)));
/// assert!(!at(10).same_failure(&at(11)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The kind of failure.
    pub class: FailureClass,
    /// The node it happened on, by name.
    #[serde(default)]
    pub node: Option<String>,
    /// Where it happened: where a panic was raised (`file:line:column`), or which invariant
    /// failed (`invariant "balance >= 0"`).
    #[serde(default)]
    pub location: Option<String>,
    /// The failure in one line.
    pub headline: String,
}

impl Signature {
    /// Whether two failures are the same: kind, node and place agree.
    pub fn same_failure(&self, other: &Signature) -> bool {
        (self.class, &self.node, &self.location) == (other.class, &other.node, &other.location)
    }
}

/// One finished seed, as a line of the results file.
///
/// ```
/// use crashtest_protocol::{SeedResult, Status};
/// let line = r#"{"test":"t","seed":4,"status":"fail","failure":"panicked at a.rs:1:1: no"}"#;
/// let result: SeedResult = serde_json::from_str(line).unwrap();
/// assert_eq!((result.seed, result.status), (4, Status::Fail));
/// assert_eq!(result.headline(), "panicked at a.rs:1:1: no");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedResult {
    /// The test, as libtest names it.
    pub test: String,
    /// The seed.
    pub seed: u64,
    /// How the seed ended.
    pub status: Status,
    /// The run's fingerprint, in hex (empty when the run never finished).
    #[serde(default)]
    pub fingerprint: String,
    /// Virtual time reached, in nanoseconds.
    #[serde(default)]
    pub elapsed_ns: u64,
    /// Events in the trace.
    #[serde(default)]
    pub events: u64,
    /// Polls made.
    #[serde(default)]
    pub polls: u64,
    /// The failure report (for a lost seed, the end of its worker's output).
    #[serde(default)]
    pub failure: Option<String>,
    /// What failed, for comparing failures; none for a pass or a lost seed.
    #[serde(default)]
    pub signature: Option<Signature>,
    /// The faults applied, oldest first.
    #[serde(default)]
    pub faults: Vec<FaultLine>,
    /// Coverage counts of the run.
    #[serde(default)]
    pub coverage: Vec<CoverageLine>,
    /// For a `hung` seed: the wall time its worker was given to finish a seed
    /// (`--seed-timeout`), in nanoseconds, so that a resumed sweep given longer runs it again.
    /// Absent from every other line (and from a hung seed's line of an older tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_timeout_ns: Option<u64>,
}

/// A fault in a results line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultLine {
    /// The fault's id, if it was drawn from the seed (only those can be masked).
    #[serde(default)]
    pub id: Option<u64>,
    /// The stream it was drawn from, if it was.
    #[serde(default)]
    pub stream: Option<String>,
    /// Virtual time, nanoseconds.
    pub time_ns: u64,
    /// The node it hit, by name.
    pub node: String,
    /// What it was.
    pub text: String,
}

/// A coverage site's counts in a results line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageLine {
    /// `probe`, `sometimes` or `buggify`.
    pub kind: String,
    /// The site's name.
    pub name: String,
    /// `file:line`.
    pub location: String,
    /// Times reached.
    pub reached: u64,
    /// Times fired.
    pub fired: u64,
}

/// How the lines that say what failed begin, in a failure report or a worker's output: the
/// tool's word on a hung seed, the runner's failure kinds, its nondeterminism report, the
/// poll watchdog's message and the Rust runtime's abort.
const HEADLINES: [&str; 10] = [
    NO_RESULT,
    "panicked",
    "deadlock:",
    "time limit:",
    "livelock:",
    "check failed:",
    "refused:",
    "nondeterminism:",
    "crashtest: seed",
    "fatal runtime error",
];

/// How libtest's own lines in a test binary's output begin: never what failed.
const LIBTEST_LINES: [&str; 7] = [
    "running ",
    "test ",
    "failures:",
    "successes:",
    "---- ",
    "note: run with `RUST_BACKTRACE",
    "error: test failed",
];

/// How the line that says how a lost seed's worker process ended begins.
const WORKER_EXITED: &str = "(worker process exited: ";

/// How the line that says a hung seed's worker went silent begins.
const NO_RESULT: &str = "no result within --seed-timeout ";

/// The line the tool adds to a lost seed's output to say how its worker process ended
/// (`exit` as std's `ExitStatus` shows it), which [`SeedResult::headline`] prefers to the
/// output's other lines.
///
/// ```
/// assert_eq!(
///     crashtest_protocol::results::worker_exited("signal: 6 (SIGABRT)"),
///     "(worker process exited: signal: 6 (SIGABRT))"
/// );
/// ```
pub fn worker_exited(exit: impl std::fmt::Display) -> String {
    format!("{WORKER_EXITED}{exit})")
}

/// The line that heads a hung seed's failure: its worker finished no seed within `timeout`
/// (as the user wrote it, `30s`) and was killed. [`SeedResult::headline`] prefers it to the
/// worker's output below it, which says what the seed was doing, not what happened to it.
///
/// ```
/// assert_eq!(
///     crashtest_protocol::results::worker_hung("30s"),
///     "no result within --seed-timeout 30s: the worker finished no seed in that wall time and was killed"
/// );
/// ```
pub fn worker_hung(timeout: impl std::fmt::Display) -> String {
    format!("{NO_RESULT}{timeout}: the worker finished no seed in that wall time and was killed")
}

impl SeedResult {
    /// Whether the seed passed.
    pub fn passed(&self) -> bool {
        self.status == Status::Pass
    }

    /// Whether the seed failed by a refusal: a call the simulation does not model.
    ///
    /// ```
    /// use crashtest_protocol::SeedResult;
    /// let line = r#"{"test":"t","seed":4,"status":"fail","failure":"refused: a thread",
    ///     "signature":{"class":"refused","headline":"refused: a thread"}}"#;
    /// let result: SeedResult = serde_json::from_str(line).unwrap();
    /// assert!(result.refused());
    /// ```
    pub fn refused(&self) -> bool {
        self.signature
            .as_ref()
            .is_some_and(|signature| signature.class == FailureClass::Refused)
    }

    /// The line for a seed whose worker process died (`crashed`) or was killed after going
    /// silent (`hung`), with the end of the worker's output as the failure.
    ///
    /// ```
    /// use crashtest_protocol::{SeedResult, Status};
    /// let lost = SeedResult::lost("t", 3, Status::Hung, "stuck".into());
    /// assert_eq!((lost.seed, lost.status, lost.headline().as_str()), (3, Status::Hung, "stuck"));
    /// ```
    pub fn lost(test: &str, seed: u64, status: Status, output_tail: String) -> SeedResult {
        assert!(
            matches!(status, Status::Crashed | Status::Hung),
            "only a crashed or hung seed is lost, not a {status} one"
        );
        SeedResult {
            test: test.to_owned(),
            seed,
            status,
            failure: Some(output_tail),
            ..SeedResult::default()
        }
    }

    /// The failure's most telling line: the signature's if the runner wrote one, else the
    /// first line of the report that says what failed; for a worker's output (a lost seed),
    /// a Rust panic with its message, else how the worker process ended; else the first line
    /// that is not libtest's own.
    pub fn headline(&self) -> String {
        if let Some(signature) = &self.signature {
            return signature.headline.clone();
        }
        let Some(failure) = &self.failure else {
            return String::new();
        };
        let lines = || failure.lines().map(str::trim).filter(|l| !l.is_empty());
        if let Some(line) =
            lines().find(|line| HEADLINES.iter().any(|start| line.starts_with(start)))
        {
            return line.to_owned();
        }
        // std's panic message: `thread 'name' panicked at file:line:col:`, the message on the
        // next line.
        let mut following = lines().skip_while(|line| !line.contains("' panicked at "));
        if let Some(panic) = following.next() {
            let place = panic
                .split_once("' panicked at ")
                .map_or(panic, |(_, place)| place);
            return match following.next() {
                Some(message) => format!("panicked at {place} {message}"),
                None => format!("panicked at {place}"),
            };
        }
        lines()
            .find(|line| line.starts_with(WORKER_EXITED))
            .or_else(|| {
                lines().find(|line| {
                    !line.contains("FAILED at virtual time")
                        && !LIBTEST_LINES.iter().any(|start| line.starts_with(start))
                })
            })
            .or_else(|| lines().next())
            .unwrap_or_default()
            .to_owned()
    }

    /// The ids of the applied faults that can be masked, oldest first.
    pub fn fault_ids(&self) -> Vec<u64> {
        self.faults.iter().filter_map(|f| f.id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_keeps_its_field_order() {
        let line = SeedResult {
            test: "t".into(),
            seed: 1,
            status: Status::Fail,
            fingerprint: "00ff".into(),
            failure: Some("boom".into()),
            faults: vec![FaultLine {
                id: Some(0),
                stream: Some("nemesis".into()),
                time_ns: 5,
                node: "a".into(),
                text: "kill a".into(),
            }],
            ..SeedResult::default()
        };
        let text = serde_json::to_string(&line).unwrap();
        assert_eq!(
            text,
            r#"{"test":"t","seed":1,"status":"fail","fingerprint":"00ff","elapsed_ns":0,"events":0,"polls":0,"failure":"boom","signature":null,"faults":[{"id":0,"stream":"nemesis","time_ns":5,"node":"a","text":"kill a"}],"coverage":[]}"#
        );
        assert_eq!(serde_json::from_str::<SeedResult>(&text).unwrap(), line);
    }

    #[test]
    fn every_status_reads_back_as_itself() {
        for status in Status::ALL {
            let text = serde_json::to_string(&status).unwrap();
            assert_eq!(text, format!("\"{status}\""));
            assert_eq!(serde_json::from_str::<Status>(&text).unwrap(), status);
        }
        assert!(serde_json::from_str::<Status>("\"flaky\"").is_err());
    }

    #[test]
    fn the_headline_is_the_panic() {
        let result = SeedResult {
            failure: Some(
                "seed 1 FAILED at virtual time 1s\n  node a\n  panicked at x.rs:1:2: boom\n".into(),
            ),
            ..SeedResult::default()
        };
        assert_eq!(result.headline(), "panicked at x.rs:1:2: boom");
    }

    #[test]
    fn a_lost_seeds_headline_is_the_workers_panic_or_its_end_not_libtests_lines() {
        let lost = |output: &str| SeedResult {
            failure: Some(output.into()),
            ..SeedResult::default()
        };
        let panicked = lost(
            "running 1 test\nthread 'store::t' panicked at src/lib.rs:9:5:\ncannot open the file\n\
             note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
        );
        assert_eq!(
            panicked.headline(),
            "panicked at src/lib.rs:9:5: cannot open the file"
        );
        let aborted = lost("running 1 test\n\n(worker process exited: signal: 6 (SIGABRT))");
        assert_eq!(
            aborted.headline(),
            "(worker process exited: signal: 6 (SIGABRT))"
        );
        // A panic that could not unwind: the runner printed the panics before it, the first
        // of which is the failure.
        let unwound = lost(
            "running 1 test\ncrashtest: the process aborts at seed 3 on a panic that cannot \
             unwind. The last panics of the poll, oldest first:\n    panicked at src/conn.rs:4:9: \
             refused\n    panicked at src/conn.rs:9:1: PoisonError\nthread caused \
             non-unwinding panic. aborting.\n\n(worker process exited: signal: 6 (SIGABRT))",
        );
        assert_eq!(unwound.headline(), "panicked at src/conn.rs:4:9: refused");
        let said = lost("running 1 test\nfixture: aborting the process\n");
        assert_eq!(said.headline(), "fixture: aborting the process");
    }

    #[test]
    fn a_hung_seeds_line_records_its_timeout_and_other_lines_do_not() {
        let mut hung = SeedResult::lost("t", 3, Status::Hung, "running 1 test".into());
        hung.seed_timeout_ns = Some(30_000_000_000);
        let text = serde_json::to_string(&hung).unwrap();
        assert!(
            text.ends_with(r#","seed_timeout_ns":30000000000}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<SeedResult>(&text).unwrap(), hung);
        let passed = serde_json::to_string(&SeedResult::default()).unwrap();
        assert!(!passed.contains("seed_timeout_ns"), "{passed}");
        // A hung line of an older tool, without the field.
        let old = r#"{"test":"t","seed":3,"status":"hung","failure":"running 1 test"}"#;
        assert_eq!(
            serde_json::from_str::<SeedResult>(old)
                .unwrap()
                .seed_timeout_ns,
            None
        );
    }

    #[test]
    fn a_hung_seeds_headline_is_the_timeout_not_the_workers_output() {
        let hung = SeedResult::lost(
            "t",
            3,
            Status::Hung,
            format!(
                "{}\nrunning 1 test\nthread 't' panicked at src/lib.rs:9:5:\nearlier\n",
                worker_hung("2s")
            ),
        );
        assert_eq!(hung.headline(), worker_hung("2s"));
    }

    #[test]
    fn a_signature_ignores_the_message() {
        let signature = |headline: &str| Signature {
            class: FailureClass::Check,
            node: None,
            location: None,
            headline: headline.into(),
        };
        assert!(signature("term 3").same_failure(&signature("term 4")));
        let elsewhere = Signature {
            node: Some("n2".into()),
            ..signature("term 3")
        };
        assert!(!signature("term 3").same_failure(&elsewhere));
    }
}
