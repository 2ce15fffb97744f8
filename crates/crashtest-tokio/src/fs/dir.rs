//! Directories: `read_dir` with `ReadDir` and `DirEntry`, and `DirBuilder`.
//!
//! A simulated listing comes in the order the simulated disk gives (drawn from the seed).
//! `DirEntry::file_type` returns std's `FileType`, which std gives no way to make: a
//! simulated entry answers with the type std reports for a real directory or a real regular
//! file (the temporary directory and the running executable, read once per process), which
//! is exactly "a directory" or "a file".

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs::FileType;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::task::{Context, Poll};

use crashtest_hooks::fs::Stat;

use super::simulated;

/// Lists a directory, like `tokio::fs::read_dir`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     tokio::fs::create_dir("/d").await.unwrap();
///     tokio::fs::write("/d/f", "x").await.unwrap();
///     tokio::fs::create_dir("/d/sub").await.unwrap();
///     let mut listing = tokio::fs::read_dir("/d").await.unwrap();
///     let mut seen = Vec::new();
///     while let Some(entry) = listing.next_entry().await.unwrap() {
///         seen.push((entry.file_name(), entry.file_type().await.unwrap().is_dir()));
///     }
///     seen.sort();
///     assert_eq!(seen, [("f".into(), false), ("sub".into(), true)]);
/// }).unwrap();
/// ```
///
/// # Errors
///
/// As the file system's.
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<ReadDir> {
    let inner = match simulated("tokio::fs::read_dir") {
        None => Listing::Real(real::fs::read_dir(path).await?),
        Some(disk) => {
            let dir = path.as_ref().to_owned();
            let items = disk.read_dir(dir.clone()).await?;
            Listing::Sim {
                dir,
                items: items.into(),
            }
        }
    };
    Ok(ReadDir { inner })
}

/// A directory's entries, like `tokio::fs::ReadDir`.
pub struct ReadDir {
    inner: Listing,
}

enum Listing {
    Real(real::fs::ReadDir),
    Sim {
        dir: PathBuf,
        items: VecDeque<crashtest_hooks::fs::DirItem>,
    },
}

impl ReadDir {
    /// The next entry, or `None` at the end.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn next_entry(&mut self) -> io::Result<Option<DirEntry>> {
        std::future::poll_fn(|cx| self.poll_next_entry(cx)).await
    }

    /// Polls for the next entry.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub fn poll_next_entry(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Option<DirEntry>>> {
        match &mut self.inner {
            Listing::Real(listing) => listing.poll_next_entry(cx).map_ok(|entry| {
                entry.map(|entry| DirEntry {
                    inner: Entry::Real(entry),
                })
            }),
            Listing::Sim { dir, items } => {
                Poll::Ready(Ok(items.pop_front().map(|item| DirEntry {
                    inner: Entry::Sim {
                        path: dir.join(&item.name),
                        name: item.name,
                        is_dir: item.is_dir,
                        ino: item.ino,
                    },
                })))
            }
        }
    }
}

impl fmt::Debug for ReadDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Listing::Real(listing) => listing.fmt(f),
            Listing::Sim { dir, items } => f
                .debug_struct("ReadDir")
                .field("dir", dir)
                .field("left", &items.len())
                .finish(),
        }
    }
}

/// An entry of a listing, like `tokio::fs::DirEntry`.
pub struct DirEntry {
    inner: Entry,
}

enum Entry {
    Real(real::fs::DirEntry),
    Sim {
        path: PathBuf,
        name: OsString,
        is_dir: bool,
        #[cfg_attr(not(unix), allow(dead_code, reason = "ino is Unix's"))]
        ino: u64,
    },
}

impl DirEntry {
    /// The entry's full path.
    pub fn path(&self) -> PathBuf {
        match &self.inner {
            Entry::Real(entry) => entry.path(),
            Entry::Sim { path, .. } => path.clone(),
        }
    }

    /// The entry's name.
    pub fn file_name(&self) -> OsString {
        match &self.inner {
            Entry::Real(entry) => entry.file_name(),
            Entry::Sim { name, .. } => name.clone(),
        }
    }

    /// What the entry is: a directory or a file, for a simulated one.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn file_type(&self) -> io::Result<FileType> {
        match &self.inner {
            Entry::Real(entry) => entry.file_type().await,
            Entry::Sim { is_dir, .. } => std_file_type(*is_dir),
        }
    }

    /// The entry's std `Metadata`: for a simulated entry, as [`super::metadata`] tells it.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn metadata(&self) -> io::Result<std::fs::Metadata> {
        match &self.inner {
            Entry::Real(entry) => entry.metadata().await,
            Entry::Sim { path, .. } => super::metadata(path).await,
        }
    }

    /// The entry's inode number (for a simulated entry, the simulated disk's).
    #[cfg(unix)]
    pub fn ino(&self) -> u64 {
        match &self.inner {
            Entry::Real(entry) => entry.ino(),
            Entry::Sim { ino, .. } => *ino,
        }
    }
}

/// std's `FileType` of a directory or of a regular file, from a specimen made once.
fn std_file_type(is_dir: bool) -> io::Result<FileType> {
    static TYPES: OnceLock<Result<(FileType, FileType), String>> = OnceLock::new();
    let types = TYPES.get_or_init(|| {
        let of = |is_dir| {
            super::specimen::metadata(Stat {
                len: 0,
                is_dir,
                mode: 0o755,
                ino: 1,
                nlink: 1,
                born_ns: 0,
                modified_ns: 0,
                changed_ns: 0,
            })
        };
        let dir = of(true).map_err(|e| e.to_string())?;
        let file = of(false).map_err(|e| e.to_string())?;
        Ok((dir.file_type(), file.file_type()))
    });
    match types {
        Ok((dir, file)) => Ok(if is_dir { *dir } else { *file }),
        Err(err) => Err(io::Error::other(err.clone())),
    }
}

impl fmt::Debug for DirEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DirEntry").field(&self.path()).finish()
    }
}

/// Builds directories, like `tokio::fs::DirBuilder`.
#[derive(Debug, Default)]
pub struct DirBuilder {
    recursive: bool,
    #[cfg(unix)]
    mode: Option<u32>,
}

impl DirBuilder {
    /// A builder that creates one directory.
    pub fn new() -> DirBuilder {
        DirBuilder::default()
    }

    /// Creates missing parents too.
    pub fn recursive(&mut self, recursive: bool) -> &mut DirBuilder {
        self.recursive = recursive;
        self
    }

    /// The permission bits of created directories, before the umask (022 inside a
    /// simulation).
    #[cfg(unix)]
    pub fn mode(&mut self, mode: u32) -> &mut DirBuilder {
        self.mode = Some(mode);
        self
    }

    /// Creates the directory.
    ///
    /// # Errors
    ///
    /// As the file system's.
    pub async fn create(&self, path: impl AsRef<Path>) -> io::Result<()> {
        match simulated("tokio::fs::DirBuilder::create") {
            Some(disk) => {
                #[cfg(unix)]
                let mode = self.mode;
                #[cfg(not(unix))]
                let mode = None;
                disk.create_dir(path.as_ref().to_owned(), self.recursive, mode)
                    .await
            }
            None => {
                let mut real = real::fs::DirBuilder::new();
                real.recursive(self.recursive);
                #[cfg(unix)]
                if let Some(mode) = self.mode {
                    real.mode(mode);
                }
                real.create(path).await
            }
        }
    }
}
