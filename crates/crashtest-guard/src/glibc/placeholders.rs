//! The run's placeholder sockets: how they are made, what is recorded about each, and how a
//! record answers the socket calls made on it.
//!
//! A placeholder is an empty, sealed memfd (`memfd_create` with every seal applied), named
//! `crashtest-placeholder-socket` so that it reads as such in `/proc/self/fd` and `lsof`:
//! - it is a real descriptor, so the program can keep, pass around, `fcntl` (close-on-exec,
//!   `O_NONBLOCK`), `ioctl(FIONBIO)`, duplicate and close it as it would a socket;
//! - it is not a socket, so every socket call the guards do not answer fails at once with
//!   `ENOTSOCK`, and no call on it can reach a network;
//! - it cannot hang or grow: `read` returns end of file at once, `write` fails (`EPERM`, the
//!   file is sealed), `poll` reports it ready, and `epoll_ctl` refuses it (`EPERM`).
//!
//! Alternatives were worse: `/dev/null` swallows writes silently; an eventfd or a pipe blocks
//! a blocking read forever; `dup(0)` depends on what stdin is. A memfd also has an inode of
//! its own, which lets the table recognise a placeholder by identity rather than by descriptor
//! number: a number can be closed behind the guards' back (`dup2` onto it, `close_range`, a raw
//! system call) and reused for a file, which must then not be taken for a socket; and a
//! duplicate of a placeholder is the same socket, as a duplicated socket is.
//!
//! The table is an extension of the run (`plumbing::checks::extension`), so it starts empty in every
//! run and goes with it. Descriptor numbers come from the OS and are never recorded in the
//! trace or handed to anything that could steer the simulation.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_int;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::time::Duration;

use crate::placeholder::{Placeholder, SocketOptions};

/// What a placeholder is known by: the device and inode of its memfd.
type Identity = (u64, u64);

/// The placeholders of the running simulation.
#[derive(Default)]
struct Table {
    sockets: RefCell<BTreeMap<Identity, Record>>,
    /// Placeholders a tokio stand-in took over: a descriptor of one still open (a
    /// `try_clone` kept, as quinn-udp's users keep one) is refused as a duplicate of a socket
    /// that is now the stand-in's. Kept for the run: telling whether a duplicate is left
    /// would read `/proc/self/fd` at every adoption (every connection of hyper's connector).
    adopted: RefCell<BTreeSet<Identity>>,
}

/// The flags `socket()` takes in its type argument.
const TYPE_FLAGS: c_int = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;

/// The longest option value recorded; longer ones are refused with `EINVAL`.
const MAX_OPTION_LEN: usize = 4096;

/// What `socket()` was asked for, and what was set on the placeholder since.
#[derive(Debug)]
pub(super) struct Record {
    domain: c_int,
    ty: c_int,
    protocol: c_int,
    options: BTreeMap<(c_int, c_int), Vec<u8>>,
    bound: Option<Vec<u8>>,
    /// The port `bound` names, taken on the simulated network from `bind` (or from `listen`,
    /// for a socket never bound) until the socket is adopted or closed, as Linux takes it.
    hold: Option<crashtest_net::PortHold>,
    /// `listen` was called (with this backlog).
    listening: Option<c_int>,
}

fn table() -> std::rc::Rc<Table> {
    crashtest_core::plumbing::checks::extension::<Table>()
        .expect("placeholder sockets exist only inside a simulation")
}

/// Makes a placeholder for `socket(domain, ty, protocol)` and records it. Call only inside a
/// simulation. Returns the descriptor, or the `errno` to fail with.
pub(super) fn create(domain: c_int, ty: c_int, protocol: c_int) -> Result<c_int, c_int> {
    let mut flags = libc::MFD_ALLOW_SEALING;
    if ty & libc::SOCK_CLOEXEC != 0 {
        flags |= libc::MFD_CLOEXEC;
    }
    // SAFETY: the name is NUL-terminated; memfd_create has no other preconditions.
    let fd = unsafe { libc::memfd_create(c"crashtest-placeholder-socket".as_ptr(), flags) };
    if fd < 0 {
        return Err(super::errno());
    }
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: `fd` is the memfd just made; F_ADD_SEALS takes an int.
    let mut made = unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } == 0;
    if made && ty & libc::SOCK_NONBLOCK != 0 {
        // SAFETY: as above; F_SETFL takes an int. A new memfd has no other status flags.
        made = unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) } == 0;
    }
    let id = if made { super::identity(fd) } else { None };
    let Some(id) = id else {
        let error = super::errno();
        // SAFETY: `fd` is ours and nobody else has seen it.
        unsafe { libc::close(fd) };
        return Err(error);
    };
    let record = Record {
        domain,
        ty: ty & !TYPE_FLAGS,
        protocol,
        options: BTreeMap::new(),
        bound: None,
        hold: None,
        listening: None,
    };
    let table = table();
    // A memfd's inode is reused once it is freed: an adopted placeholder's may be this one's.
    table.adopted.borrow_mut().remove(&id);
    table.sockets.borrow_mut().insert(id, record);
    Ok(fd)
}

/// Runs `f` on the record of the placeholder `fd` refers to; `None` if it is no placeholder of
/// this run. Call only inside a simulation.
pub(super) fn with<R>(fd: c_int, f: impl FnOnce(&mut Record) -> R) -> Option<R> {
    let table = table();
    let mut sockets = table.sockets.borrow_mut();
    if sockets.is_empty() {
        return None;
    }
    let record = sockets.get_mut(&super::identity(fd)?)?;
    Some(f(record))
}

/// A descriptor is closing: if it is the last one of a placeholder, forgets the socket and
/// frees the port it holds, as Linux closes a socket with its last descriptor. A duplicate
/// (`dup`, `try_clone`) keeps the socket and its port (but not past an adoption: the adopter
/// takes the socket over whole, and a duplicate left is refused).
pub(super) fn closing(fd: c_int) {
    let table = table();
    if table.sockets.borrow().is_empty() {
        return;
    }
    let Some(id) = super::identity(fd) else {
        return;
    };
    if !table.sockets.borrow().contains_key(&id) || open_elsewhere(fd, id) {
        return;
    }
    let record = table.sockets.borrow_mut().remove(&id);
    // Dropped once the table is free: its port goes back to the network.
    drop(record);
}

/// Whether a descriptor other than `fd` refers to the file `id`, read from `/proc/self/fd`
/// (one `fstat` per open descriptor, asked only when a placeholder's descriptor closes; where
/// the listing cannot be read, the socket is taken to have no other descriptor).
fn open_elsewhere(fd: c_int, id: Identity) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<c_int>().ok())
        .any(|other| other != fd && super::identity(other) == Some(id))
}

/// Removes the record of the placeholder `fd` refers to, and returns it, for an adoption:
/// descriptors of it still open besides `fd` are refused from now on (see [`is_adopted`]).
pub(super) fn take(fd: c_int) -> Option<Record> {
    let table = table();
    if table.sockets.borrow().is_empty() {
        return None;
    }
    let id = super::identity(fd)?;
    let record = table.sockets.borrow_mut().remove(&id)?;
    table.adopted.borrow_mut().insert(id);
    Some(record)
}

/// Whether `fd` is a descriptor left of a placeholder a tokio stand-in took over. Call only
/// inside a simulation. The memfd's inode may have been reused since, by a new placeholder
/// (whose `create` forgets the old adoption) or a simulated file (told apart here).
pub(super) fn is_adopted(fd: c_int) -> bool {
    let table = table();
    let adopted = table.adopted.borrow();
    !adopted.is_empty()
        && super::identity(fd).is_some_and(|id| adopted.contains(&id))
        && !super::disk::is_simulated_file(fd)
}

/// The `value` of an integer option as set (the first four bytes, as the kernel reads them).
fn int(value: &[u8]) -> Option<c_int> {
    Some(c_int::from_ne_bytes(value.get(..4)?.try_into().ok()?))
}

/// The `timeval` an option value holds, as a duration; `None` if zero or malformed.
fn timeval(value: &[u8]) -> Option<Duration> {
    let secs = i64::from_ne_bytes(value.get(..8)?.try_into().ok()?);
    let micros = i64::from_ne_bytes(value.get(8..16)?.try_into().ok()?);
    let total = Duration::from_secs(u64::try_from(secs).ok()?)
        + Duration::from_micros(u64::try_from(micros).ok()?);
    (!total.is_zero()).then_some(total)
}

/// The IP socket address in `bytes` (a `sockaddr_in` or `sockaddr_in6`), if it is one.
pub(super) fn socket_addr(bytes: &[u8]) -> Option<SocketAddr> {
    let family = c_int::from(u16::from_ne_bytes(bytes.get(..2)?.try_into().ok()?));
    let port = u16::from_be_bytes(bytes.get(2..4)?.try_into().ok()?);
    match family {
        libc::AF_INET => {
            let ip: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Some(SocketAddrV4::new(Ipv4Addr::from(ip), port).into())
        }
        libc::AF_INET6 => {
            let flowinfo = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?);
            let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            let scope = u32::from_ne_bytes(bytes.get(24..28)?.try_into().ok()?);
            Some(SocketAddrV6::new(Ipv6Addr::from(ip), port, flowinfo, scope).into())
        }
        _ => None,
    }
}

/// `addr` as a `sockaddr_in` or `sockaddr_in6`: [`socket_addr`]'s inverse.
pub(super) fn socket_addr_bytes(addr: SocketAddr) -> Vec<u8> {
    match addr {
        SocketAddr::V4(v4) => {
            let mut bytes = vec![0; size_of::<libc::sockaddr_in>()];
            let family = libc::AF_INET as libc::sa_family_t;
            bytes[..2].copy_from_slice(&family.to_ne_bytes());
            bytes[2..4].copy_from_slice(&v4.port().to_be_bytes());
            bytes[4..8].copy_from_slice(&v4.ip().octets());
            bytes
        }
        SocketAddr::V6(v6) => {
            let mut bytes = vec![0; size_of::<libc::sockaddr_in6>()];
            let family = libc::AF_INET6 as libc::sa_family_t;
            bytes[..2].copy_from_slice(&family.to_ne_bytes());
            bytes[2..4].copy_from_slice(&v6.port().to_be_bytes());
            bytes[4..8].copy_from_slice(&v6.flowinfo().to_be_bytes());
            bytes[8..24].copy_from_slice(&v6.ip().octets());
            bytes[24..28].copy_from_slice(&v6.scope_id().to_ne_bytes());
            bytes
        }
    }
}

/// The smallest address a socket of `domain` accepts in `bind`, and its unbound address.
fn unbound_address(domain: c_int) -> Vec<u8> {
    let len = match domain {
        libc::AF_INET => size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => size_of::<libc::sockaddr_in6>(),
        _ => size_of::<libc::sa_family_t>(),
    };
    let mut bytes = vec![0; len];
    let family = libc::sa_family_t::try_from(domain).unwrap_or(0);
    bytes[..2].copy_from_slice(&family.to_ne_bytes());
    bytes
}

impl Record {
    /// The protocol the socket uses: the one asked for, or the type's default.
    fn protocol(&self) -> c_int {
        match (self.protocol, self.domain, self.ty) {
            (0, libc::AF_INET | libc::AF_INET6, libc::SOCK_STREAM) => libc::IPPROTO_TCP,
            (0, libc::AF_INET | libc::AF_INET6, libc::SOCK_DGRAM) => libc::IPPROTO_UDP,
            (protocol, _, _) => protocol,
        }
    }

    /// `setsockopt`: records `value` for `(level, name)`; the `errno` to fail with otherwise.
    pub(super) fn set_option(
        &mut self,
        level: c_int,
        name: c_int,
        value: &[u8],
    ) -> Result<(), c_int> {
        if value.len() > MAX_OPTION_LEN {
            return Err(libc::EINVAL);
        }
        let read_only = [
            libc::SO_TYPE,
            libc::SO_DOMAIN,
            libc::SO_PROTOCOL,
            libc::SO_ERROR,
            libc::SO_ACCEPTCONN,
        ];
        if level == libc::SOL_SOCKET && read_only.contains(&name) {
            return Err(libc::ENOPROTOOPT);
        }
        // The kernel reads integer options as a whole int, and refuses shorter values.
        let default = self.default_option(level, name);
        if default.is_some_and(|d| d.len() == 4) && value.len() < 4 {
            return Err(libc::EINVAL);
        }
        self.options.insert((level, name), value.to_vec());
        Ok(())
    }

    /// `getsockopt`: the value last set, or the option's default on a fresh Linux socket;
    /// `ENOPROTOOPT` for an option that was never set and has no known default.
    pub(super) fn option(&self, level: c_int, name: c_int) -> Result<Vec<u8>, c_int> {
        match self.options.get(&(level, name)) {
            Some(value) => Ok(value.clone()),
            None => self.default_option(level, name).ok_or(libc::ENOPROTOOPT),
        }
    }

    /// What Linux answers for an option of a fresh socket of this kind (the buffer sizes are
    /// the common defaults of `tcp_wmem`, `tcp_rmem` and `[rw]mem_default`).
    fn default_option(&self, level: c_int, name: c_int) -> Option<Vec<u8>> {
        let stream = self.ty == libc::SOCK_STREAM;
        let int = |value: c_int| Some(value.to_ne_bytes().to_vec());
        match (level, name) {
            (libc::SOL_SOCKET, libc::SO_TYPE) => int(self.ty),
            (libc::SOL_SOCKET, libc::SO_ACCEPTCONN) => int(c_int::from(self.listening.is_some())),
            (libc::SOL_SOCKET, libc::SO_DOMAIN) => int(self.domain),
            (libc::SOL_SOCKET, libc::SO_PROTOCOL) => int(self.protocol()),
            (libc::SOL_SOCKET, libc::SO_SNDBUF) => int(if stream { 16_384 } else { 212_992 }),
            (libc::SOL_SOCKET, libc::SO_RCVBUF) => int(if stream { 131_072 } else { 212_992 }),
            (libc::SOL_SOCKET, libc::SO_RCVLOWAT | libc::SO_SNDLOWAT) => int(1),
            (
                libc::SOL_SOCKET,
                libc::SO_ERROR
                | libc::SO_REUSEADDR
                | libc::SO_REUSEPORT
                | libc::SO_KEEPALIVE
                | libc::SO_BROADCAST
                | libc::SO_OOBINLINE
                | libc::SO_DONTROUTE
                | libc::SO_PRIORITY
                | libc::SO_MARK
                | libc::SO_PASSCRED,
            ) => int(0),
            (libc::SOL_SOCKET, libc::SO_LINGER) => Some(vec![0; size_of::<libc::linger>()]),
            (libc::SOL_SOCKET, libc::SO_RCVTIMEO | libc::SO_SNDTIMEO) => {
                Some(vec![0; size_of::<libc::timeval>()])
            }
            (libc::SOL_SOCKET, libc::SO_BINDTODEVICE) => Some(Vec::new()),
            (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE) => int(7200),
            (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL) => int(75),
            (libc::IPPROTO_TCP, libc::TCP_KEEPCNT) => int(9),
            (libc::IPPROTO_TCP, libc::TCP_MAXSEG) => int(536),
            (libc::IPPROTO_TCP, libc::TCP_QUICKACK) => int(1),
            (
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY | libc::TCP_USER_TIMEOUT | libc::TCP_CORK | libc::TCP_FASTOPEN,
            ) => int(0),
            (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS) => {
                int(64)
            }
            (libc::IPPROTO_IP, libc::IP_MULTICAST_TTL | libc::IP_MULTICAST_LOOP)
            | (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS | libc::IPV6_MULTICAST_LOOP) => int(1),
            (libc::IPPROTO_IP, libc::IP_TOS)
            | (libc::IPPROTO_IPV6, libc::IPV6_TCLASS | libc::IPV6_V6ONLY) => int(0),
            _ => None,
        }
    }

    /// `bind`: records `address` and takes its port (a free one for port 0, as Linux picks
    /// it); the `errno` to fail with otherwise.
    pub(super) fn bind(&mut self, address: &[u8]) -> Result<(), c_int> {
        if self.bound.is_some() {
            return Err(libc::EINVAL);
        }
        let family = address
            .get(..2)
            .map(|b| c_int::from(u16::from_ne_bytes([b[0], b[1]])));
        if matches!(self.domain, libc::AF_INET | libc::AF_INET6) {
            if family != Some(self.domain) {
                return Err(libc::EAFNOSUPPORT);
            }
            if address.len() < unbound_address(self.domain).len() {
                return Err(libc::EINVAL);
            }
        }
        let mut address = address.to_vec();
        self.take_port(&mut address)?;
        self.bound = Some(address);
        Ok(())
    }

    /// Takes the port `address` names on the simulated network, for a TCP or UDP socket, and
    /// writes the port taken into `address`; the `errno` to fail with otherwise. Other kinds
    /// of socket hold nothing (the network has no ports for them).
    fn take_port(&mut self, address: &mut [u8]) -> Result<(), c_int> {
        let datagram = match self.ty {
            libc::SOCK_STREAM => false,
            libc::SOCK_DGRAM => true,
            _ => return Ok(()),
        };
        let Some(addr) = socket_addr(address) else {
            return Ok(());
        };
        debug_assert!(self.hold.is_none(), "a socket takes one port");
        let hold =
            crashtest_net::hold_port(addr, datagram).map_err(|error| match error.kind() {
                std::io::ErrorKind::AddrInUse => libc::EADDRINUSE,
                std::io::ErrorKind::AddrNotAvailable => libc::EADDRNOTAVAIL,
                _ => libc::EINVAL,
            })?;
        // `sin_port` and `sin6_port` sit after the family, in network order.
        address[2..4].copy_from_slice(&hold.port().to_be_bytes());
        assert_eq!(
            socket_addr(address).map(|a| a.port()),
            Some(hold.port()),
            "the address names the port held"
        );
        self.hold = Some(hold);
        Ok(())
    }

    /// `listen`: records that the socket listens (a stream socket only, as Linux requires);
    /// the `errno` to fail with otherwise. Listening again only changes the backlog, as on
    /// Linux. An unbound socket is bound to a free port of every address first, as Linux
    /// binds it.
    pub(super) fn listen(&mut self, backlog: c_int) -> Result<(), c_int> {
        if self.ty != libc::SOCK_STREAM || !matches!(self.domain, libc::AF_INET | libc::AF_INET6) {
            return Err(libc::EOPNOTSUPP);
        }
        if self.bound.is_none() {
            let mut address = unbound_address(self.domain);
            self.take_port(&mut address)?;
            self.bound = Some(address);
        }
        self.listening = Some(backlog);
        Ok(())
    }

    /// `getsockname`: the address bound, or the family's unspecified address.
    pub(super) fn local_address(&self) -> Vec<u8> {
        self.bound
            .clone()
            .unwrap_or_else(|| unbound_address(self.domain))
    }

    /// The hand-over form of the record. Frees the port it holds: the adopter binds it on the
    /// simulated network next, in the same poll, so nothing takes it in between.
    pub(super) fn into_placeholder(mut self, nonblocking: bool) -> Placeholder {
        drop(self.hold.take());
        let options = self.typed_options();
        Placeholder {
            domain: self.domain,
            ty: self.ty,
            protocol: self.protocol,
            nonblocking,
            bound: self.bound.as_deref().and_then(socket_addr),
            listening: self.listening.is_some(),
            options,
        }
    }

    fn typed_options(&self) -> SocketOptions {
        let get = |level, name| self.options.get(&(level, name)).map(Vec::as_slice);
        let flag = |level, name| get(level, name).and_then(int).is_some_and(|v| v != 0);
        let count = |level, name| {
            get(level, name)
                .and_then(int)
                .and_then(|v| u32::try_from(v).ok())
        };
        let secs = |level, name| count(level, name).map(|s| Duration::from_secs(s.into()));
        let v6 = self.domain == libc::AF_INET6;
        let (ttl, tos) = if v6 {
            (
                count(libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS),
                count(libc::IPPROTO_IPV6, libc::IPV6_TCLASS),
            )
        } else {
            (
                count(libc::IPPROTO_IP, libc::IP_TTL),
                count(libc::IPPROTO_IP, libc::IP_TOS),
            )
        };
        let linger = get(libc::SOL_SOCKET, libc::SO_LINGER).and_then(|value| {
            let on = int(value)?;
            let secs = int(value.get(4..)?)?;
            (on != 0).then(|| Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
        });
        let device = get(libc::SOL_SOCKET, libc::SO_BINDTODEVICE).map(|name| {
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            name[..end].to_vec()
        });
        SocketOptions {
            nodelay: flag(libc::IPPROTO_TCP, libc::TCP_NODELAY),
            keepalive: flag(libc::SOL_SOCKET, libc::SO_KEEPALIVE),
            keepalive_time: secs(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE),
            keepalive_interval: secs(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL),
            keepalive_retries: count(libc::IPPROTO_TCP, libc::TCP_KEEPCNT),
            user_timeout: count(libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT)
                .map(|ms| Duration::from_millis(ms.into())),
            reuse_address: flag(libc::SOL_SOCKET, libc::SO_REUSEADDR),
            reuse_port: flag(libc::SOL_SOCKET, libc::SO_REUSEPORT),
            broadcast: flag(libc::SOL_SOCKET, libc::SO_BROADCAST),
            only_v6: flag(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY),
            send_buffer_size: count(libc::SOL_SOCKET, libc::SO_SNDBUF),
            recv_buffer_size: count(libc::SOL_SOCKET, libc::SO_RCVBUF),
            linger,
            read_timeout: get(libc::SOL_SOCKET, libc::SO_RCVTIMEO).and_then(timeval),
            write_timeout: get(libc::SOL_SOCKET, libc::SO_SNDTIMEO).and_then(timeval),
            ttl,
            tos,
            bound_device: device,
            raw: self.options.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_v4() -> Record {
        Record {
            domain: libc::AF_INET,
            ty: libc::SOCK_STREAM,
            protocol: 0,
            options: BTreeMap::new(),
            bound: None,
            hold: None,
            listening: None,
        }
    }

    /// Runs `body` inside a simulation, where a bind or listen takes its port on the
    /// simulated network.
    fn simulated(body: impl FnOnce() + 'static) {
        crashtest_core::Sim::new(1)
            .run(async move { body() })
            .unwrap();
    }

    #[test]
    fn options_read_back_as_set_and_default_as_on_linux() {
        let mut record = tcp_v4();
        let nodelay = (libc::IPPROTO_TCP, libc::TCP_NODELAY);
        assert_eq!(
            record.option(nodelay.0, nodelay.1),
            Ok(0i32.to_ne_bytes().to_vec())
        );
        record
            .set_option(nodelay.0, nodelay.1, &1i32.to_ne_bytes())
            .unwrap();
        assert_eq!(
            record.option(nodelay.0, nodelay.1),
            Ok(1i32.to_ne_bytes().to_vec())
        );
        assert_eq!(
            record.option(libc::SOL_SOCKET, libc::SO_PROTOCOL),
            Ok(libc::IPPROTO_TCP.to_ne_bytes().to_vec())
        );
        assert_eq!(
            record.option(libc::SOL_SOCKET, 9999),
            Err(libc::ENOPROTOOPT)
        );
    }

    #[test]
    fn short_integer_options_and_read_only_options_are_refused() {
        let mut record = tcp_v4();
        assert_eq!(
            record.set_option(libc::SOL_SOCKET, libc::SO_KEEPALIVE, &[1]),
            Err(libc::EINVAL)
        );
        assert_eq!(
            record.set_option(libc::SOL_SOCKET, libc::SO_TYPE, &1i32.to_ne_bytes()),
            Err(libc::ENOPROTOOPT)
        );
    }

    #[test]
    fn listen_is_recorded_on_a_stream_socket_only_and_reads_back_as_accepting() {
        simulated(|| {
            let mut record = tcp_v4();
            let accepting = |record: &Record| record.option(libc::SOL_SOCKET, libc::SO_ACCEPTCONN);
            assert_eq!(accepting(&record), Ok(0i32.to_ne_bytes().to_vec()));
            assert_eq!(record.listen(128), Ok(()));
            assert_eq!(accepting(&record), Ok(1i32.to_ne_bytes().to_vec()));
            // Unbound, it took a free port of every address, as Linux binds it.
            let bound = socket_addr(&record.local_address()).unwrap();
            assert!(bound.ip().is_unspecified() && bound.port() != 0, "{bound}");
            let placeholder = record.into_placeholder(true);
            assert!(placeholder.listening);
            assert_eq!(placeholder.bound, Some(bound));
            let mut datagram = Record {
                ty: libc::SOCK_DGRAM,
                ..tcp_v4()
            };
            assert_eq!(datagram.listen(1), Err(libc::EOPNOTSUPP));
            assert!(!datagram.into_placeholder(false).listening);
        });
    }

    #[test]
    fn an_address_reads_back_from_its_bytes() {
        for addr in ["10.0.0.2:4433", "[fd00::2]:80", "[::ffff:10.0.0.1]:9"] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert_eq!(socket_addr(&socket_addr_bytes(addr)), Some(addr));
        }
    }

    #[test]
    fn bind_takes_one_address_of_the_sockets_family_and_its_nodes() {
        simulated(|| {
            let mut record = tcp_v4();
            assert_eq!(record.local_address(), unbound_address(libc::AF_INET));
            let mut v6 = unbound_address(libc::AF_INET6);
            assert_eq!(record.bind(&v6), Err(libc::EAFNOSUPPORT));
            v6.truncate(4);
            let mut v4 = unbound_address(libc::AF_INET);
            v4[2..4].copy_from_slice(&8080u16.to_be_bytes());
            v4[4..8].copy_from_slice(&[10, 0, 0, 1]);
            assert_eq!(record.bind(&v4[..8]), Err(libc::EINVAL));
            // 10.0.0.1 is node 1's: the supervisor, node 0, cannot bind it.
            assert_eq!(record.bind(&v4), Err(libc::EADDRNOTAVAIL));
            v4[4..8].copy_from_slice(&[10, 0, 0, 0]);
            record.bind(&v4).unwrap();
            assert_eq!(record.bind(&v4), Err(libc::EINVAL));
            assert_eq!(
                socket_addr(&record.local_address()),
                Some("10.0.0.0:8080".parse().unwrap())
            );
            assert_eq!(tcp_v4().bind(&v4), Err(libc::EADDRINUSE));
        });
    }

    #[test]
    fn typed_options_decode_what_was_set() {
        let mut record = tcp_v4();
        let set = |record: &mut Record, level, name, value: &[u8]| {
            record.set_option(level, name, value).unwrap();
        };
        set(
            &mut record,
            libc::IPPROTO_TCP,
            libc::TCP_KEEPIDLE,
            &30i32.to_ne_bytes(),
        );
        set(
            &mut record,
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            &1500i32.to_ne_bytes(),
        );
        set(
            &mut record,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &65536i32.to_ne_bytes(),
        );
        let mut linger = 1i32.to_ne_bytes().to_vec();
        linger.extend(5i32.to_ne_bytes());
        set(&mut record, libc::SOL_SOCKET, libc::SO_LINGER, &linger);
        let mut timeout = 2i64.to_ne_bytes().to_vec();
        timeout.extend(500_000i64.to_ne_bytes());
        set(&mut record, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout);
        set(
            &mut record,
            libc::SOL_SOCKET,
            libc::SO_BINDTODEVICE,
            b"eth0\0",
        );
        let options = record.into_placeholder(true).options;
        assert_eq!(options.keepalive_time, Some(Duration::from_secs(30)));
        assert_eq!(options.user_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(options.recv_buffer_size, Some(65536));
        assert_eq!(options.linger, Some(Duration::from_secs(5)));
        assert_eq!(options.read_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(options.bound_device.as_deref(), Some(&b"eth0"[..]));
        assert!(!options.nodelay);
        assert_eq!(options.raw.len(), 6);
    }
}
