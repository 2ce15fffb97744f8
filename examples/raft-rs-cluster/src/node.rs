//! One Raft node: raft-rs's `RawNode` driven by the simulated clock, network and disk.
//!
//! The node's main recovers its log from the disk into a `MemStorage`, then loops: a tick
//! every [`TICK`] of virtual time, a `step` for every datagram that arrives, a `propose` for
//! every command in its mailbox, and after each of these the `Ready` is handled in the order
//! raft-rs documents: send the leader's messages, apply committed entries, make new entries
//! and the hard state durable (write, `sync_all`) and only then put them in the storage and
//! send the messages that depend on them, then `advance` and handle the `LightReady`. Applied
//! state is not persisted: each life sets `applied = 0` and re-applies from index 1.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use crashtest::net::UdpSocket;
use crashtest::time::{self, Instant};
use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, Message};
use raft::storage::MemStorage;
use raft::{Config, RawNode, StateRole};

use crate::disk_log::DiskLog;
use crate::oracle::Oracle;

/// The raft-rs tick: heartbeats every 3 ticks, elections after 10 to 20.
pub const TICK: Duration = Duration::from_millis(100);
/// The UDP port every node listens on.
const PORT: u16 = 7000;
/// Raft ids of the cluster's members.
pub const MEMBERS: [u64; 3] = [1, 2, 3];

/// The simulation node name of Raft member `id`.
pub fn name_of(id: u64) -> &'static str {
    match id {
        1 => "n1",
        2 => "n2",
        3 => "n3",
        other => panic!("no member has Raft id {other}"),
    }
}

/// Knobs of raft-rs that a run draws from its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flavor {
    /// Raft's pre-vote phase (candidates ask before they bump the term).
    pub pre_vote: bool,
    /// A leader steps down when it has not heard from a quorum for an election timeout.
    pub check_quorum: bool,
}

/// Commands waiting for each node's main to propose them (the clients' requests).
pub type Mailboxes = Rc<RefCell<BTreeMap<u64, VecDeque<Vec<u8>>>>>;

/// The main of member `id`: runs until the node is killed.
pub async fn run(id: u64, flavor: Flavor, oracle: Rc<Oracle>, mailboxes: Mailboxes) {
    let (mut disk, recovered) = DiskLog::open().await.expect("the log opens");
    let storage = MemStorage::new_with_conf_state(ConfState::from((MEMBERS.to_vec(), vec![])));
    {
        let mut core = storage.wl();
        core.append(&recovered.entries)
            .expect("recovered entries are contiguous");
        core.set_hardstate(recovered.hard_state);
    }
    oracle.boot(id, storage.clone());
    let config = Config {
        id,
        election_tick: 10,
        heartbeat_tick: 3,
        applied: 0,
        pre_vote: flavor.pre_vote,
        check_quorum: flavor.check_quorum,
        ..Config::default()
    };
    let logger = slog::Logger::root(slog::Discard, slog::o!());
    let mut raw = RawNode::new(&config, storage, &logger).expect("a valid raft config");
    let socket = UdpSocket::bind(("0.0.0.0", PORT))
        .await
        .expect("the port is free");
    let mut buf = vec![0; 65_536];
    let mut next_tick = Instant::now() + TICK;
    loop {
        match time::timeout_at(next_tick, socket.recv_from(&mut buf)).await {
            Ok(Ok((len, _))) => {
                let message =
                    Message::parse_from_bytes(&buf[..len]).expect("peers send whole messages");
                // A message for an old term or a stale peer is refused with an error; Raft
                // already treats it as lost, as it treats a dropped datagram.
                let _ = raw.step(message);
            }
            Ok(Err(e)) => panic!("receiving on the node's own socket failed: {e}"),
            Err(_) => {
                raw.tick();
                next_tick += TICK;
            }
        }
        let commands: Vec<Vec<u8>> = mailboxes
            .borrow_mut()
            .get_mut(&id)
            .map(|queue| queue.drain(..).collect())
            .unwrap_or_default();
        for command in commands {
            // Dropped while there is no leader: the client retries.
            let _ = raw.propose(vec![], command);
        }
        while raw.has_ready() {
            handle_ready(id, &mut raw, &mut disk, &socket, &oracle).await;
        }
        if raw.raft.state == StateRole::Leader {
            oracle.leading(id, raw.raft.term);
        }
    }
}

async fn handle_ready(
    id: u64,
    raw: &mut RawNode<MemStorage>,
    disk: &mut DiskLog,
    socket: &UdpSocket,
    oracle: &Oracle,
) {
    let mut ready = raw.ready();
    if raw.raft.state == StateRole::Leader {
        oracle.leading(id, raw.raft.term);
    }
    send(socket, ready.take_messages()).await;
    assert!(
        ready.snapshot().is_empty(),
        "the cluster never compacts, so no snapshot is ever sent"
    );
    apply(id, oracle, ready.take_committed_entries());
    disk.append(ready.entries(), ready.hs())
        .await
        .expect("the log is durable");
    {
        let mut core = raw.mut_store().wl();
        core.append(ready.entries())
            .expect("raft appends contiguously");
        if let Some(hs) = ready.hs() {
            core.set_hardstate(hs.clone());
        }
    }
    send(socket, ready.take_persisted_messages()).await;
    let mut light = raw.advance(ready);
    if let Some(commit) = light.commit_index() {
        // Kept in memory only: a restart re-learns the commit index from the leader, and the
        // state machine is rebuilt from index 1, so applied never runs ahead of it.
        raw.mut_store().wl().mut_hard_state().commit = commit;
    }
    send(socket, light.take_messages()).await;
    apply(id, oracle, light.take_committed_entries());
    raw.advance_apply();
}

fn apply(id: u64, oracle: &Oracle, entries: Vec<Entry>) {
    for entry in entries {
        oracle.apply(id, &entry);
    }
}

async fn send(socket: &UdpSocket, messages: Vec<Message>) {
    for message in messages {
        let bytes = message.write_to_bytes().expect("raft messages encode");
        // Datagrams may be lost anyway; a send error is one more loss.
        let _ = socket.send_to(&bytes, (name_of(message.to), PORT)).await;
    }
}
