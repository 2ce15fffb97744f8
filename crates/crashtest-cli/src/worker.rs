//! One worker process: a test executable running a batch of seeds, watched from outside.
//!
//! The worker appends one line per finished seed to a results file of its own; the watcher
//! tails that file while the process runs, so every finished seed reaches the caller at once
//! and survives whatever happens to the process next. A worker that goes `silence` without
//! finishing a seed is killed (hung). Its output goes to a log file, not a pipe (a pipe
//! nobody drains would block it), and the log's end explains a crash.
//!
//! Each worker runs in a process group of its own, so that Ctrl-C in the terminal reaches
//! only the tool, which then stops its workers itself instead of mistaking them for crashes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use crashtest_protocol::{Status, env};

use crate::results::SeedResult;

use crate::seeds::SeedRange;
use crate::target::Target;

/// How often a running worker's results file is read.
const TAIL_PERIOD: Duration = Duration::from_millis(20);
/// How much of a worker's output a crash report keeps.
const OUTPUT_TAIL_BYTES: u64 = 2048;

/// What one worker runs.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(crate) seeds: SeedRange,
    /// Extra protocol variables (`CRASHTEST_MASK`, `CRASHTEST_EXPLORE`, `CRASHTEST_TRACE`).
    pub(crate) env: Vec<(&'static str, String)>,
    /// Where the worker writes its results; its log goes beside it.
    pub(crate) results: PathBuf,
    /// Kill the worker after this much wall time without a finished seed.
    pub(crate) silence: Duration,
}

/// How a worker ended.
#[derive(Debug)]
pub(crate) enum End {
    /// It exited by itself.
    Exited(ExitStatus),
    /// It went silent for too long and was killed.
    Hung,
    /// The caller asked it to stop, and it was killed.
    Stopped,
}

/// The wall clock, for timeouts and rates only: nothing simulated reads it.
#[allow(clippy::disallowed_methods)]
pub(crate) fn now() -> Instant {
    Instant::now()
}

impl Job {
    /// The worker's log file (its stdout and stderr).
    pub(crate) fn log(&self) -> PathBuf {
        self.results.with_extension("log")
    }

    /// Runs the worker to its end, handing each results line to `on_line` as it appears.
    /// `stop` kills the worker early.
    pub(crate) fn run(
        &self,
        target: &Target,
        stop: &AtomicBool,
        mut on_line: impl FnMut(String),
    ) -> anyhow::Result<End> {
        File::create(&self.results)
            .with_context(|| format!("cannot create {}", self.results.display()))?;
        let log = File::create(self.log())
            .with_context(|| format!("cannot create {}", self.log().display()))?;
        let mut command = target.command();
        // The user's shell must not change what a worker runs.
        for name in env::WORKER {
            command.env_remove(name);
        }
        command
            .env(env::SEED_START, self.seeds.start.to_string())
            .env(env::SEEDS, self.seeds.len().to_string())
            .env(env::THREADS, "1")
            .env(env::CHECK_DETERMINISM, "0")
            .env(env::STOP_ON_FAILURE, "0")
            .env(env::RESULTS, &self.results)
            .env(env::COMMIT, crate::header::worker_commit(target))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("cannot share the worker log")?)
            .stderr(log);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        #[cfg(target_os = "linux")]
        die_with_this_thread(&mut command);
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", target.exe.display()))?;
        let mut tail = crate::results::Tail::open(&self.results)
            .with_context(|| format!("cannot read {}", self.results.display()))?;
        let mut last_progress = now();
        let end = loop {
            let lines = tail
                .read_lines()
                .context("cannot read a worker's results")?;
            if !lines.is_empty() {
                last_progress = now();
            }
            lines.into_iter().for_each(&mut on_line);
            if let Some(status) = child.try_wait().context("cannot wait for a worker")? {
                break End::Exited(status);
            }
            if stop.load(Ordering::Relaxed) {
                kill(&mut child);
                break End::Stopped;
            }
            if last_progress.elapsed() > self.silence {
                kill(&mut child);
                break End::Hung;
            }
            std::thread::sleep(TAIL_PERIOD);
        };
        tail.read_lines()
            .context("cannot read a worker's results")?
            .into_iter()
            .for_each(on_line);
        Ok(end)
    }

    /// The end of the worker's output, for a crash report.
    pub(crate) fn output_tail(&self) -> String {
        read_tail(&self.log(), OUTPUT_TAIL_BYTES)
    }

    /// The results line of `seed`, which the worker never wrote, now that it ended with `end`:
    /// `status` (crashed or hung), with the end of the worker's output as the failure. A
    /// worker that exited cleanly without the line left through `std::process::exit` inside
    /// the test (the target answered as a `#[crashtest::test]`, which writes a line for
    /// every seed it finishes): as much a crash as an abort. A hung seed's failure says first
    /// that no result came within the timeout, which the line records, so that a sweep
    /// resumed with a longer one runs the seed again.
    pub(crate) fn lost_seed(
        &self,
        target: &Target,
        seed: u64,
        end: &End,
        status: Status,
    ) -> SeedResult {
        let mut output = self.output_tail();
        if let End::Exited(exit) = end {
            output.push('\n');
            output.push_str(&crashtest_protocol::results::worker_exited(exit));
            if exit.success() {
                output.push_str(
                    " before the seed finished: something in the test called std::process::exit",
                );
            }
        }
        if status != Status::Hung {
            return SeedResult::lost(&target.test, seed, status, output);
        }
        let timeout = crate::duration::nanos(self.silence);
        let mut said = crashtest_protocol::results::worker_hung(crate::duration::short(timeout));
        let output = output.trim_start();
        if !output.is_empty() {
            said.push_str("; its output ended with:\n");
            said.push_str(output);
        }
        SeedResult {
            seed_timeout_ns: Some(timeout),
            ..SeedResult::lost(&target.test, seed, status, said)
        }
    }

    /// Removes the worker's files once everything in them has been taken.
    pub(crate) fn clean_up(&self) {
        let _ = std::fs::remove_file(&self.results);
        let _ = std::fs::remove_file(self.log());
    }
}

/// Makes the worker die with the thread that starts it, which lives until the worker ends:
/// a sweep killed outright (SIGKILL, an OOM kill) cannot stop its workers itself, and its
/// own process group keeps them from the terminal's signals, so without this they would run
/// on, writing results nobody reads and holding the CPU.
#[cfg(target_os = "linux")]
fn die_with_this_thread(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let sweep = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only prctl and
    // getppid, which are async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The sweep died between fork and prctl: no signal will come, so do not start.
            if u32::try_from(libc::getppid()) != Ok(sweep) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The last `bytes` bytes of a file, from a line start where possible.
fn read_tail(path: &Path, bytes: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(bytes);
    let mut text = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut text).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&text).into_owned();
    let text = match (start > 0, text.find('\n')) {
        (true, Some(newline)) => text[newline + 1..].to_owned(),
        _ => text,
    };
    text.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_tail_starts_at_a_line() {
        let dir = std::env::temp_dir().join(format!("crashtest-cli-worker-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.log");
        std::fs::write(&path, "first line\nsecond line\nthird\n").unwrap();
        assert_eq!(read_tail(&path, 14), "third");
        assert_eq!(read_tail(&path, 1000), "first line\nsecond line\nthird");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
