//! The `Model` trait: the sequential specification a history is checked against.
//!
//! A model says what one operation does to the object's state when operations run one at a
//! time. The checker looks for an order of the recorded operations that this specification
//! accepts. Models must be deterministic: the same state, input and output always give the same
//! next state, or the search's memo would prune orders that could still succeed.

use std::fmt::Debug;
use std::hash::Hash;

/// A sequential specification of a shared object.
///
/// Write one for your own object; [`Register`](crate::Register), [`KvMap`](crate::KvMap) and
/// [`Queue`](crate::Queue) are ready-made.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Model};
///
/// /// A counter: `true` adds one and returns the new value.
/// struct Counter;
///
/// impl Model for Counter {
///     type State = u64;
///     type Input = bool;
///     type Output = u64;
///
///     fn init(&self) -> u64 {
///         0
///     }
///
///     fn step(&self, count: &u64, add: &bool, seen: Option<&u64>) -> Option<u64> {
///         let next = if *add { count + 1 } else { *count };
///         match seen {
///             Some(value) if *value != next => None,
///             _ => Some(next),
///         }
///     }
/// }
///
/// let history = History::new();
/// let a = history.invoke(0, true);
/// let b = history.invoke(1, true);
/// history.ok(b, 1); // b took effect first
/// history.ok(a, 2);
/// assert!(history.check(&Counter).is_ok());
/// ```
pub trait Model {
    /// The object's state. The search memoises states, hence `Eq + Hash`.
    type State: Clone + Eq + Hash;
    /// An operation as a client asks it.
    type Input: Debug;
    /// What an operation returns.
    type Output: Debug;

    /// The state before any operation.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{Model, Register};
    /// assert_eq!(Register::new(5).init(), 5);
    /// ```
    fn init(&self) -> Self::State;

    /// The state after `input` takes effect in `state`, or `None` if a correct object in
    /// `state` could not have returned `output`.
    ///
    /// `output` is `None` when the client never learned the outcome: return the state after the
    /// operation takes effect (whatever it would have returned).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{Model, Register, RegisterOp, RegisterOutput};
    /// let register = Register::new(0);
    /// assert_eq!(register.step(&0, &RegisterOp::Write(3), Some(&RegisterOutput::Written)), Some(3));
    /// assert_eq!(register.step(&0, &RegisterOp::Read, Some(&RegisterOutput::Value(3))), None);
    /// assert_eq!(register.step(&0, &RegisterOp::Write(3), None), Some(3));
    /// ```
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;

    /// The independent part of the object that `input` touches (P-compositionality: a history
    /// is linearizable if and only if each partition's sub-history is, so each is searched on
    /// its own). The default puts every operation in one partition; a map partitions by key.
    ///
    /// The model's state then describes one partition: [`init`](Model::init) is one
    /// partition's initial state.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{KvMap, KvOp, Model};
    /// let map = KvMap::<&str, u8>::new();
    /// let a = map.partition(&KvOp::Get("a"));
    /// let b = map.partition(&KvOp::Put("a", 1));
    /// assert!(a == b);
    /// ```
    fn partition(&self, input: &Self::Input) -> impl Ord + Debug {
        let _ = input;
    }

    /// What `input` does to the state, as a hint that lets the search skip placements of
    /// operations of unknown outcome that cannot matter. The default, [`Effect::Depends`], is
    /// always correct; a wrong hint makes the check wrong.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{Effect, Model, Register, RegisterOp};
    /// let register = Register::new(0);
    /// assert_eq!(register.effect(&RegisterOp::Read), Effect::Reads);
    /// assert_eq!(register.effect(&RegisterOp::Write(1)), Effect::Replaces);
    /// ```
    fn effect(&self, input: &Self::Input) -> Effect {
        let _ = input;
        Effect::Depends
    }

    /// A one-line description of an operation for failure reports; `output` is `None` when the
    /// operation had not returned in the reported window.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{Model, Register, RegisterOp, RegisterOutput};
    /// let register = Register::new(0);
    /// let line = register.describe(&RegisterOp::Read, Some(&RegisterOutput::Value(4)));
    /// assert_eq!(line, "Read -> Value(4)");
    /// assert_eq!(register.describe(&RegisterOp::Write(4), None), "Write(4) -> ?");
    /// ```
    fn describe(&self, input: &Self::Input, output: Option<&Self::Output>) -> String {
        match output {
            Some(output) => format!("{input:?} -> {output:?}"),
            None => format!("{input:?} -> ?"),
        }
    }
}

/// What an operation does to the model's state, whatever it returns (see [`Model::effect`]).
///
/// With these hints, timed-out reads drop out of the search and a timed-out write is never
/// tried just before an operation that would overwrite it, which keeps histories with many
/// timeouts on one register or key cheap to check.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{Effect, KvMap, KvOp, Model};
/// let map = KvMap::<u8, u8>::new();
/// assert_eq!(map.effect(&KvOp::Get(1)), Effect::Reads);
/// assert_eq!(map.effect(&KvOp::Delete(1)), Effect::Replaces);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Leaves the state as it was (a read): `step` returns `None` or the state it was given.
    Reads,
    /// Leaves a state that does not depend on the one before (a blind write): for a given
    /// output, `step` returns the same `Some(state)` from every state.
    Replaces,
    /// Anything else.
    Depends,
}
