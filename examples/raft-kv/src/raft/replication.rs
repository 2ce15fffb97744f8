//! Log replication: the leader's replicator for each peer, how the leader advances its commit
//! index, and the AppendEntries handler.
//!
//! Each replicator sends its follower the entries from the follower's `next` index (a
//! heartbeat when there are none) whenever woken, and at least every [`HEARTBEAT`]. A
//! follower stores entries only if its log holds the leader's entry just before them (the
//! log-matching check); a conflicting suffix is cut off, durably, before the new entries are
//! written, and the entries are synced before the follower says it holds them. The leader
//! commits the highest index that a majority holds *if that entry is of its own term*: an
//! entry of an earlier term on a majority can still be overwritten (the Raft paper's Figure
//! 8), so those commit through the no-op a new leader appends. A follower commits up to the
//! leader's commit index but never past the entries this request proved it shares with the
//! leader.

use std::rc::Rc;

use crashtest::time;

use super::log::Entry;
use super::{Core, HEARTBEAT, MAX_BATCH, Role, Shared, call};
use crate::Bug;
use crate::wire::{AppendReply, AppendRequest, Reply, Request};

/// Keeps follower `peer` up to date while this server leads.
pub(super) async fn run(shared: Rc<Shared>, peer: usize) {
    let mut link = None;
    let name = &shared.config.servers[peer];
    let wake = &shared.wake[&peer];
    loop {
        tokio::select! {
            biased;
            () = wake.notified() => {}
            () = time::sleep(HEARTBEAT) => {}
        }
        let Some(request) = shared.core.lock().await.append_request(peer) else {
            continue;
        };
        let Some(Reply::Append(reply)) =
            call(&mut link, name, &Request::Append(request.clone())).await
        else {
            continue;
        };
        if shared
            .core
            .lock()
            .await
            .on_append_reply(peer, &request, reply)
            .await
        {
            wake.notify_one();
        }
    }
}

impl Core {
    /// The next AppendEntries for `peer`, if this server leads.
    fn append_request(&self, peer: usize) -> Option<AppendRequest> {
        let Role::Leader(progress) = &self.role else {
            return None;
        };
        let prev_index = progress[&peer].next - 1;
        Some(AppendRequest {
            term: self.term,
            leader: self.id,
            prev_index,
            prev_term: self
                .log
                .term_at(prev_index)
                .expect("a follower's next index is within the leader's log"),
            entries: self.log.slice(prev_index + 1, MAX_BATCH),
            leader_commit: self.commit,
        })
    }

    /// Takes in a follower's answer; true if the follower should be sent more at once.
    async fn on_append_reply(
        &mut self,
        peer: usize,
        request: &AppendRequest,
        reply: AppendReply,
    ) -> bool {
        if reply.term > self.term {
            self.adopt_term(reply.term).await;
            return false;
        }
        let last_index = self.log.last_index();
        let Role::Leader(progress) = &mut self.role else {
            return false;
        };
        if self.term != request.term {
            return false;
        }
        let follower = progress.get_mut(&peer).expect("every peer has progress");
        if reply.success {
            let matched = request.prev_index + request.entries.len() as u64;
            follower.matched = follower.matched.max(matched);
            follower.next = follower.next.max(matched + 1);
            self.advance_commit();
        } else {
            follower.next = (reply.last_index + 1).min(request.prev_index).max(1);
        }
        let Role::Leader(progress) = &self.role else {
            return false;
        };
        progress[&peer].next <= last_index
    }

    /// Commits the highest index a majority holds, if its entry is of this term (of any term
    /// under [`Bug::CommitByCountingOldTerm`]).
    fn advance_commit(&mut self) {
        let Role::Leader(progress) = &self.role else {
            return;
        };
        let mut held: Vec<u64> = progress.values().map(|p| p.matched).collect();
        held.push(self.log.last_index());
        held.sort_unstable_by(|a, b| b.cmp(a));
        let majority = self.size / 2 + 1;
        let index = held[majority - 1];
        let counted = self.bug == Bug::CommitByCountingOldTerm;
        if counted || self.log.term_at(index) == Some(self.term) {
            self.commit_to(index);
        }
        self.declare_state();
    }

    /// Stores the leader's `entries`, which follow `prev_index`, cutting off a conflicting
    /// suffix first.
    async fn store(&mut self, prev_index: u64, entries: Vec<Entry>) {
        let mut fresh = Vec::new();
        let mut index = prev_index;
        for entry in entries {
            index += 1;
            if fresh.is_empty() && index <= self.log.last_index() {
                if self.log.term_at(index) == Some(entry.term) {
                    continue;
                }
                self.truncate_conflict(index).await;
                if index <= self.log.last_index() {
                    continue;
                }
            }
            fresh.push(entry);
        }
        if !fresh.is_empty() {
            self.append(fresh).await;
        }
    }
}

/// Handles an AppendEntries.
pub(super) async fn on_append(shared: &Shared, request: AppendRequest) -> AppendReply {
    let mut core = shared.core.lock().await;
    if request.term < core.term {
        return AppendReply {
            term: core.term,
            success: false,
            last_index: core.log.last_index(),
        };
    }
    if request.term > core.term {
        core.adopt_term(request.term).await;
    }
    assert!(
        !core.is_leader(),
        "two leaders in term {}: servers {} and {}",
        core.term,
        core.id,
        request.leader
    );
    if matches!(core.role, Role::Candidate) {
        core.step_down();
    }
    core.leader = Some(request.leader);
    core.reset_election_timer();
    if core.log.term_at(request.prev_index) != Some(request.prev_term) {
        return AppendReply {
            term: core.term,
            success: false,
            last_index: core
                .log
                .last_index()
                .min(request.prev_index.saturating_sub(1)),
        };
    }
    let last_new = request.prev_index + request.entries.len() as u64;
    core.store(request.prev_index, request.entries).await;
    core.commit_to(request.leader_commit.min(last_new));
    core.declare_state();
    AppendReply {
        term: core.term,
        success: true,
        last_index: last_new,
    }
}
