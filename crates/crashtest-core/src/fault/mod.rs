//! Faults: the test's own ([`inject`]), the components' verbs, `buggify!` sites, the sleep
//! stretch.
//!
//! Every fault of a run goes through the run's fault ledger (`ledger`), whoever injects it.
//! A fault that comes up gets a number, its *fault id*, in the order faults come up. A run
//! can then be replayed with chosen ids *masked* ([`crate::Config::mask_faults`]): the masked
//! faults are not applied, but every draw still happens, so the rest of the run stays aligned
//! with the original until the program itself reacts differently. This is what fault
//! minimization stands on.
//!
//! The verbs, one per way a fault comes up:
//! - [`inject`]: the test's own fault, a coin drawn from [`Stream::Faults`];
//! - [`draw`]: a component's fault, a coin drawn from the component's stream;
//! - [`arise`]: a fault the component already decided with its own draws (a nemesis action);
//! - [`follow`]: part of an event that happens anyway (a crash's damage), applied after the
//!   heal too;
//! - [`note`]: a fault the test applied explicitly (no id, nothing to mask).
//!
//! `buggify!` is FoundationDB's two-level coin: a site is enabled for a whole run with
//! probability 1/4 (drawn from the seed and the site's identity, so enabling does not depend
//! on which site is reached first), and an enabled site fires per evaluation with its ratio
//! (1/4 by default). Outside a simulation it is `false`.

pub(crate) mod ledger;

use std::time::Duration;

use crate::coverage::{Site, SiteKind, reach};
use crate::node::NodeId;
use crate::rng::{Ratio, Rng, Stream};
use crate::world;
use ledger::Cause;

/// The chance that a `buggify!` site is enabled for a run (FoundationDB's 25%).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// assert_eq!(crashtest::fault::SITE_ENABLED.to_string(), "1/4");
/// ```
pub const SITE_ENABLED: Ratio = Ratio::new(1, 4);
/// The chance that an enabled `buggify!()` site fires when evaluated (FoundationDB's 25%).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// assert_eq!(crashtest::fault::DEFAULT_FIRING.to_string(), "1/4");
/// ```
pub const DEFAULT_FIRING: Ratio = Ratio::new(1, 4);
/// The chance that a sleep is stretched when the stretch is on (FoundationDB's 25%).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// assert_eq!(crashtest::fault::STRETCH_CHANCE.to_string(), "1/4");
/// ```
pub const STRETCH_CHANCE: Ratio = Ratio::new(1, 4);

/// Draws whether a fault of the test's own happens, with probability `ratio`, from the
/// [`Stream::Faults`] stream. If it comes up and is not masked, it is noted on `node` (trace
/// and failure report) with `describe()` and `true` is returned. Outside a simulation it is
/// always `false`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{fault, node::NodeId, rng::Ratio, Sim};
///
/// Sim::new(1).run(async {
///     let dropped = fault::inject(NodeId::SUPERVISOR, Ratio::ALWAYS, || "drop".into());
///     assert!(dropped);
/// }).unwrap();
/// assert!(!fault::inject(NodeId::SUPERVISOR, Ratio::ALWAYS, || "drop".into()));
/// ```
pub fn inject(node: NodeId, ratio: Ratio, describe: impl FnOnce() -> String) -> bool {
    draw(Stream::Faults, node, ratio, describe)
}

/// Draws whether a simulator component's fault happens, from the component's `stream`, and
/// passes it to [`arise`] if the coin comes up; as [`inject`] otherwise.
#[doc(hidden)]
pub fn draw(stream: Stream, node: NodeId, ratio: Ratio, describe: impl FnOnce() -> String) -> bool {
    world::with(|w| {
        // Checked before the coin: a fault that does not come up would hide a bad node.
        assert!(
            node.index() < w.nodes.borrow().len(),
            "a fault drawn on {node}, which is not a node of the run"
        );
        let coin = w.with_stream(stream, |rng| rng.chance(ratio));
        let applied = coin && w.fault(stream, node, Cause::Drawn, describe);
        assert!(
            !applied || w.faults_enabled(),
            "a drawn fault applies only before the heal"
        );
        applied
    })
    .unwrap_or(false)
}

/// A fault the component decided with its own draws from `stream` came up on `node`: true if
/// it is to be applied (it then has an id and is listed in the failure report), false if the
/// run masks it or has healed. Outside a simulation it is `false`.
///
/// ```
/// use crashtest_core::{fault, node::NodeId, rng::Stream, Sim};
///
/// Sim::new(1).run(async {
///     assert!(fault::arise(Stream::Nemesis, NodeId::SUPERVISOR, || "kill".into()));
///     crashtest_core::fault::heal_all();
///     assert!(!fault::arise(Stream::Nemesis, NodeId::SUPERVISOR, || "kill".into()));
/// }).unwrap();
/// ```
#[doc(hidden)]
pub fn arise(stream: Stream, node: NodeId, describe: impl FnOnce() -> String) -> bool {
    world::with(|w| {
        // Checked first: after the heal the fault stops before anything looks at the node.
        assert!(
            node.index() < w.nodes.borrow().len(),
            "a fault arises on {node}, which is not a node of the run"
        );
        let applied = w.fault(stream, node, Cause::Drawn, describe);
        assert!(
            !applied || w.faults_enabled(),
            "a fault that arises applies only before the heal"
        );
        applied
    })
    .unwrap_or(false)
}

/// A fault that is part of another event came up: `false` if the run masks its id, so that a
/// minimizer can tell which part of the damage matters. The damage a crash does to a disk's
/// unsynced writes is part of the kill: the disk offers each part of it here. Unlike a drawn
/// fault it applies after the heal too, because a program may still kill a node then.
/// Outside a simulation it always applies.
///
/// ```
/// use crashtest_core::{Config, Sim, fault, plumbing, rng::Stream};
/// let failure = Sim::with_config(1, Config::default().mask_faults([1]))
///     .run(async {
///         let node = plumbing::current_node().unwrap();
///         assert!(fault::follow(Stream::Disk, node, || "page dropped".into()));
///         assert!(!fault::follow(Stream::Disk, node, || "page torn".into()));
///         panic!("report the faults");
///     })
///     .unwrap_err();
/// assert_eq!(failure.faults.len(), 1);
/// assert_eq!(failure.faults[0].id, Some(0));
/// ```
#[doc(hidden)]
pub fn follow(stream: Stream, node: NodeId, describe: impl FnOnce() -> String) -> bool {
    world::with(|w| w.fault(stream, node, Cause::Consequence, describe)).unwrap_or(true)
}

/// Notes a fault applied on behalf of `node` without a draw (a test's explicit partition):
/// it goes into the trace and into the list of faults that a failure report shows, with no
/// id (there is nothing to mask).
///
/// ```
/// let failed = crashtest_core::Sim::new(1).run(async {
///     let n = crashtest_core::node::create("a", || async {});
///     crashtest_core::fault::note(n.id(), "partitioned from b".into());
///     panic!("lost a write");
/// });
/// assert!(failed.unwrap_err().to_string().contains("a: partitioned from b"));
/// ```
#[doc(hidden)]
pub fn note(node: NodeId, text: String) {
    assert!(!text.is_empty(), "a fault says what it was");
    world::with(|w| w.note_fault(node, text));
}

/// Ends every fault of the running simulation: no fault is applied from now on, dead nodes
/// restart, paused nodes resume, and every healer ends its own (the liveness phase).
///
/// ```
/// use crashtest_core::node::{self, NodeStatus};
/// crashtest_core::Sim::new(1).run(async {
///     let n = node::create("a", || std::future::pending());
///     n.kill();
///     crashtest_core::fault::heal_all();
///     assert_eq!(n.status(), NodeStatus::Running);
///     assert!(!crashtest_core::fault::enabled());
/// }).unwrap();
/// ```
pub fn heal_all() {
    world::with(|w| w.heal());
}

/// False once the run has healed (and outside a simulation): a test's own fault injectors
/// stop then, as the components' do.
///
/// ```
/// crashtest_core::Sim::new(1).run(async {
///     assert!(crashtest_core::fault::enabled());
/// }).unwrap();
/// ```
pub fn enabled() -> bool {
    world::with(|w| w.faults_enabled()).unwrap_or(false)
}

/// Evaluates a `buggify!` site; see the module docs.
#[doc(hidden)]
pub fn buggify(site: &'static Site, ratio: Ratio) -> bool {
    assert_eq!(
        site.kind(),
        SiteKind::Buggify,
        "{site} is not a buggify! site"
    );
    let fired = world::with(|w| {
        let enabled = w.buggify_site_enabled(site);
        let coin = w.with_stream(Stream::Buggify, |rng| rng.chance(ratio));
        let fired = enabled
            && coin
            && w.fault(Stream::Buggify, w.current_node(), Cause::Drawn, || {
                format!("buggify {site}")
            });
        assert!(
            !fired || w.faults_enabled(),
            "a buggify! site fires only before the heal"
        );
        fired
    });
    match fired {
        Some(fired) => reach(site, fired),
        None => false,
    }
}

/// A heavy-tailed extra delay of at most `max`: `max · u^1000` for `u` uniform in `[0, 1)`
/// (FoundationDB's buggified delay; about 0.46% of stretches exceed 1% of `max`). Computed in
/// 32-bit fixed point so that it is the same on every platform.
pub(crate) fn stretch(rng: &mut Rng, max: Duration) -> Duration {
    const ONE: u64 = 1 << 32;
    let mut base = u64::from(rng.next_u32());
    let mut power = ONE;
    let mut exponent = 1000u32;
    while exponent > 0 {
        if exponent & 1 == 1 {
            power = (power * base) >> 32;
        }
        base = (base * base) >> 32;
        exponent >>= 1;
    }
    assert!(power <= ONE);
    let max_ns = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
    let stretched = Duration::from_nanos(((u128::from(max_ns) * u128::from(power)) >> 32) as u64);
    assert!(
        stretched <= max,
        "a stretch of {stretched:?} exceeds {max:?}"
    );
    stretched
}

/// True in some runs: an enabled site fires with `ratio` (default 1/4) per evaluation. Always
/// `false` outside a simulation. Use it to make rare paths common in simulation: an error
/// return, a short read, a slow path.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{buggify, Sim};
///
/// fn read_block() -> std::io::Result<Vec<u8>> {
///     if buggify!() {
///         return Err(std::io::ErrorKind::Interrupted.into());
///     }
///     Ok(vec![0; 512])
/// }
/// assert!(read_block().is_ok()); // never fires outside a simulation
/// Sim::new(1).run(async {
///     let _ = read_block(); // may fail, depending on the seed
/// }).unwrap();
/// ```
#[macro_export]
macro_rules! buggify {
    () => {
        $crate::buggify!($crate::fault::DEFAULT_FIRING)
    };
    ($ratio:expr) => {{
        #[$crate::coverage::__linkme::distributed_slice($crate::coverage::SITES)]
        #[linkme(crate = $crate::coverage::__linkme)]
        static SITE: $crate::coverage::Site = $crate::coverage::Site::new(
            $crate::coverage::SiteKind::Buggify,
            "buggify",
            ::core::file!(),
            ::core::line!(),
        );
        $crate::fault::buggify(&SITE, $ratio)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretch_is_heavy_tailed_and_bounded() {
        let mut rng = Rng::seed_from(1);
        let max = Duration::from_millis(200);
        let draws: Vec<Duration> = (0..100_000).map(|_| stretch(&mut rng, max)).collect();
        assert!(draws.iter().all(|d| *d <= max));
        let over_one_percent = draws.iter().filter(|d| **d > max / 100).count();
        // FoundationDB's shape: P(u^1000 > 0.01) = 1 - 0.01^(1/1000), about 0.46%.
        assert!((300..620).contains(&over_one_percent), "{over_one_percent}");
    }
}
