//! A small multi-node program to show a simulation end to end: a cluster of nodes that send
//! each other heartbeats over in-simulation channels, and a supervisor that kills one node
//! mid-run, restarts it, and checks that every node hears from every other one at the end.
//!
//! Each node draws its heartbeat period from its own seeded stream, so the schedule, and the
//! fingerprint, change with the seed and only with the seed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use crashtest::{node, time};
use tokio::sync::mpsc;

/// Mailboxes of the live nodes, by name; a (re)starting node puts in a fresh one.
type Directory = Rc<RefCell<BTreeMap<String, mpsc::UnboundedSender<String>>>>;
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
    let directory: Directory = Rc::default();
    let heard: Heard = Rc::default();
    let names: Vec<String> = (0..plan.nodes).map(|i| format!("node-{i}")).collect();
    let mut handles = Vec::new();
    for name in &names {
        let (directory, heard, name) = (directory.clone(), heard.clone(), name.clone());
        handles.push(node::create(name.clone(), move || {
            heartbeat(name.clone(), directory.clone(), heard.clone())
        }));
    }
    let victim = handles[crashtest::rand::rng().with(|r| r.index(handles.len()))];
    time::sleep(plan.duration / 4).await;
    victim.kill();
    directory.borrow_mut().remove(&victim.name());
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

/// One node's main: register a mailbox, then send heartbeats and record those received.
async fn heartbeat(name: String, directory: Directory, heard: Heard) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    directory.borrow_mut().insert(name.clone(), tx);
    let period_ms = crashtest::rand::rng().with(|r| r.range_inclusive(100, 500));
    let mut ticks = time::interval(Duration::from_millis(period_ms));
    loop {
        // `biased` polls the branches in order: tokio's default order is random from a
        // generator crashtest does not seed, which would break replay.
        tokio::select! {
            biased;
            _ = ticks.tick() => {
                let peers: Vec<_> = directory.borrow().iter()
                    .filter(|(peer, _)| **peer != name)
                    .map(|(_, tx)| tx.clone())
                    .collect();
                for peer in peers {
                    // A peer that died since we looked has dropped its mailbox: that is fine.
                    let _ = peer.send(name.clone());
                }
            }
            Some(from) = rx.recv() => {
                heard.borrow_mut().entry(name.clone()).or_default().insert(from, time::Instant::now());
            }
        }
    }
}
