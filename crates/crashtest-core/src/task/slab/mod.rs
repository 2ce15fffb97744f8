//! Where the executor keeps its tasks: a slab of task slots and the memory of their futures.
//!
//! This is the executor's storage and nothing else; what a task *does* (its states, waking,
//! polling) is the executor's (`world::executor`), and which task runs next is the scheduler's
//! (`task::ready`). Three parts, from the top:
//! - `table`: the task table, a slab of fixed-size slots addressed by `TaskId`, with a free
//!   stack threaded through its vacant places and a serial number that makes stale ids
//!   harmless;
//! - `arena`: the size-classed allocator the cells live in (64 KiB chunks, a free list per
//!   class), with the heap for cells too large for a class;
//! - `spare`: the memory a run leaves to the next run on its thread (the table's slots, the
//!   ready queue's buffer, the arena's chunks), within a per-thread and a per-process limit.
//!
//! A task's cell, its future and then, in the same place, its output, is
//! `crashtest_hooks::FutureCell`, the one the tokio stand-in builds too: a stand-in task
//! arrives as that cell's bytes (`crashtest_hooks::RawTask`), moved once into the arena, and
//! is from then on a cell like any other.
//!
//! Invariants (each part asserts its own): a slot is vacant or holds exactly one task; a cell
//! is behind exactly one owner; an arena block is on one free list, behind one cell, or
//! neither; memory kept between runs holds no live task.

mod arena;
mod spare;
mod table;

pub(crate) use crashtest_hooks::TaskCell;
pub(super) use spare::{keep_ready, take_ready};
pub(crate) use table::{Label, LabelRef, Outcome, TaskFuture, TaskSlot, TaskState, TaskTable};
