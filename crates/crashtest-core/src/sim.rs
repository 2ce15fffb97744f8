//! `Sim`: configure and run one simulation; `check_determinism`: run it twice and compare.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::report::{RunFailure, RunSummary};
use crate::trace::{Event, TraceStream};
use crate::world::World;

/// How a simulation runs. Every field has a default suited to tests.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::Config;
/// use std::time::Duration;
///
/// let config = Config::default()
///     .time_limit(Duration::from_secs(600))
///     .poll_cost(Duration::from_nanos(50), Duration::from_nanos(100));
/// crashtest::Sim::with_config(1, config).run(async {}).unwrap();
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) time_limit: Duration,
    pub(crate) record_trace: bool,
    pub(crate) record_hashes: bool,
    pub(crate) stream: Option<Arc<dyn TraceStream>>,
    pub(crate) poll_cost_ns: (u64, u64),
    pub(crate) livelock_polls: u64,
    pub(crate) poll_timeout: Duration,
    pub(crate) buggify: bool,
    pub(crate) sleep_stretch: Option<Duration>,
    pub(crate) masked_faults: BTreeSet<u64>,
    pub(crate) kept_faults: Option<BTreeSet<u64>>,
    pub(crate) explore: Vec<(u64, u64)>,
    pub(crate) fork: Option<crate::explore::ForkPoint>,
    pub(crate) scheduling_window: usize,
}

impl Default for Config {
    fn default() -> Config {
        // Zero is refused as `Config::poll_timeout` refuses it: every poll would be "stuck".
        let poll_timeout_s = std::env::var("CRASHTEST_POLL_TIMEOUT_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&secs: &u64| secs > 0)
            .unwrap_or(60);
        Config {
            time_limit: Duration::from_secs(24 * 3600),
            record_trace: false,
            record_hashes: false,
            stream: None,
            poll_cost_ns: (0, 0),
            livelock_polls: 50_000_000,
            poll_timeout: Duration::from_secs(poll_timeout_s),
            buggify: true,
            sleep_stretch: None,
            masked_faults: BTreeSet::new(),
            kept_faults: None,
            explore: Vec::new(),
            fork: None,
            scheduling_window: crate::task::DEFAULT_WINDOW,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("time_limit", &self.time_limit)
            .field("record_trace", &self.record_trace)
            .field("record_hashes", &self.record_hashes)
            .field("stream", &self.stream.is_some())
            .field("poll_cost_ns", &self.poll_cost_ns)
            .field("livelock_polls", &self.livelock_polls)
            .field("poll_timeout", &self.poll_timeout)
            .field("buggify", &self.buggify)
            .field("sleep_stretch", &self.sleep_stretch)
            .field("masked_faults", &self.masked_faults)
            .field("kept_faults", &self.kept_faults)
            .field("explore", &self.explore)
            .field("scheduling_window", &self.scheduling_window)
            .finish()
    }
}

impl Config {
    /// Turns `buggify!` sites on (the default) or off for the run.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let config = crashtest::Config::default().buggify(false);
    /// crashtest::Sim::with_config(1, config).run(async {
    ///     assert!(!crashtest::buggify!(crashtest::rand::Ratio::ALWAYS));
    /// }).unwrap();
    /// ```
    pub fn buggify(mut self, on: bool) -> Config {
        self.buggify = on;
        self
    }

    /// Stretches one sleep in four by a heavy-tailed extra delay of at most `max`
    /// (FoundationDB's buggified delay; off by default). Timers then fire late, as under load.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use std::time::Duration;
    /// let config = crashtest::Config::default().sleep_stretch(Duration::from_millis(200));
    /// crashtest::Sim::with_config(1, config).run(async {
    ///     let start = crashtest::time::Instant::now();
    ///     crashtest::time::sleep(Duration::from_secs(1)).await;
    ///     assert!(start.elapsed() >= Duration::from_secs(1));
    /// }).unwrap();
    /// ```
    pub fn sleep_stretch(mut self, max: Duration) -> Config {
        self.sleep_stretch = Some(max);
        self
    }

    /// Replays with every fault masked except these ids, including faults that come up only
    /// because the run changed (the complement of [`Config::mask_faults`], for a short
    /// reproduce line of a minimized run).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::{fault, node::NodeId, rng::Ratio, Config, Sim};
    /// let config = Config::default().keep_only_faults([1]);
    /// Sim::with_config(1, config).run(async {
    ///     let coin = || fault::inject(NodeId::SUPERVISOR, Ratio::ALWAYS, || "drop".into());
    ///     assert_eq!((coin(), coin(), coin()), (false, true, false));
    /// }).unwrap();
    /// ```
    pub fn keep_only_faults(mut self, ids: impl IntoIterator<Item = u64>) -> Config {
        self.kept_faults
            .get_or_insert_with(BTreeSet::new)
            .extend(ids);
        self
    }

    /// Replays the seed until virtual time `at`, then re-draws everything random from
    /// `sub_seed`: one prefix, many futures (a tree of timelines from one point of a run).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::{Config, Sim};
    /// use std::time::Duration;
    ///
    /// let body = || async {
    ///     for _ in 0..10 {
    ///         let ms = crashtest::rand::rng().with(|r| r.range_inclusive(1, 100));
    ///         crashtest::time::sleep(Duration::from_millis(ms)).await;
    ///     }
    /// };
    /// let explore = |sub| Config::default().explore_from(Duration::from_millis(50), sub);
    /// let a = Sim::with_config(1, explore(1)).run(body()).unwrap();
    /// let b = Sim::with_config(1, explore(2)).run(body()).unwrap();
    /// assert_ne!(a.fingerprint, b.fingerprint);
    /// assert_eq!(a, Sim::with_config(1, explore(1)).run(body()).unwrap());
    /// ```
    ///
    /// Called again with a later time, it adds a point to the run's branch path: the future
    /// re-drawn at the first point is re-drawn again at the second, and so on (a branch of a
    /// branch, see [`crate::explore`]).
    ///
    /// # Panics
    ///
    /// Panics if `at` is earlier than the path's last point, or later than a fork point
    /// already set with [`Config::fork_at`] (the fork comes after the whole path).
    pub fn explore_from(mut self, at: Duration, sub_seed: u64) -> Config {
        let at_ns = nanos(at);
        if let Some((last, _)) = self.explore.last() {
            assert!(at_ns >= *last, "a branch path's points are in time order");
        }
        if let Some(fork) = &self.fork {
            assert!(
                at_ns <= fork.at_ns,
                "a branch path's point ({at_ns} ns) comes before the fork point ({} ns)",
                fork.at_ns
            );
        }
        self.explore.push((at_ns, sub_seed));
        self
    }

    /// Calls `hook` once, when the run reaches virtual time `at` (after the branch path's
    /// points, which must not be later): a `Some(sub_seed)` it returns re-draws the future as
    /// [`Config::explore_from`] with that time and sub-seed would, `None` leaves the run
    /// alone. A driver that forks the process in the hook branches without replaying the
    /// prefix.
    ///
    /// # Panics
    ///
    /// Panics if `at` is earlier than the branch path's last point.
    ///
    /// ```
    /// use crashtest_core::{Config, Sim};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let body = || async {
    ///     for _ in 0..10 {
    ///         let ms = crashtest_core::rng::node_rng().with(|r| r.range_inclusive(1, 100));
    ///         crashtest_core::time::sleep(Duration::from_millis(ms)).await;
    ///     }
    /// };
    /// let at = Duration::from_millis(50);
    /// let hooked = Config::default().fork_at(at, Arc::new(|| Some(3)));
    /// let replayed = Config::default().explore_from(at, 3);
    /// assert_eq!(
    ///     Sim::with_config(1, hooked).run(body()).unwrap().fingerprint,
    ///     Sim::with_config(1, replayed).run(body()).unwrap().fingerprint,
    /// );
    /// ```
    pub fn fork_at(mut self, at: Duration, hook: crate::explore::ForkHook) -> Config {
        let at_ns = nanos(at);
        if let Some((last, _)) = self.explore.last() {
            assert!(at_ns >= *last, "a fork point comes after the branch path");
        }
        self.fork = Some(crate::explore::ForkPoint { at_ns, hook });
        self
    }

    /// Replays with these fault ids masked: their coins are still drawn, so the run stays
    /// aligned, but the faults are not applied (the basis of fault minimization).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::{fault, node::NodeId, rng::Ratio, Config, Sim};
    /// let config = Config::default().mask_faults([0]);
    /// Sim::with_config(1, config).run(async {
    ///     let first = fault::inject(NodeId::SUPERVISOR, Ratio::ALWAYS, || "drop".into());
    ///     let second = fault::inject(NodeId::SUPERVISOR, Ratio::ALWAYS, || "drop".into());
    ///     assert_eq!((first, second), (false, true));
    /// }).unwrap();
    /// ```
    pub fn mask_faults(mut self, ids: impl IntoIterator<Item = u64>) -> Config {
        self.masked_faults.extend(ids);
        self
    }

    /// Fails the run if virtual time reaches `limit` before the body finishes (default: a day).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::Config::default().time_limit(std::time::Duration::from_secs(60));
    /// ```
    pub fn time_limit(mut self, limit: Duration) -> Config {
        self.time_limit = limit;
        self
    }

    /// Keeps every event of the run in the summary (for replay tools; costs memory).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let s = crashtest::Sim::with_config(1, crashtest::Config::default().record_trace(true))
    ///     .run(async {})
    ///     .unwrap();
    /// assert!(s.trace.unwrap().len() > 0);
    /// ```
    pub fn record_trace(mut self, record: bool) -> Config {
        self.record_trace = record;
        self
    }

    /// Hands every event of the run to `stream` as it happens (see [`TraceStream`]), so that
    /// a run that kills its process still leaves the events up to its death. Streaming does
    /// not change the run: the same seed gives the same events and fingerprint.
    ///
    /// A determinism check streams its first run only.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # use crashtest::trace::{Event, TraceStream};
    /// # use crashtest::node::NodeId;
    /// # struct Nothing;
    /// # impl TraceStream for Nothing {
    /// #     fn name_node(&self, _: NodeId, _: &str) {}
    /// #     fn event(&self, _: &Event) {}
    /// #     fn flush(&self) {}
    /// # }
    /// use crashtest::{Config, Sim};
    /// let plain = Sim::new(3).run(async {}).unwrap();
    /// let streamed = Sim::with_config(3, Config::default().stream_trace(std::sync::Arc::new(Nothing)))
    ///     .run(async {})
    ///     .unwrap();
    /// assert_eq!(plain.fingerprint, streamed.fingerprint);
    /// ```
    pub fn stream_trace(mut self, stream: Arc<dyn TraceStream>) -> Config {
        self.stream = Some(stream);
        self
    }

    /// Each poll costs a seeded amount of virtual CPU time in `min..=max` (default: none), so
    /// that timers can fire between the steps of busy tasks.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use std::time::Duration;
    /// let _ = crashtest::Config::default().poll_cost(Duration::ZERO, Duration::from_micros(1));
    /// ```
    pub fn poll_cost(mut self, min: Duration, max: Duration) -> Config {
        assert!(min <= max, "poll cost range {min:?}..={max:?} is empty");
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).expect("poll cost fits in u64 ns");
        self.poll_cost_ns = (nanos(min), nanos(max));
        self
    }

    /// Makes the scheduler pick uniformly among the oldest `tasks` ready tasks (default 256).
    ///
    /// Up to that many ready tasks, every pick is uniform over all of them. A window of 1 runs
    /// ready tasks first in, first out; `usize::MAX` picks uniformly over any number. A
    /// narrower window is faster when a program readies very many tasks at once, since the
    /// tasks polled one after another sit close together in memory.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let config = crashtest::Config::default().scheduling_window(1);
    /// crashtest::Sim::with_config(1, config).run(async {
    ///     let handles: Vec<_> = (0..4).map(|i| crashtest::spawn(async move { i })).collect();
    ///     // First in, first out: the yielding body goes back behind the four tasks.
    ///     crashtest::task::yield_now().await;
    ///     assert!(handles.iter().all(|h| h.is_finished()));
    /// }).unwrap();
    /// ```
    ///
    /// # Panics
    ///
    /// Panics if `tasks` is zero.
    pub fn scheduling_window(mut self, tasks: usize) -> Config {
        assert!(tasks > 0, "the scheduling window holds at least one task");
        self.scheduling_window = tasks;
        self
    }

    /// Fails the run as a livelock after `polls` polls without the clock moving (default
    /// fifty million).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::Config::default().livelock_polls(1_000_000);
    /// ```
    pub fn livelock_polls(mut self, polls: u64) -> Config {
        assert!(polls > 0, "the livelock bound must allow at least one poll");
        self.livelock_polls = polls;
        self
    }

    /// Aborts the process with a report if one poll runs longer than `limit` of wall time
    /// (default 60 s, or `CRASHTEST_POLL_TIMEOUT_SECS`): a task that never yields.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let _ = crashtest::Config::default().poll_timeout(std::time::Duration::from_secs(5));
    /// ```
    pub fn poll_timeout(mut self, limit: Duration) -> Config {
        assert!(
            !limit.is_zero(),
            "a zero poll timeout would abort every run"
        );
        self.poll_timeout = limit;
        self
    }
}

/// One simulation: a seed and a configuration.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{node, time, Sim};
/// use std::time::Duration;
///
/// let summary = Sim::new(42)
///     .run(async {
///         let n = node::create("ticker", || async {
///             let mut i = time::interval(Duration::from_secs(1));
///             loop {
///                 i.tick().await;
///             }
///         });
///         time::sleep(Duration::from_secs(10)).await;
///         n.kill();
///     })
///     .unwrap();
/// assert_eq!(summary.elapsed, Duration::from_secs(10));
/// assert_eq!(summary.fingerprint, Sim::new(42).run(async {
///     let n = node::create("ticker", || async {
///         let mut i = time::interval(Duration::from_secs(1));
///         loop { i.tick().await; }
///     });
///     time::sleep(Duration::from_secs(10)).await;
///     n.kill();
/// }).unwrap().fingerprint);
/// ```
#[derive(Clone, Debug)]
pub struct Sim {
    seed: u64,
    config: Config,
}

impl Sim {
    /// A simulation of `seed` with the default configuration.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::Sim::new(9).run(async {}).unwrap().seed, 9);
    /// ```
    pub fn new(seed: u64) -> Sim {
        Sim {
            seed,
            config: Config::default(),
        }
    }

    /// A simulation of `seed` with `config`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let sim = crashtest::Sim::with_config(9, crashtest::Config::default());
    /// assert!(sim.run(async {}).is_ok());
    /// ```
    pub fn with_config(seed: u64, config: Config) -> Sim {
        Sim { seed, config }
    }

    /// Runs `body` as the first task (on the supervisor node) until it finishes or the run
    /// fails. The run fails on a panic in any task, a deadlock, a livelock or the time limit.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let failed = crashtest::Sim::new(1).run(async { panic!("boom") });
    /// assert!(failed.unwrap_err().to_string().contains("boom"));
    /// ```
    ///
    /// # Panics
    ///
    /// Panics at once if the calling thread is inside a tokio runtime (a `#[tokio::test]`,
    /// `block_on`, `Runtime::enter`): a `tokio::spawn` in the simulation would hand its task
    /// to that runtime, which runs it outside the seed's order or, while this call blocks it,
    /// never.
    pub fn run<F>(&self, body: F) -> Result<RunSummary, Box<RunFailure>>
    where
        F: Future<Output = ()> + 'static,
    {
        assert!(
            tokio::runtime::Handle::try_current().is_err(),
            "crashtest::Sim::run was called inside a tokio runtime (a #[tokio::test], block_on \
             or Runtime::enter). A tokio::spawn in the simulation would hand its task to that \
             runtime, which would run it outside the seed's order, or never while the \
             simulation blocks it. Run the simulation where no tokio runtime is entered: use \
             #[crashtest::test] instead of #[tokio::test], or call it on a thread of its own \
             with crashtest::on_fresh_thread(|| Sim::new(seed).run(body))."
        );
        let result = World::run(self.seed, self.config.clone(), Box::pin(body)).0;
        self.assert_reported(&result);
        result
    }

    /// The postconditions of a run's report: it is of this seed and this configuration, and
    /// its figures agree with one another (a report that disagrees with itself sends whoever
    /// replays it after a run that never happened).
    fn assert_reported(&self, result: &Result<RunSummary, Box<RunFailure>>) {
        let summary = summary_of(result);
        assert_eq!(summary.seed, self.seed, "a run reports the seed it ran");
        assert!(
            summary.polls <= summary.events,
            "every poll is an event: {} polls in {} events",
            summary.polls,
            summary.events
        );
        assert_eq!(
            summary.node_names.first().map(String::as_str),
            Some("supervisor"),
            "node 0 of every run is the supervisor"
        );
        assert_eq!(
            summary.trace.is_some(),
            self.config.record_trace,
            "a run keeps its full trace exactly when asked to"
        );
        let Err(failure) = result else {
            assert!(
                summary.elapsed <= self.config.time_limit,
                "a passing run ended within its time limit"
            );
            return;
        };
        assert!(
            failure
                .tail
                .last()
                .is_none_or(|last| last.index < summary.events),
            "a failure's tail goes past the run's {} events",
            summary.events
        );
        assert!(
            failure.faults.iter().all(|f| f.time <= summary.elapsed),
            "a fault applied after the run ended"
        );
        if crate::verify::enabled() {
            assert!(
                failure
                    .tail
                    .windows(2)
                    .all(|w| w[0].index + 1 == w[1].index),
                "a failure's tail is the run's last events, in order"
            );
            assert!(
                failure.faults.windows(2).all(|w| w[0].time <= w[1].time),
                "a failure's faults are listed in the order they were applied"
            );
        }
    }
}

/// Two runs of one seed that did not do the same thing.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use std::sync::atomic::{AtomicU64, Ordering};
/// static RUNS: AtomicU64 = AtomicU64::new(0);
/// let divergence = crashtest::check_determinism(1, Default::default(), || async {
///     // State kept between runs makes the second run differ from the first.
///     let extra = RUNS.fetch_add(1, Ordering::SeqCst);
///     crashtest::time::sleep(std::time::Duration::from_millis(1 + extra)).await;
/// })
/// .unwrap_err();
/// assert_eq!(divergence.first.last().unwrap().index, divergence.index);
/// ```
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The seed run twice.
    pub seed: u64,
    /// Index of the first event that differs.
    pub index: u64,
    /// The events of a run up to and including the divergent one, from a third run that
    /// kept every event (the two compared keep only their fingerprints).
    pub first: Vec<Event>,
    /// The same from a fourth run.
    pub second: Vec<Event>,
    /// Where the third and fourth runs parted, the last event of each window: `index`
    /// again for a cause that repeats, another event for one that does not (a counter or a
    /// generator outside the run), and `None` if those two runs did not part at all.
    pub shown_index: Option<u64>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "nondeterminism: two runs of seed {} part at event #{}; something in the run is \
             not drawn from the seed (real time, OS randomness, HashMap order, threads, \
             global state kept between runs, or a generator seeded from a process-wide \
             counter: an unbiased futures::select!, tokio-stream's StreamMap, or \
             tokio::select! without crashtest's tokio stand-in)",
            self.seed, self.index
        )?;
        match self.shown_index {
            Some(shown) if shown == self.index => {}
            Some(shown) => writeln!(
                f,
                "  run twice more keeping every event, the seed parted at event #{shown} \
                 instead (the cause does not repeat at the same point); those two runs:"
            )?,
            None => writeln!(
                f,
                "  run twice more keeping every event, the seed did not part: the later runs \
                 agree with each other and not with the first. Most likely the first run left \
                 state behind for the ones after it (a `static`, `LazyLock` or `OnceLock` it \
                 filled, such as a client or a cache made once per process); else the cause \
                 is intermittent (a generator seeded from a process-wide counter, as listed \
                 above, can draw alike twice by chance). The two later runs, up to event #{}:",
                self.index
            )?,
        }
        for (label, events) in [("first run", &self.first), ("second run", &self.second)] {
            writeln!(f, "  {label}:")?;
            for event in events {
                writeln!(f, "    {event}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Divergence {}

/// How many events before the divergent one a [`Divergence`] shows.
const DIVERGENCE_CONTEXT: u64 = 8;

/// Runs the seed twice with `body` made afresh each time and compares the traces event by
/// event. Returns the first run's result if the two agree, else where they part.
///
/// Each run goes on a fresh OS thread of its own: state that a thread keeps between runs
/// (std's `HashMap` keys, a thread's `rand` generator, both drawn once per thread) would
/// otherwise make the second run differ from the first for reasons outside the program.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{check_determinism, time, Config};
/// use std::time::Duration;
///
/// let result = check_determinism(7, Config::default(), || async {
///     time::sleep(Duration::from_millis(5)).await;
/// });
/// assert!(result.is_ok());
/// ```
pub fn check_determinism<F, Fut>(
    seed: u64,
    config: Config,
    body: F,
) -> Result<Result<RunSummary, Box<RunFailure>>, Box<Divergence>>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    // Each run is on a thread of its own, and each tells the watchdog who runs it, so that a
    // poll stuck in either is reported with the caller's test and command, as any seed's.
    let caller = crate::watchdog::take_caller();
    let run = |config: Config| {
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name(format!("crashtest-seed-{seed}"))
                .spawn_scoped(scope, || {
                    if let Some(caller) = &caller {
                        caller.install();
                    }
                    World::run(seed, config, Box::pin(body()))
                })
                .expect("could not start a thread for a determinism run")
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    };
    let mut hashing = config.clone();
    hashing.record_hashes = true;
    let (first, first_hashes) = run(hashing.clone());
    // Only the first run streams: a stream holds one run's events.
    hashing.stream = None;
    let (second, second_hashes) = run(hashing);
    let first_hashes = first_hashes.expect("hashes were recorded");
    let second_hashes = second_hashes.expect("hashes were recorded");
    // The hashes are the fingerprint after each event: as many as the run's events, the
    // last one the run's fingerprint, for each run however the two differ.
    let (summary, second_summary) = (summary_of(&first), summary_of(&second));
    for (run, hashes, summary) in [
        ("first", &first_hashes, summary),
        ("second", &second_hashes, second_summary),
    ] {
        assert_eq!(
            hashes.len() as u64,
            summary.events,
            "the {run} run's hashes miss some of its events"
        );
        assert!(
            hashes
                .last()
                .is_none_or(|&last| last == summary.fingerprint),
            "the {run} run's last hash is not its fingerprint"
        );
    }
    let Some(index) = first_difference(&first_hashes, &second_hashes) else {
        // The same events, so the same polls (each poll is an event).
        assert_eq!(
            summary.polls, second_summary.polls,
            "two runs with the same events polled differently"
        );
        return Ok(first);
    };
    // Run twice again keeping every event, and show the stretch up to where *those* runs
    // part: a cause that does not repeat (a generator the seed does not own) may part them
    // elsewhere, or not at all, and a window at the first pair's index would then show two
    // equal stretches, or nothing where a run ended sooner.
    let mut recording = config.record_trace(true);
    recording.stream = None;
    recording.record_hashes = true;
    let (third, third_hashes) = run(recording.clone());
    let (fourth, fourth_hashes) = run(recording);
    let shown_index = first_difference(
        &third_hashes.expect("hashes were recorded"),
        &fourth_hashes.expect("hashes were recorded"),
    );
    let end = shown_index.unwrap_or(index);
    let window = |result: Result<RunSummary, Box<RunFailure>>| {
        let summary = match result {
            Ok(summary) => summary,
            Err(failure) => failure.summary,
        };
        // Recorded on purpose: a missing trace would show an empty divergence.
        let events = summary.trace.expect("a recording run kept no trace");
        let start = end.saturating_sub(DIVERGENCE_CONTEXT) as usize;
        let stop = (end as usize + 1).min(events.len());
        let shown = events
            .get(start..stop)
            .map(<[Event]>::to_vec)
            .unwrap_or_default();
        // The stretch shown is the one that leads up to the divergence, and no later.
        assert!(
            shown.iter().all(|event| event.index <= end),
            "a divergence shows events past the one that differs"
        );
        shown
    };
    let (first, second) = (window(third), window(fourth));
    Err(Box::new(Divergence {
        seed,
        index,
        first,
        second,
        shown_index,
    }))
}

/// The index of the first event after which two runs' fingerprints differ, or at which one
/// run ended and the other went on; `None` for the same events throughout.
fn first_difference(a: &[u64], b: &[u64]) -> Option<u64> {
    let parted = match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(index) => Some(index as u64),
        None if a.len() == b.len() => None,
        None => Some(a.len().min(b.len()) as u64),
    };
    // An event of both runs, or the end of the shorter one: never past both.
    assert!(parted.is_none_or(|index| index as usize <= a.len().min(b.len())));
    parted
}

/// A virtual time in nanoseconds.
/// A run's figures, whether it passed or failed.
fn summary_of(result: &Result<RunSummary, Box<RunFailure>>) -> &RunSummary {
    match result {
        Ok(summary) => summary,
        Err(failure) => &failure.summary,
    }
}

fn nanos(at: Duration) -> u64 {
    u64::try_from(at.as_nanos()).expect("explore time fits in u64 nanoseconds")
}
