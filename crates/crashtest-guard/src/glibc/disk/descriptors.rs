//! The descriptors of simulated files, and the calls on them.
//!
//! The run's table maps a descriptor number to its [`Open`] file: the disk's handle, the
//! path it was opened at, its status flags and its cursor. Duplicates (`dup`, `dup2`, `dup3`,
//! `fcntl(F_DUPFD)`) share one `Open`, cursor and all, as duplicated descriptors share an
//! open file description; `close` forgets a number, and the last one releases the disk's
//! handle and the file's `flock`. Each guard here answers from the disk when its descriptor
//! is in the table and forwards to libc otherwise, so a call on any other descriptor costs a
//! thread-local read and a lookup.
//!
//! The table is an extension of the run: it starts empty in every run and goes with it.
//! Numbers come from the OS and never reach the trace. A number closed behind the guards'
//! back (a raw `close_range` system call) stays in the table until the run ends.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_int, c_uint, c_ulong, c_void};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::panic;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use libc::{iovec, off_t, off64_t, size_t, ssize_t, timespec};

use super::{disk, errno_of, fail_with, on_disk, provide_parents, status};
use crate::glibc::next::Next;

/// An open simulated file or directory, shared by a descriptor and its duplicates.
pub(super) struct Open {
    /// Names this open file in the lock table.
    id: u64,
    /// The device and inode of its memfd: a number that no longer refers to it was closed
    /// behind the guards' back and reused.
    identity: (u64, u64),
    file: disk::File,
    /// The node whose disk holds the file, with its inode: the lock table's key.
    inode: (usize, u64),
    /// The path it was opened at (a directory's, for calls relative to it).
    pub(super) path: PathBuf,
    pub(super) dir: bool,
    /// The status flags `F_GETFL` reports: the access mode, `O_APPEND`, `O_NONBLOCK`,
    /// `O_SYNC`, `O_DSYNC`.
    status: Cell<c_int>,
    cursor: Cell<u64>,
}

impl Open {
    /// The disk's handle.
    pub(super) fn file(&self) -> &disk::File {
        &self.file
    }
}

/// A file's `flock`: held shared by some open files, or exclusively by one.
enum Lock {
    Shared(BTreeSet<u64>),
    Exclusive(u64),
}

/// The simulated descriptors of the running simulation.
#[derive(Default)]
struct Table {
    files: RefCell<BTreeMap<c_int, Rc<Open>>>,
    locks: RefCell<BTreeMap<LockKey, Lock>>,
    next_id: Cell<u64>,
}

thread_local! {
    static TABLE: crashtest_core::plumbing::checks::ExtensionCache<Table> =
        const { crashtest_core::plumbing::checks::ExtensionCache::new() };
}

/// The running simulation's table; `None` outside one, while the simulator's state is in use
/// (no file of the disk can be opened then either), or once the thread's locals are gone.
fn table() -> Option<Rc<Table>> {
    panic::catch_unwind(|| {
        // Gone once the thread's locals are destroyed: `std::process::exit` inside a run
        // destroys them before the exit handlers write (a trace file's last events).
        TABLE
            .try_with(|cache| {
                cache.get(|table| {
                    crashtest_core::plumbing::life::add_node_hook(Rc::new(ReleaseOnKill(
                        Rc::downgrade(table),
                    )));
                })
            })
            .ok()
            .flatten()
    })
    .ok()
    .flatten()
}

/// Releases a killed node's locks, as the death of a process releases its: a `File` the
/// program leaked (held for the process's life) outlives the node's tasks, but not its
/// locks.
struct ReleaseOnKill(std::rc::Weak<Table>);

impl crashtest_core::plumbing::life::NodeHook for ReleaseOnKill {
    fn node_killed(&self, node: crashtest_core::node::NodeId) {
        if let Some(table) = self.0.upgrade()
            && let Ok(mut locks) = table.locks.try_borrow_mut()
        {
            locks.retain(|(_, (owner, _)), _| *owner != node.index());
        }
    }
}

/// The simulated file `fd` refers to, if it is one. A number in the table whose descriptor
/// is no longer the file's memfd (closed behind the guards' back, by a raw `close_range`,
/// and handed out again) is forgotten here, so a host file never reaches the disk.
#[inline]
pub(super) fn simulated(fd: c_int) -> Option<Rc<Open>> {
    if fd < 0 || !super::super::in_simulation() {
        return None;
    }
    let table = table()?;
    let open = table.files.try_borrow().ok()?.get(&fd).cloned()?;
    if crate::glibc::identity(fd) == Some(open.identity) {
        return Some(open);
    }
    forget(&table, fd);
    None
}

/// Forgets `fd`'s entry; the last number of an open file releases its `flock`.
fn forget(table: &Table, fd: c_int) {
    let Ok(mut files) = table.files.try_borrow_mut() else {
        return;
    };
    let Some(open) = files.remove(&fd) else {
        return;
    };
    drop(files);
    if Rc::strong_count(&open) == 1 {
        unlock(table, &open);
    }
}

/// Puts `open` in the table under `fd`, a number the OS just handed out; a stale entry
/// still there (see [`simulated`]) is forgotten first.
fn insert(table: &Table, fd: c_int, open: Rc<Open>) {
    forget(table, fd);
    if let Ok(mut files) = table.files.try_borrow_mut() {
        files.insert(fd, open);
    }
}

/// The path of the simulated directory `fd` refers to, if it is one. The disk's handles
/// know their directory by the path it was opened at, so a call relative to a directory
/// renamed or removed since then would reach another directory, or none: that fails the
/// run, as what is not simulated does. A path the disk cannot look at (an I/O error, or a
/// dead process's call: a destructor that runs as a killed node) says nothing of a move: the
/// call goes on, and fails as every call there does.
pub(super) fn directory_path(fd: c_int) -> Option<PathBuf> {
    let open = simulated(fd).filter(|open| open.dir)?;
    let path = &open.path;
    let now = panic::catch_unwind(|| disk::metadata(path).map(|meta| meta.ino()));
    let moved = match &now {
        Ok(Ok(ino)) => *ino != open.inode.1,
        Ok(Err(error)) => matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)),
        Err(_) => true,
    };
    if moved {
        super::super::fail(format!(
            "a call relative to the descriptor of the directory {:?}, which was renamed or \
             removed since it was opened: a simulated directory descriptor is known by its \
             path, so calls relative to a moved directory are not simulated. Name the \
             directory by its new path instead.",
            open.path
        ));
    }
    Some(open.path.clone())
}

/// What a simulated descriptor's entry is now.
pub(super) fn stat_of(open: &Open) -> io::Result<super::paths::Entry> {
    Ok(super::paths::Entry {
        stat: open.file.metadata()?.stat(),
        node: Some(open.inode.0),
    })
}

/// A new descriptor for a simulated file: an empty memfd, sealed so that nothing the kernel
/// does with it (a `sendfile`, a `write` that escaped the guards) can give it contents.
fn new_descriptor(cloexec: bool) -> Result<c_int, c_int> {
    let mut flags = libc::MFD_ALLOW_SEALING;
    if cloexec {
        flags |= libc::MFD_CLOEXEC;
    }
    // SAFETY: the name is NUL-terminated; memfd_create has no other preconditions.
    let fd = unsafe { libc::memfd_create(c"crashtest-simulated-file".as_ptr(), flags) };
    if fd < 0 {
        return Err(crate::glibc::errno());
    }
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: `fd` is the memfd just made; F_ADD_SEALS takes an int. libc's own `fcntl` and
    // `close`: a guard never calls a guard.
    if unsafe { REAL_FCNTL.get()(fd, libc::F_ADD_SEALS, seals as c_ulong) } != 0 {
        let code = crate::glibc::errno();
        // SAFETY: `fd` is ours and open.
        unsafe { REAL_CLOSE.get()(fd) };
        return Err(code);
    }
    Ok(fd)
}

/// Opens `path` on the calling node's disk with `open(2)`'s `flags` and `mode`, and returns
/// its new descriptor, or -1 with `errno`.
pub(super) fn open(path: &Path, flags: c_int, mode: c_uint) -> c_int {
    if flags & libc::O_TMPFILE == libc::O_TMPFILE {
        // Unnamed files are not simulated; callers fall back to a named one.
        return fail_with(libc::EOPNOTSUPP);
    }
    let (read, write) = match flags & libc::O_ACCMODE {
        libc::O_RDONLY => (true, false),
        libc::O_WRONLY => (false, true),
        libc::O_RDWR => (true, true),
        _ => return fail_with(libc::EINVAL),
    };
    let creates = flags & libc::O_CREAT != 0;
    // The descriptor first: once the disk has created or cut the file, the call must not
    // fail for want of one (a retry with O_EXCL would then find the file there).
    let Some(table) = table().filter(|table| table.files.try_borrow_mut().is_ok()) else {
        return fail_with(libc::EIO);
    };
    let fd = match new_descriptor(flags & libc::O_CLOEXEC != 0) {
        Ok(fd) => fd,
        Err(code) => return fail_with(code),
    };
    let discard = |code: c_int| {
        // SAFETY: `fd` is the memfd just made, and ours.
        unsafe { REAL_CLOSE.get()(fd) };
        fail_with(code)
    };
    let Some(identity) = crate::glibc::identity(fd) else {
        return discard(crate::glibc::errno());
    };
    let opened = on_disk("open", || {
        if creates {
            provide_parents(path);
        }
        let creating = |options: &mut disk::OpenOptions| {
            if flags & libc::O_EXCL != 0 {
                options.create_new(true);
            } else {
                options.create(true);
            }
            options.mode(mode & 0o7777);
        };
        if creates && !write {
            // Linux creates a file opened read-only with O_CREAT (a C lock file's idiom);
            // std's options, which the disk takes, refuse that: create it, then open it.
            let mut create = disk::OpenOptions::new();
            create.write(true);
            creating(&mut create);
            create.open(path)?;
        }
        // Appending is the status flag's (`write_to`), which `F_SETFL` may turn on and off,
        // so the disk's handle is opened without it.
        let mut options = disk::OpenOptions::new();
        options
            .read(read)
            .write(write)
            .truncate(write && flags & libc::O_TRUNC != 0);
        if creates && write {
            creating(&mut options);
        }
        let file = options.open(path)?;
        let metadata = file.metadata()?;
        if flags & libc::O_DIRECTORY != 0 && !metadata.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        let node = crashtest_core::plumbing::current_node().map_or(0, |node| node.index());
        Ok((file, metadata.is_dir(), (node, metadata.ino())))
    });
    let (file, dir, inode) = match opened {
        Some(Ok(opened)) => opened,
        Some(Err(error)) => return discard(errno_of(&error)),
        None => return discard(libc::EIO),
    };
    let kept = libc::O_ACCMODE | libc::O_APPEND | libc::O_NONBLOCK | libc::O_SYNC | libc::O_DSYNC;
    let id = table.next_id.get();
    table.next_id.set(id + 1);
    let open = Rc::new(Open {
        id,
        identity,
        file,
        inode,
        path: path.to_path_buf(),
        dir,
        status: Cell::new(flags & kept),
        cursor: Cell::new(0),
    });
    insert(&table, fd, open);
    fd
}

/// Forgets `fd` if it is a simulated file's, as its `close` is about to close it; the last
/// descriptor of an open file releases its `flock` (and, as it drops, the disk's handle).
pub(in crate::glibc) fn closing(fd: c_int) {
    if let Some(table) = table() {
        forget(&table, fd);
    }
}

/// Registers `new` as a duplicate of the simulated `open` (a number the OS just handed out).
fn duplicated(open: Rc<Open>, new: c_int) {
    if new >= 0
        && let Some(table) = table()
    {
        insert(&table, new, open);
    }
}

// ----- data -----

/// Reads at `at`, or at the cursor (which it then moves) when `at` is `None`.
fn read_from(open: &Open, buf: &mut [u8], at: Option<u64>) -> io::Result<usize> {
    if open.dir {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    let offset = at.unwrap_or(open.cursor.get());
    let n = open.file.read_at(buf, offset)?;
    assert!(n <= buf.len(), "a read fills at most its buffer");
    if at.is_none() {
        open.cursor.set(offset + n as u64);
    }
    Ok(n)
}

/// Writes at `at`, or at the cursor (which it then moves) when `at` is `None`; at the end of
/// the file in append mode, for both, as Linux does. With `O_SYNC` or `O_DSYNC` the write is
/// durable when it returns.
fn write_to(open: &Open, data: &[u8], at: Option<u64>) -> io::Result<usize> {
    if open.dir {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    if data.is_empty() {
        // A write of nothing changes nothing, not even the length of a file it starts past.
        return Ok(0);
    }
    let status = open.status.get();
    let offset = if status & libc::O_APPEND != 0 {
        open.file.len()?
    } else {
        at.unwrap_or(open.cursor.get())
    };
    let n = open.file.write_at(data, offset)?;
    assert_eq!(n, data.len(), "a simulated write writes all it is given");
    if at.is_none() {
        open.cursor.set(offset + n as u64);
    }
    if status & libc::O_DSYNC != 0 {
        open.file.sync_data()?;
    }
    Ok(n)
}

/// The bytes `buf` points at, `len` of them.
///
/// # Safety
///
/// `buf` is valid for `len` bytes, or `len` is 0.
unsafe fn bytes<'a>(buf: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 {
        return &[];
    }
    // SAFETY: by the caller's contract.
    unsafe { std::slice::from_raw_parts(buf.cast(), len) }
}

/// The bytes `buf` points at, `len` of them, to fill.
///
/// # Safety
///
/// `buf` is valid for writing `len` bytes, or `len` is 0.
unsafe fn bytes_mut<'a>(buf: *mut c_void, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: by the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) }
}

/// The buffers of an `iovec` array.
///
/// # Safety
///
/// `iov` points at `count` `iovec`s, each valid for its length.
unsafe fn buffers<'a>(iov: *const iovec, count: c_int) -> io::Result<&'a [iovec]> {
    let count = usize::try_from(count)
        .ok()
        .filter(|&count| count <= 1024)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    if count == 0 {
        return Ok(&[]);
    }
    // SAFETY: by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(iov, count) })
}

/// Fills the buffers of an `iovec` array in turn from `at` (or the cursor), stopping at the
/// file's end. An error after some bytes were read returns the bytes read, as the kernel's
/// partial read does.
///
/// # Safety
///
/// `iov` points at `count` `iovec`s, each valid for writing its length.
unsafe fn read_vectored(
    open: &Open,
    iov: *const iovec,
    count: c_int,
    mut at: Option<u64>,
) -> io::Result<usize> {
    let mut total = 0;
    // SAFETY: by the caller's contract.
    for buffer in unsafe { buffers(iov, count)? } {
        // SAFETY: as above.
        let buf = unsafe { bytes_mut(buffer.iov_base, buffer.iov_len) };
        let n = match read_from(open, buf, at) {
            Ok(n) => n,
            Err(_) if total > 0 => break,
            Err(error) => return Err(error),
        };
        total += n;
        at = at.map(|at| at + n as u64);
        if n < buffer.iov_len {
            break;
        }
    }
    Ok(total)
}

/// Writes the buffers of an `iovec` array as one write at `at` (or the cursor), as the kernel
/// makes it.
///
/// # Safety
///
/// `iov` points at `count` `iovec`s, each valid for reading its length.
unsafe fn write_vectored(
    open: &Open,
    iov: *const iovec,
    count: c_int,
    at: Option<u64>,
) -> io::Result<usize> {
    let mut data = Vec::new();
    // SAFETY: by the caller's contract.
    for buffer in unsafe { buffers(iov, count)? } {
        // SAFETY: as above.
        data.extend_from_slice(unsafe { bytes(buffer.iov_base, buffer.iov_len) });
    }
    write_to(open, &data, at)
}

/// The C answer of a call that returns a count or -1 with `errno`.
fn counted(result: Option<io::Result<usize>>) -> ssize_t {
    match result {
        Some(Ok(n)) => ssize_t::try_from(n).expect("a count fits in ssize_t"),
        Some(Err(error)) => fail_with(errno_of(&error)) as ssize_t,
        None => fail_with(libc::EIO) as ssize_t,
    }
}

/// An offset from C, refused when negative.
fn offset(at: i64) -> io::Result<u64> {
    u64::try_from(at).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Moves the cursor as `lseek(2)` does.
fn seek(open: &Open, to: i64, whence: c_int) -> io::Result<i64> {
    let base = match whence {
        libc::SEEK_SET => 0,
        libc::SEEK_CUR => open.cursor.get(),
        libc::SEEK_END => open.file.len()?,
        libc::SEEK_DATA | libc::SEEK_HOLE => {
            // The disk keeps no holes: all of a file is data, and its end the only hole.
            let len = open.file.len()?;
            let at = u64::try_from(to).unwrap_or(u64::MAX);
            if at >= len {
                return Err(io::Error::from_raw_os_error(libc::ENXIO));
            }
            let found = if whence == libc::SEEK_DATA { at } else { len };
            open.cursor.set(found);
            return Ok(i64::try_from(found).expect("a file's length fits in off_t"));
        }
        _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    let target = i64::try_from(base)
        .ok()
        .and_then(|base| base.checked_add(to))
        .filter(|&target| target >= 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    open.cursor.set(offset(target)?);
    Ok(target)
}

/// The C answer of `lseek`.
fn sought(result: Option<io::Result<i64>>) -> i64 {
    match result {
        Some(Ok(at)) => at,
        Some(Err(error)) => i64::from(fail_with(errno_of(&error))),
        None => i64::from(fail_with(libc::EIO)),
    }
}

/// Extends a file to `offset + len` as `fallocate` with mode 0 does (its length only: the
/// disk allocates nothing ahead); with `FALLOC_FL_KEEP_SIZE`, nothing. Other modes are
/// refused with `EOPNOTSUPP`, as a file system without them refuses them.
fn allocate(open: &Open, mode: c_int, at: i64, len: i64) -> io::Result<()> {
    let (at, len) = (offset(at)?, offset(len)?);
    if len == 0 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    match mode {
        0 => {
            let end = at
                .checked_add(len)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EFBIG))?;
            if end > open.file.len()? {
                open.file.set_len(end)?;
            }
            Ok(())
        }
        libc::FALLOC_FL_KEEP_SIZE => Ok(()),
        _ => Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
    }
}

/// The time a `timespec` of `futimens`/`utimensat` sets: `None` for `UTIME_OMIT`, the
/// simulated clock's now for `UTIME_NOW` (or a null array).
pub(super) fn time_of(time: Option<&timespec>) -> io::Result<Option<SystemTime>> {
    let Some(time) = time else {
        return Ok(Some(crashtest_core::time::system_time()));
    };
    match time.tv_nsec {
        libc::UTIME_OMIT => Ok(None),
        libc::UTIME_NOW => Ok(Some(crashtest_core::time::system_time())),
        nanos if (0..1_000_000_000).contains(&nanos) => {
            let nanos = u32::try_from(nanos).expect("checked to be below a second");
            let since = |secs: u64| Duration::new(secs, nanos);
            Ok(Some(if time.tv_sec >= 0 {
                SystemTime::UNIX_EPOCH + since(time.tv_sec.unsigned_abs())
            } else {
                SystemTime::UNIX_EPOCH - Duration::from_secs(time.tv_sec.unsigned_abs())
                    + Duration::new(0, nanos)
            }))
        }
        _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// Sets a simulated file's modification time from `utimensat`'s pair (access, modification):
/// the disk keeps no access time.
///
/// # Safety
///
/// `times` is null or points at two `timespec`s.
pub(super) unsafe fn set_times(file: &disk::File, times: *const timespec) -> io::Result<()> {
    // SAFETY: by the caller's contract, the second of two.
    let modified = (!times.is_null()).then(|| unsafe { &*times.add(1) });
    match time_of(modified)? {
        Some(time) => file.set_modified(time),
        None => Ok(()),
    }
}

// ----- locks -----

/// The two kinds of whole-file lock, which Linux keeps apart: `flock`'s, and open file
/// description locks (`fcntl`'s `F_OFD_SETLK` over the whole file). Both belong to an open
/// file, shared by its duplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Style {
    Flock,
    Ofd,
}

/// A lock's kind, and the node and inode of its file.
type LockKey = (Style, (usize, u64));

/// The lock table's key of `open`'s file for `style`.
fn key(open: &Open, style: Style) -> LockKey {
    (style, open.inode)
}

/// Takes or releases a whole-file lock of `style` as `flock(2)` does (`LOCK_SH`, `LOCK_EX`,
/// `LOCK_UN`, with `LOCK_NB`). A simulation cannot wait inside a blocking call (nothing else
/// runs meanwhile), so a lock that would have to wait fails the run instead of hanging it,
/// unless the caller asked not to wait (`EWOULDBLOCK`).
fn take_lock(open: &Open, style: Style, operation: c_int) -> io::Result<()> {
    let Some(table) = table() else {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    };
    let kind = operation & !libc::LOCK_NB;
    match kind {
        libc::LOCK_UN => {
            release(&table, open, style);
            return Ok(());
        }
        libc::LOCK_SH | libc::LOCK_EX => {}
        _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
    if conflicting(&table, open, style, kind).is_some() {
        return would_wait(open, style, operation & libc::LOCK_NB == 0);
    }
    // No other open file holds a lock in the way: this one takes it, or converts its own.
    let key = key(open, style);
    let mut locks = table.locks.borrow_mut();
    match locks.get_mut(&key) {
        Some(Lock::Shared(holders)) if kind == libc::LOCK_SH => {
            holders.insert(open.id);
        }
        _ if kind == libc::LOCK_SH => {
            locks.insert(key, Lock::Shared(BTreeSet::from([open.id])));
        }
        _ => {
            locks.insert(key, Lock::Exclusive(open.id));
        }
    }
    Ok(())
}

/// The whole-file lock of `style` another open file holds on `open`'s file that a lock of
/// kind `operation` (`LOCK_SH` or `LOCK_EX`) would conflict with: `F_RDLCK` or `F_WRLCK`.
fn conflicting(table: &Table, open: &Open, style: Style, operation: c_int) -> Option<c_int> {
    let locks = table.locks.borrow();
    match locks.get(&key(open, style))? {
        Lock::Exclusive(holder) if *holder != open.id => Some(libc::F_WRLCK),
        Lock::Shared(holders)
            if operation == libc::LOCK_EX && holders.iter().any(|&id| id != open.id) =>
        {
            Some(libc::F_RDLCK)
        }
        _ => None,
    }
}

/// A lock that another open file holds: `EWOULDBLOCK`, and a failed run if the caller would
/// have waited.
fn would_wait(open: &Open, style: Style, wait: bool) -> io::Result<()> {
    if wait {
        let call = match style {
            Style::Flock => "flock",
            Style::Ofd => "fcntl(F_OFD_SETLKW)",
        };
        super::super::fail(format!(
            "{call}({:?}) would wait for a lock that another open file of the same node holds: \
             a blocking call cannot wait inside a simulation, where nothing else runs \
             meanwhile. Take the lock without waiting (LOCK_NB, File::try_lock, F_OFD_SETLK) \
             and retry after an .await, or hold it in one place.",
            open.path
        ));
    }
    Err(io::Error::from_raw_os_error(libc::EWOULDBLOCK))
}

/// Releases `open`'s lock of `style`, if it holds one.
fn release(table: &Table, open: &Open, style: Style) {
    let key = key(open, style);
    let mut locks = table.locks.borrow_mut();
    let emptied = match locks.get_mut(&key) {
        Some(Lock::Exclusive(holder)) => *holder == open.id,
        Some(Lock::Shared(holders)) => {
            holders.remove(&open.id);
            holders.is_empty()
        }
        None => false,
    };
    if emptied {
        locks.remove(&key);
    }
}

/// Releases every lock `open` holds: its last descriptor is closing.
fn unlock(table: &Table, open: &Open) {
    release(table, open, Style::Flock);
    release(table, open, Style::Ofd);
}

/// `fcntl`'s open file description locks on a simulated file. A lock over the whole file
/// (`SEEK_SET`, start 0, length 0, as `File::lock`-like crates take it) is `flock`'s kind of
/// lock, kept apart from `flock`'s, and conflicts with other open files' as on Linux; a byte
/// range is granted at once (ranges are not modelled).
///
/// # Safety
///
/// `lock` is null or points at a `struct flock`, valid for writing when `cmd` is
/// `F_OFD_GETLK`.
unsafe fn ofd_lock(open: &Open, cmd: c_int, lock: *mut libc::flock) -> c_int {
    if lock.is_null() {
        return fail_with(libc::EFAULT);
    }
    // SAFETY: by the caller's contract.
    let asked = unsafe { &mut *lock };
    let whole =
        c_int::from(asked.l_whence) == libc::SEEK_SET && asked.l_start == 0 && asked.l_len == 0;
    let operation = match c_int::from(asked.l_type) {
        libc::F_RDLCK => libc::LOCK_SH,
        libc::F_WRLCK => libc::LOCK_EX,
        libc::F_UNLCK => libc::LOCK_UN,
        _ => return fail_with(libc::EINVAL),
    };
    if cmd == libc::F_OFD_GETLK {
        let found = whole
            .then(table)
            .flatten()
            .and_then(|table| conflicting(&table, open, Style::Ofd, operation));
        match found {
            Some(kind) => {
                asked.l_type = kind as libc::c_short;
                asked.l_pid = -1;
            }
            None => asked.l_type = libc::F_UNLCK as libc::c_short,
        }
        return 0;
    }
    if !whole {
        return 0;
    }
    let nonblocking = if cmd == libc::F_OFD_SETLK {
        libc::LOCK_NB
    } else {
        0
    };
    status(on_disk("fcntl", || {
        take_lock(open, Style::Ofd, operation | nonblocking)
    }))
}

// ----- the guards -----

/// Defines the guard `$name` (libc's `$symbol`) of a call on the descriptor `$fd`: `$body`
/// answers it, with `$open` the simulated file, when `$fd` is one; libc otherwise, after
/// [`refused_descriptor`](crate::glibc::files::refused_descriptor) when the call changes a
/// host file (`else refuse as`).
macro_rules! descriptor_call {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident: $fn:ty,
        ($fd:ident: c_int $(, $arg:ident: $ty:ty)*) -> $ret:ty, |$open:ident| $body:expr
        $(, else refuse as $refused:literal)? $(, else answer $host:expr)?) => {
        // SAFETY: `$fn` is the C declaration of this glibc function.
        static $next: Next<$fn> = unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($fd: c_int $(, $arg: $ty)*) -> $ret {
            if let Some($open) = simulated($fd) {
                #[allow(unused_unsafe, reason = "some bodies read the caller's pointers")]
                // SAFETY: the caller's pointers, valid as the C function's contract says.
                return unsafe { $body };
            }
            $(
                if crate::glibc::files::refused_descriptor($refused, $fd) {
                    return -1;
                }
            )?
            $(
                if let Some(answer) = $host {
                    return answer;
                }
            )?
            // SAFETY: the caller's arguments, unchanged, to the function this one hides.
            unsafe { $next.get()($fd $(, $arg)*) }
        }
    };
}

descriptor_call!(
    /// `read(2)`: at a simulated file's cursor.
    read = c"read", REAL_READ: unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t,
    (fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t,
    |open| counted(on_disk("read", || read_from(&open, bytes_mut(buf, count), None)))
);
descriptor_call!(
    /// `write(2)`: at a simulated file's cursor (its end in append mode).
    write = c"write", REAL_WRITE: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t,
    (fd: c_int, buf: *const c_void, count: size_t) -> ssize_t,
    |open| counted(on_disk("write", || write_to(&open, bytes(buf, count), None)))
);
descriptor_call!(
    /// `pread(2)`: at an offset, leaving the cursor.
    pread = c"pread", REAL_PREAD: unsafe extern "C" fn(c_int, *mut c_void, size_t, off_t) -> ssize_t,
    (fd: c_int, buf: *mut c_void, count: size_t, at: off_t) -> ssize_t,
    |open| counted(on_disk("pread", || read_from(&open, bytes_mut(buf, count), Some(offset(at)?))))
);
descriptor_call!(
    /// `pread64`: as [`pread`].
    pread64 = c"pread64",
    REAL_PREAD64: unsafe extern "C" fn(c_int, *mut c_void, size_t, off64_t) -> ssize_t,
    (fd: c_int, buf: *mut c_void, count: size_t, at: off64_t) -> ssize_t,
    |open| counted(on_disk("pread64", || read_from(&open, bytes_mut(buf, count), Some(offset(at)?))))
);
descriptor_call!(
    /// `pwrite(2)`: at an offset (the end in append mode, as on Linux), leaving the cursor.
    pwrite = c"pwrite",
    REAL_PWRITE: unsafe extern "C" fn(c_int, *const c_void, size_t, off_t) -> ssize_t,
    (fd: c_int, buf: *const c_void, count: size_t, at: off_t) -> ssize_t,
    |open| counted(on_disk("pwrite", || write_to(&open, bytes(buf, count), Some(offset(at)?))))
);
descriptor_call!(
    /// `pwrite64`: as [`pwrite`].
    pwrite64 = c"pwrite64",
    REAL_PWRITE64: unsafe extern "C" fn(c_int, *const c_void, size_t, off64_t) -> ssize_t,
    (fd: c_int, buf: *const c_void, count: size_t, at: off64_t) -> ssize_t,
    |open| counted(on_disk("pwrite64", || write_to(&open, bytes(buf, count), Some(offset(at)?))))
);
descriptor_call!(
    /// `readv(2)`: see [`read_vectored`].
    readv = c"readv", REAL_READV: unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int) -> ssize_t,
    |open| counted(on_disk("readv", || read_vectored(&open, iov, count, None)))
);
descriptor_call!(
    /// `writev(2)`: see [`write_vectored`].
    writev = c"writev", REAL_WRITEV: unsafe extern "C" fn(c_int, *const iovec, c_int) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int) -> ssize_t,
    |open| counted(on_disk("writev", || write_vectored(&open, iov, count, None)))
);
descriptor_call!(
    /// `preadv(2)`: as [`readv`], at an offset, leaving the cursor.
    preadv = c"preadv",
    REAL_PREADV: unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int, at: off_t) -> ssize_t,
    |open| counted(on_disk("preadv", || read_vectored(&open, iov, count, Some(offset(at)?))))
);
descriptor_call!(
    /// `preadv64`: as [`preadv`].
    preadv64 = c"preadv64",
    REAL_PREADV64: unsafe extern "C" fn(c_int, *const iovec, c_int, off64_t) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int, at: off64_t) -> ssize_t,
    |open| counted(on_disk("preadv64", || read_vectored(&open, iov, count, Some(offset(at)?))))
);
descriptor_call!(
    /// `preadv2(2)`: as [`preadv`]; an offset of -1 reads at the cursor. The flags (hints)
    /// change nothing on the disk.
    preadv2 = c"preadv2",
    REAL_PREADV2: unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int, at: off_t, flags: c_int) -> ssize_t,
    |open| counted(on_disk("preadv2", || {
        let _ = flags;
        let at = if at == -1 { None } else { Some(offset(at)?) };
        read_vectored(&open, iov, count, at)
    }))
);
descriptor_call!(
    /// `pwritev(2)`: as [`writev`], at an offset, leaving the cursor.
    pwritev = c"pwritev",
    REAL_PWRITEV: unsafe extern "C" fn(c_int, *const iovec, c_int, off_t) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int, at: off_t) -> ssize_t,
    |open| counted(on_disk("pwritev", || write_vectored(&open, iov, count, Some(offset(at)?))))
);
descriptor_call!(
    /// `pwritev64`: as [`pwritev`].
    pwritev64 = c"pwritev64",
    REAL_PWRITEV64: unsafe extern "C" fn(c_int, *const iovec, c_int, off64_t) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int, at: off64_t) -> ssize_t,
    |open| counted(on_disk("pwritev64", || write_vectored(&open, iov, count, Some(offset(at)?))))
);
descriptor_call!(
    /// `pwritev2(2)`: as [`pwritev`]; an offset of -1 writes at the cursor. `RWF_DSYNC` and
    /// `RWF_SYNC` make the write durable when it returns, as `O_DSYNC` does.
    pwritev2 = c"pwritev2",
    REAL_PWRITEV2: unsafe extern "C" fn(c_int, *const iovec, c_int, off_t, c_int) -> ssize_t,
    (fd: c_int, iov: *const iovec, count: c_int, at: off_t, flags: c_int) -> ssize_t,
    |open| counted(on_disk("pwritev2", || {
        let at = if at == -1 { None } else { Some(offset(at)?) };
        let written = write_vectored(&open, iov, count, at)?;
        if flags & (libc::RWF_DSYNC | libc::RWF_SYNC) != 0 {
            open.file.sync_data()?;
        }
        Ok(written)
    }))
);
descriptor_call!(
    /// `lseek(2)`.
    lseek = c"lseek", REAL_LSEEK: unsafe extern "C" fn(c_int, off_t, c_int) -> off_t,
    (fd: c_int, to: off_t, whence: c_int) -> off_t,
    |open| sought(on_disk("lseek", || seek(&open, to, whence)))
);
descriptor_call!(
    /// `lseek64`: as [`lseek`].
    lseek64 = c"lseek64", REAL_LSEEK64: unsafe extern "C" fn(c_int, off64_t, c_int) -> off64_t,
    (fd: c_int, to: off64_t, whence: c_int) -> off64_t,
    |open| sought(on_disk("lseek64", || seek(&open, to, whence)))
);
descriptor_call!(
    /// `fsync(2)`: makes the file (or the directory's entries) durable.
    fsync = c"fsync", REAL_FSYNC: unsafe extern "C" fn(c_int) -> c_int,
    (fd: c_int) -> c_int,
    |open| status(on_disk("fsync", || open.file.sync_all())),
    else answer super::sync_host_directory(fd)
);
descriptor_call!(
    /// `fdatasync(2)`: makes the file's data durable.
    fdatasync = c"fdatasync", REAL_FDATASYNC: unsafe extern "C" fn(c_int) -> c_int,
    (fd: c_int) -> c_int,
    |open| status(on_disk("fdatasync", || open.file.sync_data())),
    else answer super::sync_host_directory(fd)
);
descriptor_call!(
    /// `sync_file_range(2)`: starts writeback, which promises nothing durable, so the disk
    /// has nothing to do.
    sync_file_range = c"sync_file_range",
    REAL_SYNC_FILE_RANGE: unsafe extern "C" fn(c_int, off64_t, off64_t, c_uint) -> c_int,
    (fd: c_int, at: off64_t, len: off64_t, flags: c_uint) -> c_int,
    |open| status(Some(if at < 0 || len < 0 || open.dir {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    } else {
        let _ = flags;
        Ok(())
    }))
);
descriptor_call!(
    /// `ftruncate(2)`.
    ftruncate = c"ftruncate", REAL_FTRUNCATE: unsafe extern "C" fn(c_int, off_t) -> c_int,
    (fd: c_int, len: off_t) -> c_int,
    |open| status(on_disk("ftruncate", || open.file.set_len(offset(len)?)))
);
descriptor_call!(
    /// `ftruncate64`: as [`ftruncate`].
    ftruncate64 = c"ftruncate64", REAL_FTRUNCATE64: unsafe extern "C" fn(c_int, off64_t) -> c_int,
    (fd: c_int, len: off64_t) -> c_int,
    |open| status(on_disk("ftruncate64", || open.file.set_len(offset(len)?)))
);
descriptor_call!(
    /// `fallocate(2)`: see [`allocate`].
    fallocate = c"fallocate",
    REAL_FALLOCATE: unsafe extern "C" fn(c_int, c_int, off_t, off_t) -> c_int,
    (fd: c_int, mode: c_int, at: off_t, len: off_t) -> c_int,
    |open| status(on_disk("fallocate", || allocate(&open, mode, at, len)))
);
descriptor_call!(
    /// `fallocate64`: as [`fallocate`].
    fallocate64 = c"fallocate64",
    REAL_FALLOCATE64: unsafe extern "C" fn(c_int, c_int, off64_t, off64_t) -> c_int,
    (fd: c_int, mode: c_int, at: off64_t, len: off64_t) -> c_int,
    |open| status(on_disk("fallocate64", || allocate(&open, mode, at, len)))
);
descriptor_call!(
    /// `posix_fallocate(3)`: as `fallocate` with mode 0; returns the error number.
    posix_fallocate = c"posix_fallocate",
    REAL_POSIX_FALLOCATE: unsafe extern "C" fn(c_int, off_t, off_t) -> c_int,
    (fd: c_int, at: off_t, len: off_t) -> c_int,
    |open| match on_disk("posix_fallocate", || allocate(&open, 0, at, len)) {
        Some(Ok(())) => 0,
        Some(Err(error)) => errno_of(&error),
        None => libc::EIO,
    }
);
descriptor_call!(
    /// `posix_fallocate64`: as [`posix_fallocate`].
    posix_fallocate64 = c"posix_fallocate64",
    REAL_POSIX_FALLOCATE64: unsafe extern "C" fn(c_int, off64_t, off64_t) -> c_int,
    (fd: c_int, at: off64_t, len: off64_t) -> c_int,
    |open| match on_disk("posix_fallocate64", || allocate(&open, 0, at, len)) {
        Some(Ok(())) => 0,
        Some(Err(error)) => errno_of(&error),
        None => libc::EIO,
    }
);
descriptor_call!(
    /// `fstat(2)`: what the disk says of the file.
    fstat = c"fstat", REAL_FSTAT: unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int,
    (fd: c_int, buf: *mut libc::stat) -> c_int,
    |open| super::paths::answer_stat(on_disk("fstat", || stat_of(&open)), buf)
);
descriptor_call!(
    /// `fstat64`: as [`fstat`].
    fstat64 = c"fstat64", REAL_FSTAT64: unsafe extern "C" fn(c_int, *mut libc::stat64) -> c_int,
    (fd: c_int, buf: *mut libc::stat64) -> c_int,
    |open| super::paths::answer_stat(on_disk("fstat64", || stat_of(&open)), buf.cast())
);
descriptor_call!(
    /// `fchmod(2)`: sets the file's permission bits on the disk.
    fchmod = c"fchmod", REAL_FCHMOD: unsafe extern "C" fn(c_int, libc::mode_t) -> c_int,
    (fd: c_int, mode: libc::mode_t) -> c_int,
    |open| status(on_disk("fchmod", || {
        open.file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
    })),
    else refuse as "fchmod"
);
descriptor_call!(
    /// `futimens(2)`: sets the file's modification time on the disk (it keeps no access
    /// time).
    futimens = c"futimens", REAL_FUTIMENS: unsafe extern "C" fn(c_int, *const timespec) -> c_int,
    (fd: c_int, times: *const timespec) -> c_int,
    |open| status(on_disk("futimens", || set_times(&open.file, times))),
    else refuse as "futimens"
);
descriptor_call!(
    /// `flock(2)`: see [`take_lock`].
    flock = c"flock", REAL_FLOCK: unsafe extern "C" fn(c_int, c_int) -> c_int,
    (fd: c_int, operation: c_int) -> c_int,
    |open| status(on_disk("flock", || take_lock(&open, Style::Flock, operation)))
);
descriptor_call!(
    /// `dup(2)`: the duplicate shares the simulated file, cursor and all.
    dup = c"dup", REAL_DUP: unsafe extern "C" fn(c_int) -> c_int,
    (fd: c_int) -> c_int,
    |open| {
        let new = REAL_DUP.get()(fd);
        duplicated(open, new);
        new
    }
);

/// Refuses to map a simulated file: a mapping's loads and stores would bypass the disk, and
/// its crash model with them. Fails the run, and returns `MAP_FAILED` with `ENODEV`.
fn refuse_mapping(open: &Open) -> *mut c_void {
    // SQLite maps its WAL index, the `-shm` file beside the database, and its users cannot
    // change that call, only the mode that makes it.
    let sqlite_wal_index = open
        .path
        .file_name()
        .is_some_and(|name| name.as_encoded_bytes().ends_with(b"-shm"));
    let instead = if sqlite_wal_index {
        "If this is SQLite's WAL index, set `PRAGMA locking_mode=EXCLUSIVE` before \
         `PRAGMA journal_mode=WAL` (SQLite then keeps the index in memory and maps nothing), \
         or use a rollback journal (`journal_mode=DELETE`)."
    } else {
        "Read and write the file with read/write (pread/pwrite) instead; a store built on \
         mappings (LMDB and its bindings) cannot run on the simulated disk."
    };
    super::super::fail(format!(
        "mmap of {:?}, a file on the node's simulated disk: a mapping's loads and stores \
         bypass the disk and its crash model, so it is not simulated. {instead}",
        open.path
    ));
    fail_with(libc::ENODEV);
    libc::MAP_FAILED
}

type MmapFn = unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void;

// SAFETY: the C declarations of `mmap` and `mmap64` (`off_t` is `off64_t` on the supported
// targets).
static REAL_MMAP: Next<MmapFn> = unsafe { Next::new(c"mmap") };
// SAFETY: as above.
static REAL_MMAP64: Next<MmapFn> = unsafe { Next::new(c"mmap64") };

/// `mmap(2)`: refused for a simulated file (see [`refuse_mapping`]).
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    at: off_t,
) -> *mut c_void {
    if let Some(open) = simulated(fd) {
        return refuse_mapping(&open);
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_MMAP.get()(addr, len, prot, flags, fd, at) }
}

/// `mmap64`: as [`mmap`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    at: off64_t,
) -> *mut c_void {
    if let Some(open) = simulated(fd) {
        return refuse_mapping(&open);
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_MMAP64.get()(addr, len, prot, flags, fd, at) }
}

// SAFETY: the C declarations of these glibc functions.
static REAL_CLOSE: Next<unsafe extern "C" fn(c_int) -> c_int> = unsafe { Next::new(c"close") };
// SAFETY: as above.
static REAL_DUP2: Next<unsafe extern "C" fn(c_int, c_int) -> c_int> = unsafe { Next::new(c"dup2") };
// SAFETY: as above.
static REAL_DUP3: Next<unsafe extern "C" fn(c_int, c_int, c_int) -> c_int> =
    unsafe { Next::new(c"dup3") };
// SAFETY: as above; `fcntl` is variadic, and its one optional argument travels in the
// register a third argument would (an int or a pointer, read here as a machine word).
static REAL_FCNTL: Next<unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int> =
    unsafe { Next::new(c"fcntl") };
// SAFETY: as above.
static REAL_FCNTL64: Next<unsafe extern "C" fn(c_int, c_int, c_ulong) -> c_int> =
    unsafe { Next::new(c"fcntl64") };

/// `dup2(2)`: a simulated file's number replaced is closed first; the duplicate of a
/// simulated file shares it.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { duplicate_onto(old, new, || REAL_DUP2.get()(old, new)) }
}

/// `dup3(2)`: as [`dup2`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { duplicate_onto(old, new, || REAL_DUP3.get()(old, new, flags)) }
}

/// Duplicates `old` onto `new` with `call`, keeping the table in step.
///
/// # Safety
///
/// `call` is the C call on the caller's arguments.
fn duplicate_onto(old: c_int, new: c_int, call: impl FnOnce() -> c_int) -> c_int {
    let open = simulated(old);
    if open.is_none() && simulated(new).is_none() {
        return call();
    }
    if old == new {
        // dup2 of a number onto itself changes nothing (dup3 refuses it).
        return call();
    }
    let result = call();
    if result >= 0 {
        // As `close` does: dropping the last handle of a file must not unwind out of here.
        let _ = panic::catch_unwind(|| closing(new));
        if let Some(open) = open {
            duplicated(open, result);
        }
    }
    result
}

/// `fcntl(2)`: for a simulated file, its duplicates (`F_DUPFD`, `F_DUPFD_CLOEXEC`) share it,
/// `F_GETFL` and `F_SETFL` read and set its status flags (`O_APPEND`, `O_NONBLOCK`), a
/// process's record locks are granted at once (a node is one process, and its own record
/// locks never conflict), open file description locks are [`ofd_lock`]'s, and the
/// descriptor flags (`F_GETFD`, `F_SETFD`) are the descriptor's own.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { control(fd, cmd, arg, || REAL_FCNTL.get()(fd, cmd, arg)) }
}

/// `fcntl64`: as [`fcntl`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_ulong) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { control(fd, cmd, arg, || REAL_FCNTL64.get()(fd, cmd, arg)) }
}

/// [`fcntl`]'s answer, with `call` the C call on the caller's arguments.
///
/// # Safety
///
/// As for `fcntl`: `arg` is what `cmd` takes.
fn control(fd: c_int, cmd: c_int, arg: c_ulong, call: impl FnOnce() -> c_int) -> c_int {
    let Some(open) = simulated(fd) else {
        return call();
    };
    match cmd {
        libc::F_DUPFD | libc::F_DUPFD_CLOEXEC => {
            let new = call();
            duplicated(open, new);
            new
        }
        libc::F_GETFL => open.status.get(),
        libc::F_SETFL => {
            let settable = libc::O_APPEND | libc::O_NONBLOCK;
            // The argument is an int, passed in a register whose upper half is undefined.
            #[allow(clippy::cast_possible_truncation, reason = "an int in a machine word")]
            let asked = arg as c_int;
            open.status
                .set(open.status.get() & !settable | asked & settable);
            0
        }
        libc::F_OFD_SETLK | libc::F_OFD_SETLKW | libc::F_OFD_GETLK => {
            // SAFETY: these commands take a pointer to a `struct flock`.
            unsafe { ofd_lock(&open, cmd, arg as *mut libc::flock) }
        }
        libc::F_SETLK | libc::F_SETLKW => 0,
        libc::F_GETLK => {
            let lock = arg as *mut libc::flock;
            if lock.is_null() {
                return fail_with(libc::EFAULT);
            }
            // SAFETY: F_GETLK takes a pointer to a `struct flock`, valid for writing.
            unsafe { (*lock).l_type = libc::F_UNLCK as libc::c_short };
            0
        }
        libc::F_GETFD | libc::F_SETFD => call(),
        _ => fail_with(libc::EINVAL),
    }
}

/// Refuses the kernel's copies between descriptors for a simulated file with `EINVAL`: std's
/// `fs::copy` and `io::copy` then copy through `read` and `write`, which the disk answers.
macro_rules! no_kernel_copy {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident: $fn:ty,
        ($($arg:ident: $ty:ty),*) -> $ret:ty, fds [$($fd:ident),+]) => {
        // SAFETY: `$fn` is the C declaration of this glibc function.
        static $next: Next<$fn> = unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            if false $(|| simulated($fd).is_some())+ {
                return fail_with(libc::EINVAL) as $ret;
            }
            // SAFETY: the caller's arguments, unchanged, to the function this one hides.
            unsafe { $next.get()($($arg),*) }
        }
    };
}

no_kernel_copy!(
    /// `copy_file_range(2)`.
    copy_file_range = c"copy_file_range",
    REAL_COPY_FILE_RANGE: unsafe extern "C" fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t,
    (input: c_int, input_at: *mut off64_t, output: c_int, output_at: *mut off64_t, len: size_t, flags: c_uint)
        -> ssize_t, fds [input, output]
);
no_kernel_copy!(
    /// `sendfile(2)`.
    sendfile = c"sendfile",
    REAL_SENDFILE: unsafe extern "C" fn(c_int, c_int, *mut off_t, size_t) -> ssize_t,
    (output: c_int, input: c_int, at: *mut off_t, len: size_t) -> ssize_t, fds [input, output]
);
no_kernel_copy!(
    /// `sendfile64`.
    sendfile64 = c"sendfile64",
    REAL_SENDFILE64: unsafe extern "C" fn(c_int, c_int, *mut off64_t, size_t) -> ssize_t,
    (output: c_int, input: c_int, at: *mut off64_t, len: size_t) -> ssize_t, fds [input, output]
);
no_kernel_copy!(
    /// `splice(2)`.
    splice = c"splice",
    REAL_SPLICE: unsafe extern "C" fn(c_int, *mut off64_t, c_int, *mut off64_t, size_t, c_uint) -> ssize_t,
    (input: c_int, input_at: *mut off64_t, output: c_int, output_at: *mut off64_t, len: size_t, flags: c_uint)
        -> ssize_t, fds [input, output]
);

/// The guards, for [`crate::glibc::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    vec![
        read as *const (),
        write as *const (),
        pread as *const (),
        pread64 as *const (),
        pwrite as *const (),
        pwrite64 as *const (),
        readv as *const (),
        writev as *const (),
        preadv as *const (),
        preadv64 as *const (),
        preadv2 as *const (),
        pwritev as *const (),
        pwritev64 as *const (),
        pwritev2 as *const (),
        lseek as *const (),
        lseek64 as *const (),
        fsync as *const (),
        fdatasync as *const (),
        sync_file_range as *const (),
        ftruncate as *const (),
        ftruncate64 as *const (),
        fallocate as *const (),
        fallocate64 as *const (),
        posix_fallocate as *const (),
        posix_fallocate64 as *const (),
        fstat as *const (),
        fstat64 as *const (),
        fchmod as *const (),
        futimens as *const (),
        flock as *const (),
        dup as *const (),
        dup2 as *const (),
        dup3 as *const (),
        fcntl as *const (),
        fcntl64 as *const (),
        mmap as *const (),
        mmap64 as *const (),
        copy_file_range as *const (),
        sendfile as *const (),
        sendfile64 as *const (),
        splice as *const (),
    ]
}
