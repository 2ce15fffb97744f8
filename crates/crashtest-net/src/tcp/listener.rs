//! `TcpListener`: a bound port and its accept queue.
//!
//! The queue holds connections whose SYN got through (see [`super::connect`]); `accept` takes
//! them in arrival order. A full queue (the backlog) makes new SYNs be dropped and retried by
//! the client, as on Linux. Dropping the listener, or killing its node, frees the port and
//! resets the connections still queued.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crashtest_core::node::{NodeId, NodeStatus};
use crashtest_core::plumbing;

use crashtest_io::SimOrReal;
use crashtest_protocol::NetNote;
use delegate::delegate;

use super::conn::Handle;
use super::stream::{Shared, TcpStream};
use crate::addr::{self, ToSocketAddrs};
use crate::errors;
use crate::fabric::{self, Net, State, WaitList, Wakers, current_node, pack, trace};
use crate::ports::Proto;

/// A listener's state in the network.
#[derive(Debug)]
pub(crate) struct ListenerState {
    node: NodeId,
    local: SocketAddr,
    queue: VecDeque<u64>,
    /// The tasks waiting to accept.
    waiters: WaitList,
    /// Its node was killed: the port is free and `accept` fails.
    killed: bool,
}

impl ListenerState {
    /// Calls `waiting` with the wakers of the tasks waiting to accept.
    pub(super) fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str)) {
        let accepting = format!("accepting tcp on {}", self.local);
        self.waiters.iter().for_each(|w| waiting(w, &accepting));
    }

    /// True if a SYN for `dialed` reaches this listener: one bound to a loopback address
    /// hears only loopback connects, one bound to the node's address only the others.
    pub(super) fn accepts(&self, dialed: IpAddr) -> bool {
        !self.killed
            && (self.local.ip().is_unspecified()
                || self.local.ip().is_loopback() == dialed.is_loopback())
    }

    pub(super) fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Queues connection `id`; adds the acceptors to wake.
    pub(super) fn enqueue(&mut self, id: u64, wakers: &mut Wakers) {
        self.queue.push_back(id);
        self.waiters.take_into(wakers);
    }
}

/// A TCP socket listening for connections, like `tokio::net::TcpListener`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// use crashtest::{node, Sim};
/// use crashtest::net::{TcpListener, TcpStream};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// Sim::new(1).run(async {
///     node::create("server", || async {
///         let listener = TcpListener::bind("0.0.0.0:7000").await.unwrap();
///         loop {
///             let (mut stream, _) = listener.accept().await.unwrap();
///             stream.write_all(b"hello").await.unwrap();
///         }
///     });
///     crashtest::time::sleep(std::time::Duration::from_millis(1)).await;
///     let mut stream = TcpStream::connect("server:7000").await.unwrap();
///     let mut greeting = [0; 5];
///     stream.read_exact(&mut greeting).await.unwrap();
///     assert_eq!(&greeting, b"hello");
/// }).unwrap();
/// ```
#[derive(Debug)]
pub struct TcpListener {
    inner: SimOrReal<SimListener, tokio::net::TcpListener>,
}

/// The simulated side of a listener: its id in the network's tables. Dropping it closes the
/// listener.
#[derive(Debug)]
pub(crate) struct SimListener {
    /// The run that made it (see [`fabric::net_of`]).
    run: u32,
    id: u64,
    local: SocketAddr,
}

impl TcpListener {
    /// Binds a listener on the calling node. The address's IP must be unspecified
    /// (`0.0.0.0`), loopback, or the node's own; port 0 picks an ephemeral port.
    ///
    /// # Errors
    ///
    /// `AddrInUse` if the port is taken, `AddrNotAvailable` for another node's IP.
    ///
    /// Outside a simulation this is `tokio::net::TcpListener::bind`.
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
    /// use crashtest::net::TcpListener;
    /// let listener = TcpListener::bind("0.0.0.0:0").await.unwrap();
    /// assert_ne!(listener.local_addr().unwrap().port(), 0);
    /// let taken = listener.local_addr().unwrap();
    /// let err = TcpListener::bind(taken).await.unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    /// # }).unwrap();
    /// ```
    pub async fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let inner = addr::open(
            &addr,
            |addrs| async move { tokio::net::TcpListener::bind(&addrs[..]).await },
            |addr| std::future::ready(bind_one(addr)),
        )
        .await?;
        Ok(TcpListener { inner })
    }

    /// Waits for a connection; returns the stream and the peer's address.
    ///
    /// # Errors
    ///
    /// `ConnectionAborted` once the listener's node has been killed.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as tokio's: a connection leaves the accept queue only in the poll that
    /// returns it, so a dropped accept (a select! branch that lost) loses no connection; the
    /// next accept gets it.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::net::{TcpListener, TcpStream};
    /// let listener = TcpListener::bind("127.0.0.1:9000").await.unwrap();
    /// let client = crashtest::spawn(TcpStream::connect("127.0.0.1:9000"));
    /// let (_stream, peer) = listener.accept().await.unwrap();
    /// assert_eq!(peer, client.await.unwrap().unwrap().local_addr().unwrap());
    /// # }).unwrap();
    /// ```
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        match &self.inner {
            // tokio's `poll_accept` wakes only the last task to poll; its `accept` wakes every
            // task that awaits one.
            SimOrReal::Real(listener) => {
                let (stream, peer) = listener.accept().await?;
                Ok((TcpStream::from_tokio(stream), peer))
            }
            SimOrReal::Sim(_) => poll_fn(|cx| self.poll_accept(cx)).await,
        }
    }

    /// Polls for a connection: the poll form of [`TcpListener::accept`].
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::net::TcpListener;
    /// let listener = TcpListener::bind("0.0.0.0:9000").await.unwrap();
    /// let waker = std::task::Waker::noop();
    /// let mut cx = std::task::Context::from_waker(&waker);
    /// assert!(listener.poll_accept(&mut cx).is_pending());
    /// # }).unwrap();
    /// ```
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        match &self.inner {
            SimOrReal::Sim(listener) => listener
                .poll_accept(cx)
                .map_ok(|(socket, peer)| (TcpStream::from_socket(socket), peer)),
            SimOrReal::Real(listener) => listener
                .poll_accept(cx)
                .map_ok(|(stream, peer)| (TcpStream::from_tokio(stream), peer)),
        }
    }

    delegate! {
        to match &self.inner {
            SimOrReal::Sim(listener) => listener,
            SimOrReal::Real(listener) => listener,
        } {
            /// The address the listener is bound to.
            ///
            /// ```
            /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
            /// # crashtest::Sim::new(1).run(async {
            /// let l = crashtest::net::TcpListener::bind("0.0.0.0:80").await.unwrap();
            /// assert_eq!(l.local_addr().unwrap().to_string(), "0.0.0.0:80");
            /// # }).unwrap();
            /// ```
            pub fn local_addr(&self) -> io::Result<SocketAddr>;
        }
    }
}

impl SimListener {
    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    /// Takes the first connection of the queue, or registers the acceptor to be woken.
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(Shared, SocketAddr)>> {
        let net = fabric::net_of(self.run, "a TCP listener");
        let mut guard = net.state.borrow_mut();
        let st = &mut *guard;
        let listener = st
            .tcp
            .listeners
            .get_mut(&self.id)
            .expect("a listener keeps its state while it lives");
        if listener.killed {
            return Poll::Ready(Err(errors::connection(io::ErrorKind::ConnectionAborted)));
        }
        let Some(id) = listener.queue.pop_front() else {
            listener.waiters.register(cx.waker());
            return Poll::Pending;
        };
        let conn = st
            .tcp
            .conns
            .get_mut(&id)
            .expect("a queued connection lives until accepted");
        conn.ends[1].handle = Handle::Open;
        let (local, peer, node) = (conn.ends[1].local, conn.ends[0].local, conn.ends[1].node);
        trace(
            node,
            NetNote::TcpAccepted {
                conn: id,
                peer: pack(peer),
            },
        );
        drop(guard);
        Poll::Ready(Ok((Shared::new(net.run, id, 1, local, peer), peer)))
    }
}

fn bind_one(addr: SocketAddr) -> io::Result<SimListener> {
    let net = fabric::net();
    let node = current_node();
    let mut guard = net.state.borrow_mut();
    let st = &mut *guard;
    let (id, port) = st.bind_port(node, Proto::Tcp, addr)?;
    let local = SocketAddr::new(addr.ip(), port);
    st.tcp.listeners.insert(
        id,
        ListenerState {
            node,
            local,
            queue: VecDeque::new(),
            waiters: WaitList::default(),
            killed: false,
        },
    );
    trace(
        node,
        NetNote::TcpListen {
            listener: id,
            local: pack(local),
        },
    );
    Ok(SimListener {
        run: net.run,
        id,
        local,
    })
}

impl Drop for SimListener {
    fn drop(&mut self) {
        let id = self.id;
        let Some(net) = fabric::try_net_of(self.run) else {
            return;
        };
        let mut wakers = Wakers::default();
        {
            let mut guard = net.state.borrow_mut();
            let st = &mut *guard;
            let Some(listener) = st.tcp.listeners.remove(&id) else {
                return;
            };
            if !listener.killed {
                st.tcp_close_listener(&net, id, listener, &mut wakers);
            }
        }
        wakers.wake();
    }
}

impl State {
    /// Frees a listener's port and resets the connections in its queue (which die with the
    /// listener's node if it is dead, whether its hook or the drop of its tasks closes it).
    fn tcp_close_listener(
        &mut self,
        net: &Rc<Net>,
        id: u64,
        listener: ListenerState,
        wakers: &mut Wakers,
    ) {
        let index = listener.node.index() as u32;
        self.ports
            .release(index, Proto::Tcp, listener.local.port(), id);
        let dead = plumbing::life::node_status(listener.node) == Some(NodeStatus::Dead);
        for conn in listener.queue {
            if dead {
                self.tcp_end_dies(net, conn, 1, wakers);
            } else {
                self.tcp_abort(net, conn, 1, io::ErrorKind::ConnectionAborted, wakers);
            }
        }
        let mut waiters = listener.waiters;
        waiters.take_into(wakers);
    }

    /// A node was killed: its listeners close.
    pub(super) fn tcp_listeners_killed(
        &mut self,
        net: &Rc<Net>,
        node: NodeId,
        wakers: &mut Wakers,
    ) {
        let ids: Vec<u64> = self
            .tcp
            .listeners
            .iter()
            .filter(|(_, l)| l.node == node && !l.killed)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            let listener = self.tcp.listeners.get_mut(&id).expect("listed above");
            listener.killed = true;
            let closing = ListenerState {
                node: listener.node,
                local: listener.local,
                queue: std::mem::take(&mut listener.queue),
                waiters: std::mem::take(&mut listener.waiters),
                killed: true,
            };
            self.tcp_close_listener(net, id, closing, wakers);
        }
    }
}
