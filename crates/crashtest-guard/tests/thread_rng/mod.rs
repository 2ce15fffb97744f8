//! Shared by the fork tests: what rand 0.8's `thread_rng`, whose fork handler reseeds it after
//! a fork, draws in a run.

use rand::Rng;

/// The first number rand 0.8's `thread_rng` draws in a run of `seed`, on a fresh thread.
pub(crate) fn first_draw(seed: u64) -> u64 {
    crashtest_guard::on_fresh_thread(move || {
        let drawn = std::rc::Rc::new(std::cell::Cell::new(0));
        let keep = drawn.clone();
        crashtest_core::Sim::new(seed)
            .run(async move { keep.set(rand::thread_rng().r#gen::<u64>()) })
            .unwrap();
        drawn.get()
    })
}
