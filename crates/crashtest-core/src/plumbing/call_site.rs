//! Where the program is in a backtrace: its innermost frame, told apart from the frames of
//! the standard library, its dependencies and crashtest itself.
//!
//! Reports use it to name a place in the user's code that the simulator cannot see any other
//! way: where a refused thread was started, where a deadlocked task waits. A backtrace costs
//! a walk of the stack and a read of the executable's symbols, so it is taken only on the
//! way to a failure, never on a run's common path.
//!
//! A frame is the program's when its source is neither the standard library's (under
//! `/rustc/`, where every toolchain maps std's sources), nor a dependency's (under cargo's
//! `registry/src/` or `git/checkouts/`), nor crashtest's (its crates' libraries, and the
//! copy of tokio its stand-in re-exports), and its symbol is neither crashtest's nor tokio's. A frame
//! without a location (a build without line tables) is judged by its symbol alone.

use std::backtrace::Backtrace;
use std::path::{Path, PathBuf};

/// One frame of a backtrace: its symbol, and its `file:line:column` when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The demangled symbol, as `my_app::worker::run::{{closure}}`.
    pub symbol: String,
    /// The source location, as `/home/me/app/src/worker.rs:42:18`.
    pub at: Option<String>,
}

impl Frame {
    /// Whether the frame is the program's own rather than a library's (see the module docs).
    pub fn is_programs(&self) -> bool {
        let ours = self
            .crate_name()
            .is_some_and(|name| CRASHTEST_CRATES.contains(&name) || name == "tokio");
        let library_source = self.at.as_deref().is_some_and(is_library_source);
        !ours && !library_source && !self.is_runtimes()
    }

    /// Whether the frame is code a library's macro expanded in another crate (a `select!` in
    /// the program): its symbol names one crate and its source lies in another's.
    ///
    /// ```
    /// use crashtest_core::plumbing::call_site::Frame;
    /// let frame = |symbol: &str, at: &str| Frame { symbol: symbol.into(), at: Some(at.into()) };
    /// let registry = "/h/.cargo/registry/src/index.crates.io-1";
    /// let select = frame("app::main::{{closure}}", &format!("{registry}/tokio-1.54.1/src/macros/select.rs:9:1"));
    /// assert!(select.is_expanded_from_a_library());
    /// let own = frame("futures_util::stream::Next<St>::poll", &format!("{registry}/futures-util-0.3.31/src/lib.rs:1:1"));
    /// assert!(!own.is_expanded_from_a_library());
    /// ```
    pub fn is_expanded_from_a_library(&self) -> bool {
        match (self.crate_name(), self.at.as_deref().and_then(source_crate)) {
            (Some(symbol), Some(source)) => symbol != source,
            _ => false,
        }
    }

    /// Whether the frame is the runtime's: the standard library's by its location, or, with
    /// none, std's or libc's by its symbol.
    pub fn is_runtimes(&self) -> bool {
        match &self.at {
            // C (libc's `start_thread`, with glibc's debug symbols installed) is no program's.
            Some(at) => at.starts_with("/rustc/") || !is_rust_source(at),
            None => {
                self.crate_name()
                    .is_some_and(|name| STD_CRATES.contains(&name))
                    || ["__", "pthread_", "clone", "start_thread"]
                        .iter()
                        .any(|prefix| self.symbol.starts_with(prefix))
            }
        }
    }

    /// The crate whose code the frame runs, read off its symbol: the first segment of its
    /// path, or for a trait's method on a standard type (`<&Waker as tokio::..::WakerRef>`)
    /// the trait's; `None` for an inlined frame's bare name (`poll<T>`, `{async_fn#0}`).
    ///
    /// ```
    /// use crashtest_core::plumbing::call_site::Frame;
    /// let crate_of = |symbol: &str| Frame { symbol: symbol.into(), at: None }.crate_name().map(str::to_owned);
    /// assert_eq!(crate_of("tokio::sync::notify::Notified::poll_notified").as_deref(), Some("tokio"));
    /// assert_eq!(crate_of("<h2::proto::Connection<T> as core::future::future::Future>::poll").as_deref(), Some("h2"));
    /// assert_eq!(crate_of("<&core::task::wake::Waker as tokio::sync::WakerRef>::into_waker").as_deref(), Some("tokio"));
    /// assert_eq!(crate_of("<core::pin::Pin<P> as core::future::future::Future>::poll").as_deref(), Some("core"));
    /// assert_eq!(crate_of("recv<u8, tokio::sync::mpsc::bounded::Semaphore>"), None);
    /// ```
    pub fn crate_name(&self) -> Option<&str> {
        let own = of_path(&self.symbol)?;
        if STD_CRATES.contains(&own)
            && let Some((_, implemented)) = self.symbol.split_once(" as ")
            && let Some(trait_crate) = of_path(implemented)
        {
            return Some(trait_crate);
        }
        Some(own)
    }
}

/// The crate of a path (`tokio::sync::Notify`, `<&core::task::Waker`), from its first
/// segment; `None` for a bare name.
fn of_path(path: &str) -> Option<&str> {
    let path = path
        .trim_start_matches(['<', '&'])
        .trim_start_matches("mut ")
        .trim_start_matches("dyn ");
    let (first, _) = path.split_once("::")?;
    let bare = first.is_empty() || first.contains(['<', '>', ' ', '{', '(', ',']);
    (!bare).then_some(first)
}

/// crashtest's crates, by the names their symbols carry (a program's own crate may be
/// named `crashtest-something` too); `crashtest_real_tokio` is the tokio the stand-in
/// re-exports.
const CRASHTEST_CRATES: [&str; 16] = [
    "crashtest",
    "crashtest_check",
    "crashtest_cli",
    "crashtest_core",
    "crashtest_fs",
    "crashtest_guard",
    "crashtest_hooks",
    "crashtest_io",
    "crashtest_macros",
    "crashtest_minimize",
    "crashtest_nemesis",
    "crashtest_net",
    "crashtest_protocol",
    "crashtest_real_tokio",
    "crashtest_runner",
    "crashtest_tokio",
];

/// The standard library's crates.
pub(crate) const STD_CRATES: [&str; 3] = ["core", "std", "alloc"];

impl std::fmt::Display for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{} (at {at})", self.symbol),
            None => f.write_str(&self.symbol),
        }
    }
}

/// Whether `at` (`file:line:column`) is in a Rust source file.
fn is_rust_source(at: &str) -> bool {
    let file = at.split(':').next().unwrap_or(at);
    file.ends_with(".rs")
}

/// The crate source `at` belongs to, where its path says: a registry crate's directory
/// (`futures-util-0.3.31` is `futures_util`), one of crashtest's crates, or the tokio
/// stand-in's copies (`tokio`); `None` for any other path (the program's, a git checkout).
fn source_crate(at: &str) -> Option<String> {
    let crate_of_dir = |dir: &str| dir.replace('-', "_");
    if let Some((_, inside)) = at.split_once("/registry/src/") {
        // `INDEX/NAME-VERSION/...`: the name ends at the first `-` before a digit.
        let dir = inside.split('/').nth(1)?;
        let end = dir
            .char_indices()
            .find(|&(i, c)| c == '-' && dir[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
            .map_or(dir.len(), |(i, _)| i);
        return Some(crate_of_dir(&dir[..end]));
    }
    let file = resolved(at);
    if in_stand_in(&file) {
        return Some("tokio".to_owned());
    }
    let inside = file.strip_prefix(crashtest_crates()?).ok()?;
    let dir = inside.components().next()?.as_os_str().to_str()?;
    Some(crate_of_dir(dir))
}

/// The directory of crashtest's crates: every one sits beside this one.
fn crashtest_crates() -> Option<&'static Path> {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent()
}

/// Source `at` as a path: std prints a source under the current directory relative to it.
fn resolved(at: &str) -> PathBuf {
    let file = at.split(':').next().unwrap_or(at);
    match file.strip_prefix("./") {
        Some(relative) => std::env::current_dir()
            .map(|dir| dir.join(relative))
            .unwrap_or_else(|_| PathBuf::from(file)),
        None => PathBuf::from(file),
    }
}

/// Whether source `at` is a library's rather than the program's: a dependency's (cargo's
/// registry or git checkouts), the tokio stand-in's or the tokio it re-exports, or
/// crashtest's own crates'. An inlined frame's symbol is its
/// bare function name (`{async_fn#0}`, `poll<T>`), so its source is all that says whose it
/// is.
fn is_library_source(at: &str) -> bool {
    if at.contains("/registry/src/") || at.contains("/git/checkouts/") {
        return true;
    }
    let file = resolved(at);
    // A crate of crashtest's keeps its library under `src/` (its tests are code that uses
    // crashtest, like the program's).
    let in_crashtest = crashtest_crates()
        .and_then(|crates| file.strip_prefix(crates).ok())
        .is_some_and(|inside| {
            inside
                .components()
                .nth(1)
                .is_some_and(|dir| dir.as_os_str() == "src")
        });
    in_crashtest || in_stand_in(&file)
}

/// Whether `file` is in the tokio stand-in or the tokio it re-exports, which `cargo crashtest
/// tokio setup` writes to `crashtest-tokio/tokio-VERSION/` and
/// `crashtest-tokio/real-tokio-VERSION/`.
fn in_stand_in(file: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = file.components().map(|part| part.as_os_str()).collect();
    parts.windows(2).any(|pair| {
        pair[0] == "crashtest-tokio"
            && pair[1]
                .to_str()
                .is_some_and(|dir| dir.starts_with("tokio-") || dir.starts_with("real-tokio-"))
    })
}

/// The frames of `trace`, innermost first, as std prints them: `N: symbol`, each followed by
/// its `at file:line:column` when known.
pub fn frames(trace: &Backtrace) -> Vec<Frame> {
    let printed = trace.to_string();
    let mut frames: Vec<Frame> = Vec::new();
    for line in printed.lines().map(str::trim) {
        if let Some(at) = line.strip_prefix("at ") {
            if let Some(frame) = frames.last_mut() {
                frame.at = Some(at.to_owned());
            }
        } else if let Some((index, symbol)) = line.split_once(": ")
            && index.parse::<u32>().is_ok()
        {
            frames.push(Frame {
                symbol: symbol.to_owned(),
                at: None,
            });
        }
    }
    frames
}

/// The frames below the first whose symbol ends with `below` (the function that took the
/// backtrace), or all of them if none does.
///
/// ```
/// use crashtest_core::plumbing::call_site::{Frame, below};
/// let frame = |symbol: &str, at: &str| Frame { symbol: symbol.into(), at: Some(at.into()) };
/// let frames = [
///     frame("guard::pthread_create", "/src/guard.rs:1:1"),
///     frame("std::thread::spawn", "/rustc/abc/library/std/src/thread/mod.rs:7:3"),
///     frame("pool::start", "/h/.cargo/registry/src/index-1/pool-0.1.0/src/lib.rs:9:5"),
///     frame("app::main", "/h/app/src/main.rs:3:5"),
/// ];
/// let callers = below(&frames, "pthread_create");
/// assert_eq!(callers.iter().find(|f| !f.is_runtimes()).unwrap().symbol, "pool::start");
/// assert_eq!(callers.iter().find(|f| f.is_programs()).unwrap().symbol, "app::main");
/// ```
pub fn below<'a>(frames: &'a [Frame], symbol: &str) -> &'a [Frame] {
    let start = frames
        .iter()
        .position(|frame| frame.symbol.ends_with(symbol))
        .map_or(0, |found| found + 1);
    &frames[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str) -> Frame {
        Frame {
            symbol: "{async_fn#0}".to_owned(),
            at: Some(format!("{path}:1:1")),
        }
    }

    #[test]
    fn an_inlined_frame_is_told_by_its_source() {
        let ours = |rest: &str| at(&crashtest_crates().unwrap().join(rest).display().to_string());
        assert!(at("/home/me/app/src/queue.rs").is_programs());
        assert!(!at("/rustc/0123/library/core/src/future/mod.rs").is_programs());
        assert!(
            !at("/home/me/.cargo/registry/src/index.crates.io-1/h2-0.4.0/src/lib.rs").is_programs()
        );
        assert!(!at("/home/me/.cargo/git/checkouts/raft-1/abc/src/lib.rs").is_programs());
        assert!(
            !at("/home/me/app/target/crashtest-tokio/real-tokio-1.54.1/src/sync/notify.rs")
                .is_programs()
        );
        assert!(
            !at("/home/me/app/target/crashtest-tokio/tokio-1.54.1/src/task/join.rs").is_programs()
        );
        // crashtest's libraries are its own; its tests use it as a program does.
        assert!(!ours("crashtest-net/src/tcp/stream.rs").is_programs());
        assert!(ours("crashtest-net/tests/tcp.rs").is_programs());
    }

    #[test]
    fn every_library_crate_of_crashtest_is_named_as_its_own() {
        for entry in std::fs::read_dir(crashtest_crates().unwrap()).unwrap() {
            let dir = entry.unwrap().path();
            if dir.join("src/lib.rs").exists() {
                let name = dir.file_name().unwrap().to_str().unwrap().replace('-', "_");
                assert!(
                    CRASHTEST_CRATES.contains(&name.as_str()),
                    "{name} is not listed"
                );
            }
        }
    }

    #[test]
    fn a_symbol_without_a_source_is_told_by_its_path() {
        let symbol = |symbol: &str| Frame {
            symbol: symbol.to_owned(),
            at: None,
        };
        assert!(symbol("app::queue::next::{{closure}}").is_programs());
        assert!(!symbol("<core::pin::Pin<P> as core::future::future::Future>::poll").is_programs());
        assert!(!symbol("tokio::sync::notify::Notified::poll_notified").is_programs());
        assert!(!symbol("crashtest_net::tcp::stream::SimStream::poll_read").is_programs());
        // A program's crate may share crashtest's prefix.
        assert!(symbol("crashtest_demo::queue::next::{{closure}}").is_programs());
    }
}
