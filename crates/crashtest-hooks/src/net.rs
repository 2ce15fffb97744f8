//! The simulated network as the stand-in's `tokio::net` sees it: TCP connections and
//! listeners, UDP sockets and name resolution, byte by byte.
//!
//! Implemented by `crashtest-net` over its own sockets. Every call acts for the calling node
//! of the running simulation. Reads fill a `MaybeUninit` slice and return how many bytes
//! they wrote there, so that the stand-in passes tokio's `ReadBuf` through without zeroing it.
//!
//! Placeholder sockets: a library that makes its socket itself (hyper-util's connector,
//! through socket2) and hands it to `TcpSocket::from_std_stream` never reaches the real
//! network inside a simulation, because the determinism guard gives it a placeholder
//! descriptor. [`AdoptedSocket`] is what the stand-in learns from such a socket before it
//! closes it.

use std::fmt;
use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// A boxed future that may move between threads, as the stand-in's futures must.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The simulated network of the running simulation.
pub trait Network: Sync {
    /// The addresses of host `name` (a node's name, `localhost`); `NotFound` if none.
    fn resolve(&self, name: &str) -> io::Result<Vec<IpAddr>>;

    /// Opens a connection from the calling node to `addr`, from the address a socket was
    /// bound to (`None`, or port 0, picks a free port): `AddrInUse` if that port is taken,
    /// `AddrNotAvailable` if the address is another node's.
    fn tcp_connect(
        &self,
        addr: SocketAddr,
        local: Option<SocketAddr>,
    ) -> BoxFuture<'static, io::Result<Arc<dyn TcpConn>>>;

    /// Binds a listener on the calling node (port 0 picks one).
    fn tcp_listen(&self, addr: SocketAddr) -> io::Result<Box<dyn TcpListen>>;

    /// Takes `addr`'s TCP port on the calling node (port 0 picks one) for a socket that is
    /// bound but neither listens nor connects yet, as Linux's `bind` takes it: `AddrInUse`
    /// if the port is taken, `AddrNotAvailable` if the address is another node's. The port
    /// is free again when the hold is dropped, which the socket does just before it listens
    /// or connects from that port.
    fn tcp_hold(&self, addr: SocketAddr) -> io::Result<Box<dyn PortHeld>>;

    /// Binds a UDP socket on the calling node (port 0 picks one).
    fn udp_bind(&self, addr: SocketAddr) -> io::Result<Box<dyn UdpSock>>;
}

/// A port taken for a bound socket ([`Network::tcp_hold`]); freed when dropped.
pub trait PortHeld: Send + Sync + fmt::Debug {
    /// The port held (the one picked, for a bind to port 0).
    fn port(&self) -> u16;
}

/// One end of a TCP connection. Shared by a stream and its halves; the end closes when the
/// last reference drops (a FIN, or a reset if its node was killed).
pub trait TcpConn: Send + Sync {
    /// Reads into `buf`; `Ok(0)` at the end of the stream.
    fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>>;

    /// Writes some of `data`; waits while the send buffer is full.
    fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>>;

    /// Reads what has arrived into `buf`, never waiting: `WouldBlock` if nothing has. Unlike
    /// a poll, it registers no waker: tokio's `try_read` registers no interest either, and
    /// leaves the tasks that wait on the end (`readable().await`) as they were.
    fn try_read(&self, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize>;

    /// Writes some of `data`, never waiting: `WouldBlock` if the send buffer is full. It
    /// registers no waker (see [`TcpConn::try_read`]).
    fn try_write(&self, data: &[u8]) -> io::Result<usize>;

    /// Copies arrived bytes into `buf` and leaves them to be read; `Ok(0)` at the end of the
    /// stream. Waits, as a read does, while nothing has arrived.
    fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>>;

    /// What the end is ready for, once something asked for is: a read direction by bytes
    /// arrived, the end of the stream or an error, a write direction by room in the send
    /// buffer or an error, an error by an error. Until then `Pending`, with `cx`'s waker
    /// registered to learn of each.
    fn poll_ready(&self, cx: &mut Context<'_>, interest: TcpInterest) -> Poll<TcpReady>;

    /// Shuts the write direction down (a FIN); reads go on.
    fn shutdown(&self);

    /// This end's address.
    fn local_addr(&self) -> SocketAddr;

    /// The other end's address.
    fn peer_addr(&self) -> SocketAddr;

    /// Sets `SO_LINGER`: with a zero timeout, closing the end resets the connection (an RST,
    /// not a FIN), as on Linux; any other timeout is kept with no effect.
    fn set_linger(&self, linger: Option<Duration>);

    /// The value last given to [`TcpConn::set_linger`].
    fn linger(&self) -> Option<Duration>;
}

/// What a TCP end is ready for ([`TcpConn::poll_ready`]), in the terms of tokio's `Ready`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpReady {
    /// Bytes have arrived and wait to be read.
    pub readable: bool,
    /// A read would not wait for bytes: the stream ended (the peer's FIN) or failed.
    pub read_closed: bool,
    /// The send buffer has room.
    pub writable: bool,
    /// Writing is over both ways (this end shut its writing down and the peer's FIN
    /// arrived), or the connection failed.
    pub write_closed: bool,
    /// The connection failed (a reset, a timeout, its node's death).
    pub error: bool,
}

/// What [`TcpConn::poll_ready`] waits for, in the terms of tokio's `Interest`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInterest {
    /// Something to read, the end of the stream, or an error.
    pub read: bool,
    /// Room to write, or writing over.
    pub write: bool,
    /// An error.
    pub error: bool,
}

/// A bound TCP listener; dropping it frees the port.
pub trait TcpListen: Send + Sync {
    /// The next connection and its peer's address.
    fn poll_accept(&self, cx: &mut Context<'_>)
    -> Poll<io::Result<(Arc<dyn TcpConn>, SocketAddr)>>;

    /// The bound address.
    fn local_addr(&self) -> SocketAddr;
}

/// A bound UDP socket; dropping it frees the port.
pub trait UdpSock: Send + Sync {
    /// Sends one datagram (the simulated network never makes a sender wait).
    fn send_to(&self, data: &[u8], target: SocketAddr) -> io::Result<usize>;

    /// Sends one datagram to the default peer; Linux's `EDESTADDRREQ` if there is none.
    fn send(&self, data: &[u8]) -> io::Result<usize>;

    /// Receives one datagram into `buf` (truncated to fit): its length and sender.
    fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<(usize, SocketAddr)>>;

    /// Copies the next datagram into `buf` (truncated to fit) without receiving it: its
    /// length and sender; `Pending` after registering `cx`'s waker if none is queued. With an
    /// empty `buf` it answers "is a datagram queued?" (readiness) and who sent it.
    fn poll_peek_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<(usize, SocketAddr)>>;

    /// Sets the default peer, and receives only from it from now on.
    fn connect(&self, peer: SocketAddr) -> io::Result<()>;

    /// The default peer; `NotConnected` if none.
    fn peer_addr(&self) -> io::Result<SocketAddr>;

    /// The bound address.
    fn local_addr(&self) -> SocketAddr;
}

/// What a socket made outside the stand-in (by socket2, say) was set up as, learned when the
/// stand-in adopts it.
///
/// ```
/// let adopted = crashtest_hooks::net::AdoptedSocket {
///     ipv6: false,
///     bound: None,
///     nodelay: true,
///     linger: None,
///     listening: false,
/// };
/// assert!(adopted.nodelay);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdoptedSocket {
    /// An IPv6 socket (else IPv4).
    pub ipv6: bool,
    /// The local address it was bound to, if it was.
    pub bound: Option<SocketAddr>,
    /// `TCP_NODELAY` was set.
    pub nodelay: bool,
    /// `SO_LINGER`, if it was set: with a zero timeout, closing a connection resets it.
    pub linger: Option<Duration>,
    /// It listens already (std's `TcpListener::bind` made it).
    pub listening: bool,
}

/// A socket made outside the stand-in, as the descriptor that carries it.
#[cfg(unix)]
pub type RawSocket = std::os::fd::OwnedFd;
/// A socket made outside the stand-in, as the handle that carries it.
#[cfg(windows)]
pub type RawSocket = std::os::windows::io::OwnedSocket;

/// Takes a socket made outside the stand-in inside a simulation and tells how it was set up,
/// closing it; hands it back untouched if it is not one the adopter knows (a real socket),
/// for the stand-in to ask the socket itself.
pub type AdoptSocket = fn(RawSocket) -> Result<AdoptedSocket, RawSocket>;

impl fmt::Debug for dyn Network + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Network")
    }
}

impl fmt::Debug for dyn TcpConn + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpConn")
            .field("local", &self.local_addr())
            .field("peer", &self.peer_addr())
            .finish()
    }
}

impl fmt::Debug for dyn TcpListen + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListen")
            .field("local", &self.local_addr())
            .finish()
    }
}

impl fmt::Debug for dyn UdpSock + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSock")
            .field("local", &self.local_addr())
            .finish()
    }
}

/// The raw datagram I/O of a stand-in UDP socket: while its `try_io` runs the program's own
/// system calls (quinn's runtime sends and receives through quinn-udp's `sendmsg` and
/// `recvmmsg` on the socket's descriptor), the determinism guard answers the datagram calls
/// on that descriptor from the simulated socket, instead of refusing them.
pub mod raw_datagrams {
    use std::cell::Cell;

    use super::UdpSock;

    thread_local! {
        /// The descriptor the program's datagram calls go to, and the socket that answers
        /// them, while a `try_io` runs on this thread.
        static LENT: Cell<Option<(i32, *const (dyn UdpSock + 'static))>> =
            const { Cell::new(None) };
    }

    /// Runs `io` with the datagram calls on `fd` answered from `socket`.
    ///
    /// ```
    /// use crashtest_hooks::net::raw_datagrams;
    /// # struct Quiet;
    /// # impl crashtest_hooks::net::UdpSock for Quiet {
    /// #     fn send_to(&self, data: &[u8], _: std::net::SocketAddr) -> std::io::Result<usize> { Ok(data.len()) }
    /// #     fn send(&self, data: &[u8]) -> std::io::Result<usize> { Ok(data.len()) }
    /// #     fn poll_recv_from(&self, _: &mut std::task::Context<'_>, _: &mut [std::mem::MaybeUninit<u8>]) -> std::task::Poll<std::io::Result<(usize, std::net::SocketAddr)>> { std::task::Poll::Pending }
    /// #     fn poll_peek_from(&self, _: &mut std::task::Context<'_>, _: &mut [std::mem::MaybeUninit<u8>]) -> std::task::Poll<std::io::Result<(usize, std::net::SocketAddr)>> { std::task::Poll::Pending }
    /// #     fn connect(&self, _: std::net::SocketAddr) -> std::io::Result<()> { Ok(()) }
    /// #     fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> { Err(std::io::ErrorKind::NotConnected.into()) }
    /// #     fn local_addr(&self) -> std::net::SocketAddr { ([10, 0, 0, 1], 4433).into() }
    /// # }
    /// let socket = Quiet;
    /// let port = raw_datagrams::lent(7, |socket| socket.local_addr().port());
    /// assert_eq!(port, None);
    /// let port = raw_datagrams::lend(7, &socket, || raw_datagrams::lent(7, |s| s.local_addr().port()));
    /// assert_eq!(port, Some(4433));
    /// assert_eq!(raw_datagrams::lent(7, |_| ()), None);
    /// ```
    pub fn lend<R>(fd: i32, socket: &dyn UdpSock, io: impl FnOnce() -> R) -> R {
        /// Restores what was lent before, on every way out of `io`, panics included.
        struct Restore(Option<(i32, *const (dyn UdpSock + 'static))>);
        impl Drop for Restore {
            fn drop(&mut self) {
                LENT.with(|lent| lent.set(self.0));
            }
        }
        let socket: *const (dyn UdpSock + '_) = socket;
        // SAFETY: only the lifetime is erased; the pointer is read only through `lent`, which
        // runs while `io` runs, within the borrow of `socket` (`Restore` takes it back first).
        let socket: *const (dyn UdpSock + 'static) = unsafe { std::mem::transmute(socket) };
        let _restore = Restore(LENT.with(|lent| lent.replace(Some((fd, socket)))));
        io()
    }

    /// Runs `f` on the socket lent for `fd`, if a `try_io` on this thread lent one for it.
    pub fn lent<R>(fd: i32, f: impl FnOnce(&dyn UdpSock) -> R) -> Option<R> {
        let (lent_fd, socket) = LENT.with(Cell::get)?;
        // SAFETY: `lend` keeps the pointer valid for as long as it is set (see there).
        (lent_fd == fd).then(|| f(unsafe { &*socket }))
    }
}
