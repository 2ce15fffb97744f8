//! Errors built as the real system calls build them.
//!
//! On Unix a simulated error is made from the raw OS error number the real call would set
//! (`ENOENT`, `ECONNRESET`, `EADDRINUSE`...), so that its `ErrorKind`, `raw_os_error()` and
//! message are the real call's: code that matches on any of them (hyper and many retry loops
//! look at the raw number) behaves the same in simulation and in production. Elsewhere the
//! error carries the same `ErrorKind` and a plain message. The simulated file system and
//! network both build their errors here, so the rule is written once.

use std::io::{self, ErrorKind};

/// The error the real call gives for errno `code`. On Unix its kind must be `kind` (asserted,
/// so that a platform whose kinds differ is caught rather than lied to); `ErrorKind::Other`
/// stands for a number std gives no kind of its own (`EMSGSIZE`), whose kind is then std's.
///
/// ```
/// use std::io::ErrorKind;
/// let refused = crashtest_io::os_error::os_error(111, ErrorKind::ConnectionRefused, "Connection refused");
/// assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
/// # #[cfg(target_os = "linux")]
/// assert_eq!(refused.raw_os_error(), Some(111));
/// ```
#[cfg(unix)]
pub fn os_error(code: i32, kind: ErrorKind, _message: &str) -> io::Error {
    assert!(code > 0, "an errno is positive");
    let error = io::Error::from_raw_os_error(code);
    assert_eq!(
        error.raw_os_error(),
        Some(code),
        "the error carries the errno the real call sets"
    );
    assert!(
        kind == ErrorKind::Other || error.kind() == kind,
        "errno {code} has kind {:?} here, not {kind:?}",
        error.kind()
    );
    // `write_all`, `read_exact` and most retry loops retry these: an injected fault that
    // looked like one would be retried forever instead of reaching the program.
    assert!(
        !matches!(error.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock),
        "errno {code} would read as a transient condition, not a failure"
    );
    error
}

/// The error of `kind` with `message`: elsewhere than Unix the numbers are not the real
/// call's.
#[cfg(not(unix))]
pub fn os_error(code: i32, kind: ErrorKind, message: &str) -> io::Error {
    assert!(code > 0, "an errno is positive");
    io::Error::new(kind, message)
}
