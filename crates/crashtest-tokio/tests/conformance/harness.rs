//! Running a script on tokio and in simulations, and comparing what it saw.

use std::cell::RefCell;
use std::fmt::Debug;
use std::future::Future;
use std::rc::Rc;

/// Runs `script` on a current-thread tokio runtime whose clock starts paused.
pub(crate) fn on_tokio<F: Future>(script: F) -> F::Output {
    real::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a tokio runtime")
        .block_on(script)
}

/// Runs `script` as the body of a simulation of `seed`.
pub(crate) fn in_simulation<F>(seed: u64, script: F) -> F::Output
where
    F: Future + 'static,
{
    let out = Rc::new(RefCell::new(None));
    let slot = out.clone();
    crashtest::Sim::new(seed)
        .run(async move {
            *slot.borrow_mut() = Some(script.await);
        })
        .unwrap_or_else(|failure| panic!("the simulation failed: {failure}"));
    out.take().expect("the script ran to its end")
}

/// Runs a script on tokio and in simulations of a few seeds, and requires the same result.
pub(crate) fn same_everywhere<T, R, S>(on_real: R, on_stand_in: impl Fn() -> S)
where
    T: PartialEq + Debug,
    R: Future<Output = T>,
    S: Future<Output = T> + 'static,
{
    let expected = on_tokio(on_real);
    for seed in 0..4 {
        let got = in_simulation(seed, on_stand_in());
        assert_eq!(got, expected, "seed {seed} saw something tokio did not");
    }
}

/// Compares a script (a macro taking the tokio crate's name) across tokio and the stand-in.
macro_rules! conform {
    ($script:ident) => {
        $crate::harness::same_everywhere($script!(real), || $script!(crashtest_tokio))
    };
}

/// Milliseconds between two instants, as the scripts record times.
pub(crate) fn millis(from: std::time::Instant, to: std::time::Instant) -> u64 {
    u64::try_from(to.duration_since(from).as_millis()).expect("a test lasts less than an age")
}
