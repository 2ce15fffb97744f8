//! Network faults that come and go by themselves: random partitions (TigerBeetle's packet
//! simulator) and random clogging (FoundationDB's), run by a [`crate::nemesis::Nemesis`].
//!
//! Each runs as a task for the rest of the run, drawing every choice from the run's
//! `"nemesis"` stream, and stops once the run heals. Every fault it starts goes through the
//! fault ledger (stream `"nemesis"`), so it is numbered, listed and can be masked. A fault is
//! drawn in full (who, how, how long) before the ledger rules on it, and the partition state
//! machine follows its own drawn course whether or not a partition was applied, so that a
//! replay with faults masked draws the same numbers from this stream.
//!
//! Partitions are [`Split`]s, the cut the nemesis's partition action makes too; clogs and
//! swizzles are the network's own (`crashtest_net::clog_node`, `clog_link`, `swizzle`).

use std::time::Duration;

use crashtest_core::node::Node;
use crashtest_core::rng::{Ratio, Rng, Stream};
use crashtest_core::{fault, time};

use crate::nemesis::draw;
use crate::split::Split;

/// Partitions drawn from the seed: a state machine stepped every `every` (TigerBeetle's
/// packet simulator): while the cluster is whole, each step starts a partition with chance
/// `start`; while partitioned, each step heals it with chance `heal`.
///
/// A partition splits the nemesis's nodes into two random non-empty sides; with chance
/// `one_way` only one side's packets are cut.
///
/// ```
/// use crashtest::nemesis::{Nemesis, RandomPartitions};
/// use crashtest::rand::Ratio;
/// use std::time::Duration;
///
/// let nemesis = Nemesis::idle().random_partitions(RandomPartitions {
///     every: Duration::from_secs(1),
///     start: Ratio::new(1, 10),
///     heal: Ratio::new(1, 3),
///     one_way: Ratio::new(1, 4),
/// });
/// assert!(nemesis.to_string().contains("random partitions"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomPartitions {
    /// Time between steps.
    pub every: Duration,
    /// Chance per step of a partition while there is none.
    pub start: Ratio,
    /// Chance per step that the partition heals.
    pub heal: Ratio,
    /// Chance that a new partition cuts one direction only.
    pub one_way: Ratio,
}

/// Clogs drawn from the seed (FoundationDB's `RandomClogging`): after a gap uniform in
/// `0..=2 * every`, a random node is clogged and a random link is clogged, each for a duration
/// up to `max` (short ones are far more frequent than long ones); with chance `swizzle` a
/// swizzle of all the nemesis's nodes happens instead.
///
/// ```
/// use crashtest::nemesis::{Nemesis, RandomClogging};
/// use crashtest::rand::Ratio;
/// use std::time::Duration;
///
/// let nemesis = Nemesis::idle().random_clogging(RandomClogging {
///     every: Duration::from_secs(2),
///     max: Duration::from_secs(5),
///     swizzle: Ratio::new(1, 4),
/// });
/// assert!(nemesis.to_string().contains("random clogging"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomClogging {
    /// Mean time between clogging events.
    pub every: Duration,
    /// The longest clog.
    pub max: Duration,
    /// Chance that an event is a swizzle rather than a node clog and a link clog.
    pub swizzle: Ratio,
}

impl RandomPartitions {
    pub(crate) fn validate(&self) {
        assert!(
            !self.every.is_zero(),
            "RandomPartitions::every must be positive"
        );
    }
}

impl RandomClogging {
    pub(crate) fn validate(&self) {
        assert!(
            !self.every.is_zero(),
            "RandomClogging::every must be positive"
        );
    }
}

/// A duration in nanoseconds, saturating at `u64::MAX` (585 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whether the run still takes faults (it stops after the heal).
fn running() -> bool {
    crashtest_core::fault::enabled()
}

/// Applies a drawn fault if the ledger lets it (numbered, listed, not masked, not healed).
fn applies(node: &Node, describe: impl FnOnce() -> String) -> bool {
    fault::arise(Stream::Nemesis, node.id(), describe)
}

/// The random partition state machine over `nodes`, until the run heals.
pub(crate) async fn partitions(config: RandomPartitions, nodes: Vec<Node>) {
    // The machine's partition, and whether it was applied: a masked partition still runs its
    // course, so that the draws after it stay aligned.
    let mut current: Option<(Split, bool)> = None;
    loop {
        time::sleep(config.every).await;
        if !running() {
            return;
        }
        match current.take() {
            Some((split, applied)) => {
                if !draw(|rng| rng.chance(config.heal)) {
                    current = Some((split, applied));
                } else if applied {
                    split.heal();
                }
            }
            None => {
                let Some(split) = draw(|rng| draw_split(rng, &config, &nodes)) else {
                    continue;
                };
                let side = split.first();
                let applied = fault::arise(Stream::Nemesis, side, || {
                    format!("random partition {}", split.describe())
                });
                if applied {
                    split.cut();
                }
                current = Some((split, applied));
            }
        }
    }
}

/// Whether a partition starts, and if so which: shuffled nodes cut at a random point.
fn draw_split(rng: &mut Rng, config: &RandomPartitions, nodes: &[Node]) -> Option<Split> {
    if !rng.chance(config.start) || nodes.len() < 2 {
        return None;
    }
    let mut shuffled = nodes.to_vec();
    rng.shuffle(&mut shuffled);
    let at = rng.range_inclusive(1, nodes.len() as u64 - 1) as usize;
    let one_way = rng.chance(config.one_way);
    let rest = shuffled.split_off(at);
    Some(Split::new(shuffled, rest, one_way))
}

/// A clog duration up to `max`: log-uniform over ten halvings, so short clogs are common and
/// long ones rare (FoundationDB draws `10·e^(−10u)` seconds).
fn clog_duration(rng: &mut Rng, max: u64) -> Duration {
    let top = max >> rng.below_inclusive(10);
    let duration = rng.range_inclusive(top / 2, top);
    assert!(
        duration <= max,
        "a clog lasts at most the configured maximum"
    );
    Duration::from_nanos(duration)
}

/// What one clogging event does, drawn in full before it is ruled on.
enum Clogging {
    Swizzle(Duration),
    Clogs {
        node: Node,
        link: Option<(Node, Node)>,
        node_for: Duration,
        link_for: Duration,
    },
}

/// Random clogging over `nodes`, until the run heals.
pub(crate) async fn clogging(config: RandomClogging, nodes: Vec<Node>) {
    if nodes.is_empty() {
        return;
    }
    let max = nanos(config.max);
    loop {
        let gap = draw(|rng| rng.below_inclusive(nanos(config.every).saturating_mul(2)));
        time::sleep(Duration::from_nanos(gap)).await;
        if !running() {
            return;
        }
        let event = draw(|rng| {
            let duration = clog_duration(rng, max);
            if rng.chance(config.swizzle) {
                return Clogging::Swizzle(duration);
            }
            let node = nodes[rng.index(nodes.len())];
            let link = (nodes.len() >= 2).then(|| {
                let a = nodes[rng.index(nodes.len())];
                let others: Vec<Node> = nodes.iter().copied().filter(|&n| n != a).collect();
                (a, others[rng.index(others.len())])
            });
            Clogging::Clogs {
                node,
                link,
                node_for: duration,
                link_for: clog_duration(rng, max),
            }
        });
        match event {
            Clogging::Swizzle(span) => {
                if applies(&nodes[0], || format!("random swizzle over {span:?}")) {
                    let ids: Vec<_> = nodes.iter().map(Node::id).collect();
                    crashtest_net::swizzle(&ids, span);
                }
            }
            Clogging::Clogs {
                node,
                link,
                node_for,
                link_for,
            } => {
                let what = || format!("random clog of {} for {node_for:?}", node.name());
                if applies(&node, what) {
                    crashtest_net::clog_node(node.id(), node_for);
                }
                if let Some((a, b)) = link {
                    let what = || {
                        format!(
                            "random clog of {} <-> {} for {link_for:?}",
                            a.name(),
                            b.name()
                        )
                    };
                    if applies(&a, what) {
                        crashtest_net::clog_link(a.id(), b.id(), link_for);
                    }
                }
            }
        }
    }
}
