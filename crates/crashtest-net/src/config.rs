//! The fault model's knobs: one [`NetConfig`] per run, every fault switchable on its own.
//!
//! Probabilities are integer [`Ratio`]s and durations are exact, so a configuration means the
//! same thing on every platform. The default is a healthy but realistic network: latency with a
//! rare long tail, bounded buffers, Linux's timeouts, and no loss, duplication or resets. Tests
//! and swarm runs switch faults on by setting fields; partitions and clogs that come and go by
//! themselves are fault orchestration (`crashtest::nemesis`).
//!
//! Figures that come from elsewhere name their source: the latency shape is FoundationDB's
//! (`FAST_NETWORK_LATENCY`, `SLOW_NETWORK_LATENCY`, `pFast = 0.999`), the timeouts are Linux's
//! defaults.

use std::time::Duration;

use crashtest_core::rng::{Ratio, Rng};

/// How the simulated network behaves in one run; install it with [`crate::configure`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// use crashtest::rand::Ratio;
/// use crashtest::net::NetConfig;
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
    /// Whether a killed node's connections reset at once (true, the default: its peers read
    /// `ConnectionReset` one latency later, as when a kernel that outlives the process
    /// closes its sockets), or vanish without a word (false: a machine that lost its power).
    /// Silent, what its peers send it stalls until it restarts and answers with an RST, or
    /// until their `tcp_timeout`; a peer that only reads waits for its own timeout, as on a
    /// real network without keepalives. Either way the node's disk loses what it had not
    /// synced.
    pub kill_resets: bool,
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
            kill_resets: true,
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
    }
}

/// A one-way latency distribution: uniform in `min..=max`, except that with chance `tail` it is
/// uniform in `min..=tail_max` (a rare long tail).
///
/// The default is FoundationDB's shape: 50 µs to 400 µs, and one packet in a thousand up to
/// 50 ms.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_net as net; }
/// use crashtest::rand::Ratio;
/// use crashtest::net::Latency;
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
