//! `TcpListener`: tokio's, or a port bound on the calling simulated node.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::task::{Context, Poll};

use crashtest_hooks::net::{AdoptedSocket, TcpListen};

use super::TcpStream;
use super::addr::{ToSocketAddrs, first_that_works, resolve_some};
use super::fd::descriptors;
use crate::seam;

/// A TCP listener, like `tokio::net::TcpListener`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
///     let addr = listener.local_addr().unwrap();
///     let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
///     let (_stream, peer) = listener.accept().await.unwrap();
///     assert_eq!(peer, client.await.unwrap().unwrap().local_addr().unwrap());
/// }).unwrap();
/// ```
pub struct TcpListener {
    inner: Inner,
}

enum Inner {
    Real(real::net::TcpListener),
    Sim(Box<dyn TcpListen>, Accepted),
}

/// The options a simulated listener's accepted streams inherit from its socket, as on Linux.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Accepted {
    pub(super) nodelay: bool,
    pub(super) linger: Option<std::time::Duration>,
}

impl TcpListener {
    pub(super) fn from_real(listener: real::net::TcpListener) -> TcpListener {
        TcpListener {
            inner: Inner::Real(listener),
        }
    }

    pub(super) fn sim(listener: Box<dyn TcpListen>, accepted: Accepted) -> TcpListener {
        TcpListener {
            inner: Inner::Sim(listener, accepted),
        }
    }

    /// Binds a listener; port 0 picks one. Inside a simulation the address's IP must be
    /// unspecified, loopback or the node's own.
    ///
    /// # Errors
    ///
    /// `AddrInUse`, `AddrNotAvailable`, and tokio's.
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let addrs = resolve_some(&addr).await?;
        match seam::sim() {
            None => real::net::TcpListener::bind(&addrs[..])
                .await
                .map(TcpListener::from_real),
            Some(_) => {
                let network = seam::network("tokio::net::TcpListener::bind");
                first_that_works(addrs, |addr| std::future::ready(network.tcp_listen(addr)))
                    .await
                    .map(|listener| TcpListener::sim(listener, Accepted::default()))
            }
        }
    }

    /// Waits for a connection.
    ///
    /// # Errors
    ///
    /// `ConnectionAborted` once the listener's node was killed, and tokio's.
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        match &self.inner {
            // tokio's `poll_accept` wakes only the last task to poll; its `accept` wakes every
            // task that awaits one.
            Inner::Real(listener) => {
                let (stream, peer) = listener.accept().await?;
                Ok((TcpStream::from_real(stream), peer))
            }
            Inner::Sim(..) => poll_fn(|cx| self.poll_accept(cx)).await,
        }
    }

    /// Polls for a connection.
    ///
    /// # Errors
    ///
    /// As [`TcpListener::accept`].
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        match &self.inner {
            Inner::Real(listener) => listener
                .poll_accept(cx)
                .map_ok(|(stream, peer)| (TcpStream::from_real(stream), peer)),
            Inner::Sim(listener, accepted) => listener.poll_accept(cx).map_ok(|(conn, peer)| {
                let stream = TcpStream::sim(conn, accepted.nodelay, accepted.linger);
                (stream, peer)
            }),
        }
    }

    /// Wraps a std listener. Inside a simulation the listener is adopted: std's
    /// `TcpListener::bind` made a placeholder there (the determinism guard records its
    /// address and `listen` without taking a real port), or, without the guards, a real
    /// listener, which is closed; either way a simulated listener is bound on the calling
    /// node at the address the program asked for. This is how tonic's `Server::serve(addr)`
    /// and `axum::serve` on a std listener run in a simulation.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     std_listener.set_nonblocking(true).unwrap();
    ///     let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
    ///     let addr = listener.local_addr().unwrap();
    ///     let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
    ///     let (_stream, _) = listener.accept().await.unwrap();
    ///     client.await.unwrap().unwrap();
    /// }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a socket that does not listen; inside a simulation, the simulated
    /// network's bind errors (`AddrInUse`, `AddrNotAvailable`); tokio's outside.
    #[track_caller]
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        if seam::sim().is_none() {
            return real::net::TcpListener::from_std(listener).map(TcpListener::from_real);
        }
        let call = "tokio::net::TcpListener::from_std";
        let adopted = super::socket::adopt(listener.into())
            .or_else(|raw| ask_the_listener(std::net::TcpListener::from(raw)));
        let adopted = adopted.unwrap_or_else(|err| {
            seam::refuse(
                call,
                &format!(
                    "the socket cannot be simulated ({err}); bind with \
                     tokio::net::TcpListener::bind"
                ),
            )
        });
        if !adopted.listening {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the socket does not listen: call listen before handing it to tokio",
            ));
        }
        let addr = adopted.bound.unwrap_or_else(|| {
            let ip = if adopted.ipv6 {
                Ipv6Addr::UNSPECIFIED.into()
            } else {
                Ipv4Addr::UNSPECIFIED.into()
            };
            SocketAddr::new(ip, 0)
        });
        let accepted = Accepted {
            nodelay: adopted.nodelay,
            linger: adopted.linger,
        };
        seam::network(call)
            .tcp_listen(addr)
            .map(|listener| TcpListener::sim(listener, accepted))
    }

    /// The std listener; refused for a simulated one.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::net::TcpListener> {
        match self.inner {
            Inner::Real(listener) => listener.into_std(),
            Inner::Sim(..) => seam::refuse(
                "tokio::net::TcpListener::into_std",
                "a simulated listener has no OS socket",
            ),
        }
    }

    /// The bound address.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(listener) => listener.local_addr(),
            Inner::Sim(listener, _) => Ok(listener.local_addr()),
        }
    }

    /// The `IP_TTL` setting (64 for a simulated listener).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn ttl(&self) -> io::Result<u32> {
        match &self.inner {
            Inner::Real(listener) => listener.ttl(),
            Inner::Sim(..) => Ok(64),
        }
    }

    /// Sets `IP_TTL` (ignored by a simulated listener).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        match &self.inner {
            Inner::Real(listener) => listener.set_ttl(ttl),
            Inner::Sim(..) => Ok(()),
        }
    }
}

/// Learns where a real listener (made without the guards, or before the run) listens, then
/// closes it. A std listener listens: std makes one only by binding and listening.
fn ask_the_listener(listener: std::net::TcpListener) -> io::Result<AdoptedSocket> {
    let local = listener.local_addr()?;
    Ok(AdoptedSocket {
        ipv6: local.is_ipv6(),
        bound: Some(local),
        nodelay: false,
        linger: None,
        listening: true,
    })
}

impl TryFrom<std::net::TcpListener> for TcpListener {
    type Error = io::Error;

    fn try_from(listener: std::net::TcpListener) -> io::Result<TcpListener> {
        TcpListener::from_std(listener)
    }
}

descriptors!(TcpListener, Inner::Real);

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Real(listener) => listener.fmt(f),
            Inner::Sim(listener, _) => listener.fmt(f),
        }
    }
}
