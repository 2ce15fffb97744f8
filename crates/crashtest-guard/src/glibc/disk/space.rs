//! How full a node's disk is: `statvfs`, `statfs` and their descriptor and `64` forms, for a
//! path or a descriptor of the disk. Storage engines ask before they grow a file (the `fs2`
//! and `fs4` crates' `available_space`); the host's answer, or a memfd's (no room at all),
//! would be another machine's.
//!
//! The disk is described as an ext4 file system of 4 KiB blocks: its capacity
//! (`DiskConfig::capacity`, or 1 TiB when none is set) and the bytes its files hold.

use std::ffi::{c_char, c_int};

use super::descriptors::simulated;
use super::{Route, disk, errno_of, fail_with, on_disk, route};
use crate::glibc::next::Next;

/// The block size the disk reports.
const BLOCK: u64 = 4096;

/// The size reported for a disk without a capacity.
const NOMINAL_CAPACITY: u64 = 1 << 40;

/// The inode count reported (the disk does not run out of inodes).
const INODES: u64 = 1 << 24;

/// ext4's magic number, which `statfs` reports as the file system's type.
const EXT4_SUPER_MAGIC: i64 = 0xEF53;

const _: () = {
    assert!(size_of::<libc::statvfs>() == size_of::<libc::statvfs64>());
    assert!(size_of::<libc::statfs>() == size_of::<libc::statfs64>());
};

/// The disk's (total, free) blocks.
fn blocks() -> std::io::Result<(u64, u64)> {
    let space = disk::space()?;
    let total = space.capacity.unwrap_or(NOMINAL_CAPACITY);
    Ok((total / BLOCK, total.saturating_sub(space.used) / BLOCK))
}

/// Answers a `statvfs` call from the disk into `buf`.
fn answer_statvfs(buf: *mut libc::statvfs) -> c_int {
    if buf.is_null() {
        return fail_with(libc::EFAULT);
    }
    match on_disk("statvfs", blocks) {
        Some(Ok((total, free))) => {
            // SAFETY: a statvfs call's buffer is valid for a write of one `statvfs`; all
            // zeros is a valid one.
            let out = unsafe {
                std::ptr::write_bytes(buf, 0, 1);
                &mut *buf
            };
            out.f_bsize = BLOCK;
            out.f_frsize = BLOCK;
            (out.f_blocks, out.f_bfree, out.f_bavail) = (total, free, free);
            (out.f_files, out.f_ffree, out.f_favail) = (INODES, INODES, INODES);
            out.f_namemax = 255;
            0
        }
        Some(Err(error)) => fail_with(errno_of(&error)),
        None => fail_with(libc::EIO),
    }
}

/// Answers a `statfs` call from the disk into `buf`.
fn answer_statfs(buf: *mut libc::statfs) -> c_int {
    if buf.is_null() {
        return fail_with(libc::EFAULT);
    }
    match on_disk("statfs", blocks) {
        Some(Ok((total, free))) => {
            // SAFETY: a statfs call's buffer is valid for a write of one `statfs`; all zeros
            // is a valid one.
            let out = unsafe {
                std::ptr::write_bytes(buf, 0, 1);
                &mut *buf
            };
            out.f_type = EXT4_SUPER_MAGIC;
            out.f_bsize = BLOCK as i64;
            out.f_frsize = BLOCK as i64;
            (out.f_blocks, out.f_bfree, out.f_bavail) = (total, free, free);
            (out.f_files, out.f_ffree) = (INODES, INODES);
            out.f_namelen = 255;
            0
        }
        Some(Err(error)) => fail_with(errno_of(&error)),
        None => fail_with(libc::EIO),
    }
}

/// Defines the guard `$name` of a space call on a path: the disk's answer for a path of the
/// disk, libc's otherwise.
macro_rules! path_space {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident, $buf:ty, $answer:ident) => {
        static $next: Next<unsafe extern "C" fn(*const c_char, *mut $buf) -> c_int> =
            // SAFETY: the C declaration of this glibc function.
            unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name(path: *const c_char, buf: *mut $buf) -> c_int {
            // SAFETY: the caller's path.
            match unsafe { route(libc::AT_FDCWD, path, false) } {
                Route::Disk(on) => match on_disk(stringify!($name), || disk::metadata(&on)) {
                    Some(Ok(_)) => $answer(buf.cast()),
                    Some(Err(error)) => fail_with(errno_of(&error)),
                    None => fail_with(libc::EIO),
                },
                // SAFETY: the caller's arguments, unchanged.
                Route::Host => unsafe { $next.get()(path, buf) },
            }
        }
    };
}

/// Defines the guard `$name` of a space call on a descriptor: the disk's answer for a
/// simulated file, libc's otherwise.
macro_rules! descriptor_space {
    ($(#[$doc:meta])* $name:ident = $symbol:literal, $next:ident, $buf:ty, $answer:ident) => {
        static $next: Next<unsafe extern "C" fn(c_int, *mut $buf) -> c_int> =
            // SAFETY: the C declaration of this glibc function.
            unsafe { Next::new($symbol) };

        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As for the C function.
        #[unsafe(no_mangle)]
        pub(super) unsafe extern "C" fn $name(fd: c_int, buf: *mut $buf) -> c_int {
            if simulated(fd).is_some() {
                return $answer(buf.cast());
            }
            // SAFETY: the caller's arguments, unchanged.
            unsafe { $next.get()(fd, buf) }
        }
    };
}

path_space!(
    /// `statvfs(3)`.
    statvfs = c"statvfs", REAL_STATVFS, libc::statvfs, answer_statvfs
);
path_space!(
    /// `statvfs64`: as [`statvfs`].
    statvfs64 = c"statvfs64", REAL_STATVFS64, libc::statvfs64, answer_statvfs
);
path_space!(
    /// `statfs(2)`.
    statfs = c"statfs", REAL_STATFS, libc::statfs, answer_statfs
);
path_space!(
    /// `statfs64`: as [`statfs`].
    statfs64 = c"statfs64", REAL_STATFS64, libc::statfs64, answer_statfs
);
descriptor_space!(
    /// `fstatvfs(3)`.
    fstatvfs = c"fstatvfs", REAL_FSTATVFS, libc::statvfs, answer_statvfs
);
descriptor_space!(
    /// `fstatvfs64`: as [`fstatvfs`].
    fstatvfs64 = c"fstatvfs64", REAL_FSTATVFS64, libc::statvfs64, answer_statvfs
);
descriptor_space!(
    /// `fstatfs(2)`.
    fstatfs = c"fstatfs", REAL_FSTATFS, libc::statfs, answer_statfs
);
descriptor_space!(
    /// `fstatfs64`: as [`fstatfs`].
    fstatfs64 = c"fstatfs64", REAL_FSTATFS64, libc::statfs64, answer_statfs
);

/// The guards, for [`crate::glibc::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    vec![
        statvfs as *const (),
        statvfs64 as *const (),
        statfs as *const (),
        statfs64 as *const (),
        fstatvfs as *const (),
        fstatvfs64 as *const (),
        fstatfs as *const (),
        fstatfs64 as *const (),
    ]
}
