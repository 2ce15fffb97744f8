//! A guarded call made inside a closure that the simulator runs on behalf of user code is
//! answered: the simulator holds none of its state borrowed while user code runs.

#![cfg(guards)]
#![allow(
    clippy::disallowed_methods,
    reason = "these tests read the clock where the guard cannot answer"
)]

use crashtest_core::{Sim, rng};

#[test]
fn the_wall_clock_is_answered_inside_a_node_rng_closure() {
    crashtest_guard::install();
    Sim::new(1)
        .run(async {
            let read = rng::node_rng().with(|_| std::time::SystemTime::now());
            assert_eq!(read, crashtest_core::time::system_time());
        })
        .unwrap();
}

#[test]
fn the_monotonic_clock_is_answered_inside_a_node_rng_closure() {
    crashtest_guard::install();
    Sim::new(1)
        .run(async {
            let start = rng::node_rng().with(|_| std::time::Instant::now());
            assert_eq!(start.elapsed(), std::time::Duration::ZERO);
        })
        .unwrap();
}
