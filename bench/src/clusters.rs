//! The whole-cluster workloads users spend their time in: the repository's examples, run seed
//! after seed as a sweep runs them, measured in seeds per CPU-second.
//!
//! Each seed runs on a fresh OS thread (`crashtest::on_fresh_thread`), as `#[crashtest::test]`
//! and the sweep runner run every seed, so no seed inherits a warm thread's buffers and
//! raft-rs's `rand::thread_rng()` is seeded by the simulation. The rate divides by the
//! process's CPU time (every thread's user and system time, `CLOCK_PROCESS_CPUTIME_ID`), not
//! wall time: on a shared machine the wall clock counts other people's work too.
//!
//! Every seed must pass: these are correct programs, and a failure is a bug to fix, not a
//! figure to report.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use crashtest::Sim;

/// A cluster example the benchmark can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Example {
    /// examples/raft-kv: three Raft servers over TCP and disk, the linearizability workload.
    RaftKv,
    /// examples/redb-crash: redb committing, crashing and recovering on the simulated disk.
    RedbCrash,
    /// examples/raft-rs-cluster: raft-rs, three members under a nemesis, then liveness.
    RaftRsCluster,
}

impl Example {
    /// Seeds one run of the workload sweeps (seeds `0..seeds`): one to two CPU-seconds each
    /// in a release build, as first measured.
    pub(crate) fn seeds(self) -> u64 {
        match self {
            Example::RaftKv => 200,
            Example::RedbCrash => 1_000,
            Example::RaftRsCluster => 500,
        }
    }

    pub(crate) fn what(self) -> &'static str {
        match self {
            Example::RaftKv => {
                "examples/raft-kv, default setup (3 servers, linearizability workload, strong \
                 crash model): seeds 0..200, each on a fresh thread"
            }
            Example::RedbCrash => {
                "examples/redb-crash, redb's own hardware model (3 crashes, up to 6 \
                 transactions a boot): seeds 0..1000, each on a fresh thread"
            }
            Example::RaftRsCluster => {
                "examples/raft-rs-cluster, default plan (3 members, 15 s of nemesis over a \
                 swarm network, 20 s to converge): seeds 0..500, each on a fresh thread"
            }
        }
    }

    /// Runs seed `seed` of the workload to completion on a fresh thread and returns the
    /// virtual time it covered and the run's fingerprint; panics if the seed fails.
    pub(crate) fn run_seed(self, seed: u64) -> (Duration, u64) {
        crashtest::on_fresh_thread(move || {
            let result = match self {
                Example::RaftKv => Sim::new(seed).run(raft_kv::run(raft_kv::Setup::default())),
                Example::RedbCrash => Sim::new(seed).run(async {
                    let plan = redb_crash::Plan {
                        torn_sector_garbage: false,
                        ..redb_crash::Plan::default()
                    };
                    let ledger = redb_crash::crash_and_recover(plan).await;
                    assert!(ledger.checked_boots() >= 1, "redb never booted to a check");
                }),
                Example::RaftRsCluster => {
                    let outcome = Rc::new(RefCell::new(None));
                    let keep = outcome.clone();
                    let result = Sim::new(seed).run(async move {
                        let plan = raft_rs_cluster::Plan::default();
                        *keep.borrow_mut() = Some(raft_rs_cluster::run(plan).await);
                    });
                    if result.is_ok() {
                        let outcome = outcome.take().expect("a passing run has an outcome");
                        assert!(outcome.terms_with_leader >= 1, "no member ever led");
                    }
                    result
                }
            };
            match result {
                Ok(summary) => (summary.elapsed, summary.fingerprint),
                Err(failure) => panic!("{self:?} seed {seed} failed: {failure}"),
            }
        })
    }
}

/// CPU time this process has used so far, on every thread, live or finished.
pub(crate) fn process_cpu_time() -> Duration {
    crashtest::runner::usage::process_cpu_time().expect("the benchmark measures CPU time on Unix")
}

/// examples/tonic-kv, run where its tokio is the stand-in: its own workspace. Sets the
/// stand-in up (`crashtest tokio setup`, which is quick when it is current), then runs that
/// workspace's `seeds` benchmark, which measures itself in its own process and prints one
/// JSON line; returns that measurement.
pub(crate) fn tonic_kv() -> crate::workloads::Measured {
    /// The `seeds` benchmark's line (examples/tonic-kv/benches/seeds.rs).
    #[derive(serde::Deserialize)]
    struct Line {
        seeds: u64,
        wall_s: f64,
        cpu_s: f64,
        virtual_s: f64,
        fingerprints: String,
        peak_rss_mib: Option<f64>,
    }

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/tonic-kv");
    let manifest = example.join("Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The nested workspace builds in its own target directory, where its manifest's
    // `[patch]` finds the stand-in: a target directory set for this workspace is not its.
    let run = |command: &mut std::process::Command, what: &str| {
        let output = command
            .env_remove("CARGO_TARGET_DIR")
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap_or_else(|error| panic!("{what}: cannot run cargo: {error}"));
        assert!(
            output.status.success(),
            "{what} failed (its errors are above)"
        );
        String::from_utf8(output.stdout).expect("cargo prints UTF-8")
    };
    run(
        std::process::Command::new(&cargo)
            .current_dir(&root)
            .args(["run", "--release", "-q", "-p", "crashtest-cli", "--"])
            .args(["tokio", "setup", "--manifest-path"])
            .arg(&manifest)
            .arg("--dir")
            .arg(example.join("target/crashtest-tokio")),
        "crashtest tokio setup on examples/tonic-kv",
    );
    let printed = run(
        std::process::Command::new(&cargo)
            .args(["bench", "-q", "--bench", "seeds", "--manifest-path"])
            .arg(&manifest),
        "examples/tonic-kv's seeds benchmark",
    );
    let line = printed
        .lines()
        .rev()
        .find(|line| line.starts_with('{'))
        .unwrap_or_else(|| panic!("the seeds benchmark printed no JSON line:\n{printed}"));
    let line: Line = serde_json::from_str(line)
        .unwrap_or_else(|error| panic!("the seeds benchmark's line {line:?}: {error}"));
    assert_eq!(
        line.seeds, 300,
        "the seeds benchmark runs the seeds `what` names"
    );
    crate::workloads::Measured {
        wall: Duration::from_secs_f64(line.wall_s),
        cpu: Duration::from_secs_f64(line.cpu_s),
        virtual_time: Duration::from_secs_f64(line.virtual_s),
        units: line.seeds,
        unit: "seeds/CPU-s",
        what: "examples/tonic-kv through the tokio stand-in (a tonic and an axum server, \
               tonic and reqwest clients, under kills, partitions and clogs): seeds 0..300, \
               each on a fresh thread, in its own workspace's process",
        per_cpu: true,
        fingerprints: Some(
            u64::from_str_radix(&line.fingerprints, 16).expect("the digest is hexadecimal"),
        ),
        peak_rss_mib: line.peak_rss_mib,
    }
}
