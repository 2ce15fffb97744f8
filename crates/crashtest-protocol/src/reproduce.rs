//! Reproduce lines: the shell command that replays a run, as the runner and the tool print it.
//!
//! A line is the variables that select the run (`CRASHTEST_SEED=3 CRASHTEST_MASK=1,4`), then
//! the command that runs exactly one test: `cargo test <selection> -- <test> --exact`, or the
//! test executable itself when it was built elsewhere. Both sides build lines here, so a line
//! the tool prints and a line a failing test prints look alike and paste alike.

use crate::env;

/// `NAME=value` pairs as a shell prefix: `CRASHTEST_SEED=3 CRASHTEST_MASK=1,4`.
///
/// ```
/// use crashtest_protocol::{env, reproduce::assignments};
/// let line = assignments([(env::SEED, "3".to_owned()), (env::MASK, "1,4".to_owned())]);
/// assert_eq!(line, "CRASHTEST_SEED=3 CRASHTEST_MASK=1,4");
/// ```
pub fn assignments<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let pairs: Vec<String> = pairs
        .into_iter()
        .map(|(name, value)| format!("{name}={}", quote(&value)))
        .collect();
    pairs.join(" ")
}

/// A value as a POSIX shell reads it back whole: as it is when it holds only characters
/// no shell treats specially, else in single quotes.
///
/// ```
/// use crashtest_protocol::reproduce::quote;
/// assert_eq!(quote("no_checksum"), "no_checksum");
/// assert_eq!(quote("a b"), "'a b'");
/// assert_eq!(quote("it's"), r"'it'\''s'");
/// assert_eq!(quote(""), "''");
/// ```
pub fn quote(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,:/=+@%".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// The assignments of a test's declared variables (see [`crate::describe::TestInfo`]) that
/// are set, as a shell prefix: `WORKFLOW_BUG=no_checksum`. An unset variable is left out: a
/// fresh shell leaves it unset too.
///
/// ```
/// use crashtest_protocol::reproduce::declared;
/// let values = [("WORKFLOW_BUG".to_owned(), Some("no_checksum".to_owned())), ("MODE".to_owned(), None)];
/// assert_eq!(declared(&values), "WORKFLOW_BUG=no_checksum");
/// ```
pub fn declared(values: &[(String, Option<String>)]) -> String {
    assignments(
        values
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.clone()?))),
    )
}

/// Two shell prefixes as one: `declared` first, then `env`, either possibly empty.
///
/// ```
/// use crashtest_protocol::reproduce::join;
/// assert_eq!(join("A=1", "CRASHTEST_SEED=2"), "A=1 CRASHTEST_SEED=2");
/// assert_eq!(join("", "CRASHTEST_SEED=2"), "CRASHTEST_SEED=2");
/// ```
pub fn join(declared: &str, env: &str) -> String {
    match (declared.is_empty(), env.is_empty()) {
        (true, _) => env.to_owned(),
        (false, true) => declared.to_owned(),
        (false, false) => format!("{declared} {env}"),
    }
}

/// `CRASHTEST_SEED=<seed>`.
///
/// ```
/// assert_eq!(crashtest_protocol::reproduce::seed(42), "CRASHTEST_SEED=42");
/// ```
pub fn seed(seed: u64) -> String {
    format!("{}={seed}", env::SEED)
}

/// The line that runs test `test` (its libtest path) of the cargo target `cargo_args` selects
/// (such as `-p my-db --test cluster`) with the variables `env`.
///
/// ```
/// use crashtest_protocol::reproduce::{cargo_test, seed};
/// assert_eq!(
///     cargo_test(&seed(7), "-p my-db --lib", "raft::agree"),
///     "CRASHTEST_SEED=7 cargo test -p my-db --lib -- raft::agree --exact"
/// );
/// ```
pub fn cargo_test(env: &str, cargo_args: &str, test: &str) -> String {
    format!("{env} cargo test {cargo_args} -- {test} --exact")
}

/// The line that runs test `test` of the test executable `exe` with the variables `env`.
///
/// ```
/// use crashtest_protocol::reproduce::{executable, seed};
/// assert_eq!(executable(&seed(7), "target/t", "agree"), "CRASHTEST_SEED=7 target/t agree --exact");
/// ```
pub fn executable(env: &str, exe: &str, test: &str) -> String {
    format!("{env} {exe} {test} --exact")
}
