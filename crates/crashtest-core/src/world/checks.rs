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
            match panic_capture::catch(|| check()) {
                Ok(Ok(())) => {}
                Ok(Err(message)) => self.fail(FailureKind::Check {
                    message: format!("invariant {name:?}: {message}"),
                }),
                Err(panic) => self.fail(FailureKind::Panic {
                    message: format!("invariant {name:?} panicked: {}", panic.message),
                    location: panic.location,
                }),
            }
        }
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

    /// Records the first failure of the run; later ones are consequences and are dropped.
    pub(crate) fn fail(&self, kind: FailureKind) {
        let mut failure = self.failure.borrow_mut();
        if failure.is_none() {
            let node = self.current_task.get().map(|_| self.current_node.get());
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
            let value: Rc<dyn Any> = Rc::new(T::default());
            self.extensions.borrow_mut().push((key, value.clone()));
            value
        });
        any.downcast::<T>()
            .unwrap_or_else(|_| unreachable!("extension stored under its TypeId"))
    }
}
