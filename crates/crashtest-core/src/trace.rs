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
//! `Trace::TAIL_LEN` events for failure reports and records everything only on request
//! (replay, determinism checks). The ring holds events packed into 32 bytes of integers
//! (a note's text waits in a ring beside it), so recording costs two multiplies and a few
//! stores: the executor records several events per poll.
//!
//! A recorded run can also hand each event to a [`TraceStream`] as it happens, so that a
//! run that takes its process down (an abort, a segfault, `process::exit`, the watchdog)
//! still leaves every event up to that point: a trace kept only in memory dies with it.
//! Streaming sits behind the same flag as recording, so runs that keep no trace pay nothing.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

use crate::node::NodeId;
use crate::task::TaskId;

/// What happened, without when.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{trace::EventKind, Config, Sim};
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
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::{Config, Sim};
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
    /// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
    /// use crashtest::{trace::EventKind, Config, Sim};
    /// let summary = Sim::with_config(1, Config::default().record_trace(true))
    ///     .run(async { crashtest::node::create("a", std::future::pending).kill() })
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

impl EventKind {
    /// Whether the process may die right after this event: a fault was injected (a user's
    /// code may abort on what it sees), a node was killed, a task panicked.
    fn may_precede_death(&self) -> bool {
        match self {
            EventKind::NodeKill { .. } | EventKind::Panic { .. } => true,
            EventKind::Note { source, .. } => *source == "fault",
            _ => false,
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
            } if text.is_empty() => match crashtest_protocol::NetNote::decode(source, *words) {
                // The network records packets as bare words, to cost no formatting per
                // packet; a reader gets them in words.
                Some(note) => write!(f, "{note}"),
                None => write!(f, "{source}: {} {} {}", words[0], words[1], words[2]),
            },
            EventKind::Note { source, text, .. } => write!(f, "{source}: {text}"),
        }
    }
}

/// Receives a recorded run's events as they happen (see [`crate::Config::stream_trace`]).
///
/// The simulation calls it from its own thread, in event order. An implementation buffers as
/// it likes but must make everything handed over durable on [`TraceStream::flush`], which
/// the simulation calls right after each event that may precede the process's death: an
/// injected fault, a node killed, a panic.
///
/// ```
/// # mod crashtest { pub use crashtest_core::*; pub mod rand { pub use crashtest_core::rng::{*, node_rng as rng}; } }
/// use crashtest::trace::{Event, TraceStream};
/// use crashtest::{node::NodeId, Config, Sim};
/// use std::sync::{Arc, Mutex};
///
/// #[derive(Default)]
/// struct Count(Mutex<(u64, Vec<String>)>);
/// impl TraceStream for Count {
///     fn name_node(&self, _node: NodeId, name: &str) { self.0.lock().unwrap().1.push(name.into()) }
///     fn event(&self, _event: &Event) { self.0.lock().unwrap().0 += 1 }
///     fn flush(&self) {}
/// }
/// let count = Arc::new(Count::default());
/// let config = Config::default().stream_trace(count.clone());
/// let summary = Sim::with_config(1, config).run(async {}).unwrap();
/// let (events, names) = &*count.0.lock().unwrap();
/// assert_eq!(*events, summary.events);
/// assert_eq!(names, &["supervisor"]);
/// ```
pub trait TraceStream: Send + Sync {
    /// A node got its name; it comes before the node's first event.
    fn name_node(&self, node: NodeId, name: &str);
    /// The next event of the run.
    fn event(&self, event: &Event);
    /// Make every event handed over so far durable: the process may die next.
    fn flush(&self);
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

/// Event codes in the packed tail and the fingerprint (stable: a fingerprint must mean the
/// same thing on every build).
mod code {
    pub(super) const SPAWN: u32 = 1;
    pub(super) const POLL: u32 = 2;
    pub(super) const COMPLETE: u32 = 3;
    pub(super) const CANCEL: u32 = 4;
    pub(super) const CLOCK_JUMP: u32 = 5;
    pub(super) const NODE_CREATE: u32 = 6;
    pub(super) const NODE_KILL: u32 = 7;
    pub(super) const NODE_RESTART: u32 = 8;
    pub(super) const NODE_UPGRADE: u32 = 9;
    pub(super) const NODE_PAUSE: u32 = 10;
    pub(super) const NODE_RESUME: u32 = 11;
    pub(super) const CLOCK_OFFSET: u32 = 12;
    pub(super) const PANIC: u32 = 13;
    pub(super) const NOTE: u32 = 14;
    pub(super) const CLOCK_DRIFT: u32 = 15;

    /// Every code: each is a distinct, nonzero value (a zero is an empty ring slot).
    const ALL: [u32; 15] = [
        SPAWN,
        POLL,
        COMPLETE,
        CANCEL,
        CLOCK_JUMP,
        NODE_CREATE,
        NODE_KILL,
        NODE_RESTART,
        NODE_UPGRADE,
        NODE_PAUSE,
        NODE_RESUME,
        CLOCK_OFFSET,
        PANIC,
        NOTE,
        CLOCK_DRIFT,
    ];

    const _: () = {
        let mut i = 0;
        while i < ALL.len() {
            assert!(ALL[i] != 0, "code 0 marks an empty ring slot");
            let mut j = i + 1;
            while j < ALL.len() {
                assert!(ALL[i] != ALL[j], "two event kinds share a code");
                j += 1;
            }
            i += 1;
        }
    };
}

/// An event in 32 bytes with nothing to drop: what the tail ring holds, so that recording an
/// event (several per poll, on the simulator's hottest path) is a few stores.
#[derive(Clone, Copy, Debug, Default)]
struct Packed {
    time_ns: u64,
    /// The first integer fact (a task or node id); for a note, the hash of all its facts.
    a: u64,
    /// The second integer fact; 0 for a note.
    b: u64,
    node: u32,
    code: u32,
}

// The ring's events are 32 bytes, two to a cache line, as the module docs promise; the
// ring's length is a power of two, so that an event's slot is its index under a mask.
const _: () = assert!(std::mem::size_of::<Packed>() == 32);
const _: () = assert!(Trace::TAIL_LEN.is_power_of_two());

impl EventKind {
    /// The event's code and integer facts. A note's text is hashed into `a` by the caller.
    #[inline(always)]
    fn pack(&self) -> (u32, u64, u64) {
        let node_fact = |node: &NodeId| u64::from(node.0);
        match self {
            EventKind::Spawn { task, node } => (code::SPAWN, task.to_u64(), node_fact(node)),
            EventKind::Poll { task } => (code::POLL, task.to_u64(), 0),
            EventKind::Complete { task } => (code::COMPLETE, task.to_u64(), 0),
            EventKind::Cancel { task } => (code::CANCEL, task.to_u64(), 0),
            EventKind::ClockJump => (code::CLOCK_JUMP, 0, 0),
            EventKind::NodeCreate { node } => (code::NODE_CREATE, node_fact(node), 0),
            EventKind::NodeKill { node } => (code::NODE_KILL, node_fact(node), 0),
            EventKind::NodeRestart { node } => (code::NODE_RESTART, node_fact(node), 0),
            EventKind::NodeUpgrade { node } => (code::NODE_UPGRADE, node_fact(node), 0),
            EventKind::NodePause { node } => (code::NODE_PAUSE, node_fact(node), 0),
            EventKind::NodeResume { node } => (code::NODE_RESUME, node_fact(node), 0),
            EventKind::ClockOffset { node, offset_ns } => {
                (code::CLOCK_OFFSET, node_fact(node), *offset_ns as u64)
            }
            EventKind::ClockDrift { node, ppm } => {
                (code::CLOCK_DRIFT, node_fact(node), *ppm as u64)
            }
            EventKind::Panic { task } => (code::PANIC, task.to_u64(), 0),
            EventKind::Note { .. } => (code::NOTE, 0, 0),
        }
    }

    /// The kind a packed event stands for; `None` for a note (its text lives elsewhere).
    fn unpack(code: u32, a: u64, b: u64) -> Option<EventKind> {
        // `pack` leaves the facts a kind does not have at zero: a nonzero one means the slot
        // holds some other kind's event, or was torn.
        assert!(
            b == 0 || matches!(code, code::SPAWN | code::CLOCK_OFFSET | code::CLOCK_DRIFT),
            "event code {code} carries a second fact {b}"
        );
        assert!(
            a == 0 || code != code::CLOCK_JUMP,
            "a clock jump carries a fact {a}"
        );
        assert!(
            a <= u64::from(u32::MAX)
                || matches!(
                    code,
                    code::SPAWN
                        | code::POLL
                        | code::COMPLETE
                        | code::CANCEL
                        | code::PANIC
                        | code::NOTE
                ),
            "event code {code} names a node by the fact {a}"
        );
        let task = TaskId {
            slot: a as u32,
            serial: (a >> 32) as u32,
        };
        let node = NodeId(a as u32);
        Some(match code {
            code::SPAWN => {
                assert!(b <= u64::from(u32::MAX), "spawn on node fact {b}");
                EventKind::Spawn {
                    task,
                    node: NodeId(b as u32),
                }
            }
            code::POLL => EventKind::Poll { task },
            code::COMPLETE => EventKind::Complete { task },
            code::CANCEL => EventKind::Cancel { task },
            code::CLOCK_JUMP => EventKind::ClockJump,
            code::NODE_CREATE => EventKind::NodeCreate { node },
            code::NODE_KILL => EventKind::NodeKill { node },
            code::NODE_RESTART => EventKind::NodeRestart { node },
            code::NODE_UPGRADE => EventKind::NodeUpgrade { node },
            code::NODE_PAUSE => EventKind::NodePause { node },
            code::NODE_RESUME => EventKind::NodeResume { node },
            code::CLOCK_OFFSET => EventKind::ClockOffset {
                node,
                offset_ns: b as i64,
            },
            code::CLOCK_DRIFT => EventKind::ClockDrift {
                node,
                ppm: b as i64,
            },
            code::PANIC => EventKind::Panic { task },
            code::NOTE => return None,
            other => unreachable!("unknown event code {other}"),
        })
    }
}

/// What a note says, kept beside the packed ring.
#[derive(Debug, Default)]
struct NoteBody {
    source: &'static str,
    words: [u64; 3],
    text: String,
}

impl NoteBody {
    fn to_kind(&self) -> EventKind {
        // A slot's body is written with its note (the default's source is empty).
        assert!(
            !self.source.is_empty(),
            "a note slot read before it held a note"
        );
        EventKind::Note {
            source: self.source,
            words: self.words,
            text: self.text.clone(),
        }
    }
}

/// Folds bytes into a hash, eight at a time (little endian; a short last chunk is padded
/// with zeros). Whole words are read directly and the tail byte by byte: copying each chunk
/// into a buffer cost a call and a stalled reload per word, on every note whose source
/// changed.
fn bytes_hash(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        hash = fold(
            hash,
            u64::from_le_bytes(word.try_into().expect("eight bytes")),
        );
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let word = tail
            .iter()
            .rev()
            .fold(0u64, |word, &byte| (word << 8) | u64::from(byte));
        hash = fold(hash, word);
    }
    hash
}

/// The hash of a note's facts: its source (already hashed), text and words.
#[inline]
fn note_hash(source_hash: u64, words: &[u64; 3], text: &str) -> u64 {
    let hash = bytes_hash(source_hash, text.as_bytes());
    fold2(
        fold2(hash, words[0], words[1]),
        words[2],
        u64::from(code::NOTE),
    )
}

/// The record of a run in progress: the fingerprint, the tail, and optional full records.
pub(crate) struct Trace {
    fingerprint: u64,
    events: u64,
    /// A ring of the last `TAIL_LEN` events: slot `i % TAIL_LEN` holds event `i`.
    tail: Box<[Packed; Trace::TAIL_LEN]>,
    /// Beside the ring: slot `i % TAIL_LEN` holds the source, words and text of event `i` if
    /// it is a note (they do not fit in a packed event).
    notes: Box<[NoteBody; Trace::TAIL_LEN]>,
    /// The last note source seen and its hash (see `source_hash`).
    last_source: (&'static str, u64),
    /// Every event, when the run records them (replay).
    full: Option<Vec<Event>>,
    /// The fingerprint after every event, when the run records them (determinism checks).
    hashes: Option<Vec<u64>>,
    /// Where every event goes as it happens, when the run streams its trace.
    stream: Option<Arc<dyn TraceStream>>,
    /// Whether `full`, `hashes` or `stream` was asked for: one flag for the hot path to
    /// test, since most runs keep none of them.
    recording: bool,
    /// How many nodes got their names (`name_node`), which come in id order: a kept event's
    /// nodes are all below it, as a stream's consumer is promised.
    named: Cell<u32>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("fingerprint", &self.fingerprint)
            .field("events", &self.events)
            .field("recording", &self.recording)
            .field("streaming", &self.stream.is_some())
            .finish_non_exhaustive()
    }
}

impl Trace {
    /// How many of the last events a failure report shows (a power of two: the ring's index
    /// is a mask).
    pub(crate) const TAIL_LEN: usize = 64;

    /// The capacity a ring slot's text starts with: most of the disk's and the fault
    /// ledger's texts fit in it.
    const NOTE_TEXT_CAPACITY: usize = 64;

    pub(crate) fn new(
        seed: u64,
        record_events: bool,
        record_hashes: bool,
        stream: Option<Arc<dyn TraceStream>>,
    ) -> Trace {
        // `may_precede_death` knows a fault by its note's source: the one the protocol notes
        // faults under, or a streamed trace is not flushed after them.
        assert_eq!(
            crashtest_protocol::FaultNote::Applied { id: None }
                .encode()
                .0,
            "fault",
            "fault notes changed their source"
        );
        Trace {
            fingerprint: fold(0x6372_6173_6874_6573, seed),
            events: 0,
            tail: Box::new([Packed::default(); Trace::TAIL_LEN]),
            notes: Box::new(std::array::from_fn(|_| NoteBody::default())),
            last_source: ("", 0),
            full: record_events.then(Vec::new),
            hashes: record_hashes.then(Vec::new),
            recording: record_events || record_hashes || stream.is_some(),
            stream,
            named: Cell::new(0),
        }
    }

    /// Tells the stream, if any, a node's name.
    pub(crate) fn name_node(&self, node: NodeId, name: &str) {
        assert_eq!(
            node.0,
            self.named.get(),
            "nodes get their names once each, in id order"
        );
        self.named.set(node.0 + 1);
        if let Some(stream) = &self.stream {
            stream.name_node(node, name);
        }
    }

    /// Ends the record once the run's result has taken its events: makes the stream, if
    /// any, durable and lets it go, and keeps nothing more, since what the leftover tasks'
    /// destructors do afterwards is not part of the run.
    pub(crate) fn end(&mut self) {
        assert!(
            self.full.is_none() && self.hashes.is_none(),
            "the trace ends after the run's result took its full record and hashes"
        );
        if let Some(stream) = self.stream.take() {
            stream.flush();
        }
        self.recording = false;
    }

    /// Appends an event: folds it into the fingerprint and keeps it in the tail.
    #[inline(always)]
    pub(crate) fn record(&mut self, time_ns: u64, node: NodeId, kind: EventKind) {
        if matches!(kind, EventKind::Note { .. }) {
            return self.record_note(time_ns, node, kind);
        }
        let (code, a, b) = kind.pack();
        if crate::verify::enabled() {
            assert_eq!(
                EventKind::unpack(code, a, b).as_ref(),
                Some(&kind),
                "an event survives its packing into the ring"
            );
        }
        self.push(Packed {
            time_ns,
            a,
            b,
            node: node.0,
            code,
        });
        if self.recording {
            self.keep(time_ns, node, kind);
        }
    }

    /// Keeps the event just pushed, and the fingerprint after it, in the records asked for.
    #[cold]
    #[inline(never)]
    fn keep(&mut self, time_ns: u64, node: NodeId, kind: EventKind) {
        assert!(self.events > 0, "an event is kept after it is pushed");
        let pushed = self.tail[((self.events - 1) as usize) & (Self::TAIL_LEN - 1)];
        assert!(
            pushed.time_ns == time_ns && pushed.node == node.0,
            "the event kept is the one just pushed"
        );
        let named = self.named.get();
        assert!(
            node.0 < named && kind.target().is_none_or(|target| target.0 < named),
            "event #{} ({kind}) names a node before its name",
            self.events - 1
        );
        if let Some(hashes) = &mut self.hashes {
            hashes.push(self.fingerprint);
            assert_eq!(
                hashes.len() as u64,
                self.events,
                "one fingerprint kept per event, in order"
            );
        }
        let event = Event {
            index: self.events - 1,
            time_ns,
            node,
            kind,
        };
        if let Some(stream) = &self.stream {
            stream.event(&event);
            if event.kind.may_precede_death() {
                stream.flush();
            }
        }
        if let Some(full) = &mut self.full {
            assert_eq!(
                full.len() as u64,
                event.index,
                "the full trace keeps every event, in order"
            );
            assert!(
                full.last().is_none_or(|last| last.time_ns <= event.time_ns),
                "event #{} goes back in time",
                event.index
            );
            full.push(event);
        }
    }

    #[cold]
    #[inline(never)]
    fn record_note(&mut self, time_ns: u64, node: NodeId, kind: EventKind) {
        let EventKind::Note {
            source,
            words,
            text,
        } = kind
        else {
            unreachable!("record_note takes notes")
        };
        self.note(time_ns, node, source, words, text);
    }

    /// Appends a note: what `record` does for an `EventKind::Note`, without building one.
    pub(crate) fn note(
        &mut self,
        time_ns: u64,
        node: NodeId,
        source: &'static str,
        words: [u64; 3],
        text: String,
    ) {
        let slot = self.push_note(time_ns, node, source, words, &text);
        self.notes[slot].text = text;
        self.keep_note(time_ns, node, slot);
    }

    /// Appends a note whose text `write` builds straight into its ring slot's string: the
    /// same event, text and fingerprint as `note` with the text built first, without a string
    /// allocated and freed per note (the disk model notes every read, write and sync). The
    /// slot's string keeps its capacity from the note it held before.
    pub(crate) fn note_with(
        &mut self,
        time_ns: u64,
        node: NodeId,
        source: &'static str,
        words: [u64; 3],
        write: impl FnOnce(&mut String),
    ) {
        let slot = (self.events as usize) & (Self::TAIL_LEN - 1);
        let mut buf = std::mem::take(&mut self.notes[slot].text);
        buf.clear();
        if buf.capacity() == 0 {
            // A slot's first text: one allocation that fits most, where appending piece by
            // piece from nothing reallocated two or three times (in every slot of every run).
            buf.reserve(Self::NOTE_TEXT_CAPACITY);
        }
        write(&mut buf);
        let pushed = self.push_note(time_ns, node, source, words, &buf);
        assert_eq!(pushed, slot, "a note lands in the slot of its index");
        self.notes[slot].text = buf;
        self.keep_note(time_ns, node, slot);
    }

    /// Appends a note with no text (the network's packet events): the same event as `note`
    /// with an empty string, without a string changing hands. Moving one in costs a stall:
    /// the caller has just stored its three words, and the move reads them back wider.
    pub(crate) fn note_words(
        &mut self,
        time_ns: u64,
        node: NodeId,
        source: &'static str,
        words: [u64; 3],
    ) {
        let slot = self.push_note(time_ns, node, source, words, "");
        self.notes[slot].text.clear();
        self.keep_note(time_ns, node, slot);
    }

    /// Folds a note into the fingerprint and the ring, except its text; returns its slot in
    /// the ring, where the caller puts the text.
    #[inline]
    fn push_note(
        &mut self,
        time_ns: u64,
        node: NodeId,
        source: &'static str,
        words: [u64; 3],
        text: &str,
    ) -> usize {
        assert!(!source.is_empty(), "a note names its source");
        let index = self.events;
        let source_hash = self.source_hash(source);
        self.push(Packed {
            time_ns,
            a: note_hash(source_hash, &words, text),
            b: 0,
            node: node.0,
            code: code::NOTE,
        });
        assert_eq!(self.events, index + 1, "a note is one event");
        let slot = (index as usize) & (Self::TAIL_LEN - 1);
        let body = &mut self.notes[slot];
        body.source = source;
        body.words = words;
        slot
    }

    /// Keeps the note just pushed in the records asked for (see `keep`).
    #[inline]
    fn keep_note(&mut self, time_ns: u64, node: NodeId, slot: usize) {
        assert_eq!(
            slot,
            (self.events.wrapping_sub(1) as usize) & (Self::TAIL_LEN - 1),
            "the note kept is the one just pushed"
        );
        if self.recording {
            let kind = self.notes[slot].to_kind();
            self.keep(time_ns, node, kind);
        }
    }

    /// The hash of a note's source, remembered for the last source seen: components record
    /// many notes from one `&'static str` in a row. The hash depends on the bytes only (the
    /// address is just the memo's key), so it is the same in every process.
    #[inline]
    fn source_hash(&mut self, source: &'static str) -> u64 {
        let (last, hash) = self.last_source;
        if std::ptr::eq(last, source) {
            if crate::verify::enabled() {
                assert_eq!(
                    hash,
                    bytes_hash(0, source.as_bytes()),
                    "the memo holds {source:?}'s hash"
                );
            }
            return hash;
        }
        let hash = bytes_hash(0, source.as_bytes());
        self.last_source = (source, hash);
        hash
    }

    /// Folds a packed event into the fingerprint and writes it into the ring.
    #[inline(always)]
    fn push(&mut self, packed: Packed) {
        // Debug assertions: even one compare per event costs the executor's tightest loops
        // several percent in release. `keep` checks these on recorded runs, `tail` on failed
        // ones.
        debug_assert_ne!(packed.code, 0, "code 0 marks an empty ring slot");
        debug_assert!(
            packed.time_ns
                >= self.tail[(self.events.wrapping_sub(1) as usize) & (Self::TAIL_LEN - 1)].time_ns,
            "event #{} at {} ns comes before the event before it",
            self.events,
            packed.time_ns
        );
        let head = (u64::from(packed.code) << 32) | u64::from(packed.node);
        let hash = fold2(
            fold2(self.fingerprint, packed.time_ns, head),
            packed.a,
            packed.b,
        );
        self.fingerprint = hash;
        self.tail[(self.events as usize) & (Self::TAIL_LEN - 1)] = packed;
        self.events += 1;
    }

    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub(crate) fn event_count(&self) -> u64 {
        assert!(
            self.full
                .as_ref()
                .is_none_or(|full| full.len() as u64 == self.events),
            "the full trace keeps every event"
        );
        assert!(
            self.hashes
                .as_ref()
                .is_none_or(|hashes| hashes.len() as u64 == self.events),
            "one fingerprint kept per event"
        );
        self.events
    }

    /// The last events, oldest first.
    pub(crate) fn tail(&self) -> Vec<Event> {
        let first = self.events.saturating_sub(Self::TAIL_LEN as u64);
        let events: Vec<Event> = (first..self.events)
            .map(|index| {
                let slot = (index as usize) & (Self::TAIL_LEN - 1);
                let packed = self.tail[slot];
                assert_ne!(packed.code, 0, "slot of event #{index} was never written");
                let kind = EventKind::unpack(packed.code, packed.a, packed.b);
                if let Some(kind) = &kind {
                    assert_eq!(
                        kind.pack(),
                        (packed.code, packed.a, packed.b),
                        "event #{index} unpacks to what was packed"
                    );
                }
                let kind = kind.unwrap_or_else(|| self.notes[slot].to_kind());
                Event {
                    index,
                    time_ns: packed.time_ns,
                    node: NodeId(packed.node),
                    kind,
                }
            })
            .collect();
        assert!(
            events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns),
            "the tail's times never go backwards"
        );
        assert!(
            events.len() <= Self::TAIL_LEN,
            "the tail holds at most the ring's length"
        );
        assert_eq!(
            events.last().map(|e| e.index + 1),
            (self.events > 0).then_some(self.events),
            "the tail ends at the last event"
        );
        events
    }

    pub(crate) fn take_full(&mut self) -> Option<Vec<Event>> {
        let full = self.full.take();
        if let Some(full) = &full {
            assert_eq!(
                full.len() as u64,
                self.events,
                "the full trace has every event"
            );
            if crate::verify::enabled() {
                assert!(
                    full.iter()
                        .zip(0..)
                        .all(|(event, index)| event.index == index),
                    "the full trace numbers its events in order"
                );
            }
        }
        full
    }

    pub(crate) fn take_hashes(&mut self) -> Option<Vec<u64>> {
        let hashes = self.hashes.take();
        if let Some(hashes) = &hashes {
            assert_eq!(
                hashes.len() as u64,
                self.events,
                "one fingerprint kept per event"
            );
            assert_eq!(
                hashes.last().copied(),
                (self.events > 0).then_some(self.fingerprint),
                "the last hash kept is the final fingerprint"
            );
        }
        hashes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace whose nodes n0 to n2 are named, as a run names its nodes before their events.
    fn trace(seed: u64, record_events: bool, record_hashes: bool) -> Trace {
        let t = Trace::new(seed, record_events, record_hashes, None);
        for node in 0..3 {
            t.name_node(NodeId(node), "node");
        }
        t
    }

    fn note(text: &str) -> EventKind {
        EventKind::Note {
            source: "test",
            words: [0; 3],
            text: text.to_owned(),
        }
    }

    #[test]
    fn both_records_keep_every_event_and_the_fingerprint_after_it() {
        let task = TaskId { slot: 3, serial: 9 };
        let mut t = trace(4, true, true);
        let mut after = Vec::new();
        for step in 0..5u64 {
            t.record(step, NodeId(1), EventKind::Poll { task });
            after.push(t.fingerprint());
            t.record(step, NodeId(2), note("between"));
            after.push(t.fingerprint());
            t.note(step, NodeId(0), "direct", [step, 0, 0], String::new());
            after.push(t.fingerprint());
        }
        let full = t.take_full().expect("kept");
        let hashes = t.take_hashes().expect("kept");
        assert_eq!(hashes, after);
        assert_eq!(full.len() as u64, t.event_count());
        for (index, event) in full.iter().enumerate() {
            assert_eq!(event.index, index as u64);
        }
        assert!(matches!(full[0].kind, EventKind::Poll { .. }));
        assert!(matches!(&full[1].kind, EventKind::Note { text, .. } if text == "between"));
        assert!(matches!(
            full[2].kind,
            EventKind::Note {
                source: "direct",
                ..
            }
        ));
    }

    #[test]
    fn a_network_note_reads_in_words_and_any_other_bare_note_as_its_numbers() {
        let (source, words) = crashtest_protocol::NetNote::TcpSend {
            conn: 2,
            side: 0,
            bytes: 10,
            arrival_ns: 7,
        }
        .encode();
        let event = |source, words| Event {
            index: 0,
            time_ns: 0,
            node: NodeId(1),
            kind: EventKind::Note {
                source,
                words,
                text: String::new(),
            },
        };
        assert_eq!(event(source, words).kind.to_string(), "tcp send 10B on c2");
        assert_eq!(event("user", [1, 2, 3]).kind.to_string(), "user: 1 2 3");
    }

    #[test]
    fn a_note_without_text_is_the_same_event_as_one_with_empty_text() {
        let mut with_string = trace(6, true, true);
        let mut words_only = trace(6, true, true);
        // Three notes a step, one with text, over more steps than the ring holds: empty notes
        // land in ring slots that held text.
        for step in 0..40u64 {
            with_string.note(step, NodeId(1), "net", [step, 1, 2], "x".repeat(40));
            words_only.note(step, NodeId(1), "net", [step, 1, 2], "x".repeat(40));
            for extra in 0..2 {
                with_string.note(step, NodeId(2), "net", [step, extra, 4], String::new());
                words_only.note_words(step, NodeId(2), "net", [step, extra, 4]);
            }
        }
        assert_eq!(with_string.fingerprint(), words_only.fingerprint());
        assert_eq!(with_string.take_hashes(), words_only.take_hashes());
        assert_eq!(
            format!("{:?}", with_string.take_full()),
            format!("{:?}", words_only.take_full())
        );
        assert_eq!(
            format!("{:?}", with_string.tail()),
            format!("{:?}", words_only.tail())
        );
    }

    #[test]
    fn a_note_written_in_place_is_the_same_event_as_one_formatted_first() {
        let mut formatted_first = trace(8, true, true);
        let mut in_place = trace(8, true, true);
        // More steps than the ring holds, texts of varying length: a slot's old text must not
        // show through a shorter new one.
        for step in 0..100u64 {
            let long = "x".repeat((step % 7) as usize * 9);
            formatted_first.note(
                step,
                NodeId(1),
                "disk",
                [step, 2, 3],
                format!("w {step} {long}"),
            );
            in_place.note_with(step, NodeId(1), "disk", [step, 2, 3], |text| {
                fmt::Write::write_fmt(text, format_args!("w {step} {long}"))
                    .expect("formatting into a String cannot fail");
            });
            formatted_first.note_words(step, NodeId(2), "net", [step, 0, 0]);
            in_place.note_words(step, NodeId(2), "net", [step, 0, 0]);
        }
        assert_eq!(formatted_first.fingerprint(), in_place.fingerprint());
        assert_eq!(formatted_first.take_hashes(), in_place.take_hashes());
        assert_eq!(formatted_first.take_full(), in_place.take_full());
        assert_eq!(formatted_first.tail(), in_place.tail());
    }

    #[test]
    fn bytes_hash_folds_little_endian_words_padded_with_zeros() {
        let bytes: Vec<u8> = (1..=19).collect();
        let padded = |chunk: &[u8]| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            u64::from_le_bytes(word)
        };
        for len in 0..=bytes.len() {
            let want = bytes[..len]
                .chunks(8)
                .fold(7, |hash, chunk| fold(hash, padded(chunk)));
            assert_eq!(bytes_hash(7, &bytes[..len]), want, "{len} bytes");
        }
    }

    #[test]
    fn fingerprint_depends_on_every_field() {
        let base = {
            let mut t = Trace::new(1, false, false, None);
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
            let mut t = Trace::new(seed, false, false, None);
            t.record(time, NodeId(node), note(text));
            assert_ne!(t.fingerprint(), base, "{seed} {time} {node} {text}");
        }
    }

    #[test]
    fn the_tail_gives_back_every_kind_and_the_texts_of_notes() {
        let task = TaskId { slot: 3, serial: 9 };
        let node = NodeId(2);
        let kinds = vec![
            EventKind::Spawn { task, node },
            EventKind::Poll { task },
            note("first"),
            EventKind::Complete { task },
            EventKind::Cancel { task },
            EventKind::ClockJump,
            EventKind::NodeCreate { node },
            EventKind::NodeKill { node },
            EventKind::NodeRestart { node },
            EventKind::NodeUpgrade { node },
            EventKind::NodePause { node },
            EventKind::NodeResume { node },
            EventKind::ClockOffset {
                node,
                offset_ns: -5,
            },
            EventKind::ClockDrift { node, ppm: -100 },
            EventKind::Panic { task },
            note("second"),
        ];
        let mut t = trace(0, true, false);
        for _ in 0..Trace::TAIL_LEN {
            t.record(1, NodeId(0), note("pushed out"));
        }
        for (i, kind) in kinds.iter().enumerate() {
            t.record(100 + i as u64, NodeId(1), kind.clone());
        }
        let tail = t.tail();
        let tail_kinds: Vec<EventKind> = tail[tail.len() - kinds.len()..]
            .iter()
            .map(|e| e.kind.clone())
            .collect();
        assert_eq!(tail_kinds, kinds);
        let full = t.take_full().unwrap();
        assert_eq!(
            &full[full.len() - kinds.len()..],
            &tail[tail.len() - kinds.len()..]
        );
    }

    #[test]
    fn tail_keeps_only_the_last_events() {
        let mut t = Trace::new(0, false, false, None);
        for i in 0..(Trace::TAIL_LEN as u64 + 10) {
            t.record(i, NodeId(0), EventKind::ClockJump);
        }
        let tail = t.tail();
        assert_eq!(tail.len(), Trace::TAIL_LEN);
        assert_eq!(tail[0].index, 10);
        assert_eq!(t.event_count(), Trace::TAIL_LEN as u64 + 10);
    }
}
