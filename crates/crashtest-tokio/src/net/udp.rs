//! `UdpSocket`: tokio's, or a datagram socket on the calling simulated node, whose datagrams
//! the simulated network may lose, duplicate, delay and reorder.
//!
//! Readiness calls, peeking and multicast are refused inside a simulation; sending and
//! receiving, in their async, poll and `try_` forms, are simulated.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll};

use crashtest_hooks::net::UdpSock;
use real::io::ReadBuf;

use super::addr::{ToSocketAddrs, first_that_works, resolve_some};
use super::fd::descriptors;
use super::stream::{refuse_readiness, try_now};
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
    },
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

impl UdpSocket {
    fn sim(socket: Box<dyn UdpSock>) -> UdpSocket {
        UdpSocket {
            inner: Inner::Sim {
                socket,
                broadcast: AtomicBool::new(false),
                ttl: AtomicU32::new(64),
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
        poll_fn(|cx| self.poll_send_to(cx, buf, target)).await
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
    /// `NotConnected` without one, and as [`UdpSocket::send_to`].
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// Polls to send a datagram to the default peer.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::send`].
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &self.inner {
            Inner::Real(socket) => socket.poll_send(cx, buf),
            Inner::Sim { socket, .. } => Poll::Ready(
                socket
                    .peer_addr()
                    .and_then(|peer| socket.send_to(buf, peer)),
            ),
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

    /// Waits until a datagram can be received; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn readable(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.readable().await,
            Inner::Sim { .. } => refuse_readiness("tokio::net::UdpSocket::readable"),
        }
    }

    /// Waits until a datagram can be sent; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn writable(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.writable().await,
            Inner::Sim { .. } => refuse_readiness("tokio::net::UdpSocket::writable"),
        }
    }

    /// Receives a datagram without consuming it; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match &self.inner {
            Inner::Real(socket) => socket.peek_from(buf).await,
            Inner::Sim { .. } => refuse_readiness("tokio::net::UdpSocket::peek_from"),
        }
    }

    /// `SO_BROADCAST`.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn broadcast(&self) -> io::Result<bool> {
        match &self.inner {
            Inner::Real(socket) => socket.broadcast(),
            Inner::Sim { broadcast, .. } => Ok(broadcast.load(Ordering::Relaxed)),
        }
    }

    /// Sets `SO_BROADCAST` (remembered by a simulated socket).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.set_broadcast(on),
            Inner::Sim { broadcast, .. } => {
                broadcast.store(on, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// `IP_TTL`.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn ttl(&self) -> io::Result<u32> {
        match &self.inner {
            Inner::Real(socket) => socket.ttl(),
            Inner::Sim { ttl, .. } => Ok(ttl.load(Ordering::Relaxed)),
        }
    }

    /// Sets `IP_TTL` (remembered by a simulated socket).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn set_ttl(&self, value: u32) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.set_ttl(value),
            Inner::Sim { ttl, .. } => {
                ttl.store(value, Ordering::Relaxed);
                Ok(())
            }
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
