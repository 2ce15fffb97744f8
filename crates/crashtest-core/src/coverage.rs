//! Coverage probes: named places in the code, counted per run and summed over a sweep.
//!
//! A probe tells whether a run reached an interesting state (a leader change during a
//! partition, a recovery from a torn record): a seed sweep whose probes never fire has not
//! tested what it claims to. Three kinds share one mechanism: `probe!` (reached), `sometimes!`
//! (a condition that must be true in some run), and `buggify!` sites (a fault point).
//!
//! Every site is registered at link time in a distributed slice, so a sweep can list the
//! sites that *never* fired, including those never reached (FoundationDB's `CODE_PROBE`,
//! TigerBeetle's coverage marks). Per run, counts live in the world, keyed by the site's
//! location and name (never by address, which varies between processes).

use std::collections::BTreeMap;
use std::fmt;

use crate::world;

/// What kind of site a probe is.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::coverage::SiteKind;
/// assert_ne!(SiteKind::Probe, SiteKind::Buggify);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SiteKind {
    /// `probe!("name")`: counts when reached.
    Probe,
    /// `sometimes!(condition, "name")`: counts when reached and when the condition held.
    Sometimes,
    /// `buggify!()`: counts when evaluated and when it fired.
    Buggify,
}

impl fmt::Display for SiteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SiteKind::Probe => "probe",
            SiteKind::Sometimes => "sometimes",
            SiteKind::Buggify => "buggify",
        })
    }
}

/// A place in the code that counts; made by the `probe!`, `sometimes!` and `buggify!` macros.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let site = crashtest::coverage::Site::new(
///     crashtest::coverage::SiteKind::Probe, "leader elected", "src/raft.rs", 10,
/// );
/// assert_eq!(site.to_string(), "probe \"leader elected\" at src/raft.rs:10");
/// ```
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Site {
    file: &'static str,
    line: u32,
    name: &'static str,
    kind: SiteKind,
}

impl Site {
    /// A site; the macros call this in a `static`.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::coverage::{Site, SiteKind};
    /// static SITE: Site = Site::new(SiteKind::Sometimes, "quorum lost", file!(), line!());
    /// assert_eq!(SITE.name(), "quorum lost");
    /// ```
    pub const fn new(kind: SiteKind, name: &'static str, file: &'static str, line: u32) -> Site {
        assert!(line > 0, "source lines count from 1");
        // A sweep's report names the sites that never fired: each must have a name and a file.
        assert!(!name.is_empty(), "a coverage site has a name");
        assert!(!file.is_empty(), "a coverage site is in a source file");
        Site {
            file,
            line,
            name,
            kind,
        }
    }

    /// The site's name.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::coverage::{Site, SiteKind};
    /// assert_eq!(Site::new(SiteKind::Probe, "x", "f.rs", 1).name(), "x");
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The site's kind.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::coverage::{Site, SiteKind};
    /// assert_eq!(Site::new(SiteKind::Probe, "x", "f.rs", 1).kind(), SiteKind::Probe);
    /// ```
    pub fn kind(&self) -> SiteKind {
        self.kind
    }

    /// The source file of the site.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::coverage::{Site, SiteKind};
    /// assert_eq!(Site::new(SiteKind::Probe, "x", "f.rs", 1).file(), "f.rs");
    /// ```
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The source line of the site.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::coverage::{Site, SiteKind};
    /// assert_eq!(Site::new(SiteKind::Probe, "x", "f.rs", 7).line(), 7);
    /// ```
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The site's identity across processes: kind, location and name.
    pub(crate) fn key(&self) -> SiteKey {
        SiteKey {
            file: self.file,
            line: self.line,
            name: self.name,
            kind: self.kind,
        }
    }

    /// A stable 64-bit hash of the site's identity (FNV-1a of its key), for per-site draws.
    pub(crate) fn stable_hash(&self) -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let line = self.line.to_le_bytes();
        for byte in self.file.bytes().chain(line).chain(self.name.bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:?} at {}:{}",
            self.kind, self.name, self.file, self.line
        )
    }
}

/// Every site linked into the program.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::probe!("listed");
/// assert!(crashtest::coverage::SITES.iter().any(|site| site.name() == "listed"));
/// ```
#[linkme::distributed_slice]
pub static SITES: [Site];

/// A site's identity as an owned value, ordered by location.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let summary = crashtest::Sim::new(1).run(async {
///     crashtest::probe!("here");
/// }).unwrap();
/// let (key, _) = &summary.coverage[0];
/// assert_eq!((key.name, key.kind), ("here", crashtest::coverage::SiteKind::Probe));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SiteKey {
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// The name given in the macro.
    pub name: &'static str,
    /// Probe, sometimes or buggify.
    pub kind: SiteKind,
}

impl fmt::Display for SiteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:?} at {}:{}",
            self.kind, self.name, self.file, self.line
        )
    }
}

/// How often a site was reached and how often it fired (its condition held, it was hit).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// let summary = crashtest::Sim::new(1).run(async {
///     for i in 0..4 {
///         crashtest::sometimes!(i % 2 == 0, "even");
///     }
/// }).unwrap();
/// let (_, counts) = &summary.coverage[0];
/// assert_eq!((counts.reached, counts.fired), (4, 2));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Times the site was evaluated.
    pub reached: u64,
    /// Times it fired: a probe when reached, `sometimes!` when true, `buggify!` when it
    /// injected its fault.
    pub fired: u64,
}

/// The counts of one run, by site.
#[derive(Debug, Default)]
pub(crate) struct RunCoverage {
    counts: BTreeMap<SiteKey, Counts>,
}

impl RunCoverage {
    pub(crate) fn count(&mut self, site: &Site, fired: bool) {
        let counts = self.counts.entry(site.key()).or_insert_with(|| {
            if crate::verify::enabled() {
                // A site first reached in this run is one a sweep's report lists: linked in.
                assert!(
                    SITES.iter().any(|linked| linked == site),
                    "{site} is counted but not linked into the list of sites"
                );
            }
            Counts::default()
        });
        let reached_before = counts.reached;
        counts.reached += 1;
        counts.fired += u64::from(fired);
        assert!(
            counts.reached > reached_before,
            "{site}'s count wrapped around"
        );
        assert!(
            counts.fired <= counts.reached,
            "{site} fired more often than it was reached"
        );
        assert!(
            site.kind() != SiteKind::Probe || counts.fired == counts.reached,
            "{site} is a probe, which fires whenever it is reached"
        );
    }

    pub(crate) fn snapshot(&self) -> Vec<(SiteKey, Counts)> {
        if crate::verify::enabled() {
            assert!(
                self.counts.values().all(|c| c.reached > 0),
                "a site is counted only once reached"
            );
            assert!(
                self.counts.values().all(|c| c.fired <= c.reached),
                "a site fired more often than it was reached"
            );
            assert!(
                self.counts
                    .iter()
                    .all(|(key, c)| key.kind != SiteKind::Probe || c.fired == c.reached),
                "a probe fires whenever it is reached"
            );
        }
        self.counts.iter().map(|(k, c)| (k.clone(), *c)).collect()
    }
}

/// Counts a site in the running simulation; nothing outside one. Returns `fired`.
#[doc(hidden)]
#[inline]
pub fn reach(site: &'static Site, fired: bool) -> bool {
    assert!(
        fired || site.kind() != SiteKind::Probe,
        "{site} is a probe: reaching it fires it"
    );
    world::with(|w| w.count_coverage(site, fired));
    fired
}

/// Coverage summed over many runs, with every linked site listed, reached or not.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{coverage::CoverageReport, Sim};
///
/// let mut report = CoverageReport::new();
/// for seed in 0..10 {
///     let summary = Sim::new(seed).run(async {
///         crashtest::probe!("body ran");
///     }).unwrap();
///     report.add(&summary.coverage);
/// }
/// let ran = report.sites().find(|(site, _)| site.name == "body ran").unwrap();
/// assert_eq!(ran.1.fired, 10);
/// ```
#[derive(Clone, Debug, Default)]
pub struct CoverageReport {
    runs: u64,
    counts: BTreeMap<SiteKey, Counts>,
}

impl CoverageReport {
    /// A report listing every linked site with zero counts.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let report = crashtest::coverage::CoverageReport::new();
    /// assert_eq!(report.runs(), 0);
    /// ```
    pub fn new() -> CoverageReport {
        let counts = SITES
            .iter()
            .map(|site| (site.key(), Counts::default()))
            .collect();
        CoverageReport { runs: 0, counts }
    }

    /// Adds one run's counts.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let mut report = crashtest::coverage::CoverageReport::new();
    /// report.add(&[]);
    /// assert_eq!(report.runs(), 1);
    /// ```
    pub fn add(&mut self, run: &[(SiteKey, Counts)]) {
        if crate::verify::enabled() {
            // A run's counts come from a map: each site once, in order. A site listed twice
            // would be counted twice.
            assert!(
                run.windows(2).all(|pair| pair[0].0 < pair[1].0),
                "a run's coverage lists each site once, in order"
            );
        }
        self.runs += 1;
        for (key, counts) in run {
            assert!(
                counts.fired <= counts.reached,
                "{key} fired {} times but was reached {} times",
                counts.fired,
                counts.reached
            );
            let total = self.counts.entry(key.clone()).or_default();
            total.reached += counts.reached;
            total.fired += counts.fired;
            assert!(
                total.fired <= total.reached && total.reached >= counts.reached,
                "{key}'s summed counts wrapped around"
            );
        }
    }

    /// Runs added.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// assert_eq!(crashtest::coverage::CoverageReport::new().runs(), 0);
    /// ```
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Every site with its summed counts, in source order.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// let report = crashtest::coverage::CoverageReport::new();
    /// for (site, counts) in report.sites() {
    ///     assert_eq!(counts.fired, 0, "{site}");
    /// }
    /// ```
    pub fn sites(&self) -> impl Iterator<Item = (&SiteKey, &Counts)> {
        self.counts.iter()
    }

    /// The sites that never fired in any run (never reached, never true, never injected).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::{coverage::CoverageReport, Sim};
    /// let mut report = CoverageReport::new();
    /// let summary = Sim::new(1).run(async {
    ///     crashtest::sometimes!(false, "never true");
    /// }).unwrap();
    /// report.add(&summary.coverage);
    /// assert!(report.never_fired().any(|site| site.name == "never true"));
    /// ```
    pub fn never_fired(&self) -> impl Iterator<Item = &SiteKey> {
        self.counts
            .iter()
            .filter(|(_, c)| c.fired == 0)
            .map(|(k, _)| k)
    }
}

impl fmt::Display for CoverageReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "coverage over {} runs:", self.runs)?;
        for (site, counts) in &self.counts {
            writeln!(
                f,
                "  {:>10} fired / {:>10} reached  {site}",
                counts.fired, counts.reached
            )?;
        }
        let never: Vec<_> = self.never_fired().collect();
        if !never.is_empty() {
            writeln!(f, "  {} sites never fired:", never.len())?;
            for site in never {
                writeln!(f, "    {site}")?;
            }
        }
        Ok(())
    }
}

/// Counts that a run reached this point.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     crashtest::probe!("recovered from a torn record");
/// }).unwrap();
/// ```
#[macro_export]
macro_rules! probe {
    ($name:literal) => {{
        #[$crate::coverage::__linkme::distributed_slice($crate::coverage::SITES)]
        #[linkme(crate = $crate::coverage::__linkme)]
        static SITE: $crate::coverage::Site = $crate::coverage::Site::new(
            $crate::coverage::SiteKind::Probe,
            $name,
            ::core::file!(),
            ::core::line!(),
        );
        $crate::coverage::reach(&SITE, true);
    }};
}

/// Counts whether `condition` held here; a sweep reports the `sometimes!` that never held.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// crashtest::Sim::new(1).run(async {
///     let leader_changed = true;
///     crashtest::sometimes!(leader_changed, "leader changed during a partition");
/// }).unwrap();
/// ```
#[macro_export]
macro_rules! sometimes {
    ($condition:expr, $name:literal) => {{
        #[$crate::coverage::__linkme::distributed_slice($crate::coverage::SITES)]
        #[linkme(crate = $crate::coverage::__linkme)]
        static SITE: $crate::coverage::Site = $crate::coverage::Site::new(
            $crate::coverage::SiteKind::Sometimes,
            $name,
            ::core::file!(),
            ::core::line!(),
        );
        $crate::coverage::reach(&SITE, $condition);
    }};
}

#[doc(hidden)]
pub use linkme as __linkme;
