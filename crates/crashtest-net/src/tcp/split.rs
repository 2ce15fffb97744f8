//! The halves of a `TcpStream`: owned (movable to other tasks) and borrowed, as in tokio.
//!
//! In a simulation both owned halves hold the stream's shared [`Socket`]; the connection's end
//! closes when the last of them goes. Dropping an `OwnedWriteHalf` shuts the write direction
//! down (a FIN), as tokio's does. Outside a simulation the halves are tokio's own.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp as real;

use super::stream::{Socket, TcpStream};

pub(super) fn owned(socket: Arc<Socket>) -> (OwnedReadHalf, OwnedWriteHalf) {
    (
        OwnedReadHalf {
            inner: OwnedRead::Sim(Arc::clone(&socket)),
        },
        OwnedWriteHalf {
            inner: OwnedWrite::Sim(WriteSide {
                socket,
                shutdown_on_drop: true,
            }),
        },
    )
}

pub(super) fn owned_real(stream: tokio::net::TcpStream) -> (OwnedReadHalf, OwnedWriteHalf) {
    let (read, write) = stream.into_split();
    (
        OwnedReadHalf {
            inner: OwnedRead::Real(read),
        },
        OwnedWriteHalf {
            inner: OwnedWrite::Real(write),
        },
    )
}

pub(super) fn borrowed(socket: &Socket) -> (ReadHalf<'_>, WriteHalf<'_>) {
    (
        ReadHalf {
            inner: BorrowedRead::Sim(socket),
        },
        WriteHalf {
            inner: BorrowedWrite::Sim(socket),
        },
    )
}

pub(super) fn borrowed_real(stream: &mut tokio::net::TcpStream) -> (ReadHalf<'_>, WriteHalf<'_>) {
    let (read, write) = stream.split();
    (
        ReadHalf {
            inner: BorrowedRead::Real(read),
        },
        WriteHalf {
            inner: BorrowedWrite::Real(write),
        },
    )
}

/// The read half of a [`TcpStream`], from [`TcpStream::into_split`].
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let client = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
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
pub struct OwnedReadHalf {
    inner: OwnedRead,
}

enum OwnedRead {
    Sim(Arc<Socket>),
    Real(real::OwnedReadHalf),
}

/// The write half of a [`TcpStream`], from [`TcpStream::into_split`]. Dropping it shuts the
/// write direction down.
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// use tokio::io::AsyncWriteExt;
/// let _listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let client = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (_read, mut write) = client.into_split();
/// write.write_all(b"to nobody yet").await.unwrap();
/// # }).unwrap();
/// ```
pub struct OwnedWriteHalf {
    inner: OwnedWrite,
}

enum OwnedWrite {
    Sim(WriteSide),
    Real(real::OwnedWriteHalf),
}

/// The simulated write side: shuts the write direction down when dropped, unless reunited.
struct WriteSide {
    socket: Arc<Socket>,
    shutdown_on_drop: bool,
}

impl Drop for WriteSide {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            self.socket.shutdown();
        }
    }
}

/// The halves given to [`OwnedReadHalf::reunite`] were not split from the same stream; it
/// gives them back.
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let a = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let b = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (a_read, a_write) = a.into_split();
/// let (b_read, b_write) = b.into_split();
/// let crashtest_net::tcp::ReuniteError(a_read, b_write) = a_read.reunite(b_write).unwrap_err();
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

impl fmt::Debug for OwnedReadHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            OwnedRead::Sim(socket) => f
                .debug_struct("OwnedReadHalf")
                .field("local", &socket.local())
                .field("peer", &socket.peer())
                .finish(),
            OwnedRead::Real(half) => half.fmt(f),
        }
    }
}

impl fmt::Debug for OwnedWriteHalf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            OwnedWrite::Sim(side) => f
                .debug_struct("OwnedWriteHalf")
                .field("local", &side.socket.local())
                .field("peer", &side.socket.peer())
                .finish(),
            OwnedWrite::Real(half) => half.fmt(f),
        }
    }
}

impl OwnedReadHalf {
    /// Joins the halves back into the stream they came from.
    ///
    /// # Errors
    ///
    /// Gives both halves back if they come from different streams.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let a = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let b = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (a_read, _a_write) = a.into_split();
    /// let (_b_read, b_write) = b.into_split();
    /// assert!(a_read.reunite(b_write).is_err());
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        match (self.inner, other.inner) {
            (OwnedRead::Sim(read), OwnedWrite::Sim(mut write))
                if Arc::ptr_eq(&read, &write.socket) =>
            {
                write.shutdown_on_drop = false;
                Ok(TcpStream::from_socket(read))
            }
            (OwnedRead::Real(read), OwnedWrite::Real(write)) => match read.reunite(write) {
                Ok(stream) => Ok(TcpStream::from_tokio(stream)),
                Err(real::ReuniteError(read, write)) => Err(ReuniteError(
                    OwnedReadHalf {
                        inner: OwnedRead::Real(read),
                    },
                    OwnedWriteHalf {
                        inner: OwnedWrite::Real(write),
                    },
                )),
            },
            (read, write) => Err(ReuniteError(
                OwnedReadHalf { inner: read },
                OwnedWriteHalf { inner: write },
            )),
        }
    }

    /// The peer's address.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (read, _write) = s.into_split();
    /// assert_eq!(read.peer_addr().unwrap().port(), 1);
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedRead::Sim(socket) => Ok(socket.peer()),
            OwnedRead::Real(half) => half.peer_addr(),
        }
    }

    /// This end's address.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (read, _write) = s.into_split();
    /// assert!(read.local_addr().unwrap().ip().is_loopback());
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedRead::Sim(socket) => Ok(socket.local()),
            OwnedRead::Real(half) => half.local_addr(),
        }
    }
}

impl OwnedWriteHalf {
    /// Joins the halves back into the stream they came from; see [`OwnedReadHalf::reunite`].
    ///
    /// # Errors
    ///
    /// Gives both halves back if they come from different streams.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (read, write) = s.into_split();
    /// assert!(write.reunite(read).is_ok());
    /// # }).unwrap();
    /// ```
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        other.reunite(self)
    }

    /// The peer's address.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (_read, write) = s.into_split();
    /// assert_eq!(write.peer_addr().unwrap().port(), 1);
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedWrite::Sim(side) => Ok(side.socket.peer()),
            OwnedWrite::Real(half) => half.peer_addr(),
        }
    }

    /// This end's address.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (_read, write) = s.into_split();
    /// assert!(write.local_addr().unwrap().ip().is_loopback());
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedWrite::Sim(side) => Ok(side.socket.local()),
            OwnedWrite::Real(half) => half.local_addr(),
        }
    }
}

impl AsyncRead for OwnedReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            OwnedRead::Sim(socket) => socket.poll_read(cx, buf),
            OwnedRead::Real(half) => Pin::new(half).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for OwnedWriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            OwnedWrite::Sim(side) => side.socket.poll_write(cx, buf),
            OwnedWrite::Real(half) => Pin::new(half).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            OwnedWrite::Sim(_) => Poll::Ready(Ok(())),
            OwnedWrite::Real(half) => Pin::new(half).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            OwnedWrite::Sim(side) => {
                side.socket.shutdown();
                Poll::Ready(Ok(()))
            }
            OwnedWrite::Real(half) => Pin::new(half).poll_shutdown(cx),
        }
    }
}

/// The borrowed read half of a [`TcpStream`], from [`TcpStream::split`].
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let mut s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (read, _write) = s.split();
/// # drop(read);
/// # }).unwrap();
/// ```
pub struct ReadHalf<'a> {
    inner: BorrowedRead<'a>,
}

enum BorrowedRead<'a> {
    Sim(&'a Socket),
    Real(real::ReadHalf<'a>),
}

/// The borrowed write half of a [`TcpStream`], from [`TcpStream::split`].
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// use tokio::io::AsyncWriteExt;
/// # let _l = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
/// let mut s = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
/// let (_read, mut write) = s.split();
/// write.write_all(b"x").await.unwrap();
/// # }).unwrap();
/// ```
pub struct WriteHalf<'a> {
    inner: BorrowedWrite<'a>,
}

enum BorrowedWrite<'a> {
    Sim(&'a Socket),
    Real(real::WriteHalf<'a>),
}

impl fmt::Debug for ReadHalf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            BorrowedRead::Sim(socket) => f
                .debug_struct("ReadHalf")
                .field("peer", &socket.peer())
                .finish(),
            BorrowedRead::Real(half) => half.fmt(f),
        }
    }
}

impl fmt::Debug for WriteHalf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            BorrowedWrite::Sim(socket) => f
                .debug_struct("WriteHalf")
                .field("peer", &socket.peer())
                .finish(),
            BorrowedWrite::Real(half) => half.fmt(f),
        }
    }
}

impl AsyncRead for ReadHalf<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            BorrowedRead::Sim(socket) => socket.poll_read(cx, buf),
            BorrowedRead::Real(half) => Pin::new(half).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            BorrowedWrite::Sim(socket) => socket.poll_write(cx, buf),
            BorrowedWrite::Real(half) => Pin::new(half).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            BorrowedWrite::Sim(_) => Poll::Ready(Ok(())),
            BorrowedWrite::Real(half) => Pin::new(half).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            BorrowedWrite::Sim(socket) => {
                socket.shutdown();
                Poll::Ready(Ok(()))
            }
            BorrowedWrite::Real(half) => Pin::new(half).poll_shutdown(cx),
        }
    }
}
