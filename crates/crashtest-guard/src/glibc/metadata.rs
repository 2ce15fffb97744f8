//! std's `Metadata` for a simulated entry: std makes a `Metadata` only from the OS's answer
//! to `statx`, so the tokio stand-in asks std about one path no host has
//! (`crashtest_hooks::fs::SIMULATED_ENTRY`) while it holds the simulated entry's `Stat`, and
//! this guard answers that call from the `Stat`. So a simulated file's metadata says what the
//! simulated disk says, the same on every run and on every host, and no specimen file is
//! made on the host to obtain it. Every other `statx` goes to libc, inside a simulation or
//! not.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_uint};
use std::sync::atomic::{AtomicU64, Ordering};

use super::next::Next;

type StatxFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint, *mut libc::statx) -> c_int;

// SAFETY: the type is this glibc function's C declaration.
static REAL_STATX: Next<StatxFn> = unsafe { Next::new(c"statx") };

/// The runs of this process, counted: each run's disks are devices of their own.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// The number of the running simulation among the runs of this process, taken at its
/// first simulated `stat`.
#[derive(Default)]
struct RunNumber(Cell<Option<u64>>);

thread_local! {
    static RUN_NUMBER: crashtest_core::plumbing::checks::ExtensionCache<RunNumber> =
        const { crashtest_core::plumbing::checks::ExtensionCache::new() };
}

/// The device of the calling node's simulated disk, as (major, minor): a device of its own
/// for each node of each run in the process. Code that keys a per-process table by device
/// and inode (SQLite keeps its locks so) must see two simulated machines' files as two
/// files, in one run or in two going on at once (test threads, a sweep's seeds), though
/// their inode numbers are alike. So the device is the one value of a simulated entry that
/// the seed does not decide: it does not steer the simulation, and a program that only
/// compares it (as SQLite does) behaves the same in every run of a seed. `node` is the
/// disk's node (the calling node when `None`). Its major number is 0x1000 or above, which
/// the kernel's 12-bit major numbers never reach, so it is no host device.
pub(super) fn simulated_device(node: Option<usize>) -> (u32, u32) {
    let run = std::panic::catch_unwind(|| {
        let number = RUN_NUMBER.with(|cache| cache.get(|_| {}))?;
        let taken = number
            .0
            .get()
            .unwrap_or_else(|| RUNS.fetch_add(1, Ordering::Relaxed));
        number.0.set(Some(taken));
        Some(taken)
    })
    .ok()
    .flatten()
    .unwrap_or(0);
    let node = node.or_else(super::calling_node).unwrap_or(0);
    // 12 bits of the run in the major number, 8 in the minor, and 12 of the node: distinct
    // among any 2^20 consecutive runs of up to 4,096 nodes each.
    let major = 0x1000 | ((run >> 8) as u32 & 0xfff);
    let minor = ((run as u32 & 0xff) << 12) | (node as u32 & 0xfff);
    (major, minor)
}

/// `statx(2)`: answers the simulated entry the tokio stand-in asks std about
/// (`crashtest_hooks::fs::SIMULATED_ENTRY`, while it holds a `Stat` for it) from that
/// `Stat`, so that std's `Metadata` of a simulated file says what the simulated disk says,
/// and the same on every run: its type, length, permission bits, inode number, links and
/// times (the access time is the creation time); the calling user and group as its owner;
/// the node's disk as its device ([`simulated_device`]).
/// Every other call goes to libc.
///
/// # Safety
///
/// As for the C function: `path` is null or NUL-terminated, and `buf` is valid for a write.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn statx(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    if !path.is_null() && !buf.is_null() {
        // SAFETY: non-null, and NUL-terminated by the caller's contract.
        let asked = unsafe { CStr::from_ptr(path) };
        if let Some(stat) = crashtest_hooks::fs::answer_for(asked) {
            // SAFETY: the caller's buffer, valid for a write of one `statx`.
            unsafe { fill_statx(buf, &stat, simulated_device(None)) };
            return 0;
        }
    }
    // SAFETY: the caller's arguments.
    if let Some(answer) = unsafe { super::disk::statx(dir, path, flags, buf) } {
        return answer;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { REAL_STATX.get()(dir, path, flags, mask, buf) }
}

/// Writes `stat` into `buf` as the kernel would describe such an entry.
///
/// # Safety
///
/// `buf` is valid for a write of one `statx`.
pub(super) unsafe fn fill_statx(
    buf: *mut libc::statx,
    stat: &crashtest_hooks::fs::Stat,
    device: (u32, u32),
) {
    assert_eq!(
        stat.mode & !0o7777,
        0,
        "a simulated entry's mode is permission bits"
    );
    let kind = if stat.is_dir {
        libc::S_IFDIR
    } else {
        libc::S_IFREG
    };
    let mode = u16::try_from(kind | stat.mode).expect("a file mode fits in 16 bits");
    // SAFETY: valid for a write by the caller's contract; all zeros is a valid `statx`
    // (every optional field absent).
    unsafe { std::ptr::write_bytes(buf, 0, 1) };
    // SAFETY: as above; the fields are plain integers.
    let out = unsafe { &mut *buf };
    out.stx_mask = libc::STATX_BASIC_STATS | libc::STATX_BTIME;
    out.stx_blksize = 4096;
    out.stx_nlink = u32::try_from(stat.nlink).unwrap_or(u32::MAX);
    // SAFETY: getuid and getgid have no preconditions and always succeed.
    (out.stx_uid, out.stx_gid) = unsafe { (libc::getuid(), libc::getgid()) };
    out.stx_mode = mode;
    out.stx_ino = stat.ino;
    out.stx_size = stat.len;
    out.stx_blocks = stat.len.div_ceil(512);
    (out.stx_dev_major, out.stx_dev_minor) = device;
    out.stx_btime = timestamp(stat.born_ns);
    out.stx_atime = timestamp(stat.born_ns);
    out.stx_mtime = timestamp(stat.modified_ns);
    out.stx_ctime = timestamp(stat.changed_ns);
}

/// `ns` nanoseconds since the Unix epoch as the kernel writes a time: whole seconds (floored,
/// so negative before the epoch) and the nanoseconds past them.
fn timestamp(ns: i64) -> libc::statx_timestamp {
    // SAFETY: all zeros is a valid `statx_timestamp` (its padding included).
    let mut time: libc::statx_timestamp = unsafe { std::mem::zeroed() };
    time.tv_sec = ns.div_euclid(1_000_000_000);
    time.tv_nsec = u32::try_from(ns.rem_euclid(1_000_000_000)).expect("below a second");
    time
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> [*const (); 1] {
    [statx as *const ()]
}
