//! The datagram calls a program makes itself on a stand-in UDP socket's descriptor while the
//! socket's `try_io` runs them (quinn's tokio runtime sends with quinn-udp's `sendmsg` and
//! receives with its `recvmmsg`): answered from the simulated socket lent for the call
//! (`crashtest_hooks::net::raw_datagrams`), so that such a library runs unmodified.
//!
//! They behave as on a Linux UDP socket, with what a simulated network has: a send is never
//! made to wait, a receive with nothing queued fails with `EAGAIN` at once (a `try_io` call
//! never blocks), and a segmented send (`UDP_SEGMENT`, the offload quinn-udp uses when the
//! socket accepts the option) is sent as its datagrams, one per segment. Control messages
//! are not received (no ECN marks, no destination address), and those sent other than
//! `UDP_SEGMENT` (a TOS, a source address) are accepted and dropped; a receive never
//! reports truncation. An address of the other family is mapped as a dual-stack socket maps
//! it.

use std::ffi::{c_int, c_uint, c_void};
use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, SocketAddrV6};
use std::task::{Context, Poll, Waker};

use crashtest_hooks::net::UdpSock;
use libc::{mmsghdr, msghdr, sockaddr, socklen_t};

use super::placeholders::{socket_addr, socket_addr_bytes};

/// `UDP_SEGMENT` (linux/udp.h): a send's segment size, as a `u16` control message.
const UDP_SEGMENT: c_int = 103;

/// `UDP_MAX_SEGMENTS` (linux/udp.h): the most segments one segmented send may carry.
const UDP_MAX_SEGMENTS: usize = 64;

/// Sets `errno` to `code` and returns -1.
fn failed(code: c_int) -> isize {
    super::set_errno(code);
    -1
}

/// The `errno` of a simulated socket's error.
fn code_of(error: &io::Error) -> c_int {
    error.raw_os_error().unwrap_or(match error.kind() {
        io::ErrorKind::WouldBlock => libc::EAGAIN,
        io::ErrorKind::ConnectionRefused => libc::ECONNREFUSED,
        io::ErrorKind::NotConnected => libc::ENOTCONN,
        io::ErrorKind::AddrNotAvailable => libc::EADDRNOTAVAIL,
        io::ErrorKind::InvalidInput => libc::EINVAL,
        _ => libc::EIO,
    })
}

/// Where a send goes: the address given, or the connected peer.
///
/// # Safety
///
/// `addr` is null or valid for `len` bytes.
unsafe fn target(
    socket: &dyn UdpSock,
    addr: *const c_void,
    len: socklen_t,
) -> Result<SocketAddr, c_int> {
    if addr.is_null() || len == 0 {
        return socket.peer_addr().map_err(|_| libc::EDESTADDRREQ);
    }
    // SAFETY: non-null, and the caller passes it valid for `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(addr.cast::<u8>(), len as usize) };
    let target = socket_addr(bytes).ok_or(libc::EAFNOSUPPORT)?;
    // A dual-stack socket sends to a mapped address as to the IPv4 one.
    Ok(match target {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::from((v4, v6.port())),
            None => target,
        },
        v4 => v4,
    })
}

/// Sends `data` to `target`, as datagrams of `segment` bytes (the last one shorter) if the
/// send was segmented.
fn send_all(
    socket: &dyn UdpSock,
    data: &[u8],
    target: SocketAddr,
    segment: Option<usize>,
) -> Result<usize, c_int> {
    match segment {
        Some(size) if size > 0 && data.len() > size => {
            // Linux sends at most this many segments at once, and refuses more.
            if data.len().div_ceil(size) > UDP_MAX_SEGMENTS {
                return Err(libc::EINVAL);
            }
            for datagram in data.chunks(size) {
                socket.send_to(datagram, target).map_err(|e| code_of(&e))?;
            }
            Ok(data.len())
        }
        _ => socket.send_to(data, target).map_err(|e| code_of(&e)),
    }
}

/// `sendto(2)` on the lent socket.
///
/// # Safety
///
/// As for the C function: `buf` is valid for `len` bytes, `addr` null or for `addr_len`.
pub(super) unsafe fn sendto(
    socket: &dyn UdpSock,
    buf: *const c_void,
    len: usize,
    _flags: c_int,
    addr: *const sockaddr,
    addr_len: socklen_t,
) -> isize {
    // SAFETY: the caller's pointers, valid as the C function requires.
    let target = match unsafe { target(socket, addr.cast(), addr_len) } {
        Ok(target) => target,
        Err(code) => return failed(code),
    };
    let data = match len {
        0 => &[][..],
        // SAFETY: as above.
        _ => unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) },
    };
    match send_all(socket, data, target, None) {
        Ok(sent) => sent as isize,
        Err(code) => failed(code),
    }
}

/// `send(2)` on the lent socket: to its connected peer.
///
/// # Safety
///
/// As for the C function.
pub(super) unsafe fn send(
    socket: &dyn UdpSock,
    buf: *const c_void,
    len: usize,
    flags: c_int,
) -> isize {
    // SAFETY: the caller's pointers; no address.
    unsafe { sendto(socket, buf, len, flags, std::ptr::null(), 0) }
}

/// The segment size a `sendmsg`'s control messages ask for, if any; `EINVAL` for a
/// `UDP_SEGMENT` message too short to hold one, as Linux answers it.
///
/// # Safety
///
/// `msg`'s control buffer is null or valid for `msg_controllen` bytes.
unsafe fn segment_of(msg: &msghdr) -> Result<Option<usize>, c_int> {
    // SAFETY: the CMSG macros walk the caller's control buffer within its length.
    let mut header = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !header.is_null() {
        // SAFETY: CMSG_FIRSTHDR and CMSG_NXTHDR return a header within the buffer or null.
        let cmsg = unsafe { &*header };
        if cmsg.cmsg_level == libc::SOL_UDP && cmsg.cmsg_type == UDP_SEGMENT {
            // SAFETY: CMSG_LEN computes a size.
            let needed = unsafe { libc::CMSG_LEN(size_of::<u16>() as u32) } as usize;
            if cmsg.cmsg_len < needed {
                return Err(libc::EINVAL);
            }
            // SAFETY: the message holds a u16 (checked above); it may be unaligned.
            let size = unsafe { libc::CMSG_DATA(header).cast::<u16>().read_unaligned() };
            return Ok(Some(usize::from(size)));
        }
        // SAFETY: as above.
        header = unsafe { libc::CMSG_NXTHDR(msg, header) };
    }
    Ok(None)
}

/// `sendmsg(2)` on the lent socket.
///
/// # Safety
///
/// As for the C function: `msg` is valid, with its buffers.
pub(super) unsafe fn sendmsg(socket: &dyn UdpSock, msg: *const msghdr, _flags: c_int) -> isize {
    if msg.is_null() {
        return failed(libc::EFAULT);
    }
    // SAFETY: non-null, and valid as the C function requires.
    let msg = unsafe { &*msg };
    // SAFETY: as above.
    let target = match unsafe { target(socket, msg.msg_name.cast_const(), msg.msg_namelen) } {
        Ok(target) => target,
        Err(code) => return failed(code),
    };
    let mut data = Vec::new();
    for index in 0..msg.msg_iovlen {
        // SAFETY: `msg_iov` holds `msg_iovlen` entries, each valid for its length.
        let part = unsafe { &*msg.msg_iov.add(index) };
        if part.iov_len > 0 {
            // SAFETY: as above.
            data.extend_from_slice(unsafe {
                std::slice::from_raw_parts(part.iov_base.cast::<u8>(), part.iov_len)
            });
        }
    }
    // SAFETY: as above.
    let segment = match unsafe { segment_of(msg) } {
        Ok(segment) => segment,
        Err(code) => return failed(code),
    };
    match send_all(socket, &data, target, segment) {
        Ok(sent) => sent as isize,
        Err(code) => failed(code),
    }
}

/// `sendmmsg(2)` on the lent socket: each message in turn, until one fails.
///
/// # Safety
///
/// As for the C function: `msgs` holds `count` valid messages.
pub(super) unsafe fn sendmmsg(
    socket: &dyn UdpSock,
    msgs: *mut mmsghdr,
    count: c_uint,
    flags: c_int,
) -> c_int {
    let mut sent = 0;
    while sent < count {
        // SAFETY: `msgs` holds `count` messages.
        let entry = unsafe { &mut *msgs.add(sent as usize) };
        // SAFETY: as above.
        let bytes = unsafe { sendmsg(socket, &entry.msg_hdr, flags) };
        if bytes < 0 {
            // The first failure is the call's; a later one ends it with what was sent.
            return if sent == 0 { -1 } else { sent as c_int };
        }
        entry.msg_len = bytes as c_uint;
        sent += 1;
    }
    sent as c_int
}

/// Receives (or peeks at) the next datagram into `room`: its length and sender, or `EAGAIN`
/// if none is queued. A `try_` call: the waker it leaves is a no-op one, as the stand-in's
/// `try_recv_from` leaves.
fn receive(
    socket: &dyn UdpSock,
    room: &mut [MaybeUninit<u8>],
    peek: bool,
) -> Result<(usize, SocketAddr), c_int> {
    let mut cx = Context::from_waker(Waker::noop());
    let polled = match peek {
        true => socket.poll_peek_from(&mut cx, room),
        false => socket.poll_recv_from(&mut cx, room),
    };
    match polled {
        Poll::Ready(Ok(received)) => Ok(received),
        Poll::Ready(Err(error)) => Err(code_of(&error)),
        Poll::Pending => Err(libc::EAGAIN),
    }
}

/// Writes `from` to a caller's address buffer as the socket's family shows it.
///
/// # Safety
///
/// `addr` is null or valid for `*len` bytes; `len` is null or valid for reads and writes.
unsafe fn write_sender(
    socket: &dyn UdpSock,
    from: SocketAddr,
    addr: *mut c_void,
    len: *mut socklen_t,
) {
    if addr.is_null() || len.is_null() {
        return;
    }
    let from = match (from, socket.local_addr()) {
        (SocketAddr::V4(v4), SocketAddr::V6(_)) => {
            SocketAddr::V6(SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0))
        }
        (from, _) => from,
    };
    // SAFETY: as the caller passes them.
    unsafe { super::sockets::write_out(&socket_addr_bytes(from), addr, len, true) };
}

/// `recvfrom(2)` on the lent socket.
///
/// # Safety
///
/// As for the C function: `buf` is valid for `len` bytes; `addr` and `addr_len` as there.
pub(super) unsafe fn recvfrom(
    socket: &dyn UdpSock,
    buf: *mut c_void,
    len: usize,
    flags: c_int,
    addr: *mut sockaddr,
    addr_len: *mut socklen_t,
) -> isize {
    let room: &mut [MaybeUninit<u8>] = match len {
        0 => &mut [],
        // SAFETY: the caller passes `buf` valid for `len` bytes.
        _ => unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) },
    };
    match receive(socket, room, flags & libc::MSG_PEEK != 0) {
        Ok((received, from)) => {
            // SAFETY: as the caller passes them.
            unsafe { write_sender(socket, from, addr.cast(), addr_len) };
            received as isize
        }
        Err(code) => failed(code),
    }
}

/// `recv(2)` on the lent socket.
///
/// # Safety
///
/// As for the C function.
pub(super) unsafe fn recv(
    socket: &dyn UdpSock,
    buf: *mut c_void,
    len: usize,
    flags: c_int,
) -> isize {
    // SAFETY: the caller's buffer; no address.
    unsafe {
        recvfrom(
            socket,
            buf,
            len,
            flags,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

/// `recvmsg(2)` on the lent socket: one datagram, scattered over the message's buffers.
///
/// # Safety
///
/// As for the C function: `msg` is valid, with its buffers.
pub(super) unsafe fn recvmsg(socket: &dyn UdpSock, msg: *mut msghdr, flags: c_int) -> isize {
    if msg.is_null() {
        return failed(libc::EFAULT);
    }
    // SAFETY: non-null, and valid as the C function requires.
    let msg = unsafe { &mut *msg };
    let parts: Vec<libc::iovec> = (0..msg.msg_iovlen)
        // SAFETY: `msg_iov` holds `msg_iovlen` entries.
        .map(|index| unsafe { msg.msg_iov.add(index).read() })
        .collect();
    let peek = flags & libc::MSG_PEEK != 0;
    let received = match parts.as_slice() {
        // One buffer (quinn-udp's case): the datagram goes straight into it.
        [part] => {
            let room: &mut [MaybeUninit<u8>] = match part.iov_len {
                0 => &mut [],
                // SAFETY: the caller's buffer, valid for `iov_len` bytes.
                len => unsafe { std::slice::from_raw_parts_mut(part.iov_base.cast(), len) },
            };
            receive(socket, room, peek)
        }
        _ => receive_scattered(socket, &parts, peek),
    };
    let (received, from) = match received {
        Ok(received) => received,
        Err(code) => return failed(code),
    };
    // SAFETY: as the caller passes them.
    unsafe { write_sender(socket, from, msg.msg_name, &mut msg.msg_namelen) };
    msg.msg_controllen = 0;
    msg.msg_flags = 0;
    received as isize
}

/// Receives the next datagram into a buffer as long as `parts` together, then scatters it
/// over them in order.
fn receive_scattered(
    socket: &dyn UdpSock,
    parts: &[libc::iovec],
    peek: bool,
) -> Result<(usize, SocketAddr), c_int> {
    let room: usize = parts.iter().map(|part| part.iov_len).sum();
    let mut datagram = vec![MaybeUninit::<u8>::uninit(); room];
    let (received, from) = receive(socket, &mut datagram, peek)?;
    let mut left = &datagram[..received];
    for part in parts {
        let take = left.len().min(part.iov_len);
        if take > 0 {
            // SAFETY: the part's buffer is valid for `iov_len >= take` bytes, and the first
            // `received` bytes of `datagram` were written by the receive.
            unsafe { std::ptr::copy_nonoverlapping(left.as_ptr(), part.iov_base.cast(), take) };
        }
        left = &left[take..];
    }
    Ok((received, from))
}

/// `recvmmsg(2)` on the lent socket: as many queued datagrams as there are messages, or
/// `EAGAIN` if none is queued (the timeout never comes into play: nothing waits).
///
/// # Safety
///
/// As for the C function: `msgs` holds `count` valid messages.
pub(super) unsafe fn recvmmsg(
    socket: &dyn UdpSock,
    msgs: *mut mmsghdr,
    count: c_uint,
    flags: c_int,
    _timeout: *mut libc::timespec,
) -> c_int {
    let mut received = 0;
    while received < count {
        // SAFETY: `msgs` holds `count` messages.
        let entry = unsafe { &mut *msgs.add(received as usize) };
        // SAFETY: as above.
        let bytes = unsafe { recvmsg(socket, &mut entry.msg_hdr, flags & !libc::MSG_WAITFORONE) };
        if bytes < 0 {
            return if received == 0 { -1 } else { received as c_int };
        }
        entry.msg_len = bytes as c_uint;
        received += 1;
    }
    received as c_int
}
