//! Swarm testing: each seed draws which kinds of fault are on and how hard they hit.
//!
//! Running every fault at a fixed rate in every run makes every run alike: rare paths that
//! need one fault *absent* and another *frequent* are seldom reached. Swarm testing (Groce
//! et al., and FoundationDB's and TigerBeetle's simulators) instead draws a profile per seed:
//! each allowed kind of fault is on or off, and its rate is drawn within a range. Across many
//! seeds every combination shows up.
//!
//! Only the kinds of fault the program claims to tolerate are drawn ([`FaultKinds`]): a
//! program that treats an I/O error as fatal is not wrong, so disk errors are drawn only when
//! allowed. The scheduling policy is drawn too, always: every order of ready tasks is a legal
//! execution, and first in, first out or a narrow window reaches interleavings a uniform
//! pick rarely does (and the other way round). The profile is printed in the failure report.

use std::fmt;
use std::time::Duration;

use crashtest_core::node::Node;
use crashtest_core::plumbing;
use crashtest_core::rng::{Ratio, Rng, Stream};
use crashtest_fs::DiskConfig;
use crashtest_net::{Latency, NetConfig};

use crate::nemesis::{Nemesis, Patterns, RandomClogging, RandomPartitions};

/// The kinds of fault a program claims to tolerate, which a swarm profile may turn on.
///
/// ```
/// use crashtest::swarm::FaultKinds;
/// let kinds = FaultKinds { disk_errors: false, ..FaultKinds::ALL };
/// assert!(kinds.network && !kinds.disk_errors);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultKinds {
    /// Latency tails, datagram loss/duplication/reordering, TCP partial writes and resets,
    /// random partitions and clogging.
    pub network: bool,
    /// Kills and pauses of nodes (with the disk's crash model on every kill).
    pub process: bool,
    /// Wall-clock jumps.
    pub clock: bool,
    /// I/O errors on read, write and sync, and a full disk: the program must handle them.
    pub disk_errors: bool,
    /// Read corruption and misdirected writes, bounded per zone: the program must checksum
    /// and keep a redundant copy.
    pub disk_corruption: bool,
}

impl FaultKinds {
    /// Every kind of fault.
    pub const ALL: FaultKinds = FaultKinds {
        network: true,
        process: true,
        clock: true,
        disk_errors: true,
        disk_corruption: true,
    };

    /// What a replicated service with fsync discipline tolerates without handling disk
    /// errors: network, process and clock faults.
    pub const CRASH_TOLERANT: FaultKinds = FaultKinds {
        network: true,
        process: true,
        clock: true,
        disk_errors: false,
        disk_corruption: false,
    };
}

/// One seed's draw: which faults are on, and their configurations.
///
/// ```
/// use crashtest::swarm::{FaultKinds, Profile};
///
/// crashtest::Sim::new(5).run(async {
///     let profile = Profile::draw(FaultKinds::CRASH_TOLERANT);
///     assert!(!profile.disk_errors_on());
/// }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Profile {
    /// The network's configuration.
    pub net: NetConfig,
    /// The disks' configuration.
    pub disk: DiskConfig,
    /// The nemesis, if process, clock, or random partition or clogging faults are on.
    pub nemesis: Option<Nemesis>,
    /// The scheduling window, when the profile narrows it (1: first in, first out); `None`
    /// keeps the run's own.
    pub scheduling_window: Option<usize>,
    /// What was turned on, one phrase each, for the report.
    pub summary: Vec<String>,
    disk_errors: bool,
}

/// On with probability one half.
const COIN: Ratio = Ratio::new(1, 2);

fn percent(rng: &mut Rng, min: u64, max: u64) -> Ratio {
    Ratio::new(rng.range_inclusive(min, max), 100)
}

fn millis(rng: &mut Rng, min: u64, max: u64) -> Duration {
    Duration::from_millis(rng.range_inclusive(min, max))
}

impl Profile {
    /// Draws a profile for the running simulation from its "swarm" stream.
    ///
    /// # Panics
    ///
    /// Panics outside a simulation.
    ///
    /// ```
    /// use crashtest::swarm::{FaultKinds, Profile};
    /// crashtest::Sim::new(1).run(async {
    ///     let profile = Profile::draw(FaultKinds::ALL);
    ///     println!("{profile}");
    /// }).unwrap();
    /// ```
    pub fn draw(allowed: FaultKinds) -> Profile {
        plumbing::with_stream(Stream::Swarm, |rng| Profile::draw_from(rng, allowed))
            .expect("a swarm profile is drawn inside a simulation")
    }

    fn draw_from(rng: &mut Rng, allowed: FaultKinds) -> Profile {
        let mut summary = Vec::new();
        let mut net = NetConfig::default();
        let (mut random_partitions, mut random_clogging) = (None, None);
        if allowed.network {
            if rng.chance(COIN) {
                net.latency = Latency {
                    min: Duration::from_micros(rng.range_inclusive(10, 500)),
                    max: millis(rng, 1, 10),
                    tail: percent(rng, 1, 5),
                    tail_max: millis(rng, 50, 1000),
                };
                summary.push(format!(
                    "latency {:?}..{:?}",
                    net.latency.min, net.latency.max
                ));
            }
            for (name, field) in [
                ("udp loss", &mut net.udp_loss),
                ("udp duplicates", &mut net.udp_duplicate),
                ("udp reordering", &mut net.udp_reorder),
                ("tcp partial writes", &mut net.tcp_partial_write),
            ] {
                if rng.chance(COIN) {
                    *field = percent(rng, 1, 20);
                    summary.push(format!("{name} {field}"));
                }
            }
            if rng.chance(COIN) {
                net.tcp_reset = Ratio::new(rng.range_inclusive(1, 10), 10_000);
                summary.push(format!("tcp resets {}", net.tcp_reset));
            }
            if rng.chance(COIN) {
                random_partitions = Some(RandomPartitions {
                    every: millis(rng, 500, 5000),
                    start: percent(rng, 5, 50),
                    heal: percent(rng, 20, 80),
                    one_way: percent(rng, 0, 50),
                });
                summary.push("random partitions".into());
            }
            if rng.chance(COIN) {
                random_clogging = Some(RandomClogging {
                    every: millis(rng, 500, 5000),
                    max: millis(rng, 100, 5000),
                    swizzle: percent(rng, 0, 30),
                });
                summary.push("random clogging".into());
            }
        }
        let mut disk = DiskConfig::default();
        let disk_errors = allowed.disk_errors && rng.chance(COIN);
        if disk_errors {
            let rate = Ratio::new(rng.range_inclusive(1, 20), 1000);
            disk = disk.read_error(rate).write_error(rate).sync_error(rate);
            summary.push(format!("disk errors {rate}"));
        }
        if allowed.disk_corruption && rng.chance(COIN) {
            let rate = Ratio::new(rng.range_inclusive(1, 20), 1000);
            disk = disk.read_corruption(rate).misdirected_write(rate);
            summary.push(format!("disk corruption {rate}"));
        }
        let process = allowed.process && rng.chance(COIN);
        let clock = allowed.clock && rng.chance(COIN);
        let acting = (process || clock).then(|| {
            let (kill, pause) = if process { (2, 1) } else { (0, 0) };
            let jump = u32::from(clock);
            let network = u32::from(allowed.network);
            let gap_s = rng.range_inclusive(1, 10);
            let nemesis = Nemesis::default()
                .weights(kill, pause, network, network, network, jump)
                .every(Duration::from_secs(gap_s), Duration::from_secs(gap_s * 3));
            summary.push(format!("nemesis ({nemesis})"));
            nemesis
        });
        let random = random_partitions.is_some() || random_clogging.is_some();
        let nemesis = match acting {
            None if !random => None,
            acting => {
                let mut nemesis = acting.unwrap_or_else(Nemesis::idle);
                if let Some(config) = random_partitions {
                    nemesis = nemesis.random_partitions(config);
                }
                if let Some(config) = random_clogging {
                    nemesis = nemesis.random_clogging(config);
                }
                Some(nemesis)
            }
        };
        if summary.is_empty() {
            summary.push("no faults".into());
        }
        // Drawn last, so that adding it left every earlier draw of a seed as it was. Any
        // order of ready tasks is a legal execution, so this is always allowed: a third of
        // the profiles run first in, first out (as FoundationDB's and tokio's schedulers
        // do), a third pick within a narrow window, the rest keep the run's own.
        let scheduling_window = match rng.below_inclusive(2) {
            0 => Some(1),
            1 => Some(rng.range_inclusive(2, 16) as usize),
            _ => None,
        };
        match scheduling_window {
            Some(1) => summary.push("scheduler first in, first out".into()),
            Some(window) => summary.push(format!("scheduler window {window}")),
            None => {}
        }
        // Drawn after everything else, for the same reason: with process faults on, half
        // the profiles add the fault patterns random draws rarely combine.
        let nemesis = match nemesis {
            Some(nemesis) if process && rng.chance(COIN) => {
                let patterns = Patterns {
                    crash_in_recovery: percent(rng, 10, 50),
                    recovery_window: millis(rng, 1, 200),
                    crash_at_first_sync: percent(rng, 10, 50),
                    partition_in_election: percent(rng, 10, 50),
                    clock_jump_in_lease: if clock {
                        percent(rng, 10, 50)
                    } else {
                        Ratio::NEVER
                    },
                };
                summary.push("fault patterns".into());
                Some(nemesis.patterns(patterns))
            }
            nemesis => nemesis,
        };
        Profile {
            net,
            disk,
            nemesis,
            scheduling_window,
            summary,
            disk_errors,
        }
    }

    /// Whether this profile turned disk errors on.
    ///
    /// ```
    /// use crashtest::swarm::{FaultKinds, Profile};
    /// crashtest::Sim::new(1).run(async {
    ///     let none = FaultKinds { disk_errors: false, ..FaultKinds::ALL };
    ///     assert!(!Profile::draw(none).disk_errors_on());
    /// }).unwrap();
    /// ```
    pub fn disk_errors_on(&self) -> bool {
        self.disk_errors
    }

    /// Installs the profile in the running simulation: configures the network, the disks and
    /// the scheduler, starts the nemesis (with its random partitions and clogging) on
    /// `nodes`, and adds the profile to the failure report.
    ///
    /// ```
    /// use crashtest::swarm::{FaultKinds, Profile};
    /// crashtest::Sim::new(2).run(async {
    ///     let nodes = [crashtest::node::create("a", std::future::pending)];
    ///     Profile::draw(FaultKinds::ALL).apply(&nodes);
    /// }).unwrap();
    /// ```
    pub fn apply(&self, nodes: &[Node]) {
        crashtest_core::report::add_context(format!("swarm: {self}"));
        crashtest_net::configure(self.net.clone());
        crashtest_fs::configure(self.disk);
        if let Some(window) = self.scheduling_window {
            plumbing::set_scheduling_window(window);
        }
        if let Some(nemesis) = &self.nemesis {
            nemesis.start(nodes);
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn profiles_differ_across_seeds_and_repeat_for_one_seed() {
        let draw =
            |seed| Profile::draw_from(&mut Rng::seed_from(seed), FaultKinds::ALL).to_string();
        let profiles: BTreeSet<String> = (0..50).map(draw).collect();
        assert!(
            profiles.len() > 40,
            "only {} distinct profiles",
            profiles.len()
        );
        assert_eq!(draw(7), draw(7));
    }

    #[test]
    fn profiles_draw_every_scheduling_choice() {
        let windows: BTreeSet<Option<usize>> = (0..100)
            .map(|seed| Profile::draw_from(&mut Rng::seed_from(seed), FaultKinds::ALL))
            .map(|profile| profile.scheduling_window.map(|w| w.min(2)))
            .collect();
        assert_eq!(windows, BTreeSet::from([None, Some(1), Some(2)]));
    }

    #[test]
    fn disallowed_kinds_are_never_drawn() {
        for seed in 0..200 {
            let profile = Profile::draw_from(&mut Rng::seed_from(seed), FaultKinds::CRASH_TOLERANT);
            assert!(!profile.disk_errors_on());
            assert!(!profile.to_string().contains("disk"), "{profile}");
        }
        let nothing = FaultKinds {
            network: false,
            process: false,
            clock: false,
            disk_errors: false,
            disk_corruption: false,
        };
        let profile = Profile::draw_from(&mut Rng::seed_from(1), nothing);
        assert!(profile.to_string().starts_with("no faults"), "{profile}");
        assert!(profile.nemesis.is_none());
    }
}
