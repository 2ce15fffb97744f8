//! `UnixStream`, `UnixListener` and `UnixDatagram`: tokio's, refused inside a simulation.
//!
//! A Unix-domain socket is a file on the host, not an address on the simulated network: a
//! simulated node that opened one would talk to real processes, outside the simulation's clock
//! and faults (and tokio's own sockets need a tokio runtime, which a simulation does not run).
//! So every call that makes one (`connect`, `bind`, `pair`, `unbound`, `from_std`) fails the
//! run inside a simulation with a message naming it; outside one, each type is tokio's, wrapped
//! so that those calls can be switched. A socket made outside can only be used outside.
//!
//! The wrappers dereference to tokio's sockets, so every method that borrows the socket
//! (readiness, `try_read`, addresses, credentials, `split`) is tokio's own, unchanged; the
//! ones that take or make a socket by value are written out here, `into_split` included: its
//! owned halves are wrappers too, so that `reunite` gives back this module's `UnixStream`.

use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use real::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::seam;

const INSTEAD: &str = "a Unix-domain socket is a file on the host, outside the simulated \
     network; connect simulated nodes with tokio::net::TcpStream/TcpListener or UdpSocket \
     (node names resolve), or with crashtest::net";

/// Fails the running simulation, if any, because `call` makes a Unix-domain socket.
#[track_caller]
fn refuse_inside(call: &str) {
    if seam::sim().is_some() {
        seam::refuse(call, INSTEAD);
    }
}

/// Implements tokio's `AsyncRead` or `AsyncWrite` for a wrapper by handing each call to the
/// tokio type in its `real` field.
macro_rules! forward_io {
    ($ty:ident: $($io:ident),+) => {
        $( forward_io!(@one $io, $ty); )+
    };
    (@one AsyncRead, $ty:ident) => {
        impl AsyncRead for $ty {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                Pin::new(&mut self.get_mut().real).poll_read(cx, buf)
            }
        }
    };
    (@one AsyncWrite, $ty:ident) => {
        impl AsyncWrite for $ty {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut self.get_mut().real).poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                bufs: &[io::IoSlice<'_>],
            ) -> Poll<io::Result<usize>> {
                Pin::new(&mut self.get_mut().real).poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                self.real.is_write_vectored()
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut self.get_mut().real).poll_flush(cx)
            }

            fn poll_shutdown(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<io::Result<()>> {
                Pin::new(&mut self.get_mut().real).poll_shutdown(cx)
            }
        }
    };
}

/// Wraps tokio's socket type `$real` as `$ty`, dereferencing to it.
macro_rules! wrapper {
    ($ty:ident, $real:ty) => {
        impl Deref for $ty {
            type Target = $real;

            fn deref(&self) -> &$real {
                &self.real
            }
        }

        impl DerefMut for $ty {
            fn deref_mut(&mut self) -> &mut $real {
                &mut self.real
            }
        }

        impl AsRawFd for $ty {
            fn as_raw_fd(&self) -> RawFd {
                self.real.as_raw_fd()
            }
        }

        impl AsFd for $ty {
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.real.as_fd()
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.real.fmt(f)
            }
        }
    };
}

/// A Unix-domain stream, like `tokio::net::UnixStream`; refused inside a simulation.
///
/// ```
/// use crashtest_tokio as tokio;
/// let failure = crashtest::Sim::new(1).run(async {
///     let _ = tokio::net::UnixStream::connect("/tmp/some.sock").await;
/// }).unwrap_err();
/// assert!(failure.to_string().contains("tokio::net::UnixStream::connect cannot run inside"));
/// ```
pub struct UnixStream {
    real: real::net::UnixStream,
}

wrapper!(UnixStream, real::net::UnixStream);

impl UnixStream {
    /// Connects to the socket at `path`; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn connect<P: AsRef<Path>>(path: P) -> impl Future<Output = io::Result<UnixStream>> {
        refuse_inside("tokio::net::UnixStream::connect");
        async move {
            let real = real::net::UnixStream::connect(path).await?;
            Ok(UnixStream { real })
        }
    }

    /// Connects to the socket named by `socket_addr`; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(real_tokio_1_53)]
    #[track_caller]
    pub fn connect_addr(
        socket_addr: &real::net::unix::SocketAddr,
    ) -> impl Future<Output = io::Result<UnixStream>> + '_ {
        refuse_inside("tokio::net::UnixStream::connect_addr");
        async move {
            let real = real::net::UnixStream::connect_addr(socket_addr).await?;
            Ok(UnixStream { real })
        }
    }

    /// A connected pair of streams; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        refuse_inside("tokio::net::UnixStream::pair");
        let (a, b) = real::net::UnixStream::pair()?;
        Ok((UnixStream { real: a }, UnixStream { real: b }))
    }

    /// Wraps std's stream; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        refuse_inside("tokio::net::UnixStream::from_std");
        real::net::UnixStream::from_std(stream).map(|real| UnixStream { real })
    }

    /// std's stream underneath.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixStream> {
        self.real.into_std()
    }

    /// Splits the stream into owned halves, which [`OwnedReadHalf::reunite`] puts back
    /// together into this type.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let (a, _b) = tokio::net::UnixStream::pair().unwrap();
    /// let (read, write) = a.into_split();
    /// let a: tokio::net::UnixStream = read.reunite(write).unwrap();
    /// assert!(a.peer_addr().is_ok());
    /// # });
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let (read, write) = self.real.into_split();
        (OwnedReadHalf { real: read }, OwnedWriteHalf { real: write })
    }
}

/// The reading half of a [`UnixStream`], like `tokio::net::unix::OwnedReadHalf`.
pub struct OwnedReadHalf {
    real: real::net::unix::OwnedReadHalf,
}

/// The writing half of a [`UnixStream`], like `tokio::net::unix::OwnedWriteHalf`; dropping
/// it shuts the stream down for writing.
pub struct OwnedWriteHalf {
    real: real::net::unix::OwnedWriteHalf,
}

/// Two halves that are not from the same stream, handed back, as tokio's
/// `net::unix::ReuniteError`.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves that are not from the same socket")
    }
}

impl std::error::Error for ReuniteError {}

impl OwnedReadHalf {
    /// Puts the halves back together into the stream they were split from.
    ///
    /// # Errors
    ///
    /// [`ReuniteError`], holding both halves, if they are not from the same stream.
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<UnixStream, ReuniteError> {
        match self.real.reunite(other.real) {
            Ok(real) => Ok(UnixStream { real }),
            Err(real::net::unix::ReuniteError(read, write)) => Err(ReuniteError(
                OwnedReadHalf { real: read },
                OwnedWriteHalf { real: write },
            )),
        }
    }
}

impl OwnedWriteHalf {
    /// Puts the halves back together into the stream they were split from.
    ///
    /// # Errors
    ///
    /// As [`OwnedReadHalf::reunite`].
    pub fn reunite(self, other: OwnedReadHalf) -> Result<UnixStream, ReuniteError> {
        other.reunite(self)
    }
}

/// The halves dereference to tokio's, for the calls that borrow them (readiness, `try_read`,
/// `try_write`, addresses).
macro_rules! deref_half {
    ($ty:ident, $real:ty) => {
        impl Deref for $ty {
            type Target = $real;

            fn deref(&self) -> &$real {
                &self.real
            }
        }

        impl DerefMut for $ty {
            fn deref_mut(&mut self) -> &mut $real {
                &mut self.real
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.real.fmt(f)
            }
        }
    };
}

deref_half!(OwnedReadHalf, real::net::unix::OwnedReadHalf);
deref_half!(OwnedWriteHalf, real::net::unix::OwnedWriteHalf);
forward_io!(OwnedReadHalf: AsyncRead);
forward_io!(OwnedWriteHalf: AsyncWrite);

impl TryFrom<std::os::unix::net::UnixStream> for UnixStream {
    type Error = io::Error;

    #[track_caller]
    fn try_from(stream: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        UnixStream::from_std(stream)
    }
}

forward_io!(UnixStream: AsyncRead, AsyncWrite);

/// A Unix-domain listener, like `tokio::net::UnixListener`; refused inside a simulation.
///
/// ```
/// use crashtest_tokio as tokio;
/// let failure = crashtest::Sim::new(1).run(async {
///     let _ = tokio::net::UnixListener::bind("/tmp/some.sock");
/// }).unwrap_err();
/// assert!(failure.to_string().contains("tokio::net::UnixListener::bind cannot run inside"));
/// ```
pub struct UnixListener {
    real: real::net::UnixListener,
}

wrapper!(UnixListener, real::net::UnixListener);

impl UnixListener {
    /// Binds a listener at `path`; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        refuse_inside("tokio::net::UnixListener::bind");
        real::net::UnixListener::bind(path).map(|real| UnixListener { real })
    }

    /// Binds a listener to the socket address `socket_addr`; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(real_tokio_1_53)]
    #[track_caller]
    pub fn bind_addr(socket_addr: &real::net::unix::SocketAddr) -> io::Result<UnixListener> {
        refuse_inside("tokio::net::UnixListener::bind_addr");
        real::net::UnixListener::bind_addr(socket_addr).map(|real| UnixListener { real })
    }

    /// Wraps std's listener; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        refuse_inside("tokio::net::UnixListener::from_std");
        real::net::UnixListener::from_std(listener).map(|real| UnixListener { real })
    }

    /// std's listener underneath.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixListener> {
        self.real.into_std()
    }

    /// Accepts the next connection.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn accept(&self) -> io::Result<(UnixStream, real::net::unix::SocketAddr)> {
        let (real, addr) = self.real.accept().await?;
        Ok((UnixStream { real }, addr))
    }

    /// Polls for the next connection.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(UnixStream, real::net::unix::SocketAddr)>> {
        self.real
            .poll_accept(cx)
            .map_ok(|(real, addr)| (UnixStream { real }, addr))
    }
}

impl TryFrom<std::os::unix::net::UnixListener> for UnixListener {
    type Error = io::Error;

    #[track_caller]
    fn try_from(listener: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        UnixListener::from_std(listener)
    }
}

/// A Unix-domain datagram socket, like `tokio::net::UnixDatagram`; refused inside a
/// simulation.
///
/// ```
/// use crashtest_tokio as tokio;
/// let failure = crashtest::Sim::new(1).run(async {
///     let _ = tokio::net::UnixDatagram::unbound();
/// }).unwrap_err();
/// assert!(failure.to_string().contains("tokio::net::UnixDatagram::unbound cannot run inside"));
/// ```
pub struct UnixDatagram {
    real: real::net::UnixDatagram,
}

wrapper!(UnixDatagram, real::net::UnixDatagram);

impl UnixDatagram {
    /// Binds a socket at `path`; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixDatagram> {
        refuse_inside("tokio::net::UnixDatagram::bind");
        real::net::UnixDatagram::bind(path).map(|real| UnixDatagram { real })
    }

    /// A connected pair of sockets; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        refuse_inside("tokio::net::UnixDatagram::pair");
        let (a, b) = real::net::UnixDatagram::pair()?;
        Ok((UnixDatagram { real: a }, UnixDatagram { real: b }))
    }

    /// A socket bound to no path; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn unbound() -> io::Result<UnixDatagram> {
        refuse_inside("tokio::net::UnixDatagram::unbound");
        real::net::UnixDatagram::unbound().map(|real| UnixDatagram { real })
    }

    /// Wraps std's socket; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn from_std(datagram: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        refuse_inside("tokio::net::UnixDatagram::from_std");
        real::net::UnixDatagram::from_std(datagram).map(|real| UnixDatagram { real })
    }

    /// std's socket underneath.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn into_std(self) -> io::Result<std::os::unix::net::UnixDatagram> {
        self.real.into_std()
    }
}

impl TryFrom<std::os::unix::net::UnixDatagram> for UnixDatagram {
    type Error = io::Error;

    #[track_caller]
    fn try_from(datagram: std::os::unix::net::UnixDatagram) -> io::Result<UnixDatagram> {
        UnixDatagram::from_std(datagram)
    }
}
