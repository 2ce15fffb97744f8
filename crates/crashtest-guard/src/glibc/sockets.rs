//! Sockets: no real network inside a simulation.
//!
//! Inside a simulation:
//! - `socket()` returns a placeholder (see [`placeholders`](super::placeholders)) for any
//!   family and type; `setsockopt`, `getsockopt`, `bind`, `listen`, `getsockname` and
//!   `getpeername` on a placeholder are answered from its record; closing its last
//!   descriptor forgets it. So
//!   std's `TcpListener::bind` succeeds (no real port is taken), and the stand-in's
//!   `TcpListener::from_std` turns the result into a simulated listener.
//! - `listen` on a real socket of a network family, and `connect`, `accept`, `accept4`, and
//!   the send and receive calls (`send`,
//!   `sendto`, `sendmsg`, `sendmmsg`, `recv`, `recvfrom`, `recvmsg`, `recvmmsg`) on a
//!   placeholder or on a real socket of any network family fail the run with a message that
//!   names the call and what to use instead, and return -1 with `EPERM`: an error the caller
//!   sees at once, never a packet and never a hang. Real `AF_UNIX` sockets (a `socketpair`, or
//!   one made before the simulation) and descriptors that are not sockets pass to libc:
//!   nothing there reaches a network.
//! - A descriptor left of a placeholder that a tokio stand-in took over (a `try_clone` kept
//!   past `UdpSocket::from_std`) is refused the same way, with a message that says the tokio
//!   socket is the simulated one now.
//! - On every other descriptor the calls go to libc unchanged.
//!
//! While a stand-in UDP socket's `try_io` runs, the datagram calls on its descriptor are
//! answered from the simulated socket instead (see [`datagrams`](super::datagrams)).
//!
//! Outside a simulation every call goes to libc after one thread-local read.
//!
//! `bind` on a TCP or UDP placeholder takes its port on the simulated network, as Linux takes
//! it (a free ephemeral one for port 0, and for a socket that listens unbound), so that
//! `getsockname` names the port and a second bind of it fails with `EADDRINUSE`; an address
//! of another node fails with `EADDRNOTAVAIL`. The port is held until the placeholder closes
//! or a tokio stand-in adopts it and binds the port for real (see `crashtest_net::PortHold`).

use std::ffi::{CStr, c_int, c_uint, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::panic;

use libc::{mmsghdr, msghdr, sockaddr, socklen_t, timespec};

use super::next::Next;
use super::{datagrams, placeholders};
use crate::placeholder::Placeholder;

/// What to do instead of reaching the real network; ends every refusal's message.
const INSTEAD: &str = "A simulation never reaches the real network: it owns the network, so \
    that a seed replays it. Use crashtest::net (TcpStream, TcpListener, UdpSocket, lookup_host), \
    or crashtest's tokio stand-in for tokio::net (see the README section on running tokio \
    code); std::net's blocking sockets cannot run in a simulation.";

type SocketFn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type BindFn = unsafe extern "C" fn(c_int, *const sockaddr, socklen_t) -> c_int;
type ListenFn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type SetsockoptFn = unsafe extern "C" fn(c_int, c_int, c_int, *const c_void, socklen_t) -> c_int;
type GetsockoptFn = unsafe extern "C" fn(c_int, c_int, c_int, *mut c_void, *mut socklen_t) -> c_int;
type AddressFn = unsafe extern "C" fn(c_int, *mut sockaddr, *mut socklen_t) -> c_int;

// SAFETY: the types are the C declarations of these glibc functions.
static REAL_SOCKET: Next<SocketFn> = unsafe { Next::new(c"socket") };
// SAFETY: as above.
static REAL_CLOSE: Next<CloseFn> = unsafe { Next::new(c"close") };
// SAFETY: as above.
static REAL_BIND: Next<BindFn> = unsafe { Next::new(c"bind") };
// SAFETY: as above.
static REAL_LISTEN: Next<ListenFn> = unsafe { Next::new(c"listen") };
// SAFETY: as above.
static REAL_SETSOCKOPT: Next<SetsockoptFn> = unsafe { Next::new(c"setsockopt") };
// SAFETY: as above.
static REAL_GETSOCKOPT: Next<GetsockoptFn> = unsafe { Next::new(c"getsockopt") };
// SAFETY: as above.
static REAL_GETSOCKNAME: Next<AddressFn> = unsafe { Next::new(c"getsockname") };
// SAFETY: as above.
static REAL_GETPEERNAME: Next<AddressFn> = unsafe { Next::new(c"getpeername") };

/// Sets `errno` to `code` and returns -1, as a failing socket call does.
fn fail_with(code: c_int) -> c_int {
    super::set_errno(code);
    -1
}

/// Whether `call` on `fd`, inside a simulation, would reach a network: `fd` is a placeholder
/// or a real socket of a family other than `AF_UNIX`. Also true if the simulator's state could
/// not be read (the run has failed then).
fn reaches_network(call: &str, fd: c_int) -> bool {
    let placeholder = || placeholders::with(fd, |_| ()).is_some() || placeholders::is_adopted(fd);
    match super::answer(call, placeholder) {
        Some(false) => {}
        Some(true) | None => return true,
    }
    let mut domain: c_int = 0;
    let mut len = size_of::<c_int>() as socklen_t;
    // SAFETY: `domain` and `len` are valid for writes and `len` is the size of `domain`.
    let got = unsafe {
        REAL_GETSOCKOPT.get()(
            fd,
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&raw mut domain).cast(),
            &mut len,
        )
    };
    got == 0 && domain != libc::AF_UNIX
}

/// Fails the run for a call on `fd` that would reach the real network, or on a duplicate of
/// a socket the tokio stand-in took over.
fn refuse(call: &str, fd: c_int) {
    let duplicate = super::answer(call, || placeholders::is_adopted(fd)) == Some(true);
    super::fail(if duplicate {
        format!(
            "{call} was called inside the simulation on a duplicate of a socket that \
             crashtest's tokio stand-in took over (tokio::net::UdpSocket::from_std, \
             TcpListener::from_std, ...): the simulated socket is the tokio one now, and this \
             descriptor reaches nothing; the call returned EPERM. Send and receive through \
             the tokio socket: its try_io runs a library's own datagram calls (sendmsg, \
             recvmmsg, as quinn-udp makes them) on the simulated socket."
        )
    } else {
        format!(
            "{call} was called inside the simulation, on a socket that would reach the real \
             network; the call returned EPERM and nothing was sent or received. {INSTEAD}"
        )
    });
}

/// Defines the guards of the calls that reach a network: inside a simulation, refused on a
/// placeholder or a network socket; otherwise passed to libc.
macro_rules! network_calls {
    ($($name:ident($fd:ident $(, $arg:ident: $ty:ty)*) -> $ret:ty $(, lent: $lent:path)?;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "(2)`: refused inside a simulation on a \
                placeholder or a network socket.")]
            ///
            /// # Safety
            ///
            /// As for the C function.
            #[unsafe(no_mangle)]
            pub(super) unsafe extern "C" fn $name($fd: c_int $(, $arg: $ty)*) -> $ret {
                // SAFETY: the type is the C declaration of this glibc function.
                static REAL: Next<unsafe extern "C" fn(c_int $(, $ty)*) -> $ret> = unsafe {
                    Next::new(match CStr::from_bytes_with_nul(
                        concat!(stringify!($name), "\0").as_bytes(),
                    ) {
                        Ok(name) => name,
                        Err(_) => panic!("a C name has no NUL inside"),
                    })
                };
                // A stand-in UDP socket's `try_io` lends its simulated socket for its
                // descriptor: the program's own datagram calls there are answered from it.
                let answers: Option<
                    unsafe fn(&dyn crashtest_hooks::net::UdpSock $(, $ty)*) -> $ret,
                > = None $(.or(Some($lent)))?;
                if let Some(answer) = answers {
                    let lent = crashtest_hooks::net::raw_datagrams::lent($fd, |socket| {
                        // A panic must not unwind out of a C function, which aborts the
                        // process: the simulator's panics have failed the run already (a
                        // socket of another run), so the call only fails.
                        panic::catch_unwind(panic::AssertUnwindSafe(|| {
                            // SAFETY: the caller's arguments, valid as the C function requires.
                            unsafe { answer(socket $(, $arg)*) }
                        }))
                    });
                    match lent {
                        Some(Ok(answered)) => return answered,
                        Some(Err(_)) => {
                            super::set_errno(libc::EIO);
                            return -1;
                        }
                        None => {}
                    }
                }
                let call = stringify!($name);
                if super::in_simulation() && reaches_network(call, $fd) {
                    refuse(call, $fd);
                    super::set_errno(libc::EPERM);
                    return -1;
                }
                // SAFETY: the caller's arguments, unchanged, to the function this one hides.
                unsafe { REAL.get()($fd $(, $arg)*) }
            }
        )*

        /// The refusing guards, for [`super::link`].
        fn network_symbols() -> Vec<*const ()> {
            vec![$($name as *const ()),*]
        }
    };
}

network_calls! {
    connect(fd, addr: *const sockaddr, len: socklen_t) -> c_int;
    accept(fd, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    accept4(fd, addr: *mut sockaddr, len: *mut socklen_t, flags: c_int) -> c_int;
    send(fd, buf: *const c_void, len: usize, flags: c_int) -> isize, lent: datagrams::send;
    sendto(
        fd,
        buf: *const c_void,
        len: usize,
        flags: c_int,
        addr: *const sockaddr,
        addr_len: socklen_t
    ) -> isize, lent: datagrams::sendto;
    sendmsg(fd, msg: *const msghdr, flags: c_int) -> isize, lent: datagrams::sendmsg;
    sendmmsg(fd, msgs: *mut mmsghdr, count: c_uint, flags: c_int) -> c_int,
        lent: datagrams::sendmmsg;
    recv(fd, buf: *mut c_void, len: usize, flags: c_int) -> isize, lent: datagrams::recv;
    recvfrom(
        fd,
        buf: *mut c_void,
        len: usize,
        flags: c_int,
        addr: *mut sockaddr,
        addr_len: *mut socklen_t
    ) -> isize, lent: datagrams::recvfrom;
    recvmsg(fd, msg: *mut msghdr, flags: c_int) -> isize, lent: datagrams::recvmsg;
    recvmmsg(fd, msgs: *mut mmsghdr, count: c_uint, flags: c_int, timeout: *mut timespec) -> c_int,
        lent: datagrams::recvmmsg;
}

/// `socket(2)`: a placeholder inside a simulation, whatever the family and type.
///
/// # Safety
///
/// None beyond the C function's (it takes no pointers).
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    if !super::in_simulation() {
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        return unsafe { REAL_SOCKET.get()(domain, ty, protocol) };
    }
    match super::answer("socket", || placeholders::create(domain, ty, protocol)) {
        Some(Ok(fd)) => fd,
        Some(Err(code)) => fail_with(code),
        None => fail_with(libc::EPERM),
    }
}

/// `close(2)`: forgets a placeholder inside a simulation once its last descriptor closes, and
/// a simulated file's descriptor, and always closes the descriptor.
///
/// # Safety
///
/// As for the C function.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn close(fd: c_int) -> c_int {
    if super::in_simulation() {
        // Best effort: a close must close, and never fails the run. If the simulator's state
        // is in use the record stays, which matters to nobody once the descriptor is gone.
        let _ = panic::catch_unwind(|| placeholders::closing(fd));
        let _ = panic::catch_unwind(|| super::disk::closing(fd));
    }
    // SAFETY: the caller's argument, unchanged, to the function this one hides.
    unsafe { REAL_CLOSE.get()(fd) }
}

/// The `len` bytes at `ptr`, or the `errno` for a bad buffer.
///
/// # Safety
///
/// `ptr` is null or valid for reading `len` bytes.
unsafe fn read_in<'a>(ptr: *const c_void, len: socklen_t, most: usize) -> Result<&'a [u8], c_int> {
    let len = len as usize;
    if len > most {
        return Err(libc::EINVAL);
    }
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(libc::EFAULT);
    }
    // SAFETY: non-null, and the caller passes it valid for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast(), len) })
}

/// Copies `value` out to a caller's buffer of `*len` bytes, as the kernel does: as much as
/// fits, and `*len` set to `value`'s full length (`full_len`, for addresses) or to what was
/// copied (for options). Returns 0, or -1 with `errno` set.
///
/// # Safety
///
/// `len` is null or valid for reads and writes; `out` is null or valid for `*len` bytes.
pub(super) unsafe fn write_out(
    value: &[u8],
    out: *mut c_void,
    len: *mut socklen_t,
    full_len: bool,
) -> c_int {
    if len.is_null() {
        return fail_with(libc::EFAULT);
    }
    // SAFETY: non-null, and the caller passes it valid for reads and writes.
    let room = unsafe { len.read() } as usize;
    let copied = room.min(value.len());
    if copied > 0 {
        if out.is_null() {
            return fail_with(libc::EFAULT);
        }
        // SAFETY: `out` is valid for `room >= copied` bytes and cannot overlap `value`, which
        // the guards own.
        unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), out.cast(), copied) };
    }
    let reported = if full_len { value.len() } else { copied };
    // SAFETY: as above. Values are at most `MAX_OPTION_LEN` bytes or an address.
    unsafe { len.write(reported as socklen_t) };
    0
}

/// Runs `f` on the record of `fd` if a simulation runs and `fd` is one of its placeholders:
/// `Some` with the answer (`EPERM` if the simulator's state could not be read, which failed
/// the run), or `None` to pass the call to libc.
fn on_placeholder<R>(
    call: &str,
    fd: c_int,
    f: impl FnOnce(&mut placeholders::Record) -> Result<R, c_int>,
) -> Option<Result<R, c_int>> {
    if !super::in_simulation() {
        return None;
    }
    super::answer(call, || placeholders::with(fd, f)).unwrap_or(Some(Err(libc::EPERM)))
}

/// `bind(2)`: records the address on a placeholder inside a simulation and takes its port
/// on the simulated network.
///
/// # Safety
///
/// As for the C function: `addr` is valid for `len` bytes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn bind(fd: c_int, addr: *const sockaddr, len: socklen_t) -> c_int {
    let record_bind = |record: &mut placeholders::Record| {
        let most = size_of::<libc::sockaddr_storage>();
        // SAFETY: the caller passes `addr` valid for `len` bytes.
        let address = unsafe { read_in(addr.cast(), len, most) }?;
        record.bind(address)
    };
    match on_placeholder("bind", fd, record_bind) {
        Some(Ok(())) => 0,
        Some(Err(code)) => fail_with(code),
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        None => unsafe { REAL_BIND.get()(fd, addr, len) },
    }
}

/// `listen(2)`: records that a placeholder listens inside a simulation; refused there on a
/// real socket of a network family.
///
/// # Safety
///
/// None beyond the C function's (it takes no pointers).
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn listen(fd: c_int, backlog: c_int) -> c_int {
    match on_placeholder("listen", fd, |record| record.listen(backlog)) {
        Some(Ok(())) => 0,
        Some(Err(code)) => fail_with(code),
        None if super::in_simulation() && reaches_network("listen", fd) => {
            refuse("listen", fd);
            fail_with(libc::EPERM)
        }
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        None => unsafe { REAL_LISTEN.get()(fd, backlog) },
    }
}

/// `setsockopt(2)`: records the option on a placeholder inside a simulation.
///
/// # Safety
///
/// As for the C function: `value` is valid for `len` bytes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn setsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    value: *const c_void,
    len: socklen_t,
) -> c_int {
    let record_option = |record: &mut placeholders::Record| {
        // SAFETY: the caller passes `value` valid for `len` bytes.
        let bytes = unsafe { read_in(value, len, usize::MAX) }?;
        record.set_option(level, name, bytes)
    };
    match on_placeholder("setsockopt", fd, record_option) {
        Some(Ok(())) => 0,
        Some(Err(code)) => fail_with(code),
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        None => unsafe { REAL_SETSOCKOPT.get()(fd, level, name, value, len) },
    }
}

/// `getsockopt(2)`: answers from the record of a placeholder inside a simulation.
///
/// # Safety
///
/// As for the C function: `len` is valid for reads and writes, `value` for `*len` bytes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn getsockopt(
    fd: c_int,
    level: c_int,
    name: c_int,
    value: *mut c_void,
    len: *mut socklen_t,
) -> c_int {
    match on_placeholder("getsockopt", fd, |record| record.option(level, name)) {
        // SAFETY: the caller passes `len` and `value` valid.
        Some(Ok(bytes)) => unsafe { write_out(&bytes, value, len, false) },
        Some(Err(code)) => fail_with(code),
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        None => unsafe { REAL_GETSOCKOPT.get()(fd, level, name, value, len) },
    }
}

/// `getsockname(2)`: the bound (or unspecified) address of a placeholder inside a simulation.
///
/// # Safety
///
/// As for the C function: `len` is valid for reads and writes, `addr` for `*len` bytes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn getsockname(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> c_int {
    match on_placeholder("getsockname", fd, |record| Ok(record.local_address())) {
        // SAFETY: the caller passes `len` and `addr` valid.
        Some(Ok(bytes)) => unsafe { write_out(&bytes, addr.cast(), len, true) },
        Some(Err(code)) => fail_with(code),
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        None => unsafe { REAL_GETSOCKNAME.get()(fd, addr, len) },
    }
}

/// `getpeername(2)`: `ENOTCONN` for a placeholder inside a simulation (it never connects).
///
/// # Safety
///
/// As for the C function: `len` is valid for reads and writes, `addr` for `*len` bytes.
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn getpeername(
    fd: c_int,
    addr: *mut sockaddr,
    len: *mut socklen_t,
) -> c_int {
    match on_placeholder("getpeername", fd, |_| Ok(())) {
        Some(Ok(())) => fail_with(libc::ENOTCONN),
        Some(Err(code)) => fail_with(code),
        // SAFETY: the caller's arguments, unchanged, to the function this one hides.
        None => unsafe { REAL_GETPEERNAME.get()(fd, addr, len) },
    }
}

/// [`crate::adopt_placeholder`] with the guards linked: takes the placeholder's record out of
/// the run's table and closes `fd`, or hands `fd` back.
pub(crate) fn adopt(fd: OwnedFd) -> Result<Placeholder, OwnedFd> {
    if !super::in_simulation() {
        return Err(fd);
    }
    let raw = fd.as_raw_fd();
    let Ok(Some(record)) = panic::catch_unwind(|| placeholders::take(raw)) else {
        return Err(fd);
    };
    // SAFETY: `raw` is open (`fd` owns it); F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    let nonblocking = flags >= 0 && flags & libc::O_NONBLOCK != 0;
    drop(fd);
    Ok(record.into_placeholder(nonblocking))
}

/// The guards, for [`super::link`].
pub(super) fn symbols() -> Vec<*const ()> {
    let mut symbols = network_symbols();
    symbols.extend([
        socket as *const (),
        close as *const (),
        bind as *const (),
        listen as *const (),
        setsockopt as *const (),
        getsockopt as *const (),
        getsockname as *const (),
        getpeername as *const (),
    ]);
    symbols
}
