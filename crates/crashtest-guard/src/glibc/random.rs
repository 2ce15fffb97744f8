//! OS randomness: `getrandom`, `getentropy`, and `syscall(SYS_getrandom, ...)`.
//!
//! Inside a simulation every byte comes from the run's seed: std's `HashMap` keys (a
//! `getrandom` with `GRND_INSECURE`, as std asks for them) from the `"hash-keys"` stream,
//! everything else (`rand`'s `thread_rng` and `OsRng`, C code) from `"os-random"`. The two
//! are apart so that a program that makes one map more or less (a log subscriber turned on
//! to debug a seed makes some) still draws the same seeds for its generators, and so takes
//! the same run. Each entry point reaches different callers:
//! - `getrandom`: std's `HashMap` keys (std finds `getrandom` with `dlsym`, which sees the
//!   executable's definition because the linker exports a symbol that a linked shared
//!   library also defines), getrandom 0.3 and 0.4 (same lookup), and C code.
//! - `syscall`: getrandom 0.2 (behind rand 0.8) calls `syscall(SYS_getrandom, ...)` directly.
//!   Only that call number is looked at; every other system call is forwarded at once, before
//!   anything else is read, because std's locks make futex calls through here.
//! - `getentropy`: C code and some crates.
//!
//! An empty request succeeds without drawing, so the availability probes that libraries make
//! with an empty buffer do not shift the stream.

use std::ffi::{c_int, c_long, c_uint, c_void};

use super::next::Next;

use crashtest_core::rng::Stream;

/// The most bytes `getentropy` hands out in one call (POSIX).
const GETENTROPY_MAX: usize = 256;

type GetrandomFn = unsafe extern "C" fn(*mut c_void, usize, c_uint) -> isize;
type GetentropyFn = unsafe extern "C" fn(*mut c_void, usize) -> c_int;
type SyscallFn = unsafe extern "C" fn(c_long, ...) -> c_long;

// SAFETY: the types are the C declarations of these glibc functions.
static REAL_GETRANDOM: Next<GetrandomFn> = unsafe { Next::new(c"getrandom") };
// SAFETY: as above.
static REAL_GETENTROPY: Next<GetentropyFn> = unsafe { Next::new(c"getentropy") };
// SAFETY: as above; `syscall` is variadic and is called with the six argument words.
static REAL_SYSCALL: Next<SyscallFn> = unsafe { Next::new(c"syscall") };

/// Fills `len` bytes at `buf` from the run's `stream`; false (with the run failed) if the
/// stream could not be reached.
///
/// # Safety
///
/// `buf` must be valid for `len` bytes of writes (it may be uninitialized).
unsafe fn fill_from_seed(call: &str, stream: Stream, buf: *mut u8, len: usize) -> bool {
    // Drawn in chunks into initialized memory: `buf` may be uninitialized, and a `&mut [u8]`
    // over uninitialized bytes is not allowed. A chunk is a whole number of 64-bit draws, so
    // the stream advances exactly as it would for one big fill.
    let mut chunk = [0u8; 256];
    let mut written = 0;
    while written < len {
        let n = (len - written).min(chunk.len());
        let drawn = super::answer(call, || {
            crashtest_core::plumbing::with_stream(stream, |rng| rng.fill_bytes(&mut chunk[..n]))
                .expect("OS randomness is drawn from the seed only inside a simulation")
        });
        if drawn.is_none() {
            return false;
        }
        // SAFETY: `written + n <= len`, so the destination lies within the caller's buffer,
        // which cannot overlap this local chunk.
        unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), buf.add(written), n) };
        written += n;
    }
    true
}

/// The stream a `getrandom` request with `flags` draws from inside a simulation.
fn stream_of(flags: c_uint) -> Stream {
    if flags & libc::GRND_INSECURE != 0 {
        Stream::HashKeys
    } else {
        Stream::OsRandom
    }
}

/// Whether a real `getrandom` that returned `got` with `flags` failed only because the kernel
/// knows no `GRND_INSECURE` (Linux before 5.6). std would remember that for the process and
/// ask for its map keys with `GRND_NONBLOCK` from then on, inside runs too, where they would
/// then come from `"os-random"` and a seed's run would depend on the host's kernel; so such a
/// request is answered as std's own fallback would answer it, and std never learns.
fn insecure_unknown(got: i64, flags: c_uint) -> bool {
    got == -1
        && flags & libc::GRND_INSECURE != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
}

/// The flags std falls back to when the kernel knows no `GRND_INSECURE`.
fn without_insecure(flags: c_uint) -> c_uint {
    (flags & !libc::GRND_INSECURE) | libc::GRND_NONBLOCK
}

/// `getrandom(2)`: inside a simulation, `len` bytes from the run's seed whatever the flags:
/// std's map keys (`GRND_INSECURE`) from their own stream, the rest from `"os-random"`.
///
/// # Safety
///
/// As for the C function: `buf` is valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn getrandom(buf: *mut c_void, len: usize, flags: c_uint) -> isize {
    if super::in_simulation() {
        // SAFETY: the caller passes a buffer valid for `len` bytes.
        if unsafe { fill_from_seed("getrandom", stream_of(flags), buf.cast(), len) } {
            // A valid buffer holds at most `isize::MAX` bytes.
            return len as isize;
        }
        super::set_errno(libc::EIO);
        return -1;
    }
    let real = REAL_GETRANDOM.get();
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    let got = unsafe { real(buf, len, flags) };
    if insecure_unknown(got as i64, flags) {
        // SAFETY: the caller's buffer, with the flags std would retry with.
        return unsafe { real(buf, len, without_insecure(flags)) };
    }
    got
}

/// `getentropy(3)`: inside a simulation, `len` bytes from the run's stream (at most 256, as
/// libc allows).
///
/// # Safety
///
/// As for the C function: `buf` is valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn getentropy(buf: *mut c_void, len: usize) -> c_int {
    if super::in_simulation() {
        let fill = || {
            // SAFETY: the caller passes a buffer valid for `len` bytes.
            unsafe { fill_from_seed("getentropy", Stream::OsRandom, buf.cast(), len) }
        };
        if len <= GETENTROPY_MAX && fill() {
            return 0;
        }
        // glibc reports an oversized request as EIO.
        super::set_errno(libc::EIO);
        return -1;
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_GETENTROPY.get()(buf, len) }
}

/// `syscall(2)`: `SYS_getrandom` inside a simulation is served from the run's stream; every
/// other call goes to the kernel unchanged.
///
/// The C function is variadic. On the supported targets (x86-64 and AArch64 Linux) variadic
/// integer arguments travel in the same registers as fixed ones, so six `long` parameters
/// receive whatever the caller passed (words it did not pass are read but never used), and
/// all six are handed on. The kernel takes at most six arguments.
///
/// # Safety
///
/// As for the C function: the arguments are valid for system call `number`.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn syscall(
    number: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    if number != libc::SYS_getrandom {
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        return unsafe { REAL_SYSCALL.get()(number, a1, a2, a3, a4, a5, a6) };
    }
    // getrandom's flags are an unsigned int in a long's register.
    let flags = a3 as c_uint;
    if super::in_simulation() {
        let (buf, len) = (a1 as *mut u8, a2 as usize);
        let stream = stream_of(flags);
        // SAFETY: getrandom's arguments are a buffer valid for `len` bytes and its length.
        if unsafe { fill_from_seed("syscall(SYS_getrandom)", stream, buf, len) } {
            return a2;
        }
        super::set_errno(libc::EIO);
        return -1;
    }
    let real = REAL_SYSCALL.get();
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    let got = unsafe { real(number, a1, a2, a3, a4, a5, a6) };
    if insecure_unknown(got, flags) {
        let retry = c_long::from(without_insecure(flags));
        // SAFETY: the caller's buffer and length, with the flags std would retry with.
        return unsafe { real(number, a1, a2, retry, a4, a5, a6) };
    }
    got
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> [*const (); 3] {
    [
        getrandom as *const (),
        getentropy as *const (),
        syscall as *const (),
    ]
}
