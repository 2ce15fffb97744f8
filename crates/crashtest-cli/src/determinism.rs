//! `sweep --check-determinism`: re-run a sample of finished seeds in fresh processes and
//! compare fingerprints.
//!
//! The runner's own check runs a seed twice in one process; this one crosses processes, so it
//! also catches what differs between processes (addresses, process ids, state on disk), the
//! kind of nondeterminism that makes a seed from CI fail to replay on a laptop.

use std::time::Duration;

use crashtest_protocol::Status;

use crate::single::{Request, Scratch};
use crate::target::Target;

/// A finished run, as the determinism check compares it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Finished {
    pub(crate) seed: u64,
    pub(crate) fingerprint: u64,
    pub(crate) status: Status,
}

/// Re-runs an evenly spread sample of finished seeds in fresh processes and compares their
/// fingerprints and statuses with the sweep's; returns how many differ.
pub(crate) fn check(
    target: &Target,
    finished: &[Finished],
    sample: u64,
    jobs: u64,
    silence: Duration,
) -> anyhow::Result<u64> {
    let mut candidates = finished.to_vec();
    candidates.sort_by_key(|r| r.seed);
    if candidates.is_empty() || sample == 0 {
        println!("determinism: no finished seeds to re-run");
        return Ok(0);
    }
    let take = (sample as usize).min(candidates.len());
    let picked: Vec<Finished> = (0..take)
        .map(|i| candidates[i * candidates.len() / take])
        .collect();
    let requests: Vec<Request> = picked
        .iter()
        .map(|r| Request {
            seed: r.seed,
            env: Vec::new(),
        })
        .collect();
    let scratch = Scratch::new()?;
    let again = crate::single::run_all(target, &requests, jobs, silence, &scratch)?;
    let mut differ = 0;
    for (first, second) in picked.iter().zip(&again) {
        let second_fingerprint = u64::from_str_radix(&second.fingerprint, 16).ok();
        if second_fingerprint != Some(first.fingerprint) || second.status != first.status {
            differ += 1;
            println!(
                "NONDETERMINISTIC seed {}: fingerprint {:016x} ({}) in the sweep, {} ({}) when re-run; something in the test is not drawn from the seed",
                first.seed, first.fingerprint, first.status, second.fingerprint, second.status
            );
        }
    }
    if differ == 0 {
        println!("determinism: {take} seeds re-run in fresh processes; every fingerprint matches");
    } else {
        println!("determinism: {differ} of {take} re-run seeds differ");
    }
    Ok(differ)
}
