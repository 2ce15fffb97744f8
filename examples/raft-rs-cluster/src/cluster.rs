//! The workload: three members under a nemesis, a client proposing commands, then the
//! liveness phase and the final checks.

use std::rc::Rc;
use std::time::Duration;

use crashtest::check::liveness;
use crashtest::nemesis::Nemesis;
use crashtest::swarm::{FaultKinds, Profile};
use crashtest::{node, task, time};

use crate::node::{Flavor, MEMBERS, Mailboxes, name_of};
use crate::oracle::Oracle;

/// How long the client waits for a command to be applied before it proposes it again.
const RETRY: Duration = Duration::from_millis(300);

/// How one run is shaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Commands the client gets committed.
    pub commands: usize,
    /// How long the nemesis runs before the liveness phase.
    pub chaos: Duration,
    /// The nemesis (its bound on nodes down must leave a quorum up).
    pub nemesis: Nemesis,
    /// Whether the seed also draws a swarm profile of network faults (latency tails, datagram
    /// loss, duplication and reordering, random partitions and clogging).
    pub swarm_network: bool,
    /// How long the healed cluster has to apply every command on every member.
    pub converge_within: Duration,
}

impl Default for Plan {
    /// 20 commands; 15 s of kills, pauses, partitions, clogs and swizzles (weights 3, 2, 3,
    /// 2, 1; an action every 0.1 to 0.5 s, each lasting 0.1 to 1.5 s, one member down at
    /// most) over a swarm-drawn network; then 20 s to converge. Clock jumps are off: raft-rs
    /// reads no wall clock.
    fn default() -> Plan {
        Plan {
            commands: 20,
            chaos: Duration::from_secs(15),
            nemesis: Nemesis::default()
                .weights(3, 2, 3, 2, 1, 0)
                .every(Duration::from_millis(100), Duration::from_millis(500))
                .lasting(Duration::from_millis(100), Duration::from_millis(1500))
                .max_down(1),
            swarm_network: true,
            converge_within: Duration::from_secs(20),
        }
    }
}

/// What a run did, for the tests to assert on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The raft-rs options the seed drew.
    pub flavor: Flavor,
    /// How many terms had a leader.
    pub terms_with_leader: usize,
}

/// Runs the cluster under `plan` inside the current simulation. Any violated property fails
/// the run (a panic or an invariant); a cluster that does not apply every command on every
/// member after healing fails it as "no convergence".
pub async fn run(plan: Plan) -> Outcome {
    let flavor = crashtest::rand::rng().with(|rng| Flavor {
        pre_vote: rng.boolean(),
        check_quorum: rng.boolean(),
    });
    crashtest::report::add_context(format!("raft-rs options: {flavor:?}"));
    let oracle = Oracle::install();
    let mailboxes = Mailboxes::default();
    let members: Vec<node::Node> = MEMBERS
        .iter()
        .map(|&id| {
            let (oracle, mailboxes) = (oracle.clone(), mailboxes.clone());
            node::create(name_of(id), move || {
                crate::node::run(id, flavor, oracle.clone(), mailboxes.clone())
            })
        })
        .collect();
    let commands: Vec<Vec<u8>> = (0..plan.commands)
        .map(|k| format!("command {k}").into_bytes())
        .collect();
    task::spawn_local(client(commands.clone(), oracle.clone(), mailboxes));
    if plan.swarm_network {
        let network_only = FaultKinds {
            network: true,
            process: false,
            clock: false,
            disk_errors: false,
            disk_corruption: false,
        };
        Profile::draw(network_only).apply(&members);
    }
    plan.nemesis.start(&members);
    time::sleep(plan.chaos).await;
    // Polled every few virtual milliseconds until the members catch up: one line per
    // member that lags, naming what it lacks. The lines are worked out again only when some
    // member's applied payloads changed: most polls find nothing new, and asking and naming
    // every command each time was over a third of a seed's instructions.
    let mut answered: Option<(u64, Vec<String>)> = None;
    liveness::converge(plan.converge_within, || {
        let changes = oracle.payload_changes();
        if let Some((seen, pending)) = &answered
            && *seen == changes
        {
            return pending.clone();
        }
        let pending: Vec<String> = MEMBERS
            .iter()
            .filter_map(|&id| {
                let missing = oracle.not_applied(id, &commands);
                (!missing.is_empty()).then(|| {
                    let names: Vec<_> = missing
                        .iter()
                        .map(|&k| String::from_utf8_lossy(&commands[k]))
                        .collect();
                    format!("{} not applied on {}", names.join(", "), name_of(id))
                })
            })
            .collect();
        answered = Some((changes, pending.clone()));
        pending
    })
    .await;
    if let Err(problem) = oracle.check_final() {
        panic!("{problem}");
    }
    Outcome {
        flavor,
        terms_with_leader: oracle.terms_with_leader(),
    }
}

/// Proposes each command until some member applies it: to the latest leader on even tries,
/// to each member in turn on odd ones (a follower forwards to its leader, and the latest
/// leader may be dead or cut off).
async fn client(commands: Vec<Vec<u8>>, oracle: Rc<Oracle>, mailboxes: Mailboxes) {
    let mut tries = 0usize;
    for command in commands {
        while !oracle.applied_anywhere(&command) {
            let target = match oracle.latest_leader() {
                Some(leader) if tries.is_multiple_of(2) => leader,
                _ => MEMBERS[tries / 2 % MEMBERS.len()],
            };
            mailboxes
                .borrow_mut()
                .entry(target)
                .or_default()
                .push_back(command.clone());
            tries += 1;
            time::sleep(RETRY).await;
        }
    }
}
