//! The fault model's knobs: one [`NetConfig`] per run, every fault switchable on its own.
//!
//! Probabilities are integer [`Ratio`]s and durations are exact, so a configuration means the
//! same thing on every platform. The default is a healthy but realistic network: latency with a
//! rare long tail, bounded buffers, Linux's timeouts, and no loss, duplication, resets or random
//! partitions. Tests and swarm runs switch faults on by setting fields.
//!
//! Figures that come from elsewhere name their source: the latency shape is FoundationDB's
//! (`FAST_NETWORK_LATENCY`, `SLOW_NETWORK_LATENCY`, `pFast = 0.999`), the timeouts are Linux's
//! defaults.

use std::time::Duration;

use crashtest_core::rng::{Ratio, Rng};

/// How the simulated network behaves in one run; install it with [`crate::configure`].
///
/// ```
/// use crashtest_core::rng::Ratio;
/// use crashtest_net::NetConfig;
///
/// let lossy = NetConfig {
///     udp_loss: Ratio::new(1, 20),
///     udp_duplicate: Ratio::new(1, 50),
///     ..NetConfig::default()
/// };
/// assert_eq!(lossy.tcp_reset, Ratio::NEVER);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// One-way delay of every packet, segment and handshake step.
    pub latency: Latency,
    /// Chance that a datagram is lost on its way.
    pub udp_loss: Ratio,
    /// Chance that a datagram arrives twice (the copy has its own latency).
    pub udp_duplicate: Ratio,
    /// Chance that a datagram is held back by up to `latency.tail_max` more, so that later
    /// ones overtake it (latency draws reorder datagrams too; this makes it frequent).
    pub udp_reorder: Ratio,
    /// Bytes of datagrams a socket queues before it drops new ones (Linux's `rmem_default`).
    pub udp_receive_buffer: usize,
    /// Bytes one direction of a TCP connection holds, written but not yet read: the send and
    /// receive buffers together. A writer that finds it full waits (backpressure).
    pub tcp_buffer: usize,
    /// Chance that a write accepts fewer bytes than offered (a partial write).
    pub tcp_partial_write: Ratio,
    /// Chance, per write, that the connection is reset (both ends see `ConnectionReset`).
    pub tcp_reset: Ratio,
    /// How long data may wait undelivered behind a partition before the sending end gives up
    /// with `TimedOut` (Linux's `tcp_retries2` = 15 gives about 15 minutes).
    pub tcp_timeout: Duration,
    /// How long `TcpStream::connect` retries an unanswered SYN before `TimedOut` (Linux's six
    /// SYN retries: 1 + 2 + ... + 64 = 127 s).
    pub connect_timeout: Duration,
    /// Connections a listener queues before it drops new SYNs (tokio's listen backlog).
    pub accept_backlog: usize,
    /// Partitions that come and go by themselves, or none.
    pub random_partitions: Option<RandomPartitions>,
    /// Clogs that come and go by themselves, or none.
    pub random_clogging: Option<RandomClogging>,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            latency: Latency::default(),
            udp_loss: Ratio::NEVER,
            udp_duplicate: Ratio::NEVER,
            udp_reorder: Ratio::NEVER,
            udp_receive_buffer: 212_992,
            tcp_buffer: 256 * 1024,
            tcp_partial_write: Ratio::NEVER,
            tcp_reset: Ratio::NEVER,
            tcp_timeout: Duration::from_secs(15 * 60),
            connect_timeout: Duration::from_secs(127),
            accept_backlog: 1024,
            random_partitions: None,
            random_clogging: None,
        }
    }
}

impl NetConfig {
    /// Checks that the knobs make sense together.
    ///
    /// # Panics
    ///
    /// Panics with the offending field: a configuration that cannot be meant is a bug in the
    /// test.
    pub(crate) fn validate(&self) {
        self.latency.validate();
        assert!(
            self.tcp_buffer > 0,
            "NetConfig::tcp_buffer must be positive"
        );
        assert!(
            self.accept_backlog > 0,
            "NetConfig::accept_backlog must be positive"
        );
        assert!(
            !self.connect_timeout.is_zero(),
            "NetConfig::connect_timeout must be positive"
        );
        if let Some(p) = &self.random_partitions {
            assert!(
                !p.every.is_zero(),
                "RandomPartitions::every must be positive"
            );
        }
        if let Some(c) = &self.random_clogging {
            assert!(!c.every.is_zero(), "RandomClogging::every must be positive");
        }
    }
}

/// A one-way latency distribution: uniform in `min..=max`, except that with chance `tail` it is
/// uniform in `min..=tail_max` (a rare long tail).
///
/// The default is FoundationDB's shape: 50 µs to 400 µs, and one packet in a thousand up to
/// 50 ms.
///
/// ```
/// use crashtest_core::rng::Ratio;
/// use crashtest_net::Latency;
/// use std::time::Duration;
///
/// let wan = Latency {
///     min: Duration::from_millis(20),
///     max: Duration::from_millis(40),
///     tail: Ratio::new(1, 100),
///     tail_max: Duration::from_millis(500),
/// };
/// assert!(wan.max <= wan.tail_max);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency {
    /// The shortest delay.
    pub min: Duration,
    /// The longest usual delay.
    pub max: Duration,
    /// Chance of a delay from the long tail.
    pub tail: Ratio,
    /// The longest delay of the tail.
    pub tail_max: Duration,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            min: Duration::from_micros(50),
            max: Duration::from_micros(400),
            tail: Ratio::new(1, 1000),
            tail_max: Duration::from_millis(50),
        }
    }
}

impl Latency {
    fn validate(&self) {
        assert!(
            self.min <= self.max && self.max <= self.tail_max,
            "Latency needs min <= max <= tail_max, got {self:?}"
        );
    }

    /// Draws one delay in nanoseconds: two draws whatever the outcome, so that the stream
    /// stays aligned when knobs change.
    #[inline]
    pub(crate) fn draw_ns(&self, rng: &mut Rng) -> u64 {
        let in_tail = rng.chance(self.tail);
        let top = if in_tail { self.tail_max } else { self.max };
        rng.range_inclusive(nanos(self.min), nanos(top))
    }
}

/// Partitions drawn from the seed: a state machine stepped every `every` (TigerBeetle's
/// packet simulator): while the network is whole, each step starts a partition with chance
/// `start`; while partitioned, each step heals it with chance `heal`.
///
/// A partition splits the nodes that use the network (never the supervisor, which plays the
/// test's client) into two random non-empty sides; with chance `one_way` only one side's
/// packets are cut.
///
/// ```
/// use crashtest_core::rng::Ratio;
/// use crashtest_net::{NetConfig, RandomPartitions};
/// use std::time::Duration;
///
/// let config = NetConfig {
///     random_partitions: Some(RandomPartitions {
///         every: Duration::from_secs(1),
///         start: Ratio::new(1, 10),
///         heal: Ratio::new(1, 3),
///         one_way: Ratio::new(1, 4),
///     }),
///     ..NetConfig::default()
/// };
/// assert!(config.random_partitions.is_some());
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
/// swizzle of all the network's nodes happens instead.
///
/// ```
/// use crashtest_core::rng::Ratio;
/// use crashtest_net::RandomClogging;
/// use std::time::Duration;
///
/// let clogging = RandomClogging {
///     every: Duration::from_secs(2),
///     max: Duration::from_secs(5),
///     swizzle: Ratio::new(1, 4),
/// };
/// assert!(clogging.max > clogging.every);
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

/// A duration in nanoseconds, saturating at `u64::MAX` (585 years).
#[inline]
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_draws_stay_in_range_and_reach_the_tail() {
        let latency = Latency::default();
        let mut rng = Rng::seed_from(3);
        let draws: Vec<u64> = (0..20_000).map(|_| latency.draw_ns(&mut rng)).collect();
        assert!(draws.iter().all(|&d| (50_000..=50_000_000).contains(&d)));
        let slow = draws.iter().filter(|&&d| d > 400_000).count();
        assert!((1..=60).contains(&slow), "{slow} draws in the tail");
    }

    #[test]
    #[should_panic(expected = "min <= max <= tail_max")]
    fn inverted_latency_is_rejected() {
        let config = NetConfig {
            latency: Latency {
                min: Duration::from_millis(2),
                max: Duration::from_millis(1),
                ..Latency::default()
            },
            ..NetConfig::default()
        };
        config.validate();
    }
}
