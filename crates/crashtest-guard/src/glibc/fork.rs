//! Fork handlers: `__register_atfork`, behind every `pthread_atfork`.
//!
//! crashtest forks its own process to branch a run (a guided search's futures), and a branch
//! must be the very timeline that a fresh replay of its path runs, in a process that never
//! forked. A fork handler the simulated program registered runs at every fork and may change
//! what the program does next: rand 0.8 counts forks with one, and its `thread_rng` reseeds
//! from the OS (the run's `os-random` stream) at its first draw after a fork, so a branch, and
//! every seed a search ran after its first branch, drew other numbers than its replay line.
//!
//! `pthread_atfork` is a stub linked into each object (the executable and every shared
//! library) that calls glibc's `__register_atfork`, so the guard stands there and sees every
//! registration. It keeps a handler trio here, to run at every fork but crashtest's own
//! ([`unseen`]), when
//! - it is registered while a simulation runs on the calling thread: the program's; or
//! - its three handlers are one function, wherever it is registered: a handler called alike
//!   before and after a fork (rand's) only observes forks, and cannot be an allocator's pair
//!   of lock and unlock, which must run at every fork.
//!
//! Other trios go to glibc as before and run at every fork. The kept ones run from one trio
//! of this module's, registered with glibc at the first kept registration, in glibc's order
//! among themselves (preparers newest first, the others oldest first).
//!
//! Invariants:
//! - A handler is read only once published: its slot is written before the published count
//!   that covers it is raised, and a fork reads the count first. No lock is taken in a
//!   handler, so a fork while another thread registers cannot deadlock the child.
//! - Slots are never reused, and a full table hands further handlers to glibc. A kept
//!   handler is never unregistered, so a library that registers one inside a simulation must
//!   not be unloaded (`dlclose`) while the process forks.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use super::next::Next;

/// A fork handler as C declares it.
type Handler = Option<unsafe extern "C" fn()>;

type RegisterFn = unsafe extern "C" fn(Handler, Handler, Handler, *mut c_void) -> c_int;

// SAFETY: the C declaration of glibc's `__register_atfork`.
static REAL_REGISTER: Next<RegisterFn> = unsafe { Next::new(c"__register_atfork") };

/// How many handler trios the table keeps; a program registers a few.
const SLOTS: usize = 64;

/// The kept handlers, as addresses (0 for none): `[prepare, parent, child]` per slot.
static KEPT: [[AtomicUsize; 3]; SLOTS] = [const { [const { AtomicUsize::new(0) }; 3] }; SLOTS];
/// How many slots of [`KEPT`] are filled and may be read.
static PUBLISHED: AtomicUsize = AtomicUsize::new(0);
/// Serialises registrations (never taken by a handler).
static REGISTERING: Mutex<()> = Mutex::new(());
/// This module's trio, registered with glibc once.
static OURS: Once = Once::new();

thread_local! {
    /// Whether the calling thread is making one of crashtest's own forks. A fork runs its
    /// handlers on the thread that forks (and in the child, on its copy), so the flag is
    /// this thread's.
    static OWN_FORK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `fork` (which forks the process) as one of crashtest's own forks: the handlers the
/// simulated program registered do not run, in the parent or the child.
pub(crate) fn unseen<R>(fork: impl FnOnce() -> R) -> R {
    let earlier = OWN_FORK.replace(true);
    assert!(!earlier, "crashtest's own fork inside another");
    let forked = fork();
    // Both processes return here, each with its own copy of the flag.
    OWN_FORK.set(false);
    forked
}

/// glibc's `__register_atfork`, which every `pthread_atfork` calls: keeps the trios the
/// module's doc names, to run at every fork but crashtest's own; registers the others with
/// glibc.
///
/// # Safety
///
/// As for glibc's function: each handler is null or a function safe to call at a fork, and
/// `dso_handle` names the calling object (or is null).
#[unsafe(no_mangle)]
pub(super) unsafe extern "C" fn __register_atfork(
    prepare: Handler,
    parent: Handler,
    child: Handler,
    dso_handle: *mut c_void,
) -> c_int {
    let observer = prepare.is_some()
        && [parent, child]
            .iter()
            .all(|other| other.map(|h| h as usize) == prepare.map(|h| h as usize));
    if (observer || super::in_simulation()) && keep(prepare, parent, child) {
        return 0;
    }
    // SAFETY: the caller's arguments, unchanged, to the function this one hides.
    unsafe { REAL_REGISTER.get()(prepare, parent, child, dso_handle) }
}

/// Keeps a trio in the table; false if the table is full.
fn keep(prepare: Handler, parent: Handler, child: Handler) -> bool {
    let _registering = REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
    let slot = PUBLISHED.load(Ordering::Acquire);
    if slot == SLOTS {
        return false;
    }
    OURS.call_once(|| {
        // SAFETY: this module's handlers read only the published table and a thread-local; a
        // null object handle ties them to no library, as for the executable's own.
        let registered = unsafe {
            REAL_REGISTER.get()(
                Some(run_prepare),
                Some(run_parent),
                Some(run_child),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(registered, 0, "glibc refused a fork handler");
    });
    for (cell, handler) in KEPT[slot].iter().zip([prepare, parent, child]) {
        cell.store(handler.map_or(0, |h| h as usize), Ordering::Relaxed);
    }
    PUBLISHED.store(slot + 1, Ordering::Release);
    true
}

/// Calls the kept handlers of `moment` (0 prepare, 1 parent, 2 child) in `order`, unless the
/// fork is crashtest's own.
fn run_kept(moment: usize, newest_first: bool) {
    // A thread-local read after the thread destroyed it panics: no simulation forks then.
    if OWN_FORK.try_with(Cell::get).unwrap_or(false) {
        return;
    }
    let published = PUBLISHED.load(Ordering::Acquire);
    let mut call = |slot: usize| {
        let address = KEPT[slot][moment].load(Ordering::Relaxed);
        if address != 0 {
            // SAFETY: a handler address kept from `pthread_atfork`, whose caller vouched
            // for calling it at a fork.
            let handler: unsafe extern "C" fn() = unsafe { std::mem::transmute(address) };
            // SAFETY: as above.
            unsafe { handler() };
        }
    };
    if newest_first {
        (0..published).rev().for_each(&mut call);
    } else {
        (0..published).for_each(&mut call);
    }
}

extern "C" fn run_prepare() {
    run_kept(0, true);
}

extern "C" fn run_parent() {
    run_kept(1, false);
}

extern "C" fn run_child() {
    run_kept(2, false);
}

/// The guard, for [`super::link`].
pub(super) fn symbols() -> [*const (); 1] {
    [__register_atfork as *const ()]
}
