//! `crashtest minimize`: a smallest set of injected faults with which a seed still fails.
//!
//! The search is `crashtest_minimize`'s (delta debugging over the ids of the applied faults,
//! replaying the seed with the others masked by `CRASHTEST_MASK`); this module replays in
//! worker processes. The candidates of one step run in parallel, and the first failing one in
//! a fixed order wins, so the result does not depend on timing.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use crashtest_minimize::{Failing, Found, Mask, Minimized, Replay, minimize};

use crate::cli::MinimizeArgs;
use crate::results::SeedResult;
use crate::single::{Request, Scratch};
use crate::target::Target;
use crashtest_protocol::{Status, env, reproduce};

/// Minimizes and prints the smallest failing fault set and its reproduce line.
pub(crate) fn run(args: &MinimizeArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let jobs = args.jobs.unwrap_or_else(crate::cores);
    let mut search = Search {
        target: &target,
        seed: args.seed,
        jobs,
        silence: args.target.seed_timeout,
        scratch: Scratch::new()?,
        runs: 0,
    };
    let request = Request {
        seed: args.seed,
        env: Vec::new(),
    };
    let original =
        crate::single::run_all(&target, &[request], 1, search.silence, &search.scratch)?.remove(0);
    match original.status {
        Status::Fail => {}
        Status::Pass => bail!(
            "seed {} of {} passes: there is no failure to minimize",
            args.seed,
            target.test
        ),
        status => bail!(
            "seed {} of {} {status} its process, so its faults are unknown; minimize needs a failure the test reports (replay it to see where it stops):\n{}",
            args.seed,
            target.test,
            original.failure.as_deref().unwrap_or("")
        ),
    }
    let maskable = original.fault_ids();
    println!(
        "seed {} fails with {} faults applied ({} maskable): {}",
        args.seed,
        original.faults.len(),
        maskable.len(),
        original.headline()
    );
    let original = Failing {
        applied: maskable,
        run: original,
    };
    let Minimized { mask, last } = minimize(&mut search, original)?;
    let last = last.run;
    let kept = last.fault_ids();
    println!(
        "a smallest failing set ({} runs): {} of the maskable faults",
        search.runs,
        kept.len()
    );
    for fault in &last.faults {
        match fault.id {
            Some(id) => println!(
                "  #{id:<5} {:>10} {}: {}",
                crate::duration::short(fault.time_ns),
                fault.node,
                fault.text
            ),
            None => println!(
                "  {:<6} {:>10} {}: {} (follows from a fault, not maskable)",
                "",
                crate::duration::short(fault.time_ns),
                fault.node,
                fault.text
            ),
        }
    }
    println!("still fails: {}", last.headline());
    let mut variables = vec![(env::SEED, args.seed.to_string())];
    if !mask.is_empty() {
        variables.push((env::MASK, env::encode_ids(mask.iter().copied())));
    }
    println!(
        "reproduce: {}",
        target.reproduce(&reproduce::assignments(variables))
    );
    Ok(ExitCode::SUCCESS)
}

/// Replays of one seed in worker processes.
struct Search<'a> {
    target: &'a Target,
    seed: u64,
    jobs: u64,
    silence: Duration,
    scratch: Scratch,
    runs: u64,
}

impl Replay for Search<'_> {
    type Run = SeedResult;
    type Error = anyhow::Error;

    /// Runs the seed under each mask, `jobs` at a time, and returns the first, in order, that
    /// fails.
    fn first_failing(&mut self, masks: &[Mask]) -> anyhow::Result<Found<SeedResult>> {
        let mut done = 0;
        for wave in masks.chunks(self.jobs as usize) {
            let requests: Vec<Request> = wave
                .iter()
                .map(|mask| Request {
                    seed: self.seed,
                    env: if mask.is_empty() {
                        Vec::new()
                    } else {
                        vec![(env::MASK, env::encode_ids(mask.iter().copied()))]
                    },
                })
                .collect();
            let results = crate::single::run_all(
                self.target,
                &requests,
                self.jobs,
                self.silence,
                &self.scratch,
            )?;
            self.runs += results.len() as u64;
            let failing = results
                .into_iter()
                .enumerate()
                .find(|(_, result)| result.status == Status::Fail);
            if let Some((position, result)) = failing {
                let failing = Failing {
                    applied: result.fault_ids(),
                    run: result,
                };
                return Ok(Some((done + position, failing)));
            }
            done += wave.len();
        }
        Ok(None)
    }
}
