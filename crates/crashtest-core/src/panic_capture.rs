//! Turns a panic in a simulated task into a failure report instead of noise on stderr.
//!
//! The process-wide panic hook is replaced once by one that, on a thread running a poll,
//! records the message and location for the failure report and prints nothing (a sweep of a
//! thousand seeds must not print a thousand backtraces); on any other thread it calls the hook
//! that was there before, so panics outside simulations look as usual.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// Replaces the panic hook once per process (see [`install`]).
static INSTALL: Once = Once::new();

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CAPTURED: RefCell<Option<Captured>> = const { RefCell::new(None) };
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
            CAPTURED.with(|c| *c.borrow_mut() = Some(Captured { message, location }));
        }));
    });
    // Every later catch relies on the hook being in place once this returns.
    assert!(INSTALL.is_completed(), "the panic hook is not installed");
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
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CAPTURING.with(|c| c.set(was));
    result.map_err(|payload| {
        // Without the hook the panic went to stderr and its location is lost.
        assert!(
            INSTALL.is_completed(),
            "a panic was caught before the panic hook was installed"
        );
        CAPTURED
            .with(|c| c.borrow_mut().take())
            .unwrap_or_else(|| Captured {
                message: payload_message(payload.as_ref()),
                location: None,
            })
    })
}
