//! The nemesis: a schedule of process, network and clock faults drawn from the seed.
//!
//! At random gaps the nemesis picks an action by weight (kill, pause, partition, clog,
//! swizzle, clock jump or skew, and when asked for, a power failure of every node or a kill
//! inside the victim's next sync), a victim among the nodes the action may touch, and how long
//! the fault lasts; then it undoes the fault (restart, resume, heal).
//!
//! A kill lands where the victim's code awaits, so it never splits a synchronous call: a
//! storage engine written against `std::fs` (redb, a file-backed queue) writes and syncs a
//! whole commit inside one call, and an ordinary kill finds every write synced. A kill inside
//! a sync ([`Nemesis::kills_in_syncs`]) cuts the power in the middle of the victim's next
//! `fsync`, whatever call it is in: what it wrote since its last sync is left to the disk's
//! crash model (each unsynced write kept, dropped or torn), and that call and every later file
//! call of the dead process fails with `EIO` (its sockets' calls with `ConnectionAborted`), as
//! a process without power never sees its call complete. Where the kill lands, the failure report lists `killed inside a sync` after the
//! nemesis's fault (and it is probed as `nemesis: kill inside a sync`); a kill called off
//! leaves the fault listed alone. Alongside, it may run
//! random partitions and random clogging ([`crate::random`]), the network's faults that come
//! and go by themselves. It never kills, pauses or moves the clock of a protected node
//! (network faults still reach it: a node that must stay up can still be cut off), and it
//! never has more than `max_down` nodes dead or paused at once, so a cluster that tolerates
//! that many failures must survive every seed (FoundationDB's attrition workloads keep the
//! same bound).
//!
//! Every fault is drawn through `crashtest_core::fault::inject`, so it is numbered, listed in
//! the failure report, and can be masked when a failure is minimized. After the run heals
//! (`crashtest_core::fault::heal_all`) the nemesis stops. Partitions, the action's and the
//! random ones alike, are [`crate::split::Split`]s: one partitioning engine.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use crashtest_core::node::{Node, NodeId, NodeStatus};
use crashtest_core::rng::{Rng, Stream};
use crashtest_core::{fault, plumbing, task, time};

use crate::patterns::Striker;
pub use crate::patterns::{Hint, Patterns, hint};
use crate::random;
pub use crate::random::{RandomClogging, RandomPartitions};
use crate::split::Split;

/// The largest drift a clock action gives a node's wall clock, in parts per million (a bad
/// oscillator is off by tens of ppm; this is an adversary's clock).
const MAX_SKEW_PPM: u64 = 1_000;

/// What the nemesis may do and how often. Weights are relative; a weight of 0 turns an action
/// off.
///
/// ```
/// use crashtest::nemesis::Nemesis;
/// use std::time::Duration;
///
/// let nemesis = Nemesis::default()
///     .every(Duration::from_secs(1), Duration::from_secs(3))
///     .max_down(1)
///     .protect("client")
///     .weights(2, 1, 1, 1, 0, 1);
/// assert_eq!(nemesis.max_down_nodes(), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nemesis {
    gap: (Duration, Duration),
    down: (Duration, Duration),
    max_down: usize,
    protected: BTreeSet<String>,
    /// Relative weights of the actions, in the order of [`Action::ALL`].
    weights: [u32; Action::ALL.len()],
    max_clock_jump: Duration,
    random_partitions: Option<RandomPartitions>,
    random_clogging: Option<RandomClogging>,
    patterns: Option<Patterns>,
}

impl Default for Nemesis {
    /// An action every 1 to 5 s, each lasting 1 to 10 s, one node down at most, every action
    /// but power failures and kills inside syncs on with weight 1, clock jumps up to 2 s.
    fn default() -> Nemesis {
        Nemesis {
            gap: (Duration::from_secs(1), Duration::from_secs(5)),
            down: (Duration::from_secs(1), Duration::from_secs(10)),
            max_down: 1,
            protected: BTreeSet::new(),
            weights: [1, 1, 1, 1, 1, 1, 0, 0],
            max_clock_jump: Duration::from_secs(2),
            random_partitions: None,
            random_clogging: None,
            patterns: None,
        }
    }
}

/// The actions, in the order of [`Nemesis::weights`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Kill,
    Pause,
    Partition,
    Clog,
    Swizzle,
    ClockJump,
    PowerFailure,
    KillInSync,
}

impl Action {
    /// Every action, in weight order.
    const ALL: [Action; 8] = [
        Action::Kill,
        Action::Pause,
        Action::Partition,
        Action::Clog,
        Action::Swizzle,
        Action::ClockJump,
        Action::PowerFailure,
        Action::KillInSync,
    ];
}

impl Nemesis {
    /// A nemesis that takes no action of its own: add random partitions or clogging to it.
    ///
    /// ```
    /// let nemesis = crashtest::nemesis::Nemesis::idle();
    /// assert!(nemesis.to_string().starts_with("no actions"));
    /// ```
    pub fn idle() -> Nemesis {
        Nemesis {
            weights: [0; Action::ALL.len()],
            ..Nemesis::default()
        }
    }

    /// Also runs random partitions over the nodes it starts on.
    ///
    /// # Panics
    ///
    /// Panics if `config.every` is zero.
    ///
    /// ```
    /// use crashtest::nemesis::{Nemesis, RandomPartitions};
    /// use crashtest::rand::Ratio;
    /// let _ = Nemesis::default().random_partitions(RandomPartitions {
    ///     every: std::time::Duration::from_millis(500),
    ///     start: Ratio::new(1, 10),
    ///     heal: Ratio::new(1, 2),
    ///     one_way: Ratio::new(1, 4),
    /// });
    /// ```
    pub fn random_partitions(mut self, config: RandomPartitions) -> Nemesis {
        config.validate();
        self.random_partitions = Some(config);
        self
    }

    /// Also runs random clogging over the nodes it starts on.
    ///
    /// # Panics
    ///
    /// Panics if `config.every` is zero.
    ///
    /// ```
    /// use crashtest::nemesis::{Nemesis, RandomClogging};
    /// use crashtest::rand::Ratio;
    /// let _ = Nemesis::default().random_clogging(RandomClogging {
    ///     every: std::time::Duration::from_secs(1),
    ///     max: std::time::Duration::from_millis(1500),
    ///     swizzle: Ratio::new(1, 4),
    /// });
    /// ```
    pub fn random_clogging(mut self, config: RandomClogging) -> Nemesis {
        config.validate();
        self.random_clogging = Some(config);
        self
    }

    /// The gap between two actions is drawn uniformly in `min..=max`.
    ///
    /// ```
    /// let _ = crashtest::nemesis::Nemesis::default()
    ///     .every(std::time::Duration::from_millis(100), std::time::Duration::from_secs(1));
    /// ```
    pub fn every(mut self, min: Duration, max: Duration) -> Nemesis {
        assert!(
            !min.is_zero() && min <= max,
            "the nemesis gap {min:?}..={max:?} is empty or zero"
        );
        self.gap = (min, max);
        self
    }

    /// A fault lasts a duration drawn uniformly in `min..=max` before it is undone.
    ///
    /// ```
    /// let _ = crashtest::nemesis::Nemesis::default()
    ///     .lasting(std::time::Duration::from_secs(1), std::time::Duration::from_secs(30));
    /// ```
    pub fn lasting(mut self, min: Duration, max: Duration) -> Nemesis {
        assert!(min <= max, "the fault duration {min:?}..={max:?} is empty");
        self.down = (min, max);
        self
    }

    /// At most `nodes` nodes are dead or paused at once.
    ///
    /// ```
    /// let _ = crashtest::nemesis::Nemesis::default().max_down(2);
    /// ```
    pub fn max_down(mut self, nodes: usize) -> Nemesis {
        self.max_down = nodes;
        self
    }

    /// The most nodes the nemesis takes down at once.
    ///
    /// ```
    /// assert_eq!(crashtest::nemesis::Nemesis::default().max_down_nodes(), 1);
    /// ```
    pub fn max_down_nodes(&self) -> usize {
        self.max_down
    }

    /// Never kills, pauses or moves the clock of the node called `name`; network faults
    /// (partitions, clogs, swizzles) still reach it.
    ///
    /// ```
    /// let _ = crashtest::nemesis::Nemesis::default().protect("coordinator");
    /// ```
    pub fn protect(mut self, name: impl Into<String>) -> Nemesis {
        self.protected.insert(name.into());
        self
    }

    /// Relative weights of kill, pause, partition, clog, swizzle and clock jump.
    ///
    /// # Panics
    ///
    /// Panics if every weight is zero, those set by [`Nemesis::power_failures`] and
    /// [`Nemesis::kills_in_syncs`] included: to run only those, set them first and then
    /// these six to zero.
    ///
    /// ```
    /// // Only kills and partitions.
    /// let _ = crashtest::nemesis::Nemesis::default().weights(1, 0, 1, 0, 0, 0);
    /// ```
    pub fn weights(
        mut self,
        kill: u32,
        pause: u32,
        partition: u32,
        clog: u32,
        swizzle: u32,
        clock_jump: u32,
    ) -> Nemesis {
        self.weights[..6].copy_from_slice(&[kill, pause, partition, clog, swizzle, clock_jump]);
        assert!(
            self.weights.iter().sum::<u32>() > 0,
            "a nemesis needs at least one action with a weight above zero"
        );
        self
    }

    /// Adds correlated failures with relative weight `weight` (default 0, off): every node the
    /// nemesis may touch dies at once, whatever `max_down` says, and all restart together
    /// (a rack or a data centre losing power). Bugs in fsync discipline often show only when
    /// a majority crashes together.
    ///
    /// ```
    /// let nemesis = crashtest::nemesis::Nemesis::default().power_failures(1);
    /// assert!(nemesis.to_string().contains("PowerFailurex1"));
    /// ```
    pub fn power_failures(mut self, weight: u32) -> Nemesis {
        self.weights[Action::PowerFailure as usize] = weight;
        self
    }

    /// Also kills, with relative weight `weight`, inside the victim's next sync (see the
    /// module docs): the crash point an ordinary kill cannot reach in code that writes and
    /// syncs inside one synchronous call. The victim counts as down from the draw, and if it
    /// does not sync before the fault's time is up, the kill is called off.
    ///
    /// ```
    /// let nemesis = crashtest::nemesis::Nemesis::default().kills_in_syncs(2);
    /// assert!(nemesis.to_string().contains("KillInSyncx2"));
    /// ```
    pub fn kills_in_syncs(mut self, weight: u32) -> Nemesis {
        self.weights[Action::KillInSync as usize] = weight;
        self
    }

    /// Also draws the fault patterns that independent draws rarely combine (a crash during
    /// recovery, a crash inside the first sync after a restart, a partition during an
    /// election, a clock jump during a lease; see [`Patterns`] and [`hint`]). The recovery
    /// patterns follow the kills of this nemesis; the others wait for the program's hints.
    ///
    /// ```
    /// let nemesis = crashtest::nemesis::Nemesis::default()
    ///     .patterns(crashtest::nemesis::Patterns::default());
    /// assert!(nemesis.to_string().contains("patterns"));
    /// ```
    pub fn patterns(mut self, patterns: Patterns) -> Nemesis {
        self.patterns = Some(patterns);
        self
    }

    /// Only kills (and the restarts that undo them): the classic crash-recovery nemesis.
    /// Every other weight, power failures' and kills inside syncs' included, is set to zero.
    ///
    /// ```
    /// let nemesis = crashtest::nemesis::Nemesis::default().kills_in_syncs(1).kills_only();
    /// assert!(nemesis.to_string().starts_with("Killx1 every"));
    /// assert!(!nemesis.to_string().contains("KillInSync"));
    /// ```
    pub fn kills_only(mut self) -> Nemesis {
        self.weights = [0; Action::ALL.len()];
        self.weights[Action::Kill as usize] = 1;
        self
    }

    /// Clock actions either jump a node's wall clock by up to `max` either way or make it
    /// drift by up to 1000 ppm.
    ///
    /// ```
    /// let _ = crashtest::nemesis::Nemesis::default()
    ///     .max_clock_jump(std::time::Duration::from_secs(30));
    /// ```
    pub fn max_clock_jump(mut self, max: Duration) -> Nemesis {
        self.max_clock_jump = max;
        self
    }

    fn weighted(&self) -> [(Action, u32); Action::ALL.len()] {
        Action::ALL.map(|action| (action, self.weights[action as usize]))
    }

    /// Starts the nemesis on `nodes` for the rest of the run (or until it heals). It runs as
    /// tasks of the test body (the action loop, and random partitions and clogging if they are
    /// on); its faults are drawn from the run's "nemesis" stream. The handle is the action
    /// loop's.
    ///
    /// # Panics
    ///
    /// Panics outside a simulation.
    ///
    /// ```
    /// use crashtest::{nemesis::Nemesis, node, time};
    /// use std::time::Duration;
    ///
    /// let failure = crashtest::Sim::new(3).run(async {
    ///     let nodes: Vec<_> = (0..3)
    ///         .map(|i| node::create(format!("n{i}"), std::future::pending))
    ///         .collect();
    ///     Nemesis::default().start(&nodes);
    ///     time::sleep(Duration::from_secs(60)).await;
    ///     panic!("show what the nemesis did");
    /// }).unwrap_err();
    /// assert!(!failure.faults.is_empty());
    /// assert!(failure.context.iter().any(|line| line.starts_with("nemesis:")));
    /// ```
    pub fn start(&self, nodes: &[Node]) -> task::JoinHandle<()> {
        crashtest_core::report::add_context(format!("nemesis: {self}"));
        let nodes = nodes.to_vec();
        if let Some(config) = self.random_partitions {
            spawn_own(
                "random partitions",
                random::partitions(config, nodes.clone()),
            );
        }
        if let Some(config) = self.random_clogging {
            spawn_own("random clogging", random::clogging(config, nodes.clone()));
        }
        let nemesis = self.clone();
        spawn_own("nemesis", run(nemesis, nodes))
    }

    /// The nodes an action may hit: every node for a network action, the unprotected ones for
    /// the others.
    fn victims(&self, action: Action, nodes: &[Node]) -> Vec<Node> {
        let network = matches!(action, Action::Partition | Action::Clog | Action::Swizzle);
        nodes
            .iter()
            .copied()
            .filter(|n| network || !self.protected.contains(&n.name()))
            .collect()
    }
}

impl fmt::Display for Nemesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on: Vec<String> = self
            .weighted()
            .iter()
            .filter(|(_, w)| *w > 0)
            .map(|(a, w)| format!("{a:?}x{w}"))
            .collect();
        if on.is_empty() {
            f.write_str("no actions")?;
        } else {
            write!(
                f,
                "{} every {:?}..{:?} lasting {:?}..{:?}, at most {} down",
                on.join(" "),
                self.gap.0,
                self.gap.1,
                self.down.0,
                self.down.1,
                self.max_down
            )?;
        }
        if !self.protected.is_empty() {
            let names: Vec<&str> = self.protected.iter().map(String::as_str).collect();
            write!(f, ", protected {}", names.join(","))?;
        }
        if let Some(p) = &self.random_partitions {
            write!(
                f,
                "; random partitions every {:?} (start {}, heal {}, one way {})",
                p.every, p.start, p.heal, p.one_way
            )?;
        }
        if let Some(c) = &self.random_clogging {
            write!(
                f,
                "; random clogging every {:?} up to {:?} (swizzle {})",
                c.every, c.max, c.swizzle
            )?;
        }
        if let Some(p) = &self.patterns {
            write!(
                f,
                "; patterns (crash in recovery {} within {:?}, crash at first sync {}, \
                 partition in election {}, clock jump in lease {})",
                p.crash_in_recovery,
                p.recovery_window,
                p.crash_at_first_sync,
                p.partition_in_election,
                p.clock_jump_in_lease
            )?;
        }
        Ok(())
    }
}

/// Spawns one of the nemesis's own tasks on the calling node, known in reports by its name
/// alone (a place inside crashtest would tell the program's author nothing).
fn spawn_own<F>(name: &str, future: F) -> task::JoinHandle<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    let node = plumbing::current_node().expect("the nemesis runs inside a simulation");
    plumbing::life::spawn_on(node, name, future)
}

/// Draws from the run's nemesis stream.
pub(crate) fn draw<R>(f: impl FnOnce(&mut Rng) -> R) -> R {
    plumbing::with_stream(Stream::Nemesis, f).expect("the nemesis runs inside a simulation")
}

pub(crate) fn duration_in(rng: &mut Rng, (min, max): (Duration, Duration)) -> Duration {
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(rng.range_inclusive(nanos(min), nanos(max)))
}

/// The action loop: wait, pick, apply, schedule the undo.
async fn run(nemesis: Nemesis, nodes: Vec<Node>) {
    let weighted = nemesis.weighted();
    let total: u32 = weighted.iter().map(|(_, w)| w).sum();
    let can_act = weighted
        .iter()
        .any(|(action, w)| *w > 0 && !nemesis.victims(*action, &nodes).is_empty());
    let down: Rc<RefCell<BTreeSet<NodeId>>> = Rc::default();
    // The patterns act on their own (at restarts and hints) once installed.
    if let Some(patterns) = nemesis.patterns {
        let protected = nodes
            .iter()
            .filter(|n| nemesis.protected.contains(&n.name()))
            .map(Node::id)
            .collect();
        Striker::install(
            patterns,
            &nodes,
            protected,
            down.clone(),
            nemesis.max_down,
            nemesis.down,
            nemesis.max_clock_jump,
        );
    }
    if !can_act {
        return;
    }
    loop {
        time::sleep(draw(|rng| duration_in(rng, nemesis.gap))).await;
        if !crashtest_core::fault::enabled() {
            return;
        }
        let (action, targets, victim, lasting) = draw(|rng| {
            let pick = rng.below_inclusive(u64::from(total) - 1);
            let mut threshold = 0u64;
            let action = weighted
                .iter()
                .find(|(_, w)| {
                    threshold += u64::from(*w);
                    pick < threshold
                })
                .map(|(a, _)| *a)
                .expect("the pick is below the total weight");
            let targets = nemesis.victims(action, &nodes);
            let victim = (!targets.is_empty()).then(|| rng.index(targets.len()));
            (action, targets, victim, duration_in(rng, nemesis.down))
        });
        if let Some(victim) = victim {
            apply(&nemesis, action, &targets, targets[victim], lasting, &down);
        }
    }
}

fn apply(
    nemesis: &Nemesis,
    action: Action,
    targets: &[Node],
    victim: Node,
    lasting: Duration,
    down: &Rc<RefCell<BTreeSet<NodeId>>>,
) {
    let id = victim.id();
    let takes_down = matches!(action, Action::Kill | Action::Pause | Action::KillInSync);
    // A node counted down may still run: a kill inside a sync holds its place until the
    // sync comes. Nothing else takes it down meanwhile, or the bound would miscount.
    if takes_down
        && (victim.status() != NodeStatus::Running
            || down.borrow().contains(&id)
            || down.borrow().len() >= nemesis.max_down)
    {
        return;
    }
    let describe = || format!("nemesis {action:?} for {lasting:?}");
    if !fault::arise(Stream::Nemesis, id, describe) {
        return;
    }
    match action {
        Action::Kill | Action::Pause => {
            if action == Action::Kill {
                plumbing::life::kill(id);
            } else {
                plumbing::life::pause(id);
            }
            down.borrow_mut().insert(id);
            let down = down.clone();
            spawn_own("nemesis undo", async move {
                time::sleep(lasting).await;
                match victim.status() {
                    NodeStatus::Dead => plumbing::life::restart(id),
                    NodeStatus::Paused => plumbing::life::resume(id),
                    NodeStatus::Running => {}
                }
                down.borrow_mut().remove(&id);
            });
        }
        Action::KillInSync => {
            // Counted down from now, so that the bound holds whenever the sync comes; a sync
            // after the fault's time is up finds the trap called off, and so does one after
            // another fault took the place (a power failure's restart releases it).
            down.borrow_mut().insert(id);
            let armed = Rc::new(Cell::new(true));
            let fired = Rc::new(Cell::new(false));
            let (trap, struck, held) = (armed.clone(), fired.clone(), down.clone());
            crashtest_fs::on_next_sync(id, move || {
                if trap.get()
                    && fault::enabled()
                    && held.borrow().contains(&id)
                    && victim.status() == NodeStatus::Running
                {
                    crashtest_core::probe!("nemesis: kill inside a sync");
                    fault::note(id, "killed inside a sync".into());
                    plumbing::life::kill(id);
                    struck.set(true);
                }
            });
            let down = down.clone();
            spawn_own("nemesis undo", async move {
                time::sleep(lasting).await;
                armed.set(false);
                // Only this fault's own kill is undone: a node that died otherwise (the
                // program's own kill, a power failure) comes back as that fault says.
                if fired.get() && victim.status() == NodeStatus::Dead {
                    plumbing::life::restart(id);
                }
                down.borrow_mut().remove(&id);
            });
        }
        Action::Partition => {
            let others: Vec<Node> = targets.iter().copied().filter(|n| *n != victim).collect();
            let one_way = draw(|rng| rng.boolean());
            if others.is_empty() {
                return;
            }
            let split = Split::new(vec![victim], others, one_way);
            split.cut();
            spawn_own("nemesis undo", async move {
                time::sleep(lasting).await;
                split.heal();
            });
        }
        Action::PowerFailure => {
            let struck: Vec<Node> = targets
                .iter()
                .copied()
                .filter(|n| n.status() != NodeStatus::Dead)
                .collect();
            for node in &struck {
                plumbing::life::kill(node.id());
                down.borrow_mut().insert(node.id());
            }
            let down = down.clone();
            spawn_own("nemesis undo", async move {
                time::sleep(lasting).await;
                for node in struck {
                    down.borrow_mut().remove(&node.id());
                    if node.status() == NodeStatus::Dead {
                        plumbing::life::restart(node.id());
                    }
                }
            });
        }
        Action::Clog => crashtest_net::clog_node(id, lasting),
        Action::Swizzle => {
            crashtest_core::probe!("nemesis: swizzle-clog");
            let ids: Vec<NodeId> = targets.iter().map(Node::id).collect();
            crashtest_net::swizzle(&ids, lasting);
        }
        Action::ClockJump => {
            // Half the time a jump (NTP stepping the clock), half a skew (a drifting
            // oscillator): both only move the node's wall clock, never its Instants.
            let max = i64::try_from(nemesis.max_clock_jump.as_nanos()).unwrap_or(i64::MAX);
            let (skew, offset, ppm) = draw(|rng| {
                let offset = rng.range_inclusive(0, 2 * max as u64) as i64 - max;
                let ppm = rng.range_inclusive(0, 2 * MAX_SKEW_PPM) as i64 - MAX_SKEW_PPM as i64;
                (rng.boolean(), offset, ppm)
            });
            if skew {
                victim.set_clock_drift_ppm(ppm);
            } else {
                victim.set_clock_offset_ns(offset);
            }
        }
    }
}
