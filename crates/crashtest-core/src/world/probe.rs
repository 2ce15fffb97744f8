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
    /// clone, up to [`KEPT_TRACES`], each branch of a `select!` keeping its own), and this
    /// many clones more.
    Waits(Vec<Backtrace>, usize),
    /// It waits again and kept no waker.
    KeptNoWaker,
    /// It did something of the run's (an event, a timer, a note), completed or woke itself:
    /// nothing had woken it. Where it first did something, if it did, and where it waits
    /// now, if it does.
    WentOn {
        from: Option<Backtrace>,
        waits: Vec<Backtrace>,
    },
    /// It panicked with this message, after going on (if `went_on`) or at once.
    Panicked { message: String, went_on: bool },
    /// An earlier probe's task woke it before its turn: it was waiting on that task.
    WokenByAnEarlierProbe,
}

/// The clones of a probe's waker whose backtraces are kept: enough for the branches of most
/// `select!`s, few enough that a report costs milliseconds.
const KEPT_TRACES: usize = 8;

/// What a lost wakeup is, said after every verdict of one.
const LOST_WAKEUP: &str = "a lost wakeup: a future returned Pending without keeping its \
                           waker where the event would wake it";

impl Probed {
    /// The end of a deadlock report's line for the task.
    pub(super) fn describe(&self) -> String {
        match self {
            Probed::Waits(traces, more) => {
                let mut said = describe_waits(traces);
                if *more > 0 {
                    said.push_str(&format!(" (and {more} more wakers kept)"));
                }
                said
            }
            Probed::KeptNoWaker => "waiting with no waker kept: polled again, it kept no way \
                                    to be woken (like std::future::pending), so nothing can \
                                    ever wake it"
                .to_owned(),
            Probed::WentOn { from, waits } => {
                let mut said = "not stuck: polled again, it went on".to_owned();
                let from = from.as_ref().and_then(|trace| {
                    let frames = task_frames(trace);
                    awaited_at(&frames).0.map(at)
                });
                if let Some(place) = from {
                    said.push_str(&format!(" (to {place}, just past what it waited for)"));
                }
                said.push_str(&format!(
                    ", so what it waited for had come and nothing woke it ({LOST_WAKEUP})"
                ));
                if !waits.is_empty() {
                    said.push_str(&format!("; it then waits {}", describe_waits(waits)));
                }
                said
            }
            Probed::Panicked {
                message,
                went_on: false,
            } => format!("polled again, it panicked: {message}"),
            Probed::Panicked {
                message,
                went_on: true,
            } => format!(
                "not stuck: polled again, it went on and panicked: {message} ({LOST_WAKEUP})"
            ),
            Probed::WokenByAnEarlierProbe => "woken when the report polled a task above (what \
                                              that task did when it went on)"
                .to_owned(),
        }
    }
}

/// Where a task waits, from the backtraces of the wakers it kept: each place the program
/// awaits at, with what it awaits there, in the order the future kept its wakers, once each.
fn describe_waits(traces: &[Backtrace]) -> String {
    let mut places: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside: Vec<String> = Vec::new();
    for trace in traces {
        let frames = task_frames(trace);
        let (program, awaited) = awaited_at(&frames);
        let awaited = awaited.map(|frame| match short(frame) {
            // A future the program wrote, inlined: known by where its `poll` is.
            None if frame.is_programs() => {
                format!("a future of the program's (its poll at {})", at(frame))
            }
            name => name.unwrap_or(&frame.symbol).to_owned(),
        });
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
                    && !what.contains(&awaited)
                {
                    what.push(awaited);
                }
            }
            (None, Some(awaited)) if !inside.contains(&awaited) => inside.push(awaited),
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

/// The frames of a backtrace taken inside a probe's poll that are the task's: below the
/// probe's own (its waker's clone, or the world noting what the task did), above the
/// executor's poll of the task's cell.
fn task_frames(trace: &Backtrace) -> Vec<Frame> {
    let frames = call_site::frames(trace);
    let start = frames
        .iter()
        .position(|frame| {
            frame.symbol.ends_with("probe_clone") || frame.symbol.ends_with("probe_went_on")
        })
        .map_or(0, |probe| probe + 1);
    let frames = &frames[start..];
    let end = frames
        .iter()
        .position(|frame| frame.symbol.ends_with("TaskCell>::poll_task"))
        .unwrap_or(frames.len());
    frames[..end].to_vec()
}

/// Where a waiting future kept its waker: the program's innermost frame (its `.await`), and
/// what it awaits there: the outermost library frame between the clone and that `.await`,
/// stopping at a `select!`'s code (which expands in the program's crate from a library's
/// source). A future the program wrote itself (its own `poll` kept the waker) is what it
/// awaits, at the program's next frame out. Without a program frame (a library's own task),
/// the program part is `None` and the outermost library frame is what it waits in.
fn awaited_at(frames: &[Frame]) -> (Option<&Frame>, Option<&Frame>) {
    // A dependency built without line tables (a common profile) is told from the program
    // only by its location: where the program's frames have one, a frame without is not it.
    let located = frames
        .iter()
        .any(|frame| frame.at.is_some() && frame.is_programs());
    let is_program = |frame: &Frame| frame.is_programs() && (frame.at.is_some() || !located);
    let program = frames.iter().position(is_program);
    // An inlined `poll` has its bare name.
    let polls = |frame: &Frame| {
        frame.symbol.ends_with(FUTURE_POLL)
            || frame.symbol == "poll"
            || frame.symbol.starts_with("poll<")
    };
    if let Some(own) = program
        && polls(&frames[own])
        && let Some(next) = frames[own + 1..].iter().position(is_program)
    {
        return (Some(&frames[own + 1 + next]), Some(&frames[own]));
    }
    let end = program.unwrap_or(frames.len());
    let library = frames[..end]
        .iter()
        .skip_while(|frame| frame.is_runtimes())
        .take_while(|frame| !frame.is_expanded_from_a_library())
        .filter(|frame| !frame.is_runtimes());
    let outermost = library.clone().last();
    let named = library.filter(|frame| frame.crate_name().is_some()).last();
    (program.map(|at| &frames[at]), named.or(outermost))
}

/// How a future's `poll` reads in a symbol.
const FUTURE_POLL: &str = " as core::future::future::Future>::poll";

/// A frame's function as a reader names it: an async function's body (`run::{{closure}}`)
/// as the function, a future's `poll` as the future, a `#[crashtest::test]` body as its
/// test; `None` for an inlined frame's bare name (`{async_fn#0}`, `poll`), which says
/// nothing its location does not.
fn short(frame: &Frame) -> Option<&str> {
    let symbol = frame.symbol.as_str();
    if !symbol.contains("::") {
        return None;
    }
    let symbol = symbol.trim_end_matches("::{{closure}}");
    let symbol = match symbol.rsplit_once("::") {
        Some((test, body)) if body.starts_with("__crashtest_") => test,
        _ => symbol,
    };
    Some(match symbol.strip_suffix(FUTURE_POLL) {
        Some(future) => future.trim_start_matches('<'),
        None => symbol,
    })
}

/// A frame by its location (relative to the current directory, as std prints it, without
/// the `./` a spawn's place does not have) and its short name, as far as each is known.
fn at(frame: &Frame) -> String {
    let location = frame
        .at
        .as_deref()
        .map(|at| at.strip_prefix("./").unwrap_or(at));
    match (location, short(frame)) {
        (Some(location), Some(name)) => format!("{location} in {name}"),
        (Some(location), None) => location.to_owned(),
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
    /// Clones past the kept ones.
    more: usize,
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
        {
            if seen.kept.len() < KEPT_TRACES {
                seen.kept.push(Backtrace::force_capture());
            } else {
                seen.more += 1;
            }
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
    /// While a probe polls: the probed task did something of the run's (an event, a note, a
    /// timer, a coverage site, a fault), so it was not stuck. The first time, where it did it
    /// is kept for the report.
    #[cold]
    pub(super) fn probe_went_on(&self) {
        debug_assert!(self.probing.get(), "progress noted outside a probe");
        if let Ok(mut progress) = self.probe_progress.try_borrow_mut()
            && progress.is_none()
        {
            *progress = Some(Backtrace::force_capture());
        }
    }

    /// Polls waiting task `id` once more with the probe's waker; `None` if it is not on a
    /// running node (a paused node's task waits for the resume, not on anything).
    pub(super) fn probe(&self, id: TaskId) -> Option<Probed> {
        assert!(
            self.current_task.get().is_none(),
            "a probe began inside a poll"
        );
        let (mut future, node, place) = {
            let mut tasks = self.tasks.borrow_mut();
            let slot = tasks.get_mut(id)?;
            if self.nodes.borrow().status(slot.node()) != NodeStatus::Running {
                return None;
            }
            // Nothing was queued when the run deadlocked: a queued task was woken since, by
            // what a task probed before it did.
            if slot.state == TaskState::Queued {
                return Some(Probed::WokenByAnEarlierProbe);
            }
            if slot.state != TaskState::Idle {
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
                more: 0,
                woken: false,
            });
        });
        self.watch.enter_poll(node.0, id.serial, place);
        self.probing.set(true);
        *self.probe_progress.borrow_mut() = None;
        let polled = panic_capture::catch(|| future.as_mut().poll_task(&mut cx));
        self.watch.leave_poll();
        let seen = PROBING
            .with(|probing| probing.borrow_mut().take())
            .expect("the probe's record outlives its poll");
        let progress = self.probe_progress.borrow_mut().take();
        let went_on = progress.is_some()
            || seen.woken
            || self
                .tasks
                .borrow()
                .get(id)
                .is_some_and(|slot| slot.state == TaskState::RunningWoken);
        let probed = match polled {
            Ok(Poll::Ready(())) => {
                let leftover = self.finish_task(id, Outcome::Output(future));
                self.drop_outcome(leftover, node);
                Probed::WentOn {
                    from: progress,
                    waits: Vec::new(),
                }
            }
            Ok(Poll::Pending) => {
                self.after_pending(id, future);
                match seen.kept {
                    waits if went_on => Probed::WentOn {
                        from: progress,
                        waits,
                    },
                    kept if kept.is_empty() => Probed::KeptNoWaker,
                    kept => Probed::Waits(kept, seen.more),
                }
            }
            Err(panic) => {
                self.drop_panicked_cell(future);
                Probed::Panicked {
                    message: panic.message,
                    went_on,
                }
            }
        };
        self.probing.set(false);
        self.current_task.set(None);
        self.current_node.set(crate::node::NodeId::SUPERVISOR);
        Some(probed)
    }
}
