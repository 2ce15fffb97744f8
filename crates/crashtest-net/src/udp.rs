//! UDP: datagram sockets over the lossy part of the fault model.
//!
//! A datagram sent draws, in this order, whether it is lost, whether it is duplicated, and for
//! each copy a latency (plus, with the reorder chance, an extra delay up to the latency's
//! tail); each loss, duplicate and hold-back that comes up is a fault of its own (numbered,
//! reported, maskable). Copies travel as timer callbacks. When one is due: a partition drops
//! it, a clog holds it until the clog lifts, a dead node or an unbound port drops it, and a
//! full receive queue drops it (as a real socket does on overflow). Datagrams keep their
//! boundaries; a receive buffer smaller than the datagram truncates it, as `recv_from` does on
//! Linux. Outside a simulation a `UdpSocket` is tokio's.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::future::poll_fn;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crashtest_core::node::NodeId;
use crashtest_core::plumbing::{self, timers::TimerKey};
use crashtest_io::SimOrReal;
use crashtest_protocol::{NetNote, UdpDrop};
use delegate::delegate;
use tokio::io::ReadBuf;

use crate::addr::{
    self, Place, ToSocketAddrs, between, place_of, resolve_all, resolve_in_sim, v4_of,
};
use crate::config::nanos;
use crate::errors;
use crate::fabric::{
    self, Net, State, WaitList, Wakers, applies, current_node, drawn, latency_ns, now, pack, trace,
};
use crate::id_map::IdMap;
use crate::links::Verdict;
use crate::ports::Proto;

/// The largest UDP payload over IPv4.
const MAX_DATAGRAM: usize = 65_507;

/// The UDP part of the network's state.
#[derive(Debug, Default)]
pub(crate) struct UdpTables {
    sockets: IdMap<SocketState>,
    /// Datagrams held by a clog, by sequence number: what an unclog releases.
    held: BTreeMap<u64, (TimerKey, Datagram)>,
    next_held: u64,
    in_flight: InFlight,
}

/// Datagrams on their way, each in a slot that its arrival timer names: the timer holds a
/// function and the slot, not a boxed closure holding the network and a boxed datagram (a
/// datagram is sent per message, and those were two allocations each). A slot is filled when
/// its timer is armed and emptied once, when it fires; freed slots are reused last-freed
/// first, which nothing observable depends on.
#[derive(Debug, Default)]
struct InFlight {
    slots: Vec<Option<Datagram>>,
    free: Vec<usize>,
}

impl InFlight {
    fn put(&mut self, datagram: Datagram) -> u64 {
        let slot = match self.free.pop() {
            Some(slot) => {
                assert!(self.slots[slot].is_none(), "a free slot holds a datagram");
                self.slots[slot] = Some(datagram);
                slot
            }
            None => {
                self.slots.push(Some(datagram));
                self.slots.len() - 1
            }
        };
        slot as u64
    }

    fn take(&mut self, slot: u64) -> Datagram {
        let slot = usize::try_from(slot).expect("a slot index fits in memory");
        let datagram = self.slots[slot]
            .take()
            .expect("a datagram's arrival fires once");
        self.free.push(slot);
        datagram
    }
}

impl UdpTables {
    /// Calls `waiting` with the wakers of the tasks waiting for a datagram, socket by socket.
    pub(crate) fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str)) {
        for (_, socket) in self.sockets.iter() {
            let receiving = format!("receiving udp on {}", socket.local);
            socket.waiters.iter().for_each(|w| waiting(w, &receiving));
        }
    }

    /// Makes `datagram` arrive at `at`.
    fn arm(&mut self, at: u64, datagram: Datagram) {
        let slot = self.in_flight.put(datagram);
        plumbing::timers::call_function_at(at, datagram_due, slot);
    }
}

/// The arrival timer of the datagram in flight in `slot` fired.
fn datagram_due(slot: u64) {
    let net = fabric::net();
    let datagram = net.state.borrow_mut().udp.in_flight.take(slot);
    net.udp_arrive(datagram);
}

#[derive(Debug)]
struct SocketState {
    node: NodeId,
    local: SocketAddr,
    peer: Option<SocketAddr>,
    queue: VecDeque<(SocketAddr, Vec<u8>)>,
    queued_bytes: usize,
    /// The tasks waiting for a datagram.
    waiters: WaitList,
    /// Its node was killed: the port is free and every call fails.
    killed: bool,
    /// A datagram it sent to its connected peer found no socket there (the port
    /// unreachable that Linux's ICMP brings back): its next send or receive fails with
    /// `ECONNREFUSED`, once, as Linux reports a socket's pending error.
    refused: bool,
}

/// A datagram in flight.
#[derive(Debug)]
struct Datagram {
    from_node: u32,
    to_node: u32,
    from: SocketAddr,
    to: SocketAddr,
    payload: Vec<u8>,
}

/// A UDP socket, like `tokio::net::UdpSocket`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// use crashtest::{node, Sim};
/// use crashtest::net::UdpSocket;
///
/// Sim::new(1).run(async {
///     node::create("echo", || async {
///         let socket = UdpSocket::bind("0.0.0.0:53").await.unwrap();
///         let mut buf = [0; 512];
///         loop {
///             let (n, from) = socket.recv_from(&mut buf).await.unwrap();
///             socket.send_to(&buf[..n], from).await.unwrap();
///         }
///     });
///     crashtest::time::sleep(std::time::Duration::from_millis(1)).await;
///     let socket = UdpSocket::bind("0.0.0.0:0").await.unwrap();
///     socket.send_to(b"query", "echo:53").await.unwrap();
///     let mut buf = [0; 512];
///     let (n, from) = socket.recv_from(&mut buf).await.unwrap();
///     assert_eq!((&buf[..n], from.to_string().as_str()), (&b"query"[..], "10.0.0.1:53"));
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    inner: SimOrReal<SimUdp, tokio::net::UdpSocket>,
}

/// The simulated side of a UDP socket: its id in the network's tables. Dropping it frees the
/// port.
#[derive(Debug)]
pub(crate) struct SimUdp {
    /// The run that made it (see [`fabric::net_of`]).
    run: u32,
    id: u64,
    local: SocketAddr,
}

fn killed_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the socket's node was killed",
    )
}

impl UdpSocket {
    /// Binds a socket on the calling node (port 0: an ephemeral port).
    ///
    /// # Errors
    ///
    /// `AddrInUse` if the port is taken, `AddrNotAvailable` for another node's IP.
    ///
    /// Outside a simulation this is `tokio::net::UdpSocket::bind`.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe. Inside a simulation the address is resolved and the port bound in the
    /// future's first poll, so a future dropped before it completes has bound nothing. Outside
    /// a simulation, dropping it while a host name is being resolved binds nothing either.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// let socket = crashtest::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
    /// assert_ne!(socket.local_addr().unwrap().port(), 0);
    /// # }).unwrap();
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        let inner = addr::open(
            &addr,
            |addrs| async move { tokio::net::UdpSocket::bind(&addrs[..]).await },
            |addr| std::future::ready(bind_one(addr)),
        )
        .await?;
        Ok(UdpSocket { inner })
    }

    /// Sets the default destination of [`UdpSocket::send`] and keeps only datagrams from it.
    ///
    /// # Errors
    ///
    /// Fails if the address does not resolve.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the peer is set only when the future completes (in its first poll inside a
    /// simulation), so a dropped future leaves the socket as it was.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// let a = crashtest::net::UdpSocket::bind("127.0.0.1:5000").await.unwrap();
    /// let b = crashtest::net::UdpSocket::bind("127.0.0.1:5001").await.unwrap();
    /// a.connect("127.0.0.1:5001").await.unwrap();
    /// b.connect("127.0.0.1:5000").await.unwrap();
    /// a.send(b"hi").await.unwrap();
    /// let mut buf = [0; 8];
    /// assert_eq!(b.recv(&mut buf).await.unwrap(), 2);
    /// assert_eq!(a.peer_addr().unwrap().port(), 5001);
    /// # }).unwrap();
    /// ```
    pub async fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        let addrs = resolve_all(&addr).await?;
        match &self.inner {
            SimOrReal::Sim(socket) => {
                socket.connect(addrs.first());
                Ok(())
            }
            SimOrReal::Real(socket) => socket.connect(addrs.as_slice()).await,
        }
    }

    /// Sends a datagram to `target`; returns its length. Delivery is not guaranteed.
    ///
    /// # Errors
    ///
    /// Linux's `EMSGSIZE` ("Message too long", a number std gives no kind of its own) for a
    /// datagram over 65,507 bytes, `NetworkUnreachable` for an address outside the simulated
    /// network, `ConnectionAborted` once the node was killed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a datagram is sent whole or not at all. Inside a simulation it leaves in
    /// the future's first poll (once the target is resolved) and the future completes in that
    /// poll; a future dropped before completing sent nothing.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// let socket = crashtest::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
    /// // Nobody listens there: the datagram is silently lost, as on a real network.
    /// assert_eq!(socket.send_to(b"into the void", "127.0.0.1:9").await.unwrap(), 13);
    /// # }).unwrap();
    /// ```
    pub async fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], target: A) -> io::Result<usize> {
        match &self.inner {
            SimOrReal::Sim(socket) => socket.send_to(buf, resolve_in_sim(&target)?.first()),
            SimOrReal::Real(socket) => {
                let target = resolve_all(&target).await?.first();
                socket.send_to(buf, target).await
            }
        }
    }

    /// Waits for a datagram; copies it into `buf` (truncating it if `buf` is smaller) and
    /// returns its length and sender.
    ///
    /// # Errors
    ///
    /// `ConnectionAborted` once the node was killed; `ConnectionRefused` once, on a socket
    /// connected to an address where one of its datagrams found no socket (Linux's ICMP port
    /// unreachable), and so the next send too if no receive took the error first.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as tokio's: a datagram leaves the receive queue only in the poll that
    /// returns it, so a dropped receive loses no datagram.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// let socket = crashtest::net::UdpSocket::bind("127.0.0.1:7").await.unwrap();
    /// socket.send_to(b"self", "127.0.0.1:7").await.unwrap();
    /// let mut buf = [0; 16];
    /// let (n, from) = socket.recv_from(&mut buf).await.unwrap();
    /// assert_eq!((&buf[..n], from.port()), (&b"self"[..], 7));
    /// # }).unwrap();
    /// ```
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        if let SimOrReal::Real(socket) = &self.inner {
            // tokio's `poll_recv_from` wakes only the last task to poll; its `recv_from` wakes
            // every task that awaits one.
            return socket.recv_from(buf).await;
        }
        let mut buf = ReadBuf::new(buf);
        let from = poll_fn(|cx| self.poll_recv_from(cx, &mut buf)).await?;
        Ok((buf.filled().len(), from))
    }

    /// Waits for a datagram from the connected peer; returns its length.
    ///
    /// # Errors
    ///
    /// As [`UdpSocket::recv_from`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as recv_from: a dropped receive loses no datagram.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// let socket = crashtest::net::UdpSocket::bind("127.0.0.1:7").await.unwrap();
    /// socket.connect("127.0.0.1:7").await.unwrap();
    /// socket.send(b"loop").await.unwrap();
    /// let mut buf = [0; 16];
    /// assert_eq!(socket.recv(&mut buf).await.unwrap(), 4);
    /// # }).unwrap();
    /// ```
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, _) = self.recv_from(buf).await?;
        Ok(n)
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(socket) => socket,
            SimOrReal::Real(socket) => socket,
        } {
            /// Sends a datagram to the connected peer.
            ///
            /// # Errors
            ///
            /// Linux's `EDESTADDRREQ` ("Destination address required", a number std gives
            /// no kind of its own) without a prior [`UdpSocket::connect`]; otherwise as
            /// [`UdpSocket::send_to`].
            ///
            /// # Cancel safety
            ///
            /// Cancel safe: the datagram is sent whole, in the poll that completes the future,
            /// or not at all.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// let socket = crashtest::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
            /// let unconnected = socket.send(b"x").await.unwrap_err();
            /// assert_eq!(unconnected.to_string(), "Destination address required (os error 89)");
            /// # }).unwrap();
            /// ```
            pub async fn send(&self, buf: &[u8]) -> io::Result<usize>;

            /// Polls for a datagram, like tokio's: fills `buf` (truncating the datagram if it is
            /// smaller) and returns the sender.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// let socket = crashtest::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
            /// let waker = std::task::Waker::noop();
            /// let mut cx = std::task::Context::from_waker(&waker);
            /// let mut storage = [0; 4];
            /// let mut buf = tokio::io::ReadBuf::new(&mut storage);
            /// assert!(socket.poll_recv_from(&mut cx, &mut buf).is_pending());
            /// # }).unwrap();
            /// ```
            pub fn poll_recv_from(
                &self,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<SocketAddr>>;

            /// The address the socket is bound to.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// let s = crashtest::net::UdpSocket::bind("0.0.0.0:4000").await.unwrap();
            /// assert_eq!(s.local_addr().unwrap().to_string(), "0.0.0.0:4000");
            /// # }).unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr>;

            /// The connected peer.
            ///
            /// # Errors
            ///
            /// `NotConnected` without a prior [`UdpSocket::connect`].
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// let s = crashtest::net::UdpSocket::bind("0.0.0.0:0").await.unwrap();
            /// assert_eq!(s.peer_addr().unwrap_err().kind(), std::io::ErrorKind::NotConnected);
            /// # }).unwrap();
            /// ```
            pub fn peer_addr(&self) -> io::Result<SocketAddr>;
        }
    }
}

impl UdpSocket {
    /// Polls to copy the next datagram into `buf` without receiving it: its sender (the
    /// tokio stand-in's `peek_from` and readiness).
    pub(crate) fn poll_peek_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        match &self.inner {
            SimOrReal::Sim(socket) => socket.poll_peek_from(cx, buf),
            SimOrReal::Real(socket) => socket.poll_peek_from(cx, buf),
        }
    }
}

impl SimUdp {
    /// Runs `f` on this socket's state in the network's tables.
    fn with_state<R>(&self, f: impl FnOnce(&mut SocketState) -> R) -> R {
        let net = fabric::net_of(self.run, "a UDP socket");
        let mut st = net.state.borrow_mut();
        let socket = st
            .udp
            .sockets
            .get_mut(&self.id)
            .expect("a socket keeps its state while it lives");
        f(socket)
    }

    /// Keeps only datagrams from `peer` from now on, and makes it `send`'s destination.
    fn connect(&self, peer: SocketAddr) {
        self.with_state(|socket| {
            socket.peer = Some(peer);
            socket.queue.retain(|(from, _)| *from == peer);
            socket.queued_bytes = socket.queue.iter().map(|(_, d)| d.len()).sum();
        });
    }

    fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        fabric::net_of(self.run, "a UDP socket").udp_send(self.id, buf, target)
    }

    async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        let peer = self
            .with_state(|socket| socket.peer)
            .ok_or_else(errors::destination_required)?;
        self.send_to(buf, peer)
    }

    fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        self.poll_next_datagram(cx, buf, true)
    }

    /// As `poll_recv_from`, leaving the datagram queued.
    fn poll_peek_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        self.poll_next_datagram(cx, buf, false)
    }

    /// Copies the next queued datagram into `buf` (cut to fit, as a real socket does) and
    /// gives its sender; `receive` takes it off the queue, else it stays for the next call.
    fn poll_next_datagram(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
        receive: bool,
    ) -> Poll<io::Result<SocketAddr>> {
        self.with_state(|socket| {
            if socket.killed {
                return Poll::Ready(Err(killed_error()));
            }
            if socket.refused {
                // An empty peek is a readiness probe (the stand-in's): the error makes the
                // socket ready and stays for the call that reports it.
                socket.refused = !receive && buf.remaining() == 0;
                return Poll::Ready(Err(errors::connection(io::ErrorKind::ConnectionRefused)));
            }
            let Some((from, payload)) = socket.queue.front() else {
                socket.waiters.register(cx.waker());
                return Poll::Pending;
            };
            let from = *from;
            let n = payload.len().min(buf.remaining());
            buf.put_slice(&payload[..n]);
            if receive {
                let (_, payload) = socket.queue.pop_front().expect("the datagram just copied");
                socket.queued_bytes -= payload.len();
                assert!(
                    !socket.queue.is_empty() || socket.queued_bytes == 0,
                    "an empty queue holds no bytes"
                );
            }
            Poll::Ready(Ok(from))
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.with_state(|socket| socket.peer)
            .ok_or_else(errors::not_connected)
    }
}

fn bind_one(addr: SocketAddr) -> io::Result<SimUdp> {
    let net = fabric::net();
    let node = current_node();
    let mut guard = net.state.borrow_mut();
    let st = &mut *guard;
    let (id, port) = st.bind_port(node, Proto::Udp, addr)?;
    let local = SocketAddr::new(addr.ip(), port);
    st.udp.sockets.insert(
        id,
        SocketState {
            node,
            local,
            peer: None,
            queue: VecDeque::new(),
            queued_bytes: 0,
            waiters: WaitList::default(),
            killed: false,
            refused: false,
        },
    );
    trace(
        node,
        NetNote::UdpBind {
            socket: id,
            local: pack(local),
        },
    );
    Ok(SimUdp {
        run: net.run,
        id,
        local,
    })
}

impl Drop for SimUdp {
    fn drop(&mut self) {
        let Some(net) = fabric::try_net_of(self.run) else {
            return;
        };
        let mut st = net.state.borrow_mut();
        let Some(socket) = st.udp.sockets.remove(&self.id) else {
            return;
        };
        if !socket.killed {
            let index = socket.node.index() as u32;
            st.ports
                .release(index, Proto::Udp, socket.local.port(), self.id);
        }
    }
}

impl Net {
    /// Sends `payload` from socket `id` to `to`.
    fn udp_send(self: &Rc<Net>, id: u64, payload: &[u8], to: SocketAddr) -> io::Result<usize> {
        if payload.len() > MAX_DATAGRAM {
            return Err(errors::message_too_long());
        }
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let socket = st
            .udp
            .sockets
            .get_mut(&id)
            .expect("a socket keeps its state");
        if socket.killed {
            return Err(killed_error());
        }
        if std::mem::take(&mut socket.refused) {
            return Err(errors::connection(io::ErrorKind::ConnectionRefused));
        }
        let node = socket.node;
        let from_node = node.index() as u32;
        let (to_node, from_ip) = match place_of(to.ip()) {
            Place::Nowhere => {
                return Err(errors::network_unreachable());
            }
            Place::Loopback => {
                let ip = match to.ip() {
                    IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                    IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                };
                (from_node, ip)
            }
            Place::Node(index) => (index, IpAddr::V4(v4_of(from_node))),
        };
        let from = SocketAddr::new(from_ip, socket.local.port());
        // Draw everything first, whatever the verdicts, so that masked replays stay aligned.
        let lost = drawn(st.config.udp_loss);
        let duplicated = drawn(st.config.udp_duplicate);
        let copies = if duplicated { 2 } else { 1 };
        let mut delays = [0u64; 2];
        let mut held_back = [None; 2];
        for (delay, extra) in delays.iter_mut().zip(&mut held_back).take(copies) {
            *delay = latency_ns(&st.config, from_node, to_node);
            if drawn(st.config.udp_reorder) {
                let tail_max = nanos(st.config.latency.tail_max);
                *extra = Some(fabric::draw(|rng| rng.below_inclusive(tail_max)));
            }
        }
        let len = payload.len();
        let (sender, receiver, bytes) = (pack(from), pack(to), len as u64);
        trace(
            node,
            NetNote::UdpSend {
                from: sender,
                to: receiver,
                len: bytes,
            },
        );
        if lost && applies(node, || between("udp datagram", from, to, " lost")) {
            trace(
                node,
                NetNote::UdpLost {
                    from: sender,
                    to: receiver,
                    len: bytes,
                },
            );
            return Ok(len);
        }
        let copies =
            if copies == 2 && applies(node, || between("udp datagram", from, to, " duplicated")) {
                trace(
                    node,
                    NetNote::UdpDuplicated {
                        from: sender,
                        to: receiver,
                        len: bytes,
                    },
                );
                2
            } else {
                1
            };
        let now = now();
        for (mut delay, extra) in delays.into_iter().zip(held_back).take(copies) {
            if let Some(extra) = extra {
                let late = Duration::from_nanos(extra);
                if applies(node, || {
                    let mut text = between("udp datagram", from, to, " held back ");
                    write!(text, "{late:?}").expect("formatting into a String cannot fail");
                    text
                }) {
                    delay += extra;
                }
            }
            let datagram = Datagram {
                from_node,
                to_node,
                from,
                to,
                payload: payload.to_vec(),
            };
            st.udp.arm(now + delay, datagram);
        }
        Ok(len)
    }

    /// A datagram is due at its destination.
    fn udp_arrive(self: &Rc<Net>, datagram: Datagram) {
        let mut wakers = Wakers::default();
        {
            let mut guard = self.state.borrow_mut();
            let st = &mut *guard;
            let now = now();
            match st.links.verdict(datagram.from_node, datagram.to_node, now) {
                Verdict::Cut => {
                    st.udp_drop(&datagram, UdpDrop::Cut);
                    return;
                }
                Verdict::HeldUntil(until) => {
                    self.udp_hold(st, until, datagram);
                    return;
                }
                Verdict::Open => {}
            }
            st.udp_deliver(datagram, &mut wakers);
        }
        wakers.wake();
    }

    /// Holds a datagram until a clog lifts.
    fn udp_hold(self: &Rc<Net>, st: &mut State, until: u64, datagram: Datagram) {
        let seq = st.udp.next_held;
        st.udp.next_held += 1;
        let net = Rc::clone(self);
        let timer = plumbing::timers::call_at(until, move || net.udp_release(seq));
        trace(
            st.recorder(&datagram),
            NetNote::UdpClogged {
                from: pack(datagram.from),
                to: pack(datagram.to),
                until_ns: until,
            },
        );
        st.udp.held.insert(seq, (timer, datagram));
    }

    /// The clog holding datagram `seq` lifted: it arrives (or meets the next fault).
    fn udp_release(self: &Rc<Net>, seq: u64) {
        let held = self.state.borrow_mut().udp.held.remove(&seq);
        if let Some((_, datagram)) = held {
            self.udp_arrive(datagram);
        }
    }

    /// Releases every held datagram whose link is free again, after one latency.
    pub(crate) fn udp_release_held(self: &Rc<Net>) {
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        let now = now();
        let free: Vec<u64> = st
            .udp
            .held
            .iter()
            .filter(|(_, (_, d))| st.links.verdict(d.from_node, d.to_node, now) == Verdict::Open)
            .map(|(&seq, _)| seq)
            .collect();
        for seq in free {
            let (timer, datagram) = st.udp.held.remove(&seq).expect("listed above");
            plumbing::timers::cancel(timer);
            let delay = st.latency_ns(datagram.from_node, datagram.to_node);
            st.udp.arm(now + delay, datagram);
        }
    }

    /// A node was killed: its sockets close and their queues are lost.
    pub(crate) fn udp_node_killed(&self, node: NodeId, wakers: &mut Wakers) {
        let mut guard = self.state.borrow_mut();
        let st = &mut *guard;
        for (id, socket) in st.udp.sockets.iter_mut() {
            if socket.node == node && !socket.killed {
                socket.killed = true;
                socket.queue.clear();
                socket.queued_bytes = 0;
                socket.waiters.take_into(wakers);
                st.ports
                    .release(node.index() as u32, Proto::Udp, socket.local.port(), id);
            }
        }
    }
}

impl State {
    /// Records a datagram dropped on arrival; `source` says why (a consequence of a fault or of
    /// load, not a fault of its own).
    fn udp_drop(&mut self, datagram: &Datagram, why: UdpDrop) {
        let note = NetNote::UdpDropped {
            from: pack(datagram.from),
            to: pack(datagram.to),
            why,
        };
        trace(self.recorder(datagram), note);
    }

    /// The node a datagram's arrival is recorded for: its destination, or its sender when the
    /// destination is no node the network knows.
    fn recorder(&self, datagram: &Datagram) -> NodeId {
        self.node(datagram.to_node)
            .or_else(|| self.node(datagram.from_node))
            .expect("a datagram's sender is a known node")
    }

    /// A datagram found no socket at its port on a live node: as Linux's ICMP port
    /// unreachable does, it leaves its sender, if that is connected to this very address, an
    /// error for its next call, and wakes its receivers to take it. The message comes back at
    /// once, with the datagram's arrival, if the way back is open (a cut or clogged way back
    /// loses it); an unconnected sender never learns of it.
    fn udp_port_unreachable(&mut self, datagram: &Datagram, wakers: &mut Wakers) {
        if self
            .links
            .verdict(datagram.to_node, datagram.from_node, now())
            != Verdict::Open
        {
            return;
        }
        let sender = self
            .ports
            .owner(datagram.from_node, Proto::Udp, datagram.from.port())
            .and_then(|id| self.udp.sockets.get_mut(&id))
            .filter(|s| !s.killed && s.peer == Some(datagram.to));
        if let Some(sender) = sender {
            sender.refused = true;
            sender.waiters.take_into(wakers);
        }
    }

    /// Puts an arrived datagram in its socket's queue; adds the receivers to wake.
    fn udp_deliver(&mut self, datagram: Datagram, wakers: &mut Wakers) {
        if self.is_dead(datagram.to_node) {
            self.udp_drop(&datagram, UdpDrop::Dead);
            return;
        }
        let owner = self
            .ports
            .owner(datagram.to_node, Proto::Udp, datagram.to.port());
        let capacity = self.config.udp_receive_buffer;
        let socket = owner
            .and_then(|id| self.udp.sockets.get_mut(&id))
            .filter(|s| {
                !s.killed
                    && (s.local.ip().is_unspecified()
                        || s.local.ip().is_loopback() == datagram.to.ip().is_loopback())
                    && s.peer.is_none_or(|peer| peer == datagram.from)
            });
        let Some(socket) = socket else {
            self.udp_port_unreachable(&datagram, wakers);
            self.udp_drop(&datagram, UdpDrop::Unbound);
            return;
        };
        if socket.queued_bytes + datagram.payload.len() > capacity {
            self.udp_drop(&datagram, UdpDrop::Overflow);
            return;
        }
        assert!(
            socket.peer.is_none_or(|peer| peer == datagram.from),
            "a connected socket queues only its peer's datagrams"
        );
        let node = socket.node;
        let Datagram {
            from, to, payload, ..
        } = datagram;
        trace(
            node,
            NetNote::UdpRecv {
                from: pack(from),
                to: pack(to),
                len: payload.len() as u64,
            },
        );
        socket.queued_bytes += payload.len();
        socket.queue.push_back((from, payload));
        assert!(
            socket.queued_bytes <= capacity,
            "a socket queues at most its receive buffer"
        );
        socket.waiters.take_into(wakers);
    }
}
