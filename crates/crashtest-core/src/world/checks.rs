//! Checks and per-run state: step checks run between polls, the run's first failure, the
//! report's context lines, and components' extensions.
//!
//! Invariants: a step check runs every `every` polls (`every > 0`), in registration order;
//! the first failure of a run is kept and later ones are dropped as consequences.

use super::*;

impl World {
    /// Runs the step checks that are due; the first that fails fails the run.
    ///
    /// It runs after every poll, so it allocates nothing: each check is looked at with the
    /// list borrowed only for that look, since a check may register another (which then
    /// first counts down from the next step, as the list's length is taken first).
    pub(super) fn run_step_checks(&self) {
        let count = self.step_checks.borrow().len();
        // Checks run between polls, on the supervisor's behalf.
        assert!(
            self.current_task.get().is_none(),
            "step checks ran inside a poll"
        );
        for index in 0..count {
            let due = {
                let mut checks = self.step_checks.borrow_mut();
                let c = &mut checks[index];
                assert!(
                    (1..=c.every).contains(&c.countdown),
                    "step check {:?} counts down from its period",
                    c.name
                );
                c.countdown -= 1;
                (c.countdown == 0).then(|| {
                    c.countdown = c.every;
                    (c.name.clone(), c.check.clone())
                })
            };
            let Some((name, check)) = due else { continue };
            // A check may register another: the list is not borrowed while it runs.
            assert!(
                self.step_checks.try_borrow_mut().is_ok(),
                "step check {name:?} ran under the list's borrow"
            );
            match panic_capture::catch(|| check()) {
                Ok(Ok(())) => {}
                Ok(Err(message)) => self.fail(FailureKind::Check {
                    invariant: name.to_string(),
                    message: format!("invariant {name:?}: {message}"),
                }),
                Err(panic) => self.fail(FailureKind::Panic {
                    message: format!("invariant {name:?} panicked: {}", panic.message),
                    location: panic.location,
                }),
            }
        }
        // A check may register others, never remove one: every index visited still exists.
        assert!(
            self.step_checks.borrow().len() >= count,
            "a step check was removed while the checks ran"
        );
    }

    pub(crate) fn add_step_check(&self, name: String, every: u64, check: Check) {
        assert!(every > 0, "a step check runs at least every poll");
        self.step_checks.borrow_mut().push(StepCheck {
            name: name.into(),
            every,
            countdown: every,
            check,
        });
    }

    pub(crate) fn add_context(&self, line: String) {
        self.context.borrow_mut().push(line);
    }

    /// Fails the run because the program made a call it cannot own; `message` names the call
    /// and what to use instead (see `plumbing::checks::refuse`).
    pub(crate) fn refuse(&self, message: String) {
        assert!(!message.is_empty(), "a refusal says what it refused");
        self.fail(FailureKind::Refused { message });
    }

    /// Records the first failure of the run; later ones are consequences and are dropped.
    pub(crate) fn fail(&self, kind: FailureKind) {
        let mut failure = self.failure.borrow_mut();
        if failure.is_none() {
            // Between polls the supervisor acts (see `current_node`), or a dropped task's
            // destructors.
            assert!(
                self.acts_as_it_should(),
                "a failure between polls, on node {}",
                self.current_node.get()
            );
            let node = self.current_task.get().map(|_| self.current_node.get());
            self.watch.failed(kind.to_string());
            *failure = Some((kind, node, self.current_task.get()));
        }
    }

    pub(crate) fn extension<T: Any + Default>(&self) -> Rc<T> {
        let key = TypeId::of::<T>();
        let found = self
            .extensions
            .borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone());
        let any = found.unwrap_or_else(|| {
            // `T::default()` is a component's code, which may ask for other extensions.
            assert!(
                self.extensions.try_borrow_mut().is_ok(),
                "an extension is made under the extensions' borrow"
            );
            let value: Rc<dyn Any> = Rc::new(T::default());
            self.extensions.borrow_mut().push((key, value.clone()));
            value
        });
        if crate::verify::enabled() {
            // Made once per type: a `T::default()` that asked for its own type would make two.
            let stored = self
                .extensions
                .borrow()
                .iter()
                .filter(|(k, _)| *k == key)
                .count();
            assert_eq!(stored, 1, "extension stored {stored} times under one type");
        }
        any.downcast::<T>()
            .unwrap_or_else(|_| unreachable!("extension stored under its TypeId"))
    }
}
