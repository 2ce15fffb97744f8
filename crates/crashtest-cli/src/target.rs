//! Which executable holds the test, and how to run it.
//!
//! `#[crashtest::test]` tests are ordinary libtest tests, so the tool builds them the way
//! `cargo test` does (`cargo test --no-run --message-format=json`, with the user's package and
//! target filters), asks each test executable for its tests (`--list --format terse`), and
//! resolves the name the user gave: a full libtest path, or a suffix after `::`. `--exe` skips
//! cargo for a binary built elsewhere. A name that matches nothing, or more than one test, is
//! an error that lists the candidates: running the wrong test would waste a whole sweep.
//!
//! The executables run as `cargo test` runs them: in the package root, and with the Rust
//! toolchain's library directory on the dynamic loader's path, which a proc-macro crate's test
//! executable needs (it links the standard library dynamically), so that listing every
//! executable of a workspace does not fail on one.

use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use std::sync::atomic::{AtomicU64, Ordering};

use crashtest_protocol::describe::TestInfo;
use crashtest_protocol::{env, reproduce};
use serde::Deserialize;

use crate::cli::Select;

/// A resolved test: the executable, the test's libtest path, and how cargo names it.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) exe: PathBuf,
    /// The test's full libtest path, such as `raft::tests::agree`.
    pub(crate) test: String,
    /// The directory cargo runs the executable in (the package root), if known.
    pub(crate) dir: Option<PathBuf>,
    /// `cargo test` arguments selecting this target, such as `-p db --test cluster`; `None`
    /// when the executable was given with `--exe`.
    pub(crate) cargo_args: Option<String>,
    /// The declared variables with their values in this tool's environment, which its
    /// workers inherit (`None` when unset).
    pub(crate) declared: Vec<(String, Option<String>)>,
}

impl Target {
    /// The command that runs only this test, as a worker: one test thread, output not
    /// captured (the runner's report goes to stderr), and the package root as the working
    /// directory, as under `cargo test`.
    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new(&self.exe);
        with_toolchain_libraries(&mut command);
        command.args([&self.test, "--exact", "--nocapture", "--test-threads=1"]);
        if let Some(dir) = &self.dir {
            command.current_dir(dir).env("CARGO_MANIFEST_DIR", dir);
        }
        command
    }

    /// A shell line that reproduces a run, given the protocol variables that select it; the
    /// test's declared variables come first.
    pub(crate) fn reproduce(&self, env: &str) -> String {
        let env = reproduce::join(&reproduce::declared(&self.declared), env);
        match &self.cargo_args {
            Some(args) => reproduce::cargo_test(&env, args, &self.test),
            None => reproduce::executable(&env, &self.exe.display().to_string(), &self.test),
        }
    }

    /// A `crashtest` command line taking a seed of this test apart further (`replay`,
    /// `minimize`): the test's declared variables, its full name, and the flags that select
    /// exactly its executable as this run built it, so that it pasted anywhere in the
    /// workspace builds nothing else.
    pub(crate) fn follow_up(&self, command: &str, seed: u64) -> String {
        let declared = reproduce::declared(&self.declared);
        let selection = match &self.cargo_args {
            Some(args) => args.clone(),
            None => format!(
                "--exe {}",
                reproduce::quote(&self.exe.display().to_string())
            ),
        };
        let line = format!(
            "crashtest {command} {} {seed} {selection}",
            reproduce::quote(&self.test)
        );
        reproduce::join(&declared, &line)
    }
}

/// One test executable cargo built.
#[derive(Clone, Debug)]
struct Executable {
    path: PathBuf,
    dir: Option<PathBuf>,
    /// `-p pkg --lib`, `-p pkg --test name`, ...
    cargo_args: Option<String>,
    /// How the executable is shown in lists.
    label: String,
}

/// A test found in an executable.
#[derive(Clone, Debug)]
pub(crate) struct Listed {
    pub(crate) label: String,
    pub(crate) test: String,
}

/// Builds (unless `--exe`) and resolves the test `name`.
pub(crate) fn resolve(select: &Select, name: &str) -> anyhow::Result<Target> {
    let executables = executables(select)?;
    let mut exact = Vec::new();
    let mut suffix = Vec::new();
    let mut all = Vec::new();
    for exe in &executables {
        for test in list_tests(exe)? {
            if test == name {
                exact.push((exe.clone(), test.clone()));
            } else if test.ends_with(&format!("::{name}")) {
                suffix.push((exe.clone(), test.clone()));
            }
            all.push(Listed {
                label: exe.label.clone(),
                test,
            });
        }
    }
    let matches = if exact.is_empty() { suffix } else { exact };
    match matches.as_slice() {
        [(exe, test)] => {
            let info = describe(exe, test)?;
            let declared = info
                .env
                .iter()
                .map(|name| (name.clone(), std::env::var(name).ok()))
                .collect();
            let target = Target {
                exe: exe.path.clone(),
                test: test.clone(),
                dir: exe.dir.clone(),
                cargo_args: exe.cargo_args.clone(),
                declared,
            };
            if info.exhaustive {
                bail!(
                    "{test} is an exhaustive test (#[crashtest::test(exhaustive)]): it runs every \
                     crash case of one seed in one process, which this tool's seed ranges, \
                     masks and branches do not drive. Run it with `{}`: a failing case \
                     prints the line that runs it alone (CRASHTEST_CASE), and CRASHTEST_SEED \
                     picks the seed",
                    target.reproduce("").trim_start()
                );
            }
            Ok(target)
        }
        [] => {
            let near: Vec<String> = all
                .iter()
                .filter(|l| l.test.contains(name.rsplit("::").next().unwrap_or(name)))
                .map(|l| format!("  {}  ({})", l.test, l.label))
                .collect();
            let shown = if near.is_empty() {
                all.iter()
                    .take(30)
                    .map(|l| format!("  {}  ({})", l.test, l.label))
                    .collect()
            } else {
                near
            };
            bail!(
                "unknown test {name:?}: no test in {} executable(s) is named so or ends in ::{name}; {}:\n{}",
                executables.len(),
                if shown.is_empty() {
                    "they hold no tests"
                } else {
                    "tests found"
                },
                shown.join("\n")
            )
        }
        many => bail!(
            "ambiguous test {name:?}: it matches {} tests; give the full path, or narrow with -p, --lib or --test:\n{}",
            many.len(),
            many.iter()
                .map(|(exe, test)| format!("  {test}  ({})", exe.label))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

/// Asks the test what it is (`CRASHTEST_DESCRIBE`); a test that does not answer is no
/// `#[crashtest::test]`, or one built with a crashtest too old to speak this protocol.
fn describe(exe: &Executable, test: &str) -> anyhow::Result<TestInfo> {
    let answer = std::env::temp_dir().join(format!(
        "crashtest-describe-{}-{}.json",
        std::process::id(),
        DESCRIBED.fetch_add(1, Ordering::Relaxed)
    ));
    let mut command = Command::new(&exe.path);
    with_toolchain_libraries(&mut command);
    command.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    if let Some(dir) = &exe.dir {
        command.current_dir(dir).env("CARGO_MANIFEST_DIR", dir);
    }
    for name in env::WORKER {
        command.env_remove(name);
    }
    let output = command
        .env(env::DESCRIBE, &answer)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", exe.path.display()))?;
    let text = std::fs::read_to_string(&answer);
    let _ = std::fs::remove_file(&answer);
    match text {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!("{test} described itself in a form this tool cannot read: {text}")
        }),
        Err(_) => bail!(
            "{test} ({}) ran without saying what it is: is it a #[crashtest::test]? (A test built with an older crashtest does not answer either: rebuild it.) Its output ends with:\n{}",
            exe.label,
            String::from_utf8_lossy(&output.stdout).trim_end()
        ),
    }
}

/// Numbers the description files of one process.
static DESCRIBED: AtomicU64 = AtomicU64::new(0);

/// Every test of the selected executables (for `crashtest list`).
pub(crate) fn list(select: &Select) -> anyhow::Result<Vec<Listed>> {
    let mut out = Vec::new();
    for exe in executables(select)? {
        for test in list_tests(&exe)? {
            out.push(Listed {
                label: exe.label.clone(),
                test,
            });
        }
    }
    Ok(out)
}

fn executables(select: &Select) -> anyhow::Result<Vec<Executable>> {
    if let Some(path) = &select.exe {
        if !path.is_file() {
            bail!("--exe {}: no such file", path.display());
        }
        return Ok(vec![Executable {
            path: path.clone(),
            dir: None,
            cargo_args: None,
            label: path.display().to_string(),
        }]);
    }
    build(select)
}

/// An artifact line of cargo's JSON messages (the fields used here).
#[derive(Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    executable: Option<PathBuf>,
    #[serde(default)]
    profile: Option<Profile>,
    #[serde(default)]
    target: Option<TargetInfo>,
    #[serde(default)]
    package_id: Option<String>,
    #[serde(default)]
    manifest_path: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Profile {
    test: bool,
}

#[derive(Deserialize)]
struct TargetInfo {
    name: String,
    kind: Vec<String>,
}

/// Runs `cargo test --no-run` and collects the test executables it built.
fn build(select: &Select) -> anyhow::Result<Vec<Executable>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command.args([
        "test",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    let filters = select.cargo_filters();
    command.args(&filters);
    command.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = command.spawn().with_context(|| {
        format!(
            "cannot run {}; is cargo installed?",
            cargo.to_string_lossy()
        )
    })?;
    let stdout = child.stdout.take().expect("stdout was piped");
    let mut executables = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.context("cannot read cargo's output")?;
        let Ok(message) = serde_json::from_str::<Message>(&line) else {
            continue;
        };
        if message.reason != "compiler-artifact" || !message.profile.is_some_and(|p| p.test) {
            continue;
        }
        let (Some(path), Some(target)) = (message.executable, message.target) else {
            continue;
        };
        let package = message.package_id.as_deref().map(package_name);
        let selector = target_selector(&target);
        let cargo_args = package.as_ref().map(|package| {
            let mut args = vec![format!("-p {package}"), selector.clone()];
            args.extend(select.reproduce_flags());
            args.join(" ")
        });
        executables.push(Executable {
            label: format!("{} {selector}", package.as_deref().unwrap_or("?")),
            dir: message
                .manifest_path
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf),
            cargo_args,
            path,
        });
    }
    let status = child.wait().context("cargo did not finish")?;
    if !status.success() {
        bail!(
            "`cargo test --no-run {}` failed ({status}); see cargo's messages above",
            filters.join(" ")
        );
    }
    if executables.is_empty() {
        bail!(
            "`cargo test --no-run {}` built no test executables; select a package with -p or a target with --lib/--test",
            filters.join(" ")
        );
    }
    Ok(executables)
}

/// `--lib`, `--test NAME`, `--bin NAME`, ... for a target.
fn target_selector(target: &TargetInfo) -> String {
    let kind = target.kind.first().map_or("lib", String::as_str);
    match kind {
        "test" | "bin" | "example" | "bench" => format!("--{kind} {}", target.name),
        _ => "--lib".to_owned(),
    }
}

/// The package name in a cargo package id: `path+file:///a/b#name@0.1.0`,
/// `path+file:///a/name#0.1.0` (the name is the last path segment), or the older
/// `name 0.1.0 (path+file:///a/b)`.
fn package_name(id: &str) -> String {
    if let Some((url, fragment)) = id.split_once('#') {
        if let Some((name, _)) = fragment.split_once('@') {
            return name.to_owned();
        }
        return url.rsplit('/').next().unwrap_or(url).to_owned();
    }
    id.split_whitespace().next().unwrap_or(id).to_owned()
}

/// The dynamic loader's search path variable, on the systems where cargo sets one for tests.
#[cfg(target_os = "macos")]
const LOADER_PATH: &str = "DYLD_FALLBACK_LIBRARY_PATH";
#[cfg(not(target_os = "macos"))]
const LOADER_PATH: &str = "LD_LIBRARY_PATH";

/// What the loader searches when the variable is unset, and stops searching once it is set:
/// macOS's fallback list (cargo appends it too), and nothing elsewhere.
#[cfg(target_os = "macos")]
const LOADER_DEFAULTS: &[&str] = &["$HOME/lib", "/usr/local/lib", "/usr/lib"];
#[cfg(not(target_os = "macos"))]
const LOADER_DEFAULTS: &[&str] = &[];

/// Puts the toolchain's library directory (`rustc --print target-libdir`) in front of the
/// loader path of `command`, as cargo does for the tests it runs. Without a `rustc` to ask,
/// the command runs as it is: only a proc-macro crate's tests need it.
fn with_toolchain_libraries(command: &mut Command) {
    static LOADER_VALUE: std::sync::OnceLock<Option<OsString>> = std::sync::OnceLock::new();
    if let Some(value) = LOADER_VALUE.get_or_init(toolchain_loader_path) {
        command.env(LOADER_PATH, value);
    }
}

/// The loader path with the toolchain's library directory first, worked out once per run of
/// the tool (the environment it reads does not change meanwhile).
fn toolchain_loader_path() -> Option<OsString> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| OsString::from("rustc"));
    let output = Command::new(rustc)
        .args(["--print", "target-libdir"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    let libdir = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    if !libdir.is_dir() {
        return None;
    }
    let existing: Vec<PathBuf> = match std::env::var_os(LOADER_PATH) {
        Some(value) => std::env::split_paths(&value).collect(),
        None => LOADER_DEFAULTS
            .iter()
            .map(|dir| match dir.strip_prefix("$HOME") {
                Some(rest) => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                    .join(rest.trim_start_matches('/')),
                None => PathBuf::from(dir),
            })
            .collect(),
    };
    // An empty entry would mean the working directory to the loader.
    let paths = std::iter::once(libdir).chain(
        existing
            .into_iter()
            .filter(|dir| !dir.as_os_str().is_empty()),
    );
    std::env::join_paths(paths).ok()
}

/// The tests of one executable, by libtest path.
fn list_tests(exe: &Executable) -> anyhow::Result<Vec<String>> {
    let mut command = Command::new(&exe.path);
    with_toolchain_libraries(&mut command);
    command.args(["--list", "--format", "terse"]);
    if let Some(dir) = &exe.dir {
        command.current_dir(dir);
    }
    let output = command
        .output()
        .with_context(|| format!("cannot run {}", exe.path.display()))?;
    if !output.status.success() {
        bail!(
            "{} --list failed ({}); is it a libtest test executable?\n{}",
            exe.path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_executables_find_the_toolchains_standard_library() {
        let mut command = Command::new("true");
        with_toolchain_libraries(&mut command);
        let (_, path) = command
            .get_envs()
            .find(|(name, _)| *name == LOADER_PATH)
            .expect("the loader path is set");
        let entries: Vec<PathBuf> = std::env::split_paths(path.expect("to a value")).collect();
        assert!(
            entries.iter().all(|dir| !dir.as_os_str().is_empty()),
            "an empty entry, which the loader reads as the working directory: {entries:?}"
        );
        let first = entries.first().expect("a directory");
        let has_libstd = std::fs::read_dir(first)
            .expect("the toolchain's library directory")
            .any(|entry| {
                let name = entry.expect("an entry").file_name();
                name.to_string_lossy().starts_with("libstd-")
            });
        assert!(has_libstd, "no libstd in {}", first.display());
    }

    #[test]
    fn package_names_come_out_of_every_id_form() {
        assert_eq!(package_name("path+file:///w/crates/x#my-db@0.1.0"), "my-db");
        assert_eq!(package_name("path+file:///w/crates/my-db#0.1.0"), "my-db");
        assert_eq!(package_name("my-db 0.1.0 (path+file:///w)"), "my-db");
        assert_eq!(
            package_name("registry+https://github.com/rust-lang/crates.io-index#serde@1.0.0"),
            "serde"
        );
    }

    #[test]
    fn targets_map_to_cargo_selectors() {
        let target = |kind: &str| TargetInfo {
            name: "cluster".into(),
            kind: vec![kind.into()],
        };
        assert_eq!(target_selector(&target("lib")), "--lib");
        assert_eq!(target_selector(&target("rlib")), "--lib");
        assert_eq!(target_selector(&target("test")), "--test cluster");
        assert_eq!(target_selector(&target("bin")), "--bin cluster");
    }
}
