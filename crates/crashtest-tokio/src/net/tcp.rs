//! `tokio::net::tcp`: the halves of a TCP stream, tokio's or simulated.
//!
//! Simulated halves share their stream's end of the connection. As with tokio, dropping an
//! owned write half shuts the write direction down (unless it is `forget`-ten or reunited),
//! and shutting a write half down sends a FIN while reads go on.

use std::error::Error;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crashtest_hooks::net::TcpConn;
use real::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};

use super::TcpStream;
use super::stream::{peek_conn, poll_peek_conn, poll_read_conn, ready_conn, try_conn};

/// The read half of [`TcpStream::split`], like `tokio::net::tcp::ReadHalf`.
#[derive(Debug)]
pub struct ReadHalf<'a>(Borrowed<'a, real::net::tcp::ReadHalf<'a>>);

/// The write half of [`TcpStream::split`], like `tokio::net::tcp::WriteHalf`.
#[derive(Debug)]
pub struct WriteHalf<'a>(Borrowed<'a, real::net::tcp::WriteHalf<'a>>);

enum Borrowed<'a, R> {
    Real(R),
    Sim(&'a dyn TcpConn),
}

impl<R: fmt::Debug> fmt::Debug for Borrowed<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Borrowed::Real(half) => half.fmt(f),
            Borrowed::Sim(conn) => conn.fmt(f),
        }
    }
}

/// The constructors and address accessors of a half that borrows its stream.
macro_rules! borrowed_half {
    ($($half:ident => $real:ty;)*) => {$(
        impl<'a> $half<'a> {
            pub(super) fn real(half: $real) -> $half<'a> {
                $half(Borrowed::Real(half))
            }

            pub(super) fn sim(conn: &'a dyn TcpConn) -> $half<'a> {
                $half(Borrowed::Sim(conn))
            }

            /// The stream's local address.
            ///
            /// # Errors
            ///
            /// tokio's.
            pub fn local_addr(&self) -> io::Result<SocketAddr> {
                match &self.0 {
                    Borrowed::Real(half) => half.local_addr(),
                    Borrowed::Sim(conn) => Ok(conn.local_addr()),
                }
            }

            /// The stream's peer address.
            ///
            /// # Errors
            ///
            /// tokio's.
            pub fn peer_addr(&self) -> io::Result<SocketAddr> {
                match &self.0 {
                    Borrowed::Real(half) => half.peer_addr(),
                    Borrowed::Sim(conn) => Ok(conn.peer_addr()),
                }
            }
        }
    )*};
}

borrowed_half! {
    ReadHalf => real::net::tcp::ReadHalf<'a>;
    WriteHalf => real::net::tcp::WriteHalf<'a>;
}

/// One half's side of its connection: tokio's half, or the simulated connection.
enum Side<'s, R> {
    Real(&'s R),
    Sim(&'s dyn TcpConn),
}

impl<'a> ReadHalf<'a> {
    fn side(&self) -> Side<'_, real::net::tcp::ReadHalf<'a>> {
        match &self.0 {
            Borrowed::Real(half) => Side::Real(half),
            Borrowed::Sim(conn) => Side::Sim(*conn),
        }
    }
}

impl<'a> WriteHalf<'a> {
    fn side(&self) -> Side<'_, real::net::tcp::WriteHalf<'a>> {
        match &self.0 {
            Borrowed::Real(half) => Side::Real(half),
            Borrowed::Sim(conn) => Side::Sim(*conn),
        }
    }
}

impl OwnedReadHalf {
    fn side(&self) -> Side<'_, real::net::tcp::OwnedReadHalf> {
        match &self.inner {
            OwnedRead::Real(half) => Side::Real(half),
            OwnedRead::Sim(conn) => Side::Sim(&**conn),
        }
    }
}

impl OwnedWriteHalf {
    fn side(&self) -> Side<'_, real::net::tcp::OwnedWriteHalf> {
        match &self.inner {
            OwnedWrite::Real(half) => Side::Real(half),
            OwnedWrite::Sim(sim) => Side::Sim(&*sim.conn),
        }
    }
}

/// The `try_` reads and the readiness calls of a read half, as the stream's.
macro_rules! read_calls {
    ($([$($generics:tt)*] $half:ty, $name:literal;)*) => {$(
        impl $($generics)* $half {
            /// Reads what is there now, or fails with `WouldBlock`.
            ///
            /// # Errors
            ///
            /// `WouldBlock` if nothing is there yet; the connection's error.
            pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
                match self.side() {
                    Side::Real(half) => half.try_read(buf),
                    Side::Sim(conn) => try_conn::read(conn, buf),
                }
            }

            /// Reads what is there now into the first non-empty buffer, or fails with
            /// `WouldBlock`.
            ///
            /// # Errors
            ///
            /// `WouldBlock` if nothing is there yet; the connection's error.
            pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
                match self.side() {
                    Side::Real(half) => half.try_read_vectored(bufs),
                    Side::Sim(conn) => try_conn::read_vectored(conn, bufs),
                }
            }

            /// Reads what is there now into `buf`'s spare capacity, or fails with
            /// `WouldBlock`.
            ///
            /// # Errors
            ///
            /// `WouldBlock` if nothing is there yet; the connection's error.
            pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
                match self.side() {
                    Side::Real(half) => half.try_read_buf(buf),
                    Side::Sim(conn) => try_conn::read_buf(conn, buf),
                }
            }

            readiness_calls!($name, readable, READABLE);
        }
    )*};
}

/// A half's readiness calls, `ready` and `$wait` (`readable` or `writable`), as the stream's.
macro_rules! readiness_calls {
    ($name:literal, $wait:ident, $interest:ident) => {
        /// Waits until the stream is ready for a direction `interest` asks for, and says
        /// which (only those asked for).
        ///
        /// # Errors
        ///
        /// tokio's.
        pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
            match self.side() {
                Side::Real(half) => half.ready(interest).await,
                Side::Sim(conn) => {
                    ready_conn(conn, interest, concat!("tokio::net::tcp::", $name, "::ready")).await
                }
            }
        }

        #[doc = concat!("Waits until the stream is ", stringify!($wait), ", as the stream's `", stringify!($wait), "`.")]
        ///
        /// # Errors
        ///
        /// tokio's.
        pub async fn $wait(&self) -> io::Result<()> {
            match self.side() {
                Side::Real(half) => half.$wait().await,
                Side::Sim(conn) => {
                    let call = concat!("tokio::net::tcp::", $name, "::", stringify!($wait));
                    ready_conn(conn, Interest::$interest, call).await.map(drop)
                }
            }
        }
    };
}

/// The `try_` writes and the readiness calls of a write half, as the stream's.
macro_rules! write_calls {
    ($([$($generics:tt)*] $half:ty, $name:literal;)*) => {$(
        impl $($generics)* $half {
            /// Writes what fits now, or fails with `WouldBlock`.
            ///
            /// # Errors
            ///
            /// `WouldBlock` if the send buffer is full; the connection's error.
            pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
                match self.side() {
                    Side::Real(half) => half.try_write(buf),
                    Side::Sim(conn) => try_conn::write(conn, buf),
                }
            }

            /// Writes what fits now from the first non-empty buffer, or fails with
            /// `WouldBlock`.
            ///
            /// # Errors
            ///
            /// `WouldBlock` if the send buffer is full; the connection's error.
            pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
                match self.side() {
                    Side::Real(half) => half.try_write_vectored(bufs),
                    Side::Sim(conn) => try_conn::write_vectored(conn, bufs),
                }
            }

            readiness_calls!($name, writable, WRITABLE);
        }
    )*};
}

read_calls! {
    [<'a>] ReadHalf<'a>, "ReadHalf";
    [] OwnedReadHalf, "OwnedReadHalf";
}

impl ReadHalf<'_> {
    /// Polls a read that leaves the bytes to be read: how many it copied into `buf`.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_peek(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        match &mut self.0 {
            Borrowed::Real(half) => half.poll_peek(cx, buf),
            Borrowed::Sim(conn) => poll_peek_conn(*conn, cx, buf),
        }
    }

    /// Copies arrived bytes into `buf` and leaves them to be read, waiting as a read does.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            Borrowed::Real(half) => half.peek(buf).await,
            Borrowed::Sim(conn) => peek_conn(*conn, buf).await,
        }
    }
}

write_calls! {
    [<'a>] WriteHalf<'a>, "WriteHalf";
    [] OwnedWriteHalf, "OwnedWriteHalf";
}

impl AsyncRead for ReadHalf<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Borrowed::Real(half) => Pin::new(half).poll_read(cx, buf),
            Borrowed::Sim(conn) => poll_read_conn(*conn, cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            Borrowed::Real(half) => Pin::new(half).poll_write(cx, buf),
            Borrowed::Sim(conn) => conn.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Borrowed::Real(half) => Pin::new(half).poll_flush(cx),
            Borrowed::Sim(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            Borrowed::Real(half) => Pin::new(half).poll_shutdown(cx),
            Borrowed::Sim(conn) => {
                conn.shutdown();
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// The owned read half of [`TcpStream::into_split`], like `tokio::net::tcp::OwnedReadHalf`.
#[derive(Debug)]
pub struct OwnedReadHalf {
    inner: OwnedRead,
}

#[derive(Debug)]
enum OwnedRead {
    Real(real::net::tcp::OwnedReadHalf),
    Sim(Arc<dyn TcpConn>),
}

/// The owned write half of [`TcpStream::into_split`], like
/// `tokio::net::tcp::OwnedWriteHalf`.
#[derive(Debug)]
pub struct OwnedWriteHalf {
    inner: OwnedWrite,
}

#[derive(Debug)]
enum OwnedWrite {
    Real(real::net::tcp::OwnedWriteHalf),
    Sim(SimWrite),
}

/// A simulated owned write half; shuts the write direction down when dropped, unless told not
/// to.
#[derive(Debug)]
struct SimWrite {
    conn: Arc<dyn TcpConn>,
    shutdown_on_drop: bool,
}

impl Drop for SimWrite {
    fn drop(&mut self) {
        if self.shutdown_on_drop {
            self.conn.shutdown();
        }
    }
}

/// The halves given to `reunite` came from different streams; here they are back.
#[derive(Debug)]
pub struct ReuniteError(pub OwnedReadHalf, pub OwnedWriteHalf);

impl fmt::Display for ReuniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tried to reunite halves that are not from the same socket")
    }
}

impl Error for ReuniteError {}

impl OwnedReadHalf {
    pub(super) fn real(half: real::net::tcp::OwnedReadHalf) -> OwnedReadHalf {
        OwnedReadHalf {
            inner: OwnedRead::Real(half),
        }
    }

    pub(super) fn sim(conn: Arc<dyn TcpConn>) -> OwnedReadHalf {
        OwnedReadHalf {
            inner: OwnedRead::Sim(conn),
        }
    }

    /// Puts the stream back together.
    ///
    /// # Errors
    ///
    /// [`ReuniteError`] if the halves are of different streams.
    pub fn reunite(self, other: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
        reunite(self, other)
    }

    /// The stream's local address.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedRead::Real(half) => half.local_addr(),
            OwnedRead::Sim(conn) => Ok(conn.local_addr()),
        }
    }

    /// The stream's peer address.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedRead::Real(half) => half.peer_addr(),
            OwnedRead::Sim(conn) => Ok(conn.peer_addr()),
        }
    }

    /// Copies arrived bytes into `buf` and leaves them to be read, waiting as a read does.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn peek(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.inner {
            OwnedRead::Real(half) => half.peek(buf).await,
            OwnedRead::Sim(conn) => peek_conn(&**conn, buf).await,
        }
    }

    /// Polls a read that leaves the bytes to be read: how many it copied into `buf`.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_peek(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        match &mut self.inner {
            OwnedRead::Real(half) => half.poll_peek(cx, buf),
            OwnedRead::Sim(conn) => poll_peek_conn(&**conn, cx, buf),
        }
    }
}

impl OwnedWriteHalf {
    pub(super) fn real(half: real::net::tcp::OwnedWriteHalf) -> OwnedWriteHalf {
        OwnedWriteHalf {
            inner: OwnedWrite::Real(half),
        }
    }

    pub(super) fn sim(conn: Arc<dyn TcpConn>) -> OwnedWriteHalf {
        OwnedWriteHalf {
            inner: OwnedWrite::Sim(SimWrite {
                conn,
                shutdown_on_drop: true,
            }),
        }
    }

    /// Puts the stream back together.
    ///
    /// # Errors
    ///
    /// [`ReuniteError`] if the halves are of different streams.
    pub fn reunite(self, other: OwnedReadHalf) -> Result<TcpStream, ReuniteError> {
        reunite(other, self)
    }

    /// Drops the half without shutting the write direction down.
    pub fn forget(self) {
        match self.inner {
            OwnedWrite::Real(half) => half.forget(),
            OwnedWrite::Sim(mut sim) => sim.shutdown_on_drop = false,
        }
    }

    /// The stream's local address.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedWrite::Real(half) => half.local_addr(),
            OwnedWrite::Sim(sim) => Ok(sim.conn.local_addr()),
        }
    }

    /// The stream's peer address.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            OwnedWrite::Real(half) => half.peer_addr(),
            OwnedWrite::Sim(sim) => Ok(sim.conn.peer_addr()),
        }
    }
}

fn reunite(read: OwnedReadHalf, write: OwnedWriteHalf) -> Result<TcpStream, ReuniteError> {
    match (read.inner, write.inner) {
        (OwnedRead::Real(read), OwnedWrite::Real(write)) => read
            .reunite(write)
            .map(|stream| TcpStream {
                inner: super::stream::Inner::Real(stream),
            })
            .map_err(|real::net::tcp::ReuniteError(read, write)| {
                ReuniteError(OwnedReadHalf::real(read), OwnedWriteHalf::real(write))
            }),
        (OwnedRead::Sim(conn), OwnedWrite::Sim(mut write)) if Arc::ptr_eq(&conn, &write.conn) => {
            write.shutdown_on_drop = false;
            Ok(TcpStream::sim(conn, false, None))
        }
        (read, write) => Err(ReuniteError(
            OwnedReadHalf { inner: read },
            OwnedWriteHalf { inner: write },
        )),
    }
}

impl AsyncRead for OwnedReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            OwnedRead::Real(half) => Pin::new(half).poll_read(cx, buf),
            OwnedRead::Sim(conn) => poll_read_conn(&**conn, cx, buf),
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
            OwnedWrite::Real(half) => Pin::new(half).poll_write(cx, buf),
            OwnedWrite::Sim(sim) => sim.conn.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            OwnedWrite::Real(half) => Pin::new(half).poll_flush(cx),
            OwnedWrite::Sim(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            OwnedWrite::Real(half) => Pin::new(half).poll_shutdown(cx),
            OwnedWrite::Sim(sim) => {
                sim.conn.shutdown();
                Poll::Ready(Ok(()))
            }
        }
    }
}
