//! The commit a failure was found on and the command that reproduces it.
//!
//! A seed replays only on the same code, so a report names the commit (from
//! `CRASHTEST_COMMIT`, else `git rev-parse HEAD` in the package's directory, marked `-dirty`
//! when tracked files have changes) next to a command that can be pasted into a shell.

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crashtest_protocol::describe::TestInfo;
use crashtest_protocol::{env, reproduce};

/// Where a test lives, as the macro captured it at the call site.
///
/// ```
/// let spec = crashtest::runner::TestSpec {
///     name: "works",
///     module_path: "demo",
///     package: "demo",
///     crate_name: "demo",
///     seeds: None,
///     seed: None,
///     config: crashtest::Config::default, env: &[],
/// };
/// assert_eq!(spec.test_path(), "works");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TestSpec {
    /// The test function's name.
    pub name: &'static str,
    /// `module_path!()` at the test.
    pub module_path: &'static str,
    /// `CARGO_PKG_NAME` of the test's package.
    pub package: &'static str,
    /// `CARGO_CRATE_NAME` of the test's target (the library, or an integration test file).
    pub crate_name: &'static str,
    /// Seeds from the attribute.
    pub seeds: Option<u64>,
    /// A fixed seed from the attribute.
    pub seed: Option<u64>,
    /// The run configuration.
    pub config: fn() -> crashtest_core::Config,
    /// The environment variables that select the test's behaviour (a planted bug, a
    /// workload): their values go into every reproduce line, so that a line pasted into a
    /// fresh shell runs what failed.
    pub env: &'static [&'static str],
}

impl TestSpec {
    /// The test's path as libtest names it (the module path without the crate, then the name).
    ///
    /// ```
    /// let spec = crashtest::runner::TestSpec {
    ///     name: "agree",
    ///     module_path: "my_crate::raft::tests",
    ///     package: "my-crate",
    ///     crate_name: "my_crate",
    ///     seeds: None,
    ///     seed: None,
    ///     config: crashtest::Config::default, env: &[],
    /// };
    /// assert_eq!(spec.test_path(), "raft::tests::agree");
    /// ```
    pub fn test_path(&self) -> String {
        match self.module_path.split_once("::") {
            Some((_, rest)) => format!("{rest}::{}", self.name),
            None => self.name.to_owned(),
        }
    }

    /// The shell command that runs exactly `seed` of this test, with no fault masked or kept
    /// and no branch explored (for a run with those, `reproduce_line` of
    /// [`Settings::run_env`](crate::Settings::run_env)).
    ///
    /// ```
    /// let spec = crashtest::runner::TestSpec {
    ///     name: "agree",
    ///     module_path: "cluster",
    ///     package: "my-db",
    ///     crate_name: "cluster",
    ///     seeds: None,
    ///     seed: None,
    ///     config: crashtest::Config::default, env: &[],
    /// };
    /// assert_eq!(
    ///     spec.reproduce_command(42),
    ///     "CRASHTEST_SEED=42 cargo test -p my-db --test cluster -- agree --exact"
    /// );
    /// ```
    pub fn reproduce_command(&self, seed: u64) -> String {
        self.reproduce_line(&reproduce::seed(seed))
    }

    /// The shell command that runs this test with the variables `env` (such as
    /// `CRASHTEST_SEED=3 CRASHTEST_MASK=1,4`).
    ///
    /// ```
    /// let spec = crashtest::runner::TestSpec {
    ///     name: "agree",
    ///     module_path: "my_db::raft",
    ///     package: "my-db",
    ///     crate_name: "my_db",
    ///     seeds: None,
    ///     seed: None,
    ///     config: crashtest::Config::default, env: &[],
    /// };
    /// assert_eq!(
    ///     spec.reproduce_line("CRASHTEST_SEED=3 CRASHTEST_MASK=1,4"),
    ///     "CRASHTEST_SEED=3 CRASHTEST_MASK=1,4 cargo test -p my-db --lib -- raft::agree --exact"
    /// );
    /// ```
    pub fn reproduce_line(&self, env: &str) -> String {
        let target = if self.crate_name == self.package.replace('-', "_") {
            "--lib".to_owned()
        } else {
            format!("--test {}", self.crate_name)
        };
        let mut selection = format!("-p {} {target}", self.package);
        if !cfg!(debug_assertions) {
            selection.push_str(" --release");
        }
        let declared = reproduce::declared(&self.declared_values());
        let mut line = reproduce::cargo_test(
            &reproduce::join(&declared, env),
            &selection,
            &self.test_path(),
        );
        if this_binary_asks_for_ignored() {
            line.push_str(" --include-ignored");
        }
        line
    }

    /// The declared variables and their values in this process (`None` when unset).
    ///
    /// ```
    /// let spec = crashtest::runner::TestSpec {
    ///     name: "agree", module_path: "db", package: "db", crate_name: "db",
    ///     seeds: None, seed: None, config: crashtest::Config::default,
    ///     env: &["CRASHTEST_DOC_UNSET_VARIABLE"],
    /// };
    /// assert_eq!(spec.declared_values(), [("CRASHTEST_DOC_UNSET_VARIABLE".to_owned(), None)]);
    /// ```
    pub fn declared_values(&self) -> Vec<(String, Option<String>)> {
        self.env
            .iter()
            .map(|name| ((*name).to_owned(), std::env::var(name).ok()))
            .collect()
    }

    /// What this test is, as `CRASHTEST_DESCRIBE` asks.
    pub(crate) fn info(&self) -> TestInfo {
        TestInfo {
            test: self.test_path(),
            env: self.env.iter().map(|name| (*name).to_owned()).collect(),
            release: !cfg!(debug_assertions),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            exhaustive: false,
        }
    }
}

/// [`asks_for_ignored`] of this process's arguments, read once: a line is made for every seed
/// run (the watchdog's), and the arguments never change.
fn this_binary_asks_for_ignored() -> bool {
    static ASKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKS.get_or_init(|| asks_for_ignored(std::env::args()))
}

/// Whether the test binary was asked to run ignored tests: then the running test may be an
/// `#[ignore]` one (the attribute is out of the runner's sight), which a reproduce line runs
/// only if it asks for ignored tests too. Asking costs nothing for one that is not.
fn asks_for_ignored(args: impl Iterator<Item = String>) -> bool {
    args.into_iter()
        .any(|arg| arg == "--ignored" || arg == "--include-ignored")
}

/// The commit under test: `CRASHTEST_COMMIT`, else git's HEAD (with `-dirty` if tracked files
/// have changes: untracked ones are left out, as the tool's sweep header leaves them, since
/// results files and saved regressions are among them), else `unknown`. Asked once per process: a minimizer replays a failing seed many
/// times, and the answer cannot change while the process runs.
pub(crate) fn commit() -> String {
    static COMMIT: OnceLock<String> = OnceLock::new();
    COMMIT.get_or_init(ask_commit).clone()
}

fn ask_commit() -> String {
    if let Ok(commit) = std::env::var(env::COMMIT) {
        return commit;
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(Path::new(&dir))
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(head) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(status) if !status.is_empty() => format!("{head}-dirty"),
            _ => head,
        },
        // Named as a sweep's header names it, so a report and a results file agree.
        None => std::env::current_exe().map_or_else(
            |_| "unknown".to_owned(),
            |exe| crashtest_protocol::code::unknown_commit(&exe),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::asks_for_ignored;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|arg| (*arg).to_owned())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn a_run_of_ignored_tests_makes_the_reproduce_line_ask_for_them() {
        assert!(asks_for_ignored(args(&["t", "agree", "--ignored"])));
        assert!(asks_for_ignored(args(&[
            "t",
            "--include-ignored",
            "--exact"
        ])));
        assert!(!asks_for_ignored(args(&["t", "agree", "--exact"])));
        assert!(!asks_for_ignored(args(&["t", "ignored_test"])));
    }
}
