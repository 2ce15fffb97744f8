//! Cache prefetch hints for the run loop's random reads.
//!
//! The simulator's hot path is a chain of reads at scattered addresses: a timer's slot, the
//! task it wakes, that task's future. Each is known a little before it is needed (a timer
//! joins the due queue before it fires; a task is woken several polls before it is polled),
//! so the loop asks the CPU to start loading it then. A hint changes no state and never
//! faults, so it cannot change what a run does, only how long its misses take.

/// Starts loading the cache line that holds `value` (a no-op on targets without a stable
/// prefetch instruction).
#[inline(always)]
pub(crate) fn prefetch<T: ?Sized>(value: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the intrinsic needs SSE, which every x86-64 CPU has. The address is no
    // precondition: a prefetch is a hint that never faults and writes nothing.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(value.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
