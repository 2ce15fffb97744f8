//! The guided search on the real store: the correct store passes it, branching from the runs
//! whose servers reached a new state of their declared abstraction.

use raft_kv::{Setup, hunt};

#[test]
fn the_correct_store_passes_a_guided_search_that_branches() {
    let found = hunt::guided(Setup::default(), 32, 2);
    if let Some(failure) = &found.failure {
        panic!("{}", failure.report.detail());
    }
    assert_eq!(found.runs, 32);
    assert!(found.branch_points > 0, "it branched");
    assert!(found.features > 0, "the servers declared their states");
}
