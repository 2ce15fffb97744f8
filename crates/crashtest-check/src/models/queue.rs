//! `Queue`: a FIFO queue with enqueue and dequeue.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use crate::model::Model;

/// An operation on a [`Queue`].
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::QueueOp;
/// assert_ne!(QueueOp::Enqueue(1), QueueOp::Dequeue);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueOp<T> {
    /// Append an item at the back; returns [`QueueOutput::Enqueued`].
    Enqueue(T),
    /// Take the item at the front; returns [`QueueOutput::Dequeued`].
    Dequeue,
}

/// What an operation on a [`Queue`] returns.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::QueueOutput;
/// let empty: QueueOutput<u8> = QueueOutput::Dequeued(None);
/// assert_ne!(empty, QueueOutput::Enqueued);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueOutput<T> {
    /// An enqueue was applied.
    Enqueued,
    /// A dequeue took this item (`None`: the queue was empty).
    Dequeued(Option<T>),
}

/// A FIFO queue that starts empty.
///
/// A queue is one partition, and the order in which two overlapping enqueues took effect shows
/// only when the first of their items reaches the front, so the search may have to revisit
/// many choices. Measured on generated correct histories: sixty operations from three clients
/// check in at most a tenth of a second, but a hundred from five clients can take minutes, and
/// operations of unknown outcome make it worse (as with Knossos and Porcupine). Keep queue
/// histories short and lightly concurrent, or check a long run in independent stretches.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Queue, QueueOp, QueueOutput};
///
/// let history = History::new();
/// let a = history.invoke(0, QueueOp::Enqueue('a'));
/// let b = history.invoke(1, QueueOp::Enqueue('b'));
/// history.ok(a, QueueOutput::Enqueued);
/// history.ok(b, QueueOutput::Enqueued);
/// let take = history.invoke(2, QueueOp::Dequeue);
/// history.ok(take, QueueOutput::Dequeued(Some('b'))); // b may have gone first
/// assert!(history.check(&Queue::new()).is_ok());
/// ```
#[derive(Debug)]
pub struct Queue<T> {
    items: PhantomData<fn() -> T>,
}

impl<T> Queue<T> {
    /// The model of a queue that starts empty.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{Model, Queue};
    /// assert!(Queue::<u8>::new().init().is_empty());
    /// ```
    pub fn new() -> Queue<T> {
        Queue { items: PhantomData }
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Queue<T> {
        Queue::new()
    }
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Queue<T> {
        Queue::new()
    }
}

impl<T: Clone + Eq + Hash + Debug> Model for Queue<T> {
    type State = VecDeque<T>;
    type Input = QueueOp<T>;
    type Output = QueueOutput<T>;

    fn init(&self) -> VecDeque<T> {
        VecDeque::new()
    }

    fn step(
        &self,
        items: &VecDeque<T>,
        op: &QueueOp<T>,
        output: Option<&QueueOutput<T>>,
    ) -> Option<VecDeque<T>> {
        match (op, output) {
            (QueueOp::Enqueue(item), None | Some(QueueOutput::Enqueued)) => {
                let mut after = items.clone();
                after.push_back(item.clone());
                Some(after)
            }
            (QueueOp::Dequeue, None) => {
                let mut after = items.clone();
                after.pop_front();
                Some(after)
            }
            (QueueOp::Dequeue, Some(QueueOutput::Dequeued(taken))) => {
                if items.front() != taken.as_ref() {
                    return None;
                }
                let mut after = items.clone();
                after.pop_front();
                Some(after)
            }
            (op, Some(output)) => {
                panic!(
                    "a queue cannot answer {op:?} with {output:?}: the history pairs an operation with an output of another kind"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dequeue_must_take_the_front_item() {
        let queue = Queue::<u8>::new();
        let items = VecDeque::from([1, 2]);
        let took = |item| QueueOutput::Dequeued(item);
        assert_eq!(
            queue.step(&items, &QueueOp::Dequeue, Some(&took(Some(1)))),
            Some(VecDeque::from([2]))
        );
        assert_eq!(
            queue.step(&items, &QueueOp::Dequeue, Some(&took(Some(2)))),
            None
        );
        assert_eq!(
            queue.step(&items, &QueueOp::Dequeue, Some(&took(None))),
            None
        );
        assert_eq!(
            queue.step(&VecDeque::new(), &QueueOp::Dequeue, Some(&took(None))),
            Some(VecDeque::new())
        );
    }

    #[test]
    fn an_enqueue_appends_at_the_back() {
        let queue = Queue::<u8>::new();
        let after = queue.step(&VecDeque::from([1]), &QueueOp::Enqueue(2), None);
        assert_eq!(after, Some(VecDeque::from([1, 2])));
    }

    #[test]
    #[should_panic(expected = "cannot answer Dequeue with Enqueued")]
    fn an_output_of_another_kind_is_a_recording_mistake() {
        Queue::<u8>::new().step(
            &VecDeque::new(),
            &QueueOp::Dequeue,
            Some(&QueueOutput::Enqueued),
        );
    }
}
