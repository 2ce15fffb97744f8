//! The history recorder: what each client asked of a shared object and what it saw, in the
//! order it happened.
//!
//! Events are ordered by a sequence number that the recorder hands out, not by their time:
//! inside a simulation many events share one virtual instant, and the sequence number says
//! exactly which came first, so "A returned before B was invoked" is never a guess. The
//! virtual time is kept beside it for the reader.
//!
//! Invariants: operation ids are dense and in invocation order; sequence numbers strictly
//! increase across all events; an operation completes at most once.
//!
//! The handle is an `Arc<Mutex<_>>` rather than an `Rc<RefCell<_>>` so that client tasks made
//! with the `Send`-bound `spawn` can hold it; inside a simulation the lock is never contended.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crashtest_core::time::Instant;

use crate::linearizability::{self, NonLinearizable};
use crate::model::Model;

/// Names one operation of a [`History`]: the n-th operation invoked.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// let history = crashtest::check::History::<u8, u8>::new();
/// let first = history.invoke(0, 1);
/// let second = history.invoke(1, 2);
/// assert_eq!((first.index(), second.index()), (0, 1));
/// assert!(first < second);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(usize);

impl OpId {
    /// The operation's position in invocation order, from 0.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// let history = crashtest::check::History::<u8, u8>::new();
    /// assert_eq!(history.invoke(0, 1).index(), 0);
    /// ```
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op {}", self.0)
    }
}

/// When an event happened: its position among all the events of the history (exact) and the
/// time then (virtual inside a simulation; for the reader).
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// let history = crashtest::check::History::<u8, u8>::new();
/// let op = history.invoke(0, 1);
/// history.ok(op, 2);
/// let recorded = &history.operations()[0];
/// assert_eq!(recorded.invoked.seq, 0);
/// assert_eq!(recorded.completed.unwrap().seq, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Position among all the events recorded in the history, from 0.
    pub seq: u64,
    /// The monotonic clock when the event was recorded.
    pub at: Instant,
}

/// How an operation ended, as far as its client knows.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Outcome};
///
/// let history = History::<&str, u8>::new();
/// let op = history.invoke(0, "read");
/// assert_eq!(history.operations()[0].outcome, Outcome::Pending);
/// history.unknown(op);
/// assert_eq!(history.operations()[0].outcome, Outcome::Unknown);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<O> {
    /// Invoked and not completed yet. At check time this counts as [`Outcome::Unknown`].
    Pending,
    /// It took effect and returned this output.
    Ok(O),
    /// It certainly did not take effect (for example, the server refused it). The checker
    /// leaves it out.
    Failed,
    /// It may or may not have taken effect (a timeout, a lost connection, a crashed client). The
    /// checker lets it take effect at any point after its invocation, or never.
    Unknown,
}

/// One operation of a history: who invoked what, when, and how it ended.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Outcome};
///
/// let history = History::new();
/// let op = history.invoke(7, "put x");
/// history.ok(op, "done");
/// let recorded = &history.operations()[0];
/// assert_eq!(recorded.client, 7);
/// assert_eq!(recorded.input, "put x");
/// assert_eq!(recorded.outcome, Outcome::Ok("done"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// Its id in the history.
    pub id: OpId,
    /// The client that invoked it, as the caller numbers clients.
    pub client: u64,
    /// What was asked.
    pub input: I,
    /// How it ended.
    pub outcome: Outcome<O>,
    /// When it was invoked.
    pub invoked: Stamp,
    /// When its client learned the outcome (`None` while pending).
    pub completed: Option<Stamp>,
}

/// A recorder of the operations that clients invoke on a shared object and of how each ended:
/// the input to the linearizability check.
///
/// A `History` is a cheap handle: clones record into the same history, so each client task
/// can own one. Record the invocation just before the request is sent and the outcome as soon
/// as it is known; an operation whose outcome is never recorded (its client was killed) counts
/// as possibly having taken effect.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Register, RegisterOp, RegisterOutput};
///
/// let history = History::new();
/// let write = history.invoke(0, RegisterOp::Write(1));
/// let read = history.invoke(1, RegisterOp::Read);
/// history.ok(write, RegisterOutput::Written);
/// history.ok(read, RegisterOutput::Value(1)); // concurrent with the write: may see it
/// assert!(history.check(&Register::new(0)).is_ok());
/// ```
pub struct History<I, O> {
    log: Arc<Mutex<Log<I, O>>>,
}

struct Log<I, O> {
    operations: Vec<Operation<I, O>>,
    next_seq: u64,
}

impl<I, O> Log<I, O> {
    fn stamp(&mut self) -> Stamp {
        let seq = self.next_seq;
        self.next_seq += 1;
        Stamp {
            seq,
            at: Instant::now(),
        }
    }
}

impl<I, O> History<I, O> {
    /// An empty history.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// let history = crashtest::check::History::<u8, u8>::new();
    /// assert!(history.is_empty());
    /// ```
    pub fn new() -> History<I, O> {
        History {
            log: Arc::new(Mutex::new(Log {
                operations: Vec::new(),
                next_seq: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Log<I, O>> {
        // A panic elsewhere while holding the lock leaves the log whole (every update is a
        // single assignment), so a poisoned lock is still safe to read.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `client` invoked an operation with `input`, and returns its id for
    /// [`ok`](History::ok), [`fail`](History::fail) or [`unknown`](History::unknown).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// let history = crashtest::check::History::<u8, u8>::new();
    /// let op = history.invoke(3, 42);
    /// assert_eq!(history.operations()[0].client, 3);
    /// # let _ = op;
    /// ```
    pub fn invoke(&self, client: u64, input: I) -> OpId {
        let mut log = self.lock();
        let invoked = log.stamp();
        let id = OpId(log.operations.len());
        log.operations.push(Operation {
            id,
            client,
            input,
            outcome: Outcome::Pending,
            invoked,
            completed: None,
        });
        id
    }

    /// Records that `op` took effect and returned `output`.
    ///
    /// # Panics
    ///
    /// If `op` is not an operation of this history or has already completed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, Outcome};
    /// let history = History::new();
    /// let op = history.invoke(0, "get");
    /// history.ok(op, 5);
    /// assert_eq!(history.operations()[0].outcome, Outcome::Ok(5));
    /// ```
    pub fn ok(&self, op: OpId, output: O) {
        self.complete(op, Outcome::Ok(output));
    }

    /// Records that `op` certainly did not take effect; the check leaves it out.
    ///
    /// # Panics
    ///
    /// If `op` is not an operation of this history or has already completed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, Outcome};
    /// let history = History::<&str, u8>::new();
    /// let op = history.invoke(0, "put");
    /// history.fail(op);
    /// assert_eq!(history.operations()[0].outcome, Outcome::Failed);
    /// ```
    pub fn fail(&self, op: OpId) {
        self.complete(op, Outcome::Failed);
    }

    /// Records that the client cannot tell whether `op` took effect (it timed out, or the
    /// connection broke). The check lets it take effect at any point after its invocation, or
    /// never, as Knossos and Porcupine do.
    ///
    /// # Panics
    ///
    /// If `op` is not an operation of this history or has already completed.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, Outcome};
    /// let history = History::<&str, u8>::new();
    /// let op = history.invoke(0, "put");
    /// history.unknown(op);
    /// assert_eq!(history.operations()[0].outcome, Outcome::Unknown);
    /// ```
    pub fn unknown(&self, op: OpId) {
        self.complete(op, Outcome::Unknown);
    }

    fn complete(&self, op: OpId, outcome: Outcome<O>) {
        let mut log = self.lock();
        let recorded = log.operations.len();
        assert!(
            op.0 < recorded,
            "{op} was not invoked on this history (it has {recorded} operations)"
        );
        assert!(
            matches!(log.operations[op.0].outcome, Outcome::Pending),
            "{op} completed twice: an operation has one outcome"
        );
        let completed = log.stamp();
        let operation = &mut log.operations[op.0];
        operation.outcome = outcome;
        operation.completed = Some(completed);
    }

    /// The number of operations invoked so far.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// let history = crashtest::check::History::<u8, u8>::new();
    /// history.invoke(0, 1);
    /// assert_eq!(history.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.lock().operations.len()
    }

    /// True if no operation was invoked yet.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// assert!(crashtest::check::History::<u8, u8>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the operations recorded so far, in invocation order.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// let history = crashtest::check::History::<u8, u8>::new();
    /// history.invoke(0, 1);
    /// history.invoke(1, 2);
    /// let inputs: Vec<u8> = history.operations().into_iter().map(|op| op.input).collect();
    /// assert_eq!(inputs, [1, 2]);
    /// ```
    pub fn operations(&self) -> Vec<Operation<I, O>>
    where
        I: Clone,
        O: Clone,
    {
        self.lock().operations.clone()
    }

    /// Checks that the history is linearizable with respect to `model`: that some order of
    /// the operations, each placed between its invocation and its return, is a run of the
    /// sequential `model` giving every output the clients saw. Operations still pending count
    /// as [`Outcome::Unknown`].
    ///
    /// The operations are split into the model's independent partitions (per key for a
    /// [`KvMap`](crate::KvMap)) and each is searched on its own.
    ///
    /// # Errors
    ///
    /// [`NonLinearizable`] with a smallest window of operations that no order explains.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, Register, RegisterOp, RegisterOutput};
    ///
    /// let history = History::new();
    /// let write = history.invoke(0, RegisterOp::Write(1));
    /// history.ok(write, RegisterOutput::Written);
    /// let read = history.invoke(1, RegisterOp::Read);
    /// history.ok(read, RegisterOutput::Value(0)); // stale: the write had returned
    /// let violation = history.check(&Register::new(0)).unwrap_err();
    /// assert_eq!(violation.window().len(), 2);
    /// ```
    pub fn check<M>(&self, model: &M) -> Result<(), NonLinearizable>
    where
        M: Model<Input = I, Output = O>,
    {
        linearizability::check(model, &self.lock().operations)
    }
}

impl<I, O> Clone for History<I, O> {
    fn clone(&self) -> History<I, O> {
        History {
            log: Arc::clone(&self.log),
        }
    }
}

impl<I, O> Default for History<I, O> {
    fn default() -> History<I, O> {
        History::new()
    }
}

impl<I, O> fmt::Debug for History<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("operations", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_order_every_event_of_every_client() {
        let history = History::<u8, u8>::new();
        let a = history.invoke(0, 1);
        let b = history.invoke(1, 2);
        history.ok(b, 20);
        history.unknown(a);
        let ops = history.operations();
        assert_eq!(ops[0].invoked.seq, 0);
        assert_eq!(ops[1].invoked.seq, 1);
        assert_eq!(ops[1].completed.unwrap().seq, 2);
        assert_eq!(ops[0].completed.unwrap().seq, 3);
    }

    #[test]
    fn clones_record_into_the_same_history() {
        let history = History::<u8, u8>::new();
        let other = history.clone();
        let op = other.invoke(0, 1);
        history.ok(op, 2);
        assert_eq!(other.operations()[0].outcome, Outcome::Ok(2));
    }

    #[test]
    #[should_panic(expected = "completed twice")]
    fn completing_an_operation_twice_panics() {
        let history = History::<u8, u8>::new();
        let op = history.invoke(0, 1);
        history.ok(op, 2);
        history.fail(op);
    }

    #[test]
    #[should_panic(expected = "was not invoked on this history")]
    fn completing_an_operation_of_another_history_panics() {
        let other = History::<u8, u8>::new();
        other.invoke(0, 1);
        let op = other.invoke(0, 1);
        History::<u8, u8>::new().ok(op, 2);
    }

    #[test]
    fn a_history_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<History<String, u64>>();
    }
}
