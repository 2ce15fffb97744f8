//! `TcpStream`: one end of a connection, as tokio's `AsyncRead` + `AsyncWrite`.
//!
//! A stream is a [`SimOrReal`]: inside a simulation, a [`Shared`] [`Socket`] that the stream
//! and its halves hold together (when the last of them is dropped the end closes: a FIN goes
//! out, or an RST if its node was killed); outside one, a `tokio::net::TcpStream`, so the same
//! program runs in production. A socket holds only ids and addresses, so streams are `Send`
//! and `Sync` as tokio's are.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use crashtest_io::{SimOrReal, forward_async_io};
use delegate::delegate;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::connect::Connect;
use super::split::{self, OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::addr::{self, ToSocketAddrs};
use crate::fabric;

/// One end of a connection, shared by a stream and its halves through [`Shared`]. Its methods
/// have tokio's names, so that the public types forward to it and to tokio's streams alike.
pub(crate) struct Socket {
    /// The run that made it (see [`fabric::net_of`]).
    run: u32,
    id: u64,
    side: usize,
    local: SocketAddr,
    peer: SocketAddr,
    nodelay: AtomicBool,
    linger: Mutex<Option<Duration>>,
}

impl Socket {
    /// The connection and the side of it this end is (for the tokio stand-in's seam, which
    /// reads and writes through `&self`).
    pub(crate) fn end(&self) -> (u64, usize) {
        (self.id, self.side)
    }

    /// The network of the run that made this end; a later run refuses it.
    #[inline]
    pub(crate) fn net(&self) -> std::rc::Rc<fabric::Net> {
        fabric::net_of(self.run, "a TCP stream")
    }

    pub(crate) fn shutdown(&self) {
        if let Some(net) = fabric::try_net_of(self.run) {
            net.tcp_shutdown(self.id, self.side);
        }
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    pub(crate) fn peer_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.peer)
    }

    /// Accepted and without effect: segments are never delayed by Nagle's algorithm here.
    pub(crate) fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.nodelay.store(nodelay, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn nodelay(&self) -> io::Result<bool> {
        Ok(self.nodelay.load(Ordering::Relaxed))
    }

    /// Kept; a zero timeout makes closing the end reset the connection (an RST, not a FIN),
    /// as Linux's `close` does. Nothing waits for a timeout that is not zero.
    pub(crate) fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        *self.linger.lock().unwrap_or_else(PoisonError::into_inner) = linger;
        // An end kept past its run keeps the value, as `set_nodelay` does, and tells no one.
        if let Some(net) = fabric::try_net_of(self.run) {
            net.tcp_set_reset_on_close(self.id, self.side, linger == Some(Duration::ZERO));
        }
        Ok(())
    }

    pub(crate) fn linger(&self) -> io::Result<Option<Duration>> {
        Ok(*self.linger.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl fmt::Debug for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Socket")
            .field("local", &self.local)
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if let Some(net) = fabric::try_net_of(self.run) {
            net.tcp_close(self.id, self.side);
        }
    }
}

/// A [`Socket`] held by a stream or one of its halves: the simulated side of each. The end
/// closes when the last one goes.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Socket>);

impl Shared {
    /// End `side` of connection `id` of the network of run `run`.
    pub(crate) fn new(
        run: u32,
        id: u64,
        side: usize,
        local: SocketAddr,
        peer: SocketAddr,
    ) -> Shared {
        Shared(Arc::new(Socket {
            run,
            id,
            side,
            local,
            peer,
            nodelay: AtomicBool::new(false),
            linger: Mutex::new(None),
        }))
    }

    /// True if both hold the same end.
    pub(crate) fn same(&self, other: &Shared) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for Shared {
    type Target = Socket;

    fn deref(&self) -> &Socket {
        &self.0
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Reads what has arrived for this end, or waits for it.
impl AsyncRead for Shared {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.net().tcp_poll_read(self.id, self.side, cx, buf)
    }
}

/// Writes into the connection's pipe (waiting while it is full); a flush has nothing to do
/// (bytes leave as they are written) and a shutdown queues a FIN at once.
impl AsyncWrite for Shared {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.net().tcp_poll_write(self.id, self.side, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.shutdown();
        Poll::Ready(Ok(()))
    }
}

/// A TCP connection, like `tokio::net::TcpStream`: it implements tokio's `AsyncRead` and
/// `AsyncWrite`, so `tokio::io` helpers and `tokio_util::codec` work on it unchanged.
///
/// # Cancel safety
///
/// As tokio's. Reading is cancel safe: bytes leave the connection only in the poll that
/// returns them, so a dropped `read` loses nothing. A poll of `write` that returns `Ready`
/// has queued its bytes, and one that returns `Pending` (the buffer is full) has queued
/// none, so `write` is cancel safe too; `write_all` is not: dropped midway, it has sent a
/// prefix of its buffer. `flush` and `shutdown` complete in their first poll in a
/// simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// use crashtest::{node, Sim};
/// use crashtest::net::{TcpListener, TcpStream};
/// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
///
/// Sim::new(2).run(async {
///     node::create("echo", || async {
///         let listener = TcpListener::bind("0.0.0.0:7").await.unwrap();
///         let (stream, _) = listener.accept().await.unwrap();
///         let (mut reader, mut writer) = stream.into_split();
///         tokio::io::copy(&mut reader, &mut writer).await.unwrap();
///     });
///     crashtest::time::sleep(std::time::Duration::from_millis(1)).await;
///     let stream = TcpStream::connect("echo:7").await.unwrap();
///     let mut stream = BufReader::new(stream);
///     stream.write_all(b"ping\n").await.unwrap();
///     let mut line = String::new();
///     stream.read_line(&mut line).await.unwrap();
///     assert_eq!(line, "ping\n");
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct TcpStream {
    inner: SimOrReal<Shared, tokio::net::TcpStream>,
}

forward_async_io!(TcpStream => inner: AsyncRead, AsyncWrite);

impl TcpStream {
    pub(crate) fn from_socket(socket: Shared) -> TcpStream {
        TcpStream {
            inner: SimOrReal::Sim(socket),
        }
    }

    /// The simulated end this stream is (`None` for tokio's), for the tokio stand-in's seam.
    pub(crate) fn into_sim_socket(self) -> Option<Shared> {
        match self.inner {
            SimOrReal::Sim(socket) => Some(socket),
            SimOrReal::Real(_) => None,
        }
    }

    pub(crate) fn from_tokio(stream: tokio::net::TcpStream) -> TcpStream {
        TcpStream {
            inner: SimOrReal::Real(stream),
        }
    }

    /// Opens a connection from the calling node, trying each address in turn.
    ///
    /// # Errors
    ///
    /// `ConnectionRefused` if nothing listens there, `TimedOut` if SYNs go unanswered for
    /// `NetConfig::connect_timeout` (a partition, a dead node, a full backlog),
    /// `NetworkUnreachable` for addresses outside the simulated network.
    ///
    /// Outside a simulation this is `tokio::net::TcpStream::connect`.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: a connect may have reached the server. Inside a simulation, dropping
    /// the future abandons the attempt under way (earlier addresses that failed stay failed):
    /// its ephemeral port is freed, and if the SYN had already reached the listener, the queued
    /// connection is reset, so the server's accept returns a stream whose first read fails with
    /// ConnectionReset once the RST arrives. Outside a simulation it is tokio's connect: the half-open socket is
    /// closed, and the server may have seen a connection come and go.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::net::TcpStream;
    /// let err = TcpStream::connect("127.0.0.1:1").await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    /// # }).unwrap();
    /// ```
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let inner = addr::open(
            &addr,
            |addrs| async move { tokio::net::TcpStream::connect(&addrs[..]).await },
            |addr| async move { Connect::start(addr, None)?.await },
        )
        .await?;
        Ok(TcpStream { inner })
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(socket) => socket,
            SimOrReal::Real(stream) => stream,
        } {
            /// This end's address.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let stream = crashtest::net::TcpStream::connect("10.0.0.0:1").await.unwrap();
            /// assert_eq!(stream.local_addr().unwrap().ip().to_string(), "10.0.0.0");
            /// # }).unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr>;

            /// The other end's address.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let stream = crashtest::net::TcpStream::connect("10.0.0.0:1").await.unwrap();
            /// assert_eq!(stream.peer_addr().unwrap().to_string(), "10.0.0.0:1");
            /// # }).unwrap();
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr>;

            /// Sets `TCP_NODELAY`. In a simulation it is accepted and has no effect: segments
            /// are never delayed by Nagle's algorithm there.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let stream = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
            /// stream.set_nodelay(true).unwrap();
            /// assert!(stream.nodelay().unwrap());
            /// # }).unwrap();
            /// ```
            pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()>;

            /// The value last given to [`TcpStream::set_nodelay`].
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// # let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
            /// let stream = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
            /// assert!(!stream.nodelay().unwrap());
            /// # }).unwrap();
            /// ```
            pub fn nodelay(&self) -> io::Result<bool>;
        }
    }

    /// Sets `SO_LINGER`. In a simulation a zero timeout makes dropping the stream reset the
    /// connection (the peer's reads fail with `ConnectionReset` after the bytes that
    /// arrived), as on Linux, and any other timeout is kept with no effect: nothing waits.
    /// A stream also resets, whatever its linger, when it is dropped with received bytes
    /// unread.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// use tokio::io::AsyncReadExt;
    /// # crashtest::Sim::new(1).run(async {
    /// let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let client = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (mut server, _) = listener.accept().await.unwrap();
    /// client.set_linger(Some(std::time::Duration::ZERO)).unwrap();
    /// drop(client);
    /// let err = server.read(&mut [0; 8]).await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// tokio's, outside a simulation.
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        match &self.inner {
            SimOrReal::Sim(socket) => socket.set_linger(linger),
            #[allow(
                deprecated,
                reason = "tokio 1.50 deprecates SO_LINGER; older tokios lack its successor"
            )]
            SimOrReal::Real(stream) => stream.set_linger(linger),
        }
    }

    /// The value last given to [`TcpStream::set_linger`].
    ///
    /// # Errors
    ///
    /// tokio's, outside a simulation.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        match &self.inner {
            SimOrReal::Sim(socket) => socket.linger(),
            SimOrReal::Real(stream) => stream.linger(),
        }
    }

    /// Splits the stream into owned halves that can move to different tasks. Dropping the
    /// write half shuts the write direction down, as in tokio.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// # let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let stream = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (read, write) = stream.into_split();
    /// let stream = read.reunite(write).unwrap();
    /// # drop(stream);
    /// # }).unwrap();
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        let (read, write) = self
            .inner
            .map(split::owned, tokio::net::TcpStream::into_split)
            .unzip();
        (OwnedReadHalf::new(read), OwnedWriteHalf::new(write))
    }

    /// Splits the stream into borrowed halves, for use within one task.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// # let listener = crashtest::net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let mut stream = crashtest::net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (_read, _write) = stream.split();
    /// # }).unwrap();
    /// ```
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        let (read, write) = self
            .inner
            .as_mut()
            .map(
                |socket| (socket.clone(), socket.clone()),
                |stream| stream.split(),
            )
            .unzip();
        (ReadHalf::new(read), WriteHalf::new(write))
    }
}
