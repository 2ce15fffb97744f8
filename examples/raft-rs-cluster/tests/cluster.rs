//! raft-rs under kills, pauses, partitions and clogs, over many seeds.

use std::cell::RefCell;
use std::rc::Rc;

use raft_rs_cluster::{Outcome, Plan, run};

#[crashtest::test(seeds = 1000)]
async fn raft_rs_keeps_one_leader_per_term_agrees_on_applied_entries_and_converges() {
    let outcome = run(Plan::default()).await;
    assert!(outcome.terms_with_leader >= 1, "no member ever led");
}

fn outcome_of(seed: u64) -> (Outcome, u64) {
    crashtest::on_fresh_thread(move || {
        let out = Rc::new(RefCell::new(None));
        let keep = out.clone();
        let summary = crashtest::Sim::new(seed)
            .run(async move {
                *keep.borrow_mut() = Some(run(Plan::default()).await);
            })
            .unwrap();
        (out.take().unwrap(), summary.fingerprint)
    })
}

#[test]
fn the_same_seed_replays_the_same_cluster_and_different_seeds_differ() {
    let first = outcome_of(3);
    assert_eq!(first, outcome_of(3));
    assert_ne!(first.1, outcome_of(4).1);
}
