//! The seeded random number generator and its named streams.
//!
//! Every random choice in a simulation is drawn here, so one `u64` seed decides the whole run.
//! The generator is xoshiro256++ seeded through SplitMix64: a documented, stable algorithm
//! written out below, so the same seed gives the same numbers on every platform, compiler and
//! dependency version (no `rand` algorithm that may change under us).
//!
//! The root seed is split into a closed registry of *streams* ([`Stream`]): the scheduler,
//! the network, the disk, the fault injectors, the tokio stand-in and each node draw from
//! their own generator, whose seed is derived from the root seed and the stream. An extra draw
//! in one stream therefore does not reshuffle the others (TigerBeetle's per-subsystem
//! sub-seeds). The registry holds every generator of a run, so re-drawing it (exploration)
//! re-draws everything random; no component keeps a generator of its own.
//!
//! Probabilities are integer ratios ([`Ratio`]), never floats, so a decision is exact and
//! reproducible (TigerBeetle's `Ratio`).

use std::fmt;

use crate::node::NodeId;

/// A probability as an exact integer ratio `numerator / denominator`.
///
/// # Examples
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::rand::{Ratio, Rng};
///
/// let one_in_four = Ratio::new(1, 4);
/// let mut rng = Rng::seed_from(7);
/// let hits = (0..1000).filter(|_| rng.chance(one_in_four)).count();
/// assert!(hits > 150 && hits < 350);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ratio {
    numerator: u64,
    denominator: u64,
}

impl Ratio {
    /// The ratio that never happens.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(1);
    /// assert!(!rng.chance(crashtest::rand::Ratio::NEVER));
    /// ```
    pub const NEVER: Ratio = Ratio {
        numerator: 0,
        denominator: 1,
    };
    /// The ratio that always happens.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(1);
    /// assert!(rng.chance(crashtest::rand::Ratio::ALWAYS));
    /// ```
    pub const ALWAYS: Ratio = Ratio {
        numerator: 1,
        denominator: 1,
    };

    /// Builds `numerator / denominator`.
    ///
    /// # Panics
    ///
    /// Panics if `denominator` is zero or `numerator > denominator`: such a value is not a
    /// probability and is always a bug in the caller.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let r = crashtest::rand::Ratio::new(3, 100);
    /// assert_eq!((r.numerator(), r.denominator()), (3, 100));
    /// ```
    pub const fn new(numerator: u64, denominator: u64) -> Ratio {
        assert!(denominator != 0, "a ratio's denominator must not be zero");
        assert!(numerator <= denominator, "a ratio must be at most one");
        Ratio {
            numerator,
            denominator,
        }
    }

    /// The numerator.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::rand::Ratio::new(1, 8).numerator(), 1);
    /// ```
    pub const fn numerator(self) -> u64 {
        // The constants are built without `new`: each read re-checks what `new` checks.
        assert!(self.numerator <= self.denominator, "a ratio above one");
        self.numerator
    }

    /// The denominator.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::rand::Ratio::new(1, 8).denominator(), 8);
    /// ```
    pub const fn denominator(self) -> u64 {
        assert!(self.denominator != 0, "a ratio over zero");
        self.denominator
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// One step of SplitMix64: advances `state` and returns a well-mixed output.
///
/// Used to expand a `u64` seed into xoshiro's 256-bit state and to derive stream seeds.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a of a byte string: a stable, dependency-free hash for stream names.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Derives the seed of the stream `name` from a root seed.
///
/// The derivation is part of the replay contract: changing it changes every run.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::rand::derive_seed;
/// assert_eq!(derive_seed(1, "network"), derive_seed(1, "network"));
/// assert_ne!(derive_seed(1, "network"), derive_seed(1, "disk"));
/// assert_ne!(derive_seed(1, "network"), derive_seed(2, "network"));
/// ```
pub fn derive_seed(root: u64, name: &str) -> u64 {
    let mut state = root ^ fnv1a64(name.as_bytes());
    splitmix64(&mut state)
}

/// Implements the `rand_core` traits of versions 0.10 (`TryRng`), 0.9 and 0.6 (`RngCore`) on a
/// type with inherent `next_u32`, `next_u64` and `fill_bytes`, so that generators plug into
/// whichever `rand` the user's code depends on.
macro_rules! rand_core_impls {
    ($generator:ty) => {
        impl rand_core::TryRng for $generator {
            type Error = core::convert::Infallible;

            fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
                Ok(<$generator>::next_u32(self))
            }

            fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
                Ok(<$generator>::next_u64(self))
            }

            fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
                <$generator>::fill_bytes(self, dst);
                Ok(())
            }
        }

        impl rand_core_09::RngCore for $generator {
            fn next_u32(&mut self) -> u32 {
                <$generator>::next_u32(self)
            }

            fn next_u64(&mut self) -> u64 {
                <$generator>::next_u64(self)
            }

            fn fill_bytes(&mut self, dst: &mut [u8]) {
                <$generator>::fill_bytes(self, dst)
            }
        }

        impl rand_core_06::RngCore for $generator {
            fn next_u32(&mut self) -> u32 {
                <$generator>::next_u32(self)
            }

            fn next_u64(&mut self) -> u64 {
                <$generator>::next_u64(self)
            }

            fn fill_bytes(&mut self, dst: &mut [u8]) {
                <$generator>::fill_bytes(self, dst)
            }

            fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), rand_core_06::Error> {
                <$generator>::fill_bytes(self, dst);
                Ok(())
            }
        }
    };
}

/// A xoshiro256++ generator.
///
/// It implements the `rand_core` traits of versions 0.6, 0.9 (`RngCore`) and 0.10
/// (`TryRng`), so it plugs into whichever `rand` the user's code has.
///
/// # Examples
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::rand::Rng;
///
/// let mut a = Rng::seed_from(42);
/// let mut b = Rng::seed_from(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// let die = a.range_inclusive(1, 6);
/// assert!((1..=6).contains(&die));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator whose state is expanded from `seed` by SplitMix64.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(0);
    /// assert_ne!(rng.next_u64(), 0);
    /// ```
    pub fn seed_from(seed: u64) -> Rng {
        let mut sm = seed;
        let state = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        // SplitMix64 is a bijection on its counter, so four outputs are never all zero;
        // the all-zero state is xoshiro's one fixed point.
        assert!(state.iter().any(|&w| w != 0));
        Rng { state }
    }

    /// The next 64 random bits.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(1);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        // The step is invertible and maps zero to zero, so from a state seeded non-zero it
        // never reaches the all-zero fixed point (every draw: debug builds only).
        debug_assert!(
            s.iter().any(|&word| word != 0),
            "xoshiro's state fell into its all-zero fixed point"
        );
        result
    }

    /// The next 32 random bits (the high half of a 64-bit draw).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(1);
    /// let _ = rng.next_u32();
    /// ```
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A uniform integer in `0..=max`, without modulo bias (Lemire's method with rejection).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(3);
    /// assert!(rng.below_inclusive(9) <= 9);
    /// assert_eq!(rng.below_inclusive(0), 0);
    /// ```
    #[inline]
    pub fn below_inclusive(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.next_u64();
        }
        let range = max + 1;
        let mut product = u128::from(self.next_u64()) * u128::from(range);
        let mut low = product as u64;
        if low < range {
            let threshold = range.wrapping_neg() % range;
            while low < threshold {
                product = u128::from(self.next_u64()) * u128::from(range);
                low = product as u64;
            }
        }
        let value = (product >> 64) as u64;
        debug_assert!(value <= max);
        value
    }

    /// A uniform index into a collection of `len` elements.
    ///
    /// # Panics
    ///
    /// Panics if `len` is zero: there is no index to draw.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(3);
    /// assert!(rng.index(5) < 5);
    /// ```
    #[inline]
    pub fn index(&mut self, len: usize) -> usize {
        assert!(len > 0, "cannot draw an index into an empty collection");
        let index = self.below_inclusive(len as u64 - 1) as usize;
        // The scheduler draws one every step: checked where the rest of a draw's bounds are
        // (`below_inclusive`), in debug builds.
        debug_assert!(index < len, "index {index} drawn out of 0..{len}");
        index
    }

    /// A uniform integer in `min..=max`.
    ///
    /// # Panics
    ///
    /// Panics if `min > max`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(3);
    /// let x = rng.range_inclusive(10, 20);
    /// assert!((10..=20).contains(&x));
    /// ```
    #[inline]
    pub fn range_inclusive(&mut self, min: u64, max: u64) -> u64 {
        assert!(min <= max, "empty range {min}..={max}");
        let value = min + self.below_inclusive(max - min);
        debug_assert!(
            min <= value && value <= max,
            "{value} drawn out of {min}..={max}"
        );
        value
    }

    /// True with probability `ratio`; draws exactly once whatever the ratio, so that masking
    /// a decision does not shift later draws.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::rand::{Ratio, Rng};
    /// let mut rng = Rng::seed_from(3);
    /// assert!(!rng.chance(Ratio::NEVER));
    /// assert!(rng.chance(Ratio::ALWAYS));
    /// ```
    #[inline]
    pub fn chance(&mut self, ratio: Ratio) -> bool {
        // The pair of `Ratio::new`'s checks, where the ratio is read (every coin: debug only).
        debug_assert!(ratio.numerator <= ratio.denominator && ratio.denominator != 0);
        let hit = self.below_inclusive(ratio.denominator - 1) < ratio.numerator;
        // A draw within `0..denominator` never misses a sure coin nor hits an impossible one
        // (every coin, as above: debug only).
        debug_assert!(
            if hit {
                ratio.numerator > 0
            } else {
                ratio.numerator < ratio.denominator
            },
            "a coin of {}/{} came up {hit}",
            ratio.numerator,
            ratio.denominator
        );
        hit
    }

    /// A fair coin.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(3);
    /// let _heads: bool = rng.boolean();
    /// ```
    #[inline]
    pub fn boolean(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// Fills `dest` with random bytes, eight per draw, little-endian.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(3);
    /// let mut buf = [0u8; 13];
    /// rng.fill_bytes(&mut buf);
    /// assert!(buf.iter().any(|&b| b != 0));
    /// ```
    pub fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// Shuffles `items` in place (Fisher–Yates).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::Rng::seed_from(3);
    /// let mut v = vec![1, 2, 3, 4];
    /// rng.shuffle(&mut v);
    /// v.sort();
    /// assert_eq!(v, [1, 2, 3, 4]);
    /// ```
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below_inclusive(i as u64) as usize;
            // Fisher–Yates swaps each item with one at or before it, never after.
            debug_assert!(j <= i, "shuffle drew {j} for the item at {i}");
            items.swap(i, j);
        }
    }
}

rand_core_impls!(Rng);

/// A random stream of a simulation: the closed list of everything that may draw randomness.
///
/// Every random choice of a run is drawn from one of these, through the run's registry
/// ([`crate::plumbing::with_stream`] for components, [`node_rng`] for user code). The list is
/// a type, not a set of names, so that a component cannot draw from a stream the registry
/// does not know: the registry holds every generator, and re-drawing it re-draws them all.
///
/// ```
/// use crashtest_core::{node::NodeId, rng::Stream};
///
/// assert_eq!(Stream::Network.to_string(), "network");
/// assert_eq!(Stream::Node(NodeId::SUPERVISOR).to_string(), "node n0");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stream {
    /// The executor: which ready task runs next, and the virtual CPU time a poll costs.
    Scheduler,
    /// The run's epoch: where the nodes' wall clocks start.
    Clock,
    /// `buggify!` coins and the stretch of sleeps.
    Buggify,
    /// The faults a test injects itself ([`crate::fault::inject`]).
    Faults,
    /// The simulated network: latencies, losses, duplicates, resets, ports, partitions.
    Network,
    /// The consequences of a crash on unsynced disk data.
    Disk,
    /// The disk's injected faults: errors, corruption, misdirected and lost writes.
    DiskFaults,
    /// The disk's operation latencies.
    DiskLatency,
    /// The order in which a directory listing comes back.
    DiskReaddir,
    /// The swarm profile: which faults a run allows, and how often.
    Swarm,
    /// The nemesis: which fault it injects next, where and when.
    Nemesis,
    /// The bytes the OS's random sources (`getrandom`, `/dev/urandom`) give inside a run.
    OsRandom,
    /// The tokio stand-in's choices (an unbiased `select!`'s branch order).
    Tokio,
    /// The keys of std's `HashMap`s (`getrandom` with `GRND_INSECURE`, as std asks for
    /// them), apart from [`Stream::OsRandom`]: whether a program makes a map (a log
    /// subscriber does) never shifts the seed `rand`'s generators draw from the OS.
    HashKeys,
    /// A node's own stream, for its user code (the test body's is the supervisor's).
    Node(NodeId),
}

impl Stream {
    /// Every stream that is not a node's, in registry order.
    ///
    /// ```
    /// use crashtest_core::rng::Stream;
    /// assert!(Stream::WORLD.contains(&Stream::Network));
    /// ```
    pub const WORLD: [Stream; WORLD_STREAMS] = [
        Stream::Scheduler,
        Stream::Clock,
        Stream::Buggify,
        Stream::Faults,
        Stream::Network,
        Stream::Disk,
        Stream::DiskFaults,
        Stream::DiskLatency,
        Stream::DiskReaddir,
        Stream::Swarm,
        Stream::Nemesis,
        Stream::OsRandom,
        Stream::Tokio,
        Stream::HashKeys,
    ];

    /// The label a world stream's seed is derived from; part of the replay contract.
    const fn label(self) -> &'static str {
        match self {
            Stream::Scheduler => "scheduler",
            Stream::Clock => "clock",
            Stream::Buggify => "buggify",
            Stream::Faults => "faults",
            Stream::Network => "network",
            Stream::Disk => "disk",
            Stream::DiskFaults => "disk-faults",
            Stream::DiskLatency => "disk-latency",
            Stream::DiskReaddir => "disk-readdir",
            Stream::Swarm => "swarm",
            Stream::Nemesis => "nemesis",
            Stream::OsRandom => "os-random",
            Stream::Tokio => "tokio",
            Stream::HashKeys => "hash-keys",
            Stream::Node(_) => "node",
        }
    }

    /// The slot of a world stream in the registry.
    #[inline]
    const fn slot(self) -> usize {
        match self {
            Stream::Scheduler => 0,
            Stream::Clock => 1,
            Stream::Buggify => 2,
            Stream::Faults => 3,
            Stream::Network => 4,
            Stream::Disk => 5,
            Stream::DiskFaults => 6,
            Stream::DiskLatency => 7,
            Stream::DiskReaddir => 8,
            Stream::Swarm => 9,
            Stream::Nemesis => 10,
            Stream::OsRandom => 11,
            Stream::Tokio => 12,
            Stream::HashKeys => 13,
            Stream::Node(_) => WORLD_STREAMS,
        }
    }
}

/// How many streams are not a node's.
const WORLD_STREAMS: usize = 14;

/// Whether two labels are the same string (`==` on `str` is not `const`).
const fn same_label(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

// The registry's layout: each world stream sits in the slot of its place in `Stream::WORLD`,
// and no two streams share a seed label (they would draw the same numbers). Node streams are
// labelled `node:NAME`, so a world label has no colon: no node's name can take it.
const _: () = {
    let mut i = 0;
    while i < WORLD_STREAMS {
        assert!(
            Stream::WORLD[i].slot() == i,
            "a world stream's slot is its index"
        );
        let label = Stream::WORLD[i].label().as_bytes();
        let mut k = 0;
        while k < label.len() {
            assert!(
                label[k] != b':',
                "a world stream's seed label could be a node's"
            );
            k += 1;
        }
        let mut j = i + 1;
        while j < WORLD_STREAMS {
            assert!(
                !same_label(Stream::WORLD[i].label(), Stream::WORLD[j].label()),
                "two world streams share a seed label"
            );
            j += 1;
        }
        i += 1;
    }
};

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stream::Node(node) => write!(f, "node {node}"),
            world => f.write_str(world.label()),
        }
    }
}

/// The registry of one simulation's streams: one generator per [`Stream`], all derived from
/// the run's root seed.
///
/// A stream's seed depends only on the root and the stream (a node's on its name), never on
/// creation or draw order, so an extra draw in one stream does not reshuffle the others
/// (TigerBeetle's per-subsystem sub-seeds). The registry is closed: a world stream exists
/// from the start, a node's from the node's creation, and there is no other way in.
/// [`Streams::reseed`] re-draws every generator it holds, so it re-draws everything random.
#[derive(Debug)]
pub(crate) struct Streams {
    /// The run's seed, which exploration mixes into a new root.
    seed: u64,
    /// The root the generators are derived from: the seed's until a reseed.
    root: u64,
    world: [Rng; WORLD_STREAMS],
    /// Each node's seed label (`node:NAME`) and generator, indexed by `NodeId`.
    nodes: Vec<(Box<str>, Rng)>,
    /// The depth of the last reseed: a branch path's points re-draw in path order.
    reseeded_at: Option<usize>,
}

impl Streams {
    /// The streams of the run of `seed`, with the supervisor's node stream.
    pub(crate) fn new(seed: u64) -> Streams {
        let world = Stream::WORLD.map(|stream| Rng::seed_from(derive_seed(seed, stream.label())));
        let mut streams = Streams {
            seed,
            root: seed,
            world,
            nodes: Vec::new(),
            reseeded_at: None,
        };
        // Two world streams with one generator would draw the same numbers: one stream twice.
        assert!(
            (0..WORLD_STREAMS).all(|i| streams.world[i + 1..]
                .iter()
                .all(|other| *other != streams.world[i])),
            "two world streams of seed {seed} start from the same state"
        );
        streams.add_node(NodeId::SUPERVISOR, "supervisor");
        assert_eq!(
            streams.node_count(),
            1,
            "a run starts with the supervisor's stream"
        );
        streams
    }

    /// How many node streams are open (one per node of the run, the supervisor included).
    pub(crate) fn node_count(&self) -> usize {
        assert!(
            !self.nodes.is_empty(),
            "the supervisor's stream opens with the registry"
        );
        self.nodes.len()
    }

    /// Opens the stream of the node `id`, called `name`; ids come in creation order.
    pub(crate) fn add_node(&mut self, id: NodeId, name: &str) {
        assert_eq!(
            id.index(),
            self.nodes.len(),
            "node streams open in node creation order"
        );
        // Two nodes under one label would draw the same numbers. The node table refuses a
        // repeated name through its index before the stream opens; a scan here repeated that
        // check at a cost quadratic in the nodes, which kept a test of 65,535 nodes near the
        // watchdog's limit in debug builds.
        let label: Box<str> = format!("node:{name}").into();
        let rng = Rng::seed_from(derive_seed(self.root, &label));
        self.nodes.push((label, rng));
        assert_eq!(
            self.nodes.len(),
            id.index() + 1,
            "a node's stream is found at its id"
        );
    }

    /// The generator of `stream`.
    ///
    /// # Panics
    ///
    /// Panics on the stream of a node that does not exist (yet).
    #[inline]
    pub(crate) fn get(&mut self, stream: Stream) -> &mut Rng {
        match stream {
            Stream::Node(node) => {
                &mut self
                    .nodes
                    .get_mut(node.index())
                    .expect("a node's stream opens with the node")
                    .1
            }
            world => &mut self.world[world.slot()],
        }
    }

    /// The scheduler's generator: [`Streams::get`] without the match, for the run loop's
    /// pick on every step.
    #[inline]
    pub(crate) fn scheduler(&mut self) -> &mut Rng {
        &mut self.world[const { Stream::Scheduler.slot() }]
    }

    /// Replaces every generator with one derived from a root drawn from the run's seed and
    /// `sub_seed`: the run so far is the seed's, the future a fresh one (exploring from a
    /// point in a run's past). Every stream is re-drawn because the registry holds them all.
    /// `depth` counts the branch path's points before this one.
    pub(crate) fn reseed(&mut self, depth: usize, sub_seed: u64) {
        assert!(
            self.reseeded_at.is_none_or(|last| last < depth),
            "reseed at depth {depth} after depth {:?}: a branch path re-draws in order",
            self.reseeded_at
        );
        self.reseeded_at = Some(depth);
        let root = crate::explore::branch_root(self.seed, depth, sub_seed);
        assert_ne!(root, self.root, "a reseed draws a new root");
        let previous = std::mem::replace(&mut self.root, root);
        // SplitMix64 is a bijection, so a new root derives a new seed for every stream: the
        // reseed re-draws each of them, none keeps its old future.
        for stream in Stream::WORLD {
            let seed = derive_seed(root, stream.label());
            assert_ne!(
                seed,
                derive_seed(previous, stream.label()),
                "a reseed kept the {stream} stream's seed"
            );
            self.world[stream.slot()] = Rng::seed_from(seed);
        }
        for (label, rng) in &mut self.nodes {
            let seed = derive_seed(root, label);
            assert_ne!(
                seed,
                derive_seed(previous, label),
                "a reseed kept the {label} stream's seed"
            );
            *rng = Rng::seed_from(seed);
        }
    }

    /// Every stream the registry holds, node streams included.
    #[cfg(test)]
    pub(crate) fn all(&self) -> impl Iterator<Item = Stream> + '_ {
        let nodes = (0..self.nodes.len()).map(|i| Stream::Node(NodeId(i as u32)));
        Stream::WORLD.into_iter().chain(nodes)
    }
}

/// The root seed of the running simulation; `None` outside one.
///
/// ```
/// crashtest_core::Sim::new(77).run(async {
///     assert_eq!(crashtest_core::rng::seed(), Some(77));
/// }).unwrap();
/// ```
pub fn seed() -> Option<u64> {
    let seed = crate::world::with(|w| w.seed());
    // The seed is there exactly when a simulation runs on this thread: the two are read from
    // one world.
    debug_assert_eq!(seed.is_some(), crate::world::is_simulation());
    seed
}

/// The random source of user code: the calling node's own stream inside a simulation, a
/// generator seeded from the OS outside one.
///
/// It implements the `rand_core` traits of versions 0.6 and 0.9 (`RngCore`) and 0.10
/// (`TryRng`), so `rand`'s extension methods work on it whichever `rand` the code uses.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{rng, Sim};
///
/// let draw = |seed| {
///     let out = std::rc::Rc::new(std::cell::Cell::new(0));
///     let slot = out.clone();
///     Sim::new(seed).run(async move { slot.set(rng::node_rng().next_u64()) }).unwrap();
///     out.get()
/// };
/// assert_eq!(draw(1), draw(1));
/// assert_ne!(draw(1), draw(2));
/// ```
#[derive(Debug)]
pub struct NodeRng {
    fallback: Option<Rng>,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// The calling node's random source; see [`NodeRng`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(5).run(async {
///     let mut rng = crashtest::rand::rng();
///     let _ = rng.next_u64();
/// }).unwrap();
/// ```
pub fn node_rng() -> NodeRng {
    let fallback = (!crate::world::is_simulation()).then(|| {
        use std::hash::{BuildHasher, Hasher};
        // Outside a simulation any good seed will do; std seeds this hasher from the OS.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0);
        Rng::seed_from(hasher.finish())
    });
    NodeRng {
        fallback,
        _not_send: std::marker::PhantomData,
    }
}

impl NodeRng {
    /// The next 64 random bits.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::rng();
    /// let _ = rng.next_u64();
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.with(Rng::next_u64)
    }

    /// The next 32 random bits.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::rng();
    /// let _ = rng.next_u32();
    /// ```
    pub fn next_u32(&mut self) -> u32 {
        self.with(Rng::next_u32)
    }

    /// Fills `dest` with random bytes.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::rng();
    /// let mut buf = [0u8; 16];
    /// rng.fill_bytes(&mut buf);
    /// ```
    pub fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.with(|rng| rng.fill_bytes(dest))
    }

    /// Runs `f` on the underlying generator (for the other [`Rng`] methods).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut rng = crashtest::rand::rng();
    /// let die = rng.with(|r| r.range_inclusive(1, 6));
    /// assert!((1..=6).contains(&die));
    /// ```
    pub fn with<R>(&mut self, f: impl FnOnce(&mut Rng) -> R) -> R {
        if let Some(rng) = &mut self.fallback {
            assert!(
                !crate::world::is_simulation(),
                "a NodeRng made outside a simulation is used inside one, where its draws would \
                 not replay from the seed: call `node_rng()` inside the run"
            );
            return f(rng);
        }
        // The generator is copied out while `f` runs, so that `f` may use the world (read the
        // clock, draw again) without finding the node table borrowed.
        let (stream, taken) = crate::world::with(|w| {
            let stream = Stream::Node(w.current_node());
            (stream, w.with_stream(stream, |rng| rng.clone()))
        })
        .expect("a simulation's NodeRng was used after its run ended");
        let mut rng = taken;
        let result = f(&mut rng);
        crate::world::with(|w| {
            assert_eq!(
                Stream::Node(w.current_node()),
                stream,
                "a node's generator goes back to the stream it was taken from"
            );
            w.with_stream(stream, |own| *own = rng);
        });
        result
    }
}

rand_core_impls!(NodeRng);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xoshiro_matches_the_reference_sequence() {
        // State 1, 2, 3, 4 is the reference implementation's customary test vector.
        let mut rng = Rng {
            state: [1, 2, 3, 4],
        };
        let expected = [41943041, 58720359, 3588806011781223, 3591011842654386];
        for want in expected {
            assert_eq!(rng.next_u64(), want);
        }
    }

    #[test]
    fn seeding_matches_an_independent_implementation() {
        // rand_xoshiro seeds xoshiro256++ from a u64 through SplitMix64, as we do: the two
        // must agree word for word, or our "documented, stable generator" is something else.
        use rand_core_09::{RngCore, SeedableRng};
        for seed in [0, 1, 42, u64::MAX] {
            let mut reference = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut ours = Rng::seed_from(seed);
            for _ in 0..100 {
                assert_eq!(ours.next_u64(), reference.next_u64(), "seed {seed}");
            }
        }
    }

    #[test]
    fn every_rand_core_version_draws_the_same_numbers() {
        let mut inherent = Rng::seed_from(5);
        let mut v06 = Rng::seed_from(5);
        let mut v09 = Rng::seed_from(5);
        let mut v10 = Rng::seed_from(5);
        for _ in 0..4 {
            let want = inherent.next_u64();
            assert_eq!(rand_core_06::RngCore::next_u64(&mut v06), want);
            assert_eq!(rand_core_09::RngCore::next_u64(&mut v09), want);
            assert_eq!(rand_core::TryRng::try_next_u64(&mut v10), Ok(want));
        }
        let mut bytes = [0u8; 9];
        rand_core_06::RngCore::fill_bytes(&mut v06, &mut bytes);
        let mut node = node_rng();
        let _ = rand_core_09::RngCore::next_u32(&mut node);
    }

    #[test]
    fn below_inclusive_is_roughly_uniform() {
        let mut rng = Rng::seed_from(11);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[rng.below_inclusive(5) as usize] += 1;
        }
        for count in counts {
            assert!((9_000..11_000).contains(&count), "{counts:?}");
        }
    }

    #[test]
    fn chance_hits_its_ratio() {
        let mut rng = Rng::seed_from(12);
        let hits = (0..100_000)
            .filter(|_| rng.chance(Ratio::new(1, 10)))
            .count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
    }

    #[test]
    fn streams_are_independent_of_draw_order() {
        let mut a = Streams::new(1);
        let mut b = Streams::new(1);
        let a_net = a.get(Stream::Network).next_u64();
        b.get(Stream::Scheduler).next_u64();
        b.get(Stream::Disk).next_u64();
        assert_eq!(b.get(Stream::Network).next_u64(), a_net);
    }

    #[test]
    fn every_stream_has_its_own_sequence() {
        let mut streams = Streams::new(3);
        streams.add_node(NodeId(1), "a");
        let all: Vec<Stream> = streams.all().collect();
        let mut firsts: Vec<u64> = all.iter().map(|&s| streams.get(s).next_u64()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        assert_eq!(firsts.len(), all.len(), "two streams share a sequence");
    }

    #[test]
    fn reseed_redraws_every_stream_of_the_registry() {
        let fresh = |sub: Option<u64>| {
            let mut streams = Streams::new(7);
            streams.add_node(NodeId(1), "a");
            streams.add_node(NodeId(2), "b");
            if let Some(sub) = sub {
                streams.reseed(0, sub);
            }
            let all: Vec<Stream> = streams.all().collect();
            all.into_iter()
                .map(|s| (s, streams.get(s).next_u64()))
                .collect::<Vec<_>>()
        };
        let original = fresh(None);
        let (one, two) = (fresh(Some(1)), fresh(Some(2)));
        assert_eq!(original.len(), Stream::WORLD.len() + 3);
        for ((stream, before), ((_, after_one), (_, after_two))) in
            original.iter().zip(one.iter().zip(&two))
        {
            assert_ne!(before, after_one, "reseed left {stream} as it was");
            assert_ne!(
                after_one, after_two,
                "two sub-seeds gave {stream} one future"
            );
        }
        assert_eq!(
            one,
            fresh(Some(1)),
            "a reseed is a function of the sub-seed"
        );
    }

    #[test]
    fn a_node_stream_opened_after_a_reseed_derives_from_the_new_root() {
        let mut streams = Streams::new(7);
        let before = {
            let mut other = Streams::new(7);
            other.add_node(NodeId(1), "late");
            other.get(Stream::Node(NodeId(1))).next_u64()
        };
        streams.reseed(0, 9);
        streams.add_node(NodeId(1), "late");
        assert_ne!(streams.get(Stream::Node(NodeId(1))).next_u64(), before);
    }

    #[test]
    #[should_panic(expected = "a branch path re-draws in order")]
    fn reseeds_follow_the_branch_path_in_order() {
        let mut streams = Streams::new(7);
        streams.reseed(0, 1);
        streams.reseed(1, 2);
        streams.reseed(1, 3);
    }

    #[test]
    fn a_node_rng_made_outside_a_run_refuses_to_draw_inside_one() {
        let outside = std::cell::RefCell::new(Some(node_rng()));
        let failure = crate::Sim::new(1)
            .run(async move {
                let mut rng = outside
                    .borrow_mut()
                    .take()
                    .expect("the generator is moved in");
                rng.next_u64();
            })
            .unwrap_err();
        assert!(
            failure.to_string().contains("would not replay"),
            "{failure}"
        );
        assert!(
            node_rng().with(|rng| rng.index(4)) < 4,
            "outside a run it still draws"
        );
    }
}
