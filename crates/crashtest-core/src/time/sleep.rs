//! `sleep` and `sleep_until`: futures that complete at a deadline.
//!
//! Inside a simulation a `Sleep` arms a timer in the world's timer heap the first time it is
//! polled before its deadline, refreshes the timer's waker on later polls, and removes the
//! timer when dropped early: cancelling a sleep (a lost `select!` branch, an elapsed
//! `timeout`) leaves nothing behind. Outside a simulation it is a `tokio::time::Sleep`.
//!
//! A `Sleep` is a flat struct, not an enum of the two cases, and `sleep` is inlined into its
//! caller: built from plain values in one place, it is stored field by field straight into
//! the awaiting future. As an enum built on two paths, it was assembled on the stack with
//! narrow stores and copied out with wide loads, which the CPU cannot forward from its store
//! buffer: that stall cost about an eighth of a simulated sleep.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Instant;
use super::timer_heap::TimerKey;
use crate::world::{self, World};

/// Waits until `duration` has elapsed.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{time, Sim};
/// use std::time::Duration;
///
/// Sim::new(1).run(async {
///     time::sleep(Duration::from_secs(3600)).await; // an hour, in no time
///     assert_eq!(time::Instant::now().as_nanos_since_start(), 3600 * 1_000_000_000);
/// }).unwrap();
/// ```
#[inline]
pub fn sleep(duration: Duration) -> Sleep {
    let after = |now: Instant| {
        now.checked_add(duration)
            .unwrap_or(Instant::from_nanos(u64::MAX))
    };
    // One visit to the world for the clock and the timer's state: sleeps are the hottest
    // call of most simulated programs.
    match world::with(|w| sim_parts(w, after(Instant::from_nanos(w.now_ns())))) {
        Some((deadline, run, fire_at_ns)) => Sleep::new(deadline, run, fire_at_ns, None),
        None => {
            let deadline = after(Instant::now());
            Sleep::new(deadline, 0, 0, Some(real_sleep(deadline)))
        }
    }
}

/// A simulated sleep's deadline, run and firing time.
#[inline]
fn sim_parts(w: &World, deadline: Instant) -> (Instant, u32, u64) {
    let fire_at_ns = w.stretched_deadline(deadline.as_nanos_since_start());
    // A stretch only delays: a sleep never fires before its deadline.
    debug_assert!(fire_at_ns >= deadline.as_nanos_since_start());
    (deadline, w.run_tag(), fire_at_ns)
}

/// Waits until `deadline`.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// use crashtest::time::{self, Instant};
/// let deadline = Instant::now() + std::time::Duration::from_millis(5);
/// time::sleep_until(deadline).await;
/// assert_eq!(Instant::now(), deadline);
/// # }).unwrap();
/// ```
#[inline]
pub fn sleep_until(deadline: Instant) -> Sleep {
    match world::with(|w| sim_parts(w, deadline)) {
        Some((deadline, run, fire_at_ns)) => Sleep::new(deadline, run, fire_at_ns, None),
        None => Sleep::new(deadline, 0, 0, Some(real_sleep(deadline))),
    }
}

/// Tokio's sleep, outside a simulation.
#[cold]
#[inline(never)]
fn real_sleep(deadline: Instant) -> Pin<Box<tokio::time::Sleep>> {
    Box::pin(tokio::time::sleep_until(deadline.to_std().into()))
}

/// The future returned by [`sleep`] and [`sleep_until`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// # crashtest::Sim::new(1).run(async {
/// let sleep: crashtest::time::Sleep = crashtest::time::sleep(std::time::Duration::from_secs(2));
/// sleep.await;
/// # }).unwrap();
/// ```
pub struct Sleep {
    deadline: Instant,
    /// Outside a simulation, tokio's sleep; `None` inside one, where the fields below apply.
    real: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The deadline, possibly stretched (`Config::sleep_stretch`).
    fire_at_ns: u64,
    /// The run the sleep belongs to.
    run: u32,
    /// The armed timer, once a poll before the deadline armed one.
    key: Option<TimerKey>,
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl Sleep {
    #[inline]
    fn new(
        deadline: Instant,
        run: u32,
        fire_at_ns: u64,
        real: Option<Pin<Box<tokio::time::Sleep>>>,
    ) -> Sleep {
        // A tokio sleep keeps its own deadline: the simulated fields stay unset.
        assert!(real.is_none() || (run == 0 && fire_at_ns == 0));
        Sleep {
            deadline,
            real,
            fire_at_ns,
            run,
            key: None,
        }
    }

    /// When the sleep completes.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let s = crashtest::time::sleep(std::time::Duration::from_secs(1));
    /// assert_eq!(s.deadline().as_nanos_since_start(), 1_000_000_000);
    /// # }).unwrap();
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// True once the deadline has passed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// let s = crashtest::time::sleep(std::time::Duration::ZERO);
    /// assert!(s.is_elapsed());
    /// # }).unwrap();
    /// ```
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Moves the deadline; the sleep can be awaited again.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// # crashtest::Sim::new(1).run(async {
    /// use crashtest::time::{self, Instant};
    /// use std::time::Duration;
    /// let mut s = Box::pin(time::sleep(Duration::from_secs(10)));
    /// s.as_mut().reset(Instant::now() + Duration::from_secs(1));
    /// s.await;
    /// assert_eq!(Instant::now().as_nanos_since_start(), 1_000_000_000);
    /// # }).unwrap();
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.deadline = deadline;
        if let Some(real) = &mut this.real {
            return real.as_mut().reset(deadline.to_std().into());
        }
        world::with(|w| {
            assert!(
                w.same_run(this.run),
                "a Sleep was reset in another simulation run"
            );
            if let Some(key) = this.key.take() {
                w.cancel_timer(key);
            }
            this.fire_at_ns = w.stretched_deadline(deadline.as_nanos_since_start());
            assert!(this.fire_at_ns >= deadline.as_nanos_since_start());
        })
        .expect("a simulated Sleep was reset outside its simulation");
    }
}

impl Future for Sleep {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(real) = &mut this.real {
            return poll_real(real, cx);
        }
        world::with(|w| {
            assert!(
                w.same_run(this.run),
                "a Sleep was awaited in another simulation run"
            );
            if w.now_ns() >= this.fire_at_ns {
                // What the caller sees: the sleep ends once its deadline is reached.
                assert!(
                    w.now_ns() >= this.deadline.as_nanos_since_start(),
                    "a sleep completed before its deadline"
                );
                // The run loop fires every due timer before it polls a task, so this sleep's
                // timer has fired already: there is nothing to cancel.
                if let Some(key) = this.key.take() {
                    debug_assert!(!w.timer_armed(key), "a due sleep's timer did not fire");
                }
                return Poll::Ready(());
            }
            match this.key {
                Some(armed) if w.refresh_timer(armed, cx.waker()) => {}
                _ => {
                    // The timer fires at `fire_at_ns`, still ahead: a key whose timer is gone
                    // means it went off early (or was cancelled behind the sleep's back).
                    assert!(
                        this.key.is_none(),
                        "a sleep's timer went off before its time"
                    );
                    this.key = Some(w.arm_timer(this.fire_at_ns, cx.waker().clone()));
                }
            }
            // A pending sleep is woken by its timer: one must be armed (every poll of a sleep:
            // debug builds only).
            debug_assert!(
                this.key.is_some_and(|key| w.timer_armed(key)),
                "a pending sleep has no armed timer"
            );
            Poll::Pending
        })
        .expect("a simulated Sleep was awaited outside its simulation")
    }
}

/// A tokio sleep's poll, kept out of line: the simulated path is the hot one.
#[cold]
#[inline(never)]
fn poll_real(sleep: &mut Pin<Box<tokio::time::Sleep>>, cx: &mut Context<'_>) -> Poll<()> {
    sleep.as_mut().poll(cx)
}

impl Drop for Sleep {
    #[inline]
    fn drop(&mut self) {
        // Only a simulated sleep holds a key (a tokio sleep drops its own timer).
        if let Some(key) = self.key {
            assert!(self.real.is_none(), "a tokio sleep holds a simulated timer");
            world::with(|w| w.same_run(self.run).then(|| w.cancel_timer(key)));
        }
    }
}
