//! The trace of a run: its events, the last few kept for reports, and the fingerprint.
//!
//! Every scheduling decision, timer jump, node life-cycle change and injected fault is an
//! [`Event`]. Each event is folded into a running 64-bit hash, the run's *fingerprint*
//! (FoundationDB's "unseed"): two runs of the same seed must end with the same fingerprint,
//! and the first event at which two fingerprints part names the first divergence.
//!
//! The hash is spelled out here (a multiply-xorshift fold of the event's integer words), not
//! taken from `std::hash`, whose algorithms may change between Rust versions: a fingerprint
//! must mean the same thing on every build.
//!
//! Keeping every event would cost memory in long runs, so the trace keeps a ring of the last
//! [`Trace::TAIL_LEN`] events for failure reports and records everything only on request
//! (replay, determinism checks).

use std::fmt;

use crate::node::NodeId;
use crate::task::TaskId;

/// What happened, without when.
///
/// ```
/// use crashtest_core::{trace::EventKind, Config, Sim};
/// let summary = Sim::with_config(1, Config::default().record_trace(true)).run(async {}).unwrap();
/// let trace = summary.trace.unwrap();
/// assert!(matches!(trace[0].kind, EventKind::Spawn { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventKind {
    /// A task was spawned on a node.
    Spawn {
        /// The new task.
        task: TaskId,
        /// The node it belongs to.
        node: NodeId,
    },
    /// The scheduler chose this task among the ready ones and polled it.
    Poll {
        /// The task polled.
        task: TaskId,
    },
    /// A task's future completed.
    Complete {
        /// The task that completed.
        task: TaskId,
    },
    /// A task was aborted through its `JoinHandle` or dropped with its node.
    Cancel {
        /// The task cancelled.
        task: TaskId,
    },
    /// Nothing was ready, so the clock jumped forward to the next timer.
    ClockJump,
    /// A node was created.
    NodeCreate {
        /// The new node.
        node: NodeId,
    },
    /// A node was killed: all its tasks were dropped.
    NodeKill {
        /// The node killed.
        node: NodeId,
    },
    /// A node was started again from its factory.
    NodeRestart {
        /// The node restarted.
        node: NodeId,
    },
    /// A node was restarted with a new factory.
    NodeUpgrade {
        /// The node upgraded.
        node: NodeId,
    },
    /// A node stopped being scheduled.
    NodePause {
        /// The node paused.
        node: NodeId,
    },
    /// A paused node is scheduled again.
    NodeResume {
        /// The node resumed.
        node: NodeId,
    },
    /// A node's wall clock was set off from true time.
    ClockOffset {
        /// The node whose clock moved.
        node: NodeId,
        /// The new offset in nanoseconds (negative: behind).
        offset_ns: i64,
    },
    /// A node's wall clock started running fast or slow.
    ClockDrift {
        /// The node whose clock drifts.
        node: NodeId,
        /// The new rate, in parts per million (negative: slow).
        ppm: i64,
    },
    /// A task panicked; the run fails.
    Panic {
        /// The task that panicked.
        task: TaskId,
    },
    /// An event recorded by a simulator component or by user code.
    Note {
        /// Who recorded it (a component name such as `"net"`, or `"user"`).
        source: &'static str,
        /// Integer facts that identify the event; they are hashed.
        words: [u64; 3],
        /// A human-readable description; it is hashed too.
        text: String,
    },
}

/// One event of a run: what happened, when, and on which node.
///
/// ```
/// use crashtest_core::{Config, Sim};
/// let summary = Sim::with_config(1, Config::default().record_trace(true)).run(async {}).unwrap();
/// let first = &summary.trace.unwrap()[0];
/// assert_eq!((first.index, first.time_ns), (0, 0));
/// println!("{first}"); // `#0  0.000000000s n0  spawn t0 on n0`
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The index of this event in the run (0 for the first).
    pub index: u64,
    /// Virtual time of the event, in nanoseconds since the start of the run.
    pub time_ns: u64,
    /// The node on whose behalf the event happened (the supervisor for the test body).
    pub node: NodeId,
    /// What happened.
    pub kind: EventKind,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.time_ns / 1_000_000_000;
        let nanos = self.time_ns % 1_000_000_000;
        write!(
            f,
            "#{:<8} {secs:>6}.{nanos:09}s {:<6} {}",
            self.index, self.node, self.kind
        )
    }
}

impl EventKind {
    /// The node an event acts on, when it is not the node it happened on (the node a kill
    /// hits, the node a task is spawned on).
    ///
    /// ```
    /// use crashtest_core::{trace::EventKind, Config, Sim};
    /// let summary = Sim::with_config(1, Config::default().record_trace(true))
    ///     .run(async { crashtest_core::node::create("a", std::future::pending).kill() })
    ///     .unwrap();
    /// let kill = summary.trace.unwrap().into_iter()
    ///     .find(|e| matches!(e.kind, EventKind::NodeKill { .. })).unwrap();
    /// assert_eq!(kill.kind.target().map(|n| n.index()), Some(1));
    /// ```
    pub fn target(&self) -> Option<NodeId> {
        match self {
            EventKind::Spawn { node, .. }
            | EventKind::NodeCreate { node }
            | EventKind::NodeKill { node }
            | EventKind::NodeRestart { node }
            | EventKind::NodeUpgrade { node }
            | EventKind::NodePause { node }
            | EventKind::NodeResume { node }
            | EventKind::ClockOffset { node, .. }
            | EventKind::ClockDrift { node, .. } => Some(*node),
            _ => None,
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventKind::Spawn { task, node } => write!(f, "spawn {task} on {node}"),
            EventKind::Poll { task } => write!(f, "poll {task}"),
            EventKind::Complete { task } => write!(f, "complete {task}"),
            EventKind::Cancel { task } => write!(f, "cancel {task}"),
            EventKind::ClockJump => write!(f, "clock jump"),
            EventKind::NodeCreate { node } => write!(f, "create {node}"),
            EventKind::NodeKill { node } => write!(f, "KILL {node}"),
            EventKind::NodeRestart { node } => write!(f, "RESTART {node}"),
            EventKind::NodeUpgrade { node } => write!(f, "UPGRADE {node}"),
            EventKind::NodePause { node } => write!(f, "PAUSE {node}"),
            EventKind::NodeResume { node } => write!(f, "RESUME {node}"),
            EventKind::ClockOffset { node, offset_ns } => {
                write!(f, "clock of {node} set off by {offset_ns} ns")
            }
            EventKind::ClockDrift { node, ppm } => write!(f, "clock of {node} drifts {ppm} ppm"),
            EventKind::Panic { task } => write!(f, "PANIC in {task}"),
            EventKind::Note {
                source,
                text,
                words,
            } if text.is_empty() => {
                write!(f, "{source}: {} {} {}", words[0], words[1], words[2])
            }
            EventKind::Note { source, text, .. } => write!(f, "{source}: {text}"),
        }
    }
}

/// Folds one word into a running hash (a multiply-xorshift step, stable by construction).
#[inline]
fn fold(hash: u64, word: u64) -> u64 {
    let mixed = (hash ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    mixed ^ (mixed >> 29)
}

/// Folds two words into a running hash with one 64x64->128 multiply (a wyhash-style mix):
/// half the dependent multiplies of two `fold`s, on the simulator's hottest path.
#[inline]
fn fold2(hash: u64, a: u64, b: u64) -> u64 {
    let product =
        u128::from(hash ^ a ^ 0xa076_1d64_78bd_642f) * u128::from(b ^ 0xe703_7ed1_a0b4_28db);
    (product as u64) ^ ((product >> 64) as u64)
}

impl EventKind {
    /// The integer words that identify this event kind, for hashing.
    fn words(&self) -> [u64; 4] {
        match self {
            EventKind::Spawn { task, node } => [1, task.to_u64(), u64::from(node.0), 0],
            EventKind::Poll { task } => [2, task.to_u64(), 0, 0],
            EventKind::Complete { task } => [3, task.to_u64(), 0, 0],
            EventKind::Cancel { task } => [4, task.to_u64(), 0, 0],
            EventKind::ClockJump => [5, 0, 0, 0],
            EventKind::NodeCreate { node } => [6, u64::from(node.0), 0, 0],
            EventKind::NodeKill { node } => [7, u64::from(node.0), 0, 0],
            EventKind::NodeRestart { node } => [8, u64::from(node.0), 0, 0],
            EventKind::NodeUpgrade { node } => [9, u64::from(node.0), 0, 0],
            EventKind::NodePause { node } => [10, u64::from(node.0), 0, 0],
            EventKind::NodeResume { node } => [11, u64::from(node.0), 0, 0],
            EventKind::ClockOffset { node, offset_ns } => {
                [12, u64::from(node.0), *offset_ns as u64, 0]
            }
            EventKind::Panic { task } => [13, task.to_u64(), 0, 0],
            EventKind::ClockDrift { node, ppm } => [15, u64::from(node.0), *ppm as u64, 0],
            EventKind::Note {
                source,
                words,
                text,
            } => {
                let mut text_hash = 0;
                for chunk in source.as_bytes().chunks(8).chain(text.as_bytes().chunks(8)) {
                    let mut word = [0u8; 8];
                    word[..chunk.len()].copy_from_slice(chunk);
                    text_hash = fold(text_hash, u64::from_le_bytes(word));
                }
                [14 ^ (text_hash << 8), words[0], words[1], words[2]]
            }
        }
    }
}

/// The record of a run in progress: the fingerprint, the tail, and optional full records.
#[derive(Debug)]
pub(crate) struct Trace {
    fingerprint: u64,
    events: u64,
    /// A ring of the last `TAIL_LEN` events: slot `i % TAIL_LEN` holds event `i`.
    tail: Vec<Event>,
    /// Every event, when the run records them (replay).
    full: Option<Vec<Event>>,
    /// The fingerprint after every event, when the run records them (determinism checks).
    hashes: Option<Vec<u64>>,
}

impl Trace {
    /// How many of the last events a failure report shows.
    pub(crate) const TAIL_LEN: usize = 64;

    pub(crate) fn new(seed: u64, record_events: bool, record_hashes: bool) -> Trace {
        Trace {
            fingerprint: fold(0x6372_6173_6874_6573, seed),
            events: 0,
            tail: Vec::with_capacity(Self::TAIL_LEN),
            full: record_events.then(Vec::new),
            hashes: record_hashes.then(Vec::new),
        }
    }

    /// Appends an event: folds it into the fingerprint and keeps it in the tail.
    #[inline]
    pub(crate) fn record(&mut self, time_ns: u64, node: NodeId, kind: EventKind) {
        let words = kind.words();
        let mut hash = fold2(self.fingerprint, time_ns, u64::from(node.0));
        hash = fold2(hash, words[0], words[1]);
        hash = fold2(hash, words[2], words[3]);
        self.fingerprint = hash;
        if let Some(hashes) = &mut self.hashes {
            hashes.push(hash);
        }
        let event = Event {
            index: self.events,
            time_ns,
            node,
            kind,
        };
        self.events += 1;
        if let Some(full) = &mut self.full {
            full.push(event.clone());
        }
        let slot = (event.index % Self::TAIL_LEN as u64) as usize;
        if slot < self.tail.len() {
            self.tail[slot] = event;
        } else {
            assert_eq!(slot, self.tail.len(), "the tail ring fills in order");
            self.tail.push(event);
        }
    }

    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub(crate) fn event_count(&self) -> u64 {
        self.events
    }

    /// The last events, oldest first.
    pub(crate) fn tail(&self) -> Vec<Event> {
        let split = (self.events % Self::TAIL_LEN as u64) as usize;
        if self.tail.len() < Self::TAIL_LEN {
            return self.tail.clone();
        }
        self.tail[split..]
            .iter()
            .chain(&self.tail[..split])
            .cloned()
            .collect()
    }

    pub(crate) fn take_full(&mut self) -> Option<Vec<Event>> {
        self.full.take()
    }

    pub(crate) fn take_hashes(&mut self) -> Option<Vec<u64>> {
        self.hashes.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(text: &str) -> EventKind {
        EventKind::Note {
            source: "test",
            words: [0; 3],
            text: text.to_owned(),
        }
    }

    #[test]
    fn fingerprint_depends_on_every_field() {
        let base = {
            let mut t = Trace::new(1, false, false);
            t.record(5, NodeId(0), note("a"));
            t.fingerprint()
        };
        let variants = [
            (2, 5, 0, "a"), // seed
            (1, 6, 0, "a"), // time
            (1, 5, 1, "a"), // node
            (1, 5, 0, "b"), // text
        ];
        for (seed, time, node, text) in variants {
            let mut t = Trace::new(seed, false, false);
            t.record(time, NodeId(node), note(text));
            assert_ne!(t.fingerprint(), base, "{seed} {time} {node} {text}");
        }
    }

    #[test]
    fn tail_keeps_only_the_last_events() {
        let mut t = Trace::new(0, false, false);
        for i in 0..(Trace::TAIL_LEN as u64 + 10) {
            t.record(i, NodeId(0), EventKind::ClockJump);
        }
        let tail = t.tail();
        assert_eq!(tail.len(), Trace::TAIL_LEN);
        assert_eq!(tail[0].index, 10);
        assert_eq!(t.event_count(), Trace::TAIL_LEN as u64 + 10);
    }
}
