//! `crashtest minimize`: a 1-minimal set of injected faults with which a seed still fails
//! (without any one of them it no longer fails the same way with fewer faults).
//!
//! The search is `crashtest_minimize`'s (delta debugging over the ids of the applied faults,
//! replaying the seed with the others masked by `CRASHTEST_MASK`); this module replays in
//! worker processes. The candidates of one step run in parallel, and the first failing one in
//! a fixed order wins, so the result does not depend on timing.
//!
//! A replay counts as still failing only if it fails the same way as the original: the same
//! kind of failure on the same node at the same place (the results line's signature), since a
//! smaller fault set that breaks something else explains nothing about the original failure.
//! `--any-failure` counts every failure.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::bail;
use crashtest_minimize::{Failing, Found, Mask, Minimized, Replay, minimize};

use crate::cli::MinimizeArgs;
use crate::results::SeedResult;
use crate::single::{Request, Scratch};
use crate::target::Target;
use crashtest_protocol::results::{FaultLine, Signature};
use crashtest_protocol::{Status, env, reproduce};

/// Minimizes and prints the 1-minimal failing fault set and its reproduce line.
pub(crate) fn run(args: &MinimizeArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let jobs = args.jobs.unwrap_or_else(crate::cores);
    let mut search = Search {
        target: &target,
        seed: args.seed,
        wanted: Wanted::default(),
        any_failure: args.any_failure,
        jobs,
        silence: args.target.seed_timeout,
        scratch: Scratch::new()?,
        runs: 0,
        branch: args.branch.env(),
    };
    let request = Request {
        seed: args.seed,
        env: search.branch.clone(),
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
        status => {
            show_death(&target, args.seed, &args.branch, search.silence)?;
            bail!(
                "seed {} of {} {status} its process, so no results line says which faults it drew; minimize needs a failure the test reports. The faults above are those its trace shows before the process died: mask them with CRASHTEST_MASK to find the ones it needs:\n{}",
                args.seed,
                target.test,
                original.failure.as_deref().unwrap_or("")
            )
        }
    }
    let original_headline = original.headline();
    search.wanted = Wanted {
        signature: original.signature.clone(),
        headline: original_headline.clone(),
    };
    let maskable = original.fault_ids();
    let drawn = maskable.len();
    println!(
        "seed {} fails with {} applied ({} maskable): {}",
        args.seed,
        crate::summary::counted(original.faults.len() as u64, "fault"),
        maskable.len(),
        original_headline
    );
    if original.refused() {
        println!(
            "note: the seed was refused: the program made a call a simulation does not model, \
             and the refusal's message says what to use instead. Minimizing shows only whether \
             faults lead the program to that call."
        );
    }
    let original_faults = original.faults.clone();
    let original = Failing {
        applied: maskable,
        run: original,
    };
    let Minimized { mask, last } = minimize(&mut search, original)?;
    let last = last.run;
    let kept = last.fault_ids();
    let matches = originals(&last.faults, &original_faults);
    let kept_set = Kept::of(&last.faults, &matches);
    println!(
        "{}",
        outcome(&kept_set, drawn, search.runs, args.any_failure)
    );
    for (fault, original) in last.faults.iter().zip(&matches) {
        match fault.id {
            Some(id) => println!(
                "  #{id:<5} {:>10} {}: {}{}",
                crate::duration::short(fault.time_ns),
                fault.node,
                fault.text,
                match original {
                    None => " (the original run never applied it)".to_owned(),
                    Some(Some(was)) if *was != id => format!(" (#{was} in the original run)"),
                    Some(_) => String::new(),
                }
            ),
            None => println!(
                "  {:<6} {:>10} {}: {} (not maskable: the test's own, or part of a numbered fault)",
                "",
                crate::duration::short(fault.time_ns),
                fault.node,
                fault.text
            ),
        }
    }
    if mostly_kept(kept.len(), drawn) {
        println!(
            "note: most faults stay. Each one shifts the timing of everything after it, so \
             masking any of them steers the run away from this failure: it needs this \
             schedule as a whole, not a few of its faults. `crashtest view` draws how it \
             unfolds."
        );
    }
    if args.any_failure {
        println!("still fails: {}", last.headline());
    } else if last.headline() == original_headline {
        println!("still fails the same way: {}", last.headline());
    } else {
        // The same kind of failure at the same place, saying something else (another key,
        // another count): said, so that the reproduce line's output is no surprise.
        println!(
            "still fails the same way (the same kind of failure, node and place; its message \
             now reads): {}",
            last.headline()
        );
    }
    let mut variables = vec![(env::SEED, args.seed.to_string())];
    variables.extend(args.branch.env());
    if !mask.is_empty() {
        variables.push((env::MASK, env::encode_ids(mask.iter().copied())));
    }
    println!(
        "reproduce: {}",
        target.reproduce(&reproduce::assignments(variables))
    );
    Ok(ExitCode::SUCCESS)
}

/// For each fault of a replay, the id its twin had in the original run (`Some(None)` for a
/// twin without one), or `None` when the original applied no such fault. Ids cannot say it:
/// masking a fault changes what comes after it, and the ledger numbers what is drawn then
/// anew. A twin is the same fault at the same virtual time on the same node, each fault of
/// the original standing twin to one fault of the replay at most.
fn originals(replay: &[FaultLine], original: &[FaultLine]) -> Vec<Option<Option<u64>>> {
    let mut unmatched: BTreeMap<(u64, &str, &str), Vec<Option<u64>>> = BTreeMap::new();
    for fault in original.iter().rev() {
        unmatched
            .entry((fault.time_ns, &fault.node, &fault.text))
            .or_default()
            .push(fault.id);
    }
    replay
        .iter()
        .map(|fault| {
            unmatched
                .get_mut(&(fault.time_ns, fault.node.as_str(), fault.text.as_str()))
                .and_then(Vec::pop)
        })
        .collect()
}

/// The maskable faults a search kept, beside the original run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kept {
    /// How many there are.
    count: usize,
    /// How many of them the original run applied too.
    in_original: usize,
    /// Whether those have the ids they had there, and no other was kept: then the ids and the
    /// set are the original's own, as the summary may say.
    the_originals: bool,
}

impl Kept {
    /// The kept set of the replay's `faults`, whose twins in the original are `matches`.
    fn of(faults: &[FaultLine], matches: &[Option<Option<u64>>]) -> Kept {
        let mut kept = Kept {
            count: 0,
            in_original: 0,
            the_originals: true,
        };
        for (fault, original) in faults.iter().zip(matches) {
            let Some(id) = fault.id else { continue };
            kept.count += 1;
            match original {
                Some(was) => {
                    kept.in_original += 1;
                    kept.the_originals &= *was == Some(id);
                }
                None => kept.the_originals = false,
            }
        }
        kept
    }
}

/// What the search found, as its first line: the `kept` maskable faults, beside the `drawn`
/// maskable ones of the original, after `runs` replays, where a replay counted if it failed
/// (`any_failure`) or failed the same way. The set is the last failing replay's, which may
/// hold faults the original never applied, and number them otherwise: it is called a part of
/// the original's only when it is one. A set of none says so in words: "without any one of
/// them" means nothing for an empty set, and the failure then owes nothing to faults.
fn outcome(kept: &Kept, drawn: usize, runs: u64, any_failure: bool) -> String {
    let runs = crate::summary::counted(runs, "run");
    let fails = if any_failure {
        "fails"
    } else {
        "fails the same way"
    };
    match (kept.count, drawn) {
        (0, 0) => "nothing to minimize: the seed drew no maskable fault, so its failure does \
                   not hinge on one (`crashtest replay` shows how it unfolds)"
            .to_owned(),
        (0, _) => {
            let all = match drawn {
                1 => "its one maskable fault".to_owned(),
                n => format!("all {n} maskable faults"),
            };
            format!(
                "no fault is needed ({runs}): with {all} masked the seed still {fails}, so its \
                 failure comes from the workload and the schedule alone"
            )
        }
        (count, _) if kept.the_originals => format!(
            "a 1-minimal failing set ({runs}): {count} of the {drawn} maskable faults the \
             original applied; without any one of them the seed no longer {fails} with fewer \
             faults"
        ),
        (count, _) => {
            let (it, of_which) = if count == 1 {
                ("it", "which")
            } else {
                ("them", "of which")
            };
            let applied = match kept.in_original {
                0 if count == 1 => "never applied".to_owned(),
                0 => "applied none".to_owned(),
                1 if count == 1 => "applied too, under another id".to_owned(),
                n if n == count => "applied all, under other ids".to_owned(),
                n => format!("applied {n}"),
            };
            format!(
                "a 1-minimal failing set ({runs}): {}, numbered as the last failing replay \
                 applied {it} (masking changed what came after the masked faults), {of_which} \
                 the original run ({}) {applied}; without any one of them the seed no longer \
                 {fails} with fewer faults",
                crate::summary::counted(count as u64, "maskable fault"),
                crate::summary::counted(drawn as u64, "maskable fault"),
            )
        }
    }
}

/// Whether a minimized set kept most of the original's faults (never more: a replay counts
/// only with fewer faults than the set before it): then no small cause was isolated, which
/// the output says rather than let a long list pass for one.
fn mostly_kept(kept: usize, drawn: usize) -> bool {
    kept > 8 && kept * 2 > drawn
}

/// For a seed that took its process down: the faults its streamed trace shows before the
/// death, and its last events.
fn show_death(
    target: &Target,
    seed: u64,
    branch: &crate::cli::Branch,
    silence: Duration,
) -> anyhow::Result<()> {
    const LAST: usize = 12;
    let (result, trace) = crate::trace::record(target, seed, branch, silence, None)?;
    let faults: Vec<_> = trace
        .events
        .iter()
        .filter(|event| {
            matches!(
                event.note,
                Some(crashtest_protocol::Note::Fault(
                    crashtest_protocol::FaultNote::Applied { .. }
                ))
            )
        })
        .collect();
    println!(
        "seed {seed} {} its process; its trace shows {} events and {} faults before that:",
        result.status,
        trace.events.len(),
        faults.len()
    );
    for event in faults {
        println!(
            "  {:>10} {}: {}",
            crate::duration::short(event.time_ns),
            trace.nodes.get(&event.actor).map_or("?", String::as_str),
            event.what
        );
    }
    println!("its last events:");
    for event in trace
        .events
        .iter()
        .skip(trace.events.len().saturating_sub(LAST))
    {
        println!(
            "  #{:<7} {:>10} {}: {}",
            event.index,
            crate::duration::short(event.time_ns),
            trace.nodes.get(&event.actor).map_or("?", String::as_str),
            event.what
        );
    }
    if let Some(note) = crate::trace::death_note(&trace, &result) {
        println!("{note}");
    }
    Ok(())
}

/// The failure a replay must show to count.
#[derive(Debug, Default)]
struct Wanted {
    signature: Option<Signature>,
    headline: String,
}

/// Replays of one seed in worker processes.
struct Search<'a> {
    target: &'a Target,
    seed: u64,
    /// The original failure; a replay must fail the same way unless any failure will do.
    wanted: Wanted,
    any_failure: bool,
    jobs: u64,
    silence: Duration,
    scratch: Scratch,
    runs: u64,
    /// The variable selecting the timeline, if it is a branch (every replay runs it).
    branch: Vec<(&'static str, String)>,
}

impl Search<'_> {
    /// Whether a replay still fails, as the search counts failures.
    fn counts(&self, replay: &SeedResult) -> bool {
        if replay.status != Status::Fail {
            return false;
        }
        if self.any_failure {
            return true;
        }
        match (&self.wanted.signature, &replay.signature) {
            (Some(wanted), Some(got)) => wanted.same_failure(got),
            // Lines without signatures (from an older runner): the same headline.
            _ => replay.headline() == self.wanted.headline,
        }
    }
}

impl Replay for Search<'_> {
    type Run = SeedResult;
    type Error = anyhow::Error;

    /// Runs the seed under each mask, `jobs` at a time, and returns the first, in order, that
    /// fails the way that counts with at most `at_most` maskable faults.
    fn first_failing(
        &mut self,
        masks: &[Mask],
        at_most: usize,
    ) -> anyhow::Result<Found<SeedResult>> {
        let mut done = 0;
        for wave in masks.chunks(self.jobs as usize) {
            let requests: Vec<Request> = wave
                .iter()
                .map(|mask| {
                    let mut env = self.branch.clone();
                    if !mask.is_empty() {
                        env.push((env::MASK, env::encode_ids(mask.iter().copied())));
                    }
                    Request {
                        seed: self.seed,
                        env,
                    }
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
                .find(|(_, result)| self.counts(result) && result.fault_ids().len() <= at_most);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A set of `count` kept faults, all the original's own.
    fn originals_own(count: usize) -> Kept {
        Kept {
            count,
            in_original: count,
            the_originals: true,
        }
    }

    #[test]
    fn an_empty_set_is_reported_as_needing_no_fault() {
        let none_drawn = outcome(&originals_own(0), 0, 0, false);
        assert!(
            none_drawn.starts_with("nothing to minimize"),
            "{none_drawn}"
        );
        let none_needed = outcome(&originals_own(0), 5, 1, false);
        assert!(
            none_needed.starts_with(
                "no fault is needed (1 run): with all 5 maskable faults masked the seed still \
                 fails the same way"
            ),
            "{none_needed}"
        );
        let one_unneeded = outcome(&originals_own(0), 1, 2, true);
        assert!(
            one_unneeded.starts_with(
                "no fault is needed (2 runs): with its one maskable fault masked the seed \
                 still fails, so"
            ),
            "{one_unneeded}"
        );
    }

    #[test]
    fn a_part_of_the_originals_faults_is_called_one() {
        let some = outcome(&originals_own(2), 5, 9, false);
        assert_eq!(
            some,
            "a 1-minimal failing set (9 runs): 2 of the 5 maskable faults the original \
             applied; without any one of them the seed no longer fails the same way with fewer \
             faults"
        );
        let any = outcome(&originals_own(2), 5, 9, true);
        assert!(any.ends_with("no longer fails with fewer faults"), "{any}");
    }

    #[test]
    fn a_set_the_masking_changed_says_whose_ids_and_how_many_the_original_applied() {
        let fault = |id, time_ns, text: &str| FaultLine {
            id,
            stream: None,
            time_ns,
            node: "n1".into(),
            text: text.into(),
        };
        let original = [
            fault(Some(0), 10, "kill n1"),
            fault(Some(1), 20, "partition"),
            fault(Some(2), 30, "kill n1"),
        ];
        // The kill at 10 masked: the partition is now #1 still, the kill at 30 is #2, and a
        // fault the original never drew came at 40.
        let replay = [
            fault(Some(1), 20, "partition"),
            fault(Some(3), 30, "kill n1"),
            fault(None, 31, "restart n1"),
            fault(Some(4), 40, "pause n1"),
        ];
        let matches = originals(&replay, &original);
        assert_eq!(matches, [Some(Some(1)), Some(Some(2)), None, None]);
        let kept = Kept::of(&replay, &matches);
        assert_eq!(
            kept,
            Kept {
                count: 3,
                in_original: 2,
                the_originals: false
            }
        );
        let text = outcome(&kept, 3, 12, false);
        assert_eq!(
            text,
            "a 1-minimal failing set (12 runs): 3 maskable faults, numbered as the last \
             failing replay applied them (masking changed what came after the masked faults), \
             of which the original run (3 maskable faults) applied 2; without any one of them \
             the seed no longer fails the same way with fewer faults"
        );
        let renumbered = Kept::of(&replay[..2], &matches[..2]);
        assert!(
            outcome(&renumbered, 3, 12, false)
                .contains("(3 maskable faults) applied all, under other ids;"),
            "{renumbered:?}"
        );
        let new = Kept::of(&replay[3..], &matches[3..]);
        assert!(
            outcome(&new, 1, 2, false).contains(
                ": 1 maskable fault, numbered as the last failing replay applied it (masking \
                 changed what came after the masked faults), which the original run (1 maskable \
                 fault) never applied;"
            ),
            "{new:?}"
        );
        // Two identical faults of the original stand twin to two of the replay, not three.
        let twice = [fault(Some(0), 5, "drop"), fault(Some(1), 5, "drop")];
        let thrice = [
            fault(Some(0), 5, "drop"),
            fault(Some(1), 5, "drop"),
            fault(Some(2), 5, "drop"),
        ];
        assert_eq!(
            originals(&thrice, &twice),
            [Some(Some(0)), Some(Some(1)), None]
        );
    }

    #[test]
    fn only_a_set_that_keeps_most_of_many_faults_gets_the_note() {
        assert!(mostly_kept(306, 307));
        assert!(mostly_kept(9, 10));
        // A few faults isolated, however many were drawn.
        assert!(!mostly_kept(1, 7));
        assert!(!mostly_kept(8, 8));
        assert!(!mostly_kept(40, 307));
        // Masking can bring faults the original never drew.
        assert!(mostly_kept(12, 10));
    }
}
