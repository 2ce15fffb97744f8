//! The network of one run: its state, its random source, and how it talks to the world.
//!
//! All of a run's network state sits in one [`Net`], a `crashtest_core` extension created on
//! first use, behind one `RefCell`. Sockets hold only ids and addresses, so that they are
//! `Send` and `Sync` like tokio's (user code moves them into `spawn`ed tasks); each operation
//! finds the run's `Net` through the thread's world. Packets travel as timer callbacks, never
//! as tasks: a TCP delivery or a SYN as a function and a word naming its connection
//! (`plumbing::timers::call_function_at`, which allocates nothing and finds the `Net` when it
//! fires), anything carrying more (a datagram, a connect's outcome) as a closure holding the
//! `Rc<Net>` (`plumbing::timers::call_at`).
//!
//! Randomness: at first use the network forks a generator from the run's `"network"` stream
//! and draws every decision from it (latencies, ports, whether a fault comes up), so the
//! network's choices depend on the seed and on the network's own history only.
//!
//! Faults: when a drawn fault comes up it goes through `crashtest_core::fault::inject` (see
//! [`applies`]), which numbers it, lists it in the failure report, and may mask it (fault
//! minimization) or refuse it (the run has healed). Everything the fault model draws is drawn
//! before that verdict and whatever it is, so a replay with faults masked stays aligned.
//!
//! Invariants:
//! - No borrow of the state is held while foreign code runs: wakers are collected under the
//!   borrow and woken after it ends.
//! - Every packet sent, delivered, dropped or duplicated, and every fault, is recorded in the
//!   trace on behalf of the node it concerns, so it feeds the fingerprint. Records are
//!   `crashtest_protocol::NetNote`s (the tool decodes them with the same type): integer words
//!   and an empty text, so no formatting per packet.

use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::Waker;

use crashtest_core::fault;
use crashtest_core::node::{NodeId, NodeStatus};
use crashtest_core::plumbing::checks::ExtensionCache;
use crashtest_core::plumbing::{self, life::NodeHook};
use crashtest_core::rng::{Ratio, Rng, Stream};
use crashtest_protocol::{NetNote, PackedAddr};

use crate::addr::check_bind_ip;
use crate::config::NetConfig;
use crate::hold::Holds;
use crate::links::Links;
use crate::ports::{Ports, Proto};
use crate::tcp::TcpTables;
use crate::udp::UdpTables;

/// The network of one run.
pub(crate) struct Net {
    pub(crate) state: RefCell<State>,
    started: Cell<bool>,
    /// The run this network belongs to, and so every socket it makes (see [`net_of`]).
    pub(crate) run: u32,
}

impl Default for Net {
    fn default() -> Net {
        Net {
            state: RefCell::new(State {
                config: NetConfig::default(),
                nodes: Vec::new(),
                links: Links::default(),
                ports: Ports::default(),
                tcp: TcpTables::default(),
                udp: UdpTables::default(),
                holds: Holds::default(),
                next_id: 1,
            }),
            run: plumbing::run_tag().expect("a network is made inside its run"),
            started: Cell::new(false),
        }
    }
}

/// Everything the network knows, borrowed as one.
pub(crate) struct State {
    pub(crate) config: NetConfig,
    /// Nodes seen so far, at their index: those that used the network or were named to it.
    /// Indexed, not searched: a program that names its peers tells the network of one on
    /// every send.
    nodes: Vec<Option<NodeId>>,
    pub(crate) links: Links,
    pub(crate) ports: Ports,
    pub(crate) tcp: TcpTables,
    pub(crate) udp: UdpTables,
    pub(crate) holds: Holds,
    next_id: u64,
}

/// The network of the running simulation.
///
/// # Panics
///
/// Panics outside a simulation.
#[inline]
pub(crate) fn net() -> Rc<Net> {
    CURRENT
        .with(|current| {
            current.get(|net| {
                if !net.started.replace(true) {
                    let life_cycle = Rc::new(LifeCycle(Rc::clone(net)));
                    plumbing::life::add_node_hook(life_cycle.clone());
                    plumbing::faults::add_healer(life_cycle);
                    plumbing::checks::add_wait_witness(Rc::new(Waits(Rc::clone(net))));
                }
            })
        })
        .expect("crashtest-net sockets and controls only work inside a simulation")
}

thread_local! {
    /// The network of the run going on on this thread, cached so that socket calls skip the
    /// extension lookup.
    static CURRENT: ExtensionCache<Net> = const { ExtensionCache::new() };
}

/// The network of the running simulation, if one runs (destructors may run after the end
/// of a run, or outside any).
pub(crate) fn try_net() -> Option<Rc<Net>> {
    plumbing::is_simulation().then(net)
}

/// The network of run `run`, for `what` (a socket made in that run): the running one's, or
/// the run fails with a refusal that names the cause, and the call panics.
///
/// A socket kept past its run (a client with a connection pool in a `static`) names its
/// connection by an id of that run's network; in a later run the id names another
/// connection, or none, so using it would corrupt the run or wait forever.
#[inline]
pub(crate) fn net_of(run: u32, what: &str) -> Rc<Net> {
    let net = net();
    if net.run != run {
        kept_past_its_run(what);
    }
    net
}

/// The network of run `run` for a socket's destructor: `None` if no simulation runs or
/// another one does (a socket of an earlier run has nothing to close in this one).
pub(crate) fn try_net_of(run: u32) -> Option<Rc<Net>> {
    try_net().filter(|net| net.run == run)
}

#[cold]
fn kept_past_its_run(what: &str) -> ! {
    plumbing::checks::refuse(format!(
        "{what} made in an earlier simulation was used in this one. A simulated socket \
         belongs to the run that made it; something kept it between runs, most likely a \
         `static` (`LazyLock`, `OnceLock`, `lazy_static!`) or a thread-local holding a client \
         with a connection pool (reqwest, hyper-util, tonic). Make the client inside the run, \
         in the node that uses it, so that each run has its own."
    ));
    panic!("crashtest: {what} made in an earlier simulation was used in this one");
}

/// Virtual time now, in nanoseconds.
#[inline]
pub(crate) fn now() -> u64 {
    plumbing::timers::now_ns().expect("the network runs inside a simulation")
}

/// The node the calling task runs on.
pub(crate) fn current_node() -> NodeId {
    plumbing::current_node().expect("the network runs inside a simulation")
}

/// Stores `waker` in `slot` unless it would wake the same task already (no clone per poll).
#[inline]
pub(crate) fn register(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(current) if current.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

/// The tasks waiting on one socket for the same event: a datagram to receive, a connection
/// to accept. tokio lets any number of tasks await one socket through a shared reference
/// (`recv_from` or `accept` on an `Arc`), so each waiting task keeps its own entry; the event
/// wakes them all and the first to poll takes it, the others wait again, as tokio's readiness
/// does. A task already listed is not listed twice, so a task that polls again (a `select!`
/// loop) costs no clone and no entry; an entry left by a future that was dropped costs its
/// task one spurious wake, which a future must tolerate anyway.
#[derive(Debug, Default)]
pub(crate) struct WaitList {
    /// Inline, so that one waiting task (the common case) does not allocate.
    first: Option<Waker>,
    rest: Vec<Waker>,
}

impl WaitList {
    /// Lists `waker`'s task, unless it is listed already.
    #[inline]
    pub(crate) fn register(&mut self, waker: &Waker) {
        match &self.first {
            None => {
                debug_assert!(self.rest.is_empty(), "the inline entry fills first");
                self.first = Some(waker.clone());
            }
            Some(first) if first.will_wake(waker) => {}
            Some(_) => {
                if !self.rest.iter().any(|listed| listed.will_wake(waker)) {
                    self.rest.push(waker.clone());
                }
            }
        }
    }

    /// Moves every listed waker to `wakers`, to be woken once no borrow is held.
    #[inline]
    pub(crate) fn take_into(&mut self, wakers: &mut Wakers) {
        wakers.push(self.first.take());
        if !self.rest.is_empty() {
            wakers.rest.append(&mut self.rest);
        }
        assert!(
            self.is_empty(),
            "a wait list hands over every waker it lists"
        );
    }

    /// Wakes every listed task, in the order listed (for a caller that took the list out
    /// from under its borrow, without gathering a `Wakers`).
    #[inline]
    pub(crate) fn wake(self) {
        if let Some(first) = self.first {
            first.wake();
        }
        for waker in self.rest {
            waker.wake();
        }
    }

    /// The listed wakers, in the order listed.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Waker> {
        self.first.iter().chain(&self.rest)
    }

    /// True when no task waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }
}

/// Records a network note on behalf of `node`: integer words, no text.
#[inline]
pub(crate) fn trace(node: NodeId, note: NetNote) {
    let (source, words) = note.encode();
    plumbing::notes::record_for(node, source, words, String::new());
}

/// Packs a socket address into one trace word.
#[inline]
pub(crate) fn pack(addr: SocketAddr) -> PackedAddr {
    PackedAddr::pack(addr)
}

impl Net {
    /// Remembers `node`, so that its address can be reached and it can take part in random
    /// faults.
    pub(crate) fn learn(&self, node: NodeId) {
        self.state.borrow_mut().learn(node);
    }
}

impl State {
    pub(crate) fn learn(&mut self, node: NodeId) {
        let index = node.index();
        if index >= self.nodes.len() {
            self.nodes.resize(index + 1, None);
        }
        self.nodes[index] = Some(node);
    }

    /// A fresh id for a socket or connection.
    pub(crate) fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id = id.checked_add(1).expect("socket ids never run out");
        assert!(id > 0, "id 0 is never handed out");
        id
    }

    /// Gives a new socket of `node` the port `addr` names for `proto` (a free ephemeral one
    /// for port 0), as a bind does: `AddrNotAvailable` for another node's address,
    /// `AddrInUse` for a taken port. Returns the socket's fresh id and its port. The one bind
    /// of listeners, UDP sockets and port holds.
    pub(crate) fn bind_port(
        &mut self,
        node: NodeId,
        proto: Proto,
        addr: SocketAddr,
    ) -> io::Result<(u64, u16)> {
        let index = node.index() as u32;
        check_bind_ip(index, addr.ip())?;
        self.learn(node);
        let id = self.next_id();
        let port = draw(|rng| self.ports.bind(index, proto, addr.port(), id, rng))?;
        Ok((id, port))
    }

    /// The node of index `index`, if the network has seen it.
    #[inline]
    pub(crate) fn node(&self, index: u32) -> Option<NodeId> {
        self.nodes.get(index as usize).copied().flatten()
    }

    /// True if the node of `index` is known to be dead (a dead host answers nothing).
    pub(crate) fn is_dead(&self, index: u32) -> bool {
        self.node(index)
            .and_then(plumbing::life::node_status)
            .is_some_and(|status| status == NodeStatus::Dead)
    }

    /// A one-way delay for `from` → `to`; loopback is ten times faster (FoundationDB scales
    /// its in-process connections by 0.1).
    #[inline]
    pub(crate) fn latency_ns(&mut self, from: u32, to: u32) -> u64 {
        latency_ns(&self.config, from, to)
    }

    /// The name of the node of `index`, for fault descriptions.
    pub(crate) fn name_of(&self, index: u32) -> String {
        self.node(index)
            .and_then(plumbing::life::node_name)
            .unwrap_or_else(|| crate::addr::v4_of(index).to_string())
    }
}

/// [`State::latency_ns`] for callers that hold a borrow of another part of the state.
#[inline]
pub(crate) fn latency_ns(config: &NetConfig, from: u32, to: u32) -> u64 {
    let delay = draw(|rng| config.latency.draw_ns(rng));
    if from == to { delay / 10 } else { delay }
}

/// Wakers collected under a borrow of the state, woken after it: the first two inline, so
/// that the hot path (one reader or writer to wake) does not allocate.
#[derive(Default)]
pub(crate) struct Wakers {
    first: Option<Waker>,
    second: Option<Waker>,
    rest: Vec<Waker>,
}

impl Wakers {
    #[inline]
    pub(crate) fn push(&mut self, waker: Option<Waker>) {
        let Some(waker) = waker else { return };
        if self.first.is_none() {
            self.first = Some(waker);
        } else if self.second.is_none() {
            self.second = Some(waker);
        } else {
            self.rest.push(waker);
        }
    }

    /// Wakes them all; call once no borrow is held.
    #[inline]
    pub(crate) fn wake(self) {
        if let Some(waker) = self.first {
            waker.wake();
        }
        if let Some(waker) = self.second {
            waker.wake();
        }
        if !self.rest.is_empty() {
            self.rest.into_iter().for_each(Waker::wake);
        }
    }
}

/// Draws whether a fault with chance `ratio` comes up; no draw at all for a fault switched off,
/// so that a healthy network's hot path stays cheap (the configuration is fixed for a run, so
/// replays draw alike).
#[inline]
pub(crate) fn drawn(ratio: Ratio) -> bool {
    ratio != Ratio::NEVER && draw(|rng| rng.chance(ratio))
}

/// Draws from the run's network stream: every random choice of the network goes through
/// here, so that exploring from a point re-draws all of them.
///
/// # Panics
///
/// Panics outside a simulation (the network exists only inside one).
#[inline]
pub(crate) fn draw<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    plumbing::with_stream(Stream::Network, f).expect("the network draws inside a simulation")
}

/// A drawn fault came up on behalf of `node`: true if it is to be applied (it then has a fault
/// id and is listed in the failure report), false if the run masks it or has healed.
pub(crate) fn applies(node: NodeId, describe: impl FnOnce() -> String) -> bool {
    fault::arise(Stream::Network, node, describe)
}

/// Names, for a deadlock's report, what the tasks waiting on sockets wait for.
struct Waits(Rc<Net>);

impl plumbing::checks::WaitWitness for Waits {
    fn waits(&self, waiting: &mut dyn FnMut(&Waker, &str)) {
        let st = self.0.state.borrow();
        st.tcp.waits(waiting);
        st.udp.waits(waiting);
    }
}

/// Tells the network of node kills (a killed node's sockets close and its connections reset,
/// or, with `NetConfig::kill_resets` off, vanish as a machine that lost its power, which is
/// then down until its restart), of restarts, and of the run's heal (every partition and
/// clog ends).
struct LifeCycle(Rc<Net>);

impl plumbing::faults::Healer for LifeCycle {
    fn heal(&self) {
        {
            let mut st = self.0.state.borrow_mut();
            st.links.clear();
        }
        crate::control::release_held(&self.0);
    }
}

impl NodeHook for LifeCycle {
    fn node_killed(&self, node: NodeId) {
        self.0.learn(node);
        {
            let mut st = self.0.state.borrow_mut();
            if !st.config.kill_resets {
                st.links.down(node.index() as u32);
            }
        }
        let mut wakers = Wakers::default();
        self.0.tcp_node_killed(node, &mut wakers);
        self.0.udp_node_killed(node, &mut wakers);
        self.0.state.borrow_mut().end_holds_of(node);
        wakers.wake();
    }

    fn node_restarted(&self, node: NodeId) {
        let was_down = self.0.state.borrow_mut().links.up(node.index() as u32);
        if was_down {
            // What stalled towards the node while it was down arrives now, and is answered
            // with an RST: the restarted node has no such connection.
            crate::control::release_held(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn wakers_wake_each_collected_waker_once() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let mut wakers = Wakers::default();
        for _ in 0..5 {
            wakers.push(Some(Waker::from(count.clone())));
        }
        wakers.push(None);
        wakers.wake();
        assert_eq!(count.0.load(Ordering::Relaxed), 5);
    }

    #[test]
    fn a_packed_address_names_the_node_it_belongs_to() {
        crashtest_core::Sim::new(1)
            .run(async {
                for i in 0..300 {
                    let node = crashtest_core::node::create(format!("n{i}"), std::future::pending);
                    let addr = SocketAddr::new(crate::ip_of(node.id()), 7000);
                    assert_eq!(pack(addr).node(), Some(node.id().index() as u32));
                }
            })
            .unwrap();
    }

    #[test]
    fn each_run_gets_its_own_network() {
        let ids: Vec<u64> = (0..2)
            .map(|_| {
                let out = Rc::new(Cell::new(0));
                let slot = out.clone();
                crashtest_core::Sim::new(1)
                    .run(async move { slot.set(net().state.borrow_mut().next_id()) })
                    .unwrap();
                out.get()
            })
            .collect();
        assert_eq!(ids, [1, 1], "a run never sees the previous run's state");
    }
}
