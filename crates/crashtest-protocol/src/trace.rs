//! Trace lines: every event of one run as a JSON object per line, written to the file
//! `CRASHTEST_TRACE` names.
//!
//! An event happened on behalf of one node (`node`); life-cycle events and spawns also act on
//! another (`target`). A note carries its source and words (decode them with
//! [`crate::Note::decode`]); every event carries its text as the simulator prints it.

use serde::{Deserialize, Serialize};

/// What kind of event a trace line is.
///
/// ```
/// use crashtest_protocol::TraceKind;
/// assert_eq!(serde_json::to_string(&TraceKind::ClockJump).unwrap(), "\"clock_jump\"");
/// assert!(TraceKind::Kill.is_life_cycle());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    /// A task was spawned.
    Spawn,
    /// The scheduler polled a task.
    Poll,
    /// A task completed.
    Complete,
    /// A task was cancelled.
    Cancel,
    /// The clock jumped to the next timer.
    ClockJump,
    /// A node was created.
    Create,
    /// A node was killed.
    Kill,
    /// A node was restarted.
    Restart,
    /// A node was restarted with new code.
    Upgrade,
    /// A node was paused.
    Pause,
    /// A paused node resumed.
    Resume,
    /// A node's wall clock was set off.
    ClockOffset,
    /// A node's wall clock started to drift.
    ClockDrift,
    /// A task panicked.
    Panic,
    /// A component or the user recorded a note.
    Note,
    /// An event this protocol has no name for.
    Other,
}

impl TraceKind {
    /// Whether the event changes the node it targets (created, killed, restarted, upgraded,
    /// paused, resumed, its clock set off), rather than the node it happened on.
    pub fn is_life_cycle(self) -> bool {
        matches!(
            self,
            TraceKind::Create
                | TraceKind::Kill
                | TraceKind::Restart
                | TraceKind::Upgrade
                | TraceKind::Pause
                | TraceKind::Resume
                | TraceKind::ClockOffset
                | TraceKind::ClockDrift
        )
    }

    /// Whether the event is a scheduler step (a poll or a clock jump).
    pub fn is_scheduler(self) -> bool {
        matches!(self, TraceKind::Poll | TraceKind::ClockJump)
    }
}

/// One event as a line of a trace file.
///
/// ```
/// use crashtest_protocol::{TraceKind, TraceLine};
/// let line = r##"{"index":3,"time_ns":7,"node":1,"node_name":"db","kind":"kill","target":2,"detail":"KILL n2","source":null,"words":null,"text":"#3 ... KILL n2"}"##;
/// let event: TraceLine = serde_json::from_str(line).unwrap();
/// assert_eq!((event.kind, event.target), (TraceKind::Kill, Some(2)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceLine {
    /// The event's index in the run (0 first).
    pub index: u64,
    /// Virtual time, nanoseconds.
    pub time_ns: u64,
    /// The node the event happened on behalf of, by index.
    pub node: usize,
    /// That node's name.
    pub node_name: String,
    /// What kind of event it is.
    pub kind: TraceKind,
    /// The node the event acts on (the one killed, the one a task is spawned on), if any.
    #[serde(default)]
    pub target: Option<usize>,
    /// What happened, without the index, time and node prefix of `text`.
    #[serde(default)]
    pub detail: String,
    /// A note's source.
    #[serde(default)]
    pub source: Option<String>,
    /// A note's words.
    #[serde(default)]
    pub words: Option<[u64; 3]>,
    /// The event as the simulator prints it.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_itself() {
        let line = TraceLine {
            index: 9,
            time_ns: 1_000,
            node: 1,
            node_name: "a".into(),
            kind: TraceKind::Note,
            target: None,
            detail: "net.udp.send: 1 2 3".into(),
            source: Some("net.udp.send".into()),
            words: Some([1, 2, 3]),
            text: "#9 ...".into(),
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(
            text.starts_with(r#"{"index":9,"time_ns":1000,"node":1,"node_name":"a","kind":"note""#)
        );
        assert_eq!(serde_json::from_str::<TraceLine>(&text).unwrap(), line);
    }
}
