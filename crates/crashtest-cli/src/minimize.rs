//! `crashtest minimize`: a smallest set of injected faults with which a seed still fails.
//!
//! Every fault decision is drawn whether or not it is applied, and each fault that comes up
//! has an id, so a run can be replayed with some faults masked and stay aligned with the
//! original until the program reacts differently (`CRASHTEST_MASK`). The search is delta
//! debugging (Zeller's ddmin) over the ids of the applied faults: try keeping one part of
//! them (masking the rest), then all but one part, on finer and finer parts, and keep
//! whatever still fails.
//!
//! Masking changes what comes later, so a run may apply faults the original never drew.
//! Each failing run's own list of applied faults is therefore the new current set: faults
//! masked once stay masked, faults that appeared stay in play, and the final set is exactly
//! what the last failing run applied. The candidates of one step run in parallel, and the
//! first failing one in a fixed order wins, so the result does not depend on timing. (In a
//! single process, over a fixed set, `crashtest::minimize::ddmin` is the same search.)

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;

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
    let applied = original.fault_ids();
    println!(
        "seed {} fails with {} faults applied ({} maskable): {}",
        args.seed,
        original.faults.len(),
        applied.len(),
        original.headline()
    );
    let (mask, last) = search.minimize(applied, original)?;
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

struct Search<'a> {
    target: &'a Target,
    seed: u64,
    jobs: u64,
    silence: Duration,
    scratch: Scratch,
    runs: u64,
}

impl Search<'_> {
    /// Runs the seed under each mask (in parallel) and returns the first, in order, that
    /// fails, with its result.
    fn try_masks(
        &mut self,
        masks: &[BTreeSet<u64>],
    ) -> anyhow::Result<Option<(BTreeSet<u64>, SeedResult)>> {
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
            if let Some((mask, result)) = wave
                .iter()
                .zip(results)
                .find(|(_, r)| r.status == Status::Fail)
            {
                return Ok(Some((mask.clone(), result)));
            }
        }
        Ok(None)
    }

    /// ddmin over the applied fault ids; returns the final mask and the last failing run.
    fn minimize(
        &mut self,
        mut current: Vec<u64>,
        mut last: SeedResult,
    ) -> anyhow::Result<(BTreeSet<u64>, SeedResult)> {
        let mut mask = BTreeSet::new();
        let everything: BTreeSet<u64> = current.iter().copied().collect();
        if let Some((m, result)) = self.try_masks(&[everything])? {
            return Ok((m, result));
        }
        let mut parts = 2;
        while current.len() >= 2 {
            parts = parts.min(current.len());
            let chunks = split(&current, parts);
            let mut candidates = Vec::new();
            for chunk in &chunks {
                let mut keep_chunk = mask.clone();
                keep_chunk.extend(current.iter().filter(|id| !chunk.contains(id)));
                candidates.push(keep_chunk);
            }
            if parts > 2 {
                for chunk in &chunks {
                    let mut drop_chunk = mask.clone();
                    drop_chunk.extend(chunk.iter().copied());
                    candidates.push(drop_chunk);
                }
            }
            match self.try_masks(&candidates)? {
                Some((m, result)) => {
                    let position = candidates
                        .iter()
                        .position(|c| *c == m)
                        .expect("a candidate");
                    current = result.fault_ids();
                    mask = m;
                    last = result;
                    parts = if position < chunks.len() {
                        2
                    } else {
                        (parts - 1).max(2)
                    };
                }
                None if parts >= current.len() => break,
                None => parts = (parts * 2).min(current.len()),
            }
        }
        Ok((mask, last))
    }
}

/// `items` cut into `parts` nearly equal consecutive chunks.
fn split(items: &[u64], parts: usize) -> Vec<Vec<u64>> {
    assert!(
        parts >= 1 && parts <= items.len(),
        "{parts} parts of {} items",
        items.len()
    );
    (0..parts)
        .map(|k| items[k * items.len() / parts..(k + 1) * items.len() / parts].to_vec())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_items_in_order() {
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), [vec![1, 2], vec![3, 4, 5]]);
        assert_eq!(split(&[1, 2, 3], 3), [vec![1], vec![2], vec![3]]);
    }
}
