//! The task table: a slab of task slots addressed by [`TaskId`].
//!
//! A slot holds a task's future while the task lives and its output until the `JoinHandle`
//! takes it. A slot is reused after it is freed; the id's serial number tells a live task from
//! an older one that sat in the same slot, so stale wakers and handles are harmless.
//!
//! Futures are *taken out* of their slot while they are polled or dropped: user code run by a
//! poll or a `Drop` may spawn, wake or abort tasks, which needs the table again, so the table
//! is never borrowed across user code.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::Location;
use std::task::Waker;

use super::arena::{CellArena, CellBox, FreedBlock};
use super::spare;
use crate::node::NodeId;
use crate::task::TaskId;
use crashtest_hooks::FutureCell;

/// A task's one allocation: its future, then its output (see `crashtest_hooks::FutureCell`
/// and `arena`).
pub(crate) type TaskFuture = CellBox;

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
pub(crate) enum Outcome {
    /// The task's cell, holding its output.
    Output(TaskFuture),
    Cancelled,
}

/// One task in 24 bytes (names and join wakers, touched rarely or once, live in side tables):
/// tasks spawned together sit together, and the scheduler's window polls them close together
/// (see `ready`). A run streams through its slots, so every byte counts: the node fits 16 bits
/// (the node table refuses more nodes), and the state byte's spare values make a
/// [`SlotEntry`] no larger than the slot.
pub(crate) struct TaskSlot {
    pub(crate) serial: u32,
    node: u16,
    pub(crate) state: TaskState,
    /// `CANCEL_REQUESTED | HANDLE_ALIVE | NAMED | CANCELLED`, packed to keep the slot small.
    flags: u8,
    /// The task's cell: its future while it runs, its output once it completed.
    future: Option<TaskFuture>,
}

/// The task was aborted, or its node killed, while it was being polled.
const CANCEL_REQUESTED: u8 = 1;
/// A `JoinHandle` still waits for the outcome.
const HANDLE_ALIVE: u8 = 2;
/// The task has a name in the table's side map.
const NAMED: u8 = 4;
/// The task finished by cancellation (its output is then `None`).
const CANCELLED: u8 = 8;

impl std::fmt::Debug for TaskSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSlot")
            .field("serial", &self.serial)
            .field("node", &self.node())
            .field("state", &self.state)
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

/// A place in the table: a task, or free, linked to the next free place. The free places
/// form a stack threaded through the table itself, so freeing a task writes nothing outside
/// its own slot.
pub(crate) enum SlotEntry {
    Vacant {
        /// The next free place, or [`NO_FREE`].
        next: u32,
    },
    Occupied(TaskSlot),
}

const _: () = assert!(std::mem::size_of::<TaskSlot>() == 24);
const _: () = assert!(std::mem::size_of::<SlotEntry>() == std::mem::size_of::<TaskSlot>());

/// The end of the free stack.
const NO_FREE: u32 = u32::MAX;
// The flags are distinct bits of the flag byte.
const _: () = assert!((CANCEL_REQUESTED | HANDLE_ALIVE | NAMED | CANCELLED).count_ones() == 4);

impl TaskSlot {
    /// Whether a waker's truncated serial (see `waker`) names this task, not an earlier one
    /// of its slot.
    #[inline]
    fn is_named_by(&self, serial_low: u32) -> bool {
        self.serial & crate::task::waker::SERIAL_MASK == serial_low
    }

    /// The node the task runs on.
    #[inline]
    pub(crate) fn node(&self) -> NodeId {
        NodeId(u32::from(self.node))
    }

    #[inline]
    fn flag(&self, flag: u8) -> bool {
        // One flag at a time: a mask of several would read as "any of them".
        debug_assert!(flag.is_power_of_two());
        self.flags & flag != 0
    }

    #[inline]
    fn set_flag(&mut self, flag: u8, on: bool) {
        debug_assert!(flag.is_power_of_two());
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }

    /// Takes the future out (to poll or drop it outside the table).
    #[inline]
    pub(crate) fn take_future(&mut self) -> Option<TaskFuture> {
        // A finished task's cell is its outcome, which only the join path takes.
        debug_assert_ne!(
            self.state,
            TaskState::Done,
            "took the future of a finished task"
        );
        self.future.take()
    }

    /// Puts the future back after a poll that returned `Pending`.
    #[inline]
    pub(crate) fn put_future(&mut self, future: TaskFuture) {
        assert!(self.future.is_none(), "a task slot holds two futures");
        // The executor decides the state first: a task that keeps its future waits.
        debug_assert!(
            matches!(self.state, TaskState::Idle | TaskState::Queued),
            "a future put back into a task in state {:?}",
            self.state
        );
        self.future = Some(future);
    }

    /// Starts loading the task's future into cache (see `CellBox::prefetch`).
    #[inline]
    pub(crate) fn prefetch_future(&self) {
        // Called as an idle task is woken: only a running task is without its future.
        debug_assert!(self.future.is_some(), "a waiting task without its future");
        if let Some(future) = &self.future {
            future.prefetch();
        }
    }

    /// Whether the task was cancelled while it was being polled.
    pub(crate) fn cancel_requested(&self) -> bool {
        self.flag(CANCEL_REQUESTED)
    }

    /// Asks a running task to stop when its poll returns.
    pub(crate) fn request_cancel(&mut self) {
        // A task that is not running is cancelled at once, not asked to stop.
        debug_assert!(
            matches!(self.state, TaskState::Running | TaskState::RunningWoken),
            "asked a task in state {:?} to stop after its poll",
            self.state
        );
        self.set_flag(CANCEL_REQUESTED, true);
    }

    /// Whether a `JoinHandle` still waits for the outcome.
    pub(crate) fn handle_alive(&self) -> bool {
        self.flag(HANDLE_ALIVE)
    }

    /// The task's handle was dropped: nobody will read the outcome.
    pub(crate) fn detach(&mut self) {
        assert!(self.handle_alive(), "a task's handle was dropped twice");
        // A finished task's outcome goes with its handle (`World::detach` frees it instead).
        debug_assert_ne!(self.state, TaskState::Done, "detached a finished task");
        self.set_flag(HANDLE_ALIVE, false);
    }

    /// Stores how the task ended, for its handle.
    #[inline]
    pub(crate) fn set_outcome(&mut self, outcome: Outcome) {
        assert!(
            self.future.is_none() && !self.flag(CANCELLED),
            "a task's outcome is set once"
        );
        debug_assert_eq!(self.state, TaskState::Done, "an outcome for a running task");
        debug_assert!(
            self.handle_alive(),
            "an outcome kept with nobody to read it"
        );
        match outcome {
            Outcome::Output(cell) => self.future = Some(cell),
            Outcome::Cancelled => self.set_flag(CANCELLED, true),
        }
    }

    /// Takes how the task ended.
    ///
    /// # Panics
    ///
    /// Panics if the outcome was already taken or never set.
    #[inline]
    pub(crate) fn take_outcome(&mut self) -> Outcome {
        debug_assert_eq!(self.state, TaskState::Done, "the outcome of a running task");
        // Taken by the handle, as it joins or as it is dropped: it is still there.
        assert!(self.handle_alive(), "the outcome of a task nobody joins");
        if self.flag(CANCELLED) {
            self.set_flag(CANCELLED, false);
            return Outcome::Cancelled;
        }
        Outcome::Output(self.future.take().expect("a finished task's outcome waits"))
    }
}

/// What a report calls a task by: the name it was given, where the program spawned it, or
/// both (crashtest's own tasks, such as a node's `main`, have a name and no place). Two plain
/// fields, not an enum to match: a spawn passes it down and stores it as it is.
pub(crate) struct Label {
    pub(crate) name: Option<Box<str>>,
    pub(crate) place: Option<&'static Location<'static>>,
}

impl Label {
    /// One of crashtest's own tasks, known by its name alone.
    pub(crate) fn own(name: &str) -> Label {
        Label {
            name: Some(name.into()),
            place: None,
        }
    }

    /// Whether the label names its task (an empty name names nothing).
    #[inline]
    pub(crate) fn is_named(&self) -> bool {
        self.name.as_deref().is_some_and(|name| !name.is_empty())
    }

    /// A task the program spawned at `place`, named or not.
    #[inline]
    pub(crate) fn spawned(name: Option<&str>, place: &'static Location<'static>) -> Label {
        Label {
            name: name.map(Box::from),
            place: Some(place),
        }
    }
}

/// A task's label as a report prints it: `flusher`, `spawned at src/db.rs:40:9`, or
/// `flusher, spawned at src/db.rs:40:9`.
pub(crate) struct LabelRef<'a> {
    name: Option<&'a str>,
    place: Option<&'static Location<'static>>,
}

impl<'a> LabelRef<'a> {
    /// The label of a task named `name` and spawned at `place`, if it has either (a task the
    /// watchdog knows only by its serial may have neither).
    pub(crate) fn of(
        name: Option<&'a str>,
        place: Option<&'static Location<'static>>,
    ) -> Option<LabelRef<'a>> {
        (name.is_some() || place.is_some()).then_some(LabelRef { name, place })
    }
}

impl std::fmt::Display for LabelRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An empty name names nothing.
        match (self.name.filter(|name| !name.is_empty()), self.place) {
            (Some(name), Some(place)) => write!(f, "{name}, spawned at {place}"),
            (Some(name), None) => f.write_str(name),
            (None, Some(place)) => write!(f, "spawned at {place}"),
            (None, None) => f.write_str("unnamed"),
        }
    }
}

pub(crate) struct TaskTable {
    slots: Vec<SlotEntry>,
    names: BTreeMap<u32, Box<str>>,
    /// Where each place's task was spawned, by place (`None` for one of crashtest's own, which
    /// has a name): one store per spawn, beside the slots rather than in them, which the
    /// scheduler streams through and which stay 24 bytes.
    origins: Vec<Option<&'static Location<'static>>>,
    /// The wakers of join handles waiting for their task, by slot. A map, not a vector by
    /// slot: a handle awaited while a million tasks are alive would otherwise cost a
    /// million-entry vector, and few handles wait at any one time.
    join_wakers: BTreeMap<u32, Waker>,
    /// The most recently freed place (the top of the free stack), or [`NO_FREE`].
    free_top: u32,
    /// Places on the free stack.
    vacant: usize,
    next_serial: u32,
    /// Where the cells live; declared last so that it drops after the slots' cells.
    arena: CellArena,
}

impl std::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTable")
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl Drop for TaskTable {
    /// Drops the tasks left (while the arena still holds their cells) and keeps the slots'
    /// memory for the thread's next run.
    fn drop(&mut self) {
        // Not while a panic unwinds: a check that failed mid-change has said what broke.
        if crate::verify::enabled() && !std::thread::panicking() {
            self.verify();
        }
        let mut slots = std::mem::take(&mut self.slots);
        // Only the places off the free stack hold tasks (often just the run's body): drop
        // those and stop, instead of walking every place of a large run.
        let mut occupied = slots.len() - self.vacant;
        for entry in &mut slots {
            if occupied == 0 {
                break;
            }
            let old = std::mem::replace(entry, SlotEntry::Vacant { next: NO_FREE });
            if matches!(old, SlotEntry::Occupied(_)) {
                occupied -= 1;
            }
        }
        // The vacant count is what lets the walk stop early: had it counted too many, a
        // task would be forgotten here, its cell never dropped.
        assert_eq!(occupied, 0, "the task table lost count of its tasks");
        // SAFETY: shrinking a vector's length is always sound (the elements cut off are
        // forgotten, not read), and every place left is vacant, so nothing is leaked.
        unsafe { slots.set_len(0) };
        spare::keep_slots(slots);
    }
}

impl TaskTable {
    /// An empty table, reusing memory a past run on this thread left (see `spare`).
    pub(crate) fn new() -> TaskTable {
        let slots = spare::take_slots();
        // Kept slots come back empty (`spare` clears them), or a past run's tasks would be
        // this run's.
        assert!(slots.is_empty(), "a past run's task slots were handed on");
        // As many places as the kept slots hold: no regrowth in a run like the last.
        let origins = Vec::with_capacity(slots.capacity());
        TaskTable {
            slots,
            names: BTreeMap::new(),
            origins,
            join_wakers: BTreeMap::new(),
            free_top: NO_FREE,
            vacant: 0,
            next_serial: 0,
            arena: CellArena::default(),
        }
    }

    /// Adds a task running `future`, its cell in the table's arena.
    pub(crate) fn insert<F>(&mut self, node: NodeId, label: Label, future: F) -> TaskId
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let future = self.arena.alloc(FutureCell::new(future));
        self.insert_cell(node, label, future)
    }

    /// Adds a task whose cell type the table cannot name (the tokio stand-in's), moved once
    /// into the table's arena. Inlined into the seam's spawn, as `insert` is into the core's.
    #[inline]
    pub(crate) fn insert_raw(
        &mut self,
        node: NodeId,
        label: Label,
        task: crashtest_hooks::RawTask<'_>,
    ) -> TaskId {
        let future = self.arena.alloc_raw(task);
        self.insert_cell(node, label, future)
    }

    /// Adds a task running the cell `future`.
    #[inline(always)]
    fn insert_cell(&mut self, node: NodeId, label: Label, future: TaskFuture) -> TaskId {
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let Label {
            name,
            place: origin,
        } = label;
        let named = name.is_some();
        let node = u16::try_from(node.0).expect("the node table holds at most 2^16 nodes");
        let reused = self.free_top != NO_FREE;
        assert_eq!(
            reused,
            self.vacant > 0,
            "the free stack and the vacant count disagree"
        );
        let slot = if reused {
            self.free_top
        } else {
            let slot = u32::try_from(self.slots.len()).expect("too many tasks");
            assert!(
                slot < crate::task::waker::MAX_SLOTS,
                "more than 2^24 tasks alive at once"
            );
            self.slots.push(SlotEntry::Vacant { next: NO_FREE });
            self.origins.push(None);
            slot
        };
        // Each place has its origin beside it.
        debug_assert_eq!(self.origins.len(), self.slots.len());
        self.origins[slot as usize] = origin;
        let entry = &mut self.slots[slot as usize];
        let SlotEntry::Vacant { next } = *entry else {
            panic!("reused a busy task slot");
        };
        // Written straight into its place, known vacant (so nothing is dropped first), rather
        // than built aside and copied: the copy would read the slot's small fields back as
        // one word right after storing them one by one, which stalls the CPU on every spawn.
        *entry = SlotEntry::Occupied(TaskSlot {
            serial,
            node,
            state: TaskState::Queued,
            flags: HANDLE_ALIVE | if named { NAMED } else { 0 },
            future: Some(future),
        });
        if reused {
            self.free_top = next;
            self.vacant -= 1;
        }
        debug_assert!(
            self.vacant < self.slots.len(),
            "a task was added to a full count"
        );
        if let Some(name) = name {
            let earlier = self.names.insert(slot, name);
            assert!(earlier.is_none(), "a freed task's name outlived it");
            // Names are kept only for tasks in the table (`free` forgets them).
            assert!(
                self.names.len() <= self.slots.len() - self.vacant,
                "more task names than tasks"
            );
        }
        TaskId { slot, serial }
    }

    #[inline]
    pub(crate) fn get(&self, id: TaskId) -> Option<&TaskSlot> {
        match self.slots.get(id.slot as usize) {
            Some(SlotEntry::Occupied(slot)) if slot.serial == id.serial => Some(slot),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, id: TaskId) -> Option<&mut TaskSlot> {
        match self.slots.get_mut(id.slot as usize) {
            Some(SlotEntry::Occupied(slot)) if slot.serial == id.serial => Some(slot),
            _ => None,
        }
    }

    /// The task's name, if it was given one.
    pub(crate) fn name(&self, id: TaskId) -> Option<&str> {
        let slot = self.get(id)?;
        if !slot.flag(NAMED) {
            return None;
        }
        let name = self.names.get(&id.slot);
        assert!(name.is_some(), "task {id} is named but its name is lost");
        name.map(|name| &**name)
    }

    /// Where the program spawned a task in the table (`None` for crashtest's own tasks).
    #[inline]
    pub(crate) fn origin(&self, id: TaskId) -> Option<&'static Location<'static>> {
        debug_assert!(self.get(id).is_some(), "task {id} is not in the table");
        self.origins[id.slot as usize]
    }

    /// What a report calls a task: its name, where it was spawned, or both; `None` for a task
    /// no longer in the table.
    fn label(&self, id: TaskId) -> Option<LabelRef<'_>> {
        self.get(id)?;
        let label = LabelRef::of(self.name(id), self.origin(id));
        // crashtest names each task it spawns itself, and the program's have their place.
        assert!(label.is_some(), "task {id} has neither a name nor a place");
        label
    }

    /// How a report names a task: `t4 (flusher, spawned at src/db.rs:40:9)`, or just `t4`
    /// once it left the table.
    pub(crate) fn called(&self, id: TaskId) -> String {
        match self.label(id) {
            Some(label) => format!("{id} ({label})"),
            None => id.to_string(),
        }
    }

    /// Finds a live slot from a waker's truncated serial (see `waker`).
    #[inline]
    pub(crate) fn resolve(
        &mut self,
        slot: u32,
        serial_low: u32,
    ) -> Option<(TaskId, &mut TaskSlot)> {
        debug_assert!(serial_low <= crate::task::waker::SERIAL_MASK);
        match self.slots.get_mut(slot as usize) {
            Some(SlotEntry::Occupied(task)) if task.is_named_by(serial_low) => {
                let id = TaskId {
                    slot,
                    serial: task.serial,
                };
                Some((id, task))
            }
            _ => None,
        }
    }

    /// Drops a finished cell whose output was taken (its destructor runs no user code) and
    /// reuses its memory.
    #[inline]
    pub(crate) fn recycle(&mut self, cell: CellBox) {
        self.arena.recycle(cell);
    }

    /// Reuses the memory of a cell dropped outside the table.
    #[inline]
    pub(crate) fn give_back(&mut self, block: FreedBlock) {
        self.arena.give_back(block);
    }

    /// Remembers the waker of the join handle waiting for the live task `id`.
    pub(crate) fn set_join_waker(&mut self, id: TaskId, waker: &Waker) {
        let slot = self.get(id).expect("a join waker for a stale task");
        // A finished task's handle takes its outcome instead of waiting.
        assert_ne!(
            slot.state,
            TaskState::Done,
            "a join waker for a finished task"
        );
        assert!(slot.handle_alive(), "a join waker for a detached task");
        match self.join_wakers.get_mut(&id.slot) {
            Some(kept) if kept.will_wake(waker) => {}
            Some(kept) => kept.clone_from(waker),
            None => {
                self.join_wakers.insert(id.slot, waker.clone());
            }
        }
        // Join wakers are kept only for tasks in the table (`free` forgets them).
        assert!(
            self.join_wakers.len() <= self.slots.len() - self.vacant,
            "more join wakers than tasks"
        );
    }

    /// Takes the waker of the join handle waiting for the live task `id`, if one waits.
    #[inline]
    pub(crate) fn take_join_waker(&mut self, id: TaskId) -> Option<Waker> {
        assert!(self.get(id).is_some(), "a join waker for a stale task");
        if self.join_wakers.is_empty() {
            return None;
        }
        self.join_wakers.remove(&id.slot)
    }

    /// Frees a slot; its id becomes stale.
    pub(crate) fn free(&mut self, id: TaskId) {
        let entry = &mut self.slots[id.slot as usize];
        // Checked in place, then overwritten: moving the slot out to look at it would copy it
        // through the stack on the join path.
        let SlotEntry::Occupied(slot) = entry else {
            panic!("freed a free task slot");
        };
        assert_eq!(slot.serial, id.serial, "freed a stale task id");
        debug_assert_eq!(slot.state, TaskState::Done, "freed an unfinished task");
        assert!(
            slot.future.is_none() && !slot.flag(CANCELLED),
            "freed a task whose outcome was not taken"
        );
        let named = slot.flag(NAMED);
        *entry = SlotEntry::Vacant {
            next: self.free_top,
        };
        self.free_top = id.slot;
        self.vacant += 1;
        debug_assert!(self.vacant <= self.slots.len());
        if named {
            self.names.remove(&id.slot);
        }
        if !self.join_wakers.is_empty() {
            self.join_wakers.remove(&id.slot);
        }
    }

    /// Checks the whole table (O(n), behind the verify switch): the free stack holds exactly
    /// the vacant places, the side tables name only live tasks, and each task's cell, flags
    /// and state agree.
    fn verify(&self) {
        let mut on_stack = 0;
        let mut top = self.free_top;
        while top != NO_FREE {
            let SlotEntry::Vacant { next } = self.slots[top as usize] else {
                panic!("the free stack holds busy place {top}");
            };
            on_stack += 1;
            assert!(on_stack <= self.vacant, "the free stack loops");
            top = next;
        }
        assert_eq!(on_stack, self.vacant, "the free stack misses vacant places");
        let occupied = |slot: &u32| match self.slots.get(*slot as usize) {
            Some(SlotEntry::Occupied(task)) => Some(task),
            _ => None,
        };
        assert!(
            self.names
                .keys()
                .all(|slot| occupied(slot).is_some_and(|task| task.flag(NAMED))),
            "a name outlived its task"
        );
        // A handle dropped while waiting leaves its waker until the task is freed.
        assert!(
            self.join_wakers.keys().all(|slot| occupied(slot).is_some()),
            "a join waker outlived its task"
        );
        let (mut vacant, mut running) = (0, 0);
        for (slot, entry) in self.slots.iter().enumerate() {
            let SlotEntry::Occupied(task) = entry else {
                vacant += 1;
                continue;
            };
            if matches!(task.state, TaskState::Running | TaskState::RunningWoken) {
                running += 1;
            }
            assert!(
                !task.flag(NAMED) || self.names.contains_key(&(slot as u32)),
                "named task in place {slot} lost its name"
            );
            // A cancel is asked only of a running task, which then finishes.
            assert!(
                !task.flag(CANCEL_REQUESTED)
                    || matches!(
                        task.state,
                        TaskState::Running | TaskState::RunningWoken | TaskState::Done
                    ),
                "a task in state {:?} has a cancel pending",
                task.state
            );
            let holds_cell = task.future.is_some();
            match task.state {
                TaskState::Idle | TaskState::Queued => assert!(holds_cell),
                TaskState::Running | TaskState::RunningWoken => assert!(!holds_cell),
                TaskState::Done => assert!(
                    !(holds_cell && task.flag(CANCELLED)),
                    "a task both completed and cancelled"
                ),
            }
            assert!(
                task.state == TaskState::Done || !task.flag(CANCELLED),
                "an unfinished task is marked cancelled"
            );
        }
        // Every vacant place is on the free stack (one off it would never be reused).
        assert_eq!(
            vacant, self.vacant,
            "a vacant task place is off the free stack"
        );
        // One task runs at a time (one that panicked stays running as its run ends).
        assert!(running <= 1, "{running} tasks running at once");
    }

    /// The ids of the unfinished tasks of `node`, in slot order.
    pub(crate) fn unfinished_on(&self, node: NodeId) -> Vec<TaskId> {
        self.iter_unfinished()
            .filter(|(_, slot)| slot.node() == node)
            .map(|(id, _)| id)
            .collect()
    }

    /// For each task awaiting others' join handles, by slot, the tasks it awaits: read off
    /// the join wakers (a deadlock report says who waits for whom).
    pub(crate) fn awaited(&self) -> BTreeMap<u32, Vec<TaskId>> {
        let mut awaited: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
        for (&slot, waker) in &self.join_wakers {
            let SlotEntry::Occupied(joined) = &self.slots[slot as usize] else {
                panic!("a join waker for a vacant slot");
            };
            // A handle polled by something other than a simulated task (a waker of another
            // kind), or by a task since gone, names no task to report.
            let Some((_, joiner, serial_low)) = crate::task::waker::task_of(waker) else {
                continue;
            };
            let joiner_lives = matches!(
                self.slots.get(joiner as usize),
                Some(SlotEntry::Occupied(slot)) if slot.is_named_by(serial_low)
            );
            if joiner_lives {
                awaited.entry(joiner).or_default().push(TaskId {
                    slot,
                    serial: joined.serial,
                });
            }
        }
        awaited
    }

    /// Every unfinished task, in slot order.
    pub(crate) fn iter_unfinished(&self) -> impl Iterator<Item = (TaskId, &TaskSlot)> {
        self.slots.iter().enumerate().filter_map(|(index, entry)| {
            let SlotEntry::Occupied(slot) = entry else {
                return None;
            };
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use super::*;

    /// The label of a task the test spawns unnamed.
    #[track_caller]
    fn here() -> Label {
        Label::spawned(None, Location::caller())
    }

    struct Counter(AtomicUsize);

    /// Drops a task's future and frees its slot, as the executor does with a finished task
    /// nobody joins.
    fn retire(table: &mut TaskTable, id: TaskId) {
        let slot = table.get_mut(id).unwrap();
        let future = slot.take_future().unwrap();
        slot.state = TaskState::Done;
        table.recycle(future);
        table.free(id);
    }

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_freed_slot_forgets_its_join_waker() {
        let mut table = TaskTable::new();
        let first = table.insert(NodeId::SUPERVISOR, here(), async {});
        let woken = Arc::new(Counter(AtomicUsize::new(0)));
        table.set_join_waker(first, &Waker::from(woken.clone()));
        retire(&mut table, first);
        let second = table.insert(NodeId::SUPERVISOR, here(), async {});
        assert_eq!(second.slot, first.slot, "the slot is reused");
        assert!(table.take_join_waker(second).is_none());
        assert_eq!(woken.0.load(Ordering::Relaxed), 0);
        assert_eq!(Arc::strong_count(&woken), 1, "the old waker was dropped");
    }

    #[test]
    fn dropping_a_table_drops_the_tasks_left_and_only_those() {
        let alive = std::rc::Rc::new(());
        for finish_all in [false, true] {
            let mut table = TaskTable::new();
            let ids: Vec<TaskId> = (0..3)
                .map(|_| {
                    let guard = alive.clone();
                    table.insert(NodeId::SUPERVISOR, here(), async move { drop(guard) })
                })
                .collect();
            assert_eq!(std::rc::Rc::strong_count(&alive), 4);
            let finished = if finish_all { &ids[..] } else { &ids[..1] };
            for &id in finished {
                retire(&mut table, id);
            }
            drop(table);
            assert_eq!(
                std::rc::Rc::strong_count(&alive),
                1,
                "every cell was dropped"
            );
        }
    }

    #[test]
    fn a_join_waker_on_a_high_slot_is_kept_and_taken() {
        let mut table = TaskTable::new();
        let ids: Vec<TaskId> = (0..1_000)
            .map(|_| table.insert(NodeId::SUPERVISOR, here(), async {}))
            .collect();
        let woken = Arc::new(Counter(AtomicUsize::new(0)));
        let last = *ids.last().unwrap();
        table.set_join_waker(last, &Waker::from(woken.clone()));
        assert!(table.take_join_waker(ids[0]).is_none());
        table.take_join_waker(last).expect("kept").wake();
        assert!(table.take_join_waker(last).is_none(), "taken once");
        assert_eq!(woken.0.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn the_last_freed_slot_is_reused_first() {
        let mut table = TaskTable::new();
        let ids: Vec<TaskId> = (0..4)
            .map(|_| table.insert(NodeId::SUPERVISOR, here(), async {}))
            .collect();
        for &id in &ids[..3] {
            retire(&mut table, id);
        }
        let reused: Vec<u32> = (0..4)
            .map(|_| table.insert(NodeId::SUPERVISOR, here(), async {}).slot)
            .collect();
        assert_eq!(
            reused,
            [2, 1, 0, 4],
            "a stack of free slots, then a new one"
        );
    }
}
