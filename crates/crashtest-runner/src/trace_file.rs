//! A run's trace streamed to its file (`CRASHTEST_TRACE`) as the run goes, so that a run that
//! takes its process down still leaves every event before its death.
//!
//! Events become trace lines in a bounded buffer that is written out when it fills, at every
//! event after which the process may die (a fault, a kill, a panic: the core flushes there),
//! and at the end of the run. A death the program causes does not go through any of those, so
//! the buffer is also written out on the way down: by an `atexit` handler
//! (`std::process::exit`), and by handlers for the signals of a crash (abort, which the
//! watchdog uses too; segfault; bus error; illegal instruction; arithmetic fault). Those
//! handlers write what the buffer holds with the one `write` a file descriptor offers, then
//! give the signal back to the handler that was there before (Rust's stack overflow report,
//! or the default: the process dies as it would have).
//!
//! A run that dies mid-write can leave its last line cut; readers skip a cut last line.
//! Only a `SIGKILL` from outside loses events: at most one buffer's worth.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use crashtest_core::node::NodeId;
use crashtest_core::trace::{Event, EventKind, TraceStream};
use crashtest_protocol::{TraceKind, TraceLine};

/// How many bytes of trace lines wait before a write: large enough that writes cost little
/// next to the run, small enough that a `SIGKILL` loses only the last few hundred events.
const BUFFER: usize = 64 * 1024;

/// A trace file being written.
#[derive(Debug)]
pub(crate) struct TraceFile {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    buffer: Vec<u8>,
    /// Node names by index, as the run named them.
    names: Vec<String>,
    /// The first write error, reported when the run ends (a run is not stopped for it).
    error: Option<io::Error>,
}

impl State {
    fn write_out(&mut self) {
        if self.buffer.is_empty() {
            return;
        }
        if let Err(e) = self.file.write_all(&self.buffer) {
            self.error.get_or_insert(e);
        }
        self.buffer.clear();
    }
}

/// Fails the test: its trace cannot be written to `path`.
fn cannot_write(path: &Path, e: io::Error) -> ! {
    panic!("crashtest: cannot write the trace to {path:?}: {e}")
}

/// Every trace file being written in this process, for the handlers of a dying process.
static OPEN: Mutex<Vec<Weak<TraceFile>>> = Mutex::new(Vec::new());

impl TraceFile {
    /// Creates (or empties) the file at `path` for a run's trace.
    pub(crate) fn create(path: &Path) -> io::Result<Arc<TraceFile>> {
        let file = File::create(path)?;
        let trace = Arc::new(TraceFile {
            state: Mutex::new(State {
                file,
                buffer: Vec::with_capacity(BUFFER + 1024),
                names: Vec::new(),
                error: None,
            }),
        });
        on_death::install();
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|weak| weak.strong_count() > 0);
        open.push(Arc::downgrade(&trace));
        Ok(trace)
    }

    /// [`TraceFile::create`] for a test's `CRASHTEST_TRACE`: a file that cannot be made fails
    /// the test, naming it.
    pub(crate) fn create_or_fail(path: &Path) -> Arc<TraceFile> {
        TraceFile::create(path).unwrap_or_else(|e| cannot_write(path, e))
    }

    /// [`TraceFile::finish`] for a test's `CRASHTEST_TRACE` at `path`: an error fails the
    /// test, naming the file.
    pub(crate) fn finish_or_fail(&self, path: &Path) {
        self.finish().unwrap_or_else(|e| cannot_write(path, e));
    }

    /// Writes out what is buffered; returns the first error the file gave, if any.
    pub(crate) fn finish(&self) -> io::Result<()> {
        let mut state = self.lock();
        state.write_out();
        match state.error.take() {
            Some(e) => Err(e),
            None => state.file.flush(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes out what is buffered if no one holds the buffer (a dying process's last act:
    /// it must not wait on a lock the dying thread may hold).
    fn write_out_if_free(&self) {
        if let Ok(mut state) = self.state.try_lock() {
            state.write_out();
        }
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        self.lock().write_out();
    }
}

impl TraceStream for TraceFile {
    fn name_node(&self, node: NodeId, name: &str) {
        let mut state = self.lock();
        let index = node.index();
        if state.names.len() <= index {
            state.names.resize(index + 1, String::new());
        }
        state.names[index] = name.to_owned();
    }

    fn event(&self, event: &Event) {
        let mut state = self.lock();
        let name = state
            .names
            .get(event.node.index())
            .map_or("?", String::as_str);
        let line = trace_line(event, name);
        let State { buffer, .. } = &mut *state;
        serde_json::to_writer(&mut *buffer, &line).expect("a trace line serializes");
        buffer.push(b'\n');
        if state.buffer.len() >= BUFFER {
            state.write_out();
        }
    }

    fn flush(&self) {
        self.lock().write_out();
    }
}

/// An event as the trace file's line.
fn trace_line(event: &Event, node_name: &str) -> TraceLine {
    let (source, words) = match &event.kind {
        EventKind::Note { source, words, .. } => (Some(*source), Some(*words)),
        _ => (None, None),
    };
    TraceLine {
        index: event.index,
        time_ns: event.time_ns,
        node: event.node.index(),
        node_name: node_name.to_owned(),
        kind: kind(&event.kind),
        target: event.kind.target().map(|node| node.index()),
        detail: event.kind.to_string(),
        source: source.map(str::to_owned),
        words,
        text: event.to_string(),
    }
}

fn kind(kind: &EventKind) -> TraceKind {
    match kind {
        EventKind::Spawn { .. } => TraceKind::Spawn,
        EventKind::Poll { .. } => TraceKind::Poll,
        EventKind::Complete { .. } => TraceKind::Complete,
        EventKind::Cancel { .. } => TraceKind::Cancel,
        EventKind::ClockJump => TraceKind::ClockJump,
        EventKind::NodeCreate { .. } => TraceKind::Create,
        EventKind::NodeKill { .. } => TraceKind::Kill,
        EventKind::NodeRestart { .. } => TraceKind::Restart,
        EventKind::NodeUpgrade { .. } => TraceKind::Upgrade,
        EventKind::NodePause { .. } => TraceKind::Pause,
        EventKind::NodeResume { .. } => TraceKind::Resume,
        EventKind::ClockOffset { .. } => TraceKind::ClockOffset,
        EventKind::ClockDrift { .. } => TraceKind::ClockDrift,
        EventKind::Panic { .. } => TraceKind::Panic,
        EventKind::Note { .. } => TraceKind::Note,
        _ => TraceKind::Other,
    }
}

/// Writes out every open trace file's buffer: the process is dying.
fn write_out_all() {
    let Ok(open) = OPEN.try_lock() else { return };
    for trace in open.iter().filter_map(Weak::upgrade) {
        trace.write_out_if_free();
    }
}

#[cfg(unix)]
mod on_death {
    //! The handlers that write the trace out when the process dies without unwinding.

    use std::sync::Once;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The signals of a crash the program brings on itself.
    const SIGNALS: [libc::c_int; 5] = [
        libc::SIGABRT,
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
    ];

    /// The handler each signal had before ours, as `sigaction` returned it, boxed and leaked
    /// (a handler cannot allocate); 0 until installed.
    static PREVIOUS: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

    pub(super) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            // SAFETY: `at_exit` is an `extern "C" fn()` that never unwinds.
            unsafe { libc::atexit(at_exit) };
            for (signal, previous) in SIGNALS.iter().zip(&PREVIOUS) {
                // SAFETY: a zeroed sigaction is a valid value to fill in; `on_signal` has the
                // three-argument form `SA_SIGINFO` announces.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    let handler: extern "C" fn(
                        libc::c_int,
                        *mut libc::siginfo_t,
                        *mut libc::c_void,
                    ) = on_signal;
                    action.sa_sigaction = handler as usize;
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut action.sa_mask);
                    let old = Box::into_raw(Box::new(std::mem::zeroed::<libc::sigaction>()));
                    if libc::sigaction(*signal, &action, old) == 0 {
                        previous.store(old as usize, Ordering::SeqCst);
                    } else {
                        drop(Box::from_raw(old));
                    }
                }
            }
        });
    }

    extern "C" fn at_exit() {
        super::write_out_all();
    }

    extern "C" fn on_signal(
        signal: libc::c_int,
        _info: *mut libc::siginfo_t,
        _context: *mut libc::c_void,
    ) {
        super::write_out_all();
        let Some(index) = SIGNALS.iter().position(|s| *s == signal) else {
            return;
        };
        let previous = PREVIOUS[index].load(Ordering::SeqCst) as *const libc::sigaction;
        // SAFETY: `previous` is the action `sigaction` filled in at install, never freed.
        // Putting it back and returning re-runs the faulting instruction (or, for an abort,
        // glibc raises again), so the signal reaches the handler that was there before.
        unsafe {
            if previous.is_null() {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            } else {
                libc::sigaction(signal, previous, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(not(unix))]
mod on_death {
    /// Elsewhere a dying process loses the buffer; flushes at faults, kills and panics keep
    /// the trace up to the last of them.
    pub(super) fn install() {}
}
