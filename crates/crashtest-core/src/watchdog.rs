//! The watchdog: reports a task that never yields instead of hanging forever.
//!
//! A simulation is one thread, so a poll that never returns (a busy loop with no `.await`)
//! stops the whole run, and nothing inside the run can notice. One watchdog thread per process
//! watches every running simulation through a few atomics that the executor stores around each
//! poll. When one poll has run longer than the configured wall-clock limit, the watchdog
//! prints which seed, node and task is stuck and what to do, and aborts the process: there is
//! no safe way to stop a thread mid-poll, and hanging a CI job helps nobody.
//!
//! The report names the node by its name (the simulation tells the watchdog each node's name
//! as it is created) and gives the whole command that reproduces the seed, when the caller
//! that runs the seed said it with `plumbing::reproduce_with` on the seed's thread (the test runner
//! does; a bare `Sim::run` falls back to `CRASHTEST_SEED=N`).
//!
//! The watchdog only reads; it never touches a simulation's state, so it cannot affect
//! determinism. It is the one OS thread crashtest starts, and it runs outside every simulation.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;

/// What the watchdog can see of one running simulation.
#[derive(Debug)]
pub(crate) struct Watch {
    seed: u64,
    limit: Duration,
    in_poll: AtomicBool,
    /// Counts polls begun; an unchanged count across checks means the same poll is running.
    polls: AtomicU64,
    node: AtomicU32,
    task: AtomicU32,
    /// Node names by index, as nodes are created (node 0 is the supervisor).
    names: Mutex<Vec<String>>,
    /// The command that reproduces the seed, if the caller gave it.
    reproduce: Option<String>,
}

thread_local! {
    /// The reproduce command for the next simulation this thread registers.
    static REPRODUCE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Gives the command that reproduces the seed about to run on this thread, for the report of
/// a stuck poll (the test runner calls it before each seed; the next simulation registered on
/// this thread takes it).
///
/// ```
/// crashtest_core::plumbing::reproduce_with("MY_BUG=1 CRASHTEST_SEED=4 cargo test -p db -- t --exact".into());
/// assert!(crashtest_core::Sim::new(4).run(async {}).is_ok());
/// ```
pub fn reproduce_with(command: String) {
    REPRODUCE.with(|slot| *slot.borrow_mut() = Some(command));
}

static WATCHED: Mutex<Vec<Weak<Watch>>> = Mutex::new(Vec::new());

impl Watch {
    /// Registers a simulation with the watchdog, starting the watchdog on first use.
    pub(crate) fn register(seed: u64, limit: Duration) -> Arc<Watch> {
        static START: Once = Once::new();
        START.call_once(|| {
            #[allow(
                clippy::disallowed_methods,
                reason = "the watchdog runs outside simulations"
            )]
            std::thread::Builder::new()
                .name("crashtest-watchdog".into())
                .spawn(watch_forever)
                .expect("could not start the crashtest watchdog thread");
        });
        let watch = Arc::new(Watch {
            seed,
            limit,
            in_poll: AtomicBool::new(false),
            polls: AtomicU64::new(0),
            node: AtomicU32::new(0),
            task: AtomicU32::new(0),
            names: Mutex::new(vec!["supervisor".to_owned()]),
            reproduce: REPRODUCE.with(|slot| slot.borrow_mut().take()),
        });
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        watched.retain(|w| w.strong_count() > 0);
        watched.push(Arc::downgrade(&watch));
        watch
    }

    /// Records the name of node `index` (at its creation; rare, so a lock is cheap).
    pub(crate) fn name_node(&self, index: u32, name: &str) {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let index = index as usize;
        if names.len() <= index {
            names.resize(index + 1, String::new());
        }
        names[index] = name.to_owned();
    }

    /// Node `index` by name, with its index: `db (n2)`.
    fn node_label(&self, index: u32) -> String {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        match names.get(index as usize).filter(|n| !n.is_empty()) {
            Some(name) => format!("{name} (n{index})"),
            None => format!("n{index}"),
        }
    }

    #[inline]
    pub(crate) fn enter_poll(&self, node: u32, task: u32) {
        self.node.store(node, Ordering::Relaxed);
        self.task.store(task, Ordering::Relaxed);
        // One writer (the simulation's thread): a load and a store, no locked instruction.
        self.polls.store(
            self.polls.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        self.in_poll.store(true, Ordering::Release);
    }

    #[inline]
    pub(crate) fn leave_poll(&self) {
        self.in_poll.store(false, Ordering::Release);
    }
}

fn watch_forever() {
    const TICK: Duration = Duration::from_millis(250);
    // For each watched simulation: the poll count last seen and how long it has not changed.
    let mut seen: Vec<(Weak<Watch>, u64, Duration)> = Vec::new();
    loop {
        std::thread::sleep(TICK);
        let current: Vec<Weak<Watch>> = WATCHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        seen.retain(|(w, _, _)| w.strong_count() > 0);
        for weak in current {
            let Some(watch) = weak.upgrade() else {
                continue;
            };
            let polls = watch.polls.load(Ordering::Relaxed);
            let entry = match seen.iter_mut().find(|(w, _, _)| w.ptr_eq(&weak)) {
                Some(entry) => entry,
                None => {
                    seen.push((weak.clone(), polls, Duration::ZERO));
                    continue;
                }
            };
            if entry.1 != polls || !watch.in_poll.load(Ordering::Acquire) {
                *entry = (weak.clone(), polls, Duration::ZERO);
                continue;
            }
            entry.2 += TICK;
            if entry.2 >= watch.limit {
                report_and_abort(&watch, entry.2);
            }
        }
    }
}

fn report_and_abort(watch: &Watch, stuck: Duration) -> ! {
    let reproduce = watch
        .reproduce
        .clone()
        .unwrap_or_else(|| format!("CRASHTEST_SEED={}", watch.seed));
    eprintln!(
        "\ncrashtest: seed {} is stuck: task t{} on node {} has run for {:?} of wall time \
         without returning from its poll.\n\
         A simulation runs every task on one thread, so a task must reach an `.await` that \
         waits (a timer, a message, another task) to let the others run. Look for a loop \
         without an `.await`, blocking I/O, `std::thread::sleep`, or a blocking lock.\n\
         Reproduce with: {reproduce}\n\
         Raise the limit with CRASHTEST_POLL_TIMEOUT_SECS if a poll is legitimately this slow.\n",
        watch.seed,
        watch.task.load(Ordering::Relaxed),
        watch.node_label(watch.node.load(Ordering::Relaxed)),
        stuck,
    );
    std::process::abort();
}
