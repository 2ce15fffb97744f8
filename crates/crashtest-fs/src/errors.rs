//! The errors the simulated file system returns, built as the real calls build them: from
//! the errno the real call would set (`crashtest_io::os_error`), so that `ErrorKind`,
//! `raw_os_error()` and the message are the real call's.

use std::io::{self, ErrorKind};

use crashtest_io::os_error::os_error;

#[cfg(unix)]
mod errno {
    pub(super) use libc::{
        EACCES, EBADF, EBUSY, EEXIST, EFBIG, EINVAL, EIO, EISDIR, ENAMETOOLONG, ENOENT, ENOSPC,
        ENOTDIR, ENOTEMPTY, EPERM,
    };
}

#[cfg(not(unix))]
mod errno {
    pub(super) const EACCES: i32 = 13;
    pub(super) const EBADF: i32 = 9;
    pub(super) const EBUSY: i32 = 16;
    pub(super) const EEXIST: i32 = 17;
    pub(super) const EFBIG: i32 = 27;
    pub(super) const EINVAL: i32 = 22;
    pub(super) const EIO: i32 = 5;
    pub(super) const EISDIR: i32 = 21;
    pub(super) const ENAMETOOLONG: i32 = 36;
    pub(super) const ENOENT: i32 = 2;
    pub(super) const ENOSPC: i32 = 28;
    pub(super) const ENOTDIR: i32 = 20;
    pub(super) const ENOTEMPTY: i32 = 39;
    pub(super) const EPERM: i32 = 1;
}

/// `ENOENT`: a path component does not exist.
pub(crate) fn not_found() -> io::Error {
    os_error(
        errno::ENOENT,
        ErrorKind::NotFound,
        "No such file or directory",
    )
}

/// `EACCES`: the entry's permission bits forbid the access.
pub(crate) fn permission_denied() -> io::Error {
    os_error(
        errno::EACCES,
        ErrorKind::PermissionDenied,
        "Permission denied",
    )
}

/// `EPERM`: the call is not allowed on this kind of entry (a hard link to a directory).
pub(crate) fn not_permitted() -> io::Error {
    os_error(
        errno::EPERM,
        ErrorKind::PermissionDenied,
        "Operation not permitted",
    )
}

/// `EEXIST`: the path exists and the call wanted to create it.
pub(crate) fn already_exists() -> io::Error {
    os_error(errno::EEXIST, ErrorKind::AlreadyExists, "File exists")
}

/// `ENOTDIR`: a component used as a directory is a file.
pub(crate) fn not_a_directory() -> io::Error {
    os_error(errno::ENOTDIR, ErrorKind::NotADirectory, "Not a directory")
}

/// `EISDIR`: a file operation was asked of a directory.
pub(crate) fn is_a_directory() -> io::Error {
    os_error(errno::EISDIR, ErrorKind::IsADirectory, "Is a directory")
}

/// `ENOTEMPTY`: the directory to remove or replace has entries.
pub(crate) fn directory_not_empty() -> io::Error {
    os_error(
        errno::ENOTEMPTY,
        ErrorKind::DirectoryNotEmpty,
        "Directory not empty",
    )
}

/// A whole file's bytes as text, as std's `read_to_string` gives them: `InvalidData` if they
/// are not UTF-8.
pub(crate) fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes)
        .map_err(|_| io::Error::new(ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

/// Whether an entry exists, from what asking for its metadata gave: `Ok(false)` only when it
/// is known not to.
pub(crate) fn exists(metadata: io::Result<crate::Metadata>) -> io::Result<bool> {
    match metadata {
        Ok(_) => Ok(true),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

/// `EINVAL`: the arguments make no sense (a rename into its own subdirectory, bad flags).
/// `ENAMETOOLONG`: a name longer than Linux's 255 bytes.
pub(crate) fn name_too_long() -> io::Error {
    os_error(
        errno::ENAMETOOLONG,
        ErrorKind::InvalidFilename,
        "File name too long",
    )
}

pub(crate) fn invalid_input() -> io::Error {
    os_error(errno::EINVAL, ErrorKind::InvalidInput, "Invalid argument")
}

/// `EBADF`: reading a handle opened write-only, or writing one opened read-only.
pub(crate) fn bad_descriptor() -> io::Error {
    os_error(errno::EBADF, ErrorKind::Other, "Bad file descriptor")
}

/// `EBUSY`: the root directory cannot be removed or renamed.
pub(crate) fn busy() -> io::Error {
    os_error(
        errno::EBUSY,
        ErrorKind::ResourceBusy,
        "Device or resource busy",
    )
}

/// `EIO`: an injected I/O error, or a handle that outlived its node's crash.
pub(crate) fn io_error() -> io::Error {
    os_error(errno::EIO, ErrorKind::Other, "Input/output error")
}

/// `EFBIG`: the file would grow past the disk's largest file (`DiskConfig::max_file_size`).
pub(crate) fn file_too_large() -> io::Error {
    os_error(errno::EFBIG, ErrorKind::FileTooLarge, "File too large")
}

/// `ENOSPC`: the disk is full.
pub(crate) fn no_space() -> io::Error {
    os_error(
        errno::ENOSPC,
        ErrorKind::StorageFull,
        "No space left on device",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_the_kinds_of_the_real_calls() {
        assert_eq!(not_found().kind(), ErrorKind::NotFound);
        assert_eq!(already_exists().kind(), ErrorKind::AlreadyExists);
        assert_eq!(not_a_directory().kind(), ErrorKind::NotADirectory);
        assert_eq!(is_a_directory().kind(), ErrorKind::IsADirectory);
        assert_eq!(directory_not_empty().kind(), ErrorKind::DirectoryNotEmpty);
        assert_eq!(invalid_input().kind(), ErrorKind::InvalidInput);
        assert_eq!(busy().kind(), ErrorKind::ResourceBusy);
        assert_eq!(no_space().kind(), ErrorKind::StorageFull);
    }

    #[cfg(unix)]
    #[test]
    fn errors_carry_the_raw_os_error() {
        assert_eq!(not_found().raw_os_error(), Some(libc::ENOENT));
        assert_eq!(io_error().raw_os_error(), Some(libc::EIO));
    }
}
