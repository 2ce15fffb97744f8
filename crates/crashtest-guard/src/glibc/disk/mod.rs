//! std's and libc's file calls on the calling node's simulated disk.
//!
//! A storage engine written against `std::fs` (a log, a B-tree, an LSM) is the code whose
//! crash bugs a simulation exists to find, so inside a simulation its file calls go to the
//! calling node's simulated disk (`crashtest-fs`), with the disk's whole crash model: writes
//! are volatile until synced, a new or renamed entry until its directory is synced, and a
//! kill keeps, drops or tears what was not. The program is unchanged: `File::create`,
//! `write_all`, `sync_all`, `rename`, `read_dir`, `remove_dir_all`, `tempfile`'s directories
//! all work as on Linux.
//!
//! Which calls go to the disk (see [`route`]):
//! - every call that changes files (create, write, truncate, rename, remove, `mkdir`, a
//!   mode or a time), except on the stateless devices (`/dev/null`, ...);
//! - a call that only reads (open to read, `stat`, `opendir`, `access`, `realpath`) when the
//!   disk has the entry, or the program made the directory it would be in (see
//!   [`read_on_disk`]); the host's files otherwise: configuration, certificates, `/proc`, the
//!   program's own executable and a project's fixtures are read from the host, the same on
//!   every run, even in a directory the disk took from the host (`/tmp`, `/etc`);
//! - a call relative to a directory descriptor of the disk (`openat`, `unlinkat`, `fstatat`:
//!   std's `remove_dir_all` and `DirEntry::metadata`).
//!
//! A node's disk starts empty. The first change below a directory that the host has (the
//! temporary directory, a project's `target/`) gives the disk that directory, durably, as
//! though it had been there before the run ([`provide_parents`]); below it the program's own
//! directories are its own, and are durable only once their parent is synced. The host is
//! asked once per directory and process, and never about what lies inside its temporary
//! directory, so two runs of a seed give the disk the same directories.
//!
//! A simulated file's descriptor is a real one, a sealed empty memfd named
//! `crashtest-simulated-file`, so that it can be kept, passed, duplicated and closed as any
//! descriptor; the table of the run ([`descriptors`]) says which file each number is, and the
//! guards answer every call on it from the disk. Calls outside a node, inside
//! `crashtest_hooks::with_host_files`, or with the guards absent are the host's: the
//! refusals of [`super::files`] apply to those.
//!
//! What is not simulated is refused with a message that says so: `mmap` of a simulated file,
//! C's stdio on a file of the disk (glibc opens it without the guarded calls), a call
//! relative to a directory descriptor whose directory moved, a lock that would wait,
//! `O_TMPFILE` (answered `EOPNOTSUPP`, on which `tempfile` falls back to a named file), and
//! symbolic links, owners and extended attributes (refused by [`super::files`]). Calls that
//! no symbol stands in front of reach the host: raw system calls (rustix's are sent through
//! libc: see the crate's manifest), glibc's fortified variants (`__read_chk`), io_uring.

mod descriptors;
mod listing;
mod paths;
mod space;

pub(super) use descriptors::closing;
pub(super) use paths::statx;

use std::collections::BTreeMap;
use std::ffi::{CStr, OsStr, c_char, c_int};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

use crashtest_fs::sync as disk;

/// Where a call on a path goes.
#[derive(Debug)]
pub(super) enum Route {
    /// The host's files, through libc (and [`super::files`]'s refusals).
    Host,
    /// The calling node's disk, at this path.
    Disk(PathBuf),
}

/// Where a call on `path` (relative to the directory descriptor `dir`, as the `at` calls
/// take it) goes; `changes` if the call would change files. See the module docs.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string.
pub(super) unsafe fn route(dir: c_int, path: *const c_char, changes: bool) -> Route {
    if path.is_null() || !super::in_simulation() || crashtest_hooks::host_files_allowed() {
        return Route::Host;
    }
    // SAFETY: non-null, and NUL-terminated by the caller's contract.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    if bytes.is_empty() {
        return Route::Host;
    }
    let path = Path::new(OsStr::from_bytes(bytes));
    if path.is_relative() && dir != libc::AT_FDCWD {
        return match descriptors::directory_path(dir) {
            Some(base) => Route::Disk(base.join(path)),
            None => Route::Host,
        };
    }
    // A file call made while the simulator's state is in use (a descriptor closed as a task
    // is dropped) cannot reach the disk, and is the host's.
    let on_a_node = std::panic::catch_unwind(crashtest_core::plumbing::current_node)
        .ok()
        .flatten()
        .is_some();
    if !on_a_node || super::files::stateless(&path.to_string_lossy()) {
        return Route::Host;
    }
    if changes || read_on_disk(path) {
        Route::Disk(path.to_path_buf())
    } else {
        Route::Host
    }
}

/// True if a read of `path` is the disk's: the root (a program syncs `/` after making an
/// entry there), an entry the disk has, or a name missing from a directory of the disk that
/// the program made (not one the disk took from the host, [`provide_parents`], nor the root:
/// there the host's entries show through). A relative path is taken from the disk's root, a
/// node's working directory. A disk that cannot answer because its node was killed in this
/// poll takes the call, which then fails as every call of a dead node does; one that cannot
/// because the simulator's state is in use leaves it to the host.
fn read_on_disk(path: &Path) -> bool {
    let mut names = path
        .components()
        .filter(|part| !matches!(part, Component::RootDir | Component::CurDir));
    if names.next().is_none() {
        return true;
    }
    let holds = |entry: &Path| match std::panic::catch_unwind(|| disk::exists(entry)) {
        Ok(Ok(exists)) => exists,
        Ok(Err(_)) => true,
        Err(_) => false,
    };
    if holds(path) {
        return true;
    }
    let Some(parent) = path.parent().filter(|parent| {
        parent
            .components()
            .any(|part| matches!(part, Component::Normal(_)))
    }) else {
        return false;
    };
    holds(parent) && !provided(parent)
}

/// The directories each node's disk took from the host ([`provide_parents`]), by node.
#[derive(Default)]
struct Provided(std::cell::RefCell<std::collections::BTreeSet<(usize, PathBuf)>>);

thread_local! {
    static PROVIDED: crashtest_core::plumbing::checks::ExtensionCache<Provided> =
        const { crashtest_core::plumbing::checks::ExtensionCache::new() };
}

/// The calling node's index and the run's record of provided directories.
fn provided_here() -> Option<(usize, std::rc::Rc<Provided>)> {
    std::panic::catch_unwind(|| {
        let node = crashtest_core::plumbing::current_node()?.index();
        Some((node, PROVIDED.with(|cache| cache.get(|_| {}))?))
    })
    .ok()
    .flatten()
}

/// True if the calling node's disk took `dir` from the host.
fn provided(dir: &Path) -> bool {
    provided_here().is_some_and(|(node, provided)| {
        provided
            .0
            .try_borrow()
            .is_ok_and(|dirs| dirs.contains(&(node, dir.to_path_buf())))
    })
}

/// The host's temporary directory, as the process saw it first.
fn temp_dir() -> &'static Path {
    static TEMP_DIR: OnceLock<PathBuf> = OnceLock::new();
    TEMP_DIR.get_or_init(std::env::temp_dir)
}

/// Whether the host has `dir` as a directory, as the process first found it: a later answer
/// never differs from an earlier one, so two runs of a seed give the disk the same
/// directories.
fn host_has_directory(dir: &Path) -> bool {
    static SEEN: Mutex<BTreeMap<PathBuf, bool>> = Mutex::new(BTreeMap::new());
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    *seen.entry(dir.to_path_buf()).or_insert_with(|| {
        crashtest_hooks::with_host_files(|| std::fs::metadata(dir)).is_ok_and(|meta| meta.is_dir())
    })
}

/// Gives the disk the deepest directory above `path` that the host has, when the disk lacks
/// `path`'s parent: made durable at once, as a directory that was there before the run
/// (`/tmp` for `tempfile`'s `/tmp/.tmpXXXX`). Directories inside the temporary directory are
/// never taken from the host: other programs make and remove them at any time, and the
/// disk's own temporary directory starts empty. A relative path needs none: its parent is
/// below the node's working directory, the disk's root.
fn provide_parents(path: &Path) {
    let Some(parent) = path.parent().filter(|_| path.is_absolute()) else {
        return;
    };
    if disk::exists(parent).unwrap_or(true) {
        return;
    }
    let temp = temp_dir();
    let host_dir = parent
        .ancestors()
        .filter(|dir| !dir.starts_with(temp) || *dir == temp)
        .find(|dir| host_has_directory(dir));
    let Some(dir) = host_dir.filter(|dir| *dir != Path::new("/")) else {
        return;
    };
    // A failure here (a dead node) is met again by the call itself.
    if disk::create_dir_all_durably(dir).is_ok()
        && let Some((node, provided)) = provided_here()
        && let Ok(mut dirs) = provided.0.try_borrow_mut()
    {
        for taken in dir.ancestors().filter(|taken| *taken != Path::new("/")) {
            dirs.insert((node, taken.to_path_buf()));
        }
    }
}

/// Runs a call on the disk, catching a panic as [`super::answer`] does; `None` if the run
/// failed instead.
fn on_disk<R>(call: &str, compute: impl FnOnce() -> io::Result<R>) -> Option<io::Result<R>> {
    super::answer(call, compute)
}

/// The `errno` an error of the disk stands for.
fn errno_of(error: &io::Error) -> c_int {
    if let Some(code) = error.raw_os_error() {
        return code;
    }
    match error.kind() {
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::AlreadyExists => libc::EEXIST,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        io::ErrorKind::InvalidInput => libc::EINVAL,
        io::ErrorKind::IsADirectory => libc::EISDIR,
        io::ErrorKind::NotADirectory => libc::ENOTDIR,
        io::ErrorKind::DirectoryNotEmpty => libc::ENOTEMPTY,
        io::ErrorKind::StorageFull => libc::ENOSPC,
        io::ErrorKind::FileTooLarge => libc::EFBIG,
        io::ErrorKind::CrossesDevices => libc::EXDEV,
        io::ErrorKind::WouldBlock => libc::EAGAIN,
        _ => libc::EIO,
    }
}

/// The C answer to a call that returns 0 or -1 with `errno`, from the disk's answer (`None`:
/// the run failed, and the call fails with `EIO`).
fn status(result: Option<io::Result<()>>) -> c_int {
    match result {
        Some(Ok(())) => 0,
        Some(Err(error)) => fail_with(errno_of(&error)),
        None => fail_with(libc::EIO),
    }
}

/// Sets `errno` to `code` and returns -1, as a failing C call does.
fn fail_with(code: c_int) -> c_int {
    super::set_errno(code);
    -1
}

/// A change the disk does not keep, asked of an entry of the disk by a guard of
/// [`super::files`]: owners, times given as `timeval`s or a `utimbuf`, extended attributes.
pub(super) enum Unkept {
    /// `chown` and its kin: the disk keeps no owner (every entry is the calling user's), so
    /// the change is accepted and changes nothing, as it changes nothing a program can rely
    /// on across a crash.
    Owner,
    /// `utimes`, `futimes` and their kin: the modification time (the second `timeval`; a
    /// null array means now), which the disk does keep.
    Times(*const libc::timeval),
    /// `utime`: the modification time of a `utimbuf` (null means now).
    Utimbuf(*const libc::utimbuf),
    /// `setxattr` and its kin: refused with `EOPNOTSUPP`, as by a file system without
    /// extended attributes.
    Attribute,
}

impl Unkept {
    /// The modification time asked for, if any.
    fn modified(&self) -> io::Result<Option<std::time::SystemTime>> {
        let at = |secs: i64, nanos: i64| {
            let time = libc::timespec {
                tv_sec: secs,
                tv_nsec: nanos,
            };
            descriptors::time_of(Some(&time))
        };
        match *self {
            Unkept::Times(times) if !times.is_null() => {
                // SAFETY: a non-null `timeval` array of two, by the C call's contract.
                let modified = unsafe { &*times.add(1) };
                at(modified.tv_sec, modified.tv_usec * 1000)
            }
            Unkept::Utimbuf(times) if !times.is_null() => {
                // SAFETY: a non-null `utimbuf`, by the C call's contract.
                at(unsafe { (*times).modtime }, 0)
            }
            Unkept::Times(_) | Unkept::Utimbuf(_) => descriptors::time_of(None),
            Unkept::Owner | Unkept::Attribute => Ok(None),
        }
    }
}

/// The C answer of `change` to the entry of the disk at `path`.
pub(super) fn unkept_at(path: &Path, change: &Unkept) -> c_int {
    status(on_disk("a change of an entry", || {
        disk::metadata(path)?;
        match change {
            Unkept::Owner => Ok(()),
            Unkept::Attribute => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Unkept::Times(_) | Unkept::Utimbuf(_) => match change.modified()? {
                Some(time) => disk::File::open(path)?.set_modified(time),
                None => Ok(()),
            },
        }
    }))
}

/// The C answer of `change` to the simulated file `fd`, or `None` if `fd` is not one.
pub(super) fn unkept_by(fd: c_int, change: &Unkept) -> Option<c_int> {
    let open = descriptors::simulated(fd)?;
    Some(status(on_disk(
        "a change of an open file",
        || match change {
            Unkept::Owner => Ok(()),
            Unkept::Attribute => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Unkept::Times(_) | Unkept::Utimbuf(_) => match change.modified()? {
                Some(time) => open.file().set_modified(time),
                None => Ok(()),
            },
        },
    )))
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    let mut symbols = descriptors::symbols();
    symbols.extend(paths::symbols());
    symbols.extend(listing::symbols());
    symbols.extend(space::symbols());
    symbols
}
