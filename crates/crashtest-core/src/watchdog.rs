//! The watchdog: reports a task that never yields instead of hanging forever.
//!
//! A simulation is one thread, so a poll that never returns (a busy loop with no `.await`)
//! stops the whole run, and nothing inside the run can notice. One watchdog thread per process
//! watches every running simulation through a few atomics that the executor stores around each
//! poll. When one poll has run longer than the configured wall-clock limit, the watchdog
//! prints which seed, node and task is stuck and what to do, and then ends the process: there
//! is no safe way to stop a thread mid-poll, and hanging a CI job helps nobody.
//!
//! The report names the node by its name (the simulation tells the watchdog each node's name
//! as it is created) and gives the whole command that reproduces the seed, when the caller
//! that runs the seed said it with `plumbing::reproduce_with` on the seed's thread (the test
//! runner does; a bare `Sim::run` falls back to `CRASHTEST_SEED=N`).
//!
//! How the process ends depends on who runs it. Ending a `cargo test` binary mid-run would
//! lose every other test of the binary that had not finished, and libtest's summary. So when
//! the caller also named the stuck simulation's test (the test runner does) and the process is
//! not a worker of the `crashtest` tool, the watchdog replaces the process with a fresh run of
//! the same test binary, with the same arguments (so the user's filters, `--exact`,
//! `--ignored` and the rest keep their meaning) and with `CRASHTEST_STUCK` naming the stuck
//! test and its report. There, that test fails at once with the report instead of running
//! (the runner asks [`stuck_before`]), every other test runs and reports, and libtest prints
//! its summary and fails the process. Replacing the process (`exec`) rather than starting a
//! child also ends the spinning thread, which nothing else can. Tests that had finished before
//! the poll got stuck run again: a simulation is deterministic, so they give the same result,
//! and the summary counts every test of the binary once. Should a second test get stuck in the
//! new run, it is added to the list and the binary runs again; a test already on the list
//! never runs a simulation, so this ends. A `crashtest` worker (`CRASHTEST_RESULTS` set) and a
//! simulation whose test is unknown abort instead: the tool records an aborted worker's seed
//! as crashed, with this report, and a bare `Sim::run` may not be in a test binary at all.
//!
//! A poll can also be stuck without spinning: blocked in the kernel on a futex, by
//! `futures::executor::block_on`, `std::thread::park`, a `std::sync` lock or channel, a
//! `Condvar`. Every task runs on the simulation's one thread, so nothing can wake it. On Linux
//! the watchdog reads what the thread is doing (`/proc/self/task/TID/syscall`), reports such a
//! wait as one, with what to use instead, and does not wait the whole limit for it: a
//! sixth of it (10 s of the default 60 s; never under 5 s, or the limit if shorter) blocked
//! without a break is enough, since a poll that waits that long on another thread of the
//! process is itself a bug in a simulation.
//!
//! The watchdog only reads; it never touches a simulation's state, so it cannot affect
//! determinism. It is the one OS thread crashtest starts, and it runs outside every simulation.

use std::cell::RefCell;

use crate::task::LabelRef;
use std::collections::BTreeMap;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
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
    /// Where the program spawned the task being polled (null for crashtest's own tasks):
    /// static data, which the watchdog's thread may read whenever it likes.
    place: AtomicPtr<Location<'static>>,
    /// The simulation thread's id in the kernel, to read what a stuck poll is doing (Linux;
    /// `None` elsewhere).
    thread: Option<i32>,
    /// Node names by index, as nodes are created (node 0 is the supervisor).
    names: Mutex<Vec<String>>,
    /// The names of the run's named tasks, by serial, the most recent [`NAMED_TASKS`] kept.
    task_names: Mutex<BTreeMap<u32, String>>,
    /// The run's first failure, once there is one: a refused call returns an error that a
    /// library may ignore and then wait forever (a thread pool whose thread never started),
    /// and the report of that wait must lead with its cause.
    failure: Mutex<Option<String>>,
    /// The test running the simulation and the command that reproduces the seed, if the
    /// caller gave them.
    caller: Option<Caller>,
}

/// Who runs a simulation, as its caller tells the watchdog.
#[derive(Clone, Debug)]
pub(crate) struct Caller {
    /// The test, as libtest names it (`raft::tests::agree`).
    test: String,
    /// The shell command that reproduces the seed.
    reproduce: String,
}

thread_local! {
    /// The caller of the next simulation this thread registers.
    static CALLER: RefCell<Option<Caller>> = const { RefCell::new(None) };
}

/// Gives the test (as libtest names it) and the command that reproduces the seed about to run
/// on this thread, for the report of a stuck poll: the report gives the command, and a plain
/// `cargo test` runs the binary's other tests again without `test` (see the module's doc).
/// The test runner calls it before each seed; the next simulation registered on this thread
/// takes it.
///
/// ```
/// crashtest_core::plumbing::reproduce_with(
///     "db::t",
///     "MY_BUG=1 CRASHTEST_SEED=4 cargo test -p db -- db::t --exact".into(),
/// );
/// assert!(crashtest_core::Sim::new(4).run(async {}).is_ok());
/// ```
pub fn reproduce_with(test: &str, command: String) {
    // A stuck test is found again by its name in the binary's next run (`stuck_before`), and
    // the report tells how to run it alone.
    assert!(
        !test.is_empty() && !command.is_empty(),
        "a stuck test is named, with a command to reproduce it"
    );
    let caller = Caller {
        test: test.to_owned(),
        reproduce: command,
    };
    CALLER.with(|slot| *slot.borrow_mut() = Some(caller));
}

/// The caller this thread said for its next simulation, taken for simulations it runs on
/// threads of their own (a determinism check's runs), each of which installs it with
/// [`Caller::install`] before it registers.
pub(crate) fn take_caller() -> Option<Caller> {
    CALLER.with(|slot| slot.borrow_mut().take())
}

impl Caller {
    /// Makes this the caller of the next simulation registered on the calling thread.
    pub(crate) fn install(&self) {
        let earlier = CALLER.with(|slot| slot.borrow_mut().replace(self.clone()));
        // Installed on a thread of its own, which no caller has named a simulation for.
        assert!(earlier.is_none(), "a caller installed over another");
    }
}

/// The watchdog's report, if `test` (as libtest names it) got stuck in an earlier run of
/// this test binary, which the watchdog ended by running the binary again (see the module's
/// doc): such a test must fail at once with this report instead of running. The test runner
/// asks it before a test's first seed.
///
/// ```
/// // Unless the watchdog ran this binary again without it, no test got stuck before.
/// assert_eq!(crashtest_core::plumbing::stuck_before("db::t"), None);
/// ```
pub fn stuck_before(test: &str) -> Option<Stuck> {
    let list = std::env::var(crashtest_protocol::env::STUCK).ok()?;
    decode_stuck(&list)
        .into_iter()
        .find(|entry| entry.test == test)
        .map(|entry| Stuck {
            seed: entry.seed,
            report: entry.report.to_owned(),
        })
}

/// A test that got stuck in an earlier run of its binary: the seed whose poll never returned,
/// and the watchdog's report of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// The seed that got stuck, for the test's regression file.
    pub seed: u64,
    /// The watchdog's report; its first line names the seed and the task.
    pub report: String,
}

/// One entry of the stuck list, borrowed from the list.
#[derive(Debug, PartialEq, Eq)]
struct StuckEntry<'a> {
    test: &'a str,
    seed: u64,
    report: &'a str,
}

/// Separates a test's name from its report in `CRASHTEST_STUCK` (ASCII unit separator; a name
/// or report that held either separator has it replaced by a space).
const UNIT: char = '\u{1f}';
/// Separates one stuck test from the next in `CRASHTEST_STUCK` (ASCII record separator).
const RECORD: char = '\u{1e}';
// A name ends at the first unit separator and an entry at the first record separator.
const _: () = assert!(UNIT as u32 != RECORD as u32);

/// `list` (a `CRASHTEST_STUCK` value) with `test`, its stuck `seed` and its `report` added.
fn encode_stuck(list: &str, test: &str, seed: u64, report: &str) -> String {
    let clean = |text: &str| text.replace([UNIT, RECORD], " ");
    let (test, report) = (clean(test), clean(report));
    let entry = format!("{test}{UNIT}{seed}{UNIT}{report}{RECORD}");
    // What is written here is what the binary's next run reads (`decode_stuck`), whatever
    // separators the name or the report held.
    assert_eq!(
        decode_stuck(&entry),
        [StuckEntry {
            test: &test,
            seed,
            report: &report
        }],
        "a stuck test's entry does not read back"
    );
    format!("{list}{entry}")
}

/// The entries of a `CRASHTEST_STUCK` value, in order; a malformed entry is skipped.
fn decode_stuck(list: &str) -> Vec<StuckEntry<'_>> {
    list.split(RECORD)
        .filter_map(|entry| {
            let (test, rest) = entry.split_once(UNIT)?;
            let (seed, report) = rest.split_once(UNIT)?;
            Some(StuckEntry {
                test,
                seed: seed.parse().ok()?,
                report,
            })
        })
        .collect()
}

static WATCHED: Mutex<Vec<Weak<Watch>>> = Mutex::new(Vec::new());

/// How many task names a watch keeps (the most recent).
const NAMED_TASKS: usize = 1024;

impl Watch {
    /// Registers a simulation with the watchdog, starting the watchdog on first use.
    pub(crate) fn register(seed: u64, limit: Duration) -> Arc<Watch> {
        // `Config` refuses a zero limit, which would report every poll the watchdog sees.
        assert!(!limit.is_zero(), "a zero poll timeout");
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
            place: AtomicPtr::new(std::ptr::null_mut()),
            thread: kernel_thread_id(),
            names: Mutex::new(vec!["supervisor".to_owned()]),
            task_names: Mutex::new(BTreeMap::new()),
            failure: Mutex::new(None),
            caller: take_caller(),
        });
        let mut watched = WATCHED.lock().unwrap_or_else(|e| e.into_inner());
        watched.retain(|w| w.strong_count() > 0);
        watched.push(Arc::downgrade(&watch));
        watch
    }

    /// Records the name of node `index` (at its creation; rare, so a lock is cheap).
    pub(crate) fn name_node(&self, index: u32, name: &str) {
        // The supervisor is named as the simulation registers; created nodes come after it.
        assert!(index > 0, "node 0 is the supervisor, named at registration");
        // The node table holds at most 2^16 nodes, which bounds the list grown here.
        assert!(
            index <= u32::from(u16::MAX),
            "node index {index} out of range"
        );
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let index = index as usize;
        if names.len() <= index {
            names.resize(index + 1, String::new());
        }
        names[index] = name.to_owned();
    }

    /// Records the name of the task with serial `serial` (at its spawn; named tasks are few,
    /// so a lock is cheap). Only the most recent [`NAMED_TASKS`] are kept: a run that
    /// restarts its nodes many times names a `main` each time.
    pub(crate) fn name_task(&self, serial: u32, name: &str) {
        let mut names = self.task_names.lock().unwrap_or_else(|e| e.into_inner());
        names.insert(serial, name.to_owned());
        if names.len() > NAMED_TASKS {
            names.pop_first();
        }
    }

    /// Records the run's first failure; later ones (a leftover task's destructor failing
    /// after the run's result was taken) are its consequences.
    pub(crate) fn failed(&self, failure: String) {
        let mut first = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(failure);
        }
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
    pub(crate) fn enter_poll(
        &self,
        node: u32,
        task: u32,
        place: Option<&'static Location<'static>>,
    ) {
        // One poll at a time: `leave_poll` closes each (a panic included, which is caught).
        assert!(
            !self.in_poll.load(Ordering::Relaxed),
            "a poll began inside a poll"
        );
        self.node.store(node, Ordering::Relaxed);
        self.task.store(task, Ordering::Relaxed);
        let place = place.map_or(std::ptr::null_mut(), |place| {
            std::ptr::from_ref(place).cast_mut()
        });
        self.place.store(place, Ordering::Relaxed);
        // One writer (the simulation's thread): a load and a store, no locked instruction.
        self.polls.store(
            self.polls.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        self.in_poll.store(true, Ordering::Release);
    }

    #[inline]
    pub(crate) fn leave_poll(&self) {
        debug_assert!(
            self.in_poll.load(Ordering::Relaxed),
            "a poll ended that never began"
        );
        self.in_poll.store(false, Ordering::Release);
    }
}

/// What a stuck simulation thread is doing, as the kernel says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    /// Running or runnable: a loop that never reaches a waiting `.await`.
    Running,
    /// Waiting on a futex (a lock, a condition variable, a parked thread).
    FutexWait,
    /// Blocked in another system call (its number), or outside one (`-1`).
    Blocked(i64),
    /// Unknown (not Linux, or the kernel would not say).
    Unknown,
}

/// How long a poll may stay blocked on a futex before it is reported: a sixth of the limit,
/// but not under 5 s (or the limit, if that is shorter), so that a short wait on another
/// thread (for the standard output's lock while a pipe drains) is never taken for one.
fn futex_limit(limit: Duration) -> Duration {
    (limit / 6).max(limit.min(Duration::from_secs(5)))
}

fn watch_forever() {
    const TICK: Duration = Duration::from_millis(250);
    /// For each watched simulation: the poll count last seen, how long it has not changed,
    /// and how long of that the thread has waited on a futex without a break.
    struct Seen {
        watch: Weak<Watch>,
        polls: u64,
        stuck: Duration,
        futex_wait: Duration,
    }
    let mut seen: Vec<Seen> = Vec::new();
    loop {
        std::thread::sleep(TICK);
        let current: Vec<Weak<Watch>> = WATCHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        seen.retain(|s| s.watch.strong_count() > 0);
        for weak in current {
            let Some(watch) = weak.upgrade() else {
                continue;
            };
            let polls = watch.polls.load(Ordering::Relaxed);
            let fresh = || Seen {
                watch: weak.clone(),
                polls,
                stuck: Duration::ZERO,
                futex_wait: Duration::ZERO,
            };
            let entry = match seen.iter_mut().find(|s| s.watch.ptr_eq(&weak)) {
                Some(entry) => entry,
                None => {
                    seen.push(fresh());
                    continue;
                }
            };
            // One writer counts the polls up: a smaller count is not the same simulation.
            assert!(
                polls >= entry.polls,
                "a simulation's poll count went backwards"
            );
            if entry.polls != polls || !watch.in_poll.load(Ordering::Acquire) {
                *entry = fresh();
                continue;
            }
            entry.stuck += TICK;
            let activity = activity(watch.thread);
            entry.futex_wait = match activity {
                Activity::FutexWait => entry.futex_wait + TICK,
                _ => Duration::ZERO,
            };
            if entry.stuck >= watch.limit || entry.futex_wait >= futex_limit(watch.limit) {
                report_and_end(&watch, entry.stuck, entry.futex_wait, activity);
            }
        }
    }
}

/// This thread's id in the kernel (once per thread: sweeps run each seed on a new thread).
#[cfg(target_os = "linux")]
fn kernel_thread_id() -> Option<i32> {
    thread_local! {
        // SAFETY: `gettid` takes nothing and cannot fail.
        static ID: i32 = unsafe { libc::gettid() };
    }
    Some(ID.with(|id| *id))
}

#[cfg(not(target_os = "linux"))]
fn kernel_thread_id() -> Option<i32> {
    None
}

/// What thread `id` of this process is doing, from `/proc/self/task/ID/syscall`: `running`,
/// or the number of the system call it is blocked in (`-1` when blocked outside one).
fn activity(thread: Option<i32>) -> Activity {
    let Some(id) = thread else {
        return Activity::Unknown;
    };
    match std::fs::read_to_string(format!("/proc/self/task/{id}/syscall")) {
        Ok(text) => parse_activity(&text),
        Err(_) => Activity::Unknown,
    }
}

/// Reads the kernel's account of a thread (see [`activity`]).
fn parse_activity(text: &str) -> Activity {
    let first = text.split_whitespace().next().unwrap_or("");
    if first == "running" {
        return Activity::Running;
    }
    match first.parse::<i64>() {
        #[cfg(target_os = "linux")]
        Ok(number) if number == libc::SYS_futex => Activity::FutexWait,
        Ok(number) => Activity::Blocked(number),
        Err(_) => Activity::Unknown,
    }
}

/// Reports a poll stuck for `stuck` (the last `futex_wait` of it waiting on a futex without a
/// break) and ends the process.
fn report_and_end(watch: &Watch, stuck: Duration, futex_wait: Duration, activity: Activity) -> ! {
    // The report says the poll ran past the limit, or waited on a futex past a sixth of it;
    // ending a process for less would be wrong.
    assert!(
        stuck >= watch.limit
            || (activity == Activity::FutexWait && futex_wait >= futex_limit(watch.limit)),
        "a poll reported stuck within its limit"
    );
    let reproduce = watch.caller.as_ref().map_or_else(
        || format!("CRASHTEST_SEED={}", watch.seed),
        |caller| caller.reproduce.clone(),
    );
    let place = watch.place.load(Ordering::Relaxed);
    // SAFETY: `enter_poll` stores null or a `&'static Location`, valid for the whole process.
    let place = unsafe { place.as_ref() };
    let task = watch.task.load(Ordering::Relaxed);
    let name = watch
        .task_names
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&task)
        .cloned();
    let label = LabelRef::of(name.as_deref(), place)
        .map_or_else(String::new, |label| format!(" ({label})"));
    let who = format!(
        "seed {} is stuck: task t{task}{label} on node {}",
        watch.seed,
        watch.node_label(watch.node.load(Ordering::Relaxed))
    );
    let (headline, advice) = match activity {
        Activity::FutexWait => (
            format!(
                "{who} has waited in the kernel on a futex for {futex_wait:?} of wall time \
                 without returning from its poll."
            ),
            "A simulation runs every task on one thread, so a blocking wait can never be woken: \
             the task that would wake it cannot run. Look for `futures::executor::block_on` or \
             `Handle::block_on`, `std::thread::park`, a `std::sync` `Mutex` or `RwLock` that \
             another task holds across an `.await`, a `std::sync::mpsc` or crossbeam receive, a \
             `Condvar` or a `Barrier`, and use the async equivalent instead (`.await`, \
             `tokio::sync`).",
        ),
        Activity::Blocked(number) => (
            format!(
                "{who} has been blocked in the kernel (system call {number}) for {stuck:?} of \
                 wall time without returning from its poll."
            ),
            "A simulation runs every task on one thread, and a blocking call stops all of them. \
             Look for blocking I/O outside the simulated network and disk (a terminal, a pipe, \
             a socket the simulation does not own) or `std::thread::sleep`.",
        ),
        Activity::Running | Activity::Unknown => (
            format!("{who} has run for {stuck:?} of wall time without returning from its poll."),
            "A simulation runs every task on one thread, so a task must reach an `.await` that \
             waits (a timer, a message, another task) to let the others run. Look for a loop \
             without an `.await`, or one whose `.await`s are always ready (an uncontended lock, \
             a channel that always holds a message: tokio's cooperative budget, which would \
             make them yield now and then, does not run inside a simulation), blocking I/O, \
             `std::thread::sleep`, or a blocking lock.",
        ),
    };
    let failure = watch
        .failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let report = stuck_report(&headline, advice, failure.as_deref(), &reproduce);
    say(format_args!("\ncrashtest: {report}\n"));
    let lookup = |name: &str| std::env::var(name).ok();
    if let Some(again) = run_again(watch.caller.as_ref(), watch.seed, &report, &lookup) {
        again.replace_process();
    }
    std::process::abort();
}

/// The report of a stuck poll: what is stuck, then the run's earlier failure if it had one
/// (a refused call whose error a library ignored is the likeliest cause of the wait, so it
/// comes before the general advice), then what to look for and how to reproduce the seed.
fn stuck_report(headline: &str, advice: &str, failure: Option<&str>, reproduce: &str) -> String {
    let cause = failure.map_or_else(String::new, |failure| {
        format!(
            "Before it got stuck the run had already failed, and the wait most likely follows \
             from that failure (a refused call returns an error, which a library may ignore and \
             then wait for work that never starts):\n  {}\n",
            failure.replace('\n', "\n  ")
        )
    });
    format!(
        "{headline}\n\
         {cause}{advice}\n\
         Reproduce with: {reproduce}\n\
         Raise the limit with CRASHTEST_POLL_TIMEOUT_SECS if a poll is legitimately this slow."
    )
}

/// Writes a line of the watchdog's to the process's standard error itself: the watchdog
/// thread inherits libtest's output capture from the test that started it, and a captured
/// line would be lost with the process.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A run of this test binary again, without the stuck test.
#[derive(Debug)]
struct RunAgain {
    /// The stuck test.
    test: String,
    /// The new `CRASHTEST_STUCK`: the earlier list with the stuck test added.
    stuck: String,
}

/// Whether to run the binary again without the stuck test, and how: only for a test the
/// caller named, outside a `crashtest` worker (which reports an aborted seed itself), and
/// never for a test already on the list (a loop guard: such a test runs no simulation).
fn run_again(
    caller: Option<&Caller>,
    seed: u64,
    report: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Option<RunAgain> {
    use crashtest_protocol::env;
    let caller = caller?;
    if lookup(env::RESULTS).is_some() {
        return None;
    }
    let earlier = lookup(env::STUCK).unwrap_or_default();
    if decode_stuck(&earlier)
        .iter()
        .any(|entry| entry.test == caller.test)
    {
        return None;
    }
    Some(RunAgain {
        test: caller.test.clone(),
        stuck: encode_stuck(&earlier, &caller.test, seed, report),
    })
}

impl RunAgain {
    /// Replaces this process with the test binary run again with the same arguments and the
    /// new stuck list; returns only if that cannot be done (the caller then aborts).
    fn replace_process(&self) {
        use std::io::Write as _;
        say(format_args!(
            "crashtest: a stuck thread cannot be stopped, so this test binary runs again with \
             the same arguments: `{}` fails there at once with the report above, and every \
             other test runs and reports (those that had already finished run again).\n",
            self.test
        ));
        // What libtest printed before must come before the new run's lines.
        let _ = std::io::stdout().flush();
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                say(format_args!(
                    "crashtest: cannot find this test binary to run it again: {e}"
                ));
                return;
            }
        };
        let mut args = std::env::args_os();
        let name = args.next();
        let mut command = std::process::Command::new(exe);
        command
            .args(args)
            .env(crashtest_protocol::env::STUCK, &self.stuck);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt as _;
            if let Some(name) = name {
                command.arg0(name);
            }
            let e = command.exec();
            say(format_args!(
                "crashtest: cannot run this test binary again: {e}"
            ));
        }
        #[cfg(not(unix))]
        {
            let _ = name;
            match command.status() {
                // The stuck test fails there, so the run fails; a failing status even so.
                Ok(status) => std::process::exit(status.code().filter(|&c| c != 0).unwrap_or(101)),
                Err(e) => say(format_args!(
                    "crashtest: cannot run this test binary again: {e}"
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(test: &str) -> Caller {
        Caller {
            test: test.to_owned(),
            reproduce: format!("CRASHTEST_SEED=8 cargo test -- {test} --exact"),
        }
    }

    #[test]
    fn a_futex_wait_is_reported_after_a_sixth_of_the_limit_but_not_under_five_seconds() {
        let secs = |s| Duration::from_secs(s);
        assert_eq!(futex_limit(secs(60)), secs(10));
        assert_eq!(futex_limit(secs(12)), secs(5));
        assert_eq!(futex_limit(secs(1)), secs(1));
        assert_eq!(futex_limit(secs(600)), secs(100));
    }

    #[test]
    fn the_kernels_account_of_a_thread_reads_as_running_a_futex_wait_or_another_call() {
        assert_eq!(parse_activity("running\n"), Activity::Running);
        let futex = format!(
            "{} 0x7f00 0x80 0x0 0x0 0x0 0x0 0x7ffc 0x7f01\n",
            libc::SYS_futex
        );
        assert_eq!(parse_activity(&futex), Activity::FutexWait);
        assert_eq!(
            parse_activity("0 0x0 0x7ffd 0x400 0x0 0x0 0x0 0x7ffc 0x7f01\n"),
            Activity::Blocked(0)
        );
        assert_eq!(parse_activity("-1 0x7ffc 0x7f01\n"), Activity::Blocked(-1));
        assert_eq!(parse_activity(""), Activity::Unknown);
    }

    #[test]
    #[allow(
        clippy::disallowed_methods,
        reason = "a real parked thread, outside any simulation"
    )]
    fn a_parked_thread_reads_as_a_futex_wait() {
        let (sender, receiver) = std::sync::mpsc::channel();
        let parked = std::thread::spawn(move || {
            sender.send(kernel_thread_id()).expect("the test waits");
            std::thread::park();
        });
        let id = receiver.recv().expect("the thread says its id");
        // The thread parks just after it sends: wait for the kernel to see it there.
        let seen = (0..1000)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                activity(id)
            })
            .find(|seen| *seen == Activity::FutexWait);
        parked.thread().unpark();
        parked.join().expect("the thread ends");
        assert_eq!(seen, Some(Activity::FutexWait));
        assert_eq!(activity(None), Activity::Unknown);
    }

    #[test]
    fn the_stuck_list_keeps_each_test_with_its_seed_and_multi_line_report() {
        let list = encode_stuck("", "a::spins", 8, "seed 8 is stuck\nReproduce with: x");
        let list = encode_stuck(&list, "b::loops", 3, "seed 3 is stuck");
        let entry = |test, seed, report| StuckEntry { test, seed, report };
        assert_eq!(
            decode_stuck(&list),
            [
                entry("a::spins", 8, "seed 8 is stuck\nReproduce with: x"),
                entry("b::loops", 3, "seed 3 is stuck")
            ]
        );
        assert_eq!(decode_stuck(""), []);
    }

    #[test]
    fn a_plain_test_run_goes_again_with_the_stuck_test_added_to_the_list() {
        let earlier = encode_stuck("", "a::spins", 1, "first");
        let lookup = |name: &str| (name == "CRASHTEST_STUCK").then(|| earlier.clone());
        let again = run_again(Some(&caller("b::loops")), 2, "second", &lookup).unwrap();
        assert_eq!(again.test, "b::loops");
        let entry = |test, seed, report| StuckEntry { test, seed, report };
        assert_eq!(
            decode_stuck(&again.stuck),
            [
                entry("a::spins", 1, "first"),
                entry("b::loops", 2, "second")
            ]
        );
        let fresh = run_again(Some(&caller("a::spins")), 1, "first", &|_| None).unwrap();
        assert_eq!(decode_stuck(&fresh.stuck), [entry("a::spins", 1, "first")]);
    }

    #[test]
    fn a_worker_an_unknown_test_or_a_test_stuck_before_aborts_instead() {
        let worker = |name: &str| (name == "CRASHTEST_RESULTS").then(|| "r.jsonl".to_owned());
        assert!(run_again(Some(&caller("a::spins")), 1, "r", &worker).is_none());
        assert!(run_again(None, 1, "r", &|_| None).is_none());
        let earlier = encode_stuck("", "a::spins", 1, "first");
        let again = |name: &str| (name == "CRASHTEST_STUCK").then(|| earlier.clone());
        assert!(run_again(Some(&caller("a::spins")), 1, "r", &again).is_none());
    }
}
