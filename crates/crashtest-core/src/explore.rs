//! Exploring a run's futures: branch paths, fork points, and user-declared state abstractions.
//!
//! A *branch path* is a list of `(virtual time, sub-seed)` points, in time order. The run is
//! the seed's own up to the first point; there every random stream is re-drawn from the first
//! sub-seed, and so on at each later point. `(seed, branch path)` names one timeline of a
//! tree: the empty path is the seed's own run, and a path one point longer is a branch of the
//! timeline named by the shorter one. Re-running `(seed, path)` replays it exactly.
//!
//! A *fork point* lets a driver branch without replaying the prefix: when the run reaches
//! the point's time, the world calls the point's hook at the top of its loop (between two
//! polls, no task running, no borrow held). The hook may fork the process; it returns the
//! sub-seed to re-draw from (in a child) or `None` (the trunk goes on unchanged). A branch
//! taken at a fork point is the same timeline as a fresh run with one more path point: both
//! re-draw at the same iteration of the loop, from the same sub-seed.
//!
//! A *state abstraction* is a value the program declares as what matters about its state
//! (a Raft node's role, how far its term is ahead, whether its log diverges): [`state`]
//! records the value's hash, and a guided search counts a value never seen before as new
//! behaviour worth branching from, and the virtual time it was first reached as a place to
//! branch from: right after it, the state is in the prefix and everything that follows is
//! re-drawn. The record lives in a thread-local map only while a driver [`observe`]s the run,
//! so it costs nothing otherwise and never feeds back into the run: it is output, never a
//! source of choices.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The hook called at a fork point: `Some(sub_seed)` re-draws the future from it, `None`
/// keeps the run's own.
pub type ForkHook = Arc<dyn Fn() -> Option<u64> + Send + Sync>;

/// A point at which the world asks a hook whether to re-draw the future.
#[derive(Clone)]
pub(crate) struct ForkPoint {
    pub(crate) at_ns: u64,
    pub(crate) hook: ForkHook,
}

impl fmt::Debug for ForkPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ForkPoint({}ns)", self.at_ns)
    }
}

/// The root of the streams re-drawn at the `depth`-th point of a branch path (counted from
/// 0) with `sub_seed`. Depth 0 keeps the root a single explore point has always had, so a
/// one-point path replays as it did before paths existed.
pub(crate) fn branch_root(seed: u64, depth: usize, sub_seed: u64) -> u64 {
    let depth_mix = (depth as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    crate::rng::derive_seed(seed ^ sub_seed.rotate_left(32) ^ depth_mix, "explore")
}

thread_local! {
    /// The state values recorded while a driver observes the run on this thread, each with
    /// the virtual time it was first declared.
    static OBSERVED: RefCell<Option<BTreeMap<(&'static str, u64), u64>>> =
        const { RefCell::new(None) };
}

/// A value of a state abstraction that a run reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reached {
    /// The abstraction's name.
    pub name: &'static str,
    /// The value's hash.
    pub value: u64,
    /// Virtual time, in nanoseconds, when the run first declared it (0 outside a simulation).
    pub first_ns: u64,
}

/// Declares a value of the abstraction `name` of the program's state. A guided search
/// treats a `(name, value)` pair that no earlier run reached as new behaviour and branches
/// from the runs that reach it; outside such a search the call only hashes the value.
///
/// Abstract on purpose: a few small fields (a role, a bounded gap, a flag) make a space the
/// search can cover; a whole log or a counter that grows makes every run look new.
///
/// ```
/// use crashtest_core::explore;
/// let (_, seen) = explore::observe(|| {
///     crashtest_core::Sim::new(1).run(async {
///         explore::state("raft", ("leader", 1u8, false));
///         explore::state("raft", ("follower", 0u8, false));
///         explore::state("raft", ("leader", 1u8, false));
///     })
/// });
/// assert_eq!(seen.len(), 2, "two distinct values");
/// assert!(seen.iter().all(|reached| reached.name == "raft"));
/// ```
pub fn state(name: &'static str, value: impl Hash) {
    // A search reports what it reached by abstraction: each has a name.
    assert!(!name.is_empty(), "a state abstraction has a name");
    OBSERVED.with(|observed| {
        if let Some(map) = observed.borrow_mut().as_mut() {
            // `DefaultHasher::new` has fixed keys: the same value hashes the same in every
            // process of one build, whatever the thread's `RandomState`.
            let mut hasher = std::hash::DefaultHasher::new();
            value.hash(&mut hasher);
            let now = crate::plumbing::timers::now_ns().unwrap_or(0);
            let first = *map.entry((name, hasher.finish())).or_insert(now);
            assert!(first <= now, "virtual time never goes back");
        }
    });
}

/// Runs `f` (typically one simulation) and returns what it returned with the distinct
/// values that [`state`] recorded on this thread meanwhile, ordered by name and hash.
///
/// ```
/// use std::time::Duration;
/// use crashtest_core::{explore, time, Sim};
/// let (_, seen) = explore::observe(|| {
///     Sim::new(1).run(async {
///         time::sleep(Duration::from_millis(3)).await;
///         explore::state("phase", 1);
///         time::sleep(Duration::from_millis(2)).await;
///         explore::state("phase", 1);
///     })
/// });
/// assert_eq!(seen.len(), 1);
/// assert_eq!(seen[0].first_ns, 3_000_000, "the time it was first declared");
/// ```
pub fn observe<R>(f: impl FnOnce() -> R) -> (R, Vec<Reached>) {
    let outer = OBSERVED.with(|observed| observed.borrow_mut().replace(BTreeMap::new()));
    let result = f();
    let seen = OBSERVED.with(|observed| std::mem::replace(&mut *observed.borrow_mut(), outer));
    let seen = seen.expect("the observed map is this call's until it returns");
    // Observed inside a simulation, nothing was reached after the clock's present.
    if crate::verify::enabled()
        && let Some(now) = crate::plumbing::timers::now_ns()
    {
        assert!(
            seen.values().all(|&first_ns| first_ns <= now),
            "a state was reached after virtual time {now} ns"
        );
    }
    let reached = seen
        .into_iter()
        .map(|((name, value), first_ns)| Reached {
            name,
            value,
            first_ns,
        })
        .collect();
    (result, reached)
}
