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
//!   disk has the entry, the program changed that path (or one above it) before, or the
//!   program made the directory it would be in (see [`read_on_disk`]); the host's files
//!   otherwise: configuration, certificates, `/proc`, the program's own executable and a
//!   project's fixtures are read from the host, the same on every run, even in a directory
//!   the disk took from the host (`/tmp`, `/etc`);
//! - a call relative to a directory descriptor goes by the same rules, at the directory's
//!   path (`openat`, `unlinkat`, `fstatat`: std's `remove_dir_all` and `DirEntry::metadata`).
//!
//! A relative path is taken from the disk's root, a node's working directory; `getcwd`
//! still answers the host's, so a path made absolute from it is a host path.
//!
//! A node's disk starts empty. The first change below a directory that the host has (the
//! temporary directory, a project's `target/`) gives the disk that directory, durably, as
//! though it had been there before the run ([`provide_parents`]); below it the program's own
//! directories are its own, and are durable only once their parent is synced. The host is
//! asked once per directory and process, so two runs of a seed give the disk the same
//! directories. A listing of such a directory shows the disk's entries only.
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

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CStr, OsStr, c_char, c_int};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crashtest_fs::sync as disk;
use crashtest_hooks::fs::from_root;

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
    let mut path = PathBuf::from(OsStr::from_bytes(bytes));
    if path.is_relative() && dir != libc::AT_FDCWD {
        // Relative to a directory descriptor: the disk's directory, or a host directory's
        // path (a directory the program opened before the disk took it from the host).
        let Some(base) = descriptors::directory_path(dir).or_else(|| host_directory(dir)) else {
            return Route::Host;
        };
        path = base.join(path);
    }
    // A file call made while the simulator's state is in use (a descriptor closed as a task
    // is dropped) cannot reach the disk, and is the host's.
    let Some(node) = super::calling_node() else {
        return Route::Host;
    };
    if super::files::stateless(&path.to_string_lossy()) {
        return Route::Host;
    }
    if changes || read_on_disk(node, &path) {
        Route::Disk(path)
    } else {
        Route::Host
    }
}

/// The path of the host directory `fd` refers to, as the kernel keeps it; `None` if `fd`
/// is no directory.
fn host_directory(fd: c_int) -> Option<PathBuf> {
    let stat = super::host_stat(fd)?;
    if stat.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return None;
    }
    super::descriptor_path(fd)
}

/// What the run knows of each node's disk beyond its entries: the directories it took from
/// the host ([`provide_parents`]), where the host's files show through to reads, and the
/// paths the program changed, which are the disk's to read from then on, whether the change
/// survived a crash or not.
#[derive(Default)]
struct Paths {
    provided: std::cell::RefCell<BTreeSet<(usize, PathBuf)>>,
    changed: std::cell::RefCell<BTreeSet<(usize, PathBuf)>>,
}

thread_local! {
    static PATHS: crashtest_core::plumbing::checks::ExtensionCache<Paths> =
        const { crashtest_core::plumbing::checks::ExtensionCache::new() };
}

/// The run's [`Paths`]; `None` if the simulator's state is in use.
fn paths() -> Option<std::rc::Rc<Paths>> {
    std::panic::catch_unwind(|| PATHS.with(|cache| cache.get(|_| {})))
        .ok()
        .flatten()
}

/// Records that the calling node's program changed `path` (a call on the disk that
/// succeeded: one that failed changed nothing, as `mkdir` of an existing directory): from
/// now on it is the disk's to read, and a directory the disk took from the host there
/// (removed, or renamed away) shows no more host files.
pub(super) fn changed(path: &Path) {
    let path = from_root(path);
    let Some(node) = super::calling_node() else {
        return;
    };
    let Some(paths) = paths() else {
        return;
    };
    if let Ok(mut provided) = paths.provided.try_borrow_mut() {
        provided.retain(|(owner, dir)| *owner != node || !dir.starts_with(&path));
    }
    if let Ok(mut changed) = paths.changed.try_borrow_mut() {
        changed.insert((node, path));
    }
}

/// True if a read of `path` by `node` is the disk's: the root (a program syncs `/` after
/// making an entry there); an entry the disk has; a path the program changed, or one below
/// it (though a crash undid the change, the program's file never becomes the host's); or a
/// name missing from a directory of the disk that the program made (not one the disk took
/// from the host, nor the root: there the host's files show through). A disk that cannot
/// answer because its node was killed in this poll takes the call, which then fails as
/// every call of a dead node does; any other failure to answer (a name the disk cannot
/// hold, the simulator's state in use) leaves the read to the host.
fn read_on_disk(node: usize, path: &Path) -> bool {
    let path = from_root(path);
    let Some(parent) = path.parent() else {
        return true;
    };
    let Some(paths) = paths() else {
        return false;
    };
    if let Ok(changed) = paths.changed.try_borrow()
        && path
            .ancestors()
            .any(|above| changed.contains(&(node, above.to_path_buf())))
    {
        return true;
    }
    let holds = |entry: &Path| match std::panic::catch_unwind(|| disk::exists(entry)) {
        Ok(Ok(exists)) => exists,
        Ok(Err(error)) => error.raw_os_error() == Some(libc::EIO),
        Err(_) => false,
    };
    if holds(&path) {
        return true;
    }
    let provided = paths
        .provided
        .try_borrow()
        .is_ok_and(|dirs| dirs.contains(&(node, parent.to_path_buf())));
    parent != Path::new("/") && !provided && holds(parent)
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
/// (`/tmp` for `tempfile`'s `/tmp/.tmpXXXX`, a project's `target/tmp`). So too for each
/// directory a `..` of the path steps out of (`/dev` in `/dev/../tmp/x`), which the kernel
/// walks through. A relative path needs none: its parent is below the node's working
/// directory, the disk's root.
fn provide_parents(path: &Path) {
    if !path.is_absolute() {
        return;
    }
    let mut walked = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::Normal(name) => walked.push(name),
            Component::ParentDir => {
                provide(&walked);
                walked.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    if let Some(parent) = walked.parent() {
        provide(parent);
    }
}

/// Gives the disk the deepest directory of `dir` and those above it that the host has, if
/// the disk lacks `dir` (a plain path, from the root).
pub(super) fn provide(dir: &Path) {
    if disk::exists(dir).unwrap_or(true) {
        return;
    }
    let host_dir = dir.ancestors().find(|above| host_has_directory(above));
    let Some(taken) = host_dir.filter(|taken| *taken != Path::new("/")) else {
        return;
    };
    // A failure here (a dead node) is met again by the call itself.
    if disk::create_dir_all_durably(taken).is_ok()
        && let Some(node) = super::calling_node()
        && let Some(paths) = paths()
        && let Ok(mut provided) = paths.provided.try_borrow_mut()
    {
        for above in taken.ancestors().filter(|above| *above != Path::new("/")) {
            provided.insert((node, above.to_path_buf()));
        }
    }
}

/// The answer to `fsync` of the host directory `fd`, when the disk has taken that directory
/// from the host since the program opened it: the disk's directory sync, which is what the
/// program means. `None` for any other descriptor.
fn sync_host_directory(fd: c_int) -> Option<c_int> {
    if !super::in_simulation() || crashtest_hooks::host_files_allowed() {
        return None;
    }
    let path = from_root(&host_directory(fd)?);
    super::calling_node()?;
    let taken = std::panic::catch_unwind(|| disk::exists(&path))
        .ok()?
        .ok()?;
    taken.then(|| status(on_disk("fsync", || disk::sync_dir(&path))))
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
                let (accessed, modified) = unsafe { (&*times, &*times.add(1)) };
                if ![accessed, modified]
                    .iter()
                    .all(|time| (0..1_000_000).contains(&time.tv_usec))
                {
                    return Err(io::Error::from_raw_os_error(libc::EINVAL));
                }
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

impl Unkept {
    /// Makes the change to an entry of the disk, whose modification time `set_modified`
    /// sets.
    fn apply(
        &self,
        set_modified: impl FnOnce(std::time::SystemTime) -> io::Result<()>,
    ) -> io::Result<()> {
        match self {
            Unkept::Owner => Ok(()),
            Unkept::Attribute => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
            Unkept::Times(_) | Unkept::Utimbuf(_) => match self.modified()? {
                Some(time) => set_modified(time),
                None => Ok(()),
            },
        }
    }
}

/// The C answer of `change` to the entry of the disk at `path`.
pub(super) fn unkept_at(path: &Path, change: &Unkept) -> c_int {
    let answer = status(on_disk("a change of an entry", || {
        disk::metadata(path)?;
        change.apply(|time| disk::File::open(path)?.set_modified(time))
    }));
    if answer == 0 {
        changed(path);
    }
    answer
}

/// Whether `fd` is a simulated file's descriptor.
pub(super) fn is_simulated_file(fd: c_int) -> bool {
    descriptors::simulated(fd).is_some()
}

/// The C answer of `change` to the simulated file `fd`, or `None` if `fd` is not one.
pub(super) fn unkept_by(fd: c_int, change: &Unkept) -> Option<c_int> {
    let open = descriptors::simulated(fd)?;
    Some(status(on_disk("a change of an open file", || {
        change.apply(|time| open.file().set_modified(time))
    })))
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    let mut symbols = descriptors::symbols();
    symbols.extend(paths::symbols());
    symbols.extend(listing::symbols());
    symbols.extend(space::symbols());
    symbols
}
