//! Guided search: a corpus of timelines, branched where new behaviour appeared.
//!
//! Independent seeds multiply the rarities of the events a deep bug needs. A guided search
//! instead keeps a corpus of timelines (`(seed, branch path)`) that did something no earlier
//! run did, and spends its budget branching from them ([`crate::branch`]: one prefix, `k`
//! futures): a state reached once is reached again cheaply, and rare events stack.
//!
//! *Something new* is a feature no earlier run had: a coverage site reached (a `probe!`, a
//! `sometimes!` that held, a `buggify!` that fired, a nemesis fault pattern), a site's hit
//! count in a new power-of-two bucket (as AFL counts edges), a value of a declared state
//! abstraction (`crashtest::explore::state`), or two fault patterns in one run. A timeline's
//! *rarity* sums `1 / runs that had it` over its features. Which entry to branch from is
//! drawn with weight `(1 + rarity) / 2^(branchings since it last produced something new)`: a
//! fuzzer's power schedule, so the budget goes to the timelines that recently paid off.
//!
//! Where to branch: half the time just after a state the entry reached first (a value of a
//! state abstraction no earlier run had, at the virtual time the run first declared it, plus
//! up to a 32nd of what was left of the run), so that the prefix holds the new state and all
//! that follows it is re-drawn: a rare state is what a deep bug builds on, and it is often
//! brief (a leader holding an old entry until its next heartbeat). Otherwise, and for an entry
//! kept for anything else, uniformly between the entry's last branch point and its end.
//!
//! Fresh seeds, in order from the first one, run in batches between the branch points: they
//! are the very seeds a random search runs, and the corpus keeps growing from new starting
//! points instead of digging only where it began. The branches' share ramps up: after `f`
//! fresh seeds the branch points may have spent `f * f / (f + RAMP)` runs, so early on almost
//! every run is a fresh seed and the share tends to half as the search goes on. A bug that
//! random seeds find at seed `n` the guided search therefore finds by run `n + n * n / (n +
//! RAMP)` plus a batch: close to random's cost on the bugs the first seeds find, never twice
//! it, while a deep bug, which only branching reaches, gets nearly half of a long search.
//!
//! Every choice comes from a generator seeded by the first seed, and the futures of a branch
//! point do not depend on how many run at once, so a search is a function of `(first seed,
//! budget, k)`: two searches with the same settings run the same timelines. Every run is a
//! replayable `(seed, branch path)`; a failure is replayed once more, fresh, before it is
//! reported, and its report carries `CRASHTEST_EXPLORE` in the reproduce line.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crashtest_core::coverage::SiteKind;
use crashtest_core::rng::Rng;
use crashtest_protocol::env::{self, BranchPath, Explore};
use crashtest_protocol::reproduce;
use serde_json::{Value, json};

use crate::branch::{self, Digest};
use crate::{FailureReport, Settings, TestSpec, run_seeds};

/// How a guided search spends its budget.
///
/// ```
/// let guide = crashtest::runner::guided::Guide { runs: 500, ..Default::default() };
/// assert_eq!(guide.futures, 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guide {
    /// Runs to spend (each future of a branch point and each fresh seed is one).
    pub runs: u64,
    /// The first fresh seed; it also seeds the search's own choices.
    pub start: u64,
    /// Futures drawn at each branch point.
    pub futures: usize,
    /// Processes (or threads, for fresh seeds) at once.
    pub jobs: usize,
}

impl Default for Guide {
    /// 1000 runs from seed 0, 8 futures per branch point, one job.
    fn default() -> Guide {
        Guide {
            runs: 1000,
            start: 0,
            futures: 8,
            jobs: 1,
        }
    }
}

/// Fresh seeds run in one batch (fixed, so that the search does not depend on `jobs`).
const FRESH_BATCH: u64 = 8;

/// How fast the branches' share of the runs ramps up with the fresh seeds run: a quarter of
/// the runs after `RAMP / 2` fresh seeds, a third after `RAMP`, 48% after `10 * RAMP`.
const RAMP: u64 = 256;

/// Runs the branch points may have spent after `fresh` fresh seeds: `fresh² / (fresh +
/// RAMP)`, always fewer than `fresh`.
fn branch_allowance(fresh: u64) -> u64 {
    let allowance = u128::from(fresh) * u128::from(fresh) / u128::from(fresh + RAMP);
    let allowance = u64::try_from(allowance).expect("fewer than the fresh seeds");
    assert!(
        allowance < fresh || fresh == 0,
        "branches never get as many runs as fresh seeds"
    );
    allowance
}

/// A branch path as the search keeps it: `(virtual time in ns, sub-seed)` points.
type Path = Vec<(u64, u64)>;

/// A timeline worth branching from.
#[derive(Clone, Debug)]
struct Entry {
    seed: u64,
    path: Path,
    elapsed_ns: u64,
    features: Vec<String>,
    /// The virtual times at which it first reached the states that were new when it was
    /// kept, each after its last branch point and before its end.
    novel_ns: Vec<u64>,
    /// Branchings from it since one produced something new.
    stale: u32,
}

impl Entry {
    /// Where to branch from this entry next, after its last branch point and before its end;
    /// `None` if no point lies between.
    fn branch_point(&self, rng: &mut Rng) -> Option<u64> {
        let after = self.path.last().map_or(0, |(at, _)| *at);
        if self.elapsed_ns <= after + 1 {
            return None;
        }
        let at = if !self.novel_ns.is_empty() && rng.next_u64() & 1 == 0 {
            let pick = rng.below_inclusive(self.novel_ns.len() as u64 - 1);
            let first = self.novel_ns[usize::try_from(pick).expect("an index of the list")];
            let span = (self.elapsed_ns - first) / 32;
            first + 1 + rng.below_inclusive(span.saturating_sub(2))
        } else {
            rng.range_inclusive(after + 1, self.elapsed_ns - 1)
        };
        assert!(
            after < at && at < self.elapsed_ns,
            "a branch point lies after the entry's last one and before its end"
        );
        Some(at)
    }
}

/// What a guided search found, and what it cost.
#[derive(Debug)]
pub struct Guided {
    /// Runs spent, up to and including the failing one.
    pub runs: u64,
    /// CPU time of the search and its branches' processes up to the first failure (not the
    /// fresh replay that builds its report); `None` where not measured.
    pub cpu: Option<Duration>,
    /// Fresh seeds run.
    pub fresh_seeds: u64,
    /// Branch points drawn.
    pub branch_points: u64,
    /// Timelines kept in the corpus.
    pub corpus: usize,
    /// Distinct features seen.
    pub features: usize,
    /// The first failure, if one was found.
    pub failure: Option<GuidedFailure>,
}

/// A failure a guided search found, replayed fresh.
#[derive(Debug)]
pub struct GuidedFailure {
    /// The timeline: the seed and its branch path.
    pub seed: u64,
    /// The branch path (empty for a fresh seed).
    pub path: BranchPath,
    /// The failure as the fresh replay reported it, its reproduce line carrying the path.
    pub report: Box<FailureReport>,
    /// Whether the fresh replay had the fingerprint the search saw (it must: a difference is
    /// a determinism bug).
    pub replayed: bool,
}

impl Guided {
    /// The search as one JSON object: the `labels`, `found`, `runs`, `cpu_seconds`,
    /// `fresh_seeds`, `branch_points`, `corpus`, `features`, and for a failure `seed`,
    /// `branch_path`, `failure`, `replayed`, `fingerprint` (hex, as a results line writes
    /// it) and `reproduce` (prefixed with `env`).
    pub fn json(&self, labels: &[(&str, &str)], env: &str) -> Value {
        let mut line = json!({
            "found": self.failure.is_some(),
            "runs": self.runs,
            "cpu_seconds": self.cpu.map(|cpu| (cpu.as_secs_f64() * 1000.0).round() / 1000.0),
            "fresh_seeds": self.fresh_seeds,
            "branch_points": self.branch_points,
            "corpus": self.corpus,
            "features": self.features,
        });
        for (key, value) in labels {
            line[*key] = json!(value);
        }
        if let Some(failure) = &self.failure {
            line["seed"] = json!(failure.seed);
            line["branch_path"] = json!(failure.path.to_string());
            // As a sweep's line and a saved regression name it: `panicked at FILE:LINE:
            // message`, `refused: ...`, a deadlock's first line.
            line["failure"] = json!(failure.report.signature().headline);
            line["replayed"] = json!(failure.replayed);
            if let crate::Cause::Run(run) = &failure.report.cause {
                line["fingerprint"] = json!(format!("{:016x}", run.summary.fingerprint));
            }
            let command = &failure.report.command;
            line["reproduce"] = json!(if env.is_empty() {
                command.clone()
            } else {
                format!("{env} {command}")
            });
        }
        line
    }
}

/// The search's memory: features seen and how often, and the corpus.
struct Search {
    rng: Rng,
    seen: BTreeMap<String, u64>,
    corpus: Vec<Entry>,
}

/// A feature of a run, and when the run first had it, where that is known (a state's).
type Feature = (String, Option<u64>);

impl Search {
    /// Counts a run's features; returns those that were new.
    fn learn<'f>(&mut self, features: &'f [Feature]) -> Vec<&'f Feature> {
        let mut new = Vec::new();
        for feature in features {
            let count = self.seen.entry(feature.0.clone()).or_insert(0);
            if *count == 0 {
                new.push(feature);
            }
            *count += 1;
        }
        new
    }

    fn rarity(&self, entry: &Entry) -> f64 {
        entry
            .features
            .iter()
            .map(|f| 1.0 / self.seen.get(f).copied().unwrap_or(1).max(1) as f64)
            .sum()
    }

    /// The entry to branch from, drawn by the power schedule.
    fn pick(&mut self) -> usize {
        let weights: Vec<f64> = self
            .corpus
            .iter()
            .map(|entry| (1.0 + self.rarity(entry)) / f64::from(1u32 << entry.stale.min(20)))
            .collect();
        let total: f64 = weights.iter().sum();
        let mut point = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        for (index, weight) in weights.iter().enumerate() {
            if point < *weight {
                return index;
            }
            point -= weight;
        }
        weights.len() - 1
    }
}

/// The features of one run (ordered by name, deduplicated), with the time the run first
/// had each state.
fn features(digest: &Digest) -> Vec<Feature> {
    let mut out = Vec::new();
    let mut patterns = Vec::new();
    for (site, reached, fired) in &digest.sites {
        let kind_fires = site.starts_with(&SiteKind::Sometimes.to_string())
            || site.starts_with(&SiteKind::Buggify.to_string());
        if *reached > 0 {
            out.push((format!("reached {site}"), None));
            out.push((format!("bucket {} {site}", bucket(*reached)), None));
        }
        if kind_fires && *fired > 0 {
            out.push((format!("fired {site}"), None));
        }
        if *reached > 0 && site.contains("\"nemesis: ") {
            patterns.push(site.as_str());
        }
    }
    for (i, a) in patterns.iter().enumerate() {
        for b in &patterns[i + 1..] {
            out.push((format!("patterns {a} + {b}"), None));
        }
    }
    for (name, value, first_ns) in &digest.states {
        out.push((format!("state {name} {value:016x}"), Some(*first_ns)));
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// AFL's hit-count buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128 and more.
fn bucket(hits: u64) -> u32 {
    match hits {
        0..=3 => hits as u32,
        4..=7 => 4,
        8..=15 => 5,
        16..=31 => 6,
        32..=127 => 7,
        _ => 8,
    }
}

/// Runs a guided search of `guide.runs` runs of `body`, stopping at the first failure.
///
/// ```
/// use crashtest::runner::{guided, TestSpec};
/// use std::time::Duration;
/// let spec = TestSpec {
///     name: "t", module_path: "m", package: "p", crate_name: "m",
///     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// };
/// // Fails only if three draws in a row, 100 ms apart, come up "deep".
/// let body = || async {
///     let mut depth = 0;
///     for _ in 0..30 {
///         crashtest::time::sleep(Duration::from_millis(100)).await;
///         let deep = crashtest::rand::rng().with(|r| r.range_inclusive(0, 9)) == 0;
///         depth = if deep { depth + 1 } else { 0 };
///         crashtest::explore::state("depth", depth);
///         assert!(depth < 3, "three deep draws in a row");
///     }
/// };
/// let guide = guided::Guide { runs: 2000, ..Default::default() };
/// let found = guided::guided(&spec, &guide, &body);
/// let failure = found.failure.expect("found");
/// assert!(failure.replayed);
/// // A failure found by branching replays with its branch path; one of a fresh seed without.
/// let branched = !failure.path.0.is_empty();
/// assert_eq!(failure.report.command.contains("CRASHTEST_EXPLORE="), branched);
/// ```
pub fn guided<F, Fut>(spec: &TestSpec, guide: &Guide, body: &F) -> Guided
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    guided_telling(spec, guide, body, &mut |_| {})
}

/// How far a guided search has come, told between its batches of runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// Runs spent.
    pub runs: u64,
    /// Fresh seeds run.
    pub fresh_seeds: u64,
    /// Branch points drawn.
    pub branch_points: u64,
    /// Timelines kept in the corpus.
    pub corpus: usize,
    /// Distinct features seen.
    pub features: usize,
}

/// [`guided`], calling `tell` after each batch of runs with how far the search has come (for
/// a progress display: what it does with the tally cannot change the search).
///
/// ```
/// # use crashtest::runner::{guided, TestSpec};
/// # let spec = TestSpec {
/// #     name: "t", module_path: "m", package: "p", crate_name: "m",
/// #     seeds: None, seed: None, config: crashtest::Config::default, env: &[],
/// # };
/// let guide = guided::Guide { runs: 40, ..Default::default() };
/// let mut tallies = Vec::new();
/// let found = guided::guided_telling(&spec, &guide, &|| async {}, &mut |tally| tallies.push(tally));
/// assert_eq!(tallies.last().map(|tally| tally.runs), Some(found.runs));
/// assert!(tallies.windows(2).all(|pair| pair[0].runs < pair[1].runs));
/// ```
pub fn guided_telling<F, Fut>(
    spec: &TestSpec,
    guide: &Guide,
    body: &F,
    tell: &mut dyn FnMut(Tally),
) -> Guided
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    crashtest_guard::install();
    let started = crate::usage::cpu_time_with_children();
    let config = (spec.config)();
    let jobs = guide.jobs.max(1);
    let futures = guide.futures.max(1);
    let mut search = Search {
        rng: Rng::seed_from(crashtest_core::rng::derive_seed(
            guide.start,
            "guided search",
        )),
        seen: BTreeMap::new(),
        corpus: Vec::new(),
    };
    let mut runs = 0;
    let mut next_seed = guide.start;
    let mut next_sub = 1;
    let (mut fresh_seeds, mut branch_points, mut branch_runs) = (0, 0, 0);
    let mut found: Option<(u64, Path, u64)> = None;
    // Tells how far the search has come, once per count of runs.
    let mut told = 0;
    let mut tell_once = |runs, fresh_seeds, branch_points, search: &Search| {
        if runs > told {
            told = runs;
            tell(Tally {
                runs,
                fresh_seeds,
                branch_points,
                corpus: search.corpus.len(),
                features: search.seen.len(),
            });
        }
    };
    while runs < guide.runs && found.is_none() {
        tell_once(runs, fresh_seeds, branch_points, &search);
        if search.corpus.is_empty() || branch_runs >= branch_allowance(fresh_seeds) {
            let count = FRESH_BATCH.min(guide.runs - runs);
            let seeds: Vec<u64> = (next_seed..next_seed + count).collect();
            next_seed += count;
            for (seed, digest) in seeds.iter().zip(run_fresh(&seeds, &config, jobs, body)) {
                let digest = digest.expect("every fresh seed up to the first failure ran");
                // Counted as consumed, as `runs` is: a failure ends the batch early.
                runs += 1;
                fresh_seeds += 1;
                if digest.failure.is_some() {
                    found = Some((*seed, Vec::new(), digest.fingerprint));
                    break;
                }
                keep(&mut search, *seed, Vec::new(), &digest);
            }
            continue;
        }
        let index = search.pick();
        let entry = search.corpus[index].clone();
        let Some(at) = entry.branch_point(&mut search.rng) else {
            search.corpus[index].stale = u32::MAX / 2;
            continue;
        };
        let count = (futures as u64).min(guide.runs - runs);
        let subs: Vec<u64> = (next_sub..next_sub + count).collect();
        next_sub += count;
        branch_points += 1;
        branch_runs += count;
        let digests = branch::branch(
            entry.seed,
            config.clone(),
            &entry.path,
            at,
            &subs,
            jobs,
            body,
        );
        let mut produced = false;
        for (sub, digest) in subs.iter().zip(digests) {
            runs += 1;
            let mut path = entry.path.clone();
            path.push((at, *sub));
            if digest.failure.is_some() {
                found = Some((entry.seed, path, digest.fingerprint));
                break;
            }
            produced |= keep(&mut search, entry.seed, path, &digest);
        }
        let stale = &mut search.corpus[index].stale;
        *stale = if produced { 0 } else { stale.saturating_add(1) };
    }
    assert!(
        fresh_seeds <= runs && (branch_points > 0 || fresh_seeds == runs),
        "the summary counts only runs that were made: {fresh_seeds} fresh of {runs}"
    );
    tell_once(runs, fresh_seeds, branch_points, &search);
    let cpu = crate::usage::cpu_time_with_children()
        .zip(started)
        .map(|(end, start)| end - start);
    let failure =
        found.map(|(seed, path, fingerprint)| replay(spec, seed, path, fingerprint, body));
    Guided {
        runs,
        cpu,
        fresh_seeds,
        branch_points,
        corpus: search.corpus.len(),
        features: search.seen.len(),
        failure,
    }
}

/// Learns a passing run's features; keeps it in the corpus if it had a new one.
fn keep(search: &mut Search, seed: u64, path: Path, digest: &Digest) -> bool {
    let features = features(digest);
    let new = search.learn(&features);
    if new.is_empty() {
        return false;
    }
    let after = path.last().map_or(0, |(at, _)| *at);
    let mut novel_ns: Vec<u64> = new
        .iter()
        .filter_map(|(_, first)| *first)
        .filter(|&first| after <= first && first + 1 < digest.elapsed_ns)
        .collect();
    novel_ns.dedup();
    search.corpus.push(Entry {
        seed,
        path,
        elapsed_ns: digest.elapsed_ns,
        features: features.into_iter().map(|(name, _)| name).collect(),
        novel_ns,
        stale: 0,
    });
    true
}

/// Runs fresh seeds on `jobs` threads; digests in the order of `seeds`. No seed after the
/// first failing one (in that order) is started, so a batch costs no more than the seeds a
/// random search would run; the digests of seeds not run are `None`.
fn run_fresh<F, Fut>(
    seeds: &[u64],
    config: &crashtest_core::Config,
    jobs: usize,
    body: &F,
) -> Vec<Option<Digest>>
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let results: Mutex<Vec<Option<Digest>>> = Mutex::new(vec![None; seeds.len()]);
    let next = AtomicUsize::new(0);
    let first_failure = AtomicUsize::new(usize::MAX);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(seeds.len()) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&seed) = seeds.get(index) else {
                        break;
                    };
                    if index > first_failure.load(Ordering::Relaxed) {
                        break;
                    }
                    let digest = branch::run_one(seed, config.clone(), body);
                    if digest.failure.is_some() {
                        first_failure.fetch_min(index, Ordering::Relaxed);
                    }
                    crate::lock(&results)[index] = Some(digest);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Replays a failing timeline fresh, through the runner, for its full report.
fn replay<F, Fut>(
    spec: &TestSpec,
    seed: u64,
    path: Path,
    fingerprint: u64,
    body: &F,
) -> GuidedFailure
where
    F: Fn() -> Fut + Sync,
    Fut: Future<Output = ()> + 'static,
{
    let branch_path = BranchPath(
        path.iter()
            .map(|&(at_ns, sub_seed)| Explore { at_ns, sub_seed })
            .collect(),
    );
    let settings = Settings {
        check_determinism: false,
        explore: path
            .iter()
            .map(|&(at, sub)| (Duration::from_nanos(at), sub))
            .collect(),
        ..Settings::range(seed..seed + 1, 1)
    };
    let mut assignments = vec![(env::SEED, seed.to_string())];
    if !path.is_empty() {
        assignments.push((env::EXPLORE, branch_path.to_string()));
    }
    let command = spec.reproduce_line(&reproduce::assignments(assignments));
    match run_seeds(spec, &settings, body) {
        Err(mut report) => {
            report.command = command;
            let replayed = match &report.cause {
                crate::Cause::Run(failure) => failure.summary.fingerprint == fingerprint,
                crate::Cause::Nondeterminism(_) => false,
            };
            GuidedFailure {
                seed,
                path: branch_path,
                report,
                replayed,
            }
        }
        Ok(_) => panic!(
            "crashtest: the timeline (seed {seed}, branch path {branch_path}) failed in the \
             search but passed when replayed: the simulation is not deterministic; \
             replay it with: {command}"
        ),
    }
}
