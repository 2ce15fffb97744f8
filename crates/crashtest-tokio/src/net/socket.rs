//! `TcpSocket`: tokio's, or a simulated socket not yet connected or listening.
//!
//! A simulated socket is only its options and its bound address until `connect` or `listen`
//! makes it a simulated connection or listener. Options are remembered and read back; the
//! simulated network has no use for buffer sizes or keep-alive probes.
//!
//! `from_std_stream` adopts a socket a library made itself (hyper-util's connector makes its
//! socket with socket2 and hands it over): inside a simulation the socket is closed after
//! learning how it was set up, through the adopter the `crashtest` facade registers (the
//! determinism guard's: inside a simulation `socket()` gives a placeholder that records what
//! is set on it), or else, for a real socket (made before the run, or without the guards), by
//! asking it (its family, bound address and `TCP_NODELAY`). A socket that is connected
//! already cannot be simulated and is refused.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::Duration;

use crashtest_hooks::net::{AdoptedSocket, PortHeld, RawSocket};

use super::fd::descriptors;
use super::listener::Accepted;
use super::{TcpListener, TcpStream};
use crate::seam;

/// A TCP socket before it connects or listens, like `tokio::net::TcpSocket`.
///
/// ```
/// use crashtest_tokio as tokio;
/// crashtest::Sim::new(1).run(async {
///     let server = tokio::net::TcpSocket::new_v4().unwrap();
///     server.set_reuseaddr(true).unwrap();
///     server.bind("127.0.0.1:8080".parse().unwrap()).unwrap();
///     let listener = server.listen(16).unwrap();
///     let client = tokio::net::TcpSocket::new_v4().unwrap();
///     client.set_nodelay(true).unwrap();
///     let connecting = tokio::spawn(client.connect("127.0.0.1:8080".parse().unwrap()));
///     let (_accepted, _) = listener.accept().await.unwrap();
///     let stream = connecting.await.unwrap().unwrap();
///     assert!(stream.nodelay().unwrap());
/// }).unwrap();
/// ```
pub struct TcpSocket {
    inner: Inner,
}

enum Inner {
    Real(real::net::TcpSocket),
    Sim(Mutex<SimSocket>),
}

/// A simulated socket's family, bound address and options.
#[derive(Debug)]
struct SimSocket {
    ipv6: bool,
    bound: Option<SocketAddr>,
    /// The port `bind` took, held until the socket listens or connects from it (an adopted
    /// socket's port was held by its placeholder, and is taken again then).
    hold: Option<Box<dyn PortHeld>>,
    nodelay: bool,
    keepalive: bool,
    reuseaddr: bool,
    reuseport: bool,
    send_buffer: u32,
    recv_buffer: u32,
    linger: Option<Duration>,
    tos: u32,
    tclass: u32,
}

impl SimSocket {
    fn new(ipv6: bool, bound: Option<SocketAddr>, nodelay: bool) -> SimSocket {
        SimSocket {
            ipv6,
            bound,
            hold: None,
            nodelay,
            keepalive: false,
            reuseaddr: false,
            reuseport: false,
            send_buffer: 16 * 1024,
            recv_buffer: 128 * 1024,
            linger: None,
            tos: 0,
            tclass: 0,
        }
    }

    fn unspecified(&self) -> SocketAddr {
        if self.ipv6 {
            SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
        } else {
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
        }
    }
}

/// Reads or sets one option, on tokio's socket or in the simulated one's record.
macro_rules! option {
    ($($(#[$attr:meta])* $get:ident / $set:ident: $ty:ty => $field:ident;)*) => {$(
        $(#[$attr])*
        ///
        /// # Errors
        ///
        /// tokio's.
        pub fn $get(&self) -> io::Result<$ty> {
            match &self.inner {
                Inner::Real(socket) => socket.$get(),
                Inner::Sim(sim) => Ok(lock(sim).$field),
            }
        }

        $(#[$attr])*
        /// (set).
        ///
        /// # Errors
        ///
        /// tokio's.
        pub fn $set(&self, value: $ty) -> io::Result<()> {
            match &self.inner {
                Inner::Real(socket) => socket.$set(value),
                Inner::Sim(sim) => {
                    lock(sim).$field = value;
                    Ok(())
                }
            }
        }
    )*};
}

fn lock(sim: &Mutex<SimSocket>) -> std::sync::MutexGuard<'_, SimSocket> {
    sim.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl TcpSocket {
    fn new(ipv6: bool) -> io::Result<TcpSocket> {
        let inner = match seam::sim() {
            None if ipv6 => Inner::Real(real::net::TcpSocket::new_v6()?),
            None => Inner::Real(real::net::TcpSocket::new_v4()?),
            Some(_) => Inner::Sim(Mutex::new(SimSocket::new(ipv6, None, false))),
        };
        Ok(TcpSocket { inner })
    }

    /// An IPv4 socket (simulated inside a simulation: no OS socket is made).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn new_v4() -> io::Result<TcpSocket> {
        TcpSocket::new(false)
    }

    /// An IPv6 socket (simulated inside a simulation).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn new_v6() -> io::Result<TcpSocket> {
        TcpSocket::new(true)
    }

    option! {
        /// `SO_KEEPALIVE`
        keepalive / set_keepalive: bool => keepalive;
        /// `SO_REUSEADDR`
        reuseaddr / set_reuseaddr: bool => reuseaddr;
        /// `SO_SNDBUF`
        send_buffer_size / set_send_buffer_size: u32 => send_buffer;
        /// `SO_RCVBUF`
        recv_buffer_size / set_recv_buffer_size: u32 => recv_buffer;
        /// `SO_LINGER`
        #[allow(deprecated, reason = "tokio deprecates SO_LINGER; the stand-in mirrors it")]
        linger / set_linger: Option<Duration> => linger;
        /// `TCP_NODELAY`
        nodelay / set_nodelay: bool => nodelay;
    }

    #[cfg(all(
        unix,
        not(target_os = "solaris"),
        not(target_os = "illumos"),
        not(target_os = "cygwin")
    ))]
    option! {
        /// `SO_REUSEPORT`
        reuseport / set_reuseport: bool => reuseport;
    }

    #[cfg(not(any(
        target_os = "fuchsia",
        target_os = "redox",
        target_os = "solaris",
        target_os = "illumos",
        target_os = "haiku"
    )))]
    option! {
        /// `IP_TOS`
        #[allow(deprecated, reason = "tokio 1.49 renames it `tos_v4`; all have this name")]
        tos / set_tos: u32 => tos;
    }

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
    option! {
        /// `IP_TOS`, under the name tokio 1.49 gave it
        tos_v4 / set_tos_v4: u32 => tos;
    }

    #[cfg(all(
        real_tokio_1_49,
        any(target_os = "android", target_os = "linux", target_os = "macos")
    ))]
    option! {
        /// `IPV6_TCLASS`
        tclass_v6 / set_tclass_v6: u32 => tclass;
    }

    /// Sets `SO_LINGER` to zero, so that closing resets the connection (remembered by a
    /// simulated socket).
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(real_tokio_1_50)]
    pub fn set_zero_linger(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.set_zero_linger(),
            Inner::Sim(sim) => {
                lock(sim).linger = Some(Duration::ZERO);
                Ok(())
            }
        }
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
            Inner::Sim(_) => Ok(None),
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
            Inner::Sim(_) => super::refuse_bind_device("tokio::net::TcpSocket::bind_device"),
        }
    }

    /// The bound address (the unspecified address, port 0, before `bind`).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(socket) => socket.local_addr(),
            Inner::Sim(sim) => {
                let sim = lock(sim);
                Ok(sim.bound.unwrap_or_else(|| sim.unspecified()))
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
            Inner::Sim(_) => Ok(None),
        }
    }

    /// Binds the socket to `addr`, taking its port at once, as on Linux: a taken port fails
    /// with `AddrInUse`, another node's address with `AddrNotAvailable` and a second bind
    /// with `InvalidInput`; a bind to port 0 picks a free port, which `local_addr` names.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// crashtest::Sim::new(1).run(async {
    ///     let socket = tokio::net::TcpSocket::new_v4().unwrap();
    ///     socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    ///     let addr = socket.local_addr().unwrap();
    ///     assert_ne!(addr.port(), 0);
    ///     let other = tokio::net::TcpSocket::new_v4().unwrap();
    ///     let taken = other.bind(addr).unwrap_err();
    ///     assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse);
    ///     let listener = socket.listen(16).unwrap();
    ///     assert_eq!(listener.local_addr().unwrap(), addr);
    /// }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        match &self.inner {
            Inner::Real(socket) => socket.bind(addr),
            Inner::Sim(sim) => {
                let mut sim = lock(sim);
                if sim.bound.is_some() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "invalid argument: the socket is bound already",
                    ));
                }
                let hold = seam::network("tokio::net::TcpSocket::bind").tcp_hold(addr)?;
                sim.bound = Some(SocketAddr::new(addr.ip(), hold.port()));
                sim.hold = Some(hold);
                Ok(())
            }
        }
    }

    /// Connects to `addr`, from the bound port if the socket was bound to one (a free port
    /// otherwise: the network's choice, as for a socket never bound).
    ///
    /// # Errors
    ///
    /// `ConnectionRefused`, `TimedOut`, and tokio's.
    pub async fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        match self.inner {
            Inner::Real(socket) => socket.connect(addr).await.map(TcpStream::from_real),
            Inner::Sim(sim) => {
                let (nodelay, linger, bound) = {
                    let mut sim = lock(&sim);
                    // Freed for the connection to take, in this same poll.
                    drop(sim.hold.take());
                    (sim.nodelay, sim.linger, sim.bound)
                };
                let network = seam::network("tokio::net::TcpSocket::connect");
                // A bound socket connects from its address, as on Linux.
                let conn = network.tcp_connect(addr, bound).await?;
                Ok(TcpStream::sim(conn, nodelay, linger))
            }
        }
    }

    /// Listens, on the bound address (or an ephemeral port of the unspecified address).
    ///
    /// # Errors
    ///
    /// `AddrInUse`, and tokio's.
    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        match self.inner {
            Inner::Real(socket) => socket.listen(backlog).map(TcpListener::from_real),
            Inner::Sim(sim) => {
                let mut sim = lock(&sim);
                // Freed for the listener to take at once.
                drop(sim.hold.take());
                let addr = sim.bound.unwrap_or_else(|| sim.unspecified());
                let accepted = Accepted {
                    nodelay: sim.nodelay,
                    linger: sim.linger,
                };
                let network = seam::network("tokio::net::TcpSocket::listen");
                network
                    .tcp_listen(addr)
                    .map(|listener| TcpListener::sim(listener, accepted))
            }
        }
    }

    /// Takes a socket made by std or socket2. Inside a simulation it is adopted (see the
    /// module's documentation) and closed; a connected one is refused.
    #[track_caller]
    pub fn from_std_stream(stream: std::net::TcpStream) -> TcpSocket {
        let inner = match seam::sim() {
            None => Inner::Real(real::net::TcpSocket::from_std_stream(stream)),
            Some(_) => {
                let adopted = adopt(stream.into())
                    .or_else(|raw| ask_the_socket(std::net::TcpStream::from(raw)));
                let adopted = adopted.unwrap_or_else(|err| {
                    seam::refuse(
                        "tokio::net::TcpSocket::from_std_stream",
                        &format!(
                            "the socket cannot be simulated ({err}); make it with \
                             tokio::net::TcpSocket::new_v4"
                        ),
                    )
                });
                let mut socket = SimSocket::new(adopted.ipv6, adopted.bound, adopted.nodelay);
                socket.linger = adopted.linger;
                Inner::Sim(Mutex::new(socket))
            }
        };
        TcpSocket { inner }
    }
}

/// Adopts a socket made by hand with the registered adopter (the determinism guard's, which
/// knows its placeholders); hands the socket back if there is none or it is not one of them.
pub(super) fn adopt(raw: RawSocket) -> Result<AdoptedSocket, RawSocket> {
    match crashtest_hooks::socket_adopter() {
        Some(adopter) => adopter(raw),
        None => Err(raw),
    }
}

/// Learns how a real, unconnected socket was set up, then closes it.
fn ask_the_socket(stream: std::net::TcpStream) -> io::Result<AdoptedSocket> {
    if stream.peer_addr().is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "it is connected to a real peer already",
        ));
    }
    let local = stream.local_addr()?;
    Ok(AdoptedSocket {
        ipv6: local.is_ipv6(),
        bound: (local.port() != 0).then_some(local),
        nodelay: stream.nodelay().unwrap_or(false),
        linger: None,
        listening: false,
    })
}

descriptors!(TcpSocket, Inner::Real);

#[cfg(unix)]
impl std::os::fd::FromRawFd for TcpSocket {
    /// Takes a raw socket, as [`TcpSocket::from_std_stream`] does.
    unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> TcpSocket {
        // SAFETY: the caller gives us an open socket it owns, as `FromRawFd` requires.
        let stream = unsafe { <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        TcpSocket::from_std_stream(stream)
    }
}

#[cfg(unix)]
impl std::os::fd::IntoRawFd for TcpSocket {
    fn into_raw_fd(self) -> std::os::fd::RawFd {
        match self.inner {
            Inner::Real(socket) => socket.into_raw_fd(),
            Inner::Sim(_) => seam::refuse(
                "tokio::net::TcpSocket::into_raw_fd",
                "a simulated socket has no OS descriptor",
            ),
        }
    }
}

impl fmt::Debug for TcpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Real(socket) => socket.fmt(f),
            Inner::Sim(sim) => lock(sim).fmt(f),
        }
    }
}
