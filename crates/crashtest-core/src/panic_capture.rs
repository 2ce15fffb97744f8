//! Turns a panic in a simulated task into a failure report instead of noise on stderr.
//!
//! The process-wide panic hook is replaced once by one that, on a thread running a poll,
//! records the message and location for the failure report and prints nothing (a sweep of a
//! thousand seeds must not print a thousand backtraces); on any other thread it calls the hook
//! that was there before, so panics outside simulations look as usual. The one panic it
//! prints is one std is about to abort on (see [`tell_of_the_abort`]).

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// Replaces the panic hook once per process (see [`install`]).
static INSTALL: Once = Once::new();

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CAPTURED: RefCell<Option<Captured>> = const { RefCell::new(None) };
    /// The last panics of a poll, each with the poll it came in (see `POLLS`).
    static RECENT: RefCell<Vec<(u64, String)>> = const { RefCell::new(Vec::new()) };
    /// Outermost catches begun on this thread: a count, so that a poll starts afresh without
    /// touching `RECENT` (every poll is a catch; only a panic writes there).
    static POLLS: Cell<u64> = const { Cell::new(0) };
}

/// A panic caught in a poll.
#[derive(Debug)]
pub(crate) struct Captured {
    pub(crate) message: String,
    pub(crate) location: Option<String>,
}

/// Installs the hook; later calls do nothing.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CAPTURING.with(Cell::get) {
                return previous(info);
            }
            let message = payload_message(info.payload());
            let location = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
            let captured = Captured { message, location };
            if CANNOT_UNWIND.contains(&captured.message.as_str()) {
                return tell_of_the_abort(&captured);
            }
            // A panic in the hook would abort the process: the thread's locals are read with
            // `try_with`, since `std::process::exit` destroys them before its exit handlers,
            // whose own panics come here.
            let poll = POLLS.with(Cell::get);
            let _ = RECENT.try_with(|recent| {
                if let Ok(mut recent) = recent.try_borrow_mut() {
                    recent.retain(|(of, _)| *of == poll);
                    if recent.len() == KEPT_RECENT {
                        recent.remove(0);
                    }
                    recent.push((poll, captured.to_string()));
                }
            });
            let _ = CAPTURED.try_with(|c| {
                if let Ok(mut slot) = c.try_borrow_mut() {
                    *slot = Some(captured);
                }
            });
        }));
    });
    // Every later catch relies on the hook being in place once this returns.
    assert!(INSTALL.is_completed(), "the panic hook is not installed");
}

/// The messages of std's panics that cannot unwind, on which it aborts the process right
/// after this hook: a destructor that panicked while its task unwound from an earlier panic
/// (say by unwrapping a lock the first poisoned), and a panic out of a function that cannot
/// unwind.
const CANNOT_UNWIND: [&str; 2] = [
    "panic in a destructor during cleanup",
    "panic in a function that cannot unwind",
];

/// The last panics of the current poll kept for [`tell_of_the_abort`], oldest first.
const KEPT_RECENT: usize = 4;

/// Prints what std's abort would hide: it aborts the process at once, with no word of the
/// panics before it, so the failure report never comes.
fn tell_of_the_abort(last: &Captured) {
    let poll = POLLS.with(Cell::get);
    let mut panics: Vec<String> = RECENT
        .try_with(|recent| {
            recent
                .try_borrow_mut()
                .map(|mut recent| std::mem::take(&mut *recent))
                .unwrap_or_default()
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|(of, _)| *of == poll)
        .map(|(_, panic)| panic)
        .collect();
    panics.push(last.to_string());
    let seed = crate::world::with(|w| w.seed())
        .map(|seed| format!(" at seed {seed}"))
        .unwrap_or_default();
    let told = format!(
        "crashtest: the process aborts{seed} on a panic that cannot unwind. The last panics \
         of the poll, oldest first: the failure is the first that the program did not catch, \
         and those after it came of it (often a destructor that unwraps a lock the failure \
         poisoned):\n    {}\n",
        panics.join("\n    ")
    );
    // Straight to the process's stderr: the test harness captures `eprintln!` to print it
    // after the test, which the abort never reaches.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), told.as_bytes());
}

impl std::fmt::Display for Captured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.location {
            Some(location) => write!(f, "panicked at {location}: {}", self.message),
            None => write!(f, "panicked: {}", self.message),
        }
    }
}

fn payload_message(payload: &dyn std::any::Any) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

/// Runs `f`, turning a panic into `Err` with its message and location.
#[inline]
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Captured> {
    let was = CAPTURING.with(|c| c.replace(true));
    // A poll's panics, from its start: a catch nested in it (a task aborted by a destructor
    // while the poll unwinds) is part of the same story.
    if !was {
        POLLS.with(|polls| polls.set(polls.get() + 1));
    }
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CAPTURING.with(|c| c.set(was));
    result.map_err(|payload| {
        // Without the hook the panic went to stderr and its location is lost.
        assert!(
            INSTALL.is_completed(),
            "a panic was caught before the panic hook was installed"
        );
        CAPTURED
            .try_with(|c| c.borrow_mut().take())
            .ok()
            .flatten()
            .unwrap_or_else(|| Captured {
                message: payload_message(payload.as_ref()),
                location: None,
            })
    })
}
