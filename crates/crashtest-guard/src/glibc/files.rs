//! Host files: no changes to the host's file system inside a simulation.
//!
//! A simulated node has its own disk, with a crash model, and std's and libc's file calls
//! reach it through the guards of [`super::disk`]. A change to the host's files escapes it:
//! it outlives the run, so a later seed, or the same seed replayed, starts from what it left
//! and the run is no longer a function of its seed; and no kill ever tears or loses it, so
//! the crash bugs the simulation exists to find cannot happen there. Inside a simulation the
//! changes the disk does not take therefore fail the run with a message that names the call,
//! the path and what to use instead, and return -1 with `EROFS` (the host's file system is
//! read-only to a simulated node):
//! - any change [`super::disk::route`] leaves to the host: one outside a node, or relative to
//!   a directory descriptor of the host (`openat`, `mkdirat`, `unlinkat`, `renameat`, ...);
//! - symbolic links: `symlink`, `symlinkat`; and `lchmod`;
//! - a host entry's owner, times and extended attributes by path: `chown`, `lchown`,
//!   `fchownat`, `utime`, `utimes`, `lutimes`, `futimesat`, `setxattr`, `lsetxattr`,
//!   `removexattr`, `lremovexattr` (std's `unix::fs::chown`, the `filetime` and `xattr`
//!   crates). On an entry of the disk they are the disk's ([`super::disk::Unkept`]): an
//!   owner is accepted and kept nowhere, a time set, an extended attribute refused with
//!   `EOPNOTSUPP`;
//! - special files: `mknod`, `mknodat`, `mkfifo`, `mkfifoat`;
//! - changes through a descriptor of a host file, which a file opened only for reading
//!   allows: `fchmod`, `fchown`, `futimens`, `futimes`, `fsetxattr`, `fremovexattr` (std's
//!   `File::set_permissions`, `File::set_times`, `File::set_modified`), judged by the path
//!   the descriptor was opened at (on a simulated file's descriptor they are the disk's, as
//!   above);
//! - C's stdio and temporary files, which glibc opens without going through `open`: `fopen`,
//!   `fopen64`, `freopen`, `freopen64` asked to write, append or update (as glibc reads the
//!   mode: `w` or `a` first, or `+` among the next six letters; `freopen` with no path
//!   reopens the stream's own file), and `mkstemp`, `mkostemp`, `mkstemps`, `mkostemps` (and
//!   their `64` forms), `mkdtemp`, `tmpfile`, `tmpfile64`. These return a null pointer or -1,
//!   as they do when they fail.
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
//! Writes through a host descriptor that is already open (`write`, `pwrite`, `ftruncate`,
//! `fsync`) pass: a file opened for writing inside a simulation is the disk's, and one opened
//! before the run (a trace file, a log) is the test's own. A Unix socket's file (`bind`) is
//! not guarded.
//!
//! Outside a simulation every call goes to libc after one thread-local read.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::{Component, Path, PathBuf};

use libc::{FILE, dev_t, gid_t, mode_t, size_t, timeval, uid_t};

use super::next::Next;

/// Why the run failed and what to do instead, for `call` on `paths`.
fn message(call: &str, paths: &[String]) -> String {
    format!(
        "{call}({}) was called inside the simulation: it would change the host's files, and \
         the node's simulated disk does not model it. A host file outlives the run (a later \
         seed, or this one replayed, would start from what it left) and no simulated crash \
         ever tears or loses it. std::fs's files, directories, renames, links, modes and \
         times live on the node's simulated disk; symbolic links, owners, extended \
         attributes, special files, C's stdio writes, mkstemp and changes through a host \
         file's descriptor do not: keep to the calls the disk models (std::fs, tokio::fs \
         through crashtest's tokio stand-in, crashtest::fs). To change a host file on \
         purpose (a debug dump), wrap the call in crashtest::with_host_files(..).",
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
pub(super) fn stateless(path: &str) -> bool {
    let path = Path::new(path);
    if !path.is_absolute() || path.components().any(|part| part == Component::ParentDir) {
        return false;
    }
    let normal: PathBuf = path.components().collect();
    STATELESS_DEVICES
        .iter()
        .any(|device| normal == Path::new(device))
}

/// True if a change by `call` to the host's files at the paths `named` gives must be
/// refused: a simulation runs on this thread, the caller did not open a
/// [`with_host_files`](crashtest_hooks::with_host_files) scope, and some path is not a
/// stateless device. Fails the run then, and sets `errno`. The paths are named only once
/// the call is known to need them.
fn refused_change(call: &str, named: impl FnOnce() -> Vec<String>) -> bool {
    if !super::in_simulation() || crashtest_hooks::host_files_allowed() {
        return false;
    }
    let paths = named();
    if paths.iter().all(|path| stateless(path)) {
        return false;
    }
    super::fail(message(call, &paths));
    super::set_errno(libc::EROFS);
    true
}

/// True if `call` on `paths` must be refused: it `changes` the host's files, and
/// [`refused_change`] refuses it.
///
/// # Safety
///
/// Each path is null or a NUL-terminated string, as the C call's contract requires.
pub(super) unsafe fn refused(call: &str, paths: &[*const c_char], changes: bool) -> bool {
    changes
        && refused_change(call, || {
            paths
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
                .collect()
        })
}

/// True if a descriptor-based change to `fd`'s entry must be refused: the descriptor's file
/// is the host's (no simulated file has a descriptor), so [`refused_change`] judges the path
/// the descriptor was opened at.
pub(super) fn refused_descriptor(call: &str, fd: c_int) -> bool {
    refused_change(call, || {
        vec![super::descriptor_path(fd).map_or_else(
            || format!("descriptor {fd}"),
            |path| path.to_string_lossy().into_owned(),
        )]
    })
}

/// True if a stdio `mode` (`"r"`, `"w+"`, `"ab"`, ...) asks to write, create or truncate.
///
/// # Safety
///
/// `mode` is null or a NUL-terminated string.
unsafe fn stdio_changes(mode: *const c_char) -> bool {
    if mode.is_null() {
        return false;
    }
    // SAFETY: non-null, and NUL-terminated by the caller's contract.
    stdio_mode_writes(unsafe { CStr::from_ptr(mode) }.to_bytes())
}

/// As glibc reads a stdio mode: its first letter opens to read (`r`), write (`w`) or append
/// (`a`), anything else fails; a `+` among the next six letters, before a `,`, adds
/// writing; other letters are ignored.
fn stdio_mode_writes(mode: &[u8]) -> bool {
    match mode.split_first() {
        Some((b'w' | b'a', _)) => true,
        Some((b'r', rest)) => rest
            .iter()
            .take(6)
            .take_while(|&&letter| letter != b',')
            .any(|&letter| letter == b'+'),
        _ => false,
    }
}

/// True if `open` flags ask to change the file.
pub(super) fn changes(flags: c_int) -> bool {
    // O_TMPFILE includes O_DIRECTORY's bit: test it whole.
    flags & (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) != 0
        || flags & libc::O_TMPFILE == libc::O_TMPFILE
}

type PathModeFn = unsafe extern "C" fn(*const c_char, mode_t) -> c_int;
type AtPathModeFn = unsafe extern "C" fn(c_int, *const c_char, mode_t) -> c_int;
type TwoPathsFn = unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
type SymlinkatFn = unsafe extern "C" fn(*const c_char, c_int, *const c_char) -> c_int;
type ChownFn = unsafe extern "C" fn(*const c_char, uid_t, gid_t) -> c_int;
type FchownatFn = unsafe extern "C" fn(c_int, *const c_char, uid_t, gid_t, c_int) -> c_int;
type UtimeFn = unsafe extern "C" fn(*const c_char, *const c_void) -> c_int;
type UtimesFn = unsafe extern "C" fn(*const c_char, *const timeval) -> c_int;
type SetxattrFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *const c_void, size_t, c_int) -> c_int;
type RemovexattrFn = unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
type MknodFn = unsafe extern "C" fn(*const c_char, mode_t, dev_t) -> c_int;
type MknodatFn = unsafe extern "C" fn(c_int, *const c_char, mode_t, dev_t) -> c_int;
type FchownFn = unsafe extern "C" fn(c_int, uid_t, gid_t) -> c_int;
type FutimesFn = unsafe extern "C" fn(c_int, *const timeval) -> c_int;
type FsetxattrFn =
    unsafe extern "C" fn(c_int, *const c_char, *const c_void, size_t, c_int) -> c_int;
type FremovexattrFn = unsafe extern "C" fn(c_int, *const c_char) -> c_int;
type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;
type FreopenFn = unsafe extern "C" fn(*const c_char, *const c_char, *mut FILE) -> *mut FILE;
type MkstempFn = unsafe extern "C" fn(*mut c_char) -> c_int;
type MkostempFn = unsafe extern "C" fn(*mut c_char, c_int) -> c_int;
type MkdtempFn = unsafe extern "C" fn(*mut c_char) -> *mut c_char;
type MkstempsFn = unsafe extern "C" fn(*mut c_char, c_int) -> c_int;
type MkostempsFn = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type FutimesatFn = unsafe extern "C" fn(c_int, *const c_char, *const timeval) -> c_int;
type TmpfileFn = unsafe extern "C" fn() -> *mut FILE;

/// Defines a guard `$name` (libc's symbol `$symbol`) with the C signature
/// `($arg: $ty, ..) -> c_int`, which refuses the call on the path arguments `$path` inside a
/// simulation when `$changes` holds, and otherwise forwards to libc through `$next`, typed
/// `$fn`.
macro_rules! guard {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident: $fn:ty,
        ($($arg:ident: $ty:ty),*), path $path:ident at $dir:expr, on disk $change:expr) => {
        // SAFETY: `$fn` is the C declaration of this glibc function.
        static $next: Next<$fn> = unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function: every path is a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // A null or empty path names the directory descriptor itself (`futimesat`,
            // `fchownat` with `AT_EMPTY_PATH`).
            // SAFETY: the path is the caller's: null, or NUL-terminated by the C contract.
            if ($path.is_null() || unsafe { *$path } == 0)
                && let Some(answer) = super::disk::unkept_by($dir, &$change)
            {
                return answer;
            }
            // SAFETY: as above.
            if let super::disk::Route::Disk(on) = unsafe { super::disk::route($dir, $path, true) } {
                return super::disk::unkept_at(&on, &$change);
            }
            // SAFETY: as above.
            if unsafe { refused(stringify!($name), &[$path], true) } {
                return -1;
            }
            // SAFETY: the caller's arguments, unchanged, to the function this one hides.
            unsafe { $next.get()($($arg),*) }
        }
    };
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
    /// `lchmod(3)`: refused inside a simulation (glibc's calls its own `fchmodat` directly).
    lchmod = c"lchmod", REAL_LCHMOD: PathModeFn,
    (path: *const c_char, mode: mode_t), paths [path], when true
);
guard!(
    /// `futimesat`: refused for a host file; on the disk, sets the modification time.
    futimesat = c"futimesat", REAL_FUTIMESAT: FutimesatFn,
    (dir: c_int, path: *const c_char, times: *const timeval), path path at dir, on disk super::disk::Unkept::Times(times)
);
guard!(
    /// `chown`: refused for a host file; on the disk, accepted and changing nothing (the disk keeps no owner).
    chown = c"chown", REAL_CHOWN: ChownFn,
    (path: *const c_char, owner: uid_t, group: gid_t), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Owner
);
guard!(
    /// `lchown`: refused for a host file; on the disk, accepted and changing nothing (the disk keeps no owner).
    lchown = c"lchown", REAL_LCHOWN: ChownFn,
    (path: *const c_char, owner: uid_t, group: gid_t), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Owner
);
guard!(
    /// `fchownat`: refused for a host file; on the disk, accepted and changing nothing (the disk keeps no owner).
    fchownat = c"fchownat", REAL_FCHOWNAT: FchownatFn,
    (dir: c_int, path: *const c_char, owner: uid_t, group: gid_t, flags: c_int),
    path path at dir, on disk super::disk::Unkept::Owner
);
guard!(
    /// `utime`: refused for a host file; on the disk, sets the modification time.
    utime = c"utime", REAL_UTIME: UtimeFn,
    (path: *const c_char, times: *const c_void), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Utimbuf(times.cast())
);
guard!(
    /// `utimes`: refused for a host file; on the disk, sets the modification time.
    utimes = c"utimes", REAL_UTIMES: UtimesFn,
    (path: *const c_char, times: *const timeval), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Times(times)
);
guard!(
    /// `lutimes`: refused for a host file; on the disk, sets the modification time.
    lutimes = c"lutimes", REAL_LUTIMES: UtimesFn,
    (path: *const c_char, times: *const timeval), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Times(times)
);
guard!(
    /// `setxattr`: refused for a host file; on the disk, `EOPNOTSUPP` (no extended attributes).
    setxattr = c"setxattr", REAL_SETXATTR: SetxattrFn,
    (path: *const c_char, name: *const c_char, value: *const c_void, size: size_t, flags: c_int),
    path path at libc::AT_FDCWD, on disk super::disk::Unkept::Attribute
);
guard!(
    /// `lsetxattr`: refused for a host file; on the disk, `EOPNOTSUPP` (no extended attributes).
    lsetxattr = c"lsetxattr", REAL_LSETXATTR: SetxattrFn,
    (path: *const c_char, name: *const c_char, value: *const c_void, size: size_t, flags: c_int),
    path path at libc::AT_FDCWD, on disk super::disk::Unkept::Attribute
);
guard!(
    /// `removexattr`: refused for a host file; on the disk, `EOPNOTSUPP` (no extended attributes).
    removexattr = c"removexattr", REAL_REMOVEXATTR: RemovexattrFn,
    (path: *const c_char, name: *const c_char), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Attribute
);
guard!(
    /// `lremovexattr`: refused for a host file; on the disk, `EOPNOTSUPP` (no extended attributes).
    lremovexattr = c"lremovexattr", REAL_LREMOVEXATTR: RemovexattrFn,
    (path: *const c_char, name: *const c_char), path path at libc::AT_FDCWD, on disk super::disk::Unkept::Attribute
);
guard!(
    /// `mknod(2)`: refused inside a simulation.
    mknod = c"mknod", REAL_MKNOD: MknodFn,
    (path: *const c_char, mode: mode_t, device: dev_t), paths [path], when true
);
guard!(
    /// `mknodat(2)`: refused inside a simulation.
    mknodat = c"mknodat", REAL_MKNODAT: MknodatFn,
    (dir: c_int, path: *const c_char, mode: mode_t, device: dev_t), paths [path], when true
);
guard!(
    /// `mkfifo(3)`: refused inside a simulation.
    mkfifo = c"mkfifo", REAL_MKFIFO: PathModeFn,
    (path: *const c_char, mode: mode_t), paths [path], when true
);
guard!(
    /// `mkfifoat(3)`: refused inside a simulation.
    mkfifoat = c"mkfifoat", REAL_MKFIFOAT: AtPathModeFn,
    (dir: c_int, path: *const c_char, mode: mode_t), paths [path], when true
);

/// Defines a guard `$name` (libc's `$symbol`) with the C signature `($fd: c_int, $arg: $ty,
/// ..) -> c_int`, which refuses the call inside a simulation and otherwise forwards to libc.
macro_rules! descriptor_guard {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident: $fn:ty,
        ($fd:ident $(, $arg:ident: $ty:ty)*), on disk $change:expr) => {
        // SAFETY: `$fn` is the C declaration of this glibc function.
        static $next: Next<$fn> = unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($fd: c_int $(, $arg: $ty)*) -> c_int {
            if let Some(answer) = super::disk::unkept_by($fd, &$change) {
                return answer;
            }
            if refused_descriptor(stringify!($name), $fd) {
                return -1;
            }
            // SAFETY: the caller's arguments, unchanged, to the function this one hides.
            unsafe { $next.get()($fd $(, $arg)*) }
        }
    };
}

descriptor_guard!(
    /// `fchown(2)`: refused for a host file; for a simulated one, accepted and changing
    /// nothing (the disk keeps no owner).
    fchown = c"fchown", REAL_FCHOWN: FchownFn, (fd, owner: uid_t, group: gid_t),
    on disk super::disk::Unkept::Owner
);
descriptor_guard!(
    /// `futimes(3)`: refused for a host file; for a simulated one, sets its modification
    /// time.
    futimes = c"futimes", REAL_FUTIMES: FutimesFn, (fd, times: *const timeval),
    on disk super::disk::Unkept::Times(times)
);
descriptor_guard!(
    /// `fsetxattr(2)`: refused for a host file; `EOPNOTSUPP` for a simulated one.
    fsetxattr = c"fsetxattr", REAL_FSETXATTR: FsetxattrFn,
    (fd, name: *const c_char, value: *const c_void, size: size_t, flags: c_int),
    on disk super::disk::Unkept::Attribute
);
descriptor_guard!(
    /// `fremovexattr(2)`: refused for a host file; `EOPNOTSUPP` for a simulated one.
    fremovexattr = c"fremovexattr", REAL_FREMOVEXATTR: FremovexattrFn,
    (fd, name: *const c_char),
    on disk super::disk::Unkept::Attribute
);

// SAFETY: the type is this glibc function's C declaration.
static REAL_FOPEN: Next<FopenFn> = unsafe { Next::new(c"fopen") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_FOPEN64: Next<FopenFn> = unsafe { Next::new(c"fopen64") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_FREOPEN: Next<FreopenFn> = unsafe { Next::new(c"freopen") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_FREOPEN64: Next<FreopenFn> = unsafe { Next::new(c"freopen64") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKSTEMP: Next<MkstempFn> = unsafe { Next::new(c"mkstemp") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKSTEMP64: Next<MkstempFn> = unsafe { Next::new(c"mkstemp64") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKOSTEMP: Next<MkostempFn> = unsafe { Next::new(c"mkostemp") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKOSTEMP64: Next<MkostempFn> = unsafe { Next::new(c"mkostemp64") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKSTEMPS: Next<MkstempsFn> = unsafe { Next::new(c"mkstemps") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKSTEMPS64: Next<MkstempsFn> = unsafe { Next::new(c"mkstemps64") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKOSTEMPS: Next<MkostempsFn> = unsafe { Next::new(c"mkostemps") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKOSTEMPS64: Next<MkostempsFn> = unsafe { Next::new(c"mkostemps64") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_MKDTEMP: Next<MkdtempFn> = unsafe { Next::new(c"mkdtemp") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_TMPFILE: Next<TmpfileFn> = unsafe { Next::new(c"tmpfile") };
// SAFETY: the type is this glibc function's C declaration.
static REAL_TMPFILE64: Next<TmpfileFn> = unsafe { Next::new(c"tmpfile64") };

/// `fopen(3)`: refused inside a simulation when its mode writes, appends or updates.
///
/// # Safety
///
/// As for the C function: `path` and `mode` are NUL-terminated strings.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: the caller's strings, NUL-terminated by the C contract.
    if unsafe { refused("fopen", &[path], stdio_changes(mode)) || stdio_on_disk("fopen", path) } {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { REAL_FOPEN.get()(path, mode) }
}

/// True if a stdio stream opened to read would read a file of the node's simulated disk:
/// glibc opens it without going through `open`, so it would read the host's file of that
/// name. Fails the run then, with `EOPNOTSUPP`.
///
/// # Safety
///
/// `path` is null or NUL-terminated.
unsafe fn stdio_on_disk(call: &str, path: *const c_char) -> bool {
    // SAFETY: by the caller's contract.
    let super::disk::Route::Disk(on) = (unsafe { super::disk::route(libc::AT_FDCWD, path, false) })
    else {
        return false;
    };
    super::fail(format!(
        "{call}({:?}) was called inside the simulation on a file of the node's simulated \
         disk: C's stdio opens its files without the calls the disk answers, so it would \
         read the host's file of that name. Read the file with std::fs (or open(2) and \
         read(2)) instead.",
        on.display().to_string()
    ));
    super::set_errno(libc::EOPNOTSUPP);
    true
}

/// `fopen64`: as [`fopen`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: as in `fopen`.
    if unsafe { refused("fopen64", &[path], stdio_changes(mode)) || stdio_on_disk("fopen64", path) }
    {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { REAL_FOPEN64.get()(path, mode) }
}

/// `freopen(3)`: refused inside a simulation when it opens a path to write, append or
/// update (a null path keeps the stream's file and only changes its mode). A refused call
/// leaves the stream open on its old file, where a failing glibc call would have closed it.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn freopen(
    path: *const c_char,
    mode: *const c_char,
    stream: *mut FILE,
) -> *mut FILE {
    // SAFETY: as in `fopen`; the stream is the caller's.
    if unsafe { freopen_refused("freopen", path, mode, stream) } {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { REAL_FREOPEN.get()(path, mode, stream) }
}

/// `freopen64`: as [`freopen`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn freopen64(
    path: *const c_char,
    mode: *const c_char,
    stream: *mut FILE,
) -> *mut FILE {
    // SAFETY: as in `fopen`; the stream is the caller's.
    if unsafe { freopen_refused("freopen64", path, mode, stream) } {
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { REAL_FREOPEN64.get()(path, mode, stream) }
}

/// True if `freopen` must be refused: asked to write, at `path` or, with no path, at the
/// stream's own file (which glibc reopens, and so truncates for `w`).
///
/// # Safety
///
/// `path` and `mode` are null or NUL-terminated; `stream` is an open stream if `path` is
/// null.
unsafe fn freopen_refused(
    call: &str,
    path: *const c_char,
    mode: *const c_char,
    stream: *mut FILE,
) -> bool {
    // SAFETY: by the caller's contract.
    let writes = unsafe { stdio_changes(mode) };
    if !path.is_null() {
        // SAFETY: by the caller's contract.
        return unsafe { refused(call, &[path], writes) };
    }
    // SAFETY: an open stream, by the caller's contract.
    writes && refused_descriptor(call, unsafe { libc::fileno(stream) })
}

/// Defines a guard `$name` for a call that makes a temporary file or directory from the
/// template `$template` (`mkstemp` and its kin), returning `$failed` when refused.
macro_rules! temporary_guard {
    ($(#[$doc:meta])* $name:ident, $next:ident,
        ($template:ident: $tty:ty $(, $arg:ident: $ty:ty)*) -> $out:ty, failed $failed:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function: the template is a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($template: $tty $(, $arg: $ty)*) -> $out {
            // SAFETY: the caller's template, NUL-terminated by the C contract.
            if unsafe { refused(stringify!($name), &[$template.cast_const()], true) } {
                return $failed;
            }
            // SAFETY: the caller's arguments, unchanged.
            unsafe { $next.get()($template $(, $arg)*) }
        }
    };
}

temporary_guard!(
    /// `mkstemp(3)`: refused inside a simulation.
    mkstemp, REAL_MKSTEMP, (template: *mut c_char) -> c_int, failed -1
);
temporary_guard!(
    /// `mkstemp64`: refused inside a simulation.
    mkstemp64, REAL_MKSTEMP64, (template: *mut c_char) -> c_int, failed -1
);
temporary_guard!(
    /// `mkostemp(3)`: refused inside a simulation.
    mkostemp, REAL_MKOSTEMP, (template: *mut c_char, flags: c_int) -> c_int, failed -1
);
temporary_guard!(
    /// `mkostemp64`: refused inside a simulation.
    mkostemp64, REAL_MKOSTEMP64, (template: *mut c_char, flags: c_int) -> c_int, failed -1
);
temporary_guard!(
    /// `mkstemps(3)`: refused inside a simulation.
    mkstemps, REAL_MKSTEMPS, (template: *mut c_char, suffix: c_int) -> c_int, failed -1
);
temporary_guard!(
    /// `mkstemps64`: refused inside a simulation.
    mkstemps64, REAL_MKSTEMPS64, (template: *mut c_char, suffix: c_int) -> c_int, failed -1
);
temporary_guard!(
    /// `mkostemps(3)`: refused inside a simulation.
    mkostemps, REAL_MKOSTEMPS,
    (template: *mut c_char, suffix: c_int, flags: c_int) -> c_int, failed -1
);
temporary_guard!(
    /// `mkostemps64`: refused inside a simulation.
    mkostemps64, REAL_MKOSTEMPS64,
    (template: *mut c_char, suffix: c_int, flags: c_int) -> c_int, failed -1
);
temporary_guard!(
    /// `mkdtemp(3)`: refused inside a simulation.
    mkdtemp, REAL_MKDTEMP, (template: *mut c_char) -> *mut c_char, failed std::ptr::null_mut()
);

/// `tmpfile(3)`: refused inside a simulation (it makes a file in the host's `/tmp`).
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn tmpfile() -> *mut FILE {
    if refused_unnamed("tmpfile") {
        return std::ptr::null_mut();
    }
    // SAFETY: no arguments.
    unsafe { REAL_TMPFILE.get()() }
}

/// `tmpfile64`: as [`tmpfile`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn tmpfile64() -> *mut FILE {
    if refused_unnamed("tmpfile64") {
        return std::ptr::null_mut();
    }
    // SAFETY: no arguments.
    unsafe { REAL_TMPFILE64.get()() }
}

/// True if `call`, which makes a host file it names itself, must be refused (as
/// [`refused_change`] judges a path the caller does not give).
fn refused_unnamed(call: &str) -> bool {
    refused_change(call, || vec![String::from("a file in the host's /tmp")])
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> [*const (); 37] {
    [
        symlink as *const (),
        symlinkat as *const (),
        chown as *const (),
        lchown as *const (),
        fchownat as *const (),
        utime as *const (),
        utimes as *const (),
        lutimes as *const (),
        setxattr as *const (),
        lsetxattr as *const (),
        removexattr as *const (),
        lremovexattr as *const (),
        mknod as *const (),
        mknodat as *const (),
        mkfifo as *const (),
        mkfifoat as *const (),
        fchown as *const (),
        futimes as *const (),
        fsetxattr as *const (),
        fremovexattr as *const (),
        fopen as *const (),
        fopen64 as *const (),
        freopen as *const (),
        freopen64 as *const (),
        mkstemp as *const (),
        mkstemp64 as *const (),
        mkostemp as *const (),
        mkostemp64 as *const (),
        mkdtemp as *const (),
        tmpfile as *const (),
        tmpfile64 as *const (),
        lchmod as *const (),
        futimesat as *const (),
        mkstemps as *const (),
        mkstemps64 as *const (),
        mkostemps as *const (),
        mkostemps64 as *const (),
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
    fn a_stdio_mode_writes_as_glibc_reads_it() {
        for writes in [
            "w",
            "a",
            "w+",
            "ab",
            "r+",
            "rb+",
            "r+b",
            "re+",
            "wx",
            "a,ccs=UTF-8",
        ] {
            assert!(stdio_mode_writes(writes.as_bytes()), "{writes}");
        }
        for reads in [
            "r",
            "rb",
            "re",
            "rm",
            "r,ccs=UTF-8",
            "rw",
            "ra",
            "rbbbbbb+",
            "r,+",
            "",
            "x+",
        ] {
            assert!(!stdio_mode_writes(reads.as_bytes()), "{reads}");
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
