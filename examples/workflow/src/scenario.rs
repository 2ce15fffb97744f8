//! The test scenario: a worker running the engine, the side-effect service, a hostile world,
//! then a liveness phase and the oracle.
//!
//! The worker is killed and restarted at random times (a nemesis with kills only; the
//! service, standing for the world outside, is protected), each kill applying the disk's
//! crash model, while the network resets connections, splits writes, clogs links and
//! partitions the two nodes for a while. After [`FAULT_PHASE`] every fault is healed and the
//! worker must finish every workflow within [`CONVERGENCE`], else the run fails with "no
//! convergence". Then, after a quiet [`SETTLE`] that lets late duplicates show, the oracle
//! checks the service's ledger.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest::fs::{CrashModel, DiskConfig, Latency};
use crashtest::nemesis::{Nemesis, RandomClogging, RandomPartitions};
use crashtest::net::NetConfig;
use crashtest::rand::Ratio;
use crashtest::{node, time};

use crate::bug::Bug;
use crate::service::{self, Ledger};
use crate::{engine, oracle, workflow};

/// How long the worker is under fire.
pub const FAULT_PHASE: Duration = Duration::from_secs(4);
/// How long the healed worker has to finish every workflow.
pub const CONVERGENCE: Duration = Duration::from_secs(60);
/// Quiet time after convergence before the oracle looks.
pub const SETTLE: Duration = Duration::from_secs(2);

/// What a run tests: which engine, under which crash model.
///
/// ```
/// use workflow::{Bug, Setup};
///
/// let setup = Setup { bug: Bug::NoChecksum, ..Setup::default() };
/// assert_eq!(setup.to_string(), "WORKFLOW_BUG=no_checksum WORKFLOW_CRASH_MODEL=strong");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// The planted bug, or [`Bug::None`].
    pub bug: Bug,
    /// The disk's crash model: the strong one (torn, reordered writes) or the weak one
    /// (crashes only between whole operations).
    pub crash_model: CrashModel,
}

impl Setup {
    /// The setup `WORKFLOW_BUG` (see [`Bug::from_env`]) and `WORKFLOW_CRASH_MODEL` (`strong`,
    /// the default, or `weak`) name.
    ///
    /// # Panics
    ///
    /// Panics if a variable holds something else.
    ///
    /// ```
    /// assert_eq!(workflow::Setup::from_env(), workflow::Setup::default());
    /// ```
    pub fn from_env() -> Setup {
        let crash_model = match std::env::var("WORKFLOW_CRASH_MODEL").as_deref() {
            Err(_) | Ok("strong") => CrashModel::Strong,
            Ok("weak") => CrashModel::Weak,
            Ok(other) => panic!("WORKFLOW_CRASH_MODEL={other:?}: expected strong or weak"),
        };
        Setup {
            bug: Bug::from_env(),
            crash_model,
        }
    }
}

impl std::fmt::Display for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let model = match self.crash_model {
            CrashModel::Strong => "strong",
            CrashModel::Weak => "weak",
        };
        write!(f, "WORKFLOW_BUG={} WORKFLOW_CRASH_MODEL={model}", self.bug)
    }
}

/// FoundationDB's simulated disk: 5,000 IOPS, 50 MB/s, and 5 to 15 ms per sync, so that a
/// kill often lands while a journal record is on its way to the disk.
fn disk_latency() -> Latency {
    Latency::new(5_000, 50_000_000).sync(Duration::from_millis(5), Duration::from_millis(15))
}

/// The network: FoundationDB-like latencies, plus resets and partial writes, which a client
/// with timeouts and retries survives.
fn network() -> NetConfig {
    NetConfig {
        tcp_reset: Ratio::new(1, 50),
        tcp_partial_write: Ratio::new(1, 10),
        ..NetConfig::default()
    }
}

/// The nemesis: kills of the worker only (the service stands for the world outside), and
/// clogs and short partitions between the two nodes, which the client survives too.
fn nemesis(service: &str) -> Nemesis {
    Nemesis::default()
        .every(Duration::from_millis(100), Duration::from_secs(1))
        .lasting(Duration::from_millis(10), Duration::from_millis(300))
        .protect(service)
        .weights(1, 0, 0, 0, 0, 0)
        .random_clogging(RandomClogging {
            every: Duration::from_secs(1),
            max: Duration::from_millis(1500),
            swizzle: Ratio::new(1, 4),
        })
        .random_partitions(RandomPartitions {
            every: Duration::from_millis(500),
            start: Ratio::new(1, 10),
            heal: Ratio::new(1, 2),
            one_way: Ratio::new(1, 4),
        })
}

/// One run: the body of a simulation. Fails (panics) if the engine loses or repeats an
/// effect, runs steps out of order or on wrong inputs, or does not finish.
///
/// ```
/// let summary = crashtest::Sim::new(1).run(workflow::run(workflow::Setup::default())).unwrap();
/// assert!(summary.elapsed >= workflow::scenario::FAULT_PHASE);
/// ```
pub async fn run(setup: Setup) {
    crashtest::fs::configure(
        DiskConfig::default()
            .crash_model(setup.crash_model)
            .latency(disk_latency()),
    );
    crashtest::net::configure(network());
    let count = crashtest::rand::rng().with(|r| r.range_inclusive(16, 32)) as u32;
    let workflows = Rc::new(workflow::draw(count));
    let ledger = Rc::new(RefCell::new(Ledger::default()));
    let world = ledger.clone();
    let service = node::create("service", move || service::serve(world.clone()));
    let submitted = workflows.clone();
    let worker = node::create("worker", move || {
        let workflows = submitted.clone();
        async move {
            engine::run(setup.bug, &workflows)
                .await
                .expect("the journal works");
            std::future::pending::<()>().await;
        }
    });
    nemesis(&service.name()).start(&[worker, service]);
    time::sleep(FAULT_PHASE).await;
    crashtest::fault::heal_all();
    let deadline = time::Instant::now() + CONVERGENCE;
    loop {
        let pending = oracle::pending(&workflows, &ledger.borrow());
        if pending.is_empty() {
            break;
        }
        assert!(
            time::Instant::now() < deadline,
            "no convergence: pending workflows {pending:?} {CONVERGENCE:?} after healing"
        );
        time::sleep(Duration::from_millis(100)).await;
    }
    time::sleep(SETTLE).await;
    if let Err(violation) = oracle::check(&workflows, &ledger.borrow()) {
        panic!("{violation}");
    }
}
