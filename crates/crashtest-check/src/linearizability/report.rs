//! `NonLinearizable`: the failure report, a smallest window of operations that no order can
//! explain, printed for a person.
//!
//! The report owns plain strings rather than the history's types so that it is `'static`,
//! `Send` and printable without the model, and can travel in a failure report or a panic.

use std::fmt;
use std::time::Duration;

use super::Ops;
use super::window::Window;
use crate::history::{OpId, Outcome, Stamp};
use crate::model::Model;

/// One operation of the window a [`NonLinearizable`] report shows.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Register, RegisterOp, RegisterOutput};
///
/// let history = History::new();
/// let write = history.invoke(0, RegisterOp::Write(1));
/// history.ok(write, RegisterOutput::Written);
/// let read = history.invoke(1, RegisterOp::Read);
/// history.ok(read, RegisterOutput::Value(0));
/// let report = history.check(&Register::new(0)).unwrap_err();
/// let last = &report.window()[1];
/// assert_eq!(last.id, read);
/// assert_eq!(last.client, 1);
/// assert_eq!(last.operation, "Read -> Value(0)");
/// assert_eq!(last.returned.unwrap().seq, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WindowOp {
    /// The operation's id in the history.
    pub id: OpId,
    /// The client that invoked it.
    pub client: u64,
    /// The model's description of it, with its output if it returned inside the window.
    pub operation: String,
    /// When it was invoked.
    pub invoked: Stamp,
    /// When it returned, if it returned an output inside the window; `None` if its outcome is
    /// unknown or came after the window.
    pub returned: Option<Stamp>,
}

/// A history that is not linearizable, with a smallest window of one partition's operations
/// that no order can explain.
///
/// The window holds the operations invoked from its first one up to the return that closes
/// it. Any operation that had not returned by then is treated as possibly having taken effect
/// at any point, and so is every earlier operation of the partition: the contradiction lies
/// inside the window whatever those did. Dropping the window's first operation or its last
/// event would leave a history that can be linearized.
///
/// Its `Debug` output is the readable report, so that `check(..).unwrap()` prints it.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
/// use crashtest::check::{History, Register, RegisterOp, RegisterOutput};
///
/// let history = History::new();
/// let write = history.invoke(0, RegisterOp::Write(1));
/// history.ok(write, RegisterOutput::Written);
/// let read = history.invoke(1, RegisterOp::Read);
/// history.ok(read, RegisterOutput::Value(0));
/// let report = history.check(&Register::new(0)).unwrap_err();
/// let text = report.to_string();
/// assert!(text.contains("Write(1) -> Written"));
/// assert!(text.contains("Read -> Value(0)"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct NonLinearizable {
    partition: String,
    failing_partitions: usize,
    partitions: usize,
    window: Vec<WindowOp>,
    relaxed: usize,
}

impl NonLinearizable {
    pub(super) fn new<M: Model>(
        model: &M,
        partition: String,
        (failing_partitions, partitions): (usize, usize),
        ops: Ops<'_, M>,
        window: Window,
    ) -> NonLinearizable {
        assert!(failing_partitions >= 1 && failing_partitions <= partitions);
        let shown: Vec<WindowOp> = ops[window.relaxed..]
            .iter()
            .take_while(|op| op.invoked.seq <= window.end)
            .map(|op| {
                let returned = match (&op.outcome, op.completed) {
                    (Outcome::Ok(output), Some(stamp)) if stamp.seq <= window.end => {
                        Some((output, stamp))
                    }
                    _ => None,
                };
                WindowOp {
                    id: op.id,
                    client: op.client,
                    operation: model.describe(&op.input, returned.map(|(output, _)| output)),
                    invoked: op.invoked,
                    returned: returned.map(|(_, stamp)| stamp),
                }
            })
            .collect();
        assert!(
            shown
                .iter()
                .any(|op| op.returned.is_some_and(|r| r.seq == window.end)),
            "the window ends with one of its operations returning"
        );
        NonLinearizable {
            partition,
            failing_partitions,
            partitions,
            window: shown,
            relaxed: window.relaxed,
        }
    }

    /// The failing partition's key, as the model's `partition` prints it with `{:?}` (`()`
    /// for models that do not partition).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, KvMap, KvOp, KvOutput};
    ///
    /// let history = History::new();
    /// let get = history.invoke(0, KvOp::<_, u8>::Get("a"));
    /// history.ok(get, KvOutput::Value(Some(1))); // never written
    /// assert_eq!(history.check(&KvMap::new()).unwrap_err().partition(), "\"a\"");
    /// ```
    pub fn partition(&self) -> &str {
        &self.partition
    }

    /// How many partitions failed (the report shows the first, in key order).
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, KvMap, KvOp, KvOutput};
    ///
    /// let history = History::new();
    /// for key in ["a", "b", "c"] {
    ///     let get = history.invoke(0, KvOp::<_, u8>::Get(key));
    ///     history.ok(get, KvOutput::Value(if key == "b" { None } else { Some(1) }));
    /// }
    /// assert_eq!(history.check(&KvMap::new()).unwrap_err().failing_partitions(), 2);
    /// ```
    pub fn failing_partitions(&self) -> usize {
        self.failing_partitions
    }

    /// The window's operations, in invocation order.
    ///
    /// ```
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } pub use crashtest_check as check; }
    /// use crashtest::check::{History, Register, RegisterOp, RegisterOutput};
    ///
    /// let history = History::new();
    /// let read = history.invoke(0, RegisterOp::Read);
    /// history.ok(read, RegisterOutput::Value(9));
    /// let report = history.check(&Register::new(0)).unwrap_err();
    /// assert_eq!(report.window().len(), 1);
    /// assert_eq!(report.window()[0].id, read);
    /// ```
    pub fn window(&self) -> &[WindowOp] {
        &self.window
    }
}

impl fmt::Display for NonLinearizable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A model's partitions are groups of keys checked on their own; a model that does not
        // split its history has one group, `()`, which names nothing worth printing.
        if self.partitions == 1 && self.partition == "()" {
            writeln!(f, "history is not linearizable")?;
        } else {
            writeln!(
                f,
                "history is not linearizable: key group {} ({} of {} key groups fail)",
                self.partition, self.failing_partitions, self.partitions
            )?;
        }
        writeln!(
            f,
            "no order of these {} operations explains what their clients saw:",
            self.window.len()
        )?;
        let rows: Vec<[String; 5]> = self
            .window
            .iter()
            .map(|op| {
                [
                    op.id.to_string(),
                    format!("client {}", op.client),
                    format!("invoked {}", stamp(op.invoked)),
                    op.returned.map_or_else(
                        || "no return in window".to_owned(),
                        |r| format!("returned {}", stamp(r)),
                    ),
                    op.operation.clone(),
                ]
            })
            .collect();
        let widths: Vec<usize> = (0..4)
            .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            write!(f, "  ")?;
            for (cell, width) in row.iter().zip(&widths) {
                write!(f, "{cell:<width$}  ")?;
            }
            writeln!(f, "{}", row[4])?;
        }
        write!(
            f,
            "(@n is the event's position in the recorded history; operations without a return \
             in the window, and the {} earlier operations of this partition, are taken to have \
             possibly taken effect at any time after their invocation)",
            self.relaxed
        )
    }
}

fn stamp(stamp: Stamp) -> String {
    let at = Duration::from_nanos(stamp.at.as_nanos_since_start());
    format!("@{} ({at:?})", stamp.seq)
}

/// Prints the readable report, so that `unwrap()` and `{:?}` show the window.
impl fmt::Debug for NonLinearizable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for NonLinearizable {}
