//! The calls on paths: opening, the namespace (`mkdir`, `unlink`, `rename`, `link`, ...),
//! modes and times, and what a path is (`stat`, `statx`, `access`, `realpath`).
//!
//! Each asks [`route`] where its path goes: the disk's answer, or libc's after
//! [`files::refused`] has judged a change to a host file.

use std::ffi::{c_char, c_int, c_uint};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use libc::{mode_t, off_t, off64_t, timespec};

use super::descriptors::{self, set_times, simulated, stat_of};
use super::{Route, disk, errno_of, fail_with, on_disk, provide_parents, route, status};
use crate::glibc::files;
use crate::glibc::next::Next;

// `open` and `openat` are variadic in C: the mode follows only when the flags create a file.
// On the supported targets a variadic integer argument travels in the register an ordinary
// third (or fourth) argument would, so a guard that declares the mode reads it when the
// caller passed one and reads a meaningless value otherwise, which is ignored, as libc
// ignores a mode it was not asked to use. It is forwarded as C's default promotion of
// `mode_t` (an unsigned int), which is how the caller passed it.
type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
type PathModeFn = unsafe extern "C" fn(*const c_char, mode_t) -> c_int;
type AtPathModeFn = unsafe extern "C" fn(c_int, *const c_char, mode_t) -> c_int;
type PathFn = unsafe extern "C" fn(*const c_char) -> c_int;
type AtPathFlagsFn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
type TruncateFn = unsafe extern "C" fn(*const c_char, off_t) -> c_int;
type Truncate64Fn = unsafe extern "C" fn(*const c_char, off64_t) -> c_int;
type FchmodatFn = unsafe extern "C" fn(c_int, *const c_char, mode_t, c_int) -> c_int;
type StatFn = unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int;
type FstatatFn = unsafe extern "C" fn(c_int, *const c_char, *mut libc::stat, c_int) -> c_int;
type AccessFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type FaccessatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_int) -> c_int;

/// Defines the guard `$name` (libc's `$symbol`) of a call on the path `$path`, relative to
/// the directory descriptor `$dir`: `$body` answers it with `$on` the path on the disk when
/// [`route`] sends it there; otherwise [`files::refused`] judges it (when it `$changes`
/// files) and libc answers.
macro_rules! path_call {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident: $fn:ty,
        ($($arg:ident: $ty:ty),*), at $dir:expr, path $path:ident, changes $changes:expr,
        |$on:ident| $body:expr) => {
        // SAFETY: `$fn` is the C declaration of this glibc function.
        static $next: Next<$fn> = unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function: every path is a NUL-terminated string.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            let changes = $changes;
            // SAFETY: the caller's path, NUL-terminated by the C contract.
            match unsafe { route($dir, $path, changes) } {
                Route::Disk($on) => {
                    #[allow(unused_unsafe, reason = "some bodies read the caller's pointers")]
                    // SAFETY: the caller's pointers, valid as the C function's contract says.
                    let answer = unsafe { $body };
                    if changes && answer >= 0 {
                        super::changed(&$on);
                    }
                    answer
                }
                Route::Host => {
                    // SAFETY: as above.
                    if unsafe { files::refused(stringify!($name), &[$path], changes) } {
                        return -1;
                    }
                    // SAFETY: the caller's arguments, unchanged, to the function this one
                    // hides.
                    unsafe { $next.get()($($arg),*) }
                }
            }
        }
    };
}

path_call!(
    /// `open(2)`: a file of the disk gets a simulated descriptor.
    open = c"open", REAL_OPEN: OpenFn, (path: *const c_char, flags: c_int, mode: c_uint),
    at libc::AT_FDCWD, path path, changes files::changes(flags),
    |on| descriptors::open(&on, flags, mode)
);
path_call!(
    /// `open64`: as [`open`].
    open64 = c"open64", REAL_OPEN64: OpenFn, (path: *const c_char, flags: c_int, mode: c_uint),
    at libc::AT_FDCWD, path path, changes files::changes(flags),
    |on| descriptors::open(&on, flags, mode)
);
path_call!(
    /// `openat(2)`: as [`open`], relative to `dir`.
    openat = c"openat", REAL_OPENAT: OpenatFn,
    (dir: c_int, path: *const c_char, flags: c_int, mode: c_uint),
    at dir, path path, changes files::changes(flags),
    |on| descriptors::open(&on, flags, mode)
);
path_call!(
    /// `openat64`: as [`openat`].
    openat64 = c"openat64", REAL_OPENAT64: OpenatFn,
    (dir: c_int, path: *const c_char, flags: c_int, mode: c_uint),
    at dir, path path, changes files::changes(flags),
    |on| descriptors::open(&on, flags, mode)
);
path_call!(
    /// `creat(2)`: `open` to write, create and truncate.
    creat = c"creat", REAL_CREAT: PathModeFn, (path: *const c_char, mode: mode_t),
    at libc::AT_FDCWD, path path, changes true,
    |on| descriptors::open(&on, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, mode)
);
path_call!(
    /// `creat64`: as [`creat`].
    creat64 = c"creat64", REAL_CREAT64: PathModeFn, (path: *const c_char, mode: mode_t),
    at libc::AT_FDCWD, path path, changes true,
    |on| descriptors::open(&on, libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC, mode)
);
path_call!(
    /// `mkdir(2)`: a directory on the disk, durable once its parent is synced.
    mkdir = c"mkdir", REAL_MKDIR: PathModeFn, (path: *const c_char, mode: mode_t),
    at libc::AT_FDCWD, path path, changes true,
    |on| make_dir(&on, mode)
);
path_call!(
    /// `mkdirat(2)`: as [`mkdir`], relative to `dir`.
    mkdirat = c"mkdirat", REAL_MKDIRAT: AtPathModeFn,
    (dir: c_int, path: *const c_char, mode: mode_t),
    at dir, path path, changes true,
    |on| make_dir(&on, mode)
);
path_call!(
    /// `rmdir(2)`.
    rmdir = c"rmdir", REAL_RMDIR: PathFn, (path: *const c_char),
    at libc::AT_FDCWD, path path, changes true,
    |on| status(on_disk("rmdir", || disk::remove_dir(&on)))
);
path_call!(
    /// `unlink(2)`.
    unlink = c"unlink", REAL_UNLINK: PathFn, (path: *const c_char),
    at libc::AT_FDCWD, path path, changes true,
    |on| status(on_disk("unlink", || disk::remove_file(&on)))
);
path_call!(
    /// `unlinkat(2)`: a directory with `AT_REMOVEDIR`, a file otherwise.
    unlinkat = c"unlinkat", REAL_UNLINKAT: AtPathFlagsFn,
    (dir: c_int, path: *const c_char, flags: c_int),
    at dir, path path, changes true,
    |on| status(on_disk("unlinkat", || {
        if flags & libc::AT_REMOVEDIR != 0 {
            disk::remove_dir(&on)
        } else {
            disk::remove_file(&on)
        }
    }))
);
path_call!(
    /// `truncate(2)`.
    truncate = c"truncate", REAL_TRUNCATE: TruncateFn, (path: *const c_char, len: off_t),
    at libc::AT_FDCWD, path path, changes true,
    |on| status(on_disk("truncate", || cut(&on, len)))
);
path_call!(
    /// `truncate64`: as [`truncate`].
    truncate64 = c"truncate64", REAL_TRUNCATE64: Truncate64Fn,
    (path: *const c_char, len: off64_t),
    at libc::AT_FDCWD, path path, changes true,
    |on| status(on_disk("truncate64", || cut(&on, len)))
);
path_call!(
    /// `chmod(2)`.
    chmod = c"chmod", REAL_CHMOD: PathModeFn, (path: *const c_char, mode: mode_t),
    at libc::AT_FDCWD, path path, changes true,
    |on| status(on_disk("chmod", || {
        disk::set_permissions(&on, std::fs::Permissions::from_mode(mode & 0o7777))
    }))
);
path_call!(
    /// `fchmodat(2)`.
    fchmodat = c"fchmodat", REAL_FCHMODAT: FchmodatFn,
    (dir: c_int, path: *const c_char, mode: mode_t, flags: c_int),
    at dir, path path, changes true,
    |on| status(on_disk("fchmodat", || {
        let _ = flags;
        disk::set_permissions(&on, std::fs::Permissions::from_mode(mode & 0o7777))
    }))
);
path_call!(
    /// `stat(2)`: what the disk says of a path of the disk.
    stat = c"stat", REAL_STAT: StatFn, (path: *const c_char, buf: *mut libc::stat),
    at libc::AT_FDCWD, path path, changes false,
    |on| answer_stat(on_disk("stat", || entry_at(&on)), buf)
);
path_call!(
    /// `stat64`: as [`stat`].
    stat64 = c"stat64", REAL_STAT64: StatFn, (path: *const c_char, buf: *mut libc::stat),
    at libc::AT_FDCWD, path path, changes false,
    |on| answer_stat(on_disk("stat64", || entry_at(&on)), buf)
);
path_call!(
    /// `lstat(2)`: as [`stat`] (the disk has no symbolic links).
    lstat = c"lstat", REAL_LSTAT: StatFn, (path: *const c_char, buf: *mut libc::stat),
    at libc::AT_FDCWD, path path, changes false,
    |on| answer_stat(on_disk("lstat", || entry_at(&on)), buf)
);
path_call!(
    /// `lstat64`: as [`lstat`].
    lstat64 = c"lstat64", REAL_LSTAT64: StatFn, (path: *const c_char, buf: *mut libc::stat),
    at libc::AT_FDCWD, path path, changes false,
    |on| answer_stat(on_disk("lstat64", || entry_at(&on)), buf)
);
path_call!(
    /// `access(2)`: an entry of the disk is there to the calling user.
    access = c"access", REAL_ACCESS: AccessFn, (path: *const c_char, mode: c_int),
    at libc::AT_FDCWD, path path, changes false,
    |on| status(on_disk("access", || permitted(&on, mode)))
);
path_call!(
    /// `faccessat(2)`: as [`access`], relative to `dir`.
    faccessat = c"faccessat", REAL_FACCESSAT: FaccessatFn,
    (dir: c_int, path: *const c_char, mode: c_int, flags: c_int),
    at dir, path path, changes false,
    |on| status(on_disk("faccessat", || {
        let _ = flags;
        permitted(&on, mode)
    }))
);

// SAFETY: the C declarations of these glibc functions.
static REAL_FSTATAT: Next<FstatatFn> = unsafe { Next::new(c"fstatat") };
// SAFETY: as above.
static REAL_FSTATAT64: Next<FstatatFn> = unsafe { Next::new(c"fstatat64") };
// SAFETY: as above.
static REAL_RENAME: Next<unsafe extern "C" fn(*const c_char, *const c_char) -> c_int> =
    unsafe { Next::new(c"rename") };
// SAFETY: as above.
static REAL_RENAMEAT: Next<
    unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char) -> c_int,
> = unsafe { Next::new(c"renameat") };
// SAFETY: as above.
static REAL_RENAMEAT2: Next<
    unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int,
> = unsafe { Next::new(c"renameat2") };
// SAFETY: as above.
static REAL_LINK: Next<unsafe extern "C" fn(*const c_char, *const c_char) -> c_int> =
    unsafe { Next::new(c"link") };
// SAFETY: as above.
static REAL_LINKAT: Next<
    unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_int) -> c_int,
> = unsafe { Next::new(c"linkat") };
// SAFETY: as above.
static REAL_UTIMENSAT: Next<
    unsafe extern "C" fn(c_int, *const c_char, *const timespec, c_int) -> c_int,
> = unsafe { Next::new(c"utimensat") };
// SAFETY: as above.
static REAL_REALPATH: Next<unsafe extern "C" fn(*const c_char, *mut c_char) -> *mut c_char> =
    unsafe { Next::new(c"realpath") };

/// `fstatat(2)`: a simulated descriptor's entry (with `AT_EMPTY_PATH` and an empty path),
/// or a path of the disk.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fstatat(
    dir: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe {
        stat_at(dir, path, buf, flags, || {
            REAL_FSTATAT.get()(dir, path, buf, flags)
        })
    }
}

/// `fstatat64`: as [`fstatat`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fstatat64(
    dir: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe {
        stat_at(dir, path, buf, flags, || {
            REAL_FSTATAT64.get()(dir, path, buf, flags)
        })
    }
}

/// [`fstatat`]'s answer, with `host` libc's call on the caller's arguments.
///
/// # Safety
///
/// As for `fstatat`.
unsafe fn stat_at(
    dir: c_int,
    path: *const c_char,
    buf: *mut libc::stat,
    flags: c_int,
    host: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: by the caller's contract.
    let empty = path.is_null() || unsafe { *path } == 0;
    if empty
        && flags & libc::AT_EMPTY_PATH != 0
        && let Some(open) = simulated(dir)
    {
        return answer_stat(on_disk("fstatat", || stat_of(&open)), buf);
    }
    // SAFETY: as above.
    match unsafe { route(dir, path, false) } {
        Route::Disk(on) => answer_stat(on_disk("fstatat", || entry_at(&on)), buf),
        Route::Host => host(),
    }
}

/// `statx(2)`'s answer from the disk, for a simulated descriptor (`AT_EMPTY_PATH` with an
/// empty path) or a path of the disk; `None` for the host's.
///
/// # Safety
///
/// As for `statx`: `path` is null or NUL-terminated, and `buf` valid for a write.
pub(in crate::glibc) unsafe fn statx(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    buf: *mut libc::statx,
) -> Option<c_int> {
    // SAFETY: by the caller's contract.
    let empty = path.is_null() || unsafe { *path } == 0;
    let stat = if empty && flags & libc::AT_EMPTY_PATH != 0 {
        let open = simulated(dir)?;
        on_disk("statx", || stat_of(&open))
    } else if path.is_null() {
        return None;
    } else {
        // SAFETY: as above.
        match unsafe { route(dir, path, false) } {
            Route::Disk(on) => on_disk("statx", || entry_at(&on)),
            Route::Host => return None,
        }
    };
    Some(match stat {
        Some(Ok(_)) if buf.is_null() => fail_with(libc::EFAULT),
        Some(Ok(entry)) => {
            let device = crate::glibc::metadata::simulated_device(entry.node);
            // SAFETY: valid for a write by the caller's contract.
            unsafe { crate::glibc::metadata::fill_statx(buf, &entry.stat, device) };
            0
        }
        Some(Err(error)) => fail_with(errno_of(&error)),
        None => fail_with(libc::EIO),
    })
}

/// `rename(2)`: see [`two_paths`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn rename(from: *const c_char, to: *const c_char) -> c_int {
    let (here, there) = ((libc::AT_FDCWD, from), (libc::AT_FDCWD, to));
    // SAFETY: the caller's arguments.
    unsafe {
        two_paths(
            "rename",
            here,
            there,
            |a, b| disk::rename(a, b),
            || REAL_RENAME.get()(from, to),
        )
    }
}

/// `renameat(2)`: see [`two_paths`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn renameat(
    from_dir: c_int,
    from: *const c_char,
    to_dir: c_int,
    to: *const c_char,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe {
        two_paths(
            "renameat",
            (from_dir, from),
            (to_dir, to),
            |a, b| disk::rename(a, b),
            || REAL_RENAMEAT.get()(from_dir, from, to_dir, to),
        )
    }
}

/// `renameat2(2)`: as [`renameat`]; `RENAME_NOREPLACE` fails with `EEXIST` when the target
/// exists, and the other flags (an exchange, a whiteout) are refused with `EINVAL`, as a file
/// system without them refuses them.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn renameat2(
    from_dir: c_int,
    from: *const c_char,
    to_dir: c_int,
    to: *const c_char,
    flags: c_uint,
) -> c_int {
    let on_disk = |a: &Path, b: &Path| match flags {
        0 => disk::rename(a, b),
        libc::RENAME_NOREPLACE if disk::exists(b)? => {
            Err(io::Error::from_raw_os_error(libc::EEXIST))
        }
        libc::RENAME_NOREPLACE => disk::rename(a, b),
        _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    // SAFETY: the caller's arguments.
    unsafe {
        two_paths("renameat2", (from_dir, from), (to_dir, to), on_disk, || {
            REAL_RENAMEAT2.get()(from_dir, from, to_dir, to, flags)
        })
    }
}

/// `link(2)`: see [`two_paths`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn link(from: *const c_char, to: *const c_char) -> c_int {
    let (here, there) = ((libc::AT_FDCWD, from), (libc::AT_FDCWD, to));
    // SAFETY: the caller's arguments.
    unsafe {
        two_paths(
            "link",
            here,
            there,
            |a, b| disk::hard_link(a, b),
            || REAL_LINK.get()(from, to),
        )
    }
}

/// `linkat(2)`: see [`two_paths`] (the disk has no symbolic links to follow).
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn linkat(
    from_dir: c_int,
    from: *const c_char,
    to_dir: c_int,
    to: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe {
        two_paths(
            "linkat",
            (from_dir, from),
            (to_dir, to),
            |a, b| disk::hard_link(a, b),
            || REAL_LINKAT.get()(from_dir, from, to_dir, to, flags),
        )
    }
}

/// A call naming two paths (`rename`, `link`): on the disk when both are the disk's, through
/// [`files::refused`] and libc when both are the host's, and `EXDEV` when one is each, as
/// between two file systems.
///
/// # Safety
///
/// Both paths are null or NUL-terminated; `host` is libc's call on the caller's arguments.
unsafe fn two_paths(
    call: &str,
    from: (c_int, *const c_char),
    to: (c_int, *const c_char),
    on: impl FnOnce(&Path, &Path) -> io::Result<()>,
    host: impl FnOnce() -> c_int,
) -> c_int {
    // SAFETY: by the caller's contract.
    let routes = unsafe { (route(from.0, from.1, true), route(to.0, to.1, true)) };
    match routes {
        (Route::Disk(a), Route::Disk(b)) => {
            let answer = status(on_disk(call, || {
                provide_parents(&b);
                on(&a, &b)
            }));
            if answer == 0 {
                super::changed(&a);
                super::changed(&b);
            }
            answer
        }
        (Route::Host, Route::Host) => {
            // SAFETY: as above.
            if unsafe { files::refused(call, &[from.1, to.1], true) } {
                return -1;
            }
            host()
        }
        _ => fail_with(libc::EXDEV),
    }
}

/// `utimensat(2)`: a null path names `dir` itself. The disk keeps a modification time only.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn utimensat(
    dir: c_int,
    path: *const c_char,
    times: *const timespec,
    flags: c_int,
) -> c_int {
    if path.is_null()
        && let Some(open) = simulated(dir)
    {
        // SAFETY: the caller's `times`.
        return status(on_disk("utimensat", || unsafe {
            set_times(open.file(), times)
        }));
    }
    // SAFETY: the caller's path.
    match unsafe { route(dir, path, true) } {
        Route::Disk(on) => {
            let answer = status(on_disk("utimensat", || {
                let file = disk::File::open(&on)?;
                // SAFETY: the caller's `times`.
                unsafe { set_times(&file, times) }
            }));
            if answer == 0 {
                super::changed(&on);
            }
            answer
        }
        Route::Host => {
            let named = if path.is_null() {
                files::refused_descriptor("utimensat", dir)
            } else {
                // SAFETY: the caller's path.
                unsafe { files::refused("utimensat", &[path], true) }
            };
            if named {
                return -1;
            }
            // SAFETY: the caller's arguments, unchanged.
            unsafe { REAL_UTIMENSAT.get()(dir, path, times, flags) }
        }
    }
}

/// `realpath(3)`: a path of the disk made absolute and plain (no `.`, `..` or repeated
/// slashes: the disk has no symbolic links), if it exists; in `resolved` (`PATH_MAX` bytes)
/// or, when that is null, in memory from `malloc` that the caller frees.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn realpath(
    path: *const c_char,
    resolved: *mut c_char,
) -> *mut c_char {
    // SAFETY: the caller's path.
    let Route::Disk(on) = (unsafe { route(libc::AT_FDCWD, path, false) }) else {
        // SAFETY: the caller's arguments, unchanged.
        return unsafe { REAL_REALPATH.get()(path, resolved) };
    };
    match on_disk("realpath", || {
        disk::metadata(&on).map(|_| crashtest_hooks::fs::from_root(&on))
    }) {
        Some(Ok(plain)) => {
            let bytes = plain.as_os_str().as_bytes();
            if bytes.len() >= libc::PATH_MAX as usize {
                fail_with(libc::ENAMETOOLONG);
                return std::ptr::null_mut();
            }
            let out = if resolved.is_null() {
                // SAFETY: malloc has no preconditions; the caller frees what it returns.
                unsafe { libc::malloc(bytes.len() + 1) }.cast::<c_char>()
            } else {
                resolved
            };
            if out.is_null() {
                fail_with(libc::ENOMEM);
                return out;
            }
            // SAFETY: `out` holds `PATH_MAX` bytes (the caller's) or `len + 1` (ours).
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), out, bytes.len());
                *out.add(bytes.len()) = 0;
            }
            out
        }
        Some(Err(error)) => {
            fail_with(errno_of(&error));
            std::ptr::null_mut()
        }
        None => {
            fail_with(libc::EIO);
            std::ptr::null_mut()
        }
    }
}

/// Creates a directory on the disk with `mkdir`'s mode.
fn make_dir(path: &Path, mode: mode_t) -> c_int {
    status(on_disk("mkdir", || {
        // A directory the host has is there already, as on the host (`create_dir_all` of
        // the temporary directory tries `mkdir` on it first).
        provide_parents(path);
        super::provide(&crashtest_hooks::fs::from_root(path));
        disk::create_dir_with_mode(path, mode & 0o7777)
    }))
}

/// Cuts or extends a file of the disk to `len`.
fn cut(path: &Path, len: i64) -> io::Result<()> {
    let len = u64::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    disk::OpenOptions::new()
        .write(true)
        .open(path)?
        .set_len(len)
}

/// `access`'s check of an entry of the disk: it exists, and its permission bits for its
/// owner (the calling user) allow `mode`'s reading, writing and searching.
fn permitted(path: &Path, mode: c_int) -> io::Result<()> {
    let bits = disk::metadata(path)?.mode();
    let wanted = [
        (libc::R_OK, 0o400),
        (libc::W_OK, 0o200),
        (libc::X_OK, 0o100),
    ];
    if wanted
        .iter()
        .any(|&(asked, bit)| mode & asked != 0 && bits & bit == 0)
    {
        return Err(io::Error::from_raw_os_error(libc::EACCES));
    }
    Ok(())
}

/// What a `stat` call answers of an entry: its status, and the node whose disk holds it
/// (`None`: the calling node's), for its device.
pub(super) struct Entry {
    pub(super) stat: crashtest_hooks::fs::Stat,
    pub(super) node: Option<usize>,
}

/// The entry of the calling node's disk at `path`.
fn entry_at(path: &Path) -> io::Result<Entry> {
    Ok(Entry {
        stat: disk::metadata(path)?.stat(),
        node: None,
    })
}

/// Writes `stat` (or the error) as a `stat` call answers: 0 and the buffer filled, or -1 with
/// `errno`.
pub(super) fn answer_stat(entry: Option<io::Result<Entry>>, buf: *mut libc::stat) -> c_int {
    match entry {
        Some(Ok(entry)) if !buf.is_null() => {
            let device = crate::glibc::metadata::simulated_device(entry.node);
            // SAFETY: a stat call's buffer is valid for a write of one `struct stat`.
            unsafe { fill_stat(buf, &entry.stat, device) };
            0
        }
        Some(Ok(_)) => fail_with(libc::EFAULT),
        Some(Err(error)) => fail_with(errno_of(&error)),
        None => fail_with(libc::EIO),
    }
}

/// Writes `stat` into `buf` as the kernel describes such an entry (as
/// [`fill_statx`](crate::glibc::metadata::fill_statx) does for `statx`).
///
/// # Safety
///
/// `buf` is valid for a write of one `struct stat`.
unsafe fn fill_stat(buf: *mut libc::stat, stat: &crashtest_hooks::fs::Stat, device: (u32, u32)) {
    const {
        assert!(size_of::<libc::stat>() == size_of::<libc::stat64>());
    }
    let kind = if stat.is_dir {
        libc::S_IFDIR
    } else {
        libc::S_IFREG
    };
    // SAFETY: valid for a write by the caller's contract; all zeros is a valid `stat`.
    unsafe { std::ptr::write_bytes(buf, 0, 1) };
    // SAFETY: as above; the fields are plain integers.
    let out = unsafe { &mut *buf };
    out.st_dev = libc::makedev(device.0, device.1);
    out.st_ino = stat.ino;
    out.st_nlink = stat.nlink;
    out.st_mode = kind | stat.mode;
    // SAFETY: getuid and getgid have no preconditions and always succeed.
    (out.st_uid, out.st_gid) = unsafe { (libc::getuid(), libc::getgid()) };
    out.st_size = i64::try_from(stat.len).unwrap_or(i64::MAX);
    out.st_blksize = 4096;
    out.st_blocks = i64::try_from(stat.len.div_ceil(512)).unwrap_or(i64::MAX);
    let split = |ns: i64| (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    (out.st_atime, out.st_atime_nsec) = split(stat.born_ns);
    (out.st_mtime, out.st_mtime_nsec) = split(stat.modified_ns);
    (out.st_ctime, out.st_ctime_nsec) = split(stat.changed_ns);
}

/// The guards, for [`crate::glibc::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    vec![
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
        truncate as *const (),
        truncate64 as *const (),
        chmod as *const (),
        fchmodat as *const (),
        stat as *const (),
        stat64 as *const (),
        lstat as *const (),
        lstat64 as *const (),
        access as *const (),
        faccessat as *const (),
        fstatat as *const (),
        fstatat64 as *const (),
        rename as *const (),
        renameat as *const (),
        renameat2 as *const (),
        link as *const (),
        linkat as *const (),
        utimensat as *const (),
        realpath as *const (),
    ]
}
