//! Whether the determinism guards are in the binary that calls [`guards_present`].

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// True if `std::time::Instant` follows virtual time inside a simulation, which only the
/// guards (the `clock_gettime` interposer) make it do.
pub fn guards_present() -> bool {
    const HOUR: Duration = Duration::from_secs(3600);
    crashtest::on_fresh_thread(|| {
        let elapsed = Rc::new(Cell::new(Duration::ZERO));
        let seen = elapsed.clone();
        crashtest::Sim::new(1)
            .run(async move {
                let start = Instant::now();
                crashtest::time::sleep(HOUR).await;
                seen.set(start.elapsed());
            })
            .unwrap();
        elapsed.get() == HOUR
    })
}
