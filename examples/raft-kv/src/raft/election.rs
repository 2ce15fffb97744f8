//! Leader election: the election timer, a candidate's campaign, and the RequestVote handler.
//!
//! A follower or candidate that hears nothing from a leader for its election timeout starts
//! an election: it moves to the next term, votes for itself, *syncs that*, and asks every peer
//! for a vote (each on a fresh connection, so that a slow replication link never holds a
//! ballot up). A server grants one vote per term, to a candidate whose log is at least as
//! up to date as its own (else [`Bug::VoteWithoutLogCheck`]), and syncs the vote before it answers: a vote forgotten in a crash
//! could be given again in the same term ([`Bug::VoteNotPersisted`]). A candidate with votes
//! from a majority becomes leader; one that sees a newer term steps down.

use std::rc::Rc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crashtest::task;
use crashtest::time::{self, Instant};

use super::{Core, Role, Shared, call};
use crate::bugs::Bug;
use crate::wire::{Reply, Request, VoteReply, VoteRequest};

/// The election timer: starts a campaign whenever the timeout passes without word from a
/// leader. A leader keeps pushing its own deadline back.
pub(super) async fn run(shared: Rc<Shared>) {
    loop {
        let deadline = shared.core.lock().await.election_deadline;
        time::sleep_until(deadline).await;
        let mut core = shared.core.lock().await;
        if core.is_leader() {
            core.reset_election_timer();
            continue;
        }
        if Instant::now() < core.election_deadline {
            continue;
        }
        let ballot = stand(&mut core).await;
        drop(core);
        task::spawn_local(campaign(shared.clone(), ballot));
    }
}

/// Starts an election: the next term, a vote for itself (durable), a fresh timeout.
async fn stand(core: &mut Core) -> VoteRequest {
    let term = core.term + 1;
    core.enter_term(term);
    core.voted_for = Some(core.id);
    core.role = Role::Candidate;
    crashtest::nemesis::hint(crashtest::nemesis::Hint::Election);
    core.declare_state();
    core.persist_meta(true).await;
    core.reset_election_timer();
    VoteRequest {
        term,
        candidate: core.id,
        last_index: core.log.last_index(),
        last_term: core.log.last_term(),
    }
}

/// Asks one peer for its vote.
async fn ask(shared: &Shared, peer: usize, ballot: VoteRequest) -> Option<VoteReply> {
    let mut link = None;
    let name = &shared.config.servers[peer];
    match call(&mut link, name, &Request::Vote(ballot)).await {
        Some(Reply::Vote(reply)) => Some(reply),
        _ => None,
    }
}

/// Counts the votes of one election as they come in.
async fn campaign(shared: Rc<Shared>, ballot: VoteRequest) {
    let mut replies: FuturesUnordered<_> = shared
        .config
        .peers()
        .into_iter()
        .map(|peer| ask(&shared, peer, ballot.clone()))
        .collect();
    let mut votes = 1;
    while let Some(reply) = replies.next().await {
        let Some(reply) = reply else { continue };
        let mut core = shared.core.lock().await;
        if reply.term > core.term {
            core.adopt_term(reply.term).await;
            return;
        }
        if core.term != ballot.term || !matches!(core.role, Role::Candidate) {
            return;
        }
        if reply.granted {
            votes += 1;
            if 2 * votes > core.size {
                core.become_leader().await;
                drop(core);
                shared.wake_replicators();
                return;
            }
        }
    }
}

/// Handles a RequestVote. A newer term and a granted vote are persisted together, synced
/// before the reply unless [`Bug::VoteNotPersisted`].
pub(super) async fn on_vote(shared: &Shared, ballot: VoteRequest) -> VoteReply {
    let mut core = shared.core.lock().await;
    let mut changed = ballot.term > core.term;
    if changed {
        core.enter_term(ballot.term);
    }
    let up_to_date = core.bug == Bug::VoteWithoutLogCheck
        || (ballot.last_term, ballot.last_index) >= (core.log.last_term(), core.log.last_index());
    let free = core.voted_for.is_none_or(|vote| vote == ballot.candidate);
    let granted = ballot.term == core.term && up_to_date && free;
    if granted {
        changed |= core.voted_for.is_none();
        core.voted_for = Some(ballot.candidate);
        core.reset_election_timer();
    }
    if changed {
        let sync = core.bug != Bug::VoteNotPersisted;
        core.persist_meta(sync).await;
    }
    VoteReply {
        term: core.term,
        granted,
    }
}
