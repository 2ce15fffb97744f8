//! A small multi-node program to show a simulation end to end: a cluster of nodes that send
//! each other heartbeats over the simulated network (UDP), and a supervisor that kills one
//! node mid-run, restarts it, and checks that every node hears from every other one at the
//! end.
//!
//! The program is ordinary async Rust: `crashtest::net::UdpSocket` is shaped like tokio's,
//! and node names resolve like host names. Each node draws its heartbeat period from its own
//! seeded stream, so the schedule, and the fingerprint, change with the seed and only with
//! the seed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use crashtest::net::UdpSocket;
use crashtest::{node, task, time};

/// The port every node listens on for heartbeats.
const PORT: u16 = 9000;

/// When each node last heard from each peer: `heard[node][peer]`.
type Heard = Rc<RefCell<BTreeMap<String, BTreeMap<String, time::Instant>>>>;

/// The shape of a demo run.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Nodes in the cluster.
    pub nodes: usize,
    /// How long the cluster runs, in virtual time.
    pub duration: Duration,
}

/// The cluster's body: create the nodes, crash one and bring it back, check liveness.
///
/// ```
/// let plan = crashtest_demo::Plan { nodes: 3, duration: std::time::Duration::from_secs(20) };
/// let summary = crashtest::Sim::new(1).run(crashtest_demo::cluster(plan)).unwrap();
/// assert!(summary.elapsed >= plan.duration);
/// ```
pub async fn cluster(plan: Plan) {
    assert!(plan.nodes >= 2, "a cluster needs two nodes to heartbeat");
    let heard: Heard = Rc::default();
    let names: Vec<String> = (0..plan.nodes).map(|i| format!("node-{i}")).collect();
    let mut handles = Vec::new();
    for name in &names {
        let (heard, name, peers) = (heard.clone(), name.clone(), names.clone());
        handles.push(node::create(name.clone(), move || {
            heartbeat(name.clone(), peers.clone(), heard.clone())
        }));
    }
    let victim = handles[crashtest::rand::rng().with(|r| r.index(handles.len()))];
    time::sleep(plan.duration / 4).await;
    victim.kill();
    time::sleep(plan.duration / 4).await;
    victim.restart();
    time::sleep(plan.duration / 2).await;
    let now = time::Instant::now();
    let heard = heard.borrow();
    for name in &names {
        for peer in names.iter().filter(|peer| *peer != name) {
            let last = heard.get(name).and_then(|peers| peers.get(peer));
            let fresh = last.is_some_and(|at| now.duration_since(*at) < Duration::from_secs(2));
            assert!(
                fresh,
                "{name} has not heard from {peer} lately (last: {last:?})"
            );
        }
    }
}

/// One node's main: send a heartbeat to every peer each period, and record those received.
async fn heartbeat(name: String, peers: Vec<String>, heard: Heard) {
    let socket = Rc::new(
        UdpSocket::bind(("0.0.0.0", PORT))
            .await
            .expect("bind the port"),
    );
    let receiver = socket.clone();
    let me = name.clone();
    task::spawn_local(async move {
        let mut buf = [0u8; 64];
        loop {
            let (len, _) = receiver.recv_from(&mut buf).await.expect("receive");
            let from = String::from_utf8_lossy(&buf[..len]).into_owned();
            heard
                .borrow_mut()
                .entry(me.clone())
                .or_default()
                .insert(from, time::Instant::now());
        }
    });
    let period_ms = crashtest::rand::rng().with(|r| r.range_inclusive(100, 500));
    let mut ticks = time::interval(Duration::from_millis(period_ms));
    loop {
        ticks.tick().await;
        for peer in peers.iter().filter(|peer| **peer != name) {
            // A peer that is down drops the datagram: heartbeats are best effort.
            let _ = socket.send_to(name.as_bytes(), (peer.as_str(), PORT)).await;
        }
    }
}
