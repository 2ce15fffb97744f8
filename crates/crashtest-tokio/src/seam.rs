//! The stand-in's side of the seam: the per-call check, the registered components, refusals.
//!
//! [`sim`] is the one check a call pays outside a simulation (a thread-local read). The
//! network and the disk are registered by the `crashtest` facade; a simulation started
//! without it (through `crashtest_core::Sim` directly) has neither, and a stand-in network or
//! file call there is refused with a message saying so.

use crashtest_hooks::Simulator;

/// The simulation running on this thread, if any.
#[inline]
pub(crate) fn sim() -> Option<&'static dyn Simulator> {
    crashtest_hooks::current()
}

/// Fails the running simulation (if any) because `call` cannot be simulated, then panics,
/// which ends the calling task; the run reports the refusal, not the panic.
#[cold]
#[track_caller]
pub(crate) fn refuse(call: &str, instead: &str) -> ! {
    let message = format!("{call} cannot run inside a crashtest simulation: {instead}");
    if let Some(sim) = sim() {
        sim.fail(message.clone());
    }
    panic!("{message}");
}

/// A simulated object was used after its simulation ended (or on another thread).
#[cold]
#[track_caller]
pub(crate) fn outside(what: &str) -> ! {
    panic!("a simulated {what} was used outside the simulation that made it")
}
