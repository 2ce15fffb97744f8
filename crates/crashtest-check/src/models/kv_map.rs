//! `KvMap`: a key-value map with get, put and delete, partitioned by key.
//!
//! Keys are independent, so the model partitions by key and its state is one key's value:
//! a history of a thousand keys is a thousand small searches, not one huge one.

use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use crate::model::{Effect, Model};

/// An operation on a [`KvMap`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::KvOp;
/// assert_eq!(*KvOp::Put("k", 1).key(), "k");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOp<K, V> {
    /// Read a key; returns [`KvOutput::Value`].
    Get(K),
    /// Set a key; returns [`KvOutput::Done`].
    Put(K, V),
    /// Remove a key; returns [`KvOutput::Done`].
    Delete(K),
    /// Set a key to `new` (`None` removes it) if it holds `expected` (`None`: absent);
    /// returns [`KvOutput::Swapped`].
    CompareAndSet {
        /// The key.
        key: K,
        /// The value the key must hold for the swap to happen.
        expected: Option<V>,
        /// The value it then holds.
        new: Option<V>,
    },
}

impl<K, V> KvOp<K, V> {
    /// The key the operation touches.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::KvOp;
    /// assert_eq!(*KvOp::<_, u8>::Delete(3).key(), 3);
    /// ```
    pub fn key(&self) -> &K {
        match self {
            KvOp::Get(key)
            | KvOp::Put(key, _)
            | KvOp::Delete(key)
            | KvOp::CompareAndSet { key, .. } => key,
        }
    }
}

/// What an operation on a [`KvMap`] returns.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::KvOutput;
/// let missing: KvOutput<u8> = KvOutput::Value(None);
/// assert_ne!(missing, KvOutput::Done);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOutput<V> {
    /// A get found this value (`None`: the key is absent).
    Value(Option<V>),
    /// A put or delete was applied.
    Done,
    /// Whether a compare-and-set swapped.
    Swapped(bool),
}

/// A key-value map where every key starts absent.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, KvMap, KvOp, KvOutput};
///
/// let history = History::new();
/// let put = history.invoke(0, KvOp::Put("a", 1));
/// history.ok(put, KvOutput::Done);
/// let get = history.invoke(1, KvOp::Get("b"));
/// history.ok(get, KvOutput::Value(None));
/// assert!(history.check(&KvMap::new()).is_ok());
/// ```
#[derive(Debug)]
pub struct KvMap<K, V> {
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> KvMap<K, V> {
    /// The model of a map that starts empty.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{KvMap, Model};
    /// assert_eq!(KvMap::<String, u64>::new().init(), None);
    /// ```
    pub fn new() -> KvMap<K, V> {
        KvMap { types: PhantomData }
    }
}

impl<K, V> Default for KvMap<K, V> {
    fn default() -> KvMap<K, V> {
        KvMap::new()
    }
}

impl<K, V> Clone for KvMap<K, V> {
    fn clone(&self) -> KvMap<K, V> {
        KvMap::new()
    }
}

impl<K, V> Model for KvMap<K, V>
where
    K: Ord + Debug,
    V: Clone + Eq + Hash + Debug,
{
    /// One key's value (the model partitions by key).
    type State = Option<V>;
    type Input = KvOp<K, V>;
    type Output = KvOutput<V>;

    fn init(&self) -> Option<V> {
        None
    }

    fn step(
        &self,
        value: &Option<V>,
        op: &KvOp<K, V>,
        output: Option<&KvOutput<V>>,
    ) -> Option<Option<V>> {
        match (op, output) {
            (KvOp::Get(_), None) => Some(value.clone()),
            (KvOp::Get(_), Some(KvOutput::Value(seen))) => (seen == value).then(|| value.clone()),
            (KvOp::Put(_, new), None | Some(KvOutput::Done)) => Some(Some(new.clone())),
            (KvOp::Delete(_), None | Some(KvOutput::Done)) => Some(None),
            // An unknown compare-and-set took effect as it would have: swapped if it matched.
            (KvOp::CompareAndSet { expected, new, .. }, None) => Some(if value == expected {
                new.clone()
            } else {
                value.clone()
            }),
            (KvOp::CompareAndSet { expected, new, .. }, Some(KvOutput::Swapped(swapped))) => {
                match (value == expected, *swapped) {
                    (true, true) => Some(new.clone()),
                    (false, false) => Some(value.clone()),
                    _ => None,
                }
            }
            (op, Some(output)) => {
                panic!(
                    "a map cannot answer {op:?} with {output:?}: the history pairs an operation with an output of another kind"
                )
            }
        }
    }

    fn partition(&self, op: &KvOp<K, V>) -> impl Ord + Debug {
        op.key()
    }

    fn effect(&self, op: &KvOp<K, V>) -> Effect {
        match op {
            KvOp::Get(_) => Effect::Reads,
            KvOp::Put(..) | KvOp::Delete(_) => Effect::Replaces,
            KvOp::CompareAndSet { .. } => Effect::Depends,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compare_and_set_swaps_only_on_a_match() {
        let map = KvMap::<u8, u8>::new();
        let cas = |expected, new| KvOp::CompareAndSet {
            key: 0,
            expected,
            new,
        };
        let swapped = |b| KvOutput::Swapped(b);
        assert_eq!(
            map.step(&Some(1), &cas(Some(1), Some(2)), Some(&swapped(true))),
            Some(Some(2))
        );
        assert_eq!(
            map.step(&Some(1), &cas(Some(3), Some(2)), Some(&swapped(true))),
            None
        );
        assert_eq!(
            map.step(&Some(1), &cas(Some(3), Some(2)), Some(&swapped(false))),
            Some(Some(1))
        );
        assert_eq!(
            map.step(&Some(1), &cas(Some(1), Some(2)), Some(&swapped(false))),
            None
        );
        assert_eq!(map.step(&None, &cas(None, Some(5)), None), Some(Some(5)));
        assert_eq!(map.step(&Some(4), &cas(None, Some(5)), None), Some(Some(4)));
    }

    #[test]
    fn operations_on_one_key_share_a_partition_and_others_do_not() {
        let map = KvMap::<u8, u8>::new();
        assert!(map.partition(&KvOp::Get(1)) == map.partition(&KvOp::Delete(1)));
        assert!(map.partition(&KvOp::Get(1)) < map.partition(&KvOp::Put(2, 0)));
    }

    #[test]
    fn a_get_must_see_the_keys_value() {
        let map = KvMap::<u8, u8>::new();
        let seen = |v| KvOutput::Value(v);
        assert_eq!(
            map.step(&Some(1), &KvOp::Get(0), Some(&seen(Some(1)))),
            Some(Some(1))
        );
        assert_eq!(map.step(&Some(1), &KvOp::Get(0), Some(&seen(None))), None);
        assert_eq!(map.step(&Some(1), &KvOp::Delete(0), None), Some(None));
        assert_eq!(
            map.step(&None, &KvOp::Put(0, 2), Some(&KvOutput::Done)),
            Some(Some(2))
        );
    }

    #[test]
    fn effect_hints_agree_with_step() {
        let map = KvMap::<u8, u8>::new();
        let states = [None, Some(1), Some(2)];
        let ops = [
            (KvOp::Get(0), KvOutput::Value(Some(1))),
            (KvOp::Put(0, 2), KvOutput::Done),
            (KvOp::Delete(0), KvOutput::Done),
        ];
        for (op, output) in ops {
            for output in [None, Some(&output)] {
                let after: Vec<_> = states.iter().map(|s| map.step(s, &op, output)).collect();
                match map.effect(&op) {
                    Effect::Reads => assert!(
                        states
                            .iter()
                            .zip(&after)
                            .all(|(s, a)| a.is_none() || a.as_ref() == Some(s))
                    ),
                    Effect::Replaces => {
                        assert!(after.iter().all(|a| a.is_some() && *a == after[0]))
                    }
                    Effect::Depends => unreachable!("every map operation has a hint"),
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "cannot answer Put(0, 1) with Value(None)")]
    fn an_output_of_another_kind_is_a_recording_mistake() {
        KvMap::<u8, u8>::new().step(&None, &KvOp::Put(0, 1), Some(&KvOutput::Value(None)));
    }
}
