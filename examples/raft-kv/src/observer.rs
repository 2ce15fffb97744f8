//! Cluster-wide invariants, checked from outside the servers: Raft's election safety (at most
//! one leader per term) and state machine safety (no two servers apply different entries at
//! the same index).
//!
//! The servers report to a shared [`Observer`] (a test hook: the simulation runs every node on
//! one thread, so an `Rc` reaches them all). It remembers across crashes what no single server
//! can: who led each term, and the one sequence of entries every server must apply. A broken
//! invariant is kept as a violation, and [`Observer::install`] registers a step check that
//! fails the run with it right after the step that broke it. The observer also tells the
//! liveness phase which servers have not caught up yet.
//!
//! Seeing every server, the observer also declares the cluster's state to a guided search
//! (`crashtest::explore::state("raft cluster", ...)`): what no single server knows, whether
//! the leader's first entry past the cluster's applied log is of an earlier term, how many
//! servers hold it,
//! whether another server holds a different entry of a newer term at that index, whether
//! that server could still win an election, and, once the entry is applied, whether a server
//! holding another entry at an applied index could still win one. Those are the steps of the
//! Raft paper's Figure 8, where the commit rule decides whether an entry is lost: the last is
//! the moment just before the loss, one election away, which a correct commit rule never
//! reaches. Each is rare on its own, and a search that branches right after one reaches the
//! next far sooner than fresh seeds do.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::raft::log::Entry;

/// What the servers reported.
#[derive(Debug, Default)]
pub struct Observer {
    state: RefCell<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The leader of each term.
    leaders: BTreeMap<u64, usize>,
    /// The entry applied at each index (from 1), by whichever server applied it first.
    applied_log: Vec<Entry>,
    /// How far each server's current incarnation has applied.
    applied: BTreeMap<usize, u64>,
    /// The first invariant found broken.
    violation: Option<String>,
    /// What each server last reported of its log.
    views: BTreeMap<usize, LogView>,
}

/// How many entries a server reports, from just past its commit index or, if it lags, from
/// a little before the end of the applied log: the cluster's abstraction looks at the
/// leader's first entry past the applied log, and the others' at that index and at the last
/// applied ones.
const WINDOW: u64 = 8;

/// What a server last reported of its term and log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LogView {
    /// Its current term.
    pub(crate) term: u64,
    /// Whether it leads that term.
    pub(crate) leader: bool,
    /// Its commit index.
    pub(crate) commit: u64,
    /// Its last entry's term and index.
    pub(crate) last: (u64, u64),
    /// The index of the first entry in `window`, past its commit index.
    pub(crate) from: u64,
    /// The terms of its entries from `from` on, at most [`WINDOW`].
    pub(crate) window: Vec<u64>,
}

impl LogView {
    /// The view of a log, given its commit index, how many entries the cluster has applied
    /// (a restarted server's commit index starts again from 0, long before the entries that
    /// matter), and the term of its entry at each index.
    pub(crate) fn of(
        term: u64,
        leader: bool,
        commit: u64,
        last: (u64, u64),
        cluster_applied: u64,
        term_at: impl Fn(u64) -> Option<u64>,
    ) -> LogView {
        let from = commit.max(cluster_applied.saturating_sub(WINDOW / 2)) + 1;
        let window: Vec<u64> = (from..).map_while(&term_at).take(WINDOW as usize).collect();
        assert!(
            window.len() as u64 <= (last.1 + 1).saturating_sub(from),
            "a window lies within the log"
        );
        LogView {
            term,
            leader,
            commit,
            last,
            from,
            window,
        }
    }

    /// The term of its entry at `index`, if it reported it (uncommitted and in its window).
    fn term_at(&self, index: u64) -> Option<u64> {
        let offset = index.checked_sub(self.from)?;
        self.window.get(usize::try_from(offset).ok()?).copied()
    }
}

impl Observer {
    /// Registers the invariants as a step check of the running simulation: the run fails
    /// with the first violation.
    ///
    /// ```
    /// crashtest::Sim::new(1).run(async {
    ///     std::rc::Rc::new(raft_kv::observer::Observer::default()).install();
    /// }).unwrap();
    /// ```
    pub fn install(self: &Rc<Self>) {
        let observer = self.clone();
        crashtest::check::invariant::always("raft safety", move || observer.check());
    }

    /// `Err` with the first broken invariant, if any.
    ///
    /// ```
    /// assert!(raft_kv::observer::Observer::default().check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), String> {
        match &self.state.borrow().violation {
            Some(violation) => Err(violation.clone()),
            None => Ok(()),
        }
    }

    /// How many elections were won.
    ///
    /// ```
    /// assert_eq!(raft_kv::observer::Observer::default().leaders(), 0);
    /// ```
    pub fn leaders(&self) -> usize {
        self.state.borrow().leaders.len()
    }

    /// The leader of the latest term that elected one, as `(term, server)`.
    ///
    /// ```
    /// assert_eq!(raft_kv::observer::Observer::default().latest_leader(), None);
    /// ```
    pub fn latest_leader(&self) -> Option<(u64, usize)> {
        let state = self.state.borrow();
        state
            .leaders
            .last_key_value()
            .map(|(term, id)| (*term, *id))
    }

    /// How many entries some server has applied (the length of the one applied log).
    ///
    /// ```
    /// assert_eq!(raft_kv::observer::Observer::default().applied_entries(), 0);
    /// ```
    pub fn applied_entries(&self) -> u64 {
        self.state.borrow().applied_log.len() as u64
    }

    /// The servers that have applied fewer entries than another one, as "s1 applied 3 of 5".
    ///
    /// ```
    /// assert!(raft_kv::observer::Observer::default().lagging().is_empty());
    /// ```
    pub fn lagging(&self) -> Vec<String> {
        let state = self.state.borrow();
        let most = state.applied.values().copied().max().unwrap_or(0);
        state
            .applied
            .iter()
            .filter(|(_, applied)| **applied < most)
            .map(|(server, applied)| format!("s{server} applied {applied} of {most} entries"))
            .collect()
    }

    /// Server `id` reported its log: declares the cluster's state abstraction.
    pub(crate) fn report(&self, id: usize, view: LogView) {
        let mut state = self.state.borrow_mut();
        state.views.insert(id, view);
        let applied = &state.applied_log;
        let cluster = (
            leader_state(&state.views, applied.len() as u64),
            applied_at_risk(&state.views, applied),
        );
        crashtest::explore::state("raft cluster", cluster);
    }

    fn violated(state: &mut State, violation: String) {
        state.violation.get_or_insert(violation);
    }

    /// Server `id` (re)started: it applies the log again from the start.
    pub(crate) fn started(&self, id: usize) {
        self.state.borrow_mut().applied.insert(id, 0);
    }

    /// Server `id` won the election of `term`.
    pub(crate) fn became_leader(&self, term: u64, id: usize) {
        let mut state = self.state.borrow_mut();
        if let Some(other) = state.leaders.insert(term, id)
            && other != id
        {
            let violation = format!("two leaders in term {term}: s{other} and s{id}");
            Observer::violated(&mut state, violation);
        }
    }

    /// Server `id` applied `entry` at `index`.
    pub(crate) fn applied(&self, id: usize, index: u64, entry: &Entry) {
        let mut state = self.state.borrow_mut();
        let previous = state.applied.insert(id, index);
        assert_eq!(
            previous,
            Some(index - 1),
            "s{id} applied entry {index} out of order"
        );
        match state.applied_log.get(index as usize - 1) {
            None => state.applied_log.push(entry.clone()),
            Some(first) if first != entry => {
                let violation = format!(
                    "s{id} applied {entry:?} at index {index}, where another server applied {first:?}"
                );
                Observer::violated(&mut state, violation);
            }
            Some(_) => {}
        }
    }
}

/// The leader's part of the cluster's state abstraction (see the module docs): for the
/// leader of the highest term, whether its first entry past the `applied` ones is of an
/// earlier term, how many servers hold that entry, whether another holds a newer-term entry
/// there, and whether such a rival's log is up to date enough to win another server's vote.
/// `None` with no leader.
fn leader_state(
    views: &BTreeMap<usize, LogView>,
    applied: u64,
) -> Option<(bool, usize, bool, bool)> {
    let (&leader, view) = views
        .iter()
        .filter(|(_, view)| view.leader)
        .max_by_key(|(_, view)| view.term)?;
    // A server applies what it commits at once, so no commit index passes the applied log.
    assert!(
        view.commit <= applied,
        "the leader's commit index is applied"
    );
    let index = applied + 1;
    let Some(entry_term) = view.term_at(index) else {
        return Some((false, 1, false, false));
    };
    let old = entry_term < view.term;
    let holders = views
        .values()
        .filter(|other| other.term_at(index) == Some(entry_term))
        .count();
    let rivals: Vec<(usize, &LogView)> = views
        .iter()
        .filter(|(id, other)| {
            **id != leader
                && other
                    .term_at(index)
                    .is_some_and(|term| entry_term < term && term < view.term)
        })
        .map(|(id, other)| (*id, other))
        .collect();
    let rival_could_win = rivals
        .iter()
        .any(|(rival, rival_view)| could_win(*rival, rival_view, views));
    assert!(
        (1..=views.len()).contains(&holders),
        "the leader holds its own entry"
    );
    Some((old, holders, !rivals.is_empty(), rival_could_win))
}

/// The last part of the cluster's state abstraction: whether a server holds, at an index some
/// server applied, an entry of another term than the one applied there, with a log up to date
/// enough to win another server's vote. Elected, it would overwrite an applied entry. Correct
/// Raft never gets here (an applied entry is on a majority whose logs all beat the rival's);
/// the views are what each server last reported, so a stale one can say so briefly, which
/// costs a search a branch, not a verdict.
fn applied_at_risk(views: &BTreeMap<usize, LogView>, applied: &[Entry]) -> bool {
    views.iter().any(|(rival, view)| {
        let reported = view.from..view.from + view.window.len() as u64;
        let overwrites = reported
            .take_while(|index| *index <= applied.len() as u64)
            .any(|index| {
                view.term_at(index)
                    .is_some_and(|term| term != applied[index as usize - 1].term)
            });
        overwrites && could_win(*rival, view, views)
    })
}

/// Whether server `rival`, its log as `view` says, could win an election: the logs of
/// enough others to make a majority with it are no more up to date than its own.
fn could_win(rival: usize, view: &LogView, views: &BTreeMap<usize, LogView>) -> bool {
    let voters = views
        .iter()
        .filter(|(voter, voter_view)| **voter != rival && view.last >= voter_view.last)
        .count();
    voters + 1 > views.len() / 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::Command;

    fn entry(term: u64, value: u64) -> Entry {
        Entry {
            term,
            command: Some(Command::Put(0, value)),
        }
    }

    #[test]
    fn two_leaders_of_one_term_are_a_violation() {
        let observer = Observer::default();
        observer.became_leader(3, 0);
        observer.became_leader(3, 0);
        assert!(observer.check().is_ok());
        observer.became_leader(3, 2);
        assert_eq!(
            observer.check().unwrap_err(),
            "two leaders in term 3: s0 and s2"
        );
    }

    #[test]
    fn different_entries_at_one_index_are_a_violation() {
        let observer = Observer::default();
        observer.started(0);
        observer.started(1);
        observer.applied(0, 1, &entry(1, 1));
        observer.applied(1, 1, &entry(1, 1));
        assert!(observer.check().is_ok());
        observer.applied(1, 2, &entry(2, 7));
        observer.applied(0, 2, &entry(1, 8));
        assert!(observer.check().unwrap_err().contains("at index 2"));
        assert!(observer.lagging().is_empty());
    }

    fn view(term: u64, leader: bool, commit: u64, log: &[u64]) -> LogView {
        view_after(term, leader, commit, log, 0)
    }

    fn view_after(term: u64, leader: bool, commit: u64, log: &[u64], applied: u64) -> LogView {
        let last = (*log.last().unwrap_or(&0), log.len() as u64);
        LogView::of(term, leader, commit, last, applied, |index| {
            log.get(index as usize - 1).copied()
        })
    }

    #[test]
    fn the_leader_state_follows_the_steps_of_figure_8() {
        let mut views = BTreeMap::new();
        // s0 leads term 4 holding an entry of term 2 at index 2 that s1 overwrote in term 3.
        views.insert(0, view(4, true, 1, &[1, 2]));
        views.insert(1, view(3, false, 1, &[1, 3]));
        views.insert(2, view(4, false, 1, &[1]));
        assert_eq!(leader_state(&views, 1), Some((true, 1, true, true)));
        // s0 brings it to s2: a majority holds it, and s1 (log ending in term 3) can still
        // win s2's vote.
        views.insert(2, view(4, false, 1, &[1, 2]));
        assert_eq!(leader_state(&views, 1), Some((true, 2, true, true)));
        // The leader's own entry of term 4 follows: its first uncommitted one is still old.
        views.insert(0, view(4, true, 1, &[1, 2, 4]));
        views.insert(2, view(4, false, 1, &[1, 2, 4]));
        assert_eq!(leader_state(&views, 1), Some((true, 2, true, false)));
        // It commits and applies index 3, and index 2 with it: nothing left past the log.
        views.insert(0, view(4, true, 3, &[1, 2, 4]));
        assert_eq!(leader_state(&views, 3), Some((false, 1, false, false)));
    }

    #[test]
    fn a_restarted_leader_is_judged_by_its_first_entry_past_the_applied_log() {
        let mut views = BTreeMap::new();
        // The cluster applied three entries of term 1; s0 restarted (its commit index is 0
        // again) and leads term 4 with an entry of term 2 at index 4, where s1 holds one of
        // term 3 and could win s2's vote.
        views.insert(0, view_after(4, true, 0, &[1, 1, 1, 2], 3));
        views.insert(1, view_after(3, false, 3, &[1, 1, 1, 3], 3));
        views.insert(2, view_after(4, false, 3, &[1, 1, 1], 3));
        assert_eq!(leader_state(&views, 3), Some((true, 1, true, true)));
    }

    #[test]
    fn a_lagging_server_reports_from_near_the_end_of_the_applied_log() {
        // Ten entries applied; a restarted server (commit index 0) reports from index 7.
        let log = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2];
        let lagging = view_after(3, false, 0, &log, 10);
        assert_eq!(lagging.from, 7);
        assert_eq!(lagging.window, [1, 1, 1, 1, 2]);
        assert_eq!((lagging.term_at(6), lagging.term_at(11)), (None, Some(2)));
        // A leader's entry past the applied log is judged even if it lags that far.
        let mut views = BTreeMap::new();
        views.insert(0, view_after(3, true, 0, &log, 10));
        views.insert(1, view_after(3, false, 10, &log[..10], 10));
        assert_eq!(leader_state(&views, 10), Some((true, 1, false, false)));
    }

    #[test]
    fn an_applied_entry_is_at_risk_while_a_rival_holding_another_could_win() {
        let mut views = BTreeMap::new();
        // Figure 8's bug: s0 (term 4) committed and applied index 2 (term 2) by counting its
        // replica on s2, and s1, whose log ends in term 3 at index 2, can win s2's vote.
        views.insert(0, view(4, true, 2, &[1, 2]));
        views.insert(1, view(3, false, 1, &[1, 3]));
        views.insert(2, view(4, false, 1, &[1, 2]));
        let applied = [entry(1, 1), entry(2, 2)];
        assert!(applied_at_risk(&views, &applied));
        // Nothing applied at index 2 yet: nothing to lose.
        assert!(!applied_at_risk(&views, &applied[..1]));
        // Once s2 holds an entry of term 4, s1 can win no vote: the entry is safe, as the
        // correct store's no-op makes it.
        views.insert(2, view(4, false, 2, &[1, 2, 4]));
        views.insert(0, view(4, true, 2, &[1, 2, 4]));
        assert!(!applied_at_risk(&views, &applied));
    }

    #[test]
    fn a_restarted_server_lags_until_it_applies_again() {
        let observer = Observer::default();
        observer.started(0);
        observer.started(1);
        observer.applied(0, 1, &entry(1, 1));
        assert_eq!(observer.lagging(), ["s1 applied 0 of 1 entries"]);
    }
}
