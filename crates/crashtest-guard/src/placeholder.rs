//! Placeholder sockets: what `socket()` returns inside a simulation, and how a tokio stand-in
//! takes one over.
//!
//! Code that builds its own sockets (hyper-util's `HttpConnector` through socket2, std's
//! `TcpStream::connect`, mio) calls `socket()` and configures the result before it connects.
//! Inside a simulation the guard answers `socket()` with a placeholder: a real descriptor
//! that is no socket, so that nothing the kernel does with it reaches a network. The guard
//! remembers, per run, what the placeholder was made as and what was set on it
//! (`setsockopt`, `bind`, `listen`, non-blocking mode), answers `getsockopt` and `getsockname`
//! from that record, and refuses `connect`, `accept` and the data calls. A tokio stand-in
//! that receives such a descriptor (`TcpSocket::from_std_stream`, `TcpListener::from_std`,
//! `UdpSocket::from_std`) calls [`adopt_placeholder`] to learn what the program asked for and
//! builds the simulated socket from it.

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::net::SocketAddr;
use std::time::Duration;

/// What a placeholder socket was made and configured as, when [`adopt_placeholder`] took it.
///
/// The constants are Linux's (`libc::AF_INET`, `libc::SOCK_STREAM`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Placeholder {
    /// The address family passed to `socket()`: `AF_INET`, `AF_INET6`, `AF_UNIX`, ...
    pub domain: c_int,
    /// The socket type passed to `socket()` (`SOCK_STREAM`, `SOCK_DGRAM`, ...), without the
    /// `SOCK_NONBLOCK` and `SOCK_CLOEXEC` flags.
    pub ty: c_int,
    /// The protocol passed to `socket()`; 0 means the type's default.
    pub protocol: c_int,
    /// Whether the descriptor was non-blocking when adopted (`SOCK_NONBLOCK`, `fcntl` with
    /// `O_NONBLOCK`, or `ioctl(FIONBIO)`).
    pub nonblocking: bool,
    /// The address passed to `bind()`, with the port the simulated network gave it (a free
    /// one for port 0, or for a listener never bound, as Linux picks it; held until adoption,
    /// so the adopter binds it next); `None` if the socket was never bound or its family is
    /// neither `AF_INET` nor `AF_INET6`.
    pub bound: Option<SocketAddr>,
    /// Whether `listen()` was called: a TCP listener, as std's `TcpListener::bind` makes
    /// (the stand-in's `TcpListener::from_std` takes it over).
    pub listening: bool,
    /// The options set with `setsockopt`.
    pub options: SocketOptions,
}

/// The socket options a program set on a placeholder. Each typed field is the value last set
/// for its option, or the option's Linux default when it was never set (`false`, or `None`
/// for the options whose default depends on the system).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SocketOptions {
    /// `TCP_NODELAY`.
    pub nodelay: bool,
    /// `SO_KEEPALIVE`.
    pub keepalive: bool,
    /// `TCP_KEEPIDLE`: idle time before the first keep-alive probe.
    pub keepalive_time: Option<Duration>,
    /// `TCP_KEEPINTVL`: time between keep-alive probes.
    pub keepalive_interval: Option<Duration>,
    /// `TCP_KEEPCNT`: unanswered probes before the connection is dropped.
    pub keepalive_retries: Option<u32>,
    /// `TCP_USER_TIMEOUT`: how long sent data may stay unacknowledged.
    pub user_timeout: Option<Duration>,
    /// `SO_REUSEADDR`.
    pub reuse_address: bool,
    /// `SO_REUSEPORT`.
    pub reuse_port: bool,
    /// `SO_BROADCAST`.
    pub broadcast: bool,
    /// `IPV6_V6ONLY`.
    pub only_v6: bool,
    /// `SO_SNDBUF`, as requested (Linux would report twice the value).
    pub send_buffer_size: Option<u32>,
    /// `SO_RCVBUF`, as requested (Linux would report twice the value).
    pub recv_buffer_size: Option<u32>,
    /// `SO_LINGER`: `Some` when lingering on close is on, with its timeout.
    pub linger: Option<Duration>,
    /// `SO_RCVTIMEO`; `None` when unset or zero (no timeout).
    pub read_timeout: Option<Duration>,
    /// `SO_SNDTIMEO`; `None` when unset or zero (no timeout).
    pub write_timeout: Option<Duration>,
    /// `IP_TTL` (or `IPV6_UNICAST_HOPS` on an IPv6 socket).
    pub ttl: Option<u32>,
    /// `IP_TOS` (or `IPV6_TCLASS` on an IPv6 socket).
    pub tos: Option<u32>,
    /// `SO_BINDTODEVICE`: the interface name, without its NUL.
    pub bound_device: Option<Vec<u8>>,
    /// Every option set, typed above or not, keyed by `(level, name)`, with the bytes last
    /// passed for it.
    pub raw: BTreeMap<(c_int, c_int), Vec<u8>>,
}

/// Takes over a placeholder socket inside a simulation: returns what it was made and
/// configured as, and closes the descriptor.
///
/// This is the hand-over between the guards and a tokio stand-in: a program inside a
/// simulation builds a socket the way it does in production (socket2's `Socket::new`,
/// `set_nonblocking`, `set_tcp_keepalive`, `set_tcp_nodelay`, `bind`, ...), every step of which
/// the guards answer on the placeholder, then hands the descriptor to tokio
/// (`TcpSocket::from_std_stream(socket.into())`, `TcpListener::from_std`, `UdpSocket::from_std`).
/// The stand-in passes that descriptor here and builds a simulated socket with the same
/// family, type, options and bound address.
///
/// # Contract
///
/// Returns `Ok` if and only if all of these hold:
/// - the guards are compiled in and supported here ([`SUPPORTED`](crate::SUPPORTED)),
/// - a simulation runs on the calling thread, and
/// - `fd` refers to a placeholder that the guard's `socket()` made during this run and that no
///   `close()` or earlier adoption has ended (a descriptor duplicated from it with `dup` or
///   `fcntl(F_DUPFD)` counts as the same placeholder).
///
/// Then the placeholder is forgotten (its duplicates, if any, become plain descriptors on which
/// socket calls fail with `ENOTSOCK`), `fd` is closed, and the returned [`Placeholder`] holds the
/// state as of this call. Otherwise (outside a simulation, guards absent, a real socket, a
/// file, a placeholder of an earlier run) `fd` is handed back untouched in `Err`, so that the
/// caller can give it to real tokio. It never fails the run, never panics and never blocks.
///
/// ```
/// use std::os::fd::OwnedFd;
///
/// // Outside a simulation every descriptor is handed back.
/// let file: OwnedFd = std::fs::File::open("Cargo.toml").unwrap().into();
/// assert!(crashtest_guard::adopt_placeholder(file).is_err());
///
/// // Inside one, a socket made and configured as in production is a placeholder.
/// # if crashtest_guard::SUPPORTED {
/// crashtest_guard::on_fresh_thread(|| {
///     crashtest_core::Sim::new(1).run(async {
///         let socket = std::net::UdpSocket::bind("0.0.0.0:7000").unwrap();
///         socket.set_broadcast(true).unwrap();
///         let placeholder = crashtest_guard::adopt_placeholder(socket.into()).unwrap();
///         assert_eq!(placeholder.bound, Some("0.0.0.0:7000".parse().unwrap()));
///         assert!(placeholder.options.broadcast);
///     }).unwrap();
/// });
/// # }
/// ```
#[cfg(unix)]
pub fn adopt_placeholder(fd: std::os::fd::OwnedFd) -> Result<Placeholder, std::os::fd::OwnedFd> {
    #[cfg(guards)]
    return crate::glibc::adopt(fd);
    #[cfg(not(guards))]
    Err(fd)
}
