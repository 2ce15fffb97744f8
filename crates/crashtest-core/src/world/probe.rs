//! Asking a deadlocked run's waiting tasks where they wait.
//!
//! The simulator sees that a task waits, not on what: a channel, a lock or a `Notify` keeps
//! its waker in its own state. So when a run deadlocks, each listed task is polled once more
//! with a *probe* waker. A future that waits keeps the waker it is given, and keeping it
//! clones it: the probe's clone takes a backtrace, whose innermost frame of the program's own
//! code is the `.await` the task is stuck at, and the library frame just inside it is what it
//! awaits (`tokio::sync::notify::Notified`). A poll again is what a spurious wakeup does, so
//! a correct future only waits again. What else it may do says more:
//! - it keeps no waker: nothing can ever wake it (`std::future::pending`, or a future that
//!   returns `Pending` and forgets the waker);
//! - it completes, or wakes itself: what it waited for had come, and nothing woke it (a lost
//!   wakeup, which leaves a real runtime hung in the same place);
//! - it panics.
//!
//! The probe runs after the deadlock is recorded as the run's failure, and the run ends right
//! after it: a waiting future now holds the probe's waker instead of its task's, which would
//! strand the task in a run that went on. What a probed task does is no part of the run: while
//! a probe polls (and finishes or drops what it polled) the world records no event or note,
//! counts no coverage site and applies no fault, and the deadlock, recorded first, stays the
//! failure whatever the task then fails. The reports' places come from symbols, not
//! addresses, so a seed's report is the same on every run of the same build.

use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use super::World;
use crate::node::NodeStatus;
use crate::panic_capture;
use crate::plumbing::call_site::{self, Frame};
use crate::task::{Outcome, TaskId, TaskState};

/// What polling a waiting task once more showed.
pub(super) enum Probed {
    /// It waits again, having kept the waker where these backtraces were taken (one per
    /// clone, up to [`KEPT_TRACES`]: each branch of a `select!` keeps its own).
    Waits(Vec<Backtrace>),
    /// It waits again and kept no waker.
    KeptNoWaker,
    /// It completed, or woke itself: nothing had woken it.
    WentOn,
    /// It panicked, with this message.
    Panicked(String),
}

/// The clones of a probe's waker whose backtraces are kept: enough for the branches of a
/// `select!`, few enough that a report costs milliseconds.
const KEPT_TRACES: usize = 4;

impl Probed {
    /// The end of a deadlock report's line for the task.
    pub(super) fn describe(&self) -> String {
        match self {
            Probed::Waits(traces) => {
                // Each place the program awaits at, with what it awaits there, in the order
                // the future kept its wakers, once each.
                let mut places: Vec<(String, Vec<String>)> = Vec::new();
                let mut inside: Vec<String> = Vec::new();
                for trace in traces {
                    let frames = call_site::frames(trace);
                    let frames = call_site::below(&frames, "probe_clone");
                    let (program, awaited) = awaited_at(frames);
                    let awaited = awaited.map(|frame| short(frame).unwrap_or(&frame.symbol));
                    match (program, awaited) {
                        (Some(program), awaited) => {
                            let place = at(program);
                            let index = match places.iter().position(|(known, _)| *known == place) {
                                Some(index) => index,
                                None => {
                                    places.push((place, Vec::new()));
                                    places.len() - 1
                                }
                            };
                            let what = &mut places[index].1;
                            if let Some(awaited) = awaited
                                && !what.iter().any(|known| known == awaited)
                            {
                                what.push(awaited.to_owned());
                            }
                        }
                        (None, Some(awaited)) if !inside.iter().any(|known| known == awaited) => {
                            inside.push(awaited.to_owned());
                        }
                        (None, _) => {}
                    }
                }
                let mut said: Vec<String> = places
                    .into_iter()
                    .map(|(place, what)| match what.is_empty() {
                        true => format!("awaiting at {place}"),
                        false => format!("awaiting {} at {place}", what.join(" or ")),
                    })
                    .collect();
                if !inside.is_empty() {
                    said.push(format!("waiting in {}", inside.join(" or ")));
                }
                match said.is_empty() {
                    true => "waiting (a build with symbols names where)".to_owned(),
                    false => said.join(", and "),
                }
            }
            Probed::KeptNoWaker => "waiting with no waker kept: polled again, it kept no way \
                                    to be woken (like std::future::pending), so nothing can \
                                    ever wake it"
                .to_owned(),
            Probed::WentOn => "not stuck: polled again, it went on, so what it waited for had \
                               come and nothing woke it (a lost wakeup: a future returned \
                               Pending without keeping its waker where the event would \
                               wake it)"
                .to_owned(),
            Probed::Panicked(message) => format!("polled again, it panicked: {message}"),
        }
    }
}

/// Where a waiting future kept its waker: the program's innermost frame (its `.await`), and
/// what it awaits there: the outermost frame of the library that kept the waker, from the
/// clone out to the first frame of another crate (a `select!` expands in the program's crate
/// from a library's source, so neither its symbol nor its source alone says whose it is).
/// Without a program frame (a library's own task), the program part is `None`.
fn awaited_at(frames: &[Frame]) -> (Option<&Frame>, Option<&Frame>) {
    // A dependency built without line tables (a common profile) is told from the program
    // only by its location: where the program's frames have one, a frame without is not it.
    let located = frames
        .iter()
        .any(|frame| frame.at.is_some() && frame.is_programs());
    let program = frames
        .iter()
        .position(|frame| frame.is_programs() && (frame.at.is_some() || !located));
    let end = program.unwrap_or(frames.len());
    // Inside the clone: the waker's own and std's frames, then the library's.
    let Some(inner) = frames[..end].iter().position(|frame| !frame.is_runtimes()) else {
        return (program.map(|at| &frames[at]), None);
    };
    let library = frames[inner].crate_name();
    let mut awaited = inner;
    for (index, frame) in frames.iter().enumerate().take(end).skip(inner + 1) {
        match frame.crate_name() {
            // std's adapters (`Pin`, `PollFn`) pass the poll on from further out.
            Some(name) if call_site::STD_CRATES.contains(&name) => {}
            Some(name) if Some(name) == library => awaited = index,
            Some(_) => break,
            // An inlined frame's bare name: the library's if its source is.
            None if frame.is_programs() => break,
            None => {}
        }
    }
    (program.map(|at| &frames[at]), Some(&frames[awaited]))
}

/// A frame's function as a reader names it: an async function's body (`run::{{closure}}`)
/// as the function, a future's `poll` as the future; `None` for an inlined frame's bare
/// name (`{async_fn#0}`), which says nothing its location does not.
fn short(frame: &Frame) -> Option<&str> {
    let symbol = frame.symbol.as_str();
    if symbol.starts_with('{') {
        return None;
    }
    let symbol = symbol.trim_end_matches("::{{closure}}");
    Some(
        match symbol.strip_suffix(" as core::future::future::Future>::poll") {
            Some(future) => future.trim_start_matches('<'),
            None => symbol,
        },
    )
}

/// A frame by its location and its short name, as far as each is known.
fn at(frame: &Frame) -> String {
    match (&frame.at, short(frame)) {
        (Some(location), Some(name)) => format!("{location} in {name}"),
        (Some(location), None) => location.clone(),
        (None, name) => name.unwrap_or(&frame.symbol).to_owned(),
    }
}

thread_local! {
    /// While a probe poll runs: its token, and whether its waker was cloned (and where) or
    /// woken. A waker an earlier probe left behind carries another token, so what a later
    /// probe's poll does to it is not taken for that task's doing.
    static PROBING: RefCell<Option<ProbeSeen>> = const { RefCell::new(None) };
    /// The last probe's token.
    static TOKENS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

struct ProbeSeen {
    token: usize,
    kept: Vec<Backtrace>,
    woken: bool,
}

static PROBE_VTABLE: RawWakerVTable =
    RawWakerVTable::new(probe_clone, probe_wake, probe_wake, |_| {});

/// Named for [`Probed::describe`], which cuts the backtrace below it.
#[inline(never)]
fn probe_clone(data: *const ()) -> RawWaker {
    PROBING.with(|probing| {
        if let Ok(mut probing) = probing.try_borrow_mut()
            && let Some(seen) = probing.as_mut()
            && seen.token == data as usize
            && seen.kept.len() < KEPT_TRACES
        {
            seen.kept.push(Backtrace::force_capture());
        }
    });
    RawWaker::new(data, &PROBE_VTABLE)
}

fn probe_wake(data: *const ()) {
    PROBING.with(|probing| {
        if let Ok(mut probing) = probing.try_borrow_mut()
            && let Some(seen) = probing.as_mut()
            && seen.token == data as usize
        {
            seen.woken = true;
        }
    });
}

/// A probe's waker, carrying `token` (a number, never dereferenced) in its data word.
fn probe_waker(token: usize) -> Waker {
    // SAFETY: the data word is a number that is only compared, clone returns the same word
    // and vtable, and every function is safe to call from any thread at any time (it
    // touches only this thread's slot, and only while a probe runs there).
    unsafe { Waker::from_raw(RawWaker::new(token as *const (), &PROBE_VTABLE)) }
}

impl World {
    /// Polls waiting task `id` once more with the probe's waker; `None` if it is not idle on
    /// a running node (a paused node's task waits for the resume, not on anything).
    pub(super) fn probe(&self, id: TaskId) -> Option<Probed> {
        assert!(
            self.current_task.get().is_none(),
            "a probe began inside a poll"
        );
        let (mut future, node, place) = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = tasks.get_mut(id)?;
            if slot.state != TaskState::Idle
                || self.nodes.borrow().status(slot.node()) != NodeStatus::Running
            {
                return None;
            }
            slot.state = TaskState::Running;
            let node = slot.node();
            let future = slot.take_future().expect("an idle task keeps its future");
            (future, node, tasks.origin(id))
        };
        self.current_task.set(Some(id));
        self.current_node.set(node);
        let token = TOKENS.with(|tokens| tokens.get() + 1);
        TOKENS.with(|tokens| tokens.set(token));
        let waker = probe_waker(token);
        let mut cx = Context::from_waker(&waker);
        PROBING.with(|probing| {
            *probing.borrow_mut() = Some(ProbeSeen {
                token,
                kept: Vec::new(),
                woken: false,
            });
        });
        self.watch.enter_poll(node.0, id.serial, place);
        self.probing.set(true);
        let polled = panic_capture::catch(|| future.as_mut().poll_task(&mut cx));
        self.watch.leave_poll();
        let seen = PROBING
            .with(|probing| probing.borrow_mut().take())
            .expect("the probe's record outlives its poll");
        let woken = seen.woken
            || self
                .tasks
                .borrow()
                .get(id)
                .is_some_and(|slot| slot.state == TaskState::RunningWoken);
        let probed = match polled {
            Ok(Poll::Ready(())) => {
                let leftover = self.finish_task(id, Outcome::Output(future));
                self.drop_outcome(leftover, node);
                Probed::WentOn
            }
            Ok(Poll::Pending) => {
                self.after_pending(id, future);
                match seen.kept {
                    _ if woken => Probed::WentOn,
                    kept if kept.is_empty() => Probed::KeptNoWaker,
                    kept => Probed::Waits(kept),
                }
            }
            Err(panic) => {
                self.drop_panicked_cell(future);
                Probed::Panicked(panic.message)
            }
        };
        self.probing.set(false);
        self.current_task.set(None);
        self.current_node.set(crate::node::NodeId::SUPERVISOR);
        Some(probed)
    }
}
