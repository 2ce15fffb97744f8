//! Time: the virtual clock, shaped like `tokio::time`, and each node's wall clock.
//!
//! Inside a simulation time is virtual: it stands still while tasks run and jumps to the next
//! timer when none is ready, so an hour of sleeping costs nothing. Outside a simulation the
//! same functions use tokio's timers and the real clock.
//!
//! Two clocks, as on a real machine: [`Instant`] is monotonic and shared by every node (it
//! never goes backwards), while [`system_time`] is the calling node's wall clock, which may run
//! ahead or behind and drift (see [`crate::node::Builder`]).

mod instant;
mod interval;
mod sleep;
mod timeout;
pub(crate) mod timer_heap;

pub use instant::Instant;
pub use interval::{Interval, MissedTickBehavior, interval, interval_at};
pub use sleep::{Sleep, sleep, sleep_until};
pub use std::time::Duration;
pub use timeout::{Elapsed, Timeout, timeout, timeout_at};

use std::time::SystemTime;

use crate::world;

/// The calling node's wall clock: simulated (epoch drawn from the seed, plus the node's offset
/// and drift) inside a simulation, `SystemTime::now()` outside.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{node, time, Sim};
/// use std::time::{Duration, UNIX_EPOCH};
///
/// Sim::new(1).run(async {
///     let before = time::system_time();
///     time::sleep(Duration::from_secs(1)).await;
///     let after = time::system_time();
///     assert_eq!(after.duration_since(before).unwrap(), Duration::from_secs(1));
///     assert!(before.duration_since(UNIX_EPOCH).unwrap().as_secs() > 1_700_000_000);
/// }).unwrap();
/// ```
pub fn system_time() -> SystemTime {
    let sim = world::with(|w| w.nodes.borrow().wall_clock_ns(w.current_node(), w.now_ns()));
    match sim {
        Some(nanos) => {
            let time = crashtest_hooks::epoch::time_at(nanos);
            // The node's wall clock reads back as the nanoseconds it holds, on either side
            // of the epoch (Unix's `SystemTime` counts nanoseconds; Windows' counts 100 ns
            // steps and would round).
            #[cfg(unix)]
            assert_eq!(
                crashtest_hooks::epoch::nanos_since(time),
                Some(nanos),
                "a wall clock of {nanos} ns"
            );
            time
        }
        #[allow(
            clippy::disallowed_methods,
            reason = "the real clock outside simulations"
        )]
        None => SystemTime::now(),
    }
}
