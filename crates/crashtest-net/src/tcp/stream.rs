//! `TcpStream`: one end of a connection, as tokio's `AsyncRead` + `AsyncWrite`.
//!
//! Inside a simulation the stream and its owned halves share one [`Socket`]; when the last of
//! them is dropped the end closes (a FIN goes out, or an RST if its node was killed). A socket
//! holds only ids and addresses, so streams are `Send` and `Sync` as tokio's are. Outside a
//! simulation a stream is a `tokio::net::TcpStream`, so the same program runs in production.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::connect::Connect;
use super::split::{self, OwnedReadHalf, OwnedWriteHalf, ReadHalf, WriteHalf};
use crate::addr::{ToSocketAddrs, resolve_all};
use crashtest_core::plumbing;

use crate::fabric;

/// One end of a connection, shared by a stream and its owned halves.
pub(crate) struct Socket {
    id: u64,
    side: usize,
    local: SocketAddr,
    peer: SocketAddr,
    nodelay: AtomicBool,
}

impl Socket {
    pub(crate) fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        fabric::net().tcp_poll_read(self.id, self.side, cx, buf)
    }

    pub(crate) fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        fabric::net().tcp_poll_write(self.id, self.side, cx, data)
    }

    pub(crate) fn shutdown(&self) {
        if let Some(net) = fabric::try_net() {
            net.tcp_shutdown(self.id, self.side);
        }
    }

    pub(crate) fn local(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if let Some(net) = fabric::try_net() {
            net.tcp_close(self.id, self.side);
        }
    }
}

/// A TCP connection, like `tokio::net::TcpStream`: it implements tokio's `AsyncRead` and
/// `AsyncWrite`, so `tokio::io` helpers and `tokio_util::codec` work on it unchanged.
///
/// ```
/// use crashtest_core::{node, Sim};
/// use crashtest_net::{TcpListener, TcpStream};
/// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
///
/// Sim::new(2).run(async {
///     node::create("echo", || async {
///         let listener = TcpListener::bind("0.0.0.0:7").await.unwrap();
///         let (stream, _) = listener.accept().await.unwrap();
///         let (mut reader, mut writer) = stream.into_split();
///         tokio::io::copy(&mut reader, &mut writer).await.unwrap();
///     });
///     crashtest_core::time::sleep(std::time::Duration::from_millis(1)).await;
///     let stream = TcpStream::connect("echo:7").await.unwrap();
///     let mut stream = BufReader::new(stream);
///     stream.write_all(b"ping\n").await.unwrap();
///     let mut line = String::new();
///     stream.read_line(&mut line).await.unwrap();
///     assert_eq!(line, "ping\n");
/// }).unwrap();
/// ```
pub struct TcpStream {
    inner: Inner,
}

enum Inner {
    Sim(Arc<Socket>),
    Real(tokio::net::TcpStream),
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Sim(socket) => f
                .debug_struct("TcpStream")
                .field("local", &socket.local)
                .field("peer", &socket.peer)
                .finish_non_exhaustive(),
            Inner::Real(stream) => stream.fmt(f),
        }
    }
}

impl TcpStream {
    pub(crate) fn new(id: u64, side: usize, local: SocketAddr, peer: SocketAddr) -> TcpStream {
        TcpStream::from_socket(Arc::new(Socket {
            id,
            side,
            local,
            peer,
            nodelay: AtomicBool::new(false),
        }))
    }

    pub(crate) fn from_socket(socket: Arc<Socket>) -> TcpStream {
        TcpStream {
            inner: Inner::Sim(socket),
        }
    }

    pub(crate) fn from_tokio(stream: tokio::net::TcpStream) -> TcpStream {
        TcpStream {
            inner: Inner::Real(stream),
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
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// use crashtest_net::TcpStream;
    /// let err = TcpStream::connect("127.0.0.1:1").await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    /// # }).unwrap();
    /// ```
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let addrs = resolve_all(&addr).await?;
        if !plumbing::is_simulation() {
            return tokio::net::TcpStream::connect(&addrs[..])
                .await
                .map(TcpStream::from_tokio);
        }
        let mut last = None;
        for addr in addrs {
            let attempt = match Connect::start(addr) {
                Ok(connect) => connect.await,
                Err(err) => Err(err),
            };
            match attempt {
                Ok(stream) => return Ok(stream),
                Err(err) => last = Some(err),
            }
        }
        Err(last.expect("resolve_all returns at least one address"))
    }

    /// This end's address.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let stream = crashtest_net::TcpStream::connect("10.0.0.0:1").await.unwrap();
    /// assert_eq!(stream.local_addr().unwrap().ip().to_string(), "10.0.0.0");
    /// # }).unwrap();
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Sim(socket) => Ok(socket.local),
            Inner::Real(stream) => stream.local_addr(),
        }
    }

    /// The other end's address.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let stream = crashtest_net::TcpStream::connect("10.0.0.0:1").await.unwrap();
    /// assert_eq!(stream.peer_addr().unwrap().to_string(), "10.0.0.0:1");
    /// # }).unwrap();
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Inner::Sim(socket) => Ok(socket.peer),
            Inner::Real(stream) => stream.peer_addr(),
        }
    }

    /// Sets `TCP_NODELAY`. In a simulation it is accepted and has no effect: segments are never
    /// delayed by Nagle's algorithm there.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let stream = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// stream.set_nodelay(true).unwrap();
    /// assert!(stream.nodelay().unwrap());
    /// # }).unwrap();
    /// ```
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        match &self.inner {
            Inner::Sim(socket) => {
                socket.nodelay.store(nodelay, Ordering::Relaxed);
                Ok(())
            }
            Inner::Real(stream) => stream.set_nodelay(nodelay),
        }
    }

    /// The value last given to [`TcpStream::set_nodelay`].
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let stream = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// assert!(!stream.nodelay().unwrap());
    /// # }).unwrap();
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        match &self.inner {
            Inner::Sim(socket) => Ok(socket.nodelay.load(Ordering::Relaxed)),
            Inner::Real(stream) => stream.nodelay(),
        }
    }

    /// Splits the stream into owned halves that can move to different tasks. Dropping the
    /// write half shuts the write direction down, as in tokio.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let stream = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (read, write) = stream.into_split();
    /// let stream = read.reunite(write).unwrap();
    /// # drop(stream);
    /// # }).unwrap();
    /// ```
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        match self.inner {
            Inner::Sim(socket) => split::owned(socket),
            Inner::Real(stream) => split::owned_real(stream),
        }
    }

    /// Splits the stream into borrowed halves, for use within one task.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// # let listener = crashtest_net::TcpListener::bind("0.0.0.0:1").await.unwrap();
    /// let mut stream = crashtest_net::TcpStream::connect("127.0.0.1:1").await.unwrap();
    /// let (_read, _write) = stream.split();
    /// # }).unwrap();
    /// ```
    pub fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        match &mut self.inner {
            Inner::Sim(socket) => split::borrowed(socket),
            Inner::Real(stream) => split::borrowed_real(stream),
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
            Inner::Sim(socket) => socket.poll_read(cx, buf),
            Inner::Real(stream) => Pin::new(stream).poll_read(cx, buf),
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
            Inner::Sim(socket) => socket.poll_write(cx, buf),
            Inner::Real(stream) => Pin::new(stream).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Sim(_) => Poll::Ready(Ok(())),
            Inner::Real(stream) => Pin::new(stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Inner::Sim(socket) => {
                socket.shutdown();
                Poll::Ready(Ok(()))
            }
            Inner::Real(stream) => Pin::new(stream).poll_shutdown(cx),
        }
    }
}
