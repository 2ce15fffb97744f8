//! `Metadata` and `FileType`: what `metadata` and `DirEntry::file_type` return.
//!
//! The standard library's types cannot be built outside it, so these stand in for them with
//! the same method names; outside a simulation they are made from the real ones.

use std::io;
use std::time::SystemTime;

use crashtest_hooks::epoch;

use crate::disk::Attrs;

/// The inode change time of a real entry (Unix's `ctime`), in nanoseconds since the epoch.
fn changed_ns(meta: &std::fs::Metadata) -> Option<i64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.ctime()
            .checked_mul(1_000_000_000)
            .and_then(|ns| ns.checked_add(meta.ctime_nsec()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The error std gives for a time the platform does not keep.
fn unsupported_time() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "this time is not available on this platform",
    )
}

/// Whether an entry is a file or a directory (there are no symbolic links).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::create_dir("/d").await.unwrap();
/// let ty = crashtest::fs::metadata("/d").await.unwrap().file_type();
/// assert!(ty.is_dir() && !ty.is_file() && !ty.is_symlink());
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileType(pub(crate) Type);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    File,
    Dir,
    Symlink,
    /// A real entry that is none of the above (a FIFO, a socket, a device): only outside a
    /// simulation, where, as std says, it is no file, directory or link.
    Other,
}

impl FileType {
    pub(crate) const FILE: FileType = FileType(Type::File);
    pub(crate) const DIR: FileType = FileType(Type::Dir);

    pub(crate) fn from_std(ty: std::fs::FileType) -> FileType {
        let ours = if ty.is_dir() {
            FileType::DIR
        } else if ty.is_symlink() {
            FileType(Type::Symlink)
        } else if ty.is_file() {
            FileType::FILE
        } else {
            FileType(Type::Other)
        };
        // Outside a simulation code asks ours what it would ask std's: the answers agree.
        assert_eq!(
            (ours.is_file(), ours.is_dir(), ours.is_symlink()),
            (ty.is_file(), ty.is_dir(), ty.is_symlink()),
            "a file type answers otherwise than std's {ty:?}"
        );
        ours
    }

    /// True for a regular file.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"x").await.unwrap();
    /// assert!(crashtest::fs::metadata("/f").await.unwrap().file_type().is_file());
    /// # }).unwrap();
    /// ```
    pub fn is_file(&self) -> bool {
        self.0 == Type::File
    }

    /// True for a directory.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// assert!(crashtest::fs::metadata("/").await.unwrap().file_type().is_dir());
    /// # }).unwrap();
    /// ```
    pub fn is_dir(&self) -> bool {
        self.0 == Type::Dir
    }

    /// True for a symbolic link (never, inside a simulation).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// assert!(!crashtest::fs::metadata("/").await.unwrap().file_type().is_symlink());
    /// # }).unwrap();
    /// ```
    pub fn is_symlink(&self) -> bool {
        self.0 == Type::Symlink
    }
}

/// Facts about a file or directory.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// # crashtest::Sim::new(1).run(async {
/// crashtest::fs::write("/f", b"hello").await.unwrap();
/// let meta = crashtest::fs::metadata("/f").await.unwrap();
/// assert_eq!(meta.len(), 5);
/// assert!(meta.is_file());
/// # }).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    file_type: FileType,
    len: u64,
    mode: u32,
    ino: u64,
    nlink: u64,
    /// Times in nanoseconds since the Unix epoch, where the platform keeps them.
    pub(crate) modified_ns: Option<i64>,
    pub(crate) accessed_ns: Option<i64>,
    pub(crate) created_ns: Option<i64>,
    /// The inode's last change (Unix's `ctime`).
    pub(crate) changed_ns: Option<i64>,
}

/// `time` as nanoseconds since the Unix epoch, on either side of it; `InvalidInput` beyond
/// the ±292 years an `i64` holds.
pub(crate) fn nanos_since_epoch(time: SystemTime) -> io::Result<i64> {
    epoch::nanos_since(time)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a time too far from the epoch"))
}

impl Metadata {
    pub(crate) fn new(
        file_type: FileType,
        len: u64,
        attrs: Attrs,
        ino: u64,
        nlink: u32,
    ) -> Metadata {
        assert_eq!(
            attrs.mode & !crate::disk::MODE_BITS,
            0,
            "metadata holds permission bits only"
        );
        Metadata {
            file_type,
            len,
            mode: attrs.mode,
            ino,
            nlink: u64::from(nlink),
            modified_ns: Some(attrs.modified_ns),
            // No access times are kept: as on a disk mounted `noatime`.
            accessed_ns: Some(attrs.born_ns),
            created_ns: Some(attrs.born_ns),
            changed_ns: Some(attrs.changed_ns),
        }
    }

    pub(crate) fn from_std(meta: &std::fs::Metadata) -> Metadata {
        #[cfg(unix)]
        let (ino, nlink) = {
            use std::os::unix::fs::MetadataExt;
            (meta.ino(), meta.nlink())
        };
        #[cfg(not(unix))]
        let (ino, nlink) = (0, 1);
        let ours = Metadata {
            file_type: FileType::from_std(meta.file_type()),
            len: meta.len(),
            mode: crate::ops::mode_of(&meta.permissions()),
            ino,
            nlink,
            modified_ns: meta.modified().ok().and_then(epoch::nanos_since),
            accessed_ns: meta.accessed().ok().and_then(epoch::nanos_since),
            created_ns: meta.created().ok().and_then(epoch::nanos_since),
            changed_ns: changed_ns(meta),
        };
        assert_eq!(
            (ours.len(), ours.is_file(), ours.is_dir()),
            (meta.len(), meta.is_file(), meta.is_dir()),
            "metadata answers otherwise than std's"
        );
        ours
    }

    /// The size in bytes (of the page cache's image: what a read sees).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", [0u8; 10]).await.unwrap();
    /// assert_eq!(crashtest::fs::metadata("/f").await.unwrap().len(), 10);
    /// # }).unwrap();
    /// ```
    #[allow(clippy::len_without_is_empty, reason = "mirrors std::fs::Metadata")]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a regular file.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// assert!(!crashtest::fs::metadata("/").await.unwrap().is_file());
    /// # }).unwrap();
    /// ```
    pub fn is_file(&self) -> bool {
        self.file_type.is_file()
    }

    /// True for a directory.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// assert!(crashtest::fs::metadata("/").await.unwrap().is_dir());
    /// # }).unwrap();
    /// ```
    pub fn is_dir(&self) -> bool {
        self.file_type.is_dir()
    }

    /// The entry's type.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// assert!(crashtest::fs::metadata("/").await.unwrap().file_type().is_dir());
    /// # }).unwrap();
    /// ```
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// The permission bits (`st_mode & 0o7777`). Inside a simulation, the ones the program
    /// sees: a new file gets 0o644 and a new directory 0o755 (0o666 and 0o777, or the mode
    /// asked for, under the umask 022), and `set_permissions` changes them.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"x").await.unwrap();
    /// assert_eq!(crashtest::fs::metadata("/f").await.unwrap().mode(), 0o644);
    /// assert_eq!(crashtest::fs::metadata("/").await.unwrap().mode(), 0o755);
    /// # }).unwrap();
    /// ```
    pub fn mode(&self) -> u32 {
        self.mode
    }

    /// The last modification time, as std's `Metadata::modified`. Inside a simulation, on
    /// the node's wall clock: when the file's data or length last changed (a directory's
    /// entries), or what `File::set_modified` set.
    ///
    /// # Errors
    ///
    /// Outside a simulation, where the platform keeps no such time.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"x").await.unwrap();
    /// let written = crashtest::fs::metadata("/f").await.unwrap().modified().unwrap();
    /// assert!(written <= crashtest::time::system_time()); // when the write began
    /// crashtest::time::sleep(std::time::Duration::from_secs(5)).await;
    /// crashtest::fs::write("/f", b"y").await.unwrap();
    /// let again = crashtest::fs::metadata("/f").await.unwrap().modified().unwrap();
    /// assert_eq!(again.duration_since(written).unwrap().as_secs(), 5);
    /// # }).unwrap();
    /// ```
    pub fn modified(&self) -> io::Result<SystemTime> {
        self.modified_ns
            .map(epoch::time_at)
            .ok_or_else(unsupported_time)
    }

    /// The last access time, as std's `Metadata::accessed`. Inside a simulation, the
    /// creation time: the simulated disk keeps no access times, as one mounted `noatime`.
    ///
    /// # Errors
    ///
    /// Outside a simulation, where the platform keeps no such time.
    pub fn accessed(&self) -> io::Result<SystemTime> {
        self.accessed_ns
            .map(epoch::time_at)
            .ok_or_else(unsupported_time)
    }

    /// The creation time, as std's `Metadata::created`: inside a simulation, on the node's
    /// wall clock when the file or directory was made (the root's reads as the epoch).
    ///
    /// # Errors
    ///
    /// Outside a simulation, where the platform keeps no such time.
    pub fn created(&self) -> io::Result<SystemTime> {
        self.created_ns
            .map(epoch::time_at)
            .ok_or_else(unsupported_time)
    }

    /// The inode number, as Unix's `MetadataExt::ino` (inside a simulation, the simulated
    /// disk's: numbers count up from the root's 1 and are never reused).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// assert_eq!(crashtest::fs::metadata("/").await.unwrap().ino(), 1);
    /// crashtest::fs::write("/f", b"x").await.unwrap();
    /// crashtest::fs::rename("/f", "/g").await.unwrap();
    /// assert_eq!(crashtest::fs::metadata("/g").await.unwrap().ino(), 2);
    /// # }).unwrap();
    /// ```
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The entry as the seams describe a simulated one ([`Stat`](crashtest_hooks::fs::Stat)):
    /// what the tokio stand-in and the determinism guards hand to std.
    ///
    /// # Panics
    ///
    /// If a time is missing, which only a host's entry can lack.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"xyz").await.unwrap();
    /// let stat = crashtest::fs::metadata("/f").await.unwrap().stat();
    /// assert_eq!((stat.len, stat.is_dir, stat.nlink), (3, false, 1));
    /// # }).unwrap();
    /// ```
    pub fn stat(&self) -> crashtest_hooks::fs::Stat {
        let time = |ns: Option<i64>| ns.expect("a simulated entry keeps its times");
        crashtest_hooks::fs::Stat {
            len: self.len,
            is_dir: self.is_dir(),
            mode: self.mode,
            ino: self.ino,
            nlink: self.nlink,
            born_ns: time(self.created_ns),
            modified_ns: time(self.modified_ns),
            changed_ns: time(self.changed_ns),
        }
    }

    /// The number of hard links, as Unix's `MetadataExt::nlink`: a file's names; a
    /// directory's 2 (its name and its `.`) and one per subdirectory (its `..`).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"x").await.unwrap();
    /// crashtest::fs::hard_link("/f", "/g").await.unwrap();
    /// assert_eq!(crashtest::fs::metadata("/f").await.unwrap().nlink(), 2);
    /// crashtest::fs::create_dir_all("/d/e").await.unwrap();
    /// assert_eq!(crashtest::fs::metadata("/d").await.unwrap().nlink(), 3);
    /// # }).unwrap();
    /// ```
    pub fn nlink(&self) -> u64 {
        self.nlink
    }

    /// The permissions, as std's `Metadata::permissions` gives them (their `mode()` is
    /// `st_mode`: the file type's bits with the permission bits).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// # crashtest::Sim::new(1).run(async {
    /// crashtest::fs::write("/f", b"x").await.unwrap();
    /// assert!(!crashtest::fs::metadata("/f").await.unwrap().permissions().readonly());
    /// # }).unwrap();
    /// ```
    #[cfg(unix)]
    pub fn permissions(&self) -> std::fs::Permissions {
        let kind = match self.file_type.0 {
            Type::File => libc::S_IFREG,
            Type::Dir => libc::S_IFDIR,
            Type::Symlink => libc::S_IFLNK,
            Type::Other => 0,
        };
        std::os::unix::fs::PermissionsExt::from_mode(kind | self.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_real_device_is_neither_a_file_nor_a_directory_nor_a_link_as_std_says() {
        let real = std::fs::metadata("/dev/null").unwrap();
        let ours = Metadata::from_std(&real).file_type();
        assert_eq!(
            (ours.is_file(), ours.is_dir(), ours.is_symlink()),
            (real.is_file(), real.is_dir(), real.file_type().is_symlink())
        );
        assert!(!ours.is_file(), "a character device is no regular file");
    }
}
