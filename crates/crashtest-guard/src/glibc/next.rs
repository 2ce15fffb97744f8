//! The libc functions behind the guards, found once and cached.
//!
//! A guard is a symbol of the executable that hides libc's symbol of the same name; outside a
//! simulation it forwards to the definition it hides. `dlsym(RTLD_NEXT, name)` finds that
//! definition: the next object after the executable in the lookup order, which is libc. The
//! lookup runs once per symbol and is cached in an atomic, so a forwarded call costs one load
//! and one indirect call. `dlsym` takes the loader's lock and may allocate, but calls none of
//! the guarded functions, so resolving a guard cannot recurse into a guard.

use std::ffi::{CStr, c_void};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The definition that a guard named `name` hides, typed as the C function pointer `F`.
pub(crate) struct Next<F> {
    name: &'static CStr,
    address: AtomicPtr<c_void>,
    signature: PhantomData<F>,
}

impl<F: Copy> Next<F> {
    /// The hidden definition of `name`, looked up on first use.
    ///
    /// # Safety
    ///
    /// `F` must be an `unsafe extern "C" fn` pointer type whose signature is the C
    /// declaration of `name`.
    pub(crate) const unsafe fn new(name: &'static CStr) -> Next<F> {
        assert!(
            size_of::<F>() == size_of::<*mut c_void>(),
            "a C function pointer is one machine word"
        );
        Next {
            name,
            address: AtomicPtr::new(std::ptr::null_mut()),
            signature: PhantomData,
        }
    }

    /// The function to forward to.
    ///
    /// # Panics
    ///
    /// Panics (and so aborts, in a guard) if libc lacks the symbol, which glibc never does
    /// for the guarded names.
    #[inline]
    pub(crate) fn get(&self) -> F {
        let mut address = self.address.load(Ordering::Acquire);
        if address.is_null() {
            // SAFETY: `name` is a NUL-terminated string and RTLD_NEXT is a valid pseudo-handle.
            // Racing threads may both look the symbol up; they store the same address.
            address = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) };
            assert!(!address.is_null(), "libc does not define {:?}", self.name);
            self.address.store(address, Ordering::Release);
        }
        // SAFETY: by the contract of `new`, `F` is the function pointer type of this symbol,
        // and on the supported targets a function pointer is a code address of the size of
        // `address` (checked in `new`).
        unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) }
    }
}

#[cfg(test)]
mod tests {
    use super::Next;

    type Getpid = unsafe extern "C" fn() -> libc::pid_t;

    #[test]
    fn finds_libc_definitions_and_caches_them() {
        // SAFETY: `getpid` takes nothing and returns a pid_t.
        let next: Next<Getpid> = unsafe { Next::new(c"getpid") };
        let first = next.get();
        assert_eq!(first as usize, next.get() as usize);
        // SAFETY: getpid has no preconditions.
        assert_eq!(unsafe { first() }, std::process::id() as libc::pid_t);
    }
}
