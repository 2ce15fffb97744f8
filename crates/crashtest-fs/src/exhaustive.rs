//! Exhaustive mode: instead of sampling crash points and tear outcomes from the seed,
//! enumerate every one of them for a small scope.
//!
//! An [`Explorer`] runs a scenario again and again with the same seed. Each run is one *case*:
//! a sequence of choices, made by an enumerator in place of the disk's random stream
//! (the idea of TigerBeetle's exhaustigen, `src/testing/exhaustigen.zig`). The
//! enumerator records each choice with its bound; after a case it advances the rightmost
//! choice that can still grow and forgets those after it, so the cases come in lexicographic
//! order and the exploration ends when every sequence has been run. The first failing case is
//! therefore the same on every run of the exploration.
//!
//! The choices of a case:
//! - *crash points*: before each mutating operation (write, `set_len`, sync, create, rename,
//!   remove) a node makes while inside a [`crash_scope`], crash it now or go on (one injected
//!   crash per case: once crashed, the rest of the run goes on without crash points);
//! - *crash outcomes*: at every kill, injected or made by the scenario, the fate of each
//!   unsynced sector (kept, dropped, or, with tears on, torn in five ways: good first half
//!   with old or garbage rest, good second half with old or garbage rest, all garbage), of
//!   each pending truncate, of each pending directory change and of each unsynced chmod.
//!
//! Running faults (I/O errors, corruption) are off while exploring; garbage bytes come from
//! the seed.
//!
//! Each case runs on a thread of its own, as each seed of a test does: std's `HashMap` keys
//! and `rand`'s thread generator are drawn once per thread, so a case that followed others
//! on one thread would take them from those cases, and its replay, alone, would run
//! something else. So the scenario is `Sync`: what a scenario shares with the test outside
//! the simulation goes through `Arc` and a lock, not `Rc`.

use std::cell::{Cell, RefCell, RefMut};
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::rc::Rc;

use crashtest_core::node::NodeId;
use crashtest_core::rng::Rng;
use crashtest_core::{Config, RunFailure, RunSummary, Sim, plumbing};

use crate::crash::{Choices, PageFate, SectorFate, Tear};
use crate::page::SECTOR_SIZE;
use crate::state;

/// Enumerates every sequence of bounded choices, one sequence per case (exhaustigen).
#[derive(Debug, Default)]
struct Enumerator {
    /// Each choice made so far in this case or an earlier one: (value, inclusive bound).
    made: Vec<(u64, u64)>,
    /// The next choice to make in this case.
    cursor: usize,
    started: bool,
    max_choices: usize,
    overflowed: bool,
}

/// The bound of a replayed choice until the case asks it.
const UNLEARNED: u64 = u64::MAX;

impl Enumerator {
    fn new(max_choices: usize) -> Enumerator {
        Enumerator {
            max_choices,
            ..Enumerator::default()
        }
    }

    /// One case only: the choices `values`, in order (their bounds learned as the case asks
    /// them), then the first value of any later choice, as the enumeration takes it.
    fn replaying(values: &[u64], max_choices: usize) -> Enumerator {
        assert!(
            values.len() <= max_choices,
            "{} choices given, more than the explorer's max_choices ({max_choices}) lets a case \
             make: they are another case's, or another explorer's",
            values.len()
        );
        Enumerator {
            made: values.iter().map(|&value| (value, UNLEARNED)).collect(),
            cursor: 0,
            started: true,
            max_choices,
            overflowed: false,
        }
    }

    /// The value of the next choice, in `0..=bound`.
    fn choose(&mut self, bound: u64) -> u64 {
        assert!(
            self.started,
            "a choice is made inside a case, once `done` has started the enumeration"
        );
        let fresh = self.cursor == self.made.len();
        if fresh {
            if self.made.len() == self.max_choices {
                self.overflowed = true;
                return 0;
            }
            self.made.push((0, 0));
        }
        let slot = &mut self.made[self.cursor];
        // A replayed choice follows the same prefix of values as when it was recorded, so a
        // deterministic scenario asks it with the same bound.
        assert!(
            fresh || slot.1 == bound || slot.1 == UNLEARNED,
            "the scenario is not deterministic: choice {} replayed with bound {bound}, not {}",
            self.cursor,
            slot.1
        );
        assert!(
            slot.0 <= bound,
            "the scenario is not deterministic, or the choices are another scenario's: choice \
             {} replayed with bound {bound} below the value {} it had",
            self.cursor,
            slot.0
        );
        slot.1 = bound;
        let value = slot.0;
        self.cursor += 1;
        assert!(value <= bound, "a choice stays within its bound");
        assert!(
            self.cursor <= self.made.len() && self.made.len() <= self.max_choices,
            "the cursor walks the recorded choices, at most max_choices of them"
        );
        value
    }

    /// Moves to the next sequence; true when there is none left.
    fn done(&mut self) -> bool {
        if !self.started {
            assert!(
                self.made.is_empty() && self.cursor == 0,
                "the first case starts with no choice made"
            );
            self.started = true;
            return false;
        }
        assert_eq!(
            self.cursor,
            self.made.len(),
            "the scenario is not deterministic: a case made fewer choices than its prefix"
        );
        self.cursor = 0;
        assert!(
            self.made.iter().all(|&(value, bound)| value <= bound),
            "every recorded choice is within its bound"
        );
        let previous = self.values();
        while let Some(last) = self.made.last_mut() {
            if last.0 < last.1 {
                last.0 += 1;
                assert!(
                    self.values() > previous,
                    "cases are enumerated in increasing order, so none repeats"
                );
                return false;
            }
            self.made.pop();
        }
        assert!(
            self.made.is_empty(),
            "an exhausted enumeration has no choice left"
        );
        true
    }

    fn values(&self) -> Vec<u64> {
        let values: Vec<u64> = self.made.iter().map(|&(value, _)| value).collect();
        assert!(
            values.len() <= self.max_choices,
            "a case makes at most max_choices choices"
        );
        values
    }
}

/// The state of an exploration, shared with the file system of each case's run.
#[derive(Debug)]
pub(crate) struct Explore {
    choices: RefCell<Enumerator>,
    tears: bool,
    crashed: Cell<bool>,
    /// Open crash scopes: node → (disk boot, count).
    scopes: RefCell<BTreeMap<NodeId, (u64, u32)>>,
}

impl Explore {
    fn new(tears: bool, choices: Enumerator) -> Explore {
        Explore {
            choices: RefCell::new(choices),
            tears,
            crashed: Cell::new(false),
            scopes: RefCell::new(BTreeMap::new()),
        }
    }

    /// Whether to crash `node` (at disk boot `boot`) before its next mutation.
    pub(crate) fn crash_here(&self, node: NodeId, boot: u64) -> bool {
        if self.crashed.get() {
            return false;
        }
        let scope = self.scopes.borrow().get(&node).copied();
        assert!(
            scope.is_none_or(|(scope_boot, _)| scope_boot <= boot),
            "a node's crash scope comes from its current boot or an earlier one"
        );
        let in_scope = scope.is_some_and(|(scope_boot, count)| scope_boot == boot && count > 0);
        if !in_scope {
            return false;
        }
        let crash = self.choices.borrow_mut().choose(1) == 1;
        assert!(!self.crashed.get(), "one injected crash per case");
        self.crashed.set(crash);
        crash
    }

    fn enter(&self, node: NodeId, boot: u64) {
        let mut scopes = self.scopes.borrow_mut();
        let scope = scopes.entry(node).or_insert((boot, 0));
        if scope.0 != boot {
            assert!(
                scope.0 < boot,
                "a node's boot only grows: its scopes were opened before its crash"
            );
            *scope = (boot, 0);
        }
        assert!(
            scope.1 < u32::MAX,
            "crash scopes of one node nest fewer than 2^32 deep"
        );
        scope.1 += 1;
        assert_eq!(
            scope.0, boot,
            "a scope counts for the boot it was opened in"
        );
    }

    fn leave(&self, node: NodeId, boot: u64) {
        if let Some(scope) = self.scopes.borrow_mut().get_mut(&node) {
            assert!(
                scope.0 >= boot,
                "a guard's boot is the node's latest scope's or an earlier one"
            );
            if scope.0 == boot {
                assert!(scope.1 > 0, "a scope is left only after it was entered");
                scope.1 -= 1;
            }
        }
    }

    /// The crash decisions of this case, enumerated (garbage bytes come from `rng`).
    /// `garbage`: torn sectors may hold garbage (the disk configuration's
    /// `torn_sector_garbage`); when they may not, those cases are not enumerated.
    pub(crate) fn enumerated<'a>(&'a self, rng: &'a mut Rng, garbage: bool) -> Enumerated<'a> {
        Enumerated {
            choices: self.choices.borrow_mut(),
            rng,
            tears: self.tears,
            garbage,
        }
    }
}

/// Crash decisions drawn from the enumerator: every sector is a choice (no page layer, no
/// "all survive" coin: those are sampling shortcuts the enumeration covers anyway).
pub(crate) struct Enumerated<'a> {
    choices: RefMut<'a, Enumerator>,
    rng: &'a mut Rng,
    tears: bool,
    garbage: bool,
}

impl Choices for Enumerated<'_> {
    fn all_survive(&mut self) -> bool {
        false
    }

    fn mode_survives(&mut self) -> bool {
        self.choices.choose(1) == 0
    }

    fn drop_only(&mut self) -> bool {
        false
    }

    fn page(&mut self, drop_only: bool) -> PageFate {
        // The enumeration walks every sector through all its fates; the sampler's drop-only
        // shortcut would leave the torn ones out.
        assert!(
            !drop_only,
            "an enumerated crash never draws a drop-only file"
        );
        PageFate::Corrupted
    }

    fn sector(&mut self, len: u64) -> SectorFate {
        if !self.tears {
            return match self.choices.choose(1) {
                0 => SectorFate::Kept,
                _ => SectorFate::Dropped,
            };
        }
        assert!(
            (1..=SECTOR_SIZE).contains(&len),
            "a sector piece holds at least one byte and at most a sector"
        );
        let half = len / 2;
        let torn = |good, garbage| SectorFate::Torn(Tear { good, garbage });
        if !self.garbage {
            let fate = match self.choices.choose(3) {
                0 => SectorFate::Kept,
                1 => SectorFate::Dropped,
                2 => torn((0, half), false),
                _ => torn((half.max(1), len), false),
            };
            if let SectorFate::Torn(Tear { good, .. }) = fate {
                assert!(
                    good.0 <= good.1 && good.1 <= len && good.1 - good.0 < len,
                    "an enumerated tear lies inside its sector and leaves a bad byte"
                );
            }
            return fate;
        }
        let fate = match self.choices.choose(6) {
            0 => SectorFate::Kept,
            1 => SectorFate::Dropped,
            2 => torn((0, half), false),
            3 => torn((0, half), true),
            4 => torn((half.max(1), len), false),
            5 => torn((half.max(1), len), true),
            _ => torn((0, 0), true),
        };
        if let SectorFate::Torn(Tear { good, .. }) = fate {
            assert!(
                good.0 <= good.1 && good.1 <= len && good.1 - good.0 < len,
                "an enumerated tear lies inside its sector and leaves a bad byte"
            );
        }
        fate
    }

    fn truncate_survives(&mut self) -> bool {
        self.choices.choose(1) == 0
    }

    fn dir_change_survives(&mut self) -> bool {
        self.choices.choose(1) == 0
    }

    fn weak_cut(&mut self, pending: usize) -> usize {
        let dropped = self.choices.choose(pending as u64) as usize;
        assert!(
            dropped <= pending,
            "the weak model drops at most every operation"
        );
        pending - dropped
    }

    fn garbage(&mut self, bytes: &mut [u8]) {
        assert!(
            self.tears,
            "garbage is drawn only for a torn sector, and tears are enumerated only when on"
        );
        self.rng.fill_bytes(bytes);
    }
}

/// Marks the operations of the calling node that exhaustive mode may crash before: until the
/// guard is dropped, each mutating disk operation of this node is a crash point. Outside an
/// exploration it does nothing, so the same scenario also runs in ordinary sweeps.
///
/// # Panics
///
/// While exploring, panics on the supervisor (the test body), which cannot be crashed: open
/// scopes in the code of a node.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::node;
/// use crashtest::fs::exhaustive::crash_scope;
///
/// crashtest::Sim::new(1).run(async {
///     node::create("db", || async {
///         let _scope = crash_scope();
///         crashtest::fs::write("/log", b"record").await.unwrap();
///     });
/// }).unwrap();
/// ```
pub fn crash_scope() -> CrashScope {
    let entered = state::state().and_then(|state| {
        let explore = state.explore()?;
        let node = plumbing::current_node()?;
        assert_ne!(
            node,
            NodeId::SUPERVISOR,
            "a crash scope belongs in a node's code: the supervisor cannot be crashed"
        );
        let boot = state.boot(node);
        explore.enter(node, boot);
        Some((node, boot))
    });
    CrashScope { entered }
}

/// The guard returned by [`crash_scope`].
#[derive(Debug)]
pub struct CrashScope {
    entered: Option<(NodeId, u64)>,
}

impl Drop for CrashScope {
    fn drop(&mut self) {
        let Some((node, boot)) = self.entered else {
            return;
        };
        if let Some(explore) = state::state().and_then(|state| state.explore()) {
            explore.leave(node, boot);
        }
    }
}

/// Runs a scenario once per combination of crash point and crash outcome.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
/// use crashtest::node;
/// use crashtest::fs::exhaustive::{crash_scope, Explorer};
/// use std::time::Duration;
///
/// let exploration = Explorer::new().tears(false).run(|| async {
///     let db = node::create("db", || async {
///         let _scope = crash_scope();
///         crashtest::fs::write("/a", b"x").await.unwrap();
///     });
///     crashtest::time::sleep(Duration::from_secs(1)).await;
///     db.kill();
/// });
/// assert!(exploration.exhausted && exploration.failure.is_none());
/// assert!(exploration.cases > 1);
/// ```
#[derive(Clone, Debug)]
pub struct Explorer {
    seed: u64,
    tears: bool,
    max_cases: u64,
    max_choices: usize,
    config: Config,
}

impl Default for Explorer {
    fn default() -> Explorer {
        Explorer {
            seed: 0,
            tears: true,
            max_cases: 1_000_000,
            max_choices: 64,
            config: Config::default(),
        }
    }
}

impl Explorer {
    /// An explorer with seed 0, tears on, at most a million cases and 64 choices per case.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::exhaustive::Explorer::new();
    /// ```
    pub fn new() -> Explorer {
        Explorer::default()
    }

    /// The seed every case runs with (scheduling, latency, garbage bytes).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::exhaustive::Explorer::new().seed(7);
    /// ```
    pub fn seed(mut self, seed: u64) -> Explorer {
        self.seed = seed;
        self
    }

    /// Whether sectors may tear (five torn outcomes besides kept and dropped) or only be
    /// kept or dropped (default: tears on).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::exhaustive::Explorer::new().tears(false);
    /// ```
    pub fn tears(mut self, tears: bool) -> Explorer {
        self.tears = tears;
        self
    }

    /// Stops after `cases` cases even if some are left (the result is then not exhausted).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::exhaustive::Explorer::new().max_cases(10_000);
    /// ```
    pub fn max_cases(mut self, cases: u64) -> Explorer {
        assert!(
            cases > 0,
            "max_cases(0) would run no case and explore nothing: give at least 1"
        );
        self.max_cases = cases;
        self
    }

    /// Refuses scopes that make more than `choices` choices in one case.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::exhaustive::Explorer::new().max_choices(128);
    /// ```
    pub fn max_choices(mut self, choices: usize) -> Explorer {
        self.max_choices = choices;
        self
    }

    /// The configuration of each case's simulation.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let _ = crashtest::fs::exhaustive::Explorer::new().sim_config(crashtest::Config::default());
    /// ```
    pub fn sim_config(mut self, config: Config) -> Explorer {
        self.config = config;
        self
    }

    /// The configuration of each case's simulation, as [`Explorer::sim_config`] set it.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let explorer = crashtest::fs::exhaustive::Explorer::new();
    /// let traced = explorer.config().clone().record_trace(true);
    /// let _ = explorer.sim_config(traced);
    /// ```
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs `scenario` once per case until every case has run, a case fails, or the case
    /// limit is reached.
    ///
    /// # Panics
    ///
    /// Panics if a case makes more than `max_choices` choices (narrow the scope, or turn tears
    /// off), or if the scenario is not deterministic (a replayed case takes another path).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// let exploration = crashtest::fs::exhaustive::Explorer::new().run(|| async {});
    /// assert_eq!(exploration.cases, 1);
    /// ```
    pub fn run<F, Fut>(&self, scenario: F) -> Exploration
    where
        F: Fn() -> Fut + Sync,
        Fut: Future<Output = ()> + 'static,
    {
        let mut choices = Enumerator::new(self.max_choices);
        let mut cases = 0;
        loop {
            if choices.done() {
                assert!(cases > 0, "an exhausted exploration ran its first case");
                return Exploration {
                    cases,
                    exhausted: true,
                    failure: None,
                };
            }
            if cases == self.max_cases {
                return Exploration {
                    cases,
                    exhausted: false,
                    failure: None,
                };
            }
            let case = self.run_case(choices, &scenario);
            choices = case.choices;
            assert!(
                !case.crashed || !choices.made.is_empty(),
                "an injected crash is one of the case's choices"
            );
            assert!(
                !choices.overflowed,
                "a case made more than {} choices: narrow the crash scope, turn tears off, or \
                 raise max_choices",
                self.max_choices
            );
            cases += 1;
            assert!(
                cases <= self.max_cases,
                "an exploration runs at most max_cases cases"
            );
            if let Err(failure) = case.result {
                return Exploration {
                    cases,
                    exhausted: false,
                    failure: Some(FailedCase {
                        case: cases - 1,
                        choices: choices.values(),
                        failure: *failure,
                    }),
                };
            }
        }
    }

    /// Runs one case again, alone: the one whose choices a [`FailedCase`] lists, with the
    /// settings (seed, tears, configuration) of the explorer that found it and the same
    /// scenario. The same case fails the same way, with the same fingerprint.
    ///
    /// # Errors
    ///
    /// The case's failure. Choices that do not fit the scenario (another scenario's, or
    /// other settings': a choice beyond the bound the case gives it) fail the run too, with
    /// a message that says so.
    ///
    /// # Panics
    ///
    /// Panics if the case passed having made fewer choices than given, or made more than
    /// `max_choices`: the choices are another case's.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_fs as fs; }
    /// use crashtest::node;
    /// use crashtest::fs::exhaustive::{crash_scope, Explorer};
    /// use std::{cell::Cell, rc::Rc, time::Duration};
    ///
    /// // A write never synced, read back after a restart: lost in the cases that drop it.
    /// let scenario = || async {
    ///     let restarted = Rc::new(Cell::new(false));
    ///     let flag = restarted.clone();
    ///     let db = node::create("db", move || {
    ///         let restarted = flag.get();
    ///         async move {
    ///             if restarted {
    ///                 assert!(crashtest::fs::read("/a").await.is_ok(), "the write was lost");
    ///                 return;
    ///             }
    ///             let _scope = crash_scope();
    ///             crashtest::fs::write("/a", b"x").await.unwrap();
    ///         }
    ///     });
    ///     crashtest::time::sleep(Duration::from_secs(1)).await;
    ///     restarted.set(true);
    ///     db.restart();
    ///     crashtest::time::sleep(Duration::from_secs(1)).await;
    /// };
    /// let explorer = Explorer::new().tears(false);
    /// let found = explorer.run(scenario).failure.expect("a case loses the write");
    /// let again = explorer.replay(&found.choices, scenario).unwrap_err();
    /// assert_eq!(again.summary.fingerprint, found.failure.summary.fingerprint);
    /// ```
    pub fn replay<F, Fut>(
        &self,
        choices: &[u64],
        scenario: F,
    ) -> Result<RunSummary, Box<RunFailure>>
    where
        F: Fn() -> Fut + Sync,
        Fut: Future<Output = ()> + 'static,
    {
        let case = self.run_case(Enumerator::replaying(choices, self.max_choices), &scenario);
        assert!(
            !case.choices.overflowed,
            "the replayed case made more than {} choices: these choices are another case's",
            self.max_choices
        );
        assert!(
            case.choices.cursor >= choices.len() || case.result.is_err(),
            "the replayed case made {} choices of the {} given: they are another case's",
            case.choices.cursor,
            choices.len()
        );
        case.result
    }

    /// Runs one case, its choices made by `choices`, on a thread of its own: std's `HashMap`
    /// keys and `rand`'s thread generator are drawn once per thread (from the run's seed,
    /// with the determinism guards linked), so a case run after others on one thread would
    /// take them from an earlier case, and its replay, alone, would run something else.
    fn run_case<F, Fut>(&self, choices: Enumerator, scenario: &F) -> Case
    where
        F: Fn() -> Fut + Sync,
        Fut: Future<Output = ()> + 'static,
    {
        std::thread::scope(|scope| {
            let case = std::thread::Builder::new()
                .name("crashtest exhaustive case".to_owned())
                .spawn_scoped(scope, move || {
                    let explore = Rc::new(Explore::new(self.tears, choices));
                    let shared = explore.clone();
                    let body = scenario();
                    let result = Sim::with_config(self.seed, self.config.clone()).run(async move {
                        if let Some(state) = state::state() {
                            state.set_explore(shared);
                        }
                        body.await;
                    });
                    Case {
                        choices: explore.choices.take(),
                        crashed: explore.crashed.get(),
                        result,
                    }
                });
            case.expect("the OS starts a thread for the case")
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// One case run: the enumerator after it, whether it injected its crash, and its result.
struct Case {
    choices: Enumerator,
    crashed: bool,
    result: Result<RunSummary, Box<RunFailure>>,
}

/// What an exploration found.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// Cases run.
    pub cases: u64,
    /// True if every case ran (none failed, the case limit was not reached).
    pub exhausted: bool,
    /// The first failing case, in the enumeration's order.
    pub failure: Option<FailedCase>,
}

/// A failing case of an exploration.
#[derive(Clone, Debug)]
pub struct FailedCase {
    /// Its index in the enumeration (0 for the first case run).
    pub case: u64,
    /// The value of each choice it made, in order.
    pub choices: Vec<u64>,
    /// The failed run.
    pub failure: RunFailure,
}

impl fmt::Display for FailedCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "exhaustive case {} failed, choices {:?} (Explorer::replay with these choices and \
             the same settings runs it alone)",
            self.case, self.choices
        )?;
        write!(f, "{}", self.failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enumerator_yields_every_sequence_in_order() {
        let mut choices = Enumerator::new(32);
        let mut seen = Vec::new();
        while !choices.done() {
            let a = choices.choose(2);
            let b = if a == 1 { choices.choose(1) } else { 0 };
            seen.push((a, b));
        }
        assert_eq!(seen, [(0, 0), (1, 0), (1, 1), (2, 0)]);
    }

    #[test]
    fn picking_from_a_shrinking_pool_yields_every_permutation() {
        let mut choices = Enumerator::new(32);
        let mut perms = std::collections::BTreeSet::new();
        while !choices.done() {
            let mut pool = vec!['a', 'b', 'c', 'd'];
            let mut perm = String::new();
            while !pool.is_empty() {
                let i = choices.choose(pool.len() as u64 - 1) as usize;
                perm.push(pool.remove(i));
            }
            perms.insert(perm);
        }
        assert_eq!(perms.len(), 24);
    }

    #[test]
    fn the_enumerator_reports_overflow_past_its_cap() {
        let mut choices = Enumerator::new(2);
        assert!(!choices.done());
        for _ in 0..3 {
            choices.choose(1);
        }
        assert!(choices.overflowed);
    }
}
