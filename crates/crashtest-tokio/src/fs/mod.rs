//! `tokio::fs`: the calling node's simulated disk inside a simulation, the real file system
//! outside.
//!
//! Inside a simulation every path is on the node's own disk (`crashtest::fs`), which keeps
//! only what was synced across a crash of the node, and no call touches the host's files.
//! What the simulated disk does not model is refused with a message: links, permissions and
//! times (`canonicalize` resolves a path lexically, as there are no links). The calls that
//! return std's `Metadata` answer with a specimen's (`specimen`): std gives no other way to
//! make one.

mod dir;
mod file;
mod specimen;

#[allow(
    unused_imports,
    reason = "everything tokio has today is shadowed here; this passes on what it adds"
)]
pub use real::fs::*;

pub use dir::{DirBuilder, DirEntry, ReadDir, read_dir};
pub use file::{File, OpenOptions};

use std::io;
use std::path::{Path, PathBuf};

use crate::seam;

/// Refuses a call the simulated disk does not model.
#[track_caller]
pub(crate) fn refuse_unmodelled(call: &str) -> ! {
    seam::refuse(
        call,
        "the simulated disk has files, directories and hard links only (no symbolic links); \
         use metadata for a length, a kind, permissions or times, try_exists, and reads",
    )
}

/// The simulated disk, if a simulation runs.
fn simulated(call: &str) -> Option<&'static dyn crashtest_hooks::fs::Disk> {
    seam::sim().map(|_| seam::disk(call))
}

/// Reads a whole file, like `tokio::fs::read`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::write("/greeting", "hello").await.unwrap();
///     assert_eq!(tokio::fs::read("/greeting").await.unwrap(), b"hello");
///     assert_eq!(tokio::fs::read_to_string("/greeting").await.unwrap(), "hello");
///     let err = tokio::fs::read("/missing").await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's.
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    match simulated("tokio::fs::read") {
        None => real::fs::read(path).await,
        Some(disk) => disk.read(path.as_ref().to_owned()).await,
    }
}

/// Reads a whole file as UTF-8, like `tokio::fs::read_to_string`.
///
/// # Errors
///
/// As [`read`], and `InvalidData` if the file is not UTF-8.
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    match simulated("tokio::fs::read_to_string") {
        None => real::fs::read_to_string(path).await,
        Some(disk) => {
            let bytes = disk.read(path.as_ref().to_owned()).await?;
            String::from_utf8(bytes).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                )
            })
        }
    }
}

/// Creates or truncates a file and writes `contents` (not synced), like `tokio::fs::write`.
///
/// # Errors
///
/// As the file system's.
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    match simulated("tokio::fs::write") {
        None => real::fs::write(path, contents).await,
        Some(disk) => {
            disk.write(path.as_ref().to_owned(), contents.as_ref().to_vec())
                .await
        }
    }
}

/// Copies a file's contents and permission bits, like `tokio::fs::copy`; returns the bytes
/// copied.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::os::unix::fs::PermissionsExt;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::write("/run.sh", b"#!/bin/sh").await.unwrap();
///     let executable = std::fs::Permissions::from_mode(0o755);
///     tokio::fs::set_permissions("/run.sh", executable).await.unwrap();
///     assert_eq!(tokio::fs::copy("/run.sh", "/copy.sh").await.unwrap(), 9);
///     let meta = tokio::fs::metadata("/copy.sh").await.unwrap();
///     assert_eq!(meta.permissions().mode() & 0o7777, 0o755);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's.
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    match simulated("tokio::fs::copy") {
        None => real::fs::copy(from, to).await,
        Some(disk) => {
            let (from, to) = (from.as_ref().to_owned(), to.as_ref().to_owned());
            let source = disk.stat(from.clone()).await?;
            // As std's copy, which cuts the destination before reading the source: a copy
            // onto another name of the same file empties it.
            let same_file = disk
                .stat(to.clone())
                .await
                .is_ok_and(|target| target.ino == source.ino);
            let bytes = if same_file {
                Vec::new()
            } else {
                disk.read(from).await?
            };
            let len = bytes.len() as u64;
            disk.write(to.clone(), bytes).await?;
            // As std's copy: the copy gets the source's bits, whatever the umask.
            #[cfg(unix)]
            disk.set_permissions(to, specimen::permissions(source.mode))
                .await?;
            #[cfg(not(unix))]
            let _ = (to, source);
            Ok(len)
        }
    }
}

/// Creates a directory, like `tokio::fs::create_dir`.
///
/// # Errors
///
/// As the file system's.
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::create_dir") {
        None => real::fs::create_dir(path).await,
        Some(disk) => disk.create_dir(path.as_ref().to_owned(), false, None).await,
    }
}

/// Creates a directory and its missing parents, like `tokio::fs::create_dir_all`.
///
/// # Errors
///
/// As the file system's.
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::create_dir_all") {
        None => real::fs::create_dir_all(path).await,
        Some(disk) => disk.create_dir(path.as_ref().to_owned(), true, None).await,
    }
}

/// Removes a file, like `tokio::fs::remove_file`.
///
/// # Errors
///
/// As the file system's.
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::remove_file") {
        None => real::fs::remove_file(path).await,
        Some(disk) => disk.remove_file(path.as_ref().to_owned()).await,
    }
}

/// Removes an empty directory, like `tokio::fs::remove_dir`.
///
/// # Errors
///
/// As the file system's.
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::remove_dir") {
        None => real::fs::remove_dir(path).await,
        Some(disk) => disk.remove_dir(path.as_ref().to_owned()).await,
    }
}

/// Removes a directory and everything in it, like `tokio::fs::remove_dir_all`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::create_dir_all("/data/a/b").await.unwrap();
///     tokio::fs::write("/data/a/b/f", "x").await.unwrap();
///     tokio::fs::remove_dir_all("/data").await.unwrap();
///     assert!(!tokio::fs::try_exists("/data").await.unwrap());
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's.
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::remove_dir_all") {
        None => real::fs::remove_dir_all(path).await,
        Some(disk) => {
            // Depth first, without recursion: a stack of directories to empty, then remove.
            let root = path.as_ref().to_owned();
            let mut pending = vec![(root, false)];
            while let Some((dir, emptied)) = pending.pop() {
                if emptied {
                    disk.remove_dir(dir).await?;
                    continue;
                }
                let items = disk.read_dir(dir.clone()).await?;
                pending.push((dir.clone(), true));
                for item in items {
                    let child: PathBuf = dir.join(&item.name);
                    if item.is_dir {
                        pending.push((child, false));
                    } else {
                        disk.remove_file(child).await?;
                    }
                }
            }
            Ok(())
        }
    }
}

/// Renames a file or directory, like `tokio::fs::rename`.
///
/// # Errors
///
/// As the file system's.
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::rename") {
        None => real::fs::rename(from, to).await,
        Some(disk) => {
            disk.rename(from.as_ref().to_owned(), to.as_ref().to_owned())
                .await
        }
    }
}

/// Whether something is at `path`, like `tokio::fs::try_exists`.
///
/// # Errors
///
/// The file system's, other than `NotFound`.
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    match simulated("tokio::fs::try_exists") {
        None => real::fs::try_exists(path).await,
        Some(disk) => match disk.stat(path.as_ref().to_owned()).await {
            Ok(_) => Ok(true),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(err),
        },
    }
}

/// A path's std `Metadata`, like `tokio::fs::metadata`.
///
/// Inside a simulation every field is the simulated entry's: kind, length, permissions,
/// inode and links, and times on the node's wall clock (the access time is the creation
/// time: the simulated disk keeps no access times); see the `specimen` module.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::write("/log", [7u8; 300]).await.unwrap();
///     let meta = tokio::fs::metadata("/log").await.unwrap();
///     assert!(meta.is_file());
///     assert_eq!(meta.len(), 300);
///     assert!(meta.modified().unwrap() <= crashtest::time::system_time());
///     tokio::fs::create_dir("/d").await.unwrap();
///     assert!(tokio::fs::metadata("/d").await.unwrap().is_dir());
///     let err = tokio::fs::metadata("/missing").await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's.
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<std::fs::Metadata> {
    match simulated("tokio::fs::metadata") {
        None => real::fs::metadata(path).await,
        Some(disk) => specimen::metadata(disk.stat(path.as_ref().to_owned()).await?),
    }
}

/// A path's std `Metadata` without following a final link, like
/// `tokio::fs::symlink_metadata`: inside a simulation, where there are no links, as
/// [`metadata`].
///
/// # Errors
///
/// As the file system's.
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<std::fs::Metadata> {
    match simulated("tokio::fs::symlink_metadata") {
        None => real::fs::symlink_metadata(path).await,
        Some(disk) => specimen::metadata(disk.stat(path.as_ref().to_owned()).await?),
    }
}

/// Gives a file a second name, like `tokio::fs::hard_link`. Inside a simulation the new
/// name is a directory change of the node's disk, durable once its directory is synced.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::write("/wal-3", b"entries").await.unwrap();
///     tokio::fs::hard_link("/wal-3", "/backup-wal-3").await.unwrap();
///     tokio::fs::remove_file("/wal-3").await.unwrap();
///     assert_eq!(tokio::fs::read("/backup-wal-3").await.unwrap(), b"entries");
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's: `NotFound` without a file at `original`, `AlreadyExists` with an
/// entry at `link`, `PermissionDenied` for a directory.
pub async fn hard_link(original: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    match simulated("tokio::fs::hard_link") {
        None => real::fs::hard_link(original, link).await,
        Some(disk) => {
            disk.hard_link(original.as_ref().to_owned(), link.as_ref().to_owned())
                .await
        }
    }
}

/// Sets a file's or a directory's permissions, like `tokio::fs::set_permissions`. Inside a
/// simulation the bits are the simulated entry's: seen at once, durable once the entry is
/// synced, and checked when a file is opened, as for an owner who is no superuser.
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::os::unix::fs::PermissionsExt;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::write("/key", b"secret").await.unwrap();
///     let owner_only = std::fs::Permissions::from_mode(0o600);
///     tokio::fs::set_permissions("/key", owner_only).await.unwrap();
///     let meta = tokio::fs::metadata("/key").await.unwrap();
///     assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's: `NotFound` if nothing is at the path.
pub async fn set_permissions(
    path: impl AsRef<Path>,
    permissions: std::fs::Permissions,
) -> io::Result<()> {
    match simulated("tokio::fs::set_permissions") {
        None => real::fs::set_permissions(path, permissions).await,
        Some(disk) => {
            disk.set_permissions(path.as_ref().to_owned(), permissions)
                .await
        }
    }
}

/// Forwards a call the simulated disk does not model to tokio; refused inside a simulation
/// when called (not awaited), so that the refusal names the caller's line.
macro_rules! unmodelled {
    ($($(#[$attr:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        $(#[$attr])*
        /// As tokio's; refused inside a simulation.
        ///
        /// # Errors
        ///
        /// As the file system's.
        #[track_caller]
        pub fn $name($($arg: $ty),*) -> impl std::future::Future<Output = io::Result<$out>> {
            if seam::sim().is_some() {
                refuse_unmodelled(concat!("tokio::fs::", stringify!($name)));
            }
            real::fs::$name($($arg),*)
        }
    )*};
}

/// The absolute form of a path that exists, like `tokio::fs::canonicalize`: inside a
/// simulation, where there are no links, the path from the node's root (`/`, also its
/// working directory) with `.` and `..` resolved.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::create_dir_all("/data/wal").await.unwrap();
///     let path = tokio::fs::canonicalize("data/./wal/../wal").await.unwrap();
///     assert_eq!(path, std::path::Path::new("/data/wal"));
///     let err = tokio::fs::canonicalize("/data/missing").await.unwrap_err();
///     assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's: `NotFound` if the path does not exist.
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    match simulated("tokio::fs::canonicalize") {
        None => real::fs::canonicalize(path).await,
        Some(disk) => {
            let path = path.as_ref();
            if path.as_os_str().is_empty() {
                // As the OS answers an empty path.
                return Err(io::ErrorKind::NotFound.into());
            }
            disk.stat(path.to_owned()).await?;
            Ok(crashtest_hooks::fs::from_root(path))
        }
    }
}

unmodelled! {
    read_link(path: impl AsRef<Path>) -> PathBuf;
    #[cfg(unix)]
    symlink(original: impl AsRef<Path>, link: impl AsRef<Path>) -> ();
}
