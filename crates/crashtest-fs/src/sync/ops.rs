//! `std::fs`'s free functions on the calling node's disk, and its directory listing.
//!
//! Each has the same simulated body as its async twin in `crate::ops` (the same trace
//! events, faults and crash model), run at once instead of after the disk's latency.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crashtest_core::node::NodeId;
use crashtest_io::SimOrReal;

use super::{File, mutation};
use crate::disk::DIR_MODE;
use crate::errors;
use crate::metadata::{FileType, Metadata};
use crate::ops::{Namespace, SimDirEntry, SimReadDir, namespace_now, write_now};
use crate::path::Names;
use crate::state;

/// Reads a whole file, as `std::fs::read`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/f", b"abc").unwrap();
/// assert_eq!(sync::read("/f").unwrap(), b"abc");
/// # }).unwrap();
/// ```
pub fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return std::fs::read(path);
    };
    let names = Names::parse(path)?;
    state::with(|s| s.read_file(node, &names))
}

/// Reads a whole file as UTF-8, as `std::fs::read_to_string`; `InvalidData` if it is not.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/f", "text").unwrap();
/// assert_eq!(sync::read_to_string("/f").unwrap(), "text");
/// # }).unwrap();
/// ```
pub fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    errors::utf8(read(path)?)
}

/// Creates or replaces a file with `contents`, as `std::fs::write` (not synced: see
/// [`File::sync_all`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/f", b"one").unwrap();
/// sync::write("/f", b"2").unwrap();
/// assert_eq!(sync::read("/f").unwrap(), b"2");
/// # }).unwrap();
/// ```
pub fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let (path, contents) = (path.as_ref(), contents.as_ref());
    let Some(node) = state::current_node()? else {
        return std::fs::write(path, contents);
    };
    let names = Names::parse(path)?;
    mutation()?;
    write_now(node, &names, contents)
}

/// The simulated body of a namespace call on `path`, or `real` outside a simulation.
fn namespace(
    path: &Path,
    change: Namespace<'_>,
    real: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    let Some(node) = state::current_node()? else {
        return real();
    };
    let names = Names::parse(path)?;
    mutation()?;
    namespace_now(node, &names, change)
}

/// Creates a directory, as `std::fs::create_dir` (not synced: see [`sync_dir`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir("/d").unwrap();
/// assert!(sync::metadata("/d").unwrap().is_dir());
/// assert_eq!(sync::create_dir("/d").unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
/// # }).unwrap();
/// ```
pub fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    namespace(path, Namespace::CreateDir(DIR_MODE), || {
        std::fs::create_dir(path)
    })
}

/// Creates a directory with the permission bits `mode` before the umask, as `DirBuilder`
/// with `DirBuilderExt::mode` does (not synced: see [`sync_dir`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir_with_mode("/private", 0o700).unwrap();
/// assert_eq!(sync::metadata("/private").unwrap().mode(), 0o700);
/// # }).unwrap();
/// ```
pub fn create_dir_with_mode(path: impl AsRef<Path>, mode: u32) -> io::Result<()> {
    let path = path.as_ref();
    namespace(path, Namespace::CreateDir(mode), || {
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().mode(mode).create(path)
        }
        #[cfg(not(unix))]
        std::fs::create_dir(path)
    })
}

/// Creates a directory and its missing parents, as `std::fs::create_dir_all`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir_all("/a/b/c").unwrap();
/// assert!(sync::exists("/a/b").unwrap());
/// # }).unwrap();
/// ```
pub fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    namespace(path, Namespace::CreateDirAll(DIR_MODE), || {
        std::fs::create_dir_all(path)
    })
}

/// Creates a directory and its missing parents as directories that were on the disk before
/// the run began: each is durable at once, so no crash undoes it, and no fault stops it.
///
/// This is how the determinism guards give a node's disk a directory that every host has
/// (the temporary directory, say) the first time a program makes something inside it.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// let db = crashtest::node::create("db", || async {
///     if !sync::exists("/tmp/a").unwrap() {
///         sync::create_dir_all_durably("/tmp/a").unwrap();
///         std::future::pending::<()>().await;
///     }
/// });
/// crashtest::time::sleep(std::time::Duration::from_secs(1)).await;
/// db.restart(); // a crash: the directories are still there after it
/// crashtest::time::sleep(std::time::Duration::from_secs(1)).await;
/// # }).unwrap();
/// ```
pub fn create_dir_all_durably(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return std::fs::create_dir_all(path);
    };
    let names = Names::parse(path)?;
    let what = format!("create_dir_all_durably {}", names.display());
    state::with(|s| {
        s.namespace(node, &what, |disk| {
            disk.create_dir_all(&names, DIR_MODE)?;
            for end in 0..names.names.len() {
                let parent = disk.resolve(&Names::new(names.names[..end].to_vec()))?;
                disk.sync_dir(parent);
            }
            Ok(())
        })
    })
}

/// How full the calling node's disk is, as `statvfs` tells it.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/f", [0u8; 100]).unwrap();
/// assert_eq!(sync::space().unwrap(), sync::Space { used: 100, capacity: None });
/// # }).unwrap();
/// ```
///
/// # Errors
///
/// `Unsupported` outside a simulation (std has no such call), `EIO` on a dead node.
pub fn space() -> io::Result<Space> {
    let Some(node) = state::current_node()? else {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a disk's space is known only inside a simulation",
        ));
    };
    let (used, capacity) = state::with(|s| s.space(node));
    Ok(Space { used, capacity })
}

/// How full a node's disk is ([`space`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Space {
    /// Bytes of file data the program sees.
    pub used: u64,
    /// The disk's capacity, if one is set (`DiskConfig::capacity`); unbounded otherwise.
    pub capacity: Option<u64>,
}

/// Removes a file, as `std::fs::remove_file` (not synced: see [`sync_dir`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/f", b"").unwrap();
/// sync::remove_file("/f").unwrap();
/// assert!(!sync::exists("/f").unwrap());
/// # }).unwrap();
/// ```
pub fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    namespace(path, Namespace::RemoveFile, || std::fs::remove_file(path))
}

/// Removes an empty directory, as `std::fs::remove_dir`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir("/d").unwrap();
/// sync::remove_dir("/d").unwrap();
/// assert!(!sync::exists("/d").unwrap());
/// # }).unwrap();
/// ```
pub fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    namespace(path, Namespace::RemoveDir, || std::fs::remove_dir(path))
}

/// Removes a directory and everything under it, as `std::fs::remove_dir_all`: the entries
/// one by one, deepest first, each a removal of its own (a crash midway leaves the rest).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir_all("/db/wal").unwrap();
/// sync::write("/db/wal/1", b"").unwrap();
/// sync::remove_dir_all("/db").unwrap();
/// assert!(!sync::exists("/db").unwrap());
/// # }).unwrap();
/// ```
pub fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    if state::current_node()?.is_none() {
        return std::fs::remove_dir_all(path);
    }
    if !metadata(path)?.is_dir() {
        return Err(errors::not_a_directory());
    }
    for entry in read_dir(path)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_dir_all(entry.path())?;
        } else {
            remove_file(entry.path())?;
        }
    }
    remove_dir(path)
}

/// Copies a file's contents and permission bits to `to`, creating or replacing it, and
/// returns how many bytes it copied, as `std::fs::copy` (not synced).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/a", b"abc").unwrap();
/// assert_eq!(sync::copy("/a", "/b").unwrap(), 3);
/// assert_eq!(sync::read("/b").unwrap(), b"abc");
/// # }).unwrap();
/// ```
pub fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    let (from, to) = (from.as_ref(), to.as_ref());
    let Some(node) = state::current_node()? else {
        return std::fs::copy(from, to);
    };
    let source = metadata(from)?;
    if source.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the source path is neither a regular file nor a symlink to a regular file",
        ));
    }
    // As std's, which cuts the destination before reading the source: a copy onto another
    // name of the same file empties it.
    let same_file = metadata(to).is_ok_and(|target| target.ino() == source.ino());
    let contents = if same_file { Vec::new() } else { read(from)? };
    write(to, &contents)?;
    set_mode(node, to, source.mode())?;
    Ok(contents.len() as u64)
}

/// Gives the file at `original` a second name, `link`, as `std::fs::hard_link` (not synced:
/// see [`sync_dir`]; see [`crate::hard_link`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/a", b"abc").unwrap();
/// sync::hard_link("/a", "/b").unwrap();
/// sync::remove_file("/a").unwrap();
/// assert_eq!(sync::read("/b").unwrap(), b"abc");
/// # }).unwrap();
/// ```
pub fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let (original, link) = (original.as_ref(), link.as_ref());
    let Some(node) = state::current_node()? else {
        return std::fs::hard_link(original, link);
    };
    let original = Names::parse(original)?;
    let link = Names::parse(link)?;
    mutation()?;
    namespace_now(node, &original, Namespace::LinkTo(&link))
}

/// Sets a file's or a directory's permissions, as `std::fs::set_permissions` (durable once
/// the entry is synced; see [`crate::set_permissions`]).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// use std::os::unix::fs::PermissionsExt;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/a", b"abc").unwrap();
/// sync::set_permissions("/a", std::fs::Permissions::from_mode(0o600)).unwrap();
/// assert_eq!(sync::metadata("/a").unwrap().mode(), 0o600);
/// # }).unwrap();
/// ```
pub fn set_permissions(
    path: impl AsRef<Path>,
    permissions: std::fs::Permissions,
) -> io::Result<()> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return std::fs::set_permissions(path, permissions);
    };
    set_mode(node, path, crate::ops::mode_of(&permissions))
}

/// Sets the permission bits of the entry at `path` on `node`'s disk.
fn set_mode(node: NodeId, path: &Path, mode: u32) -> io::Result<()> {
    let names = Names::parse(path)?;
    mutation()?;
    state::with(|s| s.set_mode(node, &names, mode))
}

/// Moves `from` to `to`, replacing a file there, as `std::fs::rename` (atomic, and not
/// synced: a crash before [`sync_dir`] of both parents can undo it).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/MANIFEST.tmp", b"v2").unwrap();
/// sync::rename("/MANIFEST.tmp", "/MANIFEST").unwrap();
/// assert_eq!(sync::read("/MANIFEST").unwrap(), b"v2");
/// # }).unwrap();
/// ```
pub fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    let Some(node) = state::current_node()? else {
        return std::fs::rename(from, to);
    };
    let from = Names::parse(from)?;
    let to = Names::parse(to)?;
    mutation()?;
    namespace_now(node, &from, Namespace::RenameTo(&to))
}

/// What the disk knows of `path`, as `std::fs::metadata`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::write("/f", b"abc").unwrap();
/// assert_eq!(sync::metadata("/f").unwrap().len(), 3);
/// # }).unwrap();
/// ```
pub fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return Ok(Metadata::from_std(&std::fs::metadata(path)?));
    };
    let names = Names::parse(path)?;
    state::with(|s| s.metadata(node, &names))
}

/// Whether `path` exists, as `std::fs::exists`: `Ok(false)` only when it is known not to.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// assert!(!sync::exists("/f").unwrap());
/// sync::write("/f", b"").unwrap();
/// assert!(sync::exists("/f").unwrap());
/// # }).unwrap();
/// ```
pub fn exists(path: impl AsRef<Path>) -> io::Result<bool> {
    errors::exists(metadata(path))
}

/// Makes a directory's entries durable: what std spells `File::open(dir)?.sync_all()`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir("/data").unwrap();
/// sync::write("/data/log", b"record").unwrap();
/// sync::File::open("/data/log").unwrap().sync_all().unwrap();
/// sync::sync_dir("/data").unwrap(); // the entry "log" survives a crash now
/// # }).unwrap();
/// ```
pub fn sync_dir(path: impl AsRef<Path>) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Lists a directory, as `std::fs::read_dir`: the listing is taken when called, in an order
/// the seed decides inside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::fs::sync;
/// # crashtest::Sim::new(1).run(async {
/// sync::create_dir("/wal").unwrap();
/// sync::write("/wal/2", b"").unwrap();
/// sync::write("/wal/1", b"").unwrap();
/// let mut names: Vec<_> = sync::read_dir("/wal")
///     .unwrap()
///     .map(|entry| entry.unwrap().file_name())
///     .collect();
/// names.sort();
/// assert_eq!(names, ["1", "2"]);
/// # }).unwrap();
/// ```
pub fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return Ok(ReadDir {
            inner: SimOrReal::Real(std::fs::read_dir(path)?),
        });
    };
    let names = Names::parse(path)?;
    Ok(ReadDir {
        inner: SimOrReal::Sim(SimReadDir::list(node, path, &names)?),
    })
}

/// The entries of a directory, as `std::fs::ReadDir`.
#[derive(Debug)]
pub struct ReadDir {
    inner: SimOrReal<SimReadDir, std::fs::ReadDir>,
}

impl Iterator for ReadDir {
    type Item = io::Result<DirEntry>;

    fn next(&mut self) -> Option<io::Result<DirEntry>> {
        match &mut self.inner {
            SimOrReal::Sim(listing) => listing.next().map(|entry| {
                Ok(DirEntry {
                    inner: SimOrReal::Sim(entry),
                })
            }),
            SimOrReal::Real(listing) => listing.next().map(|entry| {
                entry.map(|entry| DirEntry {
                    inner: SimOrReal::Real(entry),
                })
            }),
        }
    }
}

/// An entry of a listed directory, as `std::fs::DirEntry`.
pub struct DirEntry {
    inner: SimOrReal<SimDirEntry, std::fs::DirEntry>,
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DirEntry").field(&self.path()).finish()
    }
}

impl DirEntry {
    /// The entry's full path (the listed directory's path joined with its name).
    pub fn path(&self) -> PathBuf {
        match &self.inner {
            SimOrReal::Sim(entry) => entry.path(),
            SimOrReal::Real(entry) => entry.path(),
        }
    }

    /// The entry's name.
    pub fn file_name(&self) -> OsString {
        match &self.inner {
            SimOrReal::Sim(entry) => entry.file_name(),
            SimOrReal::Real(entry) => entry.file_name(),
        }
    }

    /// Whether the entry is a file or a directory.
    ///
    /// # Errors
    ///
    /// Outside a simulation, when the OS cannot tell.
    pub fn file_type(&self) -> io::Result<FileType> {
        match &self.inner {
            SimOrReal::Sim(entry) => Ok(entry.file_type()),
            SimOrReal::Real(entry) => Ok(FileType::from_std(entry.file_type()?)),
        }
    }

    /// The entry's inode number, as Unix's `DirEntryExt::ino`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use crashtest::fs::sync;
    /// # crashtest::Sim::new(1).run(async {
    /// sync::write("/f", b"").unwrap();
    /// let entry = sync::read_dir("/").unwrap().next().unwrap().unwrap();
    /// assert_eq!(entry.ino(), sync::metadata("/f").unwrap().ino());
    /// # }).unwrap();
    /// ```
    pub fn ino(&self) -> u64 {
        match &self.inner {
            SimOrReal::Sim(entry) => entry.ino(),
            #[cfg(unix)]
            SimOrReal::Real(entry) => std::os::unix::fs::DirEntryExt::ino(entry),
            #[cfg(not(unix))]
            SimOrReal::Real(_) => 0,
        }
    }

    /// What the disk knows of the entry now.
    ///
    /// # Errors
    ///
    /// When the entry is gone since the listing.
    pub fn metadata(&self) -> io::Result<Metadata> {
        match &self.inner {
            SimOrReal::Sim(_) => metadata(self.path()),
            SimOrReal::Real(entry) => Ok(Metadata::from_std(&entry.metadata()?)),
        }
    }
}
