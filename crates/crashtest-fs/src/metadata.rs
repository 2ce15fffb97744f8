//! `Metadata` and `FileType`: what `metadata` and `DirEntry::file_type` return.
//!
//! The standard library's types cannot be built outside it, so these stand in for them with
//! the same method names; outside a simulation they are made from the real ones.

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
}

impl Metadata {
    pub(crate) fn new(file_type: FileType, len: u64, mode: u32, ino: u64, nlink: u32) -> Metadata {
        assert_eq!(
            mode & !crate::disk::MODE_BITS,
            0,
            "metadata holds permission bits only"
        );
        Metadata {
            file_type,
            len,
            mode,
            ino,
            nlink: u64::from(nlink),
        }
    }

    pub(crate) fn from_std(meta: &std::fs::Metadata) -> Metadata {
        #[cfg(unix)]
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
        #[cfg(not(unix))]
        let mode = if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        };
        #[cfg(unix)]
        let (ino, nlink) = {
            use std::os::unix::fs::MetadataExt;
            (meta.ino(), meta.nlink())
        };
        #[cfg(not(unix))]
        let (ino, nlink) = (0, 1);
        let mut ours = Metadata::new(
            FileType::from_std(meta.file_type()),
            meta.len(),
            mode & crate::disk::MODE_BITS,
            ino,
            0,
        );
        ours.nlink = nlink;
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
