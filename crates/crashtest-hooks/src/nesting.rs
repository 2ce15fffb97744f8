//! A per-thread count of nested scopes: "this thread is running code inside X" for a flag
//! that scopes set and that must hold for nested scopes and come back down on unwind.
//!
//! The hooks' host-files scope and the tokio stand-in's blocking region are both such flags.
//! Each is a `thread_local!` [`Nesting`] of its own; this is their one mechanism.

use std::cell::Cell;
use std::thread::LocalKey;

/// How many scopes are open on the thread that owns it (a `thread_local!`).
///
/// ```
/// use crashtest_hooks::Nesting;
/// thread_local! { static REGION: Nesting = const { Nesting::new() }; }
/// assert!(!Nesting::is_open(&REGION));
/// Nesting::within(&REGION, || {
///     Nesting::within(&REGION, || assert!(Nesting::is_open(&REGION)));
///     assert!(Nesting::is_open(&REGION), "the outer scope is still open");
/// });
/// assert!(!Nesting::is_open(&REGION));
/// let unwound = std::panic::catch_unwind(|| Nesting::within(&REGION, || panic!("inside")));
/// assert!(unwound.is_err());
/// assert!(!Nesting::is_open(&REGION), "an unwind closes the scope");
/// ```
#[derive(Debug)]
pub struct Nesting {
    open: Cell<u32>,
}

impl Nesting {
    /// No scope open.
    pub const fn new() -> Nesting {
        Nesting { open: Cell::new(0) }
    }

    /// Runs `f` inside a scope of `key` on this thread, closed when `f` returns or unwinds.
    pub fn within<R>(key: &'static LocalKey<Nesting>, f: impl FnOnce() -> R) -> R {
        /// Closes the scope when dropped, on return and on unwind alike.
        struct Scope(&'static LocalKey<Nesting>);
        impl Drop for Scope {
            fn drop(&mut self) {
                self.0.with(|nesting| {
                    let open = nesting.open.get();
                    assert!(open > 0, "a scope closes once");
                    nesting.open.set(open - 1);
                });
            }
        }
        key.with(|nesting| {
            let open = nesting.open.get();
            nesting
                .open
                .set(open.checked_add(1).expect("scopes nest finitely"));
        });
        let _scope = Scope(key);
        f()
    }

    /// True while a scope of `key` is open on this thread. False on a thread whose
    /// thread-locals are gone (a call from another thread-local's destructor).
    pub fn is_open(key: &'static LocalKey<Nesting>) -> bool {
        key.try_with(|nesting| nesting.open.get() > 0)
            .unwrap_or(false)
    }
}

impl Default for Nesting {
    fn default() -> Nesting {
        Nesting::new()
    }
}
