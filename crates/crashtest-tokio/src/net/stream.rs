//! `TcpStream`: tokio's, or an end of a simulated connection.
//!
//! A simulated stream holds its end of the connection (`crashtest_hooks::net::TcpConn`),
//! shared with its owned halves; the end closes when the last of them drops. Socket options
//! are remembered (the simulated network has no Nagle, no TTL), so code that sets and reads
//! them back sees what it set. Readiness (`ready`, `readable`, `writable`, the `poll_`
//! readiness calls) comes from the simulated connection: readable once bytes arrived or the
//! stream ended or failed, writable while the send buffer has room or once writing would
//! fail, so tokio's loop of `readable().await` and `try_read` works, and never reports
//! readiness that is not there. `peek` copies arrived bytes and leaves them to be read. Raw
//! I/O (`try_io`, `async_io`) is refused inside a simulation, with a message naming the
//! call: a simulated stream has no OS socket to run it on.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use crashtest_hooks::net::{TcpConn, TcpInterest};
use real::io::{AsyncRead, AsyncWrite, Interest, ReadBuf, Ready};

use super::addr::{ToSocketAddrs, first_that_works, resolve_some};
use super::fd::descriptors;
use super::tcp::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::seam;

/// A TCP connection, like `tokio::net::TcpStream`.
///
/// ```
/// use crashtest_tokio as tokio;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// crashtest::Sim::new(1).run(async {
///     crashtest::node::create("echo", || async {
///         let listener = tokio::net::TcpListener::bind("0.0.0.0:7").await.unwrap();
///         let (mut stream, _) = listener.accept().await.unwrap();
///         let (mut reader, mut writer) = stream.split();
///         tokio::io::copy(&mut reader, &mut writer).await.unwrap();
///     });
///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
///     let mut stream = tokio::net::TcpStream::connect("echo:7").await.unwrap();
///     stream.write_all(b"ping").await.unwrap();
///     let mut reply = [0; 4];
///     stream.read_exact(&mut reply).await.unwrap();
///     assert_eq!(&reply, b"ping");
/// }).unwrap();
/// ```
pub struct TcpStream {
    pub(super) inner: Inner,
}

pub(super) enum Inner {
    Real(real::net::TcpStream),
    Sim(SimStream),
}

/// A simulated stream: its end of the connection and the options set on it.
pub(super) struct SimStream {
    pub(super) conn: Arc<dyn TcpConn>,
    nodelay: AtomicBool,
    quickack: AtomicBool,
    ttl: AtomicU32,
}

impl SimStream {
    pub(super) fn new(conn: Arc<dyn TcpConn>, nodelay: bool) -> SimStream {
        SimStream {
            conn,
            nodelay: AtomicBool::new(nodelay),
            quickack: AtomicBool::new(true),
            ttl: AtomicU32::new(64),
        }
    }
}

/// Reads from a simulated connection into tokio's buffer.
pub(super) fn poll_read_conn(
    conn: &dyn TcpConn,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    seam::read_into(buf, |unfilled| {
        conn.poll_read(cx, unfilled).map_ok(|n| (n, ()))
    })
}

/// Peeks at a simulated connection into tokio's buffer; returns how many bytes it copied.
pub(super) fn poll_peek_conn(
    conn: &dyn TcpConn,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<usize>> {
    seam::read_into(buf, |unfilled| {
        conn.poll_peek(cx, unfilled).map_ok(|n| (n, n))
    })
}

/// Copies arrived bytes into `buf` and leaves them to be read, waiting as a read does (the
/// `peek` of the stream and its read halves).
pub(super) async fn peek_conn(conn: &dyn TcpConn, buf: &mut [u8]) -> io::Result<usize> {
    let mut buf = ReadBuf::new(buf);
    poll_fn(|cx| poll_peek_conn(conn, cx, &mut buf)).await
}

/// Waits for the readiness `interest` asks for (the `ready`, `readable` and `writable` of the
/// stream and its halves; see [`poll_ready_conn`]).
pub(super) async fn ready_conn(
    conn: &dyn TcpConn,
    interest: Interest,
    call: &str,
) -> io::Result<Ready> {
    poll_fn(|cx| poll_ready_conn(conn, cx, interest, call)).await
}

/// Polls a simulated connection for the readiness `interest` asks for, as tokio's `ready`
/// reports it: only what was asked for, a closed direction with its readiness.
#[track_caller]
pub(super) fn poll_ready_conn(
    conn: &dyn TcpConn,
    cx: &mut Context<'_>,
    interest: Interest,
    call: &str,
) -> Poll<io::Result<Ready>> {
    let asked = TcpInterest {
        read: interest.is_readable(),
        write: interest.is_writable(),
        error: interest.is_error(),
    };
    if !(asked.read || asked.write || asked.error) {
        seam::refuse(
            call,
            "a simulated connection has no priority data; ask for Interest::READABLE, \
             WRITABLE or ERROR",
        );
    }
    let now = ready!(conn.poll_ready(cx, asked));
    // As epoll reports a socket: readable whenever a read would not wait (an ended or failed
    // stream too, with its closed flag), writable whenever a write would not.
    let mut ready = Ready::EMPTY;
    if asked.read && (now.readable || now.read_closed) {
        ready |= Ready::READABLE;
    }
    if asked.read && now.read_closed {
        ready |= Ready::READ_CLOSED;
    }
    if asked.write && (now.writable || now.write_closed) {
        ready |= Ready::WRITABLE;
    }
    if asked.write && now.write_closed {
        ready |= Ready::WRITE_CLOSED;
    }
    if asked.error && now.error {
        ready |= Ready::ERROR;
    }
    assert!(
        !ready.is_empty(),
        "a connection is ready for something asked for"
    );
    Poll::Ready(Ok(ready))
}

/// Refuses a raw I/O call on a simulated socket.
#[cold]
#[track_caller]
pub(super) fn refuse_raw_io(call: &str) -> io::Error {
    seam::refused_error(
        call,
        "a simulated socket has no OS socket to run raw I/O on; read and write through \
         AsyncRead/AsyncWrite (tokio::io::AsyncReadExt, AsyncWriteExt) or try_read/try_write",
    )
}

/// The `try_` reads and writes of a simulated connection, for the stream and its halves.
/// They never wait and register no waker: a `try_` call leaves nothing behind to be woken
/// (polled with a no-op waker, a `try_read` that found nothing once took the place of
/// another task's `readable().await`).
pub(super) mod try_conn {
    use std::io;

    use bytes::BufMut;
    use crashtest_hooks::net::TcpConn;
    use real::io::ReadBuf;

    use crate::seam;

    /// Reads what is there now into `buf`'s unfilled part, or fails with `WouldBlock`.
    fn read_into(conn: &dyn TcpConn, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
        let read = seam::read_into(buf, |unfilled| {
            std::task::Poll::Ready(conn.try_read(unfilled).map(|n| (n, n)))
        });
        match read {
            std::task::Poll::Ready(result) => result,
            std::task::Poll::Pending => unreachable!("a try_read never waits"),
        }
    }

    /// Reads what is there now, or fails with `WouldBlock`.
    pub(in crate::net) fn read(conn: &dyn TcpConn, buf: &mut [u8]) -> io::Result<usize> {
        read_into(conn, &mut ReadBuf::new(buf))
    }

    /// Reads what is there now into the first non-empty buffer.
    pub(in crate::net) fn read_vectored(
        conn: &dyn TcpConn,
        bufs: &mut [io::IoSliceMut<'_>],
    ) -> io::Result<usize> {
        match bufs.iter_mut().find(|buf| !buf.is_empty()) {
            Some(buf) => read(conn, buf),
            None => Ok(0),
        }
    }

    /// Reads what is there now into `buf`'s spare capacity, and advances it past that.
    pub(in crate::net) fn read_buf<B: BufMut>(
        conn: &dyn TcpConn,
        buf: &mut B,
    ) -> io::Result<usize> {
        // SAFETY: the seam's readers write only initialized bytes (the hooks' contract), so
        // the spare capacity is only written, never read uninitialized.
        let spare = unsafe { buf.chunk_mut().as_uninit_slice_mut() };
        let n = read_into(conn, &mut ReadBuf::uninit(spare))?;
        // SAFETY: the read initialized the first `n` bytes of the spare capacity.
        unsafe { buf.advance_mut(n) };
        Ok(n)
    }

    /// Writes what fits now, or fails with `WouldBlock`.
    pub(in crate::net) fn write(conn: &dyn TcpConn, buf: &[u8]) -> io::Result<usize> {
        conn.try_write(buf)
    }

    /// Writes what fits now from the first non-empty buffer.
    pub(in crate::net) fn write_vectored(
        conn: &dyn TcpConn,
        bufs: &[io::IoSlice<'_>],
    ) -> io::Result<usize> {
        match bufs.iter().find(|buf| !buf.is_empty()) {
            Some(buf) => write(conn, buf),
            None => Ok(0),
        }
    }
}

/// Completes `poll` at once, or fails with `WouldBlock` (the `try_` calls).
pub(super) fn try_now<T>(
    poll: impl FnOnce(&mut Context<'_>) -> Poll<io::Result<T>>,
) -> io::Result<T> {
    match poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
    }
}

impl TcpStream {
    /// A stream of a simulated end, with the options its socket was given (`linger`, when
    /// given, is handed to the end, which keeps it: a stream reunited from its halves passes
    /// `None` and keeps what the end has).
    pub(super) fn sim(
        conn: Arc<dyn TcpConn>,
        nodelay: bool,
        linger: Option<Duration>,
    ) -> TcpStream {
        if linger.is_some() {
            conn.set_linger(linger);
        }
        TcpStream {
            inner: Inner::Sim(SimStream::new(conn, nodelay)),
        }
    }

    pub(super) fn from_real(stream: real::net::TcpStream) -> TcpStream {
        TcpStream {
            inner: Inner::Real(stream),
        }
    }

    /// Opens a connection to `addr`, trying each address it names in turn.
    ///
    /// # Errors
    ///
    /// The last address's error (`ConnectionRefused`, `TimedOut`...).
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let addrs = resolve_some(&addr).await?;
        match seam::sim() {
            None => real::net::TcpStream::connect(&addrs[..])
                .await
                .map(TcpStream::from_real),
            Some(_) => {
                let network = seam::network("tokio::net::TcpStream::connect");
                first_that_works(addrs, |addr| network.tcp_connect(addr, None))
                    .await
                    .map(|conn| TcpStream::sim(conn, false, None))
            }
        }
    }

    /// Wraps a std stream; refused inside a simulation (a std stream is a real socket).
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        if seam::sim().is_some() {
            seam::refuse(
                "tokio::net::TcpStream::from_std",
                "a std socket is a real one; connect with tokio::net::TcpStream::connect",
            );
        }
        real::net::TcpStream::from_std(stream).map(TcpStream::from_real)
    }

    /// The std stream; refused for a simulated one.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn into_std(self) -> io::Result<std::net::TcpStream> {
        match self.inner {
            Inner::Real(stream) => stream.into_std(),
            Inner::Sim(_) => seam::refuse(
                "tokio::net::TcpStream::into_std",
                "a simulated connection has no OS socket",
            ),
        }
    }

    /// This end's address.
    ///
    /// # Errors
    ///
    /// tokio's (never for a simulated stream).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(stream) => stream.local_addr(),
            Inner::Sim(sim) => Ok(sim.conn.local_addr()),
        }
    }

    /// The other end's address.
    ///
    /// # Errors
    ///
    /// tokio's (never for a simulated stream).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Real(stream) => stream.peer_addr(),
            Inner::Sim(sim) => Ok(sim.conn.peer_addr()),
        }
    }

    /// The socket's pending error (`None` for a simulated one: errors come with the calls).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match &self.inner {
            Inner::Real(stream) => stream.take_error(),
            Inner::Sim(_) => Ok(None),
        }
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn nodelay(&self) -> io::Result<bool> {
        match &self.inner {
            Inner::Real(stream) => stream.nodelay(),
            Inner::Sim(sim) => Ok(sim.nodelay.load(Ordering::Relaxed)),
        }
    }

    /// Sets `TCP_NODELAY` (remembered by a simulated stream, whose network has no Nagle).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.set_nodelay(nodelay),
            Inner::Sim(sim) => {
                sim.nodelay.store(nodelay, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Sets `SO_LINGER` to zero, so that closing resets the connection (an RST, not a FIN),
    /// in a simulation as on Linux.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(real_tokio_1_50)]
    pub fn set_zero_linger(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.set_zero_linger(),
            Inner::Sim(sim) => {
                sim.conn.set_linger(Some(Duration::ZERO));
                Ok(())
            }
        }
    }

    /// Whether `TCP_QUICKACK` is set (on for a new simulated stream, as Linux starts a
    /// connection).
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(all(real_tokio_1_48, any(target_os = "linux", target_os = "android")))]
    pub fn quickack(&self) -> io::Result<bool> {
        match &self.inner {
            Inner::Real(stream) => stream.quickack(),
            Inner::Sim(sim) => Ok(sim.quickack.load(Ordering::Relaxed)),
        }
    }

    /// Sets `TCP_QUICKACK` (remembered by a simulated stream, whose network does not delay
    /// acknowledgements).
    ///
    /// # Errors
    ///
    /// tokio's.
    #[cfg(all(real_tokio_1_48, any(target_os = "linux", target_os = "android")))]
    pub fn set_quickack(&self, quickack: bool) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.set_quickack(quickack),
            Inner::Sim(sim) => {
                sim.quickack.store(quickack, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// The `SO_LINGER` setting.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        match &self.inner {
            Inner::Real(stream) => stream.linger(),
            Inner::Sim(sim) => Ok(sim.conn.linger()),
        }
    }

    /// Sets `SO_LINGER`: in a simulation a zero timeout makes closing reset the connection,
    /// as on Linux, and any other is kept with no effect (nothing waits).
    ///
    /// # Errors
    ///
    /// tokio's.
    #[allow(
        deprecated,
        reason = "tokio deprecates SO_LINGER; the stand-in mirrors it"
    )]
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.set_linger(linger),
            Inner::Sim(sim) => {
                sim.conn.set_linger(linger);
                Ok(())
            }
        }
    }

    /// The `IP_TTL` setting.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn ttl(&self) -> io::Result<u32> {
        match &self.inner {
            Inner::Real(stream) => stream.ttl(),
            Inner::Sim(sim) => Ok(sim.ttl.load(Ordering::Relaxed)),
        }
    }

    /// Sets `IP_TTL` (remembered by a simulated stream).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.set_ttl(ttl),
            Inner::Sim(sim) => {
                sim.ttl.store(ttl, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Splits the stream into halves that borrow it.
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        match &mut self.inner {
            Inner::Real(stream) => {
                let (read, write) = stream.split();
                (ReadHalf::real(read), WriteHalf::real(write))
            }
            Inner::Sim(sim) => (ReadHalf::sim(&*sim.conn), WriteHalf::sim(&*sim.conn)),
        }
    }

    /// Splits the stream into owned halves; dropping the write half shuts the write direction
    /// down, as with tokio.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        match self.inner {
            Inner::Real(stream) => {
                let (read, write) = stream.into_split();
                (OwnedReadHalf::real(read), OwnedWriteHalf::real(write))
            }
            Inner::Sim(sim) => (
                OwnedReadHalf::sim(sim.conn.clone()),
                OwnedWriteHalf::sim(sim.conn),
            ),
        }
    }

    /// Reads what is there now, or fails with `WouldBlock`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if nothing is there yet; the connection's error.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(stream) => stream.try_read(buf),
            Inner::Sim(sim) => try_conn::read(&*sim.conn, buf),
        }
    }

    /// Reads what is there now into `buf`'s spare capacity, or fails with `WouldBlock`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if nothing is there yet; the connection's error.
    pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(stream) => stream.try_read_buf(buf),
            Inner::Sim(sim) => try_conn::read_buf(&*sim.conn, buf),
        }
    }

    /// Writes what fits now, or fails with `WouldBlock`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if the send buffer is full; the connection's error.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(stream) => stream.try_write(buf),
            Inner::Sim(sim) => try_conn::write(&*sim.conn, buf),
        }
    }

    /// Reads what is there now into the first non-empty buffer, or fails with `WouldBlock`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if nothing is there yet; the connection's error.
    pub fn try_read_vectored(&self, bufs: &mut [io::IoSliceMut<'_>]) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(stream) => stream.try_read_vectored(bufs),
            Inner::Sim(sim) => try_conn::read_vectored(&*sim.conn, bufs),
        }
    }

    /// Writes what fits now from the first non-empty buffer, or fails with `WouldBlock`.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if the send buffer is full; the connection's error.
    pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(stream) => stream.try_write_vectored(bufs),
            Inner::Sim(sim) => try_conn::write_vectored(&*sim.conn, bufs),
        }
    }

    /// Runs a raw I/O call on the socket if it is ready; refused inside a simulation (the
    /// call would act on the host's socket, which a simulated stream does not have).
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn try_io<R>(
        &self,
        interest: Interest,
        f: impl FnOnce() -> io::Result<R>,
    ) -> io::Result<R> {
        match &self.inner {
            Inner::Real(stream) => stream.try_io(interest, f),
            Inner::Sim(_) => Err(refuse_raw_io("tokio::net::TcpStream::try_io")),
        }
    }

    /// Runs a raw I/O call on the socket once it is ready; refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn async_io<R>(
        &self,
        interest: Interest,
        f: impl FnMut() -> io::Result<R>,
    ) -> io::Result<R> {
        match &self.inner {
            Inner::Real(stream) => stream.async_io(interest, f).await,
            Inner::Sim(_) => Err(refuse_raw_io("tokio::net::TcpStream::async_io")),
        }
    }

    /// Polls for read readiness: bytes arrived, or the stream ended or failed.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.inner {
            Inner::Real(stream) => stream.poll_read_ready(cx),
            Inner::Sim(sim) => poll_ready_conn(
                &*sim.conn,
                cx,
                Interest::READABLE,
                "tokio::net::TcpStream::poll_read_ready",
            )
            .map_ok(drop),
        }
    }

    /// Polls for write readiness: room in the send buffer, or a write that would fail.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &self.inner {
            Inner::Real(stream) => stream.poll_write_ready(cx),
            Inner::Sim(sim) => poll_ready_conn(
                &*sim.conn,
                cx,
                Interest::WRITABLE,
                "tokio::net::TcpStream::poll_write_ready",
            )
            .map_ok(drop),
        }
    }

    /// Polls a read that leaves the bytes to be read: how many it copied into `buf`.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        match &self.inner {
            Inner::Real(stream) => stream.poll_peek(cx, buf),
            Inner::Sim(sim) => poll_peek_conn(&*sim.conn, cx, buf),
        }
    }

    /// Waits until the stream is ready for a direction `interest` asks for, and says which
    /// (only those asked for).
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// use tokio::io::{AsyncWriteExt, Interest, Ready};
    /// crashtest::Sim::new(1).run(async {
    ///     crashtest::node::create("server", || async {
    ///         let listener = tokio::net::TcpListener::bind("0.0.0.0:7").await.unwrap();
    ///         let (mut stream, _) = listener.accept().await.unwrap();
    ///         stream.write_all(b"hello").await.unwrap();
    ///         std::future::pending::<()>().await
    ///     });
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     let stream = tokio::net::TcpStream::connect("server:7").await.unwrap();
    ///     assert_eq!(stream.ready(Interest::WRITABLE).await.unwrap(), Ready::WRITABLE);
    ///     let ready = stream.ready(Interest::READABLE).await.unwrap();
    ///     assert!(ready.is_readable() && !ready.is_read_closed());
    ///     let mut buf = [0; 16];
    ///     assert_eq!(stream.try_read(&mut buf).unwrap(), 5);
    /// }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn ready(&self, interest: Interest) -> io::Result<Ready> {
        match &self.inner {
            Inner::Real(stream) => stream.ready(interest).await,
            Inner::Sim(sim) => {
                ready_conn(&*sim.conn, interest, "tokio::net::TcpStream::ready").await
            }
        }
    }

    /// Waits until the stream is readable: bytes arrived, or the stream ended or failed (a
    /// read then says which). With `try_read`, tokio's readiness loop.
    ///
    /// ```
    /// use crashtest_tokio as tokio;
    /// use tokio::io::AsyncWriteExt;
    /// crashtest::Sim::new(1).run(async {
    ///     crashtest::node::create("server", || async {
    ///         let listener = tokio::net::TcpListener::bind("0.0.0.0:7").await.unwrap();
    ///         let (mut stream, _) = listener.accept().await.unwrap();
    ///         stream.write_all(b"hello").await.unwrap();
    ///     });
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     let stream = tokio::net::TcpStream::connect("server:7").await.unwrap();
    ///     let mut got = Vec::new();
    ///     loop {
    ///         stream.readable().await.unwrap();
    ///         let mut buf = [0; 4];
    ///         match stream.try_read(&mut buf) {
    ///             Ok(0) => break,
    ///             Ok(n) => got.extend_from_slice(&buf[..n]),
    ///             Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
    ///             Err(e) => panic!("{e}"),
    ///         }
    ///     }
    ///     assert_eq!(got, b"hello");
    /// }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn readable(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.readable().await,
            Inner::Sim(sim) => {
                let call = "tokio::net::TcpStream::readable";
                ready_conn(&*sim.conn, Interest::READABLE, call)
                    .await
                    .map(drop)
            }
        }
    }

    /// Waits until the stream is writable: room in the send buffer, or a write that would
    /// fail (the write then says why).
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn writable(&self) -> io::Result<()> {
        match &self.inner {
            Inner::Real(stream) => stream.writable().await,
            Inner::Sim(sim) => {
                let call = "tokio::net::TcpStream::writable";
                ready_conn(&*sim.conn, Interest::WRITABLE, call)
                    .await
                    .map(drop)
            }
        }
    }

    /// Copies arrived bytes into `buf` and leaves them to be read, waiting as a read does;
    /// `Ok(0)` at the end of the stream.
    ///
    /// # Errors
    ///
    /// tokio's.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Real(stream) => stream.peek(buf).await,
            Inner::Sim(sim) => peek_conn(&*sim.conn, buf).await,
        }
    }
}

impl AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Real(stream) => Pin::new(stream).poll_read(cx, buf),
            Inner::Sim(sim) => poll_read_conn(&*sim.conn, cx, buf),
        }
    }
}

impl AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            Inner::Real(stream) => Pin::new(stream).poll_write(cx, buf),
            Inner::Sim(sim) => sim.conn.poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            Inner::Real(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Inner::Sim(sim) => {
                let first = bufs.iter().find(|buf| !buf.is_empty());
                sim.conn.poll_write(cx, first.map_or(&[][..], |buf| &**buf))
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.inner {
            Inner::Real(stream) => stream.is_write_vectored(),
            Inner::Sim(_) => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Real(stream) => Pin::new(stream).poll_flush(cx),
            Inner::Sim(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Real(stream) => Pin::new(stream).poll_shutdown(cx),
            Inner::Sim(sim) => {
                sim.conn.shutdown();
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl TryFrom<std::net::TcpStream> for TcpStream {
    type Error = io::Error;

    fn try_from(stream: std::net::TcpStream) -> io::Result<TcpStream> {
        TcpStream::from_std(stream)
    }
}

descriptors!(TcpStream, Inner::Real);

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Real(stream) => stream.fmt(f),
            Inner::Sim(sim) => f
                .debug_struct("TcpStream")
                .field("local", &sim.conn.local_addr())
                .field("peer", &sim.conn.peer_addr())
                .finish(),
        }
    }
}
