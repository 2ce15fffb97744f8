//! The command line: subcommands, their flags, and the help text users read.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use crashtest_protocol::env::{self, BranchPath};

use crate::seeds::{SeedRange, Shard};

/// Runs `#[crashtest::test]` tests across processes and takes failing seeds apart.
#[derive(Debug, Parser)]
#[command(name = "crashtest", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run many seeds of a test on worker processes; results as JSON lines, resumable.
    Sweep(SweepArgs),
    /// Print a seed's trace, one column per node.
    Replay(ReplayArgs),
    /// Find a 1-minimal set of injected faults with which a seed still fails.
    Minimize(MinimizeArgs),
    /// Replay a seed up to a time, then re-draw its future with fresh sub-seeds.
    Explore(ExploreArgs),
    /// Guided search: branch from the runs that did something new, until a failure.
    Hunt(HuntArgs),
    /// Write a seed's run as an HTML space-time diagram.
    View(ViewArgs),
    /// Combine results files of one test (shards, resumed runs, machines): failures, coverage,
    /// seeds run twice.
    Merge(MergeArgs),
    /// List the tests the selected executables hold.
    List(ListArgs),
    /// Run a tokio program unmodified in simulations: put crashtest's stand-in in place of
    /// tokio.
    Tokio(TokioArgs),
}

/// Which test executable to use: built by cargo (with these filters) or given with `--exe`.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct Select {
    /// Package whose tests to build (cargo's -p).
    #[arg(short, long, value_name = "SPEC")]
    pub(crate) package: Vec<String>,
    /// Integration test target to build (cargo's --test).
    #[arg(long = "test", value_name = "NAME")]
    pub(crate) test_target: Vec<String>,
    /// Build the package's library tests (cargo's --lib).
    #[arg(long)]
    pub(crate) lib: bool,
    /// Build in release mode (faster seeds).
    #[arg(long)]
    pub(crate) release: bool,
    /// Features to enable (cargo's --features).
    #[arg(long)]
    pub(crate) features: Option<String>,
    /// Path to the Cargo.toml to build.
    #[arg(long, value_name = "PATH")]
    pub(crate) manifest_path: Option<PathBuf>,
    /// Use this test executable instead of building with cargo.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["package", "test_target", "lib", "release", "features", "manifest_path"])]
    pub(crate) exe: Option<PathBuf>,
}

impl Select {
    /// The arguments given to `cargo test --no-run`.
    pub(crate) fn cargo_filters(&self) -> Vec<String> {
        let mut args = Vec::new();
        for package in &self.package {
            args.extend(["-p".to_owned(), package.clone()]);
        }
        for target in &self.test_target {
            args.extend(["--test".to_owned(), target.clone()]);
        }
        if self.lib {
            args.push("--lib".to_owned());
        }
        args.extend(self.reproduce_flags().into_iter().flat_map(|flag| {
            flag.split_once(' ').map_or_else(
                || vec![flag.clone()],
                |(a, b)| vec![a.to_owned(), b.to_owned()],
            )
        }));
        args
    }

    /// The build flags a reproduce line must repeat.
    pub(crate) fn reproduce_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(path) = &self.manifest_path {
            flags.push(format!("--manifest-path {}", path.display()));
        }
        if self.release {
            flags.push("--release".to_owned());
        }
        if let Some(features) = &self.features {
            flags.push(format!("--features {features}"));
        }
        flags
    }
}

/// The test and where to find it.
#[derive(Clone, Debug, Args)]
pub(crate) struct TestArgs {
    /// The test: its full libtest path (`raft::tests::agree`) or a unique suffix (`agree`).
    pub(crate) test: String,
    #[command(flatten)]
    pub(crate) select: Select,
    /// Wall-clock time a worker may go without finishing a seed before it is killed and the
    /// seed reported as hung (at least 1s).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = seed_timeout)]
    pub(crate) seed_timeout: Duration,
}

#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    #[command(flatten)]
    pub(crate) target: TestArgs,
    /// Seeds to run: N (0..N), A..B or A..=B.
    #[arg(long, value_name = "RANGE", default_value = "1000", value_parser = SeedRange::parse)]
    pub(crate) seeds: SeedRange,
    /// Run only shard K of N of the range (1 <= K <= N), for splitting across machines.
    #[arg(long, value_name = "K/N", value_parser = Shard::parse)]
    pub(crate) shard: Option<Shard>,
    /// Worker processes at once (default: one per core).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    /// Seeds per worker process (default: chosen from the range and the workers).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) batch: Option<u64>,
    /// The results file (JSON lines, one per seed).
    #[arg(
        short,
        long,
        value_name = "PATH",
        default_value = "crashtest-results.jsonl"
    )]
    pub(crate) out: PathBuf,
    /// Continue the sweep whose results are in --out: seeds already there are skipped.
    #[arg(long, conflicts_with = "replace")]
    pub(crate) resume: bool,
    /// Start --out anew, dropping the results it holds (after changing the code, say).
    #[arg(long)]
    pub(crate) replace: bool,
    /// Stop at the first failing seed.
    #[arg(long)]
    pub(crate) stop_on_failure: bool,
    /// Append every failing seed to the test's regression file
    /// (crashtest-regressions/<crate>.<test>.txt in its package), which `cargo test` runs first.
    #[arg(long)]
    pub(crate) save_failures: bool,
    /// Stop starting seeds after this much wall time (the sweep can be resumed).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub(crate) time_budget: Option<Duration>,
    /// After the sweep, re-run a sample of N seeds in fresh processes and compare
    /// fingerprints (N defaults to 16).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "16")]
    pub(crate) check_determinism: Option<u64>,
}

/// Which timeline of a seed: its own run, or a branch a guided hunt found.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct Branch {
    /// The branch path of the timeline, as `crashtest hunt` prints it
    /// (TIME_NS:SUB_SEED,TIME_NS:SUB_SEED...; default: the seed's own run).
    #[arg(long, value_name = "PATH", value_parser = branch_path)]
    pub(crate) branch: Option<BranchPath>,
}

impl Branch {
    /// The protocol variable that selects the timeline, if it is a branch.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        self.branch
            .iter()
            .filter(|path| !path.0.is_empty())
            .map(|path| (env::EXPLORE, path.to_string()))
            .collect()
    }
}

#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    #[command(flatten)]
    pub(crate) target: TestArgs,
    /// The seed.
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) branch: Branch,
    #[command(flatten)]
    pub(crate) filter: Filter,
    /// Show every event, scheduler polls and clock jumps included.
    #[arg(long)]
    pub(crate) all: bool,
    /// Width of a node's column, in characters.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u16).range(12..))]
    pub(crate) width: u16,
    /// Also keep the raw trace (JSON lines) in this file.
    #[arg(long, value_name = "PATH")]
    pub(crate) save_trace: Option<PathBuf>,
}

/// Which events of a trace to show.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct Filter {
    /// Show only this node (by name, or nI); repeatable.
    #[arg(long = "node", value_name = "NAME")]
    pub(crate) nodes: Vec<String>,
    /// Show events from this virtual time on (such as 1.5s or 200ms).
    #[arg(long, value_name = "TIME", value_parser = duration)]
    pub(crate) from: Option<Duration>,
    /// Show events up to this virtual time.
    #[arg(long, value_name = "TIME", value_parser = duration)]
    pub(crate) until: Option<Duration>,
}

impl Filter {
    /// An error for a window that holds no time: `--from` after `--until`.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        if let (Some(from), Some(until)) = (self.from, self.until)
            && from > until
        {
            anyhow::bail!(
                "--from {} is after --until {}: the window holds no time; give --from first, as in --from {} --until {}",
                crate::duration::short(crate::duration::nanos(from)),
                crate::duration::short(crate::duration::nanos(until)),
                crate::duration::short(crate::duration::nanos(until)),
                crate::duration::short(crate::duration::nanos(from)),
            );
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub(crate) struct MinimizeArgs {
    #[command(flatten)]
    pub(crate) target: TestArgs,
    /// The failing seed.
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) branch: Branch,
    /// Runs at once (default: one per core).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    /// Count any failure as still failing, not only the same kind on the same node at the
    /// same place.
    #[arg(long)]
    pub(crate) any_failure: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ExploreArgs {
    #[command(flatten)]
    pub(crate) target: TestArgs,
    /// The seed whose prefix is kept.
    pub(crate) seed: u64,
    /// The virtual time at which the future is re-drawn (such as 1.5s).
    #[arg(long, value_name = "TIME", value_parser = duration)]
    pub(crate) at: Duration,
    /// How many futures (sub-seeds 1..=K) to draw.
    #[arg(short = 'k', long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) branches: u64,
    /// Runs at once (default: one per core).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
}

#[derive(Debug, Args)]
pub(crate) struct HuntArgs {
    #[command(flatten)]
    pub(crate) target: TestArgs,
    /// Runs to spend (each future of a branch point and each fresh seed is one).
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) runs: u64,
    /// The first fresh seed (it also seeds the search's choices).
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub(crate) seed_start: u64,
    /// Run shard K of N: each shard searches from its own seeds with its own corpus, for
    /// splitting across machines (append their --out lines to merge).
    #[arg(long, value_name = "K/N", value_parser = Shard::parse)]
    pub(crate) shard: Option<Shard>,
    /// Processes at once (default: one per core).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) jobs: Option<u64>,
    /// Also append the search's summary (one JSON line) to this file.
    #[arg(short, long, value_name = "PATH")]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ViewArgs {
    #[command(flatten)]
    pub(crate) target: TestArgs,
    /// The seed.
    pub(crate) seed: u64,
    #[command(flatten)]
    pub(crate) branch: Branch,
    /// The HTML file to write (default: crashtest-TEST-seed-SEED.html, with -branch-PATH
    /// before `.html` for a branch).
    #[arg(short, long, value_name = "PATH")]
    pub(crate) out: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) filter: Filter,
    /// Draw at most this many events (the rest are cut off, with a note).
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub(crate) max_events: usize,
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The results files, all of one test on one commit under one environment.
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    /// Also write the merged results (a header, then one line per seed) to this new file.
    #[arg(short, long, value_name = "PATH")]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) select: Select,
}

#[derive(Debug, Args)]
pub(crate) struct TokioArgs {
    #[command(subcommand)]
    pub(crate) command: TokioCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TokioCommand {
    /// Patch the workspace so that tokio (for its code and every dependency) is crashtest's
    /// stand-in: tasks, time, network and disk reach the simulation inside one, and tokio
    /// outside. Copies the registry's tokio, renamed, into the stand-in directory and writes
    /// `[patch.crates-io] tokio = { path = ... }` into the workspace's Cargo.toml. Run it
    /// again after upgrading tokio or crashtest, or after `cargo clean`.
    Setup(TokioSetupArgs),
}

#[derive(Debug, Args)]
pub(crate) struct TokioSetupArgs {
    /// The workspace's Cargo.toml (default: the workspace cargo finds from here).
    #[arg(long, value_name = "PATH")]
    pub(crate) manifest_path: Option<PathBuf>,
    /// Where to put the stand-in and the renamed tokio (default: TARGET/crashtest-tokio).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Print the [patch.crates-io] lines instead of writing them into the Cargo.toml.
    #[arg(long)]
    pub(crate) print: bool,
}

fn duration(text: &str) -> Result<Duration, String> {
    crate::duration::parse(text)
}

/// The shortest `--seed-timeout`: a worker's clock starts with its process, which must start
/// and run its first seed within it, so a shorter one would kill workers whose seeds pass
/// and record those seeds as hung.
const MIN_SEED_TIMEOUT: Duration = Duration::from_secs(1);

fn seed_timeout(text: &str) -> Result<Duration, String> {
    let timeout = duration(text)?;
    if timeout < MIN_SEED_TIMEOUT {
        return Err(format!(
            "{} is too short: it is the wall time a worker may go without finishing a seed, its \
             process's start included, and under 1s workers whose seeds pass would be killed and \
             those seeds recorded as hung; give at least 1s (the default, 120s, suits most tests; \
             more for slow seeds)",
            crate::duration::short(crate::duration::nanos(timeout))
        ));
    }
    Ok(timeout)
}

fn branch_path(text: &str) -> Result<BranchPath, String> {
    text.parse().map_err(|_| {
        format!(
            "bad branch path {text:?}: write TIME_NS:SUB_SEED points in time order, \
             comma-separated, as `crashtest hunt` prints them (such as 1500000000:7,2000000000:3)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep_timeout(timeout: &str) -> Result<Duration, String> {
        let args = ["crashtest", "sweep", "t", "--seed-timeout", timeout];
        match Cli::try_parse_from(args) {
            Ok(Cli {
                command: Command::Sweep(sweep),
            }) => Ok(sweep.target.seed_timeout),
            Ok(other) => panic!("not a sweep: {other:?}"),
            Err(error) => Err(error.to_string()),
        }
    }

    #[test]
    fn a_seed_timeout_under_a_second_is_refused_saying_why() {
        for short in ["0", "0s", "3ms", "999ms"] {
            let error = sweep_timeout(short).unwrap_err();
            assert!(error.contains("is too short"), "{short}: {error}");
            assert!(error.contains("give at least 1s"), "{short}: {error}");
        }
        assert_eq!(sweep_timeout("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(sweep_timeout("2m"), Ok(Duration::from_secs(120)));
    }
}
