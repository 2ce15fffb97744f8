//! `crashtest explore`: one prefix, many futures.
//!
//! The seed is replayed up to virtual time `--at`; from there everything random is re-drawn
//! from a sub-seed (`CRASHTEST_EXPLORE=TIME_NS:SUB_SEED`), once for each of sub-seeds 1..=K.
//! The original run (the trunk) and the K branches run in parallel; the tree shows which
//! futures fail, and how, and the line that replays any one of them.

use std::fmt::Write;
use std::process::ExitCode;

use crashtest_protocol::env::{self, Explore};
use crashtest_protocol::reproduce;

use crate::cli::ExploreArgs;
use crate::results::SeedResult;
use crate::single::{Request, Scratch};

/// Runs the trunk and the branches and prints the tree.
pub(crate) fn run(args: &ExploreArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let jobs = args.jobs.unwrap_or_else(crate::cores);
    let at_ns = crate::duration::nanos(args.at);
    let mut requests = vec![Request {
        seed: args.seed,
        env: Vec::new(),
    }];
    requests.extend((1..=args.branches).map(|sub| Request {
        seed: args.seed,
        env: vec![(env::EXPLORE, Explore { at_ns, sub_seed: sub }.to_string())],
    }));
    let scratch = Scratch::new()?;
    let results =
        crate::single::run_all(&target, &requests, jobs, args.target.seed_timeout, &scratch)?;
    let (trunk, branches) = results.split_first().expect("the trunk ran");
    if let Some(warning) = past_the_end(trunk, at_ns) {
        eprintln!("crashtest: warning: {warning}");
    }
    print!("{}", tree(args.seed, &target.test, at_ns, trunk, branches));
    let failing: Vec<u64> = (1..)
        .zip(branches)
        .filter(|(_, r)| !r.passed())
        .map(|(k, _)| k)
        .collect();
    if let Some(first) = failing.first() {
        println!(
            "replay branch {first}: {}",
            target.reproduce(&reproduce::assignments([
                (env::SEED, args.seed.to_string()),
                (
                    env::EXPLORE,
                    Explore {
                        at_ns,
                        sub_seed: *first,
                    }
                    .to_string(),
                ),
            ]))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A warning when `--at` lies after the original run ended: nothing is left to re-draw, and
/// every branch is the original run.
fn past_the_end(trunk: &SeedResult, at_ns: u64) -> Option<String> {
    let ended = trunk.elapsed_ns;
    (!trunk.fingerprint.is_empty() && at_ns >= ended).then(|| {
        format!(
            "--at {} is not before the end of the run ({}): every branch replays the original run; pick a time before {}",
            crate::duration::short(at_ns),
            crate::duration::short(ended),
            crate::duration::short(ended)
        )
    })
}

/// The tree of timelines as text.
fn tree(seed: u64, test: &str, at_ns: u64, trunk: &SeedResult, branches: &[SeedResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "seed {seed} of {test}");
    let _ = writeln!(out, "{}", line("original", trunk));
    let _ = writeln!(
        out,
        "prefix 0s..{} kept, then {} futures re-drawn:",
        crate::duration::short(at_ns),
        branches.len()
    );
    for (k, branch) in (1..).zip(branches) {
        let fork = if k == branches.len() {
            "└─"
        } else {
            "├─"
        };
        let _ = writeln!(out, "  {fork} {}", line(&format!("sub-seed {k}"), branch));
    }
    let failed = branches.iter().filter(|b| !b.passed()).count();
    let _ = writeln!(out, "{failed} of {} futures fail", branches.len());
    out
}

/// `sub-seed 3   FAIL  panicked at ...` / `sub-seed 4   pass  ended at 125ms`.
fn line(name: &str, result: &SeedResult) -> String {
    let what = if result.passed() {
        format!(
            "ended at {}, fingerprint {}",
            crate::duration::short(result.elapsed_ns),
            result.fingerprint
        )
    } else {
        result.headline()
    };
    let status = if result.passed() {
        result.status.to_string()
    } else {
        result.status.name().to_uppercase()
    };
    format!("{name:<12} {status:<8} {what}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_protocol::Status;

    fn result(status: Status) -> SeedResult {
        SeedResult {
            status,
            elapsed_ns: 125_000_000,
            fingerprint: "00ff".into(),
            failure: (status != Status::Pass).then(|| "panicked at a.rs:1:1: lost".into()),
            ..SeedResult::default()
        }
    }

    #[test]
    fn a_branch_point_after_the_end_is_warned_of() {
        let trunk = result(Status::Pass);
        let warning = past_the_end(&trunk, 100_000_000_000).unwrap();
        assert!(
            warning.starts_with("--at 100s is not before the end of the run (125ms)"),
            "{warning}"
        );
        assert!(past_the_end(&trunk, 50_000_000).is_none());
    }

    #[test]
    fn the_tree_shows_each_future_under_the_prefix() {
        let text = tree(
            7,
            "t",
            50_000_000,
            &result(Status::Fail),
            &[result(Status::Pass), result(Status::Fail)],
        );
        let want = "seed 7 of t\n\
                    original     FAIL     panicked at a.rs:1:1: lost\n\
                    prefix 0s..50ms kept, then 2 futures re-drawn:\n  \
                    ├─ sub-seed 1   pass     ended at 125ms, fingerprint 00ff\n  \
                    └─ sub-seed 2   FAIL     panicked at a.rs:1:1: lost\n\
                    1 of 2 futures fail\n";
        assert_eq!(text, want);
    }
}
