//! The calling node's simulated disk as the stand-in's `tokio::fs` sees it.
//!
//! Implemented by `crashtest-fs` over its own file system, so the stand-in's files get the
//! disk's whole crash model (volatile page cache, torn and lost writes, directory syncs).
//! Paths are owned so that the returned futures borrow nothing from the caller.
//!
//! std makes its `Metadata` only from the OS's answer to `statx`, so the stand-in hands a
//! simulated entry's [`Stat`] to std through the determinism guards: it asks std about
//! [`SIMULATED_ENTRY`] inside [`answering`], and the guards' `statx` answers that one path
//! from the [`Stat`] held there ([`answer_for`]) instead of asking the OS.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, SeekFrom};
use std::mem::MaybeUninit;
use std::path::{Component, Path, PathBuf};
use std::task::{Context, Poll};

use crate::net::BoxFuture;

/// How to open a file, as `OpenOptions` says it.
///
/// ```
/// let create = crashtest_hooks::fs::OpenFlags { write: true, create: true, truncate: true, ..Default::default() };
/// assert!(!create.read);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "the flags of std's OpenOptions, one for one"
)]
pub struct OpenFlags {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Every write goes to the end.
    pub append: bool,
    /// Truncate to zero length.
    pub truncate: bool,
    /// Create the file if it does not exist.
    pub create: bool,
    /// Create the file; fail if it exists.
    pub create_new: bool,
    /// The permission bits of a created file before the umask (0o666 if `None`).
    pub mode: Option<u32>,
}

/// An entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirItem {
    /// The entry's name (not its path).
    pub name: OsString,
    /// True for a directory.
    pub is_dir: bool,
    /// The entry's inode number.
    pub ino: u64,
}

/// What a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The length in bytes (of a file).
    pub len: u64,
    /// True for a directory.
    pub is_dir: bool,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// The inode number.
    pub ino: u64,
    /// The number of hard links.
    pub nlink: u64,
    /// When it was made, in nanoseconds since the Unix epoch (also its access time: the
    /// simulated disk keeps none).
    pub born_ns: i64,
    /// When its data last changed, in nanoseconds since the Unix epoch.
    pub modified_ns: i64,
    /// When the inode last changed, in nanoseconds since the Unix epoch.
    pub changed_ns: i64,
}

/// `path` from the simulated disk's root, as the disk resolves it: lexically, a relative
/// path from the root (a node's working directory), `..` never above it.
///
/// ```
/// use std::path::Path;
/// use crashtest_hooks::fs::from_root;
/// assert_eq!(from_root(Path::new("data/./wal/../log")), Path::new("/data/log"));
/// assert_eq!(from_root(Path::new("/../..//x")), Path::new("/x"));
/// ```
pub fn from_root(path: &Path) -> PathBuf {
    let mut resolved = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => resolved.push(name),
            Component::ParentDir => {
                resolved.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    assert!(resolved.is_absolute(), "a path from the root is absolute");
    resolved
}

/// The path whose `statx` the determinism guards answer from [`answering`]'s [`Stat`]: a
/// path no host has, so that without the guards the OS answers `ENOENT`.
pub const SIMULATED_ENTRY: &str = "/crashtest-simulated-entry-7f3c9e1d";

thread_local! {
    /// The entry [`answering`] holds on this thread.
    static ANSWER: std::cell::Cell<Option<Stat>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `stat` as this thread's answer for [`SIMULATED_ENTRY`] (see the module
/// docs); the previous answer comes back when `f` returns or unwinds.
///
/// ```
/// use crashtest_hooks::fs::{Stat, SIMULATED_ENTRY, answer_for, answering};
/// let stat = Stat {
///     len: 3, is_dir: false, mode: 0o600, ino: 7, nlink: 1,
///     born_ns: 0, modified_ns: 5, changed_ns: 5,
/// };
/// let path = std::ffi::CString::new(SIMULATED_ENTRY).unwrap();
/// assert_eq!(answering(stat, || answer_for(&path)), Some(stat));
/// assert_eq!(answer_for(&path), None);
/// assert_eq!(answering(stat, || answer_for(c"/etc/hosts")), None);
/// ```
pub fn answering<R>(stat: Stat, f: impl FnOnce() -> R) -> R {
    /// Puts the previous answer back, on return and on unwind alike.
    struct Restore(Option<Stat>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ANSWER.set(self.0);
        }
    }
    let _restore = Restore(ANSWER.replace(Some(stat)));
    f()
}

/// The answer for `path` if it is [`SIMULATED_ENTRY`] and [`answering`] holds one on this
/// thread. `None` on a thread whose thread-locals are gone (a guard called from another
/// thread-local's destructor).
pub fn answer_for(path: &std::ffi::CStr) -> Option<Stat> {
    if path.to_bytes() != SIMULATED_ENTRY.as_bytes() {
        return None;
    }
    ANSWER.try_with(std::cell::Cell::get).ok().flatten()
}

/// The calling node's disk.
pub trait Disk: Sync {
    /// Opens a file.
    fn open(
        &self,
        path: PathBuf,
        flags: OpenFlags,
    ) -> BoxFuture<'static, io::Result<Box<dyn DiskFile>>>;

    /// A whole file's contents.
    fn read(&self, path: PathBuf) -> BoxFuture<'static, io::Result<Vec<u8>>>;

    /// Creates or truncates a file and writes `contents` (not synced).
    fn write(&self, path: PathBuf, contents: Vec<u8>) -> BoxFuture<'static, io::Result<()>>;

    /// Creates a directory; with `all`, its missing parents too; each with the permission
    /// bits `mode` before the umask (0o777 if `None`).
    fn create_dir(
        &self,
        path: PathBuf,
        all: bool,
        mode: Option<u32>,
    ) -> BoxFuture<'static, io::Result<()>>;

    /// Gives the file at `original` a second name, `link`.
    fn hard_link(&self, original: PathBuf, link: PathBuf) -> BoxFuture<'static, io::Result<()>>;

    /// Sets the permissions of a file or directory.
    fn set_permissions(
        &self,
        path: PathBuf,
        permissions: std::fs::Permissions,
    ) -> BoxFuture<'static, io::Result<()>>;

    /// Removes a file.
    fn remove_file(&self, path: PathBuf) -> BoxFuture<'static, io::Result<()>>;

    /// Removes an empty directory.
    fn remove_dir(&self, path: PathBuf) -> BoxFuture<'static, io::Result<()>>;

    /// Renames a file or directory, replacing a file at `to`.
    fn rename(&self, from: PathBuf, to: PathBuf) -> BoxFuture<'static, io::Result<()>>;

    /// What `path` is; `NotFound` if nothing.
    fn stat(&self, path: PathBuf) -> BoxFuture<'static, io::Result<Stat>>;

    /// A directory's entries (in an order the seed decides).
    fn read_dir(&self, path: PathBuf) -> BoxFuture<'static, io::Result<Vec<DirItem>>>;
}

/// An open file of the disk.
pub trait DiskFile: Send + Sync {
    /// Reads at the cursor into `buf`; `Ok(0)` at the end of the file.
    fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>>;

    /// Writes at the cursor (at the end in append mode).
    fn poll_write(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>>;

    /// Finishes a write in progress (into the page cache, not to the disk).
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Starts moving the cursor.
    fn start_seek(&mut self, position: SeekFrom) -> io::Result<()>;

    /// Finishes moving the cursor: its new position.
    fn poll_complete(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<u64>>;

    /// Makes the file's data and length durable.
    fn sync_all(&self) -> BoxFuture<'_, io::Result<()>>;

    /// Makes the file's data durable.
    fn sync_data(&self) -> BoxFuture<'_, io::Result<()>>;

    /// Truncates or extends the file.
    fn set_len(&self, len: u64) -> BoxFuture<'_, io::Result<()>>;

    /// The open file's length (wherever its path now leads).
    fn stat(&self) -> BoxFuture<'_, io::Result<Stat>>;

    /// Sets the open file's modification time.
    fn set_modified(&self, time: std::time::SystemTime) -> BoxFuture<'_, io::Result<()>>;

    /// Sets the open file's permissions.
    fn set_permissions(&self, permissions: std::fs::Permissions) -> BoxFuture<'_, io::Result<()>>;

    /// A second handle on the open file, sharing its cursor (as `dup(2)` makes one).
    fn try_clone(&self) -> BoxFuture<'_, io::Result<Box<dyn DiskFile>>>;
}

impl fmt::Debug for dyn Disk + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Disk")
    }
}

impl fmt::Debug for dyn DiskFile + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DiskFile")
    }
}
