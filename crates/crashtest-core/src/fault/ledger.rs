//! The fault ledger of one run: which faults came up, their ids, which the run masks, which
//! it applied, which `buggify!` sites it enabled, and whether faults are on at all.
//!
//! Every fault of a run, whoever injects it (the test, the network, the disk, the nemesis, a
//! `buggify!` site), goes through one verb here, [`Ledger::come_up`], which numbers it and
//! says whether it applies. The ids are the handle a minimizer masks: a masked fault still
//! gets its id and its draws still happen, so the rest of the run stays aligned with the
//! original until the program itself reacts differently.
//!
//! Invariants:
//! - Ids are given in the order faults come up, from 0, without gaps: each new id is one more
//!   than the last.
//! - The masked ids are a subset of the numbered ones, and the applied ids are the numbered
//!   ones that are not masked; no id is both.
//! - After the heal, a drawn fault is neither numbered nor applied; a consequence of an event
//!   the program causes itself (the damage of a kill) is numbered and applied still.
//! - Whether a `buggify!` site is enabled is decided once per run, from the run's seed and
//!   the site alone (not from the order sites are reached, nor from an exploration's
//!   re-drawn streams): a site's enablement is part of the run's configuration.

use std::collections::{BTreeMap, BTreeSet};

use crate::coverage::{Site, SiteKey, SiteKind};
use crate::fault::SITE_ENABLED;
use crate::node::NodeId;
use crate::rng::Stream;
use crate::rng::{Rng, derive_seed};
use crate::sim::Config;

/// How a fault came up, which decides whether the heal stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Drawn by an injector (a coin, a nemesis action): stopped by the heal.
    Drawn,
    /// Part of an event that happens anyway (a crash's damage to unsynced data): applies after
    /// the heal too, because a program may still kill a node then.
    Consequence,
}

/// What the ledger decided about a fault that came up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Faults are healed: the fault has no id and does not apply.
    Healed,
    /// The fault has this id and the run masks it: it does not apply.
    Masked(u64),
    /// The fault has this id and applies.
    Applied(u64),
}

/// The ledger; see the module docs.
/// An applied fault as the ledger keeps it until a failure report asks: its stream and node
/// by value, named only then (a passing run, the common case, never names them, and a run
/// may list thousands of faults).
#[derive(Debug)]
pub(crate) struct ListedFault {
    pub(crate) id: Option<u64>,
    pub(crate) stream: Option<Stream>,
    pub(crate) time_ns: u64,
    pub(crate) node: NodeId,
    pub(crate) text: String,
}

#[derive(Debug)]
pub(crate) struct Ledger {
    seed: u64,
    /// The id the next fault that comes up gets.
    next_id: u64,
    /// Ids the run's configuration masks.
    masked: BTreeSet<u64>,
    /// If set, the only ids the run applies (every other one is masked).
    kept: Option<BTreeSet<u64>>,
    /// How many numbered faults were masked, to check the subset invariant cheaply.
    masked_count: u64,
    /// How many numbered faults were listed as applied: each numbered fault is masked or
    /// listed, never both and never twice.
    listed_count: u64,
    /// False once the run healed.
    enabled: bool,
    /// Whether `buggify!` is on for the run at all.
    buggify: bool,
    /// The sites decided so far, and whether each is enabled.
    sites: BTreeMap<SiteKey, bool>,
    /// Every fault applied so far, numbered or not, for the failure report.
    applied: Vec<ListedFault>,
}

impl Ledger {
    pub(crate) fn new(seed: u64, config: &Config) -> Ledger {
        Ledger {
            seed,
            next_id: 0,
            masked: config.masked_faults.clone(),
            kept: config.kept_faults.clone(),
            masked_count: 0,
            listed_count: 0,
            enabled: true,
            buggify: config.buggify,
            sites: BTreeMap::new(),
            applied: Vec::new(),
        }
    }

    /// A fault came up: number it (unless healed) and say whether it applies.
    pub(crate) fn come_up(&mut self, cause: Cause) -> Verdict {
        if cause == Cause::Drawn && !self.enabled {
            return Verdict::Healed;
        }
        let id = self.next_id;
        self.next_id = id.checked_add(1).expect("fewer than 2^64 faults in a run");
        let masked =
            self.masked.contains(&id) || self.kept.as_ref().is_some_and(|kept| !kept.contains(&id));
        if masked {
            self.masked_count += 1;
        }
        assert!(
            self.masked_count <= self.next_id,
            "masked faults are a subset of the numbered ones"
        );
        assert_eq!(self.next_id, id + 1, "fault ids increase one by one");
        assert!(
            self.kept.is_some() || self.masked_count <= self.masked.len() as u64,
            "only the ids asked for are masked"
        );
        if masked {
            Verdict::Masked(id)
        } else {
            Verdict::Applied(id)
        }
    }

    /// Lists an applied fault for the failure report: one numbered by [`Ledger::come_up`]
    /// and applied, or one the test applied itself (no id).
    pub(crate) fn list(&mut self, fault: ListedFault) {
        assert_eq!(
            fault.id.is_some(),
            fault.stream.is_some(),
            "a numbered fault names its stream, an explicit one neither"
        );
        assert!(
            self.applied
                .last()
                .is_none_or(|last| last.time_ns <= fault.time_ns),
            "fault {:?} ({}) is listed before the one applied ahead of it",
            fault.id,
            fault.text
        );
        if let Some(id) = fault.id {
            assert!(id < self.next_id, "fault #{id} is listed before it came up");
            let last = self.applied.iter().rev().find_map(|f| f.id);
            assert!(
                last.is_none_or(|last| last < id),
                "applied fault ids increase: #{id} after #{last:?}"
            );
            assert!(
                !self.masked.contains(&id),
                "masked fault #{id} is listed as applied"
            );
            self.listed_count += 1;
            assert!(
                self.listed_count + self.masked_count <= self.next_id,
                "a numbered fault is masked or listed, once"
            );
        }
        self.applied.push(fault);
    }

    /// Every fault applied so far.
    pub(crate) fn applied(&self) -> &[ListedFault] {
        if crate::verify::enabled() {
            let ids: Vec<u64> = self.applied.iter().filter_map(|f| f.id).collect();
            assert_eq!(
                ids.len() as u64,
                self.listed_count,
                "the list holds every numbered fault listed, and only those"
            );
            assert!(
                ids.windows(2).all(|pair| pair[0] < pair[1]),
                "applied fault ids increase"
            );
            assert!(
                self.applied
                    .windows(2)
                    .all(|pair| pair[0].time_ns <= pair[1].time_ns),
                "applied faults are listed in time order"
            );
            assert!(
                ids.iter()
                    .all(|id| !self.masked.contains(id) && *id < self.next_id),
                "an applied fault was numbered and is not masked"
            );
        }
        &self.applied
    }

    /// How many faults were numbered so far.
    #[cfg(test)]
    pub(crate) fn numbered(&self) -> u64 {
        self.next_id
    }

    /// Stops drawn faults for the rest of the run (the liveness phase).
    pub(crate) fn heal(&mut self) {
        self.enabled = false;
        assert!(
            self.listed_count + self.masked_count <= self.next_id,
            "a numbered fault is masked or listed, once"
        );
    }

    /// False once the run healed.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether the `buggify!` site is on for this run (decided once per site and run).
    pub(crate) fn site_enabled(&mut self, site: &Site) -> bool {
        assert_eq!(
            site.kind(),
            SiteKind::Buggify,
            "only a buggify! site is enabled or not"
        );
        if !self.buggify {
            assert!(
                self.sites.is_empty(),
                "a run without buggify! decides no site"
            );
            return false;
        }
        let seed = self.seed;
        let decide = || {
            let mut rng = Rng::seed_from(derive_seed(seed ^ site.stable_hash(), "buggify-site"));
            rng.chance(SITE_ENABLED)
        };
        let enabled = *self.sites.entry(site.key()).or_insert_with(decide);
        if crate::verify::enabled() {
            assert_eq!(
                enabled,
                decide(),
                "site {site}'s enablement depends on the seed and the site alone"
            );
        }
        enabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(config: Config) -> Ledger {
        Ledger::new(1, &config)
    }

    #[test]
    fn ids_are_given_in_order_and_masked_ones_do_not_apply() {
        let mut ledger = ledger(Config::default().mask_faults([1, 3]));
        let verdicts: Vec<Verdict> = (0..4).map(|_| ledger.come_up(Cause::Drawn)).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::Applied(0),
                Verdict::Masked(1),
                Verdict::Applied(2),
                Verdict::Masked(3)
            ]
        );
        assert_eq!(ledger.numbered(), 4);
    }

    #[test]
    fn keeping_faults_masks_every_other_id() {
        let mut ledger = ledger(Config::default().keep_only_faults([2]));
        let applied: Vec<bool> = (0..4)
            .map(|_| matches!(ledger.come_up(Cause::Drawn), Verdict::Applied(_)))
            .collect();
        assert_eq!(applied, [false, false, true, false]);
    }

    #[test]
    fn the_heal_stops_drawn_faults_but_not_consequences() {
        let mut ledger = ledger(Config::default());
        assert_eq!(ledger.come_up(Cause::Drawn), Verdict::Applied(0));
        ledger.heal();
        assert!(!ledger.enabled());
        assert_eq!(ledger.come_up(Cause::Drawn), Verdict::Healed);
        assert_eq!(ledger.come_up(Cause::Consequence), Verdict::Applied(1));
    }

    #[test]
    fn switching_buggify_off_disables_every_site() {
        static SITE: Site = Site::new(
            crate::coverage::SiteKind::Buggify,
            "buggify",
            "ledger.rs",
            1,
        );
        let mut off = ledger(Config::default().buggify(false));
        assert!(!off.site_enabled(&SITE));
        let enabled = (0..64)
            .filter(|&seed| Ledger::new(seed, &Config::default()).site_enabled(&SITE))
            .count();
        assert!(
            (4..=30).contains(&enabled),
            "{enabled} of 64 runs enabled the site"
        );
    }
}
