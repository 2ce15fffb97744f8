//! `crashtest sweep`: many seeds of one test on worker processes.
//!
//! The results file is the sweep's whole state. Workers run batches of contiguous seeds
//! and write to files of their own (in `<results>.workers/`); the sweep merges each line
//! into the results file as soon as it appears, so an interrupt, a killed sweep or a crashed
//! worker loses at most the seeds that were running. `--resume` reads the results file,
//! takes in whatever finished lines stray worker files still hold, and runs only the seeds
//! missing: a sweep killed halfway and resumed ends with the same results as one that ran
//! straight through.
//!
//! A worker that dies (crash, abort, exit, watchdog) or goes silent costs only the seed it was
//! running, which is recorded as `crashed` or `hung` ([`crate::pool`]). A hung seed's line
//! records the `--seed-timeout` it was given; `--resume` with a longer one runs it again, since
//! a seed that was only slow deserves the time it is now given.
//!
//! The file starts with a header ([`crate::header`]) and is locked while a sweep writes it
//! ([`crate::lock`]): a second sweep on it is refused, and so is a resume by a sweep of other
//! code, environment or seeds.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use anyhow::{Context, bail};

use crashtest_protocol::{Header, Status};

use crate::cli::SweepArgs;
use crate::determinism::Finished;
use crate::pool::{Driver, Message, Queue, Sizing};
use crate::progress::Progress;
use crate::results::{self, SeedResult};
use crate::seeds::{self, SeedRange};
use crate::summary::Summary;
use crate::target::Target;
use crate::worker::now;

/// Failures printed as they happen; the rest wait for the summary.
const LIVE_FAILURES: usize = 20;

/// Set by Ctrl-C.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Runs the sweep and prints its summary.
pub(crate) fn run(args: &SweepArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let range = match args.shard {
        None => args.seeds,
        Some(shard) => match args.seeds.shard(shard) {
            Some(part) => part,
            None => {
                println!(
                    "shard {}/{} of seeds {} holds no seeds: nothing to do",
                    shard.index, shard.count, args.seeds
                );
                return Ok(ExitCode::SUCCESS);
            }
        },
    };
    let jobs = args.jobs.unwrap_or_else(crate::cores);
    let header = crate::header::for_sweep(&target, args.seeds, args.shard);
    // Workers run in their package's directory, not the tool's: a relative path would name
    // another file there.
    let out = std::path::absolute(&args.out)
        .with_context(|| format!("cannot resolve the results path {}", args.out.display()))?;
    let existing = if args.resume {
        Existing::Resume
    } else if args.replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let mut sweep = Sweep::open(
        &target,
        range,
        &out,
        existing,
        &header,
        args.target.seed_timeout,
    )?;
    if args.save_failures {
        // Each worker's runner appends its failing seeds to the test's regression file.
        sweep
            .worker_env
            .push((crashtest_protocol::env::SAVE_FAILURES, "1".to_owned()));
    }
    let done: Vec<u64> = sweep.done.iter().copied().collect();
    let left = seeds::batches(range, &done, u64::MAX);
    let sizing = match args.batch {
        Some(batch) => Sizing::fixed(batch),
        None => Sizing::learned(range.len() - done.len() as u64, jobs),
    };
    println!(
        "sweep of {} over seeds {range}{}: {} to run, {} already done; {jobs} workers; results in {}",
        target.test,
        args.shard
            .map(|s| format!(" (shard {}/{} of {})", s.index, s.count, args.seeds))
            .unwrap_or_default(),
        range.len() - done.len() as u64,
        done.len(),
        args.out.display()
    );
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
    let started = now();
    let stop = sweep.run_batches(
        &target,
        Queue::new(left, sizing),
        jobs,
        args.stop_on_failure,
        args.time_budget,
        args.target.seed_timeout,
    )?;
    let elapsed = started.elapsed();
    let summary = &sweep.summary;
    println!(
        "{} (this run: {} in {:.2}s, {:.1} seeds/s, {jobs} workers)",
        summary.counts_line(),
        crate::summary::counted(sweep.ran, "seed"),
        elapsed.as_secs_f64(),
        sweep.ran as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    print!("{}", summary.failures_text());
    if let Some(refusals) = summary.refusals_text() {
        println!("{refusals}");
    }
    if let Some((&seed, _)) = summary.failures.first_key_value() {
        println!(
            "reproduce the lowest: {}",
            target.reproduce(&crashtest_protocol::reproduce::seed(seed))
        );
        println!("replay it:   {}", target.follow_up("replay", seed));
        println!("minimize it: {}", target.follow_up("minimize", seed));
        println!("view it:     {}", target.follow_up("view", seed));
    }
    print!("{}", summary.coverage_text());
    let missing = range.len() - sweep.done.len() as u64;
    if let Some(reason) = stop.filter(|_| missing > 0) {
        println!(
            "stopped ({reason}): {missing} of {} seeds not run; run the same command with --resume to continue",
            range.len()
        );
    }
    let mut nondeterministic = 0;
    if let (Some(sample), None | Some(Stop::Failure | Stop::Budget)) =
        (args.check_determinism, stop)
    {
        nondeterministic = crate::determinism::check(
            &target,
            &sweep.finished,
            sample,
            jobs,
            args.target.seed_timeout,
        )?;
    }
    Ok(if stop == Some(Stop::Interrupted) {
        ExitCode::from(130)
    } else if summary.failed() > 0 || nondeterministic > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Why a sweep stopped before running every seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Failure,
    Budget,
    Interrupted,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Failure => "--stop-on-failure",
            Stop::Budget => "time budget spent",
            Stop::Interrupted => "interrupted",
        })
    }
}

/// A sweep's results file and what it holds.
struct Sweep {
    /// Held while the sweep runs: no other sweep writes the file.
    _lock: crate::lock::Lock,
    test: String,
    range: SeedRange,
    out: File,
    workers: PathBuf,
    /// Seeds of the range with a result.
    done: BTreeSet<u64>,
    /// Counts, failures and coverage of the range's results (resumed and new).
    summary: Summary,
    /// Fingerprints of the range's finished runs, for the determinism check.
    finished: Vec<Finished>,
    /// Seeds run by this invocation.
    ran: u64,
    /// Protocol variables every worker gets (`CRASHTEST_SAVE_FAILURES`).
    worker_env: Vec<(&'static str, String)>,
}

/// What a sweep does with a results file that already holds results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Existing {
    /// Stop and say so: the results may be hours of work.
    Refuse,
    /// Continue that sweep, if it ran the same code, test, variables and seeds.
    Resume,
    /// Drop them and start the file anew.
    Replace,
}

impl Sweep {
    /// Locks and opens the results file at `path`, which a fresh sweep starts with `header`;
    /// `existing` says what to do with results already there. Seeds that hung under a shorter
    /// timeout than `seed_timeout` lose their lines and run again.
    fn open(
        target: &Target,
        range: SeedRange,
        path: &Path,
        existing: Existing,
        header: &Header,
        seed_timeout: Duration,
    ) -> anyhow::Result<Sweep> {
        let mut lock = crate::lock::acquire(path)?;
        if existing == Existing::Replace && path.exists() {
            // Under the lock, so that no other sweep is writing it.
            std::fs::write(path, "")
                .with_context(|| format!("cannot empty the results file {}", path.display()))?;
        }
        let resume = existing == Existing::Resume;
        let exists = path.metadata().is_ok_and(|m| m.len() > 0);
        let mut earlier = Vec::new();
        if exists {
            let mut other_test = None;
            let contents = results::read(path, |result| {
                if result.test != target.test {
                    other_test.get_or_insert(result.test);
                } else if range.contains(result.seed) {
                    earlier.push(result);
                }
            })?;
            if !resume {
                bail!(
                    "the results file {} already holds {} results: pass --resume to continue that sweep, --replace to start it anew, or choose another file with --out",
                    path.display(),
                    contents.results
                );
            }
            if let Some(other) = other_test.or_else(|| {
                contents
                    .header
                    .as_ref()
                    .filter(|h| h.test != target.test)
                    .map(|h| h.test.clone())
            }) {
                bail!(
                    "the results file {} holds results of test {other:?}, not {:?}: resume it with that test, or choose another file with --out",
                    path.display(),
                    target.test
                );
            }
            let Some(written) = &contents.header else {
                bail!(
                    "the results file {} has no header line (an older crashtest wrote it), so the commit, environment and shard of its {} results are unknown, and resuming could mix results of different code: sweep into another file with --out (`crashtest merge` still reads this one)",
                    path.display(),
                    contents.results
                );
            };
            let differences = crate::header::resume_differences(written, header);
            if !differences.is_empty() {
                bail!(
                    "cannot resume {}: this sweep differs from the one that wrote it:\n{}Results of different code, environment or seeds must not be mixed. Run the sweep as it was (that commit, those variables, the same --seeds and --shard), or sweep into another file with --out.{}",
                    path.display(),
                    crate::header::describe(&differences, "in the file", "now"),
                    crate::header::more_seeds_hint(written, header)
                );
            }
            if let Some(aside) = results::repair(path, &contents)? {
                eprintln!(
                    "crashtest: the last line of {} was cut short (the sweep was killed while writing it); it was moved to {} and its seed will run again",
                    path.display(),
                    aside.display()
                );
            }
            let timeout = crate::duration::nanos(seed_timeout);
            let again = |result: &SeedResult| {
                result.test == target.test
                    && range.contains(result.seed)
                    && hung_sooner(result, timeout)
            };
            let rerun = earlier.iter().filter(|r| again(r)).count();
            if rerun > 0 {
                let copy = results::copy_without(path, again)?;
                lock.replace(path, &copy)?;
                earlier.retain(|result| !again(result));
                eprintln!(
                    "crashtest: running again {} that hung under a --seed-timeout shorter than this one ({})",
                    crate::summary::counted(rerun as u64, "seed"),
                    crate::duration::short(timeout)
                );
            }
        }
        let mut out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open the results file {}", path.display()))?;
        if !exists {
            let line = serde_json::to_string(header).expect("a header serializes");
            writeln!(out, "{line}").context("cannot write to the results file")?;
        }
        let mut sweep = Sweep {
            _lock: lock,
            test: target.test.clone(),
            range,
            out,
            workers: worker_dir(path),
            done: BTreeSet::new(),
            summary: Summary::default(),
            finished: Vec::new(),
            ran: 0,
            worker_env: Vec::new(),
        };
        for result in earlier {
            if sweep.done.insert(result.seed) {
                sweep.take(&result);
            }
        }
        sweep.salvage()?;
        std::fs::create_dir_all(&sweep.workers)
            .with_context(|| format!("cannot create {}", sweep.workers.display()))?;
        Ok(sweep)
    }

    /// Takes the finished lines left in worker files by a sweep that was killed, then
    /// removes those files.
    fn salvage(&mut self) -> anyhow::Result<()> {
        let Ok(entries) = std::fs::read_dir(&self.workers) else {
            return Ok(());
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        let mut taken = 0;
        for file in files {
            let Ok(mut tail) = results::Tail::open(&file) else {
                continue;
            };
            for line in tail.read_lines().unwrap_or_default() {
                if let Ok(result) = serde_json::from_str::<SeedResult>(&line)
                    && result.test == self.test
                    && self.record(&line, result)?
                {
                    taken += 1;
                }
            }
        }
        if taken > 0 {
            eprintln!(
                "crashtest: took {taken} finished seeds from the worker files of the interrupted sweep"
            );
        }
        std::fs::remove_dir_all(&self.workers)
            .with_context(|| format!("cannot clear {}", self.workers.display()))
    }

    /// Appends a result unless its seed is outside the range or done; returns whether it
    /// was new.
    fn record(&mut self, line: &str, result: SeedResult) -> anyhow::Result<bool> {
        if !self.range.contains(result.seed) || !self.done.insert(result.seed) {
            return Ok(false);
        }
        self.out
            .write_all(format!("{line}\n").as_bytes())
            .context("cannot write to the results file")?;
        self.take(&result);
        Ok(true)
    }

    /// Counts a result of the range in the summary.
    fn take(&mut self, result: &SeedResult) {
        self.summary.add(result);
        if let Ok(fingerprint) = u64::from_str_radix(&result.fingerprint, 16) {
            self.finished.push(Finished {
                seed: result.seed,
                fingerprint,
                status: result.status,
            });
        }
    }

    /// Runs the seeds of `queue` in batches on `jobs` workers, merging results as they come;
    /// returns why it stopped early, if it did.
    fn run_batches(
        &mut self,
        target: &Target,
        queue: Queue,
        jobs: u64,
        stop_on_failure: bool,
        budget: Option<Duration>,
        silence: Duration,
    ) -> anyhow::Result<Option<Stop>> {
        let total = self.range.len();
        let mut progress = Progress::new(total, self.done.len() as u64);
        let stop = AtomicBool::new(false);
        let started = now();
        let mut why = None;
        let mut error = None;
        let mut failures_shown = 0;
        let (tx, rx) = mpsc::channel::<Message>();
        let dir = self.workers.clone();
        let worker_env = self.worker_env.clone();
        std::thread::scope(|scope| {
            for worker in 0..jobs {
                let tx = tx.clone();
                let (queue, stop, dir, env) = (&queue, &stop, &dir, &worker_env);
                scope.spawn(move || {
                    let driver = Driver {
                        target,
                        queue,
                        stop,
                        stop_on_failure,
                        tx,
                        dir,
                        worker,
                        silence,
                        env,
                    };
                    driver.run();
                });
            }
            drop(tx);
            loop {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(Message::Result(line, result)) => {
                        let failed = !result.passed();
                        if failed && failures_shown < LIVE_FAILURES {
                            failures_shown += 1;
                            progress.println(&format!(
                                "seed {} {}: {}",
                                result.seed,
                                result.status,
                                result.headline()
                            ));
                            if failures_shown == LIVE_FAILURES {
                                progress.println(
                                    "(further failures are in the results file and the summary)",
                                );
                            }
                        }
                        match self.record(&line, *result) {
                            Ok(true) => {
                                self.ran += 1;
                                progress.seed_done(failed);
                            }
                            Ok(false) => {}
                            Err(e) => {
                                error.get_or_insert(e);
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        if failed && stop_on_failure && why.is_none() {
                            why = Some(Stop::Failure);
                        }
                    }
                    Ok(Message::Error(e)) => {
                        error.get_or_insert(e);
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
                progress.tick();
                if why.is_none() && budget.is_some_and(|b| started.elapsed() >= b) {
                    why = Some(Stop::Budget);
                }
                if INTERRUPTED.load(Ordering::Relaxed) {
                    why = Some(Stop::Interrupted);
                }
                if why.is_some() || error.is_some() {
                    stop.store(true, Ordering::Relaxed);
                    queue.wake_all();
                }
            }
        });
        progress.finish();
        if let Some(e) = error {
            return Err(e);
        }
        let _ = std::fs::remove_dir_all(&self.workers);
        Ok(why)
    }
}

/// Whether `result` is a seed that hung under a shorter timeout than `timeout_ns`, or under
/// one its line does not record: the seed may only have been slow.
fn hung_sooner(result: &SeedResult, timeout_ns: u64) -> bool {
    result.status == Status::Hung
        && result
            .seed_timeout_ns
            .is_none_or(|given| given < timeout_ns)
}

/// `<results>.workers`: where the workers of a sweep writing `results` keep their files.
fn worker_dir(results: &Path) -> PathBuf {
    results::beside(results, ".workers")
}
