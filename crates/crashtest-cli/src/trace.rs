//! A run's trace, as the runner writes it (`CRASHTEST_TRACE`): read, placed on nodes, and
//! described for people.
//!
//! An event's `node` is the node it happened on behalf of; life-cycle events (create, kill,
//! restart, pause, ...) and spawns are done *by* one node *to* another (the line's `target`),
//! and are drawn on the node they change. Names come from the events themselves: a node that
//! never acted is shown as `nI`. Components' notes are decoded once, on reading, by the
//! protocol's typed notes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use crashtest_protocol::{FaultNote, Note, Status, TraceKind, TraceLine, env};

use crate::cli::Filter;
use crate::results::SeedResult;
use crate::single::{Request, Scratch};
use crate::target::Target;

/// One event, placed on the node whose lane it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) index: u64,
    pub(crate) time_ns: u64,
    /// The node the event happened on behalf of.
    pub(crate) actor: usize,
    /// The node whose lane shows it (the node changed, for life-cycle events).
    pub(crate) lane: usize,
    pub(crate) kind: TraceKind,
    /// A component's note, decoded (none for a user's note or another event).
    pub(crate) note: Option<Note>,
    /// The event's text without the index, time and node the runner puts first.
    pub(crate) what: String,
    /// The name of the other node a partition, clog or heal names, if it is one.
    pub(crate) peer_name: Option<String>,
}

/// What kind of mark an event gets in a view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    Kill,
    Restart,
    Pause,
    Resume,
    Panic,
    Fault,
    Masked,
    Clock,
    Partition,
    Heal,
    Create,
    Message,
    Note,
    Task,
    Scheduler,
}

impl Mark {
    /// The one-character marker of the terminal view.
    pub(crate) fn symbol(self) -> char {
        match self {
            Mark::Kill => 'X',
            Mark::Restart => '^',
            Mark::Pause => '=',
            Mark::Resume => '>',
            Mark::Panic => '!',
            Mark::Fault => '*',
            Mark::Masked => '-',
            Mark::Clock => '~',
            Mark::Partition => '#',
            Mark::Heal => '&',
            Mark::Create => '+',
            Mark::Message => '@',
            Mark::Note => '.',
            Mark::Task | Mark::Scheduler => ' ',
        }
    }
}

/// A node's state, as life-cycle events change it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Life {
    /// Not created yet, or dead.
    Absent,
    Running,
    Paused,
}

impl Event {
    /// The event's mark and a short label.
    pub(crate) fn describe(&self) -> (Mark, String) {
        let what = self.what.clone();
        match self.kind {
            TraceKind::Kill => (Mark::Kill, "KILLED".to_owned()),
            TraceKind::Restart => (Mark::Restart, "RESTARTED".to_owned()),
            TraceKind::Upgrade => (Mark::Restart, "UPGRADED".to_owned()),
            TraceKind::Pause => (Mark::Pause, "PAUSED".to_owned()),
            TraceKind::Resume => (Mark::Resume, "RESUMED".to_owned()),
            TraceKind::Create => (Mark::Create, "created".to_owned()),
            TraceKind::Panic => (Mark::Panic, what),
            TraceKind::ClockOffset | TraceKind::ClockDrift => (Mark::Clock, what),
            TraceKind::Poll | TraceKind::ClockJump => (Mark::Scheduler, what),
            TraceKind::Spawn | TraceKind::Complete | TraceKind::Cancel => (Mark::Task, what),
            TraceKind::Note => match self.note {
                Some(Note::Fault(FaultNote::Masked { .. })) => (Mark::Masked, what),
                Some(Note::Fault(FaultNote::Applied { .. })) => (Mark::Fault, what),
                Some(Note::Net(note)) => (
                    crate::messages::mark(note),
                    crate::messages::label(note, self.peer_name.as_deref()),
                ),
                Some(Note::Disk(_)) | None => (Mark::Note, what),
            },
            TraceKind::Other => (Mark::Note, what),
        }
    }

    /// Whether only `--all` shows it: scheduler steps.
    pub(crate) fn is_scheduler(&self) -> bool {
        self.kind.is_scheduler()
    }

    /// The state the event leaves its lane's node in, if it changes it.
    pub(crate) fn life(&self) -> Option<Life> {
        match self.kind {
            TraceKind::Create | TraceKind::Restart | TraceKind::Upgrade | TraceKind::Resume => {
                Some(Life::Running)
            }
            TraceKind::Kill => Some(Life::Absent),
            TraceKind::Pause => Some(Life::Paused),
            _ => None,
        }
    }
}

/// A whole trace.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub(crate) events: Vec<Event>,
    /// Every node seen, by index.
    pub(crate) nodes: BTreeMap<usize, String>,
    /// Whether the file's last line was cut short and left out (its process died writing).
    pub(crate) cut: bool,
}

impl Trace {
    /// Reads a trace file. A last line cut short (a process that died mid-write) is left
    /// out, and [`Trace::cut`] says so; a bad line anywhere else is an error.
    pub(crate) fn read(path: &Path) -> anyhow::Result<Trace> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the trace {}", path.display()))?;
        let mut trace = Trace::default();
        let mut names = BTreeMap::new();
        let complete = text.ends_with('\n');
        let count = text.lines().count();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let line: TraceLine = match serde_json::from_str(line) {
                Ok(line) => line,
                Err(_) if number + 1 == count && !complete => {
                    trace.cut = true;
                    break;
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "line {} of the trace {} is not a trace event",
                            number + 1,
                            path.display()
                        )
                    });
                }
            };
            names.insert(line.node, line.node_name.clone());
            let what = strip_prefix(&line.text).trim_end().to_owned();
            let lane = line.target.unwrap_or(line.node);
            trace.nodes.entry(lane).or_default();
            let note = match (&line.source, line.words) {
                (Some(source), Some(words)) => Note::decode(source, words),
                _ => None,
            };
            trace.events.push(Event {
                index: line.index,
                time_ns: line.time_ns,
                actor: line.node,
                lane,
                kind: line.kind,
                note,
                what,
                peer_name: None,
            });
        }
        for (index, name) in trace.nodes.iter_mut() {
            *name = names
                .get(index)
                .cloned()
                .unwrap_or_else(|| format!("n{index}"));
        }
        // A partition, clog or heal names its other node by index; people know it by name.
        for event in &mut trace.events {
            if let Some(Note::Net(note)) = event.note
                && let Some(peer) = crate::messages::peer(note)
            {
                event.peer_name = names.get(&peer).cloned();
            }
        }
        Ok(trace)
    }

    /// The lanes a filter keeps (all when it names none); an unknown name is an error.
    pub(crate) fn lanes(&self, filter: &Filter) -> anyhow::Result<Vec<usize>> {
        filter.check()?;
        if filter.nodes.is_empty() {
            return Ok(self.nodes.keys().copied().collect());
        }
        let mut lanes = Vec::new();
        for wanted in &filter.nodes {
            let found = self
                .nodes
                .iter()
                .find(|(index, name)| *name == wanted || format!("n{index}") == *wanted);
            match found {
                Some((index, _)) => lanes.push(*index),
                None => bail!(
                    "no node {wanted:?} in this run; its nodes are: {}",
                    self.nodes
                        .iter()
                        .map(|(i, n)| format!("{n} (n{i})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        lanes.sort_unstable();
        lanes.dedup();
        Ok(lanes)
    }
}

/// Whether an event falls in the filter's time window.
pub(crate) fn in_window(filter: &Filter, time_ns: u64) -> bool {
    let ns = crate::duration::nanos;
    filter.from.is_none_or(|from| time_ns >= ns(from))
        && filter.until.is_none_or(|until| time_ns <= ns(until))
}

/// `#17   0.016000000s n0     KILL n1` → `KILL n1`: drops the index, time and node.
fn strip_prefix(text: &str) -> &str {
    let mut rest = text.trim_start();
    for _ in 0..3 {
        match rest.find(char::is_whitespace) {
            Some(end) => rest = rest[end..].trim_start(),
            None => return rest,
        }
    }
    rest
}

/// Runs `seed` (along `branch`) with its trace recorded; returns its result and its trace.
pub(crate) fn record(
    target: &Target,
    seed: u64,
    branch: &crate::cli::Branch,
    silence: Duration,
    save: Option<&Path>,
) -> anyhow::Result<(SeedResult, Trace)> {
    let scratch = Scratch::new()?;
    let path = scratch.path("trace.jsonl");
    let mut env = branch.env();
    env.push((env::TRACE, path.display().to_string()));
    let request = Request { seed, env };
    let never = std::sync::atomic::AtomicBool::new(false);
    let result = crate::single::run_one(target, &request, silence, &scratch, 0, &never)?;
    // The runner streams the trace as the run goes, so a run that took its process down
    // still left its events up to that point; no file means the process died before the
    // run began.
    if !path.exists() {
        bail!(
            "seed {seed} of {} wrote no trace ({}: its process died before the run began): {}",
            target.test,
            result.status,
            result.failure.as_deref().unwrap_or("")
        );
    }
    if let Some(save) = save {
        std::fs::copy(&path, save).with_context(|| format!("cannot write {}", save.display()))?;
    }
    let trace = Trace::read(&path)?;
    Ok((result, trace))
}

/// What to say under a trace whose process died (`crashed` or `hung`): where it stopped.
pub(crate) fn death_note(trace: &Trace, result: &SeedResult) -> Option<String> {
    if matches!(result.status, Status::Pass | Status::Fail) {
        return None;
    }
    let last = trace.events.last();
    let place = match last {
        Some(event) => format!(
            "after event #{} at {}",
            event.index,
            crate::duration::short(event.time_ns)
        ),
        None => "before its first event".to_owned(),
    };
    Some(format!(
        "the process {} {place}; the trace above is every event it wrote{}",
        result.status,
        if trace.cut {
            " (its last line was cut short)"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_last_line_is_left_out_and_a_bad_middle_line_is_an_error() {
        let scratch = Scratch::new().unwrap();
        let path = scratch.path("cut.jsonl");
        let line = r##"{"index":0,"time_ns":0,"node":0,"node_name":"supervisor","kind":"spawn","target":0,"detail":"spawn t0 on n0","source":null,"words":null,"text":"#0 0.0s n0 spawn t0 on n0"}"##;
        std::fs::write(&path, format!("{line}\n{}", &line[..40])).unwrap();
        let trace = Trace::read(&path).unwrap();
        assert_eq!((trace.events.len(), trace.cut), (1, true));

        std::fs::write(&path, format!("{}\n{line}\n", &line[..40])).unwrap();
        let error = Trace::read(&path).unwrap_err();
        assert!(format!("{error:#}").contains("line 1"), "{error:#}");
    }

    #[test]
    fn the_runner_prefix_is_dropped() {
        assert_eq!(
            strip_prefix("#17            0.016000000s n0 KILL n1"),
            "KILL n1"
        );
        assert_eq!(
            strip_prefix("#3 0.0s n1     fault: kill store"),
            "fault: kill store"
        );
    }
}
