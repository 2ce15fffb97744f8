//! Times as the simulation keeps them: signed nanoseconds since the Unix epoch (a node's wall
//! clock, a simulated file's times), and std's `SystemTime`, on either side of the epoch.
//!
//! The core, the simulated disk and the stand-in each hand such times to std; they convert
//! them here, so that a time reads back as the nanoseconds it was.

use std::time::{Duration, SystemTime};

/// The time `ns` nanoseconds from the Unix epoch (before it, if negative).
///
/// ```
/// use crashtest_hooks::epoch::{nanos_since, time_at};
/// assert_eq!(nanos_since(time_at(-1_500)), Some(-1_500));
/// assert_eq!(time_at(0), std::time::UNIX_EPOCH);
/// ```
pub fn time_at(ns: i64) -> SystemTime {
    let magnitude = Duration::from_nanos(ns.unsigned_abs());
    if ns >= 0 {
        SystemTime::UNIX_EPOCH + magnitude
    } else {
        SystemTime::UNIX_EPOCH - magnitude
    }
}

/// `time` as nanoseconds from the Unix epoch, negative before it; `None` beyond the ±292
/// years an `i64` holds.
///
/// ```
/// let later = std::time::UNIX_EPOCH + std::time::Duration::from_secs(2);
/// assert_eq!(crashtest_hooks::epoch::nanos_since(later), Some(2_000_000_000));
/// ```
pub fn nanos_since(time: SystemTime) -> Option<i64> {
    let signed = match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => i128::try_from(after.as_nanos()).ok(),
        Err(before) => i128::try_from(before.duration().as_nanos())
            .ok()
            .map(|n| -n),
    };
    signed.and_then(|ns| i64::try_from(ns).ok())
}
