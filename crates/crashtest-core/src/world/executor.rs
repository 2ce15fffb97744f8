//! The executor: the run loop, polling, waking, spawning, cancelling and joining tasks.
//!
//! The run loop fires every timer that is due; if tasks are ready, the scheduler stream picks
//! one among the oldest few (see `task::ready`) and polls it; if none is ready, the clock
//! jumps to the next timer; if there is no timer either, the run is deadlocked.
//!
//! Invariants:
//! - No borrow of the world is held while user code runs (a poll or a `Drop`): futures are
//!   taken out of the task table to be polled or dropped.
//! - A task id is in the ready queue at most once while its state is `Queued`; stale ids
//!   (freed or reused slots) are skipped when popped.
//! - A task finishes once: `Done` is final, and a done task is never polled again.

use std::collections::BTreeMap;

use super::*;

impl World {
    pub(super) fn run_loop(&self) {
        // Once per world, with its body spawned and nothing polled yet.
        assert_eq!(self.polls.get(), 0, "the run loop ran twice");
        assert!(
            self.body.get().is_some(),
            "the run loop started without a body"
        );
        let limit_ns = u64::try_from(self.config.time_limit.as_nanos()).unwrap_or(u64::MAX);
        let path = self.config.explore.clone();
        let mut next_point = 0;
        let mut fork = self.config.fork.clone();
        while !self.body_done.get() && self.failure.borrow().is_none() {
            while let Some(&(at_ns, sub_seed)) = path.get(next_point)
                && self.now_ns.get() >= at_ns
            {
                self.reseed(next_point, sub_seed);
                next_point += 1;
            }
            if let Some(point) = &fork
                && self.now_ns.get() >= point.at_ns
            {
                // The fork comes after the whole path, whose points were all reached first.
                assert_eq!(
                    next_point,
                    path.len(),
                    "the fork point was reached before the branch path's end"
                );
                if let Some(sub_seed) = (point.hook)() {
                    self.reseed(path.len(), sub_seed);
                }
                fork = None;
            }
            let before_ns = self.now_ns.get();
            self.fire_due_timers();
            let next = self
                .ready
                .borrow_mut()
                .pick(self.streams.borrow_mut().scheduler());
            if let Some(id) = next {
                self.poll_task(id);
                assert!(
                    self.now_ns.get() >= before_ns,
                    "virtual time went backwards over a poll"
                );
                if crate::verify::enabled() && self.polls.get().is_multiple_of(1024) {
                    self.verify_queues();
                }
                continue;
            }
            let next_deadline = self.timers.borrow_mut().next_deadline();
            match next_deadline {
                Some(deadline) if deadline > limit_ns => {
                    // Every timer due by now has fired: the one left is in the future.
                    assert!(
                        deadline > self.now_ns.get(),
                        "a timer due at {deadline} ns was left unfired"
                    );
                    self.now_ns.set(limit_ns.max(self.now_ns.get()));
                    self.fail(FailureKind::TimeLimit {
                        limit: self.config.time_limit,
                    });
                }
                Some(deadline) => {
                    assert!(
                        deadline >= self.now_ns.get(),
                        "a timer is armed in the past"
                    );
                    self.now_ns.set(deadline);
                    self.polls_since_clock_moved.set(0);
                    self.record(EventKind::ClockJump);
                }
                None => {
                    // Nothing is ready and nothing is armed: whatever waits, waits forever.
                    assert!(
                        self.ready.borrow().waiting().is_empty(),
                        "a deadlock declared with tasks ready"
                    );
                    self.fail_deadlocked();
                }
            }
        }
        // The run ends between polls, on the supervisor.
        assert!(
            self.current_task.get().is_none() && self.current_node.get() == NodeId::SUPERVISOR,
            "the run loop ended inside a poll"
        );
        if crate::verify::enabled() {
            self.verify_queues();
        }
    }

    /// Checks the ready queue against the task table (O(n), behind the verify switch, run
    /// every so many polls): between polls no task is running (but one whose panic failed
    /// the run), a waiting id names a queued task or a stale one, each queued task waits
    /// once, and every queued task of a node that is not paused is in the queue (a paused
    /// node's may be parked instead).
    fn verify_queues(&self) {
        let tasks = self.tasks.borrow();
        let nodes = self.nodes.borrow();
        let failed = self.failure.borrow().is_some();
        let mut queued: Vec<TaskId> = Vec::new();
        for &id in self.ready.borrow().waiting() {
            match tasks.get(id).map(|slot| slot.state) {
                None | Some(TaskState::Done) => {}
                Some(TaskState::Queued) => queued.push(id),
                Some(state) => panic!("task {id} waits in the ready queue in state {state:?}"),
            }
        }
        // The body has no handle, so its slot stays until the run ends: done exactly when the
        // run says its body is.
        assert!(
            self.body.get().is_some_and(|body| tasks
                .get(body)
                .is_some_and(|slot| (slot.state == TaskState::Done) == self.body_done.get())),
            "the body's task and the run disagree on whether it finished"
        );
        let listed = queued.len();
        queued.sort_unstable();
        queued.dedup();
        assert_eq!(
            queued.len(),
            listed,
            "a task waits in the ready queue twice"
        );
        for (id, slot) in tasks.iter_unfinished() {
            // A kill finishes its node's tasks, and a task spawned on a dead node dies at once.
            assert!(
                failed || nodes.status(slot.node()) != NodeStatus::Dead,
                "task {id} of dead node {} lives on",
                slot.node()
            );
            match slot.state {
                TaskState::Running | TaskState::RunningWoken => {
                    assert!(failed, "task {id} is running between polls");
                }
                TaskState::Queued if nodes.status(slot.node()) != NodeStatus::Paused => {
                    assert!(
                        queued.binary_search(&id).is_ok(),
                        "queued task {id} is not in the ready queue"
                    );
                }
                _ => {}
            }
        }
    }

    pub(super) fn poll_task(&self, id: TaskId) {
        // Between polls no task runs, on no node (both set for the poll and reset after it).
        assert!(
            self.current_task.get().is_none(),
            "a poll began inside a poll"
        );
        debug_assert_eq!(self.current_node.get(), NodeId::SUPERVISOR);
        let taken = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.get_mut(id) else {
                return;
            };
            if slot.state != TaskState::Queued {
                return;
            }
            let node = slot.node();
            let status = self.nodes.borrow().status(node);
            if status == NodeStatus::Paused {
                self.nodes.borrow_mut().park(node, id);
                return;
            }
            // A kill finishes every waiting task of the node, so none is left queued there.
            assert_ne!(
                status,
                NodeStatus::Dead,
                "task {id} of a dead node was queued"
            );
            slot.state = TaskState::Running;
            let future = slot.take_future();
            future.map(|future| (future, node, tasks.origin(id)))
        };
        let Some((mut future, node, place)) = taken else {
            panic!("queued task {id} has no future");
        };
        self.current_task.set(Some(id));
        self.current_node.set(node);
        self.record(EventKind::Poll { task: id });
        let waker = waker_for(self.run_tag as u16, id);
        let mut cx = Context::from_waker(&waker);
        // The poll runs user code, which may spawn, wake and arm timers: nothing of the world
        // it reaches may be borrowed now.
        assert!(
            self.tasks.try_borrow_mut().is_ok(),
            "a task was polled under the task table's borrow"
        );
        debug_assert!(
            self.ready.try_borrow_mut().is_ok() && self.timers.try_borrow_mut().is_ok(),
            "a task was polled under a borrow of the ready queue or the timers"
        );
        debug_assert!(
            self.nodes.try_borrow_mut().is_ok() && self.streams.try_borrow_mut().is_ok(),
            "a task was polled under a borrow of the nodes or the random streams"
        );
        self.watch.enter_poll(node.0, id.serial, place);
        let polled = panic_capture::catch(|| future.as_mut().poll_task(&mut cx));
        self.watch.leave_poll();
        self.polls.set(self.polls.get() + 1);
        let since = self.polls_since_clock_moved.get() + 1;
        self.polls_since_clock_moved.set(since);
        assert!(
            since <= self.polls.get(),
            "more polls since the clock moved than in the whole run"
        );
        match polled {
            Ok(Poll::Ready(())) => {
                let leftover = self.finish_task(id, Outcome::Output(future));
                self.drop_outcome(leftover, node);
            }
            Ok(Poll::Pending) => self.after_pending(id, future),
            Err(_) if self.cancel_requested(id) => {
                // The task's node was killed (or the task aborted) during this very poll,
                // and the task then panicked, typically unwrapping the error of a call cut
                // off by the crash. A dead process's last panic is not a bug: it is the
                // crash, so the task ends cancelled.
                let leftover = self.finish_task(id, Outcome::Cancelled);
                self.drop_panicked_cell(future);
                self.drop_outcome(leftover, node);
            }
            Err(panic) => {
                self.record(EventKind::Panic { task: id });
                if self.failure.borrow().is_none() {
                    *self.failure.borrow_mut() = Some((
                        FailureKind::Panic {
                            message: panic.message,
                            location: panic.location,
                        },
                        Some(node),
                        Some(id),
                    ));
                }
                self.drop_panicked_cell(future);
            }
        }
        // After its poll a task waits, is queued again or is done, unless the run failed
        // (a panicking task stays as it was: the run ends with it).
        debug_assert!(
            self.failure.borrow().is_some()
                || self.tasks.borrow().get(id).is_none_or(|slot| !matches!(
                    slot.state,
                    TaskState::Running | TaskState::RunningWoken
                )),
            "task {id} is still running after its poll"
        );
        self.current_task.set(None);
        self.current_node.set(NodeId::SUPERVISOR);
        self.charge_poll_cost();
        self.run_step_checks();
        if since > self.config.livelock_polls && self.failure.borrow().is_none() {
            *self.failure.borrow_mut() =
                Some((FailureKind::Livelock { polls: since }, Some(node), Some(id)));
        }
    }

    pub(super) fn cancel_requested(&self, id: TaskId) -> bool {
        self.tasks
            .borrow()
            .get(id)
            .is_some_and(|slot| slot.cancel_requested())
    }

    pub(super) fn after_pending(&self, id: TaskId, future: TaskFuture) {
        debug_assert_eq!(
            self.current_task.get(),
            Some(id),
            "a poll ended for another task"
        );
        let node = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = tasks.get_mut(id).expect("a running task keeps its slot");
            if slot.cancel_requested() {
                // A cancel is only requested of a running task (any other ends at once).
                assert!(
                    matches!(slot.state, TaskState::Running | TaskState::RunningWoken),
                    "cancelled task {id} left its poll in state {:?}",
                    slot.state
                );
                slot.node()
            } else {
                match slot.state {
                    TaskState::Running => slot.state = TaskState::Idle,
                    TaskState::RunningWoken => {
                        slot.state = TaskState::Queued;
                        self.ready.borrow_mut().push(id);
                    }
                    state => panic!("task {id} left its poll in state {state:?}"),
                }
                slot.put_future(future);
                return;
            }
        };
        let leftover = self.finish_task(id, Outcome::Cancelled);
        self.drop_cell(future, node);
        self.drop_outcome(leftover, node);
    }

    pub(crate) fn set_scheduling_window(&self, tasks: usize) {
        self.ready.borrow_mut().set_window(tasks);
        self.record(EventKind::Note {
            source: "scheduler",
            words: [tasks as u64, 0, 0],
            text: String::new(),
        });
    }

    /// Marks a task done and hands its outcome to its handle. Returns what must be dropped
    /// once no borrow is held (an output nobody will read).
    #[must_use]
    pub(super) fn finish_task(&self, id: TaskId, outcome: Outcome) -> Option<Outcome> {
        let kind = match outcome {
            Outcome::Output(_) => EventKind::Complete { task: id },
            Outcome::Cancelled => EventKind::Cancel { task: id },
        };
        self.record(kind);
        if self.body.get() == Some(id) {
            assert!(!self.body_done.get(), "the run's body finished twice");
            self.body_done.set(true);
        }
        let mut tasks = self.tasks.borrow_mut();
        let slot = tasks.get_mut(id).expect("finishing a live task");
        assert_ne!(slot.state, TaskState::Done, "task {id} finished twice");
        // Only a poll completes a task: the task polled now, which is running.
        if matches!(outcome, Outcome::Output(_)) {
            assert_eq!(
                self.current_task.get(),
                Some(id),
                "task {id} completed outside its own poll"
            );
            assert!(
                matches!(slot.state, TaskState::Running | TaskState::RunningWoken),
                "task {id} completed in state {:?}",
                slot.state
            );
        }
        slot.state = TaskState::Done;
        if slot.handle_alive() {
            slot.set_outcome(outcome);
            let waker = tasks.take_join_waker(id);
            drop(tasks);
            if let Some(waker) = waker {
                // The handle's waker may be anyone's (a combinator's), and wake anything (else
                // the RefCell panics, less clearly: this says why, in debug builds).
                debug_assert!(
                    self.tasks.try_borrow_mut().is_ok(),
                    "a join waker was woken under the task table's borrow"
                );
                waker.wake();
            }
            None
        } else {
            tasks.free(id);
            Some(outcome)
        }
    }

    /// Drops a task's cell, which may run user code, with no borrow held, then reuses its
    /// memory.
    ///
    /// A destructor that panics fails the run, like a panic in a poll, unless the task's
    /// `node` is dead: a killed process runs no destructors, and those the simulator runs to
    /// free its tasks may fail as they like (typically unwrapping an error from the dead
    /// disk). The block of a cell whose destructor panicked is not reused.
    pub(super) fn drop_cell(&self, cell: TaskFuture, node: NodeId) {
        // A cell's destructor is user code, which may spawn, wake or abort.
        assert!(
            self.tasks.try_borrow_mut().is_ok(),
            "a task's cell was dropped under the task table's borrow"
        );
        match self.as_node(node, || panic_capture::catch(|| cell.drop_in_place())) {
            Ok(Some(block)) => self.tasks.borrow_mut().give_back(block),
            Ok(None) => {}
            Err(_) if self.nodes.borrow().status(node) == NodeStatus::Dead => {}
            Err(panic) => {
                // The failure names the task that was running, if any (an aborter, say): the
                // message names the node whose task was being dropped.
                let message = format!(
                    "a task's destructor panicked: {} (a task of {})",
                    panic.message,
                    self.nodes.borrow().name(node)
                );
                self.fail(FailureKind::Panic {
                    message,
                    location: panic.location,
                });
            }
        }
    }

    /// Runs `destructors` (a task's, dropped) as code of the task's `node`, whoever dropped
    /// it: a process's destructors act for that process. Dropped by a kill, the node is dead,
    /// so what they spawn dies at birth and their disk and network calls fail, as nothing
    /// runs in a process that was killed; dropped by another node's abort, they act for
    /// their own node, not the aborter's.
    fn as_node<R>(&self, node: NodeId, destructors: impl FnOnce() -> R) -> R {
        let outer = self.current_node.replace(node);
        self.destructors.set(self.destructors.get() + 1);
        // `destructors` catches their panics: nothing unwinds past the restore below.
        let result = destructors();
        self.destructors.set(self.destructors.get() - 1);
        let inner = self.current_node.replace(outer);
        assert_eq!(
            inner, node,
            "a task's destructors left another node current"
        );
        result
    }

    /// Drops the cell of a future that panicked in its poll: its state is unknown, so its
    /// destructor may panic too, and that second panic is not reported.
    pub(super) fn drop_panicked_cell(&self, cell: TaskFuture) {
        assert!(
            self.tasks.try_borrow_mut().is_ok(),
            "a task's cell was dropped under the task table's borrow"
        );
        if let Ok(Some(block)) = panic_capture::catch(|| cell.drop_in_place()) {
            self.tasks.borrow_mut().give_back(block);
        }
    }

    /// Drops what `finish_task` left over (an output nobody will read).
    pub(super) fn drop_outcome(&self, leftover: Option<Outcome>, node: NodeId) {
        if let Some(Outcome::Output(cell)) = leftover {
            self.drop_cell(cell, node);
        }
    }

    pub(crate) fn spawn_on<F>(&self, node: NodeId, label: Label, future: F) -> TaskId
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let named = label.is_named();
        let id = self.spawn_with(node, |tasks| tasks.insert(node, label, future));
        if named {
            self.tell_watchdog_the_name(id);
        }
        id
    }

    /// Gives the watchdog a named task's name, for its report should a poll of it get stuck
    /// (the watchdog's thread cannot read the task table). Named tasks are few: a node's
    /// `main`, crashtest's own, and those the program names.
    #[cold]
    fn tell_watchdog_the_name(&self, id: TaskId) {
        if let Some(name) = self.tasks.borrow().name(id) {
            self.watch.name_task(id.serial, name);
        }
    }

    /// Spawns a task whose cell type the core cannot name (the tokio stand-in's), moved once
    /// into the task table (see `task::slab`).
    #[inline]
    pub(crate) fn spawn_raw_on(
        &self,
        node: NodeId,
        label: Label,
        task: crashtest_hooks::RawTask<'_>,
    ) -> TaskId {
        let named = label.is_named();
        let id = self.spawn_with(node, |tasks| tasks.insert_raw(node, label, task));
        if named {
            self.tell_watchdog_the_name(id);
        }
        id
    }

    /// Whether a task spawned on `node` now is cancelled at birth: its node is dead (the
    /// spawn comes from a killed task's destructor), or the run is over.
    pub(crate) fn spawns_die_at_birth(&self, node: NodeId) -> bool {
        // Once the run is over only destructors run, between polls.
        assert!(
            !self.ended.get() || self.current_task.get().is_none(),
            "a task was polled after its run ended"
        );
        self.ended.get() || self.nodes.borrow().status(node) == NodeStatus::Dead
    }

    /// Adds a task to the table with `insert` and schedules it on `node`.
    #[inline(always)]
    fn spawn_with(&self, node: NodeId, insert: impl FnOnce(&mut TaskTable) -> TaskId) -> TaskId {
        let stillborn = self.spawns_die_at_birth(node);
        let id = insert(&mut self.tasks.borrow_mut());
        self.record(EventKind::Spawn { task: id, node });
        if stillborn {
            // A task spawned by the destructor of a killed node's task dies with the node, and
            // one spawned once the run is over has no run to live in.
            self.abort(id);
        } else {
            self.ready.borrow_mut().push(id);
        }
        // A new task waits to run, unless it died at birth.
        debug_assert_eq!(
            self.is_finished(id),
            stillborn,
            "task {id} spawned on {node} does not match its node's life"
        );
        id
    }

    #[inline]
    pub(crate) fn wake_packed(&self, run: u16, slot: u32, serial_low: u32) {
        if run != self.run_tag as u16 {
            self.woken_from_another_run();
            return;
        }
        let mut tasks = self.tasks.borrow_mut();
        if let Some((id, slot)) = tasks.resolve(slot, serial_low) {
            self.wake_slot(id, slot);
        }
    }

    /// A task of another run was woken from this one: the two share state through something
    /// neither owns (a channel or a lock in a `static`, a client whose pool a `LazyLock` made
    /// in one run and another run uses, while runs go on side by side on other threads or one
    /// after the other on this one). The wake cannot reach that task, and what the program
    /// does next depends on the other run, so this run fails, naming the cause.
    #[cold]
    fn woken_from_another_run(&self) {
        // A failure is recorded by a task, the supervisor or a destructor; a wake from
        // anywhere else (a timer's callback) goes unremarked, as before.
        if !self.acts_as_it_should() {
            return;
        }
        self.refuse(
            "a task of another simulation was woken from this one: the two runs share state \
             that neither owns, such as a channel, lock or cache in a `static`, or a client \
             (reqwest, hyper-util, tonic) whose connection pool a `LazyLock` or `OnceLock` made \
             in one run and another uses. Seeds run side by side on several threads and one \
             after another, and each must be a world of its own: make such state inside the \
             run, in the node that uses it."
                .to_owned(),
        );
    }

    #[inline]
    pub(super) fn wake_slot(&self, id: TaskId, slot: &mut TaskSlot) {
        match slot.state {
            TaskState::Idle => {
                // The task being polled is running, not idle.
                assert_ne!(
                    self.current_task.get(),
                    Some(id),
                    "the running task is idle"
                );
                slot.state = TaskState::Queued;
                slot.prefetch_future();
                self.ready.borrow_mut().push(id);
            }
            TaskState::Running | TaskState::RunningWoken => {
                // One task runs at a time: the one being polled.
                assert_eq!(self.current_task.get(), Some(id), "two tasks running");
                slot.state = TaskState::RunningWoken;
            }
            TaskState::Queued | TaskState::Done => {}
        }
    }

    /// Cancels a task: drops its future now, or after its poll if it is running.
    pub(crate) fn abort(&self, id: TaskId) {
        let (future, node) = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.get_mut(id) else {
                return;
            };
            match slot.state {
                TaskState::Done => return,
                TaskState::Running | TaskState::RunningWoken => {
                    // Aborted from inside its own poll (itself, or its node killed there).
                    assert_eq!(self.current_task.get(), Some(id), "two tasks running");
                    slot.request_cancel();
                    return;
                }
                TaskState::Idle | TaskState::Queued => {}
            }
            let node = slot.node();
            let future = slot
                .take_future()
                .expect("an idle or queued task holds its future");
            (future, node)
        };
        let leftover = self.finish_task(id, Outcome::Cancelled);
        self.drop_cell(future, node);
        self.drop_outcome(leftover, node);
        // Whatever the destructor did (it may spawn into the freed slot), this task is over.
        assert!(self.is_finished(id), "aborted task {id} is not finished");
    }

    /// The output of a finished task (`None` if it was cancelled), or `Pending` after
    /// registering the handle's waker.
    pub(crate) fn poll_join<T: 'static>(
        &self,
        id: TaskId,
        cx: &mut Context<'_>,
    ) -> Poll<Option<T>> {
        self.poll_join_with(id, cx, |cell| {
            cell.output()
                .downcast_mut::<Option<T>>()
                .and_then(Option::take)
        })
    }

    /// As [`World::poll_join`], with `take` moving the output out of the finished task's
    /// cell (`None` if the cell's output is not what the handle expects).
    #[inline(always)]
    pub(crate) fn poll_join_with<R>(
        &self,
        id: TaskId,
        cx: &mut Context<'_>,
        take: impl FnOnce(std::pin::Pin<&mut dyn crate::task::TaskCell>) -> Option<R>,
    ) -> Poll<Option<R>> {
        let mut tasks = self.tasks.borrow_mut();
        let slot = tasks
            .get_mut(id)
            .expect("a join handle keeps its task's slot");
        if slot.state == TaskState::Done {
            // The handle being polled is alive: only its drop detaches the task.
            assert!(slot.handle_alive(), "a detached task's handle was polled");
            let node = slot.node();
            let outcome = slot.take_outcome();
            tasks.free(id);
            let Outcome::Output(mut cell) = outcome else {
                return Poll::Ready(None);
            };
            let output = take(cell.as_mut());
            if output.is_some() {
                // The future is gone and its output taken: dropping the cell runs no user code.
                tasks.recycle(cell);
            } else {
                // Not reachable through the API (run numbers keep handles in their run); if
                // it were, the cell's drop must not run user code under the borrow.
                drop(tasks);
                self.drop_cell(cell, node);
            }
            return Poll::Ready(Some(
                output.expect("a task's output has the handle's type and is taken once"),
            ));
        }
        tasks.set_join_waker(id, cx.waker());
        Poll::Pending
    }

    pub(crate) fn detach(&self, id: TaskId) {
        let (leftover, node) = {
            let mut tasks = self.tasks.borrow_mut();
            let Some(slot) = tasks.get_mut(id) else {
                return;
            };
            let node = slot.node();
            if slot.state == TaskState::Done {
                let outcome = slot.take_outcome();
                tasks.free(id);
                (Some(outcome), node)
            } else {
                slot.detach();
                (None, node)
            }
        };
        // Whichever way, no handle waits for the task any more (checked before the outcome's
        // drop runs user code, which may spawn into the freed slot).
        assert!(
            self.tasks
                .borrow()
                .get(id)
                .is_none_or(|slot| !slot.handle_alive()),
            "task {id} still has a handle after its handle was dropped"
        );
        self.drop_outcome(leftover, node);
    }

    pub(crate) fn is_finished(&self, id: TaskId) -> bool {
        self.tasks
            .borrow()
            .get(id)
            .is_none_or(|slot| slot.state == TaskState::Done)
    }

    /// Registers a component that names what its waiting tasks wait on (see
    /// `plumbing::checks::WaitWitness`).
    pub(crate) fn add_wait_witness(&self, witness: Rc<dyn WaitWitness>) {
        self.witnesses.borrow_mut().push(witness);
    }

    /// What each waiting task waits on, as the witnesses know it: each task's waits in the
    /// order the witnesses name them, once each.
    fn named_waits(&self) -> BTreeMap<TaskId, Vec<String>> {
        // The witnesses read their own state, and may ask the world (a node's name): no
        // borrow of the world's tables is held while they run.
        let witnesses = self.witnesses.borrow().clone();
        let mut named: BTreeMap<TaskId, Vec<String>> = BTreeMap::new();
        for witness in &witnesses {
            witness.waits(&mut |waker, what| {
                let Some((run, slot, serial_low)) = crate::task::waker::task_of(waker) else {
                    return;
                };
                if run != self.run_tag as u16 {
                    return;
                }
                let id = self
                    .tasks
                    .borrow_mut()
                    .resolve(slot, serial_low)
                    .map(|(id, _)| id);
                if let Some(id) = id {
                    let waits = named.entry(id).or_default();
                    if !waits.iter().any(|known| known == what) {
                        waits.push(what.to_owned());
                    }
                }
            });
        }
        named
    }

    /// The waiting tasks a deadlock report lists, one line each; the rest are counted.
    const LISTED_WAITING: usize = 32;

    /// Fails the run with a deadlock whose report lists the waiting tasks, then polls the
    /// listed ones once more (see `probe`) so that each line also says where the task waits.
    /// What the simulator and the witnesses hold (a join handle's waker, a socket's) is read
    /// first, since a probe's poll leaves its own waker there; the failure is recorded first,
    /// so that nothing a probed task does (a failed check, a panicking destructor) can stand
    /// in for it.
    fn fail_deadlocked(&self) {
        // The run loop goes on only while its body is unfinished.
        assert!(!self.body_done.get(), "a deadlock after the body finished");
        let named = self.named_waits();
        let mut waiting: Vec<(TaskId, String)> = {
            let tasks = self.tasks.borrow();
            let nodes = self.nodes.borrow();
            let awaited = tasks.awaited();
            tasks
                .iter_unfinished()
                .take(Self::LISTED_WAITING)
                .map(|(id, slot)| {
                    let mut line = format!("{} on {}", tasks.called(id), nodes.name(slot.node()));
                    // A paused node's tasks wait for its resume, which nothing is left to do.
                    if nodes.status(slot.node()) == NodeStatus::Paused {
                        line.push_str(" (paused, and nothing is left to resume it)");
                    }
                    // Who waits for whom, where the simulator holds it: a join handle's waker.
                    if let Some(joined) = awaited.get(&id.slot) {
                        let joined: Vec<String> = joined.iter().map(|&t| tasks.called(t)).collect();
                        line.push_str(&format!(", awaiting the end of {}", joined.join(", ")));
                    }
                    // What components saw it wait on (a socket).
                    if let Some(waits) = named.get(&id) {
                        line.push_str(&format!(", waiting on {}", waits.join(", ")));
                    }
                    (id, line)
                })
                .collect()
        };
        let unlisted = self.tasks.borrow().iter_unfinished().count() - waiting.len();
        // A deadlock is declared while the body is unfinished, so someone is waiting.
        assert!(!waiting.is_empty(), "a deadlock with no task waiting");
        let lines = |waiting: &[(TaskId, String)]| {
            let mut lines: Vec<String> = waiting.iter().map(|(_, line)| line.clone()).collect();
            if unlisted > 0 {
                lines.push(format!("... and {unlisted} more"));
            }
            lines
        };
        self.fail(FailureKind::Deadlock {
            waiting: lines(&waiting),
        });
        for (id, line) in &mut waiting {
            if let Some(probed) = self.probe(*id) {
                line.push_str(&format!(", {}", probed.describe()));
            }
        }
        match &mut *self.failure.borrow_mut() {
            Some((FailureKind::Deadlock { waiting: listed }, ..)) => *listed = lines(&waiting),
            other => panic!("a deadlock was recorded, and the run then failed with {other:?}"),
        }
    }
}
