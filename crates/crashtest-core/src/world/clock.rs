//! The clock: virtual time, the timers armed on it, the stretch of sleeps and the virtual
//! CPU cost of a poll.
//!
//! Invariants: virtual time never goes backwards; no timer is armed in the past; due timers
//! fire in deadline order, ties in arming order (the timer heap's order).

use super::*;

impl World {
    pub(super) fn fire_due_timers(&self) {
        // Timers fire between polls, outside every task.
        debug_assert!(
            self.current_task.get().is_none(),
            "timers fired inside a poll"
        );
        let now = self.now_ns.get();
        loop {
            let alarm = self.timers.borrow_mut().pop_due(now);
            let Some(alarm) = alarm else { break };
            // A waker or a callback may arm timers again: the heap is not borrowed now (else the
            // RefCell itself panics, less clearly: this says why, in debug builds).
            debug_assert!(
                self.timers.try_borrow_mut().is_ok(),
                "a timer went off under the timer heap's borrow"
            );
            self.polls_since_clock_moved.set(0);
            match alarm {
                // A simulator waker names its task: wake it here, without the call through
                // the waker's vtable and the thread-local that leads back to this world.
                Alarm::Wake(waker) => match crate::task::waker::task_of(&waker) {
                    Some((run, slot, serial_low)) => self.wake_packed(run, slot, serial_low),
                    None => waker.wake(),
                },
                Alarm::Call(callback) => self.run_callback(callback),
                Alarm::Function { function, argument } => {
                    self.run_callback(move || function(argument));
                }
            }
        }
        // Firing moves no time: only the run loop (and a poll's cost) does.
        debug_assert_eq!(self.now_ns.get(), now, "a timer's alarm moved the clock");
    }

    /// Runs a timer's callback; a panic in it fails the run like a panic in a task.
    fn run_callback(&self, callback: impl FnOnce()) {
        // Components rely on it: a callback never runs inside a task's poll.
        assert!(
            self.current_task.get().is_none(),
            "a timer's callback ran inside a poll"
        );
        if let Err(panic) = panic_capture::catch(callback) {
            self.fail(FailureKind::Panic {
                message: panic.message,
                location: panic.location,
            });
        }
    }

    /// Advances the clock by the configured per-poll cost of virtual CPU time.
    pub(super) fn charge_poll_cost(&self) {
        let (min, max) = self.config.poll_cost_ns;
        // `Config::poll_cost` refuses an empty range.
        debug_assert!(min <= max, "poll cost range {min}..={max} ns is empty");
        // Charged once the poll is over, by the run loop's side.
        assert!(
            self.current_task.get().is_none(),
            "a poll's cost was charged inside a poll"
        );
        if max > 0 {
            let cost = self
                .streams
                .borrow_mut()
                .scheduler()
                .range_inclusive(min, max);
            debug_assert!(
                (min..=max).contains(&cost),
                "a poll cost {cost} ns outside {min}..={max} ns"
            );
            let now = self.now_ns.get();
            self.now_ns
                .set(now.checked_add(cost).expect("virtual time overflowed"));
        }
    }

    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        self.now_ns.get()
    }

    #[inline]
    pub(crate) fn arm_timer(&self, deadline_ns: u64, waker: Waker) -> TimerKey {
        if self.probing.get() {
            // A task a deadlock's probe polls goes on to a sleep: it was not stuck.
            self.probe_went_on();
        }
        assert!(
            deadline_ns >= self.now_ns.get(),
            "a timer armed in the past"
        );
        let key = self
            .timers
            .borrow_mut()
            .insert_with(deadline_ns, || Alarm::Wake(waker));
        // The sleep keeps the key to refresh and cancel its timer: it must name the timer
        // just armed (every sleep that waits: debug builds only).
        debug_assert!(self.timer_armed(key), "a sleep's new key names no timer");
        key
    }

    /// Replaces the waker of an armed sleep; false if the timer already fired.
    #[inline]
    pub(crate) fn refresh_timer(&self, key: TimerKey, waker: &Waker) -> bool {
        match self.timers.borrow_mut().alarm_mut(key) {
            Some(Alarm::Wake(current)) => {
                if !current.will_wake(waker) {
                    *current = waker.clone();
                }
                true
            }
            Some(Alarm::Call(_) | Alarm::Function { .. }) => {
                panic!("a sleep's key names a callback timer")
            }
            None => false,
        }
    }

    pub(crate) fn call_at(&self, deadline_ns: u64, callback: Box<dyn FnOnce()>) -> TimerKey {
        self.arm_alarm(deadline_ns, Alarm::Call(callback))
    }

    pub(crate) fn call_function_at(
        &self,
        deadline_ns: u64,
        function: fn(u64),
        argument: u64,
    ) -> TimerKey {
        self.arm_alarm(deadline_ns, Alarm::Function { function, argument })
    }

    /// Arms a callback timer at `deadline_ns`, or now if that is past.
    fn arm_alarm(&self, deadline_ns: u64, alarm: Alarm) -> TimerKey {
        if self.probing.get() {
            self.probe_went_on();
        }
        debug_assert!(
            !matches!(alarm, Alarm::Wake(_)),
            "a sleep armed as a callback"
        );
        let deadline_ns = deadline_ns.max(self.now_ns.get());
        let key = self.timers.borrow_mut().insert_with(deadline_ns, || alarm);
        // The key handed back names the timer just armed, which a cancel must find.
        debug_assert!(
            self.timer_armed(key),
            "a callback timer's new key names no timer"
        );
        key
    }

    /// Whether `key` names a timer still armed (not fired, not disarmed).
    pub(crate) fn timer_armed(&self, key: TimerKey) -> bool {
        self.timers.borrow().is_armed(key)
    }

    /// Disarms a timer. What it held is dropped after the borrow ends: a callback's captures
    /// may have destructors that use the world.
    #[inline]
    pub(crate) fn cancel_timer(&self, key: TimerKey) {
        let removed = self.timers.borrow_mut().remove(key);
        assert!(!self.timer_armed(key), "a disarmed timer is still armed");
        drop(removed);
    }

    /// The deadline a sleep really fires at: stretched now and then when the run says so.
    #[inline]
    pub(crate) fn stretched_deadline(&self, deadline_ns: u64) -> u64 {
        let fire_at_ns = match self.config.sleep_stretch {
            None => deadline_ns,
            Some(max) => self.stretch(deadline_ns, max),
        };
        // A stretch only delays: the sleeps of the core and of the tokio stand-in rely on
        // never firing before their deadline.
        assert!(fire_at_ns >= deadline_ns, "a sleep stretched to fire early");
        fire_at_ns
    }

    #[cold]
    pub(super) fn stretch(&self, deadline_ns: u64, max: Duration) -> u64 {
        // Only a run configured to stretch sleeps draws for it.
        assert!(
            self.config.sleep_stretch == Some(max),
            "a sleep stretched by a bound the run did not set"
        );
        let extra = self.with_stream(Stream::Buggify, |rng| {
            rng.chance(crate::fault::STRETCH_CHANCE)
                .then(|| crate::fault::stretch(rng, max))
        });
        assert!(
            extra.is_none_or(|d| d <= max),
            "a sleep stretched past its bound"
        );
        let extra_ns = extra.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        deadline_ns.saturating_add(extra_ns)
    }
}
