//! Runs of one seed each (replay, minimize, explore, determinism checks), several at once.
//!
//! Each run is a worker of one seed with its own files in a scratch directory that is
//! removed when the runs are done. Results come back in the order asked, whatever order the
//! processes finish in, so that every command's output is the same from run to run.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;

use crate::results::SeedResult;
use crate::seeds::SeedRange;
use crate::target::Target;
use crate::worker::{End, Job};
use crashtest_protocol::Status;

/// A directory of temporary files, removed on drop.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh directory under the system temp directory.
    pub(crate) fn new() -> anyhow::Result<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "crashtest-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Scratch { dir })
    }

    /// A path inside the directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One seed to run, with the protocol variables that shape the run.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) seed: u64,
    pub(crate) env: Vec<(&'static str, String)>,
}

/// Runs `requests` on up to `jobs` processes at once; each seed's results line (`crashed` or
/// `hung` when its process died first), in request order.
pub(crate) fn run_all(
    target: &Target,
    requests: &[Request],
    jobs: u64,
    silence: Duration,
    scratch: &Scratch,
) -> anyhow::Result<Vec<SeedResult>> {
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<anyhow::Result<SeedResult>>>> =
        Mutex::new((0..requests.len()).map(|_| None).collect());
    let never = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(requests.len() as u64) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(request) = requests.get(index) else {
                        break;
                    };
                    let outcome = run_one(target, request, silence, scratch, index, &never);
                    lock(&outcomes)[index] = Some(outcome);
                }
            });
        }
    });
    outcomes
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|o| o.expect("every request ran"))
        .collect()
}

/// Runs one request (and is the whole of `run_all` for one).
pub(crate) fn run_one(
    target: &Target,
    request: &Request,
    silence: Duration,
    scratch: &Scratch,
    index: usize,
    stop: &AtomicBool,
) -> anyhow::Result<SeedResult> {
    let job = Job {
        seeds: SeedRange::single(request.seed),
        env: request.env.clone(),
        results: scratch.path(&format!("run-{index}.jsonl")),
        silence,
    };
    let mut line = None;
    let end = job.run(target, stop, |text| line = Some(text))?;
    let result = match line {
        Some(text) => serde_json::from_str::<SeedResult>(&text).with_context(|| {
            format!("the test wrote a results line this tool cannot read: {text}")
        })?,
        None => {
            let status = match end {
                End::Hung => Status::Hung,
                End::Exited(_) | End::Stopped => Status::Crashed,
            };
            job.lost_seed(target, request.seed, &end, status)
        }
    };
    job.clean_up();
    Ok(result)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
