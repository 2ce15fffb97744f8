//! What the journal says, folded per workflow: the steps done (with their keys and outputs),
//! the step in flight, and whether the workflow finished.
//!
//! The engine keeps a [`History`] beside the journal, applies each record to it as it
//! appends, rebuilds it from the records on recovery, and writes [`History::live`] as the
//! next segment when it compacts: so a compacted journal says exactly what the old one did.

use std::collections::BTreeMap;

use crate::journal::Record;

/// A step journaled as begun: the idempotency key and the input it is applied with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intent {
    /// The step's index.
    pub step: u32,
    /// Its idempotency key.
    pub key: u64,
    /// Its input.
    pub input: u64,
}

/// A step journaled as done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completed {
    /// The step's index.
    pub step: u32,
    /// Its idempotency key.
    pub key: u64,
    /// What the service answered.
    pub output: u64,
}

/// One workflow's journaled progress.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Steps done, in the order they were journaled.
    pub done: Vec<Completed>,
    /// The step begun but not done, if any.
    pub in_flight: Option<Intent>,
    /// The last step's output, once the workflow finished.
    pub finished: Option<u64>,
}

impl Progress {
    /// Whether the journal holds anything about the workflow.
    pub fn is_started(&self) -> bool {
        !self.done.is_empty() || self.in_flight.is_some() || self.finished.is_some()
    }

    /// Whether step `step` is done.
    pub fn is_done(&self, step: u32) -> bool {
        self.done.iter().any(|c| c.step == step)
    }

    /// The output of the step done last, which the next step takes as input.
    pub fn last_output(&self) -> Option<u64> {
        self.done.last().map(|c| c.output)
    }
}

/// Every workflow's progress, by workflow id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    workflows: BTreeMap<u32, Progress>,
}

impl History {
    /// The history `records` tell, in order.
    pub fn replay(records: &[Record]) -> History {
        let mut history = History::default();
        for record in records {
            history.apply(record);
        }
        history
    }

    /// Adds one record.
    pub fn apply(&mut self, record: &Record) {
        match *record {
            Record::Intent {
                workflow,
                step,
                key,
                input,
            } => {
                let progress = self.workflows.entry(workflow).or_default();
                progress.in_flight = Some(Intent { step, key, input });
            }
            Record::Done {
                workflow,
                step,
                key,
                output,
            } => {
                let progress = self.workflows.entry(workflow).or_default();
                progress.in_flight = None;
                progress.done.push(Completed { step, key, output });
            }
            Record::Finished { workflow, output } => {
                let progress = self.workflows.entry(workflow).or_default();
                *progress = Progress {
                    finished: Some(output),
                    ..Progress::default()
                };
            }
        }
    }

    /// The journaled progress of `workflow` (empty if the journal never mentioned it).
    pub fn progress(&self, workflow: u32) -> Progress {
        self.workflows.get(&workflow).cloned().unwrap_or_default()
    }

    /// The fewest records that replay to this history: a finished workflow in one record.
    pub fn live(&self) -> Vec<Record> {
        let mut records = Vec::new();
        for (&workflow, progress) in &self.workflows {
            if let Some(output) = progress.finished {
                records.push(Record::Finished { workflow, output });
                continue;
            }
            records.extend(progress.done.iter().map(|c| Record::Done {
                workflow,
                step: c.step,
                key: c.key,
                output: c.output,
            }));
            records.extend(progress.in_flight.map(|i| Record::Intent {
                workflow,
                step: i.step,
                key: i.key,
                input: i.input,
            }));
        }
        records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<Record> {
        vec![
            Record::Intent {
                workflow: 2,
                step: 0,
                key: 10,
                input: 5,
            },
            Record::Intent {
                workflow: 1,
                step: 0,
                key: 11,
                input: 6,
            },
            Record::Done {
                workflow: 2,
                step: 0,
                key: 10,
                output: 50,
            },
            Record::Finished {
                workflow: 2,
                output: 50,
            },
            Record::Done {
                workflow: 1,
                step: 0,
                key: 11,
                output: 60,
            },
            Record::Intent {
                workflow: 1,
                step: 1,
                key: 12,
                input: 60,
            },
        ]
    }

    #[test]
    fn replay_folds_each_workflow_progress() {
        let history = History::replay(&records());
        let one = history.progress(1);
        assert_eq!(one.last_output(), Some(60));
        assert!(one.is_done(0) && !one.is_done(1));
        assert_eq!(one.in_flight.map(|i| i.key), Some(12));
        assert_eq!(history.progress(2).finished, Some(50));
        assert!(!history.progress(3).is_started());
    }

    #[test]
    fn the_live_records_replay_to_the_same_history() {
        let history = History::replay(&records());
        let live = history.live();
        assert!(live.len() < records().len());
        assert_eq!(History::replay(&live), history);
    }
}
