//! The blocking region: whether the code running inside a simulation is a blocking closure
//! (one given to `spawn_blocking` or `block_in_place`) rather than async code.
//!
//! tokio allows its blocking calls (`mpsc::Sender::blocking_send`, `Mutex::blocking_lock`,
//! ...) in a blocking closure and panics on them in async code, where they would stall a runtime thread. Inside a
//! simulation a blocking closure runs on the simulation's one thread, inside a task's poll,
//! so the stand-in marks the closure's run to tell the two apart as tokio does.
//!
//! Invariant: the region is open exactly while such a closure runs on this thread; closures
//! nest (a `block_in_place` inside a `spawn_blocking` closure), so it is a depth, and it is
//! closed on unwind too.

use crashtest_hooks::Nesting;

thread_local! {
    /// The blocking closures running on this thread, one inside another.
    static DEPTH: Nesting = const { Nesting::new() };
}

/// Runs the blocking closure `f` inside the region.
pub(crate) fn run<R>(f: impl FnOnce() -> R) -> R {
    Nesting::within(&DEPTH, f)
}

/// The future of a simulated `spawn_blocking` task: it runs `f` inside the region when first
/// polled.
pub(crate) async fn task<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    run(f)
}

/// True while a blocking closure runs on this thread.
fn inside() -> bool {
    Nesting::is_open(&DEPTH)
}

/// Refuses `call`, one of tokio's blocking calls made inside a simulation, unless a blocking
/// closure runs: in async code tokio panics, and `instead` says what to call there.
#[track_caller]
pub(crate) fn refuse_in_async_code(call: &str, instead: &str) {
    if !inside() {
        crate::seam::refuse(
            &format!("{call} in async code"),
            &format!(
                "tokio panics here (it cannot block a thread that runs async tasks); call \
                 {instead}"
            ),
        );
    }
}

/// Refuses `call`, a blocking call made inside a simulation from a blocking closure, that
/// would wait: what it waits for runs on the thread it would park, so `never` would happen
/// (what would never happen); `instead` says what to call.
#[cold]
#[track_caller]
pub(crate) fn refuse_wait(call: &str, never: &str, instead: &str) -> ! {
    crate::seam::refuse(
        call,
        &format!(
            "it would block the one thread every simulated node runs on, so {never}; {instead}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_open_only_inside_closures_and_closes_on_unwind() {
        assert!(!inside());
        run(|| {
            assert!(inside());
            run(|| assert!(inside()));
            assert!(inside(), "the outer closure still runs");
        });
        assert!(!inside());
        let unwound = std::panic::catch_unwind(|| run(|| panic!("inside")));
        assert!(unwound.is_err());
        assert!(!inside(), "an unwind closes the region");
    }
}
