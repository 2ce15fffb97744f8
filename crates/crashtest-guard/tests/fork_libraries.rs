//! A shared library's `pthread_atfork` is a stub of its own that calls glibc's
//! `__register_atfork` by name, which the dynamic linker resolves to the guard: a library's
//! handler registered inside a simulation is kept from crashtest's own forks too, and runs at
//! the program's.

#![cfg(guards)]

use std::sync::atomic::{AtomicBool, Ordering};

type Handler = Option<unsafe extern "C" fn()>;
type Register = unsafe extern "C" fn(Handler, Handler, Handler, *mut libc::c_void) -> libc::c_int;

static CHILD_HANDLER_RAN: AtomicBool = AtomicBool::new(false);

extern "C" fn prepare() {}
extern "C" fn parent() {}
extern "C" fn child() {
    CHILD_HANDLER_RAN.store(true, Ordering::SeqCst);
}

/// Forks with `fork`; the child exits with 1 if the child handler ran in it, else 0. Returns
/// the child's exit code.
fn child_saw_handler(fork: impl FnOnce() -> libc::pid_t) -> i32 {
    let pid = fork();
    if pid == 0 {
        let ran = CHILD_HANDLER_RAN.load(Ordering::SeqCst);
        // SAFETY: the child leaves at once, running nothing of the parent's.
        unsafe { libc::_exit(i32::from(ran)) };
    }
    let mut status = 0;
    // SAFETY: `pid` is this process's child, not yet reaped.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    libc::WEXITSTATUS(status)
}

#[test]
fn a_librarys_handler_registered_inside_a_simulation_skips_only_crashtests_forks() {
    crashtest_guard::install();
    // What a shared library's stub calls: the name, looked up as the dynamic linker does.
    // SAFETY: the name is NUL-terminated; the symbol is glibc's registration or its guard.
    let register: Register = unsafe {
        let address = libc::dlsym(libc::RTLD_DEFAULT, c"__register_atfork".as_ptr());
        assert!(!address.is_null());
        std::mem::transmute(address)
    };
    crashtest_guard::on_fresh_thread(move || {
        crashtest_core::Sim::new(1)
            .run(async move {
                // SAFETY: three functions safe at a fork; no library handle.
                let registered = unsafe {
                    register(
                        Some(prepare),
                        Some(parent),
                        Some(child),
                        std::ptr::null_mut(),
                    )
                };
                assert_eq!(registered, 0);
            })
            .unwrap();
    });
    // SAFETY: the child only reads a flag and leaves.
    let own = child_saw_handler(|| crashtest_guard::unseen_fork(|| unsafe { libc::fork() }));
    assert_eq!(own, 0, "the library's handler ran at crashtest's own fork");
    // SAFETY: as above.
    let programs = child_saw_handler(|| unsafe { libc::fork() });
    assert_eq!(
        programs, 1,
        "the library's handler did not run at the program's fork"
    );
}
