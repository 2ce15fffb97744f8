//! A run's trace, as the runner writes it (`CRASHTEST_TRACE`): read, placed on nodes, and
//! described for people.
//!
//! An event's `node` is the node it happened on behalf of; life-cycle events (create, kill,
//! restart, pause, ...) and spawns are done *by* one node *to* another, and are drawn on the
//! node they change, named in the event's text (`KILL n2`). Names come from the events
//! themselves: a node that never acted is shown as `nI`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::cli::Filter;
use crate::results::SeedResult;
use crate::single::{Request, Scratch};
use crate::target::Target;

/// A line of a trace file.
#[derive(Debug, Deserialize)]
struct Line {
    index: u64,
    time_ns: u64,
    node: usize,
    node_name: String,
    kind: String,
    source: Option<String>,
    words: Option<[u64; 3]>,
    text: String,
}

/// One event, placed on the node whose lane it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) index: u64,
    pub(crate) time_ns: u64,
    /// The node the event happened on behalf of.
    pub(crate) actor: usize,
    /// The node whose lane shows it (the node changed, for life-cycle events).
    pub(crate) lane: usize,
    pub(crate) kind: String,
    pub(crate) source: Option<String>,
    pub(crate) words: [u64; 3],
    /// The event's text without the index, time and node the runner puts first.
    pub(crate) what: String,
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

impl Event {
    /// The event's mark and a short label.
    pub(crate) fn describe(&self) -> (Mark, String) {
        let what = self.what.clone();
        match self.kind.as_str() {
            "kill" => (Mark::Kill, "KILLED".to_owned()),
            "restart" => (Mark::Restart, "RESTARTED".to_owned()),
            "upgrade" => (Mark::Restart, "UPGRADED".to_owned()),
            "pause" => (Mark::Pause, "PAUSED".to_owned()),
            "resume" => (Mark::Resume, "RESUMED".to_owned()),
            "create" => (Mark::Create, "created".to_owned()),
            "panic" => (Mark::Panic, what),
            "clock_offset" => (Mark::Clock, what),
            "poll" | "clock_jump" => (Mark::Scheduler, what),
            "spawn" | "complete" | "cancel" => (Mark::Task, what),
            "note" => match self.source.as_deref() {
                Some("fault") if self.words[1] == 1 => (Mark::Masked, what),
                Some("fault") => (Mark::Fault, what),
                Some(source) if source.starts_with("net.") => {
                    (crate::messages::mark(source), crate::messages::label(self))
                }
                _ => (Mark::Note, what),
            },
            _ => (Mark::Note, what),
        }
    }

    /// Whether only `--all` shows it: scheduler steps.
    pub(crate) fn is_scheduler(&self) -> bool {
        matches!(self.kind.as_str(), "poll" | "clock_jump")
    }
}

/// A whole trace.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub(crate) events: Vec<Event>,
    /// Every node seen, by index.
    pub(crate) nodes: BTreeMap<usize, String>,
}

impl Trace {
    /// Reads a trace file.
    pub(crate) fn read(path: &Path) -> anyhow::Result<Trace> {
        let file = File::open(path)
            .with_context(|| format!("cannot read the trace {}", path.display()))?;
        let mut trace = Trace::default();
        let mut names = BTreeMap::new();
        for (number, line) in BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("cannot read the trace {}", path.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let line: Line = serde_json::from_str(&line).with_context(|| {
                format!(
                    "line {} of the trace {} is not a trace event",
                    number + 1,
                    path.display()
                )
            })?;
            names.insert(line.node, line.node_name.clone());
            let what = strip_prefix(&line.text).trim_end().to_owned();
            let lane = match line.kind.as_str() {
                "create" | "kill" | "restart" | "upgrade" | "pause" | "resume" | "clock_offset"
                | "spawn" => node_named_in(&what).unwrap_or(line.node),
                _ => line.node,
            };
            trace.nodes.entry(lane).or_default();
            trace.events.push(Event {
                index: line.index,
                time_ns: line.time_ns,
                actor: line.node,
                lane,
                kind: line.kind,
                source: line.source,
                words: line.words.unwrap_or_default(),
                what,
            });
        }
        for (index, name) in trace.nodes.iter_mut() {
            *name = names
                .get(index)
                .cloned()
                .unwrap_or_else(|| format!("n{index}"));
        }
        Ok(trace)
    }

    /// The lanes a filter keeps (all when it names none); an unknown name is an error.
    pub(crate) fn lanes(&self, filter: &Filter) -> anyhow::Result<Vec<usize>> {
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

/// The first node named `nI` in a text.
fn node_named_in(text: &str) -> Option<usize> {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix('n').and_then(|n| n.parse().ok()))
}

/// Runs `seed` with its trace recorded; returns its result and its trace.
pub(crate) fn record(
    target: &Target,
    seed: u64,
    silence: Duration,
    save: Option<&Path>,
) -> anyhow::Result<(SeedResult, Trace)> {
    let scratch = Scratch::new()?;
    let path = scratch.path("trace.jsonl");
    let request = Request {
        seed,
        env: vec![("CRASHTEST_TRACE", path.display().to_string())],
    };
    let never = std::sync::atomic::AtomicBool::new(false);
    let result = crate::single::run_one(target, &request, silence, &scratch, 0, &never)?;
    if !path.exists() {
        bail!(
            "seed {seed} of {} wrote no trace ({}): {}",
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn life_cycle_events_go_to_the_node_they_change() {
        assert_eq!(node_named_in("KILL n12"), Some(12));
        assert_eq!(node_named_in("spawn t3 on n1"), Some(1));
        assert_eq!(node_named_in("clock of n2 set off by 5 ns"), Some(2));
        assert_eq!(node_named_in("clock jump"), None);
    }
}
