//! The free functions of `tokio::fs` (and `sync_dir`), on the calling node's disk.
//!
//! Each waits out the disk's latency; those that change the namespace or write are crash
//! points for [`crate::exhaustive`]. Outside a simulation each calls its `tokio::fs` twin.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crashtest_core::node::NodeId;
use crashtest_io::SimOrReal;
use delegate::delegate;

use crate::disk::{DIR_MODE, Listed, OpenFlags};
use crate::errors;
use crate::metadata::{FileType, Metadata};
use crate::path::Names;
use crate::state;

/// Reads a whole file.
///
/// # Cancel safety
///
/// Cancel safe: reading changes nothing. Inside a simulation the file is read when the future
/// is first polled, then the future waits out the disk's latency; dropped during the wait, the
/// bytes are simply not returned.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", b"abc").await.unwrap();
/// assert_eq!(crashtest::fs::read("/f").await.unwrap(), b"abc");
/// # }).unwrap();
/// ```
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return tokio::fs::read(path).await;
    };
    let names = Names::parse(path)?;
    let bytes = state::with(|s| s.read_file(node, &names))?;
    state::latency(node, bytes.len() as u64, false).await;
    Ok(bytes)
}

/// Reads a whole file as UTF-8; `InvalidData` if it is not.
///
/// # Cancel safety
///
/// Cancel safe: reading changes nothing. Inside a simulation the file is read when the future
/// is first polled, then the future waits out the disk's latency; dropped during the wait, the
/// bytes are simply not returned.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", "text").await.unwrap();
/// assert_eq!(crashtest::fs::read_to_string("/f").await.unwrap(), "text");
/// # }).unwrap();
/// ```
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    errors::utf8(read(path).await?)
}

/// Creates or replaces a file with `contents` (not synced: see [`crate::File::sync_all`]).
///
/// # Cancel safety
///
/// Inside a simulation the whole write is all or nothing for cancellation: the file is created
/// or cut and written when the future completes, after the disk's latency, so a future dropped
/// before that has written nothing. Outside a simulation it is tokio's, which writes on its
/// blocking pool: a dropped future does not stop it, and the file may end up created, cut or
/// partly written.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", b"first").await.unwrap();
/// crashtest::fs::write("/f", b"2nd").await.unwrap();
/// assert_eq!(crashtest::fs::read("/f").await.unwrap(), b"2nd");
/// # }).unwrap();
/// ```
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let path = path.as_ref();
    let contents = contents.as_ref();
    let Some(node) = state::current_node()? else {
        return tokio::fs::write(path, contents).await;
    };
    let names = Names::parse(path)?;
    state::mutation().await;
    state::latency(node, contents.len() as u64, false).await;
    write_now(node, &names, contents)
}

/// Creates or replaces the file `names` on `node`'s disk with `contents`, at once: the
/// simulated body of [`write`] and of its synchronous twin.
pub(crate) fn write_now(node: NodeId, names: &Names, contents: &[u8]) -> io::Result<()> {
    let flags = OpenFlags {
        write: true,
        create: true,
        truncate: true,
        ..OpenFlags::default()
    };
    state::with(|s| {
        let handle = s.open(node, names, flags)?;
        let written = s
            .write(&handle, 0, contents)
            .and_then(|end| Ok((end, s.len(&handle)?)));
        s.release(&handle);
        let (end, len) = written?;
        assert_eq!(
            end,
            contents.len() as u64,
            "a whole-file write ends at its length"
        );
        // The open cut the file and the write filled it from the start: it holds the contents
        // and nothing after them.
        assert_eq!(
            len,
            contents.len() as u64,
            "a whole-file write left the file another length"
        );
        Ok(())
    })
}

/// A change to the namespace of a node's disk.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Namespace<'a> {
    /// Creates a directory with these permission bits (before the umask).
    CreateDir(u32),
    /// Creates a directory and its missing parents, each with these bits.
    CreateDirAll(u32),
    RemoveFile,
    RemoveDir,
    /// Moves the entry to this path.
    RenameTo(&'a Names),
    /// Gives the file a second name, this path.
    LinkTo(&'a Names),
}

/// Makes the `change` to `names` on `node`'s disk, at once: the simulated body of the
/// namespace calls and of their synchronous twins. The trace names the call and its paths.
pub(crate) fn namespace_now(node: NodeId, names: &Names, change: Namespace<'_>) -> io::Result<()> {
    let what = match change {
        Namespace::CreateDir(_) => format!("create_dir {}", names.display()),
        Namespace::CreateDirAll(_) => format!("create_dir_all {}", names.display()),
        Namespace::RemoveFile => format!("remove_file {}", names.display()),
        Namespace::RemoveDir => format!("remove_dir {}", names.display()),
        Namespace::RenameTo(to) => format!("rename {} to {}", names.display(), to.display()),
        Namespace::LinkTo(to) => format!("hard_link {} as {}", names.display(), to.display()),
    };
    state::with(|s| {
        s.namespace(node, &what, |disk| match change {
            Namespace::CreateDir(mode) => disk.create_dir(names, mode),
            Namespace::CreateDirAll(mode) => disk.create_dir_all(names, mode),
            Namespace::RemoveFile => disk.remove_file(names),
            Namespace::RemoveDir => disk.remove_dir(names),
            Namespace::RenameTo(to) => disk.rename(names, to),
            Namespace::LinkTo(to) => disk.hard_link(names, to),
        })
    })
}

/// Creates a directory; its parent must exist. Durable once the parent is synced.
///
/// # Cancel safety
///
/// Inside a simulation the change is made only when the future completes, after the disk's
/// latency: dropped before that, nothing changed (and a crash point of an exhaustive
/// exploration may stop it for good). Outside a simulation it is tokio's, which runs the call
/// on its blocking pool: a dropped future does not stop it, so the change may still happen.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::create_dir("/d").await.unwrap();
/// let error = crashtest::fs::create_dir("/d").await.unwrap_err();
/// assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
/// # }).unwrap();
/// ```
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    create_dir_with_mode(path.as_ref(), false, DIR_MODE).await
}

/// Creates a directory (with `all`, its missing parents too), each with the permission bits
/// `mode` before the umask, as `DirBuilder` with `DirBuilderExt::mode` does.
pub(crate) async fn create_dir_with_mode(path: &Path, all: bool, mode: u32) -> io::Result<()> {
    let Some(node) = state::current_node()? else {
        let mut builder = tokio::fs::DirBuilder::new();
        builder.recursive(all);
        #[cfg(unix)]
        builder.mode(mode);
        return builder.create(path).await;
    };
    let names = Names::parse(path)?;
    state::mutation().await;
    state::latency(node, 0, false).await;
    let change = if all {
        Namespace::CreateDirAll(mode)
    } else {
        Namespace::CreateDir(mode)
    };
    namespace_now(node, &names, change)
}

/// Creates a directory and every missing parent.
///
/// # Cancel safety
///
/// Inside a simulation the change is made only when the future completes, after the disk's
/// latency: dropped before that, nothing changed (and a crash point of an exhaustive
/// exploration may stop it for good). Outside a simulation it is tokio's, which runs the call
/// on its blocking pool: a dropped future does not stop it, so the change may still happen.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::create_dir_all("/a/b/c").await.unwrap();
/// assert!(crashtest::fs::metadata("/a/b").await.unwrap().is_dir());
/// # }).unwrap();
/// ```
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    create_dir_with_mode(path.as_ref(), true, DIR_MODE).await
}

/// Removes a file. Durable once its directory is synced.
///
/// # Cancel safety
///
/// Inside a simulation the change is made only when the future completes, after the disk's
/// latency: dropped before that, nothing changed (and a crash point of an exhaustive
/// exploration may stop it for good). Outside a simulation it is tokio's, which runs the call
/// on its blocking pool: a dropped future does not stop it, so the change may still happen.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", b"").await.unwrap();
/// crashtest::fs::remove_file("/f").await.unwrap();
/// assert!(!crashtest::fs::try_exists("/f").await.unwrap());
/// # }).unwrap();
/// ```
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return tokio::fs::remove_file(path).await;
    };
    let names = Names::parse(path)?;
    state::mutation().await;
    state::latency(node, 0, false).await;
    namespace_now(node, &names, Namespace::RemoveFile)
}

/// Removes an empty directory; `DirectoryNotEmpty` otherwise.
///
/// # Cancel safety
///
/// Inside a simulation the change is made only when the future completes, after the disk's
/// latency: dropped before that, nothing changed (and a crash point of an exhaustive
/// exploration may stop it for good). Outside a simulation it is tokio's, which runs the call
/// on its blocking pool: a dropped future does not stop it, so the change may still happen.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::create_dir("/d").await.unwrap();
/// crashtest::fs::remove_dir("/d").await.unwrap();
/// # }).unwrap();
/// ```
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return tokio::fs::remove_dir(path).await;
    };
    let names = Names::parse(path)?;
    state::mutation().await;
    state::latency(node, 0, false).await;
    namespace_now(node, &names, Namespace::RemoveDir)
}

/// Renames a file or directory, replacing the target if it exists (atomically, as
/// `rename(2)`). Durable once the directories involved are synced: until then a crash may
/// undo it.
///
/// # Cancel safety
///
/// Inside a simulation the change is made only when the future completes, after the disk's
/// latency: dropped before that, nothing changed (and a crash point of an exhaustive
/// exploration may stop it for good). Outside a simulation it is tokio's, which runs the call
/// on its blocking pool: a dropped future does not stop it, so the change may still happen.
/// Either way a rename is atomic: the entry is at one name or the other.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/tmp", b"new").await.unwrap();
/// crashtest::fs::rename("/tmp", "/current").await.unwrap();
/// assert_eq!(crashtest::fs::read("/current").await.unwrap(), b"new");
/// # }).unwrap();
/// ```
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let (from, to) = (from.as_ref(), to.as_ref());
    let Some(node) = state::current_node()? else {
        return tokio::fs::rename(from, to).await;
    };
    let from = Names::parse(from)?;
    let to = Names::parse(to)?;
    state::mutation().await;
    state::latency(node, 0, false).await;
    namespace_now(node, &from, Namespace::RenameTo(&to))
}

/// Gives the file at `original` a second name, `link`, like `tokio::fs::hard_link`. Durable
/// once `link`'s directory is synced: a crash before that may undo it. The names share the
/// file's data, length and permission bits; removing one leaves the other.
///
/// # Errors
///
/// `NotFound` if nothing is at `original`, `AlreadyExists` if something is at `link`, and
/// `PermissionDenied` (`EPERM`) for a directory.
///
/// # Cancel safety
///
/// Inside a simulation the link is made only when the future completes, after the disk's
/// latency: dropped before that, nothing changed. Outside a simulation it is tokio's, which
/// runs the call on its blocking pool: the link may still be made.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::create_dir("/checkpoint").await.unwrap();
/// crashtest::fs::write("/sst-7", b"sorted").await.unwrap();
/// crashtest::fs::hard_link("/sst-7", "/checkpoint/sst-7").await.unwrap();
/// crashtest::fs::remove_file("/sst-7").await.unwrap();
/// assert_eq!(crashtest::fs::read("/checkpoint/sst-7").await.unwrap(), b"sorted");
/// # }).unwrap();
/// ```
pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    let (original, link) = (original.as_ref(), link.as_ref());
    let Some(node) = state::current_node()? else {
        return tokio::fs::hard_link(original, link).await;
    };
    let original = Names::parse(original)?;
    let link = Names::parse(link)?;
    state::mutation().await;
    state::latency(node, 0, false).await;
    namespace_now(node, &original, Namespace::LinkTo(&link))
}

/// Sets a file's or a directory's permissions, like `tokio::fs::set_permissions`. Inside a
/// simulation the bits are seen at once and durable once the entry itself is synced (its
/// `sync_all`, or `sync_dir` for a directory): a crash before that reverts them. The node's
/// process owns every entry and is no superuser, so opening a file its bits forbid fails with
/// `PermissionDenied` (reading needs the owner's `r`, writing or truncating the owner's `w`).
///
/// # Errors
///
/// `NotFound` if nothing is at the path.
///
/// # Cancel safety
///
/// Inside a simulation the bits change only when the future completes, after the disk's
/// latency: dropped before that, nothing changed. Outside a simulation it is tokio's, which
/// runs the call on its blocking pool: the change may still happen.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use std::os::unix::fs::PermissionsExt;
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/key", b"secret").await.unwrap();
/// crashtest::fs::set_permissions("/key", std::fs::Permissions::from_mode(0o400)).await.unwrap();
/// assert_eq!(crashtest::fs::metadata("/key").await.unwrap().mode(), 0o400);
/// let refused = crashtest::fs::write("/key", b"other").await.unwrap_err();
/// assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
/// # }).unwrap();
/// ```
pub async fn set_permissions(
    path: impl AsRef<Path>,
    permissions: std::fs::Permissions,
) -> io::Result<()> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return tokio::fs::set_permissions(path, permissions).await;
    };
    let names = Names::parse(path)?;
    state::mutation().await;
    state::latency(node, 0, false).await;
    state::with(|s| s.set_mode(node, &names, mode_of(&permissions)))
}

/// The permission bits of std's `Permissions`: its mode on Unix; elsewhere, where only the
/// read-only flag exists, 0o444 or 0o644.
pub(crate) fn mode_of(permissions: &std::fs::Permissions) -> u32 {
    #[cfg(unix)]
    let mode = std::os::unix::fs::PermissionsExt::mode(permissions);
    #[cfg(not(unix))]
    let mode = if permissions.readonly() { 0o444 } else { 0o644 };
    mode & crate::disk::MODE_BITS
}

/// The metadata of a file or directory.
///
/// # Cancel safety
///
/// Cancel safe: it changes nothing.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// let error = crashtest::fs::metadata("/nope").await.unwrap_err();
/// assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
/// # }).unwrap();
/// ```
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return Ok(Metadata::from_std(&tokio::fs::metadata(path).await?));
    };
    let names = Names::parse(path)?;
    state::latency(node, 0, false).await;
    state::with(|s| s.metadata(node, &names))
}

/// Whether the path exists: `Ok(false)` if it does not, an error if that cannot be told.
///
/// # Cancel safety
///
/// Cancel safe: it changes nothing.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// assert!(crashtest::fs::try_exists("/").await.unwrap());
/// assert!(!crashtest::fs::try_exists("/nope").await.unwrap());
/// # }).unwrap();
/// ```
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    errors::exists(metadata(path).await)
}

/// Makes durable the creations, renames and removals of entries in directory `path` (the
/// same as opening it with [`crate::File::open`] and calling `sync_all`).
///
/// # Cancel safety
///
/// Not cancel safe in the sense that matters: dropped before it completes, the directory was
/// not synced and its changes are not durable. Inside a simulation nothing is synced until the
/// future completes (after the sync's latency); outside one the fsync may or may not have run.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", b"x").await.unwrap();
/// crashtest::fs::sync_dir("/").await.unwrap(); // the name "/f" now survives a crash
/// # }).unwrap();
/// ```
pub async fn sync_dir(path: impl AsRef<Path>) -> io::Result<()> {
    crate::File::open(path).await?.sync_all().await
}

/// Lists a directory, as `tokio::fs::read_dir`. The order of entries is drawn from the seed:
/// real directories promise none.
///
/// # Cancel safety
///
/// Cancel safe: listing changes nothing; a dropped future returns no listing.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/a", b"").await.unwrap();
/// crashtest::fs::write("/b", b"").await.unwrap();
/// let mut names = Vec::new();
/// let mut dir = crashtest::fs::read_dir("/").await.unwrap();
/// while let Some(entry) = dir.next_entry().await.unwrap() {
///     names.push(entry.file_name().into_string().unwrap());
/// }
/// names.sort();
/// assert_eq!(names, ["a", "b"]);
/// # }).unwrap();
/// ```
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let path = path.as_ref();
    let Some(node) = state::current_node()? else {
        return Ok(ReadDir {
            inner: SimOrReal::Real(tokio::fs::read_dir(path).await?),
        });
    };
    let names = Names::parse(path)?;
    state::latency(node, 0, false).await;
    Ok(ReadDir {
        inner: SimOrReal::Sim(SimReadDir::list(node, path, &names)?),
    })
}

/// The entries of a directory, from [`read_dir`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// let mut dir = crashtest::fs::read_dir("/").await.unwrap();
/// assert!(dir.next_entry().await.unwrap().is_none());
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ReadDir {
    inner: SimOrReal<SimReadDir, tokio::fs::ReadDir>,
}

/// The simulated side of a listing: the entries, read (and shuffled) when it was made.
#[derive(Debug)]
pub(crate) struct SimReadDir {
    dir: PathBuf,
    entries: std::vec::IntoIter<Listed>,
}

impl ReadDir {
    /// The next entry, or `None` after the last.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as tokio's: an entry is taken from the listing only in the poll that
    /// returns it (inside a simulation, the first poll).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::create_dir("/d").await.unwrap();
    /// let mut dir = crashtest::fs::read_dir("/").await.unwrap();
    /// let entry = dir.next_entry().await.unwrap().unwrap();
    /// assert_eq!(entry.path(), std::path::Path::new("/d"));
    /// # }).unwrap();
    /// ```
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        let next = match &mut self.inner {
            SimOrReal::Sim(listing) => listing.next().map(SimOrReal::Sim),
            SimOrReal::Real(listing) => listing.next_entry().await?.map(SimOrReal::Real),
        };
        Ok(next.map(|inner| DirEntry { inner }))
    }
}

impl SimReadDir {
    /// The listing of the directory `names` (at `path`) on `node`'s disk, taken now.
    pub(crate) fn list(node: NodeId, path: &Path, names: &Names) -> io::Result<SimReadDir> {
        let entries = state::with(|s| s.read_dir(node, names))?;
        Ok(SimReadDir {
            dir: path.to_path_buf(),
            entries: entries.into_iter(),
        })
    }

    pub(crate) fn next(&mut self) -> Option<SimDirEntry> {
        let Listed { name, is_dir, ino } = self.entries.next()?;
        assert!(
            !name.is_empty() && !name.contains('/') && name != "." && name != "..",
            "a listed name is one path component: {name:?}"
        );
        let path = self.dir.join(&name);
        assert!(path.ends_with(&name), "an entry's path ends with its name");
        Some(SimDirEntry {
            path,
            name,
            is_dir,
            ino,
        })
    }
}

/// One entry of a directory listing.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", b"12").await.unwrap();
/// let entry = crashtest::fs::read_dir("/").await.unwrap().next_entry().await.unwrap().unwrap();
/// assert_eq!(entry.file_name(), "f");
/// assert!(entry.file_type().await.unwrap().is_file());
/// assert_eq!(entry.metadata().await.unwrap().len(), 2);
/// # }).unwrap();
/// ```
pub struct DirEntry {
    inner: SimOrReal<SimDirEntry, tokio::fs::DirEntry>,
}

/// The simulated side of a directory entry, as listed.
pub(crate) struct SimDirEntry {
    path: PathBuf,
    name: String,
    is_dir: bool,
    ino: u64,
}

impl SimDirEntry {
    pub(crate) fn path(&self) -> PathBuf {
        self.path.clone()
    }

    pub(crate) fn file_name(&self) -> OsString {
        OsString::from(&self.name)
    }

    pub(crate) fn ino(&self) -> u64 {
        self.ino
    }

    pub(crate) fn file_type(&self) -> FileType {
        if self.is_dir {
            FileType::DIR
        } else {
            FileType::FILE
        }
    }
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DirEntry").field(&self.path()).finish()
    }
}

impl DirEntry {
    delegate! {
        to match &self.inner {
            SimOrReal::Sim(entry) => entry,
            SimOrReal::Real(entry) => entry,
        } {
            /// The entry's full path (the listed directory's path joined with its name).
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// crashtest::fs::write("/f", b"").await.unwrap();
            /// let entry = crashtest::fs::read_dir("/").await.unwrap().next_entry().await.unwrap().unwrap();
            /// assert_eq!(entry.path(), std::path::Path::new("/f"));
            /// # }).unwrap();
            /// ```
            pub fn path(&self) -> PathBuf;

            /// The entry's name.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
            /// # crashtest::Sim::new(1).run(async {
            /// crashtest::fs::write("/f", b"").await.unwrap();
            /// let entry = crashtest::fs::read_dir("/").await.unwrap().next_entry().await.unwrap().unwrap();
            /// assert_eq!(entry.file_name(), "f");
            /// # }).unwrap();
            /// ```
            pub fn file_name(&self) -> OsString;
        }
    }

    /// The entry's inode number, as listed (see [`Metadata::ino`]).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"").await.unwrap();
    /// let entry = crashtest::fs::read_dir("/").await.unwrap().next_entry().await.unwrap().unwrap();
    /// assert_eq!(entry.ino(), crashtest::fs::metadata("/f").await.unwrap().ino());
    /// # }).unwrap();
    /// ```
    #[cfg(unix)]
    pub fn ino(&self) -> u64 {
        match &self.inner {
            SimOrReal::Sim(entry) => entry.ino(),
            SimOrReal::Real(entry) => entry.ino(),
        }
    }

    /// Whether the entry is a file or a directory.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::create_dir("/d").await.unwrap();
    /// let entry = crashtest::fs::read_dir("/").await.unwrap().next_entry().await.unwrap().unwrap();
    /// assert!(entry.file_type().await.unwrap().is_dir());
    /// # }).unwrap();
    /// ```
    pub async fn file_type(&self) -> io::Result<FileType> {
        match &self.inner {
            SimOrReal::Sim(entry) => Ok(entry.file_type()),
            SimOrReal::Real(entry) => Ok(FileType::from_std(entry.file_type().await?)),
        }
    }

    /// The entry's metadata, looked up now (`NotFound` if it has gone since the listing).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it changes nothing.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"abc").await.unwrap();
    /// let entry = crashtest::fs::read_dir("/").await.unwrap().next_entry().await.unwrap().unwrap();
    /// assert_eq!(entry.metadata().await.unwrap().len(), 3);
    /// # }).unwrap();
    /// ```
    pub async fn metadata(&self) -> io::Result<Metadata> {
        match &self.inner {
            SimOrReal::Sim(entry) => metadata(&entry.path).await,
            SimOrReal::Real(entry) => Ok(Metadata::from_std(&entry.metadata().await?)),
        }
    }
}
