//! The TCP handshake: SYN, SYN-ACK, refusals, retransmitted SYNs and connect timeouts.
//!
//! A connect sends a SYN that arrives after one latency. There, in this order:
//! - if either direction between the two nodes is cut, or the server node is dead, or its
//!   listener's backlog is full, the SYN is lost and retransmitted after 1 s, 2 s, 4 s, ...
//!   (Linux's schedule) until `connect_timeout`, which fails the connect with `TimedOut`;
//! - a clog holds the SYN until it lifts;
//! - if no listener has the port (or no node has the address), an RST comes back after one
//!   latency: `ConnectionRefused`;
//! - otherwise the connection joins the listener's accept queue at once and the SYN-ACK
//!   reaches the client one latency later, when `connect` returns. Bytes the server writes
//!   meanwhile arrive after the SYN-ACK.
//!
//! Dropping a connect future (a timeout around it) cancels the attempt; if the server had
//! already queued the connection, it receives an RST.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crashtest_core::node::NodeId;
use crashtest_core::plumbing::{self, timers::TimerKey};

use super::conn::{Conn, End, Handle, Pipe};
use super::stream::Shared;
use crate::addr::{Place, check_bind_ip, place_of, v4_of};
use crate::config::nanos;
use crate::errors;
use crashtest_protocol::NetNote;

use crate::fabric::{self, Net, Wakers, current_node, now, pack, register, trace};
use crate::links::Verdict;
use crate::ports::Proto;

/// The first SYN retransmission timeout (Linux's `TCP_TIMEOUT_INIT`); it doubles each time.
const SYN_RTO: Duration = Duration::from_secs(1);

/// A connect in progress; its id becomes the connection's.
#[derive(Debug)]
pub(crate) struct Connecting {
    node: NodeId,
    local: SocketAddr,
    remote: SocketAddr,
    from: u32,
    to: u32,
    deadline: u64,
    attempts: u32,
    timer: Option<TimerKey>,
    waker: Option<Waker>,
    outcome: Option<Result<(), io::ErrorKind>>,
    /// The server queued the connection (the SYN got through).
    established: bool,
}

impl Connecting {
    /// Calls `waiting` with the waker of the task waiting for this connect.
    pub(super) fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str)) {
        if let Some(waker) = &self.waker {
            waiting(
                waker,
                &format!("connecting tcp {} -> {}", self.local, self.remote),
            );
        }
    }
}

/// The future of one connect attempt to one address (`Send`, like every socket type: it holds
/// only the attempt's id).
pub(crate) struct Connect {
    /// The run that started it (see [`fabric::net_of`]).
    run: u32,
    id: u64,
    finished: bool,
}

impl Connect {
    /// Sends the SYN to `remote` from the calling node, from the address a socket was bound to
    /// (`None`, or port 0, for an ephemeral port, as a socket never bound gets): `AddrInUse` if
    /// that port is taken, `AddrNotAvailable` if the address is another node's.
    pub(crate) fn start(remote: SocketAddr, local: Option<SocketAddr>) -> io::Result<Connect> {
        let net = &fabric::net();
        let node = current_node();
        let from = node.index() as u32;
        let (to, mut local_ip) = match place_of(remote.ip()) {
            Place::Nowhere => {
                return Err(errors::network_unreachable());
            }
            Place::Loopback => {
                let ip = match remote.ip() {
                    IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                    IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                };
                (from, ip)
            }
            Place::Node(to) => (to, IpAddr::V4(v4_of(from))),
        };
        let remote = if remote.ip().is_unspecified() {
            SocketAddr::new(local_ip, remote.port())
        } else {
            remote
        };
        let mut local_port = 0;
        if let Some(local) = local {
            check_bind_ip(from, local.ip())?;
            local_port = local.port();
            if !local.ip().is_unspecified() {
                // Linux will not send from a loopback address beyond the machine (the other
                // way, from its own address to its loopback, it does).
                if local.ip().is_loopback() && !local_ip.is_loopback() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "invalid argument: a socket bound to a loopback address connects only \
                         to its own node",
                    ));
                }
                local_ip = local.ip();
            }
        }
        let mut guard = net.state.borrow_mut();
        let st = &mut *guard;
        st.learn(node);
        let id = st.next_id();
        // A connect that finds no free port says `EADDRNOTAVAIL`, as Linux's does.
        let port = crate::fabric::draw(|rng| match local_port {
            0 => st.ports.ephemeral(from, Proto::Tcp, id, rng),
            port => st.ports.bind(from, Proto::Tcp, port, id, rng),
        })?;
        assert!(
            local_port == 0 || port == local_port,
            "a connect from a bound port uses that port"
        );
        let now = now();
        let at = now + st.latency_ns(from, to);
        let timer = Some(arm_syn(id, at));
        st.tcp.connecting.insert(
            id,
            Connecting {
                node,
                local: SocketAddr::new(local_ip, port),
                remote,
                from,
                to,
                deadline: now.saturating_add(nanos(st.config.connect_timeout)),
                attempts: 0,
                timer,
                waker: None,
                outcome: None,
                established: false,
            },
        );
        trace(
            node,
            NetNote::TcpSyn {
                conn: id,
                remote: pack(remote),
                at_ns: at,
            },
        );
        Ok(Connect {
            run: net.run,
            id,
            finished: false,
        })
    }
}

/// Arms the arrival of connection `id`'s SYN (a function and the id: no allocation per
/// connection).
fn arm_syn(id: u64, at: u64) -> TimerKey {
    plumbing::timers::call_function_at(at, |id| crate::fabric::net().tcp_syn_arrived(id), id)
}

fn arm_outcome(net: &Rc<Net>, id: u64, at: u64, outcome: Result<(), io::ErrorKind>) -> TimerKey {
    let net = Rc::clone(net);
    plumbing::timers::call_at(at, move || net.tcp_connect_outcome(id, outcome))
}

impl Future for Connect {
    type Output = io::Result<Shared>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<Shared>> {
        let this = &mut *self;
        let net = fabric::net_of(this.run, "a TCP connect");
        let mut guard = net.state.borrow_mut();
        let st = &mut *guard;
        let connecting = st
            .tcp
            .connecting
            .get_mut(&this.id)
            .expect("a pending connect keeps its entry");
        let Some(outcome) = connecting.outcome.take() else {
            register(&mut connecting.waker, cx.waker());
            return Poll::Pending;
        };
        let connecting = st.tcp.connecting.remove(&this.id).expect("looked up above");
        assert!(!this.finished, "a connect completes once");
        this.finished = true;
        match outcome {
            Ok(()) => {
                let conn = st
                    .tcp
                    .conns
                    .get_mut(&this.id)
                    .expect("an established connect has its connection");
                conn.ends[0].handle = Handle::Open;
                drop(guard);
                Poll::Ready(Ok(Shared::new(
                    net.run,
                    this.id,
                    0,
                    connecting.local,
                    connecting.remote,
                )))
            }
            Err(kind) => {
                let port = connecting.local.port();
                st.ports.release(connecting.from, Proto::Tcp, port, this.id);
                Poll::Ready(Err(errors::connection(kind)))
            }
        }
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let Some(net) = fabric::try_net_of(self.run) else {
            return;
        };
        let mut wakers = Wakers::default();
        {
            let mut guard = net.state.borrow_mut();
            let st = &mut *guard;
            let Some(connecting) = st.tcp.connecting.remove(&self.id) else {
                return;
            };
            if let Some(timer) = connecting.timer {
                plumbing::timers::cancel(timer);
            }
            if connecting.established {
                let conn = st.tcp.conns.get_mut(&self.id).expect("established above");
                conn.ends[0].handle = Handle::Closed;
                st.tcp_abort(
                    &net,
                    self.id,
                    0,
                    io::ErrorKind::ConnectionAborted,
                    &mut wakers,
                );
                st.tcp_forget_if_closed(self.id);
            } else {
                let port = connecting.local.port();
                st.ports.release(connecting.from, Proto::Tcp, port, self.id);
            }
        }
        wakers.wake();
    }
}

impl Net {
    /// The SYN of connect `id` is due at the server.
    fn tcp_syn_arrived(self: &Rc<Net>, id: u64) {
        let mut wakers = Wakers::default();
        {
            let mut guard = self.state.borrow_mut();
            let st = &mut *guard;
            let Some(c) = st.tcp.connecting.get_mut(&id) else {
                return;
            };
            c.timer = None;
            let (from, to, node, remote) = (c.from, c.to, c.node, c.remote);
            let now = now();
            let there = st.links.verdict(from, to, now);
            let back = st.links.verdict(to, from, now);
            let held = [there, back]
                .into_iter()
                .filter_map(|v| match v {
                    Verdict::HeldUntil(until) => Some(until),
                    _ => None,
                })
                .max();
            let cut = there == Verdict::Cut || back == Verdict::Cut;
            let server = st.node(to);
            let listener = st
                .ports
                .owner(to, Proto::Tcp, remote.port())
                .and_then(|lid| st.tcp.listeners.get(&lid).map(|l| (lid, l)))
                .filter(|(_, l)| l.accepts(remote.ip()))
                .map(|(lid, l)| (lid, l.queue_len()));
            if cut || st.is_dead(to) {
                self.tcp_syn_lost(st, id, now);
            } else if let Some(until) = held {
                let c = st.tcp.connecting.get_mut(&id).expect("looked up above");
                c.timer = Some(arm_syn(id, until));
            } else {
                match (server, listener) {
                    (Some(server), Some((lid, queued))) => {
                        if queued >= st.config.accept_backlog {
                            self.tcp_syn_lost(st, id, now);
                        } else {
                            let at = now + st.latency_ns(to, from);
                            let c = st.tcp.connecting.get_mut(&id).expect("looked up above");
                            c.established = true;
                            c.timer = Some(arm_outcome(self, id, at, Ok(())));
                            let mut pipes = [Pipe::default(), Pipe::default()];
                            for pipe in &mut pipes {
                                pipe.not_before(at);
                            }
                            let conn = Conn {
                                ends: [
                                    End::new(node, c.local, Handle::Connecting),
                                    End::new(server, remote, Handle::Queued),
                                ],
                                pipes,
                            };
                            st.tcp.conns.insert(id, conn);
                            let listener = st.tcp.listeners.get_mut(&lid).expect("found above");
                            listener.enqueue(id, &mut wakers);
                            assert!(
                                listener.queue_len() <= st.config.accept_backlog,
                                "a listener queues at most its backlog"
                            );
                            let note = NetNote::TcpAccept {
                                conn: id,
                                listener: lid,
                                at_ns: at,
                            };
                            trace(server, note);
                        }
                    }
                    _ => {
                        let at = now + st.latency_ns(to, from);
                        let c = st.tcp.connecting.get_mut(&id).expect("looked up above");
                        c.timer = Some(arm_outcome(
                            self,
                            id,
                            at,
                            Err(io::ErrorKind::ConnectionRefused),
                        ));
                        let note = NetNote::TcpRefused {
                            conn: id,
                            remote: pack(remote),
                            at_ns: at,
                        };
                        trace(node, note);
                    }
                }
            }
        }
        wakers.wake();
    }

    /// The SYN of connect `id` got no answer: retransmit it, or give up at the deadline.
    fn tcp_syn_lost(self: &Rc<Net>, st: &mut crate::fabric::State, id: u64, now: u64) {
        let c = st
            .tcp
            .connecting
            .get_mut(&id)
            .expect("a lost SYN has its connect");
        let backoff = nanos(SYN_RTO) << c.attempts.min(16);
        c.attempts += 1;
        assert!(
            backoff >= nanos(SYN_RTO),
            "a SYN is retried after at least the first RTO"
        );
        let retry = now.saturating_add(backoff);
        c.timer = Some(if retry >= c.deadline {
            arm_outcome(self, id, c.deadline, Err(io::ErrorKind::TimedOut))
        } else {
            arm_syn(id, retry)
        });
        trace(
            c.node,
            NetNote::TcpSynLost {
                conn: id,
                attempts: u64::from(c.attempts),
                retry_ns: retry,
            },
        );
    }

    /// Connect `id` learns its fate (the SYN-ACK or RST arrived, or it timed out).
    fn tcp_connect_outcome(&self, id: u64, outcome: Result<(), io::ErrorKind>) {
        let waker = {
            let mut st = self.state.borrow_mut();
            let Some(c) = st.tcp.connecting.get_mut(&id) else {
                return;
            };
            assert!(c.outcome.is_none(), "a connect learns its fate once");
            assert_eq!(
                outcome.is_ok(),
                c.established,
                "a connect succeeds exactly when its SYN reached a listener"
            );
            c.timer = None;
            c.outcome = Some(outcome);
            c.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl crate::fabric::State {
    /// Connects in progress on a killed node fail with `ConnectionAborted` (their futures
    /// usually died with the node; one held elsewhere sees the error).
    pub(super) fn tcp_connects_killed(&mut self, node: NodeId, wakers: &mut Wakers) {
        for c in self.tcp.connecting.values_mut() {
            if c.node == node && c.outcome.is_none() && !c.established {
                if let Some(timer) = c.timer.take() {
                    plumbing::timers::cancel(timer);
                }
                c.outcome = Some(Err(io::ErrorKind::ConnectionAborted));
                wakers.push(c.waker.take());
            }
        }
    }
}
