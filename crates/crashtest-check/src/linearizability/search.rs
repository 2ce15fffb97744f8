//! The search for a linearization of one partition (Wing & Gong's algorithm with Lowe's
//! just-in-time linearization and memoisation).
//!
//! The invocations and returns of the operations that returned form one list in history
//! order. The search walks it from the front: at an invocation it tries to linearize that
//! operation next (the model must accept its output from the current state) and, if that
//! succeeds and the configuration is new, removes the operation's two entries and starts again
//! from the front. Reaching a return means the operation that returns there cannot be put off
//! any longer, so the candidates end there; when none fits, the search undoes the last choice
//! and tries the next candidate after it. Linearizing only operations invoked before the first
//! pending return is exactly the real-time order rule, so every order built respects it.
//!
//! Operations of unknown outcome have an invocation and no return, and sit in a second list:
//! they stay candidates until the end, and the history is linearizable as soon as every
//! operation that returned has been placed, the rest taken never to have happened (or to
//! have happened after everything observed). They are tried only after every definite
//! candidate, so a search that can do without them (most timeouts of a correct system lost
//! nothing, or took effect where the history shows it) never wanders into placing them.
//!
//! The removal and restoration of list entries is dancing links: entries are restored in the
//! reverse order of their removal, so each finds its neighbours where it left them.

use super::memo::{LinearizedSet, Memo};
use crate::model::{Effect, Model};

/// One operation as the search sees it.
#[derive(Debug)]
pub(super) struct SearchOp<'h, I, O> {
    pub(super) input: &'h I,
    /// `None` for an operation of unknown outcome.
    pub(super) output: Option<&'h O>,
    /// The sequence number of its invocation.
    pub(super) invoked: u64,
    /// The sequence number of its return; `None` exactly when `output` is.
    pub(super) returned: Option<u64>,
}

/// What the search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Linearizable,
    NotLinearizable,
    /// The budget of model steps ran out first.
    GaveUp,
}

/// A budget that never runs out.
pub(super) const UNLIMITED: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
enum Slot {
    Head,
    Call(usize),
    Return(usize),
}

/// The head of the list of definite operations' invocations and returns.
const DEFINITE_HEAD: usize = 0;
/// The head of the list of unknown operations' invocations.
const UNKNOWN_HEAD: usize = 1;
/// The marker past the last entry of a list.
const END: usize = usize::MAX;

/// The two doubly linked lists of events, sharing one node array.
struct Entries {
    slots: Vec<Slot>,
    seqs: Vec<u64>,
    next: Vec<usize>,
    prev: Vec<usize>,
    call_of: Vec<usize>,
    return_of: Vec<Option<usize>>,
}

impl Entries {
    fn build<I, O>(ops: &[SearchOp<'_, I, O>]) -> Entries {
        let mut events = Vec::with_capacity(ops.len() * 2);
        for (index, op) in ops.iter().enumerate() {
            assert_eq!(
                op.output.is_some(),
                op.returned.is_some(),
                "an output comes with a return"
            );
            events.push((op.invoked, Slot::Call(index)));
            if let Some(returned) = op.returned {
                assert!(
                    returned > op.invoked,
                    "operation {index} returned before it was invoked"
                );
                events.push((returned, Slot::Return(index)));
            }
        }
        events.sort_unstable_by_key(|&(seq, _)| seq);
        assert!(
            events.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "two events share a sequence number"
        );
        let mut entries = Entries {
            slots: vec![Slot::Head, Slot::Head],
            seqs: vec![0, 0],
            next: vec![END, END],
            prev: vec![END, END],
            call_of: vec![0; ops.len()],
            return_of: vec![None; ops.len()],
        };
        let mut tails = [DEFINITE_HEAD, UNKNOWN_HEAD];
        for (seq, slot) in events {
            let node = entries.slots.len();
            let list = match slot {
                Slot::Call(op) => {
                    entries.call_of[op] = node;
                    usize::from(ops[op].returned.is_none())
                }
                Slot::Return(op) => {
                    entries.return_of[op] = Some(node);
                    0
                }
                Slot::Head => unreachable!("the heads are not events"),
            };
            entries.slots.push(slot);
            entries.seqs.push(seq);
            entries.prev.push(tails[list]);
            entries.next.push(END);
            entries.next[tails[list]] = node;
            tails[list] = node;
        }
        entries
    }

    fn unlink(&mut self, node: usize) {
        let (prev, next) = (self.prev[node], self.next[node]);
        self.next[prev] = next;
        if next != END {
            self.prev[next] = prev;
        }
    }

    fn relink(&mut self, node: usize) {
        let (prev, next) = (self.prev[node], self.next[node]);
        assert_eq!(
            self.next[prev], next,
            "entries are restored in reverse order of removal"
        );
        self.next[prev] = node;
        if next != END {
            self.prev[next] = node;
        }
    }

    fn lift(&mut self, op: usize) {
        self.unlink(self.call_of[op]);
        if let Some(node) = self.return_of[op] {
            self.unlink(node);
        }
    }

    fn unlift(&mut self, op: usize) {
        if let Some(node) = self.return_of[op] {
            self.relink(node);
        }
        self.relink(self.call_of[op]);
    }
}

/// Where the search is looking for the next candidate.
#[derive(Clone, Copy, Debug)]
enum Cursor {
    /// At a node of the definite list.
    Definite(usize),
    /// At a node of the unknown list; invocations after `bound` (the first pending return)
    /// are not candidates.
    Unknown { node: usize, bound: u64 },
}

impl Cursor {
    fn node(self) -> usize {
        match self {
            Cursor::Definite(node) | Cursor::Unknown { node, .. } => node,
        }
    }

    fn advance(self, entries: &Entries) -> Cursor {
        match self {
            Cursor::Definite(node) => Cursor::Definite(entries.next[node]),
            Cursor::Unknown { node, bound } => Cursor::Unknown {
                node: entries.next[node],
                bound,
            },
        }
    }
}

/// Where an operation sits in the memo's two sets.
#[derive(Clone, Copy, Debug)]
enum Class {
    Definite(usize),
    Unknown(u32),
}

/// The search's current path: which operations are linearized.
struct Path {
    definite: LinearizedSet,
    /// Sorted indices of the linearized operations of unknown outcome.
    unknown: Vec<u32>,
    /// Definite operations not linearized yet.
    remaining: usize,
}

impl Path {
    fn add(&mut self, class: Class) {
        match class {
            Class::Definite(index) => {
                self.definite.insert(index);
                self.remaining -= 1;
            }
            Class::Unknown(index) => {
                let at = self
                    .unknown
                    .binary_search(&index)
                    .expect_err("linearized once");
                self.unknown.insert(at, index);
            }
        }
    }

    fn remove(&mut self, class: Class) {
        match class {
            Class::Definite(index) => {
                self.definite.remove(index);
                self.remaining += 1;
            }
            Class::Unknown(index) => {
                let at = self.unknown.binary_search(&index).expect("was linearized");
                self.unknown.remove(at);
            }
        }
    }
}

/// A choice on the current path: the operation linearized, the state before it, and where it
/// was found (the search resumes after it when the choice is undone).
struct Frame<S> {
    op: usize,
    previous: S,
    at: Cursor,
}

fn classify<I, O>(ops: &[SearchOp<'_, I, O>]) -> (Vec<Class>, usize) {
    let mut definite = 0;
    let mut unknown = 0;
    let classes = ops
        .iter()
        .map(|op| match op.returned {
            Some(_) => {
                definite += 1;
                Class::Definite(definite - 1)
            }
            None => {
                unknown += 1;
                Class::Unknown(unknown - 1)
            }
        })
        .collect();
    (classes, definite)
}

/// Searches for a linearization of `ops`, giving up after `budget` model steps.
pub(super) fn search<M: Model>(
    model: &M,
    ops: &[SearchOp<'_, M::Input, M::Output>],
    budget: u64,
) -> Verdict {
    let mut search = Search::new(model, ops);
    let mut steps = 0;
    while search.path.remaining > 0 {
        let Some(op) = search.next_candidate() else {
            if !search.backtrack() {
                return Verdict::NotLinearizable;
            }
            continue;
        };
        if steps == budget {
            return Verdict::GaveUp;
        }
        steps += 1;
        search.try_linearize(op);
    }
    Verdict::Linearizable
}

/// The search's state: the event lists, the current path and state, and the memo.
struct Search<'m, 'o, 'h, M: Model> {
    model: &'m M,
    ops: &'o [SearchOp<'h, M::Input, M::Output>],
    entries: Entries,
    classes: Vec<Class>,
    /// Per operation: its effect replaces the state (a blind write).
    replaces: Vec<bool>,
    path: Path,
    memo: Memo<M::State>,
    state: M::State,
    stack: Vec<Frame<M::State>>,
    cursor: Cursor,
}

impl<'m, 'o, 'h, M: Model> Search<'m, 'o, 'h, M> {
    fn new(model: &'m M, ops: &'o [SearchOp<'h, M::Input, M::Output>]) -> Self {
        let entries = Entries::build(ops);
        let (classes, definite_count) = classify(ops);
        let path = Path {
            definite: LinearizedSet::new(definite_count),
            unknown: Vec::new(),
            remaining: definite_count,
        };
        let state = model.init();
        let mut memo = Memo::new();
        memo.first_visit(&path.definite, &state, &path.unknown);
        let cursor = Cursor::Definite(entries.next[DEFINITE_HEAD]);
        Search {
            model,
            ops,
            entries,
            classes,
            replaces: ops
                .iter()
                .map(|op| model.effect(op.input) == Effect::Replaces)
                .collect(),
            path,
            memo,
            state,
            stack: Vec::new(),
            cursor,
        }
    }

    /// Moves the cursor to the next candidate and returns it: definite invocations up to the
    /// first pending return, then unknown invocations up to that return. `None` when the
    /// candidates are exhausted.
    fn next_candidate(&mut self) -> Option<usize> {
        loop {
            match self.cursor {
                Cursor::Definite(node) => {
                    assert!(
                        node != END,
                        "a pending return lies ahead of every definite call"
                    );
                    match self.entries.slots[node] {
                        Slot::Call(op) => return Some(op),
                        Slot::Return(_) => {
                            let bound = self.entries.seqs[node];
                            let node = self.entries.next[UNKNOWN_HEAD];
                            self.cursor = Cursor::Unknown { node, bound };
                        }
                        Slot::Head => unreachable!("a head is never a successor"),
                    }
                }
                Cursor::Unknown { node, bound } => {
                    if node == END || self.entries.seqs[node] > bound {
                        return None;
                    }
                    let Slot::Call(op) = self.entries.slots[node] else {
                        unreachable!("the unknown list holds invocations only");
                    };
                    return Some(op);
                }
            }
        }
    }

    /// Tries `op` (at the cursor) as the next operation of the linearization: on success the
    /// search goes one level deeper, otherwise the cursor moves past it.
    fn try_linearize(&mut self, op: usize) {
        assert_eq!(
            self.cursor.node(),
            self.entries.call_of[op],
            "the cursor is at the candidate"
        );
        let candidate = &self.ops[op];
        let class = self.classes[op];
        if self.replaces[op] && self.top_is_unknown() {
            // The unknown operation just placed would be overwritten at once: the configuration
            // is dominated, as in `absorbs`, and this costs no model step.
            self.cursor = self.cursor.advance(&self.entries);
            return;
        }
        if let Some(next) = self
            .model
            .step(&self.state, candidate.input, candidate.output)
            && !absorbs(self.model, &self.stack, &self.classes, candidate, &next)
        {
            self.path.add(class);
            if self
                .memo
                .first_visit(&self.path.definite, &next, &self.path.unknown)
            {
                let previous = std::mem::replace(&mut self.state, next);
                self.stack.push(Frame {
                    op,
                    previous,
                    at: self.cursor,
                });
                self.entries.lift(op);
                self.cursor = Cursor::Definite(self.entries.next[DEFINITE_HEAD]);
                return;
            }
            self.path.remove(class);
        }
        self.cursor = self.cursor.advance(&self.entries);
    }

    fn top_is_unknown(&self) -> bool {
        self.stack
            .last()
            .is_some_and(|top| matches!(self.classes[top.op], Class::Unknown(_)))
    }

    /// Undoes the last choice and moves the cursor past it; false if there is none left.
    fn backtrack(&mut self) -> bool {
        let Some(frame) = self.stack.pop() else {
            return false;
        };
        self.entries.unlift(frame.op);
        self.path.remove(self.classes[frame.op]);
        self.state = frame.previous;
        self.cursor = frame.at.advance(&self.entries);
        true
    }
}

/// True if the operation linearized just before `candidate`, of unknown outcome, made no
/// difference: `candidate` reaches `next` from the state before it too (a write over a
/// timed-out write). The configuration is then dominated by linearizing `candidate` without it,
/// from the parent configuration, where it was a candidate as well (nothing returned between),
/// and which has one more unknown operation left to use. Without this rule the search would
/// try every pending timed-out write before every operation at every dead end.
fn absorbs<M: Model>(
    model: &M,
    stack: &[Frame<M::State>],
    classes: &[Class],
    candidate: &SearchOp<'_, M::Input, M::Output>,
    next: &M::State,
) -> bool {
    let Some(top) = stack.last() else {
        return false;
    };
    matches!(classes[top.op], Class::Unknown(_))
        && model
            .step(&top.previous, candidate.input, candidate.output)
            .as_ref()
            == Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Register, RegisterOp, RegisterOutput};

    type Op<'h> = SearchOp<'h, RegisterOp<u8>, RegisterOutput<u8>>;

    fn op<'h>(
        input: &'h RegisterOp<u8>,
        output: Option<&'h RegisterOutput<u8>>,
        invoked: u64,
        returned: Option<u64>,
    ) -> Op<'h> {
        SearchOp {
            input,
            output,
            invoked,
            returned,
        }
    }

    const WRITTEN: RegisterOutput<u8> = RegisterOutput::Written;

    #[test]
    fn overlapping_operations_may_take_effect_in_either_order() {
        let write = RegisterOp::Write(1);
        let read = RegisterOp::Read;
        let saw_old = RegisterOutput::Value(0);
        let saw_new = RegisterOutput::Value(1);
        for seen in [&saw_old, &saw_new] {
            let ops = [
                op(&write, Some(&WRITTEN), 0, Some(3)),
                op(&read, Some(seen), 1, Some(2)),
            ];
            assert_eq!(
                search(&Register::new(0), &ops, UNLIMITED),
                Verdict::Linearizable
            );
        }
    }

    #[test]
    fn a_read_after_a_returned_write_must_see_it() {
        let write = RegisterOp::Write(1);
        let read = RegisterOp::Read;
        let stale = RegisterOutput::Value(0);
        let ops = [
            op(&write, Some(&WRITTEN), 0, Some(1)),
            op(&read, Some(&stale), 2, Some(3)),
        ];
        assert_eq!(
            search(&Register::new(0), &ops, UNLIMITED),
            Verdict::NotLinearizable
        );
    }

    #[test]
    fn an_unknown_write_may_have_happened_or_not() {
        let write = RegisterOp::Write(1);
        let read = RegisterOp::Read;
        for seen in [RegisterOutput::Value(0), RegisterOutput::Value(1)] {
            let ops = [
                op(&write, None, 0, None),
                op(&read, Some(&seen), 5, Some(6)),
            ];
            assert_eq!(
                search(&Register::new(0), &ops, UNLIMITED),
                Verdict::Linearizable
            );
        }
    }

    #[test]
    fn an_unknown_write_cannot_take_effect_before_its_invocation() {
        let write = RegisterOp::Write(1);
        let read = RegisterOp::Read;
        let seen = RegisterOutput::Value(1);
        let ops = [
            op(&read, Some(&seen), 0, Some(1)),
            op(&write, None, 2, None),
        ];
        assert_eq!(
            search(&Register::new(0), &ops, UNLIMITED),
            Verdict::NotLinearizable
        );
    }

    #[test]
    fn many_unknown_writes_do_not_blow_up_the_search() {
        let writes: Vec<RegisterOp<u8>> = (1..=60).map(RegisterOp::Write).collect();
        let read = RegisterOp::Read;
        let impossible = RegisterOutput::Value(200);
        let mut ops: Vec<Op<'_>> = (0..60)
            .map(|i| op(&writes[i], None, i as u64, None))
            .collect();
        ops.push(op(&read, Some(&impossible), 100, Some(101)));
        // Every subset of sixty writes would be 2^60 configurations; dominance keeps it to a
        // few per state.
        assert_eq!(
            search(&Register::new(0), &ops, 1_000_000),
            Verdict::NotLinearizable
        );
    }

    #[test]
    fn the_budget_bounds_the_work() {
        let write = RegisterOp::Write(1);
        let read = RegisterOp::Read;
        let seen = RegisterOutput::Value(1);
        let ops = [
            op(&write, Some(&WRITTEN), 0, Some(3)),
            op(&read, Some(&seen), 1, Some(2)),
        ];
        assert_eq!(search(&Register::new(0), &ops, 1), Verdict::GaveUp);
    }
}
