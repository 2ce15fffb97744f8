//! The task table: a slab of task slots addressed by [`TaskId`].
//!
//! A slot holds a task's future while the task lives and its output until the `JoinHandle`
//! takes it. A slot is reused after it is freed; the id's serial number tells a live task from
//! an older one that sat in the same slot, so stale wakers and handles are harmless.
//!
//! Futures are *taken out* of their slot while they are polled or dropped: user code run by a
//! poll or a `Drop` may spawn, wake or abort tasks, which needs the table again, so the table
//! is never borrowed across user code.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::task::Waker;

use super::TaskId;
use crate::node::NodeId;

/// A task's future, with its output boxed so that the table holds one type.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = Box<dyn Any>>>>;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    /// Waiting for a wake.
    Idle,
    /// In the ready queue (or parked on a paused node).
    Queued,
    /// Being polled now.
    Running,
    /// Being polled now, and woken during the poll: it goes back to the queue.
    RunningWoken,
    /// Finished: completed or cancelled; the output waits for the join handle.
    Done,
}

/// How a finished task ended, as its join handle sees it.
#[derive(Debug)]
pub(crate) enum Outcome {
    Output(Box<dyn Any>),
    Cancelled,
}

#[derive(Debug)]
pub(crate) struct TaskSlot {
    pub(crate) serial: u32,
    pub(crate) node: NodeId,
    /// The node's incarnation when the task was spawned: a restart makes older tasks stale.
    pub(crate) incarnation: u32,
    pub(crate) name: Option<Box<str>>,
    pub(crate) state: TaskState,
    /// Set when the task was aborted or its node killed while it was being polled.
    pub(crate) cancel_requested: bool,
    pub(crate) handle_alive: bool,
    pub(crate) join_waker: Option<Waker>,
    pub(crate) outcome: Option<Outcome>,
}

#[derive(Default)]
pub(crate) struct TaskTable {
    slots: Vec<Option<TaskSlot>>,
    futures: Vec<Option<TaskFuture>>,
    free: Vec<u32>,
    next_serial: u32,
}

impl std::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTable")
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl TaskTable {
    pub(crate) fn insert(
        &mut self,
        node: NodeId,
        incarnation: u32,
        name: Option<Box<str>>,
        future: TaskFuture,
    ) -> TaskId {
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = u32::try_from(self.slots.len()).expect("too many tasks");
                assert!(
                    slot < super::waker::MAX_SLOTS,
                    "more than 2^24 tasks alive at once"
                );
                self.slots.push(None);
                self.futures.push(None);
                slot
            }
        };
        let index = slot as usize;
        assert!(self.slots[index].is_none(), "reused a busy task slot");
        self.slots[index] = Some(TaskSlot {
            serial,
            node,
            incarnation,
            name,
            state: TaskState::Queued,
            cancel_requested: false,
            handle_alive: true,
            join_waker: None,
            outcome: None,
        });
        self.futures[index] = Some(future);
        TaskId { slot, serial }
    }

    #[inline]
    pub(crate) fn get(&self, id: TaskId) -> Option<&TaskSlot> {
        match self.slots.get(id.slot as usize) {
            Some(Some(slot)) if slot.serial == id.serial => Some(slot),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: TaskId) -> Option<&mut TaskSlot> {
        match self.slots.get_mut(id.slot as usize) {
            Some(Some(slot)) if slot.serial == id.serial => Some(slot),
            _ => None,
        }
    }

    /// Finds a live slot from a waker's truncated serial (see `waker`).
    #[inline]
    pub(crate) fn resolve(&self, slot: u32, serial_low: u32) -> Option<TaskId> {
        match self.slots.get(slot as usize) {
            Some(Some(task)) if task.serial & super::waker::SERIAL_MASK == serial_low => {
                Some(TaskId {
                    slot,
                    serial: task.serial,
                })
            }
            _ => None,
        }
    }

    /// Takes the future out of a task's slot (to poll or drop it outside the table).
    #[inline]
    pub(crate) fn take_future(&mut self, id: TaskId) -> Option<TaskFuture> {
        self.get(id)?;
        self.futures[id.slot as usize].take()
    }

    /// Puts a future back after a poll that returned `Pending`.
    #[inline]
    pub(crate) fn put_future(&mut self, id: TaskId, future: TaskFuture) {
        assert!(
            self.get(id).is_some(),
            "put a future back into a freed slot"
        );
        let place = &mut self.futures[id.slot as usize];
        assert!(place.is_none(), "a task slot holds two futures");
        *place = Some(future);
    }

    /// Frees a slot; its id becomes stale.
    pub(crate) fn free(&mut self, id: TaskId) {
        let index = id.slot as usize;
        assert!(self.get(id).is_some(), "freed a stale task id");
        assert!(
            self.futures[index].is_none(),
            "freed a task that still holds its future"
        );
        self.slots[index] = None;
        self.free.push(id.slot);
    }

    /// The ids of the unfinished tasks of `node`, in slot order.
    pub(crate) fn unfinished_on(&self, node: NodeId) -> Vec<TaskId> {
        self.iter_unfinished()
            .filter(|(_, slot)| slot.node == node)
            .map(|(id, _)| id)
            .collect()
    }

    /// Every unfinished task, in slot order.
    pub(crate) fn iter_unfinished(&self) -> impl Iterator<Item = (TaskId, &TaskSlot)> {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            let slot = slot.as_ref()?;
            (slot.state != TaskState::Done).then_some((
                TaskId {
                    slot: index as u32,
                    serial: slot.serial,
                },
                slot,
            ))
        })
    }
}
