//! Directory streams of the disk: `opendir`, `fdopendir`, `readdir` (and `readdir_r`),
//! `telldir`, `seekdir`, `rewinddir`, `dirfd` and `closedir`, which std's `read_dir` and
//! `remove_dir_all` use. Every call glibc would make on a `DIR *` is answered here: glibc's
//! own would read a stream of the disk as its struct.
//!
//! A stream holds a simulated directory descriptor (so `dirfd` and the calls relative to it
//! work) and the directory's listing, taken when the stream opens or rewinds, in the order
//! the seed decides; `.` and `..` come first, as Linux lists them. The `DIR *` handed out is
//! the address of the stream, which lives until `closedir`, even past the end of its run (a
//! `ReadDir` dropped after the run still closes it), so the set of streams is the process's,
//! not the run's; any other `DIR *` is glibc's.

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::descriptors::{self, simulated};
use super::{Route, disk, errno_of, fail_with, on_disk, route};
use crate::glibc::next::Next;

/// An open directory stream of the disk.
struct Stream {
    fd: c_int,
    path: PathBuf,
    /// Each entry's name, inode number and `d_type`.
    entries: Vec<(Vec<u8>, u64, u8)>,
    next: usize,
    /// What `readdir` returned last, valid until the next call on the stream.
    entry: Box<libc::dirent64>,
}

/// The addresses of the streams handed out and not yet closed, in every run of the process.
static STREAMS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// The streams handed out; a poisoned lock (a panic while it was held, which nothing here
/// does) is taken as is, since the set is valid after every step.
fn streams() -> MutexGuard<'static, BTreeSet<usize>> {
    STREAMS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on the stream at `dir`, if it is one of the disk's.
fn with_stream<R>(dir: *mut libc::DIR, f: impl FnOnce(&mut Stream) -> R) -> Option<R> {
    if dir.is_null() || !streams().contains(&(dir as usize)) {
        return None;
    }
    // SAFETY: the address is a live stream's: made by `Box::into_raw` in `open_stream` and
    // freed only by `closedir`, which forgets it first; a stream is used by one thread at a
    // time, as a `DIR *` is.
    Some(f(unsafe { &mut *dir.cast::<Stream>() }))
}

/// The listing of the directory `path`: `.`, `..`, then its entries.
fn list(path: &Path) -> std::io::Result<Vec<(Vec<u8>, u64, u8)>> {
    let own = disk::metadata(path)?.ino();
    let parent = path.parent().map_or(Ok(own), |parent| {
        disk::metadata(parent).map(|meta| meta.ino())
    })?;
    let mut entries = vec![
        (b".".to_vec(), own, libc::DT_DIR),
        (b"..".to_vec(), parent, libc::DT_DIR),
    ];
    for entry in disk::read_dir(path)? {
        let entry = entry?;
        let kind = if entry.file_type()?.is_dir() {
            libc::DT_DIR
        } else {
            libc::DT_REG
        };
        entries.push((entry.file_name().as_bytes().to_vec(), entry.ino(), kind));
    }
    Ok(entries)
}

/// A stream over the simulated directory descriptor `fd`, at `path`; null with `errno` if it
/// cannot be listed.
fn open_stream(fd: c_int, path: PathBuf) -> *mut libc::DIR {
    let entries = match on_disk("opendir", || list(&path)) {
        Some(Ok(entries)) => entries,
        Some(Err(error)) => {
            fail_with(errno_of(&error));
            return std::ptr::null_mut();
        }
        None => {
            fail_with(libc::EIO);
            return std::ptr::null_mut();
        }
    };
    // SAFETY: all zeros is a valid `dirent64`.
    let entry = Box::new(unsafe { std::mem::zeroed::<libc::dirent64>() });
    let stream = Box::into_raw(Box::new(Stream {
        fd,
        path,
        entries,
        next: 0,
        entry,
    }));
    streams().insert(stream as usize);
    stream.cast()
}

// SAFETY: the C declarations of these glibc functions.
static REAL_OPENDIR: Next<unsafe extern "C" fn(*const c_char) -> *mut libc::DIR> =
    unsafe { Next::new(c"opendir") };
// SAFETY: as above.
static REAL_FDOPENDIR: Next<unsafe extern "C" fn(c_int) -> *mut libc::DIR> =
    unsafe { Next::new(c"fdopendir") };
// SAFETY: as above.
static REAL_READDIR: Next<unsafe extern "C" fn(*mut libc::DIR) -> *mut libc::dirent64> =
    unsafe { Next::new(c"readdir") };
// SAFETY: as above.
static REAL_READDIR64: Next<unsafe extern "C" fn(*mut libc::DIR) -> *mut libc::dirent64> =
    unsafe { Next::new(c"readdir64") };
// SAFETY: as above.
static REAL_CLOSEDIR: Next<unsafe extern "C" fn(*mut libc::DIR) -> c_int> =
    unsafe { Next::new(c"closedir") };
// SAFETY: as above.
static REAL_DIRFD: Next<unsafe extern "C" fn(*mut libc::DIR) -> c_int> =
    unsafe { Next::new(c"dirfd") };
// SAFETY: as above.
static REAL_REWINDDIR: Next<unsafe extern "C" fn(*mut libc::DIR)> =
    unsafe { Next::new(c"rewinddir") };

/// `opendir(3)`: a directory of the disk gets a stream of its listing.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn opendir(path: *const c_char) -> *mut libc::DIR {
    // SAFETY: the caller's path.
    let Route::Disk(on) = (unsafe { route(libc::AT_FDCWD, path, false) }) else {
        // SAFETY: the caller's argument, unchanged.
        return unsafe { REAL_OPENDIR.get()(path) };
    };
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    let fd = descriptors::open(&on, flags, 0);
    if fd < 0 {
        return std::ptr::null_mut();
    }
    let stream = open_stream(fd, on);
    if stream.is_null() {
        let code = std::io::Error::last_os_error().raw_os_error();
        // SAFETY: `fd` is the descriptor just opened, and ours.
        unsafe { libc::close(fd) };
        fail_with(code.unwrap_or(libc::EIO));
    }
    stream
}

/// `fdopendir(3)`: a stream over a simulated directory descriptor, which it then owns.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn fdopendir(fd: c_int) -> *mut libc::DIR {
    let Some(open) = simulated(fd) else {
        // SAFETY: the caller's argument, unchanged.
        return unsafe { REAL_FDOPENDIR.get()(fd) };
    };
    if !open.dir {
        fail_with(libc::ENOTDIR);
        return std::ptr::null_mut();
    }
    open_stream(fd, open.path.clone())
}

/// The next entry of a stream of the disk, or null at its end.
fn next_entry(stream: &mut Stream) -> *mut libc::dirent64 {
    let Some((name, ino, kind)) = stream.entries.get(stream.next) else {
        return std::ptr::null_mut();
    };
    stream.next += 1;
    let entry = &mut *stream.entry;
    let room = entry.d_name.len() - 1;
    let len = name.len().min(room);
    entry.d_ino = *ino;
    entry.d_off = i64::try_from(stream.next).expect("a listing's length fits in off_t");
    entry.d_reclen = u16::try_from(size_of::<libc::dirent64>()).expect("a dirent is small");
    entry.d_type = *kind;
    for (to, &from) in entry.d_name.iter_mut().zip(&name[..len]) {
        *to = from as c_char;
    }
    entry.d_name[len] = 0;
    entry
}

/// `readdir(3)`.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    if let Some(entry) = with_stream(dir, next_entry) {
        return entry;
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { REAL_READDIR.get()(dir) }
}

/// `readdir64`: as [`readdir`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    if let Some(entry) = with_stream(dir, next_entry) {
        return entry;
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { REAL_READDIR64.get()(dir) }
}

// SAFETY: the C declarations of these glibc functions.
static REAL_TELLDIR: Next<unsafe extern "C" fn(*mut libc::DIR) -> libc::c_long> =
    unsafe { Next::new(c"telldir") };
// SAFETY: as above.
static REAL_SEEKDIR: Next<unsafe extern "C" fn(*mut libc::DIR, libc::c_long)> =
    unsafe { Next::new(c"seekdir") };
type ReaddirRFn =
    unsafe extern "C" fn(*mut libc::DIR, *mut libc::dirent64, *mut *mut libc::dirent64) -> c_int;
// SAFETY: as above.
static REAL_READDIR_R: Next<ReaddirRFn> = unsafe { Next::new(c"readdir_r") };
// SAFETY: as above.
static REAL_READDIR64_R: Next<ReaddirRFn> = unsafe { Next::new(c"readdir64_r") };

/// `telldir(3)`: the stream's position, the index of its next entry.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn telldir(dir: *mut libc::DIR) -> libc::c_long {
    if let Some(at) = with_stream(dir, |stream| stream.next) {
        return libc::c_long::try_from(at).unwrap_or(libc::c_long::MAX);
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { REAL_TELLDIR.get()(dir) }
}

/// `seekdir(3)`: back to a position `telldir` gave.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn seekdir(dir: *mut libc::DIR, at: libc::c_long) {
    let moved = with_stream(dir, |stream| {
        stream.next = usize::try_from(at).unwrap_or(0).min(stream.entries.len());
    });
    if moved.is_none() {
        // SAFETY: the caller's arguments, unchanged.
        unsafe { REAL_SEEKDIR.get()(dir, at) }
    }
}

/// The answer of `readdir_r` on a stream of the disk: the next entry copied to `entry` and
/// `*result` pointing at it, or `*result` null at the end; 0 either way.
///
/// # Safety
///
/// `entry` is valid for a write of one `dirent64` and `result` of one pointer.
unsafe fn next_entry_into(
    stream: &mut Stream,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    if entry.is_null() || result.is_null() {
        return libc::EFAULT;
    }
    let next = next_entry(stream);
    // SAFETY: by the caller's contract; `next` is the stream's own entry, apart from `entry`.
    unsafe {
        if next.is_null() {
            *result = std::ptr::null_mut();
        } else {
            std::ptr::copy_nonoverlapping(next, entry, 1);
            *result = entry;
        }
    }
    0
}

/// `readdir_r(3)`.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn readdir_r(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { next_entry_or(dir, entry, result, &REAL_READDIR_R) }
}

/// `readdir64_r`: as [`readdir_r`].
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn readdir64_r(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
) -> c_int {
    // SAFETY: the caller's arguments.
    unsafe { next_entry_or(dir, entry, result, &REAL_READDIR64_R) }
}

/// `readdir_r`'s answer: the disk's next entry for a stream of the disk, `real`'s otherwise.
///
/// # Safety
///
/// As for `readdir_r(3)`.
unsafe fn next_entry_or(
    dir: *mut libc::DIR,
    entry: *mut libc::dirent64,
    result: *mut *mut libc::dirent64,
    real: &Next<ReaddirRFn>,
) -> c_int {
    // SAFETY: the caller's pointers.
    if let Some(answer) = with_stream(dir, |stream| unsafe {
        next_entry_into(stream, entry, result)
    }) {
        return answer;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real.get()(dir, entry, result) }
}

/// `rewinddir(3)`: lists the directory again.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn rewinddir(dir: *mut libc::DIR) {
    let relisted = with_stream(dir, |stream| {
        // A stream that outlived its run keeps its last listing: its disk is gone.
        if super::super::in_simulation()
            && let Some(Ok(entries)) = on_disk("rewinddir", || list(&stream.path))
        {
            stream.entries = entries;
        }
        stream.next = 0;
    });
    if relisted.is_none() {
        // SAFETY: the caller's argument, unchanged.
        unsafe { REAL_REWINDDIR.get()(dir) }
    }
}

/// `dirfd(3)`: the stream's simulated directory descriptor.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn dirfd(dir: *mut libc::DIR) -> c_int {
    if let Some(fd) = with_stream(dir, |stream| stream.fd) {
        return fd;
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { REAL_DIRFD.get()(dir) }
}

/// `closedir(3)`: forgets the stream and closes its descriptor.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    if dir.is_null() || !streams().remove(&(dir as usize)) {
        // SAFETY: the caller's argument, unchanged.
        return unsafe { REAL_CLOSEDIR.get()(dir) };
    }
    // SAFETY: a stream's address, just forgotten, so freed once, here.
    let stream = unsafe { Box::from_raw(dir.cast::<Stream>()) };
    // SAFETY: the stream's own descriptor, closed once, here.
    unsafe { libc::close(stream.fd) }
}

/// The guards, for [`crate::glibc::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    vec![
        opendir as *const (),
        fdopendir as *const (),
        readdir as *const (),
        readdir64 as *const (),
        rewinddir as *const (),
        telldir as *const (),
        seekdir as *const (),
        readdir_r as *const (),
        readdir64_r as *const (),
        dirfd as *const (),
        closedir as *const (),
    ]
}
