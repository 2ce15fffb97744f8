//! Per thread, whether the code running may change the host's files inside a simulation.
//!
//! Inside a simulation the determinism guards refuse calls that create, write, rename or
//! remove the host's files: such a change outlives the run, so a later seed, or the same
//! seed replayed, would start from a different host, and no crash model applies to it.
//! A few changes are made on purpose: crashtest's tokio stand-in makes and removes a
//! specimen file to obtain std's `Metadata`, and a test may dump a report to the host. Such
//! code runs inside [`with_host_files`], which the guards read through
//! [`host_files_allowed`].
//!
//! The permission is a depth counter, so scopes nest, and it is restored when the closure
//! unwinds, so a panic inside a scope does not leave the thread's host files open.

use crate::Nesting;

thread_local! {
    /// The [`with_host_files`] scopes open on this thread.
    static OPEN_SCOPES: Nesting = const { Nesting::new() };
}

/// Runs `f` with the host's files open to changes on this thread, even inside a simulation.
///
/// A change made here is the caller's responsibility: it must not feed back into the run,
/// or the run stops being a function of its seed.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("host-files-doc-{}", std::process::id()));
/// let made = crashtest_hooks::with_host_files(|| {
///     assert!(crashtest_hooks::host_files_allowed());
///     std::fs::create_dir(&dir)
/// });
/// made.unwrap();
/// assert!(!crashtest_hooks::host_files_allowed());
/// std::fs::remove_dir(&dir).unwrap();
/// ```
pub fn with_host_files<R>(f: impl FnOnce() -> R) -> R {
    Nesting::within(&OPEN_SCOPES, f)
}

/// True inside [`with_host_files`] on this thread. False on a thread whose thread-locals are
/// gone (a guard called from another thread-local's destructor).
///
/// ```
/// assert!(!crashtest_hooks::host_files_allowed());
/// ```
pub fn host_files_allowed() -> bool {
    Nesting::is_open(&OPEN_SCOPES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_close_on_unwind() {
        with_host_files(|| {
            with_host_files(|| assert!(host_files_allowed()));
            assert!(host_files_allowed(), "the outer scope is still open");
        });
        assert!(!host_files_allowed());
        let unwound = std::panic::catch_unwind(|| with_host_files(|| panic!("inside")));
        assert!(unwound.is_err());
        assert!(!host_files_allowed(), "an unwind closes the scope");
    }
}
