//! The linearizability check: split a history into the model's partitions, search each for a
//! linearization, and shrink the first failing one to a smallest window for the report.
//!
//! Partitions are checked in the order of their keys, and the report names the first failing
//! one in that order, so the same history always gives the same report. The search of a
//! partition has no budget (it must give an answer); only the shrinking does.

mod memo;
mod report;
mod search;
mod window;

use std::collections::BTreeMap;

pub use report::{NonLinearizable, WindowOp};
use search::{SearchOp, UNLIMITED, Verdict, search};

use crate::history::{Operation, Outcome};
use crate::model::{Effect, Model};

/// One partition's operations, in invocation order.
type Ops<'h, M> = &'h [&'h Operation<<M as Model>::Input, <M as Model>::Output>];

/// Checks `operations` (in invocation order, as a `History` keeps them) against `model`.
pub(crate) fn check<M: Model>(
    model: &M,
    operations: &[Operation<M::Input, M::Output>],
) -> Result<(), NonLinearizable> {
    assert!(
        operations
            .windows(2)
            .all(|pair| pair[0].invoked.seq < pair[1].invoked.seq),
        "operations are in invocation order"
    );
    let mut partitions = BTreeMap::new();
    for op in operations {
        if !matches!(op.outcome, Outcome::Failed) {
            partitions
                .entry(model.partition(&op.input))
                .or_insert_with(Vec::new)
                .push(op);
        }
    }
    let failing: Vec<_> = partitions
        .iter()
        .filter(|(_, ops)| {
            search(model, &cut(model, ops, 0, u64::MAX), UNLIMITED) != Verdict::Linearizable
        })
        .collect();
    let Some((key, ops)) = failing.first() else {
        return Ok(());
    };
    let window = window::smallest(model, ops);
    Err(NonLinearizable::new(
        model,
        format!("{key:?}"),
        (failing.len(), partitions.len()),
        ops,
        window,
    ))
}

/// The sequence number at which `op` returned an output, if it did.
fn returned<I, O>(op: &Operation<I, O>) -> Option<u64> {
    match op.outcome {
        Outcome::Ok(_) => Some(
            op.completed
                .expect("an operation that returned has completed")
                .seq,
        ),
        Outcome::Pending | Outcome::Failed | Outcome::Unknown => None,
    }
}

/// The operations of a partition as one search sees them: those invoked by the event `end`,
/// where the first `relaxed` ones and those that had not returned by `end` are of unknown
/// outcome (see the `window` module for why). Reads of unknown outcome are left out: they
/// change nothing and their output is not checked.
fn cut<'h, M: Model>(
    model: &M,
    ops: &[&'h Operation<M::Input, M::Output>],
    relaxed: usize,
    end: u64,
) -> Vec<SearchOp<'h, M::Input, M::Output>> {
    ops.iter()
        .take_while(|op| op.invoked.seq <= end)
        .enumerate()
        .filter_map(|(index, op)| {
            let output = match &op.outcome {
                Outcome::Ok(output) if index >= relaxed => Some(output),
                _ => None,
            };
            let returned = returned(op).filter(|&seq| output.is_some() && seq <= end);
            let output = returned.and(output);
            let inert = output.is_none() && model.effect(&op.input) == Effect::Reads;
            (!inert).then_some(SearchOp {
                input: &op.input,
                output,
                invoked: op.invoked.seq,
                returned,
            })
        })
        .collect()
}
