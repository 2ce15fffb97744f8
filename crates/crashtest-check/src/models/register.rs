//! `Register`: one value with read, write and compare-and-set.

use std::fmt::Debug;
use std::hash::Hash;

use crate::model::{Effect, Model};

/// An operation on a [`Register`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::RegisterOp;
/// let cas = RegisterOp::CompareAndSet { expected: 1, new: 2 };
/// assert_ne!(cas, RegisterOp::Write(2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOp<V> {
    /// Read the value; returns [`RegisterOutput::Value`].
    Read,
    /// Replace the value; returns [`RegisterOutput::Written`].
    Write(V),
    /// Replace the value with `new` if it equals `expected`; returns
    /// [`RegisterOutput::Swapped`].
    CompareAndSet {
        /// The value the register must hold for the swap to happen.
        expected: V,
        /// The value it holds after a swap.
        new: V,
    },
}

/// What an operation on a [`Register`] returns.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::RegisterOutput;
/// let read: RegisterOutput<u8> = RegisterOutput::Value(3);
/// assert_ne!(read, RegisterOutput::Swapped(true));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOutput<V> {
    /// A read returned this value.
    Value(V),
    /// A write was applied.
    Written,
    /// A compare-and-set swapped (`true`) or found another value (`false`).
    Swapped(bool),
}

/// A single value with read, write and compare-and-set (a lock, a leader lease, one cell).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Register, RegisterOp, RegisterOutput};
///
/// let history = History::new();
/// let cas = history.invoke(0, RegisterOp::CompareAndSet { expected: 0, new: 1 });
/// history.ok(cas, RegisterOutput::Swapped(true));
/// let read = history.invoke(1, RegisterOp::Read);
/// history.ok(read, RegisterOutput::Value(1));
/// assert!(history.check(&Register::new(0)).is_ok());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Register<V> {
    initial: V,
}

impl<V> Register<V> {
    /// A register holding `initial` before any operation.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{Model, Register};
    /// assert_eq!(Register::new(Some("x")).init(), Some("x"));
    /// ```
    pub fn new(initial: V) -> Register<V> {
        Register { initial }
    }
}

impl<V: Clone + Eq + Hash + Debug> Model for Register<V> {
    type State = V;
    type Input = RegisterOp<V>;
    type Output = RegisterOutput<V>;

    fn init(&self) -> V {
        self.initial.clone()
    }

    fn step(&self, value: &V, op: &RegisterOp<V>, output: Option<&RegisterOutput<V>>) -> Option<V> {
        match (op, output) {
            (RegisterOp::Read, None) => Some(value.clone()),
            (RegisterOp::Read, Some(RegisterOutput::Value(seen))) => {
                (seen == value).then(|| value.clone())
            }
            (RegisterOp::Write(new), None | Some(RegisterOutput::Written)) => Some(new.clone()),
            (RegisterOp::CompareAndSet { expected, new }, None) => {
                Some(if value == expected { new } else { value }.clone())
            }
            (
                RegisterOp::CompareAndSet { expected, new },
                Some(RegisterOutput::Swapped(swapped)),
            ) => {
                let matches = value == expected;
                (*swapped == matches).then(|| if matches { new } else { value }.clone())
            }
            (op, Some(output)) => {
                panic!(
                    "a register cannot answer {op:?} with {output:?}: the history pairs an operation with an output of another kind"
                )
            }
        }
    }

    fn effect(&self, op: &RegisterOp<V>) -> Effect {
        match op {
            RegisterOp::Read => Effect::Reads,
            RegisterOp::Write(_) => Effect::Replaces,
            RegisterOp::CompareAndSet { .. } => Effect::Depends,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(value: u8, op: RegisterOp<u8>, output: Option<RegisterOutput<u8>>) -> Option<u8> {
        Register::new(0).step(&value, &op, output.as_ref())
    }

    #[test]
    fn a_read_must_see_the_current_value() {
        assert_eq!(
            step(4, RegisterOp::Read, Some(RegisterOutput::Value(4))),
            Some(4)
        );
        assert_eq!(
            step(4, RegisterOp::Read, Some(RegisterOutput::Value(5))),
            None
        );
    }

    #[test]
    fn compare_and_set_swaps_only_on_a_match() {
        let cas = RegisterOp::CompareAndSet {
            expected: 1,
            new: 2,
        };
        assert_eq!(
            step(1, cas.clone(), Some(RegisterOutput::Swapped(true))),
            Some(2)
        );
        assert_eq!(
            step(0, cas.clone(), Some(RegisterOutput::Swapped(true))),
            None
        );
        assert_eq!(
            step(0, cas.clone(), Some(RegisterOutput::Swapped(false))),
            Some(0)
        );
        assert_eq!(
            step(1, cas.clone(), Some(RegisterOutput::Swapped(false))),
            None
        );
    }

    #[test]
    fn an_operation_of_unknown_outcome_takes_its_effect() {
        let cas = RegisterOp::CompareAndSet {
            expected: 1,
            new: 2,
        };
        assert_eq!(step(1, cas.clone(), None), Some(2));
        assert_eq!(step(0, cas, None), Some(0));
        assert_eq!(step(0, RegisterOp::Write(9), None), Some(9));
        assert_eq!(step(3, RegisterOp::Read, None), Some(3));
    }

    #[test]
    fn effect_hints_agree_with_step() {
        let register = Register::new(0u8);
        let ops = [
            (RegisterOp::Read, RegisterOutput::Value(1)),
            (RegisterOp::Write(2), RegisterOutput::Written),
        ];
        for (op, output) in ops {
            for output in [None, Some(&output)] {
                let after: Vec<_> = (0..4u8).map(|v| register.step(&v, &op, output)).collect();
                match register.effect(&op) {
                    Effect::Reads => {
                        assert!(
                            (0..4u8)
                                .zip(&after)
                                .all(|(v, a)| a.is_none() || *a == Some(v))
                        )
                    }
                    Effect::Replaces => {
                        assert!(after.iter().all(|a| a.is_some() && *a == after[0]))
                    }
                    Effect::Depends => unreachable!("reads and writes have hints"),
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "cannot answer Read with Written")]
    fn an_output_of_another_kind_is_a_recording_mistake() {
        step(0, RegisterOp::Read, Some(RegisterOutput::Written));
    }
}
