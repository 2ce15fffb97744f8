//! The test's hand on the network: install a fault model, cut, heal, clog and swizzle.
//!
//! Every call is an injected fault (or its end): it is recorded in the trace and listed in the
//! failure report. Calls name nodes by `NodeId` (`node.id()`); a node named here becomes part
//! of the network even before it opens a socket.
//!
//! Cuts and clogs are judged when a packet is due, so what is already in flight is caught too.
//! Healing releases what waited: stalled TCP data and clogged datagrams arrive one latency
//! later.

use std::rc::Rc;
use std::time::Duration;

use crashtest_core::fault;
use crashtest_core::node::NodeId;
use crashtest_core::plumbing;
use crashtest_protocol::NetNote;

use crate::config::{NetConfig, nanos};
use crate::fabric::{self, Net, now, trace};

/// Installs `config` as the network's fault model for the rest of the run. (Partitions and
/// clogs that come and go by themselves are fault orchestration: `crashtest::nemesis`.)
///
/// # Panics
///
/// Panics outside a simulation, or if the configuration is inconsistent (for example a
/// latency whose `min` exceeds its `max`).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// use crashtest::rand::Ratio;
/// use crashtest::net::{configure, NetConfig};
///
/// crashtest::Sim::new(1).run(async {
///     configure(NetConfig { udp_loss: Ratio::new(1, 10), ..NetConfig::default() });
/// }).unwrap();
/// ```
pub fn configure(config: NetConfig) {
    config.validate();
    fabric::net().state.borrow_mut().config = config;
}

fn index(node: NodeId) -> u32 {
    node.index() as u32
}

/// Cuts both directions between `a` and `b` until [`heal`]: datagrams across are lost, TCP
/// data stalls (and times out after `NetConfig::tcp_timeout`), connects time out.
///
/// # Panics
///
/// Panics outside a simulation, or if `a == b`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let a = crashtest::node::create("a", || async {});
/// let b = crashtest::node::create("b", || async {});
/// crashtest::net::partition(a.id(), b.id());
/// crashtest::net::heal(a.id(), b.id());
/// # }).unwrap();
/// ```
pub fn partition(a: NodeId, b: NodeId) {
    cut(a, b, true);
}

/// Cuts the direction `from` → `to` only: `to` still reaches `from`.
///
/// # Panics
///
/// Panics outside a simulation, or if `from == to`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let a = crashtest::node::create("a", || async {});
/// let b = crashtest::node::create("b", || async {});
/// crashtest::net::partition_one_way(a.id(), b.id());
/// # }).unwrap();
/// ```
pub fn partition_one_way(from: NodeId, to: NodeId) {
    cut(from, to, false);
}

fn cut(from: NodeId, to: NodeId, both: bool) {
    let net = fabric::net();
    let mut st = net.state.borrow_mut();
    st.learn(from);
    st.learn(to);
    st.links.cut(index(from), index(to));
    if both {
        st.links.cut(index(to), index(from));
    }
    trace(
        from,
        NetNote::Partition {
            peer: index(to),
            both,
        },
    );
    let arrow = if both { "<-/->" } else { "-/->" };
    let text = format!(
        "partition {} {arrow} {}",
        st.name_of(index(from)),
        st.name_of(index(to))
    );
    drop(st);
    fault::note(from, text);
}

/// Ends the partition between `a` and `b` (both directions), whoever made it: the test or a
/// nemesis.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let a = crashtest::node::create("a", || async {});
/// let b = crashtest::node::create("b", || async {});
/// crashtest::net::partition(a.id(), b.id());
/// crashtest::net::heal(a.id(), b.id());
/// # }).unwrap();
/// ```
pub fn heal(a: NodeId, b: NodeId) {
    let net = fabric::net();
    {
        let mut st = net.state.borrow_mut();
        let healed = st.links.heal(index(a), index(b)) | st.links.heal(index(b), index(a));
        if !healed {
            return;
        }
        trace(a, NetNote::Heal { peer: index(b) });
        let text = format!("heal {} <-> {}", st.name_of(index(a)), st.name_of(index(b)));
        drop(st);
        fault::note(a, text);
    }
    release_held(&net);
}

/// Ends every partition and every clog, the test's and a nemesis's. A running nemesis goes
/// on; the run's heal (`crashtest_core::fault::heal_all`) stops it too.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let a = crashtest::node::create("a", || async {});
/// crashtest::net::clog_node(a.id(), std::time::Duration::from_secs(60));
/// crashtest::net::heal_all();
/// # }).unwrap();
/// ```
pub fn heal_all() {
    let net = fabric::net();
    net.state.borrow_mut().links.clear();
    trace(NodeId::SUPERVISOR, NetNote::HealAll);
    fault::note(NodeId::SUPERVISOR, "heal every partition and clog".into());
    release_held(&net);
}

/// Releases what waited behind cuts and clogs that have lifted.
pub(crate) fn release_held(net: &Rc<Net>) {
    net.state.borrow_mut().links.prune(now());
    net.tcp_release_held();
    net.udp_release_held();
}

/// Holds everything between `a` and `b`, both ways, for `duration`: nothing is lost, it
/// arrives when the clog lifts.
///
/// # Panics
///
/// Panics outside a simulation, or if `a == b`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let a = crashtest::node::create("a", || async {});
/// let b = crashtest::node::create("b", || async {});
/// crashtest::net::clog_link(a.id(), b.id(), std::time::Duration::from_millis(500));
/// # }).unwrap();
/// ```
pub fn clog_link(a: NodeId, b: NodeId, duration: Duration) {
    let net = fabric::net();
    clog_link_until(&net, a, b, now().saturating_add(nanos(duration)));
    let text = {
        let st = net.state.borrow();
        let (a, b) = (st.name_of(index(a)), st.name_of(index(b)));
        format!("clog {a} <-> {b} for {duration:?}")
    };
    fault::note(a, text);
}

/// Holds everything to and from `node` for `duration`.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let a = crashtest::node::create("a", || async {});
/// crashtest::net::clog_node(a.id(), std::time::Duration::from_millis(500));
/// # }).unwrap();
/// ```
pub fn clog_node(node: NodeId, duration: Duration) {
    let net = fabric::net();
    let until = now().saturating_add(nanos(duration));
    clog_node_until(&net, node, until);
    let name = net.state.borrow().name_of(index(node));
    fault::note(
        node,
        format!("clog: every link of {name} held for {duration:?}"),
    );
}

/// Clogs every link of `node` until `until`, and records it in the trace.
pub(crate) fn clog_node_until(net: &Net, node: NodeId, until: u64) {
    let mut st = net.state.borrow_mut();
    st.learn(node);
    st.links.clog_node(index(node), until);
    trace(node, NetNote::ClogNode { until_ns: until });
}

/// Clogs both directions between `a` and `b` until `until`, and records it in the trace.
pub(crate) fn clog_link_until(net: &Net, a: NodeId, b: NodeId, until: u64) {
    let mut st = net.state.borrow_mut();
    st.learn(a);
    st.learn(b);
    st.links.clog_link(index(a), index(b), until);
    st.links.clog_link(index(b), index(a), until);
    trace(
        a,
        NetNote::ClogLink {
            peer: index(b),
            until_ns: until,
        },
    );
}

/// Swizzle-clogging (FoundationDB's): picks a random subset of `nodes` (each with chance
/// 1/2, at least one), clogs them one by one at random times in the first half of `duration`,
/// and unclogs them in another random order in the second half. By the end of `duration`
/// every clog it made has lifted. Clogs still to come are dropped if the run heals first.
///
/// # Panics
///
/// Panics outside a simulation.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// # crashtest::Sim::new(1).run(async {
/// let nodes: Vec<_> = ["a", "b", "c"]
///     .iter()
///     .map(|name| crashtest::node::create(*name, || async {}).id())
///     .collect();
/// crashtest::net::swizzle(&nodes, std::time::Duration::from_secs(2));
/// # }).unwrap();
/// ```
pub fn swizzle(nodes: &[NodeId], duration: Duration) {
    let net = fabric::net();
    let plan = swizzle_plan(nodes, nanos(duration));
    let names: Vec<String> = {
        let st = net.state.borrow();
        plan.iter()
            .map(|clog| st.name_of(index(clog.node)))
            .collect()
    };
    if let Some(first) = plan.first() {
        let text = format!("swizzle {{{}}} over {duration:?}", names.join(","));
        fault::note(first.node, text);
    }
    start_swizzle(&net, plan);
}

/// One node's clog in a swizzle: from `start` to `end`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SwizzleClog {
    pub(crate) node: NodeId,
    start: u64,
    end: u64,
}

/// Draws a swizzle of `nodes` over `duration_ns` from now: who is clogged, from when, to when.
pub(crate) fn swizzle_plan(nodes: &[NodeId], duration_ns: u64) -> Vec<SwizzleClog> {
    if nodes.is_empty() {
        return Vec::new();
    }
    let now = now();
    let half = duration_ns / 2;
    let plan: Vec<SwizzleClog> = crate::fabric::draw(|rng| {
        let mut picked: Vec<NodeId> = nodes.iter().copied().filter(|_| rng.boolean()).collect();
        if picked.is_empty() {
            picked.push(nodes[rng.index(nodes.len())]);
        }
        picked
            .into_iter()
            .map(|node| SwizzleClog {
                node,
                start: now + rng.range_inclusive(0, half),
                end: now + rng.range_inclusive(half, duration_ns),
            })
            .collect()
    });
    assert!(
        plan.iter()
            .all(|clog| clog.start <= clog.end && clog.end <= now + duration_ns),
        "every clog of a swizzle starts before it ends, within the swizzle"
    );
    plan
}

/// Schedules the clogs of a swizzle plan.
pub(crate) fn start_swizzle(net: &Rc<Net>, plan: Vec<SwizzleClog>) {
    if let Some(first) = plan.first() {
        let nodes = plan.len() as u64;
        trace(first.node, NetNote::Swizzle { nodes });
    }
    for clog in plan {
        let net = Rc::clone(net);
        plumbing::timers::call_at(clog.start, move || {
            if crashtest_core::fault::enabled() {
                clog_node_until(&net, clog.node, clog.end);
            }
        });
    }
}
