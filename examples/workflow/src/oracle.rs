//! The oracle: what the outside world must have seen once the engine is done.
//!
//! Read from the service's ledger alone (the engine's own word counts for nothing):
//! every step of every workflow took effect exactly once; a workflow's effects took place in
//! step order; each step's input was the output the service gave the step before it (the
//! first step's, the workflow's input), so no step ran on a value the world never produced.

use std::collections::BTreeMap;

use crate::service::{Effect, Ledger};
use crate::workflow::Workflow;

/// The workflows some of whose steps have not taken effect, by id.
///
/// ```
/// use workflow::{oracle, service::Ledger, Action, Workflow};
///
/// let booking = Workflow { id: 3, input: 1, steps: vec![Action::ChargeCard] };
/// assert_eq!(oracle::pending(&[booking], &Ledger::default()), [3]);
/// ```
pub fn pending(workflows: &[Workflow], ledger: &Ledger) -> Vec<u32> {
    workflows
        .iter()
        .filter(|w| {
            (0..w.steps.len() as u32).any(|step| {
                !ledger
                    .effects()
                    .iter()
                    .any(|e| e.workflow == w.id && e.step == step)
            })
        })
        .map(|w| w.id)
        .collect()
}

/// Checks the ledger against the workflows; the error says the first violation found.
///
/// ```
/// use workflow::{oracle, protocol::Request, service::Ledger, Action, Workflow};
///
/// let booking = Workflow { id: 0, input: 7, steps: vec![Action::ChargeCard] };
/// let mut ledger = Ledger::default();
/// let charge = Request { key: 1, workflow: 0, step: 0, action: Action::ChargeCard, input: 7 };
/// ledger.apply(&charge, || 70);
/// assert_eq!(oracle::check(&[booking.clone()], &ledger), Ok(()));
/// ledger.apply(&Request { key: 2, ..charge }, || 71);
/// assert!(oracle::check(&[booking], &ledger).unwrap_err().contains("took effect 2 times"));
/// ```
pub fn check(workflows: &[Workflow], ledger: &Ledger) -> Result<(), String> {
    let mut by_workflow: BTreeMap<u32, Vec<&Effect>> = BTreeMap::new();
    for effect in ledger.effects() {
        by_workflow.entry(effect.workflow).or_default().push(effect);
    }
    for workflow in workflows {
        let effects = by_workflow.remove(&workflow.id).unwrap_or_default();
        check_workflow(workflow, &effects)?;
    }
    match by_workflow.into_iter().next() {
        Some((id, effects)) => Err(format!(
            "effects of workflow {id}, which was never submitted: {effects:?}"
        )),
        None => Ok(()),
    }
}

fn check_workflow(workflow: &Workflow, effects: &[&Effect]) -> Result<(), String> {
    let id = workflow.id;
    for (step, action) in workflow.steps.iter().enumerate() {
        let applied: Vec<&&Effect> = effects.iter().filter(|e| e.step == step as u32).collect();
        if applied.len() != 1 {
            let keys: Vec<String> = applied.iter().map(|e| format!("{:x}", e.key)).collect();
            return Err(format!(
                "workflow {id} step {step} ({action:?}) took effect {} times (keys [{}])",
                applied.len(),
                keys.join(", ")
            ));
        }
        if applied[0].action != *action {
            return Err(format!(
                "workflow {id} step {step} applied {:?} instead of {action:?}",
                applied[0].action
            ));
        }
    }
    if let Some(extra) = effects
        .iter()
        .find(|e| e.step as usize >= workflow.steps.len())
    {
        return Err(format!(
            "workflow {id} has {} steps, but step {} took effect",
            workflow.steps.len(),
            extra.step
        ));
    }
    let order: Vec<u32> = effects.iter().map(|e| e.step).collect();
    if !order.is_sorted() {
        return Err(format!(
            "workflow {id}: steps took effect in the order {order:?}, not in step order"
        ));
    }
    let mut expected = workflow.input;
    for effect in effects {
        if effect.input != expected {
            return Err(format!(
                "workflow {id} step {} ({:?}) ran with input {:x}, but the step before it \
                 produced {expected:x}",
                effect.step, effect.action, effect.input
            ));
        }
        expected = effect.output;
    }
    Ok(())
}
