//! The heal for components: a healer ends the faults a component keeps (partitions, clogs)
//! when the run heals. Faults themselves go through [`crate::fault`]'s verbs.

use std::rc::Rc;

use crate::world;

/// Ends a component's faults when the run heals (the liveness phase): partitions, clogs,
/// degraded disks.
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// use crashtest_core::plumbing::{self, faults::Healer};
///
/// struct Clogs(Cell<u32>);
/// impl Healer for Clogs {
///     fn heal(&self) {
///         self.0.set(0);
///     }
/// }
/// crashtest_core::Sim::new(1).run(async {
///     let clogs = Rc::new(Clogs(Cell::new(3)));
///     plumbing::faults::add_healer(clogs.clone());
///     crashtest_core::fault::heal_all();
///     assert_eq!(clogs.0.get(), 0);
/// }).unwrap();
/// ```
pub trait Healer {
    /// Ends every fault this component has applied, and applies no new ones.
    fn heal(&self);
}

/// Registers a component that ends its faults when the run heals.
///
/// ```
/// use std::{cell::Cell, rc::Rc};
/// struct Partitions(Cell<bool>);
/// impl crashtest_core::plumbing::faults::Healer for Partitions {
///     fn heal(&self) { self.0.set(false) }
/// }
/// crashtest_core::Sim::new(1).run(async {
///     let partitions = Rc::new(Partitions(Cell::new(true)));
///     crashtest_core::plumbing::faults::add_healer(partitions.clone());
///     crashtest_core::fault::heal_all();
///     assert!(!partitions.0.get());
/// }).unwrap();
/// ```
pub fn add_healer(healer: Rc<dyn Healer>) {
    let added = world::with(|w| w.add_healer(healer));
    assert!(
        added.is_some(),
        "a healer is added for the rest of a run: inside a simulation"
    );
}
