//! How a run names the code it ran: a commit, or, outside a git repository with no
//! `CRASHTEST_COMMIT`, a digest of the test executable.
//!
//! A results file's header and a failure report name the code the same way, so that a user
//! can tell from either which build a seed's outcome belongs to. The digest is FNV-1a over
//! the executable's bytes: the same on every build and platform, and no dependency.

use std::path::Path;

/// FNV-1a, 64 bits.
///
/// ```
/// use crashtest_protocol::code::fnv1a;
/// assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
/// assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
/// assert_ne!(fnv1a(b"ab"), fnv1a(b"ba"));
/// ```
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The name of code that no commit names: `unknown commit, executable 0123...` from the test
/// executable at `exe`, or `unknown` if it cannot be read. A bare `unknown` would let a sweep
/// resume, or a merge join, results of code changed since.
///
/// ```
/// let name = crashtest_protocol::code::unknown_commit(&std::env::current_exe().unwrap());
/// assert!(name.starts_with("unknown commit, executable "));
/// ```
pub fn unknown_commit(exe: &Path) -> String {
    match std::fs::read(exe) {
        Ok(bytes) => format!("unknown commit, executable {:016x}", fnv1a(&bytes)),
        Err(_) => "unknown".to_owned(),
    }
}
