//! What a sweep found, summed over its results: counts by status, the failing seeds, and
//! coverage (which probes, `sometimes!` conditions and `buggify!` sites never fired).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::results::SeedResult;
use crashtest_protocol::Status;

/// Failing seeds listed in full; the rest are counted.
const FAILURES_SHOWN: usize = 10;

/// Counts and failures over a set of results.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    pub(crate) by_status: BTreeMap<Status, u64>,
    /// The lowest failing seeds (any status but `pass`), with their status and headline;
    /// only as many as are shown, so that a sweep of millions of failures stays small.
    pub(crate) failures: BTreeMap<u64, (Status, String)>,
    failed: u64,
    /// How many of the failures were refusals: calls a simulation does not model, which the
    /// program's code must change, whatever the faults.
    refused: u64,
    coverage: BTreeMap<(String, String, String), SiteTotals>,
    seeds: u64,
}

#[derive(Debug, Default)]
struct SiteTotals {
    reached: u64,
    fired: u64,
    seeds_fired: u64,
}

impl Summary {
    /// Adds one seed's result.
    pub(crate) fn add(&mut self, result: &SeedResult) {
        self.seeds += 1;
        *self.by_status.entry(result.status).or_default() += 1;
        if !result.passed() {
            self.failed += 1;
            self.refused += u64::from(result.refused());
            self.failures
                .insert(result.seed, (result.status, result.headline()));
            if self.failures.len() > FAILURES_SHOWN {
                self.failures.pop_last();
            }
        }
        for site in &result.coverage {
            let key = (site.location.clone(), site.kind.clone(), site.name.clone());
            let totals = self.coverage.entry(key).or_default();
            totals.reached += site.reached;
            totals.fired += site.fired;
            totals.seeds_fired += u64::from(site.fired > 0);
        }
    }

    pub(crate) fn failed(&self) -> u64 {
        self.failed
    }

    /// What to know about the failures' refusals, if any failed seed was refused: a refusal
    /// is no bug the faults found but a call the program must change, so it is said apart.
    pub(crate) fn refusals_text(&self) -> Option<String> {
        (self.refused > 0).then(|| {
            format!(
                "{} of the {} failing seeds were refused: the program made a call a simulation \
                 does not model, and the refusal's message says what to use instead. Change \
                 that call first.",
                self.refused, self.failed
            )
        })
    }

    /// `40 seeds: 30 pass, 8 fail, 2 crashed`.
    pub(crate) fn counts_line(&self) -> String {
        let parts: Vec<String> = self
            .by_status
            .iter()
            .map(|(status, n)| format!("{n} {status}"))
            .collect();
        format!("{}: {}", counted(self.seeds, "seed"), parts.join(", "))
    }

    /// The failing seeds, lowest first.
    pub(crate) fn failures_text(&self) -> String {
        self.failures_text_with(|_| None)
    }

    /// The failing seeds, lowest first, each followed by the line `reproduce` gives it.
    pub(crate) fn failures_text_with(&self, reproduce: impl Fn(u64) -> Option<String>) -> String {
        let mut out = String::new();
        if self.failures.is_empty() {
            return out;
        }
        let _ = writeln!(
            out,
            "failing seeds (lowest first, {} of {}):",
            self.failures.len(),
            self.failed
        );
        for (seed, (status, headline)) in &self.failures {
            let _ = writeln!(out, "  seed {seed:<8} {:<9} {headline}", status.name());
            if let Some(line) = reproduce(*seed) {
                let _ = writeln!(out, "    reproduce: {line}");
            }
        }
        out
    }

    /// Coverage over the seeds: sites that never fired first, then the rest.
    ///
    /// A test binary lists every site linked into it, its other tests' too. A site no seed
    /// reached, in a file where no seed reached any site either, is only counted, so that the
    /// list is what this run covered: such a site may be another test's, or this test's on a
    /// path its settings never take (a workload or fault pattern its variables turn off), and
    /// the note says both. So is one of the nemesis's own sites no seed reached: they count
    /// the faults it drew, and one never reached is an action or pattern these settings turn
    /// off, not a gap in the tested code.
    pub(crate) fn coverage_text(&self) -> String {
        let mut out = String::new();
        let file = |location: &str| {
            location
                .rsplit_once(':')
                .map_or(location, |(f, _)| f)
                .to_owned()
        };
        let reached_files: BTreeSet<String> = self
            .coverage
            .iter()
            .filter(|(_, totals)| totals.reached > 0)
            .map(|((location, _, _), _)| file(location))
            .collect();
        let mine = |location: &str, totals: &SiteTotals| {
            totals.reached > 0
                || (reached_files.contains(&file(location)) && !of_the_nemesis(location))
        };
        let others = self
            .coverage
            .iter()
            .filter(|((location, _, _), totals)| !mine(location, totals))
            .count();
        if self.coverage.len() == others {
            // Said rather than left out: a test whose probes never ran may have none.
            let _ = writeln!(
                out,
                "coverage over {}: no probe or buggify site of the tested code was reached",
                counted(self.seeds, "seed")
            );
            return out;
        }
        let _ = writeln!(out, "coverage over {}:", counted(self.seeds, "seed"));
        let never = |t: &SiteTotals| t.fired == 0;
        for pass in [true, false] {
            for ((location, kind, name), totals) in &self.coverage {
                if never(totals) != pass || !mine(location, totals) {
                    continue;
                }
                let what = if never(totals) {
                    format!("NEVER fired (reached {} times)", totals.reached)
                } else {
                    format!(
                        "fired in {} seeds ({} of {} times reached)",
                        totals.seeds_fired, totals.fired, totals.reached
                    )
                };
                let _ = writeln!(
                    out,
                    "  {kind:<9} {:<32} {location:<24} {what}",
                    format!("{name:?}")
                );
            }
        }
        if others > 0 {
            let were = if others == 1 { "was" } else { "were" };
            let _ = writeln!(
                out,
                "  ({} of this binary {were} never reached, in files this run reached none of (other tests' sites, or paths these settings never take), left out)",
                counted(others as u64, "more site")
            );
        }
        out
    }
}

/// Whether a site is one of the nemesis's own (its location is in `crashtest-nemesis`, as a
/// workspace member or a registry crate).
fn of_the_nemesis(location: &str) -> bool {
    location.contains("crashtest-nemesis/") || location.contains("crashtest-nemesis-")
}

/// `count` of `noun` in English: `1 seed`, `3 seeds`.
pub(crate) fn counted(count: u64, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        count => format!("{count} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_protocol::CoverageLine;

    fn result(seed: u64, status: Status, fired: u64) -> SeedResult {
        SeedResult {
            test: "t".into(),
            seed,
            status,
            failure: (status != Status::Pass).then(|| "panicked at a.rs:1:1: boom".into()),
            coverage: vec![
                CoverageLine {
                    kind: "sometimes".into(),
                    name: "rare".into(),
                    location: "a.rs:3".into(),
                    reached: 2,
                    fired,
                },
                CoverageLine {
                    kind: "probe".into(),
                    name: "never".into(),
                    location: "a.rs:9".into(),
                    reached: 1,
                    fired: 0,
                },
            ],
            ..SeedResult::default()
        }
    }

    #[test]
    fn coverage_counts_sites_in_files_the_run_never_reached_without_calling_them_other_tests() {
        let mut line = result(1, Status::Pass, 1);
        let site = |name: &str, location: &str, reached| CoverageLine {
            kind: "probe".into(),
            name: name.into(),
            location: location.into(),
            reached,
            fired: 0,
        };
        line.coverage
            .push(site("same file, unreached", "a.rs:20", 0));
        line.coverage.push(site("another test's", "other.rs:5", 0));
        let mut summary = Summary::default();
        summary.add(&line);
        let text = summary.coverage_text();
        assert!(text.contains("same file, unreached"), "{text}");
        assert!(!text.contains("another test's"), "{text}");
        assert!(
            text.contains(
                "(1 more site of this binary was never reached, in files this run reached none \
                 of (other tests' sites, or paths these settings never take), left out)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_nemesis_action_these_settings_never_draw_is_no_coverage_gap() {
        let mut line = result(1, Status::Pass, 1);
        for (name, location, reached) in [
            (
                "nemesis: swizzle-clog",
                "crates/crashtest-nemesis/src/nemesis.rs:632",
                3,
            ),
            (
                "nemesis: kill inside a sync",
                "crates/crashtest-nemesis/src/nemesis.rs:578",
                0,
            ),
        ] {
            line.coverage.push(CoverageLine {
                kind: "probe".into(),
                name: name.into(),
                location: location.into(),
                reached,
                fired: reached,
            });
        }
        let mut summary = Summary::default();
        summary.add(&line);
        let text = summary.coverage_text();
        assert!(text.contains("nemesis: swizzle-clog"), "{text}");
        assert!(!text.contains("kill inside a sync"), "{text}");
    }

    #[test]
    fn coverage_says_so_when_no_site_of_the_test_was_reached() {
        let mut line = result(1, Status::Pass, 1);
        line.coverage.clear();
        let mut summary = Summary::default();
        summary.add(&line);
        assert_eq!(
            summary.coverage_text(),
            "coverage over 1 seed: no probe or buggify site of the tested code was reached\n"
        );
    }

    #[test]
    fn coverage_lists_sites_that_never_fired_first() {
        let mut summary = Summary::default();
        summary.add(&result(1, Status::Pass, 1));
        summary.add(&result(2, Status::Fail, 0));
        for seed in 10..30 {
            summary.add(&result(seed, Status::Fail, 0));
        }
        assert_eq!(summary.failed(), 21);
        assert_eq!(summary.failures.len(), FAILURES_SHOWN);
        assert!(
            summary
                .failures_text()
                .starts_with("failing seeds (lowest first, 10 of 21):")
        );
        let text = summary.coverage_text();
        let never = text.find("NEVER fired (reached 22 times)").unwrap();
        let fired = text
            .find("fired in 1 seeds (1 of 44 times reached)")
            .unwrap();
        assert!(never < fired, "{text}");
        assert_eq!(summary.counts_line(), "22 seeds: 1 pass, 21 fail");
        assert!(
            summary
                .failures_text()
                .contains("seed 2        fail      panicked at a.rs:1:1: boom")
        );
    }
    #[test]
    fn refused_seeds_are_counted_apart_from_the_other_failures() {
        use crashtest_protocol::results::{FailureClass, Signature};
        let mut summary = Summary::default();
        summary.add(&result(1, Status::Fail, 0));
        assert_eq!(summary.refusals_text(), None, "a panic is no refusal");
        for seed in 2..4 {
            let mut refused = result(seed, Status::Fail, 0);
            refused.signature = Some(Signature {
                class: FailureClass::Refused,
                node: None,
                location: None,
                headline: "refused: an OS thread was started".into(),
            });
            summary.add(&refused);
        }
        let text = summary.refusals_text().expect("two seeds were refused");
        assert!(
            text.starts_with("2 of the 3 failing seeds were refused"),
            "{text}"
        );
    }
}
