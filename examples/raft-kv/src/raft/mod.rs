//! A compact Raft: leader election, log replication and a key-value state machine, one server
//! per simulated node.
//!
//! A server's state lives in one [`Core`] behind an async mutex. Every handler (a vote, an
//! append, a client command, an election timeout, a reply) takes the lock, changes the state,
//! writes and syncs what must be durable *while still holding it*, and only then lets the
//! reply go out: so no reply ever reveals state that a crash could take back, and handlers
//! never see each other half-done. The tasks around the core:
//!
//! - [`election`]: the election timer, campaigns, and the RequestVote handler;
//! - [`replication`]: one replicator per peer on the leader, and the AppendEntries handler;
//! - the listener, one task per connection, serving peers and clients alike (the [`wire`]
//!   protocol);
//! - under [`Bug::AckBeforeFsync`], the background flusher that bug relies on.
//!
//! Reads go through the log like writes, so a correct store is linearizable without leases.
//! A new leader appends a no-op entry: entries of earlier terms commit only when an entry of
//! the leader's own term does, and without one an idle cluster would never commit them. The
//! [`Observer`] hears of every election won and entry applied, for the cluster-wide checks.
//!
//! [`wire`]: crate::wire

mod election;
pub(crate) mod log;
mod replication;
mod storage;

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::{Mutex, Notify, oneshot};

use crashtest::net::{TcpListener, TcpStream};
use crashtest::task;
use crashtest::time::{self, Instant};

use crate::bugs::Bug;
use crate::kv::{Command, Kv, Output};
use crate::observer::{LogView, Observer};
use crate::wire::{ClientReply, Connection, PORT, Reply, Request};
use log::{Entry, Log};
use storage::Storage;

/// How often a leader sends each follower something, entries or a heartbeat.
pub const HEARTBEAT: Duration = Duration::from_millis(50);
/// The election timeout is drawn anew in this range (the Raft paper's figures) each time it
/// is reset, so that split votes do not repeat.
pub const ELECTION_TIMEOUT_MS: (u64, u64) = (150, 300);
/// How long a server waits for a peer to connect and answer one request.
pub const RPC_TIMEOUT: Duration = Duration::from_millis(100);
/// The most entries one AppendEntries carries.
const MAX_BATCH: usize = 64;
/// How often the flusher of [`Bug::AckBeforeFsync`] syncs the log.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Who a server is and how it is built.
///
/// ```
/// use raft_kv::raft::ServerConfig;
///
/// let config = ServerConfig::new(1, vec!["s0".into(), "s1".into(), "s2".into()]);
/// assert_eq!(config.peers(), [0, 2]);
/// ```
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// This server's index in `servers`.
    pub id: usize,
    /// Every server's node name, by id.
    pub servers: Vec<String>,
    /// The planted bug, or [`Bug::None`].
    pub bug: Bug,
}

impl ServerConfig {
    /// A correct server `id` of the cluster `servers`.
    pub fn new(id: usize, servers: Vec<String>) -> ServerConfig {
        assert!(id < servers.len(), "server {id} is not one of {servers:?}");
        ServerConfig {
            id,
            servers,
            bug: Bug::None,
        }
    }

    /// The other servers' ids.
    pub fn peers(&self) -> Vec<usize> {
        (0..self.servers.len()).filter(|p| *p != self.id).collect()
    }
}

/// A leader's view of one follower.
#[derive(Clone, Copy, Debug)]
struct Progress {
    /// The next entry to send.
    next: u64,
    /// The last entry known to be stored on the follower.
    matched: u64,
}

/// What a server is doing in its current term.
#[derive(Debug)]
enum Role {
    Follower,
    Candidate,
    Leader(BTreeMap<usize, Progress>),
}

/// A client waiting for the entry it proposed at some index.
#[derive(Debug)]
struct Waiter {
    /// The term the entry was proposed in: if another entry is applied at that index, the
    /// client's command was overwritten and its outcome is unknown to this server.
    term: u64,
    reply: oneshot::Sender<Output>,
}

/// A server's whole state; see the module docs for the locking discipline.
#[derive(Debug)]
pub(crate) struct Core {
    id: usize,
    size: usize,
    bug: Bug,
    observer: Rc<Observer>,
    storage: Storage,
    term: u64,
    voted_for: Option<usize>,
    log: Log,
    role: Role,
    leader: Option<usize>,
    commit: u64,
    applied: u64,
    kv: Kv,
    election_deadline: Instant,
    waiters: BTreeMap<u64, Waiter>,
}

/// What every task of a server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    config: ServerConfig,
    core: Mutex<Core>,
    /// Wakes the replicator of each peer (new entries, or more to send).
    wake: BTreeMap<usize, Notify>,
}

impl Shared {
    fn wake_replicators(&self) {
        self.wake.values().for_each(Notify::notify_one);
    }
}

/// Sends `request` to server `name` over `link` (connecting first if needed) and waits for
/// the reply, all within [`RPC_TIMEOUT`]. On any failure the link is dropped, so that a late
/// reply can never be taken for the answer to a later request.
async fn call(link: &mut Option<Connection>, name: &str, request: &Request) -> Option<Reply> {
    let exchange = async {
        let connection = match link {
            Some(connection) => connection,
            None => link.insert(Connection::connect(name).await?),
        };
        connection.send(request).await?;
        connection.recv().await
    };
    match time::timeout(RPC_TIMEOUT, exchange).await {
        Ok(Ok(Some(reply))) => Some(reply),
        _ => {
            *link = None;
            None
        }
    }
}

impl Core {
    fn is_leader(&self) -> bool {
        matches!(self.role, Role::Leader(_))
    }

    /// Declares what matters about this server's state to a guided search
    /// (`crashtest::explore::state`): its role, how many terms its log's last entry is
    /// behind its term, and how many uncommitted entries of earlier terms it holds (both
    /// capped at 3, so that the space stays small). A leader holding entries of older terms
    /// above its commit index is where Raft's commit rule matters.
    fn declare_state(&self) {
        let role: u8 = match self.role {
            Role::Follower => 0,
            Role::Candidate => 1,
            Role::Leader(_) => 2,
        };
        let term_gap = (self.term - self.log.last_term()).min(3);
        let divergence = (self.commit + 1..=self.log.last_index())
            .filter(|index| {
                self.log
                    .term_at(*index)
                    .is_some_and(|term| term < self.term)
            })
            .take(3)
            .count();
        crashtest::explore::state("raft", (role, term_gap, divergence));
        let last = (self.log.last_term(), self.log.last_index());
        let applied = self.observer.applied_entries();
        let view = LogView::of(
            self.term,
            self.is_leader(),
            self.commit,
            last,
            applied,
            |index| self.log.term_at(index),
        );
        self.observer.report(self.id, view);
    }

    fn reset_election_timer(&mut self) {
        let (min, max) = ELECTION_TIMEOUT_MS;
        let ms = crashtest::rand::rng().with(|rng| rng.range_inclusive(min, max));
        self.election_deadline = Instant::now() + Duration::from_millis(ms);
    }

    /// Records the term and vote on disk; synced unless `sync` is false.
    async fn persist_meta(&mut self, sync: bool) {
        self.storage
            .save_meta(self.term, self.voted_for, sync)
            .await;
    }

    /// Moves to a newer term as a follower with no vote, in memory only: the caller persists.
    fn enter_term(&mut self, term: u64) {
        assert!(
            term > self.term,
            "terms only go forward ({} to {term})",
            self.term
        );
        self.term = term;
        self.voted_for = None;
        self.leader = None;
        self.step_down();
    }

    /// Moves to a newer term as a follower with no vote, durably.
    async fn adopt_term(&mut self, term: u64) {
        self.enter_term(term);
        self.persist_meta(true).await;
    }

    /// Becomes a follower of the current term; clients waiting on this server as leader are
    /// dropped (their commands may still commit under the next leader: outcome unknown).
    fn step_down(&mut self) {
        self.role = Role::Follower;
        self.waiters.clear();
    }

    /// Takes the lead of the current term and appends its no-op (not under
    /// [`Bug::CommitByCountingOldTerm`], whose leader commits earlier terms' entries by
    /// counting replicas instead, as in the Raft paper's Figure 8).
    async fn become_leader(&mut self) {
        assert!(matches!(self.role, Role::Candidate));
        let next = self.log.last_index() + 1;
        let progress = (0..self.size)
            .filter(|peer| *peer != self.id)
            .map(|peer| (peer, Progress { next, matched: 0 }))
            .collect();
        self.role = Role::Leader(progress);
        self.leader = Some(self.id);
        self.observer.became_leader(self.term, self.id);
        self.declare_state();
        if self.bug == Bug::CommitByCountingOldTerm {
            return;
        }
        let noop = Entry {
            term: self.term,
            command: None,
        };
        self.append(vec![noop]).await;
    }

    /// Appends entries to the log, in memory and on disk (synced unless the
    /// [`Bug::AckBeforeFsync`] flusher is to do it later).
    async fn append(&mut self, entries: Vec<Entry>) {
        let sync = self.bug != Bug::AckBeforeFsync;
        self.storage.append(&entries, sync).await;
        entries.into_iter().for_each(|entry| self.log.push(entry));
    }

    /// Drops the entry at `index`, which conflicts with the leader's, and every later one.
    async fn truncate_conflict(&mut self, index: u64) {
        assert!(
            index > self.commit,
            "server {} would truncate committed entry {index} (commit index {})",
            self.id,
            self.commit
        );
        let keep = match self.bug {
            Bug::TruncateOffByOne => index,
            _ => index - 1,
        };
        self.storage.truncate(keep).await;
        self.log.truncate(keep);
    }

    /// Raises the commit index to `index` (never lowers it) and applies what it covers.
    fn commit_to(&mut self, index: u64) {
        if index <= self.commit {
            return;
        }
        assert!(
            index <= self.log.last_index(),
            "commit index {index} past the log's end {}",
            self.log.last_index()
        );
        self.commit = index;
        while self.applied < self.commit {
            self.applied += 1;
            let entry = self.log.get(self.applied);
            self.observer.applied(self.id, self.applied, entry);
            let Some(command) = &entry.command else {
                continue;
            };
            let output = self.kv.apply(command);
            if let Some(waiter) = self.waiters.remove(&self.applied)
                && waiter.term == entry.term
            {
                // The client may have given up; then nobody needs the answer.
                let _ = waiter.reply.send(output);
            }
        }
    }

    /// Appends a client's command as leader; the receiver gets its output once applied.
    async fn propose(&mut self, command: Command) -> oneshot::Receiver<Output> {
        let (reply, done) = oneshot::channel();
        let index = self.log.last_index() + 1;
        let term = self.term;
        let command = Some(command);
        self.append(vec![Entry { term, command }]).await;
        self.waiters.insert(index, Waiter { term, reply });
        done
    }
}

/// Serves a client's command: a leader proposes it and answers once it is applied; any other
/// server points to the leader it knows. `None` means the outcome is unknown to this server
/// (it stepped down meanwhile): the connection is closed without an answer.
async fn on_client(shared: &Shared, command: Command) -> Option<ClientReply> {
    let done = {
        let mut core = shared.core.lock().await;
        if !core.is_leader() {
            return Some(ClientReply::NotLeader(core.leader));
        }
        match (&command, core.bug) {
            (Command::Get(keys), Bug::StaleLeaderRead) => {
                return Some(ClientReply::Done(core.kv.read(keys)));
            }
            _ => core.propose(command).await,
        }
    };
    shared.wake_replicators();
    done.await.ok().map(ClientReply::Done)
}

/// Serves one connection: requests one at a time, each answered before the next is read.
async fn serve_connection(shared: Rc<Shared>, stream: TcpStream) {
    let mut connection = Connection::new(stream);
    while let Ok(Some(request)) = connection.recv::<Request>().await {
        let reply = match request {
            Request::Vote(request) => Reply::Vote(election::on_vote(&shared, request).await),
            Request::Append(request) => {
                Reply::Append(replication::on_append(&shared, request).await)
            }
            Request::Client(command) => match on_client(&shared, command).await {
                Some(reply) => Reply::Client(reply),
                None => return,
            },
        };
        if connection.send(&reply).await.is_err() {
            return;
        }
    }
}

/// Syncs the log every [`FLUSH_EVERY`]: the durability [`Bug::AckBeforeFsync`] settles for.
async fn flush_periodically(shared: Rc<Shared>) {
    loop {
        time::sleep(FLUSH_EVERY).await;
        shared.core.lock().await.storage.sync_log().await;
    }
}

/// A server's main: recovers its state from the disk, then runs until its node dies.
///
/// # Panics
///
/// On a disk error (see the storage module's docs), or if the recovered state breaks Raft's
/// invariants.
///
/// ```
/// use raft_kv::{observer::Observer, raft::{self, ServerConfig}};
/// use std::{rc::Rc, time::Duration};
///
/// crashtest::Sim::new(1).run(async {
///     let observer = Rc::new(Observer::default());
///     let names: Vec<String> = (0..3).map(|i| format!("s{i}")).collect();
///     for id in 0..3 {
///         let (config, observer) = (ServerConfig::new(id, names.clone()), observer.clone());
///         crashtest::node::create(&names[id], move || raft::serve(config.clone(), observer.clone()));
///     }
///     crashtest::time::sleep(Duration::from_secs(2)).await;
///     assert!(observer.leaders() >= 1);
/// }).unwrap();
/// ```
pub async fn serve(config: ServerConfig, observer: Rc<Observer>) {
    let (storage, recovered) = Storage::open(config.bug).await;
    let log = Log::new(recovered.entries);
    assert!(
        log.last_term() <= recovered.term,
        "server {} recovered an entry of term {} in term {}",
        config.id,
        log.last_term(),
        recovered.term
    );
    observer.started(config.id);
    let mut core = Core {
        id: config.id,
        size: config.servers.len(),
        bug: config.bug,
        observer,
        storage,
        term: recovered.term,
        voted_for: recovered.voted_for,
        log,
        role: Role::Follower,
        leader: None,
        commit: 0,
        applied: 0,
        kv: Kv::default(),
        election_deadline: Instant::now(),
        waiters: BTreeMap::new(),
    };
    core.reset_election_timer();
    let wake = config
        .peers()
        .into_iter()
        .map(|p| (p, Notify::new()))
        .collect();
    let shared = Rc::new(Shared {
        core: Mutex::new(core),
        wake,
        config,
    });
    task::spawn_local(election::run(shared.clone()));
    for peer in shared.config.peers() {
        task::spawn_local(replication::run(shared.clone(), peer));
    }
    if shared.config.bug == Bug::AckBeforeFsync {
        task::spawn_local(flush_periodically(shared.clone()));
    }
    let listener = TcpListener::bind(("0.0.0.0", PORT))
        .await
        .expect("a restarted node's port is free");
    loop {
        let (stream, _) = listener.accept().await.expect("accept");
        task::spawn_local(serve_connection(shared.clone(), stream));
    }
}
