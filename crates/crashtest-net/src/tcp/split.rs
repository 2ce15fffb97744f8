//! The halves of a `TcpStream`: owned (movable to other tasks) and borrowed, as in tokio.
//!
//! In a simulation every half holds the stream's [`Shared`] socket (a borrowed half too: it
//! costs a reference count, and it keeps the halves' simulated side one type); the
//! connection's end closes when the last holder goes. Dropping an `OwnedWriteHalf` shuts the
//! write direction down (a FIN), as tokio's does. Outside a simulation the halves are tokio's
//! own.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::SocketAddr;

use crashtest_io::{SimOrReal, forward_async_io};
use delegate::delegate;
use tokio::net::tcp as real;

use super::stream::{Shared, TcpStream};

/// The simulated sides of a stream's owned halves: both hold its socket.
pub(super) fn owned(socket: Shared) -> (Shared, WriteSide) {
    let write = WriteSide {
        socket: socket.clone(),
        shutdown_on_drop: true,
    };
    (socket, write)
}

/// The read half of a [`TcpStream`], from [`TcpStream::into_split`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let client = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (server, _) = listener.accept().await.unwrap();
/// let (mut read, _write) = server.into_split();
/// let (_, mut client_write) = client.into_split();
/// client_write.write_all(b"hi").await.unwrap();
/// drop(client_write); // shuts the client's write direction down
/// let mut got = Vec::new();
/// read.read_to_end(&mut got).await.unwrap();
/// assert_eq!(got, b"hi");
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct OwnedReadHalf {
    inner: SimOrReal<Shared, real::OwnedReadHalf>,
}

forward_async_io!(OwnedReadHalf => inner: AsyncRead);

/// The write half of a [`TcpStream`], from [`TcpStream::into_split`]. Dropping it shuts the
/// write direction down.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// use tokio::io::AsyncWriteExt;
/// let _listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let client = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (_read, mut write) = client.into_split();
/// write.write_all(b"to nobody yet").await.unwrap();
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct OwnedWriteHalf {
    inner: SimOrReal<WriteSide, real::OwnedWriteHalf>,
}

forward_async_io!(OwnedWriteHalf => inner: AsyncWrite);

/// The simulated write side: shuts the write direction down when dropped, unless reunited.
#[derive(Debug)]
pub(super) struct WriteSide {
    socket: Shared,
    shutdown_on_drop: bool,
}

impl Drop for WriteSide {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            self.socket.shutdown();
        }
    }
}

forward_async_io!(WriteSide => socket: AsyncWrite);

/// The halves given to [`OwnedReadHalf::reunite`] were not split from the same stream; it
/// gives them back.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let a = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let b = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (a_read, a_write) = a.into_split();
/// let (b_read, b_write) = b.into_split();
/// let crashtest::net::tcp::ReuniteError(a_read, b_write) = a_read.reunite(b_write).unwrap_err();
/// assert!(a_read.reunite(a_write).is_ok());
/// assert!(b_read.reunite(b_write).is_ok());
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves that are not from the same socket")
    }
}

impl Error for ReuniteError {}

impl OwnedReadHalf {
    pub(super) fn new(inner: SimOrReal<Shared, real::OwnedReadHalf>) -> OwnedReadHalf {
        OwnedReadHalf { inner }
    }

    /// Joins the halves back into the stream they came from.
    ///
    /// # Errors
    ///
    /// Gives both halves back if they come from different streams.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let a = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let b = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (a_read, _a_write) = a.into_split();
    /// let (_b_read, b_write) = b.into_split();
    /// assert!(a_read.reunite(b_write).is_err());
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        match (self.inner, other.inner) {
            (SimOrReal::Sim(read), SimOrReal::Sim(mut write)) if read.same(&write.socket) => {
                write.shutdown_on_drop = false;
                Ok(TcpStream::from_socket(read))
            }
            (SimOrReal::Real(read), SimOrReal::Real(write)) => match read.reunite(write) {
                Ok(stream) => Ok(TcpStream::from_tokio(stream)),
                Err(real::ReuniteError(read, write)) => Err(ReuniteError(
                    OwnedReadHalf::new(SimOrReal::Real(read)),
                    OwnedWriteHalf::new(SimOrReal::Real(write)),
                )),
            },
            (read, write) => Err(ReuniteError(
                OwnedReadHalf::new(read),
                OwnedWriteHalf::new(write),
            )),
        }
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(socket) => socket,
            SimOrReal::Real(half) => half,
        } {
            /// The peer's address.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
            /// let (read, _write) = s.into_split();
            /// assert_eq!(read.peer_addr().unwrap().port(), 1);
            /// # }).unwrap();
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr>;

            /// This end's address.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
            /// let (read, _write) = s.into_split();
            /// assert!(read.local_addr().unwrap().ip().is_loopback());
            /// # }).unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr>;
        }
    }
}

impl OwnedWriteHalf {
    pub(super) fn new(inner: SimOrReal<WriteSide, real::OwnedWriteHalf>) -> OwnedWriteHalf {
        OwnedWriteHalf { inner }
    }

    /// Joins the halves back into the stream they came from; see [`OwnedReadHalf::reunite`].
    ///
    /// # Errors
    ///
    /// Gives both halves back if they come from different streams.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (read, write) = s.into_split();
    /// assert!(write.reunite(read).is_ok());
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        other.reunite(self)
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(side) => { &side.socket }
            SimOrReal::Real(half) => half,
        } {
            /// The peer's address.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
            /// let (_read, write) = s.into_split();
            /// assert_eq!(write.peer_addr().unwrap().port(), 1);
            /// # }).unwrap();
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr>;

            /// This end's address.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
            /// let (_read, write) = s.into_split();
            /// assert!(write.local_addr().unwrap().ip().is_loopback());
            /// # }).unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr>;
        }
    }
}

/// The borrowed read half of a [`TcpStream`], from [`TcpStream::split`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let mut s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (read, _write) = s.split();
/// # drop(read);
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct ReadHalf<'a> {
    inner: SimOrReal<Shared, real::ReadHalf<'a>>,
}

forward_async_io!(ReadHalf<'_> => inner: AsyncRead);

impl<'a> ReadHalf<'a> {
    pub(super) fn new(inner: SimOrReal<Shared, real::ReadHalf<'a>>) -> ReadHalf<'a> {
        ReadHalf { inner }
    }
}

/// The borrowed write half of a [`TcpStream`], from [`TcpStream::split`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// use tokio::io::AsyncWriteExt;
/// # let _l = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let mut s = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (_read, mut write) = s.split();
/// write.write_all(b"x").await.unwrap();
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct WriteHalf<'a> {
    inner: SimOrReal<Shared, real::WriteHalf<'a>>,
}

forward_async_io!(WriteHalf<'_> => inner: AsyncWrite);

impl<'a> WriteHalf<'a> {
    pub(super) fn new(inner: SimOrReal<Shared, real::WriteHalf<'a>>) -> WriteHalf<'a> {
        WriteHalf { inner }
    }
}
