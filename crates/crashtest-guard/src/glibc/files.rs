//! Host files: no changes to the host's file system inside a simulation.
//!
//! A simulated node has its own disk, with a crash model (crashtest's `fs`, or `tokio::fs`
//! through the tokio stand-in). A change to the host's files through std's or libc's calls
//! escapes both: it outlives the run, so a later seed, or the same seed replayed, starts from
//! what it left and the run is no longer a function of its seed; and no kill ever tears or
//! loses it, so the crash bugs the simulation exists to find cannot happen there. Inside a
//! simulation the calls that change the host's files therefore fail the run with a message
//! that names the call, the path and what to use instead, and return -1 with `EROFS` (the
//! host's file system is read-only to a simulated node):
//! - `open`, `open64`, `openat`, `openat64` asked to write, create or truncate (`O_WRONLY`,
//!   `O_RDWR`, `O_CREAT`, `O_TRUNC`, `O_TMPFILE`), and `creat`, `creat64` (std's
//!   `File::create`, `OpenOptions`, `fs::write`, `fs::copy`);
//! - `mkdir`, `mkdirat`, `rmdir`, `unlink`, `unlinkat`, `rename`, `renameat`, `renameat2`,
//!   `link`, `linkat`, `symlink`, `symlinkat`, `truncate`, `truncate64`, `chmod`, `fchmodat`
//!   (std's `create_dir`, `remove_file`, `remove_dir_all`, `rename`, `hard_link`, `symlink`,
//!   `set_permissions`).
//!
//! A call naming two paths (`rename`, `link`) is refused unless both pass. Reading the
//! host's files passes: configuration, certificates and the program's own executable (read
//! for a backtrace) are the same on every run. So do the stateless devices, named exactly
//! (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty`, `/dev/stdin`, `/dev/stdout`,
//! `/dev/stderr`, `/dev/random`, `/dev/urandom`): what is written to them is gone. Any other
//! path under `/dev/` (shared memory, message queues, block devices) is host state like a
//! file, and a path with `..` never passes as a device. Code that changes a host file on
//! purpose runs inside `crashtest_hooks::with_host_files` (the stand-in's metadata specimen
//! does).
//!
//! Calls on a descriptor that is already open (`write`, `pwrite`, `ftruncate`, `fsync`) pass:
//! a file opened for writing inside a simulation was refused at its `open`, and one opened
//! before the run (a trace file, a log) is the test's own. Changes to a file's owner, times
//! or extended attributes by path (`chown`, `utimensat`, `setxattr`), special files
//! (`mknod`, `mkfifo`) and a Unix socket's file (`bind`) are not guarded.
//!
//! Outside a simulation every call goes to libc after one thread-local read.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::path::{Component, Path, PathBuf};

use libc::{mode_t, off_t, off64_t};

use super::next::Next;

/// Why the run failed and what to do instead, for `call` on `paths`.
fn message(call: &str, paths: &[String]) -> String {
    format!(
        "{call}({}) was called inside the simulation: it would change the host's files. \
         A host file outlives the run (a later seed, or this one replayed, would start from \
         what it left) and no simulated crash ever tears or loses it. Keep a node's files on \
         its simulated disk: tokio::fs through crashtest's tokio stand-in, crashtest::fs, or \
         crashtest::fs::sync in blocking code. To change a host file on purpose (a debug \
         dump), wrap the call in crashtest::with_host_files(..).",
        paths
            .iter()
            .map(|path| format!("{path:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Devices that hold no host state: what is written to them is gone, so no later run can
/// read it back. Only these exact paths (after `.` and repeated slashes are dropped) pass;
/// a path with `..` never does, since it can lead anywhere.
const STATELESS_DEVICES: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/random",
    "/dev/urandom",
];

/// True if changing `path` changes no host state a run could read back.
fn stateless(path: &str) -> bool {
    let path = Path::new(path);
    if !path.is_absolute() || path.components().any(|part| part == Component::ParentDir) {
        return false;
    }
    let normal: PathBuf = path.components().collect();
    STATELESS_DEVICES
        .iter()
        .any(|device| normal == Path::new(device))
}

/// True if `call` on `paths` must be refused: it `changes` the host's files, a simulation
/// runs on this thread, the caller did not open a
/// [`with_host_files`](crashtest_hooks::with_host_files) scope, and some path is not a
/// stateless device. Fails the run then, and sets `errno`.
///
/// # Safety
///
/// Each path is null or a NUL-terminated string, as the C call's contract requires.
unsafe fn refused(call: &str, paths: &[*const c_char], changes: bool) -> bool {
    if !changes || !super::in_simulation() || crashtest_hooks::host_files_allowed() {
        return false;
    }
    let paths: Vec<String> = paths
        .iter()
        .map(|&path| {
            if path.is_null() {
                String::new()
            } else {
                // SAFETY: non-null, and NUL-terminated by the caller's contract.
                unsafe { CStr::from_ptr(path) }
                    .to_string_lossy()
                    .into_owned()
            }
        })
        .collect();
    if paths.iter().all(|path| stateless(path)) {
        return false;
    }
    super::fail(message(call, &paths));
    super::set_errno(libc::EROFS);
    true
}

/// True if `open` flags ask to change the file.
fn changes(flags: c_int) -> bool {
    // O_TMPFILE includes O_DIRECTORY's bit: test it whole.
    flags & (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) != 0
        || flags & libc::O_TMPFILE == libc::O_TMPFILE
}

// `open` and `openat` are variadic in C: the mode follows only when the flags create a file.
// On the supported targets a variadic integer argument travels in the register an ordinary
// third (or fourth) argument would, so a guard that declares the mode reads it when the
// caller passed one and reads a meaningless value otherwise, which libc ignores, as it
// ignores a mode it was not asked to use. It is forwarded as C's default promotion of
// `mode_t` (an unsigned int), which is how the caller passed it.
type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
type PathModeFn = unsafe extern "C" fn(*const c_char, mode_t) -> c_int;
type AtPathModeFn = unsafe extern "C" fn(c_int, *const c_char, mode_t) -> c_int;
type PathFn = unsafe extern "C" fn(*const c_char) -> c_int;
type AtPathFlagsFn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
type TwoPathsFn = unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
type AtTwoPathsFn = unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char) -> c_int;
type Renameat2Fn =
    unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int;
type LinkatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int;
type SymlinkatFn = unsafe extern "C" fn(*const c_char, c_int, *const c_char) -> c_int;
type TruncateFn = unsafe extern "C" fn(*const c_char, off_t) -> c_int;
type Truncate64Fn = unsafe extern "C" fn(*const c_char, off64_t) -> c_int;
type FchmodatFn = unsafe extern "C" fn(c_int, *const c_char, mode_t, c_int) -> c_int;

/// Defines a guard `$name` (libc's symbol `$symbol`) with the C signature
/// `($arg: $ty, ..) -> c_int`, which refuses the call on the path arguments `$path` inside a
/// simulation when `$changes` holds, and otherwise forwards to libc through `$next`, typed
/// `$fn`.
macro_rules! guard {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident: $fn:ty,
        ($($arg:ident: $ty:ty),*), paths [$($path:ident),+], when $changes:expr) => {
        // SAFETY: `$fn` is the C declaration of this glibc function.
        static $next: Next<$fn> = unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function: every path is a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the path is the caller's, NUL-terminated by the C contract.
            if unsafe { refused(stringify!($name), &[$($path),+], $changes) } {
                return -1;
            }
            // SAFETY: the caller's arguments, unchanged, to the function this one hides.
            unsafe { $next.get()($($arg),*) }
        }
    };
}

guard!(
    /// `open(2)`: refused inside a simulation when it would write, create or truncate.
    open = c"open", REAL_OPEN: OpenFn, (path: *const c_char, flags: c_int, mode: c_uint),
    paths [path],
    when changes(flags)
);
guard!(
    /// `open64`: as [`open`].
    open64 = c"open64", REAL_OPEN64: OpenFn,
    (path: *const c_char, flags: c_int, mode: c_uint), paths [path],
    when changes(flags)
);
guard!(
    /// `openat(2)`: as [`open`].
    openat = c"openat", REAL_OPENAT: OpenatFn,
    (dir: c_int, path: *const c_char, flags: c_int, mode: c_uint), paths [path],
    when changes(flags)
);
guard!(
    /// `openat64`: as [`open`].
    openat64 = c"openat64", REAL_OPENAT64: OpenatFn,
    (dir: c_int, path: *const c_char, flags: c_int, mode: c_uint), paths [path],
    when changes(flags)
);
guard!(
    /// `creat(2)`: refused inside a simulation.
    creat = c"creat", REAL_CREAT: PathModeFn,
    (path: *const c_char, mode: mode_t), paths [path], when true
);
guard!(
    /// `creat64`: refused inside a simulation.
    creat64 = c"creat64", REAL_CREAT64: PathModeFn,
    (path: *const c_char, mode: mode_t), paths [path], when true
);
guard!(
    /// `mkdir(2)`: refused inside a simulation.
    mkdir = c"mkdir", REAL_MKDIR: PathModeFn,
    (path: *const c_char, mode: mode_t), paths [path], when true
);
guard!(
    /// `mkdirat(2)`: refused inside a simulation.
    mkdirat = c"mkdirat", REAL_MKDIRAT: AtPathModeFn,
    (dir: c_int, path: *const c_char, mode: mode_t),
    paths [path], when true
);
guard!(
    /// `rmdir(2)`: refused inside a simulation.
    rmdir = c"rmdir", REAL_RMDIR: PathFn, (path: *const c_char), paths [path], when true
);
guard!(
    /// `unlink(2)`: refused inside a simulation.
    unlink = c"unlink", REAL_UNLINK: PathFn, (path: *const c_char), paths [path], when true
);
guard!(
    /// `unlinkat(2)`: refused inside a simulation.
    unlinkat = c"unlinkat", REAL_UNLINKAT: AtPathFlagsFn,
    (dir: c_int, path: *const c_char, flags: c_int),
    paths [path], when true
);
guard!(
    /// `rename(2)`: refused inside a simulation.
    rename = c"rename", REAL_RENAME: TwoPathsFn,
    (from: *const c_char, to: *const c_char), paths [from, to], when true
);
guard!(
    /// `renameat(2)`: refused inside a simulation.
    renameat = c"renameat", REAL_RENAMEAT: AtTwoPathsFn,
    (from_dir: c_int, from: *const c_char, to_dir: c_int, to: *const c_char),
    paths [from, to], when true
);
guard!(
    /// `renameat2(2)`: refused inside a simulation.
    renameat2 = c"renameat2", REAL_RENAMEAT2: Renameat2Fn,
    (from_dir: c_int, from: *const c_char, to_dir: c_int, to: *const c_char, flags: c_uint),
    paths [from, to], when true
);
guard!(
    /// `link(2)`: refused inside a simulation.
    link = c"link", REAL_LINK: TwoPathsFn,
    (from: *const c_char, to: *const c_char), paths [from, to], when true
);
guard!(
    /// `linkat(2)`: refused inside a simulation.
    linkat = c"linkat", REAL_LINKAT: LinkatFn,
    (from_dir: c_int, from: *const c_char, to_dir: c_int, to: *const c_char, flags: c_int),
    paths [from, to], when true
);
guard!(
    /// `symlink(2)`: refused inside a simulation.
    symlink = c"symlink", REAL_SYMLINK: TwoPathsFn,
    (target: *const c_char, path: *const c_char), paths [path], when true
);
guard!(
    /// `symlinkat(2)`: refused inside a simulation.
    symlinkat = c"symlinkat", REAL_SYMLINKAT: SymlinkatFn,
    (target: *const c_char, dir: c_int, path: *const c_char), paths [path], when true
);
guard!(
    /// `truncate(2)`: refused inside a simulation.
    truncate = c"truncate", REAL_TRUNCATE: TruncateFn,
    (path: *const c_char, len: off_t), paths [path], when true
);
guard!(
    /// `truncate64`: refused inside a simulation.
    truncate64 = c"truncate64", REAL_TRUNCATE64: Truncate64Fn,
    (path: *const c_char, len: off64_t), paths [path], when true
);
guard!(
    /// `chmod(2)`: refused inside a simulation.
    chmod = c"chmod", REAL_CHMOD: PathModeFn,
    (path: *const c_char, mode: mode_t), paths [path], when true
);
guard!(
    /// `fchmodat(2)`: refused inside a simulation.
    fchmodat = c"fchmodat", REAL_FCHMODAT: FchmodatFn,
    (dir: c_int, path: *const c_char, mode: mode_t, flags: c_int), paths [path], when true
);

/// The guards, for [`super::link`].
pub(super) fn symbols() -> [*const (); 22] {
    [
        open as *const (),
        open64 as *const (),
        openat as *const (),
        openat64 as *const (),
        creat as *const (),
        creat64 as *const (),
        mkdir as *const (),
        mkdirat as *const (),
        rmdir as *const (),
        unlink as *const (),
        unlinkat as *const (),
        rename as *const (),
        renameat as *const (),
        renameat2 as *const (),
        link as *const (),
        linkat as *const (),
        symlink as *const (),
        symlinkat as *const (),
        truncate as *const (),
        truncate64 as *const (),
        chmod as *const (),
        fchmodat as *const (),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_stateless_devices_pass() {
        for device in ["/dev/null", "/dev//null", "/dev/./urandom", "/dev/stderr"] {
            assert!(stateless(device), "{device}");
        }
        for host_state in [
            "/dev/shm/x",
            "/dev//shm/x",
            "/dev/shm",
            "/dev/../tmp/x",
            "/dev/null/../../tmp/x",
            "/dev/sda",
            "dev/null",
            "/tmp/x",
            "",
        ] {
            assert!(!stateless(host_state), "{host_state}");
        }
    }

    #[test]
    fn only_flags_that_write_create_or_truncate_change_a_file() {
        assert!(!changes(libc::O_RDONLY | libc::O_CLOEXEC));
        assert!(!changes(
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW
        ));
        assert!(changes(libc::O_WRONLY));
        assert!(changes(libc::O_RDWR | libc::O_CLOEXEC));
        assert!(changes(libc::O_RDONLY | libc::O_CREAT));
        assert!(changes(libc::O_WRONLY | libc::O_TRUNC));
        assert!(changes(libc::O_RDWR | libc::O_TMPFILE));
    }
}
