//! Branching one run into many futures, paying for its prefix once.
//!
//! [`branch`] runs `(seed, path)` up to a virtual time and there draws `k` futures. On Unix
//! the simulation stops at a fork point (`crashtest_core::Config::fork_at`) and the process
//! `fork()`s: each child re-draws the future from its own sub-seed, runs it to the end and
//! sends back a [`Digest`] through a pipe; the parent takes the last sub-seed itself. The
//! prefix runs once, the futures run side by side on the machine's cores, and each child
//! shares the prefix's memory copy-on-write.
//!
//! Why `fork` and not a cached prefix: the simulation owns tasks whose futures are the
//! program's own (`async` state machines, user allocations, `Rc` graphs), which cannot be
//! cloned or serialized; the process image can. `fork` happens between two polls, on the
//! one thread that runs the world: no task is running and the simulator holds no borrow.
//! The child has only that thread, which is all a simulation uses (the guards refuse OS
//! threads inside one), and it leaves by `_exit` without unwinding into its parent's stack.
//! A branch is exactly the timeline that `(seed, path + (at, sub_seed))` names: a child and
//! a fresh replay re-draw at the same iteration of the world's loop from the same root, so
//! every branch is replayable in a fresh process (`CRASHTEST_EXPLORE`).
//!
//! Elsewhere (no `fork`) each future replays the prefix: the same results, at the cost of
//! `k` prefixes.

use std::future::Future;
use std::time::Duration;

use crashtest_core::coverage::SiteKind;
use crashtest_core::explore::Reached;
use crashtest_core::{Config, RunFailure, RunSummary, explore};
use serde::{Deserialize, Serialize};

use crate::Sim;

/// What one run did, as a guided search reads it: small enough to cross a pipe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    /// The run's fingerprint.
    pub fingerprint: u64,
    /// Virtual time when it ended, in nanoseconds.
    pub elapsed_ns: u64,
    /// What failed, in one line; `None` if it passed.
    pub failure: Option<String>,
    /// Every coverage site it reached: `kind name at file:line`, times reached, times fired.
    pub sites: Vec<(String, u64, u64)>,
    /// The state abstractions' values it reached (`crashtest_core::explore::state`): name,
    /// value hash, and the virtual time in nanoseconds when the run first reached it.
    pub states: Vec<(String, u64, u64)>,
}

impl Digest {
    /// The digest of a finished run and the states it declared.
    pub fn of(result: &Result<RunSummary, Box<RunFailure>>, states: &[Reached]) -> Digest {
        let (summary, failure) = match result {
            Ok(summary) => (summary, None),
            Err(failure) => (&failure.summary, Some(failure.kind.to_string())),
        };
        Digest {
            fingerprint: summary.fingerprint,
            elapsed_ns: u64::try_from(summary.elapsed.as_nanos()).unwrap_or(u64::MAX),
            failure,
            sites: summary
                .coverage
                .iter()
                .filter(|(key, counts)| counts.reached > 0 || key.kind == SiteKind::Buggify)
                .map(|(key, counts)| (key.to_string(), counts.reached, counts.fired))
                .collect(),
            states: states
                .iter()
                .map(|reached| (reached.name.to_owned(), reached.value, reached.first_ns))
                .collect(),
        }
    }

    /// A digest for a branch whose process died before it reported.
    fn lost(why: String) -> Digest {
        Digest {
            fingerprint: 0,
            elapsed_ns: 0,
            failure: Some(why),
            sites: Vec::new(),
            states: Vec::new(),
        }
    }
}

/// The configuration that runs the timeline `path` names.
pub fn with_path(config: Config, path: &[(u64, u64)]) -> Config {
    path.iter().fold(config, |config, &(at_ns, sub_seed)| {
        config.explore_from(Duration::from_nanos(at_ns), sub_seed)
    })
}

/// Runs `(seed, config)` on a fresh thread and digests it.
pub fn run_one<F, Fut>(seed: u64, config: Config, body: &F) -> Digest
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    crashtest_guard::on_fresh_thread(|| {
        let (result, states) = explore::observe(|| Sim::with_config(seed, config).run(body()));
        Digest::of(&result, &states)
    })
}

/// Runs `seed` along `path` up to `at_ns` of virtual time, then one future for each of
/// `sub_seeds` (at most `jobs` at once), and returns their digests in the order of
/// `sub_seeds`. Each is the run of `(seed, path + [(at_ns, sub_seed)])`. `at_ns` must not be
/// earlier than the path's last point. A run that ends before `at_ns` never branches: every
/// future is then that run.
///
/// ```
/// use crashtest::runner::branch;
/// let body = || async {
///     for _ in 0..20 {
///         let ms = crashtest::rand::rng().with(|r| r.range_inclusive(1, 10));
///         crashtest::time::sleep(std::time::Duration::from_millis(ms)).await;
///     }
/// };
/// let config = crashtest::Config::default();
/// let futures = branch::branch(7, config.clone(), &[], 40_000_000, &[1, 2, 3], 2, &body);
/// let replayed = branch::run_one(7, branch::with_path(config, &[(40_000_000, 2)]), &body);
/// assert_eq!(futures[1], replayed, "a branch is the timeline its path names");
/// assert_ne!(futures[0].fingerprint, futures[1].fingerprint);
/// ```
pub fn branch<F, Fut>(
    seed: u64,
    config: Config,
    path: &[(u64, u64)],
    at_ns: u64,
    sub_seeds: &[u64],
    jobs: usize,
    body: &F,
) -> Vec<Digest>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let config = with_path(config, path);
    if sub_seeds.is_empty() {
        return Vec::new();
    }
    #[cfg(unix)]
    {
        forked::branch(seed, config, at_ns, sub_seeds, jobs.max(1), body)
    }
    #[cfg(not(unix))]
    {
        let _ = jobs;
        sub_seeds
            .iter()
            .map(|&sub| {
                let at = Duration::from_nanos(at_ns);
                run_one(seed, config.clone().explore_from(at, sub), body)
            })
            .collect()
    }
}

#[cfg(unix)]
mod forked {
    //! The `fork` behind [`super::branch`].

    use std::cell::Cell;
    use std::future::Future;
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crashtest_core::{Config, explore};

    use super::Digest;
    use crate::Sim;

    thread_local! {
        /// In a branch's process, the pipe its digest goes back through.
        static REPORT_TO: Cell<Option<i32>> = const { Cell::new(None) };
    }

    /// A branch's process, running.
    struct Child {
        index: usize,
        pid: libc::pid_t,
        pipe: OwnedFd,
    }

    pub(super) fn branch<F, Fut>(
        seed: u64,
        config: Config,
        at_ns: u64,
        sub_seeds: &[u64],
        jobs: usize,
        body: &F,
    ) -> Vec<Digest>
    where
        F: Fn() -> Fut + Sync,
        Fut: Future<Output = ()> + 'static,
    {
        let digests: Arc<Mutex<Vec<Option<Digest>>>> =
            Arc::new(Mutex::new(vec![None; sub_seeds.len()]));
        let (last, forked) = sub_seeds.split_last().expect("at least one sub-seed");
        let (last, forked) = (*last, forked.to_vec());
        let reached = Arc::new(Mutex::new(false));
        let still_running: Arc<Mutex<Vec<Child>>> = Arc::default();
        let hook = {
            let digests = digests.clone();
            let reached = reached.clone();
            let still_running = still_running.clone();
            Arc::new(move || {
                *crate::lock(&reached) = true;
                match fork_all(&forked, jobs, &digests) {
                    Ok(sub_seed) => Some(sub_seed),
                    Err(running) => {
                        *crate::lock(&still_running) = running;
                        Some(last)
                    }
                }
            })
        };
        let config = config.fork_at(Duration::from_nanos(at_ns), hook);
        let own = crashtest_guard::on_fresh_thread(|| {
            let (result, states) = explore::observe(|| Sim::with_config(seed, config).run(body()));
            let digest = Digest::of(&result, &states);
            if let Some(fd) = REPORT_TO.get() {
                report_and_exit(fd, &digest);
            }
            digest
        });
        for child in std::mem::take(&mut *crate::lock(&still_running)) {
            let digest = collect(child.pid, child.pipe);
            crate::lock(&digests)[child.index] = Some(digest);
        }
        let mut digests = std::mem::take(&mut *crate::lock(&digests));
        let branched = *crate::lock(&reached);
        let count = digests.len();
        digests[count - 1] = Some(own.clone());
        digests
            .into_iter()
            .map(|digest| match digest {
                Some(digest) => digest,
                // The run ended before the fork point: every future is that run.
                None if !branched => own.clone(),
                None => Digest::lost("the branch's process reported nothing".into()),
            })
            .collect()
    }

    /// Forks a process for each of `sub_seeds`, at most `jobs` at a time while this one
    /// waits. Returns `Ok(sub_seed)` in a child; in the parent, `Err` with the
    /// children still running, which run beside the parent's own future.
    fn fork_all(
        sub_seeds: &[u64],
        jobs: usize,
        digests: &Mutex<Vec<Option<Digest>>>,
    ) -> Result<u64, Vec<Child>> {
        let mut running: Vec<Child> = Vec::new();
        for (index, &sub_seed) in sub_seeds.iter().enumerate() {
            if running.len() >= jobs {
                let child = running.remove(0);
                let digest = collect(child.pid, child.pipe);
                crate::lock(digests)[child.index] = Some(digest);
            }
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors pipe writes.
            if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
                panic!(
                    "crashtest: cannot make a pipe to branch: {}",
                    std::io::Error::last_os_error()
                );
            }
            // SAFETY: fork on the world's thread, between two polls; the child touches only
            // this thread's state and leaves by `_exit` (see the module comment). The
            // program's own fork handlers do not run: a replay of the branch never forks.
            let pid = crashtest_guard::unseen_fork(|| unsafe { libc::fork() });
            match pid {
                -1 => panic!(
                    "crashtest: cannot fork to branch: {}",
                    std::io::Error::last_os_error()
                ),
                0 => {
                    // SAFETY: the read end is this process's own copy, closed once; the
                    // read ends of earlier siblings close at this process's `_exit`.
                    unsafe { libc::close(fds[0]) };
                    REPORT_TO.set(Some(fds[1]));
                    return Ok(sub_seed);
                }
                pid => {
                    // SAFETY: the parent owns the read end from here and keeps no write end
                    // open, so the child's exit ends the stream.
                    unsafe { libc::close(fds[1]) };
                    // SAFETY: `fds[0]` is the pipe's open read end, owned by nothing else.
                    let pipe = unsafe { OwnedFd::from_raw_fd(fds[0]) };
                    running.push(Child { index, pid, pipe });
                }
            }
        }
        Err(running)
    }

    /// Reads a child's digest to the end of its pipe, then reaps it.
    fn collect(pid: libc::pid_t, pipe: OwnedFd) -> Digest {
        let mut bytes = Vec::new();
        let read = std::fs::File::from(pipe).read_to_end(&mut bytes);
        let mut status = 0;
        // SAFETY: `pid` is this process's child, not yet reaped.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        match (read, serde_json::from_slice::<Digest>(&bytes)) {
            (Ok(_), Ok(digest)) => digest,
            _ => Digest::lost(format!(
                "the branch's process died without reporting (wait status {status})"
            )),
        }
    }

    /// In a branch's process: writes the digest and leaves without running destructors or
    /// exit handlers, which belong to the parent.
    fn report_and_exit(fd: i32, digest: &Digest) -> ! {
        // SAFETY: `fd` is the write end this process was given at the fork, open and owned.
        let mut pipe = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let code = match serde_json::to_vec(digest).map(|bytes| pipe.write_all(&bytes)) {
            Ok(Ok(())) => 0,
            _ => 1,
        };
        // SAFETY: `_exit` ends the process at once; nothing of it is used after.
        unsafe { libc::_exit(code) }
    }
}
