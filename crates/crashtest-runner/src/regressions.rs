//! Regression files: the failing seeds of a test, kept in the user's repository and run first
//! by every later `cargo test` until the user deletes them.
//!
//! A seed that failed once is the cheapest test there is of the bug it found: it fails again
//! at once if the bug comes back. So a failure found by `#[crashtest::test]` (or by a sweep
//! given `--save-failures`) is appended to `crashtest-regressions/<crate>.<test>.txt` under the
//! package's root, a file meant to be checked in, one line per seed:
//!
//! ```text
//! seed 6 RAFT_BUG=vote_not_persisted # panicked at src/raft/mod.rs:373:5: server 1 recovered...
//! ```
//!
//! The words after the seed are the environment the seed failed under (`NAME=value`, a value
//! quoted as a POSIX shell reads it, like the reproduce lines'): a line
//! runs only where the environment agrees, since the same seed under other settings tests
//! something else (it is skipped with a note saying what it needs). A variable the test
//! declares that a line does not name must be unset for the line to run: a saved line names
//! every variable declared when it was saved, so an unnamed one was declared later, and the
//! seed failed without it. After `#` comes the
//! reason, for the reader. Blank lines and lines starting with `#` are comments. A line that
//! is neither is an error naming the file and line, not a silently skipped seed.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crashtest_protocol::reproduce;

use crate::TestSpec;

/// The directory, under a package's root, that holds its tests' regression files.
pub const DIRECTORY: &str = "crashtest-regressions";

/// One saved seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regression {
    /// The seed.
    pub seed: u64,
    /// The environment it failed under: the variables that select the test's behaviour.
    pub env: Vec<(String, String)>,
    /// Why it failed, in one line.
    pub reason: String,
}

impl Regression {
    /// Whether a failure whose message is `message` is the one this line records: its first
    /// line, shortened as a saved reason is, reads the same (a line saved with no reason
    /// matches none).
    ///
    /// ```
    /// use crashtest::runner::regressions::Regression;
    /// let saved = Regression { seed: 4, env: vec![], reason: "panicked at a.rs:3:9: lost".into() };
    /// assert!(saved.same_reason("panicked at a.rs:3:9: lost\nmore lines"));
    /// assert!(!saved.same_reason("node 3 stopped: EOF"));
    /// ```
    pub fn same_reason(&self, message: &str) -> bool {
        let first = |text: &str| short_reason(text.lines().next().unwrap_or(""));
        let saved = first(&self.reason);
        !saved.is_empty() && saved == first(message)
    }

    /// Where a panic moved, as `(then, now)` places (`file:line:column`), if a failure whose
    /// message is `message` is this line's panic with the same message raised in the same
    /// file at another line: what an edit above the panic does to an unchanged failure. A
    /// first line that every panic of its kind shares (an `assert_eq!`'s, an `unwrap`'s)
    /// tells nothing, and moves nothing.
    ///
    /// ```
    /// use crashtest::runner::regressions::Regression;
    /// let saved = Regression { seed: 4, env: vec![], reason: "panicked at t.rs:131:5: lost".into() };
    /// assert_eq!(
    ///     saved.moved_panic("panicked at t.rs:153:5: lost"),
    ///     Some(("t.rs:131:5".to_owned(), "t.rs:153:5".to_owned()))
    /// );
    /// assert_eq!(saved.moved_panic("panicked at t.rs:153:5: found"), None);
    /// assert_eq!(saved.moved_panic("panicked at u.rs:153:5: lost"), None);
    /// // Every `assert_eq!` starts the same: its first line names no particular one.
    /// let generic = Regression { reason: "panicked at t.rs:9:5: assertion `left == right` failed".into(), ..saved };
    /// assert_eq!(generic.moved_panic("panicked at t.rs:12:5: assertion `left == right` failed"), None);
    /// ```
    pub fn moved_panic(&self, message: &str) -> Option<(String, String)> {
        let panic = |text: &str| -> Option<(String, String, String)> {
            let line = short_reason(text.lines().next().unwrap_or(""));
            let (place, said) = line.strip_prefix("panicked at ")?.split_once(": ")?;
            let file = place.rsplitn(3, ':').nth(2)?.to_owned();
            Some((place.to_owned(), file, said.to_owned()))
        };
        let (then, then_file, then_said) = panic(&self.reason)?;
        let (now, now_file, now_said) = panic(message)?;
        // Messages that every panic of their kind shares say nothing of which one it is.
        let generic = [
            "assertion `left ",
            "called `Option::unwrap()`",
            "called `Result::unwrap()`",
        ];
        if generic.iter().any(|start| then_said.starts_with(start)) {
            return None;
        }
        (then != now && then_file == now_file && then_said == now_said).then_some((then, now))
    }

    /// The variables of its environment that differ from the current process's, as
    /// `NAME=value` (the value it needs; an empty value stands for an unset variable). A
    /// variable of `declared` (the test's) that the line does not name must be unset: a saved
    /// line names every variable declared when it was saved, so the seed failed without it.
    pub fn unmet(&self, declared: &[&str], lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
        let named = self
            .env
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        let unnamed = declared
            .iter()
            .filter(|name| self.env.iter().all(|(named, _)| named != *name))
            .map(|name| (*name, ""));
        named
            .chain(unnamed)
            .filter(|(name, value)| lookup(name).unwrap_or_default() != *value)
            .map(|(name, value)| format!("{name}={}", reproduce::quote(value)))
            .collect()
    }
}

impl fmt::Display for Regression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed {}", self.seed)?;
        for (name, value) in &self.env {
            write!(f, " {name}={}", reproduce::quote(value))?;
        }
        // One line whatever the reason says: a newline would start a line that is no seed.
        let reason = short_reason(self.reason.lines().next().unwrap_or(""));
        if reason.is_empty() {
            Ok(())
        } else {
            write!(f, " # {reason}")
        }
    }
}

/// The most a saved reason keeps of a failure's first line, in characters.
const REASON_CHARS: usize = 200;

/// `line` short enough for a regression line: whole if it fits, else its first sentences that
/// fit, else its first words and an ellipsis, so a reason never stops in the middle of a
/// word or reads as if it said all.
fn short_reason(line: &str) -> String {
    if line.chars().count() <= REASON_CHARS {
        return line.to_owned();
    }
    let room: String = line.chars().take(REASON_CHARS).collect();
    if let Some(end) = room.rfind(". ") {
        return room[..=end].to_owned();
    }
    let words = room.rfind(' ').map_or(room.as_str(), |end| &room[..end]);
    format!("{}...", words.trim_end_matches([',', ';', ':']))
}

/// A test's regression file.
///
/// ```
/// use crashtest::runner::regressions::{Regression, Regressions};
///
/// let dir = std::env::temp_dir().join(format!("regressions-doc-{}", std::process::id()));
/// let file = Regressions::at(dir.join("t.txt"));
/// assert!(file.read().unwrap().is_empty());
/// let seed = Regression { seed: 6, env: vec![("BUG".into(), "x".into())], reason: "lost a write".into() };
/// file.append(&seed).unwrap();
/// file.append(&seed).unwrap(); // already there: kept once
/// assert_eq!(file.read().unwrap(), [seed]);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Regressions {
    path: PathBuf,
}

impl Regressions {
    /// The regression file of `spec`'s test in the package rooted at `root`:
    /// `<root>/crashtest-regressions/<crate>.<module path>.<test>.txt`.
    pub fn of(spec: &TestSpec, root: &Path) -> Regressions {
        let name = format!(
            "{}.{}",
            spec.crate_name,
            spec.test_path().replace("::", ".")
        );
        Regressions::at(root.join(DIRECTORY).join(format!("{name}.txt")))
    }

    /// The regression file at `path`.
    pub fn at(path: PathBuf) -> Regressions {
        Regressions { path }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its seeds, in file order (none if there is no file).
    ///
    /// # Errors
    ///
    /// The file cannot be read, or a line is not a seed line: the error names the line.
    pub fn read(&self) -> io::Result<Vec<Regression>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut seeds = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parsed = parse(line).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "line {} of {} is not a seed line (`seed N [NAME=value ...] [# reason]`, \
                         or a `#` comment): {line:?}",
                        number + 1,
                        self.path.display()
                    ),
                )
            })?;
            seeds.push(parsed);
        }
        Ok(seeds)
    }

    /// Appends a seed, unless a line with the same seed and environment is there already;
    /// creates the file, with a header saying what it is, if need be. The line is written
    /// with one `write` on a file opened for appending, so processes may share the file.
    ///
    /// # Errors
    ///
    /// The file cannot be read or written.
    pub fn append(&self, regression: &Regression) -> io::Result<bool> {
        let known = self.read()?;
        if known
            .iter()
            .any(|r| r.seed == regression.seed && r.env == regression.env)
        {
            return Ok(false);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let mut text = String::new();
        if file.metadata()?.len() == 0 {
            text.push_str(HEADER);
        }
        text.push_str(&format!("{regression}\n"));
        file.write_all(text.as_bytes())?;
        Ok(true)
    }
}

const HEADER: &str = "\
# Seeds that failed this test, run first by every `cargo test` (crashtest's regression file).
# Check it in. Delete a line when its seed no longer tests anything; CRASHTEST_REGRESSIONS=0
# skips them all for one run. Format: seed N [NAME=value ...] [# why it failed]; a line runs
# only where the test's declared variables are as it names them, the unnamed ones unset.
";

/// `seed N [NAME=value ...] [# reason]`, the words split as a POSIX shell splits them.
fn parse(line: &str) -> Option<Regression> {
    let (fields, reason) = match comment_start(line) {
        Some(at) => (&line[..at], line[at + 1..].trim()),
        None => (line, ""),
    };
    let words = shlex::split(fields)?;
    let mut words = words.into_iter();
    if words.next()? != "seed" {
        return None;
    }
    let seed = words.next()?.parse().ok()?;
    let env = words
        .map(|word| {
            let (name, value) = word.split_once('=')?;
            (!name.is_empty()).then(|| (name.to_owned(), value.to_owned()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Regression {
        seed,
        env,
        reason: reason.to_owned(),
    })
}

/// Where the line's comment starts, as a shell sees it: the first `#` that begins a word and
/// is not inside quotes (the text before it splits into words without an open quote).
fn comment_start(line: &str) -> Option<usize> {
    line.match_indices('#').map(|(at, _)| at).find(|&at| {
        let begins_word = line[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        begins_word && shlex::split(&line[..at]).is_some()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_written() {
        let seed = Regression {
            seed: u64::MAX,
            env: vec![("A".into(), "1".into()), ("B".into(), String::new())],
            reason: "panicked at a.rs:1:1: no # really\nsecond line".into(),
        };
        let line = seed.to_string();
        assert_eq!(
            line,
            "seed 18446744073709551615 A=1 B='' # panicked at a.rs:1:1: no # really"
        );
        let back = parse(&line).unwrap();
        assert_eq!((back.seed, back.env), (seed.seed, seed.env));
        assert_eq!(back.reason, "panicked at a.rs:1:1: no # really");
    }

    #[test]
    fn values_with_spaces_quotes_and_hashes_read_back_whole() {
        let seed = Regression {
            seed: 7,
            env: vec![
                ("A".into(), "two words".into()),
                ("B".into(), "it's #1".into()),
                ("C".into(), "x#y".into()),
            ],
            reason: "lost".into(),
        };
        let line = seed.to_string();
        assert_eq!(line, r"seed 7 A='two words' B='it'\''s #1' C='x#y' # lost");
        assert_eq!(parse(&line), Some(seed));
        let hand_written = parse(r#"seed 8 A="two words" B=x\ y # why"#).unwrap();
        assert_eq!(
            hand_written.env,
            [("A".into(), "two words".into()), ("B".into(), "x y".into())]
        );
        assert_eq!(hand_written.reason, "why");
    }

    #[test]
    fn a_long_reason_is_cut_at_a_sentence_or_a_word() {
        let sentences = format!(
            "refused: {}. Use pread instead. {}",
            "a".repeat(80),
            "b ".repeat(80)
        );
        let saved = short_reason(&sentences);
        assert!(saved.ends_with("Use pread instead."), "{saved}");
        let words = format!("check failed: {}", "word ".repeat(60));
        let saved = short_reason(&words);
        assert!(saved.ends_with("word..."), "{saved}");
        assert!(saved.chars().count() <= REASON_CHARS + 3, "{saved}");
        assert_eq!(short_reason("short"), "short");
    }

    #[test]
    fn an_unclosed_quote_is_not_a_seed_line() {
        assert_eq!(parse("seed 9 A='open # reason"), None);
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("regressions-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = Regressions::at(dir.join("t.txt"));
        std::fs::write(file.path(), "# comment\n\nseed 3\nsed 4\n").unwrap();
        let error = file.read().unwrap_err().to_string();
        assert!(
            error.contains("line 4 of") && error.contains("sed 4"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_environment_that_differs_is_named() {
        let seed = parse("seed 1 BUG=x MODE=weak").unwrap();
        let here = |name: &str| (name == "BUG").then(|| "x".to_owned());
        assert_eq!(seed.unmet(&["BUG", "MODE"], &here), ["MODE=weak"]);
    }

    #[test]
    fn a_variable_declared_after_a_line_was_saved_must_be_unset_for_it() {
        let seed = parse("seed 1 BUG=x").unwrap();
        let with_kills = |name: &str| match name {
            "BUG" => Some("x".to_owned()),
            "KILLS" => Some("silent".to_owned()),
            _ => None,
        };
        assert_eq!(seed.unmet(&["BUG", "KILLS"], &with_kills), ["KILLS=''"]);
        let unset = |name: &str| (name == "BUG").then(|| "x".to_owned());
        assert!(seed.unmet(&["BUG", "KILLS"], &unset).is_empty());
    }
}
