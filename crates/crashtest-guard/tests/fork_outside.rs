//! rand 0.8 registers its fork handler once per process, at the first `thread_rng`; here that
//! is outside any simulation, and crashtest's own forks still leave the seed's draws as a
//! fresh process draws them. (A binary of its own: the registration happens once.)

#![cfg(guards)]

mod thread_rng;

use thread_rng::first_draw as draw;

#[test]
fn thread_rng_first_used_outside_a_simulation_still_draws_the_same_after_crashtests_fork() {
    crashtest_guard::install();
    let _outside: u64 = rand::Rng::r#gen(&mut rand::thread_rng());
    let first = draw(39);
    assert_eq!(draw(39), first, "a seed draws the same twice");
    // SAFETY: the child leaves at once, running nothing of the parent's.
    let pid = crashtest_guard::unseen_fork(|| unsafe { libc::fork() });
    if pid == 0 {
        // SAFETY: as above.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: `pid` is this process's child, not yet reaped.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert_eq!(
        draw(39),
        first,
        "crashtest's own fork changed the seed's draws"
    );
}
