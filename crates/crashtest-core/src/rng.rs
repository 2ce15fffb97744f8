//! The seeded random number generator and its named streams.
//!
//! Every random choice in a simulation is drawn here, so one `u64` seed decides the whole run.
//! The generator is xoshiro256++ seeded through SplitMix64: a documented, stable algorithm
//! written out below, so the same seed gives the same numbers on every platform, compiler and
//! dependency version (no `rand` algorithm that may change under us).
//!
//! The root seed is split into *named streams* ([`Streams`]): the scheduler, the network, the
//! disk, the fault injector, the workload and each node draw from their own generator, whose
//! seed is derived from the root seed and the stream's name. An extra draw in one stream
//! therefore does not reshuffle the others (TigerBeetle's per-subsystem sub-seeds).
//!
//! Probabilities are integer ratios ([`Ratio`]), never floats, so a decision is exact and
//! reproducible (TigerBeetle's `Ratio`).

use std::collections::BTreeMap;
use std::fmt;

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
        self.numerator
    }

    /// The denominator.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::rand::Ratio::new(1, 8).denominator(), 8);
    /// ```
    pub const fn denominator(self) -> u64 {
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
        self.below_inclusive(len as u64 - 1) as usize
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
        min + self.below_inclusive(max - min)
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
        self.below_inclusive(ratio.denominator - 1) < ratio.numerator
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
            items.swap(i, j);
        }
    }
}

rand_core_impls!(Rng);

/// The named streams of one simulation, all derived from its root seed.
///
/// A stream is created on first use; its seed depends only on the root seed and its name,
/// never on creation order.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::rand::Streams;
///
/// let mut a = Streams::new(9);
/// let mut b = Streams::new(9);
/// // Drawing from another stream first does not change what "network" gives.
/// a.get("disk").next_u64();
/// assert_eq!(a.get("network").next_u64(), b.get("network").next_u64());
/// ```
#[derive(Debug)]
pub struct Streams {
    root: u64,
    streams: BTreeMap<String, Rng>,
}

impl Streams {
    /// The streams of root seed `root`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::rand::Streams::new(5).root(), 5);
    /// ```
    pub fn new(root: u64) -> Streams {
        Streams {
            root,
            streams: BTreeMap::new(),
        }
    }

    /// The root seed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::rand::Streams::new(5).root(), 5);
    /// ```
    pub fn root(&self) -> u64 {
        self.root
    }

    /// The stream called `name`, created from the root seed on first use.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut s = crashtest::rand::Streams::new(5);
    /// let _ = s.get("workload").next_u64();
    /// ```
    pub fn get(&mut self, name: &str) -> &mut Rng {
        if !self.streams.contains_key(name) {
            let rng = Rng::seed_from(derive_seed(self.root, name));
            self.streams.insert(name.to_owned(), rng);
        }
        self.streams.get_mut(name).expect("stream inserted above")
    }
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
            return f(rng);
        }
        // The generator is copied out while `f` runs, so that `f` may use the world (read the
        // clock, draw again) without finding the node table borrowed.
        let taken = crate::world::with(|w| w.nodes.borrow().rng_of(w.current_node()).clone())
            .expect("a simulation's NodeRng was used after its run ended");
        let mut rng = taken;
        let result = f(&mut rng);
        crate::world::with(|w| *w.nodes.borrow_mut().rng(w.current_node()) = rng);
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
    fn streams_are_independent_of_creation_order() {
        let mut a = Streams::new(1);
        let mut b = Streams::new(1);
        let a_net = a.get("network").next_u64();
        b.get("scheduler").next_u64();
        b.get("disk").next_u64();
        assert_eq!(b.get("network").next_u64(), a_net);
    }
}
