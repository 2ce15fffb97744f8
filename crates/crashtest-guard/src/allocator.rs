//! glibc's allocator, set once for a process that runs every seed on a fresh thread.
//!
//! A thread that ends hands its malloc arena back, and glibc trims the arena's free top on
//! the way (`madvise(MADV_DONTNEED)`) once it is larger than the trim threshold; the next
//! seed's thread takes the same arena and page-faults every page back in, zeroed by the
//! kernel. Blocks at or above the mmap threshold (a simulated disk's file image, a database's
//! page cache) are mapped and unmapped whole, faulting in again every time. glibc moves both
//! thresholds with what the process frees, but a sweep's threads come and go faster than they
//! settle: on redb-crash (a seed is about 0.8 ms) the faults and trims were a fifth of the CPU
//! time. So before the first fresh thread the process gets the thresholds glibc's own dynamic
//! rule stops at on 64-bit Linux: blocks up to 32 MiB come from the arena, and the arena keeps
//! up to 64 MiB of free top. Memory a seed frees stays with the process for the next seed;
//! the peak, which is what a run needs, is unchanged.
//!
//! A process that sets its own thresholds (`GLIBC_TUNABLES` naming one, or glibc's
//! `MALLOC_TRIM_THRESHOLD_` and `MALLOC_MMAP_THRESHOLD_` variables) keeps them, and so does
//! one whose glibc refuses these (a 32-bit glibc caps the mmap threshold at 512 KiB, so
//! only 64-bit targets ask; huge-page tunables lower the cap too). Other allocators (a
//! `#[global_allocator]`, another libc) ignore the call.

/// Blocks from this size up are mapped on their own: glibc's largest dynamic threshold on
/// 64-bit (`DEFAULT_MMAP_THRESHOLD_MAX`).
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;

/// Free top an arena keeps instead of handing it back: twice the mmap threshold, as glibc's
/// dynamic rule sets it.
#[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
const TRIM_THRESHOLD: libc::c_int = 2 * MMAP_THRESHOLD;

/// Sets the thresholds, the first time only, unless the process chose its own.
pub(crate) fn tune_for_fresh_threads() {
    #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
    {
        static TUNED: std::sync::Once = std::sync::Once::new();
        TUNED.call_once(|| {
            if user_chose_thresholds(|name| std::env::var_os(name)) {
                return;
            }
            // SAFETY: mallopt only sets the allocator's parameters; it is called outside any
            // simulation (`on_fresh_thread` checks) and takes no pointer.
            let mmap_set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) } == 1;
            // A refused mmap threshold leaves glibc's defaults, dynamic thresholds included;
            // a trim threshold set alone would turn the dynamic mmap threshold off.
            if mmap_set {
                // SAFETY: as above.
                let trim_set =
                    unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD) } == 1;
                // glibc bounds no trim threshold.
                assert!(trim_set, "glibc refused a trim threshold");
            }
        });
    }
}

/// Whether the environment sets either threshold, through glibc's tunables or its older
/// variables.
#[cfg_attr(
    not(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64")),
    allow(dead_code)
)]
fn user_chose_thresholds(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    let tunables = var("GLIBC_TUNABLES").unwrap_or_default();
    let tunables = tunables.to_string_lossy();
    ["glibc.malloc.trim_threshold", "glibc.malloc.mmap_threshold"]
        .iter()
        .any(|name| tunables.contains(name))
        || ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"]
            .iter()
            .any(|name| var(name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn thresholds_the_user_set_are_left_alone() {
        assert!(user_chose_thresholds(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0:glibc.malloc.trim_threshold=1000"
        )])));
        assert!(user_chose_thresholds(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.mmap_threshold=4096"
        )])));
        assert!(user_chose_thresholds(env(&[(
            "MALLOC_TRIM_THRESHOLD_",
            "0"
        )])));
        assert!(user_chose_thresholds(env(&[(
            "MALLOC_MMAP_THRESHOLD_",
            "1"
        )])));
    }

    #[test]
    fn other_tunables_do_not_count_as_a_choice_of_thresholds() {
        assert!(!user_chose_thresholds(env(&[])));
        assert!(!user_chose_thresholds(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.tcache_count=0"
        )])));
    }
}
