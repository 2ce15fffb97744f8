//! One simulated run: a three-server cluster, clients, a hostile world, then the liveness
//! phase and the oracles.
//!
//! For [`FAULT_PHASE`] the servers are killed, paused, partitioned, clogged and have their
//! clocks jumped by the nemesis (at most one of the three down at a time, the minority Raft
//! tolerates), TCP connections are reset and writes split, and now and then the whole
//! cluster loses power at once: every server is killed together, so whatever a majority had
//! not synced is at the disk's mercy (the crash model decides what survives). Meanwhile the
//! clients run the workload. Then [`converge`] heals everything and requires, within
//! [`CONVERGENCE`], that every client finishes (including a last successful operation) and
//! every server has applied the same entries. Last, the oracle: the history must be
//! linearizable, or the ring whole. Throughout, the [`Observer`]'s step check holds the
//! cluster to one leader per term and one applied log.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::str::FromStr;
use std::time::Duration;

use crashtest::check::KvMap;
use crashtest::fs::{CrashModel, DiskConfig};
use crashtest::nemesis::{Nemesis, Patterns};
use crashtest::net::NetConfig;
use crashtest::node::{self, Node, NodeId, NodeStatus};
use crashtest::rand::Ratio;
use crashtest::time::{self, Instant};
use crashtest::{JoinHandle, fault, task};

use crate::bugs::Bug;
use crate::client::Client;
use crate::observer::Observer;
use crate::raft::{self, ServerConfig};
use crate::{cycle, workload};
use crashtest::check::liveness::converge;

/// Servers in the cluster.
pub const SERVERS: usize = 3;
/// Concurrent clients.
pub const CLIENTS: usize = 3;
/// How long the cluster is under fire.
pub const FAULT_PHASE: Duration = Duration::from_secs(5);
/// How long the healed cluster has to settle.
pub const CONVERGENCE: Duration = Duration::from_secs(30);

/// Which workload a run drives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Workload {
    /// Puts, gets and deletes on a few keys, checked for linearizability.
    #[default]
    Linearizable,
    /// FoundationDB's Cycle: swaps in a ring of keys, checked to stay one ring.
    Cycle,
}

impl Workload {
    /// The name `RAFT_WORKLOAD` takes.
    ///
    /// ```
    /// assert_eq!(raft_kv::Workload::Cycle.name(), "cycle");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Workload::Linearizable => "linearizable",
            Workload::Cycle => "cycle",
        }
    }
}

impl FromStr for Workload {
    type Err = String;

    fn from_str(name: &str) -> Result<Workload, String> {
        [Workload::Linearizable, Workload::Cycle]
            .into_iter()
            .find(|workload| workload.name() == name)
            .ok_or_else(|| format!("no workload {name:?}: linearizable or cycle"))
    }
}

/// What a run tests: which store, under which crash model, with which workload.
///
/// ```
/// use raft_kv::{Bug, Setup};
///
/// let setup = Setup { bug: Bug::TruncateOffByOne, ..Setup::default() };
/// assert_eq!(
///     setup.to_string(),
///     "RAFT_BUG=truncate_off_by_one RAFT_CRASH_MODEL=strong RAFT_WORKLOAD=linearizable"
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// The planted bug, or [`Bug::None`].
    pub bug: Bug,
    /// The disks' crash model: the strong one (torn, reordered writes) or the weak one
    /// (crashes only between whole operations).
    pub crash_model: CrashModel,
    /// The workload.
    pub workload: Workload,
    /// Whether the nemesis also draws, on purpose, the fault patterns random draws rarely
    /// combine (`crashtest::nemesis::Patterns`): a second crash while a restarted server
    /// recovers its log, a crash in its first sync after a restart, a partition when a server
    /// stands for election. The store hints those moments (`crashtest::nemesis::hint`).
    pub patterns: bool,
    /// Whether a kill cuts a server's power for the network too
    /// (`crashtest::net::NetConfig::kill_resets` off): its connections vanish without a word,
    /// and its peers learn of it from their own timeouts, or from the RST it answers with
    /// once restarted.
    pub silent_kills: bool,
}

/// The name `RAFT_CRASH_MODEL` takes for a crash model.
///
/// ```
/// assert_eq!(raft_kv::scenario::model_name(crashtest::fs::CrashModel::Weak), "weak");
/// ```
pub fn model_name(model: CrashModel) -> &'static str {
    match model {
        CrashModel::Strong => "strong",
        CrashModel::Weak => "weak",
    }
}

impl Setup {
    /// The setup that `RAFT_BUG` (see [`Bug::from_env`]), `RAFT_CRASH_MODEL` (`strong`, the
    /// default, or `weak`), `RAFT_WORKLOAD` (`linearizable`, the default, or `cycle`),
    /// `RAFT_PATTERNS` (`off`, the default, or `on`) and `RAFT_KILLS` (`reset`, the default,
    /// or `silent`) name.
    ///
    /// # Panics
    ///
    /// Panics if a variable holds something else.
    ///
    /// ```
    /// assert_eq!(raft_kv::Setup::from_env(), raft_kv::Setup::default());
    /// ```
    pub fn from_env() -> Setup {
        let crash_model = match std::env::var("RAFT_CRASH_MODEL").as_deref() {
            Err(_) | Ok("strong") => CrashModel::Strong,
            Ok("weak") => CrashModel::Weak,
            Ok(other) => panic!("RAFT_CRASH_MODEL={other:?}: expected strong or weak"),
        };
        let workload = match std::env::var("RAFT_WORKLOAD") {
            Err(_) => Workload::default(),
            Ok(name) => name
                .parse()
                .unwrap_or_else(|e| panic!("RAFT_WORKLOAD: {e}")),
        };
        let patterns = match std::env::var("RAFT_PATTERNS").as_deref() {
            Err(_) | Ok("off") => false,
            Ok("on") => true,
            Ok(other) => panic!("RAFT_PATTERNS={other:?}: expected on or off"),
        };
        let silent_kills = match std::env::var("RAFT_KILLS").as_deref() {
            Err(_) | Ok("reset") => false,
            Ok("silent") => true,
            Ok(other) => panic!("RAFT_KILLS={other:?}: expected reset or silent"),
        };
        Setup {
            bug: Bug::from_env(),
            crash_model,
            workload,
            patterns,
            silent_kills,
        }
    }
}

impl fmt::Display for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RAFT_BUG={} RAFT_CRASH_MODEL={} RAFT_WORKLOAD={}",
            self.bug,
            model_name(self.crash_model),
            self.workload.name()
        )?;
        // Off is the default, and the lines of setups without patterns stay as they were.
        if self.patterns {
            write!(f, " RAFT_PATTERNS=on")?;
        }
        if self.silent_kills {
            write!(f, " RAFT_KILLS=silent")?;
        }
        Ok(())
    }
}

/// The network: default latencies (with their rare long tail), plus resets and split writes,
/// which a client with timeouts and retries survives; kills reset or silence connections as
/// `setup` says.
fn network(setup: Setup) -> NetConfig {
    NetConfig {
        tcp_reset: Ratio::new(1, 200),
        tcp_partial_write: Ratio::new(1, 10),
        kill_resets: !setup.silent_kills,
        ..NetConfig::default()
    }
}

/// The nemesis: an action every 0.5 to 2 s, each lasting up to 3 s, one server down at most;
/// with `patterns`, the fault patterns too.
fn nemesis(patterns: bool) -> Nemesis {
    let nemesis = Nemesis::default()
        .every(Duration::from_millis(500), Duration::from_secs(2))
        .lasting(Duration::from_millis(100), Duration::from_secs(3))
        .max_down(SERVERS / 2);
    if patterns {
        nemesis.patterns(Patterns::default())
    } else {
        nemesis
    }
}

/// Now and then, every server loses power at once and comes back a moment later. Each
/// outage is drawn through `fault::inject`, so it is listed and can be masked.
async fn power_failures(servers: Vec<Node>) {
    let draw = |min_ms, max_ms| {
        let ms = crashtest::rand::rng().with(|rng| rng.range_inclusive(min_ms, max_ms));
        Duration::from_millis(ms)
    };
    loop {
        time::sleep(draw(500, 3000)).await;
        if !crashtest::fault::enabled() {
            return;
        }
        let outage = draw(10, 500);
        let describe = || format!("power failure of every server for {outage:?}");
        if !fault::inject(NodeId::SUPERVISOR, Ratio::new(1, 3), describe) {
            continue;
        }
        for server in &servers {
            if server.status() != NodeStatus::Dead {
                server.kill();
            }
        }
        time::sleep(outage).await;
        for server in &servers {
            if server.status() == NodeStatus::Dead {
                server.restart();
            }
        }
    }
}

/// The clients still running, for the pending list.
fn running(clients: &[JoinHandle<()>]) -> Vec<String> {
    clients
        .iter()
        .enumerate()
        .filter(|(_, client)| !client.is_finished())
        .map(|(id, _)| format!("client {id} has not finished"))
        .collect()
}

/// One run: the body of a simulation. Fails if an invariant breaks, the cluster does not
/// settle, or the oracle rejects what the clients saw.
///
/// ```
/// let summary = crashtest::Sim::new(1).run(raft_kv::run(raft_kv::Setup::default())).unwrap();
/// assert!(summary.elapsed >= raft_kv::scenario::FAULT_PHASE);
/// ```
pub async fn run(setup: Setup) {
    crashtest::fs::configure(DiskConfig::default().crash_model(setup.crash_model));
    crashtest::net::configure(network(setup));
    let observer = Rc::new(Observer::default());
    observer.install();
    let names: Vec<String> = (0..SERVERS).map(|id| format!("s{id}")).collect();
    let servers: Vec<Node> = (0..SERVERS)
        .map(|id| {
            let config = ServerConfig {
                bug: setup.bug,
                ..ServerConfig::new(id, names.clone())
            };
            let observer = observer.clone();
            node::create(&names[id], move || {
                raft::serve(config.clone(), observer.clone())
            })
        })
        .collect();
    nemesis(setup.patterns).start(&servers);
    task::spawn_local(power_failures(servers));
    let until = Instant::now() + FAULT_PHASE;
    match setup.workload {
        Workload::Linearizable => linearizable(&names, &observer, until).await,
        Workload::Cycle => cycle(&names, &observer, until).await,
    }
}

async fn linearizable(names: &[String], observer: &Observer, until: Instant) {
    let history = workload::KvHistory::new();
    let clients: Vec<JoinHandle<()>> = (0..CLIENTS as u64)
        .map(|id| task::spawn_local(workload::client(id, names.to_vec(), history.clone(), until)))
        .collect();
    time::sleep_until(until).await;
    converge(CONVERGENCE, || {
        let mut pending = running(&clients);
        pending.extend(observer.lagging());
        pending
    })
    .await;
    if let Err(violation) = history.check(&KvMap::new()) {
        panic!("{violation}");
    }
}

async fn cycle(names: &[String], observer: &Observer, until: Instant) {
    cycle::load(&mut Client::new(names.to_vec(), 0)).await;
    let clients: Vec<JoinHandle<()>> = (0..CLIENTS)
        .map(|id| task::spawn_local(cycle::client(id, names.to_vec(), until)))
        .collect();
    time::sleep_until(until).await;
    let ring: Rc<RefCell<Option<Vec<Option<u64>>>>> = Rc::default();
    let reader = ring.clone();
    let mut client = Client::new(names.to_vec(), 0);
    let read = task::spawn_local(async move {
        *reader.borrow_mut() = Some(cycle::read_ring(&mut client).await);
    });
    converge(CONVERGENCE, || {
        let mut pending = running(&clients);
        if !read.is_finished() {
            pending.push("the ring has not been read".into());
        }
        pending.extend(observer.lagging());
        pending
    })
    .await;
    let ring = ring.borrow_mut().take().expect("the ring was read");
    if let Err(broken) = cycle::check(&ring) {
        panic!("the ring is broken: {broken}: {ring:?}");
    }
}
