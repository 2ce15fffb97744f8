//! `UdpSocket`: tokio's, or a datagram socket on the calling simulated node, whose datagrams
//! the simulated network may lose, duplicate, delay and reorder.
//!
//! Inside a simulation sending, receiving and peeking (async, poll, `try_` and `BufMut`
//! forms) and readiness are simulated: a socket is always writable (the simulated network
//! never makes a sender wait) and readable once a datagram is queued. Raw I/O on the
//! descriptor (`try_io`, `async_io`), multicast and device binding are refused; the socket
//! options a program may set (broadcast, TTL, TOS) are remembered.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Waker, ready};

use bytes::BufMut;
use crashtest_hooks::net::UdpSock;
use real::io::{Interest, ReadBuf, Ready};

use super::addr::{ToSocketAddrs, first_that_works, resolve_some};
use super::fd::descriptors;
use super::stream::try_now;
use crate::seam;

/// A UDP socket, like `tokio::net::UdpSocket`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let a = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
///     let b = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
///     a.send_to(b"hello", b.local_addr().unwrap()).await.unwrap();
///     let mut buf = [0; 16];
///     let (n, from) = b.recv_from(&mut buf).await.unwrap();
///     assert_eq!((&buf[..n], from), (&b"hello"[..], a.local_addr().unwrap()));
/// }).unwrap();
/// ```
pub struct UdpSocket {
    inner: Inner,
}

enum Inner {
    Real(real::net::UdpSocket),
    Sim {
        socket: Box<dyn UdpSock>,
        broadcast: AtomicBool,
        ttl: AtomicU32,
        tos: AtomicU32,
        tclass: AtomicU32,
    },
}

/// Reads or sets one option, on tokio's socket or in the simulated one's record.
macro_rules! remembered {
    ($($(#[$attr:meta])* $what:literal: $get:ident / $set:ident: $ty:ty => $field:ident;)*) => {$(
        #[doc = concat!("`", $what, "`.")]
        ///
        /// # Errors
        ///
        /// tokio's.
        $(#[$attr])*
        pub fn $get(&self) -> io::Result<$ty> {
            match &self.inner {
                Inner::Real(socket) => socket.$get(),
                Inner::Sim { $field, .. } => Ok($field.load(Ordering::Relaxed)),
            }
        }

        #[doc = concat!("Sets `", $what, "` (remembered by a simulated socket).")]
        ///
        /// # Errors
        ///
        /// tokio's.
        $(#[$attr])*
        pub fn $set(&self, value: $ty) -> io::Result<()> {
            match &self.inner {
                Inner::Real(socket) => socket.$set(value),
                Inner::Sim { $field, .. } => {
                    $field.store(value, Ordering::Relaxed);
                    Ok(())
                }
            }
        }
    )*};
}

/// Forwards a call that only tokio's socket answers; refused for a simulated one.
macro_rules! real_only {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        /// As tokio's; refused inside a simulation.
        ///
        /// # Errors
        ///
        /// tokio's.
        pub fn $name(&self $(, $arg: $ty)*) -> $out {
            match &self.inner {
                Inner::Real(socket) => socket.$name($($arg),*),
                Inner::Sim { .. } => seam::refuse(
                    concat!("tokio::net::UdpSocket::", stringify!($name)),
                    "multicast is not simulated",
                ),
            }
        }
    )*};
}

/// Runs `f`, a raw I/O call of `socket`'s owner, with its datagram calls on the owner's
/// descriptor answered from `socket` (see [`UdpSocket::try_io`]).
#[cfg(unix)]
fn lend_raw_io<R>(
    owner: &UdpSocket,
    socket: &dyn UdpSock,
    f: impl FnOnce() -> io::Result<R>,
) -> io::Result<R> {
    let fd = std::os::fd::AsRawFd::as_raw_fd(owner);
    crashtest_hooks::net::raw_datagrams::lend(fd, socket, f)
}

/// Refuses a raw I/O call on a simulated datagram socket, which has no descriptor to lend
/// where descriptors are not Unix's.
#[cfg(not(unix))]
#[track_caller]
fn lend_raw_io<R>(
    _: &UdpSocket,
    _: &dyn UdpSock,
    _: impl FnOnce() -> io::Result<R>,
) -> io::Result<R> {
    Err(seam::refused_error(
        "tokio::net::UdpSocket::try_io",
        "a simulated socket has no OS socket to run raw I/O on; send and receive through \
         send_to/recv_from (or their try_ and poll_ forms), and wait with readable/writable",
    ))
}

impl UdpSocket {
    fn sim(socket: Box<dyn UdpSock>) -> UdpSocket {
        UdpSocket {
            inner: Inner::Sim {
                socket,
                broadcast: AtomicBool::new(false),
                ttl: AtomicU32::new(64),
                tos: AtomicU32::new(0),
                tclass: AtomicU32::new(0),
            },
        }
    }

    /// Binds a socket; port 0 picks one.
    ///
    /// # Errors
    ///
    /// `AddrInUse`, `AddrNotAvailable`, and tokio's.
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        let addrs = resolve_some(&addr).await?;
        match seam::sim() {
            None => real::net::UdpSocket::bind(&addrs[..])
                .await
                .map(|socket| UdpSocket {
                    inner: Inner::Real(socket),
                }),
            Some(_) => {
                let network = seam::network("tokio::net::UdpSocket::bind");
                let socket =
                    first_that_works(addrs, |addr| std::future::ready(network.udp_bind(addr)))
                        .await?;
                Ok(UdpSocket::sim(socket))
            }
        }
    }

    /// Wraps a std socket. Inside a simulation a socket the program made by hand (std's
    /// `UdpSocket::bind`, socket2) is adopted: bound on the simulated network at its address.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        if seam::sim().is_none() {
            return real::net::UdpSocket::from_std(socket).map(|socket| UdpSocket {
                inner: Inner::Real(socket),
            });
        }
        // A socket made by hand inside the simulation (a placeholder) is adopted: bound on
        // the simulated network where the program bound it.
        let adopted = super::socket::adopt(socket.into()).or_else(|raw| {
            let socket = std::net::UdpSocket::from(raw);
            socket
                .local_addr()
                .map(|local| crashtest_hooks::net::AdoptedSocket {
                    ipv6: local.is_ipv6(),
                    bound: Some(local),
                    nodelay: false,
                    linger: None,
                    listening: false,
                })
        });
        let adopted = adopted.unwrap_or_else(|err| {
            seam::refuse(
                "tokio::net::UdpSocket::from_std",
                &format!(
                    "the socket cannot be simulated ({err}); bind with tokio::net::UdpSocket::bind"
                ),
            )
        });
        let unspecified = if adopted.ipv6 {
            SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        };
        let network = seam::network("tokio::net::UdpSocket::from_std");
        let socket = network.udp_bind(adopted.bound.unwrap_or(unspecified))?;
        Ok(UdpSocket::sim(socket))
    }

    /// The std socket; refused for a simulated one.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::net::UdpSocket> {
        match self.inner {
            Inner::Real(socket) => socket.into_std(),
            Inner::Sim { .. } => seam::refuse(
                "tokio::net::UdpSocket::into_std",
                "a simulated socket has no OS socket",
            ),
        }
    }

    /// Sets the default peer; only its datagrams are received from then on.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        let addrs = resolve_some(&addr).await?;
        match &self.inner {
            Inner::Real(socket) => socket.connect(&addrs[..]).await,
            Inner::Sim { socket, .. } => socket.connect(addrs[0]),
        }
    }

    /// The bound address.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(socket) => socket.local_addr(),
            Inner::Sim { socket, .. } => Ok(socket.local_addr()),
        }
    }

    /// The default peer.
    ///
    /// # Errors
    ///
    /// `NotConnected` without one.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(socket) => socket.peer_addr(),
            Inner::Sim { socket, .. } => socket.peer_addr(),
        }
    }

    /// Sends a datagram to `target`.
    ///
    /// # Errors
    ///
    /// tokio's, and the network's (a datagram too large).
    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        let target = resolve_some(&target).await?[0];
        match &self.inner {
            Inner::Real(socket) => socket.send_to(buf, target).await,
            Inner::Sim { socket, .. } => socket.send_to(buf, target),
        }
    }

    /// Polls to send a datagram to `target`.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::send_to`].
    pub fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_send_to(cx, buf, target),
            Inner::Sim { socket, .. } => Poll::Ready(socket.send_to(buf, target)),
        }
    }

    /// Sends a datagram to `target` if it can go now.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::send_to`].
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(socket) => socket.try_send_to(buf, target),
            Inner::Sim { socket, .. } => socket.send_to(buf, target),
        }
    }

    /// Sends a datagram to the default peer.
    ///
    /// # Errors
    ///
    /// Linux's `EDESTADDRREQ` without one (a number std gives no kind of its own), and as
    /// [`UdpSocket::send_to`].
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(socket) => socket.send(buf).await,
            Inner::Sim { .. } => poll_fn(|cx| self.poll_send(cx, buf)).await,
        }
    }

    /// Polls to send a datagram to the default peer.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::send`].
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_send(cx, buf),
            Inner::Sim { socket, .. } => Poll::Ready(socket.send(buf)),
        }
    }

    /// Sends a datagram to the default peer if it can go now.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::send`].
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        try_now(|cx| self.poll_send(cx, buf))
    }

    /// Receives a datagram and its sender.
    ///
    /// # Errors
    ///
    /// tokio's, and the network's (the node was killed).
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        if let Inner::Real(socket) = &self.inner {
            return socket.recv_from(buf).await;
        }
        let mut buf = ReadBuf::new(buf);
        let from = poll_fn(|cx| self.poll_recv_from(cx, &mut buf)).await?;
        Ok((buf.filled().len(), from))
    }

    /// Polls to receive a datagram into `buf`; its sender.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_recv_from(cx, buf),
            Inner::Sim { socket, .. } => {
                seam::read_into(buf, |unfilled| socket.poll_recv_from(cx, unfilled))
            }
        }
    }

    /// Receives a datagram if one is there.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match &self.inner {
            Inner::Real(socket) => socket.try_recv_from(buf),
            Inner::Sim { .. } => try_now(|cx| {
                let mut buf = ReadBuf::new(buf);
                self.poll_recv_from(cx, &mut buf)
                    .map_ok(|from| (buf.filled().len(), from))
            }),
        }
    }

    /// Receives a datagram from the default peer.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        if let Inner::Real(socket) = &self.inner {
            return socket.recv(buf).await;
        }
        let mut buf = ReadBuf::new(buf);
        poll_fn(|cx| self.poll_recv(cx, &mut buf)).await?;
        Ok(buf.filled().len())
    }

    /// Polls to receive a datagram from the default peer.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_recv(cx, buf),
            Inner::Sim { .. } => self.poll_recv_from(cx, buf).map_ok(|_| ()),
        }
    }

    /// Receives a datagram from the default peer if one is there.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_recv_from(buf).map(|(n, _)| n)
    }

    /// Waits until a datagram can be received (one is queued).
    ///
    /// # Errors
    ///
    /// tokio's, and the network's (the node was killed).
    pub async fn readable(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.readable().await,
            Inner::Sim { .. } => poll_fn(|cx| self.poll_recv_ready(cx)).await,
        }
    }

    /// Polls until a datagram can be received (one is queued), or a receive would fail (a
    /// pending `ECONNREFUSED`, which the receive reports, as on Linux).
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::readable`].
    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_recv_ready(cx),
            Inner::Sim { socket, .. } => socket.poll_peek_from(cx, &mut []).map(|_| Ok(())),
        }
    }

    /// Waits until a datagram can be sent: at once in a simulation, whose network never
    /// makes a sender wait.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn writable(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.writable().await,
            Inner::Sim { .. } => Ok(()),
        }
    }

    /// Polls until a datagram can be sent (see [`UdpSocket::writable`]).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_send_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_send_ready(cx),
            Inner::Sim { .. } => Poll::Ready(Ok(())),
        }
    }

    /// Waits until the socket is ready for `interest`: in a simulation, writable at once and
    /// readable once a datagram is queued.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// use tokio::io::{Interest, Ready};
    /// crashtest::Sim::new(1).run(async {
    ///     let a = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    ///     assert_eq!(a.ready(Interest::WRITABLE).await.unwrap(), Ready::WRITABLE);
    ///     a.send_to(b"x", a.local_addr().unwrap()).await.unwrap();
    ///     assert!(a.ready(Interest::READABLE).await.unwrap().is_readable());
    /// }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::readable`].
    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        let socket = match &self.inner {
            Inner::Real(socket) => return socket.ready(interest).await,
            Inner::Sim { socket, .. } => socket,
        };
        if interest.is_writable() {
            let queued = socket
                .poll_peek_from(&mut Context::from_waker(Waker::noop()), &mut [])
                .is_ready();
            let readable = interest.is_readable() && queued;
            return Ok(Ready::WRITABLE
                | if readable {
                    Ready::READABLE
                } else {
                    Ready::EMPTY
                });
        }
        if interest.is_readable() {
            self.readable().await?;
            return Ok(Ready::READABLE);
        }
        // Neither readable nor writable (priority or error interest only): nothing on the
        // simulated network ever makes a socket ready for it.
        std::future::pending().await
    }

    /// Copies the next datagram into `buf` without receiving it; its sender.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub async fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        if let Inner::Real(socket) = &self.inner {
            return socket.peek_from(buf).await;
        }
        let mut buf = ReadBuf::new(buf);
        let from = poll_fn(|cx| self.poll_peek_from(cx, &mut buf)).await?;
        Ok((buf.filled().len(), from))
    }

    /// Polls to copy the next datagram into `buf` without receiving it; its sender.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub fn poll_peek_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_peek_from(cx, buf),
            Inner::Sim { socket, .. } => {
                seam::read_into(buf, |unfilled| socket.poll_peek_from(cx, unfilled))
            }
        }
    }

    /// Copies the next datagram into `buf` without receiving it, if one is queued.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match &self.inner {
            Inner::Real(socket) => socket.try_peek_from(buf),
            Inner::Sim { .. } => try_now(|cx| {
                let mut buf = ReadBuf::new(buf);
                self.poll_peek_from(cx, &mut buf)
                    .map_ok(|from| (buf.filled().len(), from))
            }),
        }
    }

    /// Copies the next datagram from the default peer into `buf` without receiving it.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        if let Inner::Real(socket) = &self.inner {
            return socket.peek(buf).await;
        }
        self.peek_from(buf).await.map(|(n, _)| n)
    }

    /// Polls to copy the next datagram from the default peer without receiving it.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub fn poll_peek(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_peek(cx, buf),
            Inner::Sim { .. } => self.poll_peek_from(cx, buf).map_ok(|_| ()),
        }
    }

    /// Copies the next datagram from the default peer without receiving it, if one is
    /// queued.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_peek_from(buf).map(|(n, _)| n)
    }

    /// The sender of the next datagram, which stays queued.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub async fn peek_sender(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(socket) => socket.peek_sender().await,
            Inner::Sim { .. } => poll_fn(|cx| self.poll_peek_sender(cx)).await,
        }
    }

    /// Polls for the sender of the next datagram, which stays queued.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub fn poll_peek_sender(&self, cx: &mut Context<'_>) -> Poll<io::Result<SocketAddr>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_peek_sender(cx),
            Inner::Sim { socket, .. } => {
                socket.poll_peek_from(cx, &mut []).map_ok(|(_, from)| from)
            }
        }
    }

    /// The sender of the next datagram, if one is queued.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_peek_sender(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(socket) => socket.try_peek_sender(),
            Inner::Sim { .. } => try_now(|cx| self.poll_peek_sender(cx)),
        }
    }

    /// Receives a datagram into `buf`'s spare capacity if one is queued.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_recv_buf_from<B: BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        match &self.inner {
            Inner::Real(socket) => socket.try_recv_buf_from(buf),
            Inner::Sim { .. } => try_now(|cx| self.poll_recv_buf_from(cx, buf)),
        }
    }

    /// Receives a datagram into `buf`'s spare capacity; its sender.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub async fn recv_buf_from<B: BufMut>(&self, buf: &mut B) -> io::Result<(usize, SocketAddr)> {
        match &self.inner {
            Inner::Real(socket) => socket.recv_buf_from(buf).await,
            Inner::Sim { .. } => poll_fn(|cx| self.poll_recv_buf_from(cx, buf)).await,
        }
    }

    /// Receives a datagram from the default peer into `buf`'s spare capacity if one is
    /// queued.
    ///
    /// # Errors
    ///
    /// `WouldBlock`, and as [`UdpSocket::recv_from`].
    pub fn try_recv_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        self.try_recv_buf_from(buf).map(|(n, _)| n)
    }

    /// Receives a datagram from the default peer into `buf`'s spare capacity.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    pub async fn recv_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        if let Inner::Real(socket) = &self.inner {
            return socket.recv_buf(buf).await;
        }
        self.recv_buf_from(buf).await.map(|(n, _)| n)
    }

    /// Receives into `buf`'s spare capacity and advances it past what was received.
    fn poll_recv_buf_from<B: BufMut>(
        &self,
        cx: &mut Context<'_>,
        buf: &mut B,
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        let Inner::Sim { socket, .. } = &self.inner else {
            unreachable!("only a simulated socket receives through here")
        };
        let spare = buf.chunk_mut();
        // SAFETY: the seam's readers write only initialized bytes into the slice (the hooks'
        // contract), so the spare capacity is only written, never read uninitialized.
        let spare = unsafe { spare.as_uninit_slice_mut() };
        let (n, from) = ready!(socket.poll_recv_from(cx, spare))?;
        // SAFETY: the reader initialized the first `n` bytes of the spare capacity.
        unsafe { buf.advance_mut(n) };
        Poll::Ready(Ok((n, from)))
    }

    /// Runs a raw I/O call on the socket if it is ready: readable when a datagram is queued,
    /// and always writable in a simulation, whose network never makes a sender wait.
    ///
    /// Inside a simulation `f`'s own datagram system calls on this socket's descriptor
    /// (`sendmsg`, `recvmmsg`, ..., as quinn's runtime makes through quinn-udp) are answered
    /// from the simulated socket by the determinism guard. Any other system call `f` makes
    /// reaches no network: the descriptor is not a socket.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if the socket is not ready, and what `f` returns.
    #[track_caller]
    pub fn try_io<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        match &self.inner {
            Inner::Real(socket) => socket.try_io(interest, f),
            Inner::Sim { socket, .. } => {
                // Ready with a datagram queued or a receive that would fail (a pending
                // error the call reports, as Linux's readiness says of an erring socket).
                let probe = socket.poll_peek_from(&mut Context::from_waker(Waker::noop()), &mut []);
                let ready = interest.is_writable() || probe.is_ready();
                if !ready {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                lend_raw_io(self, socket.as_ref(), f)
            }
        }
    }

    /// Runs a raw I/O call on the socket once it is ready (see [`UdpSocket::try_io`]).
    ///
    /// # Errors
    ///
    /// What `f` returns other than `WouldBlock`, and the network's (the node was killed).
    pub async fn async_io<R>(
        &self,
        interest: Interest,
        mut f: impl FnMut() -> io::Result<R>,
    ) -> io::Result<R> {
        if let Inner::Real(socket) = &self.inner {
            return socket.async_io(interest, f).await;
        }
        loop {
            if !interest.is_writable() {
                self.readable().await?;
            }
            match self.try_io(interest, &mut f) {
                // Not ready after all: let the others run before asking again.
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    crate::task::yield_now().await;
                }
                done => return done,
            }
        }
    }

    remembered! {
        "SO_BROADCAST": broadcast / set_broadcast: bool => broadcast;
        "IP_TTL": ttl / set_ttl: u32 => ttl;
        #[cfg(not(any(
            target_os = "fuchsia",
            target_os = "redox",
            target_os = "solaris",
            target_os = "illumos",
            target_os = "haiku"
        )))]
        #[allow(deprecated, reason = "tokio 1.49 renames it `tos_v4`; all have this name")]
        "IP_TOS": tos / set_tos: u32 => tos;
        #[cfg(all(
            real_tokio_1_49,
            not(any(
                target_os = "fuchsia",
                target_os = "redox",
                target_os = "solaris",
                target_os = "illumos",
                target_os = "haiku"
            ))
        ))]
        "IP_TOS": tos_v4 / set_tos_v4: u32 => tos;
        #[cfg(all(
            real_tokio_1_49,
            any(target_os = "android", target_os = "linux", target_os = "macos")
        ))]
        "IPV6_TCLASS": tclass_v6 / set_tclass_v6: u32 => tclass;
    }

    /// The device the socket is bound to (`SO_BINDTODEVICE`): none for a simulated one.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    pub fn device(&self) -> io::Result<Option<Vec<u8>>> {
        match &self.inner {
            Inner::Real(socket) => socket.device(),
            Inner::Sim { .. } => Ok(None),
        }
    }

    /// Binds the socket to a device (`SO_BINDTODEVICE`); refused inside a simulation, whose
    /// nodes have one network and no devices.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    #[track_caller]
    pub fn bind_device(&self, interface: Option<&[u8]>) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.bind_device(interface),
            Inner::Sim { .. } => super::refuse_bind_device("tokio::net::UdpSocket::bind_device"),
        }
    }

    /// The socket's pending error (none for a simulated one).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match &self.inner {
            Inner::Real(socket) => socket.take_error(),
            Inner::Sim { .. } => Ok(None),
        }
    }

    real_only! {
        join_multicast_v4(multiaddr: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()>;
        join_multicast_v6(multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()>;
        leave_multicast_v4(multiaddr: Ipv4Addr, interface: Ipv4Addr) -> io::Result<()>;
        leave_multicast_v6(multiaddr: &Ipv6Addr, interface: u32) -> io::Result<()>;
        multicast_loop_v4() -> io::Result<bool>;
        set_multicast_loop_v4(on: bool) -> io::Result<()>;
        multicast_loop_v6() -> io::Result<bool>;
        set_multicast_loop_v6(on: bool) -> io::Result<()>;
        multicast_ttl_v4() -> io::Result<u32>;
        set_multicast_ttl_v4(ttl: u32) -> io::Result<()>;
    }
}

impl TryFrom<std::net::UdpSocket> for UdpSocket {
    type Error = io::Error;

    fn try_from(socket: std::net::UdpSocket) -> io::Result<UdpSocket> {
        UdpSocket::from_std(socket)
    }
}

descriptors!(UdpSocket, Inner::Real);

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Real(socket) => socket.fmt(f),
            Inner::Sim { socket, .. } => socket.fmt(f),
        }
    }
}
