//! crashtest's own forks (a guided search's branches) run none of the fork handlers the
//! simulated program registered, so a seed draws the same after one as a fresh process draws
//! it; the program's own forks still run them.

#![cfg(guards)]

mod thread_rng;

use thread_rng::first_draw as draw;

/// Forks a child that leaves at once, and waits for it.
fn fork_and_reap(fork: impl FnOnce() -> libc::pid_t) {
    let pid = fork();
    if pid == 0 {
        // SAFETY: the child leaves at once, running nothing of the parent's.
        unsafe { libc::_exit(0) };
    }
    assert!(pid > 0, "fork failed: {}", std::io::Error::last_os_error());
    let mut status = 0;
    // SAFETY: `pid` is this process's child, not yet reaped.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
}

#[test]
fn thread_rng_draws_the_same_after_crashtests_own_fork_and_reseeds_after_the_programs() {
    let first = draw(39);
    assert_eq!(draw(39), first, "a seed draws the same twice");
    // SAFETY: the child only leaves.
    fork_and_reap(|| crashtest_guard::unseen_fork(|| unsafe { libc::fork() }));
    assert_eq!(
        draw(39),
        first,
        "rand's fork handler, registered inside a run, ran at crashtest's own fork"
    );
    // A fork of the program's own runs the handler, and rand reseeds, as it would outside.
    // SAFETY: the child only leaves.
    fork_and_reap(|| unsafe { libc::fork() });
    assert_ne!(draw(39), first, "rand's fork handler no longer runs at all");
}
