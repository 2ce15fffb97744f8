//! The engine: runs workflows step by step so that each step takes effect exactly once,
//! whatever crashes it goes through.
//!
//! For each step it journals an intent (the step, a fresh idempotency key, the input) and
//! waits for the journal's sync; then it asks the service to apply the step under that key;
//! then it journals the step as done with the service's output, which the next step takes as
//! input. After a crash it replays the journal and resumes every unfinished workflow at its
//! first step not done: a step journaled as begun is sent again with its journaled key and
//! input, so the service recognises it if it took effect before the crash.
//!
//! A few workflows run at once ([`PARALLEL_WORKFLOWS`]); they share the journal through a
//! mutex, and the folded [`History`] beside it, which compaction writes out.

use std::io;
use std::path::Path;

use futures::TryStreamExt;
use tokio::sync::Mutex;

use crate::bug::Bug;
use crate::client::Client;
use crate::history::{History, Intent, Progress};
use crate::journal::{Journal, Record};
use crate::protocol::Request;
use crate::workflow::Workflow;

/// Where the journal's segments live on the worker's disk.
pub const JOURNAL_DIR: &str = "/journal";
/// Workflows run at once.
pub const PARALLEL_WORKFLOWS: usize = 4;

/// The journal and what it says, changed together.
#[derive(Debug)]
struct Store {
    journal: Journal,
    history: History,
}

/// A running engine.
#[derive(Debug)]
struct Engine {
    bug: Bug,
    store: Mutex<Store>,
}

/// The worker node's main: recovers the journal, then runs `workflows` to the end.
///
/// # Errors
///
/// A failed journal operation: the engine cannot go on without its memory, so the worker
/// should crash and recover.
pub async fn run(bug: Bug, workflows: &[Workflow]) -> io::Result<()> {
    let (journal, records) = Journal::recover(Path::new(JOURNAL_DIR), bug).await?;
    let history = History::replay(&records);
    let engine = Engine {
        bug,
        store: Mutex::new(Store { journal, history }),
    };
    futures::stream::iter(workflows.iter().map(Ok))
        .try_for_each_concurrent(PARALLEL_WORKFLOWS, |workflow| engine.run_workflow(workflow))
        .await
}

impl Engine {
    /// Runs the steps of `workflow` the journal does not hold as done.
    async fn run_workflow(&self, workflow: &Workflow) -> io::Result<()> {
        let progress = self.store.lock().await.history.progress(workflow.id);
        if progress.finished.is_some() {
            return Ok(());
        }
        let mut client = Client::new(self.bug);
        let mut input = progress.last_output().unwrap_or(workflow.input);
        for (step, journaled) in self.remaining_steps(workflow, &progress) {
            let intent = journaled.unwrap_or_else(|| Intent {
                step,
                key: crate::fresh_key(),
                input,
            });
            input = self
                .run_step(workflow, intent, journaled.is_some(), &mut client)
                .await?;
        }
        self.record(Record::Finished {
            workflow: workflow.id,
            output: input,
        })
        .await
    }

    /// The steps left to run, in the order to run them, each with its journaled intent if it
    /// was begun before a crash.
    fn remaining_steps(
        &self,
        workflow: &Workflow,
        progress: &Progress,
    ) -> Vec<(u32, Option<Intent>)> {
        let left = (0..workflow.steps.len() as u32).filter(|&step| !progress.is_done(step));
        let journaled = |step| progress.in_flight.filter(|i| i.step == step);
        if self.bug == Bug::NondeterministicReplay && progress.is_started() {
            // The planted bug: a map of the resumed workflow's pending steps, run in the
            // map's iteration order rather than in step order.
            #[allow(clippy::disallowed_types)]
            let pending: std::collections::HashMap<u32, Option<Intent>> =
                left.map(|step| (step, journaled(step))).collect();
            return pending.into_iter().collect();
        }
        left.map(|step| (step, journaled(step))).collect()
    }

    /// Applies one step: intent, effect, completion; returns the step's output.
    async fn run_step(
        &self,
        workflow: &Workflow,
        intent: Intent,
        journaled: bool,
        client: &mut Client,
    ) -> io::Result<u64> {
        let request = Request {
            key: intent.key,
            workflow: workflow.id,
            step: intent.step,
            action: workflow.steps[intent.step as usize],
            input: intent.input,
        };
        let record = Record::Intent {
            workflow: workflow.id,
            step: intent.step,
            key: intent.key,
            input: intent.input,
        };
        let reply = if journaled {
            client.apply(request).await
        } else if self.bug == Bug::EffectBeforeIntent {
            let reply = client.apply(request).await;
            self.record(record).await?;
            reply
        } else {
            self.record(record).await?;
            client.apply(request).await
        };
        self.record(Record::Done {
            workflow: workflow.id,
            step: intent.step,
            key: intent.key,
            output: reply.output,
        })
        .await?;
        Ok(reply.output)
    }

    /// Journals `record` (durably, unless a bug skips the sync) and compacts a full segment.
    async fn record(&self, record: Record) -> io::Result<()> {
        let mut store = self.store.lock().await;
        let Store { journal, history } = &mut *store;
        journal.append(&record).await?;
        history.apply(&record);
        if journal.is_full() {
            journal.compact(&history.live()).await?;
        }
        Ok(())
    }
}
