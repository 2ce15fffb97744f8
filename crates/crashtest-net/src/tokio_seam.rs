//! This network as the tokio stand-in sees it: `crashtest_hooks::net` over the public
//! sockets of this crate (and, for a connection's end, the shared socket behind a stream).
//!
//! The stand-in's `tokio::net` types hold these objects inside a simulation, so a tokio
//! program's connections are this crate's connections: same faults, same trace events, same
//! draws. Binding, resolving and sending a datagram never wait inside a simulation (the
//! addresses are literal by then), so they are completed at once with [`at_once`].

use std::future::Future;
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crashtest_hooks::net::{
    BoxFuture, Network, PortHeld, TcpConn, TcpInterest, TcpListen, TcpReady, UdpSock,
};
use tokio::io::ReadBuf;

use crate::tcp::Shared;
use crate::{TcpListener, TcpStream, UdpSocket, resolve_host};

/// Registers this network with the tokio stand-in (the `crashtest` facade does, before its
/// first run).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// crashtest::net::register_tokio_seam();
/// assert!(crashtest_hooks::network().is_some());
/// ```
pub fn register_tokio_seam() {
    static SEAM: Seam = Seam;
    crashtest_hooks::register_network(&SEAM);
}

struct Seam;

/// Completes a future that cannot wait inside a simulation.
///
/// # Panics
///
/// Panics if it waits after all: a bug of this crate, not of the program.
fn at_once<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a simulated socket call that never waits had to wait"),
    }
}

/// The simulated end of a stream this network made.
fn end_of(stream: TcpStream) -> Arc<dyn TcpConn> {
    Arc::new(
        stream
            .into_sim_socket()
            .expect("a stream made inside a simulation is simulated"),
    )
}

/// Reads into `buf` with `read`, and returns how many bytes it wrote.
fn read_into<R>(
    buf: &mut [MaybeUninit<u8>],
    read: impl FnOnce(&mut ReadBuf<'_>) -> Poll<io::Result<R>>,
) -> Poll<io::Result<(usize, R)>> {
    let mut buf = ReadBuf::uninit(buf);
    read(&mut buf).map_ok(|extra| (buf.filled().len(), extra))
}

impl Network for Seam {
    fn resolve(&self, name: &str) -> io::Result<Vec<IpAddr>> {
        resolve_host(name).map(|ip| vec![ip])
    }

    fn tcp_connect(
        &self,
        addr: SocketAddr,
        local: Option<SocketAddr>,
    ) -> BoxFuture<'static, io::Result<Arc<dyn TcpConn>>> {
        Box::pin(async move {
            let socket = crate::tcp::Connect::start(addr, local)?.await?;
            Ok(end_of(TcpStream::from_socket(socket)))
        })
    }

    fn tcp_listen(&self, addr: SocketAddr) -> io::Result<Box<dyn TcpListen>> {
        let listener = at_once(TcpListener::bind(addr))?;
        Ok(Box::new(listener))
    }

    fn tcp_hold(&self, addr: SocketAddr) -> io::Result<Box<dyn PortHeld>> {
        Ok(Box::new(crate::hold_port(addr, false)?))
    }

    fn udp_bind(&self, addr: SocketAddr) -> io::Result<Box<dyn UdpSock>> {
        let socket = at_once(UdpSocket::bind(addr))?;
        Ok(Box::new(socket))
    }
}

impl TcpConn for Shared {
    fn poll_read(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        let (id, side) = self.end();
        read_into(buf, |buf| self.net().tcp_poll_read(id, side, cx, buf)).map_ok(|(n, ())| n)
    }

    fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let (id, side) = self.end();
        self.net().tcp_poll_write(id, side, cx, data)
    }

    fn try_read(&self, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
        let (id, side) = self.end();
        let mut buf = ReadBuf::uninit(buf);
        self.net().tcp_try_read(id, side, &mut buf)?;
        Ok(buf.filled().len())
    }

    fn try_write(&self, data: &[u8]) -> io::Result<usize> {
        let (id, side) = self.end();
        self.net().tcp_try_write(id, side, data)
    }

    fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<usize>> {
        let (id, side) = self.end();
        read_into(buf, |buf| self.net().tcp_poll_peek(id, side, cx, buf)).map_ok(|(n, ())| n)
    }

    fn poll_ready(&self, cx: &mut Context<'_>, interest: TcpInterest) -> Poll<TcpReady> {
        let (id, side) = self.end();
        self.net().tcp_poll_ready(id, side, cx, interest)
    }

    fn shutdown(&self) {
        self.deref().shutdown();
    }

    fn local_addr(&self) -> SocketAddr {
        self.deref()
            .local_addr()
            .expect("a simulated end knows its address")
    }

    fn peer_addr(&self) -> SocketAddr {
        self.deref()
            .peer_addr()
            .expect("a simulated end knows its peer")
    }

    fn set_linger(&self, linger: Option<Duration>) {
        self.deref()
            .set_linger(linger)
            .expect("a simulated end keeps its linger");
    }

    fn linger(&self) -> Option<Duration> {
        self.deref()
            .linger()
            .expect("a simulated end knows its linger")
    }
}

impl PortHeld for crate::PortHold {
    fn port(&self) -> u16 {
        crate::PortHold::port(self)
    }
}

impl TcpListen for TcpListener {
    fn poll_accept(
        &self,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<(Arc<dyn TcpConn>, SocketAddr)>> {
        TcpListener::poll_accept(self, cx).map_ok(|(stream, peer)| (end_of(stream), peer))
    }

    fn local_addr(&self) -> SocketAddr {
        TcpListener::local_addr(self).expect("a simulated listener knows its address")
    }
}

impl UdpSock for UdpSocket {
    fn send_to(&self, data: &[u8], target: SocketAddr) -> io::Result<usize> {
        at_once(UdpSocket::send_to(self, data, target))
    }

    fn send(&self, data: &[u8]) -> io::Result<usize> {
        at_once(UdpSocket::send(self, data))
    }

    fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        read_into(buf, |buf| UdpSocket::poll_recv_from(self, cx, buf))
    }

    fn poll_peek_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [MaybeUninit<u8>],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        read_into(buf, |buf| UdpSocket::poll_peek_from(self, cx, buf))
    }

    fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        at_once(UdpSocket::connect(self, peer))
    }

    fn peer_addr(&self) -> io::Result<SocketAddr> {
        UdpSocket::peer_addr(self)
    }

    fn local_addr(&self) -> SocketAddr {
        UdpSocket::local_addr(self).expect("a simulated socket knows its address")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_core::{Sim, node, time};
    use std::time::Duration;

    #[test]
    fn a_connection_through_the_seam_carries_bytes_both_ways() {
        Sim::new(3)
            .run(async {
                node::create("server", || async {
                    let listener = Seam.tcp_listen("0.0.0.0:80".parse().unwrap()).unwrap();
                    let (conn, _) = std::future::poll_fn(|cx| listener.poll_accept(cx))
                        .await
                        .unwrap();
                    let mut buf = [MaybeUninit::uninit(); 8];
                    let n = std::future::poll_fn(|cx| conn.poll_read(cx, &mut buf))
                        .await
                        .unwrap();
                    let got: Vec<u8> = buf[..n].iter().map(|b| unsafe_free(*b)).collect();
                    std::future::poll_fn(|cx| conn.poll_write(cx, &got))
                        .await
                        .unwrap();
                    conn.shutdown();
                    std::future::pending::<()>().await;
                });
                time::sleep(Duration::from_millis(1)).await;
                let ip = Seam.resolve("server").unwrap()[0];
                let conn = Seam
                    .tcp_connect(SocketAddr::new(ip, 80), None)
                    .await
                    .unwrap();
                assert_eq!(conn.peer_addr(), SocketAddr::new(ip, 80));
                std::future::poll_fn(|cx| conn.poll_write(cx, b"ping"))
                    .await
                    .unwrap();
                let mut buf = [MaybeUninit::uninit(); 8];
                let n = std::future::poll_fn(|cx| conn.poll_read(cx, &mut buf))
                    .await
                    .unwrap();
                assert_eq!(n, 4);
                let end = std::future::poll_fn(|cx| conn.poll_read(cx, &mut buf))
                    .await
                    .unwrap();
                assert_eq!(end, 0, "the server's shutdown ends the stream");
            })
            .unwrap();
    }

    /// Reads a byte the seam reported as written.
    fn unsafe_free(byte: MaybeUninit<u8>) -> u8 {
        // SAFETY: only bytes below the count `poll_read` returned are read, and those it wrote.
        unsafe { byte.assume_init() }
    }

    #[test]
    fn datagrams_through_the_seam_arrive_with_their_sender() {
        Sim::new(4)
            .run(async {
                let a = Seam.udp_bind("0.0.0.0:0".parse().unwrap()).unwrap();
                let b = Seam.udp_bind("0.0.0.0:0".parse().unwrap()).unwrap();
                let to = SocketAddr::new("127.0.0.1".parse().unwrap(), b.local_addr().port());
                a.send_to(b"hi", to).unwrap();
                let mut buf = [MaybeUninit::uninit(); 4];
                let (n, from) = std::future::poll_fn(|cx| b.poll_recv_from(cx, &mut buf))
                    .await
                    .unwrap();
                assert_eq!(n, 2);
                assert_eq!(from.port(), a.local_addr().port());
                assert!(b.peer_addr().is_err());
                b.connect(from).unwrap();
                assert_eq!(b.peer_addr().unwrap(), from);
            })
            .unwrap();
    }

    #[test]
    fn unknown_names_do_not_resolve() {
        Sim::new(1)
            .run(async {
                let err = Seam.resolve("nowhere").unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::NotFound);
            })
            .unwrap();
    }
}
