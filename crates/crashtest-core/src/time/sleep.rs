//! `sleep` and `sleep_until`: futures that complete at a deadline.
//!
//! Inside a simulation a `Sleep` arms a timer in the world's timer heap the first time it is
//! polled before its deadline, refreshes the timer's waker on later polls, and removes the
//! timer when dropped early: cancelling a sleep (a lost `select!` branch, an elapsed
//! `timeout`) leaves nothing behind. Outside a simulation it is a `tokio::time::Sleep`.

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
/// use crashtest_core::{time, Sim};
/// use std::time::Duration;
///
/// Sim::new(1).run(async {
///     time::sleep(Duration::from_secs(3600)).await; // an hour, in no time
///     assert_eq!(time::Instant::now().as_nanos_since_start(), 3600 * 1_000_000_000);
/// }).unwrap();
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    let after = |now: Instant| {
        now.checked_add(duration)
            .unwrap_or(Instant::from_nanos(u64::MAX))
    };
    // One visit to the world for the clock and the timer's state: sleeps are the hottest
    // call of most simulated programs.
    let sim = world::with(|w| {
        let deadline = after(Instant::from_nanos(w.now_ns()));
        (deadline, sim_state(w, deadline))
    });
    match sim {
        Some((deadline, state)) => Sleep { deadline, state },
        None => sleep_until(after(Instant::now())),
    }
}

/// A simulated sleep's state before its first poll.
fn sim_state(w: &World, deadline: Instant) -> State {
    State::Sim {
        run: w.run_tag(),
        key: None,
        fire_at_ns: w.stretched_deadline(deadline.as_nanos_since_start()),
    }
}

/// Waits until `deadline`.
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// use crashtest_core::time::{self, Instant};
/// let deadline = Instant::now() + std::time::Duration::from_millis(5);
/// time::sleep_until(deadline).await;
/// assert_eq!(Instant::now(), deadline);
/// # }).unwrap();
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    let state = world::with(|w| sim_state(w, deadline)).unwrap_or_else(|| {
        State::Real(Box::pin(tokio::time::sleep_until(deadline.to_std().into())))
    });
    Sleep { deadline, state }
}

/// The future returned by [`sleep`] and [`sleep_until`].
///
/// ```
/// # crashtest_core::Sim::new(1).run(async {
/// let sleep: crashtest_core::time::Sleep = crashtest_core::time::sleep(std::time::Duration::from_secs(2));
/// sleep.await;
/// # }).unwrap();
/// ```
pub struct Sleep {
    deadline: Instant,
    state: State,
}

enum State {
    /// `fire_at_ns` is the deadline, possibly stretched (`Config::sleep_stretch`).
    Sim {
        run: u32,
        key: Option<TimerKey>,
        fire_at_ns: u64,
    },
    Real(Pin<Box<tokio::time::Sleep>>),
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl Sleep {
    /// When the sleep completes.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let s = crashtest_core::time::sleep(std::time::Duration::from_secs(1));
    /// assert_eq!(s.deadline().as_nanos_since_start(), 1_000_000_000);
    /// # }).unwrap();
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// True once the deadline has passed.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// let s = crashtest_core::time::sleep(std::time::Duration::ZERO);
    /// assert!(s.is_elapsed());
    /// # }).unwrap();
    /// ```
    pub fn is_elapsed(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Moves the deadline; the sleep can be awaited again.
    ///
    /// ```
    /// # crashtest_core::Sim::new(1).run(async {
    /// use crashtest_core::time::{self, Instant};
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
        match &mut this.state {
            State::Sim {
                run,
                key,
                fire_at_ns,
            } => {
                world::with(|w| {
                    assert!(
                        w.same_run(*run),
                        "a Sleep was reset in another simulation run"
                    );
                    if let Some(key) = key.take() {
                        w.cancel_timer(key);
                    }
                    *fire_at_ns = w.stretched_deadline(deadline.as_nanos_since_start());
                })
                .expect("a simulated Sleep was reset outside its simulation");
            }
            State::Real(sleep) => sleep.as_mut().reset(deadline.to_std().into()),
        }
    }
}

impl Future for Sleep {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.get_mut().state {
            State::Real(sleep) => poll_real(sleep, cx),
            State::Sim {
                run,
                key,
                fire_at_ns,
            } => world::with(|w| {
                assert!(
                    w.same_run(*run),
                    "a Sleep was awaited in another simulation run"
                );
                if w.now_ns() >= *fire_at_ns {
                    // The run loop fires every due timer before it polls a task, so this
                    // sleep's timer has fired already: there is nothing to cancel.
                    *key = None;
                    return Poll::Ready(());
                }
                match key {
                    Some(armed) if w.refresh_timer(*armed, cx.waker()) => {}
                    _ => *key = Some(w.arm_timer(*fire_at_ns, cx.waker().clone())),
                }
                Poll::Pending
            })
            .expect("a simulated Sleep was awaited outside its simulation"),
        }
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
        if let State::Sim {
            run,
            key: Some(key),
            ..
        } = &self.state
        {
            world::with(|w| w.same_run(*run).then(|| w.cancel_timer(*key)));
        }
    }
}
